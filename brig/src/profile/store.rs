//! Writing to the profile directory: atomic replacement of one profile file,
//! removal, and the sibling copies an import supersedes.
//!
//! Every write lands in a temporary file in the same directory, is synced,
//! then renamed over the destination, so a reader (another brig invocation
//! loading the registry) sees the old file or the new one, never half of one.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::Error;
use super::registry::EXTENSIONS;

/// Profiles hold no secret values, only names, so they are world-readable
/// like any config file; the directory is private to the user.
const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o700;

fn write_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Write { action, path, source }
}

/// Create the profile directory (mode 0700) if it does not exist yet. An
/// existing directory keeps the mode its owner gave it.
pub fn ensure_dir(dir: &Path) -> Result<(), Error> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir).map_err(write_err("create the profile directory", dir))
}

/// Atomically replace `dir/file_name` with `bytes`, creating `dir` first.
pub fn write_atomic(dir: &Path, file_name: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
    ensure_dir(dir)?;
    let dest = dir.join(file_name);
    // A name no profile load reads (leading dot, no profile extension) and no
    // concurrent brig picks: pid plus a per-process counter.
    let tmp = dir.join(format!(".{file_name}.{}.{}.tmp", std::process::id(), next_serial()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&tmp)
            .map_err(write_err("create", &tmp))?;
        f.write_all(bytes).map_err(write_err("write", &tmp))?;
        f.sync_all().map_err(write_err("sync", &tmp))?;
        fs::rename(&tmp, &dest).map_err(write_err("replace", &dest))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map(|()| dest)
}

fn next_serial() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SERIAL: AtomicUsize = AtomicUsize::new(0);
    SERIAL.fetch_add(1, Ordering::Relaxed)
}

/// Make the rename itself durable.
fn sync_dir(dir: &Path) -> Result<(), Error> {
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(write_err("sync", dir))
}

pub fn remove(path: &Path) -> Result<(), Error> {
    fs::remove_file(path).map_err(write_err("remove", path))
}

/// The file name a document is stored under: `<name>.json` when the text is
/// JSON (first non-space byte `{`), else `<name>.yaml`.
pub fn file_name_for(name: &str, bytes: &[u8]) -> String {
    let json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    format!("{name}.{}", if json { "json" } else { "yaml" })
}

/// Existing `dir/<name>.<ext>` files for every profile extension.
pub fn same_stem_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    EXTENSIONS.iter().map(|ext| dir.join(format!("{name}.{ext}"))).filter(|p| p.exists()).collect()
}

/// Store `bytes` as the profile `name`, then delete the copies under the
/// other extensions, which would otherwise declare the name a second time.
pub fn store(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
    let file_name = file_name_for(name, bytes);
    let dest = write_atomic(dir, &file_name, bytes)?;
    for other in same_stem_files(dir, name) {
        if other != dest {
            remove(&other)?;
        }
    }
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::super::registry::tests::Scratch;
    use super::*;
    use rstest::rstest;
    use std::os::unix::fs::PermissionsExt;

    #[rstest]
    #[case(b"{\"name\": \"x\"}", "x.json")]
    #[case(b"  \n\t{}", "x.json")]
    #[case(b"name: x", "x.yaml")]
    #[case(b"# {json}\nname: x", "x.yaml")]
    #[case(b"", "x.yaml")]
    fn extension_follows_the_first_byte(#[case] bytes: &[u8], #[case] want: &str) {
        assert_eq!(file_name_for("x", bytes), want);
    }

    #[test]
    fn write_creates_private_dir_and_readable_file() {
        let s = Scratch::new("store-modes");
        let dir = s.path().join("profiles");
        let path = write_atomic(&dir, "a.yaml", b"name: a\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"name: a\n");
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        let leftovers: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file remains");
    }

    #[test]
    fn store_replaces_copies_under_other_extensions() {
        let s = Scratch::new("store-ext");
        s.write("x.yaml", "old");
        s.write("x.yml", "old");
        let dest = store(s.path(), "x", b"{\"name\": \"x\"}").unwrap();
        assert_eq!(dest, s.path().join("x.json"));
        assert_eq!(same_stem_files(s.path(), "x"), [s.path().join("x.json")]);
    }
}
