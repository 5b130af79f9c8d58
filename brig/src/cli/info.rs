//! `brig info <ref>`: the execution envelope of a run, without booting
//! anything and without creating anything on disk.

use std::path::PathBuf;

use serde::Serialize;

use crate::Error;
use crate::cli::{Context, print};
use crate::exit::Code;
use crate::json::Envelope;
use crate::profile::Profile;
use crate::profile::Registry;
use crate::runtime::{self, DEFAULT_SHIM, Isolation, Kind};
use crate::session::{HomeSource, Index, Session, home};
use crate::settings::{Network, Settings, Verify};

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The session: <agent> or <agent>@<label>.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Report as if run with this guest home.
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Report as if run with this image.
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Retiring: the session label (use <agent>@<label>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InfoData {
    #[serde(rename = "ref")]
    reference: String,
    agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    sandbox: String,
    /// `null` when no runtime was found.
    isolation: Option<Isolation>,
    runtime: Option<RuntimeInfo>,
    workspace: PathBuf,
    workspace_source: &'static str,
    project: Option<PathBuf>,
    image: String,
    verify: Verify,
    network: Network,
    credentials: Vec<Credential>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RuntimeInfo {
    kind: Kind,
    binary: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    shim: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Credential {
    name: String,
    from: &'static str,
    required: bool,
}

pub fn run(args: InfoArgs, ctx: &Context) -> Result<Code, Error> {
    let env = &ctx.env;
    let registry = Registry::load(env);
    for line in registry.warnings() {
        crate::warn::now(line);
    }
    let (session, name_warning) = Session::parse_with_name(&args.reference, args.name.as_deref(), &registry)?;
    if let Some(line) = name_warning {
        crate::warn::now(line);
    }
    let entry = registry.resolve(session.agent())?;
    let profile = &entry.profile;
    let settings = Settings::new(env, session.agent());

    let cwd = std::env::current_dir().map_err(|e| Error::io("read the current directory", ".", e))?;
    let home_flag = args.home.as_ref().map(|p| p.to_string_lossy().into_owned());
    let guest_home = home::resolve_home(&session, home_flag.as_deref(), env, &cwd)?;
    let state_dir = home::state_dir(env, &cwd)?;
    let record = Index::load(&state_dir)?.get(session.sandbox()).cloned();

    let verify = settings.resolve::<Verify>(None, "VERIFY", None, None, Verify::Warn)?.value;
    let recorded_network =
        record.as_ref().and_then(|r| r.network.as_deref()).and_then(<Network as crate::settings::Enumerated>::parse);
    let network =
        settings.resolve::<Network>(None, "NETWORK", recorded_network, profile.network, Network::Isolated)?.value;
    let image = match (&args.image, settings.variable("IMAGE")) {
        (Some(image), _) => image.clone(),
        (None, Some((_, image))) => image.to_owned(),
        (None, None) => profile.image.clone(),
    };

    // info degrades to "none found" when nothing is installed, but a setting
    // that points at nothing is an error the user must fix (exit 4).
    let runtime = match runtime::resolve(env, Some((&profile.name, profile.runtime_bin.as_deref()))) {
        Ok(resolved) => Some(resolved),
        Err(runtime::Error::NoneFound) => None,
        Err(err) => return Err(err.into()),
    };
    let runtime_info = runtime.as_ref().map(|r| RuntimeInfo {
        kind: r.kind,
        binary: r.bin.clone(),
        shim: (r.kind == Kind::Nerdctl).then(|| env.get("BRIG_CONTAINERD_RUNTIME").unwrap_or(DEFAULT_SHIM).to_owned()),
    });
    // The adapter knows which isolation its runtime gives as configured,
    // without booting anything.
    let isolation = match &runtime {
        Some(resolved) => Some(runtime::open(resolved, env, None)?.isolation()?),
        None => None,
    };

    // Like a run, info cannot resolve a required secret without a store.
    let required: Vec<String> = profile.secrets.iter().filter(|s| s.required).map(|s| s.name.clone()).collect();
    if !required.is_empty() {
        return Err(Error::SecretsUnavailable { profile: profile.name.clone(), names: required });
    }

    let data = InfoData {
        reference: session.typed().to_owned(),
        agent: session.agent().to_owned(),
        label: session.label().map(str::to_owned),
        sandbox: session.sandbox().to_owned(),
        isolation,
        runtime: runtime_info,
        workspace: guest_home.path.clone(),
        workspace_source: match guest_home.source {
            HomeSource::Default => "default",
            HomeSource::Named { .. } => "named",
            HomeSource::Legacy => "legacy",
        },
        project: record.as_ref().and_then(|r| r.project.clone()),
        image,
        verify,
        network,
        credentials: credentials(profile),
    };
    if ctx.json {
        print(format!("{}\n", Envelope::new("Info", &data).to_line()))?;
    } else {
        print(render(&data, &guest_home.source, ctx))?;
    }
    Ok(Code::Success)
}

/// Credentials by name: declared secrets, then variables bound to the host
/// environment or the store. Never a value.
fn credentials(profile: &Profile) -> Vec<Credential> {
    let names = profile.credential_names();
    let secrets = names.secrets.into_iter().map(|name| Credential {
        required: profile.secret(&name).is_some_and(|d| d.required),
        name,
        from: "secret",
    });
    let env = names.env.into_iter().map(|name| Credential { name, from: "env", required: false });
    secrets.chain(env).collect()
}

fn render(data: &InfoData, source: &HomeSource, ctx: &Context) -> String {
    let runtime = match &data.runtime {
        Some(r) => match &r.shim {
            Some(shim) => format!("{} ({}), shim {shim}", r.kind, r.binary.display()),
            None => format!("{} ({})", r.kind, r.binary.display()),
        },
        None => "none found (install nerdctl or podman, or set BRIG_RUNTIME_BIN)".to_owned(),
    };
    let isolation = match data.isolation {
        Some(Isolation::Container) if !allows_container(ctx) => {
            "container (shared kernel; refused unless BRIG_ALLOW_CONTAINER_ISOLATION=1)".to_owned()
        }
        Some(Isolation::Container) => "container (shared kernel)".to_owned(),
        Some(Isolation::Microvm) => "microvm".to_owned(),
        None => "unknown (no runtime)".to_owned(),
    };
    let workspace = match source {
        HomeSource::Default => format!("{} (created by brig, removed by brig rm)", data.workspace.display()),
        HomeSource::Named { setting } => {
            format!("{} (from {setting}; brig never deletes it)", data.workspace.display())
        }
        HomeSource::Legacy => format!("{} (kept from an older release)", data.workspace.display()),
    };
    let project = match &data.project {
        Some(p) if p.is_dir() => format!("{} (remembered)", p.display()),
        Some(p) => format!("{} (remembered, but no longer on disk)", p.display()),
        None => "none".to_owned(),
    };
    let credentials = if data.credentials.is_empty() {
        "none".to_owned()
    } else {
        data.credentials
            .iter()
            .map(|c| format!("{} ({}{})", c.name, c.from, if c.required { ", required" } else { "" }))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rows = [
        ("ref", data.reference.clone()),
        ("agent", data.agent.clone()),
        ("sandbox", data.sandbox.clone()),
        ("isolation", isolation),
        ("runtime", runtime),
        ("workspace", workspace),
        ("project", project),
        ("image", data.image.clone()),
        ("verify", data.verify.to_string()),
        ("network", data.network.to_string()),
        ("credentials", credentials),
    ];
    rows.iter().map(|(k, v)| format!("{k:<12} {v}\n")).collect()
}

fn allows_container(ctx: &Context) -> bool {
    crate::settings::global::<crate::settings::Bool>(&ctx.env, "BRIG_ALLOW_CONTAINER_ISOLATION")
        .ok()
        .flatten()
        .is_some_and(|b| b.0)
}
