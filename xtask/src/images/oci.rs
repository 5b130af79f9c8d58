//! The OCI writer: a filesystem tree in, a loadable image archive out, every byte pinned.
//!
//! Layer tar, gzip, config, manifest and index are all written here with
//! fixed metadata, so the same tree always gives the same digests and an
//! image's tag can be a hash of its content.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::json;
use sha2::{Digest, Sha256};

pub const MEDIA_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const MEDIA_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const MEDIA_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const MEDIA_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// One entry of an image's filesystem.
#[derive(Debug)]
pub enum Node<'a> {
    Dir { mode: u32, owner: u64 },
    File { mode: u32, data: Cow<'a, [u8]> },
    Link { target: Cow<'a, str> },
}

impl<'a> Node<'a> {
    pub fn dir(mode: u32) -> Self {
        Node::Dir { mode, owner: 0 }
    }

    pub fn file(mode: u32, data: impl Into<Cow<'a, [u8]>>) -> Self {
        Node::File { mode, data: data.into() }
    }

    pub fn link(target: impl Into<Cow<'a, str>>) -> Self {
        Node::Link { target: target.into() }
    }

    /// The same entry, borrowing its contents, so one unpacked package can
    /// go into a tree without copying its files.
    pub fn borrowed(&self) -> Node<'_> {
        match self {
            Node::Dir { mode, owner } => Node::Dir { mode: *mode, owner: *owner },
            Node::File { mode, data } => Node::file(*mode, &data[..]),
            Node::Link { target } => Node::link(&target[..]),
        }
    }
}

/// An image's filesystem, keyed by path without a leading `/`. A sorted map
/// gives a stable entry order and puts every directory before its contents.
pub type Tree<'a> = BTreeMap<String, Node<'a>>;

/// Gives every entry its parent directories (0755, root's), keeping those
/// already in the tree as they are.
pub fn add_parents(tree: &mut Tree<'_>) {
    let parents: Vec<String> = tree
        .keys()
        .flat_map(|path| path.match_indices('/').map(|(i, _)| path[..i].to_owned()).collect::<Vec<_>>())
        .collect();
    for parent in parents {
        tree.entry(parent).or_insert(Node::dir(0o755));
    }
}

/// Follows links from `path` (no leading `/`) as the guest's kernel would,
/// to the entry that is not a link and its path; `None` when a link leads
/// nowhere or through more than 16 links. Directory links are not followed:
/// the images built here have none.
pub fn resolve<'t>(tree: &'t Tree<'_>, path: &str) -> Option<(&'t str, &'t Node<'t>)> {
    let mut path = path.to_owned();
    for _ in 0..16 {
        let (key, node) = tree.get_key_value(&path)?;
        let Node::Link { target } = node else { return Some((key.as_str(), node)) };
        path = match target.strip_prefix('/') {
            Some(absolute) => absolute.to_owned(),
            None => match path.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/{target}"),
                None => target.to_string(),
            },
        };
    }
    None
}

/// A tar header with every field that could vary between builds pinned.
pub fn header(kind: tar::EntryType, mode: u32, owner: u64, size: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_uid(owner);
    h.set_gid(owner);
    h.set_mtime(0);
    h.set_size(size);
    h
}

pub fn layer_tar(tree: &Tree<'_>) -> Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
    for (path, node) in tree {
        match node {
            Node::Dir { mode, owner } => {
                let mut h = header(tar::EntryType::Directory, *mode, *owner, 0);
                tar.append_data(&mut h, format!("{path}/"), std::io::empty())?;
            }
            Node::File { mode, data } => {
                let mut h = header(tar::EntryType::Regular, *mode, 0, data.len() as u64);
                tar.append_data(&mut h, path, &**data)?;
            }
            Node::Link { target } => {
                let mut h = header(tar::EntryType::Symlink, 0o777, 0, 0);
                tar.append_link(&mut h, path, &**target)?;
            }
        }
    }
    Ok(tar.into_inner()?)
}

pub fn gzip(data: &[u8], level: Compression) -> Result<Vec<u8>> {
    // flate2 writes mtime 0 and no file name, so the gzip header is stable too.
    let mut gz = GzEncoder::new(Vec::new(), level);
    gz.write_all(data)?;
    Ok(gz.finish()?)
}

pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

/// A layer's blob and its digests: the manifest names the compressed blob,
/// the config's `diff_ids` the uncompressed tar.
#[derive(Debug)]
pub struct Layer {
    pub diff_hex: String,
    pub gz_hex: String,
    pub gz: Vec<u8>,
}

