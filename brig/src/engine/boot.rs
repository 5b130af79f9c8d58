//! Turning a request into the runtime's boot spec: mounts, memory-backed
//! mounts, forwarded variables (values in the child environment only),
//! labels and the network.

use super::Engine;
use super::plan::{Ready, mounts};
use crate::Error;
use crate::profile::{EnvSource, Profile, Ref};
use crate::runtime::adapter::label;
use crate::runtime::{Bind, BootSpec, NetworkAttach, Runtime, Tmpfs};
use crate::session::{GuestHome, HomeSource};
use crate::settings::{Network, Settings};

/// The network every `shared` sandbox joins.
pub const SHARED_NETWORK: &str = "brig-shared";

/// What an isolated sandbox's network name adds to the sandbox name.
pub const NETWORK_SUFFIX: &str = "-net";

/// The network of one `isolated` sandbox: its own, named after it. The plan
/// refused sandbox names too long or shaped so this name would not be a
/// valid identifier.
pub fn network_name(sandbox: &str) -> String {
    format!("{sandbox}{NETWORK_SUFFIX}")
}

/// containerd's identifier rule, which nerdctl applies to container and
/// network names: letters and digits, one `.`, `_` or `-` between them, at
/// most 76 characters.
pub fn is_identifier(name: &str) -> bool {
    let bytes = name.as_bytes();
    let separator = |b: u8| matches!(b, b'.' | b'_' | b'-');
    name.len() <= 76
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.iter().all(|&b| b.is_ascii_alphanumeric() || separator(b))
        && !bytes.windows(2).any(|w| separator(w[0]) && separator(w[1]))
}

/// Make sure the network a posture needs exists.
pub fn network(runtime: &dyn Runtime, sandbox: &str, posture: Network) -> Result<NetworkAttach, Error> {
    match posture {
        Network::Offline => Ok(NetworkAttach::None),
        Network::Shared => {
            runtime.ensure_network(SHARED_NETWORK, false)?;
            Ok(NetworkAttach::Named(SHARED_NETWORK.to_owned()))
        }
        Network::Isolated => {
            let name = network_name(sandbox);
            runtime.ensure_network(&name, true)?;
            Ok(NetworkAttach::Named(name))
        }
    }
}

pub fn with_network(mut spec: BootSpec, attach: NetworkAttach) -> BootSpec {
    spec.network = attach;
    spec
}

/// The runtime's boot spec for a plan, with `home` (the plan's, or the
/// legacy home an existing sandbox was found with) as the guest home. The
/// host side of every hostmount was made by `prepare` before this.
pub(super) fn spec(
    engine: &mut Engine<'_>,
    plan: &Ready,
    home: &GuestHome,
    chosen: &super::verify::Chosen,
) -> Result<BootSpec, Error> {
    let profile = &plan.profile;
    let planned = mounts(profile, &home.path, plan.project.as_deref(), &plan.git);
    let binds = planned
        .iter()
        .filter(|m| !m.kind.is_tmpfs())
        .filter_map(|m| m.host.clone().map(|host| Bind { host, guest: m.guest.clone(), read_only: m.read_only }))
        .collect();
    let tmpfs = planned
        .iter()
        .filter(|m| m.kind.is_tmpfs())
        .map(|m| Tmpfs { path: m.guest.clone(), options: m.options.clone().unwrap_or_default() })
        .collect();
    let mut env = vec![
        ("HOME".to_owned(), profile.guest_home.clone()),
        ("BRIG_WORKSPACE".to_owned(), home.path.display().to_string()),
    ];
    // Only the profile's literals are set at create: a value from the host
    // (an exported variable, a secret) is given to each command as it runs,
    // never kept in the runtime's stored configuration of the sandbox.
    env.extend(forwarded(engine, profile, Bindings::Literals)?.into_iter().map(|f| (f.name, f.value)));
    let labels = vec![
        (label::AGENT.to_owned(), plan.session.agent().to_owned()),
        (label::LABEL.to_owned(), plan.session.label().unwrap_or_default().to_owned()),
        (label::HOME.to_owned(), home.path.display().to_string()),
        (label::HOME_CREATED.to_owned(), (home.source == HomeSource::Default).to_string()),
        (label::PROJECT.to_owned(), plan.project.as_ref().map(|p| p.display().to_string()).unwrap_or_default()),
        (label::NETWORK.to_owned(), plan.resolved.network.to_string()),
        (label::ISOLATION.to_owned(), plan.isolation.to_string()),
        (label::PUBLISH.to_owned(), crate::ports::to_label(&plan.resolved.publish)),
    ];
    Ok(BootSpec {
        name: plan.session.sandbox().to_owned(),
        image: chosen.image.clone(),
        mem_mb: plan.resolved.mem,
        cpus: plan.resolved.cpus,
        pull: chosen.pull.map(|p| p.as_str()),
        network: NetworkAttach::None,
        publish: plan.resolved.publish.clone(),
        binds,
        tmpfs,
        env,
        labels,
        hardening: engine.hardening(plan.isolation, plan.runtime.kind())?,
    })
}

