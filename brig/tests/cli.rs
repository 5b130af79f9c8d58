//! The `brig` binary as a user runs it: scratch HOME, state and profile
//! directories, no runtime needed. Each test asserts the exit code and the
//! specific output, not merely success or failure.

mod common;

use common::Scratch;

use serde_json::Value;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim_end().lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

/// Running brig in a scratch world.
trait RunBrig {
    fn brig_env(&self, args: &[&str], extra: &[(&str, &str)]) -> Run;
    fn brig(&self, args: &[&str]) -> Run {
        self.brig_env(args, &[])
    }
}

impl RunBrig for Scratch {
    /// Run brig with only the scratch environment (plus `extra`), so the
    /// user's own brig state can never leak into a test.
    fn brig_env(&self, args: &[&str], extra: &[(&str, &str)]) -> Run {
        let mut env = self.env();
        env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let out = duct::cmd(env!("CARGO_BIN_EXE_brig"), args)
            .full_env(env)
            .stdin_null()
            .stdout_capture()
            .stderr_capture()
            .unchecked()
            .run()
            .expect("brig runs");
        Run {
            code: out.status.code().expect("brig exits, not killed"),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }
}

/// `info` on the scratch PATH, where no runtime is installed: the plan is
/// printed, refused with exit 4 as `run` would be.
fn info_without_runtime(s: &Scratch, args: &[&str], extra: &[(&str, &str)]) -> Value {
    let mut full = vec!["info"];
    full.extend_from_slice(args);
    full.push("--json");
    let run = s.brig_env(&full, extra);
    assert_exit(&run, 4, &["no container runtime found"]);
    let json = run.json();
    assert_eq!(json["data"]["refused"]["code"], 4, "{json}");
    json
}

fn assert_exit(run: &Run, code: i32, stderr_has: &[&str]) {
    assert_eq!(run.code, code, "exit code; stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    for needle in stderr_has {
        assert!(run.stderr.contains(needle), "stderr lacks {needle:?}:\n{}", run.stderr);
    }
}

#[test]
fn malformed_refs_are_usage_errors() {
    let s = Scratch::new("brig-cli", "refs");
    for (reference, keyword) in [
        ("claude@@x", "more than one @"),
        ("@x", "names no agent"),
        ("claude@", "gives no label"),
        ("claude@---", "no usable characters"),
    ] {
        let run = s.brig(&["info", reference]);
        assert_exit(&run, 2, &[keyword]);
    }
    let run = s.brig(&["info", "claude@Refactor"]);
    assert_exit(&run, 2, &["\"refactor\""]);
    assert!(!run.stderr.contains("brig-claude-code-Refactor"), "{}", run.stderr);
}

#[test]
fn unknown_agent_is_not_found() {
    let s = Scratch::new("brig-cli", "unknown");
    let run = s.brig(&["info", "nosuch"]);
    assert_exit(&run, 3, &["unknown agent \"nosuch\"", "brig agent ls"]);
}

#[test]
fn info_reports_sandbox_and_default_home() {
    let s = Scratch::new("brig-cli", "info");
    let json = info_without_runtime(&s, &["claude@refactor"], &[]);
    assert_eq!(json["apiVersion"], "brig.sh/v1alpha1");
    assert_eq!(json["kind"], "Info");
    assert_eq!(json["data"]["sandbox"], "brig-claude-code-refactor");
    assert_eq!(json["data"]["agent"], "claude-code");
    assert_eq!(json["data"]["ref"], "claude@refactor");
    let home = s.state().join("homes/brig-claude-code-refactor");
    assert_eq!(json["data"]["workspace"], home.display().to_string());
    assert_eq!(json["data"]["workspaceSource"], "default");
    assert_eq!(json["data"]["network"], "isolated");
    assert_eq!(json["data"]["verify"]["mode"], "warn");
    assert_eq!(json["data"]["verify"]["policy"], "brig");
    assert!(json["data"]["runtime"].is_null(), "no runtime on the scratch PATH: {json}");
    // info boots nothing and creates nothing.
    assert!(!home.exists());
}

#[test]
fn named_home_gets_the_label_suffix() {
    let s = Scratch::new("brig-cli", "named-home");
    let json = info_without_runtime(&s, &["claude@refactor", "--home", "/x"], &[]);
    assert_eq!(json["data"]["workspace"], "/x-refactor");
    assert_eq!(json["data"]["workspaceSource"], "named");

    let json = info_without_runtime(&s, &["claude"], &[("BRIG_WORKSPACE", "/w")]);
    assert_eq!(json["data"]["workspace"], "/w");
    let json =
        info_without_runtime(&s, &["claude@a"], &[("BRIG_CLAUDE_CODE_WORKSPACE", "/c"), ("BRIG_WORKSPACE", "/w")]);
    assert_eq!(json["data"]["workspace"], "/c-a");
}

#[test]
fn info_human_output_names_every_part() {
    let s = Scratch::new("brig-cli", "info-human");
    let run = s.brig(&["info", "codex"]);
    assert_exit(&run, 4, &["no container runtime found"]);
    for needle in ["brig-codex", "none found", "isolated", "warn", "codex-stock", "REFUSED", "exit 4"] {
        assert!(run.stdout.contains(needle), "stdout lacks {needle:?}:\n{}", run.stdout);
    }
}

#[test]
fn agent_ls_lists_the_eight_builtins() {
    let s = Scratch::new("brig-cli", "agent-ls");
    let run = s.brig(&["agent", "ls", "--json"]);
    assert_exit(&run, 0, &[]);
    let json = run.json();
    assert_eq!(json["kind"], "AgentList");
    let text = json["data"].to_string();
    for name in ["claude-code", "claude-desktop", "codex", "cursor", "gemini", "grok", "opencode", "ubuntu"] {
        assert!(text.contains(&format!("\"{name}\"")), "missing {name}: {text}");
    }
    let human = s.brig(&["agent", "ls"]);
    assert_exit(&human, 0, &[]);
    assert!(human.stdout.contains("claude-code") && human.stdout.contains("ubuntu"));
}

const CLAUDE_FILE_PROFILE: &str =
    "name: claude\nkind: shell\nimage: localhost/brig-lab/guest:latest\nguestHome: /root\nmem: 256\ncpus: 1\n";

#[test]
fn a_file_profile_named_claude_wins_over_the_alias() {
    let s = Scratch::new("brig-cli", "alias");
    s.write_profile("mine.yaml", CLAUDE_FILE_PROFILE);
    let json = info_without_runtime(&s, &["claude"], &[]);
    assert_eq!(json["data"]["agent"], "claude");
    assert_eq!(json["data"]["sandbox"], "brig-claude");
    // The built-in stays reachable by its full name.
    let json = info_without_runtime(&s, &["claude-code"], &[]);
    assert_eq!(json["data"]["sandbox"], "brig-claude-code");
}

#[test]
fn a_misspelled_field_is_refused_by_name() {
    let s = Scratch::new("brig-cli", "misspelled");
    s.write_profile(
        "typo.yaml",
        &CLAUDE_FILE_PROFILE.replace("name: claude", "name: typo").replace("guestHome", "guestHom"),
    );
    let run = s.brig(&["agent", "ls"]);
    assert_exit(&run, 0, &["guestHom", "typo.yaml"]);
    let run = s.brig(&["info", "typo"]);
    assert_exit(&run, 3, &["guestHom"]);
}

#[test]
fn a_required_secret_without_a_store_is_exit_6_naming_it() {
    let s = Scratch::new("brig-cli", "secret");
    s.write_profile(
        "needs.yaml",
        &CLAUDE_FILE_PROFILE
            .replace("name: claude", "name: needs")
            .replace("cpus: 1\n", "cpus: 1\nsecrets: [api-key]\n"),
    );
    assert_exit(&s.brig(&["info", "needs"]), 6, &["api-key"]);
    assert_exit(&s.brig(&["run", "-d", "needs"]), 6, &["api-key"]);
    assert!(!s.state().join("homes/brig-needs").exists());
}

#[test]
fn version_prints_the_build_facts() {
    let s = Scratch::new("brig-cli", "version");
    let run = s.brig(&["version", "--json"]);
    assert_exit(&run, 0, &[]);
    let json = run.json();
    assert_eq!(json["kind"], "Version");
    let data = &json["data"];
    assert!(data["modified"].is_boolean(), "{json}");
    let version = data["version"].as_str().unwrap();
    assert!(version == "dev" || version.starts_with('v'), "{version}");
    if version != "dev" {
        assert_eq!(data["commit"].as_str().unwrap().len(), 40, "{json}");
        assert!(data["commitTime"].is_string(), "{json}");
    }
    let plain = s.brig(&["--version"]);
    assert_exit(&plain, 0, &[]);
    assert!(plain.stdout.starts_with(&format!("brig {version} (")), "{}", plain.stdout);
    assert!(plain.stdout.contains("rustc "), "{}", plain.stdout);
    let verb = s.brig(&["version"]);
    assert_eq!(verb.stdout, plain.stdout);
}

#[test]
fn usage_mistakes_exit_2() {
    let s = Scratch::new("brig-cli", "usage");
    assert_exit(&s.brig(&["frobnicate"]), 2, &[]);
    assert_exit(&s.brig(&["run"]), 2, &[]);
    assert_exit(&s.brig(&["sh"]), 2, &[]);
    assert_exit(&s.brig(&["agent"]), 2, &[]);
    assert_exit(&s.brig(&["run", "--frob", "claude"]), 2, &["--frob", "agent"]);
    assert_exit(&s.brig(&["--frob", "run", "claude"]), 2, &["--frob"]);
    assert_exit(&s.brig(&["run", "--mem", "0", "claude"]), 2, &["--mem"]);
    assert_exit(&s.brig(&["run", "--cpus", "two", "claude"]), 2, &["--cpus"]);
    assert_exit(&s.brig(&["run", "--offline", "--network", "shared", "claude"]), 2, &["--offline"]);
    assert_exit(&s.brig(&["run", "--network", "bridged", "claude"]), 2, &["bridged"]);
    assert_exit(&s.brig(&["run", "--no-project", "claude", "/tmp"]), 2, &["--no-project"]);
    assert_exit(&s.brig(&["sh", "--no-project", "claude"]), 2, &["--no-project"]);
    assert_exit(&s.brig(&["run", "--name", "x", "claude@y"]), 2, &["--name"]);
}

#[test]
fn unrecognised_setting_values_exit_2_naming_variable_and_values() {
    let s = Scratch::new("brig-cli", "settings");
    let run = s.brig_env(&["info", "claude"], &[("BRIG_VERIFY", "maybe")]);
    assert_exit(&run, 2, &["BRIG_VERIFY", "maybe", "require"]);
    let run = s.brig_env(&["info", "claude"], &[("BRIG_CLAUDE_CODE_NETWORK", "wide")]);
    assert_exit(&run, 2, &["BRIG_CLAUDE_CODE_NETWORK", "wide", "isolated"]);
}

#[test]
fn a_missing_project_is_a_general_failure_naming_it() {
    let s = Scratch::new("brig-cli", "project");
    let missing = s.path("no-such-project");
    let run = s.brig(&["run", "claude", missing.to_str().unwrap()]);
    assert_exit(&run, 1, &[missing.to_str().unwrap()]);
}

#[test]
fn a_runtime_setting_pointing_at_nothing_is_exit_4() {
    let s = Scratch::new("brig-cli", "runtime");
    let run = s.brig_env(&["info", "claude"], &[("BRIG_RUNTIME_BIN", "/no/such/nerdctl")]);
    assert_exit(&run, 4, &["BRIG_RUNTIME_BIN", "/no/such/nerdctl"]);
    let run = s.brig_env(&["info", "claude"], &[("BRIG_RUNTIME", "lxc")]);
    assert_exit(&run, 4, &["BRIG_RUNTIME", "lxc"]);
}

#[test]
fn run_json_refusal_is_a_run_object_on_stdout() {
    let s = Scratch::new("brig-cli", "run-json");
    let run = s.brig(&["--json", "run", "nosuch"]);
    assert_exit(&run, 3, &["nosuch"]);
    let json = run.json();
    assert_eq!(json["kind"], "Run");
    assert_eq!(json["data"]["ref"], "nosuch");
    assert_eq!(json["data"]["stage"], "brig");
    assert_eq!(json["data"]["exit"], 3);
}

#[test]
fn completion_scripts_are_printed() {
    let s = Scratch::new("brig-cli", "completion");
    for shell in ["bash", "zsh", "fish"] {
        let run = s.brig(&["completion", shell]);
        assert_exit(&run, 0, &[]);
        assert!(run.stdout.contains("brig"), "{shell}");
    }
    assert_exit(&s.brig(&["completion", "tcsh"]), 2, &[]);
}

/// Each completion script loads in its real shell and completes a verb:
/// bash's function answers `brig ru` with `run`, fish's `complete -C`
/// does the same, and zsh's registers `_brig` for `brig` with compinit.
/// A shell that is absent skips its case, except under `CI`, which
/// provisioning equips with all three.
#[test]
fn completion_scripts_load_and_complete_in_the_real_shells() {
    let s = Scratch::new("brig-cli", "shells");
    let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"));
    let cases = [
        (
            "bash",
            "source \"$1\"; COMP_WORDS=(brig ru); COMP_CWORD=1; COMP_LINE='brig ru'; COMP_POINT=7; \
             _brig brig ru brig; printf '%s\\n' \"${COMPREPLY[@]}\"",
        ),
        ("fish", "source $argv[1]; complete -C 'brig ru'"),
        (
            "zsh",
            "autoload -U compinit && compinit -u -D && source \"$1\" && print -r -- ${_comps[brig]} && whence -w _brig",
        ),
    ];
    for (shell, line) in cases {
        let Some(bin) = ["/usr/bin", "/bin"].iter().map(|d| std::path::Path::new(d).join(shell)).find(|p| p.is_file())
        else {
            assert!(
                !ci,
                "{shell} is not installed, and under CI this test must run (cargo xtask provision installs it)"
            );
            eprintln!("skipped {shell}: not installed");
            continue;
        };
        let run = s.brig(&["completion", shell]);
        assert_exit(&run, 0, &[]);
        let script = s.path(&format!("brig.{shell}"));
        std::fs::write(&script, &run.stdout).unwrap();
        let args: Vec<&str> = match shell {
            "fish" => vec!["--no-config", "-c", line, script.to_str().unwrap()],
            "zsh" => vec!["-f", "-c", line, "zsh", script.to_str().unwrap()],
            _ => vec!["--norc", "--noprofile", "-c", line, "bash", script.to_str().unwrap()],
        };
        let out = duct::cmd(&bin, &args)
            .env("HOME", s.path("home"))
            .stdin_null()
            .stdout_capture()
            .stderr_capture()
            .unchecked()
            .run()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{shell}: {stderr}");
        let want = if shell == "zsh" { "_brig" } else { "run" };
        assert!(stdout.lines().any(|l| l.split_whitespace().next() == Some(want)), "{shell}: {stdout}\n{stderr}");
        if shell == "zsh" {
            assert!(stdout.contains("_brig: function"), "{stdout}");
        }
    }
}

/// One input, one refusal: every verb that plans a run (`info`, `plan`,
/// `run`, `sh`) refuses it with the same exit code and the same words, and
/// nothing is created on disk first.
#[test]
fn every_verb_meets_the_same_refusal() {
    let s = Scratch::new("brig-cli", "same-refusal");
    s.write_profile(
        "needs.yaml",
        &CLAUDE_FILE_PROFILE
            .replace("name: claude", "name: needs")
            .replace("cpus: 1\n", "cpus: 1\nsecrets: [api-key]\n"),
    );
    s.write_profile(
        "multi.yaml",
        &CLAUDE_FILE_PROFILE
            .replace("name: claude", "name: multi")
            .replace("cpus: 1\n", "cpus: 1\nenv:\n  - name: MULTI\n    refs: [env.MULTI]\n"),
    );
    let colon = s.path("a:b");
    std::fs::create_dir_all(&colon).unwrap();
    // A hull that answers nothing but its version: the refusal comes first.
    let hull = s.path("bin/hull");
    std::fs::create_dir_all(hull.parent().unwrap()).unwrap();
    std::fs::write(&hull, "#!/bin/sh\necho 'hull version 0.1.0'\n").unwrap();
    std::fs::set_permissions(&hull, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let hull = hull.to_str().unwrap();
    /// (case, words after the verb, environment, exit code, words the error says)
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], i32, &'a str);
    let cases: &[Case<'_>] = &[
        ("ready-timeout", &["claude"], &[("BRIG_READY_TIMEOUT", "soon")], 2, "BRIG_READY_TIMEOUT"),
        ("allow-denied", &["claude"], &[("BRIG_ALLOW_DENIED", "perhaps")], 2, "BRIG_ALLOW_DENIED"),
        ("image-option", &["--image=--privileged", "claude"], &[], 2, "starts with '-'"),
        ("image-env-option", &["claude"], &[("BRIG_IMAGE", "-v/:/host")], 2, "BRIG_IMAGE"),
        ("label-separators", &["claude@a..b"], &[], 2, "brig-claude-code-a..b"),
        ("label-length", &["claude@aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"], &[], 2, "at most"),
        // The secret is decided before the runtime: both settings are wrong,
        // and every verb names the secret.
        ("secret-before-runtime", &["needs"], &[("BRIG_RUNTIME_BIN", "/no/such/nerdctl")], 6, "api-key"),
        ("runtime-setting", &["claude"], &[("BRIG_RUNTIME_BIN", "/no/such/nerdctl")], 4, "BRIG_RUNTIME_BIN"),
        ("gui-profile", &["claude-desktop"], &[], 1, "macOS"),
        // A value no runtime can hand over as a variable.
        ("line-break", &["multi"], &[("MULTI", "a\nb")], 2, "holds a line break or a NUL"),
        ("carriage-return", &["multi"], &[("MULTI", "a\rb")], 2, "holds a line break or a NUL"),
        // Decision 4: hull cannot give a sandbox its own network.
        (
            "hull-isolated",
            &["claude"],
            &[("BRIG_RUNTIME", "hull"), ("BRIG_RUNTIME_BIN", hull)],
            7,
            "network of its own",
        ),
    ];
    for (name, args, env, code, words) in cases {
        for verb in ["info", "plan", "run", "sh"] {
            let mut line = vec![verb];
            if verb == "run" {
                line.push("-d");
            }
            // `info` takes only --image of the run flags.
            line.extend(args.iter().copied());
            let run = s.brig_env(&line, env);
            assert_eq!(run.code, *code, "{name}: brig {line:?}\nstderr: {}", run.stderr);
            assert!(run.stderr.contains(words), "{name}: brig {line:?} does not say {words:?}:\n{}", run.stderr);
        }
    }
    let run = s.brig(&["plan", "claude", colon.to_str().unwrap()]);
    assert_exit(&run, 2, &["a:b", "':'"]);
    assert!(run.stdout.contains("REFUSED"), "{}", run.stdout);
    let run = s.brig(&["run", "-d", "claude", colon.to_str().unwrap()]);
    assert_exit(&run, 2, &["a:b"]);
    assert!(!s.state().join("homes").exists(), "a refused run created a home");
}

const LAB_IMAGE: &str = "localhost/brig-lab/guest:latest";

#[test]
fn doctor_boot_without_an_image_is_exit_2_naming_both_sources() {
    let s = Scratch::new("brig-cli", "boot-image");
    let run = s.brig(&["doctor", "--boot"]);
    assert_exit(&run, 2, &["--image", "BRIG_IMAGE", "never pulls"]);
    assert_eq!(run.stdout, "");
    // An image that argv would read as a flag is refused too.
    let run = s.brig(&["doctor", "--boot", "--image=--privileged"]);
    assert_exit(&run, 2, &["\"--privileged\" is not an image reference"]);
    // --image and --timeout belong to --boot; a zero timeout is no timeout.
    assert_exit(&s.brig(&["doctor", "--image", LAB_IMAGE]), 2, &["--boot"]);
    assert_exit(&s.brig(&["doctor", "--boot", "--timeout", "0", "--image", LAB_IMAGE]), 2, &["--timeout"]);
}

#[test]
fn doctor_boot_without_a_runtime_is_exit_4() {
    let s = Scratch::new("brig-cli", "boot-runtime");
    let run = s.brig(&["doctor", "--boot", "--image", LAB_IMAGE]);
    assert_exit(&run, 4, &["no container runtime found on PATH"]);
    let run = s.brig_env(&["doctor", "--boot"], &[("BRIG_IMAGE", LAB_IMAGE), ("BRIG_RUNTIME_BIN", "/no/such/nerdctl")]);
    assert_exit(&run, 4, &["BRIG_RUNTIME_BIN", "/no/such/nerdctl"]);
    assert_eq!(run.stdout, "");
}

/// A runtime binary that only records that it was run: the refusal must
/// come before any runtime call, so it must never fire.
fn tripwire(s: &Scratch, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let marker = s.path("tripwire-fired");
    let bin = s.path("bin").join(name);
    std::fs::write(&bin, format!("#!/bin/sh\necho \"$@\" >> {}\nexit 1\n", marker.display())).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, marker)
}

