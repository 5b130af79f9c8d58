//! Refs: parsing `<agent>[@<label>]` into a session, and sandbox names back into refs.

use super::label::{is_slug, slug};
use super::{Agents, Error, Result};

/// Every sandbox brig creates carries this prefix; `brig ls` and `rm --all`
/// select on it.
pub const SANDBOX_PREFIX: &str = "brig-";

/// A resolved session: what the user typed and what it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    typed: String,
    agent: String,
    label: Option<String>,
    sandbox: String,
}

impl Session {
    /// Parse and resolve a ref as typed on the command line.
    pub fn parse(typed: &str, agents: &dyn Agents) -> Result<Session> {
        let (agent_text, label) = split(typed)?;
        if let Some(label) = label {
            check_label(typed, label)?;
        }
        Session::resolve(typed, agent_text, label.map(str::to_owned), agents)
    }

    /// Parse a ref together with the retiring `--name` flag, which means the
    /// same as `@label` but accepts any text and converts it to a slug.
    ///
    /// Returns the session and, when `--name` was given, the warning line to
    /// print: it names the label actually used, so the user can find the
    /// home and switch to the `@label` form.
    pub fn parse_with_name(typed: &str, name: Option<&str>, agents: &dyn Agents) -> Result<(Session, Option<String>)> {
        let Some(name) = name else {
            return Ok((Session::parse(typed, agents)?, None));
        };
        let (agent_text, label) = split(typed)?;
        if label.is_some() {
            return Err(Error::NameWithLabel { text: typed.to_owned() });
        }
        let converted = slug(name);
        if converted.is_empty() {
            return Err(Error::NameUnusable { name: name.to_owned() });
        }
        let session = Session::resolve(typed, agent_text, Some(converted.clone()), agents)?;
        let warning = format!(
            "--name is retiring; using label \"{converted}\" (sandbox {}); next time write {agent_text}@{converted}",
            session.sandbox
        );
        Ok((session, Some(warning)))
    }

    fn resolve(typed: &str, agent_text: &str, label: Option<String>, agents: &dyn Agents) -> Result<Session> {
        let agent = agents.canonical(agent_text).ok_or_else(|| Error::UnknownAgent { name: agent_text.to_owned() })?;
        let sandbox = sandbox_name(&agent, label.as_deref());
        if label.is_some() {
            // A label must not land on the sandbox (and so the home) of
            // another agent's default session: `claude-code@x` and an agent
            // named `claude-code-x` would otherwise share `brig-claude-code-x`.
            let own_name = &sandbox[SANDBOX_PREFIX.len()..];
            if let Some(other) = agents.names().into_iter().find(|n| n != &agent && n == own_name) {
                return Err(Error::LabelShadowsAgent { text: typed.to_owned(), sandbox, other });
            }
        }
        Ok(Session { typed: typed.to_owned(), agent, label, sandbox })
    }

    /// The ref exactly as the user typed it (what `run --json` reports).
    pub fn typed(&self) -> &str {
        &self.typed
    }

    /// The canonical profile name, never an alias.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// `brig-<agent>[-<label>]`.
    pub fn sandbox(&self) -> &str {
        &self.sandbox
    }

    /// `agent[@label]` with the canonical agent name (what `brig ls` prints).
    pub fn canonical_ref(&self) -> String {
        canonical_ref(&self.agent, self.label.as_deref())
    }
}

/// `brig-<agent>[-<label>]`.
pub fn sandbox_name(agent: &str, label: Option<&str>) -> String {
    match label {
        Some(label) => format!("{SANDBOX_PREFIX}{agent}-{label}"),
        None => format!("{SANDBOX_PREFIX}{agent}"),
    }
}

/// `agent[@label]`.
pub fn canonical_ref(agent: &str, label: Option<&str>) -> String {
    match label {
        Some(label) => format!("{agent}@{label}"),
        None => agent.to_owned(),
    }
}

/// Read a sandbox name back into (agent, label) for `brig ls`, given every
/// agent name the registry knows. The longest matching agent name wins, so
/// that `brig-claude-code-x` belongs to an agent named `claude-code-x` when
/// one exists. A remainder that is not a valid label does not match: the
/// ref printed for a row must be one every other verb accepts.
///
/// None when the name is not brig's or no known agent matches.
pub fn parse_sandbox_name(sandbox: &str, agents: &[String]) -> Option<(String, Option<String>)> {
    let rest = sandbox.strip_prefix(SANDBOX_PREFIX)?;
    let mut candidates: Vec<&String> = agents.iter().collect();
    candidates.sort_by_key(|a| std::cmp::Reverse(a.len()));
    candidates.into_iter().find_map(|agent| {
        let tail = rest.strip_prefix(agent.as_str())?;
        if tail.is_empty() {
            return Some((agent.clone(), None));
        }
        let label = tail.strip_prefix('-')?;
        is_slug(label).then(|| (agent.clone(), Some(label.to_owned())))
    })
}

