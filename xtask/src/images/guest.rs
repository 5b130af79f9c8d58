//! The lab guest image, `localhost/brig-lab/guest`: the static userland plus `lab/guest/lab-agent`.

use std::path::Path;

use anyhow::{Context, Result};
use flate2::Compression;

use super::oci::{self, Image, Layer, Node, Spec, Tree};
use super::userland::{GUEST_PATH, Userland};

pub const REPOSITORY: &str = "localhost/brig-lab/guest";

/// Everything the lab guest adds to the userland; its digests depend on
/// nothing else.
#[derive(Debug)]
pub struct LabGuest {
    pub lab_agent: Vec<u8>,
}

impl LabGuest {
    pub fn from_workspace(root: &Path) -> Result<Self> {
        let agent_path = root.join("lab/guest/lab-agent");
        let lab_agent = std::fs::read(&agent_path).with_context(|| format!("reading {}", agent_path.display()))?;
        Ok(LabGuest { lab_agent })
    }

    pub fn tree<'a>(&'a self, userland: &'a Userland) -> Tree<'a> {
        const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
                              lab:x:1000:1000:lab:/home/lab:/bin/sh\n\
                              nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
        const GROUP: &str = "root:x:0:\nlab:x:1000:\nnogroup:x:65534:\n";

        let mut tree = userland.tree();
        tree.insert("home/lab".to_owned(), Node::Dir { mode: 0o755, owner: 1000 });
        tree.insert("usr/local/bin/lab-agent".to_owned(), Node::file(0o755, &self.lab_agent[..]));
        tree.insert("etc/passwd".to_owned(), Node::file(0o644, PASSWD.as_bytes()));
        tree.insert("etc/group".to_owned(), Node::file(0o644, GROUP.as_bytes()));
        oci::add_parents(&mut tree);
        tree
    }

