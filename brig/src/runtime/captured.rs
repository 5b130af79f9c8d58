//! The captured outputs in `testdata/` against what the docker-family
//! adapter makes of them: which failures are "already done", which are the
//! runtime's refusal, and which words reach the user.
//!
//! The answers come from a stand-in binary that replays one capture (its
//! stdout, its stderr, its exit status) whatever it is asked, so the adapter
//! runs its own command and reads real output, byte for byte.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rstest::rstest;

use super::oci::{nerdctl_exec_status, parse_mounts};
use super::{BootSpec, Error, Kind, NetworkAttach, OciCli, Runtime, runtime_words, testdata};

/// A binary that prints the named captures (from `testdata/`) and exits
/// with `status`. The directory holding it goes when the guard is dropped.
fn replaying(stdout: Option<&str>, stderr: Option<&str>, status: i32) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix("brig-replay-").tempdir().unwrap();
    let captures = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime/testdata");
    let mut script = String::from("#!/bin/sh\n");
    if let Some(file) = stdout {
        script.push_str(&format!("cat '{}'\n", captures.join(file).display()));
    }
    if let Some(file) = stderr {
        script.push_str(&format!("cat '{}' >&2\n", captures.join(file).display()));
    }
    script.push_str(&format!("exit {status}\n"));
    let bin = dir.path().join("runtime");
    std::fs::write(&bin, script).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin)
}

fn kind(file: &str) -> Kind {
    if file.starts_with("podman") { Kind::Podman } else { Kind::Nerdctl }
}

/// `network create` of a network that exists is success, as is a create
/// that succeeds with warnings on stderr.
#[rstest]
#[case::nerdctl_exists("nerdctl-network-create-exists.stderr", 1)]
#[case::podman_exists("podman-network-create-exists.stderr", 125)]
#[case::nerdctl_created_with_warnings("nerdctl-network-create.stderr", 0)]
fn creating_a_network_that_is_there_succeeds(#[case] stderr: &str, #[case] status: i32) {
    let (_dir, bin) = replaying(None, Some(stderr), status);
    let rt = OciCli::new(kind(stderr), bin, None);
    rt.ensure_network("brig-probe-net", true).unwrap_or_else(|e| panic!("{stderr}: {e}"));
}

/// `network rm` of a network that is gone is success; of one still in use,
/// the runtime's refusal in its own words.
#[rstest]
#[case::nerdctl_missing("nerdctl-network-rm-missing.stderr", 1, None)]
#[case::podman_missing("podman-network-rm-missing.stderr", 1, None)]
#[case::nerdctl_in_use(
    "nerdctl-network-rm-in-use.stderr",
    1,
    Some("1 errors: network \"brig-probe-net\" is in use by container")
)]
#[case::podman_in_use(
    "podman-network-rm-in-use.stderr",
    2,
    Some("\"brig-probe-net\" has associated containers with it.")
)]
fn removing_a_network(#[case] stderr: &str, #[case] status: i32, #[case] refused: Option<&str>) {
    let (_dir, bin) = replaying(None, Some(stderr), status);
    let result = OciCli::new(kind(stderr), bin, None).remove_network("brig-probe-net");
    match (result, refused) {
        (Ok(()), None) => {}
        (Err(Error::Operation { command, words, .. }), Some(start)) => {
            assert_eq!(command, "runtime network rm brig-probe-net");
            assert!(words.starts_with(start), "{stderr}: {words}");
        }
        (got, want) => panic!("{stderr}: got {got:?}, want a refusal starting {want:?}"),
    }
}

fn boot_spec() -> BootSpec {
    BootSpec {
        name: "brig-probe".into(),
        image: "localhost/brig-probe:latest".into(),
        mem_mb: 256,
        cpus: 1,
        pull: Some("never"),
        network: NetworkAttach::None,
        publish: Vec::new(),
        binds: Vec::new(),
        tmpfs: Vec::new(),
        env: Vec::new(),
        labels: Vec::new(),
        hardening: Some(super::Hardening::container(std::path::Path::new("/s"), super::Kind::Nerdctl)),
    }
}

