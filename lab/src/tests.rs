//! The runner's own tests: parsing, expansion and naming, the committed
//! scenarios and schema, and negative controls — scenarios that must fail,
//! checked to fail for the stated reason.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::discover;
use crate::runner;
use crate::runtime::{Host, RuntimeStatus};
use crate::scenario::{RuntimeName, Scenario, schema_json};
use crate::trial::{Lab, TrialSpec, sandbox_of, select};

fn parse_err(text: &str) -> String {
    format!("{:#}", Scenario::parse(text).unwrap_err())
}

/// Each mistake in a scenario file is refused, and the message names it.
#[rstest::rstest]
#[case::unknown_top_level_field("about: x\nstesp: []\nsteps: [{brig: [version]}]\n", "stesp")]
#[case::unknown_expectation_field(
    "about: x\nsteps:\n  - brig: [version]\n    expect: {exit: 0, stdout: {contain: [x]}}\n",
    "contain"
)]
#[case::unknown_need("about: x\nneeds: [kvm]\nsteps: [{brig: [version]}]\n", "kvm")]
#[case::about_is_required("steps: [{brig: [version]}]\n", "about")]
fn scenario_mistakes_are_refused_by_name(#[case] text: &str, #[case] named: &str) {
    let err = parse_err(text);
    assert!(err.contains(named), "{err}");
}

#[test]
fn a_step_does_exactly_one_thing() {
    let err = parse_err("about: x\nsteps:\n  - {brig: [version], runtime: [ps]}\n");
    assert!(err.contains("brig and runtime"), "{err}");
    let err = parse_err("about: x\nsteps:\n  - {expect: {exit: 0}}\n");
    assert!(err.contains("needs one of"), "{err}");
}

#[test]
fn brigd_and_request_steps_parse() {
    let text = r#"
about: x
steps:
  - brigd: {start: {}}
    env: {BRIGD_TEST_LIMITS: "idle_ms=500"}
  - brigd: {start: {socket: "{socket}.b", args: [], as-uid: 65534}}
  - brigd: {run: [--socket, "{socket}"]}
    expect: {exit: 1, stderr: {contains: ["pid {brigd-pid}"]}}
  - request:
      lines: ['{"op":"status"}']
      padded-bytes: 100
      trickle-ms: 5
      concurrent: 2
      as-uid: 65534
      expect:
        closed: false
        identical: [/sessions]
        responses:
          - [{pointer: /v, equals: 1}, {pointer: /id, absent: true}, {pointer: /error, contains: x}]
          - [{pointer: /x, equals: null}]
  - shell: "echo {t} | cat"
    expect: {stdout: {count: {pattern: "^{t}$", equals: 1}}}
  - brigd: {stop: {}}
    expect: {stderr: {count: {pattern: booting, equals: 0}}}
  - brigd: {kill: {}}
"#;
    let scenario = Scenario::parse(text).unwrap();
    discover::check_placeholders(&scenario).unwrap();
    let equals = scenario.steps[3].request.as_ref().unwrap().expect.responses[1][0].equals.clone();
    assert_eq!(equals, Some(serde_json::Value::Null), "equals: null is a value, not a missing field");
}

#[test]
fn request_and_brigd_misuse_is_refused() {
    let err =
        parse_err("about: x\nsteps:\n  - request: {lines: [a], expect: {responses: [[]]}}\n    expect: {exit: 0}\n");
    assert!(err.contains("a request has its own"), "{err}");
    let err = parse_err("about: x\nsteps:\n  - brigd: {kill: {}}\n    expect: {exit: 0}\n");
    assert!(err.contains("take expect"), "{err}");
    let err = parse_err("about: x\nsteps:\n  - brigd: {stop: {now: true}}\n");
    assert!(err.contains("now"), "{err}");
    let err = parse_err(
        "about: x\nsteps:\n  - request: {lines: [a], expect: {responses: [[{pointer: /v, equals: 1, absent: true}]]}}\n",
    );
    assert!(err.contains("exactly one of equals, contains, absent"), "{err}");
    let err = parse_err("about: x\nsteps:\n  - request: {lines: [a], expect: {identical: [/x], responses: [[]]}}\n");
    assert!(err.contains("identical compares connections"), "{err}");
    let err = parse_err("about: x\nsteps:\n  - request: {padded-bytes: 10, expect: {responses: [[]]}}\n");
    assert!(err.contains("padded-bytes must be at least 25"), "{err}");
}

