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
    if path.starts_with(state_dir) {
        return Some(format!("it is inside brig's state directory {}", state_dir.display()));
    }
    sockets(env).into_iter().find(|socket| socket.starts_with(path)).map(|socket| {
        format!("it holds {}, a socket through which the host's containers or brig are driven", socket.display())
    })
}

/// What a sandbox mounts from the host that a guest can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Home,
    Project,
}

impl Role {
    fn word(self) -> &'static str {
        match self {
            Role::Home => "guest home",
            Role::Project => "project",
        }
    }
}

/// A path another session mounts: its ref, what the path is to it, and
/// the path.
pub struct Mounted<'a> {
    pub reference: String,
    pub role: Role,
    pub path: &'a Path,
}

/// Why `path`, mounted as `role`, may not sit where it does, or `None`.
///
/// A guest can rename, replace or plant links anywhere under what it
/// mounts. Everything brig hands a runtime lies under a home or a project
/// and is pinned inside every sandbox that mounts that home or project as
/// such (a home's keep directory is covered, a project's git metadata is
/// bound over itself), so another guest can swap none of it — unless it
/// mounts the same directory some other way. So a home and a project of any
/// sandboxes are never nested in one another, nor the same directory; two
/// homes or two projects may be the same directory, never nested.
pub fn apart(role: Role, path: &Path, own_home: &Path, others: &[Mounted<'_>]) -> Option<String> {
    let overlap = |other: &Path| path.starts_with(other) || other.starts_with(path);
    if role == Role::Project && overlap(own_home) {
        return Some(format!(
            "it and the guest home {} lie in one another; a project and a home must be separate directories",
            own_home.display()
        ));
    }
    others.iter().find(|o| overlap(o.path) && !(o.role == role && o.path == path)).map(|o| {
        let relation = if o.path == path {
            "is"
        } else if path.starts_with(o.path) {
            "lies inside"
        } else {
            "holds"
        };
        format!(
            "it {relation} {}, the {} of {}, whose guest could then change what this sandbox mounts; use a separate directory, or remove that session with `brig rm {}`",
            o.path.display(),
            o.role.word(),
            o.reference,
            o.reference
        )
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
    #[case::inside_state_dir("/home/u/.brig/homes/brig-x", Some("inside brig's state directory"))]
    fn rules(#[case] path: &str, #[case] says: Option<&str>) {
        let got = refusal(Path::new(path), &env(), Path::new("/home/u/.brig"));
        match (got, says) {
            (None, None) => {}
            (Some(why), Some(says)) => assert!(why.contains(says), "{path}: {why}"),
            (got, _) => panic!("{path}: {got:?}"),
        }
    }

    #[rstest]
    #[case::same_home_shared(Role::Home, "/w/h", None)]
    #[case::same_project_shared(Role::Project, "/w/p", None)]
    #[case::home_inside_a_home(Role::Home, "/w/h/x", Some("lies inside /w/h, the guest home of a@one"))]
    #[case::home_holding_a_project(Role::Home, "/w", Some("holds /w/h"))]
    #[case::project_is_a_home(Role::Project, "/w/h", Some("is /w/h, the guest home of a@one"))]
    #[case::project_inside_a_project(Role::Project, "/w/p/sub", Some("the project of b@two"))]
    #[case::apart(Role::Project, "/w/q", None)]
    #[case::own_home_inside_project(Role::Project, "/own", Some("lie in one another"))]
    fn sandboxes_stay_apart(#[case] role: Role, #[case] path: &str, #[case] says: Option<&str>) {
        let others = [
            Mounted { reference: "a@one".into(), role: Role::Home, path: Path::new("/w/h") },
            Mounted { reference: "b@two".into(), role: Role::Project, path: Path::new("/w/p") },
        ];
        let got = apart(role, Path::new(path), Path::new("/own/home"), &others);
        match (got, says) {
            (None, None) => {}
            (Some(why), Some(says)) => assert!(why.contains(says), "{path}: {why}"),
            (got, _) => panic!("{path}: {got:?}"),
        }
    }
}
