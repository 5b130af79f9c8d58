//! What the host offers: which runtimes answer and hold the lab image, which
//! capabilities exist, and the runtime calls the lab makes itself (listing
//! and removing what a trial left behind).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::process;
use crate::scenario::{Need, RuntimeName};

/// The image every lab profile boots.
pub const LAB_IMAGE: &str = "localhost/brig-lab/guest:latest";

/// How long the lab waits on its own runtime calls.
const RUNTIME_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether a runtime can be used, and if not, why.
#[derive(Debug, Clone)]
pub enum RuntimeStatus {
    Usable {
        bin: PathBuf,
        /// `brig-` sandboxes that existed before the lab started: an
        /// exclusive scenario would remove them.
        foreign_sandboxes: Vec<String>,
    },
    Missing(String),
}

impl RuntimeStatus {
    pub fn bin(&self) -> Option<&Path> {
        match self {
            RuntimeStatus::Usable { bin, .. } => Some(bin),
            RuntimeStatus::Missing(_) => None,
        }
    }
}

/// Everything detected about the host, once per run.
#[derive(Debug, Clone, Default)]
pub struct Host {
    pub runtimes: BTreeMap<RuntimeName, RuntimeStatus>,
    /// Capabilities other than `runtime`, mapped to why each is missing
    /// (`None` when present). `microvm` is per runtime and lives in
    /// `microvm`.
    pub capabilities: BTreeMap<Need, Option<String>>,
    pub microvm: BTreeMap<RuntimeName, Option<String>>,
}

impl Host {
    /// Probes the runtimes in `wanted` and every capability.
    pub fn detect(wanted: &[RuntimeName]) -> Host {
        let mut host = Host::default();
        for &rt in wanted {
            host.runtimes.insert(rt, detect_runtime(rt));
            host.microvm.insert(rt, detect_microvm(rt));
        }
        for need in Need::ALL {
            if matches!(need, Need::Runtime | Need::Microvm) {
                continue;
            }
            host.capabilities.insert(need, detect_capability(need));
        }
        host
    }

    /// Why `need` is unmet for a trial on `rt`, or `None` when it is met.
    pub fn unmet(&self, rt: RuntimeName, need: Need) -> Option<String> {
        match need {
            Need::Runtime => match self.runtimes.get(&rt) {
                Some(RuntimeStatus::Usable { .. }) => None,
                Some(RuntimeStatus::Missing(why)) => Some(why.clone()),
                None => Some(format!("{rt} was not probed")),
            },
            Need::Microvm => self.microvm.get(&rt).cloned().unwrap_or_else(|| Some(format!("{rt} was not probed"))),
            other => self.capabilities.get(&other).cloned().unwrap_or_else(|| Some(format!("{other} was not probed"))),
        }
    }
}

/// The environment the lab's own runtime calls get: the host's PATH and
/// HOME and nothing else, so a trial's settings cannot steer them.
pub fn lab_command(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear();
    for name in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd
}

fn call(bin: &Path, args: &[&str]) -> Result<process::Output> {
    let mut cmd = lab_command(bin);
    cmd.args(args);
    let shown = format!("{} {}", bin.display(), args.join(" "));
    let out = process::run(cmd, None, RUNTIME_CALL_TIMEOUT, &shown)?;
    if out.code != Some(0) {
        bail!("{shown}: {}: {}", out.status, first_lines(&out.stderr));
    }
    Ok(out)
}

fn first_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(3).collect();
    if lines.is_empty() { "(no message)".to_owned() } else { lines.join(" / ") }
}

/// Finds `name` on the host's PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The lab's unprivileged user for the rootless lane.
pub const ROOTLESS_USER: &str = "brig-lab";

/// The rootless lane's user: uid, gid, home.
pub fn rootless_user() -> Option<(u32, u32, PathBuf)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.first() == Some(&ROOTLESS_USER) && f.len() >= 7)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?, PathBuf::from(f[5]))))
            .flatten()
    })
}

/// The podman storage configuration provisioning writes for the lane's
/// user: it names the store, so a process whose HOME is not the user's own
/// (a trial's, the bench's) still finds the user's images.
pub fn lane_storage_conf(home: &Path) -> PathBuf {
    home.join(".config/containers/storage.conf")
}

