//! One trial: a scenario (and table row) run against one runtime, in a
//! scratch directory of its own, followed by the leak check.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};

use crate::brigd::{self, After, Daemon, Exchange, Received};
use crate::placeholder::Vars;
use crate::process::{self, Output};
use crate::runtime::{self, Host, RuntimeStatus};
use crate::scenario::{
    BrigdStart, BrigdStep, ExitExpect, Expect, GuestStep, HostOp, JsonExpect, Need, PADDED_MIN, RequestStep,
    RuntimeName, Scenario, Step, StepKind, TextExpect,
};
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
    /// The brigd binary under test.
    pub brigd: PathBuf,
    /// The runner's `lab-client`, for connecting to brigd as another uid.
    pub client: PathBuf,
    /// The runner's `lab-sampler`, `{sampler}` in a scenario.
    pub sampler: PathBuf,
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
    /// Why the scenario does not run on this lane (its `not-on`): the
    /// trial is listed, ignored, with this reason.
    pub not_here: Option<String>,
}

impl Lab {
    /// Why a trial cannot run on this host, if it cannot.
    pub fn blocker(&self, spec: &TrialSpec) -> Option<String> {
        if let Some(why) = &spec.not_here {
            return Some(why.clone());
        }
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
        if spec.not_here.is_some() {
            // Declared, not missing: requiring the lane does not make it run.
            return false;
        }
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
        // The daemon goes before the leak check, so it cannot boot anything
        // after the check has looked.
        trial.end_daemon();
        let cleanup = trial.clean_up();
        // After the sandboxes went: the image names it removes are no
        // longer in use.
        drop(trial.registry.borrow_mut().take());
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
    /// A short directory for the default brigd socket: the scratch directory
    /// may sit under a long `TMPDIR`, and a socket path must fit 107 bytes.
    socket_dir: PathBuf,
    daemon: RefCell<Option<Daemon>>,
    /// The pid of the last daemon started, for `{brigd-pid}`.
    daemon_pid: Cell<Option<u32>>,
    daemon_starts: Cell<u32>,
    /// The trial's own OCI registry, when the scenario needs one.
    registry: RefCell<Option<crate::registry::Registry>>,
    /// The rootless lane's user (uid, gid): brig, brigd and shell steps run
    /// as it.
    user: Option<(u32, u32)>,
}

/// The placeholder for the pid of the trial's last started brigd.
pub const BRIGD_PID: &str = "brigd-pid";

impl Drop for Trial<'_> {
    fn drop(&mut self) {
        self.end_daemon();
    }
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
        // 0755 rather than brigd's own 0700, so that another uid can reach
        // the socket when a scenario opens its mode: the peer check must hold
        // without the socket's mode.
        let socket_dir = PathBuf::from("/tmp").join(format!("brig-lab-{token}-sock"));
        std::fs::create_dir_all(&socket_dir).with_context(|| format!("creating {}", socket_dir.display()))?;
        set_mode(&socket_dir, 0o755)?;

