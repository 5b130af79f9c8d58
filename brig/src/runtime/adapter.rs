//! What brig asks of a runtime, independent of its dialect.
//!
//! The engine speaks only this vocabulary; each adapter turns it into its
//! binary's argv and parses that binary's answers. Every value the guest
//! should see travels in the child process's environment, named by a bare
//! `-e NAME` in argv (see [`crate::process`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Error, Isolation, Kind};
use crate::process::Command;

/// Labels brig puts on every sandbox it boots, so the runtime itself can say
/// what a sandbox is even when the session index is gone.
pub mod label {
    pub const AGENT: &str = "sh.brig.agent";
    pub const LABEL: &str = "sh.brig.label";
    pub const HOME: &str = "sh.brig.home";
    pub const HOME_CREATED: &str = "sh.brig.home-created";
    pub const PROJECT: &str = "sh.brig.project";
    pub const NETWORK: &str = "sh.brig.network";
    pub const ISOLATION: &str = "sh.brig.isolation";
    /// The published ports, `ADDRESS:HOST:GUEST/PROTO` joined by commas.
    pub const PUBLISH: &str = "sh.brig.publish";
    /// Not a label on the sandbox: the posture brig read from the runtime's
    /// own account of the sandbox's network, for one made without brig's
    /// labels (spec 05 §2.3). Whatever a label of this name said is replaced.
    pub const NETWORK_SEEN: &str = "sh.brig.network-seen";
}

/// A sandbox's state as the runtime reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Running,
    Stopped,
    /// The runtime listed the sandbox but could not read its state itself
    /// (nerdctl says `Unknown` when a task lookup fails under load). Never
    /// taken for stopped: brig does not act on it.
    Unknown,
}

/// One row of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub state: State,
    pub labels: BTreeMap<String, String>,
}

/// One sandbox as the runtime has it now: its row and its mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub listed: Listed,
    pub mounts: Vec<Mount>,
}

/// A mount of a sandbox, read back from the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub source: PathBuf,
    pub destination: PathBuf,
}

/// A tmpfs to mount at creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tmpfs {
    pub path: String,
    pub options: String,
}

/// Where a new sandbox's network comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkAttach {
    /// No network at all.
    None,
    /// A named network brig created.
    Named(String),
}

/// Everything needed to create and start a sandbox.
#[derive(Debug, Clone)]
pub struct BootSpec {
    pub name: String,
    pub image: String,
    pub mem_mb: u32,
    pub cpus: u32,
    pub pull: Option<&'static str>,
    pub network: NetworkAttach,
    /// Guest ports reachable at host addresses, fixed at create.
    pub publish: Vec<crate::ports::Publish>,
    pub binds: Vec<Bind>,
    pub tmpfs: Vec<Tmpfs>,
    /// Variables set for the sandbox's whole life: name → value, handed to
    /// the runtime through a pipe (`env_file`), never argv or its
    /// environment.
    pub env: Vec<(String, String)>,

    pub labels: Vec<(String, String)>,
    /// What a container on the host's kernel is held to; `None` for a
    /// microVM, whose own kernel is the boundary.
    pub hardening: Option<Hardening>,
}

/// A host path mounted into the sandbox. Every bind is `nosuid,nodev` where
/// the runtime can carry those options (podman); elsewhere brig's seccomp
/// profile and the runtime's device rules stand in for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub host: PathBuf,
    pub guest: String,
    pub read_only: bool,
}

impl Bind {
    pub fn rw(host: impl Into<PathBuf>, guest: impl Into<String>) -> Bind {
        Bind { host: host.into(), guest: guest.into(), read_only: false }
    }
}

/// What a sandbox sharing the host's kernel may do: no privilege gained
/// through setuid or file capabilities, only the capabilities an agent
/// needs, brig's seccomp profile, and bounded processes and log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hardening {
    pub no_new_privileges: bool,
    /// The only capabilities kept; every other is dropped.
    pub capabilities: Vec<&'static str>,
    pub pids_limit: u32,
    /// The runtime's log of the sandbox: at most this size per file.
    pub log_max_size: &'static str,
    /// brig's seccomp profile (`runtime::seccomp`), written here before
    /// the boot.
    pub seccomp: PathBuf,
    /// Who root in the guest is on the host.
    pub guest_root: GuestRoot,
}

