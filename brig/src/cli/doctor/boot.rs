//! `brig doctor --boot`: boot a throwaway sandbox through the runtime and
//! shim brig would use, run `true` in it, remove it, and say how each stage
//! went, with its time and, on failure, the runtime's own words.
//!
//! [`plan`] decides everything first (image, runtime, the isolation rule,
//! the sandbox name) and refuses with the usual codes — 2 without an image,
//! 4 without a runtime, 7 for a container nobody accepted — before anything
//! exists. [`apply`] holds the stages to one deadline and then removes the
//! sandbox whatever happened, on a budget of its own. The sandbox has no
//! home, no project, no network and no session record: nothing of the user's
//! is read or written.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Check, Mark};
use crate::Error;
use crate::engine::{Engine, Prompts};
use crate::environment::Environment;
use crate::error::UsageError;
use crate::exit::Code;
use crate::process::Deadline;
use crate::profile::{Profile, Registry};
use crate::runtime::{self, BootSpec, ExecSpec, Isolation, Kind, NetworkAttach, Resolved, Runtime, State};
use crate::warn::Warnings;

/// Seconds `--boot` waits for create, start and the first exec together.
pub const DEFAULT_TIMEOUT_S: u64 = 60;
/// Removal gets its own budget, so a boot that used up the deadline is still
/// cleaned up.
const CLEANUP_BUDGET: Duration = Duration::from_secs(30);
/// One exec attempt; a guest that is still booting is asked again.
const EXEC_ATTEMPT: Duration = Duration::from_secs(10);
const EXEC_RETRY_PAUSE: Duration = Duration::from_millis(200);
/// Small on purpose: the test is whether a guest boots, not how big one can be.
const MEM_MB: u32 = 256;
const CPUS: u32 = 1;

/// Everything decided before anything is booted.
#[derive(Debug)]
pub struct Plan {
    runtime: Box<dyn Runtime>,
    facts: Facts,
}

/// What the report lines name: which runtime, shim, image and sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub kind: Kind,
    /// `nerdctl (/usr/bin/nerdctl), chosen by BRIG_RUNTIME`.
    pub runtime: String,
    pub runtime_bin: String,
    /// The containerd shim or OCI runtime the sandbox is handed to.
    pub shim: String,
    /// What it is and which setting chose it.
    pub shim_source: &'static str,
    pub isolation: Isolation,
    pub image: String,
    pub sandbox: String,
    pub timeout: Duration,
    pub hardening: Option<crate::runtime::Hardening>,
}

/// Decide the boot: the image (`--image`, else `BRIG_IMAGE`; never a
/// profile's, which would need a pull), the runtime (as every verb resolves
/// it, with the ref's profile if one was given), and the isolation rule
/// exactly as `brig run` applies it.
pub fn plan(
    env: &Environment,
    registry: &Registry,
    profile: Option<&Profile>,
    image: Option<&str>,
    timeout_s: u64,
) -> Result<Plan, Error> {
    let image = match image.filter(|i| !i.is_empty()).or_else(|| env.get("BRIG_IMAGE")) {
        Some(image) => image.to_owned(),
        None => return Err(UsageError::BootWithoutImage.into()),
    };
    if !image_is_plausible(&image) {
        return Err(UsageError::BootImageUnusable { image }.into());
    }
    let resolved = runtime::resolve(env, profile.map(|p| (p.name.as_str(), p.runtime_bin.as_deref())))?;
    let runtime = runtime::open(&resolved, env, None)?;
    let mut engine = Engine::new(env, registry, Prompts::Nobody, Warnings::stderr())?;
    let isolation = engine.admit(runtime.as_ref(), None)?;
    if isolation == crate::runtime::Isolation::Container {
        engine.warn_container(runtime.as_ref());
    }
    let (shim, shim_source) = shim_name(env, &resolved);
    let facts = Facts {
        kind: resolved.kind,
        runtime: super::describe_runtime(&resolved),
        runtime_bin: resolved.bin.display().to_string(),
        shim,
        shim_source,
        isolation,
        image,
        sandbox: format!("{}doctor-{}", crate::session::reference::SANDBOX_PREFIX, std::process::id()),
        timeout: Duration::from_secs(timeout_s),
        hardening: engine.hardening(isolation, resolved.kind)?,
    };
    Ok(Plan { runtime, facts })
}

