//! `brig agent ls|show|new|edit|rm|import|export`: list, read and manage the
//! profiles in the registry (built-ins plus the profile directory).
//!
//! This file holds the arguments, the question asked before an unexpected
//! removal, and what each subcommand prints; the decisions and the writes
//! are [`crate::profile::manage`]'s.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Write as _};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::print;
use crate::environment::Environment;
use crate::exit::Code;
use crate::json::Envelope;
use crate::profile::manage::{self, EditTarget, Removal, Written, json_document, with_guide, with_newline};
use crate::profile::{self, Origin, Registry};
use crate::warn::Warnings;

#[derive(Debug, clap::Subcommand)]
pub enum AgentCommand {
    /// List the agents: the built-ins and the profiles in the profile directory.
    Ls,
    /// Print a profile: the YAML as shipped or the file as written (--json:
    /// the parsed document).
    Show(ShowArgs),
    /// Create a file profile called NAME, starting from a copy of another agent.
    New(NewArgs),
    /// Open a profile in $VISUAL or $EDITOR, then check it (a built-in is
    /// exported to the profile directory first).
    Edit(EditArgs),
    /// Remove the file profile(s) declaring an agent; a built-in comes back
    /// into effect.
    Rm(RmArgs),
    /// Check a profile file and copy it into the profile directory.
    Import(ImportArgs),
    /// Print a profile with a guide to every field, or write it into the
    /// profile directory under a new name.
    Export(ExportArgs),
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Agent name or alias.
    pub agent: String,
}

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// Name of the new profile (also its file name).
    pub name: String,
    /// The agent to copy.
    #[arg(long, value_name = "AGENT")]
    pub from: String,
    /// Replace an existing profile of that name.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct EditArgs {
    /// Agent name or alias.
    pub agent: String,
}

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Agent name or alias.
    pub agent: String,
    /// Also remove, without asking, files that declare the agent under
    /// another file name.
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// A YAML or JSON profile; its `name:` decides which agent it is.
    pub file: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Agent name or alias.
    pub agent: String,
    /// Write the copy into the profile directory as NAME.yaml instead of
    /// printing it.
    pub name: Option<String>,
    /// Replace an existing profile of that name.
    #[arg(long)]
    pub force: bool,
}

pub fn run(command: AgentCommand, env: &Environment, json: bool) -> Result<Code, crate::Error> {
    let mut confirm = terminal_confirm;
    let mut ui = Ui { env, json, out: String::new(), warnings: Warnings::stderr(), confirm: &mut confirm };
    let result = dispatch(command, &mut ui);
    // What was done before a failure (files already removed) is still said.
    let printed = print(&ui.out);
    result.and_then(|()| printed.map(|()| Code::Success))
}

/// Everything a subcommand touches besides its arguments, so tests can run
/// the handlers with a scratch environment and a scripted answer.
struct Ui<'a> {
    env: &'a Environment,
    json: bool,
    out: String,
    warnings: Warnings,
    /// Ask a yes/no question; `None` when there is nobody to ask.
    confirm: &'a mut dyn FnMut(&str) -> Option<bool>,
}

fn terminal_confirm(question: &str) -> Option<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer).ok()?;
    Some(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

fn dispatch(command: AgentCommand, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    let registry = Registry::load(ui.env);
    for w in registry.warnings() {
        ui.warnings.push(w.clone());
    }
    match command {
        AgentCommand::Ls => ls(&registry, ui),
        AgentCommand::Show(args) => show(&registry, &args.agent, ui),
        AgentCommand::Export(args) => match args.name {
            None => export_print(&registry, &args.agent, ui),
            Some(name) => copy_to(&registry, &args.agent, &name, args.force, ui),
        },
        AgentCommand::New(args) => copy_to(&registry, &args.from, &args.name, args.force, ui),
        AgentCommand::Import(args) => import(&registry, &args.file, ui),
        AgentCommand::Rm(args) => rm(&registry, &args.agent, args.yes, ui),
        AgentCommand::Edit(args) => edit(&registry, &args.agent, ui),
    }
}

/// One row of `agent ls --json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentSummary<'a> {
    name: &'a str,
    aliases: Vec<&'static str>,
    kind: profile::Kind,
    desc: &'a str,
    image: &'a str,
    /// `built-in` or `file`.
    origin: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    overrides_builtin: bool,
    unpublished: bool,
}

