//! The docker-compatible family: nerdctl, podman and docker.
//!
//! The three share most of their command line; where they differ (the shape
//! of `ps`, how a sandbox is handed to a VM shim, how a network is cut off
//! from the others) the difference is a `match` on [`Kind`] in this file, and
//! each parser is tested on output captured from the real binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::adapter::{BootSpec, ExecSpec, Found, Listed, Mount, NetworkAttach, Runtime, State};
use super::{Error, Isolation, Kind, isolation_of};
use crate::process::{self, Command};
use crate::session::reference::SANDBOX_PREFIX;

use super::invoke::{Core, QUERY_TIMEOUT, runtime_words};

#[derive(Debug, Clone)]
pub struct OciCli {
    kind: Kind,
    bin: PathBuf,
    /// nerdctl only: the containerd shim a sandbox is handed to.
    shim: Option<String>,
    /// podman only: the OCI runtime its configuration names, passed to
    /// `podman run --runtime` so the configured runtime is the one used.
    podman_runtime: Option<String>,
    /// nerdctl only: the shim's executable, when it was looked for and not
    /// found; a boot is refused before anything is created.
    shim_missing: Option<String>,
    /// See [`Runtime::withhold`].
    withheld: Vec<String>,
}

/// What podman runs when its configuration names no runtime.
const PODMAN_DEFAULT_RUNTIME: &str = "crun";

impl OciCli {
    pub fn new(kind: Kind, bin: PathBuf, shim: Option<String>) -> Self {
        OciCli { kind, bin, shim, podman_runtime: None, shim_missing: None, withheld: Vec::new() }
    }

    /// A nerdctl adapter handing sandboxes to `shim`, which must be
    /// installed where containerd finds it.
    pub fn nerdctl(bin: PathBuf, shim: String, env: &crate::environment::Environment) -> Self {
        let shim_missing = shim_executable(&shim).filter(|exe| match exe.strip_prefix('/') {
            Some(_) => !Path::new(exe).is_file(),
            None => env.find_on_path(exe).is_none(),
        });
        OciCli { kind: Kind::Nerdctl, bin, shim: Some(shim), podman_runtime: None, shim_missing, withheld: Vec::new() }
    }

    /// A podman adapter handing sandboxes to `runtime`, the OCI runtime its
    /// configuration names (see [`super::podman_configured_runtime`]).
    pub fn podman(bin: PathBuf, runtime: Option<String>) -> Self {
        OciCli {
            kind: Kind::Podman,
            bin,
            shim: None,
            podman_runtime: runtime,
            shim_missing: None,
            withheld: Vec::new(),
        }
    }

    fn cmd(&self) -> Command {
        self.withheld.iter().fold(Command::new(&self.bin), |cmd, name| cmd.env_remove(name))
    }

    fn core(&self) -> Core {
        Core { kind: self.kind, missing: is_missing }
    }

    fn query(&self, cmd: Command) -> Result<String, Error> {
        self.core().query(cmd)
    }

    fn unreachable(&self, err: &process::Error) -> Error {
        self.core().unreachable(err)
    }

    fn operate(&self, cmd: Command, name: &str) -> Result<(), Error> {
        self.core().operate(cmd, name)
    }
}

/// `exec failed with exit code N` from nerdctl's last stderr line.
pub fn nerdctl_exec_status(stderr: &str) -> Option<i32> {
    let words = runtime_words(stderr.lines().rev().find(|l| !l.trim().is_empty())?);
    words.strip_prefix("exec failed with exit code ")?.trim().parse().ok()
}

/// `runtime = "…"` in the `[engine]` table of a containers.conf file. A
/// deliberately small reader: the file is TOML, and brig needs one key.
pub fn engine_runtime(text: &str) -> Option<String> {
    let mut in_engine = false;
    let mut found = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_engine = line == "[engine]";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_engine && key.trim() == "runtime" {
            let value = value.split('#').next().unwrap_or_default().trim().trim_matches('"').trim_matches('\'');
            if !value.is_empty() {
                found = Some(value.to_owned());
            }
        }
    }
    found
}

/// The runtimes' network commands read every container's task, every
/// network's config file and the host's interfaces, and fail when another
/// sandbox's goes away, or is half written, at that moment — nerdctl with
/// "task … not found", "error reading /etc/cni/net.d/…: no such file or
/// directory" or "error parsing configuration list: unexpected end of JSON
/// input", podman with "route ip+net: no such network interface": a race
/// with someone else, worth a retry.
fn raced(words: &str) -> bool {
    (words.contains("task") && words.contains("not found"))
        || (words.contains("error reading") && words.contains("no such file or directory"))
        || words.contains("error parsing configuration list")
        || words.contains("no such network interface")
}

/// nerdctl's create hook failing on a network config file another process
/// was writing or removing at that moment.
fn hook_raced(words: &str) -> bool {
    words.contains("error running hook") && raced(words)
}

/// nerdctl's `run` losing the container it had just made (`container "<id>"
/// in namespace "default": not found`), seen under load when many boots
/// run at once.
fn vanished(words: &str) -> bool {
    words.contains("container \"") && words.contains("in namespace") && words.contains("not found")
}

/// The runtime's words for a `run` whose name is taken.
fn name_taken(words: &str) -> bool {
    words.contains("is already used by ID") || words.contains("name is already in use")
}

/// The executable containerd runs for a runtime type:
/// `io.containerd.urunc.v2` → `containerd-shim-urunc-v2`; an absolute path
/// is itself. `None` for a name containerd resolves some other way.
pub fn shim_executable(shim: &str) -> Option<String> {
    if shim.starts_with('/') {
        return Some(shim.to_owned());
    }
    match shim.split('.').collect::<Vec<_>>().as_slice() {
        ["io", "containerd", name, version] if !name.is_empty() && !version.is_empty() => {
            Some(format!("containerd-shim-{name}-{version}"))
        }
        _ => None,
    }
}

fn is_missing(words: &str) -> bool {
    ["no such container", "no such object", "no container with name"].iter().any(|needle| words.contains(needle))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PsLine {
    names: String,
    status: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    labels: Option<Labels>,
}

/// nerdctl prints labels as an object, docker as `k=v,k=v`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Labels {
    Map(BTreeMap<String, String>),
    Text(String),
}

