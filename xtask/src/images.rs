//! `cargo xtask images`: builds the lab guest image as an OCI archive and loads it into each runtime.
//!
//! No registry is reachable from our machines, so the image is assembled here
//! from the host's static busybox and bash plus `lab/guest/`. Every byte is
//! written by this module (layer tar, gzip, config, manifest, index) with fixed
//! metadata, so the same inputs always give the same digests and the tag is a
//! hash of the content.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const REPOSITORY: &str = "localhost/brig-lab/guest";
const GUEST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const HOST_BUSYBOX: &str = "/bin/busybox";
const HOST_BASH: &str = "/bin/bash-static";
const RUNTIMES: [&str; 2] = ["nerdctl", "podman"];

const MEDIA_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MEDIA_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const MEDIA_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const MEDIA_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

const USAGE: &str = "usage: cargo xtask images [--out DIR] [--no-load]";

pub fn run(args: &[String]) -> Result<()> {
    let opts = Options::parse(args)?;
    let inputs = Inputs::from_host()?;
    let image = Image::build(&inputs)?;

    let out_dir = opts.out.unwrap_or_else(default_out_dir);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let archive = out_dir.join(format!("brig-lab-guest-{}.tar", image.tag));
    write_atomically(&archive, &image.archive)?;
    println!("archive  {}", archive.display());
    println!("image    {REPOSITORY}:{} (and :latest)", image.tag);
    println!("id       {}", image.config_digest);
    println!("manifest {}", image.manifest_digest);

    if opts.load {
        for runtime in RUNTIMES {
            load_into(runtime, &archive, &image)?;
        }
    }
    Ok(())
}

#[derive(Debug)]
struct Options {
    out: Option<PathBuf>,
    load: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self> {
        let mut opts = Options { out: None, load: true };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => {
                    let dir = args.next().context("--out needs a directory")?;
                    opts.out = Some(PathBuf::from(dir));
                }
                "--no-load" => opts.load = false,
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown argument {other:?}\n{USAGE}"),
            }
        }
        Ok(opts)
    }
}

fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

fn default_out_dir() -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"));
    target.join("lab-images")
}

/// Everything the image is made of; the digests depend on nothing else.
#[derive(Debug)]
struct Inputs {
    busybox: Vec<u8>,
    /// Applet paths as `busybox --list-full` prints them, relative to `/`.
    applets: Vec<String>,
    bash: Vec<u8>,
    lab_agent: Vec<u8>,
    /// OCI names (`amd64`, `arm64`, …) of the host the binaries come from.
    architecture: String,
}

impl Inputs {
    fn from_host() -> Result<Self> {
        let busybox = read_static_binary(HOST_BUSYBOX, "busybox-static")?;
        let bash = read_static_binary(HOST_BASH, "bash-static")?;
        let listed = Command::new(HOST_BUSYBOX)
            .arg("--list-full")
            .output()
            .with_context(|| format!("running {HOST_BUSYBOX} --list-full"))?;
        ensure!(
            listed.status.success(),
            "{HOST_BUSYBOX} --list-full failed: {}",
            String::from_utf8_lossy(&listed.stderr).trim()
        );
        let applets = String::from_utf8(listed.stdout)
            .context("busybox applet list is not UTF-8")?
            .lines()
            .map(str::to_owned)
            .collect();
        let agent_path = workspace_root().join("lab/guest/lab-agent");
        let lab_agent = std::fs::read(&agent_path).with_context(|| format!("reading {}", agent_path.display()))?;
        Ok(Inputs {
            busybox,
            applets,
            bash,
            lab_agent,
            architecture: oci_architecture(std::env::consts::ARCH).to_owned(),
        })
    }
}

fn read_static_binary(path: &str, package: &str) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {path} (install the {package} package)"))?;
    // A dynamic binary would need a loader and libraries the image does not have.
    ensure!(
        !elf_has_interpreter(&bytes).with_context(|| format!("reading {path} as ELF"))?,
        "{path} is dynamically linked; the guest image needs the static build from {package}"
    );
    Ok(bytes)
}

