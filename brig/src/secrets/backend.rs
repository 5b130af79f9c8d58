//! Where the store's values live: the backends `keyring-core` drives.

use std::sync::Arc;

use keyring_core::{CredentialStore, Entry as KeyringEntry, Error as KeyringError};

use super::{Error, Index, Result, Secret};

/// The service every brig secret is filed under.
const SERVICE: &str = "sh.brig.secret";
/// What a secret's metadata entry is named after: `.meta.<name>`, which no
/// secret name can be (a name holds no `.`). One entry per secret, so two
/// brig processes writing different secrets never overwrite each other's.
const META: &str = ".meta.";
/// The kernel keyring holds at most this much in one key.
const KERNEL_VALUE_MAX: usize = 32767;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// The freedesktop Secret Service on the session bus (gnome-keyring,
    /// KWallet), default collection.
    SecretService,
    /// The kernel keyring: the user's persistent keyring, which outlives
    /// every process and expires after days unused; lost at reboot.
    KernelKeyring,
    /// An in-memory store, for the library's own tests.
    #[cfg(test)]
    Memory,
}

impl Backend {
    pub fn word(self) -> &'static str {
        match self {
            Backend::SecretService => "Secret Service",
            Backend::KernelKeyring => "kernel keyring",
            #[cfg(test)]
            Backend::Memory => "memory",
        }
    }

    /// Whether what it holds survives a reboot.
    pub fn persists(self) -> bool {
        matches!(self, Backend::SecretService)
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

pub struct Store {
    backend: Backend,
    store: Arc<CredentialStore>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.backend)
    }
}

impl Store {
    /// The Secret Service when a session bus offers one, else the kernel
    /// keyring. A Secret Service that is there but locked, or has no
    /// default collection, is an error rather than a reason to file the
    /// secret elsewhere: secrets would end up split between two stores.
    #[cfg(target_os = "linux")]
    pub fn open() -> Result<Store> {
        if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
            match dbus_secret_service_keyring_store::Store::new() {
                Ok(store) => {
                    let store = Store { backend: Backend::SecretService, store };
                    store.probe()?;
                    return Ok(store);
                }
                Err(err) => tracing::debug!("no Secret Service on the session bus ({err}); using the kernel keyring"),
            }
        }
        // Without a session keyring of its own (a shell with no login
        // session), the process would file keys where it cannot read them
        // back; joining one first makes the persistent keyring reachable.
        let _ = linux_keyutils::KeyRing::from_special_id(linux_keyutils::KeyRingIdentifier::Session, true);
        let store = linux_keyutils_keyring_store::Store::new().map_err(|e| Error::Store {
            backend: Backend::KernelKeyring.word(),
            what: format!("cannot be opened: {e}"),
        })?;
        Ok(Store { backend: Backend::KernelKeyring, store })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn open() -> Result<Store> {
        Err(Error::Store { backend: "secret store", what: "is not available on this platform yet".to_owned() })
    }

    #[cfg(test)]
    pub fn memory() -> Store {
        Store { backend: Backend::Memory, store: keyring_core::mock::Store::new().expect("the mock store opens") }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Reading tells an unlocked store from a locked one before anything is
    /// written.
    fn probe(&self) -> Result<()> {
        self.get(META).map(drop)
    }

    fn entry(&self, name: &str) -> Result<KeyringEntry> {
        KeyringEntry::new_in_store(&self.store, SERVICE, name).map_err(|e| self.failed("cannot name an entry", e))
    }

    pub fn get(&self, name: &str) -> Result<Option<Secret>> {
        match self.entry(name)?.get_secret() {
            Ok(bytes) => Ok(Some(Secret::new(bytes))),
            Err(KeyringError::NoEntry) => Ok(None),
            Err(e) => Err(self.failed("cannot be read", e)),
        }
    }

    pub fn set(&self, name: &str, value: &Secret) -> Result<()> {
        if self.backend == Backend::KernelKeyring && value.len() > KERNEL_VALUE_MAX {
            return Err(Error::Store {
                backend: self.backend.word(),
                what: format!(
                    "holds at most {KERNEL_VALUE_MAX} bytes in one secret, and this value is {}; a Secret Service (a desktop session's keyring) holds more",
                    value.len()
                ),
            });
        }
        self.entry(name)?.set_secret(value.expose()).map_err(|e| self.failed("cannot be written", e))
    }

    /// Whether there was a value to delete.
    pub fn delete(&self, name: &str) -> Result<bool> {
        match self.entry(name)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(KeyringError::NoEntry) => Ok(false),
            Err(e) => Err(self.failed("cannot be changed", e)),
        }
    }

