//! `cargo xtask provision`: install and start the local runtime stack the lab drives (containerd + nerdctl, podman), idempotently.
//!
//! Everything comes from the distribution's packages or is compiled from Go
//! modules at pinned versions; no prebuilt binary is ever downloaded. A second
//! run finds everything in place and changes nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};

/// Debian packages the lab needs, each with a file that proves it is usable.
/// The list follows the runtime spec: the two runtimes and their plumbing,
/// the guest image's userland, the local registry, the Secret Service store,
/// `setpriv` for the second-uid scenario, and `socat` and `jq` for the brigd
/// scenarios that talk to the socket as a shell user would.
const PACKAGES: &[&str] = &[
    "containerd",
    "runc",
    "containernetworking-plugins",
    "iptables",
    "podman",
    "busybox-static",
    "bash-static",
    "docker-registry",
    "dbus",
    "gnome-keyring",
    "util-linux",
    "socat",
    "jq",
    "curl",
    "openssl",
    "git",
    "keyutils",
    // The rootless lane: subordinate-id helpers and the user's network.
    "uidmap",
    "slirp4netns",
    // brigd's socket activation (`systemd-socket-activate`).
    "systemd",
    // Release checks: the completion scripts in their real shells, the
    // manual pages rendered by `man`, the Nix flake parsed, the workflows'
    // scripts read by actionlint through shellcheck.
    "zsh",
    "fish",
    "man-db",
    "nix-bin",
    "shellcheck",
];

/// nerdctl 1.7.x is the last line that still talks to containerd 1.6, which is
/// what Debian 12 ships; nerdctl 2.x wants containerd >= 1.7.
const NERDCTL: GoTool = GoTool {
    name: "nerdctl",
    module: "github.com/containerd/nerdctl",
    version: "v1.7.7",
    package: "./cmd/nerdctl",
    version_ldflag: "github.com/containerd/nerdctl/pkg/version.Version",
    version_args: &["--version"],
    patches: &[NERDCTL_EXEC_DRAINS_OUTPUT],
    suffix: "brig.1",
};

/// nerdctl 1.7's `exec` returns as soon as the process's exit status
/// arrives, and its deferred `process.Delete` cancels the copying of the
/// process's output: under load, a short command's output is lost while the
/// exit status is 0 (measured here: 27 of 640 `nerdctl exec <box> cat <file>`
/// printed nothing, 16 at a time beside two busy loops; the lab saw it as a
/// guest probe printing nothing). Waiting for the output to be copied before
/// returning fixes it; later nerdctl releases wait the same way.
const NERDCTL_EXEC_DRAINS_OUTPUT: Patch = Patch {
    file: "pkg/cmd/container/exec.go",
    find: "\tstatus := <-statusC\n\tcode, _, err := status.Result()\n",
    replace: "\tstatus := <-statusC\n\t// Patched by brig's provisioning: copy all of the process's output\n\t// before the deferred Delete cancels it.\n\tprocess.IO().Wait()\n\tcode, _, err := status.Result()\n",
};

/// cosign signs the lab's test images for the verify family.
const COSIGN: GoTool = GoTool {
    name: "cosign",
    module: "github.com/sigstore/cosign/v2",
    version: "v2.6.5",
    package: "./cmd/cosign",
    version_ldflag: "sigs.k8s.io/release-utils/version.gitVersion",
    version_args: &["version"],
    patches: &[],
    suffix: "",
};

/// The workflows' linter, for `cargo xtask release check`.
const ACTIONLINT: GoTool = GoTool {
    name: "actionlint",
    module: "github.com/rhysd/actionlint",
    version: "v1.7.12",
    package: "./cmd/actionlint",
    version_ldflag: "github.com/rhysd/actionlint.version",
    version_args: &["-version"],
    patches: &[],
    suffix: "",
};

/// The test runner `cargo xtask ci` uses, built from crates.io like any Rust
/// tool. Without its default features, which add self-update (an HTTP client
/// and archive code) and USDT probes that CI never uses, and unoptimised
/// without debug information: on two cores that builds in under two minutes
/// instead of five and a half, and runs the workspace's tests a few seconds
/// slower.
const NEXTEST: &str = "cargo-nextest";
const NEXTEST_VERSION: &str = "0.9.151";

