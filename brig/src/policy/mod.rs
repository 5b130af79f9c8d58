//! Egress policies (spec 05 §2.5): the document, its rules, and the one
//! policy a run gets from every policy bound to its profile and session.
//!
//! A policy says where an isolated sandbox may open connections beyond the
//! host: a default, and `allow`/`deny` lists of `host:` or `cidr:` rules.
//! Bound policies are joined: rules concatenated, the strictest default,
//! deny beating allow beating the default. [`crate::firewall`] enforces the
//! joined policy with the sandbox's nftables table; `host:` rules are
//! resolved to addresses when the rules are written.

pub mod store;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

pub use store::{Attachments, Binding, Store};

/// The only `apiVersion` a policy document may carry.
pub const API_VERSION: &str = "brig.sh/v1alpha1";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{file} is not an egress policy: {why}")]
    Invalid { file: String, why: String },
    #[error("there is no egress policy called {name} in {}; `brig policy ls` lists them", dir.display())]
    Unknown { name: String, dir: std::path::PathBuf },
    #[error("a policy called {name} already exists ({}); pass --force to replace it", path.display())]
    Exists { name: String, path: std::path::PathBuf },
    #[error("{name} is bound to {}; detach it first, or pass --force", bound.join(", "))]
    Bound { name: String, bound: Vec<String> },
    #[error("{what}")]
    Refused { what: String },
    #[error("{file} is unreadable: {why}")]
    Unreadable { file: String, why: String },
    #[error(
        "the egress policy of {sandbox} cannot be enforced: {why}; run without the policy (`brig policy detach`), or where brig enforces policies (nerdctl or podman, as root, with nftables)"
    )]
    Unenforceable { sandbox: String, why: String },
}

/// A policy document as written. Strict: an unknown field is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    pub api_version: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub desc: String,
    pub egress: Egress,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Egress {
    pub default: Default,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<Rule>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Default {
    Allow,
    Deny,
}

impl std::fmt::Display for Default {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Default::Allow => "allow",
            Default::Deny => "deny",
        })
    }
}

/// One rule as written: exactly one of `host:` and `cidr:`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
}

/// A rule checked: a host name, a host glob, or a network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Host(String),
    /// A name with `*`: which addresses it covers is known only name by
    /// name, so it can be enforced only where it changes nothing.
    Glob(String),
    Net(Net),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Host(h) | Target::Glob(h) => write!(f, "host:{h}"),
            Target::Net(n) => write!(f, "cidr:{n}"),
        }
    }
}

/// An address and prefix length, host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Net {
    pub fn parse(text: &str) -> Option<Net> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (a, p.parse::<u8>().ok()?),
            Some(_) => return None,
            None => (text, if text.contains(':') { 128 } else { 32 }),
        };
        let addr: IpAddr = addr.parse().ok()?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return None;
        }
        let addr = match addr {
            IpAddr::V4(a) => {
                let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) };
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) => {
                let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix)) };
                IpAddr::V6((u128::from(a) & mask).into())
            }
        };
        Some(Net { addr, prefix })
    }

    /// Whether `ip` lies in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        Net::parse(&format!("{ip}/{}", self.prefix)).is_some_and(|n| n == *self)
    }

    /// A single address as a network of one.
    pub fn host(addr: IpAddr) -> Net {
        Net { addr, prefix: if addr.is_ipv4() { 32 } else { 128 } }
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Rule {
    pub fn target(&self) -> Result<Target, String> {
        match (&self.host, &self.cidr) {
            (Some(host), None) => {
                if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(format!("host {host:?} is empty or holds a blank or control character"));
                }
                let host = host.trim_end_matches('.').to_ascii_lowercase();
                Ok(if host.contains('*') { Target::Glob(host) } else { Target::Host(host) })
            }
            (None, Some(cidr)) => Net::parse(cidr)
                .map(Target::Net)
                .ok_or_else(|| format!("cidr {cidr:?} is not an address with an optional /prefix")),
            _ => Err("a rule takes exactly one of host: and cidr:".into()),
        }
    }
}

