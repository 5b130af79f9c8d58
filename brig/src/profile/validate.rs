//! The profile rules a parser cannot express, and the folding of deprecated
//! spellings into the current ones. Each rule has its own [`Invalid`] variant
//! and its own case in the tables at the bottom.

use std::collections::HashSet;

use super::document::EnvBinding;
use super::document::{Kind, Profile, SourceKind, Volume, VolumeKind};

/// One broken rule in a profile that parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("{field} is required")]
    Missing { field: &'static str },
    #[error("name \"{name}\" may use only a-z, 0-9, '.', '_' and '-', and must start with a letter or digit")]
    BadName { name: String },
    #[error("{field} must be a whole number above 0")]
    NotPositive { field: &'static str },
    #[error("shell: true and gui: true contradict each other; use kind:")]
    ShellAndGui,
    #[error("{flag}: true contradicts kind: {kind}")]
    KindContradiction { flag: &'static str, kind: Kind },
    #[error("binary is required for kind: agent")]
    BinaryRequired,
    #[error("guestHome \"{path}\" must be an absolute, clean path other than /")]
    GuestHomeNotAbsolute { path: String },
    #[error("guestHome \"{path}\" lies in {dir}, which belongs to the guest's kernel and runtime, not to an agent")]
    GuestHomeSystem { path: String, dir: String },
    #[error(
        "guestHome \"{path}\" holds a ':', a ',', a '\"' or a control character, which a runtime's mount argument cannot carry"
    )]
    GuestHomeUnmountable { path: String },

    #[error("secret name \"{name}\" must match [A-Za-z][A-Za-z0-9_-]* and be at most 128 characters")]
    SecretBadName { name: String },
    #[error("the secret {name} is declared twice")]
    SecretDuplicate { name: String },
    #[error("the secret {secret} has an empty sources list; leave sources out instead")]
    SecretEmptySources { secret: String },
    #[error("the secret {secret} uses both the single from: shorthand and sources:")]
    SecretShorthandAndSources { secret: String },
    #[error("the {from} source of the secret {secret} needs {locator}:")]
    SourceMissingLocator { secret: String, from: &'static str, locator: &'static str },
    #[error("the {from} source of the secret {secret} cannot carry {locator}:")]
    SourceForeignLocator { secret: String, from: &'static str, locator: &'static str },
    #[error("the secret {secret} has shorthand fields ({locator}:) without from:")]
    SecretLocatorWithoutFrom { secret: String, locator: &'static str },

    #[error("variable name \"{name}\" must be non-empty and contain no '=', space, tab or newline")]
    EnvBadName { name: String },
    #[error("the variable {name} is bound twice")]
    EnvDuplicate { name: String },
    #[error("the variable {name} needs one of value:, ref: or refs:")]
    EnvNoSource { name: String },
    #[error("the variable {name} has more than one of value:, ref: and refs:")]
    EnvManySources { name: String },
    #[error("the variable {binding} has a bad reference \"{reference}\"")]
    BadRef {
        binding: String,
        reference: String,
        #[source]
        reason: RefError,
    },
    #[error("{binding} refers to secrets.{secret}, which is not declared under secrets:")]
    UndeclaredSecret { binding: String, secret: String },
    #[error(
        "{binding} takes its value from secrets.{secret}, and HOME, PATH, TMPDIR and XDG_* shape the guest's own environment: they may carry only a literal or a host variable"
    )]
    SecretInPlumbing { binding: String, secret: String },
    #[error("{name} is listed in forward: and bound in env:; keep only the env: entry")]
    ForwardConflict { name: String },
    #[error("{name} is both denied and bound; a profile cannot forward what it denies")]
    DeniedButBound { name: String },

    #[error("the file {path} must take its value from secrets.<name>, not \"{reference}\"")]
    FileRefNotSecret { path: String, reference: String },
    #[error("two files: entries write {path}")]
    FileDuplicate { path: String },
    #[error("the file {path} has mode \"{mode}\"; use a quoted octal string up to \"0777\"")]
    BadMode { path: String, mode: String },
    #[error("the file {path} must lie inside a tmpfs volume, so its secret never reaches disk")]
    FileNotOnTmpfs { path: String },
    #[error("the file {path} lies inside the hostmount {hostmount}, which is on disk")]
    FileUnderHostmount { path: String, hostmount: String },

    #[error("{field} entry \"{path}\" {problem}")]
    BadPath { field: &'static str, path: String, problem: PathProblem },
    #[error("two volumes have the path {path}")]
    VolumeDuplicate { path: String },
    #[error("the volume {path} has kind: volume, which is not supported yet")]
    VolumeUnsupported { path: String },
    #[error("the {kind} volume {path} cannot carry {field}:")]
    VolumeFieldNotAllowed { path: String, kind: &'static str, field: &'static str },
    #[error("the tmpfs {path} has size \"{size}\"; use a whole number with an optional k, m or g (like 512m)")]
    VolumeBadSize { path: String, size: String },
    #[error("the hostmount {path} is not inside a tmpfs volume")]
    HostmountOutsideTmpfs { path: String },
    #[error("the tmpfs {path} has at: \"{at}\", which {problem}")]
    BadAt { path: String, at: String, problem: AtProblem },
    #[error("the tmpfs volumes {inner} and {outer} nest, which is not allowed when either sets at:")]
    NestedTmpfsWithAt { inner: String, outer: String },
    #[error("statePaths cannot be combined with volumes; volumes replaces it")]
    StatePathsWithVolumes,

    #[error("policy: is only for kind: agent, not {kind}")]
    PolicyOnNonAgent { kind: Kind },
    #[error("hostConfigDir and projectPaths are needed together")]
    HostConfigIncomplete,
    #[error("onboarding trustKey needs exactly two keys")]
    OnboardingTrustKey,
    #[error("onboarding seed must be a mapping")]
    OnboardingSeed,
}

/// What is wrong with a path that must be relative to the guest home.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    #[error("is empty or names the guest home itself")]
    Empty,
    #[error("must be relative to the guest home (no leading / or ~)")]
    NotRelative,
    #[error("is not in clean form (no //, ./, ../ or trailing /)")]
    NotClean,
    #[error("escapes the guest home")]
    Escapes,
    #[error("holds a ':', a ',', a '\"' or a control character, which a runtime's mount argument cannot carry")]
    Unmountable,
    #[error("lies in .brig-keep, which brig keeps for itself and hides from every guest")]
    Reserved,
}

