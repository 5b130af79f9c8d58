//! Which runtime binary a run uses, and which setting chose it.
//!
//! Order: `BRIG_RUNTIME` fixes the dialect; the binary is `BRIG_RUNTIME_BIN`
//! (a path, or a name looked up on PATH), else the profile's `runtimeBin`
//! (`~` expanded, never looked up on PATH), else PATH. With neither setting,
//! PATH is searched for nerdctl, then podman, then docker; landing on a later
//! one is an implicit fallback that the caller reports once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{Error, Kind};
use crate::environment::Environment;

/// Which setting picked the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    RuntimeBin,
    Profile {
        name: String,
    },
    /// `BRIG_RUNTIME`, binary from PATH.
    RuntimeKind,
    /// Nothing set: the first of nerdctl, podman, docker on PATH.
    Path {
        fallback: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub kind: Kind,
    pub bin: PathBuf,
    pub chosen: Chosen,
}

impl Resolved {
    /// The one-line notice for an implicit fallback, if this is one.
    pub fn fallback_notice(&self) -> Option<String> {
        match self.chosen {
            Chosen::Path { fallback: true } => Some(format!(
                "nerdctl is not on PATH; using {} at {} (set BRIG_RUNTIME to choose explicitly)",
                self.kind,
                self.bin.display()
            )),
            _ => None,
        }
    }
}

/// Resolve the runtime for a profile (`name`, its `runtimeBin`), or for no
/// profile at all (`brig ls`).
pub fn resolve(env: &Environment, profile: Option<(&str, Option<&str>)>) -> Result<Resolved, Error> {
    let kind = match env.get("BRIG_RUNTIME") {
        Some(text) => Some(Kind::parse(text).ok_or_else(|| Error::UnknownKind { value: text.to_owned() })?),
        None => None,
    };
    if let Some(text) = env.get("BRIG_RUNTIME_BIN") {
        let bin = if text.contains('/') {
            check_executable("BRIG_RUNTIME_BIN", Path::new(text))?
        } else {
            env.find_on_path(text).ok_or_else(|| Error::BadBinary {
                setting: "BRIG_RUNTIME_BIN".to_owned(),
                path: PathBuf::from(text),
                problem: "is not on PATH",
            })?
        };
        let kind = kind.map_or_else(|| detect_kind(&bin), Ok)?;
        return Ok(Resolved { kind, bin, chosen: Chosen::RuntimeBin });
    }
    if let Some((name, Some(runtime_bin))) = profile {
        let setting = format!("profile {name}'s runtimeBin");
        let bin = check_executable(&setting, &env.expand_tilde(runtime_bin))?;
        let kind = kind.map_or_else(|| detect_kind(&bin), Ok)?;
        return Ok(Resolved { kind, bin, chosen: Chosen::Profile { name: name.to_owned() } });
    }
    if let Some(kind) = kind {
        let bin = env.find_on_path(kind.binary_name()).ok_or(Error::KindNotFound { kind })?;
        return Ok(Resolved { kind, bin, chosen: Chosen::RuntimeKind });
    }
    for (i, kind) in [Kind::Nerdctl, Kind::Podman, Kind::Docker].into_iter().enumerate() {
        if let Some(bin) = env.find_on_path(kind.binary_name()) {
            return Ok(Resolved { kind, bin, chosen: Chosen::Path { fallback: i > 0 } });
        }
    }
    Err(Error::NoneFound)
}

fn check_executable(setting: &str, path: &Path) -> Result<PathBuf, Error> {
    let problem = match path.metadata() {
        Err(_) => "does not exist",
        Ok(m) if !m.is_file() => "is not a file",
        Ok(m) if m.permissions().mode() & 0o111 == 0 => "is not executable",
        Ok(_) => return Ok(path.to_path_buf()),
    };
    Err(Error::BadBinary { setting: setting.to_owned(), path: path.to_path_buf(), problem })
}

/// Tell a binary's dialect from its file name, else from its `--version`.
fn detect_kind(bin: &Path) -> Result<Kind, Error> {
    let name = bin.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if let Some(kind) = Kind::ALL.into_iter().find(|k| name.contains(k.binary_name())) {
        return Ok(kind);
    }
    // Whatever the exit status: the words are what tell the dialect.
    let (_, stdout, _) = crate::process::Command::new(bin)
        .arg("--version")
        .capture()
        .map_err(|_| Error::UnknownDialect { path: bin.to_path_buf() })?;
    kind_from_version(&stdout).ok_or_else(|| Error::UnknownDialect { path: bin.to_path_buf() })
}

