//! The profile document's types (spec 04 §1.2, §1.3, §3.1, §3.5, §3.6) and
//! the read-only views the engine and runtimes take of a validated profile.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::validate::{Ref, RefError, depth};

/// One agent's profile. Strict: an unknown field is a parse error.
///
/// The deprecated spellings (`shell:`/`gui:` booleans, `forward:`, the
/// singular secret source) are private and empty after [`super::parse`]: they
/// are folded into `kind`, `env` and `sources`, so the parsed document (and
/// its JSON) shows only the current form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    // Required strings default to empty so that a missing one is reported by
    // validation as "required", with the other rules, rather than as a bare
    // parser complaint.
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub desc: String,
    #[serde(default)]
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) shell: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) gui: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub guest_home: String,
    /// Memory in MB.
    #[serde(default)]
    pub mem: u32,
    #[serde(default)]
    pub cpus: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "secret_list")]
    pub secrets: Vec<SecretDecl>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvBinding>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) forward: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileBinding>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// Deprecated and informational only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_credential_files: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub headless: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gui_title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<Hypervisor>,
    /// Unexpanded; `~` is expanded where the binary is looked up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_bin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs_type: Option<RootfsType>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub generic_boot: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_config_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub project_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onboarding: Option<Onboarding>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub reserved: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub unpublished: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Agent,
    Shell,
    Gui,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Agent => "agent",
            Kind::Shell => "shell",
            Kind::Gui => "gui",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The network posture a profile asks for; the same type the settings use.
pub use crate::settings::Network;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hypervisor {
    Vz,
    Hvi,
    Qemu,
}

impl Hypervisor {
    pub fn as_str(self) -> &'static str {
        match self {
            Hypervisor::Vz => "vz",
            Hypervisor::Hvi => "hvi",
            Hypervisor::Qemu => "qemu",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RootfsType {
    #[serde(rename = "block")]
    Block,
    #[serde(rename = "virtiofs")]
    Virtiofs,
    #[serde(rename = "9pfs")]
    NinePfs,
}

/// A declared secret (§3.5). In a file, a bare string is shorthand for
/// `{name: <string>, required: true}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretDecl {
    pub name: String,
    #[serde(default = "yes")]
    pub required: bool,
    /// JSON key to extract from the stored value; absent stores it verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// A key found at any depth of the value that holds its expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_field: Option<String>,
    /// What to tell the user when the secret is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Where `brig secret import` looks, in order. `None` (absent) and an
    /// explicit empty list differ: the second is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<Source>>,
    // The older single-source shorthand, folded into `sources`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) from: Option<SourceKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) var: Option<String>,
}

fn yes() -> bool {
    true
}

impl SecretDecl {
    fn required_named(name: &str) -> Self {
        SecretDecl {
            name: name.to_owned(),
            required: true,
            field: None,
            expiry_field: None,
            hint: None,
            sources: None,
            from: None,
            service: None,
            path: None,
            var: None,
        }
    }

    /// The declared sources; none for a secret the user stores by hand.
    pub fn sources(&self) -> &[Source] {
        self.sources.as_deref().unwrap_or_default()
    }
}

/// `secrets:` items are either a bare name or a mapping, so the list needs a
/// visitor that accepts both shapes; anything else is a parse error.
fn secret_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<SecretDecl>, D::Error> {
    struct Item(SecretDecl);

    impl<'de> Deserialize<'de> for Item {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct ItemVisitor;
            impl<'de> Visitor<'de> for ItemVisitor {
                type Value = Item;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a secret name or a mapping with `name:`")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Item, E> {
                    Ok(Item(SecretDecl::required_named(v)))
                }
                fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Item, A::Error> {
                    SecretDecl::deserialize(de::value::MapAccessDeserializer::new(map)).map(Item)
                }
            }
            d.deserialize_any(ItemVisitor)
        }
    }

    Ok(Vec::<Item>::deserialize(d)?.into_iter().map(|i| i.0).collect())
}

/// One place `brig secret import` may find a secret's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Source {
    pub from: SourceKind,
    /// Keychain service name (`from: keychain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Host file, `~` expanded at read time (`from: file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Host variable, copied once at import (`from: env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub var: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Keychain,
    File,
    Env,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Keychain => "keychain",
            SourceKind::File => "file",
            SourceKind::Env => "env",
        }
    }

    /// The one locator field this kind needs.
    pub fn locator(self) -> &'static str {
        match self {
            SourceKind::Keychain => "service",
            SourceKind::File => "path",
            SourceKind::Env => "var",
        }
    }
}

