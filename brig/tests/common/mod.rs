//! The scratch world the integration tests run brig and brigd in: their own
//! HOME, state and profile directories, and an empty PATH directory so that
//! no runtime is found unless a test puts one there. The user's own brig
//! state can never leak into a test. Paths are kept short, because brigd's
//! socket lives under them and must fit the kernel's limit.

#![allow(dead_code)]

use std::path::PathBuf;

use tempfile::TempDir;

pub struct Scratch {
    root: TempDir,
}

impl Scratch {
    /// A fresh scratch tree, removed on drop. `kind` and `name` only make a
    /// leftover recognisable; the directory is unique either way. It is made
    /// under `/tmp` rather than `TMPDIR`, which may be long enough to push
    /// brigd's socket path over the kernel's limit.
    pub fn new(kind: &str, name: &str) -> Scratch {
        let root = tempfile::Builder::new().prefix(&format!("{kind}-{name}-")).tempdir_in("/tmp").unwrap();
        for dir in ["home", "state", "profiles", "bin"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        Scratch { root }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    pub fn state(&self) -> PathBuf {
        self.path("state")
    }

    pub fn write_profile(&self, file: &str, text: &str) {
        std::fs::write(self.path("profiles").join(file), text).unwrap();
    }

    /// The whole environment a binary under test gets.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("HOME".into(), self.path("home").display().to_string()),
            ("BRIG_STATE_DIR".into(), self.state().display().to_string()),
            ("BRIG_PROFILE_DIR".into(), self.path("profiles").display().to_string()),
            ("PATH".into(), self.path("bin").display().to_string()),
        ]
    }
}
