//! `brig run` and `brig sh`: the run line.
//!
//! The line is read by position, never by looking at the filesystem: the
//! first bare word is the ref; on `run` only, the next bare word is the
//! project; everything after that, or after `--`, belongs to the agent. A
//! brig flag found past the ref is handed to the agent as written, with a
//! warning, because guessing which program a flag was meant for is how a
//! sandbox ends up configured differently from what the user typed.

use std::path::PathBuf;

use serde::Serialize;

use crate::Error;
use crate::cli::{Context, print};
use crate::error::UsageError;
use crate::exit::{Code, Outcome, exit_code};
use crate::json::Envelope;
use crate::profile::Registry;
use std::io::IsTerminal;

use crate::engine::{Action, Engine, Ensured, ProjectChoice, Prompts, Request};
use crate::profile::{Kind as ProfileKind, Profile};
use crate::runtime::ExecSpec;
use crate::session::Session;
use crate::settings::{Network, Positive};
use crate::warn::Warnings;

/// Flags shared by `run` and `sh`, read only before the ref.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SandboxOptions {
    /// Guest image (overrides BRIG_IMAGE and the profile).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Use this host directory as the guest home; brig never deletes it.
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Memory for the sandbox, in MB.
    #[arg(long, value_name = "MB", value_parser = parse_positive)]
    pub mem: Option<u32>,
    /// vCPUs for the sandbox.
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub cpus: Option<u32>,
    /// Network posture of a new sandbox.
    #[arg(long, value_name = "POSTURE", value_parser = parse_network)]
    pub network: Option<Network>,
    /// Same as --network offline.
    #[arg(long)]
    pub offline: bool,
    /// Publish a guest port on the host, 127.0.0.1 unless an address is
    /// given: PORT, HOST:GUEST or ADDRESS:HOST:GUEST, with /tcp or /udp.
    /// Repeatable; fixed when the sandbox boots (naming others recreates
    /// it).
    #[arg(long, value_name = "[ADDR:]HOST:GUEST", value_parser = crate::ports::Publish::parse)]
    pub publish: Vec<crate::ports::Publish>,
    /// Seed the guest home with the agent's host skills.
    #[arg(long)]
    pub skills: bool,
    /// Retiring: the session label (use <agent>@<label>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub sandbox: SandboxOptions,
    /// Start the sandbox and return, printing its name.
    #[arg(short, long)]
    pub detach: bool,
    /// Mount no project and forget the remembered one.
    #[arg(long)]
    pub no_project: bool,
    /// <ref> [project] [agent args…]
    #[arg(value_name = "REF", trailing_var_arg = true, required = true)]
    pub words: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ShArgs {
    #[command(flatten)]
    pub sandbox: SandboxOptions,
    /// Run this script with bash -lc (also accepted right after the ref).
    #[arg(short = 'c', long = "command", value_name = "SCRIPT")]
    pub script: Option<String>,
    /// Refused: sh mounts the project the session remembers.
    #[arg(long, hide = true)]
    pub no_project: bool,
    /// Refused: sh always attaches.
    #[arg(short, long, hide = true)]
    pub detach: bool,
    /// <ref> [command…]
    #[arg(value_name = "REF", trailing_var_arg = true, required = true)]
    pub words: Vec<String>,
}

fn parse_positive(text: &str) -> Result<u32, String> {
    crate::settings::parse_as::<Positive>("value", text)
        .map(|p| p.0)
        .map_err(|_| format!("{text:?} is not a whole number greater than 0"))
}

fn parse_network(text: &str) -> Result<Network, String> {
    crate::settings::parse_as::<Network>("--network", text).map_err(|e| e.to_string())
}

/// brig's own run-line flags, for the "stood past the ref" warning.
const OWN_FLAGS: &[&str] = &[
    "--image",
    "--home",
    "--mem",
    "--cpus",
    "--no-project",
    "-d",
    "--detach",
    "--skills",
    "--network",
    "--offline",
    "--publish",
    "--json",
    "-q",
    "--quiet",
    "--verbose",
    "--name",
];

/// A run line split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLine {
    pub reference: String,
    pub project: Option<String>,
    pub agent_args: Vec<String>,
    /// brig flags that stood past the ref and go to the agent as written.
    pub misplaced: Vec<String>,
    /// `sh` only: `-c '<script>'` right after the ref.
    pub script: Option<String>,
}

