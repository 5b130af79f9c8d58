//! Packages from the npm registry: fetched once with `npm pack` into the cache, checked against a pinned integrity every time they are used.
//!
//! The npm client is asked, rather than the registry spoken to directly, so a
//! mirror or proxy set in the user's npm configuration is honoured. The
//! integrity pinned in our source, not anything the registry says, decides
//! whether a tarball is used: a republished or tampered tarball fails the
//! build.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;
use sha2::{Digest, Sha512};

/// One version of one package and the `dist.integrity` the registry listed
/// for it when it was pinned.
#[derive(Debug, Clone, Copy)]
pub struct Pinned {
    pub name: &'static str,
    pub version: &'static str,
    /// `sha512-` and the base64 of the tarball's SHA-512 (Subresource
    /// Integrity form, as npm writes it).
    pub integrity: &'static str,
}

impl Pinned {
    /// `name@version`, as npm takes a spec.
    pub fn spec(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// The cached tarball's path: the scope's `@` dropped and `/` made `-`,
    /// as `npm pack` names it.
    fn cached(&self, cache: &Path) -> PathBuf {
        let stem = self.name.trim_start_matches('@').replace('/', "-");
        cache.join("npm").join(format!("{stem}-{}.tgz", self.version))
    }
}

/// The tarball's bytes, from the cache when it holds the pinned tarball,
/// else from the registry. The second value says whether it was downloaded.
pub fn fetch(pkg: Pinned, cache: &Path) -> Result<(Vec<u8>, bool)> {
    let path = pkg.cached(cache);
    if let Ok(bytes) = std::fs::read(&path) {
        if integrity(&bytes) == pkg.integrity {
            return Ok((bytes, false));
        }
        // Written only after it matched, so a mismatch means the file was
        // changed since; a fresh download decides.
        println!("{}: cached tarball no longer matches the pinned integrity; downloading again", path.display());
    }
    let bytes = download(pkg, path.parent().context("cache path has no parent")?)?;
    let got = integrity(&bytes);
    ensure!(
        got == pkg.integrity,
        "{}: the registry's tarball has integrity {got}, pinned {}",
        pkg.spec(),
        pkg.integrity
    );
    let tmp = path.with_extension("tgz.partial");
    std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok((bytes, true))
}

/// What `npm pack --json` says about each tarball it wrote.
#[derive(Debug, Deserialize)]
struct Packed {
    filename: String,
}

/// Runs `npm pack` in a scratch directory under `dir` with a scratch npm
/// cache, so the only copy kept is ours, and returns the tarball's bytes.
fn download(pkg: Pinned, dir: &Path) -> Result<Vec<u8>> {
    let scratch = dir.join(format!(".pack-{}", std::process::id()));
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let result = pack(pkg, &scratch);
    let removed = std::fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()));
    let bytes = result?;
    removed?;
    Ok(bytes)
}

fn pack(pkg: Pinned, scratch: &Path) -> Result<Vec<u8>> {
    let spec = pkg.spec();
    println!("npm pack {spec} (once; then cached)");
    // The spec is the last argument and comes from our source, so nothing a
    // user passes can be read as an npm option.
    let out = Command::new("npm")
        .args(["pack", "--ignore-scripts", "--json", "--pack-destination"])
        .arg(scratch)
        .arg("--cache")
        .arg(scratch.join("npm-cache"))
        .arg(&spec)
        .current_dir(scratch)
        .stdin(Stdio::null())
        .output()
        .context("running npm (install Debian's npm package, or Node.js with npm)")?;
    if !out.status.success() {
        bail!("npm pack {spec}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let packed: Vec<Packed> = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("reading npm pack's report: {}", String::from_utf8_lossy(&out.stdout).trim()))?;
    let [packed] = packed.as_slice() else { bail!("npm pack {spec} reported {} tarballs, not one", packed.len()) };
    // npm names the file; keep it inside the scratch directory all the same.
    ensure!(
        !packed.filename.contains('/') && packed.filename.ends_with(".tgz"),
        "npm pack {spec} reported an odd file name {:?}",
        packed.filename
    );
    let path = scratch.join(&packed.filename);
    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
}

/// A tarball's integrity in npm's form: `sha512-` and the base64 digest.
pub fn integrity(bytes: &[u8]) -> String {
    format!("sha512-{}", base64(&Sha512::digest(bytes)))
}

/// Standard base64 (RFC 4648 §4) with padding; a few lines here rather than
/// a dependency for the one digest we print.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648() {
        let vectors =
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE=")];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/");
    }

    /// The digest npm prints for a tarball holding only the text `abc`, the
    /// FIPS 180-2 SHA-512 example.
    #[test]
    fn integrity_is_sri_sha512() {
        assert_eq!(
            integrity(b"abc"),
            "sha512-3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw=="
        );
    }

    #[test]
    fn cached_file_name_follows_npm_pack() {
        let pkg = Pinned { name: "@scope/pkg-linux-x64", version: "1.2.3", integrity: "sha512-x" };
        assert_eq!(pkg.spec(), "@scope/pkg-linux-x64@1.2.3");
        assert_eq!(pkg.cached(Path::new("/c")), Path::new("/c/npm/scope-pkg-linux-x64-1.2.3.tgz"));
    }

    /// A cached tarball that matches the pin is used as it is: npm, which
    /// would fail on this made-up package, is never asked.
    #[test]
    fn a_cached_tarball_matching_the_pin_is_used() {
        let scratch = tempfile::tempdir().unwrap();
        let cache = scratch.path().join("cache");
        let pkg = Pinned {
            name: "@brig-test/absent",
            version: "0.0.0",
            integrity: "sha512-YnJ4CTQcrw64CcE8fM4mNwWTlzWhz/1uGw4i245RcbMVgqep1tJofPRjM0VEOBfc51DdKPrz9+upZYRzx6EFzA==",
        };
        std::fs::create_dir_all(cache.join("npm")).unwrap();
        std::fs::write(pkg.cached(&cache), b"pretend tarball").unwrap();
        let found = fetch(pkg, &cache);
        assert_eq!(found.unwrap(), (b"pretend tarball".to_vec(), false));
    }
}
