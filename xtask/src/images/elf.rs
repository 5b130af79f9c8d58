//! Just enough ELF reading to know what a binary needs before it goes into an image: its loader and its libraries.
//!
//! An image that lacks either fails only when the container starts, with a
//! bare "no such file or directory"; reading the headers at build time turns
//! that into a build error naming the missing file.

use anyhow::{Context, Result, bail, ensure};

const PT_LOAD: u64 = 1;
const PT_DYNAMIC: u64 = 2;
const PT_INTERP: u64 = 3;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;

/// What the dynamic loader needs to start a binary.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// The program interpreter (`PT_INTERP`); `None` for a static binary or
    /// a shared library.
    pub interpreter: Option<String>,
    /// The `DT_NEEDED` sonames, in the order the binary lists them.
    pub libraries: Vec<String>,
}

/// Integer fields read with the file's class and byte order.
#[derive(Debug)]
struct Reader<'a> {
    elf: &'a [u8],
    wide: bool,
    little: bool,
}

impl<'a> Reader<'a> {
    fn new(elf: &'a [u8]) -> Result<Self> {
        ensure!(elf.get(..4) == Some(b"\x7fELF"), "not an ELF file");
        let wide = match elf.get(4) {
            Some(1) => false,
            Some(2) => true,
            _ => bail!("unknown ELF class"),
        };
        let little = match elf.get(5) {
            Some(1) => true,
            Some(2) => false,
            _ => bail!("unknown ELF byte order"),
        };
        Ok(Reader { elf, wide, little })
    }

    fn uint(&self, at: u64, len: usize) -> Result<u64> {
        let at = usize::try_from(at).context("ELF offset overflow")?;
        let raw = self.elf.get(at..at.checked_add(len).context("ELF offset overflow")?).context("truncated ELF")?;
        let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
        Ok(if self.little { raw.iter().rev().fold(0, fold) } else { raw.iter().fold(0, fold) })
    }

    /// A word of the file's class: 8 bytes in ELF64, 4 in ELF32.
    fn word(&self, at: u64) -> Result<u64> {
        self.uint(at, if self.wide { 8 } else { 4 })
    }

    /// Every program header as (type, offset, vaddr, filesz).
    fn segments(&self) -> Result<Vec<(u64, u64, u64, u64)>> {
        let (phoff, phentsize, phnum) = if self.wide {
            (self.uint(0x20, 8)?, self.uint(0x36, 2)?, self.uint(0x38, 2)?)
        } else {
            (self.uint(0x1c, 4)?, self.uint(0x2a, 2)?, self.uint(0x2c, 2)?)
        };
        (0..phnum)
            .map(|i| {
                let at = phoff + i * phentsize;
                if self.wide {
                    Ok((self.uint(at, 4)?, self.uint(at + 8, 8)?, self.uint(at + 16, 8)?, self.uint(at + 32, 8)?))
                } else {
                    Ok((self.uint(at, 4)?, self.uint(at + 4, 4)?, self.uint(at + 8, 4)?, self.uint(at + 16, 4)?))
                }
            })
            .collect()
    }

    /// The NUL-terminated string at a file offset.
    fn string(&self, at: u64) -> Result<String> {
        let at = usize::try_from(at).context("ELF offset overflow")?;
        let rest = self.elf.get(at..).context("ELF string outside the file")?;
        let end = rest.iter().position(|b| *b == 0).context("unterminated ELF string")?;
        String::from_utf8(rest[..end].to_vec()).context("ELF string is not UTF-8")
    }
}

/// Whether an ELF file names a program interpreter, i.e. is dynamically linked.
pub fn has_interpreter(elf: &[u8]) -> Result<bool> {
    let reader = Reader::new(elf)?;
    Ok(reader.segments()?.iter().any(|(kind, ..)| *kind == PT_INTERP))
}