/// Where the built binaries are copied so that every shell finds them. A copy,
/// not a symlink: nerdctl records its own resolved path in each container's
/// log-uri label, so that path must stay valid even if the cache is wiped.
pub const INSTALL_DIR: &str = "/usr/local/bin";

/// The plugins nerdctl's default `bridge` network and `network create` chain
/// together; Debian puts them in /usr/lib/cni, a directory nerdctl 1.7 searches
/// on its own, so no CNI_PATH is needed.
const CNI_DIR: &str = "/usr/lib/cni";
const CNI_PLUGINS: &[&str] = &["bridge", "portmap", "firewall", "tuning", "host-local", "loopback"];

/// The default address: nerdctl, ctr and brig all reach it without flags.
const CONTAINERD_SOCK: &str = "/run/containerd/containerd.sock";
const CONTAINERD_CONFIG: &str = "/etc/containerd/config.toml";
const CONTAINERD_LOG: &str = "/var/log/brig-containerd.log";
const CONTAINERD_WAIT: Duration = Duration::from_secs(30);

/// Only this drop-in is ours; the rest of /etc/containers is left alone.
const PODMAN_DROPIN: &str = "/etc/containers/containers.conf.d/brig-lab.conf";

/// podman 4.3 lowers its own RLIMIT_NPROC to 32768 before it launches conmon
/// (seen with strace), and tries RLIMIT_NOFILE at 1048576 before falling back
/// to the hard limit. The container's limits must fit under what runc inherits,
/// because without CAP_SYS_RESOURCE runc cannot raise them.
const PODMAN_NPROC_CEILING: u64 = 32_768;
const PODMAN_NOFILE_CEILING: u64 = 1_048_576;

#[derive(Debug, Clone, Copy)]
struct GoTool {
    name: &'static str,
    module: &'static str,
    version: &'static str,
    package: &'static str,
    version_ldflag: &'static str,
    version_args: &'static [&'static str],
    /// Fixes applied to the module's source before it is built; the built
    /// version then reads `<version>+<suffix>`, so a build without them is
    /// told apart and rebuilt.
    patches: &'static [Patch],
    suffix: &'static str,
}

/// One exact edit of a module source file: `find` must occur exactly once.
#[derive(Debug, Clone, Copy)]
struct Patch {
    file: &'static str,
    find: &'static str,
    replace: &'static str,
}

impl GoTool {
    /// The version the built binary must report.
    fn built_version(&self) -> String {
        if self.suffix.is_empty() { self.version.to_owned() } else { format!("{}+{}", self.version, self.suffix) }
    }
}

/// One line of the closing table.
#[derive(Debug)]
struct Row {
    what: String,
    version: String,
    action: String,
}

#[derive(Debug, Default)]
struct Report {
    rows: Vec<Row>,
    failures: Vec<String>,
}

impl Report {
    fn add(&mut self, what: impl Into<String>, version: impl Into<String>, action: impl Into<String>) {
        self.rows.push(Row { what: what.into(), version: version.into(), action: action.into() });
    }

    fn print(&self) {
        let w0 = self.rows.iter().map(|r| r.what.len()).max().unwrap_or(0).max(9);
        let w1 = self.rows.iter().map(|r| r.version.len()).max().unwrap_or(0).max(7);
        println!("{:<w0$}  {:<w1$}  STATE", "COMPONENT", "VERSION");
        for r in &self.rows {
            println!("{:<w0$}  {:<w1$}  {}", r.what, r.version, r.action);
        }
    }
}

