//! Git in the guest, so an agent can do real work: a credential helper
//! that answers with `GH_TOKEN` from the guest's environment when git asks
//! (so no token is ever written to a file), HTTPS in place of SSH for the
//! hosts it serves, and the commit identity of the directory brig was run
//! in. Written into the guest home at every boot and start, through
//! handles, never through a link.

use std::io::{Read, Write};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use super::prepare::{open_file, open_parent};
use crate::Error;
use crate::environment::Environment;
use crate::profile::Profile;
use crate::session::PreparedHome;
use crate::settings::Settings;

/// brig's git configuration and helper, relative to the home.
const CONFIG: &str = ".config/brig/gitconfig";
const HELPER: &str = ".config/brig/git-credential";
/// The guest's own git configuration, which includes brig's.
const USER_CONFIG: &str = ".gitconfig";
/// The largest `.gitconfig` brig reads to add its include.
const USER_CONFIG_MAX: u64 = 1 << 20;

/// The helper: `get` answers with the token in the environment at query
/// time; `store` and `erase` do nothing, so git never writes it anywhere.
const HELPER_SCRIPT: &str = r#"#!/bin/sh
# brig's git credential helper: answers with GH_TOKEN from the environment
# when git asks, and stores nothing.
[ "$1" = get ] || exit 0
[ -n "${GH_TOKEN:-}" ] || exit 0
echo "password=$GH_TOKEN"
"#;

/// What the managed configuration says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSetup {
    pub helper: bool,
    pub hosts: Vec<String>,
    pub user: String,
    pub identity: Option<(String, String)>,
}

impl GitSetup {
    /// From the settings and, for the identity, the host's git in `cwd`
    /// (so an `includeIf` there is honoured). `None` when the user turned
    /// both parts off.
    pub fn resolve(env: &Environment, profile: &Profile, cwd: &Path) -> Result<Option<GitSetup>, Error> {
        let settings = Settings::new(env, &profile.name);
        let helper = settings.flag_bool_or("GIT_CONFIG", true)?;
        let identity_on = settings.flag_bool_or("GIT_IDENTITY", true)?;
        let hosts = settings
            .variable("GIT_HOSTS")
            .map(|(_, v)| v.split([',', ' ']).filter(|h| is_host(h)).map(str::to_owned).collect())
            .unwrap_or_else(|| vec!["github.com".to_owned()]);
        let user = settings.variable("GIT_USER").map_or("x-access-token", |(_, v)| v).to_owned();
        let identity = if identity_on { identity(env, &settings, cwd) } else { None };
        if !helper && identity.is_none() {
            return Ok(None);
        }
        Ok(Some(GitSetup { helper, hosts, user, identity }))
    }

    /// The managed configuration. Every value went through `clean`, so no
    /// line of it can be broken out of.
    pub fn config(&self, guest_home: &str) -> String {
        let mut out = String::from("# Written by brig at every start; edits here are lost.\n");
        if let Some((name, email)) = &self.identity {
            out.push_str(&format!("[user]\n\tname = {}\n\temail = {}\n", quoted(name), quoted(email)));
        }
        if self.helper {
            for host in &self.hosts {
                out.push_str(&format!(
                    "[credential \"https://{host}\"]\n\thelper =\n\thelper = {guest_home}/{HELPER}\n\tusername = {}\n",
                    quoted(&self.user)
                ));
                out.push_str(&format!(
                    "[url \"https://{host}/\"]\n\tinsteadOf = git@{host}:\n\tinsteadOf = ssh://git@{host}/\n"
                ));
            }
        }
        out
    }
}