impl Layer {
    pub fn compress(tar: &[u8], level: Compression) -> Result<Self> {
        let gz = gzip(tar, level)?;
        Ok(Layer { diff_hex: sha256_hex(tar), gz_hex: sha256_hex(&gz), gz })
    }

    /// As `compress`, but keeps the compressed layer in `dir` as
    /// `<diff>.<level>.<blob digest>.gz`, for layers big enough that
    /// compressing them again would be most of a rebuild. A cached blob is
    /// used only while it still hashes to the digest in its name. `dir` holds
    /// one image's layers: writing a new one removes the others. The second
    /// value says whether the cache answered.
    pub fn compress_cached(tar: &[u8], level: Compression, dir: &Path) -> Result<(Self, bool)> {
        let diff_hex = sha256_hex(tar);
        let prefix = format!("{diff_hex}.{}.", level.level());
        let cached = std::fs::read_dir(dir).into_iter().flatten().flatten().find_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let gz_hex = name.strip_prefix(&prefix)?.strip_suffix(".gz")?.to_owned();
            let gz = std::fs::read(entry.path()).ok()?;
            (sha256_hex(&gz) == gz_hex).then_some(Layer { diff_hex: diff_hex.clone(), gz_hex, gz })
        });
        if let Some(layer) = cached {
            return Ok((layer, true));
        }

        let gz = gzip(tar, level)?;
        let gz_hex = sha256_hex(&gz);
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            let old = entry?.path();
            if old.extension().is_some_and(|ext| ext == "gz") {
                std::fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
            }
        }
        let path = dir.join(format!("{prefix}{gz_hex}.gz"));
        let tmp = path.with_extension("gz.partial");
        std::fs::write(&tmp, &gz).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
        Ok((Layer { diff_hex, gz_hex, gz }, false))
    }
}

/// What an image says about itself besides its filesystem.
#[derive(Debug)]
pub struct Spec {
    /// `localhost/brig-lab/<name>`: never a name a registry could answer to.
    pub repository: &'static str,
    pub title: String,
    /// The step that built it, recorded in the config's history.
    pub created_by: &'static str,
    /// OCI names (`amd64`, `arm64`, …) of the platform the binaries are for.
    pub architecture: String,
    pub env: Vec<String>,
    pub cmd: Vec<String>,
}

#[derive(Debug)]
pub struct Image {
    pub repository: &'static str,
    /// Short content hash: the first 12 hex digits of the image id.
    pub tag: String,
    /// The image id as podman reports it: the config's digest.
    pub config_digest: String,
    pub manifest_digest: String,
    /// The OCI layout (plus a docker-style `manifest.json`) as one tar.
    pub archive: Vec<u8>,
}

