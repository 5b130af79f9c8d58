//! `brig policy ls|create|edit|show|rm|attach|detach|check`: the egress
//! policies in the policy directory and where they are bound. The document
//! rules and the store are [`crate::policy`]'s; enforcement is the
//! firewall's, at every boot, start and run of a running sandbox.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde::Serialize;

use super::{Context, print};
use crate::Error;
use crate::exit::Code;
use crate::json::Envelope;
use crate::policy::{self, Binding, Policy, Store};
use crate::profile::Registry;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// List the policies: default, rules, and where each is bound.
    Ls,
    /// Store a policy document read from FILE, or from stdin.
    Create(CreateArgs),
    /// Open a policy in $VISUAL or $EDITOR, then check and store it.
    Edit(EditArgs),
    /// Print a policy as written (--json: the parsed document).
    Show(NameArgs),
    /// Remove a policy (refused while it is bound, unless --force).
    Rm(RmArgs),
    /// Bind a policy to a profile, or with -n to one session of it.
    Attach(BindArgs),
    /// Undo an attach.
    Detach(BindArgs),
    /// The policy a run of the profile (or session) gets, and whether this
    /// host can enforce it (exit 7 when it cannot).
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// A YAML or JSON policy; stdin when omitted or `-`.
    pub file: Option<PathBuf>,
    /// Replace a policy of the same name.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct EditArgs {
    pub name: String,
    /// Allow a rename of a bound policy, or over another policy's name.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct NameArgs {
    pub name: String,
}

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    pub name: String,
    /// Remove it though it is bound; its attachments go with it.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct BindArgs {
    pub policy: String,
    /// The agent (name or alias).
    pub profile: String,
    /// Only the session with this label (`<agent>@<label>`).
    #[arg(short = 'n', long = "name", value_name = "LABEL")]
    pub label: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The agent (name or alias).
    pub profile: String,
    /// The session with this label.
    #[arg(short = 'n', long = "name", value_name = "LABEL")]
    pub label: Option<String>,
}

/// Where enforcement exists, said by `attach` and `check`.
const ENFORCED_WHERE: &str = "note: egress policies are enforced on nerdctl and podman, with brig run as root and nftables installed; elsewhere a run with one is refused (exit 7)";