#[test]
fn padded_requests_have_the_exact_length() {
    for n in [25, 26, 1024, 1025] {
        let line = crate::trial::padded_request(n);
        assert_eq!(line.len(), n);
        assert!(line.ends_with("\"}\n"), "{line}");
        serde_json::from_str::<serde_json::Value>(line.trim_end()).unwrap();
    }
}

#[test]
fn expect_on_a_host_step_is_refused() {
    let err = parse_err("about: x\nsteps:\n  - {host: {mkdir: \"{scratch}/a\"}, expect: {exit: 1}}\n");
    assert!(err.contains("only brig, shell, runtime, guest and brigd run/stop steps take expect"), "{err}");
}

#[test]
fn unknown_placeholder_is_refused_at_load() {
    let scenario = Scenario::parse("about: x\nsteps:\n  - brig: [run, \"lab-agent@{tok}\"]\n").unwrap();
    let err = format!("{:#}", discover::check_placeholders(&scenario).unwrap_err());
    assert!(err.contains("{tok}"), "{err}");
}

#[test]
fn unknown_row_variable_is_refused_at_load() {
    let text = "about: x\nsteps:\n  - table:\n      rows:\n        a: {ref: x}\n      steps:\n        - brig: [run, \"{row.rfe}\"]\n";
    let scenario = Scenario::parse(text).unwrap();
    let err = format!("{:#}", discover::check_placeholders(&scenario).unwrap_err());
    assert!(err.contains("{row.rfe}") && err.contains("row a"), "{err}");
}

#[test]
fn host_ops_parse_in_their_short_form() {
    let text = r#"
about: x
steps:
  - host: {mkdir: "{scratch}/a"}
  - host: {write: {path: "{scratch}/a/f", content: hi}}
  - host: {symlink: {link: "{scratch}/l", target: "{scratch}/a"}}
  - host: {chmod: {path: "{scratch}/a", mode: "0700"}}
  - host: {mode: {path: "{scratch}/a", mode: "0700"}}
  - host: {contains: {path: "{scratch}/a/f", text: hi}}
  - host: {is-dir: "{scratch}/a"}
  - host: {is-symlink: "{scratch}/l"}
  - host: {exists: "{scratch}/l"}
  - host: {rm: "{scratch}/l"}
  - host: {absent: "{scratch}/l"}
"#;
    let scenario = Scenario::parse(text).unwrap();
    assert_eq!(scenario.steps.len(), 11);
}

fn table_scenario() -> Arc<Scenario> {
    let text = r#"
about: rows
runtimes: [podman]
steps:
  - host: {mkdir: "{scratch}/before"}
  - table:
      rows:
        two-ats: {ref: "a@b@{t}", exit: "2"}
        unknown: {ref: "nosuch-{t}", exit: "3"}
      steps:
        - brig: [run, "{row.ref}"]
          expect: {exit: "{row.exit}"}
  - host: {exists: "{scratch}/before"}
"#;
    Arc::new(Scenario::parse(text).unwrap())
}

#[test]
fn table_rows_become_named_trials_on_allowed_runtimes() {
    let scenario = table_scenario();
    let found = discover::Found {
        family: "sessions".into(),
        name: "refusals".into(),
        path: PathBuf::from("refusals.yaml"),
        parsed: Ok(Arc::clone(&scenario)),
    };
    let names: Vec<String> =
        discover::trials(&found, &scenario, &RuntimeName::ALL).into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["podman::sessions::refusals::two-ats", "podman::sessions::refusals::unknown"]);
}

