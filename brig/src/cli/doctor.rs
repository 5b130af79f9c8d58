//! `brig doctor [ref] [--json]`: one line per thing brig depends on, each
//! marked `ok`, `--` (absent, and that is fine or not checked) or `!!` (a
//! problem, with its fix).
//!
//! Only a missing or broken runtime sets the exit status (4): everything
//! else is advice. Every line says what was actually looked at; a check this
//! build cannot make says so instead of passing.
//!
//! `brig doctor --boot` is the one test no static check can stand in for: it
//! boots a sandbox through the runtime and shim brig would use ([`boot`]).

mod boot;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::Error;
use crate::build_info::BuildInfo;
use crate::cli::{Context, print};
use crate::daemon::{client, socket};
use crate::environment::Environment;
use crate::exit::Code;
use crate::json::Envelope;
use crate::profile::{Profile, Registry};
use crate::runtime::{self, Chosen, DEFAULT_SHIM, Isolation, Kind, Resolved, Runtime};
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Check the runtime this session's profile uses (its runtimeBin).
    #[arg(value_name = "REF")]
    pub reference: Option<String>,
    /// Boot a throwaway sandbox through the runtime and shim, run `true` in
    /// it, remove it, and report each stage.
    #[arg(long)]
    pub boot: bool,
    /// The image --boot uses (else BRIG_IMAGE); it must be present locally,
    /// doctor never pulls.
    #[arg(long, value_name = "REF", requires = "boot")]
    pub image: Option<String>,
    /// Seconds --boot allows for create, start and the first exec; removal
    /// has 30 more of its own.
    #[arg(
        long,
        value_name = "SECS",
        requires = "boot",
        default_value_t = boot::DEFAULT_TIMEOUT_S,
        value_parser = clap::value_parser!(u64).range(1..=3600),
    )]
    pub timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Mark {
    Ok,
    /// Absent, and not a problem; or not checked by this build.
    Absent,
    Problem,
}

