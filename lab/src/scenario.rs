//! The scenario file format: strict serde types, their JSON Schema, and the
//! checks that turn a parsed file into steps the runner can trust.
//!
//! The types are the single source of truth for the format: the committed
//! `scenarios/schema.json` is generated from them (see [`schema_json`]), and a
//! unit test fails when the two drift apart.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Context, Result, bail, ensure};
use schemars::JsonSchema;
use serde::Deserialize;

/// One scenario file: what it proves, what it needs, and the steps that prove it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
#[schemars(title = "brig lab scenario")]
pub struct Scenario {
    /// One or two sentences: the claim this scenario proves.
    pub about: String,
    /// What the host must offer for the scenario to run; a trial whose needs
    /// are not met is ignored (or fails, when `LAB_REQUIRE` names the need).
    #[serde(default)]
    pub needs: Vec<Need>,
    /// One profile from `lab/profiles/` (file name without extension), copied
    /// into the trial's profile directory with placeholders expanded.
    #[serde(default)]
    pub profile: Option<String>,
    /// Several profiles from `lab/profiles/`, as for `profile`.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// Restricts the scenario to these lanes; absent means nerdctl and
    /// podman (the rootless lane runs only scenarios that name it).
    #[serde(default)]
    pub runtimes: Option<Vec<RuntimeName>>,
    /// Lanes the scenario does not run on, each with why: its trials there
    /// are listed as ignored with that reason. A scenario either runs on the
    /// rootless lane or says here why it cannot, so nothing leaves that lane
    /// in silence.
    #[serde(default)]
    pub not_on: BTreeMap<RuntimeName, String>,
    /// Runs the scenario alone, after every other trial, because it touches
    /// state that other trials share (such as `brig rm --all`). It is ignored
    /// when the runtime already lists `brig-` sandboxes the lab did not create.
    #[serde(default)]
    pub exclusive: bool,
    /// The steps, run in order; the first one that fails ends the trial.
    pub steps: Vec<Step>,
}

/// A capability of the host that a scenario may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Need {
    /// The trial's runtime is installed, answers, and holds the lab image.
    Runtime,
    /// The runtime can boot a microVM (a VM shim and a working KVM).
    Microvm,
    /// A local OCI registry can be started.
    Registry,
    /// The `cosign` tool is installed.
    Cosign,
    /// A Secret Service (gnome-keyring under a D-Bus session) can be started.
    SecretService,
    /// The kernel keyring is usable.
    Keyutils,
    /// The lab can act as a second uid (root with `setpriv`).
    SecondUid,
}

impl Need {
    pub const ALL: [Need; 7] = [
        Need::Runtime,
        Need::Microvm,
        Need::Registry,
        Need::Cosign,
        Need::SecretService,
        Need::Keyutils,
        Need::SecondUid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Need::Runtime => "runtime",
            Need::Microvm => "microvm",
            Need::Registry => "registry",
            Need::Cosign => "cosign",
            Need::SecretService => "secret-service",
            Need::Keyutils => "keyutils",
            Need::SecondUid => "second-uid",
        }
    }
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A lane: a container runtime the lab drives brig against, and who runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeName {
    Nerdctl,
    Podman,
    /// podman run by the lab's unprivileged user (`brig-lab`): brig, brigd,
    /// shell steps and the lab's own runtime calls all run as that user.
    /// Only scenarios that name it in `runtimes` run here.
    PodmanRootless,
}

impl RuntimeName {
    pub const ALL: [RuntimeName; 3] = [RuntimeName::Nerdctl, RuntimeName::Podman, RuntimeName::PodmanRootless];