/// Whether an ELF file names a program interpreter, i.e. is dynamically linked.
fn elf_has_interpreter(elf: &[u8]) -> Result<bool> {
    const PT_INTERP: u32 = 3;
    ensure!(elf.get(..4) == Some(b"\x7fELF"), "not an ELF file");
    let wide = match elf.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => bail!("unknown ELF class"),
    };
    let little = match elf.get(5) {
        Some(1) => true,
        Some(2) => false,
        _ => bail!("unknown ELF byte order"),
    };
    let uint = |at: usize, len: usize| -> Result<u64> {
        let raw = elf.get(at..at + len).context("truncated ELF header")?;
        let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
        Ok(if little { raw.iter().rev().fold(0, fold) } else { raw.iter().fold(0, fold) })
    };
    let (phoff, phentsize, phnum) = if wide {
        (uint(0x20, 8)?, uint(0x36, 2)?, uint(0x38, 2)?)
    } else {
        (uint(0x1c, 4)?, uint(0x2a, 2)?, uint(0x2c, 2)?)
    };
    for i in 0..phnum {
        let at = usize::try_from(phoff + i * phentsize).context("ELF offset overflow")?;
        if uint(at, 4)? == u64::from(PT_INTERP) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn oci_architecture(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        "loongarch64" => "loong64",
        other => other,
    }
}

#[derive(Debug)]
enum Node<'a> {
    Dir { mode: u32, owner: u64 },
    File { mode: u32, data: Cow<'a, [u8]> },
    Link { target: &'static str },
}

/// The guest's filesystem, keyed by path without a leading `/`. A sorted map
/// gives a stable entry order and puts every directory before its contents.
fn guest_tree<'a>(inputs: &'a Inputs) -> BTreeMap<String, Node<'a>> {
    const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
                          lab:x:1000:1000:lab:/home/lab:/bin/sh\n\
                          nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
    const GROUP: &str = "root:x:0:\nlab:x:1000:\nnogroup:x:65534:\n";
    // `bash -l` (how `brig sh` enters real agent images) reads this.
    let profile = format!("export PATH={GUEST_PATH}\nPS1='\\u@\\h:\\w\\$ '\n");

    let mut tree = BTreeMap::new();
    let dir = |mode| Node::Dir { mode, owner: 0 };
    for path in ["bin", "dev", "etc", "proc", "sys", "work", "home", "usr/local/bin"] {
        tree.insert(path.to_owned(), dir(0o755));
    }
    tree.insert("root".to_owned(), dir(0o700));
    tree.insert("tmp".to_owned(), dir(0o1777));
    tree.insert("home/lab".to_owned(), Node::Dir { mode: 0o755, owner: 1000 });

    for applet in &inputs.applets {
        let path = applet.trim().trim_start_matches('/');
        if !path.is_empty() && path != "bin/busybox" {
            tree.insert(path.to_owned(), Node::Link { target: "/bin/busybox" });
        }
    }
    let file = |mode, data: &'a [u8]| Node::File { mode, data: Cow::Borrowed(data) };
    tree.insert("bin/busybox".to_owned(), file(0o755, &inputs.busybox));
    tree.insert("bin/bash".to_owned(), file(0o755, &inputs.bash));
    tree.insert("usr/local/bin/lab-agent".to_owned(), file(0o755, &inputs.lab_agent));
    tree.insert("etc/passwd".to_owned(), file(0o644, PASSWD.as_bytes()));
    tree.insert("etc/group".to_owned(), file(0o644, GROUP.as_bytes()));
    let profile = Node::File { mode: 0o644, data: Cow::Owned(profile.into_bytes()) };
    tree.insert("etc/profile".to_owned(), profile);

    // Applets live in sbin, usr/bin and usr/sbin too; give every entry its parents.
    let parents: Vec<String> = tree
        .keys()
        .flat_map(|path| path.match_indices('/').map(|(i, _)| path[..i].to_owned()).collect::<Vec<_>>())
        .collect();
    for parent in parents {
        tree.entry(parent).or_insert(dir(0o755));
    }
    tree
}

/// A tar header with every field that could vary between builds pinned.
fn header(kind: tar::EntryType, mode: u32, owner: u64, size: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_uid(owner);
    h.set_gid(owner);
    h.set_mtime(0);
    h.set_size(size);
    h
}

fn layer_tar(inputs: &Inputs) -> Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
    for (path, node) in guest_tree(inputs) {
        match node {
            Node::Dir { mode, owner } => {
                let mut h = header(tar::EntryType::Directory, mode, owner, 0);
                tar.append_data(&mut h, format!("{path}/"), std::io::empty())?;
            }
            Node::File { mode, data } => {
                let mut h = header(tar::EntryType::Regular, mode, 0, data.len() as u64);
                tar.append_data(&mut h, &path, &*data)?;
            }
            Node::Link { target } => {
                let mut h = header(tar::EntryType::Symlink, 0o777, 0, 0);
                tar.append_link(&mut h, &path, target)?;
            }
        }
    }
    Ok(tar.into_inner()?)
}

fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    // flate2 writes mtime 0 and no file name, so the gzip header is stable too.
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(data)?;
    Ok(gz.finish()?)
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug)]
struct Image {
    /// Short content hash: the first 12 hex digits of the image id.
    tag: String,
    /// The image id as podman reports it: the config's digest.
    config_digest: String,
    manifest_digest: String,
    /// The OCI layout (plus a docker-style `manifest.json`) as one tar.
    archive: Vec<u8>,
}

impl Image {
    fn build(inputs: &Inputs) -> Result<Self> {
        let layer = layer_tar(inputs)?;
        let diff_id = format!("sha256:{}", sha256_hex(&layer));
        let layer_gz = gzip(&layer)?;
        let layer_hex = sha256_hex(&layer_gz);

        let config = json!({
            "created": "1970-01-01T00:00:00Z",
            "architecture": inputs.architecture,
            "os": "linux",
            "config": {
                "Env": [format!("PATH={GUEST_PATH}")],
                "Cmd": ["sleep", "infinity"],
                "WorkingDir": "/",
                "Labels": {"org.opencontainers.image.title": "brig lab guest"},
            },
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "cargo xtask images"}],
        });
        let config_bytes = serde_json::to_vec(&config)?;
        let config_hex = sha256_hex(&config_bytes);
        let tag = config_hex[..12].to_owned();

        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": {
                "mediaType": MEDIA_CONFIG,
                "digest": format!("sha256:{config_hex}"),
                "size": config_bytes.len(),
            },
            "layers": [{
                "mediaType": MEDIA_LAYER,
                "digest": format!("sha256:{layer_hex}"),
                "size": layer_gz.len(),
            }],
        });
        let manifest_bytes = serde_json::to_vec(&manifest)?;
        let manifest_hex = sha256_hex(&manifest_bytes);

        let names = [format!("{REPOSITORY}:{tag}"), format!("{REPOSITORY}:latest")];
        // One descriptor per name: containerd reads `io.containerd.image.name`,
        // other OCI tools the standard ref name. Both carry the full reference
        // so no importer has to guess the repository.
        let index = json!({
            "schemaVersion": 2,
            "mediaType": MEDIA_INDEX,
            "manifests": names.iter().map(|name| json!({
                "mediaType": MEDIA_MANIFEST,
                "digest": format!("sha256:{manifest_hex}"),
                "size": manifest_bytes.len(),
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name,
                },
            })).collect::<Vec<_>>(),
        });
        // podman's loader tries the docker-archive reading first, and only that
        // reading keeps several tags of one image; containerd merges it with
        // the OCI index. Blob paths are shared, so it costs a few bytes.
        let docker_manifest = json!([{
            "Config": format!("blobs/sha256/{config_hex}"),
            "RepoTags": names,
            "Layers": [format!("blobs/sha256/{layer_hex}")],
        }]);

        let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        files.insert(format!("blobs/sha256/{layer_hex}"), layer_gz);
        files.insert(format!("blobs/sha256/{config_hex}"), config_bytes);
        files.insert(format!("blobs/sha256/{manifest_hex}"), manifest_bytes);
        files.insert("index.json".into(), serde_json::to_vec(&index)?);
        files.insert("manifest.json".into(), serde_json::to_vec(&docker_manifest)?);
        files.insert("oci-layout".into(), serde_json::to_vec(&json!({"imageLayoutVersion": "1.0.0"}))?);

        let mut tar = tar::Builder::new(Vec::new());
        for dir in ["blobs", "blobs/sha256"] {
            let mut h = header(tar::EntryType::Directory, 0o755, 0, 0);
            tar.append_data(&mut h, format!("{dir}/"), std::io::empty())?;
        }
        for (path, data) in &files {
            let mut h = header(tar::EntryType::Regular, 0o644, 0, data.len() as u64);
            tar.append_data(&mut h, path, data.as_slice())?;
        }

        Ok(Image {
            tag,
            config_digest: format!("sha256:{config_hex}"),
            manifest_digest: format!("sha256:{manifest_hex}"),
            archive: tar.into_inner()?,
        })
    }

    fn references(&self) -> [String; 2] {
        [format!("{REPOSITORY}:{}", self.tag), format!("{REPOSITORY}:latest")]
    }
}

fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tar.partial");
    std::fs::write(&tmp, data).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

fn on_path(bin: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(bin)).find(|candidate| candidate.is_file())
}

