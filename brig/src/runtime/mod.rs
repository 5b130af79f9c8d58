//! Runtimes: which binary brig drives, and the isolation it can give.
//!
//! brig never boots anything itself. Every mechanical operation is a
//! subprocess of a runtime binary; this module decides which one, and (with
//! the adapters) speaks its dialect.

pub mod adapter;
#[cfg(test)]
mod captured;
mod hull;
mod invoke;
mod oci;
mod resolve;
pub mod seccomp;

pub use adapter::{Bind, BootSpec, ExecSpec, Found, Hardening, Listed, Mount, NetworkAttach, Runtime, State, Tmpfs};
pub use hull::HullCli;
pub use invoke::runtime_words;
pub use oci::OciCli;
pub use resolve::{Chosen, Resolved, resolve};

use crate::environment::Environment;

/// The shim nerdctl hands a sandbox to unless `BRIG_CONTAINERD_RUNTIME` says otherwise.
pub const DEFAULT_SHIM: &str = "io.containerd.urunc.v2";

/// podman's containers.conf files, later ones overriding earlier ones; a
/// `CONTAINERS_CONF` file replaces them all, as it does for podman.
fn podman_config_files(env: &Environment) -> Vec<PathBuf> {
    if let Some(file) = env.get("CONTAINERS_CONF") {
        return vec![PathBuf::from(file)];
    }
    let dropins = |dir: PathBuf| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "conf"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    };
    let mut files =
        vec![PathBuf::from("/usr/share/containers/containers.conf"), PathBuf::from("/etc/containers/containers.conf")];
    files.extend(dropins(PathBuf::from("/etc/containers/containers.conf.d")));
    let user = env.get("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| env.home().map(|h| h.join(".config")));
    if let Some(user) = user {
        files.push(user.join("containers/containers.conf"));
        files.extend(dropins(user.join("containers/containers.conf.d")));
    }
    files
}

/// The OCI runtime podman's configuration files name, which the podman
/// adapter passes to `podman run --runtime`; `None` when no file names one
/// (the adapter then passes podman's default).
pub fn podman_configured_runtime(env: &Environment) -> Option<String> {
    podman_config_files(env)
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .fold(None, |found, text| oci::engine_runtime(&text).or(found))
}

/// An output captured from a real runtime binary, for the parsers' tests.
#[cfg(test)]
pub(crate) fn testdata(name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime/testdata");
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The adapter for a resolved runtime. `hypervisor` is the hull backend the
/// settings chose (`vz`, `hvi`, `qemu`); other runtimes ignore it.
pub fn open(resolved: &Resolved, env: &Environment, hypervisor: Option<String>) -> Result<Box<dyn Runtime>, Error> {
    match resolved.kind {
        Kind::Nerdctl => {
            let shim = env.get("BRIG_CONTAINERD_RUNTIME").unwrap_or(DEFAULT_SHIM).to_owned();
            Ok(Box::new(OciCli::nerdctl(resolved.bin.clone(), shim, env)))
        }
        Kind::Podman => Ok(Box::new(OciCli::podman(resolved.bin.clone(), podman_configured_runtime(env)))),
        Kind::Docker => Ok(Box::new(OciCli::new(Kind::Docker, resolved.bin.clone(), None))),
        // The backend (`BRIG_HYPERVISOR`, a profile's `hypervisor:`) does not
        // reach here yet; hull then boots on its default backend.
        Kind::Hull => Ok(Box::new(hull::HullCli::new(resolved.bin.clone(), hypervisor))),
    }
}

use std::fmt;
use std::path::PathBuf;

/// The runtime dialects brig speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Hull,
    Nerdctl,
    Podman,
    Docker,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Hull, Kind::Nerdctl, Kind::Podman, Kind::Docker];

    /// The executable's usual name, looked up on PATH.
    pub fn binary_name(self) -> &'static str {
        match self {
            Kind::Hull => "hull",
            Kind::Nerdctl => "nerdctl",
            Kind::Podman => "podman",
            Kind::Docker => "docker",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.binary_name() == text)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.binary_name())
    }
}

/// How strongly a sandbox is separated from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Its own kernel: urunc, kata, nerdbox, krun, hull.
    Microvm,
    /// A shared kernel: runc, crun, youki. Accepted only on request.
    Container,
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Isolation::Microvm => "microvm",
            Isolation::Container => "container",
        })
    }
}