    /// The lanes a scenario without `runtimes` runs on: the rootful ones.
    pub const DEFAULT: [RuntimeName; 2] = [RuntimeName::Nerdctl, RuntimeName::Podman];

    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeName::Nerdctl => "nerdctl",
            RuntimeName::Podman => "podman",
            RuntimeName::PodmanRootless => "podman-rootless",
        }
    }

    /// The runtime binary brig is told to use (`BRIG_RUNTIME`, `{runtime}`).
    pub fn binary(self) -> &'static str {
        match self {
            RuntimeName::Nerdctl => "nerdctl",
            RuntimeName::Podman | RuntimeName::PodmanRootless => "podman",
        }
    }

    pub fn rootless(self) -> bool {
        self == RuntimeName::PodmanRootless
    }

    pub fn parse(s: &str) -> Option<Self> {
        RuntimeName::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for RuntimeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step. Exactly one of `brig`, `brigd`, `request`, `shell`, `runtime`,
/// `guest`, `host`, `table` or `sleep-ms` says what the step does; the other
/// fields qualify it.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
#[schemars(extend("oneOf" = [
    {"required": ["brig"]},
    {"required": ["brigd"]},
    {"required": ["request"]},
    {"required": ["shell"]},
    {"required": ["runtime"]},
    {"required": ["guest"]},
    {"required": ["host"]},
    {"required": ["table"]},
    {"required": ["sleep-ms"]},
]))]
pub struct Step {
    /// Run the brig binary with these arguments, in the trial's environment.
    #[serde(default)]
    pub brig: Option<Vec<String>>,
    /// Start, stop or kill the trial's brigd, or run one in the foreground.
    #[serde(default)]
    pub brigd: Option<BrigdStep>,
    /// Send raw lines to brigd's socket as a client would, and match the
    /// response lines.
    #[serde(default)]
    pub request: Option<RequestStep>,
    /// Run a command line with `sh -c` in the trial's environment, for the
    /// pipelines a user would type (`echo … | socat …`).
    #[serde(default)]
    pub shell: Option<String>,
    /// Run the trial's runtime binary directly with these arguments (behind
    /// brig's back).
    #[serde(default)]
    pub runtime: Option<Vec<String>>,
    /// Run a command inside a sandbox through `<runtime> exec`, never through
    /// brig, so probing never boots or recreates anything.
    #[serde(default)]
    pub guest: Option<GuestStep>,
    /// Change the host filesystem, or assert something about it.
    #[serde(default)]
    pub host: Option<HostOp>,
    /// Expand the scenario into one sub-trial per row.
    #[serde(default)]
    pub table: Option<Table>,
    /// Wait this many milliseconds. Prefer a step that waits for a condition.
    #[serde(default)]
    pub sleep_ms: Option<u64>,
    /// Extra environment for a `brig`, `shell` or `brigd` (`start`, `run`)
    /// step; keys and values take placeholders.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Bytes fed to the command's standard input (default: none, at EOF).
    #[serde(default)]
    pub stdin: Option<String>,
    /// Kill the command after this many seconds (default 120).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// What this step measures, for the reachability report
    /// (`cargo xtask report reachability`): `control: …` for a check that
    /// must pass for the negatives around it to count. Takes placeholders.
    #[serde(default)]
    pub probe: Option<String>,
    /// What the command must do. Absent means `exit: 0`.
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// Where a guest command runs and what it runs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GuestStep {
    /// A session ref `agent@label`; the sandbox is `brig-<agent>-<label>`.
    /// Use the canonical agent name here, not an alias.
    #[serde(default, rename = "ref")]
    pub reference: Option<String>,
    /// The sandbox name itself, when a ref cannot express it.
    #[serde(default)]
    pub sandbox: Option<String>,
    /// The command and its arguments, run as given (no shell; use `sh -c`).
    pub cmd: Vec<String>,
}