impl Mark {
    fn text(self) -> &'static str {
        match self {
            Mark::Ok => "ok",
            Mark::Absent => "--",
            Mark::Problem => "!!",
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Check {
    name: &'static str,
    mark: Mark,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
    /// How long the stage took (`--boot` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_ms: Option<u64>,
}

impl Check {
    fn new(name: &'static str, mark: Mark, detail: impl Into<String>) -> Check {
        Check { name, mark, detail: detail.into(), fix: None, elapsed_ms: None }
    }

    fn problem(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { name, mark: Mark::Problem, detail: detail.into(), fix: Some(fix.into()), elapsed_ms: None }
    }
}

#[derive(Debug, Serialize)]
struct DoctorData {
    checks: Vec<Check>,
    /// `--boot` only: what was booted and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    boot: Option<boot::BootData>,
    /// With a ref: the engine's plan for a run of it, as `brig plan` shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<super::plan::PlanData>,
}

/// How long `brig doctor` waits for a daemon's answer.
const BRIGD_DEADLINE: Duration = Duration::from_secs(3);

pub fn run(args: DoctorArgs, ctx: &Context) -> Result<Code, Error> {
    let env = &ctx.env;
    let registry = Registry::load(env);
    let profile = match &args.reference {
        Some(reference) => {
            let session = Session::parse(reference, &registry)?;
            Some(registry.resolve(session.agent())?.profile.clone())
        }
        None => None,
    };
    if args.boot {
        return run_boot(&args, ctx, &registry, profile.as_ref());
    }

    let mut checks = vec![
        Check::new("build", Mark::Ok, BuildInfo::current().line()),
        Check::new("host", Mark::Ok, host()),
        hypervisor(),
    ];
    let (runtime_check, shim_check) = runtime_checks(env, profile.as_ref());
    let runtime_broken = runtime_check.mark == Mark::Problem;
    checks.push(runtime_check);
    checks.push(shim_check);
    checks.push(trust(env));
    checks.push(guest_root(env, profile.as_ref()));
    checks.push(host_isolation(env, profile.as_ref()));
    checks.push(profile_dir(env, &registry));
    checks.push(secret_store());
    checks.push(brigd(env));
    let plan = match &args.reference {
        Some(reference) => {
            let (check, data) = plan_check(ctx, &registry, reference)?;
            checks.push(check);
            Some(data)
        }
        None => None,
    };

    if ctx.json {
        print(format!("{}\n", Envelope::new("Doctor", &DoctorData { checks, boot: None, plan }).to_line()))?;
    } else {
        print(render(&checks))?;
    }
    Ok(if runtime_broken { Code::NoRuntime } else { Code::Success })
}

/// `--boot`: plan (refusing before anything exists), boot, report.
fn run_boot(args: &DoctorArgs, ctx: &Context, registry: &Registry, profile: Option<&Profile>) -> Result<Code, Error> {
    let plan = boot::plan(&ctx.env, registry, profile, args.image.as_deref(), args.timeout)?;
    // From here on a signal must not end brig before the sandbox is removed:
    // it cuts the running stage short, and cleanup runs as usual. The runtime
    // child shares the terminal's process group and gets SIGINT itself.
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        // Registration fails only for signals that cannot be caught, which
        // these are not.
        let _ = signal_hook::flag::register(signal, Arc::clone(&interrupted));
    }
    let stages = boot::apply(&plan, &interrupted);
    let checks = boot::checks(plan.facts(), &stages);
    if ctx.json {
        let data = DoctorData { checks, boot: Some(boot::data(plan.facts(), &stages)), plan: None };
        print(format!("{}\n", Envelope::new("Doctor", &data).to_line()))?;
    } else {
        print(render(&checks))?;
    }
    Ok(stages.code())
}

/// The engine's plan for a run of `reference`, as one line: what the run
/// would do, or the refusal it would meet with its exit code.
fn plan_check(ctx: &Context, registry: &Registry, reference: &str) -> Result<(Check, super::plan::PlanData), Error> {
    let mut engine = crate::engine::Engine::new(
        &ctx.env,
        registry,
        crate::engine::Prompts::Nobody,
        crate::warn::Warnings::collected(),
    )?;
    let (session, profile) = engine.session(reference, None)?;
    let plan = engine.plan(&crate::engine::Request::bare(session, profile));
    let data = super::plan::PlanData::from_plan(&plan, engine.state_dir());
    let check = match &data.refused {
        Some(refused) => Check::problem(
            "plan",
            format!("a run of {} would be refused (exit {}): {}", data.reference, refused.code, refused.error),
            format!("`brig plan {}` shows what was decided before the refusal", data.reference),
        ),
        None => Check::new(
            "plan",
            Mark::Ok,
            format!(
                "a run of {} would {} {} ({}, image {}, network {}); `brig plan {}` shows its mounts and credentials",
                data.reference,
                data.action.unwrap_or("boot"),
                data.sandbox,
                data.isolation.map_or_else(|| "isolation unknown".to_owned(), |i| i.to_string()),
                data.image.as_deref().unwrap_or("-"),
                data.network.map_or_else(|| "-".to_owned(), |n| n.to_string()),
                data.reference
            ),
        ),
    };
    Ok((check, data))
}

fn render(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        out.push_str(&format!("{:<2}  {:<10} {}\n", check.mark.text(), check.name, check.detail));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("{:15}fix: {fix}\n", ""));
        }
    }
    out
}

fn host() -> String {
    let platform = format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH);
    match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        Ok(release) => format!("{platform}, kernel {}", release.trim()),
        Err(_) => platform,
    }
}

/// How long the probe guest has to halt: it runs three instructions.
#[cfg(target_os = "linux")]
const KVM_PROBE_DEADLINE: Duration = Duration::from_secs(2);

/// What a passing hypervisor line cannot promise.
const NOT_SUFFICIENT: &str = "necessary, not sufficient for a microVM sandbox, whose guest kernel may still fail to boot: `brig doctor --boot` boots one";

/// The hypervisor line: KVM's probe on Linux, nothing elsewhere.
fn hypervisor() -> Check {
    #[cfg(target_os = "linux")]
    {
        hypervisor_line(&crate::kvm::probe(Path::new(crate::kvm::DEVICE), KVM_PROBE_DEADLINE))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Check::new(
            "hypervisor",
            Mark::Absent,
            "not inspected on this host (brig's KVM probe is Linux-only); `brig doctor --boot` boots a sandbox",
        )
    }
}