/// Lowercase letters, digits, `.`, `-` and `_`, starting with a letter or
/// digit, and read back as the same string from unquoted YAML (so `no`,
/// `true`, `123` or `1e3`, which YAML reads as something else, are refused).
pub fn check_name(name: &str) -> Result<(), String> {
    let shape = name.len() <= 63
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_'));
    if !shape {
        return Err(format!(
            "the name {name:?} must be lowercase letters, digits, '.', '-' or '_', starting with a letter or digit, at most 63 long"
        ));
    }
    let read: Result<serde_json::Value, _> = serde_saphyr::from_str(name);
    match read {
        Ok(serde_json::Value::String(s)) if s == name => Ok(()),
        _ => Err(format!("the name {name:?} reads as something other than a string in YAML; choose another")),
    }
}

/// Parse and check one policy document (YAML or JSON).
pub fn parse(text: &str, file: &str) -> Result<Policy, Error> {
    let invalid = |why: String| Error::Invalid { file: file.to_owned(), why };
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    let policy: Policy = serde_saphyr::from_str_with_options(text, options).map_err(|e| invalid(e.to_string()))?;
    if policy.api_version != API_VERSION {
        return Err(invalid(format!("apiVersion must be {API_VERSION}, not {:?}", policy.api_version)));
    }
    check_name(&policy.name).map_err(invalid)?;
    if policy.desc.contains(['\n', '\r']) {
        return Err(invalid("desc is one line".into()));
    }
    for (list, rules) in [("allow", &policy.egress.allow), ("deny", &policy.egress.deny)] {
        for (i, rule) in rules.iter().enumerate() {
            rule.target().map_err(|why| invalid(format!("egress.{list}[{i}]: {why}")))?;
        }
    }
    Ok(policy)
}

/// The one policy a run gets from every policy bound to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Joined {
    /// The policies joined, in binding order.
    pub names: Vec<String>,
    pub default: Default,
    #[serde(serialize_with = "targets")]
    pub allow: Vec<Target>,
    #[serde(serialize_with = "targets")]
    pub deny: Vec<Target>,
}

fn targets<S: serde::Serializer>(list: &[Target], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(list.iter().map(ToString::to_string))
}

impl Joined {
    /// Rules concatenated; a single `deny` default makes the whole deny.
    pub fn join(policies: &[Policy]) -> Option<Joined> {
        let first = policies.first()?;
        let mut joined =
            Joined { names: Vec::new(), default: first.egress.default, allow: Vec::new(), deny: Vec::new() };
        for p in policies {
            joined.names.push(p.name.clone());
            joined.default = joined.default.max(p.egress.default);
            // Checked when parsed: every rule has a target.
            joined.allow.extend(p.egress.allow.iter().filter_map(|r| r.target().ok()));
            joined.deny.extend(p.egress.deny.iter().filter_map(|r| r.target().ok()));
        }
        Some(joined)
    }

    /// A glob that would have to let something through (an allow under a
    /// deny default) or stop something (a deny under an allow default): no
    /// address list can say which connections that is.
    pub fn unenforceable_glob(&self) -> Option<&Target> {
        let list = match self.default {
            Default::Deny => &self.allow,
            Default::Allow => &self.deny,
        };
        list.iter().find(|t| matches!(t, Target::Glob(_)))
    }

    /// Every rule as networks, `host:` rules resolved now by the host's
    /// resolver. A name that does not resolve is left out and named.
    pub fn resolve(&self) -> Resolved {
        let mut unresolved = Vec::new();
        let mut nets = |list: &[Target]| {
            let mut out = Vec::new();
            for target in list {
                match target {
                    Target::Net(net) => out.push(*net),
                    Target::Host(host) => {
                        let found = resolve_host(host);
                        if found.is_empty() {
                            unresolved.push(host.clone());
                        }
                        out.extend(found.into_iter().map(Net::host));
                    }
                    Target::Glob(_) => {}
                }
            }
            out
        };
        let allow = nets(&self.allow);
        let deny = nets(&self.deny);
        Resolved { default: self.default, allow, deny, unresolved }
    }
}

/// A joined policy as addresses, as the firewall writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub default: Default,
    pub allow: Vec<Net>,
    pub deny: Vec<Net>,
    /// `host:` rules the host could not resolve when the rules were written.
    pub unresolved: Vec<String>,
}

