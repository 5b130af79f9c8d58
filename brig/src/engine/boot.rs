//! Turning a request into the runtime's boot spec: mounts, memory-backed
//! mounts, forwarded variables (values in the child environment only),
//! labels and the network.

use super::Engine;
use super::ensure::BootInput;
use crate::Error;
use crate::profile::{EnvSource, Profile, Ref};
use crate::runtime::adapter::label;
use crate::runtime::{BootSpec, NetworkAttach, Runtime, Tmpfs};
use crate::session::{HomeSource, PreparedHome, project};
use crate::settings::{Network, Settings};

/// The network every `shared` sandbox joins.
pub const SHARED_NETWORK: &str = "brig-shared";

/// The network of one `isolated` sandbox: its own, named after it.
pub fn network_name(sandbox: &str) -> String {
    format!("{sandbox}-net")
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

pub(super) fn spec(engine: &mut Engine<'_>, input: &BootInput<'_>, home: &PreparedHome) -> Result<BootSpec, Error> {
    let profile = &input.req.profile;
    let mut binds = vec![(home.path.clone(), profile.guest_home.clone())];
    // Hostmounts keep one path of a memory-backed mount on host disk: the
    // host side is made inside the home through its handle, so a link planted
    // in the home cannot send the write elsewhere.
    for mount in profile.hostmounts() {
        let made = if mount.file {
            home.dir.open_with(&mount.path, cap_std::fs::OpenOptions::new().create(true).append(true)).map(drop)
        } else {
            home.dir.create_dir_all(&mount.path)
        };
        made.map_err(|e| Error::io("prepare the hostmount", home.path.join(&mount.path), e))?;
        binds.push((home.path.join(&mount.path), mount.target.clone()));
    }
    if let Some(project) = input.project {
        binds.push((project.to_path_buf(), project::guest_path(project)));
    }
    let tmpfs = profile.tmpfs_mounts().into_iter().map(|m| Tmpfs { path: m.target, options: m.options }).collect();
    let mut env = vec![
        ("HOME".to_owned(), profile.guest_home.clone()),
        ("BRIG_WORKSPACE".to_owned(), home.path.display().to_string()),
    ];
    env.extend(forwarded(engine, profile)?);
    let labels = vec![
        (label::AGENT.to_owned(), input.req.session.agent().to_owned()),
        (label::LABEL.to_owned(), input.req.session.label().unwrap_or_default().to_owned()),
        (label::HOME.to_owned(), input.home.path.display().to_string()),
        (label::HOME_CREATED.to_owned(), (input.home.source == HomeSource::Default).to_string()),
        (label::PROJECT.to_owned(), input.project.map(|p| p.display().to_string()).unwrap_or_default()),
        (label::NETWORK.to_owned(), input.resolved.network.to_string()),
        (label::ISOLATION.to_owned(), input.isolation.to_string()),
    ];
    Ok(BootSpec {
        name: input.req.session.sandbox().to_owned(),
        image: input.resolved.image.clone(),
        mem_mb: input.resolved.mem,
        cpus: input.resolved.cpus,
        pull: input.resolved.pull.map(|p| p.as_str()),
        network: NetworkAttach::None,
        binds,
        tmpfs,
        env,
        labels,
    })
}

/// The profile's `env:` bindings that resolve to a value now, as
/// (name, value). Values come from the profile (literals) or brig's own
/// environment (`env.` refs); unset or empty ones are skipped so they never
/// shadow what the image sets. A denylisted name is withheld unless
/// `BRIG_ALLOW_DENIED`; an ambient value that is an unresolved reference
/// (`op://…`) is withheld unless `BRIG_ALLOW_REFS`.
pub(super) fn forwarded(engine: &mut Engine<'_>, profile: &Profile) -> Result<Vec<(String, String)>, Error> {
    let settings = Settings::new(engine.env, &profile.name);
    let allow_denied = settings.flag_bool("ALLOW_DENIED")?;
    let allow_refs = settings.flag_bool("ALLOW_REFS")?;
    let mut out = Vec::new();
    for binding in &profile.env {
        // Every reference was parsed when the profile was validated; a
        // binding that does not parse now cannot resolve to a value.
        let Ok(source) = binding.source() else { continue };
        let value = match source {
            EnvSource::Value(v) => Some(v.to_owned()).filter(|v| !v.is_empty()),
            EnvSource::Ref(r) => ambient(engine, &r),
            EnvSource::Refs(chain) => chain.iter().find_map(|r| ambient(engine, r)),
        };
        let Some(value) = value else { continue };
        if profile.deny.contains(&binding.name) && !allow_denied {
            engine.warnings.push(format!(
                "not forwarding {}: it is on the {} denylist (to forward it anyway: BRIG_ALLOW_DENIED=1)",
                binding.name, profile.name
            ));
            continue;
        }
        if binding.value.is_none() && !allow_refs && looks_like_reference(&value) {
            engine.warnings.push(format!(
                "not forwarding {}: its value looks like an unresolved secret reference, not a credential; resolve it on the host first (or set BRIG_ALLOW_REFS=1)",
                binding.name
            ));
            continue;
        }
        out.push((binding.name.clone(), value));
    }
    Ok(out)
}

/// An `env.` reference read from brig's own environment. `secrets.`
/// references come from the secret store, which this build does not open;
/// they resolve to nothing and the chain moves on.
fn ambient(engine: &Engine<'_>, r: &Ref) -> Option<String> {
    match r {
        Ref::Env(name) => engine.env.get(name).map(str::to_owned),
        Ref::Secret(_) => None,
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
}
