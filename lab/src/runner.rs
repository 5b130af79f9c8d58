//! The lab's entry point: settings from the environment, host detection,
//! the libtest-mimic run, and the closing tables: the ignored trials and
//! the slowest ones.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use libtest_mimic::{Arguments, Conclusion, FormatSetting, Trial};

use crate::discover;
use crate::runtime::Host;
use crate::scenario::{Need, RuntimeName};
use crate::trial::{Lab, TrialSpec};

/// Where the lab's inputs live when no setting moves them.
fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn default_scenarios_dir() -> PathBuf {
    crate_dir().join("..").join("scenarios")
}

/// `lab/fixtures/`: the scripts that set up what a family checks against,
/// `{fixtures}` in a scenario.
pub fn fixtures_dir() -> PathBuf {
    crate_dir().join("fixtures")
}

pub fn default_profiles_dir() -> PathBuf {
    crate_dir().join("profiles")
}

/// The lab's settings, read from `LAB_*` variables.
#[derive(Debug, Clone)]
pub struct Settings {
    pub brig: PathBuf,
    pub brigd: PathBuf,
    pub scenarios: PathBuf,
    pub profiles: PathBuf,
    pub runtimes: Vec<RuntimeName>,
    pub require: Vec<String>,
}

impl Settings {
    pub fn from_env() -> Result<Settings> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let runtimes = match var("LAB_RUNTIMES") {
            None => RuntimeName::ALL.to_vec(),
            Some(list) => split(&list)
                .map(|name| {
                    RuntimeName::parse(name)
                        .ok_or_else(|| anyhow::anyhow!("LAB_RUNTIMES: unknown runtime {name:?} (nerdctl, podman)"))
                })
                .collect::<Result<_>>()?,
        };
        let require: Vec<String> =
            var("LAB_REQUIRE").map(|list| split(&list).map(str::to_owned).collect()).unwrap_or_default();
        for name in &require {
            let known = RuntimeName::parse(name).is_some() || Need::ALL.iter().any(|n| n.as_str() == name);
            if !known {
                bail!("LAB_REQUIRE: {name:?} is neither a runtime (nerdctl, podman) nor a capability");
            }
        }
        let brig = var("LAB_BRIG").map(PathBuf::from).unwrap_or_else(default_brig);
        // brigd is built beside brig, so it is found beside it too.
        let brigd = var("LAB_BRIGD").map(PathBuf::from).unwrap_or_else(|| brig.with_file_name("brigd"));
        Ok(Settings {
            brig,
            brigd,
            scenarios: var("LAB_SCENARIOS").map(PathBuf::from).unwrap_or_else(default_scenarios_dir),
            profiles: var("LAB_PROFILES").map(PathBuf::from).unwrap_or_else(default_profiles_dir),
            runtimes,
            require,
        })
    }
}