impl Labels {
    fn into_map(self) -> BTreeMap<String, String> {
        match self {
            Labels::Map(map) => map,
            Labels::Text(text) => {
                text.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
            }
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PodmanPs {
    names: Vec<String>,
    state: String,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

fn state_of(word: &str) -> State {
    // "Up", "Up 3 seconds", "running" are running; "Exited (0) …", "Created",
    // "exited", "created", "stopped", "paused" all mean not running now.
    let word = word.trim().to_ascii_lowercase();
    if word == "running" || word.starts_with("up") {
        State::Running
    } else if word.is_empty() || word.starts_with("unknown") {
        State::Unknown
    } else {
        State::Stopped
    }
}

/// Parse `ps -a` output in `kind`'s dialect, keeping brig's sandboxes only.
pub fn parse_list(kind: Kind, stdout: &str) -> Result<Vec<Listed>, serde_json::Error> {
    let mut rows = Vec::new();
    match kind {
        Kind::Podman => {
            let text = stdout.trim();
            let entries: Vec<PodmanPs> = if text.is_empty() { Vec::new() } else { serde_json::from_str(text)? };
            for entry in entries {
                for name in entry.names {
                    rows.push(Listed {
                        name,
                        state: state_of(&entry.state),
                        labels: entry.labels.clone().unwrap_or_default(),
                    });
                }
            }
        }
        _ => {
            for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
                let entry: PsLine = serde_json::from_str(line)?;
                let state = state_of(entry.state.as_deref().unwrap_or(&entry.status));
                rows.push(Listed {
                    name: entry.names,
                    state,
                    labels: entry.labels.map(Labels::into_map).unwrap_or_default(),
                });
            }
        }
    }
    rows.retain(|r| r.name.starts_with(SANDBOX_PREFIX));
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Inspected {
    #[serde(default)]
    name: String,
    #[serde(default)]
    state: Option<InspectedState>,
    #[serde(default)]
    config: Option<InspectedConfig>,
    /// `null` in nerdctl's answer for a sandbox without mounts.
    #[serde(default)]
    mounts: Option<Vec<InspectedMount>>,
    #[serde(default)]
    host_config: Option<InspectedHostConfig>,
    #[serde(default)]
    network_settings: Option<InspectedNetworks>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedHostConfig {
    #[serde(default)]
    network_mode: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedNetworks {
    #[serde(default)]
    networks: Option<BTreeMap<String, serde_json::Value>>,
}

/// The posture of a sandbox's network as the runtime tells it (spec 05
/// §2.3): no network is offline; the runtime's default network or brig's
/// shared one is shared; the sandbox's own network is isolated; anything
/// else (the host's network, several, another's) is no posture brig knows.
/// nerdctl names the networks in its `nerdctl/networks` label (and reports
/// an `unknown-eth0` interface); podman and docker in `NetworkSettings`.
fn posture_seen(name: &str, e: &Inspected) -> Option<&'static str> {
    let labels = e.config.as_ref().and_then(|c| c.labels.as_ref());
    let networks: Vec<String> = match labels.and_then(|l| l.get("nerdctl/networks")) {
        Some(list) => serde_json::from_str(list).ok()?,
        None => {
            match e.host_config.as_ref().and_then(|h| h.network_mode.as_deref()) {
                Some("none") => return Some("offline"),
                // Rootless podman's default: the user's own stack, which
                // reaches the host; no network of the sandbox's own.
                Some("slirp4netns" | "pasta") => return Some("shared"),
                _ => {}
            }
            e.network_settings.as_ref()?.networks.as_ref()?.keys().cloned().collect()
        }
    };
    match networks.as_slice() {
        [one] if one == "none" => Some("offline"),
        [one] if one == "bridge" || one == "podman" || one == crate::engine::SHARED_NETWORK => Some("shared"),
        [one] if *one == crate::engine::network_name(name) => Some("isolated"),
        _ => None,
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedState {
    #[serde(default)]
    status: String,
    #[serde(default)]
    running: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedConfig {
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedMount {
    #[serde(default)]
    source: PathBuf,
    destination: PathBuf,
}

/// A network's host bridge from `network inspect`, in each runtime's
/// dialect: nerdctl's native CNI configuration (the bridge plugin's
/// `bridge` and its ranges' gateways), podman's `network_interface` and
/// `subnets`, docker's bridge-name option (else `br-` and the id's first
/// twelve) and `IPAM.Config`.
pub fn parse_bridge(stdout: &str) -> Option<crate::firewall::Bridge> {
    use serde_json::Value;
    let doc: Value = serde_json::from_str(stdout).ok()?;
    let net = doc.get(0)?;
    let gateways = |items: Vec<&Value>, key: &str| -> Vec<std::net::IpAddr> {
        items.iter().filter_map(|v| v.get(key)?.as_str()?.parse().ok()).collect()
    };
    let (interface, gateways) = if let Some(plugins) = net.pointer("/CNI/plugins").and_then(Value::as_array) {
        let bridge = plugins.iter().find(|p| p.get("type").and_then(Value::as_str) == Some("bridge"))?;
        let ranges: Vec<&Value> = bridge
            .pointer("/ipam/ranges")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .collect();
        (bridge.get("bridge")?.as_str()?.to_owned(), gateways(ranges, "gateway"))
    } else if let Some(iface) = net.get("network_interface").and_then(Value::as_str) {
        let subnets = net.get("subnets").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        (iface.to_owned(), gateways(subnets, "gateway"))
    } else {
        let named = net.pointer("/Options/com.docker.network.bridge.name").and_then(Value::as_str).map(str::to_owned);
        let id = net.get("Id").and_then(Value::as_str).filter(|id| id.len() >= 12);
        let iface = named.or_else(|| id.map(|id| format!("br-{}", &id[..12])))?;
        let configs =
            net.pointer("/IPAM/Config").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        (iface, gateways(configs, "Gateway"))
    };
    Some(crate::firewall::Bridge { interface, gateways })
}

/// Where CNI's host-local IPAM keeps each network's allocations.
const CNI_IPAM_DIR: &str = "/var/lib/cni/networks";

/// nerdctl's `network rm` leaves the host-local IPAM directory of the
/// network behind (its lock and last-reserved-address files), one more per
/// isolated sandbox ever made. Once the network is gone and the directory
/// holds nothing else (no address still reserved), it goes too. Nothing is
/// followed: the directory and its entries are looked at without
/// dereferencing links, and anything unexpected leaves it in place.
fn release_ipam_dir(root: &Path, network: &str) {
    if network.contains('/') || network.starts_with('.') {
        return;
    }
    let dir = root.join(network);
    let Ok(meta) = std::fs::symlink_metadata(&dir) else { return };
    if !meta.is_dir() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let mut files = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else { return };
        let name = entry.file_name().to_string_lossy().into_owned();
        let plain = entry.file_type().is_ok_and(|t| t.is_file());
        if !plain || !(name == "lock" || name.starts_with("last_reserved_ip")) {
            return;
        }
        files.push(entry.path());
    }
    for file in files {
        let _ = std::fs::remove_file(file);
    }
    let _ = std::fs::remove_dir(&dir);
}

/// The digests in `image inspect`'s `RepoDigests` (`repo@sha256:…`, one
/// line per image inspected); `None` when there are none.
pub fn parse_repo_digests(stdout: &str) -> Option<Vec<String>> {
    let digests: Vec<String> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Option<Vec<String>>>(line.trim()).ok().flatten())
        .flatten()
        .filter_map(|d| d.rsplit_once('@').map(|(_, digest)| digest.to_owned()))
        .collect();
    (!digests.is_empty()).then_some(digests)
}

/// Parse `inspect <name>` (a JSON array of one object) into its mounts.
pub fn parse_mounts(stdout: &str) -> Result<Vec<Mount>, serde_json::Error> {
    let entries: Vec<Inspected> = serde_json::from_str(stdout.trim())?;
    Ok(entries
        .into_iter()
        .flat_map(|e| e.mounts.unwrap_or_default())
        .map(|m| Mount { source: m.source, destination: m.destination })
        .collect())
}

/// Parse `inspect <name>` into the sandbox's row and mounts. docker and
/// podman print the name with a leading `/` or without; nerdctl without.
/// A state the runtime could not read itself (nerdctl says `unknown` when a
/// task lookup fails under load) is an error, never taken for "stopped":
/// brig does not act on an unknown state.
pub fn parse_found(stdout: &str) -> Result<Option<Found>, FoundError> {
    let entries: Vec<Inspected> = serde_json::from_str(stdout.trim()).map_err(FoundError::Json)?;
    let Some(e) = entries.into_iter().next() else { return Ok(None) };
    let name = e.name.trim_start_matches('/').to_owned();
    let state = match &e.state {
        Some(s) if s.running => State::Running,
        Some(s) => match s.status.to_ascii_lowercase().as_str() {
            "running" => State::Running,
            "created" | "exited" | "stopped" | "configured" | "initialized" | "paused" | "dead" => State::Stopped,
            other => return Err(FoundError::UnknownState { name, state: other.to_owned() }),
        },
        None => return Err(FoundError::UnknownState { name, state: String::new() }),
    };
    let mut labels = e.config.as_ref().and_then(|c| c.labels.clone()).unwrap_or_default();
    labels.remove(super::adapter::label::NETWORK_SEEN);
    if let Some(posture) = posture_seen(&name, &e) {
        labels.insert(super::adapter::label::NETWORK_SEEN.to_owned(), posture.to_owned());
    }
    Ok(Some(Found {
        listed: Listed { name, state, labels },
        mounts: e
            .mounts
            .unwrap_or_default()
            .into_iter()
            .map(|m| Mount { source: m.source, destination: m.destination })
            .collect(),
    }))
}

/// Why an inspect could not be read as a sandbox.
#[derive(Debug)]
pub enum FoundError {
    Json(serde_json::Error),
    UnknownState { name: String, state: String },
}

impl Runtime for OciCli {
    fn kind(&self) -> Kind {
        self.kind
    }

    fn withhold(&mut self, names: Vec<String>) {
        self.withheld = names;
    }

    fn bin(&self) -> &Path {
        &self.bin
    }

    fn isolation(&self) -> Result<Isolation, Error> {
        match self.kind {
            Kind::Nerdctl => {
                let shim = self.shim.as_deref().unwrap_or_default();
                isolation_of(shim).ok_or_else(|| Error::UnknownShim { shim: shim.to_owned() })
            }
            // The runtime named in podman's own configuration, which brig
            // then passes explicitly at boot, so the class reported is the
            // class that runs (and no slow `podman info` is needed).
            Kind::Podman => {
                let name = self.podman_runtime.as_deref().unwrap_or(PODMAN_DEFAULT_RUNTIME);
                isolation_of(name).ok_or_else(|| Error::UnknownShim { shim: name.to_owned() })
            }
            // A docker engine runs containers unless configured otherwise; brig
            // reports the weaker class rather than guess.
            Kind::Docker | Kind::Hull => Ok(Isolation::Container),
        }
    }

    fn list(&self) -> Result<Vec<Listed>, Error> {
        let format = match self.kind {
            Kind::Podman => "json",
            _ => "{{json .}}",
        };
        let stdout = self.query(self.cmd().args(["ps", "-a", "--format", format]))?;
        parse_list(self.kind, &stdout).map_err(|source| Error::Unparsable { runtime: self.kind, what: "ps", source })
    }

    fn mounts(&self, name: &str) -> Result<Option<Vec<Mount>>, Error> {
        let cmd = self.cmd().args(["inspect", "--type", "container", name]).timeout(QUERY_TIMEOUT);
        match cmd.output() {
            Ok(out) => parse_mounts(&out.stdout).map(Some).map_err(|source| Error::Unparsable {
                runtime: self.kind,
                what: "inspect",
                source,
            }),
            Err(err) if self.core().says_missing(&err) => Ok(None),
            Err(err) => Err(self.unreachable(&err)),
        }
    }

    fn brig_networks(&self) -> Result<Vec<String>, Error> {
        let stdout = self.query(self.cmd().args(["network", "ls", "--format", "{{.Name}}"]).timeout(QUERY_TIMEOUT))?;
        Ok(stdout.lines().map(str::trim).filter(|n| n.starts_with("brig-")).map(str::to_owned).collect())
    }

    fn network_bridge(&self, name: &str) -> Result<Option<crate::firewall::Bridge>, Error> {
        let cmd = match self.kind {
            Kind::Nerdctl => self.cmd().args(["network", "inspect", "--mode", "native", "--", name]),
            _ => self.cmd().args(["network", "inspect", "--", name]),
        };
        let stdout = self.query(cmd.timeout(QUERY_TIMEOUT))?;
        Ok(parse_bridge(&stdout))
    }

    fn local_digests(&self, image: &str) -> Option<Vec<String>> {
        let cmd = self.cmd().args(["image", "inspect", "--format", "{{json .RepoDigests}}", "--", image]);
        let out = cmd.timeout(QUERY_TIMEOUT).output().ok()?;
        parse_repo_digests(&out.stdout)
    }

    fn lookup(&self, name: &str) -> Result<Option<Found>, Error> {
        let cmd = self.cmd().args(["inspect", "--type", "container", name]).timeout(QUERY_TIMEOUT);
        let mut attempt = 0;
        loop {
            let stdout = match cmd.output() {
                Ok(out) => out.stdout,
                Err(err) if self.core().says_missing(&err) => return Ok(None),
                Err(err) => return Err(self.unreachable(&err)),
            };
            match parse_found(&stdout) {
                // An inspect may match an ID prefix; only the exact name is this sandbox.
                Ok(found) => return Ok(found.filter(|f| f.listed.name == name)),
                Err(FoundError::Json(source)) => {
                    return Err(Error::Unparsable { runtime: self.kind, what: "inspect", source });
                }
                // A state the runtime could not read is usually a moment's
                // contention; ask again before giving up.
                Err(FoundError::UnknownState { .. }) if attempt < 3 => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(FoundError::UnknownState { name, state }) => {
                    return Err(Error::Unreachable {
                        runtime: self.kind,
                        words: format!("{name} is in a state brig cannot act on: \"{state}\""),
                    });
                }
            }
        }
    }

    fn shim(&self) -> Option<&str> {
        match self.kind {
            Kind::Podman => Some(self.podman_runtime.as_deref().unwrap_or(PODMAN_DEFAULT_RUNTIME)),
            _ => self.shim.as_deref(),
        }
    }

    fn check_shim(&self) -> Result<(), Error> {
        match (&self.shim, &self.shim_missing) {
            (Some(shim), Some(binary)) => Err(Error::ShimMissing { shim: shim.clone(), binary: binary.clone() }),
            _ => Ok(()),
        }
    }

    fn boot(&self, spec: &BootSpec) -> Result<(), Error> {
        let mut cmd = self.cmd().args(["run", "--detach", "--name", &spec.name]);
        match (self.kind, &self.shim) {
            (Kind::Nerdctl, Some(shim)) => cmd = cmd.args(["--runtime", shim]),
            (Kind::Podman, _) => {
                cmd = cmd.args(["--runtime", self.podman_runtime.as_deref().unwrap_or(PODMAN_DEFAULT_RUNTIME)])
            }
            _ => {}
        }
        cmd = cmd.args(["--memory", &format!("{}m", spec.mem_mb)]).args(["--cpus", &spec.cpus.to_string()]);
        if let Some(pull) = spec.pull {
            cmd = cmd.arg(format!("--pull={pull}"));
        }
        // nerdctl and docker speak plain HTTP to a loopback registry by
        // themselves; podman must be told, or it insists on TLS.
        if self.kind == Kind::Podman && crate::verify::on_loopback(&spec.image) {
            cmd = cmd.arg("--tls-verify=false");
        }
        for publish in &spec.publish {
            cmd = cmd.arg(format!("--publish={publish}"));
        }
        cmd = match &spec.network {
            NetworkAttach::None => cmd.args(["--network", "none"]),
            NetworkAttach::Named(net) => cmd.args(["--network", net]),
        };
        // `--mount` rather than `-v`: `-v` splits on `:`, which a path may
        // hold. The plan refused paths holding `,`, the one separator left.
        for bind in &spec.binds {
            let mut mount = format!("type=bind,source={},target={}", bind.host.display(), bind.guest);
            if bind.read_only {
                mount.push_str(",readonly");
            }
            // Only podman's `--mount` carries these; nerdctl and docker refuse
            // them, and brig's seccomp profile and the runtime's device rules
            // stand in for them there.
            if self.kind == Kind::Podman {
                mount.push_str(",nosuid,nodev");
            }
            cmd = cmd.arg("--mount").arg(mount);
        }
        for tmpfs in &spec.tmpfs {
            // podman copies what lies under a tmpfs into it unless told not
            // to; a tmpfs starts empty on every runtime, and a cover never
            // shows what it covers.
            let copy_up = if self.kind == Kind::Podman { ",notmpcopyup" } else { "" };
            cmd = cmd.arg("--tmpfs").arg(format!("{}:{}{copy_up}", tmpfs.path, tmpfs.options));
        }
        for (key, value) in &spec.labels {
            cmd = cmd.arg("--label").arg(format!("{key}={value}"));
        }
        if let Some(h) = &spec.hardening {
            if h.no_new_privileges {
                cmd = cmd.args(["--security-opt", "no-new-privileges"]);
            }
            cmd = cmd.args(["--cap-drop", "ALL"]);
            for cap in &h.capabilities {
                cmd = cmd.args(["--cap-add", cap]);
            }
            cmd = cmd.args(["--pids-limit", &h.pids_limit.to_string()]);
            cmd = cmd.args(["--log-opt", &format!("max-size={}", h.log_max_size)]);
            cmd = cmd.arg("--security-opt").arg(format!("seccomp={}", h.seccomp.display()));
        }
        if !spec.env.is_empty() {
            cmd = cmd.arg("--env-file").feed_arg(super::adapter::env_file(&spec.env));
        }
        // `--` ends the options: whatever the image value is, the runtime
        // reads it as the image.
        cmd = cmd.arg("--").arg(&spec.image).args(super::adapter::PARK);
        let mut attempt = 0;
        loop {
            match self.operate(cmd.clone(), &spec.name) {
                Err(Error::Operation { words, .. }) if name_taken(&words) => {
                    return Err(Error::NameInUse { runtime: self.kind, name: spec.name.clone() });
                }
                // nerdctl's network hook read a network's config file while
                // another process was writing it: the half-made container
                // is this boot's own (its name was free), so it goes, and
                // the boot is tried again.
                Err(Error::Operation { words, .. }) if attempt < 3 && (hook_raced(&words) || vanished(&words)) => {
                    attempt += 1;
                    let _ = self.cmd().args(["rm", "-f", &spec.name]).output();
                    std::thread::sleep(Duration::from_millis(200 * attempt));
                }
                other => return other,
            }
        }
    }

    fn start(&self, name: &str) -> Result<(), Error> {
        self.operate(self.cmd().args(["start", name]), name)
    }

    fn stop(&self, name: &str) -> Result<(), Error> {
        self.operate(self.cmd().args(["stop", name]), name)
    }

    fn remove(&self, name: &str) -> Result<(), Error> {
        self.operate(self.cmd().args(["rm", "-f", name]), name)
    }

    fn ensure_network(&self, name: &str, isolate: bool) -> Result<(), Error> {
        let mut cmd = self.cmd().args(["network", "create"]);
        // podman bridges reach each other through the host unless told not to.
        if isolate && self.kind == Kind::Podman {
            cmd = cmd.args(["--opt", "isolate=true"]);
        }
        cmd = cmd.arg(name);
        let mut attempt = 0;
        loop {
            let err = match cmd.output() {
                Ok(_) => return Ok(()),
                Err(err) => err,
            };
            if err.stderr().is_some_and(|s| s.contains("already exists")) {
                return Ok(());
            }
            let said = err.stderr().map(runtime_words).unwrap_or_default();
            attempt += 1;
            if attempt < 5 && raced(&said) {
                std::thread::sleep(Duration::from_millis(100 * attempt));
                continue;
            }
            return Err(self.core().failed(&cmd, &err, said));
        }
    }

    fn remove_network(&self, name: &str) -> Result<(), Error> {
        let cmd = self.cmd().args(["network", "rm", name]);
        let mut attempt = 0;
        loop {
            let err = match cmd.output() {
                Ok(_) => {
                    if self.kind == Kind::Nerdctl {
                        release_ipam_dir(Path::new(CNI_IPAM_DIR), name);
                    }
                    return Ok(());
                }
                Err(err) => err,
            };
            let said = err.stderr().map(runtime_words).unwrap_or_default();
            if said.contains("no such network") || said.contains("network not found") {
                if self.kind == Kind::Nerdctl {
                    release_ipam_dir(Path::new(CNI_IPAM_DIR), name);
                }
                return Ok(());
            }
            attempt += 1;
            if attempt < 5 && raced(&said) {
                std::thread::sleep(Duration::from_millis(100 * attempt));
                continue;
            }
            return Err(self.core().failed(&cmd, &err, said));
        }
    }

    fn exec(&self, name: &str, spec: &ExecSpec) -> Command {
        let mut cmd = self.cmd().arg("exec");
        if spec.interactive {
            cmd = cmd.arg("-i");
        }
        if spec.tty {
            cmd = cmd.arg("-t");
        }
        if let Some(dir) = &spec.workdir {
            cmd = cmd.args(["-w", dir]);
        }
        if !spec.env.is_empty() {
            cmd = cmd.arg("--env-file").feed_arg(super::adapter::env_file(&spec.env));
        }
        for (key, value) in &spec.exposed {
            cmd = cmd.arg("-e").arg(format!("{key}={value}"));
        }
        cmd.arg(name).args(&spec.argv)
    }

    fn exec_status(&self, status: i32, stderr_tail: &str) -> i32 {
        match self.kind {
            // nerdctl exits 1 whatever the command's status was, and names
            // the real one in its last log line.
            Kind::Nerdctl if status == 1 => nerdctl_exec_status(stderr_tail).unwrap_or(status),
            _ => status,
        }
    }

    fn exec_refused(&self, status: i32, stderr_tail: &str) -> bool {
        let Some(last) = stderr_tail.lines().rev().find(|l| !l.trim().is_empty()) else { return false };
        let words = runtime_words(last);
        let not_running = is_missing(&words)
            || words.contains("cannot exec in a stopped state")
            || words.contains("can only create exec sessions on running containers")
            || words.contains("is not running");
        match self.kind {
            // nerdctl's own failure is a logrus fatal line and exit 1.
            Kind::Nerdctl => status == 1 && last.contains("level=fatal") && not_running,
            // podman and docker exit 125 when they, not the command, failed;
            // podman 4 exits 255 for an exec into a stopped container.
            Kind::Podman | Kind::Docker => matches!(status, 125 | 255) && last.starts_with("Error: ") && not_running,
            Kind::Hull => false,
        }
    }

    fn status_only_on_stderr(&self) -> bool {
        self.kind == Kind::Nerdctl
    }

    fn logs(&self, name: &str, follow: bool, tail: Option<u32>) -> Command {
        Core::logs(self.cmd(), name, follow, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::testdata;

    #[test]
    fn nerdctl_ps_json_lines() {
        let rows = parse_list(Kind::Nerdctl, &testdata("nerdctl-ps-a-json.txt")).unwrap();
        let states: Vec<(&str, State)> = rows.iter().map(|r| (r.name.as_str(), r.state)).collect();
        assert!(states.contains(&("brig-probe", State::Running)), "{states:?}");
        assert!(states.contains(&("brig-probe-stopped", State::Stopped)), "{states:?}");
        let probe = rows.iter().find(|r| r.name == "brig-probe").unwrap();
        assert_eq!(probe.labels.get("nerdctl/name").map(String::as_str), Some("brig-probe"));
    }

    #[test]
    fn podman_ps_json_array() {
        let rows = parse_list(Kind::Podman, &testdata("podman-ps-a-json.txt")).unwrap();
        assert!(rows.iter().any(|r| r.name == "brig-probe" && r.state == State::Running), "{rows:?}");
        assert!(rows.iter().any(|r| r.state == State::Stopped), "{rows:?}");
    }

    #[rstest::rstest]
    #[case("Up 3 seconds", State::Running)]
    #[case("running", State::Running)]
    #[case("Exited (0) 2 seconds ago", State::Stopped)]
    #[case("Created", State::Stopped)]
    #[case("configured", State::Stopped)]
    #[case("Unknown", State::Unknown)]
    #[case("", State::Unknown)]
    fn listed_states(#[case] word: &str, #[case] want: State) {
        assert_eq!(state_of(word), want);
    }

    #[test]
    fn an_ipam_dir_goes_only_when_it_reserves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let empty = root.path().join("brig-a-net");
        std::fs::create_dir(&empty).unwrap();
        std::fs::write(empty.join("lock"), "").unwrap();
        std::fs::write(empty.join("last_reserved_ip.0"), "10.4.1.2").unwrap();
        release_ipam_dir(root.path(), "brig-a-net");
        assert!(!empty.exists());
        let held = root.path().join("brig-b-net");
        std::fs::create_dir(&held).unwrap();
        std::fs::write(held.join("lock"), "").unwrap();
        std::fs::write(held.join("10.4.2.2"), "container-id").unwrap();
        release_ipam_dir(root.path(), "brig-b-net");
        assert!(held.join("10.4.2.2").exists(), "an address still reserved keeps the directory");
        let target = root.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, root.path().join("brig-c-net")).unwrap();
        release_ipam_dir(root.path(), "brig-c-net");
        assert!(target.exists() && root.path().join("brig-c-net").exists(), "a link is not followed");
        release_ipam_dir(root.path(), "../elsewhere");
        assert!(target.exists());
    }

    #[test]
    fn network_bridges_in_every_dialect() {
        let nerdctl = r#"[{"CNI":{"plugins":[{"type":"bridge","bridge":"br-f9a62fd0e670","ipam":{"ranges":[[{"gateway":"10.4.1.1","subnet":"10.4.1.0/24"}]]}},{"type":"portmap"}]}}]"#;
        let podman = r#"[{"name":"n","network_interface":"podman1","subnets":[{"subnet":"10.89.0.0/24","gateway":"10.89.0.1"}]}]"#;
        let docker = r#"[{"Name":"n","Id":"0123456789abcdef","IPAM":{"Config":[{"Subnet":"172.18.0.0/16","Gateway":"172.18.0.1"}]},"Options":{}}]"#;
        for (text, iface, gw) in [
            (nerdctl, "br-f9a62fd0e670", "10.4.1.1"),
            (podman, "podman1", "10.89.0.1"),
            (docker, "br-0123456789ab", "172.18.0.1"),
        ] {
            let bridge = parse_bridge(text).unwrap();
            assert_eq!(bridge.interface, iface);
            assert_eq!(bridge.gateways, vec![gw.parse::<std::net::IpAddr>().unwrap()]);
        }
        assert_eq!(parse_bridge("[]"), None);
        assert_eq!(parse_bridge("nonsense"), None);
    }

    #[test]
    fn repo_digests_in_both_dialects() {
        let podman = r#"["a/b@sha256:11","c/d@sha256:22"]"#;
        assert_eq!(parse_repo_digests(podman), Some(vec!["sha256:11".to_owned(), "sha256:22".to_owned()]));
        assert_eq!(parse_repo_digests("null\n"), None);
        assert_eq!(parse_repo_digests("[]"), None);
        assert_eq!(parse_repo_digests(""), None);
    }

    #[test]
    fn empty_listings() {
        assert!(parse_list(Kind::Nerdctl, "").unwrap().is_empty());
        assert!(parse_list(Kind::Podman, "[]\n").unwrap().is_empty());
        assert!(parse_list(Kind::Podman, "").unwrap().is_empty());
    }

    #[test]
    fn docker_labels_as_text() {
        let line = r#"{"Names":"brig-x","Status":"Up 2 seconds","State":"running","Labels":"sh.brig.agent=x,other=1"}"#;
        let rows = parse_list(Kind::Docker, line).unwrap();
        assert_eq!(rows[0].labels.get("sh.brig.agent").map(String::as_str), Some("x"));
        assert_eq!(rows[0].state, State::Running);
    }

    #[test]
    fn foreign_containers_are_not_listed() {
        let line = r#"{"Names":"postgres","Status":"Up","Labels":{}}"#;
        assert!(parse_list(Kind::Nerdctl, line).unwrap().is_empty());
    }

    #[test]
    fn inspect_mounts_both_dialects() {
        for file in ["nerdctl-inspect.json", "podman-inspect.json"] {
            let mounts = parse_mounts(&testdata(file)).unwrap();
            assert!(
                mounts.iter().any(|m| m.destination == Path::new("/guest") && m.source == Path::new("/tmp/probe-host")),
                "{file}: {mounts:?}"
            );
        }
    }

    #[test]
    fn inspect_reads_one_sandbox_in_both_dialects() {
        let nerdctl = parse_found(&testdata("nerdctl-inspect.json")).unwrap().unwrap();
        assert_eq!(nerdctl.listed.name, "brig-probe");
        assert_eq!(nerdctl.listed.state, State::Running);
        assert_eq!(nerdctl.listed.labels.get("nerdctl/name").map(String::as_str), Some("brig-probe"));
        assert!(nerdctl.mounts.iter().any(|m| m.destination == Path::new("/guest")));
        let podman = parse_found(&testdata("podman-inspect.json")).unwrap().unwrap();
        assert_eq!(podman.listed.state, State::Running);
        for file in ["podman-inspect-stopped-none.json", "nerdctl-inspect-stopped-none-format-json.txt"] {
            let text = testdata(file);
            // The nerdctl capture is one object from `--format json`; inspect prints an array.
            let text = if text.trim_start().starts_with('[') { text } else { format!("[{text}]") };
            let stopped = parse_found(&text).unwrap().unwrap();
            assert_eq!(stopped.listed.state, State::Stopped, "{file}");
        }
        assert!(parse_found("[]").unwrap().is_none());
    }

    /// The posture read back from the runtime's own account of a sandbox's
    /// network, and a label claiming one is never taken for it.
    #[test]
    fn the_network_a_runtime_reports_gives_the_posture() {
        let seen = |text: &str| {
            let found = parse_found(text).unwrap().unwrap();
            found.listed.labels.get(super::super::adapter::label::NETWORK_SEEN).cloned()
        };
        let seen_file = |file: &str| {
            let text = testdata(file);
            seen(&if text.trim_start().starts_with('[') { text } else { format!("[{text}]") })
        };
        assert_eq!(seen_file("nerdctl-inspect.json").as_deref(), Some("isolated"));
        assert_eq!(seen_file("nerdctl-inspect-stopped-none-format-json.txt").as_deref(), Some("offline"));
        let podman = |mode: &str, nets: &str, labels: &str| {
            format!(
                r#"[{{"Name":"brig-x","State":{{"Status":"running","Running":true}},"Config":{{"Labels":{{{labels}}}}},"HostConfig":{{"NetworkMode":"{mode}"}},"NetworkSettings":{{"Networks":{{{nets}}}}}}}]"#
            )
        };
        assert_eq!(seen(&podman("bridge", r#""podman":{}"#, "")).as_deref(), Some("shared"));
        assert_eq!(seen(&podman("bridge", r#""brig-x-net":{}"#, "")).as_deref(), Some("isolated"));
        assert_eq!(seen(&podman("none", "", "")).as_deref(), Some("offline"));
        assert_eq!(seen(&podman("slirp4netns", "", "")).as_deref(), Some("shared"));
        assert_eq!(seen(&podman("host", r#""host":{}"#, "")).as_deref(), None);
        assert_eq!(seen(&podman("bridge", r#""podman":{},"other":{}"#, "")).as_deref(), None);
        assert_eq!(seen(&podman("bridge", r#""brig-y-net":{}"#, "")).as_deref(), None, "another sandbox's network");
        let forged = podman("host", r#""host":{}"#, r#""sh.brig.network-seen":"isolated""#);
        assert_eq!(seen(&forged), None);
    }

    #[test]
    fn an_unknown_state_is_not_taken_for_stopped() {
        let text = r#"[{"Name":"brig-x","State":{"Status":"unknown","Running":false}}]"#;
        assert!(matches!(parse_found(text), Err(FoundError::UnknownState { .. })));
        let text = r#"[{"Name":"/brig-x","State":{"Status":"exited","Running":false}}]"#;
        assert_eq!(parse_found(text).unwrap().unwrap().listed.name, "brig-x");
    }

    #[test]
    fn an_exec_the_runtime_refused_is_told_from_the_command_failing() {
        let nerdctl = OciCli::new(Kind::Nerdctl, "/bin/false".into(), None);
        let podman = OciCli::new(Kind::Podman, "/bin/false".into(), None);
        for file in ["nerdctl-exec-stopped.stderr", "nerdctl-exec-missing.stderr"] {
            assert!(nerdctl.exec_refused(1, &testdata(file)), "{file}");
            assert!(!podman.exec_refused(1, &testdata(file)), "{file}");
        }
        for file in ["podman-exec-stopped.stderr", "podman-exec-missing.stderr"] {
            let status = if file.contains("stopped") { 255 } else { 125 };
            assert!(podman.exec_refused(status, &testdata(file)), "{file}");
            assert!(!podman.exec_refused(1, &testdata(file)), "the command's own status 1: {file}");
        }
        // The guest's command failing, even with words that look alike.
        assert!(!nerdctl.exec_refused(1, &testdata("nerdctl-exec-exit3.stderr")));
        assert!(!nerdctl.exec_refused(1, "no such container\n"));
    }

    #[test]
    fn a_taken_name_is_told_in_both_dialects() {
        for file in ["nerdctl-run-exists.stderr", "podman-run-exists.stderr"] {
            assert!(name_taken(&runtime_words(&testdata(file))), "{file}");
        }
        assert!(!name_taken(&runtime_words(&testdata("nerdctl-run-image-missing.stderr"))));
    }

    #[test]
    fn another_sandboxs_vanishing_is_a_race_worth_a_retry() {
        assert!(raced("task 6278a267 not found: not found"));
        assert!(raced(
            "1 errors: error reading /etc/cni/net.d/nerdctl-brig-x-net.conflist: open /etc/cni/net.d/nerdctl-brig-x-net.conflist: no such file or directory"
        ));
        assert!(raced("route ip+net: no such network interface"));
        // Seen in `network create` beside another sandbox's network being written.
        assert!(raced("error parsing configuration list: unexpected end of JSON input"));
        assert!(!raced(&runtime_words(&testdata("nerdctl-network-rm-in-use.stderr"))));
        assert!(!raced(&runtime_words(&testdata("podman-network-rm-in-use.stderr"))));
    }

    #[test]
    fn a_hook_reading_a_half_written_network_is_a_race() {
        let words = "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: time=\"x\" level=fatal msg=\"failed to check for default network: error parsing configuration list: unexpected end of JSON input\"";
        assert!(hook_raced(words));
        assert!(!hook_raced(&runtime_words(&testdata("nerdctl-run-image-missing.stderr"))));
    }

    #[test]
    fn a_run_that_lost_its_own_container_is_a_race() {
        assert!(vanished(
            "container \"0c60f4160dcc8bb34f9d6d63f11ccae994d5355294eb9f8d3d18d5a6ca169cc5\" in namespace \"default\": not found"
        ));
        assert!(!vanished(&runtime_words(&testdata("nerdctl-run-image-missing.stderr"))));
        assert!(!vanished("no sandbox named brig-x"));
    }

    /// (the mode of a `containerd-shim-urunc-v2` on PATH, if any, the shim
    /// asked for) → the executable a boot (and doctor) reports missing.
    #[rstest::rstest]
    #[case::present(Some(0o755), "io.containerd.urunc.v2", None)]
    #[case::absent(None, "io.containerd.urunc.v2", Some("containerd-shim-urunc-v2"))]
    #[case::not_executable(Some(0o644), "io.containerd.urunc.v2", Some("containerd-shim-urunc-v2"))]
    #[case::other_shim(Some(0o755), "io.containerd.kata.v2", Some("containerd-shim-kata-v2"))]
    #[case::not_a_containerd_name(None, "krun", None)]
    fn a_shim_must_be_on_path(#[case] mode: Option<u32>, #[case] shim: &str, #[case] want: Option<&str>) {
        use std::os::unix::fs::PermissionsExt;
        let bin = tempfile::tempdir().unwrap();
        if let Some(mode) = mode {
            let file = bin.path().join("containerd-shim-urunc-v2");
            std::fs::write(&file, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let env = crate::environment::Environment::from_pairs([("PATH", bin.path().to_str().unwrap())]);
        let got = match OciCli::nerdctl("/bin/false".into(), shim.to_owned(), &env).check_shim() {
            Ok(()) => None,
            Err(Error::ShimMissing { binary, .. }) => Some(binary),
            Err(other) => panic!("{other:?}"),
        };
        assert_eq!(got.as_deref(), want);
        // podman names no containerd shim.
        assert!(OciCli::podman("/bin/false".into(), Some(shim.to_owned())).check_shim().is_ok());
    }

    #[test]
    fn shim_executables() {
        assert_eq!(shim_executable("io.containerd.urunc.v2").as_deref(), Some("containerd-shim-urunc-v2"));
        assert_eq!(shim_executable("io.containerd.runc.v2").as_deref(), Some("containerd-shim-runc-v2"));
        assert_eq!(shim_executable("/opt/bin/shim").as_deref(), Some("/opt/bin/shim"));
        assert_eq!(shim_executable("crun"), None);
    }

    #[test]
    fn runtime_words_unwrap_logrus_and_error_prefixes() {
        assert_eq!(
            runtime_words(&testdata("nerdctl-ps-containerd-down.stderr")),
            "cannot access containerd socket \"/run/containerd/containerd.sock\": no such file or directory"
        );
        assert_eq!(runtime_words(&testdata("nerdctl-rm-missing.stderr")), "1 errors: no such container: brig-nope");
        assert!(runtime_words(&testdata("podman-rm-missing.stderr")).starts_with("no container with name"));
    }

    #[rstest::rstest]
    #[case("[engine]\nruntime = \"runc\"\n", Some("runc"))]
    #[case("[engine]\n# runtime = \"crun\"\n", None)]
    #[case("[containers]\nruntime = \"x\"\n[engine]\ncgroup_manager = \"cgroupfs\"\n", None)]
    #[case("[engine]\n  runtime = 'krun' # a microVM\n[engine.runtimes]\nrunc = []\n", Some("krun"))]
    fn podman_runtime_from_containers_conf(#[case] text: &str, #[case] want: Option<&str>) {
        assert_eq!(engine_runtime(text).as_deref(), want);
    }

    #[test]
    fn nerdctl_names_the_real_exit_status_on_stderr() {
        assert_eq!(nerdctl_exec_status(&testdata("nerdctl-exec-exit3.stderr")), Some(3));
        assert_eq!(nerdctl_exec_status("some other failure\n"), None);
        let rt = OciCli::new(Kind::Nerdctl, "/bin/false".into(), None);
        assert_eq!(rt.exec_status(1, &testdata("nerdctl-exec-exit3.stderr")), 3);
        let podman = OciCli::new(Kind::Podman, "/bin/false".into(), None);
        assert_eq!(podman.exec_status(1, "exec failed with exit code 3"), 1);
    }

    #[test]
    fn missing_sandbox_is_recognised_in_every_dialect() {
        for file in [
            "nerdctl-rm-missing.stderr",
            "nerdctl-stop-missing.stderr",
            "nerdctl-exec-missing.stderr",
            "nerdctl-inspect-missing.stderr",
            "podman-rm-missing.stderr",
            "podman-stop-missing.stderr",
            "podman-inspect-missing.stderr",
        ] {
            assert!(is_missing(&runtime_words(&testdata(file))), "{file}");
        }
        assert!(!is_missing(&runtime_words(&testdata("nerdctl-ps-containerd-down.stderr"))));
    }

    #[test]
    fn boot_argv_holds_no_value() {
        let rt = OciCli::new(Kind::Nerdctl, "/bin/false".into(), Some("io.containerd.runc.v2".into()));
        let spec = BootSpec {
            name: "brig-a".into(),
            image: "img".into(),
            mem_mb: 256,
            cpus: 1,
            pull: Some("never"),
            network: NetworkAttach::None,
            publish: vec![crate::ports::Publish::parse("8080:3000").unwrap()],
            binds: vec![super::super::adapter::Bind::rw("/h", "/root")],
            tmpfs: vec![super::super::adapter::Tmpfs {
                path: "/root/.mem".into(),
                options: "size=16m,mode=0700,nodev,nosuid".into(),
            }],
            env: vec![("TOKEN".into(), "s3cret".into())],
            labels: vec![("sh.brig.agent".into(), "a".into())],
            hardening: Some(crate::runtime::Hardening::container(Path::new("/s"), Kind::Nerdctl)),
        };
        let err = rt.boot(&spec).unwrap_err();
        let Error::Operation { command: text, .. } = &err else { panic!("{err:?}") };
        assert!(!err.to_string().contains("--runtime"), "the argv is for --verbose: {err}");
        assert!(text.contains("--env-file <pipe> "), "{text}");
        assert!(!text.contains("s3cret") && !text.contains("TOKEN"), "{text}");
        assert!(text.contains("--runtime io.containerd.runc.v2"), "{text}");
        // One word, so an address can never be read as a flag of its own.
        assert!(text.contains(" --publish=127.0.0.1:8080:3000/tcp "), "{text}");
        assert!(text.contains("--tmpfs /root/.mem:size=16m,mode=0700,nodev,nosuid"), "{text}");
        assert!(
            text.contains("--security-opt no-new-privileges --cap-drop ALL --cap-add CHOWN"),
            "a container is held to brig's profile: {text}"
        );
        assert!(
            text.contains("--pids-limit 4096 --log-opt max-size=20m --security-opt seccomp=/s/seccomp.json"),
            "{text}"
        );
    }
}