/// What is wrong with a tmpfs `at:`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtProblem {
    #[error("is not an absolute, clean path")]
    NotAbsolute,
    #[error("holds a ':', a ',', a '\"' or a control character, which a runtime's mount argument cannot carry")]
    Unmountable,
    #[error("is the root directory")]
    Root,
    #[error("overlaps the guest home")]
    OverlapsGuestHome,
    #[error("lies in the system directory {dir}")]
    SystemDir { dir: String },
    #[error("overlaps the at: of the tmpfs {other}")]
    OverlapsAt { other: String },
}

/// A reference to a value outside the profile: `secrets.<name>` or `env.<NAME>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    Secret(String),
    Env(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("a reference is <namespace>.<name>")]
    NoDot,
    #[error("the namespace \"{namespace}\" is unknown; use secrets. or env.")]
    UnknownNamespace { namespace: String },
    #[error("the secret name after secrets. is not a valid secret name")]
    BadSecretName,
    #[error("the variable name after env. is not a valid variable name")]
    BadEnvName,
}

impl Ref {
    /// Split at the first `.`: `secrets.a.b` names the secret `a.b`, which
    /// the secret grammar then refuses.
    pub fn parse(text: &str) -> Result<Ref, RefError> {
        let (namespace, name) = text.split_once('.').ok_or(RefError::NoDot)?;
        match namespace {
            "secrets" if is_secret_name(name) => Ok(Ref::Secret(name.to_owned())),
            "secrets" => Err(RefError::BadSecretName),
            "env" if is_env_name(name) => Ok(Ref::Env(name.to_owned())),
            "env" => Err(RefError::BadEnvName),
            _ => Err(RefError::UnknownNamespace { namespace: namespace.to_owned() }),
        }
    }
}

impl std::fmt::Display for Ref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ref::Secret(n) => write!(f, "secrets.{n}"),
            Ref::Env(n) => write!(f, "env.{n}"),
        }
    }
}

/// `[a-z0-9._-]`, first character a letter or digit.
pub fn is_profile_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// `[A-Za-z][A-Za-z0-9_-]*`, at most 128 characters.
pub fn is_secret_name(name: &str) -> bool {
    name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

/// Anything a process environment can hold as a name.
pub fn is_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', ' ', '\t', '\n', '\r', '\0'])
}

/// Number of components, for parents-first ordering.
pub fn depth(path: &str) -> usize {
    path.split('/').filter(|c| !c.is_empty()).count()
}

/// Fold the deprecated spellings, then check every rule.
pub(super) fn normalize_and_check(p: &mut Profile) -> Result<(), Invalid> {
    fold_kind(p)?;
    fold_secret_shorthand(p)?;
    fold_forward(p)?;
    for binding in &mut p.env {
        // An empty literal counts as absent (§3.1).
        if binding.value.as_deref() == Some("") {
            binding.value = None;
        }
    }
    check_identity(p)?;
    check_secrets(p)?;
    check_env(p)?;
    check_volumes(p)?;
    check_files(p)?;
    check_misc(p)
}

fn fold_kind(p: &mut Profile) -> Result<(), Invalid> {
    let shell = p.shell.take().unwrap_or(false);
    let gui = p.gui.take().unwrap_or(false);
    match (shell, gui) {
        (true, true) => Err(Invalid::ShellAndGui),
        (false, false) => Ok(()),
        (true, false) => fold_flag(p, "shell", Kind::Shell),
        (false, true) => fold_flag(p, "gui", Kind::Gui),
    }
}

fn fold_flag(p: &mut Profile, flag: &'static str, kind: Kind) -> Result<(), Invalid> {
    // `kind` defaults to agent, so an explicit `kind: agent` beside the flag
    // cannot be told from an absent one; only another kind contradicts.
    match p.kind {
        Kind::Agent => {
            p.kind = kind;
            Ok(())
        }
        k if k == kind => Ok(()),
        k => Err(Invalid::KindContradiction { flag, kind: k }),
    }
}

fn fold_secret_shorthand(p: &mut Profile) -> Result<(), Invalid> {
    for s in &mut p.secrets {
        let Some(from) = s.from.take() else {
            let stray =
                [("service", &s.service), ("path", &s.path), ("var", &s.var)].into_iter().find(|(_, v)| v.is_some());
            if let Some((locator, _)) = stray {
                return Err(Invalid::SecretLocatorWithoutFrom { secret: s.name.clone(), locator });
            }
            continue;
        };
        if s.sources.is_some() {
            return Err(Invalid::SecretShorthandAndSources { secret: s.name.clone() });
        }
        s.sources = Some(vec![super::document::Source {
            from,
            service: s.service.take(),
            path: s.path.take(),
            var: s.var.take(),
            hint: None,
        }]);
    }
    Ok(())
}

fn fold_forward(p: &mut Profile) -> Result<(), Invalid> {
    let mut seen = HashSet::new();
    for name in std::mem::take(&mut p.forward) {
        if !seen.insert(name.clone()) {
            continue;
        }
        if p.env.iter().any(|e| e.name == name) {
            return Err(Invalid::ForwardConflict { name });
        }
        p.env.push(EnvBinding { reference: Some(format!("env.{name}")), name, value: None, refs: None });
    }
    Ok(())
}

fn check_identity(p: &Profile) -> Result<(), Invalid> {
    if p.name.is_empty() {
        return Err(Invalid::Missing { field: "name" });
    }
    if !is_profile_name(&p.name) {
        return Err(Invalid::BadName { name: p.name.clone() });
    }
    if p.kind == Kind::Agent && p.binary.as_deref().unwrap_or_default().is_empty() {
        return Err(Invalid::BinaryRequired);
    }
    if p.image.is_empty() {
        return Err(Invalid::Missing { field: "image" });
    }
    if p.guest_home.is_empty() {
        return Err(Invalid::Missing { field: "guestHome" });
    }
    if !is_clean_absolute(&p.guest_home) || p.guest_home == "/" {
        return Err(Invalid::GuestHomeNotAbsolute { path: p.guest_home.clone() });
    }
    if unmountable(&p.guest_home) {
        return Err(Invalid::GuestHomeUnmountable { path: p.guest_home.clone() });
    }
    // Mounting the agent's home over the guest's kernel and runtime
    // interfaces would hide or replace them.
    if let Some(dir) =
        ["/proc", "/sys", "/dev", "/run"].iter().find(|d| p.guest_home == **d || is_under(&p.guest_home, d))
    {
        return Err(Invalid::GuestHomeSystem { path: p.guest_home.clone(), dir: (*dir).to_owned() });
    }
    if p.mem == 0 {
        return Err(Invalid::NotPositive { field: "mem" });
    }
    if p.cpus == 0 {
        return Err(Invalid::NotPositive { field: "cpus" });
    }
    Ok(())
}

