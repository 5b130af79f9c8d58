//! Where the store's values live: the backends `keyring-core` drives.

use std::sync::Arc;

use keyring_core::{CredentialStore, Entry as KeyringEntry, Error as KeyringError};

use super::{Error, Index, Result, Secret};

/// The service every brig secret is filed under.
const SERVICE: &str = "sh.brig.secret";
/// The index's own entry: not a valid secret name, so no secret can take it.
const INDEX: &str = ".index";
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

    /// Reading the index tells an unlocked store from a locked one before
    /// anything is written.
    fn probe(&self) -> Result<()> {
        self.index().map(drop)
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

    pub fn index(&self) -> Result<Index> {
        match self.get(INDEX)? {
            None => Ok(Index::new()),
            Some(bytes) => serde_json::from_slice(bytes.expose()).map_err(|e| Error::Index(e.to_string())),
        }
    }

    pub fn set_index(&self, index: &Index) -> Result<()> {
        if index.is_empty() {
            return self.delete(INDEX).map(drop);
        }
        let bytes = serde_json::to_vec(index).map_err(|e| Error::Index(e.to_string()))?;
        self.set(INDEX, &Secret::new(bytes))
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
