//! The Claude Code image, `localhost/brig-lab/claude-code`: the real `claude` on Debian's C library and the static userland.
//!
//! Claude Code ships a native build per platform as its own npm package;
//! the Linux x64 one holds a single dynamically linked `claude` that needs
//! only glibc. So the image is the shell userland every guest has, glibc
//! from Debian's packages, and that binary at one pinned version, whose
//! tarball must match the integrity pinned here.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use flate2::Compression;
use flate2::read::GzDecoder;
use serde_json::Value;

use super::debian::{self, Package};
use super::elf;
use super::npm::{self, Pinned};
use super::oci::{self, Image, Layer, Node, Spec, Tree};
use super::userland::{GUEST_PATH, Userland};

pub const REPOSITORY: &str = "localhost/brig-lab/claude-code";

/// The pinned release. To move it: take `dist.integrity` of the new version
/// from `npm view @anthropic-ai/claude-code-linux-x64@<version> dist.integrity`,
/// and check that the wrapper package `@anthropic-ai/claude-code` lists that
/// version under `optionalDependencies`.
pub const CLAUDE_CODE: Pinned = Pinned {
    name: "@anthropic-ai/claude-code-linux-x64",
    version: "2.1.332",
    integrity: "sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw==",
};

/// glibc, and libgcc_s, which glibc loads itself to unwind a cancelled
/// thread (and which libc6 depends on). `claude` asks for nothing else; the
/// build checks that, so a release that needs more fails here, naming it.
/// git (with the two libraries it links) so an agent can do real work and
/// the lab can prove git still commits under brig's protections, and
/// keyutils so the lab can try the kernel keyring from a guest.
const DEBIAN_PACKAGES: &[&str] = &["libc6", "libgcc-s1", "git", "libpcre2-8-0", "zlib1g", "keyutils", "libkeyutils1"];

const CLAUDE: &str = "usr/local/bin/claude";

/// Where Debian's loader looks without an `ld.so.cache`: the multiarch
/// directories built into it, then the plain ones.
const LIBRARY_DIRS: &[&str] = &["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"];

/// Everything the image adds to the userland.
#[derive(Debug)]
pub struct ClaudeCode {
    pub claude: Vec<u8>,
    pub license: Vec<u8>,
    pub packages: Vec<(Package, Tree<'static>)>,
}

impl ClaudeCode {
    /// Reads the pinned tarball and the packages from `cache`, downloading
    /// what it lacks.
    pub fn fetch(cache: &Path) -> Result<Self> {
        ensure!(
            std::env::consts::ARCH == "x86_64",
            "the pinned Claude Code build is for linux-x64; this host is {}",
            std::env::consts::ARCH
        );
        let (tarball, downloaded) = npm::fetch(CLAUDE_CODE, cache)?;
        println!(
            "{}: {} bytes, integrity {} as pinned{}",
            CLAUDE_CODE.spec(),
            tarball.len(),
            CLAUDE_CODE.integrity,
            if downloaded { " (downloaded)" } else { " (cached)" }
        );
        let (claude, license) = from_tarball(&tarball, CLAUDE_CODE)?;
        let mut packages = Vec::new();
        for name in DEBIAN_PACKAGES {
            let pkg = debian::candidate(name)?;
            let (deb, downloaded) = debian::fetch(&pkg, cache)?;
            println!(
                "{} {}: sha256 {} as apt's index lists{}",
                pkg.name,
                pkg.version,
                pkg.sha256,
                if downloaded { " (downloaded)" } else { " (cached)" }
            );
            packages.push((pkg, debian::unpack(&deb)?));
        }
        Ok(ClaudeCode { claude, license, packages })
    }

