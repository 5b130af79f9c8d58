//! brigd: one unix socket through which other tools ask brig for sandboxes.
//!
//! Start-up is plain blocking code — resolve the path, check its length,
//! take the lock, bind — and only then does the async runtime start, to
//! accept connections and hand each request to the engine on the blocking
//! pool. brig's CLI never goes through here (except `brig doctor` asking
//! for the daemon's build), so everything brigd does, the CLI can do
//! without it.

pub mod client;
mod connection;
pub mod inventory;
pub mod limits;
mod op;
pub mod peer;
pub mod socket;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tokio::net::UnixListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::build_info::BuildInfo;
use crate::environment::Environment;
use crate::profile::Registry;
use inventory::Inventory;
use limits::Limits;

/// brigd serves brig's sandboxes to other tools over a unix socket.
#[derive(Debug, Parser)]
#[command(name = "brigd", version = version_line())]
pub struct Args {
    /// The socket to listen on. Default: $XDG_RUNTIME_DIR/brigd.sock when
    /// XDG_RUNTIME_DIR is set, else <state>/brigd.sock (BRIG_STATE_DIR or ~/.brig).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

fn version_line() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| BuildInfo::current().line())
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot choose a socket path: none of --socket, XDG_RUNTIME_DIR, BRIG_STATE_DIR or HOME is set")]
    NoSocketPath,
    #[error(
        "the socket path {} is {length} bytes, over the limit of {limit} bytes for a unix socket path; it came from {source_name}, so choose a shorter one there or pass --socket",
        path.display()
    )]
    PathTooLong { path: PathBuf, length: usize, limit: usize, source_name: socket::Source },
    #[error("{} is already served by brigd pid {}; stop that daemon first", socket.display(), pid.map_or_else(|| "unknown".to_owned(), |p| p.to_string()))]
    AlreadyServed { socket: PathBuf, pid: Option<u32> },
    /// Something that is not a socket sits where the socket goes; brigd
    /// removes only a socket it knows is stale.
    #[error("{} exists and is not a socket; remove it or choose another --socket", path.display())]
    NotASocket { path: PathBuf },
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The service manager's hand-in (`LISTEN_FDS`) is not one brigd can serve.
    #[error("the socket handed in by the service manager (LISTEN_FDS) cannot be served: {0}")]
    HandedIn(String),
    #[error(transparent)]
    Limits(#[from] limits::LimitsError),
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot listen for signals")]
    Signals(#[source] std::io::Error),
}

/// What every connection shares: the environment and profiles read at
/// start, the owner's uid, the limits, and the inventory.
#[derive(Debug)]
pub struct Shared {
    pub env: Environment,
    pub registry: Registry,
    pub owner: u32,
    pub limits: Limits,
    pub inventory: Inventory,
}

/// The `brigd` binary: parse, run, print an error once, exit.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args = match Args::try_parse_from(args) {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    init_tracing();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(std::io::stderr().lock(), "brigd: error: {}", crate::error::chain(&err));
            ExitCode::FAILURE
        }
    }
}

/// Progress goes to brigd's own stderr, never to a client. `BRIGD_LOG`
/// takes a tracing filter for more or less of it.
fn init_tracing() {
    let filter = std::env::var("BRIGD_LOG").unwrap_or_else(|_| "brig=info".to_owned());
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .try_init();
}

pub fn run(args: Args) -> Result<(), Error> {
    let env = Environment::from_process();
    let limits = Limits::from_env(&env)?;
    if limits != Limits::default() {
        tracing::warn!("{} is set: connection limits are {limits:?} (for tests only)", limits::TEST_LIMITS_VAR);
    }
    // A thread of our own for accepting and framing is plenty: every
    // request's real work runs on the blocking pool.
    // Before brigd opens any descriptor of its own, so fd 3 can only be
    // the one the service manager handed in.
    let handed = socket::handed_in(&env, args.socket.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(Error::Runtime)?;
    // The handlers must be in place before the socket exists: a client that
    // sees the socket may send SIGTERM at once, and without a handler that
    // signal would kill the daemon and leave the socket behind.
    let signals = {
        let _context = runtime.enter();
        Signals {
            terminate: signal(SignalKind::terminate()).map_err(Error::Signals)?,
            interrupt: signal(SignalKind::interrupt()).map_err(Error::Signals)?,
        }
    };
    // A socket handed in by the service manager, or one of our own.
    let (claimed, listener) = match handed {
        Some(handed) => handed,
        None => {
            let path = socket::resolve(args.socket.as_deref(), &env)?;
            socket::check_length(&path)?;
            socket::claim(&path.path)?
        }
    };
    let registry = Registry::load(&env);
    for line in registry.warnings() {
        tracing::warn!("{line}");
    }
    let shared = Arc::new(Shared { env, registry, owner: peer::own_uid(), limits, inventory: Inventory::default() });

    let served = runtime.block_on(serve(listener, &claimed.path, shared, signals));
    claimed.remove_socket();
    // Work abandoned after the grace period is not waited for; the sandboxes
    // it touched keep running, as they do whenever brigd exits.
    runtime.shutdown_timeout(Duration::from_millis(100));
    if served.is_ok() {
        tracing::info!("brigd stopped");
    }
    served
}

/// SIGTERM and SIGINT, both meaning "stop accepting, finish, exit 0".
struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

async fn serve(
    listener: std::os::unix::net::UnixListener,
    path: &Path,
    shared: Arc<Shared>,
    signals: Signals,
) -> Result<(), Error> {
    let listener = listener
        .set_nonblocking(true)
        .and_then(|()| UnixListener::from_std(listener))
        .map_err(|source| Error::Io { action: "listen on", path: path.to_owned(), source })?;
    let Signals { mut terminate, mut interrupt } = signals;
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let open = Arc::new(tokio::sync::Semaphore::new(shared.limits.connections));
    tracing::info!(
        "brigd {} listening on {} (pid {})",
        BuildInfo::current().version,
        path.display(),
        std::process::id()
    );

    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match Arc::clone(&open).try_acquire_owned() {
                    // The permit lives as long as the connection is served.
                    Ok(permit) => {
                        let serve = connection::serve(stream, Arc::clone(&shared), stopping.clone());
                        connections.spawn(async move {
                            serve.await;
                            drop(permit);
                        });
                    }
                    Err(_) => {
                        connections.spawn(connection::refuse_busy(stream, Arc::clone(&shared)));
                    }
                },
                Err(e) => {
                    // Out of descriptors, most likely: wait rather than spin.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = terminate.recv() => { tracing::info!("SIGTERM: shutting down"); break }
            _ = interrupt.recv() => { tracing::info!("SIGINT: shutting down"); break }
        }
    }

    // Stop accepting first: with the listening socket closed a new client is
    // refused at once instead of waiting on a daemon that will not answer.
    drop(listener);
    let _ = stop.send(true);
    let grace = shared.limits.grace;
    let drained = tokio::time::timeout(grace, async { while connections.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(
            "{} connection(s) still busy after {grace:?}; exiting without their responses",
            connections.len()
        );
        connections.abort_all();
    }
    Ok(())
}