/// An image reference goes last on the runtime's argv, so one that starts
/// with `-` would be read as a flag; blanks and control characters are never
/// part of a reference.
fn image_is_plausible(image: &str) -> bool {
    !image.starts_with('-') && !image.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The shim or OCI runtime a sandbox is handed to, and which setting chose it.
fn shim_name(env: &Environment, resolved: &Resolved) -> (String, &'static str) {
    match resolved.kind {
        Kind::Nerdctl => match env.get("BRIG_CONTAINERD_RUNTIME") {
            Some(shim) => (shim.to_owned(), "containerd shim, chosen by BRIG_CONTAINERD_RUNTIME"),
            None => (runtime::DEFAULT_SHIM.to_owned(), "containerd shim, brig's default"),
        },
        Kind::Podman => match runtime::podman_configured_runtime(env) {
            Some(name) => (name, "podman's OCI runtime, named in its containers.conf"),
            None => ("podman's default OCI runtime".to_owned(), "no containers.conf names one"),
        },
        Kind::Docker => ("the docker engine's default runtime".to_owned(), "the engine's configuration"),
        Kind::Hull => ("hull's virtual machine".to_owned(), "hull"),
    }
}

/// How one stage ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done {
        elapsed: Duration,
    },
    /// The runtime failed or refused: its own words.
    Failed {
        elapsed: Duration,
        words: String,
    },
    /// The deadline passed first; `words` is the last failure seen, if any.
    TimedOut {
        elapsed: Duration,
        words: Option<String>,
    },
    /// SIGINT, SIGTERM or SIGHUP arrived while it ran.
    Interrupted {
        elapsed: Duration,
    },
    /// An earlier stage did not succeed.
    Skipped,
}

impl Outcome {
    fn elapsed(&self) -> Option<Duration> {
        match self {
            Outcome::Done { elapsed }
            | Outcome::Failed { elapsed, .. }
            | Outcome::TimedOut { elapsed, .. }
            | Outcome::Interrupted { elapsed } => Some(*elapsed),
            Outcome::Skipped => None,
        }
    }

    fn done(&self) -> bool {
        matches!(self, Outcome::Done { .. })
    }
}

/// What the cleanup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leftover {
    /// The sandbox existed and is gone now.
    Removed,
    /// The runtime had nothing by that name, or nothing was attempted.
    Nothing,
    /// The name belonged to something doctor did not create: left alone.
    NotOurs,
}

/// Every stage's outcome, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stages {
    pub create: Outcome,
    pub start: Outcome,
    pub exec: Outcome,
    pub exec_attempts: u32,
    pub cleanup: Outcome,
    pub leftover: Leftover,
    pub total: Duration,
}

impl Stages {
    pub fn answered(&self) -> bool {
        self.exec.done()
    }

    /// Removal did not succeed, so the sandbox may still exist.
    pub fn left_behind(&self) -> bool {
        !matches!(self.cleanup, Outcome::Done { .. } | Outcome::Skipped)
    }

    /// 0 only when the guest answered and nothing was left behind.
    pub fn code(&self) -> Code {
        if self.answered() && !self.left_behind() { Code::Success } else { Code::Failure }
    }

    fn failed_stage(&self) -> Option<&'static str> {
        [("create", &self.create), ("start", &self.start), ("exec", &self.exec), ("cleanup", &self.cleanup)]
            .into_iter()
            .find(|(_, o)| !o.done() && **o != Outcome::Skipped)
            .map(|(name, _)| name)
    }
}

/// `data.boot` of the `Doctor` envelope.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootData {
    pub sandbox: String,
    pub image: String,
    pub runtime: Kind,
    pub runtime_bin: String,
    pub shim: String,
    pub isolation: Isolation,
    pub timeout_s: u64,
    /// The guest answered `true`.
    pub answered: bool,
    /// Removal failed: the sandbox may still exist.
    pub left_behind: bool,
    /// The first stage that failed, timed out or was interrupted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<&'static str>,
    pub elapsed_ms: u64,
}

/// Run the stages: create and start (one `run --detach`), the runtime's
/// listing, the first exec, then removal whatever happened.
pub fn apply(plan: &Plan, interrupted: &Arc<AtomicBool>) -> Stages {
    let runtime = plan.runtime.as_ref();
    let facts = &plan.facts;
    let started = Instant::now();
    let deadline = Deadline::at(started + facts.timeout).or_when(Arc::clone(interrupted));
    let (create, name) = deadline.run(|| create(runtime, facts, &deadline));
    let start = if create.done() { deadline.run(|| start(runtime, facts, &deadline)) } else { Outcome::Skipped };
    let (exec, exec_attempts) =
        if start.done() { deadline.run(|| exec(runtime, facts, &deadline)) } else { (Outcome::Skipped, 0) };
    let (cleanup, leftover) = match name {
        Name::Used => Deadline::at(Instant::now() + CLEANUP_BUDGET).run(|| cleanup(runtime, facts)),
        Name::Unused => (Outcome::Skipped, Leftover::Nothing),
        Name::Taken => (Outcome::Skipped, Leftover::NotOurs),
    };
    Stages { create, start, exec, exec_attempts, cleanup, leftover, total: started.elapsed() }
}

