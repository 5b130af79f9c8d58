//! The hull dialect: the macOS microVM runtime.
//!
//! hull looks like the docker family from a distance (`run --detach`, `exec`,
//! `ps`, `stop`, `rm`, `logs`, `inspect`) but differs where it matters to
//! brig: `ps` prints a table with no format option and no labels, a stopped
//! instance cannot be started again, there are no named networks (`--net
//! none|shared`), mounts are virtiofs shares of directories only, and there
//! is no create-time tmpfs. The last one is why [`HullCli::boot`] ends with a
//! privileged exec that lays the profile's memory-backed mounts over the
//! guest home, keeping each hostmount under them on host disk.
//!
//! Every command carries hull's telemetry attribution in its environment, so
//! brig's own plumbing (listings, probes, cleanup) is not counted as use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::adapter::{BootSpec, ExecSpec, Listed, Mount, NetworkAttach, PARK, Runtime, State};
use super::invoke::{Core, QUERY_TIMEOUT, runtime_words};
use super::{Error, Isolation, Kind};
use crate::process::{self, Command};
use crate::session::reference::SANDBOX_PREFIX;

/// One question to the guest agent. Its socket belongs to the VMM and accepts
/// before the guest has an agent behind it, so an unbounded exec in that
/// window would wait forever instead of failing and being retried.
const AGENT_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a fresh VM may take before the mounting exec gives up on it.
const AGENT_READY_LIMIT: Duration = Duration::from_secs(60);

/// The backend a sandbox boots on when neither `BRIG_HYPERVISOR` nor the
/// profile names one. hull's own fallback is qemu; vz is the one with a
/// directory share per mount and the notarised runner.
pub const DEFAULT_BACKEND: &str = "vz";

/// Where a hostmount waits while the tmpfs above it is mounted. /run is
/// root-owned in the guest, so nothing the agent can write to sits between a
/// privileged mount and its source.
pub const PERSIST_ROOT: &str = "/run/brig/persist";

/// The guest user the mounting exec runs as: `mount` needs it.
const GUEST_ROOT: &str = "root";

/// The guest side of [`HullCli::boot`]'s mounts: one step per argument
/// group, read by a fixed script so no path is ever spliced into shell text.
const MOUNT_SCRIPT: &str = r#"set -eu
while [ "$#" -gt 0 ]; do
  step=$1; shift
  case "$step" in
    bind)
      from=$1 to=$2 kind=$3; shift 3
      if [ "$kind" = file ]; then
        mkdir -p -- "$(dirname -- "$to")"
        [ -e "$to" ] || : > "$to"
      else
        mkdir -p -- "$to"
      fi
      mount --bind "$from" "$to" ;;
    tmpfs)
      to=$1 options=$2; shift 2
      mkdir -p -- "$to"
      mount -t tmpfs -o "$options" tmpfs "$to" ;;
    readonly)
      at=$1; shift
      mount --bind "$at" "$at"
      mount -o remount,bind,ro "$at" ;;
    *)
      echo "unknown mount step: $step" >&2
      exit 2 ;;
  esac
done"#;

#[derive(Debug, Clone)]
pub struct HullCli {
    bin: PathBuf,
    /// `vz`, `hvi` or `qemu`, from `BRIG_HYPERVISOR` or the profile; `None`
    /// takes [`DEFAULT_BACKEND`].
    backend: Option<String>,
    /// See [`Runtime::withhold`].
    withheld: Vec<String>,
}

impl HullCli {
    pub fn new(bin: PathBuf, backend: Option<String>) -> Self {
        HullCli { bin, backend, withheld: Vec::new() }
    }

    fn backend(&self) -> &str {
        self.backend.as_deref().unwrap_or(DEFAULT_BACKEND)
    }

    /// A hull command. `counted` marks an operation the user asked for;
    /// everything else is suppressed so one brig command counts once.
    fn cmd(&self, counted: bool) -> Command {
        self.withheld
            .iter()
            .fold(Command::new(&self.bin), |cmd, name| cmd.env_remove(name))
            .env("HULL_TELEMETRY_PRODUCT", "brig")
            .env("HULL_TELEMETRY_SUPPRESS", if counted { "" } else { "1" })
    }

    fn core(&self) -> Core {
        Core { kind: Kind::Hull, missing: is_missing }
    }

    fn query(&self, cmd: Command) -> Result<String, Error> {
        self.core().query(cmd)
    }

    fn unreachable(&self, err: &process::Error) -> Error {
        self.core().unreachable(err)
    }