/// The line for a probe's outcome. Every line names what was checked, and
/// the `ok` line says what it does not prove.
#[cfg(target_os = "linux")]
fn hypervisor_line(probe: &crate::kvm::Probe) -> Check {
    use crate::kvm::{API_VERSION, DEVICE, Error, GUEST_BYTE, GUEST_PORT};
    const NO_MICROVM: &str = "only container isolation (BRIG_ALLOW_CONTAINER_ISOLATION=1) can run here";
    let opened = |version: i32| format!("{DEVICE} opens read-write, KVM_GET_API_VERSION = {version}");
    match (&probe.guest, probe.api_version) {
        (Ok(halted), _) => Check::new(
            "hypervisor",
            Mark::Ok,
            format!(
                "{}, and a 5-byte real-mode guest ran: KVM_RUN returned KVM_EXIT_IO ({GUEST_BYTE:#04x} to port {GUEST_PORT:#x}), then KVM_EXIT_HLT, {:.1} ms after KVM_CREATE_VM; {NOT_SUFFICIENT}",
                opened(halted.api_version),
                halted.elapsed.as_secs_f64() * 1000.0
            ),
        ),
        (Err(Error::Absent), _) => Check::new(
            "hypervisor",
            Mark::Absent,
            format!("{DEVICE} is absent, so no microVM can run here; {NO_MICROVM}"),
        ),
        (Err(Error::Open { source }), _) => Check::problem(
            "hypervisor",
            format!("{DEVICE} is present but does not open read-write ({source}); no microVM can run for this user"),
            format!("give this user read-write access to {DEVICE} (usually the kvm group)"),
        ),
        (Err(Error::NoGuest), Some(version)) => Check::new(
            "hypervisor",
            Mark::Absent,
            format!(
                "{}; this build has no probe guest for {}, so whether a vCPU runs is not checked; {NOT_SUFFICIENT}",
                opened(version),
                std::env::consts::ARCH
            ),
        ),
        (Err(err), version) => {
            let reached = match version {
                Some(version) if version == API_VERSION => format!("{}, but ", opened(version)),
                _ => format!("{DEVICE} opens read-write, but "),
            };
            Check::problem(
                "hypervisor",
                format!("KVM present but cannot run a guest: {reached}{}", crate::error::chain(err)),
                format!("enable hardware (or nested) virtualization for this host; until then {NO_MICROVM}"),
            )
        }
    }
}

/// The runtime line (resolved, opened, and asked for a listing) and the
/// shim line (the isolation a new sandbox would get).
fn runtime_checks(env: &Environment, profile: Option<&Profile>) -> (Check, Check) {
    let no_shim = || Check::new("shim", Mark::Absent, "not checked: no usable runtime");
    let resolved = match runtime::resolve(env, profile.map(|p| (p.name.as_str(), p.runtime_bin.as_deref()))) {
        Ok(resolved) => resolved,
        Err(err) => {
            return (
                Check::problem(
                    "runtime",
                    crate::error::chain(&err),
                    "install nerdctl or podman, or point BRIG_RUNTIME_BIN at one",
                ),
                no_shim(),
            );
        }
    };
    let what = describe_runtime(&resolved);
    let adapter = match runtime::open(&resolved, env, None) {
        Ok(adapter) => adapter,
        Err(err) => {
            return (
                Check::problem("runtime", format!("{what}: {}", crate::error::chain(&err)), "use nerdctl or podman"),
                no_shim(),
            );
        }
    };
    let runtime_check = match adapter.list() {
        Ok(listed) => Check::new("runtime", Mark::Ok, format!("{what}; answers, {} brig sandbox(es)", listed.len())),
        Err(err) => Check::problem(
            "runtime",
            format!("{what}, but it cannot answer: {}", crate::error::chain(&err)),
            match resolved.kind {
                Kind::Nerdctl => "start containerd, and check that this user may use its socket",
                _ => "check that the runtime works for this user (try its `ps -a`)",
            },
        ),
    };
    (runtime_check, shim(env, adapter.as_ref()))
}

/// `nerdctl (/usr/bin/nerdctl), chosen by BRIG_RUNTIME`.
fn describe_runtime(resolved: &Resolved) -> String {
    let chosen = match &resolved.chosen {
        Chosen::RuntimeBin => "chosen by BRIG_RUNTIME_BIN".to_owned(),
        Chosen::Profile { name } => format!("chosen by profile {name}'s runtimeBin"),
        Chosen::RuntimeKind => "chosen by BRIG_RUNTIME".to_owned(),
        Chosen::Path { fallback: false } => "found on PATH".to_owned(),
        Chosen::Path { fallback: true } => "found on PATH as a fallback: nerdctl is not there".to_owned(),
    };
    format!("{} ({}), {chosen}", resolved.kind, resolved.bin.display())
}