/// A guest variable (§3.1): exactly one of `value`, `ref`, `refs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvBinding {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refs: Option<Vec<String>>,
}

/// Where a binding's value comes from, with its references parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSource<'a> {
    Value(&'a str),
    Ref(Ref),
    /// Tried in order; the first non-empty value wins.
    Refs(Vec<Ref>),
}

impl EnvBinding {
    /// The binding's source. Validation has already parsed every reference,
    /// so an error here means the binding did not come through [`super::parse`].
    pub fn source(&self) -> Result<EnvSource<'_>, RefError> {
        if let Some(r) = &self.reference {
            return Ref::parse(r).map(EnvSource::Ref);
        }
        if let Some(refs) = &self.refs {
            return refs.iter().map(|r| Ref::parse(r)).collect::<Result<Vec<_>, _>>().map(EnvSource::Refs);
        }
        Ok(EnvSource::Value(self.value.as_deref().unwrap_or_default()))
    }

    /// Bound from the host or the store rather than written in the file.
    pub fn is_credential(&self) -> bool {
        self.reference.is_some() || self.refs.is_some()
    }
}

/// A secret delivered as a file inside a tmpfs (§3.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileBinding {
    #[serde(rename = "ref")]
    pub reference: String,
    /// Relative to the guest home.
    pub path: String,
    /// Octal, as a quoted string; an unquoted number is refused because YAML
    /// would read `0600` as the decimal 600 (or a float).
    #[serde(default = "default_mode", deserialize_with = "quoted_string")]
    pub mode: String,
}

fn default_mode() -> String {
    "0600".to_owned()
}

fn quoted_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct QuotedVisitor;
    impl Visitor<'_> for QuotedVisitor {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a quoted octal string such as \"0600\"")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
    }
    // `deserialize_any` lets the parser report how it read a plain scalar: a
    // number arrives as a number and is refused by the visitor.
    d.deserialize_any(QuotedVisitor)
}

impl FileBinding {
    /// The mode bits. Validation guarantees an octal value ≤ 0777.
    pub fn mode_bits(&self) -> u32 {
        u32::from_str_radix(&self.mode, 8).unwrap_or(0o600)
    }

    /// The declared secret this file carries.
    pub fn secret(&self) -> Option<&str> {
        self.reference.strip_prefix("secrets.")
    }
}

/// A mount under the guest home (§1.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Volume {
    pub kind: VolumeKind,
    /// Relative to the guest home, in clean form.
    pub path: String,
    /// tmpfs only; `64m` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// hostmount only: the target is a file, not a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<bool>,
    /// tmpfs only: mount at this absolute guest path instead of under the home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VolumeKind {
    Tmpfs,
    Hostmount,
    Volume,
}

impl VolumeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VolumeKind::Tmpfs => "tmpfs",
            VolumeKind::Hostmount => "hostmount",
            VolumeKind::Volume => "volume",
        }
    }
}

pub const DEFAULT_TMPFS_SIZE: &str = "64m";

impl Volume {
    pub fn size(&self) -> &str {
        self.size.as_deref().unwrap_or(DEFAULT_TMPFS_SIZE)
    }
}

/// First-run state written into the guest home (never a credential).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Onboarding {
    /// Relative to the guest home; seeded only when absent.
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<serde_json::Value>,
    /// Two keys: the map under which the run's directory is recorded, and the
    /// flag set to true inside its entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trust_key: Vec<String>,
}

/// A memory-backed mount in guest terms, ready for a runtime's `--tmpfs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmpfsMount {
    /// As declared, relative to the guest home.
    pub path: String,
    /// Absolute guest path: `at:` or `guestHome/path`.
    pub target: String,
    /// `size=<size>,mode=0700,nodev,nosuid`.
    pub options: String,
}

/// A path kept on host disk inside a tmpfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostMount {
    /// As declared, relative to the guest home (and to the host home dir).
    pub path: String,
    /// Absolute guest path, translated when its tmpfs is moved by `at:`.
    pub target: String,
    pub file: bool,
}