fn check_secrets(p: &Profile) -> Result<(), Invalid> {
    let mut seen = HashSet::new();
    for s in &p.secrets {
        if !is_secret_name(&s.name) {
            return Err(Invalid::SecretBadName { name: s.name.clone() });
        }
        if !seen.insert(s.name.as_str()) {
            return Err(Invalid::SecretDuplicate { name: s.name.clone() });
        }
        if s.sources.as_ref().is_some_and(Vec::is_empty) {
            return Err(Invalid::SecretEmptySources { secret: s.name.clone() });
        }
        for source in s.sources() {
            let present = |kind| match kind {
                SourceKind::Keychain => source.service.is_some(),
                SourceKind::File => source.path.is_some(),
                SourceKind::Env => source.var.is_some(),
            };
            if !present(source.from) {
                return Err(Invalid::SourceMissingLocator {
                    secret: s.name.clone(),
                    from: source.from.as_str(),
                    locator: source.from.locator(),
                });
            }
            let others = [SourceKind::Keychain, SourceKind::File, SourceKind::Env];
            if let Some(kind) = others.into_iter().find(|k| *k != source.from && present(*k)) {
                return Err(Invalid::SourceForeignLocator {
                    secret: s.name.clone(),
                    from: source.from.as_str(),
                    locator: kind.locator(),
                });
            }
        }
    }
    Ok(())
}

fn check_env(p: &Profile) -> Result<(), Invalid> {
    let mut seen = HashSet::new();
    for e in &p.env {
        if !is_env_name(&e.name) {
            return Err(Invalid::EnvBadName { name: e.name.clone() });
        }
        if !seen.insert(e.name.as_str()) {
            return Err(Invalid::EnvDuplicate { name: e.name.clone() });
        }
        let count = [e.value.is_some(), e.reference.is_some(), e.refs.is_some()].into_iter().filter(|b| *b).count();
        match count {
            0 => return Err(Invalid::EnvNoSource { name: e.name.clone() }),
            1 => {}
            _ => return Err(Invalid::EnvManySources { name: e.name.clone() }),
        }
        if e.refs.as_ref().is_some_and(Vec::is_empty) {
            return Err(Invalid::EnvNoSource { name: e.name.clone() });
        }
        let refs = e.reference.iter().chain(e.refs.iter().flatten());
        for text in refs {
            let parsed = Ref::parse(text).map_err(|reason| Invalid::BadRef {
                binding: e.name.clone(),
                reference: text.clone(),
                reason,
            })?;
            check_declared(p, &parsed, &e.name)?;
        }
    }
    for name in &p.deny {
        if !is_env_name(name) {
            return Err(Invalid::EnvBadName { name: name.clone() });
        }
        if seen.contains(name.as_str()) {
            return Err(Invalid::DeniedButBound { name: name.clone() });
        }
    }
    Ok(())
}

/// A `secrets.` reference must name a declared secret, and may not feed a
/// variable that shapes the guest's own environment: whatever else its
/// chain names, the profile could hand a stored value to the guest as its
/// home, search path or runtime directory.
fn check_declared(p: &Profile, r: &Ref, binding: &str) -> Result<(), Invalid> {
    match r {
        Ref::Secret(secret) if p.secret(secret).is_none() => {
            Err(Invalid::UndeclaredSecret { binding: binding.to_owned(), secret: secret.clone() })
        }
        Ref::Secret(secret) if is_plumbing(binding) => {
            Err(Invalid::SecretInPlumbing { binding: binding.to_owned(), secret: secret.clone() })
        }
        _ => Ok(()),
    }
}

/// Names a stored secret may not be bound to.
fn is_plumbing(name: &str) -> bool {
    matches!(name, "HOME" | "PATH" | "TMPDIR") || name.starts_with("XDG_")
}

fn check_volumes(p: &Profile) -> Result<(), Invalid> {
    if !p.state_paths.is_empty() && !p.volumes.is_empty() {
        return Err(Invalid::StatePathsWithVolumes);
    }
    let mut seen = HashSet::new();
    for v in &p.volumes {
        if v.kind == VolumeKind::Volume {
            return Err(Invalid::VolumeUnsupported { path: v.path.clone() });
        }
        check_relative("volumes", &v.path)?;
        if !seen.insert(v.path.as_str()) {
            return Err(Invalid::VolumeDuplicate { path: v.path.clone() });
        }
        check_volume_fields(v)?;
        if let Some(size) = &v.size
            && !is_size(size)
        {
            return Err(Invalid::VolumeBadSize { path: v.path.clone(), size: size.clone() });
        }
        if let Some(at) = &v.at {
            check_at(p, v, at)?;
        }
    }
    let tmpfs: Vec<&Volume> = p.volumes.iter().filter(|v| v.kind == VolumeKind::Tmpfs).collect();
    for v in p.volumes.iter().filter(|v| v.kind == VolumeKind::Hostmount) {
        if !tmpfs.iter().any(|t| is_under(&v.path, &t.path)) {
            return Err(Invalid::HostmountOutsideTmpfs { path: v.path.clone() });
        }
    }
    for inner in &tmpfs {
        for outer in &tmpfs {
            if is_under(&inner.path, &outer.path) && (inner.at.is_some() || outer.at.is_some()) {
                return Err(Invalid::NestedTmpfsWithAt { inner: inner.path.clone(), outer: outer.path.clone() });
            }
        }
    }
    Ok(())
}

fn check_volume_fields(v: &Volume) -> Result<(), Invalid> {
    let refused = match v.kind {
        VolumeKind::Tmpfs => v.file.is_some().then_some("file"),
        _ => [("size", v.size.is_some()), ("at", v.at.is_some())]
            .into_iter()
            .find_map(|(f, present)| present.then_some(f)),
    };
    match refused {
        Some(field) => Err(Invalid::VolumeFieldNotAllowed { path: v.path.clone(), kind: v.kind.as_str(), field }),
        None => Ok(()),
    }
}

/// `^[1-9][0-9]*[kKmMgG]?$`
fn is_size(size: &str) -> bool {
    let digits = size.strip_suffix(['k', 'K', 'm', 'M', 'g', 'G']).unwrap_or(size);
    digits.starts_with(|c: char| ('1'..='9').contains(&c)) && digits.chars().all(|c| c.is_ascii_digit())
}

/// Guest directories a tmpfs must never cover: the guest's own system, and
/// `/work`, where projects are mounted.
const SYSTEM_DIRS: &[&str] = &["proc", "sys", "dev", "run", "tmp", "etc", "usr", "bin", "sbin", "boot", "var", "work"];

