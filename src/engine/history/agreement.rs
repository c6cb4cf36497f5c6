//! Derived orders against a set of human-annotated commits (`nextedit eval-order`).
//!
//! Each annotated commit is derived (from a repository that has it, or rebuilt from
//! the annotation's snapshots), its pairs are compared with the annotation
//! ([`super::evaluate`]), and what cross-validation needs of it is kept
//! ([`super::crossval`]). A commit that cannot be derived or compared is skipped with
//! its reason; the others go on.

use std::path::Path;

use crate::core::trajectory::Trajectory;

use super::crossval::{CommitSample, repository_of};
use super::derive::{LSP_MAX_REQUESTS, LSP_TIMEOUT};
use super::editflow::{AnnotatedCommit, RebuiltLsp, derive_rebuilt_with, hunks_aligned};
use super::evaluate::{CommitEvaluation, evaluate_commit};
use super::lsp::ServerSet;
use super::lsp_workspace::KeptWorkspace;
use super::order::{AnnotatedPair, PairLabel, editflow_labels, pair_labels};
use super::{CommitSource, GitRepository, HistoryError, derive_commit};

/// Where the annotated commits' trees come from.
#[derive(Clone, Copy)]
pub enum AnnotatedTrees<'a> {
    /// A repository holding the commits (looked up by the sha of `commit_url`).
    Repository(&'a GitRepository),
    /// Rebuilt from each annotation's `commit_snapshots` into a directory under
    /// `scratch`, derived with `servers` when given (`--lsp`).
    Snapshots {
        /// Where the rebuilt repositories go (one numbered directory per commit).
        scratch: &'a Path,
        /// Language servers for the `--lsp` pass.
        servers: Option<&'a ServerSet>,
    },
}

/// A commit that could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedCommit {
    /// The commit's name (repository and sha).
    pub name: String,
    /// Why, in a sentence.
    pub reason: String,
}

/// One pair whose derived label differs from the annotation (`--explain`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Disagreement {
    /// The commit's name.
    pub commit: String,
    /// `eI-eJ`, the lower edit first.
    pub pair: String,
    /// The annotated label.
    pub annotated: &'static str,
    /// The annotator's reason, if the pair was annotated.
    pub reason: String,
    /// The derived label.
    pub derived: &'static str,
    /// `kind:detail` of every derived edge between the two edits.
    pub derived_reasons: Vec<String>,
    /// `kind:detail -> where` of every reason between the two edits that `--lsp`
    /// refuted (the server resolved the use elsewhere); absent without `--lsp`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refuted_reasons: Vec<String>,
}

/// One `--explain` line: `COMMIT eI-eJ: annotated LABEL (REASON), derived LABEL
/// [REASONS]`, then `, refuted by --lsp [REASONS]` when the server refuted any.
impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: annotated {} ({}), derived {} [{}]",
            self.commit,
            self.pair,
            self.annotated,
            self.reason,
            self.derived,
            self.derived_reasons.join(", ")
        )?;
        if !self.refuted_reasons.is_empty() {
            write!(
                f,
                ", refuted by --lsp [{}]",
                self.refuted_reasons.join(", ")
            )?;
        }
        Ok(())
    }
}

/// Everything `eval-order` reports, per commit.
#[derive(Debug, Default)]
pub struct Agreement {
    /// The evaluated commits, in annotation order.
    pub results: Vec<CommitEvaluation>,
    /// Pairs where derived and annotated labels differ (only when asked for).
    pub disagreements: Vec<Disagreement>,
    /// What cross-validation needs of each evaluated commit.
    pub samples: Vec<CommitSample>,
    /// Commits that could not be evaluated.
    pub skipped: Vec<SkippedCommit>,
}

/// How one annotated commit went, as [`evaluate_annotations`] reports it when it is
/// done with the commit.
#[derive(Debug, Clone, Copy)]
pub enum CommitOutcome<'a> {
    /// Derived and compared.
    Evaluated(&'a CommitEvaluation),
    /// Left out, with why.
    Skipped(&'a SkippedCommit),
}

impl CommitOutcome<'_> {
    /// The commit's name.
    pub fn name(&self) -> &str {
        match self {
            CommitOutcome::Evaluated(commit) => &commit.name,
            CommitOutcome::Skipped(skipped) => &skipped.name,
        }
    }

    /// How it went, in a few words (`7 edits, 19 of 21 pairs agree`, `skipped`).
    pub fn summary(&self) -> String {
        match self {
            CommitOutcome::Evaluated(commit) => format!(
                "{} edits, {} of {} pairs agree",
                commit.edits,
                commit.all_pairs.correct(),
                commit.all_pairs.total()
            ),
            CommitOutcome::Skipped(_) => "skipped".to_string(),
        }
    }
}