#[test]
fn doctor_boot_on_a_container_shim_without_the_opt_in_is_exit_7_and_runs_nothing() {
    let s = Scratch::new("brig-cli", "boot-container");
    let (bin, marker) = tripwire(&s, "nerdctl");
    let bin = bin.display().to_string();
    let nerdctl = [
        ("BRIG_RUNTIME", "nerdctl"),
        ("BRIG_RUNTIME_BIN", bin.as_str()),
        ("BRIG_CONTAINERD_RUNTIME", "io.containerd.runc.v2"),
    ];
    let run = s.brig_env(&["doctor", "--boot", "--image", LAB_IMAGE], &nerdctl);
    assert_exit(&run, 7, &["io.containerd.runc.v2", "not as microVMs", "BRIG_ALLOW_CONTAINER_ISOLATION=1"]);
    assert_eq!(run.stdout, "");
    let mut off = nerdctl.to_vec();
    off.push(("BRIG_ALLOW_CONTAINER_ISOLATION", "0"));
    assert_exit(&s.brig_env(&["doctor", "--boot", "--image", LAB_IMAGE], &off), 7, &[]);
    let mut bad = nerdctl.to_vec();
    bad.push(("BRIG_ALLOW_CONTAINER_ISOLATION", "maybe"));
    assert_exit(&s.brig_env(&["doctor", "--boot", "--image", LAB_IMAGE], &bad), 2, &["BRIG_ALLOW_CONTAINER_ISOLATION"]);

    // podman with runc in its configuration is refused the same way.
    let (podman, _) = tripwire(&s, "podman");
    let conf = s.path("containers.conf");
    std::fs::write(&conf, "[engine]\nruntime = \"runc\"\n").unwrap();
    let (podman, conf) = (podman.display().to_string(), conf.display().to_string());
    let run = s.brig_env(
        &["doctor", "--boot", "--image", LAB_IMAGE],
        &[("BRIG_RUNTIME", "podman"), ("BRIG_RUNTIME_BIN", podman.as_str()), ("CONTAINERS_CONF", conf.as_str())],
    );
    assert_exit(&run, 7, &["podman runs sandboxes as containers"]);
    assert!(!marker.exists(), "a runtime call was made: {:?}", std::fs::read_to_string(&marker));
}