/// The credentials a profile can carry, by name only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialNames {
    /// Declared secrets, in declaration order.
    pub secrets: Vec<String>,
    /// Guest variables bound from the host or the store (`ref`/`refs`);
    /// literal `value:` bindings are configuration, not credentials.
    pub env: Vec<String>,
}

impl Profile {
    /// The tmpfs mounts, parents first (by path depth) whatever the order in
    /// the file, so that a nested mount is never hidden by its parent.
    pub fn tmpfs_mounts(&self) -> Vec<TmpfsMount> {
        let mut mounts: Vec<TmpfsMount> = self
            .volumes
            .iter()
            .filter(|v| v.kind == VolumeKind::Tmpfs)
            .map(|v| TmpfsMount {
                path: v.path.clone(),
                target: v.at.clone().unwrap_or_else(|| join(&self.guest_home, &v.path)),
                options: format!("size={},mode=0700,nodev,nosuid", v.size()),
            })
            .collect();
        mounts.sort_by_key(|m| depth(&m.path));
        mounts
    }

    /// The hostmounts, parents first, with guest targets.
    pub fn hostmounts(&self) -> Vec<HostMount> {
        let mut mounts: Vec<HostMount> = self
            .volumes
            .iter()
            .filter(|v| v.kind == VolumeKind::Hostmount)
            .map(|v| HostMount {
                path: v.path.clone(),
                target: self.guest_path(&v.path),
                file: v.file.unwrap_or(false),
            })
            .collect();
        mounts.sort_by_key(|m| depth(&m.path));
        mounts
    }

    /// The host variables the profile forwards by reference (`env.NAME`):
    /// credentials, as brig treats them, which the runtime's own
    /// environment is not given (a runtime may store its environment with
    /// the sandbox).
    pub fn ambient_sources(&self) -> Vec<String> {
        let mut out = Vec::new();
        for binding in &self.env {
            let refs = match binding.source() {
                Ok(EnvSource::Ref(r)) => vec![r],
                Ok(EnvSource::Refs(chain)) => chain,
                _ => continue,
            };
            for r in refs {
                if let crate::profile::Ref::Env(name) = r
                    && !out.contains(&name)
                {
                    out.push(name);
                }
            }
        }
        out
    }

    /// Where the guest sees its home's keep directory, which a read-only
    /// tmpfs covers.
    pub fn keep_cover(&self) -> String {
        join(&self.guest_home, crate::session::home::KEEP_DIR)
    }

    /// Where a path relative to the guest home lives on the host, relative
    /// to the home directory: a hostmount, or a path inside one, is kept
    /// under [`KEEP_DIR`](crate::session::home::KEEP_DIR), which no guest
    /// can reach; anything else is where the guest sees it.
    pub fn host_side(&self, relative: &str) -> std::path::PathBuf {
        let kept =
            self.volumes.iter().filter(|v| v.kind == VolumeKind::Hostmount).any(|v| {
                relative == v.path || relative.strip_prefix(&v.path).is_some_and(|rest| rest.starts_with('/'))
            });
        if kept {
            std::path::Path::new(crate::session::home::KEEP_DIR).join(relative)
        } else {
            std::path::PathBuf::from(relative)
        }
    }

    /// Where a path relative to the guest home lands in the guest, following
    /// a tmpfs that `at:` moved elsewhere (`.claude/x` → `/brig/claude/x`).
    pub fn guest_path(&self, relative: &str) -> String {
        for v in &self.volumes {
            let Some(at) = &v.at else { continue };
            if relative == v.path {
                return at.clone();
            }
            if let Some(rest) = relative.strip_prefix(&v.path).and_then(|r| r.strip_prefix('/')) {
                return join(at, rest);
            }
        }
        join(&self.guest_home, relative)
    }

    /// Credential names: declared secrets and the variables bound to them or
    /// to the host environment.
    pub fn credential_names(&self) -> CredentialNames {
        CredentialNames {
            secrets: self.secrets.iter().map(|s| s.name.clone()).collect(),
            env: self.env.iter().filter(|e| e.is_credential()).map(|e| e.name.clone()).collect(),
        }
    }

    /// The declaration of a secret.
    pub fn secret(&self, name: &str) -> Option<&SecretDecl> {
        self.secrets.iter().find(|s| s.name == name)
    }

