//! The profile registry: built-ins first, then file profiles overriding them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::builtin::{ALIASES, BUILTINS};
use super::{Error, Profile, parse_bytes};
use crate::environment::Environment;
use crate::error::chain;

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
    /// The document as it was read: the shipped YAML for a built-in, the
    /// file's text for a file. `agent show` prints it unchanged.
    pub text: String,
}

impl Entry {
    pub fn is_builtin(&self) -> bool {
        self.origin == Origin::Builtin
    }

    /// `(file)` or `(file, overrides built-in)`; nothing for a built-in.
    pub fn origin_mark(&self) -> Option<&'static str> {
        match self.origin {
            Origin::Builtin => None,
            Origin::File { overrides_builtin: false, .. } => Some("(file)"),
            Origin::File { overrides_builtin: true, .. } => Some("(file, overrides built-in)"),
        }
    }
}

/// File extensions read from the profile directory.
pub const EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

#[derive(Debug, Default)]
pub struct Registry {
    /// Sorted by name.
    entries: Vec<Entry>,
    warnings: Vec<String>,
    /// Every usable file and the name it declares, winners and losers alike:
    /// `agent rm` removes them all.
    declarations: Vec<(String, PathBuf)>,
    dir: Option<PathBuf>,
}

impl Registry {
    /// Load the built-ins and the profile directory. Never fails: an unusable
    /// file is reported in [`Registry::warnings`] and skipped.
    pub fn load(env: &Environment) -> Registry {
        Registry::load_from(env.profile_dir().as_deref())
    }

    /// Load the built-ins and, when given, one profile directory.
    pub fn load_from(dir: Option<&Path>) -> Registry {
        let mut by_name: BTreeMap<String, Entry> = BTreeMap::new();
        let mut registry = Registry { dir: dir.map(Path::to_path_buf), ..Registry::default() };
        for b in BUILTINS {
            // The built-ins are checked by a unit test; should one still fail
            // it is reported like a broken file rather than taking brig down.
            match parse_bytes(b.yaml.as_bytes(), &format!("built-in {}", b.name)) {
                Ok(profile) => {
                    by_name.insert(
                        profile.name.clone(),
                        Entry { profile, origin: Origin::Builtin, text: b.yaml.to_owned() },
                    );
                }
                Err(e) => registry.warnings.push(chain(&e)),
            }
        }
        if let Some(dir) = dir {
            registry.read_dir(dir, &mut by_name);
        }
        registry.entries = by_name.into_values().collect();
        registry
    }

