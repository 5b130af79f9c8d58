//! `lab-client SOCKET`: a byte pipe between stdio and a unix socket, which
//! the lab runs under `setpriv` to reach brigd as another uid.
//!
//! It exits when the socket reaches its end (brigd closed the connection) or
//! when stdin does (the runner is done); a write that fails because brigd
//! already closed stops the writing only, so what brigd sent is still
//! copied out.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

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
    let mut to_socket = match stream.try_clone() {
        Ok(s) => s,
        Err(err) => {
            eprintln!("lab-client: {err}");
            return ExitCode::FAILURE;
        }
    };
    std::thread::spawn(move || {
        if std::io::copy(&mut std::io::stdin().lock(), &mut to_socket).is_ok() {
            std::process::exit(0);
        }
    });
    let mut from_socket = stream;
    let mut out = std::io::stdout().lock();
    let copied = std::io::copy(&mut from_socket, &mut out).and_then(|_| out.flush());
    match copied {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("lab-client: {err}");
            ExitCode::FAILURE
        }
    }
}
