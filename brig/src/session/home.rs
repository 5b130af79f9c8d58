//! Guest homes: which host directory a session mounts as the agent's home,
//! and making and removing the ones brig owns.

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode};
use rustix::io::Errno;

use super::reference::{SANDBOX_PREFIX, Session};
use super::walk::{self, entry_name, open_child_dir};
use super::{Error, Result};
use crate::environment::Environment;

/// Mode of every directory brig creates on the way to a home, of the home
/// itself and of brig's state directory: private to the user whatever the
/// umask, because what a guest writes there is readable by anyone who can
/// reach it.
pub const HOME_MODE: u32 = 0o700;

/// The directory of a home that holds the host side of every hostmount.
/// Every sandbox has an empty read-only tmpfs over it, so no guest sees
/// below it or can rename it: the paths the runtime is handed for
/// hostmounts have no component a guest can swap.
pub const KEEP_DIR: &str = ".brig-keep";

/// Where a session's guest home came from. Only a home brig created is ever
/// deleted by brig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeSource {
    /// `<state>/homes/<sandbox>`, created and removed by brig.
    Default,
    /// A directory the user named; `setting` says where (`--home`,
    /// `BRIG_CLAUDE_CODE_WORKSPACE`, `BRIG_WORKSPACE`).
    Named { setting: String },
    /// The home mount of an existing sandbox made by an older release, read
    /// back from the runtime; used while that sandbox exists.
    Legacy,
}

impl HomeSource {
    pub fn created_by_brig(&self) -> bool {
        matches!(self, HomeSource::Default)
    }
}

/// A resolved guest home: an absolute host path and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestHome {
    pub path: PathBuf,
    pub source: HomeSource,
}

impl GuestHome {
    /// A home read back from an existing sandbox's mount.
    pub fn legacy(path: impl Into<PathBuf>) -> Self {
        GuestHome { path: path.into(), source: HomeSource::Legacy }
    }

    pub fn created_by_brig(&self) -> bool {
        self.source.created_by_brig()
    }
}

/// brig's state directory as an absolute path: `BRIG_STATE_DIR` (a relative
/// value taken from `cwd`), else `~/.brig`.
pub fn state_dir(env: &Environment, cwd: &Path) -> Result<PathBuf> {
    let dir = env.state_dir().ok_or(Error::NoStateDir)?;
    Ok(absolute(&dir, cwd))
}

/// The per-agent form of `BRIG_WORKSPACE`: `BRIG_<AGENT>_WORKSPACE`, the
/// agent upper-cased with `-` as `_`.
pub fn agent_workspace_variable(agent: &str) -> String {
    format!("BRIG_{}_WORKSPACE", agent.to_ascii_uppercase().replace('-', "_"))
}

/// `<state>/homes/<sandbox>`.
pub fn default_home_path(state_dir: &Path, sandbox: &str) -> PathBuf {
    state_dir.join("homes").join(sandbox)
}

/// Resolve a session's guest home: the `--home` flag, then
/// `BRIG_<AGENT>_WORKSPACE`, then `BRIG_WORKSPACE`, else the default home
/// under the state directory. A named home gets `-<label>` appended for a
/// labelled session, so two sessions never share one by accident.
///
/// A per-agent variable that is set but empty stops there and selects the
/// default home, so one agent can opt out of a global `BRIG_WORKSPACE`.
pub fn resolve_home(session: &Session, flag: Option<&str>, env: &Environment, cwd: &Path) -> Result<GuestHome> {
    let agent_var = agent_workspace_variable(session.agent());
    let named = match (flag.filter(|f| !f.is_empty()), env.get_raw(&agent_var)) {
        (Some(dir), _) => Some(("--home".to_owned(), dir)),
        (None, Some("")) => None,
        (None, Some(dir)) => Some((agent_var, dir)),
        (None, None) => env.get("BRIG_WORKSPACE").map(|dir| ("BRIG_WORKSPACE".to_owned(), dir)),
    };
    let Some((setting, dir)) = named else {
        return Ok(GuestHome {
            path: default_home_path(&state_dir(env, cwd)?, session.sandbox()),
            source: HomeSource::Default,
        });
    };
    let mut path = absolute(&env.expand_tilde(dir), cwd);
    if let Some(label) = session.label() {
        let mut name = path.file_name().unwrap_or_default().to_owned();
        name.push(format!("-{label}"));
        path.set_file_name(name);
    }
    Ok(GuestHome { path, source: HomeSource::Named { setting } })
}