    /// Every secret's metadata, never a value: the names come from the
    /// store's own listing of brig's metadata entries.
    pub fn index(&self) -> Result<Index> {
        let mut index = Index::new();
        for name in self.names()? {
            if let Some(meta) = self.get(&format!("{META}{name}"))? {
                index.insert(name, serde_json::from_slice(meta.expose()).map_err(|e| Error::Index(e.to_string()))?);
            }
        }
        Ok(index)
    }

    pub fn set_meta(&self, name: &str, entry: &super::Entry) -> Result<()> {
        let bytes = serde_json::to_vec(entry).map_err(|e| Error::Index(e.to_string()))?;
        self.set(&format!("{META}{name}"), &Secret::new(bytes))
    }

    /// Whether there was metadata to delete.
    pub fn delete_meta(&self, name: &str) -> Result<bool> {
        self.delete(&format!("{META}{name}"))
    }

    /// The names that have a metadata entry.
    fn names(&self) -> Result<Vec<String>> {
        let users: Vec<String> = match self.backend {
            #[cfg(target_os = "linux")]
            Backend::KernelKeyring => kernel_users()?,
            _ => {
                let spec = std::collections::HashMap::from([("service", SERVICE)]);
                KeyringEntry::search_in_store(&self.store, &spec)
                    .map_err(|e| self.failed("cannot be listed", e))?
                    .iter()
                    .filter_map(|e| e.get_specifiers().map(|(_, user)| user))
                    .collect()
            }
        };
        let mut names: Vec<String> = users.iter().filter_map(|u| u.strip_prefix(META)).map(str::to_owned).collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn failed(&self, what: &str, err: KeyringError) -> Error {
        let why = match &err {
            KeyringError::NoStorageAccess(_) => format!(
                "{what}: it is locked or has no default collection; unlock it (log in to your desktop session, or run `gnome-keyring-daemon --unlock`)"
            ),
            other => format!("{what}: {other}"),
        };
        Error::Store { backend: self.backend.word(), what: why }
    }
}

/// The users of brig's keys in the kernel's persistent keyring, from their
/// descriptions (`keyring:<user>@<service>`, as the keyutils store names
/// them); no key is read.
#[cfg(target_os = "linux")]
fn kernel_users() -> Result<Vec<String>> {
    use linux_keyutils::{KeyRing, KeyRingIdentifier};
    let failed = |what: &str, e: linux_keyutils::KeyError| Error::Store {
        backend: Backend::KernelKeyring.word(),
        what: format!("{what}: {e:?}"),
    };
    let ring = KeyRing::get_persistent(KeyRingIdentifier::Session).map_err(|e| failed("cannot be opened", e))?;
    let links = ring.get_links(4096).map_err(|e| failed("cannot be listed", e))?;
    let suffix = format!("@{SERVICE}");
    Ok(links
        .iter()
        .filter_map(|node| node.as_key())
        .filter_map(|key| key.metadata().ok())
        .filter_map(|meta| {
            meta.get_description().strip_prefix("keyring:")?.strip_suffix(suffix.as_str()).map(str::to_owned)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::{delete, read, write};
    use super::*;

    #[test]
    fn create_update_read_delete() {
        let store = Store::memory();
        let value = Secret::new(b"v1".to_vec());
        assert!(matches!(write(&store, "gh-token", &value, true), Err(Error::NotFound { .. })));
        write(&store, "gh-token", &value, false).unwrap();
        assert!(matches!(write(&store, "gh-token", &value, false), Err(Error::Exists { .. })));
        write(&store, "gh-token", &Secret::new(b"v2".to_vec()), true).unwrap();
        assert_eq!(read(&store, "gh-token").unwrap().expose(), b"v2");
        assert_eq!(store.index().unwrap().keys().collect::<Vec<_>>(), ["gh-token"]);
        delete(&store, "gh-token").unwrap();
        assert!(matches!(read(&store, "gh-token"), Err(Error::NotFound { .. })));
        assert!(matches!(delete(&store, "gh-token"), Err(Error::NotFound { .. })));
        assert!(store.index().unwrap().is_empty());
    }
}
