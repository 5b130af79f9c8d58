//! `cargo xtask release check`: what a release ships that the tests do not
//! exercise: the workflows pass `actionlint`, the Nix flake parses
//! (`nix-instantiate --parse`; it cannot be evaluated without the network),
//! and every manual page renders with `man`. CI runs it; provisioning
//! installs the three tools.
//!
//! `cargo xtask release dist`: static release binaries. `brig` and `brigd`
//! built for `x86_64-unknown-linux-musl` with OpenSSL and libdbus compiled
//! in, checked to need no dynamic loader and to run, with their manual
//! pages and a `SHA256SUMS` file, under `target/dist/`.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

const USAGE: &str = "usage: cargo xtask release check|dist";
const TARGET: &str = "x86_64-unknown-linux-musl";

pub fn run(args: &[String]) -> Result<()> {
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["check"] => check(),
        ["dist"] => dist(),
        ["-h" | "--help"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => bail!("{USAGE}"),
    }
}

fn check() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("xtask lives in the workspace")?.to_owned();
    eprintln!("==> actionlint: .github/workflows");
    tool(Command::new(Path::new(crate::provision::INSTALL_DIR).join("actionlint")).current_dir(&root), "actionlint")?;
    eprintln!("==> nix-instantiate --parse nix/flake.nix");
    tool(Command::new("nix-instantiate").arg("--parse").arg(root.join("nix/flake.nix")), "nix-instantiate")?;
    let man = tempfile_dir()?;
    crate::man::run(&["--out".to_owned(), man.display().to_string(), "--check".to_owned()])?;
    std::fs::remove_dir_all(&man).with_context(|| format!("removing {}", man.display()))?;
    eprintln!("==> release check: every part passed");
    Ok(())
}

/// Runs a checker; its own words are the failure.
fn tool(cmd: &mut Command, name: &str) -> Result<()> {
    let out = cmd.output().with_context(|| format!("cannot run {name}; `cargo xtask provision` installs it"))?;
    ensure!(
        out.status.success(),
        "{name} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("brig-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

fn dist() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("xtask lives in the workspace")?.to_owned();
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    ensure!(
        installed.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == TARGET)),
        "the Rust standard library for {TARGET} is not installed; run `rustup target add {TARGET}`"
    );
    ensure!(
        crate::provision::find_in_path("musl-gcc").is_some(),
        "no musl-gcc, which compiles the C the binaries carry (OpenSSL, libdbus, ring); install musl-tools"
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("==> cargo build --release --locked --target {TARGET} -p brig --features static");
    let built = Command::new(&cargo)
        .args(["build", "--release", "--locked", "--target", TARGET, "-p", "brig", "--features", "static"])
        .env("CC_x86_64_unknown_linux_musl", "musl-gcc")
        .current_dir(&root)
        .status()
        .context("running cargo build")?;
    ensure!(built.success(), "the {TARGET} build failed ({built})");

    let version = env!("CARGO_PKG_VERSION");
    let name = format!("brig-{version}-{TARGET}");
    let out = root.join("target/dist").join(&name);
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut sums = String::new();
    for bin in ["brig", "brigd"] {
        let built = root.join("target").join(TARGET).join("release").join(bin);
        let dest = out.join(bin);
        std::fs::copy(&built, &dest).with_context(|| format!("copying {}", built.display()))?;
        ensure!(!needs_loader(&dest)?, "{} asks for a dynamic loader: it is not static", dest.display());
        let ran = Command::new(&dest).arg("--version").output().with_context(|| format!("running {bin}"))?;
        ensure!(ran.status.success(), "{bin} --version failed ({})", ran.status);
        sums.push_str(&format!("{}  {bin}\n", sha256(&dest)?));
    }
    crate::man::run(&["--out".to_owned(), out.join("man").display().to_string()])?;
    std::fs::write(out.join("SHA256SUMS"), &sums).context("writing SHA256SUMS")?;
    eprintln!("==> {}: brig, brigd (static), man/, SHA256SUMS", out.display());
    print!("{sums}");
    Ok(())
}

/// Whether an ELF file names a program interpreter (`PT_INTERP`): a static
/// executable does not.
fn needs_loader(path: &Path) -> Result<bool> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    ensure!(bytes.len() > 64 && bytes[..4] == *b"\x7fELF" && bytes[4] == 2, "{} is no 64-bit ELF", path.display());
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(bytes[32..40].try_into()?) as usize;
    let (size, count) = (u16_at(54), u16_at(56));
    for i in 0..count {
        let at = phoff + i * size;
        let kind = bytes.get(at..at + 4).context("a program header past the end of the file")?;
        if u32::from_le_bytes(kind.try_into()?) == 3 {
            return Ok(true);
        }
    }
    Ok(false)
}

fn sha256(path: &Path) -> Result<String> {
    use sha2::Digest as _;
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}