        let mut vars = Vars::new();
        vars.set("t", token.clone());
        vars.set("scratch", path_str(&scratch)?);
        vars.set("state", path_str(&state)?);
        vars.set("home", path_str(&home)?);
        vars.set("profiles", path_str(&profiles)?);
        vars.set("runtime", spec.runtime.binary());
        vars.set("socket", path_str(&socket_dir.join("d.sock"))?);
        vars.set("brig", path_str(&lab.brig)?);
        vars.set("brigd", path_str(&lab.brigd)?);
        vars.set("sampler", path_str(&lab.sampler)?);
        vars.set("fixtures", path_str(&crate::runner::fixtures_dir())?);
        let runtime_bin = lab.host.runtimes.get(&spec.runtime).and_then(|s| s.bin().map(Path::to_path_buf));
        let registry = if spec.scenario.needs.contains(&Need::Registry) {
            // On the rootless lane the registry is the user's, as the user's
            // own would be: the trial's steps may stop it.
            let user = if spec.runtime.rootless() { runtime::rootless_user().map(|(u, g, _)| (u, g)) } else { None };
            let registry = crate::registry::Registry::start(&scratch, spec.runtime, runtime_bin.clone(), user)?;
            vars.set("registry", registry.address.clone());
            Some(registry)
        } else {
            None
        };

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
        env.insert("BRIG_RUNTIME".to_owned(), spec.runtime.binary().to_owned());
        let user = if spec.runtime.rootless() {
            let (uid, gid, user_home) = runtime::rootless_user().context("the rootless lane's user is gone")?;
            // The trial gives brig a HOME of its own; podman finds the
            // user's store through the configuration provisioning wrote.
            let storage = runtime::lane_storage_conf(&user_home);
            env.insert("CONTAINERS_STORAGE_CONF".to_owned(), path_str(&storage)?);
            // podman keeps a user's runtime state in its XDG_RUNTIME_DIR:
            // every trial of the lane shares the user's real one, as its
            // sessions on a desktop would; the trial's files are the user's.
            env.insert("XDG_RUNTIME_DIR".to_owned(), format!("/run/user/{uid}"));
            for dir in [&scratch, &socket_dir] {
                chown_tree(dir, uid, gid)?;
            }
            Some((uid, gid))
        } else {
            None
        };
        // Where brig's and the runtime's sockets live for this trial.
        vars.set("run-dir", env["XDG_RUNTIME_DIR"].clone());
        // Who brig and brigd run as: root, or the rootless lane's user.
        vars.set("uid", user.map_or(0, |(uid, _)| uid).to_string());
        // nft where brig writes this lane's rules: the host's, or inside
        // rootless podman's network namespace.
        vars.set("nft", if user.is_some() { "podman unshare --rootless-netns nft" } else { "nft" });
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
            runtime_bin,
            socket_dir,
            daemon: RefCell::new(None),
            daemon_pid: Cell::new(None),
            daemon_starts: Cell::new(0),
            registry: RefCell::new(registry),
            user,
        })
    }

    /// Kills a daemon still running (with its process group) and removes
    /// the socket directory; its logs stay in scratch.
    fn end_daemon(&self) {
        drop(self.daemon.borrow_mut().take());
        let _ = std::fs::remove_dir_all(&self.socket_dir);
    }

    fn run_steps(&self) -> Result<(), String> {
        let steps = self.spec.scenario.flatten(self.spec.row.as_deref());
        let total = steps.len();
        for (i, (step, row)) in steps.into_iter().enumerate() {
            let mut vars = self.vars.with_row(row).map_err(|e| format!("step {}/{total}: {e:#}", i + 1))?;
            if let Some(pid) = self.daemon_pid.get() {
                vars.set(BRIGD_PID, pid.to_string());
            }
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
                let mut cmd = self.command(&self.lab.brig, step, vars)?;
                cmd.args(&argv);
                (cmd, format!("brig {}", shell_words(&argv)))
            }
            StepKind::Shell(line) => {
                let line = vars.expand(line)?;
                let mut cmd = self.command(Path::new("sh"), step, vars)?;
                cmd.arg("-c").arg(&line);
                (cmd, format!("sh -c {}", shell_words(std::slice::from_ref(&line))))
            }
            StepKind::Brigd(BrigdStep::Run(argv)) => {
                let argv = vars.expand_all(argv)?;
                let mut cmd = self.command(&self.lab.brigd, step, vars)?;
                cmd.args(&argv);
                (cmd, format!("brigd {}", shell_words(&argv)))
            }
            StepKind::Brigd(BrigdStep::Start(start)) => return self.start_daemon(start, step, vars),
            StepKind::Brigd(BrigdStep::Stop(_)) => return self.stop_daemon(step, vars, timeout),
            StepKind::Brigd(BrigdStep::Kill(_)) => return self.kill_daemon(timeout),
            StepKind::Request(request) => return self.request(request, vars, timeout),
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
            StepKind::Host(op) => {
                host_op(op, vars)?;
                return self.hand_over(op, vars);
            }
            StepKind::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(ms));
                return Ok(());
            }
            StepKind::Table(_) => unreachable!("tables are flattened before running"),
        };
        let out = process::run(cmd, stdin.as_deref(), timeout, &shown)?;
        let default = Expect::default();
        let problems = check_expect(step.expect.as_ref().unwrap_or(&default), &out, vars)?;
        if let Some(probe) = &step.probe {
            self.log_probe(&vars.expand(probe)?, &shown, &out, problems.is_empty())?;
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(anyhow!("{shown}\n  {}\n{}", problems.join("\n  "), process::render_streams(&out.stdout, &out.stderr)))
    }

    /// One line of `LAB_PROBE_LOG`, when the variable names a file: what a
    /// named step measured, for the reachability report.
    fn log_probe(&self, probe: &str, shown: &str, out: &process::Output, passed: bool) -> Result<()> {
        let Some(path) = std::env::var_os("LAB_PROBE_LOG") else { return Ok(()) };
        let line = serde_json::json!({
            "runtime": self.spec.runtime.as_str(),
            "trial": self.spec.name,
            "probe": probe,
            "command": shown.replace(&self.token, "{t}"),
            "exit": out.code,
            "outcome": out.stdout.lines().next().unwrap_or_default(),
            "ms": out.elapsed.as_millis() as u64,
            "passed": passed,
        });
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", std::path::Path::new(&path).display()))?;
        // One write per line: trials append from several threads at once.
        file.write_all(format!("{line}\n").as_bytes()).context("writing the probe log")
    }

    /// A command in the trial's environment, with the step's own `env`.
    fn command(&self, bin: &Path, step: &Step, vars: &Vars) -> Result<Command> {
        self.command_as(bin, step, vars, self.user)
    }

    /// [`Self::command`] as `user`, or as root when `None`.
    fn command_as(&self, bin: &Path, step: &Step, vars: &Vars, user: Option<(u32, u32)>) -> Result<Command> {
        let mut cmd = match user {
            None => Command::new(bin),
            Some((uid, gid)) => {
                let mut cmd = Command::new("setpriv");
                cmd.args(["--reuid", &uid.to_string(), "--regid", &gid.to_string(), "--clear-groups", "--"]).arg(bin);
                cmd
            }
        };
        cmd.env_clear().envs(&self.env).current_dir(&self.scratch);
        for (name, value) in &step.env {
            cmd.env(vars.expand(name)?, vars.expand(value)?);
        }
        Ok(cmd)
    }

    fn start_daemon(&self, start: &BrigdStart, step: &Step, vars: &Vars) -> Result<()> {
        if let Some(daemon) = self.daemon.borrow_mut().as_mut()
            && daemon.running()
        {
            bail!("brigd pid {} is still running in this trial; stop or kill it first", daemon.pid);
        }
        let socket = match &start.socket {
            Some(socket) => PathBuf::from(vars.expand(socket)?),
            None => self.socket_dir.join("d.sock"),
        };
        let args = match &start.args {
            Some(args) => vars.expand_all(args)?,
            None if start.activated => Vec::new(),
            None => vec!["--socket".to_owned(), path_str(&socket)?],
        };
        let mut cmd = match start.as_uid {
            None if start.activated => {
                let mut cmd = self.command(Path::new("systemd-socket-activate"), step, vars)?;
                cmd.arg("-l").arg(&socket);
                // It passes on only the variables it is told to (-E NAME
                // takes the value from its own environment).
                let mut names: Vec<String> = self.env.keys().cloned().collect();
                for name in step.env.keys() {
                    names.push(vars.expand(name)?);
                }
                names.sort();
                names.dedup();
                for name in names {
                    cmd.arg("-E").arg(name);
                }
                cmd.arg("--").arg(&self.lab.brigd);
                cmd
            }
            None => self.command(&self.lab.brigd, step, vars)?,
            Some(uid) => {
                let owner = Some(rustix::fs::Uid::from_raw(uid));
                let group = Some(rustix::fs::Gid::from_raw(uid));
                rustix::fs::chown(&self.socket_dir, owner, group)
                    .with_context(|| format!("handing {} to uid {uid}", self.socket_dir.display()))?;
                let id = uid.to_string();
                // setpriv as root: the lane's user could not become another.
                let mut cmd = self.command_as(Path::new("setpriv"), step, vars, None)?;
                cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"]).arg(&self.lab.brigd);
                cmd
            }
        };
        cmd.args(&args);
        let n = self.daemon_starts.get() + 1;
        self.daemon_starts.set(n);
        let shown = format!("brigd {}", shell_words(&args));
        let mut daemon = Daemon::start(cmd, socket, &self.scratch.join(format!("brigd-{n}.log")), &shown)?;
        daemon.handed_in = start.activated;
        self.daemon_pid.set(Some(daemon.pid));
        *self.daemon.borrow_mut() = Some(daemon);
        Ok(())
    }

    fn stop_daemon(&self, step: &Step, vars: &Vars, timeout: Duration) -> Result<()> {
        let mut slot = self.daemon.borrow_mut();
        let daemon = slot.as_mut().context("brigd stop: no brigd was started in this trial")?;
        let out = daemon.signal_and_wait(rustix::process::Signal::TERM, timeout)?;
        let default = Expect::default();
        let mut problems = check_expect(step.expect.as_ref().unwrap_or(&default), &out, vars)?;
        let there = std::fs::symlink_metadata(&daemon.socket).is_ok();
        if there && !daemon.handed_in {
            problems.push(format!("socket: {} is still there after brigd exited", daemon.socket.display()));
        } else if !there && daemon.handed_in {
            // The service manager's socket is its own to keep.
            problems.push(format!("socket: brigd removed {}, which was handed in", daemon.socket.display()));
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(anyhow!(
            "brigd stop (SIGTERM to pid {})\n  {}\n{}",
            daemon.pid,
            problems.join("\n  "),
            process::render_streams(&out.stdout, &out.stderr)
        ))
    }

    fn kill_daemon(&self, timeout: Duration) -> Result<()> {
        let mut slot = self.daemon.borrow_mut();
        let daemon = slot.as_mut().context("brigd kill: no brigd was started in this trial")?;
        daemon.signal_and_wait(rustix::process::Signal::KILL, timeout)?;
        Ok(())
    }

    fn request(&self, request: &RequestStep, vars: &Vars, timeout: Duration) -> Result<()> {
        let socket = match (&request.socket, self.daemon.borrow().as_ref()) {
            (Some(socket), _) => PathBuf::from(vars.expand(socket)?),
            (None, Some(daemon)) => daemon.socket.clone(),
            (None, None) => self.socket_dir.join("d.sock"),
        };
        let mut bytes = Vec::new();
        for line in &request.lines {
            bytes.extend_from_slice(vars.expand(line)?.as_bytes());
            bytes.push(b'\n');
        }
        if let Some(n) = request.padded_bytes {
            bytes.extend_from_slice(padded_request(n).as_bytes());
        }
        let (pieces, pause) = match request.trickle_ms {
            Some(ms) => (bytes.chunks(8).map(<[u8]>::to_vec).collect(), Duration::from_millis(ms)),
            None => (vec![bytes], Duration::ZERO),
        };
        // On the rootless lane a client is the lane's user unless the step
        // names another uid: brigd there serves that user only.
        let as_uid = request.as_uid.or(self.user.map(|(uid, _)| uid));
        let exchange = Exchange {
            socket: socket.clone(),
            pieces,
            pause,
            as_uid: as_uid.map(|uid| (uid, self.lab.client.clone())),
            responses: request.expect.responses.len(),
            closed: request.expect.closed,
            deadline: Instant::now() + timeout,
        };
        let connections = request.concurrent.unwrap_or(1);
        let results = brigd::run(&exchange, connections);
        let problems = check_request(request, &results, vars)?;
        if problems.is_empty() {
            return Ok(());
        }
        let mut shown = format!("request to {}", socket.display());
        if let Some(uid) = as_uid {
            shown.push_str(&format!(" as uid {uid}"));
        }
        if connections > 1 {
            shown.push_str(&format!(" on {connections} connections"));
        }
        Err(anyhow!("{shown}\n  {}\n{}", problems.join("\n  "), render_received(&results)))
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

impl Trial<'_> {
    /// On the rootless lane, what a host step made (and the directories it
    /// made on the way, inside the trial's scratch) is the lane's user's,
    /// as a user's own files are; `root-own` gives one back to root.
    fn hand_over(&self, op: &HostOp, vars: &Vars) -> Result<()> {
        let made = match op {
            HostOp::Mkdir(path) => vars.expand(path)?,
            HostOp::Write(w) => vars.expand(&w.path)?,
            HostOp::Symlink(s) => vars.expand(&s.link)?,
            HostOp::RootOwn(path) => {
                let path = PathBuf::from(vars.expand(path)?);
                return std::os::unix::fs::lchown(&path, Some(0), Some(0))
                    .with_context(|| format!("handing {} to root", path.display()));
            }
            _ => return Ok(()),
        };
        let Some((uid, gid)) = self.user else { return Ok(()) };
        let mut path = Some(PathBuf::from(made));
        while let Some(p) = path.filter(|p| p.starts_with(&self.scratch)) {
            std::os::unix::fs::lchown(&p, Some(uid), Some(gid))
                .with_context(|| format!("handing {} to uid {uid}", p.display()))?;
            path = p.parent().map(Path::to_path_buf);
        }
        Ok(())
    }
}

/// Hand a directory the lab made, and everything under it, to `uid`.
fn chown_tree(dir: &Path, uid: u32, gid: u32) -> Result<()> {
    let (owner, group) = (Some(rustix::fs::Uid::from_raw(uid)), Some(rustix::fs::Gid::from_raw(gid)));
    rustix::fs::chown(dir, owner, group).with_context(|| format!("handing {} to uid {uid}", dir.display()))?;
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() && !path.is_symlink() {
            chown_tree(&path, uid, gid)?;
        } else {
            std::os::unix::fs::lchown(&path, Some(uid), Some(gid))
                .with_context(|| format!("handing {} to uid {uid}", path.display()))?;
        }
    }
    Ok(())
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

/// A `version` request padded to exactly `n` bytes, newline included.
pub fn padded_request(n: usize) -> String {
    let pad = "x".repeat(n.saturating_sub(PADDED_MIN));
    format!("{{\"op\":\"version\",\"id\":\"{pad}\"}}\n")
}

/// Every way the connections' responses miss the request's expectations.
pub fn check_request(request: &RequestStep, results: &[Result<Received>], vars: &Vars) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let many = results.len() > 1;
    let mut docs: Vec<Vec<Option<serde_json::Value>>> = Vec::new();
    for (c, result) in results.iter().enumerate() {
        let at = |what: String| if many { format!("connection {}: {what}", c + 1) } else { what };
        let received = match result {
            Ok(received) => received,
            Err(err) => {
                problems.push(at(format!("{err:#}")));
                docs.push(Vec::new());
                continue;
            }
        };
        if let Some(short) = &received.short {
            problems.push(at(format!(
                "expected {} response(s), got {}: {short}",
                request.expect.responses.len(),
                received.lines.len()
            )));
        }
        let mut parsed = Vec::new();
        for (r, line) in received.lines.iter().enumerate() {
            match serde_json::from_str::<serde_json::Value>(line) {
                Err(err) => {
                    problems.push(at(format!("response {} is not JSON ({err}): {line:?}", r + 1)));
                    parsed.push(None);
                }
                Ok(doc) => {
                    let mut found = Vec::new();
                    check_json(&doc, &request.expect.responses[r], vars, &mut found)?;
                    problems.extend(found.into_iter().map(|p| at(format!("response {}: {p}", r + 1))));
                    parsed.push(Some(doc));
                }
            }
        }
        match &received.after {
            After::Unchecked | After::Open if request.expect.closed != Some(true) => {}
            After::Closed if request.expect.closed == Some(true) => {}
            After::Closed => problems.push(at("expected the connection to stay open, brigd closed it".to_owned())),
            After::Extra(line) => problems.push(at(format!("expected nothing more, brigd sent {line:?}"))),
            After::StillOpen(wait) => problems.push(at(format!(
                "expected brigd to close the connection, it was still open {} ms later",
                wait.as_millis()
            ))),
            After::Unchecked | After::Open => {}
        }
        docs.push(parsed);
    }
    for pointer in &request.expect.identical {
        let pointer = vars.expand(pointer)?;
        for r in 0..request.expect.responses.len() {
            let values: Vec<(usize, Result<&serde_json::Value, String>)> = docs
                .iter()
                .enumerate()
                .filter_map(|(c, d)| d.get(r).and_then(Option::as_ref).map(|doc| (c, select(doc, &pointer))))
                .collect();
            let Some((first_c, first)) = values.first() else { continue };
            for (c, value) in &values[1..] {
                if value != first {
                    let show = |v: &Result<&serde_json::Value, String>| match v {
                        Ok(v) => brief(v),
                        Err(why) => why.clone(),
                    };
                    problems.push(format!(
                        "identical {pointer}: response {} differs between connection {} ({}) and connection {} ({})",
                        r + 1,
                        first_c + 1,
                        show(first),
                        c + 1,
                        show(value)
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// What the connections received, for a failure message.
fn render_received(results: &[Result<Received>]) -> String {
    let mut out = String::new();
    let many = results.len() > 1;
    for (c, result) in results.iter().enumerate() {
        let Ok(received) = result else { continue };
        if many {
            out.push_str(&format!("--- connection {} received\n", c + 1));
        } else {
            out.push_str("--- received\n");
        }
        if received.lines.is_empty() {
            out.push_str("(nothing)\n");
        }
        for line in &received.lines {
            out.push_str(line);
            out.push('\n');
        }
        if let Some(error) = &received.write_error {
            out.push_str(&format!("(writing failed: {error})\n"));
        }
        if !received.client_stderr.trim().is_empty() {
            out.push_str(&format!("--- lab-client stderr\n{}\n", received.client_stderr.trim_end()));
        }
        // Concurrent connections usually fail alike; one is enough to read.
        if many && c >= 1 {
            out.push_str(&format!("[… {} more connection(s)]\n", results.len() - c - 1));
            break;
        }
    }
    out
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
        // Ownership is the trial's to change, after the operation.
        HostOp::RootOwn(_) => Ok(()),
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
            Ok(doc) => check_json(&doc, &expect.json, vars, &mut problems)?,
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

/// Every way `doc` misses the pointer expectations.
fn check_json(doc: &serde_json::Value, wants: &[JsonExpect], vars: &Vars, problems: &mut Vec<String>) -> Result<()> {
    for want in wants {
        let pointer = vars.expand(&want.pointer)?;
        let found = select(doc, &pointer);
        if want.absent {
            if let Ok(found) = found {
                problems.push(format!("json {pointer}: expected nothing there, found {}", brief(found)));
            }
            continue;
        }
        let found = match found {
            Ok(found) => found,
            Err(why) => {
                problems.push(format!("json {pointer}: {why}"));
                continue;
            }
        };
        if let Some(equals) = &want.equals {
            let equals = vars.expand_json(equals)?;
            if *found != equals {
                problems.push(format!("json {pointer}: expected {equals}, found {}", brief(found)));
            }
        }
        if let Some(needle) = &want.contains {
            let needle = vars.expand(needle)?;
            if !found.as_str().is_some_and(|s| s.contains(&needle)) {
                problems
                    .push(format!("json {pointer}: expected a string containing {needle:?}, found {}", brief(found)));
            }
        }
    }
    Ok(())
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
    if let Some(count) = &want.count {
        let pattern = vars.expand_regex(&count.pattern)?;
        let re = regex::Regex::new(&pattern).with_context(|| format!("{stream} count pattern {pattern:?}"))?;
        let n = have.lines().filter(|line| re.is_match(line)).count();
        if n != count.equals {
            problems.push(format!("{stream}: expected {} line(s) matching /{pattern}/, found {n}", count.equals));
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