pub fn run(args: &[String]) -> Result<()> {
    if let Some(arg) = args.first() {
        if arg == "-h" || arg == "--help" {
            println!(
                "usage: cargo xtask provision\n\n\
                 As root on a Debian-family host: install the missing packages, build\n\
                 nerdctl {}, cosign {} and actionlint {} from Go modules and\n\
                 {NEXTEST} {NEXTEST_VERSION} from crates.io, write podman's drop-in\n\
                 {PODMAN_DROPIN}, make the rootless lane's user, and start containerd\n\
                 unless its socket answers.\n\
                 Otherwise print what to install and exit non-zero.",
                NERDCTL.version, COSIGN.version, ACTIONLINT.version
            );
            return Ok(());
        }
        bail!("unexpected argument {arg:?} (usage: cargo xtask provision)");
    }

    let started = Instant::now();
    let installed = installed_packages();
    let mut missing: Vec<&str> = PACKAGES.iter().copied().filter(|p| !installed.contains_key(*p)).collect();
    // `npm pack` fetches the real Claude Code for its guest image. Any npm on
    // PATH will do (a Node.js distribution's own included); Debian's only
    // when there is none, so as not to fight an installed Node.js.
    if find_in_path("npm").is_none() {
        missing.push("npm");
    }

    let root = is_root();
    let apt = find_in_path("apt-get").is_some() && Path::new("/etc/debian_version").exists();
    if !root || !apt {
        print_manual_steps(&missing);
        bail!(
            "cannot provision here ({}); install the above by hand",
            if !root { "not root" } else { "no apt-get on a Debian-family host" }
        );
    }

    let mut report = Report::default();
    let cache = cache_dir()?;
    let nextest = Nextest::start(&cache);

    // Packages first: everything after needs them.
    if !missing.is_empty() {
        apt_install(&missing)?;
    }
    let installed = installed_packages();
    for p in PACKAGES {
        match installed.get(*p) {
            Some(v) if missing.contains(p) => report.add(format!("apt {p}"), v.as_str(), "installed"),
            Some(v) => report.add(format!("apt {p}"), v.as_str(), "present"),
            None => {
                report.add(format!("apt {p}"), "-", "MISSING");
                report.failures.push(format!("package {p} is still not installed"));
            }
        }
    }

    check_binaries(&mut report);
    check_cni(&mut report);

    match find_go() {
        Some(go) => {
            for tool in [NERDCTL, COSIGN, ACTIONLINT] {
                if let Err(err) = ensure_go_tool(&go, &cache, tool, &mut report) {
                    report.add(tool.name, tool.version, "FAILED");
                    report.failures.push(format!("{}: {err:#}", tool.name));
                }
            }
        }
        None => {
            for tool in [NERDCTL, COSIGN, ACTIONLINT] {
                report.add(tool.name, tool.version, "FAILED (no go)");
            }
            report.failures.push(
                "no `go` (>= 1.21) in PATH or /usr/local/go/bin: nerdctl, cosign and actionlint are built from Go modules".into(),
            );
        }
    }

    if let Err(err) = ensure_podman_dropin(&mut report) {
        report.add("podman drop-in", "-", "FAILED");
        report.failures.push(format!("podman drop-in: {err:#}"));
    }

    match crate::rootless::ensure_user() {
        Ok(state) => report.add(format!("rootless user {}", crate::rootless::USER), "-", state),
        Err(err) => {
            report.add(format!("rootless user {}", crate::rootless::USER), "-", "FAILED");
            report.failures.push(format!("rootless lane: {err:#}"));
        }
    }

    if let Err(err) = ensure_containerd(&mut report) {
        report.add("containerd daemon", "-", "FAILED");
        report.failures.push(format!("containerd: {err:#}"));
    }

    if let Err(err) = nextest.and_then(|n| n.finish(&mut report)) {
        report.add(NEXTEST, NEXTEST_VERSION, "FAILED");
        report.failures.push(format!("{NEXTEST}: {err:#}"));
    }

    report.print();
    println!("provision took {:.1}s", started.elapsed().as_secs_f64());
    if !report.failures.is_empty() {
        bail!("{}", report.failures.join("\n"));
    }
    Ok(())
}

/// Reads the effective uid from /proc rather than via libc, since the
/// workspace forbids unsafe code.
fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// The executable `name` on PATH: the one PATH lookup of every xtask.
pub(crate) fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Package name -> version, for those of ours dpkg reports as installed.
/// Empty when dpkg-query is absent (not a Debian-family host).
fn installed_packages() -> BTreeMap<String, String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f", "${Package}\t${Status}\t${Version}\n"])
        .args(PACKAGES)
        .stderr(Stdio::null())
        .output();
    let mut found = BTreeMap::new();
    // dpkg-query exits 1 when some names are unknown, yet still lists the rest.
    if let Ok(out) = out {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut f = line.split('\t');
            if let (Some(name), Some(status), Some(version)) = (f.next(), f.next(), f.next())
                && status.ends_with(" installed")
            {
                found.insert(name.to_string(), version.to_string());
            }
        }
    }
    found
}