/// The loader and libraries an ELF executable or shared library asks for.
pub fn needs(elf: &[u8]) -> Result<Needs> {
    let reader = Reader::new(elf)?;
    let segments = reader.segments()?;
    let mut needs = Needs::default();
    if let Some((_, offset, _, size)) = segments.iter().find(|(kind, ..)| *kind == PT_INTERP) {
        // The segment holds the path and its terminating NUL.
        let path = reader.string(*offset)?;
        ensure!(path.len() as u64 + 1 == *size, "PT_INTERP size does not match its path");
        needs.interpreter = Some(path);
    }
    let Some((_, dyn_offset, _, dyn_size)) = segments.iter().find(|(kind, ..)| *kind == PT_DYNAMIC) else {
        return Ok(needs);
    };

    let entry = if reader.wide { 16 } else { 8 };
    let mut strtab = None;
    let mut needed = Vec::new();
    for at in (*dyn_offset..dyn_offset + dyn_size).step_by(entry) {
        let tag = reader.word(at)?;
        let value = reader.word(at + entry as u64 / 2)?;
        match tag {
            DT_NULL => break,
            DT_NEEDED => needed.push(value),
            DT_STRTAB => strtab = Some(value),
            _ => {}
        }
    }
    if needed.is_empty() {
        return Ok(needs);
    }
    // DT_STRTAB is an address; the PT_LOAD segment that maps it says where
    // those bytes sit in the file.
    let strtab = strtab.context("DT_NEEDED without DT_STRTAB")?;
    let (_, load_offset, load_vaddr, _) = segments
        .iter()
        .find(|(kind, _, vaddr, size)| *kind == PT_LOAD && (*vaddr..vaddr + size).contains(&strtab))
        .context("DT_STRTAB is in no loaded segment")?;
    let strtab_offset = strtab - load_vaddr + load_offset;
    for name in needed {
        needs.libraries.push(reader.string(strtab_offset + name)?);
    }
    Ok(needs)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A 64-bit little-endian ELF with the given program headers, as
    /// (type, offset, vaddr, filesz), followed by `body` at offset 0x200.
    pub fn elf64(segments: &[(u32, u64, u64, u64)], body: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0u8; 0x200];
        bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
        bytes[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        bytes[0x36..0x38].copy_from_slice(&0x38u16.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&(segments.len() as u16).to_le_bytes());
        for (i, (kind, offset, vaddr, size)) in segments.iter().enumerate() {
            let at = 0x40 + i * 0x38;
            bytes[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            bytes[at + 8..at + 16].copy_from_slice(&offset.to_le_bytes());
            bytes[at + 16..at + 24].copy_from_slice(&vaddr.to_le_bytes());
            bytes[at + 32..at + 40].copy_from_slice(&size.to_le_bytes());
        }
        bytes.extend_from_slice(body);
        bytes
    }

    /// An executable that needs `/lib64/ld.so` and two libraries, laid out
    /// as a linker would: interpreter, string table, dynamic section.
    pub fn dynamic_executable() -> Vec<u8> {
        let interp = b"/lib64/ld.so\0";
        let strtab = b"\0libc.so.6\0libm.so.6\0";
        let (interp_at, strtab_at) = (0x200u64, 0x200 + interp.len() as u64);
        let dynamic_at = strtab_at + strtab.len() as u64;
        let mut dynamic = Vec::new();
        // Loaded at 0x400000: DT_STRTAB holds an address, not an offset.
        for (tag, value) in [(DT_NEEDED, 1), (DT_STRTAB, 0x400000 + strtab_at), (DT_NEEDED, 11), (DT_NULL, 0)] {
            dynamic.extend_from_slice(&tag.to_le_bytes());
            dynamic.extend_from_slice(&value.to_le_bytes());
        }
        let body = [&interp[..], &strtab[..], &dynamic].concat();
        let end = 0x200 + body.len() as u64;
        elf64(
            &[
                (PT_INTERP as u32, interp_at, 0x400000 + interp_at, interp.len() as u64),
                (PT_LOAD as u32, 0, 0x400000, end),
                (PT_DYNAMIC as u32, dynamic_at, 0x400000 + dynamic_at, dynamic.len() as u64),
            ],
            &body,
        )
    }

    #[test]
    fn interpreter_and_libraries_are_read() {
        let elf = dynamic_executable();
        assert!(has_interpreter(&elf).unwrap());
        let needs = needs(&elf).unwrap();
        assert_eq!(needs.interpreter.as_deref(), Some("/lib64/ld.so"));
        assert_eq!(needs.libraries, ["libc.so.6", "libm.so.6"]);
    }

    #[test]
    fn a_static_binary_needs_nothing() {
        let elf = elf64(&[(PT_LOAD as u32, 0, 0x400000, 0x200)], &[]);
        assert!(!has_interpreter(&elf).unwrap());
        assert_eq!(needs(&elf).unwrap(), Needs::default());
    }

    #[test]
    fn broken_files_are_refused() {
        let message = |bytes: &[u8]| format!("{:#}", needs(bytes).unwrap_err());
        assert_eq!(message(b"#!/bin/sh\n"), "not an ELF file");
        assert_eq!(message(b"\x7fELF\x03\x01"), "unknown ELF class");
        let mut cut = dynamic_executable();
        cut.truncate(0x210);
        assert_eq!(message(&cut), "truncated ELF");
        let unmapped = elf64(&[(PT_DYNAMIC as u32, 0x200, 0, 32)], &[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(message(&[unmapped, vec![0; 16]].concat()), "DT_NEEDED without DT_STRTAB");
    }
}
