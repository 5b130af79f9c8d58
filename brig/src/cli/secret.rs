//! `brig secret`: the store a run reads credentials from. A value comes in
//! on stdin or from a file, never on the command line, and goes out only
//! to `read`'s stdout and to a guest.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use clap::Subcommand;
use serde::Serialize;

use super::{Context, print};
use crate::Error;
use crate::error::UsageError;
use crate::exit::Code;
use crate::json::Envelope;
use crate::secrets::{self, Secret, Store, VALUE_MAX};

#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Store a new secret. The value comes from stdin (one trailing newline
    /// dropped) or -f FILE (verbatim), never from the command line.
    Create(WriteArgs),
    /// Replace the value of a stored secret.
    Update(WriteArgs),
    /// Print a secret's value.
    Read(NameArgs),
    /// Remove a secret (asks first; -y for no terminal).
    Delete(DeleteArgs),
    /// List the stored secrets: names and when they were written. No value
    /// is read.
    Ls,
    /// Fill a profile's declared secrets from the sources it names (a file,
    /// a variable), now rather than at run time.
    Import(ImportArgs),
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The agent whose declared secrets to fill.
    pub profile: String,
    /// Only these of its secrets.
    pub names: Vec<String>,
    /// Say what would be stored; store nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace a value that was stored by hand.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Fill the one named secret from this shell command's output instead
    /// (the command line is not recorded).
    #[arg(long, value_name = "SH")]
    pub from_command: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct WriteArgs {
    /// The secret's name: a letter, then letters, digits, '_' or '-'.
    pub name: String,
    /// Read the value from this file, byte for byte (`-` for stdin).
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// Read the value from stdin (the default).
    #[arg(long)]
    pub stdin: bool,
}

#[derive(Debug, clap::Args)]
pub struct NameArgs {
    pub name: String,
}

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    pub name: String,
    /// Delete without asking.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

pub fn run(command: SecretCommand, ctx: &Context) -> Result<Code, Error> {
    match command {
        SecretCommand::Create(args) => write(args, false),
        SecretCommand::Update(args) => write(args, true),
        SecretCommand::Read(args) => read(&args.name),
        SecretCommand::Delete(args) => delete(&args),
        SecretCommand::Ls => ls(ctx),
        SecretCommand::Import(args) => import(&args, ctx),
    }
}

fn write(args: WriteArgs, replace: bool) -> Result<Code, Error> {
    secrets::check_name(&args.name)?;
    let value = value(&args)?;
    // Opened after the value is in hand, so a refusal of the input never
    // waits on a keyring.
    let store = Store::open()?;
    secrets::write(&store, &args.name, &value, replace)?;
    Ok(Code::Success)
}

/// The value, from stdin or a file, under the input rules: never empty,
/// never more than the store holds, never a terminal typed into by mistake.
fn value(args: &WriteArgs) -> Result<Secret, Error> {
    let bad = |what: &str| Error::from(secrets::Error::BadValue { what: what.to_owned() });
    let from_stdin = match &args.file {
        Some(_) if args.stdin => return Err(UsageError::StdinAndFile.into()),
        Some(file) if file.as_os_str().is_empty() => return Err(bad("-f needs a file name (or - for stdin)")),
        Some(file) => file.as_os_str() == "-",
        None => true,
    };
    let mut bytes = Vec::new();
    if from_stdin {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(bad(
                "the value comes from stdin, and stdin is a terminal; pipe it in (`printf %s \"$TOKEN\" | brig secret create NAME`) or use -f FILE",
            ));
        }
        stdin.lock().take(VALUE_MAX as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::Io {
            action: "read",
            path: "stdin".into(),
            source: e,
        })?;
        // One trailing line end is the shell's, not the secret's.
        if bytes.ends_with(b"\r\n") {
            bytes.truncate(bytes.len() - 2);
        } else if bytes.ends_with(b"\n") {
            bytes.pop();
        }
    } else {
        let path = args.file.as_ref().expect("a file was given");
        let file =
            std::fs::File::open(path).map_err(|e| Error::Io { action: "read", path: path.clone(), source: e })?;
        file.take(VALUE_MAX as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::Io {
            action: "read",
            path: path.clone(),
            source: e,
        })?;
    }
    if bytes.len() > VALUE_MAX {
        return Err(bad(&format!(
            "the value is more than the {VALUE_MAX} bytes a secret may hold; nothing was stored"
        )));
    }
    if bytes.is_empty() {
        return Err(bad("the value is empty; nothing was stored"));
    }
    Ok(Secret::new(bytes))
}

