//! brigd's wire protocol, version 1: the request and response types, and the
//! one function that turns a request line into a typed request.
//!
//! Framing is one JSON object per line in each direction; the daemon's
//! connection code enforces the line-length cap. Requests are read strictly
//! (an unknown field is refused, so a client never believes an option took
//! effect when this daemon does not know it); responses only ever gain
//! fields within a version, and a client is expected to ignore the ones it
//! does not know.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::build_info::BuildInfo;

/// The protocol version this build speaks. A request without `v` means it.
pub const VERSION: u32 = 1;

/// What a request asks for, told apart by its `op` field.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Op {
    /// Make a session's sandbox exist and run, booting only if needed.
    Ensure {
        /// A profile name or alias; `agent@label` is accepted too.
        agent: String,
        /// The session label; absent for the agent's default session.
        #[serde(default)]
        name: Option<String>,
    },
    /// Every session this daemon has handled, liveness read now.
    Status {},
    /// Stop a session's sandbox, whether or not this daemon started it.
    Stop {
        agent: String,
        #[serde(default)]
        name: Option<String>,
    },
    /// The daemon's build.
    Version {},
}

/// One parsed request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Echoed unchanged in the response, so pipelining clients can match.
    pub id: Option<String>,
    pub op: Op,
}

/// Why a line is not a request. Every variant is the client's mistake and
/// carries code 2.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("malformed request: not one JSON object with each key once")]
    Malformed(#[source] serde_json::Error),
    #[error("malformed request: id must be a string")]
    IdNotString,
    #[error("protocol version {got} is not supported; this brigd speaks version {VERSION}")]
    UnsupportedVersion { got: String },
    #[error("invalid request")]
    Invalid(#[source] serde_json::Error),
    /// The line reached the cap before its newline. The connection closes
    /// after this error: the rest of that line cannot be told from the next
    /// request.
    #[error("request line reached the limit of {limit} bytes without ending; closing the connection")]
    TooLong { limit: usize },
}

/// A request's top-level object, read strictly: a key given twice is
/// malformed (seed 001 reads requests strictly). A plain map would keep the
/// last of two `op`s, or `name`s, and act on what the client may not have
/// meant.
struct StrictObject(Map<String, Value>);

impl<'de> Deserialize<'de> for StrictObject {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = StrictObject;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<StrictObject, A::Error> {
                let mut object = Map::new();
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    if object.contains_key(&key) {
                        return Err(serde::de::Error::custom(format!("the key {key:?} is given twice")));
                    }
                    object.insert(key, value);
                }
                Ok(StrictObject(object))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A line that is not a request, with the `id` to echo when one could be read.
#[derive(Debug)]
pub struct Rejected {
    pub id: Option<String>,
    pub error: RequestError,
}

impl Rejected {
    pub fn response(&self) -> Response {
        Response::failure(crate::Code::Usage.as_u8(), crate::error::chain(&self.error)).with_id(self.id.clone())
    }
}

/// Parse one request line (without its newline).
///
/// `v` and `id` are read first, from the bare object, so that a request with
/// an unknown op still gets its `id` back and a request from a newer client
/// is told which version this daemon speaks; the rest of the object must
/// then be exactly one op with its fields.
pub fn parse_request(line: &[u8]) -> Result<Request, Rejected> {
    let StrictObject(mut object) =
        serde_json::from_slice(line).map_err(|e| Rejected { id: None, error: RequestError::Malformed(e) })?;
    let id = match object.remove("id") {
        None => None,
        Some(Value::String(id)) => Some(id),
        Some(_) => return Err(Rejected { id: None, error: RequestError::IdNotString }),
    };
    match object.remove("v") {
        None => {}
        Some(Value::Number(n)) if n.as_u64() == Some(u64::from(VERSION)) => {}
        Some(other) => {
            return Err(Rejected { id, error: RequestError::UnsupportedVersion { got: other.to_string() } });
        }
    }
    match Op::deserialize(Value::Object(object)) {
        Ok(op) => Ok(Request { id, op }),
        Err(e) => Err(Rejected { id, error: RequestError::Invalid(e) }),
    }
}

/// One response line. Fields that do not apply to a response are left out
/// rather than sent as `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub v: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub ok: bool,
    /// brig's exit code for the same cause; 0 on success.
    pub code: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Present on every ensure, status and stop response that succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<SessionReport>>,
    /// Lines the user must act on, the same the CLI would print; never progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    // The version op's fields: the same ones `brig version --json` prints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<bool>,
}

impl Response {
    fn base(ok: bool, code: u8) -> Response {
        Response {
            v: VERSION,
            id: None,
            ok,
            code,
            error: None,
            sessions: None,
            warnings: Vec::new(),
            version: None,
            commit: None,
            commit_time: None,
            modified: None,
        }
    }

    pub fn failure(code: u8, error: impl Into<String>) -> Response {
        Response { error: Some(error.into()), ..Response::base(false, code) }
    }

    pub fn sessions(sessions: Vec<SessionReport>) -> Response {
        Response { sessions: Some(sessions), ..Response::base(true, 0) }
    }

    pub fn build(info: &BuildInfo) -> Response {
        Response {
            version: Some(info.version.clone()),
            commit: info.commit.map(str::to_owned),
            commit_time: info.commit_time.map(str::to_owned),
            modified: Some(info.modified),
            ..Response::base(true, 0)
        }
    }

    pub fn with_id(mut self, id: Option<String>) -> Response {
        self.id = id;
        self
    }

    pub fn with_warnings(mut self, warnings: Vec<String>) -> Response {
        self.warnings = warnings;
        self
    }

    /// The response as one line, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a response always serializes");
        line.push('\n');
        line
    }
}