/// Runs a runtime command and returns its stdout; a failure carries the argv
/// run, the status and stderr.
fn capture(bin: &Path, args: &[&str]) -> Result<String> {
    let shown = format!("{} {}", bin.display(), args.join(" "));
    let out = Command::new(bin).args(args).output().with_context(|| format!("running {shown}"))?;
    ensure!(out.status.success(), "{shown}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The id a runtime reports for `reference`, without a `sha256:` prefix, or
/// `None` when it does not know the reference.
fn image_id(bin: &Path, reference: &str) -> Option<String> {
    let out = capture(bin, &["image", "inspect", reference]).ok()?;
    inspected_id(&out)
}

fn inspected_id(inspect_output: &str) -> Option<String> {
    let parsed: Value = serde_json::from_str(inspect_output).ok()?;
    let id = parsed.get(0)?.get("Id")?.as_str()?;
    Some(id.trim_start_matches("sha256:").to_owned())
}

fn load_into(runtime: &str, archive: &Path, image: &Image) -> Result<()> {
    let Some(bin) = on_path(runtime) else {
        println!("{runtime}: not on PATH, skipped");
        return Ok(());
    };
    let want = image.config_digest.trim_start_matches("sha256:");
    let refs = image.references();
    let present = |bin: &Path| refs.iter().all(|r| image_id(bin, r).as_deref() == Some(want));
    if present(&bin) {
        println!("{runtime}: already has {} (id {want:.12}), not loaded again", refs[0]);
        return Ok(());
    }
    let archive = archive.to_str().context("archive path is not UTF-8")?;
    capture(&bin, &["load", "-i", archive]).with_context(|| format!("loading into {runtime}"))?;
    for reference in &refs {
        let got = image_id(&bin, reference);
        ensure!(
            got.as_deref() == Some(want),
            "{runtime}: after loading, {reference} has id {} instead of {want}",
            got.as_deref().unwrap_or("(none)")
        );
    }
    println!("{runtime}: loaded {} and :latest (id {want:.12})", refs[0]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn fake_inputs() -> Inputs {
        Inputs {
            busybox: b"not really busybox".to_vec(),
            applets: ["bin/busybox", "bin/sh", "usr/bin/[", "sbin/ip", "usr/sbin/httpd"].map(str::to_owned).to_vec(),
            bash: b"not really bash".to_vec(),
            lab_agent: b"#!/bin/sh\necho agent\n".to_vec(),
            architecture: "amd64".to_owned(),
        }
    }

    /// One tar entry, read back for assertions.
    #[derive(Debug)]
    struct Entry {
        path: String,
        kind: tar::EntryType,
        mode: u32,
        uid: u64,
        mtime: u64,
        link: String,
        data: Vec<u8>,
    }

    fn entries(tar_bytes: &[u8]) -> Vec<Entry> {
        let mut archive = tar::Archive::new(tar_bytes);
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let h = entry.header().clone();
                let path = entry.path().unwrap().to_string_lossy().into_owned();
                let link = entry.link_name().unwrap();
                let link = link.map(|l| l.to_string_lossy().into_owned());
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                Entry {
                    path,
                    kind: h.entry_type(),
                    mode: h.mode().unwrap(),
                    uid: h.uid().unwrap(),
                    mtime: h.mtime().unwrap(),
                    link: link.unwrap_or_default(),
                    data,
                }
            })
            .collect()
    }

    /// A blob's bytes, checked against the digest that names it.
    fn blob<'a>(archive: &'a [Entry], digest: &str) -> &'a [u8] {
        let hex = digest.trim_start_matches("sha256:");
        let path = format!("blobs/sha256/{hex}");
        let found = archive.iter().find(|e| e.path == path).expect("blob present");
        assert_eq!(sha256_hex(&found.data), hex);
        &found.data
    }

    #[test]
    fn two_builds_are_identical() {
        let a = Image::build(&fake_inputs()).unwrap();
        let b = Image::build(&fake_inputs()).unwrap();
        assert_eq!(a.manifest_digest, b.manifest_digest);
        assert_eq!(sha256_hex(&a.archive), sha256_hex(&b.archive));
        assert_eq!(a.tag, a.config_digest["sha256:".len()..][..12]);
    }

    #[test]
    fn a_changed_input_changes_the_tag() {
        let mut inputs = fake_inputs();
        let before = Image::build(&inputs).unwrap().tag;
        inputs.lab_agent.push(b'\n');
        assert_ne!(Image::build(&inputs).unwrap().tag, before);
    }

    #[test]
    fn json_documents_have_the_oci_shape() {
        let image = Image::build(&fake_inputs()).unwrap();
        let archive = entries(&image.archive);

        let file = |path: &str| -> Value {
            let entry = archive.iter().find(|e| e.path == path).expect("file present");
            serde_json::from_slice(&entry.data).unwrap()
        };
        let index = &file("index.json");
        assert_eq!(index["schemaVersion"], 2);
        assert_eq!(index["mediaType"], MEDIA_INDEX);
        let names: Vec<&str> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                assert_eq!(m["digest"], image.manifest_digest);
                assert_eq!(m["mediaType"], MEDIA_MANIFEST);
                assert_eq!(
                    m["annotations"]["io.containerd.image.name"],
                    m["annotations"]["org.opencontainers.image.ref.name"]
                );
                m["annotations"]["org.opencontainers.image.ref.name"].as_str().unwrap()
            })
            .collect();
        let tagged = format!("localhost/brig-lab/guest:{}", image.tag);
        assert_eq!(names, [tagged.as_str(), "localhost/brig-lab/guest:latest"]);

        let manifest = &serde_json::from_slice::<Value>(blob(&archive, &image.manifest_digest)).unwrap();
        assert_eq!(manifest["mediaType"], MEDIA_MANIFEST);
        assert_eq!(manifest["config"]["mediaType"], MEDIA_CONFIG);
        assert_eq!(manifest["config"]["digest"], image.config_digest);
        let manifest_blob = blob(&archive, &image.manifest_digest);
        assert_eq!(serde_json::from_slice::<Value>(manifest_blob).unwrap(), *manifest);
        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1);
        assert_eq!(layers[0]["mediaType"], MEDIA_LAYER);
        let layer_gz = blob(&archive, layers[0]["digest"].as_str().unwrap());
        assert_eq!(layers[0]["size"], layer_gz.len());

        let config_blob = blob(&archive, &image.config_digest);
        assert_eq!(config_blob.len(), manifest["config"]["size"]);
        let config = &serde_json::from_slice::<Value>(config_blob).unwrap();
        assert_eq!(config["os"], "linux");
        assert_eq!(config["architecture"], "amd64");
        assert_eq!(config["config"]["Cmd"], json!(["sleep", "infinity"]));
        assert_eq!(config["config"]["Env"], json!([format!("PATH={GUEST_PATH}")]));
        let mut layer = Vec::new();
        flate2::read::GzDecoder::new(layer_gz).read_to_end(&mut layer).unwrap();
        assert_eq!(config["rootfs"]["diff_ids"], json!([format!("sha256:{}", sha256_hex(&layer))]));
        assert_eq!(blob(&archive, &image.config_digest).len(), manifest["config"]["size"]);

        let docker = &file("manifest.json")[0];
        assert_eq!(docker["RepoTags"], json!(names));
        assert_eq!(docker["Config"], format!("blobs/sha256/{}", &image.config_digest[7..]));
        let oci_layout = archive.iter().find(|e| e.path == "oci-layout").unwrap();
        assert_eq!(oci_layout.data, br#"{"imageLayoutVersion":"1.0.0"}"#);
    }

    #[test]
    fn archive_is_an_oci_layout() {
        let image = Image::build(&fake_inputs()).unwrap();
        let paths: Vec<String> = entries(&image.archive).into_iter().map(|e| e.path).collect();
        for want in ["oci-layout", "index.json", "manifest.json", "blobs/sha256"] {
            assert!(paths.iter().any(|p| p.trim_end_matches('/') == want), "{want} missing");
        }
        assert_eq!(paths.iter().filter(|p| p.starts_with("blobs/sha256/") && p.len() > 13).count(), 3);
    }

    #[test]
    fn layer_holds_the_guest_filesystem() {
        let layer = entries(&layer_tar(&fake_inputs()).unwrap());
        let find = |path: &str| {
            layer
                .iter()
                .find(|e| e.path.trim_end_matches('/') == path)
                .unwrap_or_else(|| panic!("{path} missing from the layer"))
        };
        for dir in [
            "bin",
            "etc",
            "root",
            "home/lab",
            "tmp",
            "work",
            "proc",
            "sys",
            "dev",
            "sbin",
            "usr",
            "usr/bin",
            "usr/sbin",
            "usr/local/bin",
        ] {
            assert_eq!(find(dir).kind, tar::EntryType::Directory, "{dir}");
        }
        assert_eq!(find("tmp").mode, 0o1777);
        assert_eq!(find("home/lab").uid, 1000);
        assert_eq!(find("bin/busybox").data, b"not really busybox");
        assert_eq!(find("bin/bash").data, b"not really bash");
        assert_eq!(find("usr/local/bin/lab-agent").mode, 0o755);
        for applet in ["bin/sh", "usr/bin/[", "sbin/ip", "usr/sbin/httpd"] {
            let entry = find(applet);
            assert_eq!((entry.kind, entry.link.as_str()), (tar::EntryType::Symlink, "/bin/busybox"));
        }
        let passwd = String::from_utf8(find("etc/passwd").data.clone()).unwrap();
        assert!(passwd.contains("lab:x:1000:1000:lab:/home/lab:"));
        assert!(String::from_utf8_lossy(&find("etc/profile").data).contains(GUEST_PATH));
        assert!(find("etc/group").data.starts_with(b"root:x:0:"));

        // Pinned metadata and sorted order are what make the digest stable.
        assert!(layer.iter().all(|e| e.mtime == 0 && (e.uid == 0 || e.path.starts_with("home/lab"))));
        let paths: Vec<&str> = layer.iter().map(|e| e.path.trim_end_matches('/')).collect();
        let mut sorted = paths.clone();
        sorted.sort_unstable();
        assert_eq!(paths, sorted);
    }

    /// Runs the real `lab-agent` under the host's busybox, with only busybox
    /// applets on PATH, as it runs in the guest.
    #[test]
    fn lab_agent_reports_tricky_arguments_as_json() {
        if !Path::new(HOST_BUSYBOX).is_file() {
            let why = format!("{HOST_BUSYBOX} is absent (busybox-static, which `cargo xtask provision` installs)");
            assert!(
                !crate::ci::forbids_skipping(std::env::var_os("CI").as_deref()),
                "{why}, and under CI this test must run"
            );
            eprintln!("skipped: {why}; with CI set this is a failure");
            return;
        }
        let scratch = tempfile::Builder::new().prefix("lab-agent-test-").tempdir().unwrap();
        let bin = scratch.path();
        for applet in ["sh", "awk", "tr", "sed", "sort", "id", "dirname", "mkdir"] {
            std::os::unix::fs::symlink(HOST_BUSYBOX, bin.join(applet)).unwrap();
        }
        let tricky =
            ["plain", "two words", "q\"uote", "back\\slash", "nl\nand\ttab", "\u{1}\u{1b}\u{7f}", "", "-v", "x=1", "é"];
        let out = Command::new(HOST_BUSYBOX)
            .arg("sh")
            .arg(workspace_root().join("lab/guest/lab-agent"))
            .args(tricky)
            .env_clear()
            .env("PATH", bin)
            .env("HOME", "/nonexistent")
            .env("LAB_SHOW_ENV", "SHOWN MISSING")
            .env("SHOWN", "va\"l\nue")
            .env("HIDDEN", "secret-value")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains("secret-value"));
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["argv"], json!(tricky));
        assert_eq!(report["home"], "/nonexistent");
        assert_eq!(report["envNames"], json!(["HIDDEN", "HOME", "LAB_SHOW_ENV", "PATH", "SHOWN"]));
        assert_eq!(report["env"], json!({"SHOWN": "va\"l\nue", "MISSING": null}));
        assert!(report["uid"].is_u64() && report["gid"].is_u64());
        assert!(report["mounts"].is_array());
    }

    #[test]
    fn elf_interpreter_is_detected() {
        // A 64-bit little-endian header with one program header of the given type.
        let elf = |p_type: u32| {
            let mut bytes = vec![0u8; 0x40 + 0x38];
            bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
            bytes[0x20] = 0x40;
            bytes[0x36] = 0x38;
            bytes[0x38] = 1;
            bytes[0x40..0x44].copy_from_slice(&p_type.to_le_bytes());
            bytes
        };
        assert!(elf_has_interpreter(&elf(3)).unwrap());
        assert!(!elf_has_interpreter(&elf(1)).unwrap());
        assert!(elf_has_interpreter(b"#!/bin/sh\n").is_err());
    }

    #[test]
    fn inspect_ids_are_read_with_or_without_prefix() {
        assert_eq!(inspected_id(r#"[{"Id":"sha256:abc"}]"#).as_deref(), Some("abc"));
        assert_eq!(inspected_id(r#"[{"Id":"abc"}]"#).as_deref(), Some("abc"));
        assert_eq!(inspected_id("[]"), None);
    }
}