fn apt_install(missing: &[&str]) -> Result<()> {
    println!("installing: {}", missing.join(" "));
    // A fresh machine may have no package lists yet; refresh only when we
    // actually install, so a complete host never touches the network.
    run_quiet(Command::new("apt-get").args(["update", "-q"]), "apt-get update")?;
    run_quiet(
        Command::new("apt-get").env("DEBIAN_FRONTEND", "noninteractive").args(["install", "-y", "-q"]).args(missing),
        "apt-get install",
    )
}

/// Runs a command, keeping its output unless it fails (then the tail is shown).
fn run_quiet(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().with_context(|| format!("{what}: cannot start"))?;
    if !out.status.success() {
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        bail!("{what} failed ({}):\n{}", out.status, tail(&text, 15));
    }
    Ok(())
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// First line of a command's stdout, if it ran and succeeded.
fn first_line(cmd: &mut Command) -> Option<String> {
    let out = cmd.stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).lines().next().map(|l| l.trim().to_string())
}

/// The runtimes themselves, by the version they report.
fn check_binaries(report: &mut Report) {
    let probes: [(&str, &[&str]); 3] =
        [("runc", &["--version"]), ("podman", &["--version"]), ("containerd", &["--version"])];
    for (bin, args) in probes {
        match first_line(Command::new(bin).args(args)) {
            // "runc version 1.1.5", "podman version 4.3.1", "containerd <url> 1.6.20 <rev>":
            // the first word that starts with a digit is the version.
            Some(line) => {
                let v = line
                    .split_whitespace()
                    .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
                    .unwrap_or(&line)
                    .to_string();
                report.add(bin, v, "found");
            }
            None => {
                report.add(bin, "-", "MISSING");
                report.failures.push(format!("`{bin} {}` did not run", args.join(" ")));
            }
        }
    }
}

fn check_cni(report: &mut Report) {
    let absent: Vec<&str> =
        CNI_PLUGINS.iter().copied().filter(|p| !is_executable(&Path::new(CNI_DIR).join(p))).collect();
    if absent.is_empty() {
        report.add(format!("cni plugins ({CNI_DIR})"), CNI_PLUGINS.join(","), "found");
    } else {
        report.add(format!("cni plugins ({CNI_DIR})"), "-", format!("MISSING {}", absent.join(",")));
        report.failures.push(format!("CNI plugins missing from {CNI_DIR}: {}", absent.join(", ")));
    }
}

/// `$XDG_CACHE_HOME/brig-provision`, else `~/.cache/brig-provision`: outside
/// the repository so builds survive a fresh checkout. `cargo xtask images`
/// keeps its downloads here too.
pub(crate) fn cache_dir() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) if Path::new(&x).is_absolute() => PathBuf::from(x),
        _ => {
            let home = std::env::var_os("HOME").context("HOME is not set")?;
            PathBuf::from(home).join(".cache")
        }
    };
    Ok(base.join("brig-provision"))
}

fn find_go() -> Option<PathBuf> {
    find_in_path("go").or_else(|| {
        let p = PathBuf::from("/usr/local/go/bin/go");
        is_executable(&p).then_some(p)
    })
}

/// The version a built binary reports, normalised to carry a leading `v`.
fn tool_version(bin: &Path, tool: GoTool) -> Option<String> {
    let out = Command::new(bin).args(tool.version_args).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // nerdctl: "nerdctl version 1.7.7"; cosign: "GitVersion:    v2.6.5";
    // actionlint: "v1.7.12" alone on its first line.
    text.lines().find_map(|line| {
        let line = line.trim();
        let bare = || line.strip_prefix('v').filter(|r| r.starts_with(|c: char| c.is_ascii_digit())).map(|_| line);
        let v =
            line.strip_prefix("nerdctl version ").or_else(|| line.strip_prefix("GitVersion:")).or_else(bare)?.trim();
        Some(if v.starts_with('v') { v.to_string() } else { format!("v{v}") })
    })
}