impl RunLine {
    /// Split `words` (the ref onwards). `takes_project` is true for `run`.
    pub fn split(words: &[String], takes_project: bool) -> RunLine {
        let (reference, rest) = words.split_first().expect("clap requires the ref");
        let mut rest = rest;
        let mut project = None;
        if let (true, Some((first, tail))) = (takes_project, rest.split_first())
            && !first.starts_with('-')
        {
            project = Some(first.clone());
            rest = tail;
        }
        // `brig sh <ref> -c '<script>' [args…]`: the script form. After
        // `--`, a `-c` is a command like any other.
        if !takes_project
            && let [flag, script, tail @ ..] = rest
            && flag == "-c"
        {
            return RunLine {
                reference: reference.clone(),
                project: None,
                agent_args: tail.to_vec(),
                misplaced: Vec::new(),
                script: Some(script.clone()),
            };
        }
        // `--` ends brig's reading; a project read before it stands.
        let (rest, after_dashes) = match rest.split_first() {
            Some((first, tail)) if first == "--" => (tail, true),
            _ => (rest, false),
        };
        let misplaced = if after_dashes {
            Vec::new()
        } else {
            rest.iter()
                .take_while(|a| *a != "--")
                .filter(|a| {
                    let name = a.split('=').next().unwrap_or(a);
                    OWN_FLAGS.contains(&name)
                })
                .cloned()
                .collect()
        };
        RunLine { reference: reference.clone(), project, agent_args: rest.to_vec(), misplaced, script: None }
    }
}

/// The `Run` object printed as the last line of stdout under `--json`.
#[derive(Debug, Serialize)]
pub struct RunReport<'a> {
    #[serde(rename = "ref")]
    pub reference: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<&'a str>,
    pub stage: &'static str,
    pub exit: u8,
}

impl RunReport<'_> {
    pub fn print(&self) -> Result<(), Error> {
        print(format!("{}\n", Envelope::new("Run", self).to_line()))
    }
}

pub(super) fn network_flag(options: &SandboxOptions) -> Result<Option<Network>, Error> {
    match (options.offline, options.network) {
        (true, Some(network)) if network != Network::Offline => {
            Err(crate::settings::Error::OfflineWithNetwork { network }.into())
        }
        (true, _) => Ok(Some(Network::Offline)),
        (false, network) => Ok(network),
    }
}

pub fn run(args: RunArgs, ctx: &Context) -> Result<Outcome, Error> {
    let line = RunLine::split(&args.words, true);
    with_json_refusal(ctx, &line.reference, || {
        if let (true, Some(project)) = (args.no_project, &line.project) {
            return Err(UsageError::NoProjectWithProject { project: project.clone() }.into());
        }
        let project = match (&line.project, args.no_project) {
            (Some(dir), _) => ProjectChoice::Named(dir.clone()),
            (None, true) => ProjectChoice::Nothing,
            (None, false) => ProjectChoice::Remembered,
        };
        warn_misplaced(&line);
        let launch = Launch { line: &line, options: &args.sandbox, project, verb: Verb::Run, detach: args.detach };
        launch.go(ctx)
    })
}