#[test]
fn doctor_hypervisor_line_says_what_it_checked() {
    let s = Scratch::new("brig-cli", "doctor-kvm");
    let run = s.brig(&["doctor", "--json"]);
    assert_exit(&run, 4, &[]);
    let json = run.json();
    let checks = json["data"]["checks"].as_array().unwrap();
    let hypervisor = checks.iter().find(|c| c["name"] == "hypervisor").expect("a hypervisor line");
    let detail = hypervisor["detail"].as_str().unwrap();
    // Whatever this host offers, the line names the device and never
    // claims more than the probe showed.
    assert!(detail.contains("/dev/kvm") || detail.contains("not inspected"), "{detail}");
    if hypervisor["mark"] == "ok" {
        assert!(detail.contains("KVM_EXIT_HLT") && detail.contains("brig doctor --boot"), "{detail}");
    }
    assert!(json["data"].get("boot").is_none(), "{json}");
}

/// Decision 15: a named guest home or a project that would hand over the
/// host is refused with exit 1 naming the rule, before any runtime is
/// looked for and before anything is created.
#[test]
fn homes_and_projects_that_hand_over_the_host_are_refused() {
    let s = Scratch::new("brig-cli", "hands-over");
    let home = s.env().into_iter().find(|(k, _)| k == "HOME").map(|(_, v)| v).unwrap();
    let state = s.state();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--home=/".into(), "claude".into()], "root directory"),
        (vec![format!("--home={home}"), "claude".into()], "home directory itself"),
        (vec!["--home=/etc".into(), "claude".into()], "/etc, a system directory"),
        (vec!["--home=/var/lib/containerd".into(), "claude".into()], "/var, a system directory"),
        (vec![format!("--home={}", state.display()), "claude".into()], "brig's state directory"),
        (vec!["claude".into(), "/usr".into()], "/usr, a system directory"),
    ];
    for (args, says) in cases {
        let mut line = vec!["run", "-d"];
        line.extend(args.iter().map(String::as_str));
        let run = s.brig(&line);
        assert_exit(&run, 1, &["is refused: it", says]);
        let plan = s.brig(&[&["plan"], &line[2..]].concat());
        assert_exit(&plan, 1, &[says]);
        assert!(plan.stdout.contains("REFUSED"), "{}", plan.stdout);
    }
    assert!(!state.join("homes").exists(), "a refused run created a home");
}

/// Text from a profile file reaches the terminal escaped: a description
/// cannot move the cursor or retitle the window.
#[test]
fn a_profiles_control_characters_are_printed_escaped() {
    let s = Scratch::new("brig-cli", "escaped");
    s.write_profile(
        "evil.yaml",
        &format!("{}desc: \"a\\e]0;owned\\ab\\e[2J\"\n", CLAUDE_FILE_PROFILE.replace("name: claude", "name: evil")),
    );
    let run = s.brig(&["agent", "ls"]);
    assert_exit(&run, 0, &[]);
    let line = run.stdout.lines().find(|l| l.starts_with("evil")).expect("evil is listed");
    assert!(!line.contains('\u{1b}') && !line.contains('\u{7}'), "{line:?}");
    assert!(line.contains(r"a\u{1b}]0;owned\u{7}b\u{1b}[2J"), "{line:?}");
}