fn shim(env: &Environment, adapter: &dyn Runtime) -> Check {
    let kind = adapter.kind();
    let name = match kind {
        Kind::Nerdctl => env.get("BRIG_CONTAINERD_RUNTIME").unwrap_or(DEFAULT_SHIM).to_owned(),
        Kind::Podman => match runtime::podman_configured_runtime(env) {
            Some(name) => format!("{name} (podman's OCI runtime, named in its containers.conf)"),
            None => "podman's default OCI runtime".to_owned(),
        },
        _ => format!("{kind}'s OCI runtime"),
    };
    let allowed = crate::settings::global::<crate::settings::Bool>(env, "BRIG_ALLOW_CONTAINER_ISOLATION");
    match (adapter.isolation(), allowed) {
        (Err(err), _) => Check::problem(
            "shim",
            crate::error::chain(&err),
            "set BRIG_CONTAINERD_RUNTIME to a known shim such as io.containerd.urunc.v2",
        ),
        (_, Err(err)) => Check::problem("shim", err.to_string(), "set BRIG_ALLOW_CONTAINER_ISOLATION to 1 or 0"),
        // The same check a boot makes before anything is created.
        (Ok(Isolation::Microvm), _) => match adapter.check_shim() {
            Err(runtime::Error::ShimMissing { binary, .. }) => Check::problem(
                "shim",
                format!("{name} would give microVM isolation, but {binary} is not on PATH"),
                format!("install {binary} where containerd finds it, or set BRIG_CONTAINERD_RUNTIME"),
            ),
            _ => Check::new("shim", Mark::Ok, format!("{name}: microVM isolation")),
        },
        (Ok(Isolation::Container), Ok(Some(crate::settings::Bool(true)))) => Check::new(
            "shim",
            Mark::Ok,
            format!(
                "{name}: container isolation (shared kernel), accepted because BRIG_ALLOW_CONTAINER_ISOLATION is set"
            ),
        ),
        (Ok(Isolation::Container), Ok(_)) => Check::problem(
            "shim",
            format!("{name} runs sandboxes as containers sharing the host kernel; brig refuses to boot them (exit 7)"),
            match kind {
                Kind::Podman => {
                    "set podman's OCI runtime to krun ([engine] runtime in containers.conf), or BRIG_ALLOW_CONTAINER_ISOLATION=1 to accept a container"
                }
                _ => {
                    "set BRIG_CONTAINERD_RUNTIME to a microVM shim (io.containerd.urunc.v2, io.containerd.kata.v2), or BRIG_ALLOW_CONTAINER_ISOLATION=1 to accept a container"
                }
            },
        ),
    }
}

/// Who root in a container guest is on the host with this runtime, run by
/// this user: the user (rootless), or the host's root. A user who reaches
/// a rootful runtime (docker's group) is told, since that is root's power.
fn guest_root(env: &Environment, profile: Option<&crate::profile::Profile>) -> Check {
    use crate::runtime::adapter::GuestRoot;
    let Ok(runtime) = crate::runtime::resolve(env, profile.map(|p| (p.name.as_str(), p.runtime_bin.as_deref()))) else {
        return Check::new("guest root", Mark::Absent, "no runtime".to_owned());
    };
    let root = GuestRoot::of(runtime.kind);
    match root {
        GuestRoot::HostRoot if !rustix::process::geteuid().is_root() => Check::problem(
            "guest root",
            format!("in a container sandbox: {} ({} runs as root for you)", root.describe(), runtime.kind),
            "use rootless podman, where root in the guest is you",
        ),
        _ => Check::new("guest root", Mark::Ok, format!("in a container sandbox: {}", root.describe())),
    }
}

/// Whether brig can keep an isolated sandbox from the host here: root, and
/// nftables to write the rules with.
fn host_isolation(env: &Environment, profile: Option<&crate::profile::Profile>) -> Check {
    let Ok(runtime) = crate::runtime::resolve(env, profile.map(|p| (p.name.as_str(), p.runtime_bin.as_deref()))) else {
        return Check::new(
            "network",
            Mark::Absent,
            "no runtime, so no sandbox network to keep from the host".to_owned(),
        );
    };
    match crate::firewall::capable(env, runtime.kind, &runtime.bin) {
        Ok(writer) => Check::new(
            "network",
            Mark::Ok,
            format!("isolated sandboxes are kept from the host and from each other with {}", writer.describe()),
        ),
        Err(why) => Check::problem(
            "network",
            format!("an isolated sandbox (the default) is refused here: {why}"),
            "run brig as root with nftables installed, or use --network shared or --offline",
        ),
    }
}