    /// Run an operation on one instance; "instance not found" becomes
    /// [`Error::NoSuchSandbox`].
    fn operate(&self, cmd: Command, name: &str) -> Result<(), Error> {
        self.core().operate(cmd, name)
    }

    /// `hull run --detach …`: the instance, its shares and its variables
    /// (names only; values ride in the child's environment).
    pub fn run_command(&self, spec: &BootSpec, plan: &MountPlan) -> Result<Command, Error> {
        let backend = self.backend();
        let net = match (&spec.network, backend) {
            (NetworkAttach::None, _) => "none",
            // hvi's own network is a stub that forwards nothing; egress there
            // goes through hull's network gateway, which this build does not
            // start. Booting anyway would give a sandbox whose every
            // connection silently fails.
            (NetworkAttach::Named(_), "hvi") => {
                return Err(Error::NotYetSupported { verb: "a networked sandbox on hull's hvi backend" });
            }
            (NetworkAttach::Named(_), _) => "shared",
        };
        let mut cmd = self.cmd(true).args(["run", "--detach", "--name", &spec.name, "--hypervisor", backend]);
        cmd = cmd.args(["--net", net]);
        if let Some(pull) = spec.pull {
            cmd = cmd.args(["--pull", pull]);
        }
        cmd = cmd.args(["--mem", &spec.mem_mb.to_string()]).args(["--cpus", &spec.cpus.to_string()]);
        for (host, guest) in &plan.shares {
            cmd = cmd.arg("--shared-dir").arg(format!("{}:{guest}", host.display()));
        }
        for (name, value) in &spec.env {
            cmd = cmd.args(["--env", name]).env(name, value);
        }
        // `--` keeps the parked command's own flags (`sh -c`) away from
        // hull's parser, which reads flags after positional arguments too.
        Ok(cmd.arg("--").arg(&spec.image).args(PARK))
    }

    /// The privileged exec that lays the memory-backed mounts, or `None` when
    /// the spec asks for none.
    pub fn mount_command(&self, name: &str, plan: &MountPlan) -> Option<Command> {
        if plan.steps.is_empty() {
            return None;
        }
        let mut cmd =
            self.cmd(false).args(["exec", "--user", GUEST_ROOT, name, "--", "sh", "-c", MOUNT_SCRIPT, "brig-mount"]);
        for step in &plan.steps {
            cmd = match step {
                Step::Bind { from, to, file } => cmd.args(["bind", from, to, if *file { "file" } else { "dir" }]),
                Step::Tmpfs { to, options } => cmd.args(["tmpfs", to, options]),
                Step::ReadOnly { at } => cmd.args(["readonly", at]),
            };
        }
        Some(cmd)
    }

