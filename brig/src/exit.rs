//! Exit codes, and the one mapping from every error to them.
//!
//! The table is stable and scripted against (spec 03): a new error must find
//! its place here, and the compiler makes sure it does, because every match
//! below is exhaustive.

use crate::error::Error;

/// brig's exit codes. brigd reports the same numbers as `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Code {
    Success = 0,
    Failure = 1,
    Usage = 2,
    NotFound = 3,
    NoRuntime = 4,
    VerifyRefused = 5,
    Credentials = 6,
    Unenforceable = 7,
}

impl Code {
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

impl From<Code> for std::process::ExitCode {
    fn from(code: Code) -> Self {
        std::process::ExitCode::from(code.as_u8())
    }
}

/// How a command ends: with one of brig's codes, or, when brig ran the
/// agent as its child (`run --json`), with the agent's own exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Brig(Code),
    Agent(u8),
}

impl From<Code> for Outcome {
    fn from(code: Code) -> Self {
        Outcome::Brig(code)
    }
}

impl From<Outcome> for std::process::ExitCode {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Brig(code) => code.into(),
            Outcome::Agent(status) => std::process::ExitCode::from(status),
        }
    }
}

/// The exit code for an error. Exhaustive on purpose: see the module docs.
pub fn exit_code(err: &Error) -> Code {
    match err {
        Error::Profile(e) => profile_code(e),
        Error::Session(e) => session_code(e),
        Error::Setting(_) => Code::Usage,
        Error::Runtime(e) => runtime_code(e),
        Error::Engine(e) => engine_code(e),
        Error::Usage(_) => Code::Usage,
        Error::Io { .. } | Error::NeedsConfirmation { .. } | Error::Stdout(_) | Error::NoHome { .. } => Code::Failure,
        Error::SecretsMissing { .. } => Code::Credentials,
        Error::Secrets(e) => secrets_code(e),
        Error::Verify(_) => Code::Usage,
        // Decision 4: a posture this run cannot enforce is refused, never
        // quietly weakened.
        Error::Firewall(_) => Code::Unenforceable,
        Error::Policy(e) => policy_code(e),
    }
}

fn policy_code(err: &crate::policy::Error) -> Code {
    use crate::policy::Error as E;
    match err {
        E::Invalid { .. } | E::Exists { .. } | E::Refused { .. } => Code::Usage,
        E::Unknown { .. } => Code::NotFound,
        // Like `agent rm` of a profile in use: nothing was done.
        E::Bound { .. } | E::Unreadable { .. } => Code::Failure,
        E::Unenforceable { .. } => Code::Unenforceable,
    }
}

fn secrets_code(err: &crate::secrets::Error) -> Code {
    use crate::secrets::Error as E;
    match err {
        E::BadName { .. } | E::BadValue { .. } => Code::Usage,
        E::NotFound { .. } => Code::NotFound,
        E::Exists { .. } => Code::Failure,
        E::Store { .. } | E::Index(_) => Code::Credentials,
    }
}

fn profile_code(err: &crate::profile::Error) -> Code {
    use crate::profile::Error as E;
    match err {
        E::UnknownAgent { .. } => Code::NotFound,
        // A document that is not a valid profile, and every refused request
        // of the agent verbs, is a mistake in what the user asked for.
        E::Parse { .. }
        | E::Invalid { .. }
        | E::NotUtf8 { .. }
        | E::EditedInvalid { .. }
        | E::BuiltinNotRemovable { .. }
        | E::Exists { .. }
        | E::DestinationHasSlash { .. }
        | E::DestinationBadName { .. }
        | E::DestinationIsAlias { .. }
        | E::DestinationReserved { .. }
        | E::NoEditor => Code::Usage,
        // Like `rm --all` without a terminal: nothing was done, exit 1.
        E::NeedsConfirmation { .. } | E::Declined | E::InUse { .. } => Code::Failure,
        E::EditorFailed { .. } | E::EditorExit { .. } | E::Write { .. } => Code::Failure,
    }
}

fn session_code(err: &crate::session::Error) -> Code {
    use crate::session::Error as E;
    match err {
        E::SeveralAts { .. }
        | E::NoAgent { .. }
        | E::TrailingAt { .. }
        | E::LabelNotSlug { .. }
        | E::LabelUnusable { .. }
        | E::LabelShadowsAgent { .. }
        | E::NameWithLabel { .. }
        | E::NameUnusable { .. } => Code::Usage,
        E::UnknownAgent { .. } => Code::NotFound,
        E::NoStateDir
        | E::Symlink { .. }
        | E::NotAFile { .. }
        | E::NotADirectory { .. }
        | E::NoProject { .. }
        | E::BadSandboxName { .. }
        | E::IndexCorrupt { .. }
        | E::IndexEncode { .. }
        | E::Io { .. } => Code::Failure,
    }
}

fn engine_code(err: &crate::engine::Error) -> Code {
    use crate::engine::Error as E;
    match err {
        E::BadImage { .. }
        | E::UnmountablePath { .. }
        | E::UnusableName { .. }
        | E::UnsendableValue { .. }
        | E::BadForwardName { .. } => Code::Usage,
        E::GuiNotHere { .. }
        | E::UnknownPosture { .. }
        | E::PortTaken { .. }
        | E::HandsOverHost { .. }
        | E::Unpublished { .. }
        | E::OnOtherRuntime { .. }
        | E::Incomplete => Code::Failure,
        E::FileNotDelivered { .. } => Code::Credentials,
        E::PublishUnsupported { .. } => Code::Unenforceable,
        E::VerifyRefused { .. } => Code::VerifyRefused,
    }
}

fn runtime_code(err: &crate::runtime::Error) -> Code {
    use crate::runtime::Error as E;
    match err {
        E::NoneFound
        | E::UnknownKind { .. }
        | E::BadBinary { .. }
        | E::KindNotFound { .. }
        | E::UnknownDialect { .. }
        | E::NotYetSupported { .. }
        | E::ShimMissing { .. } => Code::NoRuntime,
        E::NoSuchSandbox { .. } => Code::NotFound,
        E::ContainerRefused { .. } | E::IsolationUnenforceable { .. } => Code::Unenforceable,
        E::Unreachable { .. }
        | E::Unparsable { .. }
        | E::Unreadable { .. }
        | E::NoRestart { .. }
        | E::HostmountUnshared { .. }
        | E::Operation { .. }
        | E::NameInUse { .. }
        | E::UnknownShim { .. }
        | E::NotReady { .. }
        | E::Process(_) => Code::Failure,
    }
}
