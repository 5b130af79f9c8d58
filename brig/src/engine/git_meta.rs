//! The project's git metadata: the files through which a later `git` on
//! the host runs code are read-only in the guest.
//!
//! The project is writable, so without this an agent could plant a hook,
//! or set `core.fsmonitor`, `diff.external`, a `filter.*.clean` or
//! `core.sshCommand`, and the user's next `git status` on the host would
//! run it. In the guest:
//!
//! - `.git` is bound over itself, so it cannot be renamed away and replaced;
//! - `.git/config`, `.git/hooks`, `config.worktree` files, every submodule's
//!   `config` and `hooks` under `.git/modules`, a hooks directory named by
//!   `core.hooksPath` inside the project, and files `.git/config` includes
//!   from inside the project are read-only — made first when missing, so
//!   one created later cannot appear writable;
//! - a `.git` file (a linked worktree's pointer) is read-only;
//! - a project that is no repository gets an empty `.git` directory,
//!   read-only in the guest, which git on the host passes over as it looks
//!   upward: the guest cannot make the project a repository of its own.
//!
//! Everything is opened from the project's handle without following a
//! link; a link where metadata goes is refused, naming where it points.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::Error;
use crate::environment::Environment;
use crate::session::{self, walk};

/// At most this many submodule git directories are protected; a project
/// with more is refused rather than protected in part.
const MAX_MODULES: usize = 64;
/// How deep under `.git/modules` a submodule's git directory may lie.
const MODULES_DEPTH: usize = 4;
/// The largest config file brig reads.
const CONFIG_MAX: u64 = 1 << 20;

/// One path of the project's git metadata, relative to the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitPath {
    pub rel: PathBuf,
    pub dir: bool,
    /// `false` only for `.git` itself, bound over itself to pin it.
    pub read_only: bool,
}

impl GitPath {
    fn read_only(rel: impl Into<PathBuf>, dir: bool) -> GitPath {
        GitPath { rel: rel.into(), dir, read_only: true }
    }
}

/// What of `project`'s git metadata the sandbox protects. Reads only.
pub fn paths(project: &Path, env: &Environment) -> Result<Vec<GitPath>, Error> {
    let Some(root) = walk::open_dir(project)? else { return Ok(Vec::new()) };
    let root = root.fd;
    let st = match rustix::fs::statat(&root, ".git", AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(vec![GitPath::read_only(".git", true)]),
        Err(e) => return Err(session::Error::io("inspect", project.join(".git"), e).into()),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => {}
        FileType::RegularFile => return Ok(vec![GitPath::read_only(".git", false)]),
        // A link or anything else: listed as the directory it should be,
        // and refused when prepared.
        _ => return Ok(vec![GitPath::read_only(".git", true)]),
    }
    let git = walk::open_child_dir(&root, OsStr::new(".git"))
        .map_err(|e| walk::refusal(&root, OsStr::new(".git"), &project.join(".git"), e))?;
    let config = read_config(&git);
    let mut out = vec![
        GitPath { rel: ".git".into(), dir: true, read_only: false },
        GitPath::read_only(".git/config", false),
        GitPath::read_only(".git/hooks", true),
    ];
    let worktree_config = config.to_ascii_lowercase().contains("worktreeconfig");
    if worktree_config || exists(&git, ".git/config.worktree") {
        out.push(GitPath::read_only(".git/config.worktree", false));
    }
    if let Ok(worktrees) = walk::open_child_dir(&git, OsStr::new("worktrees")) {
        for name in dir_names(&worktrees) {
            let rel = Path::new(".git/worktrees").join(&name).join("config.worktree");
            if exists(&git, rel.strip_prefix(".git").unwrap_or(&rel)) {
                out.push(GitPath::read_only(rel, false));
            }
        }
    }
    if let Ok(modules) = walk::open_child_dir(&git, OsStr::new("modules")) {
        let mut found = Vec::new();
        git_dirs(&modules, Path::new(".git/modules"), MODULES_DEPTH, &mut found);
        if found.len() > MAX_MODULES {
            return Err(session::Error::io(
                "protect the git metadata of",
                project,
                std::io::Error::other(format!("it has more than {MAX_MODULES} submodules")),
            )
            .into());
        }
        for dir in found {
            out.push(GitPath::read_only(dir.join("config"), false));
            out.push(GitPath::read_only(dir.join("hooks"), true));
        }
    }
    for include in values(&config, &["include.path"], true) {
        if let Some(rel) = inside(project, &project.join(".git").join(expand(env, &include))) {
            out.push(GitPath::read_only(rel, false));
        }
    }
    let hooks_path = values(&config, &["core.hookspath"], false)
        .pop()
        .or_else(|| global_configs(env).iter().rev().find_map(|c| values(c, &["core.hookspath"], false).pop()));
    if let Some(hooks) = hooks_path
        && let Some(rel) = inside(project, &project.join(expand(env, &hooks)))
        && !out.iter().any(|p| p.rel == rel)
    {
        out.push(GitPath::read_only(rel, true));
    }
    Ok(out)
}

