//! The policy directory: one document per file, and `attachments.yaml`,
//! which binds policies to profiles and sessions besides a profile's own
//! inline `policy:` list.
//!
//! Writes go through the profile store's atomic replacement; the
//! attachments are read, changed and written under an exclusive lock so two
//! `attach`es at once both land.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Error, Policy, parse};
use crate::environment::Environment;

const ATTACHMENTS: &str = "attachments.yaml";
const LOCK: &str = ".attachments.lock";
/// A policy is a few rules; anything bigger is not one.
const FILE_MAX: u64 = 1 << 20;

/// Bindings kept outside profiles: by profile name, and by session
/// (`<profile>@<slug>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attachments {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sessions: BTreeMap<String, Vec<String>>,
}

/// Where a policy is bound, for `ls` and for the refusals of `rm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Binding {
    pub policy: String,
    /// `claude-code` or `claude-code@work`.
    pub to: String,
    /// In the profile's own `policy:` list rather than attachments.yaml.
    pub inline: bool,
}

/// The session key attachments.yaml uses.
pub fn session_key(profile: &str, slug: &str) -> String {
    format!("{profile}@{slug}")
}

#[derive(Debug)]
pub struct Store {
    pub dir: PathBuf,
}

impl Store {
    /// `BRIG_POLICY_DIR`, else `$XDG_CONFIG_HOME/brig/policies` (an empty or
    /// relative XDG counts as unset), else `~/.config/brig/policies`.
    pub fn open(env: &Environment) -> Result<Store, crate::Error> {
        if let Some(dir) = env.get("BRIG_POLICY_DIR") {
            return Ok(Store { dir: PathBuf::from(dir) });
        }
        if let Some(xdg) = env.get("XDG_CONFIG_HOME").map(Path::new).filter(|p| p.is_absolute()) {
            return Ok(Store { dir: xdg.join("brig").join("policies") });
        }
        let home =
            env.home().ok_or(crate::Error::NoHome { what: "the policy directory", setting: "BRIG_POLICY_DIR" })?;
        Ok(Store { dir: home.join(".config").join("brig").join("policies") })
    }

    /// Every policy in the directory, by name. Two files declaring one name
    /// are refused: which of them binds would be a guess.
    pub fn load(&self) -> Result<BTreeMap<String, (PathBuf, Policy)>, Error> {
        let mut out: BTreeMap<String, (PathBuf, Policy)> = BTreeMap::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(unreadable(&self.dir, e.to_string())),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_document(p) && p.file_name().is_some_and(|n| n != ATTACHMENTS))
            .collect();
        files.sort();
        for path in files {
            let policy = parse(&read(&path)?, &path.display().to_string())?;
            if let Some((first, _)) = out.get(&policy.name) {
                return Err(Error::Invalid {
                    file: path.display().to_string(),
                    why: format!("{} declares the policy {} too; remove one of them", first.display(), policy.name),
                });
            }
            out.insert(policy.name.clone(), (path, policy));
        }
        Ok(out)
    }

    /// One policy by name.
    pub fn get(&self, name: &str) -> Result<(PathBuf, Policy), Error> {
        self.load()?.remove(name).ok_or_else(|| Error::Unknown { name: name.to_owned(), dir: self.dir.clone() })
    }

    pub fn attachments(&self) -> Result<Attachments, Error> {
        let path = self.dir.join(ATTACHMENTS);
        let text = match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Attachments::default()),
            _ => read(&path)?,
        };
        serde_saphyr::from_str(&text)
            .map_err(|e| Error::Invalid { file: path.display().to_string(), why: e.to_string() })
    }

    /// Change the attachments under the directory's lock, and write them
    /// back atomically.
    pub fn update_attachments<T>(
        &self,
        change: impl FnOnce(&mut Attachments) -> Result<T, Error>,
    ) -> Result<T, crate::Error> {
        crate::profile::store::ensure_dir(&self.dir)?;
        let lock_path = self.dir.join(LOCK);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&lock_path)
            .map_err(|e| crate::Error::io("open", &lock_path, e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| crate::Error::io("lock", &lock_path, e.into()))?;
        let mut attachments = self.attachments()?;
        let out = change(&mut attachments)?;
        attachments.profiles.retain(|_, v| !v.is_empty());
        attachments.sessions.retain(|_, v| !v.is_empty());
        let text = serde_saphyr::to_string(&attachments)
            .map_err(|e| crate::Error::io("write", self.dir.join(ATTACHMENTS), std::io::Error::other(e.to_string())))?;
        crate::profile::store::write_atomic(&self.dir, ATTACHMENTS, text.as_bytes())?;
        Ok(out)
    }

    /// Every binding of every policy: inline ones from the profiles given,
    /// and those in attachments.yaml.
    pub fn bindings(&self, profiles: &[&crate::profile::Profile]) -> Result<Vec<Binding>, Error> {
        let attachments = self.attachments()?;
        let mut out = Vec::new();
        for p in profiles {
            out.extend(p.policy.iter().map(|n| Binding { policy: n.clone(), to: p.name.clone(), inline: true }));
        }
        for (to, names) in attachments.profiles.iter().chain(&attachments.sessions) {
            out.extend(names.iter().map(|n| Binding { policy: n.clone(), to: to.clone(), inline: false }));
        }
        Ok(out)
    }

    /// The policies bound to a run of `profile` (with the session's slug):
    /// inline first, then the profile's attachments, then the session's,
    /// each once. A bound name with no document refuses the run.
    pub fn bound(&self, profile: &crate::profile::Profile, slug: Option<&str>) -> Result<Vec<Policy>, Error> {
        let attachments = self.attachments()?;
        let mut names: Vec<&String> = profile.policy.iter().collect();
        names.extend(attachments.profiles.get(&profile.name).into_iter().flatten());
        if let Some(slug) = slug {
            names.extend(attachments.sessions.get(&session_key(&profile.name, slug)).into_iter().flatten());
        }
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(n.as_str()));
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut all = self.load()?;
        names
            .into_iter()
            .map(|n| {
                all.remove(n).map(|(_, p)| p).ok_or_else(|| Error::Unknown { name: n.clone(), dir: self.dir.clone() })
            })
            .collect()
    }
}

