//! The project a run mounts: checked through directory handles, so a link
//! anywhere on its path (from the first directory the user can write to) is
//! refused rather than followed (spec 05 §3.3).

use std::path::{Path, PathBuf};

use super::walk;
use super::{Error, Result};

/// Where a project is mounted in the guest: `/work/<basename>`.
pub fn guest_path(project: &Path) -> String {
    let base = project.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "root".to_owned());
    format!("/work/{base}")
}

/// Resolve a project named on the run line: absolute, cleaned, an existing
/// directory with no link on its path. The result is what brig records,
/// mounts and reports.
pub fn resolve(project: &str, cwd: &Path) -> Result<PathBuf> {
    let path = super::home::absolute(Path::new(project), cwd);
    match walk::open_dir(&path)? {
        Some(_) => Ok(path),
        None => Err(Error::NoProject { path }),
    }
}

/// Whether a remembered project is still there and still safe to mount.
pub fn still_usable(project: &Path) -> bool {
    matches!(walk::open_dir(project), Ok(Some(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_path_is_under_work() {
        assert_eq!(guest_path(Path::new("/home/u/code/demo")), "/work/demo");
    }

    #[test]
    fn project_checks() {
        let scratch = tempfile::Builder::new().prefix("brig-project-").tempdir().unwrap();
        let root = scratch.path();
        std::fs::create_dir_all(root.join("real/demo")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();

        assert_eq!(resolve("real/demo", root).unwrap(), root.join("real/demo"));
        assert!(matches!(resolve("missing", root), Err(Error::NoProject { .. })));
        let err = resolve("link/demo", root).unwrap_err();
        assert!(matches!(err, Error::Symlink { ref link, .. } if link.ends_with("link")), "{err}");
        assert!(resolve("file", root).is_err());
    }
}