/// `path` made absolute against `cwd` and cleaned lexically (`.` dropped,
/// `..` taking back one component), so that `-<label>` is appended to a real
/// name and the recorded path reads as the user meant it.
pub(crate) fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    let joined = if path.is_absolute() { path.to_owned() } else { cwd.join(path) };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A default home ready to mount, with a handle through which brig writes
/// into it.
#[derive(Debug)]
pub struct PreparedHome {
    pub path: PathBuf,
    pub dir: cap_std::fs::Dir,
    /// The home did not exist before this call; a failed first boot removes
    /// only a home it created.
    pub created: bool,
}

/// Create (or open) `<state>/homes/<sandbox>` with mode 0755, component by
/// component through directory handles, refusing any symbolic link from the
/// first user-writable directory down.
pub fn prepare_default_home(state_dir: &Path, sandbox: &str) -> Result<PreparedHome> {
    check_sandbox_name(sandbox)?;
    let path = default_home_path(state_dir, sandbox);
    let walked = walk::create_dir(&path, Mode::from_raw_mode(HOME_MODE))?;
    private(&walked.fd, &path)?;
    Ok(PreparedHome { dir: cap_std::fs::Dir::from(walked.fd), created: walked.created, path })
}

/// Give a directory brig keeps private mode 0700 again: a guest that is
/// root can change the mode of its home's root, and an older release made
/// homes 0755.
pub(crate) fn private(dir: &OwnedFd, path: &Path) -> Result<()> {
    let st = rustix::fs::fstat(dir).map_err(|e| Error::io("inspect", path, e))?;
    if st.st_mode & 0o7777 != HOME_MODE {
        rustix::fs::fchmod(dir, Mode::from_raw_mode(HOME_MODE)).map_err(|e| Error::io("set the mode of", path, e))?;
    }
    Ok(())
}

/// Create (or open) a home the user named, refusing links on its path the
/// same way; brig creates a missing one but never deletes it.
pub fn prepare_named_home(path: &Path) -> Result<PreparedHome> {
    let walked = walk::create_dir(path, Mode::from_raw_mode(HOME_MODE))?;
    private(&walked.fd, path)?;
    Ok(PreparedHome { dir: cap_std::fs::Dir::from(walked.fd), created: walked.created, path: path.to_owned() })
}

/// Remove `<state>/homes/<sandbox>` and everything in it, never following a
/// link: a link inside the home is unlinked and its target left alone, and a
/// home that is itself a link is refused. Returns whether there was a home
/// to remove.
pub fn remove_default_home(state_dir: &Path, sandbox: &str) -> Result<bool> {
    check_sandbox_name(sandbox)?;
    let homes_path = state_dir.join("homes");
    let Some(homes) = walk::open_dir(&homes_path)? else {
        return Ok(false);
    };
    let path = homes_path.join(sandbox);
    let name = OsStr::new(sandbox);
    let st = match rustix::fs::statat(&homes.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(false),
        Err(e) => return Err(Error::io("inspect", &path, e)),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => {}
        FileType::Symlink => return Err(walk::symlink_error(&homes.fd, name, &path)),
        _ => return Err(Error::NotADirectory { path }),
    }
    let home = open_child_dir(&homes.fd, name).map_err(|e| walk::refusal(&homes.fd, name, &path, e))?;
    empty_dir(home, &path)?;
    rustix::fs::unlinkat(&homes.fd, name, AtFlags::REMOVEDIR).map_err(|e| Error::io("remove", &path, e))?;
    Ok(true)
}

