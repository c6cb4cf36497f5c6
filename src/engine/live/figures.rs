//! The figures of `nextedit live` over one or many sessions, overall or by server,
//! kind or language, as typed values (the text and JSON printers only format them):
//! per session, then per group, counts, acceptance, ranks, latency quantiles, characters
//! accepted vs typed, and kept rates weighted by characters.

use std::collections::BTreeMap;

use super::outcome::{LiveConfig, OfferOutcome, Outcome, analyse};
use super::{Offer, server_name};
use crate::core::metrics::statistics::{mean, quantile};
use crate::core::trajectory::{EventBody, Origin, Trajectory};

/// What the figures are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupBy {
    /// One group: everything.
    #[default]
    Nothing,
    /// The language server.
    Server,
    /// The kind of offer (completion, inline completion, …).
    Kind,
    /// The file's language.
    Language,
}

/// One session's answers with their outcomes, and what the developer typed.
#[derive(Debug, Clone)]
pub struct SessionLive {
    /// The session (id or file) as named on the command line.
    pub session: String,
    /// The session's language server.
    pub server: String,
    /// Every answer's outcome.
    pub outcomes: Vec<OfferOutcome>,
    /// Characters the developer typed (changes of origin `user`), by file language.
    pub typed_by_language: BTreeMap<String, usize>,
}

/// Name of the group of files without a known language.
const UNKNOWN: &str = "-";

impl SessionLive {
    /// A session's outcomes.
    pub fn of(
        session: &str,
        trajectory: &Trajectory,
        offers: &[Offer],
        config: LiveConfig,
    ) -> SessionLive {
        let outcomes = analyse(trajectory, offers, config);
        // Text an offer gave is not typed, whatever origin its change was tagged with.
        let taken: std::collections::HashSet<u64> = outcomes
            .iter()
            .flat_map(|o| o.taken_seqs.iter().copied())
            .collect();
        let mut typed_by_language = BTreeMap::new();
        for event in &trajectory.events {
            if let EventBody::Change(c) = &event.body
                && c.origin == Origin::User
                && !taken.contains(&event.seq)
            {
                let language = trajectory
                    .files
                    .iter()
                    .find(|f| f.path == c.file)
                    .and_then(|f| f.language.clone())
                    .unwrap_or_else(|| UNKNOWN.to_string());
                *typed_by_language.entry(language).or_insert(0) += c.after.chars().count();
            }
        }
        SessionLive {
            session: session.to_string(),
            server: server_name(&trajectory.session.server_command),
            outcomes,
            typed_by_language,
        }
    }
}

/// The figures of one group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveFigures {
    /// The group's name (`all` when not grouped).
    pub group: String,
    /// Sessions with an answer in the group.
    pub sessions: usize,
    /// Answers (lists) offered.
    pub offers: usize,
    /// Items in them.
    pub items: usize,
    /// Answers taken whole.
    pub accepted: usize,
    /// Answers taken in part.
    pub partial: usize,
    /// Answers dismissed.
    pub dismissed: usize,
    /// Answers superseded by a new request.
    pub superseded: usize,
    /// Taken (whole or in part) over the answers that were not superseded.
    pub acceptance_rate: Option<f64>,
    /// 0-based rank of each taken item → how many.
    pub ranks: BTreeMap<usize, usize>,
    /// Mean 0-based rank of the taken items.
    pub rank_mean: Option<f64>,
    /// Request to answer, median, milliseconds.
    pub latency_p50_ms: Option<f64>,
    /// Request to answer, 95th percentile, milliseconds.
    pub latency_p95_ms: Option<f64>,
    /// Characters taken from offers.
    pub chars_accepted: usize,
    /// Characters the developer typed.
    pub chars_typed: usize,
    /// Share of the taken characters still present 30 s later (weighted by characters).
    pub kept_30s: Option<f64>,
    /// … 5 min later.
    pub kept_5min: Option<f64>,
    /// … at the session's end.
    pub kept_end: Option<f64>,
    /// Zed's kept rate (token LCS of the taken text with what is at its place at the
    /// end), the mean over the taken answers.
    pub zed_kept_rate: Option<f64>,
    /// Taken text later deleted or undone entirely.
    pub reversals: usize,
    /// Later changes inside taken text.
    pub edits_inside: usize,
    /// Dismissed answers whose text the developer typed there anyway.
    pub right_but_not_taken: usize,
}

