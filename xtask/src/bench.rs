//! `cargo xtask bench`: brig against the same operations done directly with the
//! runtime, measured side by side in one run and reported as ratios.
//!
//! Absolute times depend on the machine and on whatever else it is doing; a
//! ratio of two medians taken in the same run, with the two sides interleaved
//! (the order alternates every repetition), cancels most of that drift. That is
//! why every brig measurement has a raw lane beside it doing the same runtime
//! work by hand, and why the targets are ratios wherever the issue allows.
//!
//! The bench uses a scratch `HOME`, state directory and profile directory, and
//! names everything it creates with a token unique to the run; whatever carries
//! the token is removed at the end, on error too, and the runtime is checked
//! for leftovers afterwards.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail, ensure};

const USAGE: &str = "usage: cargo xtask bench [--reps N] [--runtime nerdctl|podman|podman-rootless]... [--write]";
/// The hidden argument with which the bench runs itself as the rootless
/// lane's user and prints that lane's section.
const AS_LANE_USER: &str = "--as-lane-user";
const DEFAULT_REPS: usize = 10;
const IMAGE: &str = "localhost/brig-lab/guest:latest";
const SHIM: &str = "io.containerd.runc.v2";
/// The guest's idle process, as brig starts it: it parks until stopped and
/// exits at once on SIGTERM, so `stop` does not wait out a grace period.
const PARK: &str = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";
const LS_MANY: usize = 25;
/// The raw side's env file for the login exec, in the scratch directory.
const GUEST_ENV: &str = "guest.env";
/// `ls` with many sandboxes against `ls` with one.
const RATIO_TARGET: f64 = 1.15;
/// `run -d` against the raw network + run + exec it does.
const RUN_TARGET: f64 = 1.05;
/// `sh <ref> true` against a raw `exec true`.
const SH_TARGET: f64 = 1.15;
/// `stop` + `rm` against raw `stop` + `rm -f` + `network rm`.
const STOP_RM_TARGET: f64 = 1.10;
/// brigd's `status` against one raw listing.
const DAEMON_TARGET: f64 = 1.2;
/// How many clients ensure the same running sandbox at once.
const CONCURRENT: usize = 16;
/// The longest path a unix socket takes on Linux.
const SOCKET_MAX: usize = 107;
const STATUS: &str = r#"{"v":1,"op":"status"}"#;
const DOC: &str = "docs/performance.md";
const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";

pub fn run(args: &[String]) -> Result<()> {
    let opts = Options::parse(args)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("xtask lives in the workspace")?.to_owned();
    let brig = root.join("target/release/brig");
    if opts.as_lane_user {
        // Already the rootless lane's user, started by the run below: measure
        // and hand the section back on stdout.
        let rt = Rt::PodmanRootless;
        let present = Present::probe(rt)?;
        check_image(rt)?;
        print!("{}", render_section(&Bench::measure(&root, &brig, present, opts.reps)?));
        return Ok(());
    }

    // Timings of a debug build would measure the compiler's settings, not brig.
    eprintln!("==> cargo build --release -p brig");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let built = Command::new(&cargo).args(["build", "--release", "-q", "-p", "brig"]).current_dir(&root).status()?;
    ensure!(built.success(), "cargo build --release -p brig failed");
    let host = Host::probe(&brig)?;

    let mut sections = Vec::new();
    let mut absent = Vec::new();
    for &rt in &opts.runtimes {
        if rt == Rt::PodmanRootless {
            match as_lane_user(opts.reps) {
                Ok(section) => sections.push(section),
                Err(why) => {
                    eprintln!("==> skipping {}: {why:#}", rt.lane());
                    absent.push(format!("{}: {why:#}", rt.lane()));
                }
            }
            continue;
        }
        match Present::probe(rt) {
            Ok(present) => {
                check_image(rt)?;
                sections.push(render_section(&Bench::measure(&root, &brig, present, opts.reps)?));
            }
            Err(why) => {
                eprintln!("==> skipping {}: {why:#}", rt.lane());
                absent.push(format!("{}: {why:#}", rt.bin()));
            }
        }
    }
    ensure!(!sections.is_empty(), "no runtime to measure: {}", absent.join("; "));

    let report = render(&host, opts.reps, &sections, &absent);
    print!("{report}");
    if opts.write {
        write_doc(&root.join(DOC), &report)?;
        eprintln!("==> wrote the results into {DOC}");
    }
    Ok(())
}

/// The rootless lane measured as a user measures it: this bench, run again
/// as the lab's unprivileged user (brig, brigd, the raw podman calls and the
/// socket clients all that user's), its section read from its stdout.
fn as_lane_user(reps: usize) -> Result<String> {
    ensure!(rustix::process::geteuid().is_root(), "the rootless lane is started by root, which has its user run it");
    crate::rootless::ensure_image(IMAGE)?;
    let me = std::env::current_exe().context("finding the bench's own executable")?;
    let mut cmd = crate::rootless::as_user(&me.to_string_lossy())?;
    cmd.args(["bench", AS_LANE_USER, "--reps", &reps.to_string()]).stderr(Stdio::inherit());
    let out = cmd.output().context("running the bench as the rootless lane's user")?;
    ensure!(out.status.success(), "the bench as {} failed ({})", crate::rootless::USER, out.status);
    String::from_utf8(out.stdout).context("the rootless section is not UTF-8")
}

#[derive(Debug)]
struct Options {
    reps: usize,
    runtimes: Vec<Rt>,
    write: bool,
    as_lane_user: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self> {
        let mut opts = Options { reps: DEFAULT_REPS, runtimes: Vec::new(), write: false, as_lane_user: false };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--reps" => {
                    let n = args.next().context("--reps needs a number")?;
                    opts.reps = n.parse().with_context(|| format!("--reps {n:?} is not a number"))?;
                    ensure!(opts.reps >= 1, "--reps must be at least 1");
                }
                "--runtime" => {
                    let rt = match args.next().map(String::as_str) {
                        Some("nerdctl") => Rt::Nerdctl,
                        Some("podman") => Rt::Podman,
                        Some("podman-rootless") => Rt::PodmanRootless,
                        other => bail!("--runtime takes nerdctl, podman or podman-rootless, not {other:?}"),
                    };
                    if !opts.runtimes.contains(&rt) {
                        opts.runtimes.push(rt);
                    }
                }
                "--write" => opts.write = true,
                AS_LANE_USER => opts.as_lane_user = true,
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown argument {other:?}\n{USAGE}"),
            }
        }
        if opts.runtimes.is_empty() {
            opts.runtimes = vec![Rt::Nerdctl, Rt::Podman, Rt::PodmanRootless];
        }
        Ok(opts)
    }
}

/// The runtimes brig drives whose raw commands the bench writes out by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rt {
    Nerdctl,
    Podman,
    /// podman run by an unprivileged user: the bench measures it as that user.
    PodmanRootless,
}

impl Rt {
    fn bin(self) -> &'static str {
        match self {
            Rt::Nerdctl => "nerdctl",
            Rt::Podman | Rt::PodmanRootless => "podman",
        }
    }

    /// The lane's name in the report.
    fn lane(self) -> &'static str {
        match self {
            Rt::PodmanRootless => "podman-rootless",
            other => other.bin(),
        }
    }

    /// `nft` where brig writes this runtime's rules: the host's, or inside
    /// rootless podman's network namespace.
    fn nft(self) -> Vec<String> {
        match self {
            Rt::PodmanRootless => ["podman", "unshare", "--rootless-netns", "nft"].map(str::to_owned).to_vec(),
            _ => vec!["nft".to_owned()],
        }
    }

    /// The inet tables where brig writes this runtime's rules.
    fn tables(self) -> Vec<String> {
        lab::runtime::tables_listed_by(&self.nft())
    }

    /// The listing format brig asks for, so the raw listing parses nothing less.
    fn list_format(self) -> &'static str {
        match self {
            Rt::Nerdctl => "{{json .}}",
            Rt::Podman | Rt::PodmanRootless => "json",
        }
    }
}

/// The runtime's command lines for one sandbox, written out as brig would run
/// them, minus brig's labels and environment names (metadata that does not
/// change the runtime's work).
struct RawBox {
    name: String,
    net: String,
    home: PathBuf,
    /// The guest's environment for an exec, as brig hands it over: in a
    /// file, never in the runtime's own environment.
    env_file: PathBuf,
}

impl RawBox {
    fn new(scratch: &Path, token: &str, kind: &str, tag: &str) -> Self {
        let name = format!("brig-bench-{token}-{kind}-{tag}");
        RawBox {
            net: format!("{name}-net"),
            home: scratch.join("homes").join(&name),
            env_file: scratch.join(GUEST_ENV),
            name,
        }
    }

