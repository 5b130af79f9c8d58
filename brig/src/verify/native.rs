//! The registry conversation and the signature checks, with the sigstore
//! crate: resolve the tag's digest, read the cosign signatures stored for
//! that digest, and accept one that the policy's key made, or whose
//! certificate chains to the trust root and names the trusted identity and
//! issuer.
//!
//! What is checked offline: the signature over the signed payload, that the
//! payload names the digest that boots, the certificate chain to the trust
//! root, the certificate's identity, issuer and key usage, and, when the
//! signature carries a transparency-log bundle, the log's signed entry
//! timestamp and that the signature was logged while the certificate was
//! valid. What is not: that the log entry is included in the log's current
//! tree (that needs the log), and certificate revocation.

use std::collections::BTreeMap;

use sigstore::cosign::verification_constraint::{CertificateVerifier, PublicKeyVerifier, VerificationConstraint};
use sigstore::cosign::{ClientBuilder, CosignCapabilities, SignatureLayer};
use sigstore::crypto::{CosignVerificationKey, Signature};
use sigstore::registry::{Auth, ClientConfig, ClientProtocol, OciReference};
use sigstore::trust::ManualTrustRoot;

use super::{Outcome, Policy};

/// The annotations cosign stores a keyless signature's certificate and its
/// chain under.
const CERTIFICATE: &str = "dev.sigstore.cosign/certificate";
/// The certificate extension holding the identity provider (Fulcio's).
const ISSUER_OID: &str = "1.3.6.1.4.1.57264.1.1";

/// Whether a key file holds a public key cosign's signatures can be
/// checked with.
pub(super) fn check_key(pem: &[u8]) -> Result<(), String> {
    PublicKeyVerifier::try_from(pem).map(drop).map_err(|e| format!("not a public key brig can use ({e})"))
}

fn client_config(image: &str) -> ClientConfig {
    let mut config = ClientConfig::default();
    if super::on_loopback(image)
        && let Some(host) = super::registry_host(image)
    {
        config.protocol = ClientProtocol::HttpsExcept(vec![host]);
    }
    config
}

pub(super) async fn check(image: &str, policy: &Policy) -> Outcome {
    let unresolved = |why: String| Outcome::Unresolved { why, timed_out: false };
    let reference: OciReference = match image.parse() {
        Ok(r) => r,
        Err(e) => return unresolved(format!("{image} is not a reference a registry answers: {e}")),
    };
    let trust = ManualTrustRoot {
        fulcio_certs: policy.trust_root.authorities.iter().map(|der| der.clone().into()).collect(),
        rekor_keys: policy.trust_root.logs.clone(),
        ctfe_keys: BTreeMap::new(),
    };
    let config = client_config(image);
    let builder = match ClientBuilder::default().with_oci_client_config(config.clone()).with_trust_repository(&trust) {
        Ok(b) => b,
        Err(e) => return unresolved(format!("cannot use the trust root: {e}")),
    };
    let mut client = match builder.build() {
        Ok(c) => c,
        Err(e) => return unresolved(format!("cannot start the registry client: {e}")),
    };
    let auth = Auth::Anonymous;
    let digest = match client.triangulate(&reference, &auth).await {
        Ok((_, digest)) => digest,
        Err(e) => return unresolved(format!("cannot resolve its digest: {e}")),
    };
    // It goes into the reference the runtime boots: a registry's answer is
    // taken only in the one shape a digest has.
    if !super::is_digest(&digest) {
        return unresolved(format!("the registry answered {:?}, which is not a sha256 digest", digest.escape_debug()));
    }
    // Everything from here reads the digest, never the tag again: a tag
    // moved meanwhile changes nothing that is checked or booted.
    let at_digest =
        OciReference::with_digest(reference.registry().to_owned(), reference.repository().to_owned(), digest.clone());
    let layers = match client.trusted_signature_layers(&auth, &at_digest).await {
        Ok(layers) => layers,
        Err(e) => return unresolved(format!("cannot read its signatures: {e}")),
    };
    let layers: Vec<SignatureLayer> =
        layers.into_iter().filter(|l| l.simple_signing.critical.image.docker_manifest_digest == digest).collect();
    if layers.is_empty() {
        return Outcome::Failed { digest, why: "the registry holds no cosign signature for it".to_owned() };
    }
    if let Some(signer) = by_key(policy, &layers) {
        return Outcome::Verified { digest, signer };
    }
    if let Some(signer) = by_logged_certificate(policy, &layers) {
        return Outcome::Verified { digest, signer };
    }
    // A trust root that names no transparency log is a private CA's: its
    // certificates are long-lived and checked by chain and validity now.
    // Where the root names a log, a certificate without the log's evidence
    // is never enough.
    if policy.trust_root.logs.is_empty() {
        match by_private_certificate(policy, &config, &at_digest, &layers).await {
            Ok(Some(signer)) => return Outcome::Verified { digest, signer },
            Ok(None) => {}
            Err(why) => return unresolved(why),
        }
    }
    let why = if policy.key.is_some() {
        "signed, but neither by the key BRIG_VERIFY_KEY names nor by a certificate for the trusted identity and issuer"
    } else {
        "signed, but not by a certificate for the trusted identity and issuer"
    };
    Outcome::Failed { digest, why: why.to_owned() }
}