    pub fn tree<'a>(&'a self, userland: &'a Userland) -> Result<Tree<'a>> {
        const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
        const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";
        // glibc reads this to resolve names; without it the order it falls
        // back on puts DNS before /etc/hosts.
        const NSSWITCH: &str = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n";

        let mut tree = userland.tree();
        for (pkg, files) in &self.packages {
            add_package(&mut tree, &pkg.name, files)?;
        }
        tree.insert(CLAUDE.to_owned(), Node::file(0o755, &self.claude[..]));
        tree.insert("usr/share/doc/claude-code/LICENSE.md".to_owned(), Node::file(0o644, &self.license[..]));
        tree.insert("etc/passwd".to_owned(), Node::file(0o644, PASSWD.as_bytes()));
        tree.insert("etc/group".to_owned(), Node::file(0o644, GROUP.as_bytes()));
        tree.insert("etc/nsswitch.conf".to_owned(), Node::file(0o644, NSSWITCH.as_bytes()));
        oci::add_parents(&mut tree);
        check_loadable(&tree, CLAUDE)?;
        Ok(tree)
    }

    /// The image; its compressed layer is kept in `cache` because
    /// compressing 400 MB is most of the build.
    pub fn image(&self, userland: &Userland, cache: &Path) -> Result<Image> {
        let spec = Spec {
            repository: REPOSITORY,
            title: format!("brig lab claude-code ({} {})", CLAUDE_CODE.name, CLAUDE_CODE.version),
            created_by: "cargo xtask images --claude-code",
            architecture: userland.architecture.clone(),
            env: vec![
                format!("PATH={GUEST_PATH}"),
                // The image is the update: a pinned binary replacing itself
                // inside a sandbox would be neither pinned nor reproducible.
                "DISABLE_AUTOUPDATER=1".to_owned(),
            ],
            cmd: vec!["claude".to_owned()],
        };
        let tar = oci::layer_tar(&self.tree(userland)?)?;
        let layers = cache.join("layers").join("claude-code");
        let (layer, cached) = Layer::compress_cached(&tar, Compression::default(), &layers)?;
        println!(
            "layer    sha256:{} ({} bytes, {})",
            layer.diff_hex,
            tar.len(),
            if cached { "cached" } else { "compressed" }
        );
        Image::build(&spec, &layer)
    }
}

/// `claude` and its licence from the package tarball, after checking that
/// the tarball is the package and version pinned.
fn from_tarball(tgz: &[u8], pinned: Pinned) -> Result<(Vec<u8>, Vec<u8>)> {
    let (mut manifest, mut claude, mut license) = (None, None, None);
    let mut archive = tar::Archive::new(GzDecoder::new(tgz));
    for entry in archive.entries().context("reading the package tarball")? {
        let mut entry = entry.context("reading the package tarball")?;
        let path = entry.path()?.to_string_lossy().into_owned();
        let slot = match path.as_str() {
            "package/package.json" => &mut manifest,
            "package/claude" => &mut claude,
            "package/LICENSE.md" => &mut license,
            _ => continue,
        };
        let mut data = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry.read_to_end(&mut data).with_context(|| format!("reading {path} from the package tarball"))?;
        *slot = Some(data);
    }
    let manifest: Value = serde_json::from_slice(&manifest.context("the package tarball has no package.json")?)
        .context("reading the package's package.json")?;
    let said = (manifest["name"].as_str(), manifest["version"].as_str());
    ensure!(
        said == (Some(pinned.name), Some(pinned.version)),
        "the tarball's package.json names {said:?}, not the pinned {}",
        pinned.spec()
    );
    let claude = claude.context("the package tarball has no claude binary")?;
    Ok((claude, license.context("the package tarball has no LICENSE.md")?))
}

/// Adds a package's files. Directories both have stay as the tree has
/// them, and a package's program replaces a busybox applet of the same
/// name; any other clash is an error, since one side would silently lose.
fn add_package<'a>(tree: &mut Tree<'a>, package: &str, files: &'a Tree<'static>) -> Result<()> {
    for (path, node) in files {
        match (tree.get(path), node) {
            (None, _) => {}
            (Some(Node::Dir { .. }), Node::Dir { .. }) => continue,
            (Some(Node::Link { target }), Node::File { .. } | Node::Link { .. }) if target == "/bin/busybox" => {}
            (Some(_), _) => bail!("{package} and the image both have /{path}"),
        }
        tree.insert(path.clone(), node.borrowed());
    }
    Ok(())
}