    /// Names standing for any sandbox, for the report.
    fn placeholder() -> Self {
        RawBox {
            name: "<sandbox>".into(),
            net: "<sandbox>-net".into(),
            home: PathBuf::from("<scratch>/homes/<sandbox>"),
            env_file: Path::new("<scratch>").join(GUEST_ENV),
        }
    }
}

/// One runtime command line, run in the scratch environment.
struct Call {
    argv: Vec<String>,
}

fn call(rt: Rt, args: &[&str]) -> Call {
    let mut argv = vec![rt.bin().to_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    Call { argv }
}

fn run_args(rt: Rt, raw: &RawBox, network: &str) -> Vec<String> {
    let home = format!("{}:/root", raw.home.display());
    let mut args: Vec<&str> = vec!["run", "-d", "--name", &raw.name];
    if rt == Rt::Nerdctl {
        args.extend(["--runtime", SHIM]);
    }
    args.extend(["--memory", "256m", "--cpus", "1", "--network", network, "-v", &home]);
    args.extend(["--tmpfs", "/root/.mem:size=16m,mode=0700,nodev,nosuid", IMAGE, "sh", "-c", PARK]);
    args.into_iter().map(str::to_owned).collect()
}

/// What `brig run -d` does at the runtime: its own network, the sandbox on it,
/// and an exec of `true` that proves the guest answers.
fn raw_run(rt: Rt, raw: &RawBox) -> Vec<Call> {
    let create = match rt {
        Rt::Nerdctl => call(rt, &["network", "create", &raw.net]),
        Rt::Podman | Rt::PodmanRootless => call(rt, &["network", "create", "--opt", "isolate=true", &raw.net]),
    };
    let run = run_args(rt, raw, &raw.net);
    let run = call(rt, &run.iter().map(String::as_str).collect::<Vec<_>>());
    vec![create, raw_isolate(rt, raw), run, call(rt, &["exec", &raw.name, "true"])]
}

/// The host isolation brig gives an isolated sandbox, by hand: ask the
/// runtime for the network's bridge, then load one nftables table of the
/// same shape as brig's (docs/networks.md) for it.
fn raw_isolate(rt: Rt, raw: &RawBox) -> Call {
    let bridge = match rt {
        Rt::Nerdctl => format!(
            "nerdctl network inspect --mode native {} | sed -n 's/.*\"bridge\": \"\\([^\"]*\\)\".*/\\1/p' | head -n 1",
            raw.net
        ),
        Rt::Podman | Rt::PodmanRootless => {
            format!("podman network inspect --format '{{{{.NetworkInterface}}}}' {}", raw.net)
        }
    };
    let table = raw_table(raw);
    let nft = rt.nft().join(" ");
    let script = format!(
        "br=$({bridge}) && {nft} -f - <<EOF\n\
         add table inet {table}\n\
         delete table inet {table}\n\
         table inet {table} {{\n\
         chain input {{ type filter hook input priority filter - 5; policy accept;\n\
         iifname \"$br\" ct state established,related accept\n\
         iifname \"$br\" udp dport 53 accept\n\
         iifname \"$br\" reject with icmpx admin-prohibited\n}}\n\
         chain forward {{ type filter hook forward priority filter - 5; policy accept;\n\
         iifname \"$br\" oifname != \"$br\" meta oifkind \"bridge\" reject with icmpx admin-prohibited\n\
         oifname \"$br\" iifname != \"$br\" meta iifkind \"bridge\" ct state new drop\n}}\n\
         }}\n\
         EOF"
    );
    Call { argv: vec!["sh".into(), "-c".into(), script] }
}

/// The raw side's table: the bench's name, as brig makes its own.
fn raw_table(raw: &RawBox) -> String {
    let body: String = raw.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("bench_{body}")
}

/// The least a runtime can do to start the same container: no network of its
/// own and no readiness probe. Context for the reader, not a target.
fn raw_bare_run(rt: Rt, raw: &RawBox) -> Vec<Call> {
    let run = run_args(rt, raw, "none");
    vec![call(rt, &run.iter().map(String::as_str).collect::<Vec<_>>())]
}

fn raw_exec(rt: Rt, raw: &RawBox) -> Vec<Call> {
    vec![call(rt, &["exec", &raw.name, "true"])]
}

/// The exec brig hands over to for `sh <ref> true`: a login shell in the
/// guest's home with the profile's environment, running the command. The
/// bench's stdin is /dev/null, so brig passes no `-i`.
fn raw_login_exec(rt: Rt, raw: &RawBox) -> Call {
    let env_file = raw.env_file.display().to_string();
    let args = ["exec", "-w", "/root", "--env-file", &env_file, &raw.name];
    let mut c = call(rt, &args);
    c.argv.extend(["bash", "-lc", "exec \"$@\"", "bash", "true"].map(str::to_owned));
    c
}

/// Every runtime call `brig sh <ref> true` makes in a sandbox it left
/// running, done by hand: the exec alone, nothing asked before it.
fn raw_sh_same(rt: Rt, raw: &RawBox) -> Vec<Call> {
    vec![raw_login_exec(rt, raw)]
}

fn raw_stop(rt: Rt, raw: &RawBox) -> Vec<Call> {
    vec![call(rt, &["stop", &raw.name])]
}

fn raw_rm(rt: Rt, raw: &RawBox) -> Vec<Call> {
    let table = raw_table(raw);
    vec![
        call(rt, &["rm", "-f", &raw.name]),
        call(rt, &["network", "rm", &raw.net]),
        // As brig removes it: a table already gone (rootless podman drops
        // its namespace with the user's last container) is no error.
        Call { argv: [rt.nft(), vec![format!("add table inet {table}; delete table inet {table}")]].concat() },
    ]
}

fn raw_ls(rt: Rt) -> Vec<Call> {
    vec![call(rt, &["ps", "-a", "--format", rt.list_format()])]
}

/// The runtime calls brigd's `ensure` of a running sandbox makes, done by
/// hand: as many queries as its debug log showed (one inspect of the
/// sandbox, which finds it running, so nothing boots and no readiness exec
/// follows).
fn raw_ensure_same(rt: Rt, queries: usize, name: &str) -> Vec<Call> {
    (0..queries).map(|_| call(rt, &["inspect", "--type", "container", name])).collect()
}

/// A brig sandbox of this run: its reference and the runtime name brig gives it.
struct BrigBox {
    reference: String,
    label: String,
    name: String,
}

impl BrigBox {
    fn new(token: &str, tag: &str) -> Self {
        let label = format!("bench-{token}-{tag}");
        BrigBox { reference: format!("lab-agent@{label}"), name: format!("brig-lab-agent-{label}"), label }
    }
}

/// One measured quantity; brig lanes and the raw lanes they are compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    RunBrig,
    RunRaw,
    RunBare,
    ShBrig,
    ShExec,
    ShSame,
    ShLogin,
    StopBrig,
    StopRaw,
    RmBrig,
    RmRaw,
    LsBrigOne,
    LsRawOne,
    LsBrigMany,
    LsRawMany,
    StatusOne,
    StatusRawOne,
    StatusMany,
    StatusRawMany,
    /// The wall time of `CONCURRENT` ensures of one running sandbox at once.
    EnsureConc,
    /// The same calls as one such ensure, `CONCURRENT` times at once.
    EnsureConcRaw,
    /// The same calls as one such ensure, `CONCURRENT` times in a row.
    EnsureSerialRaw,
    /// Each request's own time within `EnsureConc`.
    EnsureEach,
    /// Each sequence's own time within `EnsureConcRaw`.
    EnsureEachRaw,
    /// One ensure of the running sandbox, alone.
    EnsureOne,
    EnsureOneRawSame,
}

/// The lanes of each lifecycle step, measured one after the other within a repetition.
const STEPS: [&[Lane]; 4] = [
    &[Lane::RunBrig, Lane::RunRaw, Lane::RunBare],
    &[Lane::ShBrig, Lane::ShExec, Lane::ShSame, Lane::ShLogin],
    &[Lane::StopBrig, Lane::StopRaw],
    &[Lane::RmBrig, Lane::RmRaw],
];

/// The lanes in the order repetition `rep` runs them: rotated by one each
/// time, so no lane always goes first (A B, B A, … for two).
fn rotated(lanes: &[Lane], rep: usize) -> Vec<Lane> {
    let mut order = lanes.to_vec();
    order.rotate_left(rep % lanes.len());
    order
}

struct Rep {
    index: usize,
    warmup: bool,
    brig: BrigBox,
    raw: RawBox,
    bare: RawBox,
}