/// How a failed runtime call ends a stage: the deadline, an interruption, or
/// the runtime's own words.
fn ended(deadline: &Deadline, elapsed: Duration, words: String) -> Outcome {
    if deadline.cancelled() {
        Outcome::Interrupted { elapsed }
    } else if deadline.passed() {
        Outcome::TimedOut { elapsed, words: None }
    } else {
        Outcome::Failed { elapsed, words }
    }
}

/// The runtime's own reason, without the argv brig ran (the report names
/// the command already).
fn runtime_reason(err: &runtime::Error) -> String {
    match err {
        runtime::Error::Operation { words, .. } => words.clone(),
        runtime::Error::Process(inner) => process_reason(inner),
        other => crate::error::chain(other),
    }
}

fn process_reason(err: &crate::process::Error) -> String {
    match err {
        crate::process::Error::Failed { stderr, status, .. } => {
            let said = runtime::runtime_words(stderr);
            if said.is_empty() { status.to_string() } else { said }
        }
        other => crate::error::chain(other),
    }
}

/// Whether the sandbox name is doctor's to clean up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    /// A boot was attempted under it.
    Used,
    /// Nothing was attempted (the runtime could not list).
    Unused,
    /// Something doctor did not create already has it.
    Taken,
}

/// Check the name is free (doctor never removes what it did not create),
/// then `run --detach`.
fn create(runtime: &dyn Runtime, facts: &Facts, deadline: &Deadline) -> (Outcome, Name) {
    let started = Instant::now();
    match runtime.list() {
        Err(err) => return (ended(deadline, started.elapsed(), runtime_reason(&err)), Name::Unused),
        Ok(listed) if listed.iter().any(|l| l.name == facts.sandbox) => {
            let words = format!(
                "{} already has a sandbox named {}, which doctor did not create and will not touch",
                facts.kind, facts.sandbox
            );
            return (Outcome::Failed { elapsed: started.elapsed(), words }, Name::Taken);
        }
        Ok(_) => {}
    }
    let spec = BootSpec {
        name: facts.sandbox.clone(),
        image: facts.image.clone(),
        mem_mb: MEM_MB,
        cpus: CPUS,
        pull: Some("never"),
        network: NetworkAttach::None,
        publish: Vec::new(),
        binds: Vec::new(),
        tmpfs: Vec::new(),
        env: Vec::new(),
        labels: vec![(runtime::adapter::label::ISOLATION.to_owned(), facts.isolation.to_string())],
        // Held to what a real sandbox of this class is held to, so the boot
        // proves what brig would boot.
        hardening: facts.hardening.clone(),
    };
    let outcome = match runtime.boot(&spec) {
        Ok(()) => Outcome::Done { elapsed: started.elapsed() },
        Err(err) => ended(deadline, started.elapsed(), runtime_reason(&err)),
    };
    (outcome, Name::Used)
}

/// The runtime lists the sandbox as running.
fn start(runtime: &dyn Runtime, facts: &Facts, deadline: &Deadline) -> Outcome {
    let started = Instant::now();
    let listed = match runtime.list() {
        Ok(listed) => listed,
        Err(err) => return ended(deadline, started.elapsed(), runtime_reason(&err)),
    };
    let elapsed = started.elapsed();
    match listed.iter().find(|l| l.name == facts.sandbox).map(|l| l.state) {
        Some(State::Running) => Outcome::Done { elapsed },
        Some(State::Stopped) => Outcome::Failed {
            elapsed,
            words: format!("{} lists {} as stopped: its first process exited", facts.kind, facts.sandbox),
        },
        Some(State::Unknown) => Outcome::Failed {
            elapsed,
            words: format!("{} lists {} in a state it cannot read", facts.kind, facts.sandbox),
        },
        None => Outcome::Failed {
            elapsed,
            words: format!("{} does not list {} after starting it", facts.kind, facts.sandbox),
        },
    }
}

