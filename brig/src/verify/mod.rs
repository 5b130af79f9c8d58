//! Image verification (spec 05 §1): whether an image is one of ours, and
//! whether its registry holds a cosign signature for its digest that the
//! policy trusts. Natively: the sigstore crate reads and checks the
//! signatures, no `cosign` binary runs (decision 8).
//!
//! This module answers "what is true of this image"; what to do about it
//! (boot, ask, refuse) is the engine's decision table (`engine::verify`).

mod native;
mod trust_root;

use std::path::PathBuf;
use std::time::Duration;

pub use trust_root::TrustRoot;

use crate::environment::Environment;

/// What counts as ours, and who must have signed it, unless replaced.
pub const REGISTRY: &str = "ghcr.io/brig-sh/";
pub const IDENTITY: &str =
    r"^https://github\.com/brig-sh/community-images/\.github/workflows/build-images\.yml@refs/heads/main$";
pub const ISSUER: &str = "https://token.actions.githubusercontent.com";

/// A registry that does not answer within this is reported as not
/// answering, never as a bad signature.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Settings that are not valid: refused before anything exists (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("BRIG_VERIFY_IDENTITY {value:?} is not a regular expression ({why}); give one such as {IDENTITY:?}")]
    Identity { value: String, why: String },
    #[error("BRIG_VERIFY_KEY {}: {why}; give the path of a cosign public key (cosign.pub)", path.display())]
    Key { path: PathBuf, why: String },
    #[error("BRIG_VERIFY_TRUST_ROOT {}: {why}; give the path of a sigstore trusted_root.json", path.display())]
    TrustRoot { path: PathBuf, why: String },
    #[error("{variable} is set but empty; unset it to use brig's own, or give a value")]
    Empty { variable: &'static str },
}

/// Who is trusted to have signed which images.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The normalised prefix of our images' references.
    pub registry: String,
    pub identity: String,
    identity_re: regex::Regex,
    pub issuer: String,
    /// A cosign public key (PEM) whose signatures verify, with its path.
    pub key: Option<(PathBuf, Vec<u8>)>,
    pub trust_root: TrustRoot,
    /// Whether any of the settings differs from brig's own policy.
    pub replaced: bool,
}

impl Policy {
    /// The policy the environment sets (`BRIG_VERIFY_REGISTRY`, `_IDENTITY`,
    /// `_ISSUER`, `_KEY`, `_TRUST_ROOT`), reading the key and trust root now
    /// so that a bad one refuses before anything exists.
    pub fn from_env(env: &Environment) -> Result<Policy, Error> {
        let get = |variable: &'static str| match env.get_raw(variable) {
            Some(value) if value.trim().is_empty() => Err(Error::Empty { variable }),
            other => Ok(other.map(|v| v.trim().to_owned())),
        };
        let registry = get("BRIG_VERIFY_REGISTRY")?;
        let identity = get("BRIG_VERIFY_IDENTITY")?;
        let issuer = get("BRIG_VERIFY_ISSUER")?;
        let key = get("BRIG_VERIFY_KEY")?.map(|p| env.expand_tilde(&p));
        let root = get("BRIG_VERIFY_TRUST_ROOT")?.map(|p| env.expand_tilde(&p));
        let replaced = registry.as_deref().is_some_and(|r| normalise(r) != REGISTRY)
            || identity.as_deref().is_some_and(|i| i != IDENTITY)
            || issuer.as_deref().is_some_and(|i| i != ISSUER)
            || key.is_some()
            || root.is_some();
        let identity = identity.unwrap_or_else(|| IDENTITY.to_owned());
        // Anchored at both ends whatever was written: an identity that is a
        // prefix or a part of the one trusted must not pass.
        let identity_re = regex::Regex::new(&format!("^(?:{identity})$"))
            .map_err(|e| Error::Identity { value: identity.clone(), why: e.to_string() })?;
        let key = match key {
            Some(path) => {
                let pem = read_small(&path).map_err(|why| Error::Key { path: path.clone(), why })?;
                native::check_key(&pem).map_err(|why| Error::Key { path: path.clone(), why })?;
                Some((path, pem))
            }
            None => None,
        };
        let trust_root = match root {
            Some(path) => read_small(&path)
                .and_then(|bytes| TrustRoot::parse(&bytes))
                .map_err(|why| Error::TrustRoot { path, why })?,
            None => TrustRoot::public_good(),
        };
        Ok(Policy {
            registry: normalise(registry.as_deref().unwrap_or(REGISTRY)),
            identity,
            identity_re,
            issuer: issuer.unwrap_or_else(|| ISSUER.to_owned()),
            key,
            trust_root,
            replaced,
        })
    }

    /// Whether brig checks this image's signature: its reference starts
    /// with our registry prefix once both are normalised.
    pub fn is_ours(&self, image: &str) -> bool {
        normalise(image).starts_with(&self.registry)
    }

    fn identity_matches(&self, identity: &str) -> bool {
        self.identity_re.is_match(identity)
    }

    /// What this policy is called in `info` and the summary line.
    pub fn name(&self) -> &'static str {
        if self.replaced { "replaced" } else { "brig" }
    }
}