/// What the `ls` rounds saw besides their timings.
struct LsFacts {
    sandboxes: usize,
    containers: usize,
    brig_calls: usize,
}

/// What brigd's log showed for a set of timed requests: the runtime calls
/// it ran, how many of them were listings, and how many boots it began.
#[derive(Default)]
struct Tally {
    requests: usize,
    calls: usize,
    listings: usize,
    boots: usize,
}

impl Tally {
    fn add(&mut self, rt: Rt, log: &str, requests: usize) {
        // A query of the runtime's state: a listing, or the inspect of one
        // sandbox that replaces it for a verb about one sandbox.
        let queries = [format!("{} ps ", rt.bin()), format!("{} inspect ", rt.bin())];
        let calls: Vec<String> = log.lines().filter_map(runtime_call).collect();
        self.requests += requests;
        self.calls += calls.len();
        self.listings += calls.iter().filter(|c| queries.iter().any(|q| c.starts_with(q.as_str()))).count();
        self.boots += log.lines().filter(|l| l.contains(" INFO booting ")).count();
    }

    /// One listing per request and nothing else.
    fn one_listing_each(&self) -> bool {
        self.listings == self.requests && self.calls == self.listings
    }
}

/// What the brigd rounds saw besides their timings.
#[derive(Default)]
struct DaemonFacts {
    /// Per `status` round: sessions in the inventory, containers the
    /// runtime listed, and the log's tally over the timed requests.
    status: Vec<(usize, usize, Tally)>,
    ensure: Tally,
    /// How many listings one ensure of a running sandbox made, untimed.
    ensure_listings: usize,
    calls: Vec<(String, Vec<String>)>,
    flood: Option<Flood>,
}

/// brigd's memory before, during and after a flood of idle connections.
struct Flood {
    connections: usize,
    /// How many of them got brigd's one-line refusal (beyond its cap).
    refused: usize,
    before_kib: u64,
    peak_kib: u64,
    after_kib: u64,
    /// brigd answered a request after the flood.
    answers: bool,
}

/// Warm image verification against a warm `run -d` with it off.
const VERIFY_TARGET: f64 = 0.10;

/// Image verification's own time (from brig's `--verbose` log), first and
/// warm, and the `run -d` it precedes, with it on and off.
struct VerifyFacts {
    cold_ms: f64,
    warm_ms: Vec<f64>,
    run_verified: Vec<f64>,
    run_off: Vec<f64>,
}

/// brigd's memory with this many idle connections open, and its bound.
const FLOOD_CONNECTIONS: usize = 2000;
const FLOOD_MAX_MIB: u64 = 150;
struct Section {
    present: Present,
    samples: BTreeMap<Lane, Vec<f64>>,
    /// The lifecycle lanes again, with `LS_MANY` other sandboxes present.
    crowded: BTreeMap<Lane, Vec<f64>>,
    brig_calls: Vec<(String, Vec<String>)>,
    ls: Vec<LsFacts>,
    daemon: DaemonFacts,
    verify: VerifyFacts,
}

struct Bench<'a> {
    brig: &'a Path,
    rt: Rt,
    scratch: Scratch,
    samples: BTreeMap<Lane, Vec<f64>>,
    crowded: BTreeMap<Lane, Vec<f64>>,
    /// Where lifecycle samples go now: alone, or among `LS_MANY` others.
    crowd: bool,
    brig_calls: Vec<(String, Vec<String>)>,
    ls: Vec<LsFacts>,
    daemon: DaemonFacts,
}

impl<'a> Bench<'a> {
    fn measure(root: &Path, brig: &'a Path, present: Present, reps: usize) -> Result<Section> {
        let rt = present.rt;
        let mut bench = Bench {
            brig,
            rt,
            scratch: Scratch::new(root, rt)?,
            samples: BTreeMap::new(),
            crowded: BTreeMap::new(),
            crowd: false,
            brig_calls: Vec::new(),
            ls: Vec::new(),
            daemon: DaemonFacts::default(),
        };
        eprintln!("==> {}: token {}, scratch {}", rt.lane(), bench.scratch.token, bench.scratch.dir.display());
        // The warm-up repetition is untimed: it fills caches on both sides and
        // records, with --verbose, every runtime call brig makes.
        bench.lifecycle(&bench.rep(0, true))?;
        for i in 0..reps {
            eprintln!("==> {}: run -d, sh, stop, rm: repetition {}/{reps}", rt.lane(), i + 1);
            bench.lifecycle(&bench.rep(i, false))?;
        }
        bench.ls_rounds(reps)?;
        bench.daemon_rounds(reps)?;
        let verify = bench.verify_rounds(root, reps)?;
        bench.scratch.clean()?;
        Ok(Section {
            present,
            samples: bench.samples,
            crowded: bench.crowded,
            brig_calls: bench.brig_calls,
            ls: bench.ls,
            daemon: bench.daemon,
            verify,
        })
    }

    /// Against a registry of the bench's own, filled by the lab's fixture
    /// (the lab image pushed by this runtime and signed by `cosign` with a
    /// key): `run -d` of the signed image under `require`, then `run -d` of
    /// the same digest with verification off, alternating, each removed
    /// again. The first round, the image not yet pulled, gives the cold
    /// verification and is not counted in the rest.
    fn verify_rounds(&mut self, root: &Path, reps: usize) -> Result<VerifyFacts> {
        let name = match self.rt {
            Rt::Nerdctl => lab::scenario::RuntimeName::Nerdctl,
            Rt::Podman => lab::scenario::RuntimeName::Podman,
            Rt::PodmanRootless => lab::scenario::RuntimeName::PodmanRootless,
        };
        let registry = lab::registry::Registry::start(&self.scratch.dir, name, Some(self.rt.bin().into()), None)?;
        let fx = self.scratch.dir.join("fx");
        let mut fixture = Command::new("sh");
        fixture.arg(root.join("lab/fixtures/verify.sh")).arg(&registry.address).arg(&fx);
        self.scratch.apply(&mut fixture);
        checked(&mut fixture, "lab/fixtures/verify.sh")?;
        let digest = std::fs::read_to_string(fx.join("signed.digest"))?.trim().to_owned();
        let prefix = format!("{}/brig-sh/", registry.address);
        let signed = format!("{prefix}guest:signed");
        let pinned = format!("{prefix}guest@{digest}");
        let key = fx.join("ours.pub").display().to_string();
        let b = BrigBox::new(&self.scratch.token, "v");
        let mut facts =
            VerifyFacts { cold_ms: 0.0, warm_ms: Vec::new(), run_verified: Vec::new(), run_off: Vec::new() };
        for i in 0..=reps {
            eprintln!("==> {}: run -d verified and off: round {}/{}", self.rt.lane(), i + 1, reps + 1);
            let on = [
                ("BRIG_VERIFY", "require"),
                ("BRIG_VERIFY_REGISTRY", prefix.as_str()),
                ("BRIG_VERIFY_KEY", key.as_str()),
                ("BRIG_IMAGE", signed.as_str()),
            ];
            let off = [("BRIG_VERIFY", "off"), ("BRIG_IMAGE", pinned.as_str())];
            let mut order = [&on[..], &off[..]];
            if i % 2 == 1 {
                order.reverse();
            }
            for env in order {
                let mut cmd = self.brig_command(&["--verbose", "run", "-d", &b.reference]);
                cmd.envs(env.iter().copied());
                let start = Instant::now();
                let out = checked(&mut cmd, "brig --verbose run -d")?;
                let ms = start.elapsed().as_secs_f64() * 1000.0;
                checked(&mut self.brig_command(&["rm", &b.reference]), "brig rm")?;
                if env.len() == on.len() {
                    let took = verification_ms(&String::from_utf8_lossy(&out.stderr))
                        .context("brig --verbose did not say how long verification took")?;
                    match i {
                        0 => facts.cold_ms = took,
                        _ => {
                            facts.warm_ms.push(took);
                            facts.run_verified.push(ms);
                        }
                    }
                } else if i > 0 {
                    facts.run_off.push(ms);
                }
            }
        }
        Ok(facts)
    }

    fn rep(&self, index: usize, warmup: bool) -> Rep {
        let tag = if warmup { "w".to_owned() } else { index.to_string() };
        let (dir, token) = (&self.scratch.dir, &self.scratch.token);
        Rep {
            index,
            warmup,
            brig: BrigBox::new(token, &tag),
            raw: RawBox::new(dir, token, "raw", &tag),
            bare: RawBox::new(dir, token, "bare", &tag),
        }
    }