fn by_key(policy: &Policy, layers: &[SignatureLayer]) -> Option<String> {
    let (path, pem) = policy.key.as_ref()?;
    let verifier = PublicKeyVerifier::try_from(pem.as_slice()).ok()?;
    layers
        .iter()
        .any(|l| verifier.verify(l).unwrap_or(false))
        .then(|| format!("signed with the key {}", path.display()))
}

/// A layer whose certificate sigstore trusted (chain to the root's
/// authorities, logged while valid) and that the certificate's key signed.
fn by_logged_certificate(policy: &Policy, layers: &[SignatureLayer]) -> Option<String> {
    layers.iter().find_map(|l| {
        let cert = l.certificate_signature.as_ref()?;
        let identity = subject(&cert.subject);
        let signed = signed_by(l, &cert.verification_key);
        (signed && policy.identity_matches(&identity) && cert.issuer.as_deref() == Some(policy.issuer.as_str()))
            .then(|| format!("signed by {identity} ({})", policy.issuer))
    })
}

fn signed_by(layer: &SignatureLayer, key: &CosignVerificationKey) -> bool {
    layer
        .signature
        .as_ref()
        .is_some_and(|sig| key.verify_signature(Signature::Base64Encoded(sig.as_bytes()), &layer.raw_data).is_ok())
}

fn subject(subject: &sigstore::cosign::signature_layers::CertificateSubject) -> String {
    use sigstore::cosign::signature_layers::CertificateSubject;
    match subject {
        CertificateSubject::Email(e) => e.clone(),
        CertificateSubject::Uri(u) => u.clone(),
    }
}

/// A layer signed by the key of a certificate that chains to the trust
/// root, is valid now, and names the trusted identity and issuer. The
/// certificates are read from the signature manifest's annotations, which
/// sigstore's layers do not keep when no log vouches for them.
async fn by_private_certificate(
    policy: &Policy,
    config: &ClientConfig,
    at_digest: &OciReference,
    layers: &[SignatureLayer],
) -> Result<Option<String>, String> {
    use x509_cert::der::DecodePem as _;

    let Some(digest) = at_digest.digest() else { return Ok(None) };
    let signatures = oci_client::Reference::with_tag(
        at_digest.registry().to_owned(),
        at_digest.repository().to_owned(),
        format!("{}.sig", digest.replace(':', "-")),
    );
    let oci = oci_client::Client::new(config.clone().into());
    let (manifest, _) = oci
        .pull_image_manifest(&signatures, &oci_client::secrets::RegistryAuth::Anonymous)
        .await
        .map_err(|e| format!("cannot read its signature manifest: {e}"))?;
    let anchors: Vec<sigstore::registry::Certificate> = policy
        .trust_root
        .authorities
        .iter()
        .map(|der| sigstore::registry::Certificate {
            encoding: sigstore::registry::CertificateEncoding::Der,
            data: der.clone(),
        })
        .collect();
    for descriptor in &manifest.layers {
        let Some(pem) = descriptor.annotations.as_ref().and_then(|a| a.get(CERTIFICATE)) else { continue };
        let Some(layer) = layers.iter().find(|l| l.oci_digest == descriptor.digest) else { continue };
        let Ok(verifier) = CertificateVerifier::from_pem(pem.as_bytes(), false, Some(&anchors)) else { continue };
        if !verifier.verify(layer).unwrap_or(false) {
            continue;
        }
        let Ok(cert) = x509_cert::Certificate::from_pem(pem.as_bytes()) else { continue };
        let Ok(identity) = sigstore::cosign::signature_layers::CertificateSubject::from_certificate(&cert) else {
            continue;
        };
        let identity = subject(&identity);
        let issuer = cert.tbs_certificate().extensions().and_then(|exts| {
            exts.iter()
                .find(|ext| ext.extn_id.to_string() == ISSUER_OID)
                .and_then(|ext| String::from_utf8(ext.extn_value.as_bytes().to_vec()).ok())
        });
        if policy.identity_matches(&identity) && issuer.as_deref() == Some(policy.issuer.as_str()) {
            return Ok(Some(format!("signed by {identity} ({})", policy.issuer)));
        }
    }
    Ok(None)
}