/// A host filesystem operation or assertion. Paths take placeholders.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub enum HostOp {
    /// Create a directory and its parents.
    Mkdir(String),
    /// Write a file (parents are created).
    Write(WriteOp),
    /// Create a symbolic link.
    Symlink(SymlinkOp),
    /// Set a path's permission bits.
    Chmod(ModeOp),
    /// Give a path to root (the lab's own user). On the rootless lane what
    /// `mkdir`, `write` and `symlink` make is the lane's user's, as a user's
    /// own files are; this makes one that is not.
    RootOwn(String),
    /// Remove a path (a directory with its contents), never following links.
    Rm(String),
    /// Assert the path exists (a dangling link counts).
    Exists(String),
    /// Assert nothing exists at the path.
    Absent(String),
    /// Assert the path is a directory (not a link to one).
    IsDir(String),
    /// Assert the path is a symbolic link.
    IsSymlink(String),
    /// Assert a path's permission bits.
    Mode(ModeOp),
    /// Assert a file's content contains a text.
    Contains(ContainsOp),
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WriteOp {
    pub path: String,
    #[serde(default)]
    pub content: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SymlinkOp {
    /// The link to create.
    pub link: String,
    /// What it points at (written as given; it need not exist).
    pub target: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ModeOp {
    pub path: String,
    /// Octal permission bits as a string, e.g. "0700".
    pub mode: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ContainsOp {
    pub path: String,
    pub text: String,
}

/// What a `brigd` step does to the trial's daemon.
///
/// A trial has at most one daemon running at a time; whatever runs when the
/// trial ends is killed with its process group, pass or fail.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub enum BrigdStep {
    /// Start brigd in the background and wait until its socket accepts a
    /// connection. Its stdout and stderr go to `{scratch}/brigd-<n>.stdout`
    /// and `.stderr`, `<n>` counting the starts of the trial.
    Start(BrigdStart),
    /// Send SIGTERM and wait for the exit. `expect` applies to the exit and
    /// the daemon's whole output (default: exit 0); the socket file must be
    /// gone afterwards.
    Stop(Nothing),
    /// Send SIGKILL and reap the daemon, as `kill -9` would.
    Kill(Nothing),
    /// Run brigd in the foreground with these arguments, like a `brig` step
    /// (for the refusals: path too long, path already served).
    Run(Vec<String>),
}

/// How to start the trial's daemon.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BrigdStart {
    /// The socket to serve and to wait on. Default `{socket}`, a short path
    /// of the trial's own (`/tmp/brig-lab-<token>-sock/d.sock`).
    #[serde(default)]
    pub socket: Option<String>,
    /// brigd's arguments. Default `[--socket, <socket>]`; `[]` lets brigd
    /// choose its path, and `socket` must then say where it will be.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Run brigd as this uid (and gid) through `setpriv`; the trial's socket
    /// directory is handed to that uid first. Needs `second-uid`.
    #[serde(default)]
    pub as_uid: Option<u32>,
    /// Start brigd as a systemd socket unit does, through
    /// `systemd-socket-activate -l <socket>`: the socket exists before
    /// brigd, which is started at the first connection with the listening
    /// socket handed in (`LISTEN_FDS`). `args` default to none.
    #[serde(default)]
    pub activated: bool,
}

/// An empty mapping, `{}`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// Raw lines sent on one connection to brigd's socket, and what must come
/// back. Each line is written followed by a newline, all of them at once
/// (a client that pipelines), while the responses are read.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RequestStep {
    /// The lines to send, as written (placeholders expanded).
    #[serde(default)]
    pub lines: Vec<String>,
    /// After `lines`, one more: a `version` request whose `id` is padded
    /// with `x` so that the line is this many bytes, newline included
    /// (at least 25).
    #[serde(default)]
    pub padded_bytes: Option<usize>,
    /// Write the bytes 8 at a time, this many milliseconds apart, as a slow
    /// client would.
    #[serde(default)]
    pub trickle_ms: Option<u64>,
    /// Connect as this uid (and gid) through `setpriv` and the runner's
    /// `lab-client`, so the daemon sees another peer. Needs `second-uid`.
    #[serde(default)]
    pub as_uid: Option<u32>,
    /// Open this many connections that send the same bytes at the same
    /// moment; every one must meet `expect`.
    #[serde(default)]
    pub concurrent: Option<usize>,
    /// The socket to connect to. Default: the trial daemon's socket.
    #[serde(default)]
    pub socket: Option<String>,
    pub expect: RequestExpect,
}