    fn lifecycle(&mut self, rep: &Rep) -> Result<()> {
        for (step, lanes) in STEPS.iter().enumerate() {
            for lane in rotated(lanes, rep.index) {
                let ms = self.lane(lane, rep)?;
                if !rep.warmup {
                    let samples = if self.crowd { &mut self.crowded } else { &mut self.samples };
                    samples.entry(lane).or_default().push(ms);
                }
            }
            if step == 0 {
                // The bare container is context for `run -d` only; it would
                // otherwise sit beside the others for the rest of the repetition.
                self.quiet(&[call(self.rt, &["rm", "-f", &rep.bare.name])])?;
            }
        }
        Ok(())
    }

    fn lane(&mut self, lane: Lane, rep: &Rep) -> Result<f64> {
        let (rt, b) = (self.rt, &rep.brig);
        match lane {
            Lane::RunBrig => self.brig_lane(rep, "run -d", &["run", "-d", &b.reference], b),
            Lane::ShBrig => self.brig_lane(rep, "sh <ref> true", &["sh", &b.reference, "true"], b),
            Lane::StopBrig => self.brig_lane(rep, "stop", &["stop", &b.reference], b),
            Lane::RmBrig => self.brig_lane(rep, "rm", &["rm", &b.reference], b),
            Lane::RunRaw => {
                std::fs::create_dir_all(&rep.raw.home)?;
                self.timed(&raw_run(rt, &rep.raw))
            }
            Lane::RunBare => {
                std::fs::create_dir_all(&rep.bare.home)?;
                self.timed(&raw_bare_run(rt, &rep.bare))
            }
            Lane::ShExec => self.timed(&raw_exec(rt, &rep.raw)),
            Lane::ShSame => self.timed(&raw_sh_same(rt, &rep.raw)),
            Lane::ShLogin => self.timed(&[raw_login_exec(rt, &rep.raw)]),
            Lane::StopRaw => self.timed(&raw_stop(rt, &rep.raw)),
            Lane::RmRaw => self.timed(&raw_rm(rt, &rep.raw)),
            Lane::LsBrigOne | Lane::LsBrigMany => self.brig_timed(&["ls"]),
            Lane::LsRawOne | Lane::LsRawMany => self.timed(&raw_ls(rt)),
            other => bail!("{other:?} is measured by the brigd rounds"),
        }
    }

    /// A brig lane: timed, or in the warm-up traced instead.
    fn brig_lane(&mut self, rep: &Rep, op: &str, args: &[&str], b: &BrigBox) -> Result<f64> {
        if rep.warmup {
            self.brig_traced(op, args, Some(b))?;
            Ok(0.0)
        } else {
            self.brig_timed(args)
        }
    }

    /// One sandbox for `ls`, then the rounds with one and with `LS_MANY`
    /// sandboxes; brig and the raw listing alternate as in the lifecycle.
    fn ls_rounds(&mut self, reps: usize) -> Result<()> {
        let boxes: Vec<BrigBox> = (0..LS_MANY).map(|k| BrigBox::new(&self.scratch.token, &format!("ls{k}"))).collect();
        let rounds = [(1, Lane::LsBrigOne, Lane::LsRawOne), (LS_MANY, Lane::LsBrigMany, Lane::LsRawMany)];
        let mut started = 0;
        for (count, brig_lane, raw_lane) in rounds {
            eprintln!("==> {}: ls with {count} sandbox(es)", self.rt.lane());
            for b in &boxes[started..count] {
                self.brig_timed(&["run", "-d", &b.reference])?;
            }
            started = count;
            let op = format!("ls ({count} sandbox{})", if count == 1 { "" } else { "es" });
            let calls = self.brig_traced(&op, &["ls"], None)?;
            self.timed(&raw_ls(self.rt))?;
            let warm = self.rep(0, true);
            for i in 0..reps {
                for lane in rotated(&[brig_lane, raw_lane], i) {
                    let ms = self.lane(lane, &warm)?;
                    self.samples.entry(lane).or_default().push(ms);
                }
            }
            let names = self.output(&call(self.rt, &["ps", "-a", "--format", "{{.Names}}"]))?;
            let containers = String::from_utf8_lossy(&names.stdout).lines().filter(|l| !l.is_empty()).count();
            self.ls.push(LsFacts { sandboxes: count, containers, brig_calls: calls });
        }
        // A verb about one sandbox must cost the same however many others
        // exist: the lifecycle again, among the `LS_MANY` just made.
        self.crowd = true;
        for i in 0..reps {
            eprintln!(
                "==> {}: run -d, sh, stop, rm among {LS_MANY} others: repetition {}/{reps}",
                self.rt.lane(),
                i + 1
            );
            let mut rep = self.rep(i, false);
            rep.brig = BrigBox::new(&self.scratch.token, &format!("c{i}"));
            rep.raw = RawBox::new(&self.scratch.dir, &self.scratch.token, "rawc", &i.to_string());
            rep.bare = RawBox::new(&self.scratch.dir, &self.scratch.token, "barec", &i.to_string());
            self.lifecycle(&rep)?;
        }
        self.crowd = false;
        eprintln!("==> {}: removing the ls sandboxes", self.rt.lane());
        for b in &boxes {
            self.brig_timed(&["rm", "-q", &b.reference])?;
        }
        Ok(())
    }

    /// brigd from the release build, on a socket in the scratch directory:
    /// `status` with one and with `LS_MANY` sessions in its inventory, then
    /// `CONCURRENT` clients ensuring one running sandbox at once; each beside
    /// the raw runtime calls it makes, interleaved as in the lifecycle.
    fn daemon_rounds(&mut self, reps: usize) -> Result<()> {
        let rt = self.rt;
        let mut daemon = Daemon::start(&self.brig.with_file_name("brigd"), &self.scratch)?;
        let boxes: Vec<BrigBox> = (0..LS_MANY).map(|k| BrigBox::new(&self.scratch.token, &format!("d{k}"))).collect();
        let rounds = [(1, Lane::StatusOne, Lane::StatusRawOne), (LS_MANY, Lane::StatusMany, Lane::StatusRawMany)];
        let mut started = 0;
        for (count, daemon_lane, raw_lane) in rounds {
            eprintln!("==> {}: brigd status with {count} session{}", rt.lane(), plural(count));
            for b in &boxes[started..count] {
                request(&daemon.socket, &ensure_line(b))?;
            }
            started = count;
            // Untimed: brigd's calls for the report, and a warm-up of both sides.
            let mark = daemon.mark()?;
            status_timed(&daemon.socket, count)?;
            let op = format!("status ({count} session{})", plural(count));
            self.daemon_traced(&daemon, mark, op, None)?;
            self.timed(&raw_ls(rt))?;
            let mark = daemon.mark()?;
            for i in 0..reps {
                for lane in rotated(&[daemon_lane, raw_lane], i) {
                    let ms = if lane == daemon_lane {
                        status_timed(&daemon.socket, count)?
                    } else {
                        self.timed(&raw_ls(rt))?
                    };
                    self.samples.entry(lane).or_default().push(ms);
                }
            }
            let mut tally = Tally::default();
            tally.add(rt, &daemon.since(mark)?, reps);
            let names = self.output(&call(rt, &["ps", "-a", "--format", "{{.Names}}"]))?;
            let containers = String::from_utf8_lossy(&names.stdout).lines().filter(|l| !l.is_empty()).count();
            self.daemon.status.push((count, containers, tally));
        }
        self.ensure_rounds(&daemon, &boxes[0], reps)?;
        eprintln!("==> {}: brigd with {FLOOD_CONNECTIONS} idle connections", rt.lane());
        self.daemon.flood = Some(flood(&daemon)?);
        eprintln!("==> {}: stopping brigd with SIGTERM", rt.lane());
        daemon.stop()?;
        eprintln!("==> {}: removing brigd's sandboxes", rt.lane());
        for b in &boxes {
            self.brig_timed(&["rm", "-q", &b.reference])?;
        }
        Ok(())
    }