fn read(name: &str) -> Result<Code, Error> {
    secrets::check_name(name)?;
    let store = Store::open()?;
    let value = secrets::read(&store, name)?;
    let terminal = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    out.write_all(value.expose()).map_err(Error::Stdout)?;
    if terminal {
        out.write_all(b"\n").map_err(Error::Stdout)?;
        let _ = writeln!(
            std::io::stderr(),
            "brig: warning: the value of {name} is now in this terminal's scrollback; clear it when you are done"
        );
    }
    out.flush().map_err(Error::Stdout)?;
    Ok(Code::Success)
}

fn delete(args: &DeleteArgs) -> Result<Code, Error> {
    secrets::check_name(&args.name)?;
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(Error::NeedsConfirmation { what: format!("deleting the secret {}", args.name), flag: "-y" });
        }
        if !super::confirm(&format!("delete the secret {}?", args.name)) {
            print("nothing deleted\n")?;
            return Ok(Code::Failure);
        }
    }
    let store = Store::open()?;
    secrets::delete(&store, &args.name)?;
    Ok(Code::Success)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SecretRow<'a> {
    name: &'a str,
    updated: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
}

#[derive(Debug, Serialize)]
struct SecretList<'a> {
    backend: secrets::Backend,
    persists: bool,
    secrets: Vec<SecretRow<'a>>,
}