#[test]
fn a_row_runs_the_steps_around_the_table_with_its_variables() {
    let scenario = table_scenario();
    let steps = scenario.flatten(Some("unknown"));
    assert_eq!(steps.len(), 3);
    assert!(steps[0].1.is_none() && steps[2].1.is_none());
    let row = steps[1].1.unwrap();
    assert_eq!(row["ref"], "nosuch-{t}");
    let mut vars = crate::placeholder::Vars::new();
    vars.set("t", "t00000");
    let vars = vars.with_row(Some(row)).unwrap();
    assert_eq!(vars.expand("{row.ref}").unwrap(), "nosuch-t00000");
}

#[test]
fn trial_names_without_rows() {
    assert_eq!(discover::trial_name(RuntimeName::Nerdctl, "sessions", "ls", None), "nerdctl::sessions::ls");
}

#[test]
fn guest_refs_name_sandboxes() {
    assert_eq!(sandbox_of("lab-agent@t1").unwrap(), "brig-lab-agent-t1");
    assert_eq!(sandbox_of("lab-agent").unwrap(), "brig-lab-agent");
    assert!(sandbox_of("a@b@c").is_err());
    assert!(sandbox_of("@x").is_err());
}

#[test]
fn json_selectors_pick_array_elements_by_member() {
    let doc = serde_json::json!({"data": [
        {"ref": "other@x", "running": false},
        {"ref": "lab-agent@t1", "running": true}
    ]});
    assert_eq!(select(&doc, "/data/[ref=lab-agent@t1]/running").unwrap(), &serde_json::json!(true));
    assert_eq!(select(&doc, "/data/0/ref").unwrap(), &serde_json::json!("other@x"));
    let err = select(&doc, "/data/[ref=gone@t1]/running").unwrap_err();
    assert!(err.contains("no element with ref = \"gone@t1\""), "{err}");
}

#[test]
fn no_scenarios_found_panics() {
    let dir = tempfile::Builder::new().prefix("lab-test-empty-").tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sessions")).unwrap();
    let result = std::panic::catch_unwind(|| discover::scenarios(dir.path()));
    let payload = result.expect_err("an empty scenario tree must not pass");
    let msg = payload.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("no scenarios found"), "{msg}");
}

#[test]
fn committed_schema_matches_the_types() {
    let path = runner::default_scenarios_dir().join("schema.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == schema_json(),
        "{} is out of date with the scenario types; run `cargo xtask lab schema`",
        path.display()
    );
}

