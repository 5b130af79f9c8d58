//! The `--json` envelope shared by every report verb.
//!
//! Within an apiVersion fields are only ever added, never renamed or removed,
//! and no field carries a credential value.

use serde::Serialize;

pub const API_VERSION: &str = "brig.sh/v1alpha1";

/// `{"apiVersion":"brig.sh/v1alpha1","kind":K,"data":…}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<T: Serialize> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub data: T,
}

impl<T: Serialize> Envelope<T> {
    pub fn new(kind: &'static str, data: T) -> Self {
        Envelope { api_version: API_VERSION, kind, data }
    }

    /// One compact line, as scripts read it.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("envelope types always serialize")
    }
}
