//! Settings: flag → `BRIG_<AGENT>_<KEY>` → `BRIG_<KEY>` → profile → default.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{variable}={value:?} is not a valid value; valid values: {valid}")]
    BadValue { variable: String, value: String, valid: &'static str },
}
