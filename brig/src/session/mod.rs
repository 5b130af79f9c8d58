//! Sessions: refs, labels, sandbox names, guest homes and the session index.
//!
//! A ref (`claude`, `claude@refactor`) resolves to a [`Session`]: a canonical
//! agent, an optional label and the sandbox name derived from both. The
//! session's guest home is resolved by [`home::resolve_home`], and what brig
//! remembers about each session lives in the [`index::Index`].

pub mod home;
pub mod index;
pub mod label;
pub mod project;
pub mod reference;
pub(crate) mod walk;

use std::path::PathBuf;

pub use home::{GuestHome, HomeSource, PreparedHome};
pub use index::{Index, Record};
pub use reference::{Session, parse_sandbox_name};

/// What the sessions module needs from the profile registry.
///
/// Kept as a trait so that ref parsing does not depend on how profiles are
/// loaded; the registry implements it.
pub trait Agents {
    /// The canonical profile name for what the user typed: exact profile name first, then the alias table
    /// (claude → claude-code, desktop → claude-desktop). None = unknown agent.
    fn canonical(&self, typed: &str) -> Option<String>;
    /// Every profile name the registry knows (built-in and file), for the "names another agent's default session" rule.
    fn names(&self) -> Vec<String>;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("ref \"{text}\" has more than one @; write <agent> or <agent>@<label>")]
    SeveralAts { text: String },

    #[error("ref \"{text}\" names no agent; write <agent> or <agent>@<label>")]
    NoAgent { text: String },

    #[error("ref \"{text}\" ends with @ but gives no label; drop the @ for the default session")]
    TrailingAt { text: String },

    /// Refused rather than rewritten, so that two spellings never silently
    /// reach one session.
    #[error("label \"{label}\" in ref \"{text}\" is not a valid label; it would map to \"{slug}\", write that instead")]
    LabelNotSlug { text: String, label: String, slug: String },

    #[error("label \"{label}\" in ref \"{text}\" has no usable characters (letters, digits, '.', '_', '-')")]
    LabelUnusable { text: String, label: String },

    #[error(
        "ref \"{text}\" would use sandbox \"{sandbox}\", which is the default session of agent \"{other}\"; choose another label"
    )]
    LabelShadowsAgent { text: String, sandbox: String, other: String },

    #[error("--name cannot be combined with the label in ref \"{text}\"; keep the label and drop --name")]
    NameWithLabel { text: String },

    #[error("--name \"{name}\" has no usable characters (letters, digits, '.', '_', '-')")]
    NameUnusable { name: String },

    #[error("unknown agent \"{name}\"; run `brig agent ls` to list the agents brig knows")]
    UnknownAgent { name: String },

    #[error("cannot find brig's state directory: neither BRIG_STATE_DIR nor HOME is set")]
    NoStateDir,

    /// Spec 05 §3.3: a link on a path brig writes through could redirect the
    /// write, so it is refused and both ends are named.
    #[error("{} is a symbolic link to {}; brig does not follow links on this path", link.display(), target.display())]
    Symlink { link: PathBuf, target: PathBuf },

    /// Where brig expects a regular file it found something else (a FIFO a
    /// guest planted would hang a reader; a device would hand over the host).
    #[error("{} is {found}, not the regular file brig expects there", path.display())]
    NotAFile { path: PathBuf, found: &'static str },

    #[error("project {} does not exist", path.display())]
    NoProject { path: PathBuf },

    #[error("{} is not a directory", path.display())]
    NotADirectory { path: PathBuf },

    #[error("\"{name}\" is not a sandbox name brig creates homes for")]
    BadSandboxName { name: String },

    #[error("session index {} is corrupt; repair or remove it", path.display())]
    IndexCorrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    #[error("cannot encode the session index {}", path.display())]
    IndexEncode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: impl Into<std::io::Error>) -> Self {
        Error::Io { action, path: path.into(), source: source.into() }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
pub(crate) mod testing {
    //! A fixed agent list standing in for the profile registry.

    use std::path::Path;

    use super::Agents;

    /// A scratch directory removed on drop. It lives under `/tmp` rather than
    /// wherever `TMPDIR` points, since brig reads no environment directly.
    #[derive(Debug)]
    pub struct TempDir(tempfile::TempDir);

    impl TempDir {
        pub fn new() -> Self {
            let dir = tempfile::Builder::new().prefix("brig-session-test-").tempdir_in("/tmp");
            TempDir(dir.expect("create scratch dir"))
        }

        pub fn path(&self) -> &Path {
            self.0.path()
        }
    }

    #[derive(Debug)]
    pub struct FixedAgents(pub Vec<&'static str>);

    impl FixedAgents {
        pub fn builtin() -> Self {
            FixedAgents(vec![
                "claude-code",
                "claude-desktop",
                "codex",
                "cursor",
                "gemini",
                "grok",
                "opencode",
                "ubuntu",
            ])
        }

        pub fn with(mut self, extra: &'static str) -> Self {
            self.0.push(extra);
            self
        }
    }

    impl Agents for FixedAgents {
        fn canonical(&self, typed: &str) -> Option<String> {
            if self.0.contains(&typed) {
                return Some(typed.to_owned());
            }
            let aliased = match typed {
                "claude" => "claude-code",
                "desktop" => "claude-desktop",
                _ => return None,
            };
            self.0.contains(&aliased).then(|| aliased.to_owned())
        }

        fn names(&self) -> Vec<String> {
            self.0.iter().map(|s| (*s).to_owned()).collect()
        }
    }
}
