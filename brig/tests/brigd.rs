//! The `brigd` binary as a client sees it, with no runtime installed: the
//! socket and its lock, the protocol's framing and errors, the limits, the
//! shutdown, and `brig doctor`'s brigd line. Everything that needs a real
//! runtime (ensure that boots, liveness, serialization, the peer check from
//! another uid) is a lab scenario.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use serde_json::{Value, json};

mod common;

use common::Scratch;

/// brigd's side of the scratch world: its socket and how to start it.
trait DaemonScratch {
    fn socket(&self) -> PathBuf;
    fn command(&self, binary: &str, args: &[&str], extra: &[(&str, &str)]) -> Command;
    fn run(&self, binary: &str, args: &[&str], extra: &[(&str, &str)]) -> (i32, String, String);
    fn daemon(&self, extra: &[(&str, &str)]) -> Daemon;
}

impl DaemonScratch for Scratch {
    fn socket(&self) -> PathBuf {
        self.path("run/brigd.sock")
    }

    fn command(&self, binary: &str, args: &[&str], extra: &[(&str, &str)]) -> Command {
        let mut command = Command::new(binary);
        command.args(args).env_clear().envs(self.env()).envs(extra.iter().copied()).stdin(Stdio::null());
        command
    }

    /// Run a binary to its end; (exit code, stdout, stderr).
    fn run(&self, binary: &str, args: &[&str], extra: &[(&str, &str)]) -> (i32, String, String) {
        let out = self.command(binary, args, extra).output().expect("binary runs");
        (
            out.status.code().expect("exits, not killed"),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// Start brigd on this scratch's socket and wait until it listens.
    fn daemon(&self, extra: &[(&str, &str)]) -> Daemon {
        let socket = self.socket();
        Daemon::start(self, &["--socket", socket.to_str().unwrap()], extra, &socket)
    }
}

/// A running brigd in its own process group, killed with the group on drop
/// so that no test leaves a daemon behind.
struct Daemon {
    child: Child,
    socket: PathBuf,
    stderr: PathBuf,
}

impl Daemon {
    fn start(scratch: &Scratch, args: &[&str], extra: &[(&str, &str)], socket: &Path) -> Daemon {
        let stderr = scratch.path(&format!("brigd-{}.stderr", Instant::now().elapsed().as_nanos()));
        let mut command = scratch.command(env!("CARGO_BIN_EXE_brigd"), args, extra);
        command.stdout(Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap()).process_group(0);
        let child = command.spawn().expect("brigd starts");
        let mut daemon = Daemon { child, socket: socket.to_owned(), stderr };
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(socket).is_err() {
            if let Some(status) = daemon.child.try_wait().unwrap() {
                panic!("brigd exited with {status} before listening: {}", daemon.stderr_text());
            }
            assert!(Instant::now() < deadline, "brigd did not listen within 20s: {}", daemon.stderr_text());
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn connect(&self) -> Client {
        Client::connect(&self.socket)
    }

    fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(self.pid() as i32).unwrap();
        rustix::process::kill_process(pid, signal).expect("the daemon can be signalled");
    }

    /// Wait for the daemon to exit; its exit code.
    fn wait(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "brigd did not exit within {within:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            if let Some(group) = Pid::from_raw(self.pid() as i32) {
                let _ = rustix::process::kill_process_group(group, Signal::KILL);
            }
            let _ = self.child.wait();
        }
    }
}

struct Client {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Client {
    fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).expect("connects");
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Client { stream, reader }
    }

    fn send(&mut self, line: &str) {
        self.stream.write_all(line.as_bytes()).unwrap();
        self.stream.write_all(b"\n").unwrap();
    }

    /// The next response line as JSON; None once the daemon has closed the
    /// connection (a close with our bytes still unread arrives as a reset).
    fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("cannot read a response: {e}"),
        }
        if line.is_empty() {
            return None;
        }
        assert!(line.ends_with('\n'), "a response is one whole line: {line:?}");
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        self.recv().expect("a response")
    }
}

#[test]
fn the_socket_is_0600_and_the_lock_holds_the_pid() {
    let scratch = Scratch::new("bd", "mode");
    let daemon = scratch.daemon(&[]);
    let mode = std::fs::metadata(&daemon.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "socket mode {mode:o}");
    let lock = scratch.path("run/brigd.sock.lock");
    assert_eq!(std::fs::read_to_string(lock).unwrap().trim(), daemon.pid().to_string());
}

