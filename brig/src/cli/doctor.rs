//! `brig doctor [ref] [--json]`: one line per thing brig depends on, each
//! marked `ok`, `--` (absent, and that is fine or not checked) or `!!` (a
//! problem, with its fix).
//!
//! Only a missing or broken runtime sets the exit status (4): everything
//! else is advice. Every line says what was actually looked at; a check this
//! build cannot make says so instead of passing.

use std::path::{Path, PathBuf};
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
use crate::runtime::{self, Chosen, DEFAULT_SHIM, Isolation, Kind, Runtime};
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Check the runtime this session's profile uses (its runtimeBin).
    #[arg(value_name = "REF")]
    pub reference: Option<String>,
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
struct Check {
    name: &'static str,
    mark: Mark,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

impl Check {
    fn new(name: &'static str, mark: Mark, detail: impl Into<String>) -> Check {
        Check { name, mark, detail: detail.into(), fix: None }
    }

    fn problem(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { name, mark: Mark::Problem, detail: detail.into(), fix: Some(fix.into()) }
    }
}

#[derive(Debug, Serialize)]
struct DoctorData {
    checks: Vec<Check>,
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

    let mut checks = vec![
        Check::new("build", Mark::Ok, BuildInfo::current().line()),
        Check::new("host", Mark::Ok, host()),
        hypervisor(),
    ];
    let (runtime_check, shim_check) = runtime_checks(env, profile.as_ref());
    let runtime_broken = runtime_check.mark == Mark::Problem;
    checks.push(runtime_check);
    checks.push(shim_check);
    checks.push(Check::new("trust", Mark::Absent, "image verification is not available in this build"));
    checks.push(profile_dir(env, &registry));
    checks.push(Check::new("secrets", Mark::Absent, "the secret store is not available in this build"));
    checks.push(brigd(env));

    if ctx.json {
        print(format!("{}\n", Envelope::new("Doctor", &DoctorData { checks }).to_line()))?;
    } else {
        print(render(&checks))?;
    }
    Ok(if runtime_broken { Code::NoRuntime } else { Code::Success })
}

fn render(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        out.push_str(&format!("{:<2}  {:<9} {}\n", check.mark.text(), check.name, check.detail));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("              fix: {fix}\n"));
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

/// What can honestly be said about the hypervisor without booting a guest:
/// whether the device is there and opens. Whether a guest actually boots
/// is not checked here, so the mark never claims it.
fn hypervisor() -> Check {
    const NOT_CHECKED: &str = "whether a guest boots is not checked by this build";
    if !cfg!(target_os = "linux") {
        return Check::new("hypervisor", Mark::Absent, format!("not inspected on this host; {NOT_CHECKED}"));
    }
    let kvm = Path::new("/dev/kvm");
    let detail = if !kvm.exists() {
        format!("/dev/kvm is absent, so no microVM can run here; {NOT_CHECKED}")
    } else {
        match std::fs::OpenOptions::new().read(true).write(true).open(kvm) {
            Ok(_) => format!("/dev/kvm is present and opens read-write; {NOT_CHECKED}"),
            Err(e) => format!("/dev/kvm is present but does not open read-write ({e}); {NOT_CHECKED}"),
        }
    };
    Check::new("hypervisor", Mark::Absent, detail)
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
    let chosen = match &resolved.chosen {
        Chosen::RuntimeBin => "chosen by BRIG_RUNTIME_BIN".to_owned(),
        Chosen::Profile { name } => format!("chosen by profile {name}'s runtimeBin"),
        Chosen::RuntimeKind => "chosen by BRIG_RUNTIME".to_owned(),
        Chosen::Path { fallback: false } => "found on PATH".to_owned(),
        Chosen::Path { fallback: true } => "found on PATH as a fallback: nerdctl is not there".to_owned(),
    };
    let what = format!("{} ({}), {chosen}", resolved.kind, resolved.bin.display());
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

fn shim(env: &Environment, adapter: &dyn Runtime) -> Check {
    let kind = adapter.kind();
    let name = match kind {
        Kind::Nerdctl => env.get("BRIG_CONTAINERD_RUNTIME").unwrap_or(DEFAULT_SHIM).to_owned(),
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
        (Ok(Isolation::Microvm), _) => match missing_shim_binary(env, kind, &name) {
            Some(binary) => Check::problem(
                "shim",
                format!("{name} would give microVM isolation, but {binary} is not on PATH"),
                format!("install {binary} where containerd finds it, or set BRIG_CONTAINERD_RUNTIME"),
            ),
            None => Check::new("shim", Mark::Ok, format!("{name}: microVM isolation")),
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
            "set BRIG_CONTAINERD_RUNTIME to a microVM shim (io.containerd.urunc.v2, io.containerd.kata.v2), or BRIG_ALLOW_CONTAINER_ISOLATION=1 to accept a container",
        ),
    }
}

/// containerd runs `io.containerd.<name>.<version>` as the binary
/// `containerd-shim-<name>-<version>` from its PATH; ours is the best guess
/// at that PATH available here.
fn missing_shim_binary(env: &Environment, kind: Kind, shim: &str) -> Option<String> {
    if kind != Kind::Nerdctl {
        return None;
    }
    let rest = shim.strip_prefix("io.containerd.")?;
    let binary = format!("containerd-shim-{}", rest.replace('.', "-"));
    env.find_on_path(&binary).is_none().then_some(binary)
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
    use rstest::rstest;
    use std::os::unix::fs::PermissionsExt;

    /// (runtime, the mode of a `containerd-shim-urunc-v2` on PATH, if any,
    /// the shim asked for) → the binary reported missing.
    #[rstest]
    #[case::present(Kind::Nerdctl, Some(0o755), "io.containerd.urunc.v2", None)]
    #[case::absent(Kind::Nerdctl, None, "io.containerd.urunc.v2", Some("containerd-shim-urunc-v2"))]
    #[case::not_executable(Kind::Nerdctl, Some(0o644), "io.containerd.urunc.v2", Some("containerd-shim-urunc-v2"))]
    #[case::other_shim(Kind::Nerdctl, Some(0o755), "io.containerd.kata.v2", Some("containerd-shim-kata-v2"))]
    #[case::not_a_containerd_name(Kind::Nerdctl, None, "krun", None)]
    #[case::podman_has_no_shims(Kind::Podman, None, "io.containerd.urunc.v2", None)]
    fn shim_binary_on_path(
        #[case] kind: Kind,
        #[case] mode: Option<u32>,
        #[case] shim: &str,
        #[case] want: Option<&str>,
    ) {
        let bin = tempfile::tempdir().unwrap();
        if let Some(mode) = mode {
            let file = bin.path().join("containerd-shim-urunc-v2");
            std::fs::write(&file, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let env = Environment::from_pairs([("PATH", bin.path().to_str().unwrap())]);
        assert_eq!(missing_shim_binary(&env, kind, shim).as_deref(), want);
    }
}