/// How images will be verified: the mode, whose policy, and what it trusts.
/// A bad setting is a problem here but not an exit status: runs refuse it
/// with exit 2 themselves.
fn trust(env: &Environment) -> Check {
    let mode = match crate::settings::global::<crate::settings::Verify>(env, "BRIG_VERIFY") {
        Ok(mode) => mode.unwrap_or(crate::settings::Verify::Warn),
        Err(err) => return Check::problem("trust", err.to_string(), "set BRIG_VERIFY to warn, require or off"),
    };
    let policy = match crate::verify::Policy::from_env(env) {
        Ok(policy) => policy,
        Err(err) => return Check::problem("trust", err.to_string(), "every boot is refused until it is fixed"),
    };
    if mode == crate::settings::Verify::Off {
        return Check::new("trust", Mark::Absent, "image verification is off (BRIG_VERIFY=off): images boot unchecked");
    }
    let signer = match &policy.key {
        Some((path, _)) => format!("the key {} or ", path.display()),
        None => String::new(),
    };
    let root = if env.get_raw("BRIG_VERIFY_TRUST_ROOT").is_some() {
        "the given trust root"
    } else {
        "sigstore's public-good root"
    };
    Check::new(
        "trust",
        Mark::Ok,
        format!(
            "{mode}, policy {}: images under {} must be signed by {signer}{} ({}), checked natively against {root} ({} authority certificates, {} transparency logs)",
            policy.name(),
            policy.registry,
            policy.identity,
            policy.issuer,
            policy.trust_root.authorities.len(),
            policy.trust_root.logs.len(),
        ),
    )
}

/// Which store secrets live in, whether it survives a reboot, and how many
/// it holds (from its index: no value is read).
fn secret_store() -> Check {
    let opened =
        crate::secrets::Store::open().and_then(|store| store.index().map(|index| (store.backend(), index.len())));
    match opened {
        Ok((backend, count)) => Check::new(
            "secrets",
            Mark::Ok,
            format!(
                "{backend}, {}; {count} secret{} stored",
                if backend.persists() {
                    "kept across reboots"
                } else {
                    "lost at reboot (a desktop session's Secret Service keeps secrets across reboots)"
                },
                if count == 1 { "" } else { "s" }
            ),
        ),
        Err(err) => Check::problem(
            "secrets",
            crate::error::chain(&err),
            "a run that requires a secret is refused until the store opens",
        ),
    }
}

fn profile_dir(env: &Environment, registry: &Registry) -> Check {
    let Some(dir) = env.profile_dir() else {
        return Check::new("profiles", Mark::Absent, "no profile directory (HOME is unset); built-in profiles only");
    };
    if !dir.exists() {
        return Check::new(
            "profiles",
            Mark::Absent,
            format!("{} does not exist; built-in profiles only", dir.display()),
        );
    }
    if !dir.is_dir() {
        return Check::problem(
            "profiles",
            format!("{} is not a directory", dir.display()),
            "remove it, or point BRIG_PROFILE_DIR elsewhere",
        );
    }
    let files = registry.entries().iter().filter(|e| !e.is_builtin()).count();
    match registry.warnings().first() {
        Some(first) => Check::problem(
            "profiles",
            format!(
                "{}: {} problem(s), the first: {}",
                dir.display(),
                registry.warnings().len(),
                first.lines().next().unwrap_or_default()
            ),
            "fix or remove the file named; `brig agent ls` lists what loads",
        ),
        None => Check::new("profiles", Mark::Ok, format!("{} ({files} profile(s) from files)", dir.display())),
    }
}