/// The isolation a shim or OCI runtime gives, by its name (`io.containerd.urunc.v2`,
/// `/usr/bin/runc`, `krun`, …). `None` for a name brig does not know.
pub fn isolation_of(shim: &str) -> Option<Isolation> {
    let base = shim.rsplit('/').next().unwrap_or(shim);
    const MICROVM: [&str; 5] = ["urunc", "kata", "nerdbox", "krun", "hull"];
    const CONTAINER: [&str; 3] = ["runc", "crun", "youki"];
    // `io.containerd.runc.v2` and `runc` both name runc; match on the word.
    let words: Vec<&str> = base.split(['.', '-', '_']).collect();
    if words.iter().any(|w| MICROVM.iter().any(|m| w.starts_with(m))) {
        Some(Isolation::Microvm)
    } else if words.iter().any(|w| CONTAINER.contains(w)) {
        Some(Isolation::Container)
    } else {
        None
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing on PATH, and no setting named a binary.
    #[error(
        "no container runtime found on PATH (looked for nerdctl, podman, docker); install nerdctl or podman, or point BRIG_RUNTIME_BIN at one"
    )]
    NoneFound,
    #[error("unknown BRIG_RUNTIME \"{value}\" (want hull, nerdctl, podman or docker)")]
    UnknownKind { value: String },
    /// A setting named a binary that is not there or cannot be run.
    #[error("{setting} names {}, which {problem}", path.display())]
    BadBinary { setting: String, path: PathBuf, problem: &'static str },
    /// `BRIG_RUNTIME` asked for a kind whose binary is not on PATH.
    #[error("BRIG_RUNTIME={kind} but no {} is on PATH; install it or point BRIG_RUNTIME_BIN at one", kind.binary_name())]
    KindNotFound { kind: Kind },
    /// The binary's kind could not be told from its name or its `--version`.
    #[error("cannot tell which runtime {} is; set BRIG_RUNTIME to hull, nerdctl, podman or docker", path.display())]
    UnknownDialect { path: PathBuf },
    #[error("{verb} is not supported by this build on this host; use nerdctl or podman")]
    NotYetSupported { verb: &'static str },
    /// The runtime exists but could not answer (containerd down, permission
    /// denied, …). Nothing is booted or deleted on an unknown state.
    #[error("{runtime} ps: {words}")]
    Unreachable { runtime: Kind, words: String },
    /// A line of a text listing that is not in the runtime's known shape.
    #[error("{runtime} printed {what} output brig cannot read: \"{line}\"")]
    Unreadable { runtime: Kind, what: &'static str, line: String },
    /// The runtime cannot start a stopped sandbox again (hull boots each
    /// instance once).
    #[error("{runtime} cannot start the stopped sandbox {name} again; remove it and run again")]
    NoRestart { runtime: Kind, name: String },
    /// A hostmount the runtime can only reach through a share, outside every share.
    #[error("the hostmount {} is not inside a directory shared with the sandbox, which {runtime} needs to keep it under a tmpfs", path.display())]
    HostmountUnshared { runtime: Kind, path: PathBuf },
    #[error("{runtime} printed {what} output brig cannot read")]
    Unparsable {
        runtime: Kind,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{name} did not answer within {seconds}s of starting (BRIG_READY_TIMEOUT): {words}")]
    NotReady { name: String, seconds: u32, words: String },
    /// Running the runtime binary itself failed (exec handover, spawn).
    #[error(transparent)]
    Process(#[from] crate::process::Error),
    #[error("no sandbox named {name}")]
    NoSuchSandbox { name: String },
    /// A boot found the name taken: the runtime already has a sandbox of
    /// that name, which is not the booting process's to touch.
    #[error("{runtime} already has a sandbox named {name}")]
    NameInUse { runtime: Kind, name: String },
    /// A call that failed: what it was, in a few words, and the runtime's
    /// own reason. The whole argv (`command`) is kept for `--verbose` and
    /// for tests, not shown.
    #[error("{what}: {words}")]
    Operation { runtime: Kind, what: String, command: String, words: String },
    #[error(
        "cannot tell what isolation the shim or runtime \"{shim}\" gives; set BRIG_CONTAINERD_RUNTIME to a known one"
    )]
    UnknownShim { shim: String },
    /// The containerd shim a boot needs is not installed: refused before
    /// anything is created.
    #[error(
        "the containerd shim {shim} is not installed ({binary} is not on PATH); install it, or choose a plain-container shim such as io.containerd.runc.v2 with BRIG_CONTAINERD_RUNTIME and accept container isolation with BRIG_ALLOW_CONTAINER_ISOLATION=1"
    )]
    ShimMissing { shim: String, binary: String },
    /// A plain-container runtime without the explicit opt-in.
    #[error(
        "{runtime} runs sandboxes as containers sharing the host kernel ({via}), not as microVMs; set BRIG_ALLOW_CONTAINER_ISOLATION=1 to accept that"
    )]
    ContainerRefused { runtime: Kind, via: String },
    /// Decision 4: a posture this runtime cannot give.
    #[error(
        "{runtime} cannot give a sandbox a network of its own (the isolated posture); run with --network shared or --offline, or use nerdctl or podman"
    )]
    IsolationUnenforceable { runtime: Kind },
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("io.containerd.urunc.v2", Some(Isolation::Microvm))]
    #[case("io.containerd.kata.v2", Some(Isolation::Microvm))]
    #[case("krun", Some(Isolation::Microvm))]
    #[case("io.containerd.runc.v2", Some(Isolation::Container))]
    #[case("/usr/bin/runc", Some(Isolation::Container))]
    #[case("crun", Some(Isolation::Container))]
    #[case("youki", Some(Isolation::Container))]
    #[case("io.containerd.mystery.v1", None)]
    fn isolation_by_shim_name(#[case] shim: &str, #[case] want: Option<Isolation>) {
        assert_eq!(isolation_of(shim), want);
    }
}