pub fn sh(args: ShArgs, ctx: &Context) -> Result<Outcome, Error> {
    let mut line = RunLine::split(&args.words, false);
    if let Some(script) = &args.script {
        if line.script.is_some() {
            return Err(UsageError::TwoScripts.into());
        }
        line.script = Some(script.clone());
    }
    with_json_refusal(ctx, &line.reference, || {
        if args.no_project {
            return Err(UsageError::NoProjectOnVerb { verb: "sh" }.into());
        }
        if args.detach {
            return Err(UsageError::DetachOnVerb { verb: "sh" }.into());
        }
        let launch = Launch {
            line: &line,
            options: &args.sandbox,
            project: ProjectChoice::Remembered,
            verb: Verb::Sh,
            detach: false,
        };
        launch.go(ctx)
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Run,
    Sh,
}

/// A parsed run or sh line on its way to the engine.
struct Launch<'a> {
    line: &'a RunLine,
    options: &'a SandboxOptions,
    project: ProjectChoice,
    verb: Verb,
    detach: bool,
}

impl Launch<'_> {
    fn go(self, ctx: &Context) -> Result<Outcome, Error> {
        let network = network_flag(self.options)?;
        let registry = Registry::load(&ctx.env);
        for line in registry.warnings() {
            crate::warn::now(line);
        }
        let prompts = if std::io::stdin().is_terminal() { Prompts::Terminal } else { Prompts::Nobody };
        let mut engine = Engine::new(&ctx.env, &registry, prompts, Warnings::stderr_quiet(ctx.quiet))?;
        let (session, profile) = engine.session(&self.line.reference, self.options.name.as_deref())?;
        let request = Request {
            session: session.clone(),
            profile: profile.clone(),
            home_flag: self.options.home.as_ref().map(|p| p.to_string_lossy().into_owned()),
            project: self.project,
            image: self.options.image.clone(),
            mem: self.options.mem,
            cpus: self.options.cpus,
            network,
            publish: self.options.publish.clone(),
            skills: self.options.skills,
        };
        // A command in a sandbox brig left running needs no runtime call
        // before the exec: the exec itself proves the sandbox runs, and the
        // full path takes over when the runtime says it does not. `-d` has
        // no exec to prove it, `--skills` writes into the home, and an exec
        // the runtime refuses may already have read from a pipe or a file on
        // stdin, which a second exec could not read again: only a terminal or
        // /dev/null lets the exec go first.
        let stdin = StdinKind::of_ours();
        // Credential files are written by an exec before the command's, on
        // a sandbox known to run.
        let assume = !self.detach && !request.skills && stdin != StdinKind::Data && profile.files.is_empty();
        let ensured = if assume { engine.ensure_assuming(&request)? } else { engine.ensure(&request)? };
        if self.detach {
            if ctx.json {
                RunReport { reference: session.typed(), sandbox: Some(session.sandbox()), stage: "detached", exit: 0 }
                    .print()?;
            } else {
                print(format!("{}\n", session.sandbox()))?;
            }
            return Ok(Code::Success.into());
        }
        let argv = agent_argv(self.verb, &profile, &session, self.line)?;
        engine.deliver_files(ensured.runtime.as_ref(), session.sandbox(), &profile)?;
        let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        let env = engine.exec_env(&profile)?;
        let spec = |ensured: &Ensured| ExecSpec {
            argv: argv.clone(),
            workdir: Some(ensured.workdir(&profile)),
            env: env.fed.clone(),
            exposed: env.exposed.clone(),
            tty: terminal && !ctx.json,
            // Nothing to read: no `-i`, so the command sees end of input at
            // once (nerdctl's `-i` never passes on an end of input that came
            // before the exec started).
            interactive: stdin != StdinKind::Null,
        };
        let agent = Agent { ctx, session: &session };
        if ensured.assumed {
            let command = ensured.runtime.exec(session.sandbox(), &spec(&ensured));
            let run = command.interactive_holding_stderr(REFUSAL_WINDOW).map_err(crate::runtime::Error::from)?;
            let status = run.status.code().unwrap_or(1);
            if ensured.runtime.exec_refused(status, &run.stderr_tail) {
                // Not running after all (stopped, removed, the host
                // rebooted): the full path decides, and the command runs
                // once it did something. A guest that merely printed the
                // runtime's words finds its sandbox running, and its own
                // failure stands.
                let fresh = engine.ensure(&request)?;
                if fresh.action != Action::Reuse {
                    return agent.exec(fresh.runtime.as_ref(), fresh.runtime.exec(session.sandbox(), &spec(&fresh)));
                }
            }
            let _ = std::io::Write::write_all(&mut std::io::stderr(), &run.held);
            return agent.finish(ensured.runtime.as_ref(), status, &run.stderr_tail);
        }
        agent.exec(ensured.runtime.as_ref(), ensured.runtime.exec(session.sandbox(), &spec(&ensured)))
    }
}

/// What brig's own stdin is, for how an exec may use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdinKind {
    Terminal,
    /// `/dev/null` or closed: nothing to read.
    Null,
    /// A pipe, a file, a socket: bytes that can be read once.
    Data,
}

impl StdinKind {
    fn of_ours() -> StdinKind {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return StdinKind::Terminal;
        }
        match rustix::fs::fstat(&stdin) {
            Err(_) => StdinKind::Null,
            Ok(st) => {
                let null = rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::CharacterDevice
                    && rustix::fs::major(st.st_rdev) == 1
                    && rustix::fs::minor(st.st_rdev) == 3;
                if null { StdinKind::Null } else { StdinKind::Data }
            }
        }
    }
}

/// How long the stderr of an exec into an assumed-running sandbox is held
/// back: a runtime refuses an exec into a stopped or missing sandbox well
/// within it, and that refusal is not shown when brig recovers from it.
const REFUSAL_WINDOW: std::time::Duration = std::time::Duration::from_millis(300);

/// The agent's (or command's) exec, and how its end is reported.
struct Agent<'a> {
    ctx: &'a Context,
    session: &'a Session,
}

impl Agent<'_> {
    fn exec(&self, runtime: &dyn crate::runtime::Runtime, command: crate::process::Command) -> Result<Outcome, Error> {
        if self.ctx.json || runtime.status_only_on_stderr() {
            // brig stays the parent: to report under --json, or because the
            // runtime names the agent's real exit status only on its stderr.
            let (status, stderr_tail) = command.interactive_keep_stderr().map_err(crate::runtime::Error::from)?;
            return self.finish(runtime, status.code().unwrap_or(1), &stderr_tail);
        }
        // Hand the terminal to the runtime: brig's process becomes the
        // runtime's exec, so signals and the exit status are the agent's.
        Err(crate::runtime::Error::from(command.exec_replace()).into())
    }

    fn finish(&self, runtime: &dyn crate::runtime::Runtime, status: i32, stderr_tail: &str) -> Result<Outcome, Error> {
        let code = runtime.exec_status(status, stderr_tail);
        let exit = u8::try_from(code.clamp(0, 255)).unwrap_or(1);
        if self.ctx.json {
            RunReport { reference: self.session.typed(), sandbox: Some(self.session.sandbox()), stage: "agent", exit }
                .print()?;
        }
        Ok(Outcome::Agent(exit))
    }
}