impl Image {
    pub fn build(spec: &Spec, layer: &Layer) -> Result<Self> {
        let layer_hex = &layer.gz_hex;
        let config = json!({
            "created": "1970-01-01T00:00:00Z",
            "architecture": spec.architecture,
            "os": "linux",
            "config": {
                "Env": spec.env,
                "Cmd": spec.cmd,
                "WorkingDir": "/",
                "Labels": {"org.opencontainers.image.title": spec.title},
            },
            "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{}", layer.diff_hex)]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": spec.created_by}],
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
                "size": layer.gz.len(),
            }],
        });
        let manifest_bytes = serde_json::to_vec(&manifest)?;
        let manifest_hex = sha256_hex(&manifest_bytes);

        let repository = spec.repository;
        let names = [format!("{repository}:{tag}"), format!("{repository}:latest")];
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

        let mut files: BTreeMap<String, &[u8]> = BTreeMap::new();
        let index_bytes = serde_json::to_vec(&index)?;
        let docker_bytes = serde_json::to_vec(&docker_manifest)?;
        let layout_bytes = serde_json::to_vec(&json!({"imageLayoutVersion": "1.0.0"}))?;
        files.insert(format!("blobs/sha256/{layer_hex}"), &layer.gz);
        files.insert(format!("blobs/sha256/{config_hex}"), &config_bytes);
        files.insert(format!("blobs/sha256/{manifest_hex}"), &manifest_bytes);
        files.insert("index.json".into(), &index_bytes);
        files.insert("manifest.json".into(), &docker_bytes);
        files.insert("oci-layout".into(), &layout_bytes);

        let mut tar = tar::Builder::new(Vec::new());
        for dir in ["blobs", "blobs/sha256"] {
            let mut h = header(tar::EntryType::Directory, 0o755, 0, 0);
            tar.append_data(&mut h, format!("{dir}/"), std::io::empty())?;
        }
        for (path, data) in &files {
            let mut h = header(tar::EntryType::Regular, 0o644, 0, data.len() as u64);
            tar.append_data(&mut h, path, *data)?;
        }

        Ok(Image {
            repository,
            tag,
            config_digest: format!("sha256:{config_hex}"),
            manifest_digest: format!("sha256:{manifest_hex}"),
            archive: tar.into_inner()?,
        })
    }

    pub fn references(&self) -> [String; 2] {
        [format!("{}:{}", self.repository, self.tag), format!("{}:latest", self.repository)]
    }

    /// The archive's file name: the repository's path after `localhost/`,
    /// slashes made dashes, then the tag.
    pub fn file_name(&self) -> String {
        let path = self.repository.trim_start_matches("localhost/").replace('/', "-");
        format!("{path}-{}.tar", self.tag)
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use serde_json::Value;
    use std::io::Read;

    /// One tar entry, read back for assertions.
    #[derive(Debug)]
    pub struct Entry {
        pub path: String,
        pub kind: tar::EntryType,
        pub mode: u32,
        pub uid: u64,
        pub mtime: u64,
        pub link: String,
        pub data: Vec<u8>,
    }

    pub fn entries(tar_bytes: &[u8]) -> Vec<Entry> {
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

    fn spec() -> Spec {
        Spec {
            repository: "localhost/brig-lab/test",
            title: "a test image".to_owned(),
            created_by: "a unit test",
            architecture: "amd64".to_owned(),
            env: vec!["PATH=/bin".to_owned(), "HOME=/root".to_owned()],
            cmd: vec!["sleep".to_owned(), "infinity".to_owned()],
        }
    }

    fn small_tree() -> Tree<'static> {
        let mut tree = Tree::new();
        tree.insert("usr/bin/tool".to_owned(), Node::file(0o755, &b"#!/bin/sh\n"[..]));
        tree.insert("bin/sh".to_owned(), Node::link("/usr/bin/tool"));
        tree.insert("home/user".to_owned(), Node::Dir { mode: 0o700, owner: 1000 });
        tree.insert("tmp".to_owned(), Node::dir(0o1777));
        add_parents(&mut tree);
        tree
    }

    fn small_image() -> Image {
        let layer = Layer::compress(&layer_tar(&small_tree()).unwrap(), Compression::fast()).unwrap();
        Image::build(&spec(), &layer).unwrap()
    }

    #[test]
    fn two_builds_are_identical() {
        let (a, b) = (small_image(), small_image());
        assert_eq!(a.manifest_digest, b.manifest_digest);
        assert_eq!(sha256_hex(&a.archive), sha256_hex(&b.archive));
        assert_eq!(a.tag, a.config_digest["sha256:".len()..][..12]);
        assert_eq!(a.file_name(), format!("brig-lab-test-{}.tar", a.tag));
    }

    #[test]
    fn a_changed_file_changes_the_tag() {
        let mut tree = small_tree();
        tree.insert("etc/motd".to_owned(), Node::file(0o644, &b"hello\n"[..]));
        let layer = Layer::compress(&layer_tar(&tree).unwrap(), Compression::fast()).unwrap();
        assert_ne!(Image::build(&spec(), &layer).unwrap().tag, small_image().tag);
    }

    #[test]
    fn parents_are_added_without_replacing_existing_directories() {
        let tree = small_tree();
        for dir in ["usr", "usr/bin", "bin", "home"] {
            assert!(matches!(tree[dir], Node::Dir { mode: 0o755, owner: 0 }), "{dir}");
        }
        assert!(matches!(tree["home/user"], Node::Dir { mode: 0o700, owner: 1000 }));
        assert!(matches!(tree["tmp"], Node::Dir { mode: 0o1777, owner: 0 }));
    }

    #[test]
    fn a_cached_layer_is_reused_only_while_it_unpacks_to_the_layer() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("cache");
        let tar = layer_tar(&small_tree()).unwrap();
        let (first, cached) = Layer::compress_cached(&tar, Compression::fast(), &dir).unwrap();
        assert!(!cached);
        let (again, cached) = Layer::compress_cached(&tar, Compression::fast(), &dir).unwrap();
        assert!(cached);
        assert_eq!((&again.diff_hex, &again.gz), (&first.diff_hex, &first.gz));

        // A damaged blob is replaced, and a new layer evicts the old one.
        let path = dir.join(format!("{}.1.{}.gz", first.diff_hex, first.gz_hex));
        assert_eq!(first.gz_hex, sha256_hex(&first.gz));
        std::fs::write(&path, b"not gzip").unwrap();
        let (repaired, cached) = Layer::compress_cached(&tar, Compression::fast(), &dir).unwrap();
        assert!(!cached);
        assert_eq!(repaired.gz, first.gz);
        let other = layer_tar(&Tree::new()).unwrap();
        let other = Layer::compress_cached(&other, Compression::fast(), &dir).unwrap().0;
        let left: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(left, [format!("{}.1.{}.gz", other.diff_hex, other.gz_hex)]);
    }

    #[test]
    fn links_are_followed_to_what_they_name() {
        let mut tree = small_tree();
        tree.insert("usr/bin/relative".to_owned(), Node::link("tool"));
        tree.insert("bin/loop".to_owned(), Node::link("/bin/loop"));
        tree.insert("bin/dangling".to_owned(), Node::link("/nowhere"));
        for path in ["usr/bin/tool", "bin/sh", "usr/bin/relative"] {
            assert!(matches!(resolve(&tree, path), Some(("usr/bin/tool", Node::File { .. }))), "{path}");
        }
        assert!(matches!(resolve(&tree, "home/user"), Some(("home/user", Node::Dir { .. }))));
        for path in ["bin/loop", "bin/dangling", "absent"] {
            assert!(resolve(&tree, path).is_none(), "{path}");
        }
    }

    #[test]
    fn layer_entries_are_sorted_with_pinned_metadata() {
        let layer = entries(&layer_tar(&small_tree()).unwrap());
        let paths: Vec<&str> = layer.iter().map(|e| e.path.trim_end_matches('/')).collect();
        assert_eq!(paths, ["bin", "bin/sh", "home", "home/user", "tmp", "usr", "usr/bin", "usr/bin/tool"]);
        assert!(layer.iter().all(|e| e.mtime == 0));
        let link = &layer[1];
        assert_eq!((link.kind, link.link.as_str(), link.mode), (tar::EntryType::Symlink, "/usr/bin/tool", 0o777));
        let home = &layer[3];
        assert_eq!((home.kind, home.mode, home.uid), (tar::EntryType::Directory, 0o700, 1000));
        assert_eq!((layer[4].mode, layer[7].mode, layer[7].data.as_slice()), (0o1777, 0o755, &b"#!/bin/sh\n"[..]));
    }

    #[test]
    fn json_documents_have_the_oci_shape() {
        let image = small_image();
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
        let tagged = format!("localhost/brig-lab/test:{}", image.tag);
        assert_eq!(names, [tagged.as_str(), "localhost/brig-lab/test:latest"]);
        assert_eq!(image.references(), [tagged.as_str(), "localhost/brig-lab/test:latest"]);

        let manifest = &serde_json::from_slice::<Value>(blob(&archive, &image.manifest_digest)).unwrap();
        assert_eq!(manifest["mediaType"], MEDIA_MANIFEST);
        assert_eq!(manifest["config"]["mediaType"], MEDIA_CONFIG);
        assert_eq!(manifest["config"]["digest"], image.config_digest);
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
        assert_eq!(config["config"]["Env"], json!(["PATH=/bin", "HOME=/root"]));
        assert_eq!(config["config"]["Labels"]["org.opencontainers.image.title"], "a test image");
        assert_eq!(config["history"][0]["created_by"], "a unit test");
        let mut layer = Vec::new();
        flate2::read::GzDecoder::new(layer_gz).read_to_end(&mut layer).unwrap();
        assert_eq!(config["rootfs"]["diff_ids"], json!([format!("sha256:{}", sha256_hex(&layer))]));
        assert_eq!(layer, layer_tar(&small_tree()).unwrap());

        let docker = &file("manifest.json")[0];
        assert_eq!(docker["RepoTags"], json!(names));
        assert_eq!(docker["Config"], format!("blobs/sha256/{}", &image.config_digest[7..]));
        let oci_layout = archive.iter().find(|e| e.path == "oci-layout").unwrap();
        assert_eq!(oci_layout.data, br#"{"imageLayoutVersion":"1.0.0"}"#);
    }

    #[test]
    fn archive_is_an_oci_layout() {
        let image = small_image();
        let paths: Vec<String> = entries(&image.archive).into_iter().map(|e| e.path).collect();
        for want in ["oci-layout", "index.json", "manifest.json", "blobs/sha256"] {
            assert!(paths.iter().any(|p| p.trim_end_matches('/') == want), "{want} missing");
        }
        assert_eq!(paths.iter().filter(|p| p.starts_with("blobs/sha256/") && p.len() > 13).count(), 3);
    }
}
