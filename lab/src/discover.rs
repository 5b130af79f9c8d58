//! Finding scenario files and turning them into named trials.
//!
//! Scenarios live at `scenarios/<family>/<scenario>.yaml`; a trial is named
//! `<runtime>::<family>::<scenario>[::<row>]`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::placeholder::Vars;
use crate::scenario::{RuntimeName, Scenario, StepKind};
use crate::trial::{TrialSpec, guest_call};

/// One scenario file, parsed or not.
#[derive(Debug)]
pub struct Found {
    pub family: String,
    pub name: String,
    pub path: PathBuf,
    pub parsed: Result<Arc<Scenario>, String>,
}

/// Every `*.yaml` one level below `root`, in name order.
///
/// # Panics
///
/// When there is none: a runner that finds no cases must not report success
/// (a mistyped directory would otherwise pass).
pub fn scenarios(root: &Path) -> Vec<Found> {
    let found = scan(root).unwrap_or_else(|err| panic!("cannot read scenarios: {err:#}"));
    assert!(!found.is_empty(), "no scenarios found under {} (expected <family>/<scenario>.yaml)", root.display());
    found
}

fn scan(root: &Path) -> Result<Vec<Found>> {
    let mut families: Vec<PathBuf> = std::fs::read_dir(root)
        .with_context(|| format!("listing {}", root.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    families.retain(|p| p.is_dir());
    families.sort();
    let mut found = Vec::new();
    for dir in families {
        let family = file_name(&dir);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?;
        files.retain(|p| p.extension().is_some_and(|e| e == "yaml") && p.is_file());
        files.sort();
        for path in files {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let parsed = load(&path).map(Arc::new).map_err(|e| format!("{e:#}"));
            found.push(Found { family: family.clone(), name, path, parsed });
        }
    }
    Ok(found)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Parses one scenario file and checks its placeholders.
pub fn load(path: &Path) -> Result<Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let scenario = Scenario::parse(&text).with_context(|| format!("parsing {}", path.display()))?;
    check_placeholders(&scenario).with_context(|| format!("checking {}", path.display()))?;
    Ok(scenario)
}

/// Expands every string of every trial the scenario yields with stand-in
/// values, so an unknown placeholder is reported before anything runs.
pub fn check_placeholders(scenario: &Scenario) -> Result<()> {
    let mut base = Vars::new();
    for name in [
        "t", "scratch", "state", "home", "profiles", "runtime", "socket", "brig", "brigd", "sampler", "fixtures",
        "run-dir", "uid", "nft",
    ] {
        base.set(name, format!("x{name}"));
    }
    // Only a scenario that needs a registry has one.
    if scenario.needs.contains(&crate::scenario::Need::Registry) {
        base.set("registry", "xregistry");
    }
    // Known only once a daemon has started; a step that uses it before then
    // fails with the unknown placeholder named.
    base.set(crate::trial::BRIGD_PID, "1");
    let rows: Vec<Option<&str>> = match scenario.table() {
        Some(table) => table.rows.keys().map(|k| Some(k.as_str())).collect(),
        None => vec![None],
    };
    for row in rows {
        for (i, (step, vars)) in scenario.flatten(row).into_iter().enumerate() {
            let vars = base.with_row(vars)?;
            check_step(step, &vars).with_context(|| match row {
                Some(r) => format!("row {r}, step {}", i + 1),
                None => format!("step {}", i + 1),
            })?;
        }
    }
    Ok(())
}

fn check_step(step: &crate::scenario::Step, vars: &Vars) -> Result<()> {
    use crate::scenario::{BrigdStep, HostOp};
    match step.kind()? {
        StepKind::Brig(argv) | StepKind::Runtime(argv) => {
            vars.expand_all(argv)?;
        }
        StepKind::Brigd(BrigdStep::Run(argv)) => {
            vars.expand_all(argv)?;
        }
        StepKind::Shell(line) => {
            vars.expand(line)?;
        }
        StepKind::Brigd(BrigdStep::Start(start)) => {
            if let Some(socket) = &start.socket {
                vars.expand(socket)?;
            }
            if let Some(args) = &start.args {
                vars.expand_all(args)?;
            }
        }
        StepKind::Brigd(BrigdStep::Stop(_) | BrigdStep::Kill(_)) => {}
        StepKind::Request(request) => {
            vars.expand_all(&request.lines)?;
            if let Some(socket) = &request.socket {
                vars.expand(socket)?;
            }
            vars.expand_all(&request.expect.identical)?;
            for json in request.expect.responses.iter().flatten() {
                check_json(json, vars)?;
            }
        }
        StepKind::Guest(guest) => {
            guest_call(guest, vars)?;
        }
        StepKind::Host(op) => match op {
            HostOp::Mkdir(p)
            | HostOp::Rm(p)
            | HostOp::RootOwn(p)
            | HostOp::Exists(p)
            | HostOp::Absent(p)
            | HostOp::IsDir(p)
            | HostOp::IsSymlink(p) => {
                vars.expand(p)?;
            }
            HostOp::Write(w) => {
                vars.expand(&w.path)?;
                vars.expand(&w.content)?;
            }
            HostOp::Symlink(s) => {
                vars.expand(&s.link)?;
                vars.expand(&s.target)?;
            }
            HostOp::Chmod(m) | HostOp::Mode(m) => {
                vars.expand(&m.path)?;
            }
            HostOp::Contains(c) => {
                vars.expand(&c.path)?;
                vars.expand(&c.text)?;
            }
        },
        StepKind::Table(_) | StepKind::Sleep(_) => {}
    }
    for (name, value) in &step.env {
        vars.expand(name)?;
        vars.expand(value)?;
    }
    if let Some(stdin) = &step.stdin {
        vars.expand(stdin)?;
    }
    if let Some(expect) = &step.expect {
        if let Some(crate::scenario::ExitExpect::Word(w)) = &expect.exit {
            vars.expand(w)?;
        }
        for text in [&expect.stdout, &expect.stderr].into_iter().flatten() {
            for s in text.contains.iter().chain(&text.not_contains) {
                vars.expand(s)?;
            }
            for re in text.regex.iter().chain(text.count.as_ref().map(|c| &c.pattern)) {
                let pattern = vars.expand_regex(re)?;
                regex::Regex::new(&pattern).with_context(|| format!("regex {re:?}"))?;
            }
        }
        for j in &expect.json {
            check_json(j, vars)?;
        }
    }
    Ok(())
}

fn check_json(json: &crate::scenario::JsonExpect, vars: &Vars) -> Result<()> {
    vars.expand(&json.pointer)?;
    if let Some(equals) = &json.equals {
        vars.expand_json(equals)?;
    }
    if let Some(contains) = &json.contains {
        vars.expand(contains)?;
    }
    Ok(())
}

/// The trials of one parsed scenario on the given runtimes.
pub fn trials(found: &Found, scenario: &Arc<Scenario>, runtimes: &[RuntimeName]) -> Vec<TrialSpec> {
    let rows: Vec<Option<String>> = match scenario.table() {
        Some(table) => table.rows.keys().cloned().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for &rt in runtimes {
        let not_here = match scenario.not_on.get(&rt) {
            Some(why) => Some(format!("not run on {rt}: {}", why.trim())),
            None if scenario.lanes().contains(&rt) => None,
            None => continue,
        };
        for row in &rows {
            out.push(TrialSpec {
                name: trial_name(rt, &found.family, &found.name, row.as_deref()),
                runtime: rt,
                scenario: Arc::clone(scenario),
                row: row.clone(),
                not_here: not_here.clone(),
            });
        }
    }
    out
}

pub fn trial_name(rt: RuntimeName, family: &str, scenario: &str, row: Option<&str>) -> String {
    match row {
        Some(row) => format!("{rt}::{family}::{scenario}::{row}"),
        None => format!("{rt}::{family}::{scenario}"),
    }
}