pub fn run(command: PolicyCommand, ctx: &Context) -> Result<Code, Error> {
    let store = Store::open(&ctx.env)?;
    match command {
        PolicyCommand::Ls => ls(&store, ctx),
        PolicyCommand::Create(args) => create(&store, &args),
        PolicyCommand::Edit(args) => edit(&store, &args, ctx),
        PolicyCommand::Show(args) => show(&store, &args.name, ctx),
        PolicyCommand::Rm(args) => rm(&store, &args, ctx),
        PolicyCommand::Attach(args) => bind(&store, &args, ctx, true),
        PolicyCommand::Detach(args) => bind(&store, &args, ctx, false),
        PolicyCommand::Check(args) => check(&store, &args, ctx),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row<'a> {
    name: &'a str,
    path: &'a Path,
    default: policy::Default,
    allow: usize,
    deny: usize,
    bound: Vec<String>,
    #[serde(skip_serializing_if = "str::is_empty")]
    desc: &'a str,
}

/// Every binding, with the registry's inline ones.
fn bindings(store: &Store, ctx: &Context) -> Result<Vec<Binding>, Error> {
    let registry = Registry::load(&ctx.env);
    let profiles: Vec<&crate::profile::Profile> = registry.entries().iter().map(|e| &e.profile).collect();
    Ok(store.bindings(&profiles)?)
}

fn bound_to(bindings: &[Binding], name: &str) -> Vec<String> {
    bindings
        .iter()
        .filter(|b| b.policy == name)
        .map(|b| if b.inline { format!("{} (inline)", b.to) } else { b.to.clone() })
        .collect()
}

fn ls(store: &Store, ctx: &Context) -> Result<Code, Error> {
    let all = store.load()?;
    let bindings = bindings(store, ctx)?;
    let rows: Vec<Row<'_>> = all
        .iter()
        .map(|(name, (path, p))| Row {
            name,
            path,
            default: p.egress.default,
            allow: p.egress.allow.len(),
            deny: p.egress.deny.len(),
            bound: bound_to(&bindings, name),
            desc: &p.desc,
        })
        .collect();
    if ctx.json {
        return print(format!("{}\n", Envelope::new("PolicyList", &rows).to_line())).map(|()| Code::Success);
    }
    let mut out = format!("{:<20} {:<8} {:>5} {:>5}  {}\n", "NAME", "DEFAULT", "ALLOW", "DENY", "BOUND TO");
    for r in &rows {
        let bound = if r.bound.is_empty() { "-".to_owned() } else { r.bound.join(", ") };
        out.push_str(&format!("{:<20} {:<8} {:>5} {:>5}  {bound}\n", r.name, r.default.to_string(), r.allow, r.deny));
    }
    print(out).map(|()| Code::Success)
}

/// The document's text from a file or stdin, never from a terminal typed
/// into by mistake.
fn document(file: Option<&Path>) -> Result<(String, String), Error> {
    let mut bytes = Vec::new();
    let source = match file.filter(|f| f.as_os_str() != "-") {
        Some(path) => {
            let text = std::fs::File::open(path)
                .and_then(|f| f.take(1 << 20).read_to_end(&mut bytes))
                .map_err(|e| Error::io("read", path, e));
            text?;
            path.display().to_string()
        }
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(policy::Error::Refused {
                    what: "the policy comes from a file or stdin, and stdin is a terminal; give a file, or pipe the document in".into(),
                }
                .into());
            }
            stdin.lock().take(1 << 20).read_to_end(&mut bytes).map_err(|e| Error::io("read", "stdin", e))?;
            "stdin".to_owned()
        }
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| policy::Error::Invalid { file: source.clone(), why: "not UTF-8 text".into() })?;
    Ok((text, source))
}

/// Store a checked document as `<name>.yaml|json`, replacing the file of
/// `replacing` (a policy of that name, or the one renamed) once the new one
/// is in place.
fn store_document(store: &Store, policy: &Policy, text: &str, replacing: Option<&Path>) -> Result<PathBuf, Error> {
    let file_name = crate::profile::store::file_name_for(&policy.name, text.as_bytes());
    let path = crate::profile::store::write_atomic(&store.dir, &file_name, text.as_bytes())?;
    if let Some(old) = replacing.filter(|old| *old != path) {
        std::fs::remove_file(old).map_err(|e| Error::io("remove", old, e))?;
    }
    Ok(path)
}

fn create(store: &Store, args: &CreateArgs) -> Result<Code, Error> {
    let (text, source) = document(args.file.as_deref())?;
    let policy = policy::parse(&text, &source)?;
    let existing = store.load()?.remove(&policy.name).map(|(path, _)| path);
    if let Some(path) = &existing
        && !args.force
    {
        return Err(policy::Error::Exists { name: policy.name, path: path.clone() }.into());
    }
    let path = store_document(store, &policy, &text, existing.as_deref())?;
    print(format!("stored the policy {} in {}\n", policy.name, path.display())).map(|()| Code::Success)
}