/// The figures of some sessions: one group per key of `by`, in name order (one
/// `all` group when not grouped).
pub fn figures(sessions: &[SessionLive], by: GroupBy) -> Vec<LiveFigures> {
    let key = |s: &SessionLive, o: &OfferOutcome| match by {
        GroupBy::Nothing => "all".to_string(),
        GroupBy::Server => s.server.clone(),
        GroupBy::Kind => o.first().kind.as_str().to_string(),
        GroupBy::Language => o.language.clone().unwrap_or_else(|| UNKNOWN.to_string()),
    };
    let mut groups: BTreeMap<String, (Vec<&OfferOutcome>, Vec<usize>)> = BTreeMap::new();
    for (i, s) in sessions.iter().enumerate() {
        for o in &s.outcomes {
            let group = groups.entry(key(s, o)).or_default();
            group.0.push(o);
            if !group.1.contains(&i) {
                group.1.push(i);
            }
        }
    }
    if groups.is_empty() && by == GroupBy::Nothing {
        groups.insert(
            "all".to_string(),
            (Vec::new(), (0..sessions.len()).collect()),
        );
    }
    groups
        .into_iter()
        .map(|(group, (outcomes, members))| {
            let typed = members
                .iter()
                .map(|&i| match by {
                    GroupBy::Language => sessions[i]
                        .typed_by_language
                        .get(&group)
                        .copied()
                        .unwrap_or(0),
                    _ => sessions[i].typed_by_language.values().sum(),
                })
                .sum();
            group_figures(group, members.len(), &outcomes, typed)
        })
        .collect()
}

fn group_figures(
    group: String,
    sessions: usize,
    outcomes: &[&OfferOutcome],
    chars_typed: usize,
) -> LiveFigures {
    let count = |key: &str| outcomes.iter().filter(|o| o.outcome.key() == key).count();
    let (accepted, partial, dismissed, superseded) = (
        count("accepted"),
        count("partial"),
        count("dismissed"),
        count("superseded"),
    );
    let mut ranks = BTreeMap::new();
    for rank in outcomes.iter().filter_map(|o| o.outcome.taken_rank()) {
        *ranks.entry(rank).or_insert(0) += 1;
    }
    let taken_ranks: Vec<f64> = outcomes
        .iter()
        .filter_map(|o| o.outcome.taken_rank())
        .map(|r| r as f64)
        .collect();
    let latencies: Vec<f64> = outcomes.iter().map(|o| o.first().latency_ms).collect();
    let after: Vec<_> = outcomes
        .iter()
        .filter_map(|o| o.aftermath.as_ref())
        .collect();
    let chars_accepted: usize = after.iter().map(|a| a.chars).sum();
    let weighted = |rate: fn(&super::Aftermath) -> f64| {
        (chars_accepted > 0).then(|| {
            after.iter().map(|a| rate(a) * a.chars as f64).sum::<f64>() / chars_accepted as f64
        })
    };
    let decided = outcomes.len() - superseded;
    LiveFigures {
        group,
        sessions,
        offers: outcomes.len(),
        items: outcomes.iter().map(|o| o.items.len()).sum(),
        accepted,
        partial,
        dismissed,
        superseded,
        acceptance_rate: (decided > 0).then(|| (accepted + partial) as f64 / decided as f64),
        ranks,
        rank_mean: mean(&taken_ranks),
        latency_p50_ms: quantile(&latencies, 0.5),
        latency_p95_ms: quantile(&latencies, 0.95),
        chars_accepted,
        chars_typed,
        kept_30s: weighted(|a| a.kept_30s),
        kept_5min: weighted(|a| a.kept_5min),
        kept_end: weighted(|a| a.kept_end),
        zed_kept_rate: mean(after.iter().map(|a| a.zed_kept_rate)),
        reversals: after
            .iter()
            .filter(|a| a.reversed_after_ms.is_some())
            .count(),
        edits_inside: after.iter().map(|a| a.edits_inside).sum(),
        right_but_not_taken: outcomes
            .iter()
            .filter(|o| o.right_but_not_taken.is_some())
            .count(),
    }
}

/// Whether an outcome took text (whole or in part).
pub fn is_taken(outcome: &Outcome) -> bool {
    outcome.taken_rank().is_some()
}
