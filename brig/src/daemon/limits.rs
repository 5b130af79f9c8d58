//! The connection limits: how long a connection may sit idle, how long a
//! request line may be, how long one response write may take, and how long
//! a shutdown waits for requests in flight.
//!
//! The values are fixed. Only the test suites change them, through
//! `BRIGD_TEST_LIMITS`, so that a five-minute idle deadline can be tested in
//! milliseconds; the variable is not a setting and is documented as such.

use std::time::Duration;

use crate::environment::Environment;

/// The variable the test suites use to shrink the limits.
pub const TEST_LIMITS_VAR: &str = "BRIGD_TEST_LIMITS";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Reset by every read; a connection waiting longer for its next bytes is closed.
    pub idle: Duration,
    /// The most bytes one request line may take, its newline included.
    pub line_bytes: usize,
    /// One response write; a client that stops reading is cut off after it.
    pub write: Duration,
    /// How long a shutdown lets requests in flight finish.
    pub grace: Duration,
    /// Connections served at once; one more gets a single error line and
    /// is closed, so a flood of idle connections cannot exhaust brigd.
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            idle: Duration::from_secs(5 * 60),
            line_bytes: 1024 * 1024,
            write: Duration::from_secs(30),
            grace: Duration::from_secs(60),
            connections: 256,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error(
    "{TEST_LIMITS_VAR} has {entry:?}; want comma-separated idle_ms=N, line_bytes=N, write_ms=N, grace_ms=N, connections=N with N > 0"
)]
pub struct LimitsError {
    entry: String,
}

impl Limits {
    /// The defaults, with whatever `BRIGD_TEST_LIMITS` overrides.
    pub fn from_env(env: &Environment) -> Result<Limits, LimitsError> {
        let mut limits = Limits::default();
        let Some(text) = env.get(TEST_LIMITS_VAR) else { return Ok(limits) };
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let bad = || LimitsError { entry: entry.to_owned() };
            let (key, value) = entry.split_once('=').ok_or_else(bad)?;
            let n: u64 = value.trim().parse().ok().filter(|n| *n > 0).ok_or_else(bad)?;
            match key.trim() {
                "idle_ms" => limits.idle = Duration::from_millis(n),
                "line_bytes" => limits.line_bytes = usize::try_from(n).map_err(|_| bad())?,
                "write_ms" => limits.write = Duration::from_millis(n),
                "grace_ms" => limits.grace = Duration::from_millis(n),
                "connections" => limits.connections = usize::try_from(n).map_err(|_| bad())?,
                _ => return Err(bad()),
            }
        }
        Ok(limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones() {
        let limits = Limits::from_env(&Environment::default()).unwrap();
        assert_eq!(limits.idle, Duration::from_secs(300));
        assert_eq!(limits.line_bytes, 1 << 20);
        assert_eq!(limits.write, Duration::from_secs(30));
        assert_eq!(limits.connections, 256);
    }

    #[test]
    fn the_test_variable_overrides_each_limit() {
        let env = Environment::from_pairs([(
            TEST_LIMITS_VAR,
            "idle_ms=200, line_bytes=64,write_ms=50,grace_ms=10,connections=3",
        )]);
        let limits = Limits::from_env(&env).unwrap();
        assert_eq!(
            limits,
            Limits {
                idle: Duration::from_millis(200),
                line_bytes: 64,
                write: Duration::from_millis(50),
                grace: Duration::from_millis(10),
                connections: 3,
            }
        );
    }

    #[test]
    fn a_typo_in_the_test_variable_is_refused() {
        for text in ["idle=5", "idle_ms=0", "idle_ms", "line_bytes=x"] {
            let env = Environment::from_pairs([(TEST_LIMITS_VAR, text)]);
            let err = Limits::from_env(&env).unwrap_err().to_string();
            assert!(err.starts_with("BRIGD_TEST_LIMITS has"), "{err}");
        }
    }
}
