//! `--skills` / `BRIG_SKILLS=1`: seed the guest home with the agent's host
//! configuration subdirectories (`hostConfigDir` + `projectPaths`), such as
//! claude-code's `~/.claude/skills` and `~/.claude/plugins`.
//!
//! The copy reads the host directory through handles and never follows a
//! symbolic link (a link inside it is skipped and reported), so nothing
//! outside the host config dir can be pulled into the guest; it writes
//! through the home's handle, so nothing outside the home can be written.
//! The host copy is never written.

use std::path::Path;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::Error;
use crate::environment::Environment;
use crate::profile::Profile;

/// Copy each `projectPaths` entry of `hostConfigDir` into the home, under
/// the config dir's own name (`~/.claude/skills` → `<home>/.claude/skills`).
/// Returns the warnings to show.
pub fn seed(env: &Environment, profile: &Profile, home: &Dir, home_path: &Path) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    let Some(config) = profile.host_config_dir.as_deref() else {
        warnings.push(format!("--skills: {} declares no hostConfigDir, so there is nothing to seed", profile.name));
        return Ok(warnings);
    };
    let host_dir = env.expand_tilde(config);
    let Some(base) = host_dir.file_name() else { return Ok(warnings) };
    let host = match Dir::open_ambient_dir(&host_dir, ambient_authority()) {
        Ok(dir) => dir,
        Err(_) => {
            warnings.push(format!("--skills: {} does not exist, so there is nothing to seed", host_dir.display()));
            return Ok(warnings);
        }
    };
    for sub in &profile.project_paths {
        let Ok(meta) = host.symlink_metadata(sub) else { continue };
        if meta.is_symlink() {
            warnings.push(format!("--skills: skipped {}, a symbolic link", host_dir.join(sub).display()));
            continue;
        }
        let target = profile.host_side(&Path::new(base).join(sub).to_string_lossy());
        home.create_dir_all(&target).map_err(|e| Error::io("create", home_path.join(&target), e))?;
        let from = host.open_dir(sub).map_err(|e| Error::io("open", host_dir.join(sub), e))?;
        let to = home.open_dir(&target).map_err(|e| Error::io("open", home_path.join(&target), e))?;
        copy_tree(&from, &to, &host_dir.join(sub), &mut warnings)?;
    }
    Ok(warnings)
}

fn copy_tree(from: &Dir, to: &Dir, shown: &Path, warnings: &mut Vec<String>) -> Result<(), Error> {
    for entry in from.entries().map_err(|e| Error::io("read", shown, e))? {
        let entry = entry.map_err(|e| Error::io("read", shown, e))?;
        let name = entry.file_name();
        let path = shown.join(&name);
        let kind = entry.file_type().map_err(|e| Error::io("inspect", &path, e))?;
        if kind.is_symlink() {
            warnings.push(format!("--skills: skipped {}, a symbolic link", path.display()));
        } else if kind.is_dir() {
            to.create_dir_all(&name).map_err(|e| Error::io("create", &path, e))?;
            let sub_from = from.open_dir(&name).map_err(|e| Error::io("open", &path, e))?;
            let sub_to = to.open_dir(&name).map_err(|e| Error::io("open", &path, e))?;
            copy_tree(&sub_from, &sub_to, &path, warnings)?;
        } else if kind.is_file() {
            // A link planted in the home where a file is due would redirect
            // the write; remove it first (remove_file never follows a link).
            if to.symlink_metadata(&name).is_ok_and(|m| m.is_symlink()) {
                to.remove_file(&name).map_err(|e| Error::io("replace", &path, e))?;
            }
            from.copy(&name, to, &name).map_err(|e| Error::io("copy", &path, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_files_and_skips_links_out() {
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path();
        let host = root.join("host/.claude");
        std::fs::create_dir_all(host.join("skills/one")).unwrap();
        std::fs::write(host.join("skills/one/SKILL.md"), "skill").unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("outside/secret"), "do not copy").unwrap();
        std::os::unix::fs::symlink(root.join("outside"), host.join("skills/escape")).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();

        let env = Environment::from_pairs([("HOME", root.join("host").to_str().unwrap())]);
        let mut profile = crate::profile::parse(
            "name: t\nkind: agent\nbinary: t\nimage: i\nguestHome: /root\nmem: 1\ncpus: 1\nhostConfigDir: ~/.claude\nprojectPaths: [skills]\n",
            "t.yaml",
        )
        .unwrap();
        profile.project_paths = vec!["skills".into()];
        let home = Dir::open_ambient_dir(root.join("home"), ambient_authority()).unwrap();
        let warnings = seed(&env, &profile, &home, &root.join("home")).unwrap();

        assert_eq!(std::fs::read_to_string(root.join("home/.claude/skills/one/SKILL.md")).unwrap(), "skill");
        assert!(!root.join("home/.claude/skills/escape").exists());
        assert!(warnings.iter().any(|w| w.contains("escape")), "{warnings:?}");
    }
}