/// `program` run as the rootless lane's user through `setpriv`, in that
/// user's own environment and home; `None` when the user does not exist.
pub fn as_lane_user(program: impl AsRef<std::ffi::OsStr>) -> Option<Command> {
    let (uid, gid, home) = rootless_user()?;
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid", &uid.to_string(), "--regid", &gid.to_string(), "--clear-groups", "--"])
        .arg(program)
        .env_clear()
        .env("HOME", &home)
        .env("USER", ROOTLESS_USER)
        .env("XDG_RUNTIME_DIR", format!("/run/user/{uid}"))
        .env("CONTAINERS_STORAGE_CONF", lane_storage_conf(&home))
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .current_dir(&home);
    Some(cmd)
}

/// The rootless lane's runtime "binary": a script that runs podman as the
/// lab user in that user's own environment, so that every runtime call the
/// lab makes (listing, removing, `runtime:` and `guest:` steps) is the
/// user's, as it would be on a desktop.
fn rootless_podman() -> Result<PathBuf, String> {
    if !rustix::process::geteuid().is_root() {
        return Err("the lab is not running as root, so it cannot act as the rootless lane's user".to_owned());
    }
    let (uid, gid, home) =
        rootless_user().ok_or_else(|| format!("there is no user {ROOTLESS_USER} (cargo xtask provision makes it)"))?;
    let podman = which("podman").ok_or("podman is not on PATH")?;
    let script = format!(
        "#!/bin/sh\n# The lab's rootless lane: podman as {ROOTLESS_USER}.\nexec setpriv --reuid {uid} --regid {gid} --clear-groups -- env -i HOME={home} USER={ROOTLESS_USER} XDG_RUNTIME_DIR=/run/user/{uid} PATH=/usr/local/bin:/usr/bin:/bin {podman} \"$@\"\n",
        home = home.display(),
        podman = podman.display()
    );
    let path = std::env::temp_dir().join(format!("brig-lab-podman-rootless-{uid}"));
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    let written = std::fs::write(&tmp, script)
        .and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
        })
        .and_then(|()| std::fs::rename(&tmp, &path));
    written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn detect_runtime(rt: RuntimeName) -> RuntimeStatus {
    let bin = match rt {
        RuntimeName::PodmanRootless => match rootless_podman() {
            Ok(bin) => bin,
            Err(why) => return RuntimeStatus::Missing(why),
        },
        _ => match which(rt.as_str()) {
            Some(bin) => bin,
            None => return RuntimeStatus::Missing(format!("{rt} is not on PATH")),
        },
    };
    if let Err(err) = call(&bin, &["ps", "-a"]) {
        return RuntimeStatus::Missing(format!("{rt} does not answer: {err:#}"));
    }
    if call(&bin, &["image", "inspect", LAB_IMAGE]).is_err() {
        return RuntimeStatus::Missing(format!("{rt} has no {LAB_IMAGE} (cargo xtask images loads it)"));
    }
    match containers(&bin) {
        Ok(names) => RuntimeStatus::Usable {
            bin,
            foreign_sandboxes: names.into_iter().filter(|n| n.starts_with("brig-")).collect(),
        },
        Err(err) => RuntimeStatus::Missing(format!("{rt} cannot list containers: {err:#}")),
    }
}

fn detect_microvm(rt: RuntimeName) -> Option<String> {
    if !Path::new("/dev/kvm").exists() {
        return Some("no /dev/kvm".to_owned());
    }
    // /dev/kvm existing proves little on a nested host; the VM shim being
    // installed is the lab's bar, and the release lane provisions both.
    let shim = match rt {
        RuntimeName::Nerdctl => "containerd-shim-urunc-v2",
        RuntimeName::Podman | RuntimeName::PodmanRootless => "krun",
    };
    match which(shim) {
        Some(_) => None,
        None => Some(format!("no {shim} on PATH for {rt}")),
    }
}

fn detect_capability(need: Need) -> Option<String> {
    let missing_tool =
        |tools: &[&str]| tools.iter().find(|t| which(t).is_none()).map(|t| format!("{t} is not on PATH"));
    match need {
        Need::Runtime | Need::Microvm => None,
        Need::Registry => {
            if which("docker-registry").is_some() || which("registry").is_some() {
                None
            } else {
                Some("neither docker-registry nor registry is on PATH".to_owned())
            }
        }
        Need::Cosign => missing_tool(&["cosign"]),
        Need::SecretService => missing_tool(&["gnome-keyring-daemon", "dbus-run-session"]),
        Need::Keyutils => {
            if Path::new("/proc/keys").exists() {
                None
            } else {
                Some("the kernel exposes no /proc/keys".to_owned())
            }
        }
        Need::SecondUid => {
            if !rustix::process::geteuid().is_root() {
                Some("the lab is not running as root".to_owned())
            } else {
                missing_tool(&["setpriv"])
            }
        }
    }
}

