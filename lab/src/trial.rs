//! One trial: a scenario (and table row) run against one runtime, in a
//! scratch directory of its own, followed by the leak check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail, ensure};

use crate::placeholder::Vars;
use crate::process::{self, Output};
use crate::runtime::{self, Host, RuntimeStatus};
use crate::scenario::{ExitExpect, Expect, GuestStep, HostOp, Need, RuntimeName, Scenario, Step, StepKind, TextExpect};
use crate::token;

/// A command step's deadline unless the step sets `timeout-s`.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// Exclusive trials take this for writing, every other trial for reading,
/// so an exclusive one runs with no other trial in flight.
static SERIAL: RwLock<()> = RwLock::new(());

/// What every trial of a run shares.
#[derive(Debug, Clone)]
pub struct Lab {
    /// The brig binary under test.
    pub brig: PathBuf,
    /// `lab/profiles/`.
    pub profiles_dir: PathBuf,
    pub host: Host,
    /// Runtimes and capabilities whose absence fails a trial instead of
    /// ignoring it (`LAB_REQUIRE`).
    pub require: Vec<String>,
}

/// One trial to run.
#[derive(Debug, Clone)]
pub struct TrialSpec {
    pub name: String,
    pub runtime: RuntimeName,
    pub scenario: Arc<Scenario>,
    pub row: Option<String>,
}

impl Lab {
    /// Why a trial cannot run on this host, if it cannot.
    pub fn blocker(&self, spec: &TrialSpec) -> Option<String> {
        let mut needs: Vec<Need> = spec.scenario.needs.clone();
        needs.sort();
        needs.dedup();
        for need in needs {
            if let Some(why) = self.host.unmet(spec.runtime, need) {
                let what = if need == Need::Runtime {
                    "runtime missing".to_owned()
                } else {
                    format!("capability {need} missing")
                };
                return Some(format!("{what}: {why}"));
            }
        }
        if spec.scenario.exclusive
            && let Some(RuntimeStatus::Usable { foreign_sandboxes, .. }) = self.host.runtimes.get(&spec.runtime)
            && !foreign_sandboxes.is_empty()
        {
            return Some(format!(
                "exclusive scenario: {} already lists brig- sandboxes the lab did not create ({}), which it would remove",
                spec.runtime,
                foreign_sandboxes.join(", ")
            ));
        }
        None
    }

    /// Whether a blocked trial fails (`LAB_REQUIRE` names its runtime or the
    /// missing capability) rather than being ignored.
    pub fn required(&self, spec: &TrialSpec) -> bool {
        let named = |s: &str| self.require.iter().any(|r| r == s);
        spec.scenario.needs.iter().any(|need| match need {
            Need::Runtime => named(spec.runtime.as_str()),
            other => named(other.as_str()),
        }) || (spec.scenario.exclusive && named(spec.runtime.as_str()))
    }

    /// Runs one trial to its verdict. The error is the failure message.
    pub fn run(&self, spec: &TrialSpec) -> Result<(), String> {
        if let Some(why) = self.blocker(spec) {
            return Err(format!("cannot run here: {why}"));
        }
        // Held until the leak check is done, so an exclusive trial starts
        // only once every other trial has cleaned up after itself.
        let exclusive = spec.scenario.exclusive;
        let _alone = exclusive.then(|| SERIAL.write().unwrap_or_else(|e| e.into_inner()));
        let _shared = (!exclusive).then(|| SERIAL.read().unwrap_or_else(|e| e.into_inner()));
        let trial = match Trial::prepare(self, spec) {
            Ok(trial) => trial,
            Err(err) => return Err(format!("setting up the trial: {err:#}")),
        };
        if spec.scenario.exclusive
            && let Err(err) = trial.check_alone()
        {
            let _ = std::fs::remove_dir_all(&trial.scratch);
            return Err(format!("{err:#}"));
        }
        let outcome = trial.run_steps();
        let cleanup = trial.clean_up();
        let verdict = match (outcome, cleanup) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(err), Ok(())) => Err(err),
            (Ok(()), Err(leak)) => Err(format!("{leak:#}")),
            (Err(err), Err(leak)) => Err(format!("{err}\n{leak:#}")),
        };
        match verdict {
            Ok(()) => {
                // Scratch holds only the trial's own files; a failure to
                // remove it is not the scenario's fault.
                let _ = std::fs::remove_dir_all(&trial.scratch);
                Ok(())
            }
            Err(msg) => {
                Err(format!("{msg}\n(trial token {}, scratch kept at {})", trial.token, trial.scratch.display()))
            }
        }
    }
}