fn ls(registry: &Registry, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    if ui.json {
        let rows: Vec<AgentSummary<'_>> = registry
            .entries()
            .iter()
            .map(|e| {
                let (origin, path, overrides_builtin) = match &e.origin {
                    Origin::Builtin => ("built-in", None, false),
                    Origin::File { path, overrides_builtin } => {
                        ("file", Some(path.display().to_string()), *overrides_builtin)
                    }
                };
                AgentSummary {
                    name: &e.profile.name,
                    aliases: registry.aliases_of(&e.profile.name),
                    kind: e.profile.kind,
                    desc: &e.profile.desc,
                    image: &e.profile.image,
                    origin,
                    path,
                    overrides_builtin,
                    unpublished: e.profile.unpublished,
                }
            })
            .collect();
        ui.out = format!("{}\n", Envelope::new("AgentList", rows).to_line());
        return Ok(());
    }
    let rows: Vec<[String; 4]> = registry
        .entries()
        .iter()
        .map(|e| {
            let mut desc = e.profile.desc.clone();
            let marks = [e.origin_mark(), e.profile.unpublished.then_some("(no published image)")];
            for mark in marks.into_iter().flatten() {
                if !desc.is_empty() {
                    desc.push(' ');
                }
                desc.push_str(mark);
            }
            [e.profile.name.clone(), registry.aliases_of(&e.profile.name).join(","), e.profile.kind.to_string(), desc]
        })
        .collect();
    ui.out = table(["NAME", "ALIAS", "KIND", "DESCRIPTION"], &rows);
    Ok(())
}