    /// `CONCURRENT` ensures of one running sandbox at once, against the same
    /// runtime calls made by hand at once and in a row; then one ensure alone.
    fn ensure_rounds(&mut self, daemon: &Daemon, b: &BrigBox, reps: usize) -> Result<()> {
        let rt = self.rt;
        let line = ensure_line(b);
        let ensure_one = || -> Result<()> {
            let v = request(&daemon.socket, &line)?;
            ensure!(v["sessions"][0]["running"] == true, "brigd ensured {} but reports it not running", b.name);
            Ok(())
        };
        // Untimed: brigd's calls for the report, and a warm-up of every lane.
        let mark = daemon.mark()?;
        ensure_one()?;
        let mut warm = Tally::default();
        warm.add(rt, &daemon.since(mark)?, 1);
        ensure!(warm.boots == 0, "brigd booted {} again although it was running", b.name);
        ensure!(warm.listings >= 1, "brigd's log shows no listing for an ensure; is BRIGD_LOG=brig=debug honoured?");
        self.daemon.ensure_listings = warm.listings;
        self.daemon_traced(daemon, mark, "ensure of a running sandbox".to_owned(), Some(b))?;
        let same = raw_ensure_same(rt, warm.listings, &b.name);
        let raw_same = || self.timed(&same).map(drop);
        concurrently(CONCURRENT, &ensure_one)?;
        concurrently(CONCURRENT, &raw_same)?;

        let (mut samples, mut tally) = (BTreeMap::<Lane, Vec<f64>>::new(), Tally::default());
        let mut push = |lane: Lane, ms: f64| samples.entry(lane).or_default().push(ms);
        for i in 0..reps {
            eprintln!("==> {}: brigd ensure, {CONCURRENT} at once: repetition {}/{reps}", rt.lane(), i + 1);
            for lane in rotated(&[Lane::EnsureConc, Lane::EnsureConcRaw, Lane::EnsureSerialRaw], i) {
                match lane {
                    Lane::EnsureConc => {
                        let mark = daemon.mark()?;
                        let (wall, each) = concurrently(CONCURRENT, &ensure_one)?;
                        tally.add(rt, &daemon.since(mark)?, CONCURRENT);
                        push(lane, wall);
                        each.into_iter().for_each(|ms| push(Lane::EnsureEach, ms));
                    }
                    Lane::EnsureConcRaw => {
                        let (wall, each) = concurrently(CONCURRENT, &raw_same)?;
                        push(lane, wall);
                        each.into_iter().for_each(|ms| push(Lane::EnsureEachRaw, ms));
                    }
                    _ => {
                        let start = Instant::now();
                        for _ in 0..CONCURRENT {
                            raw_same()?;
                        }
                        push(lane, start.elapsed().as_secs_f64() * 1000.0);
                    }
                }
            }
            for lane in rotated(&[Lane::EnsureOne, Lane::EnsureOneRawSame], i) {
                let ms = if lane == Lane::EnsureOne {
                    let start = Instant::now();
                    ensure_one()?;
                    start.elapsed().as_secs_f64() * 1000.0
                } else {
                    self.timed(&same)?
                };
                push(lane, ms);
            }
        }
        for (lane, v) in samples {
            self.samples.entry(lane).or_default().extend(v);
        }
        self.daemon.ensure = tally;
        Ok(())
    }

    /// Records the runtime calls brigd logged since `mark`, with this run's
    /// names replaced by placeholders.
    fn daemon_traced(&mut self, daemon: &Daemon, mark: usize, op: String, b: Option<&BrigBox>) -> Result<()> {
        let log = daemon.since(mark)?;
        let scratch = self.scratch.dir.display().to_string();
        let mut calls: Vec<String> = Vec::new();
        for line in log.lines().filter_map(runtime_call) {
            let line = line.replace(&scratch, "<scratch>");
            let line = match b {
                Some(b) => line.replace(&b.name, "<sandbox>").replace(&b.label, "<label>"),
                None => line,
            };
            calls.push(line);
        }
        self.daemon.calls.push((op, calls));
        Ok(())
    }

    fn brig_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.brig);
        cmd.args(args);
        self.scratch.apply(&mut cmd);
        // brig reads the commit identity where it runs: in the scratch
        // directory, the report names no path of this checkout.
        cmd.current_dir(&self.scratch.dir);
        cmd
    }

    fn brig_timed(&self, args: &[&str]) -> Result<f64> {
        let mut cmd = self.brig_command(args);
        let start = Instant::now();
        checked(&mut cmd, &format!("brig {}", args.join(" ")))?;
        Ok(start.elapsed().as_secs_f64() * 1000.0)
    }

    /// Runs brig with `--verbose` and records the runtime commands it logged,
    /// with this run's names replaced by placeholders; returns how many.
    fn brig_traced(&mut self, op: &str, args: &[&str], b: Option<&BrigBox>) -> Result<usize> {
        let mut cmd = self.brig_command(&[&["--verbose"], args].concat());
        let out = checked(&mut cmd, &format!("brig --verbose {}", args.join(" ")))?;
        let scratch = self.scratch.dir.display().to_string();
        let calls: Vec<String> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter_map(|line| runtime_call(&strip_ansi(line)))
            .map(|line| {
                let line = line.replace(&scratch, "<scratch>");
                match b {
                    Some(b) => line.replace(&b.name, "<sandbox>").replace(&b.label, "<label>"),
                    None => line,
                }
            })
            .collect();
        let count = calls.len();
        self.brig_calls.push((op.to_owned(), calls));
        Ok(count)
    }

    fn command(&self, c: &Call) -> Command {
        let mut cmd = Command::new(&c.argv[0]);
        cmd.args(&c.argv[1..]);
        self.scratch.apply(&mut cmd);
        cmd
    }

    fn output(&self, c: &Call) -> Result<Output> {
        checked(&mut self.command(c), &display(c))
    }

    /// The wall time of the calls run one after the other, in milliseconds.
    fn timed(&self, calls: &[Call]) -> Result<f64> {
        let mut cmds: Vec<Command> = calls.iter().map(|c| self.command(c)).collect();
        let start = Instant::now();
        for (cmd, c) in cmds.iter_mut().zip(calls) {
            checked(cmd, &display(c))?;
        }
        Ok(start.elapsed().as_secs_f64() * 1000.0)
    }

    fn quiet(&self, calls: &[Call]) -> Result<()> {
        self.timed(calls).map(drop)
    }
}

/// brigd as the bench runs it: the release build, on a socket in the scratch
/// directory, with the scratch environment and its debug log (every runtime
/// command it runs) in a file there.
struct Daemon {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
    stopped: bool,
}

