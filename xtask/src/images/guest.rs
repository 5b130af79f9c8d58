//! The lab guest image, `localhost/brig-lab/guest`: the static userland, `lab-agent`, and a stand-in per profile binary.
//!
//! The stand-in names are read from `profiles/*.yaml` on every build, so a
//! profile that gains a binary cannot meet an image that lacks it.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use flate2::Compression;
use serde::Deserialize;

use super::oci::{self, Image, Layer, Node, Spec, Tree};
use super::userland::{GUEST_PATH, Userland};

pub const REPOSITORY: &str = "localhost/brig-lab/guest";
const LAB_AGENT: &str = "usr/local/bin/lab-agent";
/// Where stand-ins go: on PATH ahead of every directory busybox fills.
const STAND_IN_DIR: &str = "usr/local/bin";

/// Everything the lab guest adds to the userland; its digests depend on
/// nothing else.
#[derive(Debug)]
pub struct LabGuest {
    pub lab_agent: Vec<u8>,
    /// Every `binary:` named in the built-in profiles.
    pub profile_binaries: BTreeSet<String>,
}

impl LabGuest {
    pub fn from_workspace(root: &Path) -> Result<Self> {
        let agent_path = root.join("lab/guest/lab-agent");
        let lab_agent = std::fs::read(&agent_path).with_context(|| format!("reading {}", agent_path.display()))?;
        let profile_binaries = profile_binaries(&root.join("profiles"))?;
        Ok(LabGuest { lab_agent, profile_binaries })
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
        // A name the userland already has (bash for the ubuntu profile) keeps
        // its real program: a shell profile must get a shell.
        for name in &self.profile_binaries {
            if on_guest_path(&tree, name).is_none() {
                tree.insert(format!("{STAND_IN_DIR}/{name}"), Node::link(format!("/{LAB_AGENT}")));
            }
        }
        oci::add_parents(&mut tree);
        tree
    }

    pub fn image(&self, userland: &Userland) -> Result<Image> {
        let spec = Spec {
            repository: REPOSITORY,
            title: "brig lab guest".to_owned(),
            created_by: "cargo xtask images",
            architecture: userland.architecture.clone(),
            env: vec![format!("PATH={GUEST_PATH}")],
            cmd: vec!["sleep".to_owned(), "infinity".to_owned()],
        };
        let layer = Layer::compress(&oci::layer_tar(&self.tree(userland))?, Compression::best())?;
        Image::build(&spec, &layer)
    }
}

/// The path (without the leading `/`) a shell finds for `name` in the
/// tree, searching the guest's PATH in order as `execvp` does.
pub fn on_guest_path<'t>(tree: &'t Tree<'_>, name: &str) -> Option<&'t str> {
    GUEST_PATH.split(':').find_map(|dir| {
        let (path, node) = tree.get_key_value(&format!("{}/{name}", dir.trim_start_matches('/')))?;
        matches!(node, Node::File { .. } | Node::Link { .. }).then_some(path.as_str())
    })
}

/// Only the field this module reads; the rest of a profile is brig's to
/// validate.
#[derive(Debug, Deserialize)]
struct ProfileBinary {
    binary: Option<String>,
}

/// The `binary:` of every `*.yaml` in `dir`. A profile file that does not
/// parse, or a name that could not be a file in `/usr/local/bin`, stops the
/// build rather than leave a profile without its stand-in.
pub fn profile_binaries(dir: &Path) -> Result<BTreeSet<String>> {
    let listing = std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    let mut names = BTreeSet::new();
    let mut files = 0;
    for entry in listing {
        let path = entry.with_context(|| format!("listing {}", dir.display()))?.path();
        if path.extension().is_none_or(|ext| ext != "yaml") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let profile: ProfileBinary =
            serde_saphyr::from_str(&text).with_context(|| format!("reading binary: from {}", path.display()))?;
        if let Some(name) = profile.binary {
            ensure!(is_plain_file_name(&name), "{}: binary {name:?} is not a plain file name", path.display());
            names.insert(name);
        }
    }
    if files == 0 {
        bail!("no profiles (*.yaml) in {}", dir.display());
    }
    Ok(names)
}