fn check_at(p: &Profile, v: &Volume, at: &str) -> Result<(), Invalid> {
    let bad = |problem| Invalid::BadAt { path: v.path.clone(), at: at.to_owned(), problem };
    if !is_clean_absolute(at) {
        return Err(bad(AtProblem::NotAbsolute));
    }
    if unmountable(at) {
        return Err(bad(AtProblem::Unmountable));
    }
    if at == "/" {
        return Err(bad(AtProblem::Root));
    }
    if overlaps(at, &p.guest_home) {
        return Err(bad(AtProblem::OverlapsGuestHome));
    }
    let first = at.split('/').nth(1).unwrap_or_default();
    if SYSTEM_DIRS.contains(&first) || first.starts_with("lib") {
        return Err(bad(AtProblem::SystemDir { dir: format!("/{first}") }));
    }
    let other =
        p.volumes.iter().filter(|o| o.path != v.path).find(|o| o.at.as_deref().is_some_and(|o_at| overlaps(at, o_at)));
    if let Some(other) = other {
        return Err(bad(AtProblem::OverlapsAt { other: other.path.clone() }));
    }
    Ok(())
}

fn check_files(p: &Profile) -> Result<(), Invalid> {
    let mut seen = HashSet::new();
    for f in &p.files {
        let not_secret = || Invalid::FileRefNotSecret { path: f.path.clone(), reference: f.reference.clone() };
        let secret = match Ref::parse(&f.reference) {
            Ok(Ref::Secret(s)) => s,
            Ok(Ref::Env(_)) | Err(_) => return Err(not_secret()),
        };
        check_declared(p, &Ref::Secret(secret), &f.path)?;
        check_relative("files", &f.path)?;
        if !seen.insert(f.path.as_str()) {
            return Err(Invalid::FileDuplicate { path: f.path.clone() });
        }
        let octal = f.mode.len() <= 4 && f.mode.chars().all(|c| ('0'..='7').contains(&c));
        if f.mode.is_empty() || !octal || f.mode_bits() > 0o777 {
            return Err(Invalid::BadMode { path: f.path.clone(), mode: f.mode.clone() });
        }
        let covered = p.volumes.iter().any(|v| v.kind == VolumeKind::Tmpfs && is_under(&f.path, &v.path));
        if !covered {
            return Err(Invalid::FileNotOnTmpfs { path: f.path.clone() });
        }
        let carved = p
            .volumes
            .iter()
            .find(|v| v.kind == VolumeKind::Hostmount && (f.path == v.path || is_under(&f.path, &v.path)));
        if let Some(h) = carved {
            return Err(Invalid::FileUnderHostmount { path: f.path.clone(), hostmount: h.path.clone() });
        }
    }
    Ok(())
}

fn check_misc(p: &Profile) -> Result<(), Invalid> {
    if !p.policy.is_empty() && p.kind != Kind::Agent {
        return Err(Invalid::PolicyOnNonAgent { kind: p.kind });
    }
    for path in &p.stale_credential_files {
        check_relative("staleCredentialFiles", path)?;
    }
    for path in &p.state_paths {
        check_relative("statePaths", path)?;
    }
    for path in &p.project_paths {
        check_relative("projectPaths", path)?;
    }
    let (has_dir, has_paths) = (p.host_config_dir.is_some(), !p.project_paths.is_empty());
    if has_dir != has_paths {
        return Err(Invalid::HostConfigIncomplete);
    }
    if let Some(o) = &p.onboarding {
        check_relative("onboarding", &o.file)?;
        if !o.trust_key.is_empty() && o.trust_key.len() != 2 {
            return Err(Invalid::OnboardingTrustKey);
        }
        if o.seed.as_ref().is_some_and(|s| !s.is_object()) {
            return Err(Invalid::OnboardingSeed);
        }
    }
    Ok(())
}

fn check_relative(field: &'static str, path: &str) -> Result<(), Invalid> {
    let problem = if path.is_empty() || path == "." {
        Some(PathProblem::Empty)
    } else if path.starts_with('/') || path.starts_with('~') {
        Some(PathProblem::NotRelative)
    } else if path.split('/').next() == Some("..") {
        Some(PathProblem::Escapes)
    } else if path.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        Some(PathProblem::NotClean)
    } else if unmountable(path) {
        Some(PathProblem::Unmountable)
    } else if path.split('/').next() == Some(crate::session::home::KEEP_DIR) {
        Some(PathProblem::Reserved)
    } else {
        None
    };
    match problem {
        Some(problem) => Err(Invalid::BadPath { field, path: path.to_owned(), problem }),
        None => Ok(()),
    }
}

/// A character a runtime's mount argument cannot carry: `-v` and
/// `--tmpfs` split on `:`, `--mount` on `,`.
fn unmountable(path: &str) -> bool {
    path.contains([':', ',', '"']) || path.chars().any(char::is_control)
}

fn is_clean_absolute(path: &str) -> bool {
    match path.strip_prefix('/') {
        Some("") => true,
        Some(rest) => rest.split('/').all(|c| !c.is_empty() && c != "." && c != ".."),
        None => false,
    }
}

/// `child` lies strictly below `parent` (by whole components).
fn is_under(child: &str, parent: &str) -> bool {
    child.strip_prefix(parent).is_some_and(|rest| rest.starts_with('/') && !parent.is_empty())
}

fn overlaps(a: &str, b: &str) -> bool {
    a == b || is_under(a, b) || is_under(b, a)
}

#[cfg(test)]
mod tests {
    use super::super::{Error, parse};
    use super::*;
    use rstest::rstest;

    const BASE: &str = "name: t\nbinary: b\nimage: i\nguestHome: /home/t\nmem: 1\ncpus: 1\n";

    /// The problem a document has, or `None` when it is valid.
    fn problem(doc: &str) -> Option<Invalid> {
        match parse(doc, "t.yaml") {
            Ok(_) => None,
            Err(Error::Invalid { problem, .. }) => Some(problem),
            Err(other) => panic!("expected a validation result, got {other:?}"),
        }
    }

    fn with(extra: &str) -> String {
        format!("{BASE}{extra}")
    }

    /// Replace one line of the base document.
    fn replacing(from: &str, to: &str) -> String {
        assert!(BASE.contains(from), "{from} not in the base document");
        BASE.replace(from, to)
    }