/// Remove every entry of the directory behind `dir`, depth first, through
/// handles only. An entry that turns out not to be a directory when opened
/// (including one swapped for a link meanwhile) is unlinked, never followed.
fn empty_dir(dir: OwnedFd, path: &Path) -> Result<()> {
    make_owner_writable(&dir, path)?;
    let mut entries: Vec<(CString, FileType)> = Vec::new();
    let mut reader = rustix::fs::Dir::read_from(&dir).map_err(|e| Error::io("read", path, e))?;
    while let Some(entry) = reader.read() {
        let entry = entry.map_err(|e| Error::io("read", path, e))?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        entries.push((name.to_owned(), entry.file_type()));
    }
    for (name, file_type) in entries {
        let child = path.join(entry_name(&name));
        if matches!(file_type, FileType::Directory | FileType::Unknown) {
            match open_child_dir(&dir, entry_name(&name)) {
                Ok(sub) => {
                    empty_dir(sub, &child)?;
                    remove_entry(&dir, &name, AtFlags::REMOVEDIR, &child)?;
                    continue;
                }
                Err(Errno::NOTDIR | Errno::LOOP) => {}
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(Error::io("open", &child, e)),
            }
        }
        remove_entry(&dir, &name, AtFlags::empty(), &child)?;
    }
    Ok(())
}

fn remove_entry(dir: &OwnedFd, name: &CString, flags: AtFlags, path: &Path) -> Result<()> {
    match rustix::fs::unlinkat(dir, name.as_c_str(), flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(Error::io("remove", path, e)),
    }
}

/// Tools inside a home leave read-only directories behind (Go's module
/// cache is one); their entries can only be removed once the owner may
/// write the directory again.
fn make_owner_writable(dir: &OwnedFd, path: &Path) -> Result<()> {
    let st = rustix::fs::fstat(dir).map_err(|e| Error::io("inspect", path, e))?;
    let mode = Mode::from_raw_mode(st.st_mode);
    if !mode.contains(Mode::RWXU) {
        rustix::fs::fchmod(dir, mode | Mode::RWXU).map_err(|e| Error::io("set the mode of", path, e))?;
    }
    Ok(())
}