fn edit(store: &Store, args: &EditArgs, ctx: &Context) -> Result<Code, Error> {
    let (path, old) = store.get(&args.name)?;
    let editor =
        ctx.env.get("VISUAL").or_else(|| ctx.env.get("EDITOR")).ok_or(crate::profile::Error::NoEditor)?.to_owned();
    // The edit happens on a copy: the stored policy changes only once the
    // result is a valid policy, and a run meanwhile reads the old one.
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("yaml");
    let copy = store.dir.join(format!(".{}.edit.{ext}", args.name));
    std::fs::copy(&path, &copy).map_err(|e| Error::io("copy", &path, e))?;
    let mut words = editor.split_whitespace();
    let program = words.next().ok_or(crate::profile::Error::NoEditor)?;
    let status = crate::process::Command::new(program)
        .args(words)
        .path_arg(&copy)
        .interactive()
        .map_err(|source| crate::profile::Error::EditorFailed { editor: editor.clone(), source })?;
    if !status.success() {
        return Err(crate::profile::Error::EditorExit { editor, status }.into());
    }
    let text = std::fs::read_to_string(&copy).map_err(|e| Error::io("read", &copy, e))?;
    let kept = |why: String| policy::Error::Invalid {
        file: copy.display().to_string(),
        why: format!("{why}; {} is unchanged and the edit is kept here", path.display()),
    };
    let new = policy::parse(&text, &copy.display().to_string()).map_err(|e| kept(e.to_string()))?;
    if new.name != old.name && !args.force {
        let bound = bound_to(&bindings(store, ctx)?, &old.name);
        if !bound.is_empty() {
            return Err(kept(format!(
                "it renames {} to {}, which is bound to {}; pass --force",
                old.name,
                new.name,
                bound.join(", ")
            ))
            .into());
        }
        if let Ok((other, _)) = store.get(&new.name) {
            return Err(
                kept(format!("{} already names the policy in {}; pass --force", new.name, other.display())).into()
            );
        }
    }
    let stored = store_document(store, &new, &text, Some(&path))?;
    let _ = std::fs::remove_file(&copy);
    print(format!("stored the policy {} in {}\n", new.name, stored.display())).map(|()| Code::Success)
}

fn show(store: &Store, name: &str, ctx: &Context) -> Result<Code, Error> {
    let (path, policy) = store.get(name)?;
    if ctx.json {
        return print(format!("{}\n", Envelope::new("Policy", &policy).to_line())).map(|()| Code::Success);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io("read", &path, e))?;
    let shown: String = text.lines().map(|line| format!("{}\n", crate::warn::escaped(line))).collect();
    print(shown).map(|()| Code::Success)
}

fn rm(store: &Store, args: &RmArgs, ctx: &Context) -> Result<Code, Error> {
    let (path, _) = store.get(&args.name)?;
    let bound = bound_to(&bindings(store, ctx)?, &args.name);
    if !bound.is_empty() && !args.force {
        return Err(policy::Error::Bound { name: args.name.clone(), bound }.into());
    }
    if !bound.is_empty() {
        store.update_attachments(|at| {
            for names in at.profiles.values_mut().chain(at.sessions.values_mut()) {
                names.retain(|n| *n != args.name);
            }
            Ok(())
        })?;
    }
    std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
    print(format!("removed the policy {}\n", args.name)).map(|()| Code::Success)
}

/// The profile named, as the registry resolves it (an alias gives its
/// agent), and the key the binding goes under.
fn target(
    args_profile: &str,
    label: Option<&str>,
    ctx: &Context,
) -> Result<(crate::profile::Profile, Option<String>), Error> {
    let registry = Registry::load(&ctx.env);
    let profile = registry.resolve(args_profile)?.profile.clone();
    let key = match label {
        Some(label) if !crate::session::label::is_slug(label) => {
            return Err(policy::Error::Refused {
                what: format!("-n {label:?} is not a session label (lowercase letters, digits and '-')"),
            }
            .into());
        }
        Some(label) => Some(policy::store::session_key(&profile.name, label)),
        None => None,
    };
    Ok((profile, key))
}

