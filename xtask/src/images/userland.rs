//! The shell userland every guest image starts from: the host's static busybox and bash.
//!
//! Static builds need no loader or libraries, so they run in any image as
//! they are; the images add what their programs need on top.

use std::process::Command;

use anyhow::{Context, Result, ensure};

use super::elf;
use super::oci::{Node, Tree};

/// Where a login shell and the image config look for programs.
pub const GUEST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
pub const HOST_BUSYBOX: &str = "/bin/busybox";
const HOST_BASH: &str = "/bin/bash-static";

#[derive(Debug)]
pub struct Userland {
    pub busybox: Vec<u8>,
    /// Applet paths as `busybox --list-full` prints them, relative to `/`.
    pub applets: Vec<String>,
    pub bash: Vec<u8>,
    /// OCI names (`amd64`, `arm64`, …) of the host the binaries come from.
    pub architecture: String,
}

impl Userland {
    pub fn from_host() -> Result<Self> {
        let busybox = read_static_binary(HOST_BUSYBOX, "busybox-static")?;
        let bash = read_static_binary(HOST_BASH, "bash-static")?;
        let listed = Command::new(HOST_BUSYBOX)
            .arg("--list-full")
            .output()
            .with_context(|| format!("running {HOST_BUSYBOX} --list-full"))?;
        ensure!(
            listed.status.success(),
            "{HOST_BUSYBOX} --list-full failed: {}",
            String::from_utf8_lossy(&listed.stderr).trim()
        );
        let applets = String::from_utf8(listed.stdout)
            .context("busybox applet list is not UTF-8")?
            .lines()
            .map(str::to_owned)
            .collect();
        Ok(Userland { busybox, applets, bash, architecture: oci_architecture(std::env::consts::ARCH).to_owned() })
    }

    /// The directories every guest has, busybox with a link per applet, bash,
    /// and the profile a login shell reads. Accounts are each image's own.
    pub fn tree(&self) -> Tree<'_> {
        // `bash -l` (how `brig sh` enters real agent images) reads this.
        let profile = format!("export PATH={GUEST_PATH}\nPS1='\\u@\\h:\\w\\$ '\n");

        let mut tree = Tree::new();
        for path in ["bin", "dev", "etc", "proc", "sys", "work", "home", "usr/local/bin"] {
            tree.insert(path.to_owned(), Node::dir(0o755));
        }
        tree.insert("root".to_owned(), Node::dir(0o700));
        tree.insert("tmp".to_owned(), Node::dir(0o1777));
        for applet in &self.applets {
            let path = applet.trim().trim_start_matches('/');
            if !path.is_empty() && path != "bin/busybox" {
                tree.insert(path.to_owned(), Node::link("/bin/busybox"));
            }
        }
        tree.insert("bin/busybox".to_owned(), Node::file(0o755, &self.busybox[..]));
        tree.insert("bin/bash".to_owned(), Node::file(0o755, &self.bash[..]));
        tree.insert("etc/profile".to_owned(), Node::file(0o644, profile.into_bytes()));
        tree
    }
}

fn read_static_binary(path: &str, package: &str) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {path} (install the {package} package)"))?;
    // A dynamic binary would need a loader and libraries the image may not have.
    ensure!(
        !elf::has_interpreter(&bytes).with_context(|| format!("reading {path} as ELF"))?,
        "{path} is dynamically linked; the guest image needs the static build from {package}"
    );
    Ok(bytes)
}

fn oci_architecture(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        "loongarch64" => "loong64",
        other => other,
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub fn fake_userland() -> Userland {
        Userland {
            busybox: b"not really busybox".to_vec(),
            applets: ["bin/busybox", "bin/sh", "usr/bin/[", "sbin/ip", "usr/sbin/httpd", "bin/true", "bin/sleep"]
                .map(str::to_owned)
                .to_vec(),
            bash: b"not really bash".to_vec(),
            architecture: "amd64".to_owned(),
        }
    }

    #[test]
    fn tree_holds_busybox_its_applets_and_bash() {
        let userland = fake_userland();
        let tree = userland.tree();
        for applet in ["bin/sh", "usr/bin/[", "sbin/ip", "usr/sbin/httpd", "bin/true"] {
            assert!(matches!(&tree[applet], Node::Link { target } if target == "/bin/busybox"), "{applet}");
        }
        assert!(matches!(&tree["bin/busybox"], Node::File { mode: 0o755, data } if **data == *b"not really busybox"));
        assert!(matches!(&tree["bin/bash"], Node::File { mode: 0o755, data } if **data == *b"not really bash"));
        assert!(matches!(&tree["etc/profile"], Node::File { data, .. }
            if String::from_utf8_lossy(data).contains(GUEST_PATH)));
        assert!(matches!(tree["root"], Node::Dir { mode: 0o700, owner: 0 }));
        assert!(matches!(tree["tmp"], Node::Dir { mode: 0o1777, owner: 0 }));
    }
}
