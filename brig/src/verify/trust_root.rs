//! A sigstore `trusted_root.json`: the certificate authorities a keyless
//! signature's certificate must chain to, and the transparency logs whose
//! signed entry timestamps prove when it was made.
//!
//! brig ships the public-good root (`trusted_root.json` beside this file,
//! as the sigstore project publishes it); `BRIG_VERIFY_TRUST_ROOT` names
//! another, such as a private CA's. Only the two lists verification reads
//! are taken; every other field is ignored, as sigstore's clients do.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

/// The public-good instance's root, as shipped in this build.
const PUBLIC_GOOD: &str = include_str!("trusted_root.json");

#[derive(Debug, Clone, Default)]
pub struct TrustRoot {
    /// Every certificate of every authority's chain (DER), each a trust
    /// anchor, as sigstore's clients take them.
    pub authorities: Vec<Vec<u8>>,
    /// Transparency-log public keys (DER) by hex key id.
    pub logs: BTreeMap<String, Vec<u8>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[serde(default)]
    tlogs: Vec<Log>,
    #[serde(default)]
    certificate_authorities: Vec<Authority>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Log {
    public_key: Key,
    log_id: LogId,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Key {
    raw_bytes: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogId {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Authority {
    cert_chain: Chain,
}

#[derive(Deserialize)]
struct Chain {
    certificates: Vec<Key>,
}

impl TrustRoot {
    pub fn public_good() -> Self {
        // Shipped with the build and covered by a test: it always parses.
        Self::parse(PUBLIC_GOOD.as_bytes()).unwrap_or_default()
    }

    /// Parse a `trusted_root.json`. One without a certificate authority
    /// could verify no keyless signature and is refused.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let doc: Document = serde_json::from_slice(bytes).map_err(|e| format!("not a trusted_root.json: {e}"))?;
        let decode =
            |field: &str, text: &str| STANDARD.decode(text.trim()).map_err(|e| format!("{field} is not base64: {e}"));
        let mut root = TrustRoot::default();
        for authority in &doc.certificate_authorities {
            for cert in &authority.cert_chain.certificates {
                root.authorities.push(decode("a certificate's rawBytes", &cert.raw_bytes)?);
            }
        }
        if root.authorities.is_empty() {
            return Err("it names no certificate authority".to_owned());
        }
        for log in &doc.tlogs {
            let id = decode("a log's keyId", &log.log_id.key_id)?;
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            root.logs.insert(hex, decode("a log's publicKey", &log.public_key.raw_bytes)?);
        }
        Ok(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_root_parses_with_its_authorities_and_log() {
        let root = TrustRoot::parse(PUBLIC_GOOD.as_bytes()).unwrap();
        assert!(root.authorities.len() >= 2, "fulcio's chains");
        assert_eq!(root.logs.len(), 1, "rekor");
    }

    #[test]
    fn a_root_without_authorities_or_with_bad_base64_is_refused() {
        assert!(TrustRoot::parse(br#"{"tlogs":[]}"#).unwrap_err().contains("no certificate authority"));
        let bad = br#"{"certificateAuthorities":[{"certChain":{"certificates":[{"rawBytes":"%%"}]}}]}"#;
        assert!(TrustRoot::parse(bad).unwrap_err().contains("base64"));
        assert!(TrustRoot::parse(b"\"x\"").unwrap_err().contains("not a trusted_root.json"));
    }
}
