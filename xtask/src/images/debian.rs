//! Debian packages for guest images: the candidate apt knows, fetched once with `apt-get download`, checked against apt's index, unpacked with `dpkg-deb`.
//!
//! apt's package index is signed, and the SHA-256 it lists for each file is
//! what a cached `.deb` is checked against before every use. Nothing is
//! installed on the host: `dpkg-deb --fsys-tarfile` hands over the package's
//! filesystem as a tar stream, read straight into an image tree, so the
//! modes and links are exactly as packaged and no scratch directory is
//! written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};

use super::oci::{Node, Tree, sha256_hex};

/// The version of a package apt would install, as its index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub version: String,
    /// The file's name in the archive pool, e.g. `libc6_2.36-9+deb12u14_amd64.deb`.
    pub file_name: String,
    pub sha256: String,
}

/// The candidate version of `name`, from `apt-cache show`.
pub fn candidate(name: &str) -> Result<Package> {
    let out = Command::new("apt-cache")
        .args(["show", "--no-all-versions", "--"])
        .arg(name)
        .stdin(Stdio::null())
        .output()
        .context("running apt-cache (a Debian-family host is needed)")?;
    if !out.status.success() {
        bail!(
            "apt-cache show {name}: {}: {} (run apt-get update)",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse_record(&String::from_utf8_lossy(&out.stdout)).with_context(|| format!("apt-cache show {name}"))
}

/// Reads the first record of `apt-cache show` output.
fn parse_record(text: &str) -> Result<Package> {
    let field = |key: &str| -> Result<String> {
        text.lines()
            .take_while(|line| !line.is_empty())
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(':').map(|v| v.trim().to_owned()))
            .with_context(|| format!("no {key} field"))
    };
    let filename = field("Filename")?;
    let file_name = filename.rsplit('/').next().unwrap_or_default().to_owned();
    // The name becomes a path in our cache; it must stay one component.
    ensure!(
        file_name.ends_with(".deb") && !file_name.starts_with('.') && !file_name.contains('\\'),
        "odd Filename {filename:?}"
    );
    let sha256 = field("SHA256")?;
    ensure!(sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit()), "odd SHA256 {sha256:?}");
    Ok(Package { name: field("Package")?, version: field("Version")?, file_name, sha256: sha256.to_ascii_lowercase() })
}

/// The package's `.deb` in `<cache>/debs/`, downloaded unless the cache
/// already holds a file with the indexed digest. The second value says
/// whether it was downloaded.
pub fn fetch(pkg: &Package, cache: &Path) -> Result<(PathBuf, bool)> {
    let dir = cache.join("debs");
    let path = dir.join(&pkg.file_name);
    if std::fs::read(&path).is_ok_and(|bytes| sha256_hex(&bytes) == pkg.sha256) {
        return Ok((path, false));
    }
    let scratch = dir.join(format!(".download-{}", std::process::id()));
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let result = download(pkg, &scratch, &path);
    let removed = std::fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()));
    result?;
    removed?;
    Ok((path, true))
}

