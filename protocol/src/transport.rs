//! The fake transport of `deliver` and `catch-up` (docs/PROTOCOL.md §2,
//! `deliver`): a file the driver names with `--transport PATH` and reads as
//! a provider's log of deliveries. A child "sends" an obligation by
//! appending one line, `{"key":"o3","payload":"..."}`, with one `write(2)`;
//! it may read the file to ask the provider whether a key arrived, as a
//! real integration would ask a provider's idempotency API.
//!
//! Crash model: the child may be killed before, inside or after a send. One
//! `write(2)` per line on an `O_APPEND` file means a kill leaves at most the
//! final line torn: a send the provider never accepted, so not a delivery.
//! A complete line that is not a delivery cannot come from a kill, and the
//! log cannot be trusted.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One line of the transport: a delivery the provider accepted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The obligation's idempotency key.
    pub key: String,
    /// What was sent; free text (the reference sends `effect of o<j>`).
    pub payload: String,
}

/// A complete line of the transport that is not a delivery.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("transport line {line} is not a delivery: {message}")]
pub struct TransportError {
    pub line: usize,
    pub message: String,
}

/// The deliveries of a transport log, in the order they arrived; a torn
/// final line (no newline) is a send the kill cut short and is not one.
pub fn parse(bytes: &[u8]) -> Result<Vec<Delivery>, TransportError> {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes[..complete]
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| serde_json::from_slice(l).map_err(|e| TransportError { line: i + 1, message: e.to_string() }))
        .collect()
}

/// The deliveries in the transport at `path`; no file means none yet.
pub fn read(path: &Path) -> std::io::Result<Vec<Delivery>> {
    match std::fs::read(path) {
        Ok(bytes) => parse(&bytes).map_err(std::io::Error::other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Sends `delivery`: appends its line to the transport at `path` with one
/// `write(2)`. A short write is an error, never a second call, which the
/// kill could separate from the first.
pub fn send(path: &Path, delivery: &Delivery) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(delivery).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    let n = file.write(&line)?;
    if n != line.len() {
        return Err(std::io::Error::other(format!("short write of a send: {n} of {} bytes", line.len())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(key: &str) -> Delivery {
        Delivery { key: key.into(), payload: format!("effect of {key}") }
    }

    #[test]
    fn sends_are_whole_lines_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transport.ndjson");
        assert_eq!(read(&path).unwrap(), [], "no file, no delivery");
        send(&path, &delivery("o0")).unwrap();
        send(&path, &delivery("o1")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().next(), Some(r#"{"key":"o0","payload":"effect of o0"}"#));
        assert_eq!(read(&path).unwrap(), [delivery("o0"), delivery("o1")]);
    }

    #[test]
    fn a_torn_final_line_is_no_delivery_and_a_broken_middle_one_an_error() {
        let whole = r#"{"key":"o0","payload":"x"}"#;
        assert_eq!(parse(format!("{whole}\n{{\"key\":\"o1\"").as_bytes()).unwrap().len(), 1);
        let e = parse(format!("{whole}\nnot json\n{whole}\n").as_bytes()).unwrap_err();
        assert_eq!(e.line, 2);
    }
}
