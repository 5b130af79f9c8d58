//! Sessions: refs, labels, sandbox names, guest homes and the session index.
//!
//! (Skeleton: filled in by the sessions work; the signatures below are what
//! the rest of brig uses.)

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid ref \"{text}\"")]
    BadRef { text: String },
}