/// Only a sandbox name brig makes can name a default home, and it must be a
/// single path component: this is what keeps removal inside `homes/`.
pub(crate) fn check_sandbox_name(sandbox: &str) -> Result<()> {
    let single = Path::new(sandbox).components().count() == 1
        && matches!(Path::new(sandbox).components().next(), Some(Component::Normal(_)));
    if !single || sandbox.contains('/') || sandbox.len() <= SANDBOX_PREFIX.len() || !sandbox.starts_with(SANDBOX_PREFIX)
    {
        return Err(Error::BadSandboxName { name: sandbox.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::testing::{FixedAgents, TempDir};
    use rstest::rstest;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn session(typed: &str) -> Session {
        Session::parse(typed, &FixedAgents::builtin()).unwrap()
    }

    /// (flag, environment, ref) → (home, setting that chose it; "" = default).
    #[rstest]
    #[case(None, &[], "claude", "/h/.brig/homes/brig-claude-code", "")]
    #[case(None, &[], "claude@refactor", "/h/.brig/homes/brig-claude-code-refactor", "")]
    #[case(None, &[("BRIG_STATE_DIR", "/s")], "codex", "/s/homes/brig-codex", "")]
    #[case(None, &[("BRIG_STATE_DIR", "rel/st")], "codex", "/cwd/rel/st/homes/brig-codex", "")]
    #[case(None, &[("BRIG_WORKSPACE", "/w")], "claude", "/w", "BRIG_WORKSPACE")]
    #[case(None, &[("BRIG_WORKSPACE", "/w")], "claude@x1", "/w-x1", "BRIG_WORKSPACE")]
    #[case(None, &[("BRIG_WORKSPACE", "/w/")], "claude@x1", "/w-x1", "BRIG_WORKSPACE")]
    #[case(None, &[("BRIG_WORKSPACE", "")], "claude", "/h/.brig/homes/brig-claude-code", "")]
    #[case(None, &[("BRIG_WORKSPACE", "~/ws")], "claude", "/h/ws", "BRIG_WORKSPACE")]
    #[case(None, &[("BRIG_WORKSPACE", "ws")], "claude", "/cwd/ws", "BRIG_WORKSPACE")]
    #[case(None, &[("BRIG_WORKSPACE", "../ws/.")], "claude@a", "/ws-a", "BRIG_WORKSPACE")]
    #[case(None, &[("BRIG_WORKSPACE", "/w"), ("BRIG_CLAUDE_CODE_WORKSPACE", "/a")], "claude", "/a", "BRIG_CLAUDE_CODE_WORKSPACE")]
    #[case(None, &[("BRIG_WORKSPACE", "/w"), ("BRIG_CLAUDE_CODE_WORKSPACE", "")], "claude", "/h/.brig/homes/brig-claude-code", "")]
    #[case(None, &[("BRIG_WORKSPACE", "/w"), ("BRIG_CODEX_WORKSPACE", "/a")], "claude", "/w", "BRIG_WORKSPACE")]
    #[case(None, &[("BRIG_CLAUDE_DESKTOP_WORKSPACE", "/d")], "desktop@z", "/d-z", "BRIG_CLAUDE_DESKTOP_WORKSPACE")]
    #[case(Some("/f"), &[("BRIG_WORKSPACE", "/w"), ("BRIG_CLAUDE_CODE_WORKSPACE", "/a")], "claude", "/f", "--home")]
    #[case(Some("/f"), &[], "claude@two", "/f-two", "--home")]
    #[case(Some("~"), &[], "claude", "/h", "--home")]
    #[case(Some(""), &[("BRIG_WORKSPACE", "/w")], "claude", "/w", "BRIG_WORKSPACE")]
    fn home_precedence(
        #[case] flag: Option<&str>,
        #[case] vars: &[(&str, &str)],
        #[case] typed: &str,
        #[case] want_path: &str,
        #[case] want_setting: &str,
    ) {
        let mut env = Environment::from_pairs(vars.iter().copied());
        env.set("HOME", "/h");
        let home = resolve_home(&session(typed), flag, &env, Path::new("/cwd")).unwrap();
        assert_eq!(home.path, PathBuf::from(want_path));
        let want_source = match want_setting {
            "" => HomeSource::Default,
            s => HomeSource::Named { setting: s.to_owned() },
        };
        assert_eq!(home.created_by_brig(), want_source == HomeSource::Default);
        assert_eq!(home.source, want_source);
    }

    #[test]
    fn no_state_dir_is_a_clear_error() {
        let err = resolve_home(&session("claude"), None, &Environment::default(), Path::new("/")).unwrap_err();
        assert!(matches!(err, Error::NoStateDir), "{err}");
        assert!(err.to_string().contains("BRIG_STATE_DIR"), "{err}");
        // A named home needs no state directory.
        let env = Environment::from_pairs([("BRIG_WORKSPACE", "/w")]);
        assert_eq!(resolve_home(&session("claude"), None, &env, Path::new("/")).unwrap().path, PathBuf::from("/w"));
    }

    #[test]
    fn only_default_homes_are_brigs() {
        assert!(HomeSource::Default.created_by_brig());
        assert!(!HomeSource::Legacy.created_by_brig());
        assert!(!GuestHome::legacy("/h/brig/claude-code").created_by_brig());
        assert!(!HomeSource::Named { setting: "--home".into() }.created_by_brig());
    }

    #[rstest]
    #[case("claude-code", "BRIG_CLAUDE_CODE_WORKSPACE")]
    #[case("codex", "BRIG_CODEX_WORKSPACE")]
    #[case("my-agent.v2", "BRIG_MY_AGENT.V2_WORKSPACE")]
    fn per_agent_variable(#[case] agent: &str, #[case] want: &str) {
        assert_eq!(agent_workspace_variable(agent), want);
    }

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn prepare_creates_once_with_mode_0700() {
        let tmp = TempDir::new();
        let state = tmp.path().join("state");
        let first = prepare_default_home(&state, "brig-claude-code").unwrap();
        assert!(first.created);
        assert_eq!(first.path, state.join("homes/brig-claude-code"));
        assert_eq!(mode_of(&first.path), 0o700);
        first.dir.write("marker", "x").unwrap();
        assert_eq!(std::fs::read_to_string(first.path.join("marker")).unwrap(), "x");

        let second = prepare_default_home(&state, "brig-claude-code").unwrap();
        assert!(!second.created);
        assert!(second.path.join("marker").exists());
    }

    #[rstest]
    #[case::homes_dir("homes", "state/homes")]
    #[case::home_itself("homes/brig-codex", "state/homes/brig-codex")]
    #[case::state_dir("", "state")]
    fn prepare_refuses_links(#[case] link_at: &str, #[case] shown: &str) {
        let tmp = TempDir::new();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let state = tmp.path().join("state");
        let link = if link_at.is_empty() { state.clone() } else { state.join(link_at) };
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(&outside, &link).unwrap();

        let err = prepare_default_home(&state, "brig-codex").unwrap_err();
        match &err {
            Error::Symlink { link, target } => {
                assert_eq!(link, &tmp.path().join(shown));
                assert_eq!(target, &outside);
            }
            other => panic!("expected a link refusal, got {other}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&outside.display().to_string()), "{msg}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing written through the link");
    }

    #[rstest]
    #[case("")]
    #[case("brig-")]
    #[case("codex")]
    #[case("..")]
    #[case("brig-a/../../x")]
    #[case("/brig-a")]
    fn bad_sandbox_names_are_refused(#[case] name: &str) {
        let tmp = TempDir::new();
        let err = prepare_default_home(tmp.path(), name).unwrap_err();
        assert!(matches!(err, Error::BadSandboxName { .. }), "{err}");
        let err = remove_default_home(tmp.path(), name).unwrap_err();
        assert!(matches!(err, Error::BadSandboxName { .. }), "{err}");
    }

    #[test]
    fn remove_unlinks_links_and_leaves_their_targets() {
        let tmp = TempDir::new();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("precious"), "keep me").unwrap();
        let state = tmp.path().join("state");
        let home = prepare_default_home(&state, "brig-codex").unwrap().path;

        std::fs::create_dir_all(home.join("a/b/c")).unwrap();
        std::fs::write(home.join("a/b/c/file"), "x").unwrap();
        std::fs::write(home.join("top"), "x").unwrap();
        symlink(&outside, home.join("dir-link")).unwrap();
        symlink(&outside, home.join("a/b/nested-link")).unwrap();
        symlink(outside.join("precious"), home.join("file-link")).unwrap();
        symlink("/nonexistent/target", home.join("dangling")).unwrap();
        // A read-only directory, as Go's module cache leaves behind.
        std::fs::create_dir(home.join("ro")).unwrap();
        std::fs::write(home.join("ro/f"), "x").unwrap();
        std::fs::set_permissions(home.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();

        assert!(remove_default_home(&state, "brig-codex").unwrap());
        assert!(!home.exists());
        assert!(state.join("homes").is_dir());
        assert_eq!(std::fs::read_to_string(outside.join("precious")).unwrap(), "keep me");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

        assert!(!remove_default_home(&state, "brig-codex").unwrap(), "nothing left to remove");
        assert!(!remove_default_home(&tmp.path().join("no-state"), "brig-codex").unwrap());
    }

    #[test]
    fn remove_refuses_a_home_that_is_a_link() {
        let tmp = TempDir::new();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("precious"), "keep me").unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir_all(state.join("homes")).unwrap();
        symlink(&outside, state.join("homes/brig-codex")).unwrap();

        let err = remove_default_home(&state, "brig-codex").unwrap_err();
        match &err {
            Error::Symlink { link, target } => {
                assert_eq!(link, &state.join("homes/brig-codex"));
                assert_eq!(target, &outside);
            }
            other => panic!("expected a link refusal, got {other}"),
        }
        assert!(outside.join("precious").exists());
        assert!(state.join("homes/brig-codex").is_symlink());
    }

    #[test]
    fn remove_refuses_homes_reached_through_a_link() {
        let tmp = TempDir::new();
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("brig-codex")).unwrap();
        std::fs::write(outside.join("brig-codex/precious"), "keep me").unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        symlink(&outside, state.join("homes")).unwrap();

        let err = remove_default_home(&state, "brig-codex").unwrap_err();
        assert!(matches!(err, Error::Symlink { .. }), "{err}");
        assert!(outside.join("brig-codex/precious").exists());
    }

    #[test]
    fn remove_refuses_a_file_in_place_of_a_home() {
        let tmp = TempDir::new();
        std::fs::create_dir_all(tmp.path().join("homes")).unwrap();
        std::fs::write(tmp.path().join("homes/brig-codex"), "x").unwrap();
        let err = remove_default_home(tmp.path(), "brig-codex").unwrap_err();
        assert!(matches!(err, Error::NotADirectory { .. }), "{err}");
        assert!(tmp.path().join("homes/brig-codex").is_file());
    }
}