    #[rstest]
    #[case::valid(BASE.to_owned(), None)]
    #[case::name_missing(replacing("name: t\n", ""), Some(Invalid::Missing { field: "name" }))]
    #[case::name_upper(replacing("name: t", "name: Tee"), Some(Invalid::BadName { name: "Tee".into() }))]
    #[case::name_leading_dot(replacing("name: t", "name: .t"), Some(Invalid::BadName { name: ".t".into() }))]
    #[case::name_slash(replacing("name: t", "name: a/b"), Some(Invalid::BadName { name: "a/b".into() }))]
    #[case::name_all_chars(replacing("name: t", "name: 9a.b_c-d"), None)]
    #[case::image_missing(replacing("image: i\n", ""), Some(Invalid::Missing { field: "image" }))]
    #[case::home_missing(replacing("guestHome: /home/t\n", ""), Some(Invalid::Missing { field: "guestHome" }))]
    #[case::home_relative(replacing("/home/t", "home/t"), Some(Invalid::GuestHomeNotAbsolute { path: "home/t".into() }))]
    #[case::home_root(replacing("/home/t", "/"), Some(Invalid::GuestHomeNotAbsolute { path: "/".into() }))]
    #[case::home_unclean(replacing("/home/t", "/home/../t"), Some(Invalid::GuestHomeNotAbsolute { path: "/home/../t".into() }))]
    #[case::home_proc(replacing("/home/t", "/proc/1"), Some(Invalid::GuestHomeSystem { path: "/proc/1".into(), dir: "/proc".into() }))]
    #[case::home_dev(replacing("/home/t", "/dev"), Some(Invalid::GuestHomeSystem { path: "/dev".into(), dir: "/dev".into() }))]
    #[case::home_run(replacing("/home/t", "/run/x"), Some(Invalid::GuestHomeSystem { path: "/run/x".into(), dir: "/run".into() }))]
    #[case::home_runner_is_fine(replacing("/home/t", "/runner"), None)]
    #[case::home_colon(replacing("/home/t", "/home/a:b"), Some(Invalid::GuestHomeUnmountable { path: "/home/a:b".into() }))]
    #[case::mem_zero(replacing("mem: 1", "mem: 0"), Some(Invalid::NotPositive { field: "mem" }))]
    #[case::mem_missing(replacing("mem: 1\n", ""), Some(Invalid::NotPositive { field: "mem" }))]
    #[case::cpus_zero(replacing("cpus: 1", "cpus: 0"), Some(Invalid::NotPositive { field: "cpus" }))]
    #[case::binary_missing(replacing("binary: b\n", ""), Some(Invalid::BinaryRequired))]
    #[case::binary_not_needed_for_shell(replacing("binary: b\n", "kind: shell\n"), None)]
    #[case::binary_not_needed_for_gui(replacing("binary: b\n", "kind: gui\n"), None)]
    #[case::shell_flag(replacing("binary: b\n", "shell: true\n"), None)]
    #[case::shell_and_gui(with("shell: true\ngui: true\n"), Some(Invalid::ShellAndGui))]
    #[case::gui_flag_vs_kind(with("kind: shell\ngui: true\n"), Some(Invalid::KindContradiction { flag: "gui", kind: Kind::Shell }))]
    #[case::shell_flag_vs_kind(with("kind: gui\nshell: true\n"), Some(Invalid::KindContradiction { flag: "shell", kind: Kind::Gui }))]
    #[case::flag_agrees(with("kind: gui\ngui: true\n"), None)]
    #[case::false_flags(with("shell: false\ngui: false\n"), None)]
    fn identity_rules(#[case] doc: String, #[case] want: Option<Invalid>) {
        assert_eq!(problem(&doc), want);
    }

