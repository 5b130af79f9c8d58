//! Profiles: the document that describes one agent, the eight built-ins, and
//! the registry that layers file profiles over them.
//!
//! (Skeleton: the profile document, validation and registry are filled in by
//! the profiles work; the signatures below are what the rest of brig uses.)

mod registry;

pub use registry::{Entry, Origin, Registry};

use serde::{Deserialize, Serialize};

/// The profile document (spec 04 §1.2). Strict: unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub image: String,
    pub guest_home: String,
    pub mem: u32,
    pub cpus: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_bin: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No profile or alias of that name.
    #[error("unknown agent \"{name}\"; `brig agent ls` lists the agents")]
    UnknownAgent { name: String },
}