    fn read_dir(&mut self, dir: &Path, by_name: &mut BTreeMap<String, Entry>) {
        let files = match profile_files(dir) {
            Ok(files) => files,
            // No directory yet is the normal state of a fresh install.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.warnings.push(format!(
                    "cannot read the profile directory {}: {e}; using the built-in agents only",
                    dir.display()
                ));
                return;
            }
        };
        let mut unusable = Vec::new();
        // Which file declared each name, to report two files claiming one.
        let mut claimed: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in files {
            let label = path.display().to_string();
            let parsed = std::fs::read(&path).map_err(|e| format!("{label}: {e}")).and_then(|bytes| {
                let profile = parse_bytes(&bytes, &label).map_err(|e| chain(&e))?;
                // parse_bytes has checked UTF-8 already.
                Ok((profile, String::from_utf8_lossy(&bytes).into_owned()))
            });
            let (profile, text) = match parsed {
                Ok(ok) => ok,
                Err(line) => {
                    unusable.push(line);
                    continue;
                }
            };
            let name = profile.name.clone();
            if let Some(earlier) = claimed.insert(name.clone(), path.clone()) {
                self.warnings.push(format!(
                    "{} and {} in {} both declare the profile \"{name}\"; {} wins",
                    file_name(&earlier),
                    file_name(&path),
                    dir.display(),
                    file_name(&path),
                ));
            }
            let overrides_builtin = BUILTINS.iter().any(|b| b.name == name);
            self.declarations.push((name.clone(), path.clone()));
            by_name.insert(name, Entry { profile, origin: Origin::File { path, overrides_builtin }, text });
        }
        // One warning per file: warnings are printed with control
        // characters escaped, so a warning cannot span lines.
        for line in unusable {
            self.warnings.push(format!("ignoring an unusable profile: {line}"));
        }
    }

    /// Exact profile name first, then the alias table (`claude`, `desktop`).
    pub fn resolve(&self, name: &str) -> Result<&Entry, Error> {
        self.canonical_name(name)
            .and_then(|canonical| self.get(canonical))
            .ok_or_else(|| Error::UnknownAgent { name: name.to_owned() })
    }

    /// The registry name a typed name stands for, if any.
    pub fn canonical_name(&self, typed: &str) -> Option<&str> {
        if let Some(entry) = self.get(typed) {
            return Some(&entry.profile.name);
        }
        let (_, target) = ALIASES.iter().find(|(alias, _)| *alias == typed)?;
        self.get(target).map(|e| e.profile.name.as_str())
    }

    /// The aliases that lead to `name` (an alias shadowed by a profile of
    /// the same name leads nowhere).
    pub fn aliases_of(&self, name: &str) -> Vec<&'static str> {
        ALIASES
            .iter()
            .filter(|(alias, target)| *target == name && self.get(alias).is_none())
            .map(|(alias, _)| *alias)
            .collect()
    }

    fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.profile.name == name)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Lines to print as warnings (unusable files, duplicate declarations).
    /// One warning may span lines; continuation lines are indented notes.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The profile directory this registry read, if one is known.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Every usable file in the profile directory that declares `name`,
    /// in load order.
    pub fn files_declaring(&self, name: &str) -> Vec<&Path> {
        self.declarations.iter().filter(|(n, _)| n == name).map(|(_, p)| p.as_path()).collect()
    }

    /// Refuse a name for a new file profile (`agent new`, `agent export`)
    /// that could not be told apart from an alias or a reserved name.
    pub fn check_new_name(&self, name: &str) -> Result<(), Error> {
        if name.contains('/') {
            return Err(Error::DestinationHasSlash { name: name.to_owned() });
        }
        if !super::validate::is_profile_name(name) {
            return Err(Error::DestinationBadName { name: name.to_owned() });
        }
        if let Some((_, target)) = ALIASES.iter().find(|(alias, _)| *alias == name)
            && self.get(name).is_none()
            && self.get(target).is_some()
        {
            return Err(Error::DestinationIsAlias { name: name.to_owned(), target: (*target).to_owned() });
        }
        self.check_reserved(name)
    }

    /// Refuse a name that a reserved profile keeps for itself (other than
    /// that profile's own name, which may be overridden).
    pub fn check_reserved(&self, name: &str) -> Result<(), Error> {
        for entry in &self.entries {
            let p = &entry.profile;
            if p.name != name && p.reserved_names().contains(&name) {
                return Err(Error::DestinationReserved { name: name.to_owned(), by: p.name.clone() });
            }
        }
        Ok(())
    }
}

/// The registry is what the session module resolves typed agent names
/// against; the trait keeps that module free of profile loading.
impl crate::session::Agents for Registry {
    fn canonical(&self, typed: &str) -> Option<String> {
        self.resolve(typed).ok().map(|e| e.profile.name.clone())
    }

    fn names(&self) -> Vec<String> {
        self.entries().iter().map(|e| e.profile.name.clone()).collect()
    }
}

