//! The eight built-in agents, embedded from `profiles/*.yaml` at build time so
//! that `brig run claude` works with no setup, and the alias table.

/// A built-in profile as shipped: its name and the YAML text.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    pub yaml: &'static str,
}

macro_rules! builtin {
    ($name:literal) => {
        Builtin { name: $name, yaml: include_str!(concat!("../../../profiles/", $name, ".yaml")) }
    };
}

pub const BUILTINS: &[Builtin] = &[
    builtin!("claude-code"),
    builtin!("claude-desktop"),
    builtin!("codex"),
    builtin!("cursor"),
    builtin!("gemini"),
    builtin!("grok"),
    builtin!("opencode"),
    builtin!("ubuntu"),
];

/// Short names typed in place of a profile name: (alias, profile). An exact
/// profile name always wins over an alias.
pub const ALIASES: &[(&str, &str)] = &[("claude", "claude-code"), ("desktop", "claude-desktop")];

/// The comment block `brig agent export` puts above an exported YAML
/// profile, so the copy a user edits explains itself.
pub const FIELD_GUIDE: &str = "\
# A brig profile. brig reads *.yaml, *.yml and *.json from its profile
# directory; the name: field, not the file name, says which agent this is.
# Unknown fields are refused.
#
#   name        a-z 0-9 . _ -, starting with a letter or digit (required)
#   desc        one line for `brig agent ls`
#   kind        agent (default) | shell | gui
#   binary      the program `brig run` starts (required for kind: agent)
#   image       OCI image reference (required; --image / BRIG_IMAGE override)
#   guestHome   absolute guest path of the home directory (required)
#   mem, cpus   MB of memory and vCPUs, above 0 (required)
#   secrets     secrets the agent may use: a bare name (required) or
#               {name, required, field, expiryField, hint, sources}; a source
#               is {from: keychain, service} | {from: file, path} | {from: env, var}
#   env         guest variables: {name, value} | {name, ref} | {name, refs},
#               where a ref is env.NAME or secrets.<declared secret>
#   files       {ref: secrets.<name>, path, mode: \"0600\"}: a secret written as
#               a file; path must lie inside a tmpfs volume
#   volumes     {kind: tmpfs, path, size: 64m, at} memory-only mounts and
#               {kind: hostmount, path, file} paths kept on disk inside them
#   deny        variables never forwarded unless BRIG_ALLOW_DENIED=1
#   staleCredentialFiles  paths brig warns about when they exist
#   headless    the agent can run without a terminal
#   guiTitle    window title for kind: gui
#   network     shared | isolated | offline
#   hypervisor  vz | hvi | qemu (macOS only)
#   runtimeBin  the runtime executable (BRIG_RUNTIME_BIN overrides)
#   rootfsType  block | virtiofs | 9pfs
#   genericBoot plain OCI image; brig supplies kernel and initrd
#   hostConfigDir, projectPaths  host config copied in with --skills
#   onboarding  {file, seed, trustKey}: first-run state, never a credential
#   reserved    keep this name and its last -word from sessions and imports
#   unpublished the image is not published; runs need --image
#   policy      egress policies (kind: agent only)
#   forward, statePaths  deprecated spellings, still read
#
";

#[cfg(test)]
mod tests {
    use super::super::{Kind, VolumeKind, parse};
    use super::*;

    #[test]
    fn every_builtin_parses_validates_and_matches_its_file_name() {
        for b in BUILTINS {
            let p = parse(b.yaml, b.name).unwrap_or_else(|e| panic!("{}: {}", b.name, crate::error::chain(&e)));
            assert_eq!(p.name, b.name);
        }
    }

    #[test]
    fn exactly_the_eight_agents_with_their_aliases() {
        let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
        assert_eq!(names, ["claude-code", "claude-desktop", "codex", "cursor", "gemini", "grok", "opencode", "ubuntu"]);
        assert_eq!(ALIASES, [("claude", "claude-code"), ("desktop", "claude-desktop")]);
        for (_, target) in ALIASES {
            assert!(names.contains(target));
        }
    }

    #[test]
    fn only_the_claude_profiles_keep_state_in_memory() {
        let with_tmpfs: Vec<&str> = BUILTINS
            .iter()
            .filter(|b| {
                let p = parse(b.yaml, b.name).unwrap();
                p.volumes.iter().any(|v| v.kind == VolumeKind::Tmpfs)
            })
            .map(|b| b.name)
            .collect();
        assert_eq!(with_tmpfs, ["claude-code", "claude-desktop"]);
    }

    #[test]
    fn claude_code_shape() {
        let p = parse(BUILTINS[0].yaml, "claude-code").unwrap();
        assert_eq!(p.image, "ghcr.io/brig-sh/claude-code-stock:root");
        assert_eq!(p.guest_home, "/root");
        let tmpfs = p.tmpfs_mounts();
        assert_eq!(tmpfs.len(), 1);
        assert_eq!(tmpfs[0].target, "/brig/claude");
        assert_eq!(tmpfs[0].options, "size=512m,mode=0700,nodev,nosuid");
        assert_eq!(p.hostmounts().len(), 8);
        assert_eq!(p.guest_path(&p.files[0].path), "/brig/claude/.credentials.json");
        let config = p.env.iter().find(|e| e.name == "CLAUDE_CONFIG_DIR").unwrap();
        assert_eq!(config.value.as_deref(), Some("/brig/claude"));
        assert_eq!(p.credential_names().secrets, ["claude-credentials", "gh-token"]);
    }

    #[test]
    fn kinds_and_flags() {
        let get = |n: &str| {
            let b = BUILTINS.iter().find(|b| b.name == n).unwrap();
            parse(b.yaml, n).unwrap()
        };
        assert_eq!(get("claude-desktop").kind, Kind::Gui);
        assert!(get("claude-desktop").reserved);
        assert_eq!(get("ubuntu").kind, Kind::Shell);
        assert!(get("cursor").unpublished);
        assert_eq!(get("claude-desktop").hostmounts().len(), 6);
    }

    #[test]
    fn the_guide_is_only_comments() {
        assert!(FIELD_GUIDE.lines().all(|l| l.starts_with('#')));
    }
}
