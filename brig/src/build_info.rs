//! Build facts captured at compile time by `build.rs`, shared by
//! `brig version`, `brig --version` and brigd's `version` op.

use serde::Serialize;

/// The same fields in `brig version --json` data and brigd's `version` op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildInfo {
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_time: Option<&'static str>,
    pub modified: bool,
}

const RUSTC: &str = env!("BRIG_BUILD_RUSTC");

impl BuildInfo {
    pub fn current() -> Self {
        let commit = option_env!("BRIG_BUILD_COMMIT");
        BuildInfo {
            // Without git history there is no release to name: say so plainly.
            version: match commit {
                Some(_) => format!("v{}", env!("CARGO_PKG_VERSION")),
                None => "dev".to_owned(),
            },
            commit,
            commit_time: option_env!("BRIG_BUILD_COMMIT_TIME"),
            modified: env!("BRIG_BUILD_MODIFIED") == "true",
        }
    }

    /// `v0.1.0 (abc1234+dirty, 2026-11-29, rustc 1.95.0, linux/x86_64)`.
    pub fn line(&self) -> String {
        let mut facts = Vec::new();
        if let Some(commit) = self.commit {
            let short = &commit[..commit.len().min(7)];
            facts.push(if self.modified { format!("{short}+dirty") } else { short.to_owned() });
        }
        if let Some(time) = self.commit_time {
            facts.push(time.get(..10).unwrap_or(time).to_owned());
        }
        facts.push(format!("rustc {RUSTC}"));
        facts.push(format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH));
        format!("{} ({})", self.version, facts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_names_commit_date_and_platform() {
        let info = BuildInfo {
            version: "v0.1.0".into(),
            commit: Some("abc1234def"),
            commit_time: Some("2026-11-29T10:00:00+00:00"),
            modified: true,
        };
        let line = info.line();
        assert!(line.starts_with("v0.1.0 (abc1234+dirty, 2026-11-29, rustc "), "{line}");
        assert!(line.ends_with(&format!("{}/{})", std::env::consts::OS, std::env::consts::ARCH)));
    }

    #[test]
    fn without_history_there_is_no_commit() {
        let info = BuildInfo { version: "dev".into(), commit: None, commit_time: None, modified: false };
        assert!(info.line().starts_with("dev (rustc "));
        let json = serde_json::to_value(&info).unwrap();
        assert_eq!(json, serde_json::json!({"version": "dev", "modified": false}));
    }
}
