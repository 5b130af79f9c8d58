//! The verify step of apply (spec 05 §1.4): before the runtime sees an
//! image, decide from what the registry says whether it boots, pinned to
//! which digest, or is refused (exit 5).
//!
//! Under `warn` a doubt is a question for a person at a terminal; with
//! nobody to ask (brigd, or no terminal) the answer is no. Every alert is a
//! warning, so it survives `-q` and reaches a brigd response's `warnings`;
//! the success summary is a note, which `-q` leaves out.

use super::Engine;
use super::plan::Ready;
use crate::Error;
use crate::settings::{Pull, Verify};
use crate::verify::{self, Outcome};

/// What the runtime boots, and how it may fetch it.
#[derive(Debug, Clone)]
pub(super) struct Chosen {
    pub image: String,
    pub pull: Option<Pull>,
}

/// A refusal, with what to do about it.
fn refused(image: &str, why: impl Into<String>, remedy: impl Into<String>) -> Error {
    super::Error::VerifyRefused { image: image.to_owned(), why: why.into(), remedy: remedy.into() }.into()
}

impl Engine<'_> {
    /// Run the decision table for the plan's image.
    pub(super) fn verify_image(&mut self, plan: &Ready) -> Result<Chosen, Error> {
        let image = plan.resolved.image.as_str();
        let pull = plan.resolved.pull;
        let as_given = Chosen { image: image.to_owned(), pull };
        let mode = plan.resolved.verify;
        let policy = &plan.resolved.policy;
        if mode == Verify::Off {
            self.warnings.push(format!("image verification is off (BRIG_VERIFY=off): {image} boots unchecked"));
            return Ok(as_given);
        }
        // Decided first, with no registry call: a third-party image is
        // never looked up.
        if !policy.is_ours(image) {
            let why = format!(
                "{image} is not published by brig-sh (its reference is not under {}), so no signature is checked",
                policy.registry
            );
            if mode == Verify::Require {
                return Err(refused(
                    image,
                    why,
                    "BRIG_VERIFY=require boots only verified images: set BRIG_VERIFY=warn to boot it unverified, or \
                     trust its publisher with BRIG_VERIFY_REGISTRY and BRIG_VERIFY_KEY (or BRIG_VERIFY_IDENTITY, \
                     BRIG_VERIFY_ISSUER and BRIG_VERIFY_TRUST_ROOT)",
                ));
            }
            self.warnings.push(format!("{why}; it boots unverified"));
            return Ok(as_given);
        }
        let started = std::time::Instant::now();
        let outcome = verify::check(image, policy);
        // `cargo xtask bench` reads this line to time the step alone.
        tracing::info!("verification took {} ms", started.elapsed().as_millis());
        match outcome {
            Outcome::Verified { digest, signer } => {
                let pinned = verify::pinned(image, &digest);
                // With `always` the runtime fetches the verified digest
                // whatever it holds; otherwise a local copy that is not
                // what was signed is worth a word before it is passed over.
                let local = if pull == Some(Pull::Always) { None } else { plan.runtime.local_digests(image) };
                if let Some(local) = local
                    && !local.contains(&digest)
                {
                    let alert = format!(
                        "the local copy of {image} is not what the registry signed ({digest}): it was pulled before \
                         the tag moved, or made on this host"
                    );
                    self.warnings.push(alert);
                    if mode == Verify::Require {
                        return Err(refused(
                            image,
                            format!("its local copy is not what the registry signed ({digest})"),
                            "pull it again with BRIG_PULL=always, or set BRIG_VERIFY=off",
                        ));
                    }
                    self.ask(image, "Boot the verified registry copy instead?", "BRIG_PULL=always")?;
                }
                self.warnings.note(format!("image verified ({signer}, policy {}): booting {pinned}", policy.name()));
                tracing::info!("signature verified, booting {pinned}");
                Ok(Chosen { image: pinned, pull })
            }
            Outcome::Failed { digest, why } => {
                self.warnings.push(format!("{image} ({digest}) DID NOT VERIFY: {why}"));
                let remedy = "pull it again with BRIG_PULL=always if the registry has a newer signature, or set \
                              BRIG_IMAGE to a digest you checked";
                if mode == Verify::Require {
                    return Err(refused(image, format!("{digest} DID NOT VERIFY: {why}"), remedy));
                }
                self.ask(image, "Boot it anyway?", remedy)?;
                Ok(Chosen { image: verify::pinned(image, &digest), pull })
            }
            Outcome::Unresolved { why, timed_out } => {
                let why = if timed_out { why } else { format!("the registry did not give its digest ({why})") };
                self.warnings.push(format!("cannot verify {image}: {why}"));
                let remedy = "try again when the registry answers, or set BRIG_VERIFY=off";
                if mode == Verify::Require {
                    return Err(refused(image, format!("it cannot be verified: {why}"), remedy));
                }
                self.ask(image, "Boot the cached copy unverified?", remedy)?;
                // Only what is already here: nothing unverified is fetched.
                Ok(Chosen { image: image.to_owned(), pull: Some(Pull::Never) })
            }
        }
    }

    /// A yes from the person at the terminal, or a refusal.
    fn ask(&mut self, image: &str, question: &str, remedy: &str) -> Result<(), Error> {
        if self.prompts == super::Prompts::Nobody {
            let line = format!(
                "not a terminal: nobody to ask whether to boot {image}, so it is refused (BRIG_VERIFY=off boots it \
                 unchecked)"
            );
            self.warnings.push(line);
            return Err(refused(
                image,
                "its verification needs a yes and this is not a terminal: nobody to ask",
                if remedy.contains("BRIG_VERIFY=off") {
                    remedy.to_owned()
                } else {
                    format!("{remedy}; BRIG_VERIFY=off boots it unchecked")
                },
            ));
        }
        if self.prompts.confirm(question) { Ok(()) } else { Err(refused(image, "the answer was no", remedy)) }
    }
}