/// The host's `inet` nftables tables, where brig keeps its host-isolation
/// rules (`brig_<sandbox>`), when nft can list them; callers keep the ones
/// named with their token.
pub fn firewall_tables() -> Vec<String> {
    tables_listed_by(&["nft"])
}

/// The `inet` tables `nft` lists when run as `argv` (`nft`, or `podman
/// unshare --rootless-netns nft` for a user's rootless namespace).
pub fn tables_listed_by<S: AsRef<std::ffi::OsStr>>(argv: &[S]) -> Vec<String> {
    let Some((program, rest)) = argv.split_first() else { return Vec::new() };
    let Ok(out) = std::process::Command::new(program).args(rest).args(["list", "tables", "inet"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("table inet "))
        .map(str::to_owned)
        .collect()
}

/// Every container name the runtime lists, running or not.
pub fn containers(bin: &Path) -> Result<Vec<String>> {
    let out = call(bin, &["ps", "-a", "--format", "{{.Names}}"])?;
    Ok(names(&out.stdout))
}

/// Every network name the runtime lists.
/// nerdctl's listing reads every network's config file, and fails when
/// another trial removes one in the middle: asked again then.
pub fn networks(bin: &Path) -> Result<Vec<String>> {
    let mut tries = 0;
    loop {
        match call(bin, &["network", "ls", "--format", "{{.Name}}"]) {
            Ok(out) => return Ok(names(&out.stdout)),
            Err(err) if tries < 5 && err.to_string().contains("no such file or directory") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err(err) => return Err(err),
        }
    }
}

fn names(stdout: &str) -> Vec<String> {
    stdout.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

/// Where CNI's host-local plugin keeps each network's allocations.
const CNI_ALLOCATIONS: &str = "/var/lib/cni/networks";

/// The names of the networks CNI keeps address allocations for.
fn cni_allocations() -> Vec<String> {
    std::fs::read_dir(CNI_ALLOCATIONS)
        .map(|dir| dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// Removes every container and network whose name holds `token`, then asks
/// again; whatever is still listed has leaked.
pub fn clean_up(bin: &Path, token: &str) -> Result<()> {
    let mine = |all: Vec<String>| -> Vec<String> { all.into_iter().filter(|n| n.contains(token)).collect() };
    let boxes = mine(containers(bin)?);
    let mut trouble = Vec::new();
    if !boxes.is_empty() {
        let mut args = vec!["rm", "-f"];
        args.extend(boxes.iter().map(String::as_str));
        if let Err(err) = call(bin, &args) {
            trouble.push(format!("{err:#}"));
        }
    }
    // Networks go after their containers: a network in use cannot be
    // removed. nerdctl's `network rm` looks at every container's task and
    // fails when one vanishes under it (a container another trial is
    // removing at that moment), so it is tried again a few times.
    for attempt in 0..5 {
        let nets = mine(networks(bin)?);
        if nets.is_empty() {
            break;
        }
        let mut args = vec!["network", "rm"];
        args.extend(nets.iter().map(String::as_str));
        match call(bin, &args) {
            Ok(_) => break,
            Err(err) if attempt == 4 => trouble.push(format!("{err:#}")),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
    // Host-isolation tables of the trial's sandboxes go with them, as brig's
    // `rm` takes them; sandboxes the lab removed itself leave theirs here.
    for table in mine(firewall_tables()) {
        let _ = std::process::Command::new("nft").args(["delete", "table", "inet", &table]).output();
    }
    // nerdctl's `network rm` leaves CNI's address-allocation directory of
    // the network (brig's own `rm` takes it); the lab removed these
    // networks itself, so it takes theirs too, and reports any it cannot.
    for dir in mine(cni_allocations()) {
        let _ = std::fs::remove_dir_all(Path::new(CNI_ALLOCATIONS).join(&dir));
    }
    let mut leaked = mine(containers(bin)?);
    leaked.extend(mine(networks(bin)?));
    leaked.extend(mine(cni_allocations()).iter().map(|d| format!("{CNI_ALLOCATIONS}/{d}")));
    leaked.extend(mine(firewall_tables()).iter().map(|t| format!("nft table inet {t}")));
    if !leaked.is_empty() {
        let mut msg = format!("leaked: {}", leaked.join(", "));
        for t in trouble {
            msg.push_str(&format!("\n  {t}"));
        }
        bail!(msg);
    }
    Ok(())
}