#[test]
fn every_committed_scenario_loads_and_its_profiles_exist() {
    let found = discover::scenarios(&runner::default_scenarios_dir());
    let profiles = runner::default_profiles_dir();
    let mut problems = Vec::new();
    for f in &found {
        match &f.parsed {
            Err(err) => problems.push(format!("{}: {err}", f.path.display())),
            Ok(scenario) => {
                for name in scenario.profile_names() {
                    if !profiles.join(format!("{name}.yaml")).is_file() {
                        problems.push(format!("{}: no profile {name}", f.path.display()));
                    }
                }
                // Nothing leaves the rootless lane in silence: a scenario
                // runs there or its file says why it cannot.
                let rootless = RuntimeName::PodmanRootless;
                if !scenario.lanes().contains(&rootless) && !scenario.not_on.contains_key(&rootless) {
                    problems.push(format!(
                        "{}: neither runs on {rootless} (runtimes) nor says why it cannot (not-on)",
                        f.path.display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The peer check needs a second uid. Without one its trial is ignored with
/// the reason, unless `LAB_REQUIRE` names `second-uid` (as CI's does): then
/// the trial fails, saying what is missing.
#[test]
fn a_missing_second_uid_skips_the_peer_check_unless_required() {
    let path = runner::default_scenarios_dir().join("brigd/peer-check.yaml");
    let scenario = Arc::new(Scenario::parse(&std::fs::read_to_string(path).unwrap()).unwrap());
    let spec = TrialSpec {
        name: "nerdctl::brigd::peer-check".into(),
        runtime: RuntimeName::Nerdctl,
        scenario,
        row: None,
        not_here: None,
    };
    // The trial never starts, so no brig binary is needed.
    let mut lab = lab_without_runtimes(PathBuf::from("/nonexistent/brig"));
    lab.host.capabilities.insert(crate::scenario::Need::SecondUid, Some("the lab is not running as root".into()));
    let why = "capability second-uid missing: the lab is not running as root";
    assert_eq!(lab.blocker(&spec).as_deref(), Some(why));
    assert!(!lab.required(&spec), "ignored, not failed, when nothing requires it");
    lab.require = vec!["nerdctl".into(), "podman".into(), "second-uid".into()];
    assert!(lab.required(&spec));
    assert_eq!(lab.run(&spec), Err(format!("cannot run here: {why}")));
}

/// A lab with no usable runtime, for scenarios that need none.
fn lab_without_runtimes(brig: PathBuf) -> Lab {
    let mut host = Host::default();
    for rt in RuntimeName::ALL {
        host.runtimes.insert(rt, RuntimeStatus::Missing("not probed by unit tests".into()));
    }
    let brigd = brig.with_file_name("brigd");
    Lab {
        brig,
        brigd,
        client: runner::default_client(),
        sampler: runner::default_sampler(),
        profiles_dir: runner::default_profiles_dir(),
        host,
        require: Vec::new(),
    }
}

fn run_text(lab: &Lab, text: &str) -> Result<(), String> {
    let scenario = Arc::new(Scenario::parse(text).unwrap());
    discover::check_placeholders(&scenario).unwrap();
    let verdict = lab.run(&TrialSpec {
        name: "nerdctl::control::inline".into(),
        runtime: RuntimeName::Nerdctl,
        scenario,
        row: None,
        not_here: None,
    });
    // A failed trial keeps its scratch directory for a person to inspect;
    // the controls fail on purpose, so theirs is removed here.
    if let Err(msg) = &verdict
        && let Some(rest) = msg.split("scratch kept at ").nth(1)
    {
        let dir = rest.trim_end().trim_end_matches(')');
        assert!(dir.contains("brig-lab-t"), "unexpected scratch path {dir}");
        let _ = std::fs::remove_dir_all(dir);
    }
    verdict
}

/// The brig binary the controls drive: `LAB_BRIG`, else the workspace's
/// debug build, built here if it is missing.
fn brig() -> PathBuf {
    static BRIG: OnceLock<PathBuf> = OnceLock::new();
    BRIG.get_or_init(|| {
        if let Some(path) = std::env::var_os("LAB_BRIG") {
            return PathBuf::from(path);
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
        let path = target.join("debug").join("brig");
        if !path.is_file() || !path.with_file_name("brigd").is_file() {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "--quiet", "-p", "brig", "--bins"])
                .current_dir(&root)
                .status()
                .expect("cannot run cargo to build brig");
            assert!(status.success(), "building brig for the negative controls failed");
        }
        path
    })
    .clone()
}

#[test]
fn control_a_host_assertion_that_cannot_hold_fails_the_trial() {
    let lab = lab_without_runtimes(PathBuf::from("/nonexistent/brig"));
    let err = run_text(
        &lab,
        "about: control\nsteps:\n  - host: {mkdir: \"{scratch}/a\"}\n  - host: {exists: \"{scratch}/a/never-made\"}\n",
    )
    .unwrap_err();
    assert!(err.contains("step 2/2 failed"), "{err}");
    assert!(err.contains("expected") && err.contains("/a/never-made to exist"), "{err}");
    assert!(err.contains("scratch kept at"), "{err}");
}

#[test]
fn control_a_wrong_mode_expectation_fails_naming_both_modes() {
    let lab = lab_without_runtimes(PathBuf::from("/nonexistent/brig"));
    let err = run_text(
        &lab,
        "about: control\nsteps:\n  - host: {mkdir: \"{scratch}/a\"}\n  - host: {chmod: {path: \"{scratch}/a\", mode: \"0750\"}}\n  - host: {mode: {path: \"{scratch}/a\", mode: \"0700\"}}\n",
    )
    .unwrap_err();
    assert!(err.contains("expected mode 0700") && err.contains("found 0750"), "{err}");
}

#[test]
fn control_host_steps_that_hold_pass() {
    let lab = lab_without_runtimes(PathBuf::from("/nonexistent/brig"));
    run_text(
        &lab,
        "about: control\nsteps:\n  - host: {write: {path: \"{scratch}/a/f\", content: \"tok {t}\"}}\n  - host: {contains: {path: \"{scratch}/a/f\", text: \"tok {t}\"}}\n  - host: {symlink: {link: \"{scratch}/l\", target: \"{scratch}/a\"}}\n  - host: {is-symlink: \"{scratch}/l\"}\n  - host: {rm: \"{scratch}/l\"}\n  - host: {absent: \"{scratch}/l\"}\n  - host: {is-dir: \"{scratch}/a\"}\n",
    )
    .unwrap();
}

#[test]
fn control_a_wrong_exit_expectation_on_brig_fails() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(&lab, "about: control\nsteps:\n  - brig: [version]\n    expect: {exit: 3}\n").unwrap_err();
    assert!(err.contains("brig version"), "{err}");
    assert!(err.contains("exit: expected 3, got exit 0"), "{err}");
}

#[test]
fn control_stdout_that_cannot_match_fails() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(
        &lab,
        "about: control\nsteps:\n  - brig: [version]\n    expect: {stdout: {contains: [\"no brig prints this {t}\"], regex: \"^never$\"}}\n",
    )
    .unwrap_err();
    assert!(err.contains("stdout: expected to contain \"no brig prints this t"), "{err}");
    assert!(err.contains("stdout: expected to match /^never$/"), "{err}");
    assert!(err.contains("--- stdout\nbrig "), "the output is shown: {err}");
}

#[test]
fn control_brig_version_as_expected_passes() {
    let lab = lab_without_runtimes(brig());
    run_text(
        &lab,
        "about: control\nsteps:\n  - brig: [version]\n    expect: {exit: 0, stdout: {regex: \"^brig \", not-contains: [\"{t}\"]}}\n",
    )
    .unwrap();
}

#[test]
fn control_json_expectation_that_cannot_match_fails() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(
        &lab,
        "about: control\nsteps:\n  - brig: [version, --json]\n    expect: {json: [{pointer: /kind, equals: NotVersion}]}\n",
    )
    .unwrap_err();
    assert!(err.contains("json /kind: expected \"NotVersion\", found \"Version\""), "{err}");
}

#[test]
fn brig_sees_only_the_trial_environment() {
    // `env` stands in for brig here only to print the environment the
    // runner builds; cargo's own variables must not reach the child.
    let lab = lab_without_runtimes(PathBuf::from("/usr/bin/env"));
    run_text(
        &lab,
        r#"
about: control
steps:
  - brig: []
    env: {LAB_STEP_VALUE: "{t}"}
    expect:
      stdout:
        contains:
          - "HOME={home}\n"
          - "BRIG_STATE_DIR={state}\n"
          - "XDG_CONFIG_HOME={scratch}/config\n"
          - "XDG_RUNTIME_DIR={scratch}/run\n"
          - "BRIG_PROFILE_DIR={profiles}\n"
          - "BRIG_RUNTIME=nerdctl\n"
          - "BRIG_ALLOW_CONTAINER_ISOLATION=1\n"
          - "BRIG_CONTAINERD_RUNTIME=io.containerd.runc.v2\n"
          - "LAB_STEP_VALUE={t}\n"
        not-contains: [CARGO, RUST]
"#,
    )
    .unwrap();
}

#[test]
fn control_a_wrong_response_expectation_fails_showing_what_came_back() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(
        &lab,
        r#"
about: control
steps:
  - brigd: {start: {}}
  - request:
      lines: ['{"op":"version","id":"c1"}', '{"op":"nonsense"}']
      expect:
        responses:
          - [{pointer: /code, equals: 3}, {pointer: /id, absent: true}]
          - [{pointer: /error, contains: "no brigd says this"}]
"#,
    )
    .unwrap_err();
    assert!(err.contains("step 2/2 failed: request to /tmp/brig-lab-t"), "{err}");
    assert!(err.contains("response 1: json /code: expected 3, found 0"), "{err}");
    assert!(err.contains("response 1: json /id: expected nothing there, found \"c1\""), "{err}");
    assert!(err.contains("response 2: json /error: expected a string containing \"no brigd says this\""), "{err}");
    assert!(err.contains("--- received\n{\"v\":1,\"id\":\"c1\""), "the responses are shown: {err}");
}

#[test]
fn control_a_close_that_does_not_come_fails() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(
        &lab,
        r#"
about: control
steps:
  - brigd: {start: {}}
  - request:
      lines: ['{"op":"status"}']
      expect: {closed: true, responses: [[{pointer: /ok, equals: true}]]}
"#,
    )
    .unwrap_err();
    assert!(err.contains("expected brigd to close the connection, it was still open"), "{err}");
}

#[test]
fn control_more_responses_than_brigd_sends_fail() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(
        &lab,
        r#"
about: control
steps:
  - brigd: {start: {}}
    env: {BRIGD_TEST_LIMITS: "line_bytes=100"}
  - request:
      padded-bytes: 200
      expect: {responses: [[{pointer: /code, equals: 2}], []]}
"#,
    )
    .unwrap_err();
    assert!(err.contains("expected 2 response(s), got 1: brigd closed the connection after 1 line(s)"), "{err}");
}