/// The addresses the host's resolver gives for a name, now.
pub fn resolve_host(host: &str) -> Vec<IpAddr> {
    use std::net::ToSocketAddrs;
    let mut out: Vec<IpAddr> =
        (host, 0u16).to_socket_addrs().map(|addrs| addrs.map(|a| a.ip()).collect()).unwrap_or_default();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const DOC: &str = "apiVersion: brig.sh/v1alpha1\nname: web\negress:\n  default: deny\n  allow:\n    - host: github.com\n    - cidr: 10.1.2.3/8\n";

    #[test]
    fn a_document_parses_and_its_networks_lose_their_host_bits() {
        let p = parse(DOC, "web.yaml").unwrap();
        assert_eq!(p.egress.default, Default::Deny);
        let joined = Joined::join(&[p]).unwrap();
        assert_eq!(joined.allow[1].to_string(), "cidr:10.0.0.0/8");
    }

    #[rstest]
    #[case::version(DOC.replace("v1alpha1", "v1"), "apiVersion")]
    #[case::unknown_field(format!("{DOC}extra: 1\n"), "extra")]
    #[case::name_yaml_bool(DOC.replace("name: web", "name: \"no\""), "reads as something other")]
    #[case::name_number(DOC.replace("name: web", "name: \"123\""), "reads as something other")]
    #[case::name_upper(DOC.replace("name: web", "name: Web"), "lowercase")]
    #[case::both(DOC.replace("- host: github.com", "- {host: a, cidr: 10.0.0.0/8}"), "exactly one")]
    #[case::neither(DOC.replace("- host: github.com", "- {}"), "exactly one")]
    #[case::bad_cidr(DOC.replace("10.1.2.3/8", "10.1.2.3/33"), "cidr")]
    #[case::blank_host(DOC.replace("github.com", "\"git hub\""), "blank")]
    #[case::bad_default(DOC.replace("default: deny", "default: maybe"), "maybe")]
    #[case::two_line_desc(DOC.replace("egress:", "desc: \"a\\nb\"\negress:"), "one line")]
    fn a_bad_document_is_refused(#[case] doc: String, #[case] says: &str) {
        let err = parse(&doc, "p.yaml").unwrap_err().to_string();
        assert!(err.contains(says) && err.contains("p.yaml"), "{err}");
    }

    #[test]
    fn json_parses_too() {
        let doc =
            r#"{"apiVersion":"brig.sh/v1alpha1","name":"j","egress":{"default":"allow","deny":[{"cidr":"::1"}]}}"#;
        let p = parse(doc, "j.json").unwrap();
        assert_eq!(Joined::join(&[p]).unwrap().deny[0].to_string(), "cidr:::1/128");
    }

    #[test]
    fn joining_takes_the_strictest_default_and_every_rule() {
        let allow = parse(&DOC.replace("default: deny", "default: allow"), "a").unwrap();
        let deny = parse(&DOC.replace("name: web", "name: other"), "b").unwrap();
        let joined = Joined::join(&[allow, deny]).unwrap();
        assert_eq!((joined.default, joined.allow.len(), joined.names.len()), (Default::Deny, 4, 2));
    }

    #[test]
    fn a_glob_is_unenforceable_only_where_it_would_matter() {
        let glob = |default: &str, list: &str| {
            let doc = format!(
                "apiVersion: brig.sh/v1alpha1\nname: g\negress:\n  default: {default}\n  {list}:\n    - host: \"*.example.com\"\n"
            );
            Joined::join(&[parse(&doc, "g").unwrap()]).unwrap().unenforceable_glob().is_some()
        };
        assert!(glob("deny", "allow") && glob("allow", "deny"));
        assert!(!glob("deny", "deny") && !glob("allow", "allow"));
    }

    #[test]
    fn an_address_host_resolves_to_itself_and_an_unknown_name_is_named() {
        let doc = "apiVersion: brig.sh/v1alpha1\nname: h\negress:\n  default: deny\n  allow:\n    - host: 192.0.2.7\n    - host: nothing.invalid\n";
        let resolved = Joined::join(&[parse(doc, "h").unwrap()]).unwrap().resolve();
        assert_eq!(resolved.allow, vec![Net::parse("192.0.2.7/32").unwrap()]);
        assert_eq!(resolved.unresolved, vec!["nothing.invalid".to_owned()]);
    }
}
