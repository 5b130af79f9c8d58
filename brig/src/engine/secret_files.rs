//! Credential files (`files:`): a stored secret written, on every command,
//! into the guest's memory-backed directory, never onto a disk.
//!
//! The value goes in on the exec's stdin, never its argv. In the guest, as
//! root, the file is removed and made anew with `O_EXCL` (a link the guest
//! planted there makes the create fail rather than be followed), on a tmpfs
//! (checked), and its mode and owner are set through the open descriptor,
//! so nothing is ever written through a link. A binding whose secret is
//! not stored leaves no file at all.

use super::Engine;
use crate::Error;
use crate::profile::Profile;
use crate::runtime::{ExecSpec, Runtime};

/// `$1` the file, `$2` its mode, `$3` its owner; the value on stdin.
const WRITE: &str = r#"set -eu
f=$1 mode=$2 owner=$3
d=$(dirname -- "$f")
mkdir -p -- "$d"
if [ "$(stat -f -c %T -- "$d")" != tmpfs ]; then
  echo "$d is not memory-backed" >&2
  exit 3
fi
rm -f -- "$f"
umask 077
set -C
exec 3> "$f"
cat >&3
chown -- "$owner" /proc/self/fd/3
chmod -- "$mode" /proc/self/fd/3
if [ ! -s /proc/self/fd/3 ]; then
  echo "$f is empty after the write" >&2
  exit 3
fi"#;

/// `$1` the file.
const REMOVE: &str = r#"rm -f -- "$1""#;

/// Write (or remove) every file binding of `profile` in `sandbox`.
pub fn deliver(engine: &mut Engine<'_>, runtime: &dyn Runtime, sandbox: &str, profile: &Profile) -> Result<(), Error> {
    if profile.files.is_empty() {
        return Ok(());
    }
    let owner = guest_user(&profile.guest_home);
    for binding in &profile.files {
        let Some(name) = binding.reference.strip_prefix("secrets.") else { continue };
        let value = match engine.secret_store() {
            Ok(store) => store.get(name)?,
            Err(err) if profile.secret(name).is_some_and(|d| !d.required) => {
                tracing::debug!("the optional secret {name} is not read: {err}");
                None
            }
            Err(err) => return Err(err.into()),
        };
        let path = profile.guest_path(&binding.path);
        let (script, stdin) = match &value {
            Some(secret) => (WRITE, secret.expose().to_vec()),
            None => (REMOVE, Vec::new()),
        };
        let spec = ExecSpec {
            argv: ["sh", "-c", script, "brig-file", &path, &binding.mode, &owner].map(str::to_owned).to_vec(),
            interactive: true,
            ..ExecSpec::default()
        };
        let out = runtime.exec(sandbox, &spec).stdin(stdin).output();
        if let Err(err) = out {
            let words = err.stderr().map(crate::runtime::runtime_words).unwrap_or_else(|| err.to_string());
            return Err(super::Error::FileNotDelivered { path, why: words }.into());
        }
    }
    Ok(())
}

/// The guest user a profile's files belong to: the last part of its guest
/// home (`/root` → root, `/home/cursor` → cursor).
fn guest_user(guest_home: &str) -> String {
    guest_home.rsplit('/').find(|p| !p.is_empty()).unwrap_or("root").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_user_is_the_last_part_of_the_home() {
        assert_eq!(guest_user("/root"), "root");
        assert_eq!(guest_user("/home/cursor"), "cursor");
        assert_eq!(guest_user("/"), "root");
    }
}