#[test]
fn a_path_too_long_is_refused_before_bind_naming_limit_length_and_source() {
    let scratch = Scratch::new("bd", "long");
    let long_dir = scratch.path(&"d".repeat(120));
    let long_socket = long_dir.join("brigd.sock");
    let length = long_socket.as_os_str().len();
    let brigd = env!("CARGO_BIN_EXE_brigd");

    let dir = long_dir.to_str().unwrap();
    let flag = ["--socket", long_socket.to_str().unwrap()];
    // (arguments, environment, the source the error must name)
    let cases = [
        (&flag[..], None, "--socket"),
        (&[][..], Some(("XDG_RUNTIME_DIR", dir)), "XDG_RUNTIME_DIR"),
        (&[][..], Some(("BRIG_STATE_DIR", dir)), "BRIG_STATE_DIR"),
    ];
    for (args, var, source) in cases {
        let env: Vec<(&str, &str)> = var.into_iter().collect();
        let (code, _, stderr) = scratch.run(brigd, args, &env);
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains(&format!("is {length} bytes")), "{stderr}");
        assert!(stderr.contains("limit of 107 bytes"), "{stderr}");
        assert!(stderr.contains(source), "{source}: {stderr}");
        assert!(!long_dir.exists(), "nothing is created for a refused path");
    }
}

