//! Runtimes: which binary brig drives, and the adapters that speak its dialect.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no runtime found")]
    NotFound { setting: &'static str },
    #[error("unknown BRIG_RUNTIME \"{value}\"")]
    UnknownKind { value: String },
    #[error("{verb} needs a runtime adapter, which this build does not have yet")]
    NotYetSupported { verb: &'static str },
}