/// Who root in a container's guest is on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum GuestRoot {
    /// A rootful runtime (brig runs as root, or docker's daemon does) gives
    /// the sandbox no user namespace: root in the guest is root on the host.
    HostRoot,
    /// A rootless runtime (podman or nerdctl run by a user) maps the
    /// guest's root to that user.
    User { uid: u32 },
}

impl GuestRoot {
    /// What a runtime of `kind`, run by this process's user, gives.
    pub fn of(kind: Kind) -> GuestRoot {
        let euid = rustix::process::geteuid();
        if euid.is_root() || kind == Kind::Docker {
            GuestRoot::HostRoot
        } else {
            GuestRoot::User { uid: euid.as_raw() }
        }
    }

    /// The word `ls --json` and brigd report for a sandbox of `isolation`
    /// (`host-root`, `uid:<n>`); none for a microVM, whose guest has its
    /// own kernel.
    pub fn word_for(isolation: Option<&str>, kind: Kind) -> Option<String> {
        (isolation == Some("container")).then(|| match GuestRoot::of(kind) {
            GuestRoot::HostRoot => "host-root".to_owned(),
            GuestRoot::User { uid } => format!("uid:{uid}"),
        })
    }

    pub fn describe(self) -> String {
        match self {
            GuestRoot::HostRoot => {
                "root (uid 0), which is root on the host: a rootful runtime gives the sandbox no user namespace"
                    .to_owned()
            }
            GuestRoot::User { uid } => {
                format!("root, which is you (uid {uid}) on the host, through the runtime's user namespace")
            }
        }
    }
}

impl Hardening {
    /// brig's container profile: root in the guest may own and change its
    /// files, switch users and signal its processes, and nothing else —
    /// no raw sockets, device nodes, chroot, file capabilities, or
    /// setuid-preserving writes, which a runtime's default set allows.
    pub fn container(state_dir: &Path, kind: Kind) -> Hardening {
        Hardening {
            no_new_privileges: true,
            capabilities: vec!["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"],
            pids_limit: 4096,
            log_max_size: "20m",
            seccomp: state_dir.join(super::seccomp::FILE_NAME),
            guest_root: GuestRoot::of(kind),
        }
    }
}

/// The guest's variables as the `--env-file` nerdctl, podman and docker
/// read: one `NAME=value` per line. A value holding a line break or a NUL
/// cannot be carried; the engine refused those before a runtime was called
/// (`engine::boot::forwarded`), and one reaching here is cut at the break
/// rather than let the rest of it read as a variable of its own.
pub fn env_file(env: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in env {
        let line = value.split(['\n', '\r', '\0']).next().unwrap_or_default();
        out.extend_from_slice(format!("{name}={line}\n").as_bytes());
    }
    out
}

/// A command to run in a sandbox.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    pub argv: Vec<String>,
    pub workdir: Option<String>,
    /// Handed to the runtime through a pipe, as `BootSpec::env`.
    pub env: Vec<(String, String)>,
    /// `BRIG_ENV_ARGV=1` only: variables placed on the runtime's command
    /// line as `NAME=value`, by the user's choice.
    pub exposed: Vec<(String, String)>,

    /// Allocate a terminal (the caller checked stdin is one).
    pub tty: bool,
    /// Keep stdin open for the command.
    pub interactive: bool,
}

/// The command that parks a sandbox's PID 1. It must exit on SIGTERM: a PID 1
/// without a handler ignores the signal, and every stop would then wait out
/// the runtime's grace period before the kill.
pub const PARK: [&str; 3] = ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"];