/// Derives and compares every commit of `commits`; `explain` also lists the pairs
/// that disagree. `on_commit` hears about each commit (evaluated or skipped) as it is
/// done (progress, the skipped list).
pub fn evaluate_annotations(
    commits: &[AnnotatedCommit],
    trees: AnnotatedTrees<'_>,
    explain: bool,
    mut on_commit: impl FnMut(CommitOutcome<'_>),
) -> Agreement {
    let mut out = Agreement::default();
    // One server per language and side for all the commits (`history::lsp_workspace`);
    // without a scratch directory for it, each commit starts its own.
    let mut kept = match trees {
        AnnotatedTrees::Snapshots {
            servers: Some(servers),
            ..
        } => KeptWorkspace::new(servers.clone(), LSP_TIMEOUT, LSP_MAX_REQUESTS).ok(),
        _ => None,
    };
    for (index, commit) in commits.iter().enumerate() {
        let name = commit.name();
        let derived = match trees {
            AnnotatedTrees::Repository(repo) => repo
                .resolve(commit.sha())
                .and_then(|sha| repo.load(&sha))
                .and_then(|record| derive_commit(&record, Some(&name)))
                .map(|t| (t, None)),
            AnnotatedTrees::Snapshots { scratch, servers } => {
                let lsp = match kept.as_mut() {
                    Some(kept) => RebuiltLsp::Kept(kept),
                    None => RebuiltLsp::PerCommit(servers),
                };
                derive_rebuilt_with(commit, &scratch.join(index.to_string()), lsp).map(
                    |(t, rebuilt)| {
                        let aligned = hunks_aligned(&t, &rebuilt.hunks);
                        (t, Some(aligned))
                    },
                )
            }
        };
        let evaluated = derived.and_then(|(t, aligned)| {
            if explain {
                out.disagreements
                    .extend(disagreements(&name, &t, &commit.partial_orders));
            }
            let evaluated = evaluate_commit(name.clone(), &t, &commit.partial_orders, aligned)?;
            out.samples.push(sample(commit, &t)?);
            Ok(evaluated)
        });
        match evaluated {
            Ok(result) => {
                on_commit(CommitOutcome::Evaluated(&result));
                out.results.push(result);
            }
            Err(error) => {
                let skipped = SkippedCommit {
                    name,
                    reason: format!("{error:#}"),
                };
                on_commit(CommitOutcome::Skipped(&skipped));
                out.skipped.push(skipped);
            }
        }
    }
    out
}

/// What cross-validation needs of one evaluated commit.
fn sample(commit: &AnnotatedCommit, trajectory: &Trajectory) -> Result<CommitSample, HistoryError> {
    Ok(CommitSample {
        repository: repository_of(&commit.commit_url),
        edits: trajectory.edits.len(),
        gold: editflow_labels(&commit.partial_orders)?,
        edges: trajectory.order.edges.clone(),
    })
}

/// The pairs of one commit where the derived order and the annotation disagree.
pub fn disagreements(
    name: &str,
    trajectory: &Trajectory,
    pairs: &[AnnotatedPair],
) -> Vec<Disagreement> {
    let Ok(gold) = editflow_labels(pairs) else {
        return Vec::new();
    };
    let predicted = pair_labels(&trajectory.order);
    let count = trajectory.edits.len();
    let mut out = Vec::new();
    for low in 0..count {
        for high in low + 1..count {
            let g = gold.get(&(low, high)).copied().unwrap_or(PairLabel::None);
            let p = predicted
                .get(&(low, high))
                .copied()
                .unwrap_or(PairLabel::None);
            if g == p {
                continue;
            }
            let reason = pairs
                .iter()
                .find(|x| {
                    let [a, b] = x.edit_hunk_pair;
                    (a.min(b), a.max(b)) == (low, high)
                })
                .map(|x| x.reason.clone())
                .unwrap_or_default();
            let ids = [format!("e{low}"), format!("e{high}")];
            let derived_reasons = trajectory
                .order
                .edges
                .iter()
                .filter(|e| ids.contains(&e.from) && ids.contains(&e.to))
                .flat_map(|e| e.reasons.iter().map(|r| format!("{}:{}", r.kind, r.detail)))
                .collect();
            out.push(Disagreement {
                commit: name.to_owned(),
                pair: format!("e{low}-e{high}"),
                annotated: g.as_str(),
                reason,
                derived: p.as_str(),
                derived_reasons,
                refuted_reasons: refuted_between(trajectory, &ids),
            });
        }
    }
    out
}

/// The reasons between two edits that `--lsp` refuted, from the dependent edit's
/// `lsp_refuted` annotation (`kind:detail -> where the server resolved the use`).
fn refuted_between(trajectory: &Trajectory, ids: &[String; 2]) -> Vec<String> {
    trajectory
        .edits
        .iter()
        .filter(|edit| ids.contains(&edit.id))
        .flat_map(|edit| {
            let other = if edit.id == ids[0] { &ids[1] } else { &ids[0] };
            (edit.annotations.lsp_refuted.iter())
                .filter(move |r| r.from == *other)
                .map(|r| format!("{}:{} -> {}", r.kind, r.detail, r.resolved))
        })
        .collect()
}