/// A prepared trial: its token, directories and environment.
#[derive(Debug)]
struct Trial<'a> {
    lab: &'a Lab,
    spec: &'a TrialSpec,
    token: String,
    scratch: PathBuf,
    vars: Vars,
    env: BTreeMap<String, String>,
    runtime_bin: Option<PathBuf>,
}

impl<'a> Trial<'a> {
    fn prepare(lab: &'a Lab, spec: &'a TrialSpec) -> Result<Trial<'a>> {
        let token = token::fresh();
        let scratch = std::env::temp_dir().join(format!("brig-lab-{token}"));
        let home = scratch.join("home");
        let state = scratch.join("state");
        let config = scratch.join("config");
        let run_dir = scratch.join("run");
        let profiles = scratch.join("profiles");
        for dir in [&scratch, &home, &config, &run_dir, &profiles] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        set_mode(&run_dir, 0o700)?;

        let mut vars = Vars::new();
        vars.set("t", token.clone());
        vars.set("scratch", path_str(&scratch)?);
        vars.set("state", path_str(&state)?);
        vars.set("home", path_str(&home)?);
        vars.set("profiles", path_str(&profiles)?);
        vars.set("runtime", spec.runtime.as_str());

        for name in spec.scenario.profile_names() {
            let source = find_profile(&lab.profiles_dir, name)?;
            let text = std::fs::read_to_string(&source).with_context(|| format!("reading {}", source.display()))?;
            let text = vars.expand(&text).with_context(|| format!("expanding {}", source.display()))?;
            let dest = profiles.join(source.file_name().expect("a profile file has a name"));
            std::fs::write(&dest, text).with_context(|| format!("writing {}", dest.display()))?;
        }

        // Only what brig needs to find its way; nothing else of the host's
        // environment reaches it, so the user's own settings cannot change
        // what a trial proves.
        let mut env = BTreeMap::new();
        if let Some(path) = std::env::var_os("PATH") {
            env.insert("PATH".to_owned(), path.to_string_lossy().into_owned());
        }
        env.insert("HOME".to_owned(), path_str(&home)?);
        env.insert("BRIG_STATE_DIR".to_owned(), path_str(&state)?);
        env.insert("XDG_CONFIG_HOME".to_owned(), path_str(&config)?);
        env.insert("XDG_RUNTIME_DIR".to_owned(), path_str(&run_dir)?);
        env.insert("BRIG_PROFILE_DIR".to_owned(), path_str(&profiles)?);
        env.insert("BRIG_RUNTIME".to_owned(), spec.runtime.as_str().to_owned());
        if !spec.scenario.needs.contains(&Need::Microvm) {
            // This host has no usable KVM: the sandboxes are plain containers.
            env.insert("BRIG_ALLOW_CONTAINER_ISOLATION".to_owned(), "1".to_owned());
            if spec.runtime == RuntimeName::Nerdctl {
                env.insert("BRIG_CONTAINERD_RUNTIME".to_owned(), "io.containerd.runc.v2".to_owned());
            }
        }