fn ensure_go_tool(go: &Path, cache: &Path, tool: GoTool, report: &mut Report) -> Result<()> {
    let bin_dir = cache.join("bin");
    let built = bin_dir.join(tool.name);
    let installed = Path::new(INSTALL_DIR).join(tool.name);

    let want = tool.built_version();
    let mut action = "present";
    if tool_version(&built, tool).as_deref() != Some(want.as_str()) {
        build_go_tool(go, cache, tool, &built)?;
        action = "built";
    }
    let got = tool_version(&built, tool);
    if got.as_deref() != Some(want.as_str()) {
        bail!("built {} reports {got:?}, want {want}", built.display());
    }

    if !same_file_content(&built, &installed) {
        // Copy to a temporary name then rename, so a running nerdctl is never
        // overwritten in place ("text file busy").
        let tmp = installed.with_extension("brig-new");
        fs::copy(&built, &tmp).with_context(|| format!("copy to {}", tmp.display()))?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))?;
        fs::rename(&tmp, &installed).with_context(|| format!("install {}", installed.display()))?;
        if action == "present" {
            action = "copied";
        }
    }
    report.add(tool.name, &want, format!("{action} ({})", installed.display()));
    Ok(())
}

/// The pinned cargo-nextest, when `cargo nextest` does not already report
/// it: `cargo install` starts at once, in the background, and [`Nextest::finish`]
/// waits for it at the end. It needs only cargo and crates.io, and its build
/// overlaps the packages' download and the Go builds instead of adding two
/// minutes after them.
struct Nextest {
    cargo: PathBuf,
    building: Option<(std::process::Child, PathBuf)>,
}

impl Nextest {
    fn start(cache: &Path) -> Result<Nextest> {
        let cargo = std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from);
        let mut nextest = Nextest { cargo, building: None };
        if nextest.reported().as_deref() == Some(NEXTEST_VERSION) {
            return Ok(nextest);
        }
        let log_dir = cache.join("log");
        fs::create_dir_all(&log_dir).with_context(|| format!("create {}", log_dir.display()))?;
        let log_path = log_dir.join("cargo-nextest-install.log");
        let log = fs::File::create(&log_path).with_context(|| format!("create {}", log_path.display()))?;
        let child = Command::new(&nextest.cargo)
            .args(["install", "--locked", "--no-default-features", "--debug"])
            .arg(format!("{NEXTEST}@{NEXTEST_VERSION}"))
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group, so that a provisioning run that fails
            // before waiting for it can stop cargo and its compilers at once.
            .process_group(0)
            .spawn()
            .context("cannot start cargo install")?;
        nextest.building = Some((child, log_path));
        Ok(nextest)
    }

    /// The version `cargo nextest --version` reports:
    /// "cargo-nextest 0.9.151 (<hash> <date>)".
    fn reported(&self) -> Option<String> {
        first_line(Command::new(&self.cargo).args(["nextest", "--version"]))
            .and_then(|line| line.split_whitespace().nth(1).map(str::to_owned))
    }

    fn finish(mut self, report: &mut Report) -> Result<()> {
        let mut action = "present";
        if let Some((mut child, log)) = self.building.take() {
            let status = child.wait().context("waiting for cargo install")?;
            if !status.success() {
                let text = fs::read_to_string(&log).unwrap_or_default();
                bail!("cargo install {NEXTEST}@{NEXTEST_VERSION} failed ({status}):\n{}", tail(&text, 15));
            }
            action = "built";
        }
        let got = self.reported();
        ensure!(
            got.as_deref() == Some(NEXTEST_VERSION),
            "`cargo nextest --version` reports {got:?} after install, want {NEXTEST_VERSION}"
        );
        report.add(NEXTEST, NEXTEST_VERSION, action);
        Ok(())
    }
}