    /// Wait until the guest agent answers, so the mounting exec does not land
    /// in the window where the VMM is up and the guest is not.
    fn wait_agent(&self, name: &str) -> Result<(), Error> {
        let probe = ExecSpec { argv: vec!["true".to_owned()], ..ExecSpec::default() };
        let deadline = Instant::now() + AGENT_READY_LIMIT;
        loop {
            match self.exec(name, &probe).timeout(AGENT_CALL_TIMEOUT).output() {
                Ok(_) => return Ok(()),
                Err(err) if Instant::now() >= deadline => {
                    return Err(Error::NotReady {
                        name: name.to_owned(),
                        seconds: AGENT_READY_LIMIT.as_secs() as u32,
                        words: err.to_string(),
                    });
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
}

/// Every per-instance verb says `instance not found: <name>` for a name hull
/// does not know.
pub fn is_missing(words: &str) -> bool {
    words.contains("instance not found")
}

/// Parse `hull ps`, keeping brig's sandboxes only. `Err` carries the line
/// that does not read as hull's table.
///
/// hull lists running and stopped instances alike, under a header starting
/// `ID STATUS`, or prints `No instances found`. Only `running` is running:
/// `starting` has no VMM pid to exec into, and `stopped` and `error` are done.
/// hull keeps no labels, so none come back.
pub fn parse_list(stdout: &str) -> Result<Vec<Listed>, String> {
    let mut lines = stdout.lines().map(str::trim_end).filter(|l| !l.trim().is_empty());
    let Some(first) = lines.next() else { return Ok(Vec::new()) };
    if first.trim() == "No instances found" {
        return Ok(Vec::new());
    }
    let header: Vec<&str> = first.split_whitespace().collect();
    if header.get(..2) != Some(&["ID", "STATUS"][..]) {
        return Err(first.to_owned());
    }
    let mut rows = Vec::new();
    for line in lines {
        let mut fields = line.split_whitespace();
        let (Some(name), Some(status)) = (fields.next(), fields.next()) else { return Err(line.to_owned()) };
        rows.push(Listed {
            name: name.to_owned(),
            state: if status == "running" { State::Running } else { State::Stopped },
            labels: BTreeMap::new(),
        });
    }
    rows.retain(|r| r.name.starts_with(SANDBOX_PREFIX));
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// The version in `hull --version` (`hull version 0.1.0-rc21`).
#[cfg_attr(not(test), allow(dead_code, reason = "read by version reporting once it asks hull"))]
pub fn parse_version(stdout: &str) -> Option<&str> {
    stdout.lines().next()?.trim().strip_prefix("hull version ").map(str::trim).filter(|v| !v.is_empty())
}

/// The part of `hull inspect` (the instance's state record) brig reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspected {
    pub status: String,
    /// The VMM's argv, which names each share's host directory and tag.
    #[serde(default)]
    pub cmd_line: Vec<String>,
}

pub fn parse_inspect(stdout: &str) -> Result<Inspected, serde_json::Error> {
    serde_json::from_str(stdout.trim())
}

/// A directory the VMM exports to the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub tag: String,
    pub host: PathBuf,
}

/// The shares on a VMM command line: vz-runner's `--share`/`--share-ro` and
/// hvi's `--share-rw`/`--share-ro`, each followed by the directory and the
/// tag. The image's own root (tag `rootfs`) is not a mount brig made.
pub fn parse_shares(cmd_line: &[String]) -> Vec<Share> {
    let mut shares = Vec::new();
    let mut args = cmd_line.iter();
    while let Some(arg) = args.next() {
        if !matches!(arg.as_str(), "--share" | "--share-ro" | "--share-rw") {
            continue;
        }
        let (Some(host), Some(tag)) = (args.next(), args.next()) else { break };
        if tag != "rootfs" {
            shares.push(Share { tag: tag.clone(), host: PathBuf::from(host) });
        }
    }
    shares
}

/// Where the guest mounted each share, from its `/proc/self/mountinfo`: a
/// virtiofs (or 9p) mount whose source is the tag and whose root is the
/// export's own root. Bind mounts of a subdirectory (a pinned hostmount)
/// have another root and are not the share.
pub fn parse_mountinfo(text: &str) -> BTreeMap<String, String> {
    let mut points = BTreeMap::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(point), Some(fstype), Some(source)) =
            (left.get(3), left.get(4), right.first(), right.get(1))
        else {
            continue;
        };
        if *root == "/" && matches!(*fstype, "virtiofs" | "9p") {
            points.entry((*source).to_owned()).or_insert_with(|| unescape_mountinfo(point));
        }
    }
    points
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape_mountinfo(field: &str) -> String {
    field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

/// Each share with the guest path it is mounted at; shares the guest has not
/// mounted are left out.
pub fn join_mounts(shares: &[Share], points: &BTreeMap<String, String>) -> Vec<Mount> {
    shares
        .iter()
        .filter_map(|s| points.get(&s.tag).map(|p| Mount { source: s.host.clone(), destination: PathBuf::from(p) }))
        .collect()
}

/// One step of the privileged mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Bind {
        from: String,
        to: String,
        file: bool,
    },
    Tmpfs {
        to: String,
        options: String,
    },
    /// Make a path already in a share read-only in place.
    ReadOnly {
        at: String,
    },
}

/// How a boot spec's mounts reach a hull guest: directory shares at boot,
/// then the steps of one privileged exec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountPlan {
    pub shares: Vec<(PathBuf, String)>,
    pub steps: Vec<Step>,
}

/// Where one hostmount is pinned: its path relative to the share it comes
/// from, escaped rather than flattened so two paths never share a pin.
pub fn pin_path(relative: &str) -> String {
    format!("{PERSIST_ROOT}/{}", relative.replace('%', "%25").replace('/', "%2F"))
}

fn is_under(path: &str, dir: &str) -> bool {
    Path::new(path).starts_with(dir)
}

fn depth(path: &str) -> usize {
    Path::new(path).components().count()
}