impl Daemon {
    fn start(brigd: &Path, scratch: &Scratch) -> Result<Self> {
        let socket = scratch.dir.join("brigd.sock");
        let len = socket.as_os_str().len();
        ensure!(
            len <= SOCKET_MAX,
            "the socket path {} is {len} bytes, over the {SOCKET_MAX} a unix socket takes; set TMPDIR shorter",
            socket.display()
        );
        let log = scratch.dir.join("brigd.log");
        let stderr = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(brigd);
        cmd.arg("--socket").arg(&socket).current_dir(&scratch.dir);
        scratch.apply(&mut cmd);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("BRIGD_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("BRIGD_LOG", "brig=debug");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("cannot run {}", brigd.display()))?;
        eprintln!("==> {}: brigd (pid {}) on {}", scratch.rt.lane(), child.id(), socket.display());
        let mut daemon = Daemon { child, socket, log, stopped: false };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = daemon.child.try_wait()? {
                daemon.stopped = true;
                bail!("brigd exited with {status} before answering: {}", daemon.since(0)?.trim());
            }
            match request(&daemon.socket, r#"{"v":1,"op":"version"}"#) {
                Ok(_) => return Ok(daemon),
                Err(err) if Instant::now() > deadline => return Err(err.context("brigd did not answer within 10 s")),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// The length of the log so far, from which `since` reads.
    fn mark(&self) -> Result<usize> {
        Ok(self.since(0)?.len())
    }

    fn since(&self, mark: usize) -> Result<String> {
        let text = std::fs::read(&self.log).with_context(|| format!("reading {}", self.log.display()))?;
        Ok(String::from_utf8_lossy(text.get(mark..).unwrap_or_default()).into_owned())
    }

    /// SIGTERM, then a wait for a clean exit (brigd gives requests in flight
    /// up to a minute); killed if it does not come.
    fn stop(&mut self) -> Result<()> {
        self.stopped = true;
        let pid = self.child.id().to_string();
        checked(Command::new("kill").args(["-TERM", &pid]), &format!("kill -TERM {pid}"))?;
        let deadline = Instant::now() + Duration::from_secs(70);
        loop {
            if let Some(status) = self.child.try_wait()? {
                ensure!(status.success(), "brigd exited with {status} on SIGTERM");
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                bail!("brigd did not exit within 70 s of SIGTERM and was killed");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if !self.stopped
            && let Err(err) = self.stop()
        {
            eprintln!("bench: stopping brigd: {err:#}");
        }
    }
}

/// Open `FLOOD_CONNECTIONS` connections that send nothing, read brigd's
/// memory while they are open, close them, and read it again once brigd
/// has let them go.
/// `verification took N ms` from brig's `--verbose` log.
fn verification_ms(log: &str) -> Option<f64> {
    log.lines().find_map(|line| {
        let rest = strip_ansi(line);
        let (_, after) = rest.split_once("verification took ")?;
        after.split_whitespace().next()?.parse().ok()
    })
}

fn flood(daemon: &Daemon) -> Result<Flood> {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    // Room for the connections in this process's descriptor table.
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let _ = rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum },
    );
    let pid = daemon.child.id();
    let before_kib = rss_kib(pid, "VmRSS")?;
    let mut open = Vec::with_capacity(FLOOD_CONNECTIONS);
    for _ in 0..FLOOD_CONNECTIONS {
        open.push(UnixStream::connect(&daemon.socket).context("connecting to brigd")?);
    }
    std::thread::sleep(Duration::from_secs(2));
    let mut refused = 0;
    for stream in &mut open {
        stream.set_read_timeout(Some(Duration::from_millis(1)))?;
        let mut buf = [0u8; 512];
        if matches!(stream.read(&mut buf), Ok(n) if n > 0 && String::from_utf8_lossy(&buf[..n]).contains("\"ok\":false"))
        {
            refused += 1;
        }
    }
    let peak_kib = rss_kib(pid, "VmHWM")?;
    drop(open);
    std::thread::sleep(Duration::from_secs(2));
    let after_kib = rss_kib(pid, "VmRSS")?;
    let answers = request(&daemon.socket, r#"{"v":1,"op":"version"}"#).is_ok();
    Ok(Flood { connections: FLOOD_CONNECTIONS, refused, before_kib, peak_kib, after_kib, answers })
}

/// A `/proc/<pid>/status` memory line, in KiB.
fn rss_kib(pid: u32, key: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("reading brigd's status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.trim().strip_suffix(" kB")?.trim().parse().ok())
        .with_context(|| format!("no {key} in brigd's status"))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn ensure_line(b: &BrigBox) -> String {
    format!(r#"{{"v":1,"op":"ensure","agent":"lab-agent","name":"{}"}}"#, b.label)
}

/// One request on a connection of its own, as a client tool makes it: the
/// response, an error unless it is `ok`.
fn request(socket: &Path, line: &str) -> Result<serde_json::Value> {
    let mut stream = UnixStream::connect(socket).with_context(|| format!("connecting to {}", socket.display()))?;
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    stream.write_all(format!("{line}\n").as_bytes())?;
    let mut response = String::new();
    BufReader::new(stream).read_line(&mut response)?;
    let value: serde_json::Value =
        serde_json::from_str(&response).with_context(|| format!("brigd answered {line} with {response:?}"))?;
    ensure!(value["ok"] == true, "brigd refused {line}: {}", response.trim());
    Ok(value)
}

/// A timed `status`, checked to report `sessions` sessions, all running.
fn status_timed(socket: &Path, sessions: usize) -> Result<f64> {
    let start = Instant::now();
    let value = request(socket, STATUS)?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let listed = value["sessions"].as_array().map(Vec::as_slice).unwrap_or_default();
    let running = listed.iter().filter(|s| s["running"] == true).count();
    ensure!(
        listed.len() == sessions && running == sessions,
        "brigd status reported {running} running of {} sessions, not {sessions}",
        listed.len()
    );
    Ok(ms)
}

/// Runs `work` on `n` threads released together: the wall time from the
/// first start to the last end, and each thread's own time, in ms.
fn concurrently<W: Fn() -> Result<()> + Sync>(n: usize, work: &W) -> Result<(f64, Vec<f64>)> {
    let barrier = Barrier::new(n);
    let spans: Vec<Result<(Instant, Instant)>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    work()?;
                    Ok((start, Instant::now()))
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap_or_else(|_| Err(anyhow!("a client thread panicked")))).collect()
    });
    let spans = spans.into_iter().collect::<Result<Vec<_>>>()?;
    let first = spans.iter().map(|s| s.0).min().context("no client ran")?;
    let last = spans.iter().map(|s| s.1).max().context("no client ran")?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Ok((ms(last - first), spans.iter().map(|(start, end)| ms(*end - *start)).collect()))
}

/// Runs a command to completion with no stdin, failing with its stderr.
fn checked(cmd: &mut Command, shown: &str) -> Result<Output> {
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {shown}"))?;
    if !out.status.success() {
        bail!("{shown}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out)
}

/// The runtime command in one line of brig's debug log, if the line holds one.
fn runtime_call(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("DEBUG")?;
    let rest = rest.trim_start();
    if let Some(argv) = rest.strip_prefix("running ") {
        Some(argv.to_owned())
    } else {
        rest.strip_prefix("handing over to ").map(|argv| format!("{argv}    (exec, replacing brig)"))
    }
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // A CSI sequence ends at its first letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn display(c: &Call) -> String {
    c.argv.iter().map(|a| shell_word(a)).collect::<Vec<_>>().join(" ")
}

/// A word as a shell would need it; the report's `<placeholders>` stay bare.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+<>".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The scratch `HOME`, state and profile directories of one runtime's run,
/// and the token in every name the run gives the runtime.
struct Scratch {
    rt: Rt,
    token: String,
    dir: PathBuf,
    cleaned: bool,
}

impl Scratch {
    fn new(root: &Path, rt: Rt) -> Result<Self> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
        let token = format!("{:06x}", (nanos ^ std::process::id().rotate_left(16)) & 0xff_ffff);
        let dir = std::env::temp_dir().join(format!("brig-bench-{token}"));
        for sub in ["home", "state", "profiles", "homes"] {
            std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::copy(root.join("lab/profiles/lab-agent.yaml"), dir.join("profiles/lab-agent.yaml"))
            .context("copying the lab-agent profile")?;
        std::fs::write(dir.join(GUEST_ENV), "HOME=/root\nLAB_LITERAL=1\n").context("writing the guest's env file")?;
        Ok(Scratch { rt, token, dir, cleaned: false })
    }

    /// The environment of every command the bench runs, brig's and the raw
    /// ones alike, so both sides see the same `HOME` and runtime settings.
    fn apply(&self, cmd: &mut Command) {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("BRIG_") {
                cmd.env_remove(name);
            }
        }
        let vars: [(&str, OsString); 6] = [
            ("HOME", self.dir.join("home").into()),
            ("BRIG_STATE_DIR", self.dir.join("state").into()),
            ("BRIG_PROFILE_DIR", self.dir.join("profiles").into()),
            ("BRIG_ALLOW_CONTAINER_ISOLATION", "1".into()),
            ("BRIG_CONTAINERD_RUNTIME", SHIM.into()),
            ("BRIG_RUNTIME", self.rt.bin().into()),
        ];
        cmd.envs(vars);
        if self.rt == Rt::PodmanRootless
            && let Some((_, _, home)) = lab::runtime::rootless_user()
        {
            // The scratch HOME holds no podman configuration: the user's
            // store is found through the file provisioning wrote.
            cmd.env("CONTAINERS_STORAGE_CONF", lab::runtime::lane_storage_conf(&home));
        }
    }

    /// Removes every container and network whose name holds the token, checks
    /// that none is left, and deletes the scratch directories.
    fn clean(&mut self) -> Result<()> {
        self.cleaned = true;
        let rt = self.rt.bin();
        let containers = self.named(&["ps", "-a", "--format", "{{.Names}}"])?;
        if !containers.is_empty() {
            remove(Command::new(rt).args(["rm", "-f"]).args(&containers))?;
        }
        let networks = self.named(&["network", "ls", "--format", "{{.Name}}"])?;
        if !networks.is_empty() {
            remove(Command::new(rt).args(["network", "rm"]).args(&networks))?;
        }
        let tables = || -> Vec<String> { self.rt.tables().into_iter().filter(|t| t.contains(&self.token)).collect() };
        let nft = self.rt.nft();
        for table in tables() {
            let _ = Command::new(&nft[0]).args(&nft[1..]).args(["delete", "table", "inet", &table]).output();
        }
        let left: Vec<String> = [
            self.named(&["ps", "-a", "--format", "{{.Names}}"])?,
            self.named(&["network", "ls", "--format", "{{.Name}}"])?,
            tables(),
        ]
        .concat();
        ensure!(left.is_empty(), "{rt} still holds {} after the bench", left.join(", "));
        std::fs::remove_dir_all(&self.dir).with_context(|| format!("removing {}", self.dir.display()))?;
        eprintln!(
            "==> {rt}: nothing named with token {} is left (checked with {rt} ps -a, {rt} network ls and nft list tables)",
            self.token
        );
        Ok(())
    }

    fn named(&self, args: &[&str]) -> Result<Vec<String>> {
        let shown = format!("{} {}", self.rt.bin(), args.join(" "));
        let out = checked(Command::new(self.rt.bin()).args(args), &shown)?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&self.token))
            .map(str::to_owned)
            .collect())
    }
}

fn remove(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    checked(cmd, &shown).map(drop)
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.cleaned
            && let Err(err) = self.clean()
        {
            eprintln!("bench: cleaning up after token {}: {err:#}", self.token);
        }
    }
}

/// The machine the numbers come from.
struct Host {
    date: String,
    kernel: String,
    cpus: usize,
    cpu_model: String,
    load: String,
    brig: String,
}

impl Host {
    fn probe(brig: &Path) -> Result<Self> {
        let first_line = |cmd: &mut Command| -> Result<String> {
            let out = checked(cmd, &format!("{cmd:?}"))?;
            Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().trim().to_owned())
        };
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        Ok(Host {
            date: first_line(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))?,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")?.trim().to_owned(),
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
            load: loadavg(),
            brig: first_line(Command::new(brig).arg("version"))?,
        })
    }
}