/// The dialect a `--version` line names: each runtime starts it with its own
/// name (`nerdctl version 1.7.7`, `podman version 4.3.1`, `Docker version …`).
fn kind_from_version(stdout: &str) -> Option<Kind> {
    let text = stdout.to_ascii_lowercase();
    Kind::ALL.into_iter().find(|k| text.starts_with(k.binary_name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A scratch PATH directory holding executables with the given names,
    /// removed on drop.
    fn path_with(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::Builder::new().prefix("brig-resolve-").tempdir().unwrap();
        for name in names {
            let p = dir.path().join(name);
            fs::write(&p, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    fn env(path: &tempfile::TempDir, extra: &[(&str, &str)]) -> Environment {
        let mut env = Environment::from_pairs(extra.iter().copied());
        env.set("PATH", path.path().to_str().unwrap());
        env.set("HOME", "/nonexistent-home");
        env
    }

    #[test]
    fn path_prefers_nerdctl_then_podman() {
        let dir = path_with(&["podman", "nerdctl"]);
        let got = resolve(&env(&dir, &[]), None).unwrap();
        assert_eq!((got.kind, got.chosen.clone()), (Kind::Nerdctl, Chosen::Path { fallback: false }));
        assert_eq!(got.fallback_notice(), None);

        let dir = path_with(&["podman"]);
        let got = resolve(&env(&dir, &[]), None).unwrap();
        assert_eq!((got.kind, got.chosen.clone()), (Kind::Podman, Chosen::Path { fallback: true }));
        assert!(got.fallback_notice().unwrap().contains("using podman"));
    }

    #[test]
    fn nothing_on_path_is_none_found() {
        let dir = path_with(&[]);
        assert!(matches!(resolve(&env(&dir, &[]), None), Err(Error::NoneFound)));
    }

    #[test]
    fn unknown_kind_is_refused() {
        let dir = path_with(&["nerdctl"]);
        let err = resolve(&env(&dir, &[("BRIG_RUNTIME", "lxc")]), None).unwrap_err();
        assert!(matches!(err, Error::UnknownKind { ref value } if value == "lxc"), "{err}");
    }

    #[test]
    fn runtime_bin_pointing_at_nothing_names_the_setting() {
        let dir = path_with(&["nerdctl"]);
        let err = resolve(&env(&dir, &[("BRIG_RUNTIME_BIN", "/no/such/podman")]), None).unwrap_err();
        assert!(
            matches!(err, Error::BadBinary { ref setting, problem: "does not exist", .. } if setting == "BRIG_RUNTIME_BIN")
        );
    }

    #[test]
    fn runtime_bin_beats_the_profile_and_profile_beats_path() {
        let dir = path_with(&["nerdctl", "podman"]);
        let podman = dir.path().join("podman");
        let e = env(&dir, &[("BRIG_RUNTIME_BIN", "podman")]);
        let got = resolve(&e, Some(("p", Some("/no/such")))).unwrap();
        assert_eq!((got.kind, got.bin, got.chosen), (Kind::Podman, podman.clone(), Chosen::RuntimeBin));

        let got = resolve(&env(&dir, &[]), Some(("p", Some(podman.to_str().unwrap())))).unwrap();
        assert_eq!(got.chosen, Chosen::Profile { name: "p".into() });
        assert_eq!(got.kind, Kind::Podman);
    }

    #[test]
    fn profile_runtime_bin_missing_names_the_profile() {
        let dir = path_with(&["nerdctl"]);
        let err = resolve(&env(&dir, &[]), Some(("lab", Some("~/bin/nerdctl")))).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("profile lab's runtimeBin") && text.contains("/nonexistent-home/bin/nerdctl"), "{text}");
    }

    #[test]
    fn runtime_kind_takes_its_binary_from_path() {
        let dir = path_with(&["nerdctl", "podman"]);
        let got = resolve(&env(&dir, &[("BRIG_RUNTIME", "podman")]), None).unwrap();
        assert_eq!((got.kind, got.chosen), (Kind::Podman, Chosen::RuntimeKind));
        let err = resolve(&env(&dir, &[("BRIG_RUNTIME", "docker")]), None).unwrap_err();
        assert!(matches!(err, Error::KindNotFound { kind: Kind::Docker }));
    }

    /// A binary whose name says nothing is told apart by its `--version`,
    /// here as the real binaries print it.
    #[rstest::rstest]
    #[case::nerdctl(&crate::runtime::testdata("nerdctl-version.txt"), Some(Kind::Nerdctl))]
    #[case::podman(&crate::runtime::testdata("podman-version.txt"), Some(Kind::Podman))]
    #[case::hull(&crate::runtime::testdata("hull-version.txt"), Some(Kind::Hull))]
    #[case::docker("Docker version 24.0.7, build afdd53b\n", Some(Kind::Docker))]
    #[case::something_else("runc version 1.1.5\n", None)]
    #[case::nothing("", None)]
    fn kind_from_the_version_line(#[case] stdout: &str, #[case] want: Option<Kind>) {
        assert_eq!(kind_from_version(stdout), want);
    }
}
