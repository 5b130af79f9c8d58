//! The secret store: credentials kept by the operating system, named by the
//! user, read by brig on the host and handed to a guest by name.
//!
//! Values live in the freedesktop Secret Service when a session bus offers
//! one (it persists across reboots), else in the kernel keyring, in the
//! user's persistent keyring that outlives every brig process (lost at
//! reboot). Never a plaintext file. Beside each value, the store keeps a
//! metadata entry of its own: when it was written and where it came from —
//! what `brig secret ls` lists without reading any value.

mod backend;

use std::collections::BTreeMap;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub use backend::{Backend, Store};

/// The most a secret may hold (read from stdin or a file).
pub const VALUE_MAX: usize = 65536;
/// The longest secret name.
pub const NAME_MAX: usize = 128;

/// A secret's value. It has no `Display`, and its `Debug` prints no byte
/// of it, so it cannot be formatted into an argv, a log line or an error;
/// the one way to the bytes is [`Secret::expose`], at the point they are
/// handed over.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: Vec<u8>) -> Secret {
        Secret(bytes)
    }

    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{name:?} is not a secret name: a letter, then letters, digits, '_' or '-', at most {NAME_MAX} characters")]
    BadName { name: String },
    #[error("there is no secret {name}; to create it: brig secret create {name}")]
    NotFound { name: String },
    #[error("the secret {name} exists already; to replace it: brig secret update {name}")]
    Exists { name: String },
    #[error("{what}")]
    BadValue { what: String },
    /// The store could not be opened or used: no session bus and no
    /// kernel keyring, a locked collection, a value the backend cannot hold.
    #[error("the secret store ({backend}) {what}")]
    Store { backend: &'static str, what: String },
    #[error("the secret store's index is not what brig writes: {0}")]
    Index(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `[A-Za-z][A-Za-z0-9_-]*`, at most [`NAME_MAX`] characters.
pub fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.len() <= NAME_MAX;
    if ok { Ok(()) } else { Err(Error::BadName { name: name.to_owned() }) }
}

/// What the index keeps about one secret: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// When it was last written, in milliseconds since the epoch.
    pub updated: u64,
    /// Where its value came from (`file:~/.claude/.credentials.json`,
    /// `command`), when brig read it from a source; `None` for a value the
    /// user typed or piped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// When the credential itself expires, in milliseconds since the epoch,
    /// when its document says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// The index: name → entry.
pub type Index = BTreeMap<String, Entry>;

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `moments ago`, `5m ago`, `3h ago`, `2d ago`.
pub fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => "moments ago".to_owned(),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// A stored value as the text of a variable: the declared `field` of a JSON
/// document, or the whole value, which must then be UTF-8.
pub fn as_text(name: &str, value: &Secret, field: Option<&str>) -> Result<String> {
    let bad = |why: &str| Error::BadValue { what: format!("the secret {name} {why}") };
    match field {
        None => String::from_utf8(value.expose().to_vec()).map_err(|_| bad("is not text, so no variable can carry it")),
        Some(key) => {
            let doc: serde_json::Value = serde_json::from_slice(value.expose())
                .map_err(|_| bad("is not the JSON document its profile reads"))?;
            match doc.get(key) {
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(other) => Ok(other.to_string()),
                None => Err(bad(&format!("has no field {key:?}"))),
            }
        }
    }
}

/// `brig secret create` and `update`: write `value` under `name`, refusing
/// to replace (`create`) or to create (`update`) as asked. A value written
/// by hand has no provenance.
pub fn write(store: &Store, name: &str, value: &Secret, replace: bool) -> Result<()> {
    check_name(name)?;
    check_value(value)?;
    let index = store.index()?;
    match (index.contains_key(name), replace) {
        (true, false) => return Err(Error::Exists { name: name.to_owned() }),
        (false, true) => return Err(Error::NotFound { name: name.to_owned() }),
        _ => {}
    }
    put(store, name, value, Entry { updated: now_ms(), from: None, expires_at: None })
}

/// Write `value` and its metadata, whatever was there.
pub fn put(store: &Store, name: &str, value: &Secret, entry: Entry) -> Result<()> {
    check_name(name)?;
    check_value(value)?;
    store.set(name, value)?;
    store.set_meta(name, &entry)
}

fn check_value(value: &Secret) -> Result<()> {
    if value.is_empty() {
        return Err(Error::BadValue { what: "the value is empty; nothing was stored".to_owned() });
    }
    if value.len() > VALUE_MAX {
        return Err(Error::BadValue {
            what: format!("the value is {} bytes, more than the {VALUE_MAX} a secret may hold", value.len()),
        });
    }
    Ok(())
}

/// The expiry a credential document records under `key`, at any depth, in
/// milliseconds since the epoch (a value that reads as seconds is scaled).
pub fn expiry(value: &Secret, key: &str) -> Option<u64> {
    fn find(v: &serde_json::Value, key: &str) -> Option<u64> {
        match v {
            serde_json::Value::Object(map) => map
                .get(key)
                .and_then(serde_json::Value::as_u64)
                .or_else(|| map.values().find_map(|child| find(child, key))),
            serde_json::Value::Array(items) => items.iter().find_map(|child| find(child, key)),
            _ => None,
        }
    }
    let doc: serde_json::Value = serde_json::from_slice(value.expose()).ok()?;
    // Before 2001-09-09 in milliseconds is after it in seconds.
    find(&doc, key).map(|t| if t < 1_000_000_000_000 { t * 1000 } else { t })
}

/// `brig secret read`, and what a run forwards.
pub fn read(store: &Store, name: &str) -> Result<Secret> {
    check_name(name)?;
    store.get(name)?.ok_or_else(|| Error::NotFound { name: name.to_owned() })
}

/// `brig secret delete`.
pub fn delete(store: &Store, name: &str) -> Result<()> {
    check_name(name)?;
    let listed = store.delete_meta(name)?;
    let stored = store.delete(name)?;
    if !listed && !stored {
        return Err(Error::NotFound { name: name.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["gh-token", "claude-credentials", "A", "a_b-9"] {
            check_name(ok).unwrap();
        }
        for bad in ["", "9a", "-a", "a.b", "a b", "ä", &"a".repeat(129)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_secret_never_prints() {
        let s = Secret::new(b"ghp_s3cret".to_vec());
        assert_eq!(format!("{s:?}"), "Secret(10 bytes)");
        assert_eq!(s.expose(), b"ghp_s3cret");
    }
}