/// Letters, digits and `._+-`, not starting with `.` or `-`: a name that is
/// one path component and that no shell or argv parser reads as anything else.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with(['.', '-'])
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
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
        let profile_binaries = ["claude", "cursor-agent", "bash", "sh"].map(str::to_owned).into();
        LabGuest { lab_agent: b"#!/bin/sh\necho agent\n".to_vec(), profile_binaries }
    }

    fn resolve<'t>(tree: &'t Tree<'_>, path: &str) -> (&'t str, &'t Node<'t>) {
        oci::resolve(tree, path).unwrap_or_else(|| panic!("{path} leads nowhere"))
    }

    #[test]
    fn stand_ins_lead_to_lab_agent_and_real_programs_stay() {
        let userland = fake_userland();
        let guest = fake_guest();
        let tree = guest.tree(&userland);
        for (name, runs) in
            [("claude", LAB_AGENT), ("cursor-agent", LAB_AGENT), ("bash", "bin/bash"), ("sh", "bin/busybox")]
        {
            let found = on_guest_path(&tree, name).unwrap_or_else(|| panic!("{name} not on the guest PATH"));
            assert_eq!(resolve(&tree, found).0, runs, "{name}");
        }
        assert!(matches!(&tree["usr/local/bin/claude"], Node::Link { target } if target == "/usr/local/bin/lab-agent"));
        assert!(!tree.contains_key("usr/local/bin/bash") && !tree.contains_key("usr/local/bin/sh"));
        assert!(on_guest_path(&tree, "codex").is_none());
    }

    /// The real profiles/: every binary a built-in profile names must run in
    /// the guest, as lab-agent unless the userland has the real program.
    #[test]
    fn every_profile_binary_runs_in_the_guest() {
        let profiles = workspace_root().join("profiles");
        let names = profile_binaries(&profiles).unwrap();
        // A second, plain reading of the files: a parser that dropped a
        // profile's binary would make the image lack it without a word.
        let mut lines = BTreeSet::new();
        for entry in std::fs::read_dir(&profiles).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "yaml") {
                let text = std::fs::read_to_string(&path).unwrap();
                lines.extend(text.lines().filter_map(|l| l.strip_prefix("binary:")).map(|b| b.trim().to_owned()));
            }
        }
        assert!(lines.len() >= 2, "profiles/ names fewer than two binaries: {lines:?}");
        assert_eq!(names, lines);

        let userland = fake_userland();
        let guest = LabGuest { lab_agent: b"#!/bin/sh\n".to_vec(), profile_binaries: names.clone() };
        let tree = guest.tree(&userland);
        for name in &names {
            let found = on_guest_path(&tree, name).unwrap_or_else(|| panic!("profile binary {name} not in the guest"));
            let (file, node) = resolve(&tree, found);
            assert!(matches!(node, Node::File { mode: 0o755, .. }), "{name} leads to {file}, not an executable");
            if name != "bash" {
                assert_eq!(file, LAB_AGENT, "{name}");
            }
        }
    }

    #[test]
    fn profile_binaries_refuse_names_that_are_not_plain() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("profiles");
        let write = |name: &str, text: &str| {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), text).unwrap();
        };
        write("a.yaml", "name: a\nbinary: newagent\nvolumes:\n  - {kind: tmpfs, path: x}\n");
        write("b.yaml", "name: b\nkind: shell\n");
        write("README.md", "binary: not-a-profile\n");
        let found = profile_binaries(&dir).unwrap();
        assert_eq!(found, BTreeSet::from(["newagent".to_owned()]));

        let mut refusals = Vec::new();
        for bad in ["../../etc/passwd", "-rf", ".hidden", "two words", "a/b", "\"\""] {
            write("c.yaml", &format!("binary: {bad}\n"));
            refusals.push(format!("{:#}", profile_binaries(&dir).unwrap_err()));
        }
        write("c.yaml", "binary: [not, a, string]\n");
        let unparsable = format!("{:#}", profile_binaries(&dir).unwrap_err());
        for (bad, message) in ["../../etc/passwd", "-rf", ".hidden", "two words", "a/b", ""].iter().zip(&refusals) {
            assert!(message.ends_with(&format!("binary {bad:?} is not a plain file name")), "{message}");
        }
        assert!(unparsable.contains("reading binary: from") && unparsable.contains("c.yaml"), "{unparsable}");

        let empty = tempfile::tempdir().unwrap();
        let empty = empty.path();
        let message = format!("{:#}", profile_binaries(empty).unwrap_err());
        assert!(message.starts_with("no profiles (*.yaml) in"), "{message}");
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
    /// applets on PATH, as it runs in the guest, through a link called
    /// `name` as a stand-in is. `None` when busybox is absent.
    fn run_lab_agent(name: &str, args: &[&str], env: &[(&str, &str)]) -> Option<std::process::Output> {
        if !Path::new(HOST_BUSYBOX).is_file() {
            let why = format!("{HOST_BUSYBOX} is absent (busybox-static, which `cargo xtask provision` installs)");
            assert!(
                !crate::ci::forbids_skipping(std::env::var_os("CI").as_deref()),
                "{why}, and under CI this test must run"
            );
            eprintln!("skipped: {why}; with CI set this is a failure");
            return None;
        }
        let scratch = tempfile::Builder::new().prefix("lab-agent-test-").tempdir().unwrap();
        let bin = scratch.path();
        for applet in ["sh", "awk", "tr", "sed", "sort", "id", "dirname", "mkdir"] {
            std::os::unix::fs::symlink(HOST_BUSYBOX, bin.join(applet)).unwrap();
        }
        let agent = bin.join(name);
        std::os::unix::fs::symlink(workspace_root().join("lab/guest/lab-agent"), &agent).unwrap();
        let out = Command::new(HOST_BUSYBOX)
            .arg("sh")
            .arg(&agent)
            .args(args)
            .env_clear()
            .env("PATH", bin)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Some(out)
    }

    #[test]
    fn lab_agent_reports_tricky_arguments_as_json() {
        let tricky =
            ["plain", "two words", "q\"uote", "back\\slash", "nl\nand\ttab", "\u{1}\u{1b}\u{7f}", "", "-v", "x=1", "é"];
        let env = [
            ("HOME", "/nonexistent"),
            ("LAB_SHOW_ENV", "SHOWN MISSING"),
            ("SHOWN", "va\"l\nue"),
            ("HIDDEN", "secret-value"),
        ];
        let Some(out) = run_lab_agent("lab-agent", &tricky, &env) else { return };
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains("secret-value"));
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["binary"], "lab-agent");
        assert_eq!(report["argv"], json!(tricky));
        assert_eq!(report["home"], "/nonexistent");
        assert_eq!(report["envNames"], json!(["HIDDEN", "HOME", "LAB_SHOW_ENV", "PATH", "SHOWN"]));
        assert_eq!(report["env"], json!({"SHOWN": "va\"l\nue", "MISSING": null}));
        assert!(report["uid"].is_u64() && report["gid"].is_u64());
        assert!(report["mounts"].is_array());
    }

    #[test]
    fn a_stand_in_reports_the_name_it_was_run_as() {
        for name in ["claude", "cursor-agent"] {
            let Some(out) = run_lab_agent(name, &["-p", "hi"], &[]) else { return };
            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!((&report["binary"], &report["argv"]), (&json!(name), &json!(["-p", "hi"])));
        }
    }
}
