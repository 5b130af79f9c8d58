//! Profiles: the document that describes one agent, the eight built-ins, and
//! the registry that layers file profiles over them.
//!
//! A profile is read in two steps: a strict serde parse (unknown fields are
//! refused, so a misspelling never passes silently), then [`validate`], which
//! folds the deprecated spellings into their current form and checks every
//! rule the parser cannot express. Only a document that passed both reaches
//! the rest of brig.

mod builtin;
mod document;
pub mod manage;
mod registry;
pub mod store;
mod validate;

use std::path::PathBuf;

pub use builtin::{ALIASES, BUILTINS, Builtin, FIELD_GUIDE};
pub use document::{
    CredentialNames, EnvBinding, EnvSource, FileBinding, HostMount, Hypervisor, Kind, Network, Onboarding, Profile,
    RootfsType, SecretDecl, Source, SourceKind, TmpfsMount, Volume, VolumeKind,
};
pub use registry::{Entry, Origin, Registry, profile_files, split_name};
pub use validate::{AtProblem, Invalid, PathProblem, Ref, RefError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No profile or alias of that name.
    #[error("unknown agent \"{name}\"; `brig agent ls` lists the agents")]
    UnknownAgent { name: String },
    /// The document is not a profile: bad YAML/JSON, a misspelled or unknown
    /// field, a value of the wrong type. The source names line and field.
    #[error("cannot read the profile {file}")]
    Parse {
        file: String,
        #[source]
        source: serde_saphyr::Error,
    },
    /// The document parsed but breaks one of the profile rules.
    #[error("the profile {file} is not valid")]
    Invalid {
        file: String,
        #[source]
        problem: Invalid,
    },
    #[error("the profile {file} is not UTF-8 text")]
    NotUtf8 { file: String },
    #[error("{name} is a built-in agent and cannot be removed; a file profile of the same name can only shadow it")]
    BuiltinNotRemovable { name: String },
    #[error("{} already exists; pass --force to replace it", path.display())]
    Exists { path: PathBuf },
    #[error("\"{name}\" cannot name a profile file: it contains '/'")]
    DestinationHasSlash { name: String },
    #[error("\"{name}\" is not a valid profile name: use a-z, 0-9, '.', '_' and '-', starting with a letter or digit")]
    DestinationBadName { name: String },
    #[error("\"{name}\" is the alias of {target}; choose another name")]
    DestinationIsAlias { name: String, target: String },
    #[error("\"{name}\" is reserved by the profile {by}; choose another name")]
    DestinationReserved { name: String, by: String },
    /// `agent rm` would remove files the user did not name, and nobody can be
    /// asked.
    #[error("removing {name} also removes {count} file(s) you did not name; pass -y to confirm")]
    NeedsConfirmation { name: String, count: usize },
    #[error("nothing removed")]
    Declined,
    /// A profile still used by a sandbox: removing it would strand the sandbox.
    #[error("{name} is still used by {}; remove them first (brig rm <ref>)", sandboxes.join(", "))]
    InUse { name: String, sandboxes: Vec<String> },
    #[error("neither VISUAL nor EDITOR is set; set one to the editor to use")]
    NoEditor,
    #[error("cannot start the editor `{editor}`")]
    EditorFailed {
        editor: String,
        #[source]
        source: crate::process::Error,
    },
    #[error("the editor `{editor}` failed ({status}); the file is left as it is")]
    EditorExit { editor: String, status: std::process::ExitStatus },
    /// The edit left an unusable profile behind. The file is kept so the user
    /// can open it again; the previous state is not restored behind their back.
    #[error("{} is not usable after the edit and was kept as it is; run `brig agent edit` again to fix it", path.display())]
    EditedInvalid {
        path: PathBuf,
        #[source]
        source: Box<Error>,
    },
    /// Writing or removing a file in the profile directory failed.
    #[error("cannot {action} {}", path.display())]
    Write {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Parse and validate one profile document (YAML or JSON). `file` names the
/// document in errors: a path, or `built-in <name>`.
pub fn parse(text: &str, file: &str) -> Result<Profile, Error> {
    // No snippet: the message is printed inside one error chain (and inside
    // one warning line for an unusable file), where a multi-line excerpt of
    // the document would not fit.
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    let mut profile: Profile = serde_saphyr::from_str_with_options(text, options)
        .map_err(|source| Error::Parse { file: file.to_owned(), source })?;
    validate::normalize_and_check(&mut profile).map_err(|problem| Error::Invalid { file: file.to_owned(), problem })?;
    Ok(profile)
}

/// Parse raw bytes, refusing anything that is not UTF-8.
pub fn parse_bytes(bytes: &[u8], file: &str) -> Result<Profile, Error> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error::NotUtf8 { file: file.to_owned() })?;
    parse(text, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelled_field_names_the_field_and_the_file() {
        let doc = "name: x\nimage: i\nguestHome: /root\nmem: 1\ncpus: 1\nbinary: b\nhostCredential: {}\n";
        let err = parse(doc, "mine.yaml").unwrap_err();
        assert!(matches!(&err, Error::Parse { file, .. } if file == "mine.yaml"), "{err:?}");
        let line = crate::error::chain(&err);
        assert!(line.contains("mine.yaml") && line.contains("hostCredential"), "{line}");
    }

    #[test]
    fn json_parses_like_yaml() {
        let doc = r#"{"name": "j", "binary": "b", "image": "i", "guestHome": "/root", "mem": 512, "cpus": 1}"#;
        let profile = parse(doc, "j.json").unwrap();
        assert_eq!(profile.name, "j");
        assert_eq!(profile.mem, 512);
    }

    #[test]
    fn invalid_utf8_is_refused() {
        let err = parse_bytes(b"name: \xff", "bad.yaml").unwrap_err();
        assert!(matches!(err, Error::NotUtf8 { .. }), "{err:?}");
    }
}