/// Split a boot spec's mounts into what hull shares at boot and what the
/// privileged exec does after.
///
/// A bind whose guest path lies under a tmpfs is a hostmount. It cannot be a
/// share of its own (hull shares directories only, and a hostmount may be a
/// file), and it must survive the tmpfs laid over it, so it is reached
/// through the share that holds it (the home), bound out to a pin under
/// [`PERSIST_ROOT`] before the cover, and bound back in after. `is_file`
/// says which hostmounts are files.
pub fn plan_mounts(spec: &BootSpec, is_file: impl Fn(&Path) -> bool) -> Result<MountPlan, Error> {
    let mut tmpfs: Vec<_> = spec.tmpfs.iter().collect();
    tmpfs.sort_by_key(|t| depth(&t.path));
    let covered = |guest: &str| tmpfs.iter().any(|t| is_under(guest, &t.path));
    // A read-only bind (git metadata) lies inside a share already; it is
    // made read-only where the share put it.
    let (read_only, binds): (Vec<_>, Vec<_>) = spec.binds.iter().partition(|b| b.read_only);
    let (hostmounts, shares): (Vec<_>, Vec<_>) =
        binds.into_iter().map(|b| (b.host.clone(), b.guest.clone())).partition(|(_, guest)| covered(guest));

    let mut pinned = Vec::new();
    for (host, target) in &hostmounts {
        let holder = shares
            .iter()
            .filter(|(share, _)| host.starts_with(share))
            .max_by_key(|(share, _)| share.components().count())
            .ok_or_else(|| Error::HostmountUnshared { runtime: Kind::Hull, path: host.clone() })?;
        let relative = host.strip_prefix(&holder.0).unwrap_or(host).to_string_lossy().into_owned();
        let from = Path::new(&holder.1).join(&relative).to_string_lossy().into_owned();
        pinned.push((from, pin_path(&relative), target.clone(), is_file(host)));
    }
    pinned.sort_by_key(|(_, _, target, _)| depth(target));

    let mut steps = Vec::new();
    if !tmpfs.is_empty() {
        for (from, pin, _, file) in &pinned {
            steps.push(Step::Bind { from: from.clone(), to: pin.clone(), file: *file });
        }
        for t in &tmpfs {
            steps.push(Step::Tmpfs { to: t.path.clone(), options: t.options.clone() });
        }
        for (_, pin, target, file) in &pinned {
            steps.push(Step::Bind { from: pin.clone(), to: target.clone(), file: *file });
        }
    }
    steps.extend(read_only.into_iter().map(|b| Step::ReadOnly { at: b.guest.clone() }));
    Ok(MountPlan { shares, steps })
}

impl Runtime for HullCli {
    fn kind(&self) -> Kind {
        Kind::Hull
    }

    fn withhold(&mut self, names: Vec<String>) {
        self.withheld = names;
    }

    /// hull has one shared network per backend: a sandbox cannot get one
    /// of its own.
    fn isolates_networks(&self) -> bool {
        false
    }

    /// hull publishes ports on a live hvi sandbox only, which brig does not
    /// drive: a `--publish` is refused rather than dropped.
    fn publishes_ports(&self) -> bool {
        false
    }

    fn bin(&self) -> &Path {
        &self.bin
    }

    /// Every hull backend boots its own kernel.
    fn isolation(&self) -> Result<Isolation, Error> {
        Ok(Isolation::Microvm)
    }

    /// `hull ps` already lists stopped instances (it has no `-a`).
    fn list(&self) -> Result<Vec<Listed>, Error> {
        let stdout = self.query(self.cmd(false).arg("ps"))?;
        parse_list(&stdout).map_err(|line| Error::Unreadable { runtime: Kind::Hull, what: "ps", line })
    }

    /// hull records each share's host directory (on the VMM's command line)
    /// but not where the guest mounted it, so the guest's own mount table
    /// supplies the destinations. A stopped instance cannot be asked and
    /// reports no mounts.
    fn mounts(&self, name: &str) -> Result<Option<Vec<Mount>>, Error> {
        let cmd = self.cmd(false).args(["inspect", name]).timeout(QUERY_TIMEOUT);
        let inspected = match cmd.output() {
            Ok(out) => parse_inspect(&out.stdout).map_err(|source| Error::Unparsable {
                runtime: Kind::Hull,
                what: "inspect",
                source,
            })?,
            Err(err) if self.core().says_missing(&err) => return Ok(None),
            Err(err) => return Err(self.unreachable(&err)),
        };
        let shares = parse_shares(&inspected.cmd_line);
        if shares.is_empty() || inspected.status != "running" {
            return Ok(Some(Vec::new()));
        }
        let probe = ExecSpec { argv: vec!["cat".to_owned(), "/proc/self/mountinfo".to_owned()], ..ExecSpec::default() };
        let cmd = self.exec(name, &probe).timeout(AGENT_CALL_TIMEOUT);
        let table = cmd
            .output()
            .map_err(|err| self.core().failed(&cmd, &err, err.stderr().map(runtime_words).unwrap_or_default()))?;
        Ok(Some(join_mounts(&shares, &parse_mountinfo(&table.stdout))))
    }