fn split(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// `brig` beside the lab binary (both are built into the same target
/// directory), else the workspace's debug build.
fn default_brig() -> PathBuf {
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        for candidate in [dir.join("brig"), dir.join("..").join("brig")] {
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    crate_dir().join("..").join("target").join("debug").join("brig")
}

/// `lab-client` beside the running binary.
pub fn default_client() -> PathBuf {
    lab_binary("lab-client")
}

/// `lab-sampler` beside the running binary.
pub fn default_sampler() -> PathBuf {
    lab_binary("lab-sampler")
}

/// One of the lab's own binaries beside the running one (or one directory
/// up, where cargo puts binaries when the running one is a test in `deps/`).
fn lab_binary(name: &str) -> PathBuf {
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        for candidate in [dir.join(name), dir.join("..").join(name)] {
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    crate_dir().join("..").join("target").join("debug").join(name)
}

/// One trial as libtest sees it, with why it is ignored, if it is.
struct Planned {
    trial: Trial,
    ignored_because: Option<String>,
}

/// Runs the lab with the process's arguments and environment.
pub fn main() -> ExitCode {
    let args = Arguments::from_args();
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(err) => {
            eprintln!("lab: {err:#}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let found = discover::scenarios(&settings.scenarios);
    let host = Host::detect(&settings.runtimes);
    let lab = Arc::new(Lab {
        brig: absolute(&settings.brig),
        brigd: absolute(&settings.brigd),
        client: absolute(&default_client()),
        sampler: absolute(&default_sampler()),
        profiles_dir: absolute(&settings.profiles),
        host,
        require: settings.require.clone(),
    });
    let took = Arc::new(Took::default());
    let planned = plan(&lab, &took, &found, &settings.runtimes);

    let ignored: Vec<(String, String)> = planned
        .iter()
        .filter_map(|p| {
            let reason = p.ignored_because.clone()?;
            (!args.is_filtered_out(&p.trial)).then(|| (p.trial.name().to_owned(), reason))
        })
        .collect();
    let trials: Vec<Trial> = planned.into_iter().map(|p| p.trial).collect();
    let conclusion = libtest_mimic::run(&args, trials);

    let human = matches!(args.format, None | Some(FormatSetting::Pretty | FormatSetting::Terse));
    let slowest = took.slowest(SLOWEST_SHOWN);
    let show_ignored = !args.ignored && !args.include_ignored && !ignored.is_empty();
    if !args.list && human && (show_ignored || !slowest.is_empty()) {
        if show_ignored {
            print_ignored(&ignored);
        }
        print_slowest(&slowest, conclusion.num_passed + conclusion.num_failed, took.total());
        print_closing_line(&conclusion, started);
    }
    conclusion.exit_code()
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Every trial of every scenario, ordinary ones first and exclusive ones
/// last, so an exclusive trial waits for the others instead of holding them up.
fn plan(lab: &Arc<Lab>, took: &Arc<Took>, found: &[discover::Found], runtimes: &[RuntimeName]) -> Vec<Planned> {
    let mut ordinary = Vec::new();
    let mut exclusive = Vec::new();
    for f in found {
        match &f.parsed {
            Err(err) => {
                for &rt in runtimes {
                    let name = discover::trial_name(rt, &f.family, &f.name, None);
                    let msg = err.clone();
                    ordinary.push(Planned { trial: Trial::test(name, move || Err(msg.into())), ignored_because: None });
                }
            }
            Ok(scenario) => {
                for spec in discover::trials(f, scenario, runtimes) {
                    let planned = planned(lab, took, spec);
                    if scenario.exclusive {
                        exclusive.push(planned);
                    } else {
                        ordinary.push(planned);
                    }
                }
            }
        }
    }
    ordinary.extend(exclusive);
    ordinary
}

fn planned(lab: &Arc<Lab>, took: &Arc<Took>, spec: TrialSpec) -> Planned {
    let ignored_because = lab.blocker(&spec).filter(|_| !lab.required(&spec));
    let name = spec.name.clone();
    let (lab, took) = (Arc::clone(lab), Arc::clone(took));
    let trial = Trial::test(name, move || {
        let started = Instant::now();
        let result = lab.run(&spec);
        took.record(&spec.name, started.elapsed());
        result.map_err(Into::into)
    })
    .with_ignored_flag(ignored_because.is_some());
    Planned { trial, ignored_because }
}

/// How many of the slowest trials the closing table names.
const SLOWEST_SHOWN: usize = 10;

/// How long each trial that ran took, so the run can name its slowest: the
/// lab's wall time is CI's largest step, and this is where it goes.
#[derive(Default)]
struct Took(Mutex<Vec<(String, Duration)>>);

impl Took {
    fn record(&self, name: &str, took: Duration) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push((name.to_owned(), took));
    }

    /// The `n` slowest trials, slowest first.
    fn slowest(&self, n: usize) -> Vec<(String, Duration)> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }

    fn total(&self) -> Duration {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(_, d)| *d).sum()
    }
}

fn print_ignored(ignored: &[(String, String)]) {
    let width = ignored.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    println!();
    println!("ignored trials ({}), and why:", ignored.len());
    for (name, reason) in ignored {
        println!("  {name:<width$}  {reason}");
    }
}

/// The slowest trials, and the trials' summed time: against the wall time
/// on the closing line, it says how much the threads overlapped.
fn print_slowest(slowest: &[(String, Duration)], ran: u64, total: Duration) {
    if slowest.is_empty() {
        return;
    }
    let width = slowest.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    println!();
    println!("slowest trials ({} of {ran}, which took {:.0}s together):", slowest.len(), total.as_secs_f64());
    for (name, took) in slowest {
        println!("  {name:<width$}  {:>7.1}s", took.as_secs_f64());
    }
}

/// libtest's closing line, repeated after the table so that the run still
/// ends with it.
fn print_closing_line(c: &Conclusion, started: Instant) {
    println!();
    println!(
        "test result: {}. {} passed; {} failed; {} ignored; {} measured; {} filtered out; finished in {:.2}s",
        if c.has_failed() { "FAILED" } else { "ok" },
        c.num_passed,
        c.num_failed,
        c.num_ignored,
        c.num_measured,
        c.num_filtered_out,
        started.elapsed().as_secs_f64()
    );
}

#[cfg(test)]
mod took {
    use super::*;

    #[test]
    fn the_slowest_come_first_and_the_total_counts_every_trial() {
        let took = Took::default();
        for (name, ms) in [("a", 300), ("b", 1200), ("c", 50), ("d", 1200)] {
            took.record(name, Duration::from_millis(ms));
        }
        let names: Vec<_> = took.slowest(3).into_iter().map(|(n, d)| (n, d.as_millis())).collect();
        assert_eq!(names, [("b".to_owned(), 1200), ("d".to_owned(), 1200), ("a".to_owned(), 300)]);
        assert_eq!(took.total(), Duration::from_millis(2750));
        assert!(Took::default().slowest(10).is_empty());
    }
}