    /// Names reserved against session slugs and imports: the profile's name
    /// and its trailing `-word` (claude-desktop reserves `desktop`).
    pub fn reserved_names(&self) -> Vec<&str> {
        if !self.reserved {
            return Vec::new();
        }
        let mut names = vec![self.name.as_str()];
        if let Some((_, tail)) = self.name.rsplit_once('-')
            && !tail.is_empty()
        {
            names.push(tail);
        }
        names
    }
}

fn join(base: &str, relative: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), relative)
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    const BASE: &str = "name: t\nbinary: b\nimage: i\nguestHome: /home/t\nmem: 1\ncpus: 1\n";

    #[test]
    fn tmpfs_mounts_are_parents_first_with_guest_targets() {
        let doc = format!(
            "{BASE}volumes:\n  - {{kind: tmpfs, path: a/b, size: 1m}}\n  - {{kind: tmpfs, path: a}}\n  - {{kind: tmpfs, path: c, at: /brig/c, size: 2g}}\n"
        );
        let p = parse(&doc, "t").unwrap();
        let got: Vec<(String, String)> = p.tmpfs_mounts().into_iter().map(|m| (m.target, m.options)).collect();
        assert_eq!(
            got,
            [
                ("/home/t/a".into(), "size=64m,mode=0700,nodev,nosuid".into()),
                ("/brig/c".into(), "size=2g,mode=0700,nodev,nosuid".into()),
                ("/home/t/a/b".into(), "size=1m,mode=0700,nodev,nosuid".into()),
            ]
        );
    }

    #[test]
    fn hostmounts_follow_a_moved_tmpfs() {
        let doc = format!(
            "{BASE}volumes:\n  - {{kind: tmpfs, path: .c, at: /brig/c}}\n  - {{kind: hostmount, path: .c/s.json, file: true}}\n  - {{kind: hostmount, path: .c/d}}\n"
        );
        let p = parse(&doc, "t").unwrap();
        let got: Vec<(String, bool)> = p.hostmounts().into_iter().map(|m| (m.target, m.file)).collect();
        assert_eq!(got, [("/brig/c/s.json".into(), true), ("/brig/c/d".into(), false)]);
        assert_eq!(p.guest_path(".c"), "/brig/c");
        assert_eq!(p.guest_path(".cx/y"), "/home/t/.cx/y");
    }

    #[test]
    fn credential_names_leave_out_literals() {
        let doc = format!(
            "{BASE}secrets: [tok]\nenv:\n  - {{name: A, value: x}}\n  - {{name: B, ref: env.B}}\n  - {{name: C, refs: [env.C, secrets.tok]}}\nforward: [D]\n"
        );
        let p = parse(&doc, "t").unwrap();
        let names = p.credential_names();
        assert_eq!(names.secrets, ["tok"]);
        assert_eq!(names.env, ["B", "C", "D"]);
    }

    #[test]
    fn secret_shorthand_is_required() {
        let doc = format!("{BASE}secrets:\n  - tok\n  - {{name: opt, required: false}}\n");
        let p = parse(&doc, "t").unwrap();
        assert!(p.secrets[0].required);
        assert!(!p.secrets[1].required);
    }

    #[test]
    fn file_mode_defaults_and_parses_as_octal() {
        let doc = format!(
            "{BASE}secrets: [tok]\nvolumes: [{{kind: tmpfs, path: s}}]\nfiles:\n  - {{ref: secrets.tok, path: s/a}}\n  - {{ref: secrets.tok, path: s/b, mode: \"0640\"}}\n"
        );
        let p = parse(&doc, "t").unwrap();
        assert_eq!(p.files[0].mode_bits(), 0o600);
        assert_eq!(p.files[1].mode_bits(), 0o640);
        assert_eq!(p.files[0].secret(), Some("tok"));
    }

    #[test]
    fn reserved_names_include_the_trailing_word() {
        let doc = BASE.replace("name: t", "name: claude-desktop") + "reserved: true\n";
        let p = parse(&doc, "t").unwrap();
        assert_eq!(p.reserved_names(), ["claude-desktop", "desktop"]);
    }

    #[test]
    fn json_of_a_parsed_profile_shows_folded_forms() {
        let doc = format!("{BASE}shell: true\nforward: [X]\n");
        let p = parse(&doc, "t").unwrap();
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["kind"], "shell");
        assert!(json.get("forward").is_none() && json.get("shell").is_none());
        assert_eq!(json["env"][0]["ref"], "env.X");
    }
}