/// Write the configuration and the helper, and make the guest's own
/// `.gitconfig` include it.
pub fn write(setup: &GitSetup, profile: &Profile, home: &PreparedHome) -> Result<(), Error> {
    replace(home, Path::new(CONFIG), setup.config(&profile.guest_home).as_bytes(), 0o644)?;
    replace(home, Path::new(HELPER), HELPER_SCRIPT.as_bytes(), 0o755)?;
    let include = format!("[include]\n\tpath = {}/{CONFIG}\n", profile.guest_home);
    let rel = Path::new(USER_CONFIG);
    let (parent, name) = open_parent(home, rel)?;
    let shown = home.path.join(rel);
    let mut file = std::fs::File::from(open_file(&parent, name, &shown, OFlags::RDWR)?);
    let mut text = String::new();
    (&mut file).take(USER_CONFIG_MAX).read_to_string(&mut text).map_err(|e| Error::io("read", &shown, e))?;
    if !text.contains(&include) {
        let sep = if text.is_empty() || text.ends_with('\n') { "" } else { "\n" };
        file.write_all(format!("{sep}{include}").as_bytes()).map_err(|e| Error::io("write", &shown, e))?;
    }
    Ok(())
}

/// Rewrite a file brig owns in the home, in place, with `mode`.
fn replace(home: &PreparedHome, rel: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let (parent, name) = open_parent(home, rel)?;
    let shown = home.path.join(rel);
    let fd = open_file(&parent, name, &shown, OFlags::RDWR)?;
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)).map_err(|e| Error::io("set the mode of", &shown, e.into()))?;
    let mut file = std::fs::File::from(fd);
    file.set_len(0).map_err(|e| Error::io("write", &shown, e))?;
    file.write_all(bytes).map_err(|e| Error::io("write", &shown, e))
}

/// `BRIG_GIT_NAME`/`BRIG_GIT_EMAIL`, else the host's `user.name` and
/// `user.email` as git reads them in `cwd`.
fn identity(env: &Environment, settings: &Settings<'_>, cwd: &Path) -> Option<(String, String)> {
    let host = |key: &str| {
        let git = env.find_on_path("git")?;
        let out = crate::process::Command::new(git)
            .arg("-C")
            .path_arg(cwd)
            .args(["config", "--get", key])
            .timeout(std::time::Duration::from_secs(5))
            .output()
            .ok()?;
        Some(out.stdout.trim().to_owned())
    };
    let name = settings.variable("GIT_NAME").map(|(_, v)| v.to_owned()).or_else(|| host("user.name"))?;
    let email = settings.variable("GIT_EMAIL").map(|(_, v)| v.to_owned()).or_else(|| host("user.email"))?;
    let (name, email) = (clean(&name), clean(&email));
    (!name.is_empty() && !email.is_empty()).then_some((name, email))
}

/// A value on one line, without the characters git's syntax gives meaning.
fn clean(value: &str) -> String {
    value.chars().filter(|c| !c.is_control()).collect::<String>().trim().to_owned()
}

/// A value in double quotes, with git's escapes.
fn quoted(value: &str) -> String {
    format!("\"{}\"", clean(value).replace('\\', "\\\\").replace('"', "\\\""))
}

/// A host name as a URL's authority may carry it, starting with a letter or
/// digit (never read as an option or an empty label).
fn is_host(h: &str) -> bool {
    h.starts_with(|c: char| c.is_ascii_alphanumeric())
        && h.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_routes_every_host_through_the_helper_and_carries_no_token() {
        let setup = GitSetup {
            helper: true,
            hosts: vec!["github.com".into(), "git.example.org".into()],
            user: "x-access-token".into(),
            identity: Some(("Ada \"L\"\nLovelace".into(), "ada@example.org".into())),
        };
        let text = setup.config("/root");
        assert!(text.contains(
            "[credential \"https://git.example.org\"]\n\thelper =\n\thelper = /root/.config/brig/git-credential\n"
        ));
        assert!(text.contains("insteadOf = git@github.com:"));
        assert!(text.contains("name = \"Ada \\\"L\\\"Lovelace\""), "{text}");
        assert!(HELPER_SCRIPT.contains("[ \"$1\" = get ] || exit 0"), "the helper answers get and nothing else");
    }

    #[test]
    fn hosts_are_checked() {
        assert!(is_host("github.com") && is_host("git.example.org:8443"));
        assert!(!is_host("a b") && !is_host("x\"]\n[core") && !is_host("") && !is_host("-x"));
    }
}
