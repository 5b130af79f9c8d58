//! The command line: clap definitions and one module per verb.

#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("{0}")]
    Clap(String),
}