/// A runtime adapter.
pub trait Runtime: std::fmt::Debug + Send + Sync {
    fn kind(&self) -> Kind;
    /// Host variables every command of this runtime goes without: the ones
    /// a profile forwards to its guest by reference. A value bound for the
    /// guest never sits in a runtime's environment, where nerdctl would
    /// also store it with the sandbox (it gives its environment to the
    /// sandbox's OCI hooks, and so to the network plugins).
    fn withhold(&mut self, names: Vec<String>);
    /// Whether a sandbox can get a network of its own (`isolated`).
    fn isolates_networks(&self) -> bool {
        true
    }
    /// Whether brig holds an egress policy on this runtime's sandbox
    /// networks: nerdctl's and podman's are host bridges its firewall rules
    /// can name; docker and hull are not enforced (spec 05 §2.5).
    fn enforces_egress(&self) -> bool {
        matches!(self.kind(), super::Kind::Nerdctl | super::Kind::Podman)
    }
    /// Whether a sandbox's ports can be published at create.
    fn publishes_ports(&self) -> bool {
        true
    }
    /// The names of the runtime's networks that start with `brig-`.
    fn brig_networks(&self) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }
    /// The host bridge of a network brig made, for the host-isolation
    /// rules; `None` when the runtime has no such bridge to name.
    fn network_bridge(&self, _name: &str) -> Result<Option<crate::firewall::Bridge>, Error> {
        Ok(None)
    }
    /// The manifest digests the runtime's local copy of `image` is known
    /// by, or `None` when it holds no copy (or cannot say: the verified
    /// digest then boots, which is the safe answer).
    fn local_digests(&self, _image: &str) -> Option<Vec<String>> {
        None
    }
    fn bin(&self) -> &std::path::Path;
    /// The isolation a new sandbox gets on this runtime as configured.
    fn isolation(&self) -> Result<Isolation, Error>;
    /// Every sandbox whose name starts with `brig-`, in one runtime call.
    fn list(&self) -> Result<Vec<Listed>, Error>;
    /// The mounts of one sandbox; `None` when it does not exist.
    fn mounts(&self, name: &str) -> Result<Option<Vec<Mount>>, Error>;
    /// One sandbox by name, or `None` when it does not exist. A verb about
    /// one sandbox asks this rather than listing every container, so it
    /// costs the same however many other sandboxes exist.
    fn lookup(&self, name: &str) -> Result<Option<Found>, Error> {
        let Some(listed) = self.list()?.into_iter().find(|l| l.name == name) else { return Ok(None) };
        let mounts = self.mounts(name)?.unwrap_or_default();
        Ok(Some(Found { listed, mounts }))
    }
    /// The shim or OCI runtime a sandbox is handed to, where brig names one.
    fn shim(&self) -> Option<&str> {
        None
    }
    /// Refuse (exit 4) before anything is created when the shim a boot
    /// needs is not installed.
    fn check_shim(&self) -> Result<(), Error> {
        Ok(())
    }
    fn boot(&self, spec: &BootSpec) -> Result<(), Error>;
    fn start(&self, name: &str) -> Result<(), Error>;
    fn stop(&self, name: &str) -> Result<(), Error>;
    fn remove(&self, name: &str) -> Result<(), Error>;
    /// Create a network unless it exists; `isolate` cuts it off from the
    /// runtime's other networks where the runtime needs to be told.
    fn ensure_network(&self, name: &str, isolate: bool) -> Result<(), Error>;
    /// Remove a network; a missing one is not an error.
    fn remove_network(&self, name: &str) -> Result<(), Error>;
    /// The command that runs `spec` in the sandbox; the caller chooses to
    /// capture it, wait for it, or hand the terminal over to it.
    fn exec(&self, name: &str, spec: &ExecSpec) -> Command;
    fn logs(&self, name: &str, follow: bool, tail: Option<u32>) -> Command;
    /// The guest command's exit status, given what the runtime's `exec`
    /// exited with and the end of its stderr. Most runtimes pass the status
    /// through unchanged.
    fn exec_status(&self, status: i32, _stderr_tail: &str) -> i32 {
        status
    }
    /// Whether an exec failed because the runtime refused it before any
    /// guest command ran: the sandbox is stopped or does not exist. Read
    /// from the runtime's own exit status and its last stderr line.
    fn exec_refused(&self, _status: i32, _stderr_tail: &str) -> bool {
        false
    }
    /// Whether the real exit status of an exec can only be read from the
    /// runtime's stderr (so brig must stay the parent to read it).
    fn status_only_on_stderr(&self) -> bool {
        false
    }
}
