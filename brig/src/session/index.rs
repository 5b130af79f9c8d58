//! The session index: what brig remembers about each session, in
//! `<state>/sessions.json`, keyed by sandbox name.
//!
//! Several brig processes and brigd may touch the index at once. Every read
//! and every read-modify-write holds an exclusive `flock` on
//! `sessions.json.lock`, and every write replaces the file atomically, so no
//! update is lost and no reader sees half a file. The layout is not a stable
//! interface.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::home::{GuestHome, HOME_MODE};
use super::reference::Session;
use super::walk;
use super::{Error, Result};

pub const INDEX_FILE: &str = "sessions.json";
const LOCK_FILE: &str = "sessions.json.lock";

/// One session as brig last ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The canonical agent name, never an alias.
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub home: PathBuf,
    /// Only such a home is deleted by `brig rm`.
    pub home_created_by_brig: bool,
    /// The project last run with; reused when a run names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The image digest (or ref, when no digest was known) last booted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// brig removed this session's home; the next first run says it starts
    /// from an empty home, then clears this.
    #[serde(default)]
    pub emptied_home: bool,
    /// brig removed this session's sandbox to boot it again with another
    /// project. Until that boot succeeds the home is the session's, never
    /// one left behind: a failed recreate must not lose it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recreating: bool,
    /// The runtime (`nerdctl`, `podman`, …) the sandbox was last booted on:
    /// a home whose sandbox lives on another runtime is not left behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The isolation class it was booted with (`microvm`, `container`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// The egress policies whose rules the sandbox's firewall table holds:
    /// a run finding it running rewrites them while this or the bound set
    /// is not empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<String>,
    /// The ports it publishes, `ADDRESS:HOST:GUEST/PROTO`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publish: Vec<String>,
}

impl Record {
    /// A fresh record for a session and its home, with nothing else known yet.
    pub fn new(session: &Session, home: &GuestHome) -> Record {
        Record {
            agent: session.agent().to_owned(),
            label: session.label().map(str::to_owned),
            home: home.path.clone(),
            home_created_by_brig: home.created_by_brig(),
            project: None,
            network: None,
            image: None,
            emptied_home: false,
            recreating: false,
            runtime: None,
            isolation: None,
            egress: Vec::new(),
            publish: Vec::new(),
        }
    }
}

/// The whole index, in sandbox-name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    sessions: BTreeMap<String, Record>,
}

impl Index {
    /// `<state>/sessions.json`.
    pub fn path(state_dir: &Path) -> PathBuf {
        state_dir.join(INDEX_FILE)
    }

    /// Read the index. No state directory or no file yet is an empty index;
    /// a file that does not parse is an error naming it, never an empty
    /// index, because writing that back would forget every session.
    pub fn load(state_dir: &Path) -> Result<Index> {
        let Some(state) = walk::open_dir(state_dir)? else {
            return Ok(Index::default());
        };
        let _lock = Lock::take(&state.fd, state_dir)?;
        read(&state.fd, state_dir)
    }

    /// Lock, read, let `change` mutate, write back when it changed anything,
    /// unlock. The state directory is created when missing.
    pub fn update<R>(state_dir: &Path, change: impl FnOnce(&mut Index) -> R) -> Result<R> {
        let state = walk::create_dir(state_dir, Mode::from_raw_mode(HOME_MODE))?;
        super::home::private(&state.fd, state_dir)?;
        let _lock = Lock::take(&state.fd, state_dir)?;
        let before = read(&state.fd, state_dir)?;
        let mut index = before.clone();
        let out = change(&mut index);
        if index != before {
            write(&state.fd, state_dir, &index)?;
        }
        Ok(out)
    }

    pub fn get(&self, sandbox: &str) -> Option<&Record> {
        self.sessions.get(sandbox)
    }

    pub fn get_mut(&mut self, sandbox: &str) -> Option<&mut Record> {
        self.sessions.get_mut(sandbox)
    }

    /// Insert or replace; returns the record it replaced.
    pub fn insert(&mut self, sandbox: impl Into<String>, record: Record) -> Option<Record> {
        self.sessions.insert(sandbox.into(), record)
    }

