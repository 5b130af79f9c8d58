//! A minimal blocking client, for `brig doctor` to ask a running brigd for
//! its build. The CLI has no other use for the daemon.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::proto::Response;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot connect")]
    Connect(#[source] std::io::Error),
    #[error("cannot exchange a request")]
    Io(#[source] std::io::Error),
    #[error("the daemon closed the connection without a response")]
    NoResponse,
    #[error("the response is not brigd protocol v1")]
    BadResponse(#[source] serde_json::Error),
}

/// Send `{"v":1,"op":"version"}` and read the one response line, within
/// `deadline` for each step.
pub fn version(socket: &Path, deadline: Duration) -> Result<Response, Error> {
    let mut stream = UnixStream::connect(socket).map_err(Error::Connect)?;
    stream.set_read_timeout(Some(deadline)).map_err(Error::Io)?;
    stream.set_write_timeout(Some(deadline)).map_err(Error::Io)?;
    // A refusing daemon (the peer check) writes its line and closes without
    // reading, so a failed write is not yet the end: its line may be there.
    let _ = stream.write_all(b"{\"v\":1,\"op\":\"version\"}\n");
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).map_err(Error::Io)?;
    if line.is_empty() {
        return Err(Error::NoResponse);
    }
    serde_json::from_str(&line).map_err(Error::BadResponse)
}
