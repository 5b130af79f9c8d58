//! Managing the profile directory: the work behind `brig agent new`,
//! `export`, `import`, `edit` and `rm`, without the asking and printing.
//!
//! Each request is checked against the loaded [`Registry`] first (the agent
//! exists, the name is free, no sandbox still uses the profile, nothing is
//! lost unasked) and only then written through [`store`], so a refused
//! request leaves the directory as it was.

use std::path::{Path, PathBuf};

use super::{BUILTINS, Entry, Error, FIELD_GUIDE, Origin, Profile, Registry, parse, parse_bytes, split_name, store};
use crate::environment::Environment;

/// The profile directory, which every write needs.
pub fn dir(env: &Environment) -> Result<PathBuf, crate::Error> {
    env.profile_dir().ok_or(crate::Error::NoHome { what: "the profile directory", setting: "BRIG_PROFILE_DIR" })
}

/// A profile file just written.
#[derive(Debug)]
pub struct Written {
    pub path: PathBuf,
    pub profile: Profile,
    /// The agent it is a copy of (`new`, `export`); `None` for an import.
    pub copied_from: Option<String>,
    /// A built-in of the same name exists, and this file now replaces it.
    pub overrides_builtin: bool,
    /// Files with other names that still declare the same profile. They now
    /// compete with the one written, and the registry picks whichever file
    /// name sorts later, so the user has to hear about them.
    pub competing: Vec<PathBuf>,
}

impl Written {
    fn new(registry: &Registry, path: PathBuf, profile: Profile, copied_from: Option<String>) -> Written {
        let competing = registry
            .files_declaring(&profile.name)
            .into_iter()
            .filter(|other| *other != path && other.exists())
            .map(Path::to_path_buf)
            .collect();
        let overrides_builtin = is_builtin(&profile.name);
        Written { path, profile, copied_from, overrides_builtin, competing }
    }
}

fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|b| b.name == name)
}

/// `agent new <name> --from <agent>` and `agent export <agent> <name>`: a
/// copy of an agent, renamed, written into the profile directory. Without
/// `force`, a file that already holds or declares `name` is refused.
pub fn copy(
    registry: &Registry,
    env: &Environment,
    agent: &str,
    name: &str,
    force: bool,
) -> Result<Written, crate::Error> {
    let entry = registry.resolve(agent)?;
    registry.check_new_name(name)?;
    let dir = dir(env)?;
    if !force {
        let existing = store::same_stem_files(&dir, name)
            .into_iter()
            .chain(registry.files_declaring(name).into_iter().map(Path::to_path_buf))
            .next();
        if let Some(path) = existing {
            return Err(Error::Exists { path }.into());
        }
    }
    let (text, profile) = renamed(entry, name)?;
    let path = store::store(&dir, name, text.as_bytes())?;
    Ok(Written::new(registry, path, profile, Some(entry.profile.name.clone())))
}

/// `agent import <file>`: check a profile file and store its bytes verbatim
/// under the name it declares.
pub fn import(registry: &Registry, env: &Environment, file: &Path) -> Result<Written, crate::Error> {
    let bytes = std::fs::read(file).map_err(|e| crate::Error::io("read", file, e))?;
    let profile = parse_bytes(&bytes, &file.display().to_string())?;
    registry.check_reserved(&profile.name)?;
    let dir = dir(env)?;
    let path = store::store(&dir, &profile.name, &bytes)?;
    Ok(Written::new(registry, path, profile, None))
}

