//! A real OCI registry (the distribution's `docker-registry`) for a trial
//! whose scenario needs one: on a free loopback port, storing under the
//! trial's scratch directory, gone with the trial.
//!
//! `{registry}` is its address; `{scratch}/registry.pid` lets a step stop
//! it mid-run. At the end it is killed, and every image name the runtime
//! keeps under its address (tags a fixture made, digests a boot pulled) is
//! removed again, by name, so that no trial leaves names behind and no
//! image another trial uses is deleted.

use std::io::Write as _;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::runtime::which;
use crate::scenario::RuntimeName;

#[derive(Debug)]
pub struct Registry {
    child: Child,
    pub address: String,
    runtime: RuntimeName,
    runtime_bin: Option<PathBuf>,
    /// The rootless lane's user (uid, gid): the registry runs as it, so the
    /// trial's own steps may stop it, and its names are cleaned from that
    /// user's store.
    user: Option<(u32, u32)>,
}

impl Registry {
    pub fn start(
        scratch: &Path,
        runtime: RuntimeName,
        runtime_bin: Option<PathBuf>,
        user: Option<(u32, u32)>,
    ) -> Result<Registry> {
        let bin = which("docker-registry").or_else(|| which("registry")).context("no docker-registry on PATH")?;
        // A port the kernel says is free now; the registry takes it a moment
        // later, and a trial that loses that race fails loudly below.
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let address = format!("127.0.0.1:{port}");
        let dir = scratch.join("registry");
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                 http:\n  addr: {address}\nlog:\n  level: warn\n",
                dir.join("data").display()
            ),
        )?;
        let log = std::fs::File::create(dir.join("log"))?;
        if let Some((uid, gid)) = user {
            let (owner, group) = (Some(rustix::fs::Uid::from_raw(uid)), Some(rustix::fs::Gid::from_raw(gid)));
            for path in [&dir, &config] {
                rustix::fs::chown(path, owner, group)
                    .with_context(|| format!("handing {} to uid {uid}", path.display()))?;
            }
        }
        let child = as_user(&bin, user)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        std::fs::File::create(scratch.join("registry.pid"))?.write_all(child.id().to_string().as_bytes())?;
        let registry = Registry { child, address, runtime, runtime_bin, user };
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if Instant::now() > deadline {
                bail!("the registry did not listen on {} within 15 s (see {})", registry.address, dir.display());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(registry)
    }

    /// Every name the runtime keeps under this registry's address.
    fn image_names(&self, bin: &Path) -> Vec<String> {
        let format = match self.runtime {
            RuntimeName::Nerdctl => "{{.Name}}",
            RuntimeName::Podman | RuntimeName::PodmanRootless => "{{.Repository}}:{{.Tag}}",
        };
        let Ok(out) = as_user(bin, self.user).args(["images", "--format", format]).output() else { return Vec::new() };
        let prefix = format!("{}/", self.address);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|name| name.starts_with(&prefix) && !name.ends_with(":<none>"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(bin) = &self.runtime_bin {
            for name in self.image_names(bin) {
                // By name: podman only untags an image that has other
                // names, which the lab's own image always has.
                let _ =
                    as_user(bin, self.user).args(["rmi", &name]).stdout(Stdio::null()).stderr(Stdio::null()).status();
            }
        }
    }
}

/// `program`, run as the rootless lane's user when the registry is that
/// user's.
fn as_user(program: &Path, user: Option<(u32, u32)>) -> Command {
    user.and_then(|_| crate::runtime::as_lane_user(program)).unwrap_or_else(|| Command::new(program))
}