/// Checks that the loader `program` names and every library it needs,
/// and those libraries need in turn, are files in the tree where Debian's
/// loader looks.
fn check_loadable(tree: &Tree<'_>, program: &str) -> Result<()> {
    let mut pending = vec![program.to_owned()];
    let mut seen = BTreeSet::new();
    while let Some(path) = pending.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let Some((real, Node::File { data, .. })) = oci::resolve(tree, &path) else {
            bail!("/{path} leads to no file in the image");
        };
        let needs = elf::needs(data).with_context(|| format!("reading /{real} as ELF"))?;
        if let Some(loader) = &needs.interpreter {
            ensure!(
                matches!(oci::resolve(tree, loader.trim_start_matches('/')), Some((_, Node::File { .. }))),
                "/{real} needs the loader {loader}, which the image lacks"
            );
        }
        for library in &needs.libraries {
            let found = LIBRARY_DIRS
                .iter()
                .map(|dir| format!("{dir}/{library}"))
                .find(|candidate| matches!(oci::resolve(tree, candidate), Some((_, Node::File { .. }))));
            let Some(found) = found else {
                bail!("/{real} needs {library}, which no package in the image provides (add it to DEBIAN_PACKAGES)");
            };
            pending.push(found);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::elf::tests::dynamic_executable;
    use crate::images::guest::on_guest_path;
    use crate::images::oci::tests::entries;
    use crate::images::userland::tests::fake_userland;

    /// A fake glibc laid out as libc6 lays it: the loader, a link to it
    /// where binaries name it, and libraries that are ELF headers needing
    /// nothing more.
    fn fake_claude_code() -> ClaudeCode {
        let mut header = vec![0u8; 0x40];
        header[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let mut files = Tree::new();
        files.insert("lib".to_owned(), Node::dir(0o755));
        files.insert("lib/x86_64-linux-gnu/ld.so".to_owned(), Node::file(0o755, b"loader".to_vec()));
        files.insert("lib/x86_64-linux-gnu/libc.so.6".to_owned(), Node::file(0o755, header.clone()));
        files.insert("lib/x86_64-linux-gnu/libm.so.6".to_owned(), Node::file(0o644, header));
        files.insert("lib64/ld.so".to_owned(), Node::link("/lib/x86_64-linux-gnu/ld.so"));
        let libc = Package {
            name: "libc6".into(),
            version: "1".into(),
            file_name: "libc6_1_amd64.deb".into(),
            sha256: "0".repeat(64),
        };
        ClaudeCode { claude: dynamic_executable(), license: b"licence".to_vec(), packages: vec![(libc, files)] }
    }

    #[test]
    fn tree_holds_claude_its_libraries_and_the_shell_brig_needs() {
        let userland = fake_userland();
        let image = fake_claude_code();
        let tree = image.tree(&userland).unwrap();
        assert_eq!(on_guest_path(&tree, "claude"), Some(CLAUDE));
        assert!(matches!(&tree[CLAUDE], Node::File { mode: 0o755, .. }));
        // brig parks PID 1 in `sh -c`, probes with `true`, opens shells with `bash -lc`.
        for program in ["sh", "true", "bash", "sleep"] {
            assert!(on_guest_path(&tree, program).is_some(), "{program} missing");
        }
        assert!(matches!(&tree["etc/passwd"], Node::File { data, .. } if data.starts_with(b"root:x:0:0:root:/root:")));
        assert!(matches!(tree["root"], Node::Dir { mode: 0o700, .. }));
        assert!(matches!(oci::resolve(&tree, "lib64/ld.so"), Some(("lib/x86_64-linux-gnu/ld.so", _))));
        let layer = entries(&oci::layer_tar(&tree).unwrap());
        assert!(layer.iter().any(|e| e.path == "lib/x86_64-linux-gnu/libm.so.6"));
    }

    #[test]
    fn a_missing_library_or_loader_fails_the_build() {
        let userland = fake_userland();
        let mut image = fake_claude_code();
        image.packages[0].1.remove("lib/x86_64-linux-gnu/libm.so.6");
        let message = format!("{:#}", image.tree(&userland).unwrap_err());
        assert_eq!(
            message,
            "/usr/local/bin/claude needs libm.so.6, which no package in the image provides (add it to DEBIAN_PACKAGES)"
        );
        let mut image = fake_claude_code();
        image.packages[0].1.remove("lib/x86_64-linux-gnu/ld.so");
        let message = format!("{:#}", image.tree(&userland).unwrap_err());
        assert_eq!(message, "/usr/local/bin/claude needs the loader /lib64/ld.so, which the image lacks");
    }

    #[test]
    fn packages_replace_applets_but_not_other_files() {
        let userland = fake_userland();
        let mut tree = userland.tree();
        let mut files = Tree::new();
        files.insert("bin".to_owned(), Node::dir(0o700));
        files.insert("bin/true".to_owned(), Node::file(0o755, b"real true".to_vec()));
        add_package(&mut tree, "coreutils", &files).unwrap();
        assert!(matches!(&tree["bin/true"], Node::File { data, .. } if **data == *b"real true"));
        assert!(matches!(tree["bin"], Node::Dir { mode: 0o755, .. }));

        let mut clash = Tree::new();
        clash.insert("bin/bash".to_owned(), Node::file(0o755, b"other bash".to_vec()));
        let message = format!("{:#}", add_package(&mut tree, "bash", &clash).unwrap_err());
        assert_eq!(message, "bash and the image both have /bin/bash");
    }

    #[test]
    fn image_runs_claude_with_the_updater_off() {
        let userland = fake_userland();
        let scratch = tempfile::tempdir().unwrap();
        let cache = scratch.path().join("cache");
        let image = fake_claude_code().image(&userland, &cache).unwrap();
        assert!(image.references()[0].starts_with("localhost/brig-lab/claude-code:"));
        let archive = entries(&image.archive);
        let hex = image.config_digest.trim_start_matches("sha256:");
        let config = archive.iter().find(|e| e.path == format!("blobs/sha256/{hex}")).unwrap();
        let config: Value = serde_json::from_slice(&config.data).unwrap();
        assert_eq!(config["config"]["Cmd"], serde_json::json!(["claude"]));
        assert_eq!(config["config"]["Env"], serde_json::json!([format!("PATH={GUEST_PATH}"), "DISABLE_AUTOUPDATER=1"]));
    }

    fn tarball(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, data) in files {
            let mut h = oci::header(tar::EntryType::Regular, 0o755, 0, data.len() as u64);
            tar.append_data(&mut h, path, *data).unwrap();
        }
        oci::gzip(&tar.into_inner().unwrap(), Compression::fast()).unwrap()
    }

    #[test]
    fn the_tarball_must_be_the_pinned_package() {
        let pinned = Pinned { name: "@a/b-linux-x64", version: "1.0.0", integrity: "unused" };
        let good = tarball(&[
            ("package/package.json", br#"{"name":"@a/b-linux-x64","version":"1.0.0"}"#),
            ("package/claude", b"binary"),
            ("package/LICENSE.md", b"licence"),
        ]);
        assert_eq!(from_tarball(&good, pinned).unwrap(), (b"binary".to_vec(), b"licence".to_vec()));

        let other = tarball(&[
            ("package/package.json", br#"{"name":"@a/b-linux-x64","version":"1.0.1"}"#),
            ("package/claude", b"binary"),
        ]);
        let message = format!("{:#}", from_tarball(&other, pinned).unwrap_err());
        assert_eq!(
            message,
            r#"the tarball's package.json names (Some("@a/b-linux-x64"), Some("1.0.1")), not the pinned @a/b-linux-x64@1.0.0"#
        );
        let empty = tarball(&[("package/package.json", br#"{"name":"@a/b-linux-x64","version":"1.0.0"}"#)]);
        let message = format!("{:#}", from_tarball(&empty, pinned).unwrap_err());
        assert_eq!(message, "the package tarball has no claude binary");
    }

    #[test]
    fn the_pin_is_a_sha512_integrity() {
        let digest = CLAUDE_CODE.integrity.strip_prefix("sha512-").expect("sha512- prefix");
        // 64 bytes in base64: 86 characters and two of padding.
        assert_eq!(digest.len(), 88);
        assert!(digest.ends_with("=="));
        assert!(digest[..86].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/'));
    }
}