/// brigd is optional: no socket is `--`, never `!!`. A socket that does not
/// answer, or a daemon of another build, is a problem to fix by restarting.
fn brigd(env: &Environment) -> Check {
    let path = match socket::resolve(None, env) {
        Ok(socket) => socket.path,
        Err(_) => return Check::new("brigd", Mark::Absent, "not running (no socket path: HOME is unset)"),
    };
    let shown = tilde(env, &path);
    if std::fs::symlink_metadata(&path).is_err() {
        return Check::new("brigd", Mark::Absent, format!("not running (no socket at {shown})"));
    }
    let response = match client::version(&path, BRIGD_DEADLINE) {
        Ok(response) => response,
        Err(client::Error::Connect(e)) => {
            return Check::problem(
                "brigd",
                format!("a socket is at {shown} but refuses connections ({e})"),
                "start brigd again (it clears a stale socket), or remove the socket",
            );
        }
        Err(err) => {
            return Check::problem(
                "brigd",
                format!("brigd at {shown} did not answer: {}", crate::error::chain(&err)),
                "restart brigd",
            );
        }
    };
    if !response.ok {
        return Check::problem(
            "brigd",
            format!("brigd at {shown} refused: {}", response.error.unwrap_or_default()),
            "restart brigd as this user",
        );
    }
    let ours = BuildInfo::current();
    let same = response.version.as_deref() == Some(ours.version.as_str())
        && response.commit.as_deref() == ours.commit
        && response.commit_time.as_deref() == ours.commit_time
        && response.modified == Some(ours.modified);
    let theirs = describe(&response);
    if same {
        Check::new("brigd", Mark::Ok, format!("{theirs} answers at {shown}"))
    } else {
        Check::problem(
            "brigd",
            format!("brigd at {shown} runs {theirs}, but this brig is {}", describe_info(&ours)),
            "restart brigd so that it runs this build",
        )
    }
}

fn describe(response: &crate::proto::Response) -> String {
    let version = response.version.clone().unwrap_or_else(|| "an unknown version".to_owned());
    match response.commit.as_deref() {
        Some(commit) => {
            let short = &commit[..commit.len().min(7)];
            let dirty = if response.modified == Some(true) { "+dirty" } else { "" };
            format!("{version} ({short}{dirty})")
        }
        None => version,
    }
}

fn describe_info(info: &BuildInfo) -> String {
    describe(&crate::proto::Response::build(info))
}