/// The 1, 5 and 15 minute load averages: other work on the machine is noise
/// that interleaving spreads over both sides but cannot remove.
fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// A runtime that answers, and the versions of its stack.
struct Present {
    rt: Rt,
    versions: String,
}

impl Present {
    fn probe(rt: Rt) -> Result<Self> {
        let first_line = |program: &str, args: &[&str]| -> Result<String> {
            let out = checked(Command::new(program).args(args), &format!("{program} {}", args.join(" ")))?;
            Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().trim().to_owned())
        };
        let own = first_line(rt.bin(), &["--version"])?;
        let versions = match rt {
            Rt::Nerdctl => {
                // `nerdctl info` fails when containerd is not running.
                first_line("nerdctl", &["info", "--format", "{{.ServerVersion}}"])?;
                let containerd = first_line("containerd", &["--version"])?;
                let containerd = containerd.split_whitespace().nth(2).unwrap_or(&containerd).to_owned();
                let runc = first_line("runc", &["--version"])?;
                format!("{own}, containerd {containerd}, shim {SHIM} with {runc}")
            }
            Rt::Podman | Rt::PodmanRootless => {
                let oci = first_line("podman", &["info", "--format", "{{.Host.OCIRuntime.Version}}"])?;
                format!("{own}, OCI runtime {oci}")
            }
        };
        Ok(Present { rt, versions })
    }
}

fn check_image(rt: Rt) -> Result<()> {
    checked(Command::new(rt.bin()).args(["image", "inspect", IMAGE]), &format!("{} image inspect {IMAGE}", rt.bin()))
        .with_context(|| format!("{IMAGE} is not loaded into {}; run `cargo xtask images`", rt.bin()))
        .map(drop)
}

fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// The nearest-rank 90th percentile.
fn p90(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (v.len() * 9).div_ceil(10).max(1);
    v[rank - 1]
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

fn render(host: &Host, reps: usize, sections: &[String], absent: &[String]) -> String {
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "- date: {}", host.date);
    let _ = writeln!(w, "- host: Linux {}, {} CPUs ({})", host.kernel, host.cpus, host.cpu_model);
    let _ = writeln!(w, "- load average (1, 5, 15 min): {} at the start, {} at the end", host.load, loadavg());
    let _ = writeln!(w, "- brig: `{}`, built with `cargo build --release -p brig`", host.brig);
    let _ = writeln!(w, "- isolation: `container` (runc; no microVM lane on this host)");
    let _ = writeln!(w, "- method: {reps} repetitions after one untimed warm-up, brig and raw lanes interleaved");
    let _ = writeln!(w, "  with the order rotated each repetition; times in ms (median, nearest-rank p90)");
    for line in absent {
        let _ = writeln!(w, "- not measured: {line}");
    }
    for s in sections {
        out.push_str(s);
    }
    out
}