/// A key or trust root file: small, read once. Opened without blocking
/// and read only when it is a regular file, so a FIFO or a device named
/// here is refused rather than waited on.
fn read_small(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|e| e.to_string())?;
    if !file.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("it is not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    file.take(4 << 20).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// What the registry says of an image of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A signature the policy trusts covers `digest`, what the tag named.
    Verified { digest: String, signer: String },
    /// The tag names `digest`, and no signature the policy trusts covers it.
    Failed { digest: String, why: String },
    /// The digest could not be learnt: the registry did not answer, or
    /// refused, or (`timed_out`) took longer than [`TIMEOUT`].
    Unresolved { why: String, timed_out: bool },
}

/// Ask the image's registry for its digest and signatures and check them
/// against the policy.
pub fn check(image: &str, policy: &Policy) -> Outcome {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return Outcome::Unresolved { why: format!("cannot start the verifier: {e}"), timed_out: false },
    };
    runtime.block_on(async {
        match tokio::time::timeout(TIMEOUT, native::check(&strip_scheme(image), policy)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Unresolved {
                why: format!("the registry did not answer within {} seconds", TIMEOUT.as_secs()),
                timed_out: true,
            },
        }
    })
}

/// The reference without `https://` or `http://`.
fn strip_scheme(image: &str) -> String {
    let lower = image.to_ascii_lowercase();
    for scheme in ["https://", "http://"] {
        if lower.starts_with(scheme) {
            return image[scheme.len()..].to_owned();
        }
    }
    image.to_owned()
}

/// A reference as the "ours" test compares it: no scheme, the host in
/// lower case, no `:443`.
pub fn normalise(reference: &str) -> String {
    let bare = strip_scheme(reference.trim());
    let (host, rest) = bare.split_once('/').map_or((bare.as_str(), ""), |(h, r)| (h, r));
    let host = host.to_ascii_lowercase();
    let host = host.strip_suffix(":443").unwrap_or(&host);
    if rest.is_empty() && !bare.contains('/') { host.to_owned() } else { format!("{host}/{rest}") }
}

/// `sha256:` and 64 lower-case hex digits.
fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// The image's repository: the reference without its tag or digest.
fn repository(image: &str) -> &str {
    let name = image.split_once('@').map_or(image, |(name, _)| name);
    match (name.rfind(':'), name.rfind('/')) {
        (Some(colon), Some(slash)) if colon > slash => &name[..colon],
        (Some(colon), None) => &name[..colon],
        _ => name,
    }
}

/// The reference the runtime boots once `digest` verified: the repository
/// pinned to the digest, so a tag moved since cannot change what boots.
pub fn pinned(image: &str, digest: &str) -> String {
    format!("{}@{digest}", repository(&strip_scheme(image)))
}

/// The registry host a reference names, when it names one (the first
/// component, when it holds a '.' or a ':' or is `localhost`).
fn registry_host(image: &str) -> Option<String> {
    let bare = strip_scheme(image);
    let (first, _) = bare.split_once('/')?;
    (first.contains('.') || first.contains(':') || first.eq_ignore_ascii_case("localhost")).then(|| first.to_owned())
}

