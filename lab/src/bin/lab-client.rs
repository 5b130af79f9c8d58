//! `lab-client SOCKET`: a byte pipe between stdio and a unix socket, which
//! the lab runs under `setpriv` to reach brigd as another uid.
//!
//! It exits when the socket reaches its end (brigd closed the connection) or
//! when stdin does (the runner is done); a write that fails because brigd
//! already closed stops the writing only, so what brigd sent is still
//! copied out.
//!
//! The copies are plain read/write loops on purpose: `std::io::copy` may
//! splice between a socket and a pipe on Linux, and with it a response that
//! brigd had sent was seen never to reach the runner.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

/// Copies until `from` ends (`Ok`) or either side fails (`Err`), flushing
/// after every read so that a response line is passed on at once.
fn pipe(mut from: impl Read, mut to: impl Write) -> std::io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        to.flush()?;
    }
}

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: lab-client SOCKET");
        return ExitCode::from(2);
    };
    let stream = match UnixStream::connect(&path) {
        Ok(stream) => stream,
        Err(err) => {
            eprintln!("lab-client: cannot connect to {}: {err}", path.to_string_lossy());
            return ExitCode::FAILURE;
        }
    };
    let to_socket = match stream.try_clone() {
        Ok(s) => s,
        Err(err) => {
            eprintln!("lab-client: {err}");
            return ExitCode::FAILURE;
        }
    };
    std::thread::spawn(move || {
        if pipe(std::io::stdin().lock(), to_socket).is_ok() {
            std::process::exit(0);
        }
    });
    match pipe(stream, std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("lab-client: {err}");
            ExitCode::FAILURE
        }
    }
}