    fn boot(&self, spec: &BootSpec) -> Result<(), Error> {
        // Not followed: a link the guest planted at a hostmount's host path
        // only decides whether the guest-side target is created as a file.
        let plan = plan_mounts(spec, |p| p.symlink_metadata().is_ok_and(|m| m.is_file()))?;
        self.operate(self.run_command(spec, &plan)?, &spec.name)?;
        if let Some(mount) = self.mount_command(&spec.name, &plan) {
            self.wait_agent(&spec.name)?;
            self.operate(mount, &spec.name)?;
        }
        Ok(())
    }

    /// hull has no way back from `stopped`: its instances are booted once.
    fn start(&self, name: &str) -> Result<(), Error> {
        Err(Error::NoRestart { runtime: Kind::Hull, name: name.to_owned() })
    }

    fn stop(&self, name: &str) -> Result<(), Error> {
        self.operate(self.cmd(true).args(["stop", name]), name)
    }

    fn remove(&self, name: &str) -> Result<(), Error> {
        self.operate(self.cmd(false).args(["rm", "--force", name]), name)
    }

    /// hull has no named networks: a sandbox is either on `--net shared` or
    /// on none, decided at boot.
    fn ensure_network(&self, _name: &str, _isolate: bool) -> Result<(), Error> {
        Ok(())
    }

    fn remove_network(&self, _name: &str) -> Result<(), Error> {
        Ok(())
    }

    /// hull always forwards stdin, so `interactive` needs no flag; a terminal
    /// session is the user's own and is the one exec counted.
    fn exec(&self, name: &str, spec: &ExecSpec) -> Command {
        let mut cmd = self.cmd(spec.tty).arg("exec");
        if spec.tty {
            cmd = cmd.arg("--tty");
        }
        if let Some(dir) = &spec.workdir {
            cmd = cmd.args(["--cwd", dir]);
        }
        for (key, value) in &spec.env {
            cmd = cmd.args(["--env", key]).env(key, value);
        }
        for (key, value) in &spec.exposed {
            cmd = cmd.arg("--env").arg(format!("{key}={value}"));
        }
        cmd.arg(name).arg("--").args(&spec.argv)
    }