/// Profile files in `dir`, sorted by file name: flat (subdirectories are not
/// read), the three extensions, without `config.*`, which holds settings.
pub fn profile_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some((stem, ext)) = split_name(&path) else { continue };
        if stem == "config" || !EXTENSIONS.contains(&ext) || stem.starts_with('.') {
            continue;
        }
        // Follows symlinks on purpose: a profile linked in from a dotfiles
        // repository is an ordinary profile.
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// `(stem, extension)` of a UTF-8 file name.
pub fn split_name(path: &Path) -> Option<(&str, &str)> {
    path.file_name()?.to_str()?.rsplit_once('.')
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rstest::rstest;

    /// A scratch directory under the system temp dir, removed on drop.
    pub(crate) struct Scratch(tempfile::TempDir);

    impl Scratch {
        pub(crate) fn new(tag: &str) -> Scratch {
            Scratch(tempfile::Builder::new().prefix(&format!("brig-test-{tag}-")).tempdir().unwrap())
        }

        pub(crate) fn path(&self) -> &Path {
            self.0.path()
        }

        pub(crate) fn write(&self, file: &str, text: &str) -> PathBuf {
            let path = self.path().join(file);
            std::fs::write(&path, text).unwrap();
            path
        }
    }

    pub(crate) fn doc(name: &str, desc: &str) -> String {
        format!("name: {name}\ndesc: {desc}\nbinary: b\nimage: i\nguestHome: /root\nmem: 1\ncpus: 1\n")
    }

    #[test]
    fn builtins_only_without_a_directory() {
        let r = Registry::load_from(None);
        assert_eq!(r.entries().len(), 8);
        assert!(r.warnings().is_empty());
        assert!(r.entries().iter().all(Entry::is_builtin));
    }

    #[test]
    fn missing_directory_is_quiet() {
        let s = Scratch::new("missing");
        let r = Registry::load_from(Some(&s.path().join("nope")));
        assert_eq!(r.entries().len(), 8);
        assert!(r.warnings().is_empty());
    }

    #[test]
    fn environment_chooses_the_directory() {
        let s = Scratch::new("env");
        s.write("x.yaml", &doc("x", "from env"));
        let env = Environment::from_pairs([("BRIG_PROFILE_DIR", s.path().to_str().unwrap())]);
        let r = Registry::load(&env);
        assert_eq!(r.resolve("x").unwrap().profile.desc, "from env");
        assert_eq!(r.dir(), Some(s.path()));
    }

    /// (files in the directory, typed name) → (winning desc, origin mark).
    #[rstest]
    #[case::file_only(&[("mine.yaml", "mine", "m")], "mine", Some(("m", Some("(file)"))))]
    #[case::overrides_builtin(&[("x.yaml", "codex", "mine")], "codex", Some(("mine", Some("(file, overrides built-in)"))))]
    #[case::file_name_does_not_matter(&[("zzz.yml", "gemini", "g")], "gemini", Some(("g", Some("(file, overrides built-in)"))))]
    #[case::json(&[("j.json", "j", "from json")], "j", Some(("from json", Some("(file)"))))]
    #[case::later_sorting_wins(&[("b.yaml", "dup", "second"), ("a.yaml", "dup", "first")], "dup", Some(("second", Some("(file)"))))]
    #[case::alias(&[], "claude", Some(("", None)))]
    #[case::exact_name_beats_alias(&[("c.yaml", "claude", "mine")], "claude", Some(("mine", Some("(file)"))))]
    #[case::alias_follows_override(&[("d.yaml", "claude-desktop", "over")], "desktop", Some(("over", Some("(file, overrides built-in)"))))]
    #[case::config_skipped(&[("config.yaml", "cfg", "c")], "cfg", None)]
    #[case::other_extension_skipped(&[("x.txt", "txt", "t")], "txt", None)]
    #[case::unknown(&[], "nope", None)]
    fn precedence(
        #[case] files: &[(&str, &str, &str)],
        #[case] typed: &str,
        #[case] want: Option<(&str, Option<&str>)>,
    ) {
        let s = Scratch::new("precedence");
        for (file, name, desc) in files {
            let text = if file.ends_with(".json") {
                format!(
                    r#"{{"name": "{name}", "desc": "{desc}", "binary": "b", "image": "i", "guestHome": "/root", "mem": 1, "cpus": 1}}"#
                )
            } else {
                doc(name, desc)
            };
            s.write(file, &text);
        }
        let r = Registry::load_from(Some(s.path()));
        match (r.resolve(typed), want) {
            (Ok(entry), Some((desc, mark))) => {
                if !desc.is_empty() {
                    assert_eq!(entry.profile.desc, desc);
                }
                assert_eq!(entry.origin_mark(), mark);
            }
            (Err(Error::UnknownAgent { name }), None) => assert_eq!(name, typed),
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn duplicate_declaration_warns_naming_both_files() {
        let s = Scratch::new("dup");
        s.write("a.yaml", &doc("dup", "first"));
        s.write("b.yaml", &doc("dup", "second"));
        let r = Registry::load_from(Some(s.path()));
        assert_eq!(r.warnings().len(), 1);
        let w = &r.warnings()[0];
        assert!(w.contains("a.yaml") && w.contains("b.yaml") && w.ends_with("b.yaml wins"), "{w}");
        assert_eq!(r.files_declaring("dup").len(), 2);
    }

    #[test]
    fn unusable_files_are_skipped_and_listed() {
        let s = Scratch::new("unusable");
        s.write("bad.yaml", "name: codex\nnope: 1\n");
        s.write("worse.json", "{");
        s.write("ok.yaml", &doc("ok", "fine"));
        let r = Registry::load_from(Some(s.path()));
        let [bad, worse] = r.warnings() else { panic!("one warning per file: {:?}", r.warnings()) };
        for w in [bad, worse] {
            assert!(w.starts_with("ignoring an unusable profile: "), "{w}");
            assert!(!w.contains('\n'), "{w}");
        }
        assert!(bad.contains("bad.yaml") && bad.contains("nope"), "{bad}");
        assert!(worse.contains("worse.json"), "{worse}");
        assert!(r.resolve("ok").is_ok());
        // The built-in of the broken file's name stays in effect.
        assert!(r.resolve("codex").unwrap().is_builtin());
    }

    #[test]
    fn subdirectories_are_not_read() {
        let s = Scratch::new("flat");
        std::fs::create_dir(s.path().join("sub")).unwrap();
        s.write("sub/deep.yaml", &doc("deep", "d"));
        let r = Registry::load_from(Some(s.path()));
        assert!(matches!(r.resolve("deep"), Err(Error::UnknownAgent { .. })));
    }

    #[rstest]
    #[case::fine("mine", None)]
    #[case::override_ok("claude-code", None)]
    #[case::alias("claude", Some("alias"))]
    #[case::alias_desktop("desktop", Some("alias"))]
    #[case::slash("a/b", Some("slash"))]
    #[case::bad("Mine", Some("bad"))]
    fn new_names(#[case] name: &str, #[case] want: Option<&str>) {
        let r = Registry::load_from(None);
        let got = match r.check_new_name(name) {
            Ok(()) => None,
            Err(Error::DestinationIsAlias { .. }) => Some("alias"),
            Err(Error::DestinationHasSlash { .. }) => Some("slash"),
            Err(Error::DestinationBadName { .. }) => Some("bad"),
            Err(Error::DestinationReserved { .. }) => Some("reserved"),
            Err(other) => panic!("{other:?}"),
        };
        assert_eq!(got, want);
    }

    #[test]
    fn reserved_word_is_refused() {
        let r = Registry::load_from(None);
        assert!(matches!(
            r.check_reserved("desktop"),
            Err(Error::DestinationReserved { by, .. }) if by == "claude-desktop"
        ));
        assert!(r.check_reserved("claude-desktop").is_ok());
    }

    #[test]
    fn shadowed_alias_is_not_listed() {
        let s = Scratch::new("alias");
        assert_eq!(Registry::load_from(None).aliases_of("claude-code"), ["claude"]);
        s.write("c.yaml", &doc("claude", "mine"));
        let r = Registry::load_from(Some(s.path()));
        assert!(r.aliases_of("claude-code").is_empty());
        assert!(r.check_new_name("claude").is_ok());
    }
}