/// `true` in the guest, asked again until it answers or the deadline passes:
/// a microVM's guest may still be booting when the runtime reports it running.
fn exec(runtime: &dyn Runtime, facts: &Facts, deadline: &Deadline) -> (Outcome, u32) {
    let started = Instant::now();
    let probe = ExecSpec { argv: vec!["true".to_owned()], ..ExecSpec::default() };
    let mut attempts = 0;
    let mut last = None;
    loop {
        attempts += 1;
        let err = match runtime.exec(&facts.sandbox, &probe).timeout(EXEC_ATTEMPT).output() {
            Ok(_) => return (Outcome::Done { elapsed: started.elapsed() }, attempts),
            Err(err) => err,
        };
        if deadline.cancelled() {
            return (Outcome::Interrupted { elapsed: started.elapsed() }, attempts);
        }
        // A call cut short by the deadline says nothing about the guest.
        if !matches!(err, crate::process::Error::Deadline { .. }) {
            last = Some(process_reason(&err));
        }
        if deadline.remaining() <= EXEC_RETRY_PAUSE {
            return (Outcome::TimedOut { elapsed: started.elapsed(), words: last }, attempts);
        }
        std::thread::sleep(EXEC_RETRY_PAUSE);
    }
}

/// `rm -f` whether or not the listing shows it (a runtime call cut short
/// may have left a sandbox not yet listed), then the listing must not show
/// it. `rm -f` succeeds on a missing name for some runtimes, so whether
/// there was anything to remove is read from the listing before it.
fn cleanup(runtime: &dyn Runtime, facts: &Facts) -> (Outcome, Leftover) {
    let started = Instant::now();
    let listed_before = runtime.list().map(|listed| listed.iter().any(|l| l.name == facts.sandbox));
    let leftover = if matches!(listed_before, Ok(false)) { Leftover::Nothing } else { Leftover::Removed };
    match runtime.remove(&facts.sandbox) {
        Ok(()) | Err(runtime::Error::NoSuchSandbox { .. }) => {}
        Err(err) => return (Outcome::Failed { elapsed: started.elapsed(), words: runtime_reason(&err) }, leftover),
    }
    let outcome = match runtime.list() {
        Ok(listed) if listed.iter().any(|l| l.name == facts.sandbox) => Outcome::Failed {
            elapsed: started.elapsed(),
            words: format!("{} still lists it after `{} rm -f`", facts.kind, facts.kind),
        },
        Ok(_) => Outcome::Done { elapsed: started.elapsed() },
        Err(err) => Outcome::Failed {
            elapsed: started.elapsed(),
            words: format!("the listing that should confirm its removal failed: {}", runtime_reason(&err)),
        },
    };
    (outcome, leftover)
}