/// A failed `run` is the runtime's refusal in its own words, logrus and
/// `Error: ` wrapping taken off; none of them reads as a missing sandbox.
#[rstest]
#[case::nerdctl_image_missing(
    "nerdctl-run-image-missing.stderr",
    1,
    "image not available: \"localhost/brig-nope:latest\""
)]
#[case::nerdctl_bad_runtime(
    "nerdctl-run-bad-runtime.stderr",
    1,
    "failed to start shim: failed to resolve runtime path: runtime \"io.containerd.nope.v2\" binary not installed"
)]
#[case::podman_image_missing("podman-run-image-missing.stderr", 125, "localhost/brig-nope:latest: image not known")]
#[case::podman_bad_runtime(
    "podman-run-bad-runtime.stderr",
    125,
    "default OCI runtime \"nope-runtime\" not found: invalid argument"
)]
fn a_refused_boot_says_why_in_the_runtimes_words(#[case] stderr: &str, #[case] status: i32, #[case] start: &str) {
    let (_dir, bin) = replaying(None, Some(stderr), status);
    match OciCli::new(kind(stderr), bin, None).boot(&boot_spec()) {
        Err(Error::Operation { words, .. }) => {
            assert!(words.starts_with(start), "{stderr}: {words}");
            assert_eq!(words, runtime_words(&testdata(stderr)));
        }
        other => panic!("{stderr}: {other:?}"),
    }
}

/// A boot whose name is taken is its own error: the sandbox of that name is
/// not the booting process's, so nothing of it may be cleaned up.
#[rstest]
#[case::nerdctl("nerdctl-run-exists.stderr", 1)]
#[case::podman("podman-run-exists.stderr", 125)]
fn a_taken_name_is_not_a_failed_boot(#[case] stderr: &str, #[case] status: i32) {
    let (_dir, bin) = replaying(None, Some(stderr), status);
    let err = OciCli::new(kind(stderr), bin, None).boot(&boot_spec()).unwrap_err();
    assert!(matches!(&err, Error::NameInUse { name, .. } if name == "brig-probe"), "{err:?}");
}

/// Exit 0 is success whatever stderr says: podman prints a syslog complaint
/// on every `run -d`, and a warning when `stop` has to kill.
#[test]
fn stderr_on_success_is_not_a_failure() {
    let (_dir, bin) = replaying(None, Some("podman-run.stderr"), 0);
    OciCli::new(Kind::Podman, bin, None).boot(&boot_spec()).unwrap();
    let (_dir, bin) = replaying(None, Some("podman-stop.stderr"), 0);
    OciCli::new(Kind::Podman, bin, None).stop("brig-probe-stopped").unwrap();
}

/// containerd's socket left behind with nothing listening: the listing
/// fails as an unreachable runtime, naming the refused connection.
#[test]
fn a_stale_containerd_socket_is_an_unreachable_runtime() {
    let (_dir, bin) = replaying(None, Some("nerdctl-ps-containerd-stale-socket.stderr"), 1);
    match OciCli::new(Kind::Nerdctl, bin, None).list() {
        Err(Error::Unreachable { runtime: Kind::Nerdctl, words }) => {
            assert!(words.starts_with("exit status 1: failed to dial \"/run/containerd/containerd.sock\""), "{words}");
            assert!(words.ends_with("connect: connection refused\""), "{words}");
        }
        other => panic!("{other:?}"),
    }
}

/// nerdctl names the command's own exit status only when the command ran;
/// a command that could not start, or a stopped sandbox, leave nerdctl's 1.
#[rstest]
#[case::command_missing("nerdctl-exec-nocmd.stderr")]
#[case::sandbox_stopped("nerdctl-exec-stopped.stderr")]
fn an_exec_that_never_ran_has_no_status_of_its_own(#[case] stderr: &str) {
    assert_eq!(nerdctl_exec_status(&testdata(stderr)), None);
    let rt = OciCli::new(Kind::Nerdctl, "/bin/false".into(), None);
    assert_eq!(rt.exec_status(1, &testdata(stderr)), 1);
}

/// A sandbox booted without binds (a stopped one, one on the default
/// network) inspects to no mounts rather than failing to parse.
#[rstest]
#[case::shared("podman-inspect-shared.json")]
#[case::stopped("podman-inspect-stopped-none.json")]
fn a_sandbox_without_binds_has_no_mounts(#[case] file: &str) {
    assert_eq!(parse_mounts(&testdata(file)).unwrap(), []);
}

/// A capture that no test reads proves nothing and goes stale unnoticed:
/// every file in `testdata/` must be named, in quotes, by a test in this
/// module's directory.
#[test]
fn every_capture_is_read_by_a_test() {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime");
    let names = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "README.md")
            .collect();
        names.sort();
        names
    };
    let sources: String = names(&runtime)
        .iter()
        .filter(|n| n.ends_with(".rs"))
        .map(|n| std::fs::read_to_string(runtime.join(n)).unwrap())
        .collect();
    let captures = names(&runtime.join("testdata"));
    assert!(captures.len() > 10, "testdata/ looks empty: {captures:?}");
    let unread: Vec<&String> = captures.iter().filter(|c| !sources.contains(&format!("\"{c}\""))).collect();
    assert!(unread.is_empty(), "captures no test reads: {unread:?}");
}
