//! The profile registry: built-ins first, then file profiles overriding them.

use std::path::PathBuf;

use super::{Error, Profile};
use crate::environment::Environment;

/// Where a registry entry came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Builtin,
    File { path: PathBuf, overrides_builtin: bool },
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub profile: Profile,
    pub origin: Origin,
}

#[derive(Debug, Default)]
pub struct Registry {
    entries: Vec<Entry>,
    warnings: Vec<String>,
}

impl Registry {
    /// Load the built-ins and the profile directory. Never fails: an unusable
    /// file is reported in [`Registry::warnings`] and skipped.
    pub fn load(_env: &Environment) -> Registry {
        Registry::default()
    }

    /// Exact profile name first, then the alias table (`claude`, `desktop`).
    pub fn resolve(&self, name: &str) -> Result<&Entry, Error> {
        self.entries
            .iter()
            .find(|e| e.profile.name == name)
            .ok_or_else(|| Error::UnknownAgent { name: name.to_owned() })
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Lines to print as warnings (unusable files, duplicate declarations).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
