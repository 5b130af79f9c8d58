//! A snapshot of the process environment, and the host paths derived from it.
//!
//! Everything that reads a `BRIG_*` variable goes through an [`Environment`]
//! rather than `std::env`, so decision tables can be tested with a literal map
//! and brigd can hand its own snapshot to the engine.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// The current process's environment. Variables whose name or value is not
    /// UTF-8 are left out: no setting brig reads can be spelled that way.
    pub fn from_process() -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(k, v): (OsString, OsString)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        Environment { vars }
    }

    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Environment { vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect() }
    }

    /// A variable's value, with an empty value counted as unset: an exported
    /// but empty `BRIG_X=` never overrides anything.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// A variable's value even when empty; only the per-agent settings need
    /// to tell "set but empty" from "unset".
    pub fn get_raw(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// The user's home directory, from `HOME`.
    pub fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }

    /// `BRIG_STATE_DIR`, else `~/.brig`.
    pub fn state_dir(&self) -> Option<PathBuf> {
        match self.get("BRIG_STATE_DIR") {
            Some(dir) => Some(PathBuf::from(dir)),
            None => self.home().map(|h| h.join(".brig")),
        }
    }

    /// Where file profiles live: `BRIG_PROFILE_DIR`, then the deprecated
    /// `BRIG_TEMPLATE_DIR`, then `$XDG_CONFIG_HOME/brig` when that variable is
    /// absolute (XDG says to ignore a relative one), then `~/.config/brig`.
    pub fn profile_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = self.get("BRIG_PROFILE_DIR").or_else(|| self.get("BRIG_TEMPLATE_DIR")) {
            return Some(PathBuf::from(dir));
        }
        if let Some(xdg) = self.get("XDG_CONFIG_HOME").map(Path::new).filter(|p| p.is_absolute()) {
            return Some(xdg.join("brig"));
        }
        self.home().map(|h| h.join(".config").join("brig"))
    }

    /// Expand a leading `~` or `~/` against `HOME`; anything else is returned as is.
    pub fn expand_tilde(&self, path: &str) -> PathBuf {
        match (path.strip_prefix('~'), self.home()) {
            (Some(""), Some(home)) => home,
            (Some(rest), Some(home)) if rest.starts_with('/') => home.join(rest.trim_start_matches('/')),
            _ => PathBuf::from(path),
        }
    }

    /// The first executable file called `name` in the directories of `PATH`,
    /// searched in order: the one lookup for every binary brig finds by name
    /// (the runtime, a containerd shim). Empty `PATH` entries are skipped
    /// rather than read as the working directory, and a name holding a `/`
    /// is a path, not something to look up.
    pub fn find_on_path(&self, name: &str) -> Option<PathBuf> {
        if name.is_empty() || name.contains('/') {
            return None;
        }
        self.get("PATH")?
            .split(':')
            .filter(|dir| !dir.is_empty())
            .map(|dir| Path::new(dir).join(name))
            .find(|candidate| is_executable(candidate))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// A regular file (after following links) with an execute bit set.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(&[("HOME", "/h")], Some("/h/.config/brig"))]
    #[case(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")], Some("/x/brig"))]
    #[case(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")], Some("/h/.config/brig"))]
    #[case(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "")], Some("/h/.config/brig"))]
    #[case(&[("HOME", "/h"), ("BRIG_TEMPLATE_DIR", "/t")], Some("/t"))]
    #[case(&[("BRIG_PROFILE_DIR", "/p"), ("BRIG_TEMPLATE_DIR", "/t")], Some("/p"))]
    #[case(&[], None)]
    fn profile_dir_precedence(#[case] vars: &[(&str, &str)], #[case] want: Option<&str>) {
        let env = Environment::from_pairs(vars.iter().copied());
        assert_eq!(env.profile_dir(), want.map(PathBuf::from));
    }

    #[rstest]
    #[case(&[("HOME", "/h")], Some("/h/.brig"))]
    #[case(&[("HOME", "/h"), ("BRIG_STATE_DIR", "/s")], Some("/s"))]
    #[case(&[("HOME", "/h"), ("BRIG_STATE_DIR", "")], Some("/h/.brig"))]
    fn state_dir_precedence(#[case] vars: &[(&str, &str)], #[case] want: Option<&str>) {
        let env = Environment::from_pairs(vars.iter().copied());
        assert_eq!(env.state_dir(), want.map(PathBuf::from));
    }

    #[rstest]
    #[case("~", "/h")]
    #[case("~/bin/x", "/h/bin/x")]
    #[case("~other/x", "~other/x")]
    #[case("/abs", "/abs")]
    fn tilde(#[case] input: &str, #[case] want: &str) {
        let env = Environment::from_pairs([("HOME", "/h")]);
        assert_eq!(env.expand_tilde(input), PathBuf::from(want));
    }

    /// (files under the scratch directory with their mode, 0 for a
    /// directory; PATH as scratch-relative entries; the name) → the file found.
    #[rstest]
    #[case::first_directory_wins(&[("a/tool", 0o755), ("b/tool", 0o755)], "a:b", "tool", Some("a/tool"))]
    #[case::later_directory(&[("b/tool", 0o755)], "a:b", "tool", Some("b/tool"))]
    #[case::not_executable_is_passed_over(&[("a/tool", 0o644), ("b/tool", 0o700)], "a:b", "tool", Some("b/tool"))]
    #[case::directory_is_passed_over(&[("a/tool", 0), ("b/tool", 0o755)], "a:b", "tool", Some("b/tool"))]
    #[case::empty_entries_skipped(&[("b/tool", 0o755)], ":a::b:", "tool", Some("b/tool"))]
    #[case::nowhere(&[("a/other", 0o755)], "a", "tool", None)]
    #[case::name_with_slash(&[("a/sub/tool", 0o755)], "a", "sub/tool", None)]
    #[case::empty_name(&[("a/tool", 0o755)], "a", "", None)]
    #[case::no_path(&[("a/tool", 0o755)], "", "tool", None)]
    fn path_lookup(#[case] files: &[(&str, u32)], #[case] path: &str, #[case] name: &str, #[case] want: Option<&str>) {
        use std::os::unix::fs::PermissionsExt;
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path();
        for (file, mode) in files {
            let file = root.join(file);
            if *mode == 0 {
                std::fs::create_dir_all(&file).unwrap();
                continue;
            }
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        let entries: Vec<String> = path
            .split(':')
            .map(|e| if e.is_empty() { String::new() } else { root.join(e).display().to_string() })
            .collect();
        let env = Environment::from_pairs([("PATH", entries.join(":"))]);
        assert_eq!(env.find_on_path(name), want.map(|w| root.join(w)));
    }
}