/// One variable for the guest, and whether its value came from brig's own
/// environment (what `BRIG_ENV_ARGV=1` may put on a command line).
#[derive(Debug, Clone)]
pub struct Forwarded {
    pub name: String,
    pub value: String,
    pub ambient: bool,
}

/// Which of a profile's `env:` bindings to resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bindings {
    /// `value:` literals only: what a sandbox may keep in its stored
    /// configuration.
    Literals,
    /// Every binding, for one command.
    All,
    /// Every binding, to find a value that would refuse the run before
    /// anything exists; warnings are left to the command that uses them.
    Check,
}

/// The profile's `env:` bindings that resolve to a value now, as
/// (name, value). Values come from the profile (literals) or brig's own
/// environment (`env.` refs); unset or empty ones are skipped so they never
/// shadow what the image sets. A denylisted name is withheld unless
/// `BRIG_ALLOW_DENIED`; an ambient value that is an unresolved reference
/// (`op://…`) is withheld unless `BRIG_ALLOW_REFS`. A value a variable
/// cannot carry (a line break or a NUL) refuses the run, naming it.
pub(super) fn forwarded(engine: &mut Engine<'_>, profile: &Profile, which: Bindings) -> Result<Vec<Forwarded>, Error> {
    let settings = Settings::new(engine.env, &profile.name);
    let allow_denied = settings.flag_bool("ALLOW_DENIED")?;
    let allow_refs = settings.flag_bool("ALLOW_REFS")?;
    let mut out = Vec::new();
    for binding in &bindings(engine, profile, which == Bindings::All)? {
        if which == Bindings::Literals && binding.value.is_none() {
            continue;
        }
        // Every reference was parsed when the profile was validated; a
        // binding that does not parse now cannot resolve to a value.
        let Ok(source) = binding.source() else { continue };
        let chain = match source {
            EnvSource::Value(_) => Vec::new(),
            EnvSource::Ref(r) => vec![r],
            EnvSource::Refs(chain) => chain,
        };
        // The value, and whether it came from the secret store.
        let resolved = match binding.value.as_deref() {
            Some("") => None,
            Some(literal) => Some((literal.to_owned(), false)),
            None => {
                let mut found = None;
                for r in &chain {
                    if let Some(v) = resolve(engine, profile, r, which)? {
                        found = Some((v, matches!(r, Ref::Secret(_))));
                        break;
                    }
                }
                found
            }
        };
        // A `secrets.` reference never feeds HOME, PATH, TMPDIR or XDG_*:
        // the profile was refused when it was read.
        let Some((value, from_store)) = resolved else { continue };
        if value.contains(['\n', '\r', '\0']) {
            return Err(super::Error::UnsendableValue { name: binding.name.clone() }.into());
        }
        let warn = which != Bindings::Check;
        if profile.deny.contains(&binding.name) && !allow_denied {
            if warn {
                engine.warnings.push(format!(
                    "not forwarding {}: it is on the {} denylist (to forward it anyway: BRIG_ALLOW_DENIED=1)",
                    binding.name, profile.name
                ));
            }
            continue;
        }
        if binding.value.is_none() && !from_store && !allow_refs && looks_like_reference(&value) {
            if warn {
                engine.warnings.push(format!(
                    "not forwarding {}: its value looks like an unresolved secret reference, not a credential; resolve it on the host first (or set BRIG_ALLOW_REFS=1)",
                    binding.name
                ));
            }
            continue;
        }
        let ambient = binding.value.is_none() && !from_store;
        out.push(Forwarded { name: binding.name.clone(), value, ambient });
    }
    Ok(out)
}

