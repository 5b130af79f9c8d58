//! brig's lab: runs the declarative scenarios in `scenarios/` against every
//! real runtime on the host, driving the real `brig` binary as a user would.
//!
//! `scenario` defines the file format, `discover` turns files into named
//! trials, `trial` runs one of them in its own scratch directory, `runtime`
//! detects what the host offers and checks for leaks, and `runner` ties it
//! to libtest-mimic; `brigd` starts the trial's daemon and talks to it.

pub mod brigd;
pub mod discover;
pub mod placeholder;
pub mod process;
pub mod registry;
pub mod runner;
pub mod runtime;
pub mod scenario;
pub mod token;
pub mod trial;

#[cfg(test)]
mod tests;