        Ok(Trial {
            lab,
            spec,
            token,
            scratch,
            vars,
            env,
            runtime_bin: lab.host.runtimes.get(&spec.runtime).and_then(|s| s.bin().map(Path::to_path_buf)),
        })
    }

    fn run_steps(&self) -> Result<(), String> {
        let steps = self.spec.scenario.flatten(self.spec.row.as_deref());
        let total = steps.len();
        for (i, (step, row)) in steps.into_iter().enumerate() {
            let vars = self.vars.with_row(row).map_err(|e| format!("step {}/{total}: {e:#}", i + 1))?;
            if let Err(err) = self.run_step(step, &vars) {
                return Err(format!("step {}/{total} failed: {err:#}", i + 1));
            }
        }
        Ok(())
    }

    fn run_step(&self, step: &Step, vars: &Vars) -> Result<()> {
        let timeout = step.timeout_s.map_or(DEFAULT_STEP_TIMEOUT, Duration::from_secs);
        let stdin = step.stdin.as_deref().map(|s| vars.expand(s)).transpose()?;
        let (cmd, shown) = match step.kind()? {
            StepKind::Brig(argv) => {
                let argv = vars.expand_all(argv)?;
                let mut cmd = Command::new(&self.lab.brig);
                cmd.args(&argv).env_clear().envs(&self.env).current_dir(&self.scratch);
                for (name, value) in &step.env {
                    cmd.env(vars.expand(name)?, vars.expand(value)?);
                }
                (cmd, format!("brig {}", shell_words(&argv)))
            }
            StepKind::Runtime(argv) => {
                let argv = vars.expand_all(argv)?;
                let bin = self.runtime_bin()?;
                let mut cmd = Command::new(bin);
                cmd.args(&argv).env_clear().envs(&self.env).current_dir(&self.scratch);
                (cmd, format!("{} {}", self.spec.runtime, shell_words(&argv)))
            }
            StepKind::Guest(guest) => {
                let (sandbox, argv) = guest_call(guest, vars)?;
                let bin = self.runtime_bin()?;
                let mut cmd = Command::new(bin);
                cmd.arg("exec");
                if stdin.is_some() {
                    cmd.arg("-i");
                }
                cmd.arg(&sandbox).args(&argv).env_clear().envs(&self.env).current_dir(&self.scratch);
                (cmd, format!("{} exec {sandbox} {}", self.spec.runtime, shell_words(&argv)))
            }
            StepKind::Host(op) => return host_op(op, vars),
            StepKind::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(ms));
                return Ok(());
            }
            StepKind::Table(_) => unreachable!("tables are flattened before running"),
        };
        let out = process::run(cmd, stdin.as_deref(), timeout, &shown)?;
        let default = Expect::default();
        let problems = check_expect(step.expect.as_ref().unwrap_or(&default), &out, vars)?;
        if problems.is_empty() {
            return Ok(());
        }
        Err(anyhow!("{shown}\n  {}\n{}", problems.join("\n  "), process::render_streams(&out.stdout, &out.stderr)))
    }

    /// An exclusive trial may reach every `brig-` sandbox of its runtime;
    /// it refuses to start while one it did not create exists (another
    /// user's, or another lab run's).
    fn check_alone(&self) -> Result<()> {
        let Some(bin) = &self.runtime_bin else {
            return Ok(());
        };
        let foreign: Vec<String> = runtime::containers(bin)?
            .into_iter()
            .filter(|n| n.starts_with("brig-") && !n.contains(&self.token))
            .collect();
        ensure!(
            foreign.is_empty(),
            "exclusive scenario refused to start: {} lists brig- sandboxes it did not create ({})",
            self.spec.runtime,
            foreign.join(", ")
        );
        Ok(())
    }

    fn runtime_bin(&self) -> Result<&Path> {
        self.runtime_bin.as_deref().ok_or_else(|| {
            anyhow!(
                "this step calls {} directly, and it is not usable here (add `runtime` to needs)",
                self.spec.runtime
            )
        })
    }

    fn clean_up(&self) -> Result<()> {
        match &self.runtime_bin {
            Some(bin) => runtime::clean_up(bin, &self.token),
            // Nothing can have been created through a runtime that is absent.
            None => Ok(()),
        }
    }
}

/// The sandbox a guest step targets and the command it runs there.
pub fn guest_call(guest: &GuestStep, vars: &Vars) -> Result<(String, Vec<String>)> {
    let sandbox = match (&guest.reference, &guest.sandbox) {
        (Some(reference), None) => sandbox_of(&vars.expand(reference)?)?,
        (None, Some(sandbox)) => vars.expand(sandbox)?,
        _ => bail!("guest takes exactly one of ref and sandbox"),
    };
    Ok((sandbox, vars.expand_all(&guest.cmd)?))
}

/// `agent@label` → `brig-agent-label`, `agent` → `brig-agent` (spec 01's
/// naming rule, with the agent name taken as written).
pub fn sandbox_of(reference: &str) -> Result<String> {
    let (agent, label) = match reference.split_once('@') {
        Some((agent, label)) => (agent, Some(label)),
        None => (reference, None),
    };
    ensure!(
        !agent.is_empty() && label.is_none_or(|l| !l.is_empty() && !l.contains('@')),
        "guest ref {reference:?} is not agent@label"
    );
    Ok(match label {
        Some(label) => format!("brig-{agent}-{label}"),
        None => format!("brig-{agent}"),
    })
}