/// What runs in the sandbox. `run` starts the profile's agent (claude-code
/// also gets the session label as its display name, and only on `run`);
/// `sh` and shell profiles start a login shell, one command through it, or
/// a script (`-c`) with the words after it as its `$1…`.
fn agent_argv(verb: Verb, profile: &Profile, session: &Session, line: &RunLine) -> Result<Vec<String>, Error> {
    let args = &line.agent_args;
    let shell = verb == Verb::Sh || profile.kind == ProfileKind::Shell;
    if shell {
        if let Some(script) = &line.script {
            let mut argv: Vec<String> = vec!["bash".into(), "-lc".into(), script.clone(), "bash".into()];
            argv.extend(args.iter().cloned());
            return Ok(argv);
        }
        if args.is_empty() {
            return Ok(vec!["bash".into(), "-l".into()]);
        }
        // `"$@"` keeps every word of the command as given, with no re-quoting.
        let mut argv: Vec<String> = vec!["bash".into(), "-lc".into(), "exec \"$@\"".into(), "bash".into()];
        argv.extend(args.iter().cloned());
        return Ok(argv);
    }
    // The plan refused a GUI profile before anything was made.
    let Some(binary) = profile.binary.clone() else {
        return Err(crate::engine::Error::GuiNotHere { profile: profile.name.clone() }.into());
    };
    let mut argv = vec![binary];
    if let (Some(label), "claude-code") = (session.label(), profile.name.as_str()) {
        argv.extend(["--name".to_owned(), label.to_owned()]);
    }
    argv.extend(args.iter().cloned());
    Ok(argv)
}

fn warn_misplaced(line: &RunLine) {
    for flag in &line.misplaced {
        crate::warn::now(format!(
            "{flag} stands after the ref, so it is passed to the agent as written; put brig's flags before the ref"
        ));
    }
}

/// Under `--json`, a refusal is also reported on stdout as a `Run` object
/// with `stage: "brig"`, so a script reading only stdout still learns why.
fn with_json_refusal(
    ctx: &Context,
    reference: &str,
    body: impl FnOnce() -> Result<Outcome, Error>,
) -> Result<Outcome, Error> {
    let result = body();
    if let (true, Err(err)) = (ctx.json, &result) {
        let report = RunReport { reference, sandbox: None, stage: "brig", exit: exit_code(err).as_u8() };
        report.print()?;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[rstest]
    #[case::ref_only("claude", true, None, "", "")]
    #[case::project("claude ~/p", true, Some("~/p"), "", "")]
    #[case::project_and_args("claude ~/p --model opus", true, Some("~/p"), "--model opus", "")]
    #[case::agent_flag_first("claude --resume x", true, None, "--resume x", "")]
    #[case::dashes_after_project("claude ~/p -- --image x", true, Some("~/p"), "--image x", "")]
    #[case::dashes_before_project("claude -- ~/p", true, None, "~/p", "")]
    #[case::own_flag_past_ref("claude ~/p --image x", true, Some("~/p"), "--image x", "--image")]
    #[case::own_flag_with_value("claude --network=shared", true, None, "--network=shared", "--network=shared")]
    #[case::sh_has_no_project("claude ls -la", false, None, "ls -la", "")]
    #[case::sh_command_after_dashes("claude -- -d", false, None, "-d", "")]
    #[case::sh_dash_c_after_dashes_is_a_command("claude -- -c x", false, None, "-c x", "")]
    fn run_line(
        #[case] line: &str,
        #[case] takes_project: bool,
        #[case] project: Option<&str>,
        #[case] agent: &str,
        #[case] misplaced: &str,
    ) {
        let got = RunLine::split(&words(line), takes_project);
        assert_eq!(got.reference, "claude");
        assert_eq!(got.script, None);
        assert_eq!(got.project.as_deref(), project);
        assert_eq!(got.agent_args, words(agent));
        assert_eq!(got.misplaced, words(misplaced));
    }

    #[test]
    fn sh_takes_a_script_after_the_ref() {
        let got = RunLine::split(&words("claude -c echo a b"), false);
        assert_eq!(got.script.as_deref(), Some("echo"));
        assert_eq!(got.agent_args, words("a b"));
        // On `run`, -c belongs to the agent.
        assert_eq!(RunLine::split(&words("claude -c x"), true).script, None);
    }
}