/// `BRIG_FORWARD_ENV` (or `BRIG_<AGENT>_FORWARD_ENV`): the names it lists,
/// read live on every run; `None` when unset or blank. A name that is not a
/// variable name (`[A-Za-z_][A-Za-z0-9_]*`) refuses the run, naming it.
pub(super) fn forward_list(engine: &Engine<'_>, profile: &Profile) -> Result<Option<Vec<String>>, Error> {
    let settings = Settings::new(engine.env, &profile.name);
    let Some((variable, text)) = settings.variable("FORWARD_ENV") else { return Ok(None) };
    let mut names: Vec<String> = Vec::new();
    for name in text.split_whitespace() {
        let mut chars = name.chars();
        let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(super::Error::BadForwardName { variable, name: name.to_owned() }.into());
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    Ok((!names.is_empty()).then_some(names))
}

/// The profile's bindings as this run sees them. A forward list replaces
/// the profile's singular `ref: env.X` bindings with one per listed name;
/// chains, secrets and literals stay, and a listed name the profile binds
/// from another source keeps that source (with a warning).
fn bindings(engine: &mut Engine<'_>, profile: &Profile, warn: bool) -> Result<Vec<crate::profile::EnvBinding>, Error> {
    let Some(listed) = forward_list(engine, profile)? else { return Ok(profile.env.clone()) };
    let singular_env = |b: &crate::profile::EnvBinding| matches!(b.source(), Ok(EnvSource::Ref(Ref::Env(_))));
    let mut out: Vec<_> = profile.env.iter().filter(|b| !singular_env(b)).cloned().collect();
    for name in listed {
        if out.iter().any(|b| b.name == name) {
            if warn {
                engine.warnings.push(format!(
                    "BRIG_FORWARD_ENV lists {name}, which {} binds from another source; that source stays",
                    profile.name
                ));
            }
            continue;
        }
        out.push(crate::profile::EnvBinding {
            name: name.clone(),
            value: None,
            reference: Some(format!("env.{name}")),
            refs: None,
        });
    }
    Ok(out)
}

/// One element of a chain: an `env.` reference from brig's own
/// environment, or a `secrets.` one from the store (its declared `field:`
/// taken from a JSON document). Empty is absent. A check before anything
/// exists opens no store: the plan already checked what it holds.
fn resolve(engine: &mut Engine<'_>, profile: &Profile, r: &Ref, which: Bindings) -> Result<Option<String>, Error> {
    match r {
        Ref::Env(name) => Ok(engine.env.get(name).filter(|v| !v.is_empty()).map(str::to_owned)),
        Ref::Secret(_) if which == Bindings::Check => Ok(None),
        Ref::Secret(name) => {
            let store = match engine.secret_store() {
                Ok(store) => store,
                Err(err) if profile.secret(name).is_some_and(|d| !d.required) => {
                    tracing::debug!("the optional secret {name} is not read: {err}");
                    return Ok(None);
                }
                Err(err) => return Err(err.into()),
            };
            let Some(secret) = store.get(name)? else { return Ok(None) };
            let field = profile.secret(name).and_then(|d| d.field.clone());
            let text = crate::secrets::as_text(name, &secret, field.as_deref())?;
            Ok(Some(text).filter(|t| !t.is_empty()))
        }
    }
}

/// `scheme://rest` with a non-empty scheme without blanks, other than http(s).
fn looks_like_reference(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once("://") else { return false };
    !scheme.is_empty() && !rest.is_empty() && !scheme.contains([' ', '\t']) && !matches!(scheme, "http" | "https")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("op://vault/item", true)]
    #[case("https://example.com", false)]
    #[case("http://x", false)]
    #[case("plain-token", false)]
    #[case("://x", false)]
    #[case("a b://x", false)]
    #[case("vault://", false)]
    fn unresolved_references(#[case] value: &str, #[case] want: bool) {
        assert_eq!(looks_like_reference(value), want);
    }

    #[rstest]
    #[case::plain("brig-lab-agent-x-net", true)]
    #[case::dots("brig-lab-agent-a..b-net", false)]
    #[case::mixed("brig-lab-agent-a_-b-net", false)]
    #[case::dot_dash("brig-a-.-b", false)]
    #[case::single_separators("brig-a.b_c-d", true)]
    #[case::trailing("brig-a-", false)]
    fn containerd_identifiers(#[case] name: &str, #[case] ok: bool) {
        assert_eq!(is_identifier(name), ok);
    }

    #[test]
    fn the_longest_sandbox_name_has_a_usable_network() {
        let sandbox = format!("brig-{}", "a".repeat(super::super::plan::MAX_SANDBOX_NAME - 5));
        assert!(is_identifier(&network_name(&sandbox)));
        assert!(!is_identifier(&network_name(&format!("{sandbox}a"))));
    }
}