fn find_profile(dir: &Path, name: &str) -> Result<PathBuf> {
    for ext in ["yaml", "yml", "json"] {
        let candidate = dir.join(format!("{name}.{ext}"));
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("no profile {name:?} in {}", dir.display())
}

fn path_str(path: &Path) -> Result<String> {
    path.to_str().map(str::to_owned).with_context(|| format!("{} is not UTF-8", path.display()))
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {mode:o} {}", path.display()))
}

fn parse_mode(text: &str) -> Result<u32> {
    u32::from_str_radix(text, 8).with_context(|| format!("mode {text:?} is not octal"))
}

/// An argv as a reader would type it, for messages.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./@=:,+%".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn host_op(op: &HostOp, vars: &Vars) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let p = |s: &String| vars.expand(s).map(PathBuf::from);
    match op {
        HostOp::Mkdir(path) => {
            let path = p(path)?;
            std::fs::create_dir_all(&path).with_context(|| format!("mkdir {}", path.display()))
        }
        HostOp::Write(w) => {
            let path = p(&w.path)?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).with_context(|| format!("mkdir {}", parent.display()))?;
            }
            std::fs::write(&path, vars.expand(&w.content)?).with_context(|| format!("write {}", path.display()))
        }
        HostOp::Symlink(s) => {
            let link = p(&s.link)?;
            let target = p(&s.target)?;
            std::os::unix::fs::symlink(&target, &link)
                .with_context(|| format!("symlink {} -> {}", link.display(), target.display()))
        }
        HostOp::Chmod(m) => set_mode(&p(&m.path)?, parse_mode(&m.mode)?),
        HostOp::Rm(path) => {
            let path = p(path)?;
            match std::fs::symlink_metadata(&path) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(err) => Err(err).with_context(|| format!("rm {}", path.display())),
                // remove_dir_all never follows a link inside the tree.
                Ok(meta) if meta.is_dir() => {
                    std::fs::remove_dir_all(&path).with_context(|| format!("rm -r {}", path.display()))
                }
                Ok(_) => std::fs::remove_file(&path).with_context(|| format!("rm {}", path.display())),
            }
        }
        HostOp::Exists(path) => {
            let path = p(path)?;
            ensure!(
                std::fs::symlink_metadata(&path).is_ok(),
                "host: expected {} to exist, it does not",
                path.display()
            );
            Ok(())
        }
        HostOp::Absent(path) => {
            let path = p(path)?;
            if let Ok(meta) = std::fs::symlink_metadata(&path) {
                bail!("host: expected {} to be absent, found a {}", path.display(), file_kind(&meta));
            }
            Ok(())
        }
        HostOp::IsDir(path) => {
            let path = p(path)?;
            let meta = std::fs::symlink_metadata(&path)
                .with_context(|| format!("host: expected a directory at {}", path.display()))?;
            ensure!(meta.is_dir(), "host: expected a directory at {}, found a {}", path.display(), file_kind(&meta));
            Ok(())
        }
        HostOp::IsSymlink(path) => {
            let path = p(path)?;
            let meta = std::fs::symlink_metadata(&path)
                .with_context(|| format!("host: expected a symlink at {}", path.display()))?;
            ensure!(
                meta.file_type().is_symlink(),
                "host: expected a symlink at {}, found a {}",
                path.display(),
                file_kind(&meta)
            );
            Ok(())
        }
        HostOp::Mode(m) => {
            let path = p(&m.path)?;
            let want = parse_mode(&m.mode)?;
            let meta = std::fs::symlink_metadata(&path).with_context(|| format!("host: stat {}", path.display()))?;
            let have = meta.permissions().mode() & 0o7777;
            ensure!(have == want, "host: expected mode {want:04o} on {}, found {have:04o}", path.display());
            Ok(())
        }
        HostOp::Contains(c) => {
            let path = p(&c.path)?;
            let text = vars.expand(&c.text)?;
            let content =
                std::fs::read_to_string(&path).with_context(|| format!("host: reading {}", path.display()))?;
            ensure!(
                content.contains(&text),
                "host: expected {} to contain {text:?}; it holds {content:?}",
                path.display()
            );
            Ok(())
        }
    }
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_symlink() {
        "symlink"
    } else if ft.is_dir() {
        "directory"
    } else if ft.is_file() {
        "file"
    } else {
        "special file"
    }
}