#[test]
fn control_a_wrong_count_on_brigd_stderr_fails_at_stop() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(
        &lab,
        r#"
about: control
steps:
  - brigd: {start: {}}
  - brigd: {stop: {}}
    expect: {stderr: {count: {pattern: "listening on {socket}", equals: 2}}}
"#,
    )
    .unwrap_err();
    assert!(err.contains("brigd stop (SIGTERM to pid"), "{err}");
    assert!(err.contains("stderr: expected 2 line(s) matching"), "{err}");
    assert!(err.contains("found 1"), "{err}");
}

#[test]
fn control_a_daemon_left_running_is_killed_when_the_trial_ends() {
    let lab = lab_without_runtimes(brig());
    let err = run_text(
        &lab,
        r#"
about: control
steps:
  - brigd: {start: {}}
  - host: {exists: "{scratch}/never"}
"#,
    )
    .unwrap_err();
    // The socket directory goes with the trial, and so does every brigd
    // serving a socket in it.
    assert!(err.contains("step 2/2 failed"), "{err}");
    let token = err.split("trial token ").nth(1).and_then(|r| r.split(',').next()).unwrap_or_default().to_owned();
    assert!(!token.is_empty(), "{err}");
    let socket_dir = std::path::PathBuf::from(format!("/tmp/brig-lab-{token}-sock"));
    assert!(!socket_dir.exists(), "{} was left behind", socket_dir.display());
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("brigd") && c.contains(&format!("brig-lab-{token}-sock")))
        .collect();
    assert!(left.is_empty(), "brigd outlived its trial: {left:?}");
}