/// `~/…` for a path under HOME, as the user would write it.
fn tilde(env: &Environment, path: &Path) -> String {
    match env.home().and_then(|home| path.strip_prefix(home).ok().map(PathBuf::from)) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trust_line_names_the_mode_policy_and_root_and_flags_bad_settings() {
        let line = trust(&Environment::from_pairs::<_, &str, &str>([]));
        assert_eq!(line.mark, Mark::Ok);
        assert!(line.detail.starts_with("warn, policy brig: images under ghcr.io/brig-sh/"), "{}", line.detail);
        assert!(line.detail.contains("sigstore's public-good root"), "{}", line.detail);
        let off = trust(&Environment::from_pairs([("BRIG_VERIFY", "none")]));
        assert_eq!(off.mark, Mark::Absent);
        for (variable, value) in [("BRIG_VERIFY", "maybe"), ("BRIG_VERIFY_KEY", "/nonexistent/cosign.pub")] {
            let bad = trust(&Environment::from_pairs([(variable, value)]));
            assert_eq!(bad.mark, Mark::Problem, "{variable}");
            assert!(bad.detail.contains(variable), "{}", bad.detail);
        }
    }

    #[cfg(target_os = "linux")]
    mod hypervisor {
        use super::*;
        use crate::kvm::{Error, Halted, Probe};
        use rstest::rstest;

        fn probe(api_version: Option<i32>, guest: Result<Halted, Error>) -> Probe {
            Probe { api_version, guest }
        }

        fn halted() -> Result<Halted, Error> {
            Ok(Halted { api_version: 12, elapsed: Duration::from_millis(3) })
        }

        #[test]
        fn a_guest_that_halts_is_ok_and_says_what_it_does_not_prove() {
            let check = hypervisor_line(&probe(Some(12), halted()));
            assert_eq!(check.mark, Mark::Ok);
            assert_eq!(
                check.detail,
                "/dev/kvm opens read-write, KVM_GET_API_VERSION = 12, and a 5-byte real-mode guest ran: KVM_RUN returned KVM_EXIT_IO (0x42 to port 0x10), then KVM_EXIT_HLT, 3.0 ms after KVM_CREATE_VM; necessary, not sufficient for a microVM sandbox, whose guest kernel may still fail to boot: `brig doctor --boot` boots one"
            );
            assert_eq!(check.fix, None);
        }

        #[rstest]
        #[case::absent(
            probe(None, Err(Error::Absent)),
            Mark::Absent,
            "/dev/kvm is absent, so no microVM can run here",
            None
        )]
        #[case::unopenable(
            probe(None, Err(Error::Open { source: std::io::Error::from_raw_os_error(13) })),
            Mark::Problem,
            "/dev/kvm is present but does not open read-write (Permission denied (os error 13))",
            Some("kvm group")
        )]
        #[case::not_kvm(
            probe(Some(11), Err(Error::ApiVersion { found: 11 })),
            Mark::Problem,
            "KVM present but cannot run a guest: /dev/kvm opens read-write, but KVM_GET_API_VERSION answers 11, not 12",
            Some("enable hardware (or nested) virtualization")
        )]
        #[case::internal_error(
            probe(Some(12), Err(Error::Exit { reason: 17, wanted: 5 })),
            Mark::Problem,
            "KVM present but cannot run a guest: /dev/kvm opens read-write, KVM_GET_API_VERSION = 12, but KVM_RUN ended with KVM_EXIT_INTERNAL_ERROR (17), not KVM_EXIT_HLT",
            Some("BRIG_ALLOW_CONTAINER_ISOLATION=1")
        )]
        #[case::vcpu_never_returns(
            probe(Some(12), Err(Error::NoReturn { within: Duration::from_secs(2) })),
            Mark::Problem,
            "KVM present but cannot run a guest: /dev/kvm opens read-write, KVM_GET_API_VERSION = 12, but KVM_RUN did not return within 2000 ms",
            Some("nested")
        )]
        #[case::vm_refused(
            probe(Some(12), Err(Error::Call { call: "KVM_CREATE_VM", source: std::io::Error::from_raw_os_error(1) })),
            Mark::Problem,
            "KVM present but cannot run a guest: /dev/kvm opens read-write, KVM_GET_API_VERSION = 12, but KVM_CREATE_VM failed: Operation not permitted (os error 1)",
            Some("nested")
        )]
        #[case::no_guest_for_this_arch(
            probe(Some(12), Err(Error::NoGuest)),
            Mark::Absent,
            "/dev/kvm opens read-write, KVM_GET_API_VERSION = 12; this build has no probe guest for",
            None
        )]
        fn each_probe_outcome_names_what_was_checked(
            #[case] probe: Probe,
            #[case] mark: Mark,
            #[case] detail: &str,
            #[case] fix: Option<&str>,
        ) {
            let check = hypervisor_line(&probe);
            assert_eq!(check.name, "hypervisor");
            assert_eq!(check.mark, mark);
            assert!(check.detail.starts_with(detail), "{}", check.detail);
            match fix {
                Some(fix) => assert!(check.fix.as_deref().unwrap_or_default().contains(fix), "{:?}", check.fix),
                None => assert_eq!(check.fix, None),
            }
        }
    }

    #[test]
    fn a_refused_container_shim_gets_the_fix_of_its_own_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("containers.conf");
        std::fs::write(&conf, "[engine]\nruntime = \"runc\"\n").unwrap();
        let env = Environment::from_pairs([("CONTAINERS_CONF", conf.to_str().unwrap())]);
        let podman = runtime::OciCli::podman("/bin/false".into(), runtime::podman_configured_runtime(&env));
        let check = shim(&env, &podman);
        assert_eq!(check.mark, Mark::Problem);
        assert!(
            check.detail.starts_with("runc (podman's OCI runtime, named in its containers.conf) runs"),
            "{}",
            check.detail
        );
        assert!(check.fix.as_deref().unwrap().starts_with("set podman's OCI runtime to krun"), "{:?}", check.fix);

        let env = Environment::from_pairs([("BRIG_CONTAINERD_RUNTIME", "io.containerd.runc.v2")]);
        let nerdctl = runtime::OciCli::new(Kind::Nerdctl, "/bin/false".into(), Some("io.containerd.runc.v2".into()));
        let check = shim(&env, &nerdctl);
        assert!(
            check.fix.as_deref().unwrap().starts_with("set BRIG_CONTAINERD_RUNTIME to a microVM shim"),
            "{:?}",
            check.fix
        );
    }

    #[test]
    fn lines_align_on_the_longest_name_and_fixes_sit_under_the_detail() {
        let text = render(&[
            Check::new("hypervisor", Mark::Ok, "kvm"),
            Check::problem("shim", "missing", "install it"),
            Check::new("brigd", Mark::Absent, "not running"),
        ]);
        assert_eq!(
            text,
            "ok  hypervisor kvm\n!!  shim       missing\n               fix: install it\n--  brigd      not running\n"
        );
    }
}