/// `0.42s`, as every line shows a time.
fn secs(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

/// The report: one line per stage, then the verdict.
pub fn checks(facts: &Facts, stages: &Stages) -> Vec<Check> {
    let isolation = match facts.isolation {
        Isolation::Microvm => "microvm: the sandbox gets a kernel of its own".to_owned(),
        Isolation::Container => {
            "container: the sandbox shares the host's kernel; accepted because BRIG_ALLOW_CONTAINER_ISOLATION is set"
                .to_owned()
        }
    };
    let mut lines = vec![
        Check::new("runtime", Mark::Ok, facts.runtime.clone()),
        Check::new("shim", Mark::Ok, format!("{} ({})", facts.shim, facts.shim_source)),
        Check::new("isolation", Mark::Ok, isolation),
        create_line(facts, &stages.create),
        start_line(facts, &stages.start),
        exec_line(facts, &stages.exec, stages.exec_attempts),
        cleanup_line(facts, &stages.cleanup, stages.leftover),
        verdict_line(facts, stages),
    ];
    for (line, outcome) in lines[3..7].iter_mut().zip([&stages.create, &stages.start, &stages.exec, &stages.cleanup]) {
        line.elapsed_ms = outcome.elapsed().map(|d| d.as_millis() as u64);
    }
    lines[7].elapsed_ms = Some(stages.total.as_millis() as u64);
    lines
}

fn run_command(facts: &Facts) -> String {
    format!("`{} run --detach`", facts.kind)
}

fn not_reached(name: &'static str, because: &str) -> Check {
    Check::new(name, Mark::Absent, format!("not reached: {because}"))
}

/// The lines for a stage that did not end well, shared by every stage.
fn trouble(name: &'static str, what: &str, facts: &Facts, outcome: &Outcome, fix: &str) -> Option<Check> {
    match outcome {
        Outcome::Failed { elapsed, words } => {
            Some(Check::problem(name, format!("{what} failed after {}: {words}", secs(*elapsed)), fix))
        }
        Outcome::TimedOut { elapsed, words } => {
            let last = words.as_ref().map(|w| format!("; the last answer was: {w}")).unwrap_or_default();
            Some(Check::problem(
                name,
                format!(
                    "{what} had not succeeded when the {}s deadline passed ({}){last}",
                    facts.timeout.as_secs(),
                    secs(*elapsed)
                ),
                format!("{fix}; or allow longer with --timeout SECS"),
            ))
        }
        Outcome::Interrupted { elapsed } => Some(Check::new(
            name,
            Mark::Problem,
            format!("interrupted after {}; the runtime call was stopped", secs(*elapsed)),
        )),
        Outcome::Done { .. } | Outcome::Skipped => None,
    }
}

/// What to do about a failed create, read from the runtime's words where
/// they say which part was missing.
fn create_fix(facts: &Facts, words: Option<&str>) -> String {
    let words = words.unwrap_or_default().to_ascii_lowercase();
    let shim_missing =
        ["binary not installed", "containerd-shim-", "runtime path", "oci runtime"].iter().any(|w| words.contains(w));
    let image_missing = ["image not available", "image not known", "no such image", "not found", "pull"]
        .iter()
        .any(|w| words.contains(w));
    if shim_missing {
        match facts.kind {
            Kind::Nerdctl => format!(
                "install the shim for {} where containerd finds it (its PATH), or set BRIG_CONTAINERD_RUNTIME to one that is installed",
                facts.shim
            ),
            _ => format!("install {} or configure {} to use one that is installed", facts.shim, facts.kind),
        }
    } else if image_missing {
        format!(
            "load {} into {} first: doctor never pulls (`{} load -i ARCHIVE`; the lab image comes from `cargo xtask images`)",
            facts.image, facts.kind, facts.kind
        )
    } else {
        "`brig --verbose doctor --boot` shows the runtime command brig runs".to_owned()
    }
}

fn create_line(facts: &Facts, outcome: &Outcome) -> Check {
    let what = run_command(facts);
    match outcome {
        Outcome::Done { elapsed } => Check::new(
            "create",
            Mark::Ok,
            format!("{} from {}, created and started by one {what} ({})", facts.sandbox, facts.image, secs(*elapsed)),
        ),
        Outcome::Skipped => not_reached("create", "nothing was attempted"),
        Outcome::Failed { words, .. } => {
            let fix = create_fix(facts, Some(words));
            trouble("create", &what, facts, outcome, &fix).unwrap_or_else(|| not_reached("create", ""))
        }
        other => {
            let fix = match facts.isolation {
                Isolation::Microvm => {
                    "a microVM that never finishes starting looks like this: see the hypervisor line of `brig doctor`"
                }
                Isolation::Container => {
                    "the runtime did not finish starting a container: check that it answers (`brig doctor`)"
                }
            };
            trouble("create", &what, facts, other, fix).unwrap_or_else(|| not_reached("create", ""))
        }
    }
}

fn start_line(facts: &Facts, outcome: &Outcome) -> Check {
    match outcome {
        Outcome::Done { elapsed } => Check::new(
            "start",
            Mark::Ok,
            format!("{} lists {} as running ({})", facts.kind, facts.sandbox, secs(*elapsed)),
        ),
        Outcome::Skipped => not_reached("start", "create did not succeed"),
        other => trouble(
            "start",
            &format!("`{} ps -a`", facts.kind),
            facts,
            other,
            "the sandbox's first process (`sh`, parked) must stay up: check that the image has a shell",
        )
        .unwrap_or_else(|| not_reached("start", "")),
    }
}

fn exec_line(facts: &Facts, outcome: &Outcome, attempts: u32) -> Check {
    let tries = if attempts == 1 { "1 attempt".to_owned() } else { format!("{attempts} attempts") };
    let answered_wrongly = matches!(outcome, Outcome::TimedOut { words: Some(_), .. } | Outcome::Failed { .. });
    let fix = match (facts.isolation, answered_wrongly) {
        (Isolation::Microvm, _) => {
            "a guest kernel that never reaches init looks like this: see the hypervisor line of `brig doctor` (a nested host can pass KVM's probe and still not boot Linux)"
        }
        (Isolation::Container, true) => "check that the image has `true` on its PATH",
        (Isolation::Container, false) => {
            "the runtime's exec never returned: check that the runtime answers (`brig doctor`)"
        }
    };
    match outcome {
        Outcome::Done { elapsed } => Check::new(
            "exec",
            Mark::Ok,
            format!("`true` answered in {} after {tries} ({})", facts.sandbox, secs(*elapsed)),
        ),
        Outcome::Skipped => not_reached("exec", "the sandbox was not running"),
        other => {
            trouble("exec", &format!("`true` ({tries})"), facts, other, fix).unwrap_or_else(|| not_reached("exec", ""))
        }
    }
}

fn cleanup_line(facts: &Facts, outcome: &Outcome, leftover: Leftover) -> Check {
    let by_hand = format!("remove it with `{} rm -f {}`", facts.kind, facts.sandbox);
    match (outcome, leftover) {
        (Outcome::Done { elapsed }, Leftover::Removed) => Check::new(
            "cleanup",
            Mark::Ok,
            format!(
                "{} removed (`{} rm -f`), and {} no longer lists it ({})",
                facts.sandbox,
                facts.kind,
                facts.kind,
                secs(*elapsed)
            ),
        ),
        (Outcome::Done { elapsed }, _) => Check::new(
            "cleanup",
            Mark::Ok,
            format!("nothing to remove: {} has no {} ({})", facts.kind, facts.sandbox, secs(*elapsed)),
        ),
        (Outcome::Skipped, Leftover::NotOurs) => {
            Check::new("cleanup", Mark::Absent, format!("{} is not doctor's, so it was left alone", facts.sandbox))
        }
        (Outcome::Skipped, _) => Check::new("cleanup", Mark::Absent, "nothing to remove: nothing was created"),
        (Outcome::Failed { elapsed, words }, _) => Check::problem(
            "cleanup",
            format!("{} may be left behind ({}): {words}", facts.sandbox, secs(*elapsed)),
            by_hand,
        ),
        (other, _) => trouble("cleanup", &format!("`{} rm -f`", facts.kind), facts, other, &by_hand)
            .unwrap_or_else(|| not_reached("cleanup", "")),
    }
}

fn verdict_line(facts: &Facts, stages: &Stages) -> Check {
    let through = format!("{} with {} ({})", facts.kind, facts.shim, facts.isolation);
    let interrupted =
        [&stages.create, &stages.start, &stages.exec].into_iter().any(|o| matches!(o, Outcome::Interrupted { .. }));
    let detail = match (stages.answered(), stages.failed_stage()) {
        (true, None) => {
            return Check::new(
                "boot",
                Mark::Ok,
                format!(
                    "a sandbox booted through {through} and answered; {} in all (deadline {}s)",
                    secs(stages.total),
                    facts.timeout.as_secs()
                ),
            );
        }
        (true, Some(_)) => format!("a sandbox booted through {through} and answered, but it may be left behind"),
        (false, failed) if interrupted => format!(
            "interrupted during {}, before a sandbox answered through {through}; {} in all",
            failed.unwrap_or("a stage"),
            secs(stages.total)
        ),
        (false, failed) => format!(
            "no sandbox answered through {through}: {} did not succeed; {} in all",
            failed.unwrap_or("a stage"),
            secs(stages.total)
        ),
    };
    Check::new("boot", Mark::Problem, detail)
}

/// `data.boot`, beside the lines in `data.checks`.
pub fn data(facts: &Facts, stages: &Stages) -> BootData {
    BootData {
        sandbox: facts.sandbox.clone(),
        image: facts.image.clone(),
        runtime: facts.kind,
        runtime_bin: facts.runtime_bin.clone(),
        shim: facts.shim.clone(),
        isolation: facts.isolation,
        timeout_s: facts.timeout.as_secs(),
        answered: stages.answered(),
        left_behind: stages.left_behind(),
        failed: stages.failed_stage(),
        elapsed_ms: stages.total.as_millis() as u64,
    }
}

impl Plan {
    pub fn facts(&self) -> &Facts {
        &self.facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Envelope;
    use rstest::rstest;

    fn facts(kind: Kind, shim: &str, isolation: Isolation) -> Facts {
        Facts {
            kind,
            runtime: format!("{kind} (/usr/bin/{kind}), chosen by BRIG_RUNTIME"),
            runtime_bin: format!("/usr/bin/{kind}"),
            shim: shim.to_owned(),
            shim_source: "containerd shim, chosen by BRIG_CONTAINERD_RUNTIME",
            isolation,
            image: "localhost/brig-lab/guest:latest".to_owned(),
            sandbox: "brig-doctor-42".to_owned(),
            timeout: Duration::from_secs(60),
            hardening: None,
        }
    }

    fn container() -> Facts {
        facts(Kind::Nerdctl, "io.containerd.runc.v2", Isolation::Container)
    }

    fn done(ms: u64) -> Outcome {
        Outcome::Done { elapsed: Duration::from_millis(ms) }
    }

    fn failed(words: &str) -> Outcome {
        Outcome::Failed { elapsed: Duration::from_millis(70), words: words.to_owned() }
    }

    fn answered() -> Stages {
        Stages {
            create: done(180),
            start: done(30),
            exec: done(90),
            exec_attempts: 1,
            cleanup: done(550),
            leftover: Leftover::Removed,
            total: Duration::from_millis(860),
        }
    }

    fn create_failed(words: &str) -> Stages {
        Stages {
            create: failed(words),
            start: Outcome::Skipped,
            exec: Outcome::Skipped,
            exec_attempts: 0,
            cleanup: done(50),
            leftover: Leftover::Removed,
            total: Duration::from_millis(120),
        }
    }

    /// `mark  name  detail` as the human report prints it, one per line.
    fn lines(facts: &Facts, stages: &Stages) -> Vec<String> {
        checks(facts, stages).iter().map(|c| format!("{} {} {}", c.mark.text(), c.name, c.detail)).collect()
    }

    #[test]
    fn an_answered_boot_is_one_ok_line_per_stage() {
        let stages = answered();
        assert_eq!(
            lines(&container(), &stages),
            [
                "ok runtime nerdctl (/usr/bin/nerdctl), chosen by BRIG_RUNTIME",
                "ok shim io.containerd.runc.v2 (containerd shim, chosen by BRIG_CONTAINERD_RUNTIME)",
                "ok isolation container: the sandbox shares the host's kernel; accepted because BRIG_ALLOW_CONTAINER_ISOLATION is set",
                "ok create brig-doctor-42 from localhost/brig-lab/guest:latest, created and started by one `nerdctl run --detach` (0.18s)",
                "ok start nerdctl lists brig-doctor-42 as running (0.03s)",
                "ok exec `true` answered in brig-doctor-42 after 1 attempt (0.09s)",
                "ok cleanup brig-doctor-42 removed (`nerdctl rm -f`), and nerdctl no longer lists it (0.55s)",
                "ok boot a sandbox booted through nerdctl with io.containerd.runc.v2 (container) and answered; 0.86s in all (deadline 60s)",
            ]
        );
        assert_eq!(stages.code(), Code::Success);
        let elapsed: Vec<Option<u64>> = checks(&container(), &stages).iter().map(|c| c.elapsed_ms).collect();
        assert_eq!(elapsed, [None, None, None, Some(180), Some(30), Some(90), Some(550), Some(860)]);
    }

    #[rstest]
    #[case::shim_not_installed(
        facts(Kind::Nerdctl, "io.containerd.urunc.v2", Isolation::Microvm),
        "failed to start shim: failed to resolve runtime path: runtime \"io.containerd.urunc.v2\" binary not installed \"containerd-shim-urunc-v2\": file does not exist: unknown",
        "install the shim for io.containerd.urunc.v2 where containerd finds it"
    )]
    #[case::nerdctl_image_missing(
        container(),
        "image not available: \"localhost/brig-lab/guest:latest\"",
        "doctor never pulls"
    )]
    #[case::podman_image_missing(
        facts(Kind::Podman, "runc", Isolation::Container),
        "localhost/brig-lab/guest:latest: image not known",
        "load localhost/brig-lab/guest:latest into podman first"
    )]
    #[case::anything_else(container(), "cgroup v1 is not supported", "brig --verbose doctor --boot")]
    fn a_failed_create_carries_the_runtime_words_and_a_fitting_fix(
        #[case] facts: Facts,
        #[case] words: &str,
        #[case] fix: &str,
    ) {
        let stages = create_failed(words);
        let checks = checks(&facts, &stages);
        let create = &checks[3];
        assert_eq!((create.name, create.mark), ("create", Mark::Problem));
        assert_eq!(create.detail, format!("`{} run --detach` failed after 0.07s: {words}", facts.kind));
        assert!(create.fix.as_deref().unwrap().contains(fix), "{:?}", create.fix);
        assert_eq!(checks[4].detail, "not reached: create did not succeed");
        assert_eq!(checks[5].detail, "not reached: the sandbox was not running");
        assert_eq!((checks[4].mark, checks[5].mark), (Mark::Absent, Mark::Absent));
        assert_eq!(checks[6].mark, Mark::Ok, "cleanup still ran: {}", checks[6].detail);
        assert!(checks[7].detail.contains("create did not succeed"), "{}", checks[7].detail);
        assert_eq!(stages.code(), Code::Failure);
        assert_eq!(stages.failed_stage(), Some("create"));
    }

    #[test]
    fn an_exec_that_never_answers_is_a_timeout_naming_the_deadline() {
        let microvm = facts(Kind::Nerdctl, "io.containerd.urunc.v2", Isolation::Microvm);
        let stages = Stages {
            exec: Outcome::TimedOut {
                elapsed: Duration::from_millis(59_700),
                words: Some("OCI runtime exec failed: guest not ready".to_owned()),
            },
            exec_attempts: 37,
            ..answered()
        };
        let checks = checks(&microvm, &stages);
        assert_eq!(checks[5].mark, Mark::Problem);
        assert_eq!(
            checks[5].detail,
            "`true` (37 attempts) had not succeeded when the 60s deadline passed (59.70s); the last answer was: OCI runtime exec failed: guest not ready"
        );
        let fix = checks[5].fix.as_deref().unwrap();
        assert!(fix.contains("never reaches init") && fix.ends_with("--timeout SECS"), "{fix}");
        assert_eq!(stages.code(), Code::Failure);
    }

    #[test]
    fn a_failed_removal_fails_an_answered_boot_and_says_how_to_remove_it() {
        let stages = Stages { cleanup: failed("cannot remove container: device or resource busy"), ..answered() };
        let checks = checks(&container(), &stages);
        assert_eq!(checks[6].mark, Mark::Problem);
        assert_eq!(
            checks[6].detail,
            "brig-doctor-42 may be left behind (0.07s): cannot remove container: device or resource busy"
        );
        assert_eq!(checks[6].fix.as_deref(), Some("remove it with `nerdctl rm -f brig-doctor-42`"));
        assert!(checks[7].detail.ends_with("but it may be left behind"), "{}", checks[7].detail);
        assert!(stages.left_behind());
        assert_eq!(stages.code(), Code::Failure);
    }

    #[test]
    fn a_name_doctor_did_not_create_is_left_alone() {
        let stages = Stages { cleanup: Outcome::Skipped, leftover: Leftover::NotOurs, ..create_failed("taken") };
        let checks = checks(&container(), &stages);
        assert_eq!(checks[6].mark, Mark::Absent);
        assert_eq!(checks[6].detail, "brig-doctor-42 is not doctor's, so it was left alone");
        assert!(!stages.left_behind());
    }

    #[test]
    fn an_interrupted_boot_says_so() {
        let stages =
            Stages { create: Outcome::Interrupted { elapsed: Duration::from_millis(1990) }, ..create_failed("") };
        let checks = checks(&container(), &stages);
        assert_eq!(checks[3].detail, "interrupted after 1.99s; the runtime call was stopped");
        assert!(checks[7].detail.starts_with("interrupted during create"), "{}", checks[7].detail);
        assert_eq!(stages.code(), Code::Failure);
    }

    #[test]
    fn json_has_the_lines_and_the_boot_facts() {
        let stages = answered();
        let facts = container();
        let report =
            super::super::DoctorData { checks: checks(&facts, &stages), boot: Some(data(&facts, &stages)), plan: None };
        let json: serde_json::Value = serde_json::from_str(&Envelope::new("Doctor", &report).to_line()).unwrap();
        assert_eq!(json["kind"], "Doctor");
        assert_eq!(
            json["data"]["boot"],
            serde_json::json!({
                "sandbox": "brig-doctor-42",
                "image": "localhost/brig-lab/guest:latest",
                "runtime": "nerdctl",
                "runtimeBin": "/usr/bin/nerdctl",
                "shim": "io.containerd.runc.v2",
                "isolation": "container",
                "timeoutS": 60,
                "answered": true,
                "leftBehind": false,
                "elapsedMs": 860,
            })
        );
        let exec = &json["data"]["checks"][5];
        assert_eq!(exec["name"], "exec");
        assert_eq!(exec["mark"], "ok");
        assert_eq!(exec["elapsedMs"], 90);
        assert!(exec.get("fix").is_none(), "{exec}");
        assert!(json["data"]["checks"][0].get("elapsedMs").is_none());

        let failed = create_failed("image not known");
        let json = serde_json::to_value(data(&facts, &failed)).unwrap();
        assert_eq!(json["failed"], "create");
        assert_eq!(json["answered"], false);
    }

    #[rstest]
    #[case("localhost/brig-lab/guest:latest", true)]
    #[case("ghcr.io/brig-sh/claude-code@sha256:0123", true)]
    #[case("-v", false)]
    #[case("--privileged", false)]
    #[case("img latest", false)]
    #[case("img\nlatest", false)]
    #[case("img\u{1b}[31m", false)]
    fn image_references_that_argv_cannot_misread(#[case] image: &str, #[case] plausible: bool) {
        assert_eq!(image_is_plausible(image), plausible);
    }
}