/// What a `request` must get back, on every connection.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RequestExpect {
    /// One entry per response line to read, in order: the JSON pointers that
    /// line must meet (`[]` only requires a JSON line). Exactly this many
    /// lines are read.
    pub responses: Vec<Vec<JsonExpect>>,
    /// `true`: brigd then closes the connection, sending nothing more.
    /// `false`: the connection then stays open, with nothing more sent.
    #[serde(default)]
    pub closed: Option<bool>,
    /// Pointers whose values must be the same in every connection's
    /// response of the same position (with `concurrent`).
    #[serde(default)]
    pub identical: Vec<String>,
}

/// Rows expanded into sub-trials `…::<row>`. The steps before the table run
/// in every row, then the table's steps with `{row.<name>}` set from the row,
/// then the steps after it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Table {
    /// Row name (lowercase letters, digits, `-`, `_`) → its variables.
    pub rows: BTreeMap<String, BTreeMap<String, String>>,
    pub steps: Vec<Step>,
}

/// What a command step (`brig`, `shell`, `runtime`, `guest`, `brigd` run or
/// stop) must do.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Expect {
    /// The exit code: a number, `any`, `nonzero`, or a placeholder that
    /// expands to one of these. Absent means 0.
    #[serde(default)]
    pub exit: Option<ExitExpect>,
    #[serde(default)]
    pub stdout: Option<TextExpect>,
    #[serde(default)]
    pub stderr: Option<TextExpect>,
    /// JSON pointers into the last line of stdout, parsed as JSON. A segment
    /// `[key=value]` selects the first array element whose `key` is the
    /// string `value`.
    #[serde(default)]
    pub json: Vec<JsonExpect>,
    /// An upper bound on how long the command may take.
    #[serde(default)]
    pub duration: Option<DurationExpect>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExitExpect {
    Code(i32),
    Word(String),
}

/// Expectations on one output stream. Texts take placeholders.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TextExpect {
    /// Every one of these must occur.
    #[serde(default)]
    pub contains: Vec<String>,
    /// None of these may occur.
    #[serde(default)]
    pub not_contains: Vec<String>,
    /// A regular expression (Rust `regex` syntax) that must match; values
    /// substituted for placeholders are matched literally.
    #[serde(default)]
    pub regex: Option<String>,
    /// How many lines match a regular expression.
    #[serde(default)]
    pub count: Option<CountExpect>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CountExpect {
    /// A regular expression, matched against each line (placeholder values
    /// literally).
    pub pattern: String,
    /// The number of lines it must match.
    pub equals: usize,
}

/// One JSON pointer and what must be there: exactly one of `equals`,
/// `contains` and `absent`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct JsonExpect {
    pub pointer: String,
    /// The value found there must equal this (`null` included); strings
    /// take placeholders.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "serde_json::Value")]
    pub equals: Option<serde_json::Value>,
    /// The value found there must be a string containing this.
    #[serde(default)]
    pub contains: Option<String>,
    /// `true`: nothing may be there (the member is left out).
    #[serde(default)]
    pub absent: bool,
}

impl JsonExpect {
    fn check(&self) -> Result<()> {
        let given =
            usize::from(self.equals.is_some()) + usize::from(self.contains.is_some()) + usize::from(self.absent);
        ensure!(given == 1, "json pointer {} takes exactly one of equals, contains, absent: true", self.pointer);
        Ok(())
    }
}

/// A field that is present is `Some`, even when it is `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DurationExpect {
    pub max_ms: u64,
}