fn download(pkg: &Package, scratch: &Path, dest: &Path) -> Result<()> {
    let spec = format!("{}={}", pkg.name, pkg.version);
    println!("apt-get download {spec} (once; then cached)");
    // As root, apt would hand the download to its unprivileged `_apt` user,
    // which cannot write into root's cache; it falls back with a warning, so
    // ask for the fallback outright.
    let out = Command::new("apt-get")
        .args(["download", "-q", "-o", "APT::Sandbox::User=root", "--"])
        .arg(&spec)
        .current_dir(scratch)
        .stdin(Stdio::null())
        .output()
        .context("running apt-get")?;
    if !out.status.success() {
        bail!("apt-get download {spec}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let mut debs = std::fs::read_dir(scratch)?
        .map(|entry| Ok(entry?.path()))
        .filter(|path: &Result<PathBuf>| path.as_ref().map_or(true, |p| p.extension().is_some_and(|e| e == "deb")))
        .collect::<Result<Vec<_>>>()?;
    let (Some(downloaded), None) = (debs.pop(), debs.pop()) else {
        bail!("apt-get download {spec} left no single .deb in {}", scratch.display());
    };
    let bytes = std::fs::read(&downloaded).with_context(|| format!("reading {}", downloaded.display()))?;
    let got = sha256_hex(&bytes);
    ensure!(
        got == pkg.sha256,
        "{}: downloaded file has SHA-256 {got}, apt's index lists {}",
        pkg.file_name,
        pkg.sha256
    );
    std::fs::rename(&downloaded, dest).with_context(|| format!("moving the download to {}", dest.display()))
}

/// The package's filesystem, read from `dpkg-deb --fsys-tarfile`.
pub fn unpack(deb: &Path) -> Result<Tree<'static>> {
    let out = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdin(Stdio::null())
        .output()
        .context("running dpkg-deb")?;
    if !out.status.success() {
        bail!("dpkg-deb --fsys-tarfile {}: {}: {}", deb.display(), out.status, String::from_utf8_lossy(&out.stderr));
    }
    tree_from_tar(&out.stdout).with_context(|| format!("reading the files of {}", deb.display()))
}

fn tree_from_tar(tar_bytes: &[u8]) -> Result<Tree<'static>> {
    let mut tree = Tree::new();
    let mut archive = tar::Archive::new(tar_bytes);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path()?.to_string_lossy().into_owned();
        let path = raw.trim_start_matches("./").trim_end_matches('/').to_owned();
        if path.is_empty() || path == "." {
            continue;
        }
        ensure!(
            !path.starts_with('/') && path.split('/').all(|part| !part.is_empty() && part != "." && part != ".."),
            "entry {raw:?} is not a plain relative path"
        );
        let mode = entry.header().mode()? & 0o7777;
        let node = match entry.header().entry_type() {
            tar::EntryType::Directory => Node::dir(mode),
            tar::EntryType::Regular => {
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut data)?;
                Node::file(mode, data)
            }
            tar::EntryType::Symlink => {
                let target = entry.link_name()?.context("symlink without a target")?;
                Node::link(target.to_string_lossy().into_owned())
            }
            other => bail!("entry {raw:?} is a {other:?}, which images built here do not carry"),
        };
        tree.insert(path, node);
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::oci::header;

    #[test]
    fn apt_cache_record_is_read() {
        let text = "Package: libc6\nVersion: 2.36-9+deb12u14\nDescription: GNU C Library\n SHA256: not-this\n\
                    Filename: pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb\n\
                    SHA256: BA4F88F73DBC3AE9055F3C20F4523BFDBAF1AD13FF95E258924F77D20B4FBEDF\n\n\
                    Package: libc6\nVersion: 2.36-9\n";
        let pkg = parse_record(text).unwrap();
        assert_eq!(
            pkg,
            Package {
                name: "libc6".into(),
                version: "2.36-9+deb12u14".into(),
                file_name: "libc6_2.36-9+deb12u14_amd64.deb".into(),
                sha256: "ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf".into(),
            }
        );
    }

    #[test]
    fn odd_apt_cache_records_are_refused() {
        let record =
            |filename: &str, sha: &str| format!("Package: p\nVersion: 1\nFilename: {filename}\nSHA256: {sha}\n");
        let sha = "a".repeat(64);
        let message = |text: &str| format!("{:#}", parse_record(text).unwrap_err());
        assert_eq!(message(&record("pool/p/..", &sha)), "odd Filename \"pool/p/..\"");
        assert_eq!(message(&record("pool/p/.deb", &sha)), "odd Filename \"pool/p/.deb\"");
        assert_eq!(message(&record("pool/p/p_1.deb", "abc")), "odd SHA256 \"abc\"");
        assert_eq!(message("Package: p\nVersion: 1\n\nFilename: pool/p_1.deb\n"), "no Filename field");
    }

    fn tar_of(entries: &[(&str, tar::EntryType, &str)]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, kind, content) in entries {
            let size = if *kind == tar::EntryType::Regular { content.len() as u64 } else { 0 };
            let mut h = header(*kind, 0o755, 0, size);
            match kind {
                tar::EntryType::Symlink | tar::EntryType::Link => tar.append_link(&mut h, path, content).unwrap(),
                _ => tar.append_data(&mut h, path, content.as_bytes()).unwrap(),
            }
        }
        tar.into_inner().unwrap()
    }

    #[test]
    fn package_files_become_tree_entries() {
        use tar::EntryType::{Directory, Regular, Symlink};
        let tree = tree_from_tar(&tar_of(&[
            ("./", Directory, ""),
            ("./lib/", Directory, ""),
            ("./lib/x86_64-linux-gnu/libc.so.6", Regular, "elf"),
            ("./lib64/ld-linux-x86-64.so.2", Symlink, "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
        ]))
        .unwrap();
        let paths: Vec<&str> = tree.keys().map(String::as_str).collect();
        assert_eq!(paths, ["lib", "lib/x86_64-linux-gnu/libc.so.6", "lib64/ld-linux-x86-64.so.2"]);
        assert!(
            matches!(&tree["lib/x86_64-linux-gnu/libc.so.6"], Node::File { mode: 0o755, data } if **data == *b"elf")
        );
        assert!(matches!(&tree["lib64/ld-linux-x86-64.so.2"], Node::Link { target }
            if target == "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
    }

    #[test]
    fn hard_links_and_escaping_paths_are_refused() {
        let message = |tar: Vec<u8>| format!("{:#}", tree_from_tar(&tar).unwrap_err());
        let hard = tar_of(&[("./lib/a", tar::EntryType::Link, "./lib/b")]);
        assert_eq!(message(hard), "entry \"lib/a\" is a Link, which images built here do not carry");
        // tar-rs refuses to write `..` itself, so the name is patched in.
        let mut escaping = tar_of(&[("xx/passwd", tar::EntryType::Regular, "x")]);
        escaping[..2].copy_from_slice(b"..");
        let mut h = tar::Header::from_byte_slice(&escaping[..512]).clone();
        h.set_cksum();
        escaping[..512].copy_from_slice(h.as_bytes());
        assert_eq!(message(escaping), "entry \"../passwd\" is not a plain relative path");
    }
}