/// Make what is missing (an empty file or directory) and refuse a link or
/// anything that is not the kind expected, through handles from the
/// project down; nothing here is ever opened in a way that could block.
pub fn prepare(project: &Path, paths: &[GitPath]) -> Result<(), Error> {
    let Some(root) = walk::open_dir(project)? else { return Ok(()) };
    for path in paths {
        let mut fd = root.fd.try_clone().map_err(|e| session::Error::io("open", project, e))?;
        let mut shown = project.to_owned();
        let parts: Vec<&OsStr> = path
            .rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let Some((last, dirs)) = parts.split_last() else { continue };
        for name in dirs {
            shown.push(name);
            fd = super::prepare::make_dir(&fd, name, &shown)?;
        }
        shown.push(last);
        if path.dir {
            super::prepare::make_dir(&fd, last, &shown)?;
        } else {
            super::prepare::open_file(&fd, last, &shown, OFlags::RDONLY)?;
        }
    }
    Ok(())
}

fn exists(dir: &OwnedFd, rel: impl AsRef<Path>) -> bool {
    let rel = rel.as_ref();
    let rel = rel.strip_prefix(".git").unwrap_or(rel);
    rustix::fs::statat(dir, rel, AtFlags::SYMLINK_NOFOLLOW).is_ok()
}

fn dir_names(dir: &OwnedFd) -> Vec<std::ffi::OsString> {
    let Ok(mut entries) = rustix::fs::Dir::read_from(dir) else { return Vec::new() };
    let mut out = Vec::new();
    while let Some(Ok(entry)) = entries.read() {
        let name = walk::entry_name(entry.file_name());
        if name != "." && name != ".." && entry.file_type() == FileType::Directory {
            out.push(name.to_owned());
        }
    }
    out
}

/// The git directories under `.git/modules`: directories holding a
/// `config` file, looked for `depth` levels down (submodule names may
/// hold slashes, and submodules nest).
fn git_dirs(dir: &OwnedFd, rel: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth == 0 || out.len() > MAX_MODULES {
        return;
    }
    for name in dir_names(dir) {
        let Ok(sub) = walk::open_child_dir(dir, &name) else { continue };
        let sub_rel = rel.join(&name);
        if rustix::fs::statat(&sub, "config", AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
        {
            out.push(sub_rel.clone());
        }
        // A submodule's own submodules live in its `modules`.
        git_dirs(&sub, &sub_rel, depth - 1, out);
    }
}

/// `.git/config`'s text, read without following a link or blocking; empty
/// when it cannot be read (it is then protected as it is).
fn read_config(git: &OwnedFd) -> String {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let Ok(fd) = rustix::fs::openat(git, "config", flags, Mode::empty()) else { return String::new() };
    let Ok(st) = rustix::fs::fstat(&fd) else { return String::new() };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return String::new();
    }
    let mut text = String::new();
    let _ = std::fs::File::from(fd).take(CONFIG_MAX).read_to_string(&mut text);
    text
}

/// The user's and the system's git configuration, in git's reading order.
fn global_configs(env: &Environment) -> Vec<String> {
    let mut files = vec![PathBuf::from("/etc/gitconfig")];
    let xdg = env.get("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| env.home().map(|h| h.join(".config")));
    files.extend(xdg.map(|x| x.join("git/config")));
    files.extend(env.home().map(|h| h.join(".gitconfig")));
    files.iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect()
}

/// The values of `keys` (`section.name`, lowercase) in a git config text,
/// in order. With `subsections`, `[include]` and `[includeIf "…"]` both
/// count for `include.path`. Enough of git's syntax for the keys brig
/// reads: sections, `key = value`, quotes, `#`/`;` comments.
fn values(text: &str, keys: &[&str], subsections: bool) -> Vec<String> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let head = rest.split(']').next().unwrap_or_default().trim();
            let name = head.split(|c: char| c.is_whitespace() || c == '"').next().unwrap_or_default();
            section = name.to_ascii_lowercase();
            if subsections && section == "includeif" {
                section = "include".to_owned();
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = format!("{section}.{}", key.trim().to_ascii_lowercase());
        if keys.contains(&key.as_str()) {
            out.push(unquote(value.trim()));
        }
    }
    out
}

