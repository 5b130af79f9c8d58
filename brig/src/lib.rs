//! brig: runs AI coding agents in sandboxes they cannot escape.
//!
//! Both binaries, `brig` and `brigd`, are thin shells over this library and
//! share one engine. The CLI is plain blocking code; only the daemon starts
//! an async runtime, and it runs the engine on blocking threads.

pub mod build_info;
pub mod cli;
pub mod daemon;
pub mod engine;
pub mod environment;
pub mod error;
pub mod exit;
pub mod firewall;
pub mod json;
#[cfg(target_os = "linux")]
pub mod kvm;
pub mod policy;
pub mod ports;
pub mod process;
pub mod profile;
pub mod proto;
pub mod runtime;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod verify;
pub mod warn;

pub use error::Error;
pub use exit::{Code, Outcome};