    fn logs(&self, name: &str, follow: bool, tail: Option<u32>) -> Command {
        Core::logs(self.cmd(false), name, follow, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Bind;
    use crate::runtime::adapter::Tmpfs;
    use crate::runtime::testdata;
    use rstest::rstest;

    fn hull(backend: Option<&str>) -> HullCli {
        HullCli::new("/usr/local/bin/hull".into(), backend.map(str::to_owned))
    }

    fn argv(cmd: &Command) -> Vec<String> {
        cmd.argv().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    fn spec() -> BootSpec {
        BootSpec {
            name: "brig-claude-code".into(),
            image: "ghcr.io/brig-sh/claude-code-stock:root".into(),
            mem_mb: 4096,
            cpus: 4,
            pull: Some("missing"),
            network: NetworkAttach::None,
            publish: Vec::new(),
            binds: vec![
                Bind::rw("/Users/u/brig/claude-code", "/root"),
                Bind::rw("/Users/u/brig/claude-code/.claude/sessions", "/root/.claude/sessions"),
                Bind::rw("/Users/u/brig/claude-code/.claude/history.jsonl", "/root/.claude/history.jsonl"),
                Bind::rw("/Users/u/src/app", "/project/app"),
            ],
            tmpfs: vec![Tmpfs { path: "/root/.claude".into(), options: "size=512m,mode=0700,nodev,nosuid".into() }],
            env: vec![("GH_TOKEN".into(), "ghp_s3cret".into()), ("HOME".into(), "/root".into())],
            labels: vec![("sh.brig.agent".into(), "claude-code".into())],
            hardening: None,
        }
    }

    fn is_history(p: &Path) -> bool {
        p.ends_with("history.jsonl")
    }

    #[rstest]
    #[case::default_backend_no_network(None, NetworkAttach::None, &["--hypervisor", "vz", "--net", "none"])]
    #[case::vz_shared(Some("vz"), NetworkAttach::Named("brig-shared".into()), &["--hypervisor", "vz", "--net", "shared"])]
    #[case::qemu_shared(Some("qemu"), NetworkAttach::Named("brig-x-net".into()), &["--hypervisor", "qemu", "--net", "shared"])]
    #[case::hvi_offline(Some("hvi"), NetworkAttach::None, &["--hypervisor", "hvi", "--net", "none"])]
    fn boot_argv(#[case] backend: Option<&str>, #[case] network: NetworkAttach, #[case] backend_net: &[&str]) {
        let spec = BootSpec { network, ..spec() };
        let plan = plan_mounts(&spec, is_history).unwrap();
        let cmd = hull(backend).run_command(&spec, &plan).unwrap();
        let mut want = vec!["run", "--detach", "--name", "brig-claude-code"];
        want.extend_from_slice(backend_net);
        want.extend_from_slice(&["--pull", "missing", "--mem", "4096", "--cpus", "4"]);
        want.extend_from_slice(&["--shared-dir", "/Users/u/brig/claude-code:/root"]);
        want.extend_from_slice(&["--shared-dir", "/Users/u/src/app:/project/app"]);
        want.extend_from_slice(&["--env", "GH_TOKEN", "--env", "HOME", "--", "ghcr.io/brig-sh/claude-code-stock:root"]);
        want.extend_from_slice(&PARK);
        assert_eq!(argv(&cmd), want);
        assert!(!cmd.display().contains("ghp_s3cret"), "{}", cmd.display());
    }

    #[test]
    fn hvi_with_a_network_is_refused_not_booted_mute() {
        let spec = BootSpec { network: NetworkAttach::Named("brig-shared".into()), ..spec() };
        let err = hull(Some("hvi")).run_command(&spec, &MountPlan::default()).unwrap_err();
        assert!(matches!(err, Error::NotYetSupported { .. }), "{err:?}");
    }

    #[test]
    fn boot_values_reach_only_the_child_environment() {
        // /bin/false stands in for hull: the run fails, and its error shows
        // the argv as run.
        let rt = HullCli::new("/bin/false".into(), None);
        let err = rt.boot(&BootSpec { tmpfs: Vec::new(), ..spec() }).unwrap_err();
        let Error::Operation { command: text, what, .. } = &err else { panic!("{err:?}") };
        assert_eq!(what, "false run");
        assert!(text.contains("--env GH_TOKEN --env HOME --"), "{text}");
        assert!(!text.contains("ghp_s3cret"), "{text}");
        assert!(!format!("{err:?}").contains("ghp_s3cret"));
    }

    #[test]
    fn hostmounts_are_pinned_covered_and_bound_back() {
        let plan = plan_mounts(&spec(), is_history).unwrap();
        let bind = |from: &str, to: &str, file| Step::Bind { from: from.into(), to: to.into(), file };
        assert_eq!(
            plan.steps,
            vec![
                bind("/root/.claude/sessions", "/run/brig/persist/.claude%2Fsessions", false),
                bind("/root/.claude/history.jsonl", "/run/brig/persist/.claude%2Fhistory.jsonl", true),
                Step::Tmpfs { to: "/root/.claude".into(), options: "size=512m,mode=0700,nodev,nosuid".into() },
                bind("/run/brig/persist/.claude%2Fsessions", "/root/.claude/sessions", false),
                bind("/run/brig/persist/.claude%2Fhistory.jsonl", "/root/.claude/history.jsonl", true),
            ]
        );
        let cmd = hull(None).mount_command("brig-claude-code", &plan).unwrap();
        let got = argv(&cmd);
        assert_eq!(got[..8], ["exec", "--user", "root", "brig-claude-code", "--", "sh", "-c", MOUNT_SCRIPT]);
        assert_eq!(
            got[8..12],
            ["brig-mount", "bind", "/root/.claude/sessions", "/run/brig/persist/.claude%2Fsessions"]
        );
        assert_eq!(got.len(), 9 + 4 * 4 + 3);
    }

    #[test]
    fn a_moved_tmpfs_takes_its_hostmounts_from_the_home_share() {
        let spec = BootSpec {
            binds: vec![Bind::rw("/h", "/root"), Bind::rw("/h/.claude/sessions", "/brig/claude/sessions")],
            tmpfs: vec![Tmpfs { path: "/brig/claude".into(), options: "size=64m".into() }],
            ..spec()
        };
        let plan = plan_mounts(&spec, |_| false).unwrap();
        assert_eq!(plan.shares, vec![(PathBuf::from("/h"), "/root".to_owned())]);
        assert_eq!(
            plan.steps[0],
            Step::Bind { from: "/root/.claude/sessions".into(), to: pin_path(".claude/sessions"), file: false }
        );
        assert_eq!(
            plan.steps[2],
            Step::Bind { from: pin_path(".claude/sessions"), to: "/brig/claude/sessions".into(), file: false }
        );
    }

    #[test]
    fn no_tmpfs_means_no_privileged_exec() {
        let spec = BootSpec { binds: vec![Bind::rw("/h", "/root")], tmpfs: Vec::new(), ..spec() };
        let plan = plan_mounts(&spec, |_| false).unwrap();
        assert!(plan.steps.is_empty());
        assert!(hull(None).mount_command("brig-x", &plan).is_none());
    }

    #[test]
    fn a_hostmount_outside_every_share_is_refused() {
        let spec =
            BootSpec { binds: vec![Bind::rw("/h", "/root"), Bind::rw("/elsewhere/s", "/root/.claude/s")], ..spec() };
        let err = plan_mounts(&spec, |_| false).unwrap_err();
        assert!(matches!(&err, Error::HostmountUnshared { path, .. } if path == Path::new("/elsewhere/s")), "{err:?}");
    }

    #[rstest]
    #[case::captured(&[], false, None, &["exec", "brig-x", "--", "true"])]
    #[case::handover(&[], true, None, &["exec", "--tty", "brig-x", "--", "claude"])]
    #[case::workdir(&[], false, Some("/project/app"), &["exec", "--cwd", "/project/app", "brig-x", "--", "true"])]
    #[case::env(&[("GH_TOKEN", "ghp_s3cret")], true, Some("/root"), &["exec", "--tty", "--cwd", "/root", "--env", "GH_TOKEN", "brig-x", "--", "claude"])]
    fn exec_argv(
        #[case] env: &[(&str, &str)],
        #[case] tty: bool,
        #[case] workdir: Option<&str>,
        #[case] want: &[&str],
    ) {
        let spec = ExecSpec {
            argv: vec![if tty { "claude" } else { "true" }.to_owned()],
            workdir: workdir.map(str::to_owned),
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            exposed: Vec::new(),
            tty,
            interactive: tty,
        };
        let cmd = hull(None).exec("brig-x", &spec);
        assert_eq!(argv(&cmd), want);
        assert!(!cmd.display().contains("ghp_s3cret"));
    }

    #[rstest]
    #[case::all(false, None, &["logs", "brig-x"])]
    #[case::follow(true, None, &["logs", "--follow", "brig-x"])]
    #[case::tail(false, Some(50), &["logs", "--tail", "50", "brig-x"])]
    #[case::both(true, Some(0), &["logs", "--follow", "--tail", "0", "brig-x"])]
    fn logs_argv(#[case] follow: bool, #[case] tail: Option<u32>, #[case] want: &[&str]) {
        assert_eq!(argv(&hull(None).logs("brig-x", follow, tail)), want);
    }

    #[test]
    fn stop_and_rm_argv_as_run() {
        let rt = HullCli::new("/bin/false".into(), None);
        let text = |err: Error| match err {
            Error::Operation { command, .. } => command,
            other => panic!("{other:?}"),
        };
        assert_eq!(text(rt.stop("brig-x").unwrap_err()), "false stop brig-x");
        assert_eq!(text(rt.remove("brig-x").unwrap_err()), "false rm --force brig-x");
    }

    #[test]
    fn a_stopped_instance_cannot_be_started() {
        let err = hull(None).start("brig-x").unwrap_err();
        assert!(matches!(&err, Error::NoRestart { name, .. } if name == "brig-x"), "{err:?}");
    }

    #[test]
    fn networks_are_not_hulls_to_make() {
        let rt = HullCli::new("/bin/false".into(), None);
        assert!(rt.ensure_network("brig-x-net", true).is_ok());
        assert!(rt.remove_network("brig-x-net").is_ok());
        assert_eq!(rt.isolation().unwrap(), Isolation::Microvm);
    }

    #[rstest]
    #[case::running_and_stopped("hull-ps.txt", &[("brig-probe", State::Running), ("brig-probe-errored", State::Stopped), ("brig-probe-starting", State::Stopped), ("brig-probe-stopped", State::Stopped)])]
    #[case::empty("hull-ps-empty.txt", &[])]
    #[case::only_foreign("hull-ps-foreign.txt", &[])]
    #[case::older_columns("hull-ps-old-columns.txt", &[("brig-old", State::Running), ("brig-old-stopped", State::Stopped)])]
    fn list_parsing(#[case] file: &str, #[case] want: &[(&str, State)]) {
        let rows = parse_list(&testdata(file)).unwrap();
        let got: Vec<(&str, State)> = rows.iter().map(|r| (r.name.as_str(), r.state)).collect();
        assert_eq!(got, want);
        assert!(rows.iter().all(|r| r.labels.is_empty()));
    }

    #[rstest]
    #[case::not_a_table("flag provided but not defined: -a\n")]
    #[case::short_row("ID  STATUS  EXIT  PID  IP  CREATED\nbrig-x\n")]
    fn unreadable_listings_are_errors(#[case] stdout: &str) {
        assert!(parse_list(stdout).is_err());
        assert!(parse_list("").unwrap().is_empty());
    }

    #[test]
    fn a_failing_listing_is_an_error_not_an_empty_one() {
        let err = HullCli::new("/bin/false".into(), None).list().unwrap_err();
        assert!(matches!(err, Error::Unreachable { runtime: Kind::Hull, .. }), "{err:?}");
    }

    #[test]
    fn version() {
        assert_eq!(parse_version(&testdata("hull-version.txt")), Some("0.1.0-rc21"));
        assert_eq!(parse_version("nerdctl version 1.7.7\n"), None);
    }

    #[rstest]
    #[case::vz("hull-inspect-vz.json", "running")]
    #[case::hvi("hull-inspect-hvi.json", "running")]
    fn mounts_join_shares_with_the_guest_mount_table(#[case] file: &str, #[case] status: &str) {
        let inspected = parse_inspect(&testdata(file)).unwrap();
        assert_eq!(inspected.status, status);
        let shares = parse_shares(&inspected.cmd_line);
        assert_eq!(
            shares,
            vec![
                Share { tag: "share0".into(), host: "/Users/u/brig/claude-code".into() },
                Share { tag: "share1".into(), host: "/Users/u/src/app".into() },
            ]
        );
        let mounts = join_mounts(&shares, &parse_mountinfo(&testdata("hull-exec-mountinfo.txt")));
        assert_eq!(
            mounts,
            vec![
                Mount { source: "/Users/u/brig/claude-code".into(), destination: "/root".into() },
                Mount { source: "/Users/u/src/app".into(), destination: "/project/app".into() },
            ]
        );
    }

    #[test]
    fn a_stopped_inspect_still_parses() {
        let inspected = parse_inspect(&testdata("hull-inspect-stopped.json")).unwrap();
        assert_eq!(inspected.status, "stopped");
        assert_eq!(parse_shares(&inspected.cmd_line).len(), 1);
    }

    #[rstest]
    #[case::rm("hull-rm-missing.stderr", true)]
    #[case::stop("hull-stop-missing.stderr", true)]
    #[case::exec("hull-exec-missing.stderr", true)]
    #[case::inspect("hull-inspect-missing.stderr", true)]
    #[case::logs("hull-logs-missing.stderr", true)]
    #[case::exec_stopped("hull-exec-stopped.stderr", false)]
    #[case::rm_running("hull-rm-running.stderr", false)]
    #[case::run_exists("hull-run-exists.stderr", false)]
    #[case::store_unreadable("hull-ps-store-unreadable.stderr", false)]
    fn missing_instances_are_recognised(#[case] file: &str, #[case] missing: bool) {
        assert_eq!(is_missing(&runtime_words(&testdata(file))), missing, "{file}");
    }

    #[test]
    fn runtime_words_keep_hulls_own_sentences() {
        assert_eq!(runtime_words(&testdata("hull-rm-missing.stderr")), "instance not found: brig-nope");
        // The info line before the failure is left out: the error line is the reason.
        assert_eq!(
            runtime_words(&testdata("hull-ps-store-unreadable.stderr")),
            "failed to list instances directory: open /Users/u/.hull/store/instances: permission denied"
        );
    }

    #[test]
    fn mount_points_are_unescaped() {
        let line = "40 24 0:30 / /mnt/with\\040space rw,relatime - virtiofs share2 rw";
        assert_eq!(parse_mountinfo(line).get("share2").map(String::as_str), Some("/mnt/with space"));
    }

    #[test]
    fn pins_escape_rather_than_flatten() {
        assert_eq!(pin_path(".claude/sessions"), "/run/brig/persist/.claude%2Fsessions");
        assert_ne!(pin_path("a%2Fb"), pin_path("a/b"));
    }
}