/// The entry's document with `name:` set to `name`, checked to parse as that
/// profile. YAML keeps its comments and layout (only the `name:` line
/// changes) and gains the field guide; JSON, and YAML whose name cannot be
/// found on a line of its own, are written out from the parsed document.
fn renamed(entry: &Entry, name: &str) -> Result<(String, Profile), Error> {
    let yaml_text = if is_json(&entry.text) {
        None
    } else if entry.profile.name == name {
        Some(with_guide(&entry.text))
    } else {
        replace_name_line(&entry.text, name).map(|t| with_guide(&t))
    };
    if let Some(text) = yaml_text
        && let Ok(profile) = parse(&text, name)
        && profile.name == name
    {
        return Ok((text, profile));
    }
    let mut profile = entry.profile.clone();
    profile.name = name.to_owned();
    let text = json_document(&profile);
    let profile = parse(&text, name)?;
    Ok((text, profile))
}

/// Replace the top-level `name:` line (a key at column 0).
fn replace_name_line(text: &str, name: &str) -> Option<String> {
    let mut found = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if !found && line.starts_with("name:") {
                found = true;
                format!("name: {name}")
            } else {
                line.to_owned()
            }
        })
        .collect();
    found.then(|| lines.join("\n") + "\n")
}

fn is_json(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// YAML gets the field guide on top (once); JSON cannot carry comments.
pub fn with_guide(text: &str) -> String {
    if is_json(text) || text.starts_with(FIELD_GUIDE) {
        with_newline(text.to_owned())
    } else {
        with_newline(format!("{FIELD_GUIDE}{text}"))
    }
}

pub fn with_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The parsed profile as pretty JSON, one trailing newline.
pub fn json_document(profile: &Profile) -> String {
    // Every field is a string, number, bool, list or string-keyed map.
    let text = serde_json::to_string_pretty(profile).expect("a profile always serializes to JSON");
    with_newline(text)
}

/// What `agent rm` removes, decided before anything is touched.
#[derive(Debug)]
pub struct Removal {
    /// The profile's name (an alias typed is resolved).
    pub name: String,
    pub files: Vec<PathBuf>,
    /// The built-in of that name comes back into effect once the files are gone.
    pub builtin_returns: bool,
}

impl Removal {
    /// Decide what removing `agent` takes. Refused: a profile a sandbox
    /// still uses, a built-in with no file to remove, an unknown agent. Files
    /// declaring the profile under a name the user did not type are removed
    /// only with `yes` or after `confirm` says yes; `confirm` answers `None`
    /// when there is nobody to ask.
    pub fn plan(
        env: &Environment,
        registry: &Registry,
        agent: &str,
        yes: bool,
        confirm: &mut dyn FnMut(&str) -> Option<bool>,
    ) -> Result<Removal, crate::Error> {
        if let Some(name) = registry.canonical_name(agent) {
            refuse_in_use(env, registry, name)?;
        }
        let unknown = || Error::UnknownAgent { name: agent.to_owned() };
        let name = registry.canonical_name(agent).ok_or_else(unknown)?.to_owned();
        let files = registry.files_declaring(&name);
        let builtin_returns = is_builtin(&name);
        if files.is_empty() {
            return Err(if builtin_returns { Error::BuiltinNotRemovable { name } } else { unknown() }.into());
        }
        // The name typed (or the alias's target) names `<it>.yaml` and friends;
        // any other file declaring the profile is one the user may not expect
        // to lose.
        let unnamed: Vec<&Path> =
            files.iter().copied().filter(|p| !file_stem(p).is_some_and(|s| s == agent || s == name)).collect();
        if !unnamed.is_empty() && !yes {
            let list: Vec<String> = unnamed.iter().map(|p| p.display().to_string()).collect();
            let question = format!("{name} is also declared by {}; remove those too?", list.join(", "));
            match confirm(&question) {
                Some(true) => {}
                Some(false) => return Err(Error::Declined.into()),
                None => return Err(Error::NeedsConfirmation { name, count: unnamed.len() }.into()),
            }
        }
        let files = files.into_iter().map(Path::to_path_buf).collect();
        Ok(Removal { name, files, builtin_returns })
    }

    /// Remove the files in order, reporting each one gone as it goes, so a
    /// failure part way still leaves the earlier removals said.
    pub fn apply(&self, removed: &mut dyn FnMut(&Path)) -> Result<(), Error> {
        for path in &self.files {
            store::remove(path)?;
            removed(path);
        }
        Ok(())
    }
}

fn file_stem(path: &Path) -> Option<&str> {
    split_name(path).map(|(stem, _)| stem)
}

/// A profile must not be removed from under a sandbox that still uses it.
/// With no runtime installed no sandbox can exist; a runtime that cannot be
/// asked is an error, since "no sandbox" cannot be told from "unknown".
fn refuse_in_use(env: &Environment, registry: &Registry, name: &str) -> Result<(), crate::Error> {
    let resolved = match crate::runtime::resolve(env, None) {
        Ok(resolved) => resolved,
        Err(crate::runtime::Error::NoneFound) => return Ok(()),
        Err(err) => return Err(err.into()),
    };
    let names: Vec<String> = registry.entries().iter().map(|e| e.profile.name.clone()).collect();
    let sandboxes: Vec<String> = crate::runtime::open(&resolved, env, None)?
        .list()?
        .into_iter()
        .filter(|l| {
            let agent = l
                .labels
                .get(crate::runtime::adapter::label::AGENT)
                .cloned()
                .or_else(|| crate::session::reference::parse_sandbox_name(&l.name, &names).map(|(agent, _)| agent));
            agent.as_deref() == Some(name)
        })
        .map(|l| l.name)
        .collect();
    if sandboxes.is_empty() { Ok(()) } else { Err(Error::InUse { name: name.to_owned(), sandboxes }.into()) }
}

/// The file `agent edit` opens, and the editor that opens it.
#[derive(Debug)]
pub struct EditTarget {
    /// The profile's name (an alias typed is resolved).
    pub name: String,
    /// `VISUAL`, else `EDITOR`: the user's own command line.
    pub editor: String,
    pub path: PathBuf,
    /// A built-in had no file, so one was written to edit.
    pub copied_builtin: bool,
}

impl EditTarget {
    /// Find the file for `agent`, writing a built-in out to the profile
    /// directory first when it has none. Nothing is written without an
    /// editor to open it.
    pub fn prepare(registry: &Registry, env: &Environment, agent: &str) -> Result<EditTarget, crate::Error> {
        let entry = registry.resolve(agent)?;
        let name = entry.profile.name.clone();
        let editor = env.get("VISUAL").or_else(|| env.get("EDITOR")).ok_or(Error::NoEditor)?.to_owned();
        let (path, copied_builtin) = match &entry.origin {
            Origin::File { path, .. } => (path.clone(), false),
            Origin::Builtin => {
                let dir = dir(env)?;
                // A file of that name that failed to load is what the user wants
                // to fix; opening it beats overwriting it with the built-in.
                match store::same_stem_files(&dir, &name).into_iter().next() {
                    Some(existing) => (existing, false),
                    None => {
                        let (text, _) = renamed(entry, &name)?;
                        (store::write_atomic(&dir, &format!("{name}.yaml"), text.as_bytes())?, true)
                    }
                }
            }
        };
        Ok(EditTarget { name, editor, path, copied_builtin })
    }

    /// Open the file in the editor, on the user's terminal, then check what
    /// the edit left. An unusable result is kept as it is, for the user to
    /// open again; the previous state is not restored behind their back.
    pub fn edit(&self) -> Result<Profile, crate::Error> {
        // The editor value is the user's own command line (`code --wait`), so
        // it is split into words the way a shell would for a simple command.
        let mut words = self.editor.split_whitespace();
        let program = words.next().ok_or(Error::NoEditor)?;
        let status = crate::process::Command::new(program)
            .args(words)
            .path_arg(&self.path)
            .interactive()
            .map_err(|source| Error::EditorFailed { editor: self.editor.clone(), source })?;
        if !status.success() {
            return Err(Error::EditorExit { editor: self.editor.clone(), status }.into());
        }
        let bytes = std::fs::read(&self.path).map_err(|e| crate::Error::io("read", &self.path, e))?;
        parse_bytes(&bytes, &self.path.display().to_string())
            .map_err(|source| Error::EditedInvalid { path: self.path.clone(), source: Box::new(source) }.into())
    }
}

#[cfg(test)]
mod tests {
    use super::super::registry::tests::{Scratch, doc};
    use super::*;

    fn env_for(s: &Scratch) -> Environment {
        Environment::from_pairs([("BRIG_PROFILE_DIR", s.path().to_str().unwrap())])
    }

    #[test]
    fn a_yaml_copy_changes_only_the_name_line_and_gains_the_guide() {
        let s = Scratch::new("manage-rename");
        s.write("src.yaml", &format!("# mine, with a comment\n{}", doc("src", "d")));
        let env = env_for(&s);
        let written = copy(&Registry::load(&env), &env, "src", "dst", false).unwrap();
        let text = std::fs::read_to_string(&written.path).unwrap();
        assert_eq!(text, format!("{FIELD_GUIDE}# mine, with a comment\n{}", doc("dst", "d")));
        assert_eq!((written.profile.name.as_str(), written.copied_from.as_deref()), ("dst", Some("src")));
    }

    #[test]
    fn a_refused_copy_writes_nothing() {
        let s = Scratch::new("manage-refused");
        s.write("dst.yml", &doc("other", "d"));
        let env = env_for(&s);
        let err = copy(&Registry::load(&env), &env, "codex", "dst", false).unwrap_err();
        assert!(matches!(&err, crate::Error::Profile(Error::Exists { path }) if path.ends_with("dst.yml")), "{err:?}");
        assert!(!s.path().join("dst.yaml").exists());
    }

    #[test]
    fn an_import_names_the_files_that_still_compete() {
        let s = Scratch::new("manage-competing");
        let other = s.write("zz-other.yaml", &doc("mine", "older"));
        let src = s.path().join("incoming.txt");
        std::fs::write(&src, doc("mine", "newer")).unwrap();
        let env = env_for(&s);
        let written = import(&Registry::load(&env), &env, &src).unwrap();
        assert_eq!(written.path, s.path().join("mine.yaml"));
        assert_eq!(written.competing, [other]);
        assert!(!written.overrides_builtin);
    }

    #[test]
    fn a_removal_plan_touches_nothing_until_applied() {
        let s = Scratch::new("manage-rm");
        let named = s.write("mine.yaml", &doc("mine", "d"));
        let unnamed = s.write("other.yaml", &doc("mine", "d"));
        let env = env_for(&s);
        let registry = Registry::load(&env);
        let mut asked = Vec::new();
        let mut confirm = |q: &str| {
            asked.push(q.to_owned());
            Some(true)
        };
        let plan = Removal::plan(&env, &registry, "mine", false, &mut confirm).unwrap();
        assert_eq!(asked.len(), 1, "one question for the file not named");
        assert!(asked[0].contains("other.yaml"), "{}", asked[0]);
        assert!(named.exists() && unnamed.exists(), "planning removed nothing");
        let mut removed = Vec::new();
        plan.apply(&mut |p| removed.push(p.to_path_buf())).unwrap();
        assert_eq!(removed, [named.clone(), unnamed.clone()]);
        assert!(!named.exists() && !unnamed.exists());
        assert!(!plan.builtin_returns);
    }

    #[test]
    fn editing_without_an_editor_writes_no_copy_of_a_builtin() {
        let s = Scratch::new("manage-edit");
        let env = env_for(&s);
        let err = EditTarget::prepare(&Registry::load(&env), &env, "codex").unwrap_err();
        assert!(matches!(err, crate::Error::Profile(Error::NoEditor)), "{err:?}");
        assert_eq!(std::fs::read_dir(s.path()).unwrap().count(), 0);
    }
}
