//! Settings: one value, many places it can come from.
//!
//! A per-agent setting is read flag → `BRIG_<AGENT>_<KEY>` → `BRIG_<KEY>` →
//! profile field → built-in default, where `<AGENT>` is the profile name
//! upper-cased with `-` turned into `_`. Global-only settings have no
//! per-agent form. An unrecognised value is refused (exit 2) naming the
//! variable, the value and the valid values: a typo never falls back silently.

use std::fmt;

use crate::environment::Environment;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("{source_name}={value:?} is not a valid value; valid values: {valid}")]
    BadValue { source_name: String, value: String, valid: &'static str },
    #[error("--offline cannot be combined with --network {network}")]
    OfflineWithNetwork { network: Network },
}

/// Where a setting's value came from, for messages and `brig info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag(&'static str),
    Env(String),
    Recorded,
    Profile,
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(flag) => write!(f, "{flag}"),
            Source::Env(var) => write!(f, "{var}"),
            Source::Recorded => f.write_str("recorded for this sandbox"),
            Source::Profile => f.write_str("profile"),
            Source::Default => f.write_str("default"),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

/// A setting with a closed set of spellings.
pub trait Enumerated: Sized + Copy {
    /// What to print as "valid values".
    const VALID: &'static str;
    fn parse(text: &str) -> Option<Self>;
}