    #[rstest]
    #[case::shorthand(with("secrets: [gh-token]\n"), None)]
    #[case::bad_name_digit(with("secrets: [1tok]\n"), Some(Invalid::SecretBadName { name: "1tok".into() }))]
    #[case::bad_name_dot(with("secrets: [a.b]\n"), Some(Invalid::SecretBadName { name: "a.b".into() }))]
    #[case::name_too_long(with(&format!("secrets: [a{}]\n", "b".repeat(128))), Some(Invalid::SecretBadName { name: format!("a{}", "b".repeat(128)) }))]
    #[case::name_at_limit(with(&format!("secrets: [a{}]\n", "b".repeat(127))), None)]
    #[case::duplicate(with("secrets: [a, {name: a, required: false}]\n"), Some(Invalid::SecretDuplicate { name: "a".into() }))]
    #[case::empty_sources(with("secrets: [{name: a, sources: []}]\n"), Some(Invalid::SecretEmptySources { secret: "a".into() }))]
    #[case::sources_ok(
        with(
            "secrets:\n  - name: a\n    sources:\n      - {from: keychain, service: s}\n      - {from: file, path: ~/x}\n      - {from: env, var: V}\n"
        ),
        None
    )]
    #[case::keychain_needs_service(with("secrets: [{name: a, sources: [{from: keychain}]}]\n"), Some(Invalid::SourceMissingLocator { secret: "a".into(), from: "keychain", locator: "service" }))]
    #[case::file_needs_path(with("secrets: [{name: a, sources: [{from: file}]}]\n"), Some(Invalid::SourceMissingLocator { secret: "a".into(), from: "file", locator: "path" }))]
    #[case::env_needs_var(with("secrets: [{name: a, sources: [{from: env}]}]\n"), Some(Invalid::SourceMissingLocator { secret: "a".into(), from: "env", locator: "var" }))]
    #[case::foreign_locator(with("secrets: [{name: a, sources: [{from: file, path: p, var: V}]}]\n"), Some(Invalid::SourceForeignLocator { secret: "a".into(), from: "file", locator: "var" }))]
    #[case::shorthand_source(with("secrets: [{name: a, from: env, var: V}]\n"), None)]
    #[case::shorthand_and_sources(with("secrets: [{name: a, from: env, var: V, sources: [{from: env, var: W}]}]\n"), Some(Invalid::SecretShorthandAndSources { secret: "a".into() }))]
    #[case::shorthand_bad_locator(with("secrets: [{name: a, from: env, path: p}]\n"), Some(Invalid::SourceMissingLocator { secret: "a".into(), from: "env", locator: "var" }))]
    #[case::locator_without_from(with("secrets: [{name: a, var: V}]\n"), Some(Invalid::SecretLocatorWithoutFrom { secret: "a".into(), locator: "var" }))]
    fn secret_rules(#[case] doc: String, #[case] want: Option<Invalid>) {
        assert_eq!(problem(&doc), want);
    }

    #[rstest]
    #[case::literal(with("env: [{name: A, value: x}]\n"), None)]
    #[case::env_ref(with("env: [{name: A, ref: env.A}]\n"), None)]
    #[case::chain(with("secrets: [s]\nenv: [{name: A, refs: [env.A, secrets.s]}]\n"), None)]
    #[case::no_source(with("env: [{name: A}]\n"), Some(Invalid::EnvNoSource { name: "A".into() }))]
    #[case::empty_value_is_absent(with("env: [{name: A, value: \"\"}]\n"), Some(Invalid::EnvNoSource { name: "A".into() }))]
    #[case::empty_chain(with("env: [{name: A, refs: []}]\n"), Some(Invalid::EnvNoSource { name: "A".into() }))]
    #[case::two_sources(with("env: [{name: A, value: x, ref: env.A}]\n"), Some(Invalid::EnvManySources { name: "A".into() }))]
    #[case::empty_name(with("env: [{name: \"\", value: x}]\n"), Some(Invalid::EnvBadName { name: "".into() }))]
    #[case::name_with_eq(with("env: [{name: \"A=B\", value: x}]\n"), Some(Invalid::EnvBadName { name: "A=B".into() }))]
    #[case::name_with_space(with("env: [{name: \"A B\", value: x}]\n"), Some(Invalid::EnvBadName { name: "A B".into() }))]
    #[case::duplicate(with("env: [{name: A, value: x}, {name: A, value: y}]\n"), Some(Invalid::EnvDuplicate { name: "A".into() }))]
    #[case::bad_namespace(with("env: [{name: A, ref: vault.A}]\n"), Some(Invalid::BadRef { binding: "A".into(), reference: "vault.A".into(), reason: RefError::UnknownNamespace { namespace: "vault".into() } }))]
    #[case::no_dot(with("env: [{name: A, ref: A}]\n"), Some(Invalid::BadRef { binding: "A".into(), reference: "A".into(), reason: RefError::NoDot }))]
    #[case::bad_in_chain(with("env: [{name: A, refs: [env.A, \"secrets.\"]}]\n"), Some(Invalid::BadRef { binding: "A".into(), reference: "secrets.".into(), reason: RefError::BadSecretName }))]
    #[case::undeclared(with("env: [{name: A, ref: secrets.s}]\n"), Some(Invalid::UndeclaredSecret { binding: "A".into(), secret: "s".into() }))]
    #[case::secret_home(with("secrets: [s]\nenv: [{name: HOME, ref: secrets.s}]\n"), Some(Invalid::SecretInPlumbing { binding: "HOME".into(), secret: "s".into() }))]
    #[case::secret_late_in_path_chain(with("secrets: [s]\nenv: [{name: PATH, refs: [env.PATH, secrets.s]}]\n"), Some(Invalid::SecretInPlumbing { binding: "PATH".into(), secret: "s".into() }))]
    #[case::secret_xdg(with("secrets: [s]\nenv: [{name: XDG_CONFIG_HOME, ref: secrets.s}]\n"), Some(Invalid::SecretInPlumbing { binding: "XDG_CONFIG_HOME".into(), secret: "s".into() }))]
    #[case::host_home_is_fine(with("env: [{name: HOME, ref: env.HOME}, {name: TMPDIR, value: /t}]\n"), None)]
    #[case::secret_in_a_lookalike_name(with("secrets: [s]\nenv: [{name: HOMES, ref: secrets.s}]\n"), None)]
    #[case::forward(with("forward: [A, A]\n"), None)]
    #[case::forward_conflict(with("forward: [A]\nenv: [{name: A, value: x}]\n"), Some(Invalid::ForwardConflict { name: "A".into() }))]
    #[case::deny(with("deny: [K]\nenv: [{name: A, ref: env.A}]\n"), None)]
    #[case::denied_and_bound(with("deny: [A]\nenv: [{name: A, ref: env.A}]\n"), Some(Invalid::DeniedButBound { name: "A".into() }))]
    #[case::denied_and_forwarded(with("deny: [A]\nforward: [A]\n"), Some(Invalid::DeniedButBound { name: "A".into() }))]
    #[case::bad_deny_name(with("deny: [\"A=\"]\n"), Some(Invalid::EnvBadName { name: "A=".into() }))]
    fn env_rules(#[case] doc: String, #[case] want: Option<Invalid>) {
        assert_eq!(problem(&doc), want);
    }

    #[rstest]
    #[case("secrets.gh-token", Ok(Ref::Secret("gh-token".into())))]
    #[case("env.GH_TOKEN", Ok(Ref::Env("GH_TOKEN".into())))]
    #[case("env.A.B", Ok(Ref::Env("A.B".into())))]
    #[case("secrets.a.b", Err(RefError::BadSecretName))]
    #[case("env.", Err(RefError::BadEnvName))]
    #[case("nodot", Err(RefError::NoDot))]
    #[case("op.x", Err(RefError::UnknownNamespace { namespace: "op".into() }))]
    #[case(".x", Err(RefError::UnknownNamespace { namespace: "".into() }))]
    fn ref_grammar(#[case] text: &str, #[case] want: Result<Ref, RefError>) {
        assert_eq!(Ref::parse(text), want);
    }

    const TMPFS: &str = "volumes:\n  - {kind: tmpfs, path: s}\n";

    #[rstest]
    #[case::ok(with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: s/f}}]\n")), None)]
    #[case::mode_ok(with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: s/f, mode: \"0777\"}}]\n")), None)]
    #[case::env_ref(with(&format!("{TMPFS}files: [{{ref: env.K, path: s/f}}]\n")), Some(Invalid::FileRefNotSecret { path: "s/f".into(), reference: "env.K".into() }))]
    #[case::undeclared(with(&format!("{TMPFS}files: [{{ref: secrets.k, path: s/f}}]\n")), Some(Invalid::UndeclaredSecret { binding: "s/f".into(), secret: "k".into() }))]
    #[case::duplicate(with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: s/f}}, {{ref: secrets.k, path: s/f}}]\n")), Some(Invalid::FileDuplicate { path: "s/f".into() }))]
    #[case::mode_too_big(with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: s/f, mode: \"1777\"}}]\n")), Some(Invalid::BadMode { path: "s/f".into(), mode: "1777".into() }))]
    #[case::mode_not_octal(with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: s/f, mode: \"0680\"}}]\n")), Some(Invalid::BadMode { path: "s/f".into(), mode: "0680".into() }))]
    #[case::mode_empty(with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: s/f, mode: \"\"}}]\n")), Some(Invalid::BadMode { path: "s/f".into(), mode: "".into() }))]
    #[case::not_on_tmpfs(with("secrets: [k]\nfiles: [{ref: secrets.k, path: s/f}]\n"), Some(Invalid::FileNotOnTmpfs { path: "s/f".into() }))]
    #[case::under_hostmount(with(&format!("secrets: [k]\n{TMPFS}  - {{kind: hostmount, path: s/h}}\nfiles: [{{ref: secrets.k, path: s/h/f}}]\n")), Some(Invalid::FileUnderHostmount { path: "s/h/f".into(), hostmount: "s/h".into() }))]
    #[case::is_hostmount(with(&format!("secrets: [k]\n{TMPFS}  - {{kind: hostmount, path: s/f, file: true}}\nfiles: [{{ref: secrets.k, path: s/f}}]\n")), Some(Invalid::FileUnderHostmount { path: "s/f".into(), hostmount: "s/f".into() }))]
    #[case::absolute(with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: /s/f}}]\n")), Some(Invalid::BadPath { field: "files", path: "/s/f".into(), problem: PathProblem::NotRelative }))]
    fn file_rules(#[case] doc: String, #[case] want: Option<Invalid>) {
        assert_eq!(problem(&doc), want);
    }

    #[test]
    fn unquoted_mode_is_a_parse_error() {
        let doc = with(&format!("secrets: [k]\n{TMPFS}files: [{{ref: secrets.k, path: s/f, mode: 0600}}]\n"));
        let err = parse(&doc, "t.yaml").unwrap_err();
        assert!(matches!(err, Error::Parse { .. }), "{err:?}");
    }

    fn volumes(items: &[&str]) -> String {
        let list: String = items.iter().map(|i| format!("  - {i}\n")).collect();
        with(&format!("volumes:\n{list}"))
    }

    #[rstest]
    #[case::tmpfs(volumes(&["{kind: tmpfs, path: a}"]), None)]
    #[case::sizes(volumes(&["{kind: tmpfs, path: a, size: 1}", "{kind: tmpfs, path: b, size: 10K}", "{kind: tmpfs, path: c, size: 2G}"]), None)]
    #[case::size_zero(volumes(&["{kind: tmpfs, path: a, size: 0m}"]), Some(Invalid::VolumeBadSize { path: "a".into(), size: "0m".into() }))]
    #[case::size_unit(volumes(&["{kind: tmpfs, path: a, size: 5t}"]), Some(Invalid::VolumeBadSize { path: "a".into(), size: "5t".into() }))]
    #[case::size_bare_unit(volumes(&["{kind: tmpfs, path: a, size: m}"]), Some(Invalid::VolumeBadSize { path: "a".into(), size: "m".into() }))]
    #[case::named_volume(volumes(&["{kind: volume, path: a}"]), Some(Invalid::VolumeUnsupported { path: "a".into() }))]
    #[case::absolute(volumes(&["{kind: tmpfs, path: /a}"]), Some(Invalid::BadPath { field: "volumes", path: "/a".into(), problem: PathProblem::NotRelative }))]
    #[case::tilde(volumes(&["{kind: tmpfs, path: ~/a}"]), Some(Invalid::BadPath { field: "volumes", path: "~/a".into(), problem: PathProblem::NotRelative }))]
    #[case::unclean(volumes(&["{kind: tmpfs, path: a//b}"]), Some(Invalid::BadPath { field: "volumes", path: "a//b".into(), problem: PathProblem::NotClean }))]
    #[case::trailing_slash(volumes(&["{kind: tmpfs, path: a/}"]), Some(Invalid::BadPath { field: "volumes", path: "a/".into(), problem: PathProblem::NotClean }))]
    #[case::dot(volumes(&["{kind: tmpfs, path: ./a}"]), Some(Invalid::BadPath { field: "volumes", path: "./a".into(), problem: PathProblem::NotClean }))]
    #[case::inner_dotdot(volumes(&["{kind: tmpfs, path: a/../b}"]), Some(Invalid::BadPath { field: "volumes", path: "a/../b".into(), problem: PathProblem::NotClean }))]
    #[case::escapes(volumes(&["{kind: tmpfs, path: ../a}"]), Some(Invalid::BadPath { field: "volumes", path: "../a".into(), problem: PathProblem::Escapes }))]
    #[case::colon(volumes(&["{kind: tmpfs, path: \"a:rw,exec\"}"]), Some(Invalid::BadPath { field: "volumes", path: "a:rw,exec".into(), problem: PathProblem::Unmountable }))]
    #[case::comma(volumes(&["{kind: tmpfs, path: a}", "{kind: hostmount, path: \"a/b,c\"}"]), Some(Invalid::BadPath { field: "volumes", path: "a/b,c".into(), problem: PathProblem::Unmountable }))]
    #[case::keep_dir(volumes(&["{kind: tmpfs, path: .brig-keep/x}"]), Some(Invalid::BadPath { field: "volumes", path: ".brig-keep/x".into(), problem: PathProblem::Reserved }))]
    #[case::home_itself(volumes(&["{kind: tmpfs, path: .}"]), Some(Invalid::BadPath { field: "volumes", path: ".".into(), problem: PathProblem::Empty }))]
    #[case::duplicate(volumes(&["{kind: tmpfs, path: a}", "{kind: tmpfs, path: a}"]), Some(Invalid::VolumeDuplicate { path: "a".into() }))]
    #[case::file_on_tmpfs(volumes(&["{kind: tmpfs, path: a, file: true}"]), Some(Invalid::VolumeFieldNotAllowed { path: "a".into(), kind: "tmpfs", field: "file" }))]
    #[case::size_on_hostmount(volumes(&["{kind: tmpfs, path: a}", "{kind: hostmount, path: a/b, size: 1m}"]), Some(Invalid::VolumeFieldNotAllowed { path: "a/b".into(), kind: "hostmount", field: "size" }))]
    #[case::at_on_hostmount(volumes(&["{kind: tmpfs, path: a}", "{kind: hostmount, path: a/b, at: /x}"]), Some(Invalid::VolumeFieldNotAllowed { path: "a/b".into(), kind: "hostmount", field: "at" }))]
    #[case::hostmount_nested(volumes(&["{kind: hostmount, path: a/b, file: true}", "{kind: tmpfs, path: a}"]), None)]
    #[case::hostmount_outside(volumes(&["{kind: tmpfs, path: a}", "{kind: hostmount, path: ab/c}"]), Some(Invalid::HostmountOutsideTmpfs { path: "ab/c".into() }))]
    #[case::hostmount_equal_to_tmpfs(volumes(&["{kind: tmpfs, path: a}", "{kind: hostmount, path: a/b}", "{kind: hostmount, path: b}"]), Some(Invalid::HostmountOutsideTmpfs { path: "b".into() }))]
    #[case::nested_tmpfs(volumes(&["{kind: tmpfs, path: a}", "{kind: tmpfs, path: a/b}"]), None)]
    #[case::nested_tmpfs_with_at(volumes(&["{kind: tmpfs, path: a, at: /brig/a}", "{kind: tmpfs, path: a/b}"]), Some(Invalid::NestedTmpfsWithAt { inner: "a/b".into(), outer: "a".into() }))]
    #[case::state_paths(
        with("statePaths: [.x]\nvolumes: [{kind: tmpfs, path: a}]\n"),
        Some(Invalid::StatePathsWithVolumes)
    )]
    #[case::state_paths_alone(with("statePaths: [.x, .local/share/x]\n"), None)]
    fn volume_rules(#[case] doc: String, #[case] want: Option<Invalid>) {
        assert_eq!(problem(&doc), want);
    }

    fn at(value: &str) -> String {
        volumes(&[&format!("{{kind: tmpfs, path: a, at: \"{value}\"}}")])
    }

    fn bad_at(value: &str, problem: AtProblem) -> Option<Invalid> {
        Some(Invalid::BadAt { path: "a".into(), at: value.into(), problem })
    }

    #[rstest]
    #[case::ok(at("/brig/claude"), None)]
    #[case::relative(at("brig"), bad_at("brig", AtProblem::NotAbsolute))]
    #[case::unclean(at("/brig/../etc"), bad_at("/brig/../etc", AtProblem::NotAbsolute))]
    #[case::trailing(at("/brig/"), bad_at("/brig/", AtProblem::NotAbsolute))]
    #[case::root(at("/"), bad_at("/", AtProblem::Root))]
    #[case::colon(at("/brig/c:ro"), bad_at("/brig/c:ro", AtProblem::Unmountable))]
    #[case::home(at("/home/t"), bad_at("/home/t", AtProblem::OverlapsGuestHome))]
    #[case::inside_home(at("/home/t/x"), bad_at("/home/t/x", AtProblem::OverlapsGuestHome))]
    #[case::above_home(at("/home"), bad_at("/home", AtProblem::OverlapsGuestHome))]
    #[case::sibling_of_home(at("/home/tt"), None)]
    #[case::proc(at("/proc/x"), bad_at("/proc/x", AtProblem::SystemDir { dir: "/proc".into() }))]
    #[case::etc(at("/etc"), bad_at("/etc", AtProblem::SystemDir { dir: "/etc".into() }))]
    #[case::lib64(at("/lib64/x"), bad_at("/lib64/x", AtProblem::SystemDir { dir: "/lib64".into() }))]
    #[case::work(at("/work/p"), bad_at("/work/p", AtProblem::SystemDir { dir: "/work".into() }))]
    #[case::var(at("/var"), bad_at("/var", AtProblem::SystemDir { dir: "/var".into() }))]
    #[case::overlapping(volumes(&["{kind: tmpfs, path: a, at: /brig}", "{kind: tmpfs, path: b, at: /brig/b}"]), bad_at("/brig", AtProblem::OverlapsAt { other: "b".into() }))]
    fn at_rules(#[case] doc: String, #[case] want: Option<Invalid>) {
        assert_eq!(problem(&doc), want);
    }

    #[rstest]
    #[case::policy_on_agent(with("policy: [github]\n"), None)]
    #[case::policy_on_shell(with("kind: shell\npolicy: [github]\n"), Some(Invalid::PolicyOnNonAgent { kind: Kind::Shell }))]
    #[case::stale_absolute(with("staleCredentialFiles: [/x]\n"), Some(Invalid::BadPath { field: "staleCredentialFiles", path: "/x".into(), problem: PathProblem::NotRelative }))]
    #[case::host_config(with("hostConfigDir: ~/.x\nprojectPaths: [skills]\n"), None)]
    #[case::host_config_alone(with("hostConfigDir: ~/.x\n"), Some(Invalid::HostConfigIncomplete))]
    #[case::project_paths_alone(with("projectPaths: [skills]\n"), Some(Invalid::HostConfigIncomplete))]
    #[case::onboarding(with("onboarding: {file: .x.json, seed: {a: true}, trustKey: [projects, ok]}\n"), None)]
    #[case::onboarding_key(
        with("onboarding: {file: .x.json, trustKey: [projects]}\n"),
        Some(Invalid::OnboardingTrustKey)
    )]
    #[case::onboarding_seed(with("onboarding: {file: .x.json, seed: [1]}\n"), Some(Invalid::OnboardingSeed))]
    #[case::onboarding_file(with("onboarding: {file: ../x}\n"), Some(Invalid::BadPath { field: "onboarding", path: "../x".into(), problem: PathProblem::Escapes }))]
    fn other_rules(#[case] doc: String, #[case] want: Option<Invalid>) {
        assert_eq!(problem(&doc), want);
    }

    /// Rules the parser enforces: unknown fields (the removed
    /// `hostCredential` among them), unknown enumerated values, wrong types.
    #[rstest]
    #[case::host_credential(with("hostCredential: {from: keychain}\n"), "hostCredential")]
    #[case::misspelled(with("guesthome: /x\n"), "guesthome")]
    #[case::volume_source(volumes(&["{kind: tmpfs, path: a, source: x}"]), "source")]
    #[case::kind(with("kind: daemon\n"), "daemon")]
    #[case::network(with("network: bridged\n"), "bridged")]
    #[case::hypervisor(with("hypervisor: kvm\n"), "kvm")]
    #[case::rootfs(with("rootfsType: ext4\n"), "ext4")]
    #[case::volume_kind(volumes(&["{kind: bind, path: a}"]), "bind")]
    #[case::empty_volume_kind(volumes(&["{kind: \"\", path: a}"]), "unknown variant")]
    #[case::source_kind(with("secrets: [{name: a, sources: [{from: vault}]}]\n"), "vault")]
    #[case::negative_mem(replacing("mem: 1", "mem: -1"), "line 5")]
    #[case::env_typo(with("env: [{name: A, valeu: x}]\n"), "valeu")]
    fn parser_rules(#[case] doc: String, #[case] named: &str) {
        let err = parse(&doc, "t.yaml").unwrap_err();
        assert!(matches!(err, Error::Parse { .. }), "{err:?}");
        let line = crate::error::chain(&err);
        assert!(line.contains(named) && line.contains("t.yaml"), "{line}");
    }

    #[rstest]
    #[case(with("network: offline\nhypervisor: qemu\nrootfsType: 9pfs\nruntimeBin: ~/bin/x\n"))]
    #[case(with("network: shared\nhypervisor: vz\nrootfsType: virtiofs\ngenericBoot: true\n"))]
    fn enumerated_values_accepted(#[case] doc: String) {
        assert_eq!(problem(&doc), None);
    }
}