fn is_document(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    !name.starts_with('.') && [".yaml", ".yml", ".json"].iter().any(|ext| name.ends_with(ext))
}

fn unreadable(path: &Path, why: String) -> Error {
    Error::Unreadable { file: path.display().to_string(), why }
}

/// A regular file's text, read without blocking on a FIFO and without
/// reading more than a policy could be.
fn read(path: &Path) -> Result<String, Error> {
    use std::io::Read;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|e| unreadable(path, e.to_string()))?;
    let meta = file.metadata().map_err(|e| unreadable(path, e.to_string()))?;
    if !meta.is_file() {
        return Err(unreadable(path, "not a regular file".into()));
    }
    let mut text = String::new();
    file.take(FILE_MAX + 1).read_to_string(&mut text).map_err(|e| unreadable(path, e.to_string()))?;
    if text.len() as u64 > FILE_MAX {
        return Err(unreadable(path, "larger than a policy can be (1 MiB)".into()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store { dir: dir.path().join("policies") };
        (dir, store)
    }

    fn doc(name: &str) -> String {
        format!("apiVersion: brig.sh/v1alpha1\nname: {name}\negress:\n  default: deny\n")
    }

    #[test]
    fn the_name_in_the_document_wins_over_the_file_name() {
        let (_d, s) = store();
        std::fs::create_dir_all(&s.dir).unwrap();
        std::fs::write(s.dir.join("file.yaml"), doc("inner")).unwrap();
        assert!(s.get("inner").is_ok());
        assert!(matches!(s.get("file"), Err(Error::Unknown { .. })));
    }

    #[test]
    fn two_files_declaring_one_name_are_refused() {
        let (_d, s) = store();
        std::fs::create_dir_all(&s.dir).unwrap();
        std::fs::write(s.dir.join("a.yaml"), doc("p")).unwrap();
        std::fs::write(s.dir.join("b.yaml"), doc("p")).unwrap();
        assert!(s.load().unwrap_err().to_string().contains("declares the policy p too"));
    }

    #[test]
    fn a_fifo_is_refused_without_waiting() {
        let (_d, s) = store();
        std::fs::create_dir_all(&s.dir).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            s.dir.join("f.yaml"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(s.load().unwrap_err().to_string().contains("not a regular file"));
    }

    #[test]
    fn bound_policies_come_inline_then_attached_each_once_and_unknown_refuses() {
        let (_d, s) = store();
        std::fs::create_dir_all(&s.dir).unwrap();
        for n in ["a", "b", "c"] {
            std::fs::write(s.dir.join(format!("{n}.yaml")), doc(n)).unwrap();
        }
        s.update_attachments(|at| {
            at.profiles.insert("agent".into(), vec!["b".into(), "a".into()]);
            at.sessions.insert("agent@work".into(), vec!["c".into()]);
            Ok(())
        })
        .unwrap();
        let mut profile = crate::profile::parse(crate::profile::BUILTINS[0].yaml, "b").unwrap();
        profile.name = "agent".into();
        profile.policy = vec!["a".into()];
        let names = |slug| s.bound(&profile, slug).unwrap().into_iter().map(|p| p.name).collect::<Vec<_>>();
        assert_eq!(names(None), ["a", "b"]);
        assert_eq!(names(Some("work")), ["a", "b", "c"]);
        profile.policy = vec!["gone".into()];
        assert!(matches!(s.bound(&profile, None), Err(Error::Unknown { .. })));
    }
}