macro_rules! enumerated {
    ($(#[$doc:meta])* $name:ident, $valid:literal { $($variant:ident => $canon:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum $name { $($variant),+ }

        impl Enumerated for $name {
            const VALID: &'static str = $valid;
            // Trimmed and in any case, as booleans are (spec 05 §1.1):
            // `STRICT` is as clear as `strict`; a word outside the set
            // still refuses.
            fn parse(text: &str) -> Option<Self> {
                match text.trim().to_ascii_lowercase().as_str() {
                    $($canon $(| $alias)* => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $canon),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

enumerated!(
    /// `BRIG_VERIFY`: what happens when an image does not verify.
    Verify, "warn, require (strict), off (none, 0)" {
        Warn => "warn",
        Require => "require" | "strict",
        Off => "off" | "none" | "0",
    }
);

enumerated!(
    /// A sandbox's network posture. A new sandbox is `isolated` unless told otherwise.
    Network, "shared, isolated, offline" {
        Shared => "shared",
        Isolated => "isolated",
        Offline => "offline",
    }
);

enumerated!(
    /// `BRIG_PULL`: when the runtime may pull the image.
    Pull, "missing, always, never" {
        Missing => "missing",
        Always => "always",
        Never => "never",
    }
);

/// Booleans are spelled one of a closed set too; `BRIG_ALLOW_DENIED=false`
/// must never read as "on".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bool(pub bool);

impl Enumerated for Bool {
    const VALID: &'static str = "1, true, yes, on, 0, false, no, off";
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Some(Bool(true)),
            "0" | "false" | "no" | "off" => Some(Bool(false)),
            _ => None,
        }
    }
}

/// A positive whole number (memory in MB, vCPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Positive(pub u32);

impl Enumerated for Positive {
    const VALID: &'static str = "a whole number greater than 0";
    fn parse(text: &str) -> Option<Self> {
        text.parse::<u32>().ok().filter(|n| *n > 0).map(Positive)
    }
}

/// Parse `text` as `T`, or refuse naming where it came from.
pub fn parse_as<T: Enumerated>(source_name: &str, text: &str) -> Result<T, Error> {
    T::parse(text).ok_or_else(|| Error::BadValue {
        source_name: source_name.to_owned(),
        value: text.to_owned(),
        valid: T::VALID,
    })
}

/// The per-agent variable name: `BRIG_CLAUDE_CODE_MEM` for (`claude-code`, `MEM`).
pub fn agent_variable(agent: &str, key: &str) -> String {
    let agent: String =
        agent.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("BRIG_{agent}_{key}")
}

/// Reads settings for one agent.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    env: &'a Environment,
    agent: &'a str,
}

impl<'a> Settings<'a> {
    pub fn new(env: &'a Environment, agent: &'a str) -> Self {
        Settings { env, agent }
    }

    /// `BRIG_<AGENT>_<KEY>`, then `BRIG_<KEY>`: the variable that is set, and its value.
    pub fn variable(&self, key: &str) -> Option<(String, &'a str)> {
        let per_agent = agent_variable(self.agent, key);
        if let Some(value) = self.env.get(&per_agent) {
            return Some((per_agent, value));
        }
        let global = format!("BRIG_{key}");
        self.env.get(&global).map(|value| (global, value))
    }

    /// Resolve a per-agent setting through the whole precedence chain.
    /// `recorded` sits between the environment and the profile: it is what an
    /// existing sandbox was created with (only the network posture uses it).
    pub fn resolve<T: Enumerated>(
        &self,
        flag: Option<(&'static str, T)>,
        key: &str,
        recorded: Option<T>,
        profile: Option<T>,
        default: T,
    ) -> Result<Setting<T>, Error> {
        if let Some((flag, value)) = flag {
            return Ok(Setting { value, source: Source::Flag(flag) });
        }
        if let Some((variable, text)) = self.variable(key) {
            let value = parse_as::<T>(&variable, text)?;
            return Ok(Setting { value, source: Source::Env(variable) });
        }
        let (value, source) = match (recorded, profile) {
            (Some(value), _) => (value, Source::Recorded),
            (None, Some(value)) => (value, Source::Profile),
            (None, None) => (default, Source::Default),
        };
        Ok(Setting { value, source })
    }

    /// A boolean per-agent setting with no flag and no profile field.
    pub fn flag_bool(&self, key: &str) -> Result<bool, Error> {
        self.flag_bool_or(key, false)
    }

    /// A boolean with its default when unset.
    pub fn flag_bool_or(&self, key: &str, default: bool) -> Result<bool, Error> {
        Ok(self.resolve::<Bool>(None, key, None, None, Bool(default))?.value.0)
    }
}

/// A global-only setting (no per-agent form), parsed strictly.
pub fn global<T: Enumerated>(env: &Environment, variable: &str) -> Result<Option<T>, Error> {
    env.get(variable).map(|text| parse_as::<T>(variable, text)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_pairs(pairs.iter().copied())
    }

    #[rstest]
    #[case("claude-code", "MEM", "BRIG_CLAUDE_CODE_MEM")]
    #[case("lab.agent", "NETWORK", "BRIG_LAB_AGENT_NETWORK")]
    #[case("x", "VERIFY", "BRIG_X_VERIFY")]
    fn agent_variable_names(#[case] agent: &str, #[case] key: &str, #[case] want: &str) {
        assert_eq!(agent_variable(agent, key), want);
    }

    #[rstest]
    #[case::flag_wins(Some(Network::Offline), &[("BRIG_CLAUDE_CODE_NETWORK", "shared"), ("BRIG_NETWORK", "shared")], Some(Network::Shared), Network::Offline, Source::Flag("--network"))]
    #[case::agent_env_over_global(None, &[("BRIG_CLAUDE_CODE_NETWORK", "offline"), ("BRIG_NETWORK", "shared")], None, Network::Offline, Source::Env("BRIG_CLAUDE_CODE_NETWORK".into()))]
    #[case::global_env(None, &[("BRIG_NETWORK", "shared")], Some(Network::Offline), Network::Shared, Source::Env("BRIG_NETWORK".into()))]
    #[case::empty_env_is_unset(None, &[("BRIG_NETWORK", "")], None, Network::Isolated, Source::Default)]
    #[case::recorded_over_profile(None, &[], Some(Network::Shared), Network::Shared, Source::Recorded)]
    #[case::default(None, &[], None, Network::Isolated, Source::Default)]
    fn network_precedence(
        #[case] flag: Option<Network>,
        #[case] vars: &[(&str, &str)],
        #[case] recorded: Option<Network>,
        #[case] want: Network,
        #[case] source: Source,
    ) {
        let env = env(vars);
        let got = Settings::new(&env, "claude-code")
            .resolve(flag.map(|f| ("--network", f)), "NETWORK", recorded, None, Network::Isolated)
            .unwrap();
        assert_eq!(got, Setting { value: want, source });
    }

    #[test]
    fn profile_is_used_below_env_and_record() {
        let env = env(&[]);
        let got =
            Settings::new(&env, "a").resolve(None, "NETWORK", None, Some(Network::Shared), Network::Isolated).unwrap();
        assert_eq!(got, Setting { value: Network::Shared, source: Source::Profile });
    }

    #[rstest]
    #[case("BRIG_VERIFY", "maybe", "warn, require (strict), off (none, 0)")]
    #[case("BRIG_A_VERIFY", "warning", "warn, require (strict), off (none, 0)")]
    fn unknown_verify_value_is_refused_by_name(#[case] var: &str, #[case] value: &str, #[case] valid: &'static str) {
        let env = env(&[(var, value)]);
        let err = Settings::new(&env, "a").resolve(None, "VERIFY", None, None, Verify::Warn).unwrap_err();
        assert_eq!(err, Error::BadValue { source_name: var.into(), value: value.into(), valid });
        let text = err.to_string();
        assert!(text.contains(var) && text.contains(value) && text.contains("require"), "{text}");
    }

    #[rstest]
    #[case("strict", Verify::Require)]
    #[case("none", Verify::Off)]
    #[case("0", Verify::Off)]
    #[case("require", Verify::Require)]
    #[case(" STRICT ", Verify::Require)]
    #[case("Warn", Verify::Warn)]
    fn verify_aliases(#[case] text: &str, #[case] want: Verify) {
        assert_eq!(Verify::parse(text), Some(want));
    }

    #[rstest]
    #[case("1", Some(true))]
    #[case("TRUE", Some(true))]
    #[case("yes", Some(true))]
    #[case("on", Some(true))]
    #[case("0", Some(false))]
    #[case("false", Some(false))]
    #[case("no", Some(false))]
    #[case("off", Some(false))]
    #[case("enabled", None)]
    #[case("2", None)]
    fn booleans(#[case] text: &str, #[case] want: Option<bool>) {
        assert_eq!(Bool::parse(text).map(|b| b.0), want);
    }

    #[test]
    fn a_false_boolean_is_off_and_a_typo_is_refused() {
        let off = env(&[("BRIG_ALLOW_DENIED", "false")]);
        assert!(!Settings::new(&off, "a").flag_bool("ALLOW_DENIED").unwrap());
        let typo = env(&[("BRIG_ALLOW_DENIED", "ture")]);
        assert!(matches!(
            Settings::new(&typo, "a").flag_bool("ALLOW_DENIED"),
            Err(Error::BadValue { source_name, .. }) if source_name == "BRIG_ALLOW_DENIED"
        ));
    }

    #[rstest]
    #[case("4096", Some(4096))]
    #[case("1", Some(1))]
    #[case("0", None)]
    #[case("-2", None)]
    #[case("1.5", None)]
    #[case("lots", None)]
    fn positive_numbers(#[case] text: &str, #[case] want: Option<u32>) {
        assert_eq!(Positive::parse(text).map(|p| p.0), want);
    }

    #[test]
    fn global_only_settings_ignore_agent_forms() {
        let env = env(&[("BRIG_A_PULL", "always")]);
        assert_eq!(global::<Pull>(&env, "BRIG_PULL").unwrap(), None);
        let env2 = Environment::from_pairs([("BRIG_PULL", "sometimes")]);
        assert!(global::<Pull>(&env2, "BRIG_PULL").is_err());
    }
}