    pub fn image(&self, userland: &Userland) -> Result<Image> {
        let spec = Spec {
            repository: REPOSITORY,
            title: "brig lab guest",
            created_by: "cargo xtask images",
            architecture: userland.architecture.clone(),
            env: vec![format!("PATH={GUEST_PATH}")],
            cmd: vec!["sleep".to_owned(), "infinity".to_owned()],
        };
        let layer = Layer::compress(&oci::layer_tar(&self.tree(userland))?, Compression::best())?;
        Image::build(&spec, &layer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::oci::tests::entries;
    use crate::images::userland::HOST_BUSYBOX;
    use crate::images::userland::tests::fake_userland;
    use crate::images::workspace_root;
    use serde_json::{Value, json};
    use std::process::Command;

    fn fake_guest() -> LabGuest {
        LabGuest { lab_agent: b"#!/bin/sh\necho agent\n".to_vec() }
    }

    #[test]
    fn two_builds_are_identical() {
        let userland = fake_userland();
        let a = fake_guest().image(&userland).unwrap();
        let b = fake_guest().image(&userland).unwrap();
        assert_eq!(a.manifest_digest, b.manifest_digest);
        assert_eq!(oci::sha256_hex(&a.archive), oci::sha256_hex(&b.archive));
    }

    #[test]
    fn a_changed_agent_changes_the_tag() {
        let userland = fake_userland();
        let mut guest = fake_guest();
        let before = guest.image(&userland).unwrap();
        assert!(before.references()[0].starts_with("localhost/brig-lab/guest:"));
        guest.lab_agent.push(b'\n');
        assert_ne!(guest.image(&userland).unwrap().tag, before.tag);
    }

    #[test]
    fn layer_holds_the_guest_filesystem() {
        let userland = fake_userland();
        let guest = fake_guest();
        let layer = entries(&oci::layer_tar(&guest.tree(&userland)).unwrap());
        let find = |path: &str| {
            layer
                .iter()
                .find(|e| e.path.trim_end_matches('/') == path)
                .unwrap_or_else(|| panic!("{path} missing from the layer"))
        };
        for dir in [
            "bin",
            "etc",
            "root",
            "home/lab",
            "tmp",
            "work",
            "proc",
            "sys",
            "dev",
            "sbin",
            "usr",
            "usr/bin",
            "usr/sbin",
            "usr/local/bin",
        ] {
            assert_eq!(find(dir).kind, tar::EntryType::Directory, "{dir}");
        }
        assert_eq!(find("tmp").mode, 0o1777);
        assert_eq!(find("home/lab").uid, 1000);
        assert_eq!(find("bin/busybox").data, b"not really busybox");
        assert_eq!(find("bin/bash").data, b"not really bash");
        assert_eq!(find("usr/local/bin/lab-agent").mode, 0o755);
        for applet in ["bin/sh", "usr/bin/[", "sbin/ip", "usr/sbin/httpd"] {
            let entry = find(applet);
            assert_eq!((entry.kind, entry.link.as_str()), (tar::EntryType::Symlink, "/bin/busybox"));
        }
        let passwd = String::from_utf8(find("etc/passwd").data.clone()).unwrap();
        assert!(passwd.contains("lab:x:1000:1000:lab:/home/lab:"));
        assert!(String::from_utf8_lossy(&find("etc/profile").data).contains(GUEST_PATH));
        assert!(find("etc/group").data.starts_with(b"root:x:0:"));

        // Pinned metadata and sorted order are what make the digest stable.
        assert!(layer.iter().all(|e| e.mtime == 0 && (e.uid == 0 || e.path.starts_with("home/lab"))));
        let paths: Vec<&str> = layer.iter().map(|e| e.path.trim_end_matches('/')).collect();
        let mut sorted = paths.clone();
        sorted.sort_unstable();
        assert_eq!(paths, sorted);
    }

    #[test]
    fn image_config_runs_sleep_with_the_guest_path() {
        let image = fake_guest().image(&fake_userland()).unwrap();
        let archive = entries(&image.archive);
        let hex = image.config_digest.trim_start_matches("sha256:");
        let config = archive.iter().find(|e| e.path == format!("blobs/sha256/{hex}")).unwrap();
        let config: Value = serde_json::from_slice(&config.data).unwrap();
        assert_eq!(config["config"]["Cmd"], json!(["sleep", "infinity"]));
        assert_eq!(config["config"]["Env"], json!([format!("PATH={GUEST_PATH}")]));
        assert_eq!(config["config"]["Labels"]["org.opencontainers.image.title"], "brig lab guest");
    }

    /// Runs the real `lab-agent` under the host's busybox, with only busybox
    /// applets on PATH, as it runs in the guest.
    #[test]
    fn lab_agent_reports_tricky_arguments_as_json() {
        if !Path::new(HOST_BUSYBOX).is_file() {
            eprintln!("{HOST_BUSYBOX} absent (busybox-static not installed); not run");
            return;
        }
        let bin = std::env::temp_dir().join(format!("lab-agent-test-{}", std::process::id()));
        std::fs::create_dir_all(&bin).unwrap();
        for applet in ["sh", "awk", "tr", "sed", "sort", "id", "dirname", "mkdir"] {
            let link = bin.join(applet);
            if !link.exists() {
                std::os::unix::fs::symlink(HOST_BUSYBOX, link).unwrap();
            }
        }
        let tricky =
            ["plain", "two words", "q\"uote", "back\\slash", "nl\nand\ttab", "\u{1}\u{1b}\u{7f}", "", "-v", "x=1", "é"];
        let out = Command::new(HOST_BUSYBOX)
            .arg("sh")
            .arg(workspace_root().join("lab/guest/lab-agent"))
            .args(tricky)
            .env_clear()
            .env("PATH", &bin)
            .env("HOME", "/nonexistent")
            .env("LAB_SHOW_ENV", "SHOWN MISSING")
            .env("SHOWN", "va\"l\nue")
            .env("HIDDEN", "secret-value")
            .output()
            .unwrap();
        std::fs::remove_dir_all(&bin).unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains("secret-value"));
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["argv"], json!(tricky));
        assert_eq!(report["home"], "/nonexistent");
        assert_eq!(report["envNames"], json!(["HIDDEN", "HOME", "LAB_SHOW_ENV", "PATH", "SHOWN"]));
        assert_eq!(report["env"], json!({"SHOWN": "va\"l\nue", "MISSING": null}));
        assert!(report["uid"].is_u64() && report["gid"].is_u64());
        assert!(report["mounts"].is_array());
    }
}
