//! A run's scoring definition: what its figures mean. The suggester spec, the match
//! rule with its threshold, the order, what was revealed, the origins applied
//! silently, the sandbox, and the set of trajectories (a digest of their stored
//! texts). Two runs' figures compare only where these agree (the suggester aside:
//! comparing suggesters is what a report is for); `report` says where they do not.

use sha2::{Digest, Sha256};

use super::plan::{MatchKind, Order, Reveal};
use super::{RunError, RunRead, RunSettings};
use crate::store::RunTrajectory;

/// How a run was scored, and over which trajectories.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The suggester spec.
    pub suggester: String,
    /// The match rule.
    pub match_rule: MatchKind,
    /// The ES threshold of `--match es` (`None` for the other rules, which have none to set).
    pub es_threshold: Option<f64>,
    /// Which edit came next.
    pub order: Order,
    /// What the suggester saw beyond the state.
    pub reveal: Vec<Reveal>,
    /// Origins whose edits were applied silently (their keys).
    pub exclude_origin: Vec<String>,
    /// How the suggester was isolated (`bwrap`, `unsandboxed`, `in-process`).
    pub sandbox: String,
    /// How many trajectories the run has.
    pub trajectories: usize,
    /// The digest of the set of their texts (12 hex digits; [`trajectory_digest`]).
    pub trajectory_set: String,
}

impl Definition {
    /// The definition of run `run`, from its stored settings and trajectories.
    pub fn of(store: &dyn RunRead, run: i64) -> Result<Definition, RunError> {
        let settings = RunSettings::of(store, run)?;
        Ok(Definition::from_settings(
            &settings,
            &store.run_trajectories(run)?,
        ))
    }

    /// The definition of a run with these settings and trajectories.
    pub fn from_settings(settings: &RunSettings, trajectories: &[RunTrajectory]) -> Definition {
        let mut digests: Vec<String> = trajectories.iter().map(digest_of).collect();
        digests.sort();
        let set = Sha256::digest(digests.join("\n").as_bytes());
        Definition {
            suggester: settings.suggester.clone(),
            match_rule: settings.match_rule,
            es_threshold: (settings.match_rule == MatchKind::Es).then_some(settings.es_threshold),
            order: settings.order,
            reveal: settings.reveal.clone(),
            exclude_origin: (settings.exclude_origin.iter())
                .map(|o| o.as_str().to_string())
                .collect(),
            sandbox: settings.sandbox.key().to_string(),
            trajectories: trajectories.len(),
            trajectory_set: hex(&set)[..12].to_string(),
        }
    }

    /// The match rule with its threshold: `bleu>50`, `historian`, `es>=0.5`, `exact`.
    pub fn match_label(&self) -> String {
        match (self.match_rule, self.es_threshold) {
            (MatchKind::Bleu, _) => "bleu>50".into(),
            (MatchKind::Historian, _) => "historian".into(),
            (MatchKind::Es, threshold) => format!("es>={}", threshold.unwrap_or(0.5)),
            (MatchKind::Exact, _) => "exact".into(),
        }
    }

    /// What was revealed, comma-separated, or `-`.
    pub fn reveal_label(&self) -> String {
        list_label(self.reveal.iter().map(|r| match r {
            Reveal::Message => "message",
            Reveal::Files => "files",
            Reveal::Commit => "commit",
        }))
    }

    /// The excluded origins, comma-separated, or `-`.
    pub fn exclude_label(&self) -> String {
        list_label(self.exclude_origin.iter().map(String::as_str))
    }

    /// The order's name.
    pub fn order_label(&self) -> &'static str {
        match self.order {
            Order::Fixed => "fixed",
            Order::Adaptive => "adaptive",
        }
    }

    /// The trajectory set: `5 · 3f2a9c1b0d4e`.
    pub fn set_label(&self) -> String {
        format!("{} · {}", self.trajectories, self.trajectory_set)
    }

    /// The scoring fields (everything but the suggester) as (name, value) pairs, in
    /// report order.
    pub fn scoring(&self) -> Vec<(&'static str, String)> {
        vec![
            ("match", self.match_label()),
            ("order", self.order_label().to_string()),
            ("reveal", self.reveal_label()),
            ("exclude-origin", self.exclude_label()),
            ("sandbox", self.sandbox.clone()),
            ("trajectories", self.set_label()),
        ]
    }
}

/// Where some runs' definitions differ, one line per field: `match: run 3 bleu>50,
/// run 4 exact`; empty when they agree. Their trajectory sets are left to
/// [`super::common`], which names what one run has and another lacks.
pub fn differences(runs: &[(i64, &Definition)]) -> Vec<String> {
    let Some((_, first)) = runs.first() else {
        return Vec::new();
    };
    let fields: Vec<Vec<(&'static str, String)>> = runs.iter().map(|(_, d)| d.scoring()).collect();
    let mut lines = Vec::new();
    for (i, (name, _)) in first.scoring().iter().enumerate() {
        if *name == "trajectories" {
            continue;
        }
        let values: Vec<&String> = fields.iter().map(|f| &f[i].1).collect();
        // A built-in runs in-process, a process in bubblewrap: both see only the
        // replay's state. Only a run that could read more scores differently.
        let compared = |v: &String| match *name {
            "sandbox" => (v.as_str() == "unsandboxed").to_string(),
            _ => v.clone(),
        };
        if values.iter().all(|v| compared(v) == compared(values[0])) {
            continue;
        }
        let each: Vec<String> = (runs.iter().zip(&values))
            .map(|((run, _), value)| format!("run {run} {value}"))
            .collect();
        lines.push(format!("{name}: {}", each.join(", ")));
    }
    lines
}

/// A trajectory's identity across runs: SHA-256 (hex) of its stored JSON without
/// `session.workspace` and `session.commit.project` (where the repository happened to
/// be checked out, and its directory's name), or of its key when the run stored no text.
pub fn trajectory_digest(key: &str, text: Option<&str>) -> String {
    let canonical = text
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .map(|mut value| {
            if let Some(session) = value.get_mut("session").and_then(|s| s.as_object_mut()) {
                session.remove("workspace");
                if let Some(commit) = session.get_mut("commit").and_then(|c| c.as_object_mut()) {
                    commit.remove("project");
                }
            }
            value.to_string()
        })
        .unwrap_or_else(|| format!("unreadable:{key}"));
    hex(&Sha256::digest(canonical.as_bytes()))
}

fn digest_of(t: &RunTrajectory) -> String {
    trajectory_digest(&t.key, t.text.as_deref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn list_label<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    if items.is_empty() {
        "-".into()
    } else {
        items.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_does_not_change_a_trajectory_digest_and_the_text_does() {
        let at = |workspace: &str, text: &str| {
            format!(
                r#"{{"session": {{"id": "s", "workspace": "{workspace}"}}, "edits": ["{text}"]}}"#
            )
        };
        let a = trajectory_digest("k", Some(&at("/tmp/a", "x")));
        assert_eq!(a, trajectory_digest("other", Some(&at("/srv/b", "x"))));
        assert_ne!(a, trajectory_digest("k", Some(&at("/tmp/a", "y"))));
        assert_ne!(trajectory_digest("k", None), trajectory_digest("j", None));
    }
}