/// Every way `out` misses `expect`; empty when it meets it.
pub fn check_expect(expect: &Expect, out: &Output, vars: &Vars) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    match &expect.exit {
        None => want_code(0, out, &mut problems),
        Some(ExitExpect::Code(code)) => want_code(*code, out, &mut problems),
        Some(ExitExpect::Word(word)) => match vars.expand(word)?.trim() {
            "any" => {}
            "nonzero" => {
                if out.code == Some(0) {
                    problems.push("exit: expected nonzero, got 0".to_owned());
                }
            }
            other => match other.parse::<i32>() {
                Ok(code) => want_code(code, out, &mut problems),
                Err(_) => bail!("exit {other:?} is not a number, `any` or `nonzero`"),
            },
        },
    }
    if let Some(text) = &expect.stdout {
        check_text("stdout", text, &out.stdout, vars, &mut problems)?;
    }
    if let Some(text) = &expect.stderr {
        check_text("stderr", text, &out.stderr, vars, &mut problems)?;
    }
    if !expect.json.is_empty() {
        let last = out.stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        match serde_json::from_str::<serde_json::Value>(last) {
            Err(err) => problems.push(format!("json: the last line of stdout is not JSON ({err}): {last:?}")),
            Ok(doc) => {
                for want in &expect.json {
                    let pointer = vars.expand(&want.pointer)?;
                    let equals = vars.expand_json(&want.equals)?;
                    match select(&doc, &pointer) {
                        Err(why) => problems.push(format!("json {pointer}: {why}")),
                        Ok(found) if *found != equals => {
                            problems.push(format!("json {pointer}: expected {equals}, found {found}"))
                        }
                        Ok(_) => {}
                    }
                }
            }
        }
    }
    if let Some(bound) = &expect.duration {
        let ms = out.elapsed.as_millis();
        if ms > u128::from(bound.max_ms) {
            problems.push(format!("duration: expected at most {} ms, took {ms} ms", bound.max_ms));
        }
    }
    Ok(problems)
}

fn want_code(code: i32, out: &Output, problems: &mut Vec<String>) {
    if out.code != Some(code) {
        problems.push(format!("exit: expected {code}, got {}", out.status));
    }
}

fn check_text(stream: &str, want: &TextExpect, have: &str, vars: &Vars, problems: &mut Vec<String>) -> Result<()> {
    for needle in &want.contains {
        let needle = vars.expand(needle)?;
        if !have.contains(&needle) {
            problems.push(format!("{stream}: expected to contain {needle:?}"));
        }
    }
    for needle in &want.not_contains {
        let needle = vars.expand(needle)?;
        if have.contains(&needle) {
            problems.push(format!("{stream}: expected not to contain {needle:?}"));
        }
    }
    if let Some(pattern) = &want.regex {
        let pattern = vars.expand_regex(pattern)?;
        let re = regex::Regex::new(&pattern).with_context(|| format!("{stream} regex {pattern:?}"))?;
        if !re.is_match(have) {
            problems.push(format!("{stream}: expected to match /{pattern}/"));
        }
    }
    Ok(())
}

/// Resolves a JSON pointer, where a segment `[key=value]` picks the first
/// element of an array whose `key` is the string `value`.
pub fn select<'v>(doc: &'v serde_json::Value, pointer: &str) -> Result<&'v serde_json::Value, String> {
    if pointer.is_empty() {
        return Ok(doc);
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err("a pointer starts with /".to_owned());
    };
    let mut at = doc;
    for raw in rest.split('/') {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        let next = if let Some(inner) = segment.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            let (key, value) = inner.split_once('=').ok_or_else(|| format!("selector {segment} is not [key=value]"))?;
            let items = at.as_array().ok_or_else(|| format!("{segment} selects in an array, found {}", brief(at)))?;
            items
                .iter()
                .find(|item| item.get(key).and_then(|v| v.as_str()) == Some(value))
                .ok_or_else(|| format!("no element with {key} = {value:?} in {}", brief(at)))?
        } else {
            match at {
                serde_json::Value::Object(map) => {
                    map.get(&segment).ok_or_else(|| format!("no member {segment:?} in {}", brief(at)))?
                }
                serde_json::Value::Array(items) => segment
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i))
                    .ok_or_else(|| format!("no element {segment} in {}", brief(at)))?,
                other => return Err(format!("cannot descend into {}", brief(other))),
            }
        };
        at = next;
    }
    Ok(at)
}

fn brief(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.len() > 300 { format!("{}…", &text[..text.floor_char_boundary(300)]) } else { text }
}
