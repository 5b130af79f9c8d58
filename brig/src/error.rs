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
    Usage(#[from] UsageError),
    /// A host file operation brig needed and could not do.
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The profile requires secrets the store does not hold: refused before
    /// any sandbox exists.
    #[error("{profile} requires the secret(s) {}, which the secret store does not hold; store each with `brig secret create NAME` (the value on stdin), or mark it `required: false` in a profile of your own", names.join(", "))]
    SecretsMissing { profile: String, names: Vec<String> },
    #[error(transparent)]
    Secrets(#[from] crate::secrets::Error),
    /// An isolated sandbox's host isolation that cannot be put in place.
    #[error(transparent)]
    Firewall(#[from] crate::firewall::Error),
    /// An egress policy that is unusable, unknown, or cannot be enforced.
    #[error(transparent)]
    Policy(#[from] crate::policy::Error),
    /// A verification setting that cannot be used.
    #[error(transparent)]
    Verify(#[from] crate::verify::Error),
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

/// Usage mistakes that clap cannot see: combinations and positions. They
/// live here, beside [`Error`], rather than in the CLI module, so that the
/// library's error names no type of the CLI; [`crate::exit`] maps every one
/// to the usage code.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("--no-project cannot be combined with a project ({project}) on the same line")]
    NoProjectWithProject { project: String },
    #[error("--no-project applies only to `brig run`, not to `brig {verb}`")]
    NoProjectOnVerb { verb: &'static str },
    #[error("`brig rm <ref>` asks nothing, so it takes no -y; -y goes with --all")]
    YesWithoutAll,
    #[error("`brig {verb}` takes no -d/--detach")]
    DetachOnVerb { verb: &'static str },
    #[error("`brig sh` takes one script: -c before the ref, or -c right after it, not both")]
    TwoScripts,
    #[error(
        "`brig doctor --boot` needs an image that is already present locally (it never pulls): pass --image REF or set BRIG_IMAGE"
    )]
    BootWithoutImage,
    #[error("{image:?} is not an image reference (it starts with - or holds a blank or control character)")]
    BootImageUnusable { image: String },
    #[error("a secret's value comes from stdin or from -f FILE, not both")]
    StdinAndFile,
    #[error(
        "an offline sandbox has no network to publish a port on; drop --publish or choose --network isolated or shared"
    )]
    PublishOffline,
    #[error("--publish {a} and --publish {b} would listen on one host port")]
    PublishOverlap { a: String, b: String },
}

impl Error {
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { action, path: path.into(), source }
    }
}

/// An error and its sources on one line, `message: source: source…`. This is
/// how both binaries print an error, how brigd puts one in a response's
/// `error`, and how a warning names an unusable profile. Each message says
/// only what its level adds and never repeats its source, so the chain reads
/// once through without duplicates.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut line = err.to_string();
    let mut next = err.source();
    while let Some(cause) = next {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        next = cause.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn not_found() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::NotFound)
    }

    #[rstest]
    #[case::no_source(Error::Stdout(std::io::Error::other("pipe")), "cannot write to stdout: pipe")]
    #[case::io(Error::io("read", "/nope", not_found()), "cannot read /nope: entity not found")]
    // A transparent variant forwards its inner error's sources, so the
    // inner message is printed once, not once per level.
    #[case::transparent(
        Error::Profile(crate::profile::Error::UnknownAgent { name: "x".into() }),
        "unknown agent \"x\"; `brig agent ls` lists the agents"
    )]
    #[case::three_levels(
        Error::Profile(crate::profile::Error::EditedInvalid {
            path: "/p/x.yaml".into(),
            source: Box::new(crate::profile::Error::Write { action: "remove", path: "/p/y.yaml".into(), source: not_found() }),
        }),
        "/p/x.yaml is not usable after the edit and was kept as it is; run `brig agent edit` again to fix it: cannot remove /p/y.yaml: entity not found"
    )]
    fn chain_joins_each_source_once(#[case] err: Error, #[case] want: &str) {
        assert_eq!(chain(&err), want);
    }

    #[rstest]
    #[case::no_project_with_project(UsageError::NoProjectWithProject { project: "p".into() }, "--no-project cannot be combined with a project (p) on the same line")]
    #[case::no_project_on_verb(UsageError::NoProjectOnVerb { verb: "sh" }, "--no-project applies only to `brig run`, not to `brig sh`")]
    #[case::yes_without_all(
        UsageError::YesWithoutAll,
        "`brig rm <ref>` asks nothing, so it takes no -y; -y goes with --all"
    )]
    #[case::detach_on_verb(UsageError::DetachOnVerb { verb: "sh" }, "`brig sh` takes no -d/--detach")]
    fn usage_errors_exit_2(#[case] usage: UsageError, #[case] message: &str) {
        let err = Error::from(usage);
        assert_eq!(crate::exit::exit_code(&err), crate::Code::Usage);
        assert_eq!(chain(&err), message);
    }
}