    pub fn remove(&mut self, sandbox: &str) -> Option<Record> {
        self.sessions.remove(sandbox)
    }

    /// Drop every record (`brig rm --all`).
    pub fn clear(&mut self) {
        self.sessions.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Record)> {
        self.sessions.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

/// The advisory lock; released when the descriptor closes on drop.
#[derive(Debug)]
struct Lock {
    _fd: OwnedFd,
}

impl Lock {
    fn take(state: &OwnedFd, state_dir: &Path) -> Result<Lock> {
        let path = state_dir.join(LOCK_FILE);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(state, LOCK_FILE, flags, Mode::from_raw_mode(0o600))
            .map_err(|e| walk::refusal(state, LOCK_FILE.as_ref(), &path, e))?;
        rustix::fs::flock(&fd, FlockOperation::LockExclusive).map_err(|e| Error::io("lock", &path, e))?;
        Ok(Lock { _fd: fd })
    }
}

fn read(state: &OwnedFd, state_dir: &Path) -> Result<Index> {
    let path = Index::path(state_dir);
    // NONBLOCK so that a FIFO planted under the index's name cannot hang brig.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = match rustix::fs::openat(state, INDEX_FILE, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Index::default()),
        Err(e) => return Err(walk::refusal(state, INDEX_FILE.as_ref(), &path, e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("inspect", &path, e))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(Error::io("read", &path, std::io::Error::other("not a regular file")));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd).read_to_end(&mut bytes).map_err(|e| Error::io("read", &path, e))?;
    let sessions = serde_json::from_slice(&bytes).map_err(|source| Error::IndexCorrupt { path, source })?;
    Ok(Index { sessions })
}

/// Write to a temporary file beside the index, flush it to disk, and rename
/// it over the index, so a crash leaves the old index or the new one.
fn write(state: &OwnedFd, state_dir: &Path, index: &Index) -> Result<()> {
    let path = Index::path(state_dir);
    let mut bytes = serde_json::to_vec_pretty(&index.sessions)
        .map_err(|source| Error::IndexEncode { path: path.clone(), source })?;
    bytes.push(b'\n');

    // Writers are serialised by the lock, so one name per process is enough;
    // a leftover from a crashed process with the same id is cleared first.
    let tmp_name = format!("{INDEX_FILE}.tmp.{}", rustix::process::getpid().as_raw_nonzero());
    let tmp_path = state_dir.join(&tmp_name);
    match rustix::fs::unlinkat(state, tmp_name.as_str(), rustix::fs::AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => {}
        Err(e) => return Err(Error::io("remove", &tmp_path, e)),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(state, tmp_name.as_str(), flags, Mode::from_raw_mode(0o600))
        .map_err(|e| Error::io("create", &tmp_path, e))?;
    let mut file = std::fs::File::from(fd);
    let written =
        file.write_all(&bytes).and_then(|()| file.sync_all()).map_err(|e| Error::io("write", &tmp_path, e)).and_then(
            |()| {
                rustix::fs::renameat(state, tmp_name.as_str(), state, INDEX_FILE)
                    .map_err(|e| Error::io("replace", &path, e))
            },
        );
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(state, tmp_name.as_str(), rustix::fs::AtFlags::empty());
        return Err(e);
    }
    // The rename is durable only once the directory itself is flushed.
    rustix::fs::fsync(state).map_err(|e| Error::io("flush", state_dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::home::HomeSource;
    use crate::session::testing::{FixedAgents, TempDir};

    fn record(agent: &str, label: Option<&str>) -> Record {
        Record {
            agent: agent.to_owned(),
            label: label.map(str::to_owned),
            home: PathBuf::from("/h"),
            home_created_by_brig: true,
            project: None,
            network: None,
            image: None,
            emptied_home: false,
            recreating: false,
            runtime: None,
            isolation: None,
            egress: Vec::new(),
            publish: Vec::new(),
        }
    }

    #[test]
    fn missing_state_dir_or_file_is_an_empty_index() {
        let tmp = TempDir::new();
        assert!(Index::load(&tmp.path().join("absent")).unwrap().is_empty());
        assert!(!tmp.path().join("absent").exists(), "loading creates nothing");
        assert!(Index::load(tmp.path()).unwrap().is_empty());
    }

    #[test]
    fn update_round_trips_every_field() {
        let tmp = TempDir::new();
        let state = tmp.path().join("state");
        let full = Record {
            agent: "claude-code".into(),
            label: Some("refactor".into()),
            home: "/h/.brig/homes/brig-claude-code-refactor".into(),
            home_created_by_brig: true,
            project: Some("/code/demo".into()),
            network: Some("isolated".into()),
            image: Some("ghcr.io/x/y@sha256:abc".into()),
            emptied_home: true,
            recreating: false,
            runtime: None,
            isolation: None,
            egress: Vec::new(),
            publish: Vec::new(),
        };
        let replaced = Index::update(&state, |ix| ix.insert("brig-claude-code-refactor", full.clone())).unwrap();
        assert_eq!(replaced, None);
        Index::update(&state, |ix| ix.insert("brig-codex", record("codex", None))).unwrap();

        let ix = Index::load(&state).unwrap();
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.get("brig-claude-code-refactor"), Some(&full));
        assert_eq!(ix.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["brig-claude-code-refactor", "brig-codex"]);

        let text = std::fs::read_to_string(Index::path(&state)).unwrap();
        for key in ["\"homeCreatedByBrig\": true", "\"emptiedHome\": true", "\"project\"", "\"network\"", "\"image\""] {
            assert!(text.contains(key), "{key} missing from {text}");
        }
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(Index::path(&state)).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);

        let removed = Index::update(&state, |ix| ix.remove("brig-codex")).unwrap();
        assert_eq!(removed, Some(record("codex", None)));
        assert_eq!(Index::load(&state).unwrap().len(), 1);
        let leftovers: Vec<_> = std::fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn optional_fields_may_be_absent() {
        let tmp = TempDir::new();
        std::fs::write(
            Index::path(tmp.path()),
            r#"{"brig-codex":{"agent":"codex","home":"/h","homeCreatedByBrig":false}}"#,
        )
        .unwrap();
        let ix = Index::load(tmp.path()).unwrap();
        let mut want = record("codex", None);
        want.home_created_by_brig = false;
        assert_eq!(ix.get("brig-codex"), Some(&want));
    }

    #[test]
    fn record_from_session_and_home() {
        let session = Session::parse("claude@x", &FixedAgents::builtin()).unwrap();
        let home = GuestHome { path: "/w-x".into(), source: HomeSource::Named { setting: "--home".into() } };
        let r = Record::new(&session, &home);
        assert_eq!((r.agent.as_str(), r.label.as_deref()), ("claude-code", Some("x")));
        assert!(!r.home_created_by_brig);
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let tmp = TempDir::new();
        let state = tmp.path().join("state");
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let state = state.clone();
                std::thread::spawn(move || {
                    for i in 0..15 {
                        Index::update(&state, |ix| ix.insert(format!("brig-codex-t{t}-{i}"), record("codex", None)))
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(Index::load(&state).unwrap().len(), 8 * 15);
    }

    #[test]
    fn corrupt_index_is_a_named_error_and_is_left_alone() {
        let tmp = TempDir::new();
        let path = Index::path(tmp.path());
        std::fs::write(&path, "{not json").unwrap();

        let err = Index::load(tmp.path()).unwrap_err();
        assert!(matches!(&err, Error::IndexCorrupt { path: p, .. } if p == &path), "{err}");
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");

        let err = Index::update(tmp.path(), |ix| ix.insert("brig-codex", record("codex", None))).unwrap_err();
        assert!(matches!(err, Error::IndexCorrupt { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
    }

    #[test]
    fn index_behind_a_link_is_refused() {
        let tmp = TempDir::new();
        let real = tmp.path().join("elsewhere.json");
        std::fs::write(&real, "{}").unwrap();
        std::os::unix::fs::symlink(&real, Index::path(tmp.path())).unwrap();
        let err = Index::load(tmp.path()).unwrap_err();
        assert!(matches!(err, Error::Symlink { .. }), "{err}");
    }
}