fn bind(store: &Store, args: &BindArgs, ctx: &Context, attach: bool) -> Result<Code, Error> {
    let (profile, session) = target(&args.profile, args.label.as_deref(), ctx)?;
    let refused = |what: String| -> Error { policy::Error::Refused { what }.into() };
    if attach {
        store.get(&args.policy)?;
        if profile.kind != crate::profile::Kind::Agent {
            return Err(refused(format!(
                "{} is a {} profile; egress policies bind to agents only",
                profile.name, profile.kind
            )));
        }
    }
    let inline = profile.policy.contains(&args.policy);
    if inline && (attach || session.is_none()) {
        return Err(refused(format!(
            "{} names {} in its own policy: list; {}",
            profile.name,
            args.policy,
            if attach { "it is bound already" } else { "edit the profile to drop it (`brig agent edit`)" }
        )));
    }
    let to = session.clone().unwrap_or_else(|| profile.name.clone());
    let changed = store.update_attachments(|at| {
        let map = if session.is_some() { &mut at.sessions } else { &mut at.profiles };
        let names = map.entry(to.clone()).or_default();
        let had = names.contains(&args.policy);
        if attach && !had {
            names.push(args.policy.clone());
        } else if !attach {
            names.retain(|n| *n != args.policy);
        }
        Ok(had != attach)
    })?;
    if !changed && !attach {
        return Err(refused(format!("{} is not attached to {to}", args.policy)));
    }
    let verb = if attach { "attached" } else { "detached" };
    let said = if changed {
        format!("{verb} {} to {to}\n", args.policy)
    } else {
        format!("{} is attached to {to} already\n", args.policy)
    };
    let said = if attach { said } else { said.replace(" to ", " from ") };
    if attach {
        crate::warn::Warnings::stderr_quiet(ctx.quiet).note(ENFORCED_WHERE);
    }
    print(said).map(|()| Code::Success)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Checked {
    #[serde(rename = "ref")]
    reference: String,
    egress: Option<policy::Joined>,
    /// Each `host:` rule and the addresses it resolves to now.
    hosts: Vec<(String, Vec<String>)>,
    enforced: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
}

fn check(store: &Store, args: &CheckArgs, ctx: &Context) -> Result<Code, Error> {
    let (profile, _) = target(&args.profile, args.label.as_deref(), ctx)?;
    let reference = crate::session::reference::canonical_ref(&profile.name, args.label.as_deref());
    let egress = policy::Joined::join(&store.bound(&profile, args.label.as_deref())?);
    let hosts: Vec<(String, Vec<String>)> = egress
        .iter()
        .flat_map(|e| e.allow.iter().chain(&e.deny))
        .filter_map(|t| match t {
            policy::Target::Host(h) => {
                Some((h.clone(), policy::resolve_host(h).iter().map(ToString::to_string).collect()))
            }
            _ => None,
        })
        .collect();
    let why = match &egress {
        None => None,
        Some(e) => {
            let registry = Registry::load(&ctx.env);
            let mut engine = crate::engine::Engine::new(
                &ctx.env,
                &registry,
                crate::engine::Prompts::Nobody,
                crate::warn::Warnings::stderr(),
            )?;
            let runtime = engine.open_runtime(&profile)?;
            crate::engine::plan::egress_unenforceable(&ctx.env, runtime.as_ref(), e)
        }
    };
    let checked = Checked { reference, enforced: egress.is_some() && why.is_none(), egress, hosts, why };
    if ctx.json {
        print(format!("{}\n", Envelope::new("PolicyCheck", &checked).to_line()))?;
    } else {
        let mut out = format!("{:<9} {}\n", "ref", checked.reference);
        out.push_str(&format!("{:<9} {}\n", "egress", super::egress_line(checked.egress.as_ref())));
        for (host, addrs) in &checked.hosts {
            let addrs = if addrs.is_empty() { "does not resolve here".to_owned() } else { addrs.join(", ") };
            out.push_str(&format!("{:<9} {} → {addrs}\n", "host", crate::warn::escaped(host)));
        }
        let enforced = match (&checked.egress, &checked.why) {
            (None, _) => "nothing to enforce".to_owned(),
            (Some(_), None) => "yes, by the host's nftables, at every boot, start and run".to_owned(),
            (Some(_), Some(why)) => format!("no: {why}"),
        };
        out.push_str(&format!("{:<9} {enforced}\n", "enforced"));
        print(out)?;
        crate::warn::Warnings::stderr_quiet(ctx.quiet).note(ENFORCED_WHERE);
    }
    Ok(if checked.why.is_some() { Code::Unenforceable } else { Code::Success })
}
