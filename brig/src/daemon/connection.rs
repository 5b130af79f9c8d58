//! One client connection: the peer check, newline framing under the length
//! cap, and the idle and write deadlines.
//!
//! Requests on one connection are answered in the order they arrive, each
//! response one line. While a request is being answered nothing is read, so
//! the idle deadline only ever runs while the daemon waits for the client:
//! an ensure that boots for minutes cannot trip it.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::watch;
use tokio::time::timeout;

use super::{Shared, op, peer};
use crate::proto::{Rejected, RequestError, Response, parse_request};

/// Serve one connection until the client closes it, a limit is reached, or
/// the daemon shuts down between requests.
/// A connection beyond the cap: one line saying so, then the close.
pub async fn refuse_busy(stream: UnixStream, shared: Arc<Shared>) {
    let limit = shared.limits.connections;
    tracing::warn!("refused a connection: {limit} are open, the most brigd serves at once");
    let (mut reader, mut writer) = stream.into_split();
    let line = Response::failure(
        crate::Code::Failure.as_u8(),
        format!("brigd is serving {limit} connections, the most it serves at once; try again when one closes"),
    )
    .to_line();
    if send(&mut writer, &line, &shared).await {
        let _ = writer.shutdown().await;
        discard_briefly(&mut reader).await;
    }
}

pub async fn serve(stream: UnixStream, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let peer_uid = match stream.peer_cred() {
        Ok(cred) => cred.uid(),
        Err(e) => {
            tracing::warn!("cannot read the uid of a connecting peer, closing: {e}");
            return;
        }
    };
    let (mut reader, mut writer) = stream.into_split();
    if let Err(refused) = peer::check(peer_uid, shared.owner) {
        tracing::warn!("{refused}");
        let line = Response::failure(crate::Code::Failure.as_u8(), refused.to_string()).to_line();
        if send(&mut writer, &line, &shared).await {
            let _ = writer.shutdown().await;
            discard_briefly(&mut reader).await;
        }
        return;
    }

    let limit = shared.limits.line_bytes;
    // Grown as a request arrives, and given back between requests: an idle
    // connection holds next to nothing, so a flood of them costs brigd
    // little and leaves little behind.
    let mut buffer: Vec<u8> = Vec::new();
    // Bytes of `buffer` already searched for a newline.
    let mut scanned = 0;
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut at_end = false;
    loop {
        while let Some(offset) = buffer[scanned..].iter().position(|b| *b == b'\n') {
            let end = scanned + offset;
            if end + 1 > limit {
                too_long(&mut writer, &shared).await;
                return;
            }
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if buffer.is_empty() {
                buffer = Vec::new();
            }
            scanned = 0;
            if *shutdown.borrow() || !answer(&line[..end], &mut writer, &shared).await {
                return;
            }
        }
        scanned = buffer.len();
        if at_end {
            // A last request without its newline is still a request.
            if !buffer.is_empty() && !*shutdown.borrow() {
                answer(&std::mem::take(&mut buffer), &mut writer, &shared).await;
            }
            return;
        }
        // Any newline would now make the line longer than the limit, so the
        // error goes out as soon as the limit is reached, not after the client
        // finishes writing a line that could never be accepted.
        if buffer.len() >= limit {
            too_long(&mut writer, &shared).await;
            return;
        }
        // Never read past the limit: a request that fits is read whole, and
        // an over-long one is cut at exactly the limit.
        let room = (limit - buffer.len()).min(chunk.len());
        tokio::select! {
            read = timeout(shared.limits.idle, reader.read(&mut chunk[..room])) => match read {
                Err(_) => {
                    tracing::debug!("closing a connection idle for {:?}", shared.limits.idle);
                    return;
                }
                Ok(Ok(0)) => at_end = true,
                Ok(Ok(n)) => buffer.extend_from_slice(&chunk[..n]),
                Ok(Err(e)) => {
                    tracing::debug!("reading from a client failed: {e}");
                    return;
                }
            },
            // Shutting down: a connection waiting for its next request has
            // nothing in flight, so it is closed at once.
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
    }
}

/// Answer one line. False when the connection must close.
async fn answer(line: &[u8], writer: &mut OwnedWriteHalf, shared: &Arc<Shared>) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // A blank line is no request; skipping it lets a client keep a
    // connection warm or end its requests with an extra newline.
    if line.iter().all(u8::is_ascii_whitespace) {
        return true;
    }
    let response = match parse_request(line) {
        Ok(request) => op::answer(shared, request).await,
        Err(rejected) => {
            tracing::debug!("refused a request: {}", bounded(&crate::error::chain(&rejected.error)));
            rejected.response()
        }
    };
    send(writer, &response.to_line(), shared).await
}

/// How much a read asks for at a time.
const READ_CHUNK: usize = 8 * 1024;

/// The most of a client's words brigd writes to its log per line: a
/// request can be a mebibyte, and an error may quote it.
const LOG_BYTES: usize = 512;

/// `text` cut to [`LOG_BYTES`] on a character boundary, with control
/// characters escaped, so a client can neither flood the log nor write
/// terminal sequences into it.
fn bounded(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.len() >= LOG_BYTES {
            out.push_str("… (cut)");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Read and drop what a refused peer sends, for a moment, before closing.
/// A client that writes its request before reading (socat does) would
/// otherwise fail on a broken pipe and never show the refusal waiting in its
/// buffer. The moment and the bytes are capped: a refused peer gets nothing
/// else from the daemon.
async fn discard_briefly(reader: &mut OwnedReadHalf) {
    let mut sink = [0u8; 4096];
    let mut left: usize = 64 * 1024;
    let _ = timeout(Duration::from_secs(1), async {
        while left > 0 {
            match reader.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

async fn too_long(writer: &mut OwnedWriteHalf, shared: &Shared) {
    let rejected = Rejected { id: None, error: RequestError::TooLong { limit: shared.limits.line_bytes } };
    tracing::debug!("closing a connection whose request reached {} bytes", shared.limits.line_bytes);
    let _ = send(writer, &rejected.response().to_line(), shared).await;
}

/// Write one response line within the write deadline. False when it could
/// not be delivered: the client stopped reading or went away.
async fn send(writer: &mut OwnedWriteHalf, line: &str, shared: &Shared) -> bool {
    match timeout(shared.limits.write, writer.write_all(line.as_bytes())).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::debug!("a client went away before its response: {e}");
            false
        }
        Err(_) => {
            tracing::info!("closing a connection that did not read its response within {:?}", shared.limits.write);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_bounded_and_escaped() {
        assert_eq!(bounded("op \u{1b}[2J"), "op \\u{1b}[2J");
        let long = bounded(&"é".repeat(10_000));
        assert!(long.len() < LOG_BYTES + 16 && long.ends_with("(cut)"), "{}", long.len());
    }
}
