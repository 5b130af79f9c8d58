//! What a listed sandbox is: read from the labels brig put on it at boot,
//! then from the session index, then from its name. The runtime's labels
//! come first because they travel with the sandbox: they answer even when the
//! index is gone or belongs to another state directory.

use std::path::PathBuf;

use crate::runtime::{Listed, adapter::label};
use crate::session::{Record, reference};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// (agent, label); `None` when nothing says which agent it belongs to.
    pub session: Option<(String, Option<String>)>,
    pub home: Option<PathBuf>,
    pub home_created: Option<bool>,
    pub project: Option<PathBuf>,
    pub network: Option<String>,
    pub isolation: Option<String>,
    /// The ports it publishes.
    pub publish: Vec<crate::ports::Publish>,
}

impl Facts {
    /// `agents` are the profile names the registry knows, for reading a ref
    /// back from a sandbox name when neither labels nor index say.
    pub fn read(listed: &Listed, record: Option<&Record>, agents: &[String]) -> Facts {
        let labels = &listed.labels;
        // An empty label value is how boot writes "none".
        let get = |key: &str| labels.get(key).map(String::as_str);
        let session = get(label::AGENT)
            .map(|agent| (agent.to_owned(), get(label::LABEL).filter(|l| !l.is_empty()).map(str::to_owned)))
            .or_else(|| record.map(|r| (r.agent.clone(), r.label.clone())))
            .or_else(|| reference::parse_sandbox_name(&listed.name, agents));
        let project = match get(label::PROJECT) {
            Some("") => None,
            Some(p) => Some(PathBuf::from(p)),
            None => record.and_then(|r| r.project.clone()),
        };
        Facts {
            session,
            home: get(label::HOME).map(PathBuf::from).or_else(|| record.map(|r| r.home.clone())),
            home_created: get(label::HOME_CREATED).map(|v| v == "true").or(record.map(|r| r.home_created_by_brig)),
            project,
            network: get(label::NETWORK)
                .map(str::to_owned)
                .or_else(|| record.and_then(|r| r.network.clone()))
                .or_else(|| get(label::NETWORK_SEEN).map(str::to_owned)),
            isolation: get(label::ISOLATION).map(str::to_owned),
            publish: get(label::PUBLISH)
                .map(crate::ports::from_label)
                .unwrap_or_else(|| record.map(|r| crate::ports::from_label(&r.publish.join(","))).unwrap_or_default()),
        }
    }

    /// What the session index recorded at the sandbox's last boot.
    pub fn from_record(record: &Record) -> Facts {
        Facts {
            session: Some((record.agent.clone(), record.label.clone())),
            home: Some(record.home.clone()),
            home_created: Some(record.home_created_by_brig),
            project: record.project.clone(),
            network: record.network.clone(),
            isolation: record.isolation.clone(),
            publish: crate::ports::from_label(&record.publish.join(",")),
        }
    }

    /// The network posture, when the labels or the record name one brig
    /// knows.
    pub fn posture(&self) -> Option<crate::settings::Network> {
        self.network.as_deref().and_then(crate::settings::Enumerated::parse)
    }

    /// `agent[@label]`, the ref every verb accepts, when one can be told.
    pub fn reference(&self) -> Option<String> {
        self.session.as_ref().map(|(agent, label)| reference::canonical_ref(agent, label.as_deref()))
    }

    pub fn agent(&self) -> Option<&str> {
        self.session.as_ref().map(|(agent, _)| agent.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::State;
    use std::collections::BTreeMap;

    fn listed(name: &str, labels: &[(&str, &str)]) -> Listed {
        Listed {
            name: name.into(),
            state: State::Running,
            labels: labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
        }
    }

    fn record() -> Record {
        Record {
            agent: "lab-agent".into(),
            label: Some("x".into()),
            home: "/state/homes/brig-lab-agent-x".into(),
            home_created_by_brig: true,
            project: Some("/p".into()),
            network: Some("shared".into()),
            image: None,
            emptied_home: false,
            recreating: false,
            runtime: None,
            isolation: None,
            egress: Vec::new(),
            publish: Vec::new(),
        }
    }

    #[test]
    fn labels_win_over_the_index() {
        let l = listed(
            "brig-lab-agent-x",
            &[
                (label::AGENT, "lab-agent"),
                (label::LABEL, "x"),
                (label::HOME, "/named-x"),
                (label::HOME_CREATED, "false"),
                (label::PROJECT, ""),
                (label::NETWORK, "offline"),
                (label::ISOLATION, "container"),
            ],
        );
        let facts = Facts::read(&l, Some(&record()), &[]);
        assert_eq!(facts.reference().as_deref(), Some("lab-agent@x"));
        assert_eq!(facts.home, Some("/named-x".into()));
        assert_eq!(facts.home_created, Some(false));
        assert_eq!(facts.project, None, "an empty project label means no project");
        assert_eq!(facts.network.as_deref(), Some("offline"));
        assert_eq!(facts.isolation.as_deref(), Some("container"));
    }

    #[test]
    fn the_index_answers_for_an_unlabelled_sandbox() {
        let facts = Facts::read(&listed("brig-lab-agent-x", &[]), Some(&record()), &[]);
        assert_eq!(facts.reference().as_deref(), Some("lab-agent@x"));
        assert_eq!(facts.home_created, Some(true));
        assert_eq!(facts.project, Some("/p".into()));
        assert_eq!(facts.network.as_deref(), Some("shared"));
    }

    #[test]
    fn the_name_answers_last() {
        let facts = Facts::read(&listed("brig-codex-a", &[]), None, &["codex".into()]);
        assert_eq!(facts.reference().as_deref(), Some("codex@a"));
        assert_eq!(Facts::read(&listed("brig-unknown", &[]), None, &["codex".into()]).reference(), None);
    }
}