/// One session in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionReport {
    /// The canonical profile name, never an alias.
    pub agent: String,
    /// The session label; absent for the default session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub sandbox: String,
    /// The guest home on the host.
    pub workspace: String,
    /// Read from the runtime for this report. Meaningless when
    /// `running_error` is present: then the runtime could not be asked.
    pub running: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// Who root in a container guest is on the host: `host-root` (a rootful
    /// runtime) or `uid:<n>` (rootless, the user brigd runs as).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_root: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn op(line: &str) -> Op {
        parse_request(line.as_bytes()).unwrap_or_else(|r| panic!("{line}: {}", crate::error::chain(&r.error))).op
    }

    fn rejected(line: &str) -> (Option<String>, String) {
        match parse_request(line.as_bytes()) {
            Ok(request) => panic!("{line} parsed as {request:?}"),
            Err(r) => (r.id.clone(), r.response().error.unwrap()),
        }
    }

    #[rstest]
    #[case(r#"{"op":"ensure","agent":"claude"}"#, Op::Ensure { agent: "claude".into(), name: None })]
    #[case(r#"{"v":1,"op":"ensure","agent":"claude-code","name":"refactor"}"#, Op::Ensure { agent: "claude-code".into(), name: Some("refactor".into()) })]
    #[case(r#"{"v":1,"op":"status"}"#, Op::Status {})]
    #[case(r#"{"v":1,"op":"stop","agent":"claude-code","name":"refactor"}"#, Op::Stop { agent: "claude-code".into(), name: Some("refactor".into()) })]
    #[case(r#"{"v":1,"op":"version"}"#, Op::Version {})]
    #[case(r#"{"op":"ensure","agent":"claude","name":null}"#, Op::Ensure { agent: "claude".into(), name: None })]
    fn the_seed_requests_parse(#[case] line: &str, #[case] want: Op) {
        assert_eq!(op(line), want);
    }

    #[rstest]
    #[case("not json", None, "malformed request: not one JSON object with each key once: expected ident")]
    #[case("[1]", None, "malformed request: not one JSON object with each key once: invalid type: sequence")]
    #[case(
        r#"{"op":"status","op":"stop","agent":"x"}"#,
        None,
        "malformed request: not one JSON object with each key once: the key \"op\" is given twice"
    )]
    #[case(
        r#"{"op":"ensure","agent":"a","agent":"b"}"#,
        None,
        "malformed request: not one JSON object with each key once: the key \"agent\" is given twice"
    )]
    #[case(r#"{"id":7,"op":"status"}"#, None, "malformed request: id must be a string")]
    #[case(
        r#"{"id":"a","v":2,"op":"status"}"#,
        Some("a"),
        "protocol version 2 is not supported; this brigd speaks version 1"
    )]
    #[case(r#"{"v":"1","op":"status"}"#, None, "protocol version \"1\" is not supported; this brigd speaks version 1")]
    #[case(
        r#"{"id":"b","op":"launch"}"#,
        Some("b"),
        "invalid request: unknown variant `launch`, expected one of `ensure`, `status`, `stop`, `version`"
    )]
    #[case(r#"{"id":"c"}"#, Some("c"), "invalid request: missing field `op`")]
    #[case(r#"{"op":"ensure"}"#, None, "invalid request: missing field `agent`")]
    #[case(r#"{"op":"status","agent":"x"}"#, None, "invalid request: unknown field `agent`, there are no fields")]
    #[case(
        r#"{"op":"ensure","agent":"x","image":"y"}"#,
        None,
        "invalid request: unknown field `image`, expected `agent` or `name`"
    )]
    fn a_bad_line_is_refused_with_code_2(#[case] line: &str, #[case] id: Option<&str>, #[case] error: &str) {
        let (got_id, got_error) = rejected(line);
        assert_eq!(got_id.as_deref(), id);
        assert!(got_error.starts_with(error), "{got_error}");
        assert_eq!(parse_request(line.as_bytes()).unwrap_err().response().code, 2);
    }

    #[test]
    fn a_response_leaves_out_what_does_not_apply() {
        let line = Response::sessions(vec![SessionReport {
            agent: "claude-code".into(),
            name: Some("refactor".into()),
            sandbox: "brig-claude-code-refactor".into(),
            workspace: "/home/me/.brig/homes/brig-claude-code-refactor".into(),
            running: true,
            running_error: None,
            project: None,
            network: None,
            isolation: None,
            guest_root: None,
        }])
        .to_line();
        assert_eq!(
            line,
            "{\"v\":1,\"ok\":true,\"code\":0,\"sessions\":[{\"agent\":\"claude-code\",\"name\":\"refactor\",\
             \"sandbox\":\"brig-claude-code-refactor\",\"workspace\":\"/home/me/.brig/homes/brig-claude-code-refactor\",\
             \"running\":true}]}\n"
        );
        let failure = Response::failure(3, "unknown agent \"x\"").with_id(Some("q".into())).to_line();
        assert_eq!(failure, "{\"v\":1,\"id\":\"q\",\"ok\":false,\"code\":3,\"error\":\"unknown agent \\\"x\\\"\"}\n");
    }

    #[test]
    fn a_version_response_carries_the_build_fields() {
        let info = BuildInfo { version: "dev".into(), commit: None, commit_time: None, modified: false };
        assert_eq!(
            Response::build(&info).to_line(),
            "{\"v\":1,\"ok\":true,\"code\":0,\"version\":\"dev\",\"modified\":false}\n"
        );
    }
}