/// Left-aligned columns two spaces apart; the last column is not padded.
/// Cells are escaped: a profile file's text is anyone's.
fn table(header: [&str; 4], rows: &[[String; 4]]) -> String {
    let rows: Vec<[String; 4]> = rows.iter().map(|row| row.clone().map(|cell| crate::warn::escaped(&cell))).collect();
    let rows = rows.as_slice();
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = header.map(str::to_owned);
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn show(registry: &Registry, agent: &str, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    let entry = registry.resolve(agent)?;
    ui.out = if ui.json { json_document(&entry.profile) } else { with_newline(entry.text.clone()) };
    Ok(())
}

fn export_print(registry: &Registry, agent: &str, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    let entry = registry.resolve(agent)?;
    ui.out = if ui.json { json_document(&entry.profile) } else { with_guide(&entry.text) };
    Ok(())
}

fn copy_to(registry: &Registry, agent: &str, name: &str, force: bool, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    let written = manage::copy(registry, ui.env, agent, name, force)?;
    warn_competing(&written, ui);
    if ui.json {
        ui.out = json_document(&written.profile);
    } else {
        let from = written.copied_from.as_deref().unwrap_or_default();
        ui.out = format!("wrote {} ({name}, copied from {from})\n", written.path.display());
    }
    Ok(())
}

fn import(registry: &Registry, file: &Path, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    let written = manage::import(registry, ui.env, file)?;
    warn_competing(&written, ui);
    let note = if written.overrides_builtin { " (it overrides the built-in of that name)" } else { "" };
    ui.out = format!("imported {} as {}{note}\n", written.profile.name, written.path.display());
    Ok(())
}

fn warn_competing(written: &Written, ui: &mut Ui<'_>) {
    for other in &written.competing {
        ui.warnings.push(format!(
            "{} also declares the profile \"{}\"; of two such files the one whose name sorts later wins",
            other.display(),
            written.profile.name
        ));
    }
}

fn rm(registry: &Registry, agent: &str, yes: bool, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    let removal = Removal::plan(ui.env, registry, agent, yes, ui.confirm)?;
    let out = &mut ui.out;
    removal.apply(&mut |path| {
        let _ = writeln!(out, "removed {}", path.display());
    })?;
    if removal.builtin_returns {
        let _ = writeln!(ui.out, "the built-in {} is in effect again", removal.name);
    }
    Ok(())
}

fn edit(registry: &Registry, agent: &str, ui: &mut Ui<'_>) -> Result<(), crate::Error> {
    let target = EditTarget::prepare(registry, ui.env, agent)?;
    if target.copied_builtin {
        let _ = writeln!(ui.out, "copied the built-in {} to {}", target.name, target.path.display());
    }
    let edited = target.edit()?;
    if edited.name == target.name {
        let _ = writeln!(ui.out, "{} is valid", target.path.display());
    } else {
        let _ = writeln!(
            ui.out,
            "{} is valid; it now declares {} instead of {}",
            target.path.display(),
            edited.name,
            target.name
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{BUILTINS, Error, FIELD_GUIDE};
    use rstest::rstest;

    /// A scratch directory holding the profile directory (and whatever a
    /// test imports from), removed on drop.
    struct Scratch(tempfile::TempDir);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            Scratch(tempfile::Builder::new().prefix(&format!("brig-agent-{tag}-")).tempdir().unwrap())
        }

        fn root(&self) -> &Path {
            self.0.path()
        }

        fn profiles(&self) -> PathBuf {
            self.root().join("profiles")
        }

        fn write(&self, file: &str, text: &str) -> PathBuf {
            std::fs::create_dir_all(self.profiles()).unwrap();
            let path = self.profiles().join(file);
            std::fs::write(&path, text).unwrap();
            path
        }

        fn env(&self, extra: &[(&str, &str)]) -> Environment {
            let mut env = Environment::from_pairs([("BRIG_PROFILE_DIR", self.profiles().to_str().unwrap())]);
            for (k, v) in extra {
                env.set(*k, *v);
            }
            env
        }
    }

    fn doc(name: &str) -> String {
        format!("name: {name}\ndesc: d\nbinary: b\nimage: i\nguestHome: /root\nmem: 1\ncpus: 1\n")
    }

    /// Run one subcommand; `answer` is what the "terminal" says (None: no terminal).
    fn exec(
        env: &Environment,
        json: bool,
        answer: Option<bool>,
        command: AgentCommand,
    ) -> (Result<(), crate::Error>, String) {
        let mut confirm = move |_: &str| answer;
        let mut ui = Ui { env, json, out: String::new(), warnings: Warnings::collected(), confirm: &mut confirm };
        let result = dispatch(command, &mut ui);
        (result, ui.out)
    }

    fn profile_err(result: Result<(), crate::Error>) -> Error {
        match result {
            Err(crate::Error::Profile(e)) => e,
            other => panic!("expected a profile error, got {other:?}"),
        }
    }

    #[test]
    fn ls_marks_origins_and_aliases() {
        let s = Scratch::new("ls");
        s.write("a.yaml", &doc("mine"));
        s.write("b.yaml", &doc("codex"));
        let (r, out) = exec(&s.env(&[]), false, None, AgentCommand::Ls);
        r.unwrap();
        assert!(out.starts_with("NAME"), "{out}");
        let line = |n: &str| out.lines().find(|l| l.starts_with(&format!("{n} "))).unwrap().to_owned();
        assert!(line("mine").ends_with("d (file)"));
        assert!(line("codex").ends_with("d (file, overrides built-in)"));
        assert!(line("claude-code").contains(" claude "));
        assert!(line("cursor").ends_with("(no published image)"));
        assert_eq!(out.lines().count(), 10);
    }

    #[test]
    fn ls_json_is_an_agent_list_envelope() {
        let s = Scratch::new("lsjson");
        let (r, out) = exec(&s.env(&[]), true, None, AgentCommand::Ls);
        r.unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["apiVersion"], "brig.sh/v1alpha1");
        assert_eq!(v["kind"], "AgentList");
        assert_eq!(v["data"].as_array().unwrap().len(), 8);
        assert_eq!(v["data"][0]["name"], "claude-code");
        assert_eq!(v["data"][0]["aliases"][0], "claude");
        assert_eq!(v["data"][0]["origin"], "built-in");
    }

    #[test]
    fn show_prints_the_shipped_yaml_or_the_parsed_json() {
        let s = Scratch::new("show");
        let env = s.env(&[]);
        let (r, out) = exec(&env, false, None, AgentCommand::Show(ShowArgs { agent: "claude".into() }));
        r.unwrap();
        assert_eq!(out, BUILTINS[0].yaml);
        let (r, out) = exec(&env, true, None, AgentCommand::Show(ShowArgs { agent: "codex".into() }));
        r.unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["name"], "codex");
        assert_eq!(v["env"][0]["ref"], "env.GH_TOKEN");
    }

    #[test]
    fn show_unknown_agent_is_not_found() {
        let s = Scratch::new("unknown");
        let (r, _) = exec(&s.env(&[]), false, None, AgentCommand::Show(ShowArgs { agent: "nope".into() }));
        let err = crate::Error::from(profile_err(r));
        assert!(matches!(&err, crate::Error::Profile(Error::UnknownAgent { name }) if name == "nope"));
        assert_eq!(crate::exit::exit_code(&err), Code::NotFound);
        assert!(err.to_string().contains("brig agent ls"));
    }

    #[test]
    fn export_prints_the_guide_then_the_yaml() {
        let s = Scratch::new("export");
        let args = ExportArgs { agent: "ubuntu".into(), name: None, force: false };
        let (r, out) = exec(&s.env(&[]), false, None, AgentCommand::Export(args));
        r.unwrap();
        assert!(out.starts_with(FIELD_GUIDE) && out.ends_with(BUILTINS[7].yaml));
    }

    #[test]
    fn new_writes_a_renamed_copy_and_refuses_to_overwrite() {
        let s = Scratch::new("new");
        let env = s.env(&[]);
        let new = |force| AgentCommand::New(NewArgs { name: "mine".into(), from: "claude".into(), force });
        let (r, _) = exec(&env, false, None, new(false));
        r.unwrap();
        let path = s.profiles().join("mine.yaml");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.starts_with(FIELD_GUIDE) && written.contains("\nname: mine\n"));
        let reg = Registry::load(&env);
        assert_eq!(reg.resolve("mine").unwrap().profile.image, "ghcr.io/brig-sh/claude-code-stock:root");
        assert!(matches!(profile_err(exec(&env, false, None, new(false)).0), Error::Exists { .. }));
        exec(&env, false, None, new(true)).0.unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
    }

    #[rstest]
    #[case::slash("a/b", "slash")]
    #[case::alias("claude", "alias")]
    #[case::reserved_alias("desktop", "alias")]
    #[case::grammar("Mine", "bad")]
    fn export_refuses_bad_destinations(#[case] name: &str, #[case] want: &str) {
        let s = Scratch::new("dest");
        let args = ExportArgs { agent: "codex".into(), name: Some(name.into()), force: true };
        let got = match profile_err(exec(&s.env(&[]), false, None, AgentCommand::Export(args)).0) {
            Error::DestinationHasSlash { .. } => "slash",
            Error::DestinationIsAlias { .. } => "alias",
            Error::DestinationBadName { .. } => "bad",
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want);
    }

    #[test]
    fn export_of_a_json_profile_stays_json() {
        let s = Scratch::new("json");
        s.write("j.json", r#"{"name": "j", "binary": "b", "image": "i", "guestHome": "/root", "mem": 1, "cpus": 1}"#);
        let env = s.env(&[]);
        let args = ExportArgs { agent: "j".into(), name: Some("k".into()), force: false };
        exec(&env, false, None, AgentCommand::Export(args)).0.unwrap();
        assert!(s.profiles().join("k.json").exists());
        assert_eq!(Registry::load(&env).resolve("k").unwrap().profile.name, "k");
    }

    #[test]
    fn import_stores_bytes_verbatim_under_the_declared_name() {
        let s = Scratch::new("import");
        let env = s.env(&[]);
        s.write("codex.yaml", &doc("codex"));
        let src = s.root().join("anything.txt");
        let text = r#"  {"name": "codex", "desc": "json now", "binary": "b", "image": "i", "guestHome": "/root", "mem": 1, "cpus": 1}"#;
        std::fs::write(&src, text).unwrap();
        let (r, out) = exec(&env, false, None, AgentCommand::Import(ImportArgs { file: src }));
        r.unwrap();
        assert!(out.contains("overrides the built-in"), "{out}");
        assert_eq!(std::fs::read_to_string(s.profiles().join("codex.json")).unwrap(), text);
        assert!(!s.profiles().join("codex.yaml").exists());
    }

    #[rstest]
    #[case::invalid("name: x\nimage: i\n", "invalid")]
    #[case::unknown_field("name: x\nbogus: 1\n", "parse")]
    #[case::reserved(&doc("desktop"), "reserved")]
    fn import_refuses(#[case] text: &str, #[case] want: &str) {
        let s = Scratch::new("import-bad");
        let src = s.root().join("in.yaml");
        std::fs::write(&src, text).unwrap();
        let got = match profile_err(exec(&s.env(&[]), false, None, AgentCommand::Import(ImportArgs { file: src })).0) {
            Error::Invalid { .. } => "invalid",
            Error::Parse { .. } => "parse",
            Error::DestinationReserved { .. } => "reserved",
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want);
        assert!(!s.profiles().exists(), "nothing written");
    }

    #[test]
    fn import_of_a_missing_file_is_an_io_error() {
        let s = Scratch::new("import-missing");
        let (r, _) =
            exec(&s.env(&[]), false, None, AgentCommand::Import(ImportArgs { file: s.root().join("nope.yaml") }));
        assert!(matches!(r, Err(crate::Error::Io { action: "read", .. })), "{r:?}");
    }

    /// (files declaring the name, typed agent, -y, terminal answer) → outcome.
    #[rstest]
    #[case::builtin(&[], "codex", false, None, "builtin")]
    #[case::unknown(&[], "nope", false, None, "unknown")]
    #[case::named_file(&["mine.yaml"], "mine", false, None, "removed 1")]
    #[case::unnamed_without_terminal(&["mine.yaml", "other.yaml"], "mine", false, None, "needs confirmation")]
    #[case::unnamed_with_yes(&["mine.yaml", "other.yaml"], "mine", true, None, "removed 2")]
    #[case::unnamed_confirmed(&["other.yaml"], "mine", false, Some(true), "removed 1")]
    #[case::unnamed_declined(&["other.yaml"], "mine", false, Some(false), "declined")]
    #[case::alias_reaches_override(&["claude-code.yaml"], "claude", false, None, "removed 1")]
    fn rm_table(
        #[case] files: &[&str],
        #[case] agent: &str,
        #[case] yes: bool,
        #[case] answer: Option<bool>,
        #[case] want: &str,
    ) {
        let s = Scratch::new("rm");
        let declared = if agent == "claude" { "claude-code" } else { "mine" };
        for f in files {
            s.write(f, &doc(declared));
        }
        let (r, out) = exec(&s.env(&[]), false, answer, AgentCommand::Rm(RmArgs { agent: agent.into(), yes }));
        let got = match r {
            Ok(()) => format!("removed {}", out.lines().filter(|l| l.starts_with("removed")).count()),
            Err(crate::Error::Profile(Error::BuiltinNotRemovable { .. })) => "builtin".into(),
            Err(crate::Error::Profile(Error::UnknownAgent { .. })) => "unknown".into(),
            Err(crate::Error::Profile(Error::NeedsConfirmation { .. })) => "needs confirmation".into(),
            Err(crate::Error::Profile(Error::Declined)) => "declined".into(),
            Err(other) => panic!("{other:?}"),
        };
        assert_eq!(got, want);
        let left = files.iter().filter(|f| s.profiles().join(f).exists()).count();
        let removed_all = want.starts_with("removed");
        assert_eq!(left == 0, removed_all || files.is_empty(), "files left: {left}");
    }

    #[test]
    fn edit_exports_a_builtin_then_validates() {
        let s = Scratch::new("edit");
        let env = s.env(&[("VISUAL", "sed -i s/ChatGPT/edited/")]);
        let (r, out) = exec(&env, false, None, AgentCommand::Edit(EditArgs { agent: "codex".into() }));
        r.unwrap();
        assert!(out.contains("copied the built-in codex") && out.contains("is valid"), "{out}");
        let entry_desc = Registry::load(&env).resolve("codex").unwrap().profile.desc.clone();
        assert!(entry_desc.contains("edited"), "{entry_desc}");
    }

    #[test]
    fn edit_keeps_an_invalid_result() {
        let s = Scratch::new("edit-bad");
        let path = s.write("mine.yaml", &doc("mine"));
        let env = s.env(&[("EDITOR", "sed -i s/1$/0/")]);
        let err = profile_err(exec(&env, false, None, AgentCommand::Edit(EditArgs { agent: "mine".into() })).0);
        assert!(
            matches!(&err, Error::EditedInvalid { source, .. } if matches!(**source, Error::Invalid { .. })),
            "{err:?}"
        );
        assert!(std::fs::read_to_string(path).unwrap().contains("mem: 0"));
    }

    #[rstest]
    #[case::no_editor(&[], "none")]
    #[case::editor_fails(&[("VISUAL", "false")], "exit")]
    #[case::editor_missing(&[("VISUAL", "/nonexistent/editor")], "start")]
    fn edit_editor_problems(#[case] vars: &[(&str, &str)], #[case] want: &str) {
        let s = Scratch::new("edit-editor");
        s.write("mine.yaml", &doc("mine"));
        let got =
            match profile_err(exec(&s.env(vars), false, None, AgentCommand::Edit(EditArgs { agent: "mine".into() })).0)
            {
                Error::NoEditor => "none",
                Error::EditorExit { .. } => "exit",
                Error::EditorFailed { .. } => "start",
                other => panic!("{other:?}"),
            };
        assert_eq!(got, want);
    }

    #[test]
    fn table_aligns_columns() {
        let rows = [["a".to_owned(), "".to_owned(), "agent".to_owned(), "x".to_owned()]];
        assert_eq!(
            table(["NAME", "ALIAS", "KIND", "DESCRIPTION"], &rows),
            "NAME  ALIAS  KIND   DESCRIPTION\na            agent  x\n"
        );
    }
}