fn render_section(s: &Section) -> String {
    let mut out = String::new();
    let w = &mut out;
    let rt = s.present.rt;
    let lane = |l: Lane| s.samples.get(&l).map(Vec::as_slice).unwrap_or_default();
    let sum = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x + y).collect::<Vec<f64>>();
    let stop_rm_brig = sum(lane(Lane::StopBrig), lane(Lane::RmBrig));
    let stop_rm_raw = sum(lane(Lane::StopRaw), lane(Lane::RmRaw));
    let crowded = |l: Lane| s.crowded.get(&l).map(Vec::as_slice).unwrap_or_default();
    let crowded_stop_rm_brig = sum(crowded(Lane::StopBrig), crowded(Lane::RmBrig));
    let crowded_stop_rm_raw = sum(crowded(Lane::StopRaw), crowded(Lane::RmRaw));
    let ratio = |a: &[f64], b: &[f64]| median(a) / median(b);

    let _ = writeln!(w, "\n### {}\n\n{}\n", rt.lane(), s.present.versions);
    let _ = writeln!(w, "| comparison (A / B) | A median | A p90 | B median | B p90 | A/B |");
    let _ = writeln!(w, "|---|--:|--:|--:|--:|--:|");
    let each = format!("{CONCURRENT} `ensure` at once, each request");
    let rows: Vec<(String, &[f64], &[f64])> = vec![
        ("`run -d`: brig / raw network + firewall + run + exec `true`", lane(Lane::RunBrig), lane(Lane::RunRaw)),
        ("`run -d`: brig / raw bare `run -d --network none`", lane(Lane::RunBrig), lane(Lane::RunBare)),
        ("`sh <ref> true`: brig / raw `exec <name> true`", lane(Lane::ShBrig), lane(Lane::ShExec)),
        ("`sh <ref> true`: brig / raw same calls as brig", lane(Lane::ShBrig), lane(Lane::ShSame)),
        ("raw `exec … bash -lc` (brig's exec alone) / raw `exec true`", lane(Lane::ShLogin), lane(Lane::ShExec)),
        ("`stop`: brig / raw `stop`", lane(Lane::StopBrig), lane(Lane::StopRaw)),
        ("`rm`: brig / raw `rm -f` + `network rm` + `nft delete table`", lane(Lane::RmBrig), lane(Lane::RmRaw)),
        ("`stop` + `rm`: brig / raw", &stop_rm_brig, &stop_rm_raw),
        ("`ls`, 1 sandbox: brig / raw `ps -a`", lane(Lane::LsBrigOne), lane(Lane::LsRawOne)),
        ("`ls`, 25 sandboxes: brig / raw `ps -a`", lane(Lane::LsBrigMany), lane(Lane::LsRawMany)),
        ("among 25 others, `run -d`: brig / raw", crowded(Lane::RunBrig), crowded(Lane::RunRaw)),
        ("among 25 others, `sh <ref> true`: brig / raw `exec true`", crowded(Lane::ShBrig), crowded(Lane::ShExec)),
        ("among 25 others, `stop` + `rm`: brig / raw", &crowded_stop_rm_brig, &crowded_stop_rm_raw),
    ]
    .into_iter()
    .map(|(what, a, b)| (what.to_owned(), a, b))
    .chain([
        ("brigd `status`, 1 session / raw `ps -a`".to_owned(), lane(Lane::StatusOne), lane(Lane::StatusRawOne)),
        (
            format!("brigd `status`, {LS_MANY} sessions / raw `ps -a`"),
            lane(Lane::StatusMany),
            lane(Lane::StatusRawMany),
        ),
        (
            format!("{CONCURRENT} `ensure` at once, wall: brigd / raw same calls, {CONCURRENT} at once"),
            lane(Lane::EnsureConc),
            lane(Lane::EnsureConcRaw),
        ),
        (
            format!("{CONCURRENT} `ensure` at once, wall: brigd / raw same calls, {CONCURRENT} in a row"),
            lane(Lane::EnsureConc),
            lane(Lane::EnsureSerialRaw),
        ),
        (
            format!("{each}: brigd / raw same calls, each of {CONCURRENT} at once"),
            lane(Lane::EnsureEach),
            lane(Lane::EnsureEachRaw),
        ),
        (format!("{each}: brigd / raw same calls alone"), lane(Lane::EnsureEach), lane(Lane::EnsureOneRawSame)),
        ("one `ensure` alone: brigd / raw same calls".to_owned(), lane(Lane::EnsureOne), lane(Lane::EnsureOneRawSame)),
    ])
    .collect();
    for (what, a, b) in rows {
        let _ = writeln!(
            w,
            "| {what} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}× |",
            median(a),
            p90(a),
            median(b),
            p90(b),
            ratio(a, b)
        );
    }

    let ls_one = ratio(lane(Lane::LsBrigOne), lane(Lane::LsRawOne));
    let ls_many = ratio(lane(Lane::LsBrigMany), lane(Lane::LsRawMany));
    let (one, many) = (&s.ls[0], &s.ls[1]);
    let ls_pass = one.brig_calls == 1 && many.brig_calls == 1 && ls_many <= ls_one * RATIO_TARGET;
    let _ = writeln!(w, "\n| target | measured alone | among {LS_MANY} others | result |\n|---|---|---|---|");
    let targets: [(String, f64, f64, f64); 3] = [
        (
            format!("`run -d` ≤ {RUN_TARGET}× raw network + firewall + run + exec `true`"),
            RUN_TARGET,
            ratio(lane(Lane::RunBrig), lane(Lane::RunRaw)),
            ratio(crowded(Lane::RunBrig), crowded(Lane::RunRaw)),
        ),
        (
            format!("`sh <ref> true` ≤ {SH_TARGET}× raw `exec true`"),
            SH_TARGET,
            ratio(lane(Lane::ShBrig), lane(Lane::ShExec)),
            ratio(crowded(Lane::ShBrig), crowded(Lane::ShExec)),
        ),
        (
            format!("`stop` + `rm` ≤ {STOP_RM_TARGET}× raw `stop` + `rm -f` + `network rm` + `nft delete table`"),
            STOP_RM_TARGET,
            ratio(&stop_rm_brig, &stop_rm_raw),
            ratio(&crowded_stop_rm_brig, &crowded_stop_rm_raw),
        ),
    ];
    for (what, target, alone, among) in targets {
        let _ = writeln!(w, "| {what} | {alone:.2}× | {among:.2}× | {} |", verdict(alone <= target && among <= target));
    }
    let _ = writeln!(
        w,
        "| `ls` independent of the number of sandboxes | {} and {} runtime call(s) at {} and {} sandboxes \
         ({} and {} containers listed) | brig/raw {ls_one:.2}× → {ls_many:.2}× | {} |",
        one.brig_calls,
        many.brig_calls,
        one.sandboxes,
        many.sandboxes,
        one.containers,
        many.containers,
        verdict(ls_pass)
    );
    for (sessions, containers, tally) in &s.daemon.status {
        let (a, b) = if *sessions == 1 {
            (lane(Lane::StatusOne), lane(Lane::StatusRawOne))
        } else {
            (lane(Lane::StatusMany), lane(Lane::StatusRawMany))
        };
        let r = ratio(a, b);
        let _ = writeln!(
            w,
            "| brigd `status` with {sessions} session{} ≤ {DAEMON_TARGET}× raw `ps -a`, one listing per request \
             | {r:.2}×; {} runtime call(s), {} of them listings, for {} requests ({containers} containers listed) | – | {} |",
            plural(*sessions),
            tally.calls,
            tally.listings,
            tally.requests,
            verdict(r <= DAEMON_TARGET && tally.one_listing_each())
        );
    }
    let e = &s.daemon.ensure;
    let _ = writeln!(
        w,
        "| {CONCURRENT} concurrent `ensure` of a running sandbox: no boot, one query of the runtime per request \
         | {} boot(s); {} runtime call(s), {} of them queries (listing or inspect), for {} requests ({:.1} per request) | – | {} |",
        e.boots,
        e.calls,
        e.listings,
        e.requests,
        e.listings as f64 / e.requests.max(1) as f64,
        verdict(e.boots == 0 && e.one_listing_each())
    );

    let v = &s.verify;
    let share = median(&v.warm_ms) / median(&v.run_off);
    let _ = writeln!(
        w,
        "| image verification of a signed image (key, local registry) ≤ {:.0}% of a warm `run -d` \
         | {:.1}%: warm {:.0} ms median ({:.0} p90), cold {:.0} ms; `run -d` {:.0} ms with it, {:.0} ms without | – | {} |",
        VERIFY_TARGET * 100.0,
        share * 100.0,
        median(&v.warm_ms),
        p90(&v.warm_ms),
        v.cold_ms,
        median(&v.run_verified),
        median(&v.run_off),
        verdict(share <= VERIFY_TARGET)
    );

    if let Some(f) = &s.daemon.flood {
        let pass = f.peak_kib < FLOOD_MAX_MIB * 1024 && f.answers;
        let _ = writeln!(
            w,
            "| brigd under {} idle connections: resident memory under {FLOOD_MAX_MIB} MiB, and it answers afterwards \
             | {:.1} MiB before, {:.1} MiB at the peak, {:.1} MiB after; {} connections refused beyond the cap; {} | – | {} |",
            f.connections,
            f.before_kib as f64 / 1024.0,
            f.peak_kib as f64 / 1024.0,
            f.after_kib as f64 / 1024.0,
            f.refused,
            if f.answers { "answers afterwards" } else { "does not answer afterwards" },
            verdict(pass)
        );
    }

    let _ = writeln!(w, "\nWhat each side ran (`<sandbox>` is the sandbox's runtime name; brig's calls as its");
    let _ = writeln!(w, "`--verbose` log shows them, raw ones as the bench runs them):\n\n```text");
    let placeholder = RawBox::placeholder();
    let raw: [(&str, Vec<Call>); 9] = [
        ("run -d", raw_run(rt, &placeholder)),
        ("run -d, bare", raw_bare_run(rt, &placeholder)),
        ("sh <ref> true: raw exec true", raw_exec(rt, &placeholder)),
        ("sh <ref> true: raw same calls", raw_sh_same(rt, &placeholder)),
        ("stop", raw_stop(rt, &placeholder)),
        ("rm", raw_rm(rt, &placeholder)),
        ("ls", raw_ls(rt)),
        ("brigd status", raw_ls(rt)),
        (
            "brigd ensure of a running sandbox: raw same calls",
            raw_ensure_same(rt, s.daemon.ensure_listings, &placeholder.name),
        ),
    ];
    for (op, calls) in &s.brig_calls {
        let verb = if op.starts_with("ls") { "ls".to_owned() } else { op.replace("<ref>", "lab-agent@<label>") };
        let _ = writeln!(w, "brig {verb}  [{op}]");
        for c in calls {
            let _ = writeln!(w, "    {c}");
        }
    }
    for (op, calls) in &s.daemon.calls {
        let verb = op.split_whitespace().next().unwrap_or_default();
        let _ = writeln!(w, "brigd {verb}  [{op}]");
        for c in calls {
            let _ = writeln!(w, "    {c}");
        }
    }
    let _ = writeln!(w);
    for (op, calls) in &raw {
        let _ = writeln!(w, "raw  [{op}]");
        for c in calls {
            let _ = writeln!(w, "    {}", display(c));
        }
    }
    let _ = writeln!(w, "```");
    out
}

/// Replaces the generated block of the performance page with `report`.
fn write_doc(path: &Path, report: &str) -> Result<()> {
    let page = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let (Some(begin), Some(end)) = (page.find(BEGIN), page.find(END)) else {
        bail!("{} has no {BEGIN} … {END} block", path.display());
    };
    ensure!(begin < end, "{} has {END} before {BEGIN}", path.display());
    let updated = format!("{}{BEGIN}\n{report}{}", &page[..begin], &page[end..]);
    std::fs::write(path, updated).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_p90_of_ten() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median(&v), 5.5);
        assert_eq!(p90(&v), 9.0);
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(p90(&[3.0]), 3.0);
    }

    #[test]
    fn lanes_alternate() {
        let two = [Lane::RunBrig, Lane::RunRaw];
        assert_eq!(rotated(&two, 0), two);
        assert_eq!(rotated(&two, 1), [Lane::RunRaw, Lane::RunBrig]);
    }

    #[test]
    fn runtime_calls_come_from_debug_lines() {
        let line = "\u{1b}[34mDEBUG\u{1b}[0m running nerdctl exec x true";
        assert_eq!(runtime_call(&strip_ansi(line)).as_deref(), Some("nerdctl exec x true"));
        assert_eq!(runtime_call(" INFO booting x"), None);
    }

    #[test]
    fn brigd_log_tally() {
        let log = "T  INFO ensure brig-x\nT DEBUG running nerdctl ps -a --format {{json .}}\n\
                   T  INFO booting brig-x from img\nT DEBUG running nerdctl exec brig-x true\n";
        let mut tally = Tally::default();
        tally.add(Rt::Nerdctl, log, 1);
        assert_eq!((tally.requests, tally.calls, tally.listings, tally.boots), (1, 2, 1, 1));
        assert!(!tally.one_listing_each());
        let mut tally = Tally::default();
        tally.add(Rt::Nerdctl, "T DEBUG running nerdctl ps -a --format {{json .}}\n", 1);
        assert!(tally.one_listing_each());
    }
}