/// Split a ref at its one `@`, refusing the malformed shapes. The label, when
/// present, is returned unchecked.
fn split(typed: &str) -> Result<(&str, Option<&str>)> {
    let text = || typed.to_owned();
    if typed.matches('@').count() > 1 {
        return Err(Error::SeveralAts { text: text() });
    }
    let (agent, label) = match typed.split_once('@') {
        Some((agent, label)) => (agent, Some(label)),
        None => (typed, None),
    };
    if agent.is_empty() {
        return Err(Error::NoAgent { text: text() });
    }
    if label == Some("") {
        return Err(Error::TrailingAt { text: text() });
    }
    Ok((agent, label))
}

fn check_label(typed: &str, label: &str) -> Result<()> {
    let converted = slug(label);
    if converted.is_empty() {
        return Err(Error::LabelUnusable { text: typed.to_owned(), label: label.to_owned() });
    }
    if converted != label {
        return Err(Error::LabelNotSlug { text: typed.to_owned(), label: label.to_owned(), slug: converted });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::testing::FixedAgents;
    use rstest::rstest;

    /// A parse outcome as one comparable line: the session's parts, or the
    /// error variant with the detail the table checks.
    fn outcome(result: Result<Session>) -> String {
        match result {
            Ok(s) => format!("{} {} {}", s.agent(), s.label().unwrap_or("-"), s.sandbox()),
            Err(Error::SeveralAts { .. }) => "several-ats".into(),
            Err(Error::NoAgent { .. }) => "no-agent".into(),
            Err(Error::TrailingAt { .. }) => "trailing-at".into(),
            Err(Error::LabelNotSlug { slug, .. }) => format!("not-slug {slug}"),
            Err(Error::LabelUnusable { .. }) => "unusable".into(),
            Err(Error::LabelShadowsAgent { other, .. }) => format!("shadows {other}"),
            Err(Error::UnknownAgent { name }) => format!("unknown {name}"),
            Err(other) => format!("unexpected {other}"),
        }
    }

    #[rstest]
    #[case("claude", "claude-code - brig-claude-code")]
    #[case("claude-code", "claude-code - brig-claude-code")]
    #[case("claude@refactor", "claude-code refactor brig-claude-code-refactor")]
    #[case("desktop@a.b_c", "claude-desktop a.b_c brig-claude-desktop-a.b_c")]
    #[case("codex@v1.2", "codex v1.2 brig-codex-v1.2")]
    #[case("claude-code@y", "claude-code y brig-claude-code-y")]
    #[case("claude-code-x", "claude-code-x - brig-claude-code-x")]
    #[case("claude@a@b", "several-ats")]
    #[case("@@", "several-ats")]
    #[case("@refactor", "no-agent")]
    #[case("@", "no-agent")]
    #[case("", "no-agent")]
    #[case("claude@", "trailing-at")]
    #[case("claude@Refactor", "not-slug refactor")]
    #[case("claude@a b", "not-slug a-b")]
    #[case("claude@-a", "not-slug a")]
    #[case("claude@a--b", "not-slug a-b")]
    #[case("claude@---", "unusable")]
    #[case("claude@!!", "unusable")]
    #[case("claude-code@x", "shadows claude-code-x")]
    #[case("claude@x", "shadows claude-code-x")]
    #[case("nope", "unknown nope")]
    #[case("nope@lbl", "unknown nope")]
    #[case("Claude", "unknown Claude")]
    fn parse_table(#[case] typed: &str, #[case] want: &str) {
        let agents = FixedAgents::builtin().with("claude-code-x");
        assert_eq!(outcome(Session::parse(typed, &agents)), want);
    }

    #[test]
    fn profile_named_like_an_alias_wins() {
        let agents = FixedAgents::builtin().with("claude");
        let s = Session::parse("claude", &agents).unwrap();
        assert_eq!(s.agent(), "claude");
        assert_eq!(s.sandbox(), "brig-claude");
    }

    #[test]
    fn session_keeps_typed_and_canonical_refs() {
        let s = Session::parse("claude@refactor", &FixedAgents::builtin()).unwrap();
        assert_eq!(s.typed(), "claude@refactor");
        assert_eq!(s.canonical_ref(), "claude-code@refactor");
        let s = Session::parse("desktop", &FixedAgents::builtin()).unwrap();
        assert_eq!(s.typed(), "desktop");
        assert_eq!(s.canonical_ref(), "claude-desktop");
    }

    #[rstest]
    #[case(
        "claude@Refactor",
        "label \"Refactor\" in ref \"claude@Refactor\" is not a valid label; it would map to \"refactor\", write that instead"
    )]
    #[case("nope", "unknown agent \"nope\"; run `brig agent ls` to list the agents brig knows")]
    #[case(
        "claude@---",
        "label \"---\" in ref \"claude@---\" has no usable characters (letters, digits, '.', '_', '-')"
    )]
    fn messages(#[case] typed: &str, #[case] want: &str) {
        let err = Session::parse(typed, &FixedAgents::builtin()).unwrap_err();
        assert_eq!(err.to_string(), want);
    }

    #[rstest]
    #[case("claude", Some("Refactor Sprint"), Some("refactor-sprint"))]
    #[case("claude", Some("refactor"), Some("refactor"))]
    #[case("claude", None, None)]
    fn name_flag(#[case] typed: &str, #[case] name: Option<&str>, #[case] label: Option<&str>) {
        let (s, warning) = Session::parse_with_name(typed, name, &FixedAgents::builtin()).unwrap();
        assert_eq!(s.label(), label);
        assert_eq!(s.typed(), typed);
        match label {
            Some(label) => {
                let warning = warning.expect("--name must warn");
                assert!(warning.contains(&format!("\"{label}\"")), "{warning}");
                assert!(warning.contains("retiring"), "{warning}");
            }
            None => assert_eq!(warning, None),
        }
    }

    #[test]
    fn name_flag_refusals() {
        let agents = FixedAgents::builtin().with("claude-code-x");
        let err = Session::parse_with_name("claude@a", Some("b"), &agents).unwrap_err();
        assert!(matches!(err, Error::NameWithLabel { .. }), "{err}");
        let err = Session::parse_with_name("claude", Some(" -- "), &agents).unwrap_err();
        assert!(matches!(err, Error::NameUnusable { .. }), "{err}");
        let err = Session::parse_with_name("claude", Some("X"), &agents).unwrap_err();
        assert!(matches!(err, Error::LabelShadowsAgent { .. }), "{err}");
        let err = Session::parse_with_name("claude@@", Some("x"), &agents).unwrap_err();
        assert!(matches!(err, Error::SeveralAts { .. }), "{err}");
        let err = Session::parse_with_name("nope", Some("x"), &agents).unwrap_err();
        assert!(matches!(err, Error::UnknownAgent { .. }), "{err}");
    }

    #[rstest]
    #[case("brig-claude-code", Some(("claude-code", None)))]
    #[case("brig-claude-code-refactor", Some(("claude-code", Some("refactor"))))]
    #[case("brig-claude-code-x", Some(("claude-code-x", None)))]
    #[case("brig-claude-code-x-y", Some(("claude-code-x", Some("y"))))]
    #[case("brig-claude-desktop", Some(("claude-desktop", None)))]
    #[case("brig-codex-a.b", Some(("codex", Some("a.b"))))]
    #[case("brig-codexy", None)]
    #[case("brig-codex-", None)]
    #[case("brig-codex-A", None)]
    #[case("brig-unknown", None)]
    #[case("other-codex", None)]
    #[case("brig-", None)]
    fn sandbox_names_back_to_refs(#[case] sandbox: &str, #[case] want: Option<(&str, Option<&str>)>) {
        let names = FixedAgents::builtin().with("claude-code-x").names();
        let got = parse_sandbox_name(sandbox, &names);
        let want = want.map(|(a, l)| (a.to_owned(), l.map(str::to_owned)));
        assert_eq!(got, want);
    }

    #[test]
    fn every_parsed_ref_round_trips_through_its_sandbox_name() {
        let agents = FixedAgents::builtin();
        let names = agents.names();
        for typed in ["claude", "claude@refactor", "desktop@x.y", "ubuntu@a_b-c"] {
            let s = Session::parse(typed, &agents).unwrap();
            let (agent, label) = parse_sandbox_name(s.sandbox(), &names).unwrap();
            assert_eq!(canonical_ref(&agent, label.as_deref()), s.canonical_ref());
        }
    }
}