/// Whether the image's registry is on a loopback address, which brig and
/// the runtimes speak to over plain HTTP, as nerdctl and docker do.
pub fn on_loopback(image: &str) -> bool {
    let Some(host) = registry_host(image) else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(addr, _)| addr).to_owned(),
        None => host.rsplit_once(':').map_or(host.as_str(), |(name, _)| name).to_ascii_lowercase(),
    };
    name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case("ghcr.io/brig-sh/claude-code:latest", true)]
    #[case("GHCR.IO/brig-sh/claude-code:latest", true)]
    #[case("ghcr.io:443/brig-sh/claude-code", true)]
    #[case("https://ghcr.io/brig-sh/claude-code", true)]
    #[case("HTTP://ghcr.io/brig-sh/x", true)]
    #[case("ghcr.io.evil.example/brig-sh/x", false)]
    #[case("evil.example/ghcr.io/brig-sh/x", false)]
    #[case("ghcr.io/brig-sh-evil/x", false)]
    #[case("ghcr.io/BRIG-SH/x", false)]
    #[case("docker.io/library/alpine", false)]
    fn ours_by_normalised_prefix(#[case] image: &str, #[case] ours: bool) {
        let policy = Policy::from_env(&Environment::from_pairs::<_, &str, &str>([])).unwrap();
        assert_eq!(policy.is_ours(image), ours, "{image}");
        assert!(!policy.replaced);
        assert_eq!(policy.name(), "brig");
    }

    #[rstest]
    #[case("127.0.0.1:5000/brig/guest:v1", "sha256:ab", "127.0.0.1:5000/brig/guest@sha256:ab")]
    #[case("localhost/guest", "sha256:ab", "localhost/guest@sha256:ab")]
    #[case("https://ghcr.io/a/b:t", "sha256:ab", "ghcr.io/a/b@sha256:ab")]
    #[case("ghcr.io/a/b@sha256:00", "sha256:ab", "ghcr.io/a/b@sha256:ab")]
    #[case("ghcr.io/a/b:t@sha256:00", "sha256:ab", "ghcr.io/a/b@sha256:ab")]
    #[case("alpine", "sha256:ab", "alpine@sha256:ab")]
    fn pins_the_repository_to_the_digest(#[case] image: &str, #[case] digest: &str, #[case] want: &str) {
        assert_eq!(pinned(image, digest), want);
    }

    #[test]
    fn only_a_sha256_digest_is_a_digest() {
        assert!(is_digest(&format!("sha256:{}", "ab".repeat(32))));
        for bad in ["sha256:AB", "sha512:00", "", "sha256:", &format!("sha256:{} --privileged", "a".repeat(64))] {
            assert!(!is_digest(bad), "{bad}");
        }
    }

    #[rstest]
    #[case("127.0.0.1:5000/a", true)]
    #[case("127.3.4.5/a", true)]
    #[case("localhost:5000/a", true)]
    #[case("LOCALHOST/a", true)]
    #[case("[::1]:5000/a", true)]
    #[case("ghcr.io/a", false)]
    #[case("localhost.evil.example/a", false)]
    #[case("127.0.0.1.nip.io/a", false)]
    #[case("alpine", false)]
    #[case("library/alpine", false)]
    fn loopback_registries(#[case] image: &str, #[case] loopback: bool) {
        assert_eq!(on_loopback(image), loopback, "{image}");
    }

    #[test]
    fn the_identity_is_anchored_and_replacements_are_named() {
        let env = Environment::from_pairs([
            ("BRIG_VERIFY_IDENTITY", r"https://ci\.example/build@refs/heads/main"),
            ("BRIG_VERIFY_REGISTRY", "HTTPS://Registry.Example:443/team/"),
        ]);
        let policy = Policy::from_env(&env).unwrap();
        assert!(policy.identity_matches("https://ci.example/build@refs/heads/main"));
        assert!(!policy.identity_matches("https://ci.example/build@refs/heads/main-evil"));
        assert!(!policy.identity_matches("x https://ci.example/build@refs/heads/main"));
        assert!(policy.is_ours("registry.example/team/image:1"));
        assert_eq!(policy.name(), "replaced");
    }

    #[test]
    fn the_shipped_identity_rejects_lookalikes() {
        let policy = Policy::from_env(&Environment::from_pairs::<_, &str, &str>([])).unwrap();
        let good = "https://github.com/brig-sh/community-images/.github/workflows/build-images.yml@refs/heads/main";
        assert!(policy.identity_matches(good));
        for bad in [
            "https://github.com/brig-sh/community-images/.github/workflows/build-images.yml@refs/heads/dev",
            "https://github.com/brig-sh/community-images/.github/workflows/build-images.yml@refs/pull/1/merge",
            "https://github.com/brig-sh/community-images/.github/workflows/build-images.yml@refs/tags/v1",
            "https://github.com/brig-sh/community-images/.github/workflows/build-images.yml@refs/heads/main-evil",
            "https://github.com.evil.example/brig-sh/community-images/.github/workflows/build-images.yml@refs/heads/main",
            "https://githubXcom/brig-sh/community-images/.github/workflows/build-images.yml@refs/heads/main",
        ] {
            assert!(!policy.identity_matches(bad), "{bad}");
        }
    }

    #[test]
    fn a_fifo_named_as_the_key_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("cosign.pub");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let env = Environment::from_pairs([("BRIG_VERIFY_KEY", fifo.to_str().unwrap())]);
        let err = Policy::from_env(&env).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[rstest]
    #[case("BRIG_VERIFY_IDENTITY", "(", "not a regular expression")]
    #[case("BRIG_VERIFY_KEY", "/nonexistent/cosign.pub", "cosign public key")]
    #[case("BRIG_VERIFY_TRUST_ROOT", "/nonexistent/root.json", "trusted_root.json")]
    #[case("BRIG_VERIFY_ISSUER", " ", "set but empty")]
    #[case("BRIG_VERIFY_KEY", "/dev/zero", "not a regular file")]
    #[case("BRIG_VERIFY_TRUST_ROOT", "/", "not a regular file")]
    fn bad_settings_are_refused_by_name(#[case] variable: &str, #[case] value: &str, #[case] says: &str) {
        let err = Policy::from_env(&Environment::from_pairs([(variable, value)])).unwrap_err().to_string();
        assert!(err.contains(variable) && err.contains(says), "{err}");
    }
}