fn unquote(value: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in value.chars() {
        match c {
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// `~/` as git expands it.
fn expand(env: &Environment, value: &str) -> PathBuf {
    match (value.strip_prefix("~/"), env.home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(value),
    }
}

/// `path` relative to `project` when it lies inside it (lexically: `..`
/// resolved, links not).
fn inside(project: &Path, path: &Path) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            c => clean.push(c),
        }
    }
    clean.strip_prefix(project).ok().filter(|r| !r.as_os_str().is_empty()).map(Path::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &Path) -> Environment {
        Environment::from_pairs([("HOME", home.to_str().unwrap())])
    }

    fn rels(paths: &[GitPath]) -> Vec<(String, bool)> {
        paths.iter().map(|p| (p.rel.display().to_string(), p.read_only)).collect()
    }

    #[test]
    fn a_repository_gets_its_config_hooks_and_submodules_read_only() {
        let scratch = tempfile::tempdir().unwrap();
        let p = scratch.path().join("p");
        std::fs::create_dir_all(p.join(".git/modules/lib/modules/inner")).unwrap();
        std::fs::write(
            p.join(".git/config"),
            "[core]\n\thooksPath = \"tools/hooks\" ; husky\n[includeIf \"gitdir:~/\"]\n\tpath = ../shared.cfg\n",
        )
        .unwrap();
        std::fs::write(p.join(".git/modules/lib/config"), "").unwrap();
        std::fs::write(p.join(".git/modules/lib/modules/inner/config"), "").unwrap();
        let got = rels(&paths(&p, &env(scratch.path())).unwrap());
        for want in [
            (".git", false),
            (".git/config", true),
            (".git/hooks", true),
            (".git/modules/lib/config", true),
            (".git/modules/lib/hooks", true),
            (".git/modules/lib/modules/inner/config", true),
            ("shared.cfg", true),
            ("tools/hooks", true),
        ] {
            assert!(got.contains(&(want.0.to_owned(), want.1)), "{want:?} in {got:?}");
        }
        prepare(&p, &paths(&p, &env(scratch.path())).unwrap()).unwrap();
        assert!(p.join(".git/hooks").is_dir() && p.join("tools/hooks").is_dir() && p.join("shared.cfg").is_file());
    }

    #[test]
    fn a_global_relative_hooks_path_lands_in_the_project() {
        let scratch = tempfile::tempdir().unwrap();
        std::fs::write(scratch.path().join(".gitconfig"), "[core]\nhooksPath = .githooks\n").unwrap();
        let p = scratch.path().join("p");
        std::fs::create_dir_all(p.join(".git")).unwrap();
        let got = rels(&paths(&p, &env(scratch.path())).unwrap());
        assert!(got.contains(&(".githooks".to_owned(), true)), "{got:?}");
    }

    #[test]
    fn no_repository_gets_an_empty_read_only_git_directory() {
        let scratch = tempfile::tempdir().unwrap();
        let p = scratch.path().join("p");
        std::fs::create_dir_all(&p).unwrap();
        let got = paths(&p, &env(scratch.path())).unwrap();
        assert_eq!(rels(&got), [(".git".to_owned(), true)]);
        prepare(&p, &got).unwrap();
        assert!(p.join(".git").is_dir());
    }

    #[test]
    fn links_where_metadata_goes_are_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let p = scratch.path().join("p");
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::write(scratch.path().join("host-file"), "x").unwrap();
        std::os::unix::fs::symlink(scratch.path().join("host-file"), p.join(".git/config")).unwrap();
        let got = paths(&p, &env(scratch.path())).unwrap();
        let err = prepare(&p, &got).unwrap_err();
        assert!(err.to_string().contains("host-file"), "{err}");
        std::fs::remove_file(p.join(".git/config")).unwrap();
        std::fs::remove_dir(p.join(".git")).unwrap();
        std::os::unix::fs::symlink(scratch.path(), p.join(".git")).unwrap();
        let err = prepare(&p, &paths(&p, &env(scratch.path())).unwrap()).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }

    #[test]
    fn config_values() {
        let text = "[Core]\n  HooksPath = a # c\n[include]\npath = x\n[includeIf \"onbranch:m\"]\npath = \"y z\"\n";
        assert_eq!(values(text, &["core.hookspath"], false), ["a"]);
        assert_eq!(values(text, &["include.path"], true), ["x", "y z"]);
        assert_eq!(values(text, &["include.path"], false), ["x"]);
    }
}