#[test]
fn control_brigd_steps_that_hold_pass() {
    let lab = lab_without_runtimes(brig());
    run_text(
        &lab,
        r#"
about: control
steps:
  - brigd: {start: {}}
  - host: {mode: {path: "{socket}", mode: "0600"}}
  - brigd: {run: [--socket, "{socket}"]}
    expect: {exit: 1, stderr: {contains: ["brigd pid {brigd-pid}"]}}
  - request:
      concurrent: 3
      lines: ['{"op":"version","id":"same"}', 'not json']
      expect:
        closed: false
        identical: [/version, /id]
        responses:
          - [{pointer: /v, equals: 1}, {pointer: /id, equals: same}, {pointer: /error, absent: true}]
          - [{pointer: /code, equals: 2}, {pointer: /id, absent: true}]
  - shell: "test -S {socket} && echo ok"
    expect: {stdout: {count: {pattern: "^ok$", equals: 1}}}
  - brigd: {stop: {}}
  - host: {absent: "{socket}"}
"#,
    )
    .unwrap();
}

/// The claims index (docs/claims.md) names only scenarios and tests that
/// exist, and every scenario of a security family is claimed by a row: a
/// renamed test or a new scenario nobody claims fails here.
#[test]
fn the_claims_index_names_what_exists_and_claims_every_security_scenario() {
    let root = runner::default_scenarios_dir().join("..");
    let text = std::fs::read_to_string(root.join("docs/claims.md")).unwrap();
    let mut problems = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    let mut claimed = std::collections::BTreeSet::new();
    let rows = text.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| id ")).collect::<Vec<_>>();
    assert!(rows.len() > 40, "the claims index has only {} rows", rows.len());
    for row in rows {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let [id, claim, made_in, proven] = cells[..] else {
            problems.push(format!("not four cells: {row}"));
            continue;
        };
        if !ids.insert(id.to_owned()) {
            problems.push(format!("{id}: the id is used twice"));
        }
        if claim.is_empty() || made_in.is_empty() {
            problems.push(format!("{id}: no claim or no page making it"));
        }
        if proven == "none yet" {
            continue;
        }
        let refs: Vec<&str> = proven.split('`').skip(1).step_by(2).collect();
        if refs.is_empty() {
            problems.push(format!("{id}: proven by neither a scenario nor a test nor `none yet`"));
        }
        for r in refs {
            if let Some((file, func)) = r.split_once("::") {
                let source = std::fs::read_to_string(root.join(file)).unwrap_or_default();
                if !source.contains(&format!("fn {func}(")) {
                    problems.push(format!("{id}: no test {func} in {file}"));
                }
            } else if r.starts_with("scenarios/") && r.ends_with(".yaml") {
                if !root.join(r).is_file() {
                    problems.push(format!("{id}: no scenario {r}"));
                }
                claimed.insert(r.to_owned());
            } else {
                problems.push(format!("{id}: {r} is neither scenarios/<family>/<name>.yaml nor <file>::<test>"));
            }
        }
    }
    let security =
        ["argv-leakage", "brigd", "host-powers", "reachability", "rootless", "secrets", "symlink-escapes", "verify"];
    for f in discover::scenarios(&runner::default_scenarios_dir()) {
        let path = format!("scenarios/{}/{}.yaml", f.family, f.name);
        if security.contains(&f.family.as_str()) && !claimed.contains(&path) {
            problems.push(format!("{path} is claimed by no row of docs/claims.md"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A capability is found from the README: every page of docs/ and every
/// procedure and report of manual-tests/ is linked from it or from the
/// manual-tests index it links.
#[test]
fn every_doc_page_is_linked_from_the_readme() {
    let root = runner::default_scenarios_dir().join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let manual = std::fs::read_to_string(root.join("manual-tests/README.md")).unwrap();
    assert!(readme.contains("manual-tests/"), "the README does not point at manual-tests/");
    let mut missing = Vec::new();
    for (dir, index, prefix) in [("docs", &readme, "docs/"), ("manual-tests", &manual, "")] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".md") && name != "README.md" && !index.contains(&format!("]({prefix}{name}")) {
                missing.push(format!("{dir}/{name}"));
            }
        }
    }
    assert!(missing.is_empty(), "not linked: {}", missing.join(", "));
}
