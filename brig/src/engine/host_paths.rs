//! Decision 15: a guest home or project that would hand over the host is
//! refused. The guest can write whatever is mounted, so mounting `/`, the
//! user's own home directory, a system tree, brig's own state or a
//! directory holding a runtime's or brigd's socket would give it the host.

use std::path::{Path, PathBuf};

use crate::environment::Environment;

/// Trees of the system: mounting one, or anything inside one, hands the
/// guest the host's configuration, programs, devices or runtime state.
const SYSTEM_TREES: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr",
    "/var",
];

/// Why a path may not be mounted, or `None` when it may. `state_dir` is
/// brig's own state (the session index, the locks, by default brigd's
/// socket); `path` is absolute and clean.
pub fn refusal(path: &Path, env: &Environment, state_dir: &Path) -> Option<String> {
    if path == Path::new("/") {
        return Some("it is the root directory".to_owned());
    }
    if env.home().is_some_and(|home| path == home) {
        return Some("it is your home directory itself; name a directory inside it".to_owned());
    }
    if let Some(tree) = SYSTEM_TREES.iter().find(|t| path.starts_with(t)) {
        return Some(format!("it is in {tree}, a system directory"));
    }
    if state_dir.starts_with(path) {
        return Some(format!("it holds brig's state directory {}", state_dir.display()));
    }
    sockets(env).into_iter().find(|socket| socket.starts_with(path)).map(|socket| {
        format!("it holds {}, a socket through which the host's containers or brig are driven", socket.display())
    })
}

/// The sockets that drive the host: the runtimes' and brigd's, where the
/// environment says they are.
fn sockets(env: &Environment) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let unix = |value: &str| value.strip_prefix("unix://").unwrap_or(value).to_owned();
    for var in ["CONTAINERD_ADDRESS", "DOCKER_HOST", "CONTAINER_HOST"] {
        if let Some(value) = env.get(var).map(unix).filter(|v| v.starts_with('/')) {
            out.push(PathBuf::from(value));
        }
    }
    if let Some(runtime_dir) = env.get("XDG_RUNTIME_DIR") {
        let dir = Path::new(runtime_dir);
        out.extend([dir.join("podman/podman.sock"), dir.join("docker.sock"), dir.join("containerd/containerd.sock")]);
    }
    if let Some(home) = env.home() {
        out.extend([home.join(".docker/run/docker.sock"), home.join(".colima/default/docker.sock")]);
    }
    if let Ok(brigd) = crate::daemon::socket::resolve(None, env) {
        out.push(brigd.path);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn env() -> Environment {
        Environment::from_pairs([
            ("HOME", "/home/u"),
            ("XDG_RUNTIME_DIR", "/home/u/.rt"),
            ("DOCKER_HOST", "unix:///home/u/sockets/docker.sock"),
        ])
    }

    #[rstest]
    #[case::root("/", Some("root directory"))]
    #[case::own_home("/home/u", Some("home directory itself"))]
    #[case::inside_home("/home/u/code/demo", None)]
    #[case::etc("/etc", Some("/etc, a system directory"))]
    #[case::inside_usr("/usr/local/src", Some("/usr"))]
    #[case::var("/var/lib/containerd", Some("/var"))]
    #[case::run("/run/user/1000", Some("/run"))]
    #[case::not_a_system_tree_by_prefix("/variety", None)]
    #[case::state_dir("/home/u/.brig", Some("brig's state directory"))]
    #[case::above_state_dir("/home/u/.brig-parent-is-home", None)]
    #[case::runtime_dir("/home/u/.rt", Some("podman.sock"))]
    #[case::docker_host("/home/u/sockets", Some("docker.sock"))]
    #[case::tmp("/tmp/x", None)]
    fn rules(#[case] path: &str, #[case] says: Option<&str>) {
        let got = refusal(Path::new(path), &env(), Path::new("/home/u/.brig"));
        match (got, says) {
            (None, None) => {}
            (Some(why), Some(says)) => assert!(why.contains(says), "{path}: {why}"),
            (got, _) => panic!("{path}: {got:?}"),
        }
    }
}
