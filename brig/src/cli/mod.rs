//! The command line: clap definitions, dispatch, and the edge where errors
//! are printed once and turned into an exit code. One module per verb; each
//! verb's clap struct lives beside its handler.

pub mod agent;
mod completion;
mod doctor;
mod info;
mod logs;
mod ls;
pub(crate) mod plan;
mod policy;
mod rm;
mod run;
mod secret;
mod stop;
mod version;

use std::ffi::OsString;
use std::io::Write;

use clap::{CommandFactory, Parser, Subcommand};

use crate::environment::Environment;
use crate::exit::{Code, Outcome, exit_code};
use crate::{Error, build_info::BuildInfo};

/// brig runs AI coding agents in sandboxes they cannot escape.
#[derive(Debug, Parser)]
#[command(name = "brig", version = version_line(), disable_help_subcommand = true, propagate_version = false)]
pub struct Cli {
    /// Print progress and the runtime commands brig runs.
    #[arg(long, global = true)]
    pub verbose: bool,
    /// Print less: no notices, only warnings and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Machine-readable output (report verbs print an envelope).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Start the sandbox if needed and run the agent in it.
    Run(run::RunArgs),
    /// A login shell in the sandbox (starting it first), or one command.
    Sh(run::ShArgs),
    /// Stop the sandbox; its name, home and record stay.
    Stop(stop::StopArgs),
    /// Stop and remove a sandbox (or every one with --all), and a home brig created.
    Rm(rm::RmArgs),
    /// List every brig sandbox.
    Ls(ls::LsArgs),
    /// The sandbox's log from the runtime.
    Logs(logs::LogsArgs),
    /// Show what a run would do, without booting anything.
    Info(info::InfoArgs),
    /// Show what a run would be allowed to do, or why it would be refused.
    Plan(plan::PlanArgs),
    /// Manage agent profiles.
    #[command(subcommand)]
    Agent(agent::AgentCommand),
    /// Manage egress policies: where an isolated sandbox may connect.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Manage the secrets a run hands to guests by name.
    #[command(subcommand)]
    Secret(secret::SecretCommand),
    /// Check what brig depends on: hypervisor, runtime, shim, profiles,
    /// brigd; with --boot, boot a throwaway sandbox and report each stage.
    Doctor(doctor::DoctorArgs),
    /// Print the build.
    Version(version::VersionArgs),
    /// Print a shell completion script.
    Completion(completion::CompletionArgs),
}

/// clap wants the version text for the life of the program; it is built once.
fn version_line() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| BuildInfo::current().line())
}

/// What every verb handler receives besides its own arguments.
#[derive(Debug)]
pub struct Context {
    pub env: Environment,
    pub json: bool,
    pub quiet: bool,
}

/// Parse `args`, run the verb, print any error once, and return the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Outcome {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => return clap_error(err).into(),
    };
    init_tracing(cli.verbose);
    let ctx = Context { env: Environment::from_process(), json: cli.json, quiet: cli.quiet };
    let result = match cli.verb {
        Verb::Run(args) => run::run(args, &ctx),
        Verb::Sh(args) => run::sh(args, &ctx),
        Verb::Stop(args) => stop::run(args, &ctx).map(Outcome::from),
        Verb::Rm(args) => rm::run(args, &ctx).map(Outcome::from),
        Verb::Ls(args) => ls::run(args, &ctx).map(Outcome::from),
        Verb::Logs(args) => logs::run(args, &ctx).map(Outcome::from),
        Verb::Info(args) => info::run(args, &ctx).map(Outcome::from),
        Verb::Plan(args) => plan::run(args, &ctx).map(Outcome::from),
        Verb::Agent(command) => agent::run(command, &ctx.env, ctx.json).map(Outcome::from),
        Verb::Policy(command) => policy::run(command, &ctx).map(Outcome::from),
        Verb::Secret(command) => secret::run(command, &ctx).map(Outcome::from),
        Verb::Doctor(args) => doctor::run(args, &ctx).map(Outcome::from),
        Verb::Version(args) => version::run(args, &ctx).map(Outcome::from),
        Verb::Completion(args) => completion::run(args).map(Outcome::from),
    };
    match result {
        Ok(code) => code,
        Err(Error::Stdout(err)) if err.kind() == std::io::ErrorKind::BrokenPipe => Code::Success.into(),
        Err(err) => {
            print_error(&err);
            exit_code(&err).into()
        }
    }
}

/// A posture and what it promises, for the `network` row of `info` and
/// `plan`.
pub(crate) fn network_line(network: crate::settings::Network) -> String {
    use crate::settings::Network;
    let promise = match network {
        Network::Shared => "one network for every shared sandbox on this host; reaches the host",
        Network::Isolated => "a network of this sandbox's own; reaches neither the host nor other sandboxes",
        Network::Offline => "no network at all",
    };
    format!("{network} ({promise})")
}

/// The egress policy of a run, for the `egress` row of `info`, `plan` and
/// `policy check`.
pub(crate) fn egress_line(egress: Option<&crate::policy::Joined>) -> String {
    let Some(e) = egress else { return "no policy (the posture's own reach)".to_owned() };
    let list = |targets: &[crate::policy::Target]| {
        if targets.is_empty() {
            "nothing".to_owned()
        } else {
            targets.iter().map(|t| crate::warn::escaped(&t.to_string())).collect::<Vec<_>>().join(", ")
        }
    };
    format!(
        "policy {}: deny {}; allow {}; anything else {}",
        e.names.join(", "),
        list(&e.deny),
        list(&e.allow),
        if e.default == crate::policy::Default::Deny { "refused" } else { "allowed" }
    )
}

/// What a sandbox publishes, for the `ports` row.
pub(crate) fn ports_line(ports: &[crate::ports::Publish]) -> String {
    if ports.is_empty() {
        return "none published".to_owned();
    }
    ports.iter().map(crate::ports::Publish::describe).collect::<Vec<_>>().join("; ")
}

/// Ask on the terminal; anything but y/yes is no.
pub(super) fn confirm(question: &str) -> bool {
    crate::engine::Prompts::Terminal.confirm(question)
}

/// `brig: error: <message>: <source>: <source>…` on stderr.
fn print_error(err: &Error) {
    let _ = writeln!(std::io::stderr().lock(), "brig: error: {}", crate::warn::escaped(&crate::error::chain(err)));
}

/// clap's own help and version go to stdout with exit 0; every usage
/// mistake is exit 2, with a pointer to where agent flags belong when the
/// mistake was an unknown flag.
fn clap_error(err: clap::Error) -> Code {
    use clap::error::ErrorKind;
    let kind = err.kind();
    let _ = err.print();
    match kind {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Code::Success,
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Code::Usage,
        ErrorKind::UnknownArgument => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "note: brig's flags go before the ref; the agent's own flags go after it: brig run [flags] <ref> [project] [agent args…]"
            );
            Code::Usage
        }
        _ => Code::Usage,
    }
}

fn init_tracing(verbose: bool) {
    let level = if verbose { "brig=debug" } else { "brig=warn" };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_env_filter(tracing_subscriber::EnvFilter::new(level))
        .try_init();
}

/// Write to stdout; a closed pipe surfaces as [`Error::Stdout`] and ends the
/// verb quietly with exit 0.
pub fn print(text: impl AsRef<str>) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_ref().as_bytes()).and_then(|()| out.flush()).map_err(Error::Stdout)
}

/// The clap command, for completion scripts.
pub fn command() -> clap::Command {
    Cli::command()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