#[test]
fn a_file_at_the_socket_path_that_is_no_socket_is_refused_and_kept() {
    let scratch = Scratch::new("bd", "notsock");
    let path = scratch.path("brigd.sock");
    std::fs::write(&path, "a user's file").unwrap();
    let (code, _, stderr) = scratch.run(env!("CARGO_BIN_EXE_brigd"), &["--socket", path.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("exists and is not a socket; remove it or choose another --socket"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a user's file", "the file is untouched");
}

#[test]
fn a_link_planted_at_the_lock_path_is_refused_and_its_target_kept() {
    let scratch = Scratch::new("bd", "lock-link");
    let victim = scratch.path("victim");
    std::fs::write(&victim, "the user's file").unwrap();
    let socket = scratch.path("brigd.sock");
    std::os::unix::fs::symlink(&victim, scratch.path("brigd.sock.lock")).unwrap();
    let (code, _, stderr) = scratch.run(env!("CARGO_BIN_EXE_brigd"), &["--socket", socket.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cannot open the lock file") && stderr.contains("brigd.sock.lock"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the user's file", "the link's target is untouched");
    assert!(!socket.exists(), "nothing is served");
}

#[test]
fn a_second_daemon_is_refused_naming_the_pid_and_the_first_keeps_serving() {
    let scratch = Scratch::new("bd", "second");
    let daemon = scratch.daemon(&[]);
    let socket = daemon.socket.to_str().unwrap().to_owned();
    let (code, _, stderr) = scratch.run(env!("CARGO_BIN_EXE_brigd"), &["--socket", &socket], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&format!("already served by brigd pid {}", daemon.pid())), "{stderr}");
    // The refused daemon neither unlinked nor took over the socket.
    assert_eq!(daemon.connect().ask(r#"{"op":"version"}"#)["ok"], json!(true));
}

#[test]
fn a_killed_daemon_releases_the_lock_and_the_next_clears_its_stale_socket() {
    let scratch = Scratch::new("bd", "kill9");
    let mut first = scratch.daemon(&[]);
    first.signal(Signal::KILL);
    first.wait(Duration::from_secs(10));
    assert!(scratch.socket().exists(), "a killed daemon leaves its socket behind");
    let second = scratch.daemon(&[]);
    assert_eq!(second.connect().ask(r#"{"op":"version"}"#)["ok"], json!(true));
    assert!(second.stderr_text().contains("removed the stale socket"), "{}", second.stderr_text());
}

#[test]
fn sigterm_and_sigint_exit_0_and_remove_the_socket() {
    for (name, signal) in [("TERM", Signal::TERM), ("INT", Signal::INT)] {
        let scratch = Scratch::new("bd", &format!("sig{name}"));
        let mut daemon = scratch.daemon(&[]);
        let mut idle = daemon.connect();
        daemon.signal(signal);
        assert_eq!(daemon.wait(Duration::from_secs(10)), Some(0), "{}", daemon.stderr_text());
        assert!(!scratch.socket().exists(), "SIG{name} removes the socket");
        // A connection waiting for its next request is closed, not kept.
        assert_eq!(idle.recv(), None);
    }
}

#[test]
fn the_version_op_returns_the_fields_of_brig_version_json() {
    let scratch = Scratch::new("bd", "version");
    let daemon = scratch.daemon(&[]);
    let mut response = daemon.connect().ask(r#"{"v":1,"op":"version"}"#);
    let (code, stdout, _) = scratch.run(env!("CARGO_BIN_EXE_brig"), &["version", "--json"], &[]);
    assert_eq!(code, 0);
    let cli: Value = serde_json::from_str(stdout.trim()).unwrap();
    for (key, want) in [("v", json!(1)), ("ok", json!(true)), ("code", json!(0))] {
        assert_eq!(response.as_object_mut().unwrap().remove(key), Some(want), "{key}");
    }
    assert_eq!(response, cli["data"]);
    assert!(response.get("modified").is_some());
}

#[test]
fn a_malformed_line_is_answered_with_code_2_and_the_connection_stays_usable() {
    let scratch = Scratch::new("bd", "malformed");
    let daemon = scratch.daemon(&[]);
    let mut client = daemon.connect();
    let bad = client.ask("this is not json");
    assert_eq!(bad["ok"], json!(false));
    assert_eq!(bad["code"], json!(2));
    assert_eq!(bad["v"], json!(1));
    assert!(bad["error"].as_str().unwrap().starts_with("malformed request"), "{bad}");
    // A blank line is skipped, not answered.
    client.send("");
    assert_eq!(client.ask(r#"{"op":"status"}"#), json!({"v":1,"ok":true,"code":0,"sessions":[]}));
}

#[test]
fn an_unknown_op_a_missing_field_and_another_version_are_code_2() {
    let scratch = Scratch::new("bd", "code2");
    let daemon = scratch.daemon(&[]);
    let mut client = daemon.connect();
    let cases = [
        (r#"{"op":"launch"}"#, "unknown variant `launch`"),
        (r#"{"op":"ensure"}"#, "missing field `agent`"),
        (r#"{"agent":"claude"}"#, "missing field `op`"),
        (r#"{"v":2,"op":"version"}"#, "this brigd speaks version 1"),
        (r#"{"op":"ensure","agent":"claude","name":"Not A Slug"}"#, "is not a valid label"),
    ];
    for (line, words) in cases {
        let response = client.ask(line);
        assert_eq!(response["code"], json!(2), "{line}: {response}");
        assert_eq!(response["ok"], json!(false));
        assert!(response["error"].as_str().unwrap().contains(words), "{line}: {response}");
    }
}

#[test]
fn the_id_is_echoed_and_an_absent_id_stays_absent() {
    let scratch = Scratch::new("bd", "id");
    let daemon = scratch.daemon(&[]);
    let mut client = daemon.connect();
    // Pipelined: both requests go out before either response is read.
    client.send(r#"{"v":1,"id":"boot-42","op":"version"}"#);
    client.send(r#"{"id":"x\"y","op":"nope"}"#);
    client.send(r#"{"op":"status"}"#);
    assert_eq!(client.recv().unwrap()["id"], json!("boot-42"));
    let failed = client.recv().unwrap();
    assert_eq!((failed["id"].clone(), failed["code"].clone()), (json!("x\"y"), json!(2)));
    assert!(client.recv().unwrap().get("id").is_none());
}

#[test]
fn an_unknown_agent_is_code_3() {
    let scratch = Scratch::new("bd", "code3");
    let daemon = scratch.daemon(&[]);
    let mut client = daemon.connect();
    for op in ["ensure", "stop"] {
        let response = client.ask(&format!(r#"{{"v":1,"op":"{op}","agent":"no-such-profile"}}"#));
        assert_eq!(response["code"], json!(3), "{response}");
        assert!(response["error"].as_str().unwrap().starts_with("unknown agent \"no-such-profile\""), "{response}");
    }
}

#[test]
fn a_profile_naming_a_missing_runtime_fails_that_request_with_code_4_and_no_other() {
    let scratch = Scratch::new("bd", "code4");
    std::fs::write(
        scratch.path("profiles/gone-runtime.yaml"),
        "name: gone-runtime\nkind: agent\nbinary: x\nimage: example.invalid/x:1\nguestHome: /root\nmem: 256\ncpus: 1\nruntimeBin: /nonexistent/nerdctl\n",
    )
    .unwrap();
    let daemon = scratch.daemon(&[]);
    let mut client = daemon.connect();
    let response = client.ask(r#"{"id":"g","op":"ensure","agent":"gone-runtime"}"#);
    assert_eq!(response["code"], json!(4), "{response}");
    assert!(response["error"].as_str().unwrap().contains("/nonexistent/nerdctl"), "{response}");
    assert_eq!(client.ask(r#"{"op":"version"}"#)["ok"], json!(true));
}

#[test]
fn an_over_length_line_gets_the_error_and_the_connection_closes() {
    let scratch = Scratch::new("bd", "long-line");
    let daemon = scratch.daemon(&[("BRIGD_TEST_LIMITS", "line_bytes=64")]);
    let mut client = daemon.connect();
    // Exactly at the limit with its newline: accepted.
    let fits = format!(r#"{{"op":"version","id":"{}"}}"#, "x".repeat(63 - r#"{"op":"version","id":""}"#.len()));
    assert_eq!(fits.len() + 1, 64);
    assert_eq!(client.ask(&fits)["ok"], json!(true));
    // No newline at all: the error arrives while the line is still open.
    client.stream.write_all(&[b'{'; 100]).unwrap();
    let response = client.recv().unwrap();
    assert_eq!(response["code"], json!(2));
    assert!(response["error"].as_str().unwrap().contains("limit of 64 bytes"), "{response}");
    assert_eq!(client.recv(), None, "the connection is closed after an over-length line");
}

#[test]
fn an_idle_connection_is_closed_but_every_read_resets_the_deadline() {
    let scratch = Scratch::new("bd", "idle");
    let daemon = scratch.daemon(&[("BRIGD_TEST_LIMITS", "idle_ms=400")]);
    let mut client = daemon.connect();
    // A request in pieces, each pause shorter than the deadline, the whole
    // longer than it.
    for piece in [r#"{"op":"#, r#""version""#, "}\n"] {
        client.stream.write_all(piece.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(client.recv().unwrap()["ok"], json!(true));
    let started = Instant::now();
    assert_eq!(client.recv(), None);
    assert!(started.elapsed() >= Duration::from_millis(100), "closed only once idle");
}

/// Whether the peer has closed `stream`, waiting at most `within`. Nothing
/// is read: the bytes waiting in the stream stay unread.
fn hung_up(stream: &UnixStream, within: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let timeout = Timespec { tv_sec: within.as_secs() as i64, tv_nsec: i64::from(within.subsec_nanos()) };
    let mut fds = [PollFd::new(stream, PollFlags::RDHUP)];
    poll(&mut fds, Some(&timeout)).expect("poll");
    fds[0].revents().intersects(PollFlags::RDHUP | PollFlags::HUP)
}

#[test]
fn a_client_that_stops_reading_is_cut_off_at_the_write_deadline_and_others_are_served() {
    const WRITE: Duration = Duration::from_millis(800);
    let scratch = Scratch::new("bd", "write");
    let limits = format!("write_ms={},line_bytes={}", WRITE.as_millis(), 16 << 20);
    let daemon = scratch.daemon(&[("BRIGD_TEST_LIMITS", limits.as_str())]);
    let mut stuck = daemon.connect();
    // The id comes back in the response, so a 4 MiB id makes a response far
    // larger than a socket buffer: the daemon's write blocks on a client
    // that never reads.
    stuck.stream.write_all(format!(r#"{{"op":"version","id":"{}"}}"#, "x".repeat(4 << 20)).as_bytes()).unwrap();
    // The daemon cannot have the request, let alone start its answer,
    // before the newline is sent, so its write deadline ends after
    // `started` + WRITE.
    let started = Instant::now();
    stuck.stream.write_all(b"\n").unwrap();

    // Another client is answered while that write hangs.
    assert_eq!(daemon.connect().ask(r#"{"op":"version"}"#)["ok"], json!(true));
    assert!(!hung_up(&stuck.stream, Duration::ZERO), "cut off before the deadline: {:?}", started.elapsed());

    assert!(hung_up(&stuck.stream, WRITE * 5), "still open {:?} after a {WRITE:?} deadline", started.elapsed());
    let cut_after = started.elapsed();
    assert!(cut_after >= WRITE, "cut off after {cut_after:?}, before the {WRITE:?} deadline");
    assert!(cut_after < WRITE * 3, "cut off only after {cut_after:?}, long past the {WRITE:?} deadline");
    assert!(
        daemon.stderr_text().contains("did not read its response within"),
        "closed for another reason: {}",
        daemon.stderr_text()
    );
    // What did arrive is a prefix of the one response, never a whole line.
    let mut partial = Vec::new();
    let _ = stuck.reader.read_to_end(&mut partial);
    assert!(partial.starts_with(b"{") && !partial.contains(&b'\n'), "{} bytes arrived", partial.len());
    assert_eq!(daemon.connect().ask(r#"{"op":"version"}"#)["ok"], json!(true));
}

#[test]
fn a_typo_in_the_test_limits_stops_the_start() {
    let scratch = Scratch::new("bd", "limits");
    let socket = scratch.socket();
    let (code, _, stderr) = scratch.run(
        env!("CARGO_BIN_EXE_brigd"),
        &["--socket", socket.to_str().unwrap()],
        &[("BRIGD_TEST_LIMITS", "idle=5")],
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("BRIGD_TEST_LIMITS has \"idle=5\""), "{stderr}");
    assert!(!socket.exists());
}

/// The brigd line of `brig doctor`, which looks where brigd listens by
/// default (here `XDG_RUNTIME_DIR`).
fn doctor_brigd_line(scratch: &Scratch) -> String {
    let run_dir = scratch.path("run").display().to_string();
    let (code, stdout, stderr) =
        scratch.run(env!("CARGO_BIN_EXE_brig"), &["doctor"], &[("XDG_RUNTIME_DIR", run_dir.as_str())]);
    // No runtime on PATH: the runtime line is the one that sets the exit status.
    assert_eq!(code, 4, "{stdout}{stderr}");
    let mut lines = stdout.lines().skip_while(|l| !l.contains("  brigd "));
    let mut text = lines.next().unwrap_or_else(|| panic!("no brigd line: {stdout}")).to_owned();
    if let Some(fix) = lines.next().filter(|l| l.trim_start().starts_with("fix:")) {
        text.push('\n');
        text.push_str(fix);
    }
    text
}

#[test]
fn doctor_marks_brigd_absent_running_and_stale() {
    let scratch = Scratch::new("bd", "doctor");
    let socket = scratch.socket();
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    assert_eq!(doctor_brigd_line(&scratch), format!("--  brigd      not running (no socket at {})", socket.display()));

    let mut daemon = scratch.daemon(&[]);
    let line = doctor_brigd_line(&scratch);
    assert!(line.starts_with("ok  brigd      "), "{line}");
    assert!(line.ends_with(&format!("answers at {}", socket.display())), "{line}");

    daemon.signal(Signal::KILL);
    daemon.wait(Duration::from_secs(10));
    let line = doctor_brigd_line(&scratch);
    assert!(line.starts_with("!!  brigd      a socket is at"), "{line}");
    assert!(line.contains("refuses connections"), "{line}");
    assert!(line.contains("fix: start brigd again"), "{line}");
}

#[test]
fn brigd_writes_progress_to_its_stderr_only() {
    let scratch = Scratch::new("bd", "progress");
    let daemon = scratch.daemon(&[]);
    let mut client = daemon.connect();
    client.ask(r#"{"op":"status"}"#);
    let mut rest = Vec::new();
    client.stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let _ = client.reader.read_to_end(&mut rest);
    assert!(rest.is_empty(), "nothing but responses reaches a client: {:?}", String::from_utf8_lossy(&rest));
    assert!(daemon.stderr_text().contains("listening on"), "{}", daemon.stderr_text());
}

/// A flood of connections cannot exhaust brigd: beyond the cap, a
/// connection gets one error line and is closed, the ones being served are
/// untouched, and a closed one frees its place.
#[test]
fn connections_beyond_the_cap_get_one_line_and_a_close() {
    let scratch = Scratch::new("bd", "conn-cap");
    let daemon = scratch.daemon(&[("BRIGD_TEST_LIMITS", "connections=2")]);
    // A connection that is served, once the daemon has let go of any
    // before it (the start's own readiness probe included).
    let served = || {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let mut client = daemon.connect();
            client.send(r#"{"op":"version"}"#);
            match client.recv() {
                Some(v) if v["ok"] == json!(true) => return client,
                other => assert!(std::time::Instant::now() < deadline, "no place was free: {other:?}"),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let mut first = served();
    let second = served();

    let mut third = daemon.connect();
    let refused = third.recv().expect("one line before the close");
    assert_eq!(refused["ok"], json!(false), "{refused}");
    assert_eq!(refused["code"], json!(1), "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("serving 2 connections"), "{refused}");
    assert_eq!(third.recv(), None, "closed after its one line");

    // Those being served still are.
    assert_eq!(first.ask(r#"{"op":"version"}"#)["ok"], json!(true));
    drop(second);
    // The freed place is given back (once the daemon has seen the close).
    let mut again = served();
    assert_eq!(again.ask(r#"{"op":"version"}"#)["ok"], json!(true));
    assert!(daemon.stderr_text().contains("the most brigd serves at once"), "the refusal is logged");
}