fn ls(ctx: &Context) -> Result<Code, Error> {
    let store = Store::open()?;
    let index = store.index()?;
    if ctx.json {
        let rows = index
            .iter()
            .map(|(name, e)| SecretRow { name, updated: e.updated, from: e.from.as_deref(), expires_at: e.expires_at })
            .collect();
        let list = SecretList { backend: store.backend(), persists: store.backend().persists(), secrets: rows };
        print(format!("{}\n", Envelope::new("SecretList", &list).to_line()))?;
        return Ok(Code::Success);
    }
    if index.is_empty() {
        print("no secrets yet. To add one: printf %s \"$VALUE\" | brig secret create NAME\n")?;
        return Ok(Code::Success);
    }
    let now = secrets::now_ms();
    let rows: Vec<[String; 3]> = index
        .iter()
        .map(|(name, entry)| {
            [
                name.clone(),
                secrets::ago(now.saturating_sub(entry.updated)),
                crate::warn::escaped(entry.from.as_deref().unwrap_or("-")),
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1) = (width(0).max(4), width(1).max(7));
    let mut out = format!("{:<w0$}  {:<w1$}  FROM\n", "NAME", "UPDATED");
    for [name, updated, from] in &rows {
        out.push_str(&format!("{name:<w0$}  {updated:<w1$}  {from}\n"));
    }
    print(out)?;
    Ok(Code::Success)
}

/// What import found for one declared secret.
enum Found {
    /// The value, and where it came from.
    Value(Secret, String),
    /// No source had it.
    Nothing,
}

fn import(args: &ImportArgs, ctx: &Context) -> Result<Code, Error> {
    let registry = crate::profile::Registry::load(&ctx.env);
    let profile = match registry.resolve(&args.profile) {
        Ok(entry) => entry.profile.clone(),
        Err(err) => {
            let declares = registry.entries().iter().find(|e| e.profile.secrets.iter().any(|d| d.name == args.profile));
            if let Some(entry) = declares {
                return Err(secrets::Error::BadValue {
                    what: format!(
                        "import takes a profile, and {} is a secret of {}: brig secret import {} {}",
                        args.profile, entry.profile.name, entry.profile.name, args.profile
                    ),
                }
                .into());
            }
            return Err(err.into());
        }
    };
    if profile.secrets.is_empty() {
        print(format!("{} declares no secrets, so there is nothing to import\n", profile.name))?;
        return Ok(Code::Success);
    }
    for name in &args.names {
        if profile.secret(name).is_none() {
            return Err(secrets::Error::NotFound { name: format!("{name} in the {} profile", profile.name) }.into());
        }
    }
    if args.from_command.is_some() && args.names.len() != 1 {
        return Err(
            secrets::Error::BadValue { what: "--from-command fills exactly one named secret".to_owned() }.into()
        );
    }
    let store = Store::open()?;
    let index = store.index()?;
    let mut report = String::new();
    let mut unfilled = false;
    for decl in profile.secrets.iter().filter(|d| args.names.is_empty() || args.names.contains(&d.name)) {
        let found = match &args.from_command {
            Some(command) => from_command(command)?,
            None => from_sources(&ctx.env, decl.sources())?,
        };
        let others: Vec<&str> = registry
            .entries()
            .iter()
            .filter(|e| e.profile.name != profile.name && e.profile.secret(&decl.name).is_some())
            .map(|e| e.profile.name.as_str())
            .collect();
        if !others.is_empty() {
            report.push_str(&format!(
                "note: {} is also declared by {}; secret names are global\n",
                decl.name,
                others.join(", ")
            ));
        }
        let (value, from) = match found {
            Found::Value(value, from) => (value, from),
            Found::Nothing if decl.sources().is_empty() => {
                report.push_str(&format!(
                    "{}: no source declared; store it with brig secret create {}\n",
                    decl.name, decl.name
                ));
                continue;
            }
            Found::Nothing => {
                unfilled = true;
                let hint = decl.sources().iter().find_map(|s| s.hint.clone()).or_else(|| decl.hint.clone());
                report.push_str(&format!(
                    "{}: none of its sources has it{}\n",
                    decl.name,
                    hint.map(|h| format!(" ({h})")).unwrap_or_default()
                ));
                continue;
            }
        };
        let existing = index.get(&decl.name);
        if existing.is_some_and(|e| e.from.is_none()) && !args.yes {
            report.push_str(&format!("{}: kept, it was stored by hand; -y replaces it with {from}\n", decl.name));
            continue;
        }
        if existing.is_some() && store.get(&decl.name)?.is_some_and(|old| old == value) {
            report.push_str(&format!("{}: unchanged\n", decl.name));
            continue;
        }
        if args.dry_run {
            report.push_str(&format!("{}: would import from {from}\n", decl.name));
            continue;
        }
        let expires_at = decl.expiry_field.as_deref().and_then(|key| secrets::expiry(&value, key));
        let entry = secrets::Entry { updated: secrets::now_ms(), from: Some(from.clone()), expires_at };
        secrets::put(&store, &decl.name, &value, entry)?;
        report.push_str(&format!("{}: imported from {from}\n", decl.name));
    }
    print(report)?;
    Ok(if unfilled { Code::Failure } else { Code::Success })
}

/// The first declared source that has a value: a file (`~` expanded now),
/// a variable of brig's environment. A keychain source is macOS's.
fn from_sources(env: &crate::environment::Environment, sources: &[crate::profile::Source]) -> Result<Found, Error> {
    use crate::profile::SourceKind;
    for source in sources {
        match source.from {
            SourceKind::File => {
                let Some(written) = source.path.as_deref() else { continue };
                let path = env.expand_tilde(written);
                let Ok(file) = std::fs::File::open(&path) else { continue };
                let mut bytes = Vec::new();
                file.take(VALUE_MAX as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::Io {
                    action: "read",
                    path: path.clone(),
                    source: e,
                })?;
                if !bytes.is_empty() {
                    return Ok(Found::Value(Secret::new(bytes), format!("file:{written}")));
                }
            }
            SourceKind::Env => {
                let Some(var) = source.var.as_deref() else { continue };
                if let Some(value) = env.get(var).filter(|v| !v.is_empty()) {
                    return Ok(Found::Value(Secret::new(value.as_bytes().to_vec()), format!("env:{var}")));
                }
            }
            SourceKind::Keychain => {}
        }
    }
    Ok(Found::Nothing)
}

/// The output of `sh -c COMMAND`, one trailing newline dropped.
fn from_command(command: &str) -> Result<Found, Error> {
    let out = crate::process::Command::new("/bin/sh")
        .args(["-c", command])
        .output()
        .map_err(|e| secrets::Error::BadValue { what: format!("--from-command failed: {e}") })?;
    let mut bytes = out.stdout.into_bytes();
    if bytes.ends_with(b"\n") {
        bytes.pop();
    }
    if bytes.is_empty() {
        return Ok(Found::Nothing);
    }
    Ok(Found::Value(Secret::new(bytes), "command".to_owned()))
}