/// A step with its kind settled: what the runner executes.
#[derive(Debug, Clone, Copy)]
pub enum StepKind<'a> {
    Brig(&'a [String]),
    Brigd(&'a BrigdStep),
    Request(&'a RequestStep),
    Shell(&'a str),
    Runtime(&'a [String]),
    Guest(&'a GuestStep),
    Host(&'a HostOp),
    Table(&'a Table),
    Sleep(u64),
}

impl Step {
    /// The one thing this step does, or why the step is malformed.
    pub fn kind(&self) -> Result<StepKind<'_>> {
        let mut kinds = Vec::new();
        if let Some(argv) = &self.brig {
            kinds.push(("brig", StepKind::Brig(argv)));
        }
        if let Some(brigd) = &self.brigd {
            kinds.push(("brigd", StepKind::Brigd(brigd)));
        }
        if let Some(request) = &self.request {
            kinds.push(("request", StepKind::Request(request)));
        }
        if let Some(line) = &self.shell {
            kinds.push(("shell", StepKind::Shell(line)));
        }
        if let Some(argv) = &self.runtime {
            kinds.push(("runtime", StepKind::Runtime(argv)));
        }
        if let Some(guest) = &self.guest {
            kinds.push(("guest", StepKind::Guest(guest)));
        }
        if let Some(op) = &self.host {
            kinds.push(("host", StepKind::Host(op)));
        }
        if let Some(table) = &self.table {
            kinds.push(("table", StepKind::Table(table)));
        }
        if let Some(ms) = self.sleep_ms {
            kinds.push(("sleep-ms", StepKind::Sleep(ms)));
        }
        match kinds.len() {
            0 => bail!("a step needs one of brig, brigd, request, shell, runtime, guest, host, table, sleep-ms"),
            1 => Ok(kinds[0].1),
            _ => {
                let names: Vec<_> = kinds.iter().map(|(name, _)| *name).collect();
                bail!("a step does one thing, this one has {}", names.join(" and "))
            }
        }
    }

    /// Refuses qualifiers that mean nothing for the step's kind, so a
    /// misplaced `expect` cannot silently assert nothing.
    fn check(&self, in_table: bool) -> Result<()> {
        let kind = self.kind()?;
        let runs_command = matches!(
            kind,
            StepKind::Brig(_)
                | StepKind::Shell(_)
                | StepKind::Runtime(_)
                | StepKind::Guest(_)
                | StepKind::Brigd(BrigdStep::Run(_))
        );
        let takes_expect = runs_command || matches!(kind, StepKind::Brigd(BrigdStep::Stop(_)));
        let takes_timeout = runs_command || matches!(kind, StepKind::Brigd(_) | StepKind::Request(_));
        let takes_env = matches!(
            kind,
            StepKind::Brig(_) | StepKind::Shell(_) | StepKind::Brigd(BrigdStep::Start(_) | BrigdStep::Run(_))
        );
        ensure!(
            self.expect.is_none() || takes_expect,
            "only brig, shell, runtime, guest and brigd run/stop steps take expect (a request has its own)"
        );
        ensure!(
            self.stdin.is_none() || runs_command,
            "only brig, shell, runtime, guest and brigd run steps take stdin"
        );
        ensure!(self.timeout_s.is_none() || takes_timeout, "only command, brigd and request steps take timeout-s");
        ensure!(self.env.is_empty() || takes_env, "only brig, shell and brigd start/run steps take env");
        if let Some(expect) = &self.expect {
            for json in &expect.json {
                json.check()?;
            }
        }
        match kind {
            StepKind::Brig(argv) | StepKind::Runtime(argv) => {
                ensure!(!argv.is_empty() || matches!(kind, StepKind::Brig(_)), "runtime needs arguments");
            }
            StepKind::Shell(line) => ensure!(!line.trim().is_empty(), "shell needs a command line"),
            StepKind::Brigd(_) => {}
            StepKind::Request(request) => request.check()?,
            StepKind::Guest(guest) => {
                ensure!(
                    guest.reference.is_some() != guest.sandbox.is_some(),
                    "guest takes exactly one of ref and sandbox"
                );
                ensure!(!guest.cmd.is_empty(), "guest needs a cmd");
            }
            StepKind::Table(table) => {
                ensure!(!in_table, "a table cannot hold another table");
                ensure!(!table.rows.is_empty(), "a table needs at least one row");
                for name in table.rows.keys() {
                    ensure!(is_row_name(name), "row name {name:?} must be lowercase letters, digits, '-' or '_'");
                }
                for (i, step) in table.steps.iter().enumerate() {
                    step.check(true).with_context(|| format!("table step {}", i + 1))?;
                }
            }
            StepKind::Host(_) | StepKind::Sleep(_) => {}
        }
        Ok(())
    }
}

/// The shortest line `padded-bytes` can make: `{"op":"version","id":""}` and
/// its newline.
pub const PADDED_MIN: usize = 25;

impl RequestStep {
    fn check(&self) -> Result<()> {
        ensure!(
            !self.lines.is_empty() || self.padded_bytes.is_some() || self.expect.responses.is_empty(),
            "a request that sends nothing can expect no responses"
        );
        if let Some(n) = self.padded_bytes {
            ensure!(n >= PADDED_MIN, "padded-bytes must be at least {PADDED_MIN}, the smallest padded request");
        }
        if let Some(n) = self.concurrent {
            ensure!((1..=64).contains(&n), "concurrent must be between 1 and 64");
        }
        ensure!(
            self.expect.identical.is_empty() || self.concurrent.is_some_and(|n| n > 1),
            "identical compares connections, so it needs concurrent of 2 or more"
        );
        for (i, response) in self.expect.responses.iter().enumerate() {
            for json in response {
                json.check().with_context(|| format!("response {}", i + 1))?;
            }
        }
        Ok(())
    }
}

fn is_row_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

impl Scenario {
    /// Parses a scenario strictly and checks what the types cannot express.
    pub fn parse(text: &str) -> Result<Scenario> {
        let scenario: Scenario = serde_saphyr::from_str(text)?;
        scenario.check()?;
        Ok(scenario)
    }

    fn check(&self) -> Result<()> {
        ensure!(!self.about.trim().is_empty(), "about must say what the scenario proves");
        ensure!(!self.steps.is_empty(), "a scenario needs steps");
        ensure!(self.profile.is_none() || self.profiles.is_empty(), "use profile or profiles, not both");
        if let Some(runtimes) = &self.runtimes {
            ensure!(!runtimes.is_empty(), "runtimes, when given, names at least one");
        }
        for (lane, why) in &self.not_on {
            ensure!(!self.lanes().contains(lane), "not-on names {lane}, which the scenario runs on");
            ensure!(!why.trim().is_empty(), "not-on must say why the scenario cannot run on {lane}");
        }

        let mut tables = 0;
        for (i, step) in self.steps.iter().enumerate() {
            step.check(false).with_context(|| format!("step {}", i + 1))?;
            if step.table.is_some() {
                tables += 1;
            }
        }
        ensure!(tables <= 1, "a scenario holds at most one table");
        Ok(())
    }

    /// The lanes the scenario runs on.
    pub fn lanes(&self) -> &[RuntimeName] {
        self.runtimes.as_deref().unwrap_or(&RuntimeName::DEFAULT)
    }

    /// The profile files this scenario copies into its trials.
    pub fn profile_names(&self) -> Vec<&str> {
        self.profile.iter().chain(self.profiles.iter()).map(String::as_str).collect()
    }

    /// The table's rows, if the scenario has a table.
    pub fn table(&self) -> Option<&Table> {
        self.steps.iter().find_map(|s| s.table.as_ref())
    }

    /// The steps one trial runs, in order, with the row variables that apply
    /// to each (`None` outside the table).
    pub fn flatten<'a>(&'a self, row: Option<&str>) -> Vec<(&'a Step, Option<&'a BTreeMap<String, String>>)> {
        let mut out = Vec::new();
        for step in &self.steps {
            match &step.table {
                Some(table) => {
                    let vars = row.and_then(|r| table.rows.get(r));
                    out.extend(table.steps.iter().map(|s| (s, vars)));
                }
                None => out.push((step, None)),
            }
        }
        out
    }
}

/// The JSON Schema of a scenario file, as committed in `scenarios/schema.json`.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(Scenario);
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema always serializes");
    text.push('\n');
    text
}
