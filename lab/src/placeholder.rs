//! Placeholder expansion: `{t}`, `{scratch}`, `{row.x}` and friends.
//!
//! A placeholder is `{` + a lowercase name (letters, digits, `.`, `_`, `-`) +
//! `}`. Anything else in braces is literal text, so shell snippets such as
//! `${HOME}` or `f() { :; }` and regex repetitions such as `{2}` pass through
//! untouched, and so do Go templates such as `{{.Names}}`. There is no
//! escape: no scenario needs a literal `{t}`. A name that looks like a
//! placeholder but is not defined is an error: a typo must never expand to
//! nothing.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

/// The values placeholders expand to, for one trial (and one row).
#[derive(Debug, Clone, Default)]
pub struct Vars {
    values: BTreeMap<String, String>,
}

impl Vars {
    pub fn new() -> Self {
        Vars::default()
    }

    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.values.insert(name.to_owned(), value.into());
    }

    /// A copy with the row's variables added as `row.<name>`. Row values may
    /// use the trial's placeholders (`{t}`, `{scratch}`, …) themselves.
    pub fn with_row(&self, row: Option<&BTreeMap<String, String>>) -> Result<Vars> {
        let mut vars = self.clone();
        for (name, value) in row.into_iter().flatten() {
            vars.set(&format!("row.{name}"), self.expand(value)?);
        }
        Ok(vars)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Expands every placeholder in `text`.
    pub fn expand(&self, text: &str) -> Result<String> {
        self.expand_with(text, |v| v.to_owned())
    }

    /// Expands for use inside a regular expression: substituted values match
    /// literally, the rest of the pattern stays a pattern.
    pub fn expand_regex(&self, text: &str) -> Result<String> {
        self.expand_with(text, regex::escape)
    }

    pub fn expand_all(&self, items: &[String]) -> Result<Vec<String>> {
        items.iter().map(|s| self.expand(s)).collect()
    }

    /// Expands every string inside a JSON value.
    pub fn expand_json(&self, value: &serde_json::Value) -> Result<serde_json::Value> {
        use serde_json::Value;
        Ok(match value {
            Value::String(s) => Value::String(self.expand(s)?),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.expand_json(v)).collect::<Result<_>>()?),
            Value::Object(map) => Value::Object(
                map.iter().map(|(k, v)| Ok((self.expand(k)?, self.expand_json(v)?))).collect::<Result<_>>()?,
            ),
            other => other.clone(),
        })
    }

    fn expand_with(&self, text: &str, render: impl Fn(&str) -> String) -> Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match placeholder_name(after) {
                Some(name) => {
                    let Some(value) = self.values.get(name) else {
                        bail!("unknown placeholder {{{name}}} in {text:?}");
                    };
                    out.push_str(&render(value));
                    rest = &after[name.len() + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// The name of a placeholder starting right after a `{`, if the text there
/// is one (a name, then `}`).
fn placeholder_name(after_brace: &str) -> Option<&str> {
    let end = after_brace.find('}')?;
    let name = &after_brace[..end];
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_lowercase()
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    valid.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        let mut vars = Vars::new();
        vars.set("t", "t4k2p9");
        vars.set("scratch", "/tmp/brig-lab-t4k2p9");
        vars
    }

    #[test]
    fn expands_known_placeholders() {
        assert_eq!(
            vars().expand("{scratch}/a and lab-agent@{t}").unwrap(),
            "/tmp/brig-lab-t4k2p9/a and lab-agent@t4k2p9"
        );
    }

    #[test]
    fn unknown_placeholder_is_an_error_naming_it() {
        let err = vars().expand("lab-agent@{token}").unwrap_err().to_string();
        assert!(err.contains("unknown placeholder {token}"), "{err}");
    }

    #[test]
    fn shell_and_regex_braces_are_literal() {
        let v = vars();
        assert_eq!(v.expand("echo ${HOME}").unwrap(), "echo ${HOME}");
        assert_eq!(v.expand("f() { :; }").unwrap(), "f() { :; }");
        assert_eq!(v.expand("a{2}b{1,3}").unwrap(), "a{2}b{1,3}");
        assert_eq!(v.expand("{{.Names}}").unwrap(), "{{.Names}}");
        assert_eq!(v.expand("unclosed {t").unwrap(), "unclosed {t");
    }

    #[test]
    fn row_variables_are_namespaced() {
        let row = BTreeMap::from([("ref".to_owned(), "a@b@{t}".to_owned())]);
        let v = vars().with_row(Some(&row)).unwrap();
        assert_eq!(v.expand("{row.ref}").unwrap(), "a@b@t4k2p9");
        let err = vars().expand("{row.ref}").unwrap_err().to_string();
        assert!(err.contains("{row.ref}"), "{err}");
    }

    #[test]
    fn regex_expansion_quotes_values_only() {
        let mut v = Vars::new();
        v.set("p", "/tmp/a.b");
        assert_eq!(v.expand_regex("^{p}$").unwrap(), r"^/tmp/a\.b$");
    }

    #[test]
    fn json_strings_expand_recursively() {
        let value = serde_json::json!({"ref": "claude@{t}", "n": [1, "{t}"]});
        assert_eq!(
            vars().expand_json(&value).unwrap(),
            serde_json::json!({"ref": "claude@t4k2p9", "n": [1, "t4k2p9"]})
        );
    }
}