impl Drop for Nextest {
    /// Nothing is left building when provisioning stops early.
    fn drop(&mut self) {
        if let Some((mut child, _)) = self.building.take() {
            let _ = Command::new("kill").args(["-TERM", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
        }
    }
}

fn same_file_content(a: &Path, b: &Path) -> bool {
    match (fs::read(a), fs::read(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Builds a pinned command from its module's own go.mod/go.sum.
///
/// Not `go install module/cmd@version`: the module proxy reachable here
/// refuses the version *list* of these modules, which `go install` asks for to
/// look up deprecations, and fails. `go mod download module@version` needs
/// only the exact version; building inside the downloaded (read-only) module
/// directory then resolves dependencies exactly as upstream pinned them.
fn build_go_tool(go: &Path, cache: &Path, tool: GoTool, out: &Path) -> Result<()> {
    let log_dir = cache.join("log");
    fs::create_dir_all(&log_dir).with_context(|| format!("create {}", log_dir.display()))?;
    fs::create_dir_all(out.parent().context("output has no parent")?)?;
    let log_path = log_dir.join(format!("{}-build.log", tool.name));
    println!("building {} {} (log: {})", tool.name, tool.version, log_path.display());

    let spec = format!("{}@{}", tool.module, tool.version);
    let dl = Command::new(go)
        .args(["mod", "download", "-json", &spec])
        // Outside any module, so a go.work or go.mod above the cwd cannot interfere.
        .current_dir(cache)
        .env("GOWORK", "off")
        .output()
        .context("go mod download: cannot start")?;
    let info: serde_json::Value = serde_json::from_slice(&dl.stdout)
        .with_context(|| format!("go mod download {spec}: {}", tail(&String::from_utf8_lossy(&dl.stderr), 5)))?;
    if let Some(err) = info.get("Error").and_then(|e| e.as_str()) {
        bail!("go mod download {spec}: {err}");
    }
    let module_dir = info
        .get("Dir")
        .and_then(|d| d.as_str())
        .with_context(|| format!("go mod download {spec}: no Dir in its answer"))?;
    let dir = if tool.patches.is_empty() { PathBuf::from(module_dir) } else { patched_copy(cache, tool, module_dir)? };

    let log = fs::File::create(&log_path)?;
    let ldflags = format!("-s -w -X {}={}", tool.version_ldflag, tool.built_version());
    let status = Command::new(go)
        .args(["build", "-trimpath", "-buildvcs=false", "-ldflags", &ldflags, "-o"])
        .arg(out)
        .arg(tool.package)
        .current_dir(dir)
        // Static binaries, no C toolchain needed; this is also how both
        // projects build their releases.
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-mod=readonly")
        .env("GOWORK", "off")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .context("go build: cannot start")?;
    if !status.success() {
        let text = fs::read_to_string(&log_path).unwrap_or_default();
        bail!("go build {spec} failed ({status}):\n{}", tail(&text, 10));
    }
    Ok(())
}

/// A writable copy of a module's source with `tool.patches` applied, under
/// the cache; made anew for every build.
fn patched_copy(cache: &Path, tool: GoTool, module_dir: &str) -> Result<PathBuf> {
    let dir = cache.join("src").join(format!("{}-{}", tool.name, tool.built_version()));
    if dir.exists() {
        // Copied from the read-only module cache, so made writable to go.
        run_quiet(Command::new("chmod").args(["-R", "u+w"]).arg(&dir), "chmod")?;
        fs::remove_dir_all(&dir).with_context(|| format!("remove {}", dir.display()))?;
    }
    fs::create_dir_all(dir.parent().context("no parent")?)?;
    run_quiet(Command::new("cp").args(["-R", module_dir]).arg(&dir), "cp")?;
    run_quiet(Command::new("chmod").args(["-R", "u+w"]).arg(&dir), "chmod")?;
    for patch in tool.patches {
        let file = dir.join(patch.file);
        let text = fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
        let found = text.matches(patch.find).count();
        ensure!(
            found == 1,
            "{}: the text to patch occurs {found} times, not once; the pinned source changed?",
            file.display()
        );
        fs::write(&file, text.replacen(patch.find, patch.replace, 1))
            .with_context(|| format!("write {}", file.display()))?;
    }
    Ok(dir)
}

/// Reads a hard limit ("Max open files", "Max processes") of this process.
fn hard_limit(name: &str) -> Result<u64> {
    let limits = fs::read_to_string("/proc/self/limits")?;
    let line =
        limits.lines().find(|l| l.starts_with(name)).with_context(|| format!("{name} not in /proc/self/limits"))?;
    // Columns: name (several words), soft, hard, units.
    let hard = line[name.len()..].split_whitespace().nth(1).with_context(|| format!("cannot parse {line:?}"))?;
    Ok(if hard == "unlimited" { u64::MAX } else { hard.parse().with_context(|| format!("cannot parse {line:?}"))? })
}

fn podman_dropin_text() -> Result<String> {
    let nofile = hard_limit("Max open files")?.min(PODMAN_NOFILE_CEILING);
    let nproc = hard_limit("Max processes")?.min(PODMAN_NPROC_CEILING);
    let mut s = String::new();
    writeln!(s, "# Written by `cargo xtask provision`, which keeps it in step with this host.")?;
    writeln!(s, "# Processes here lack CAP_SYS_RESOURCE, so container rlimits must not")?;
    writeln!(s, "# exceed what podman itself runs with (host hard limits, nproc <= 32768).")?;
    writeln!(s, "[containers]")?;
    writeln!(s, "default_ulimits = [\"nofile={nofile}:{nofile}\", \"nproc={nproc}:{nproc}\"]")?;
    writeln!(s)?;
    writeln!(s, "# crun refuses this host's hybrid cgroup layout; runc works.")?;
    writeln!(s, "[engine]")?;
    writeln!(s, "runtime = \"runc\"")?;
    Ok(s)
}

fn ensure_podman_dropin(report: &mut Report) -> Result<()> {
    let want = podman_dropin_text()?;
    let path = Path::new(PODMAN_DROPIN);
    let action = if fs::read_to_string(path).ok().as_deref() == Some(want.as_str()) {
        "unchanged"
    } else {
        fs::create_dir_all(path.parent().context("drop-in has no parent")?)?;
        let tmp = path.with_extension("conf.tmp");
        fs::write(&tmp, &want)?;
        fs::rename(&tmp, path)?;
        "written"
    };
    // Ask podman which runtime it now resolves, which proves the drop-in is read.
    let runtime = first_line(Command::new("podman").args(["info", "--format", "{{.Host.OCIRuntime.Name}}"]))
        .unwrap_or_else(|| "?".into());
    report.add("podman drop-in", format!("runtime={runtime}"), format!("{action} ({PODMAN_DROPIN})"));
    if runtime != "runc" {
        bail!("podman resolves OCI runtime {runtime:?}, want runc; is {PODMAN_DROPIN} read?");
    }
    Ok(())
}

/// True when something accepts connections on the socket. A plain connect is
/// instant either way, unlike `ctr version`, which waits out a dial timeout.
fn socket_answers(path: &str) -> bool {
    UnixStream::connect(path).is_ok()
}

/// Pids of processes whose command name is exactly `containerd`.
fn containerd_pids() -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm")).map(|c| c.trim_end() == "containerd").unwrap_or(false)
        })
        .collect()
}

fn containerd_server_version() -> String {
    Command::new("ctr")
        .args(["--address", CONTAINERD_SOCK, "version"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|out| {
            // The "Server:" block's "Version:" line.
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let server = text.split("Server:").nth(1)?.to_string();
            server.lines().find_map(|l| l.trim().strip_prefix("Version:").map(|v| v.trim().to_string()))
        })
        .unwrap_or_else(|| "?".into())
}

fn ensure_containerd(report: &mut Report) -> Result<()> {
    if socket_answers(CONTAINERD_SOCK) {
        report.add("containerd daemon", containerd_server_version(), format!("running ({CONTAINERD_SOCK})"));
        return Ok(());
    }
    // A containerd that exists but does not answer is someone else's problem
    // to fix; starting a second one would fight it over the same state.
    let pids = containerd_pids();
    if !pids.is_empty() {
        bail!("containerd is running (pid {pids:?}) but {CONTAINERD_SOCK} does not answer");
    }

    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(CONTAINERD_LOG)
        .with_context(|| format!("open {CONTAINERD_LOG}"))?;
    writeln!(log, "--- started by cargo xtask provision")?;

    // `setsid --fork` puts containerd in a session of its own and returns at
    // once, so it outlives this process and ignores its terminal's hangups.
    // containerd removes a stale socket file itself before listening.
    let mut cmd = Command::new("setsid");
    cmd.arg("--fork").arg("containerd");
    if Path::new(CONTAINERD_CONFIG).exists() {
        cmd.args(["--config", CONTAINERD_CONFIG]);
    }
    let status = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .context("setsid containerd: cannot start")?;
    if !status.success() {
        bail!("setsid containerd exited {status}; see {CONTAINERD_LOG}");
    }

    let deadline = Instant::now() + CONTAINERD_WAIT;
    while !socket_answers(CONTAINERD_SOCK) {
        if Instant::now() > deadline {
            let text = fs::read_to_string(CONTAINERD_LOG).unwrap_or_default();
            bail!(
                "containerd did not answer on {CONTAINERD_SOCK} within {}s; last log lines:\n{}",
                CONTAINERD_WAIT.as_secs(),
                tail(&text, 10)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    report.add("containerd daemon", containerd_server_version(), format!("started (log {CONTAINERD_LOG})"));
    Ok(())
}

/// What someone without root or apt-get has to do by hand.
fn print_manual_steps(missing: &[&str]) {
    // Without dpkg we cannot tell what is there, so everything is named.
    let pkgs: Vec<&str> = if installed_packages().is_empty() { PACKAGES.to_vec() } else { missing.to_vec() };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "To provision the lab's runtime stack, as root on a Debian-family host:");
    if pkgs.is_empty() {
        let _ = writeln!(out, "  (all packages are installed)");
    } else {
        let _ =
            writeln!(out, "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y {}", pkgs.join(" "));
    }
    for tool in [NERDCTL, COSIGN, ACTIONLINT] {
        let _ = writeln!(
            out,
            "  cd \"$(go mod download -json {m}@{v} | sed -n 's/.*\"Dir\": \"\\(.*\\)\".*/\\1/p')\" && \\\n    CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags '-s -w -X {l}={v}' -o {INSTALL_DIR}/{n} {p}",
            m = tool.module,
            v = tool.version,
            l = tool.version_ldflag,
            n = tool.name,
            p = tool.package,
        );
        for patch in tool.patches {
            let _ = writeln!(
                out,
                "    (before building, {} needs the edit in xtask/src/provision.rs that waits for exec output; build with -X {}={})",
                patch.file,
                tool.version_ldflag,
                tool.built_version()
            );
        }
    }
    let _ = writeln!(out, "  write {PODMAN_DROPIN}:");
    match podman_dropin_text() {
        Ok(text) => {
            for line in text.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        Err(err) => {
            let _ = writeln!(out, "    (cannot compute: {err:#})");
        }
    }
    let _ = writeln!(
        out,
        "  unless {CONTAINERD_SOCK} answers: setsid --fork containerd --config {CONTAINERD_CONFIG} >>{CONTAINERD_LOG} 2>&1"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_left_unfinished_is_stopped_with_its_children() {
        // A stand-in for cargo and its compilers: a shell with a child.
        let child = Command::new("sh")
            .args(["-c", "sleep 60 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let (pid, mut child) = (child.id(), child);
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        let grandchild = line.trim().to_owned();
        let dropped = Instant::now();
        drop(Nextest { cargo: PathBuf::from("cargo"), building: Some((child, PathBuf::new())) });
        assert!(dropped.elapsed() < Duration::from_secs(10), "the build was waited for, not stopped");
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "the build's process is still there");
        // The grandchild is reaped by init once killed; give it a moment.
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            fs::read_to_string(format!("/proc/{grandchild}/stat")).map_or(true, |stat| stat.contains(") Z "))
        });
        assert!(gone, "its child {grandchild} is still running");
    }

    #[test]
    fn the_hosted_workflow_installs_the_nextest_provisioning_pins() {
        let workflow = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.github/workflows/ci.yml");
        let text = fs::read_to_string(&workflow).unwrap();
        let pin = format!("--locked --no-default-features {NEXTEST}@{NEXTEST_VERSION}");
        assert!(text.contains(&pin), "{} does not install `{pin}`", workflow.display());
    }
}
