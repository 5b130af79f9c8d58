//! `lab-sampler NEEDLE STOPFILE`: reads every process's command line and
//! environment, over and over, until STOPFILE exists, and prints one JSON
//! object: how many sweeps it made, and the processes (`comm`) whose argv
//! or environment held NEEDLE.
//!
//! The argv-leakage family runs it around `run`, `sh` and a brigd
//! `ensure`: a value may sit in the guest's own processes, and nowhere
//! else — never an argv, never a runtime's environment. Its positive
//! control is a process the scenario starts with NEEDLE on its command
//! line, which a working sampler must see.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [needle, stop] = args.as_slice() else {
        eprintln!("usage: lab-sampler NEEDLE STOPFILE");
        return ExitCode::from(2);
    };
    let needle = needle.as_bytes();
    let me = std::process::id();
    let mut sweeps = 0u64;
    let mut argv = BTreeSet::new();
    let mut environ = BTreeSet::new();
    loop {
        // The stop file is looked at before the sweep, so the sweep that
        // sees it is still made: whatever ran until then was sampled.
        let last = Path::new(stop).exists();
        let Ok(entries) = std::fs::read_dir("/proc") else { return ExitCode::from(1) };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            if pid == me {
                continue;
            }
            let dir = entry.path();
            let comm = || std::fs::read_to_string(dir.join("comm")).map(|c| c.trim().to_owned()).ok();
            // A process is named by its comm before and after the reads: a
            // child spawned with vfork shares its parent's memory until its
            // exec, so what is read in between is the parent's, and is not
            // told to the program it becomes.
            let before = comm();
            let in_argv = std::fs::read(dir.join("cmdline")).is_ok_and(|c| holds(&c, needle));
            let in_environ = std::fs::read(dir.join("environ")).is_ok_and(|e| holds(&e, needle));
            let (Some(name), true) = (before.clone(), before == comm()) else { continue };
            if in_argv {
                argv.insert(name.clone());
            }
            if in_environ {
                environ.insert(name);
            }
        }
        sweeps += 1;
        if last {
            break;
        }
    }
    let list = |set: &BTreeSet<String>| {
        set.iter().map(|s| format!("\"{}\"", s.replace(['"', '\\'], "_"))).collect::<Vec<_>>().join(",")
    };
    println!("{{\"sweeps\":{sweeps},\"argv\":[{}],\"environ\":[{}]}}", list(&argv), list(&environ));
    ExitCode::SUCCESS
}
