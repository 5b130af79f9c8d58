//! The library's top-level error: one variant per module error.
//!
//! Every variant reaches [`crate::exit::exit_code`], which maps it to the
//! stable exit-code table. Messages are lowercase fragments; the chain of
//! sources is printed once, at the edge, by the binary.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Profile(#[from] crate::profile::Error),
    #[error(transparent)]
    Session(#[from] crate::session::Error),
    #[error(transparent)]
    Setting(#[from] crate::settings::Error),
    #[error(transparent)]
    Runtime(#[from] crate::runtime::Error),
    #[error(transparent)]
    Engine(#[from] crate::engine::Error),
    #[error(transparent)]
    Usage(#[from] crate::cli::UsageError),
    /// A host file operation brig needed and could not do.
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The profile requires secrets, and this build has no secret store to
    /// resolve them from: refused before any sandbox exists.
    #[error("{profile} requires the secret(s) {}, and this build has no secret store to read them from; mark them `required: false` in a profile of your own to run without them", names.join(", "))]
    SecretsUnavailable { profile: String, names: Vec<String> },
    /// A destructive step needs a yes, and there is no terminal to ask.
    #[error("{what} needs confirmation and there is no terminal to ask; pass {flag} to go ahead")]
    NeedsConfirmation { what: String, flag: &'static str },
    /// Writing to our own stdout failed (other than a closed pipe, which is
    /// not an error: `brig ls | head -1` exits 0).
    #[error("cannot write to stdout")]
    Stdout(#[source] std::io::Error),
    /// `HOME` is needed to find the state or profile directory and is unset.
    #[error("HOME is not set, and {what} needs it; set HOME or {setting}")]
    NoHome { what: &'static str, setting: &'static str },
}

impl Error {
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { action, path: path.into(), source }
    }
}
