//! The replay loop: initial edit, then at every step take the allowed set from the
//! partial order, ask for ranked next edits, match them one to one, classify their flow
//! (keeping, jumping, reverting, breaking), fall back to content generation when nothing
//! kept the flow, apply the gold edit, repeat.
//!
//! Each step goes to the [`ReplayObserver`] and is not kept, and a step builds the
//! history and files of its request only for a suggester that reads them
//! (`Suggester::needs_history`), so memory does not grow with the trajectory.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::answers::{Alternatives, Answer, closest};
use super::judge_case::judge_case;
use super::matching::{Located, MatchRule, is_unchanged, location_score, match_among_alternatives};
use super::state::{ReplayState, StateError, split_lines};
use super::worktree::Workspace;
use super::yardsticks::StepYardsticks;
use crate::core::metrics::bleu::historian_bleu;
use crate::core::metrics::excision::{EsGranularity, ExcisionConfig, excision_score_text};
use crate::core::metrics::flow::{FlowClass, FlowStep, RankedPrediction};
use crate::core::syntax::Language;
use crate::core::syntax::structure::{FileStructure, analyze};
use crate::core::trajectory::{EditIndex, OrderKind, Origin, RelPath, Trajectory};
use crate::engine::judge::JudgeCase;
use crate::engine::suggest::protocol::{
    AppliedEdit, FileContent, GenerateParams, InitializeParams, PROTOCOL_VERSION, Revealed,
    SuggestParams, SuggestedEdit, SuggesterRead,
};
use crate::engine::suggest::{Call, CallFailure, ReadSource, StepRead, SuggestError, Suggester};

/// Which edit is applied after each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderMode {
    /// The trajectory's natural order, whatever the suggester says (paired comparisons).
    Fixed,
    /// The best-ranked prediction that kept the flow, like Historian; else the
    /// first allowed edit in natural order.
    Adaptive,
}

/// Settings of one replay (no defaults: each caller decides).
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Fixed or adaptive order.
    pub order: OrderMode,
    /// How predictions are matched to gold edits.
    pub rule: MatchRule,
    /// Breaks ties between equally good initial edits.
    pub seed: u64,
    /// What the suggester may know beyond the current state.
    pub revealed: Revealed,
    /// Language sent to the suggester.
    pub language: Option<String>,
    /// Project name sent to the suggester.
    pub project: Option<String>,
    /// Edits made by these origins (formatting, code actions…) are not asked for: they
    /// are applied silently once every edit before them in natural order is.
    pub exclude_origins: Vec<Origin>,
    /// Build each content step's [`StepRecord::judge_case`] (a run with `--judge`).
    pub judge_cases: bool,
}

/// One prediction as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictionRecord {
    /// What the suggester proposed.
    pub edit: SuggestedEdit,
    /// Rank (0 = best).
    pub rank: usize,
    /// Gold edit it matched.
    pub matched: Option<EditIndex>,
    /// Flow pattern.
    pub class: FlowClass,
}

/// The content score of a step: of the best kept match, or of a generated edit.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentScore {
    /// Gold edit scored against.
    pub gold: EditIndex,
    /// The text that was scored.
    pub text: String,
    /// Historian BLEU-4 (0–100).
    pub bleu: f64,
    /// ES-Line (0–1).
    pub es: f64,
    /// Whether the text came from `generate` (else from a kept prediction).
    pub generated: bool,
    /// The right answer scored against: 0 the gold edit itself, `k` its `k`-th
    /// alternative (the closest one, `replay::answers`).
    pub answer: usize,
}

/// Everything about one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// Step number (1-based).
    pub step: usize,
    /// Gold edits allowed next before this step, in natural order.
    pub allowed: Vec<EditIndex>,
    /// How many gold edits (to ask for) were not applied before this step.
    pub remaining: usize,
    /// The ranked predictions.
    pub predictions: Vec<PredictionRecord>,
    /// Why `suggest` failed, if it did.
    pub suggest_error: Option<CallFailure>,
    /// Wall time of `suggest`.
    pub suggest_latency: Duration,
    /// Content score, if any.
    pub content: Option<ContentScore>,
    /// Why `generate` failed, if it did.
    pub generate_error: Option<CallFailure>,
    /// Wall time of `generate`, if called.
    pub generate_latency: Option<Duration>,
    /// Gold edit applied at the end of the step.
    pub applied: EditIndex,
    /// The step in the form flow aggregation takes.
    pub flow: FlowStep,
    /// What the suggester reported reading, in call order (current coordinates).
    pub reads: Vec<StepRead>,
    /// Reported reads left out, each with why (a path outside the worktree, an
    /// inverted range, lines past the end of a trajectory file).
    pub dropped_reads: Vec<String>,
    /// delta-chrF, NEP matches and location hit of the step.
    pub yardsticks: StepYardsticks,
    /// What a judge model is shown about the step's content (`None` without content or
    /// unless [`ReplayConfig::judge_cases`]).
    pub judge_case: Option<JudgeCase>,
}

/// A finished replay. Its steps went to the [`ReplayObserver`] one by one, and are not
/// kept here: a long trajectory's steps would hold memory in proportion to its length
/// ([`KeepSteps`] keeps them, for short replays).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOutcome {
    /// The initial edit.
    pub initial: EditIndex,
    /// How many steps this replay made (a resumed one: the steps after the resumed ones).
    pub steps: usize,
    /// Edits in the order they were applied.
    pub order: Vec<EditIndex>,
    /// Why `initialize` failed, if it did (the run still goes on).
    pub initialize_error: Option<CallFailure>,
}

/// Why an observer could not keep what it was told (a database write, a read-only
/// cache miss): the observer's own error, which stops the replay.
pub type ObserverError = Box<dyn std::error::Error + Send + Sync>;

/// Told what happens during a replay (to store it as it happens).
pub trait ReplayObserver {
    /// The initial edit was applied (not called when resuming); `state` is after it.
    fn started(&mut self, initial: EditIndex, state: &ReplayState) -> Result<(), ObserverError>;
    /// A step finished; `state` is after its gold edit. An error stops the replay.
    fn step(&mut self, record: &StepRecord, state: &ReplayState) -> Result<(), ObserverError>;
}

/// An observer that keeps nothing.
#[derive(Debug, Default)]
pub struct IgnoreProgress;

impl ReplayObserver for IgnoreProgress {
    fn started(&mut self, _: EditIndex, _: &ReplayState) -> Result<(), ObserverError> {
        Ok(())
    }

    fn step(&mut self, _: &StepRecord, _: &ReplayState) -> Result<(), ObserverError> {
        Ok(())
    }
}

/// An observer that keeps every step, in order (tests, benchmarks, short replays).
#[derive(Debug, Default)]
pub struct KeepSteps {
    /// The steps so far.
    pub steps: Vec<StepRecord>,
}

impl ReplayObserver for KeepSteps {
    fn started(&mut self, _: EditIndex, _: &ReplayState) -> Result<(), ObserverError> {
        Ok(())
    }

    fn step(&mut self, record: &StepRecord, _: &ReplayState) -> Result<(), ObserverError> {
        self.steps.push(record.clone());
        Ok(())
    }
}

/// How a replay starts and who hears about its progress.
pub struct ReplayHooks<'a> {
    /// Edits already applied by an interrupted earlier replay (initial first); empty to start fresh.
    pub resume: &'a [EditIndex],
    /// Told about the initial edit and every finished step.
    pub observer: &'a mut dyn ReplayObserver,
}

/// Why a replay could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trajectory's edits do not fit its files.
    #[error(transparent)]
    State(#[from] StateError),
    /// No remaining edit can be applied (the natural order contradicts what edits rewrite).
    #[error(
        "trajectory {0}: no remaining edit can be applied; its order contradicts which edits rewrite which"
    )]
    Stuck(String),
    /// The trajectory has no edits.
    #[error("trajectory {0} has no edits to replay")]
    Empty(String),
    /// Writing the workspace failed.
    #[error("cannot write the replay workspace: {0}")]
    Workspace(#[source] std::io::Error),
    /// The step hook failed (e.g. the database could not be written).
    #[error("cannot record step {step}: {message}")]
    Hook {
        /// Step number.
        step: usize,
        /// What went wrong (said in the message, not a further cause).
        message: ObserverError,
    },
    /// The resume prefix names edits that do not exist or repeats one.
    #[error("cannot resume: the recorded steps do not fit this trajectory")]
    BadResume,
}

/// The partial order as adjacency over edit indices.
struct Graph {
    successors: Vec<BTreeSet<usize>>,
    in_degree: Vec<usize>,
    natural: Vec<usize>,
    /// `natural` without the background edits.
    asked_natural: Vec<usize>,
    /// Where in `asked_natural` the first edit not applied may be: every edit before it
    /// is applied (edits never come undone, and in fixed order they go in this order).
    first_unapplied: Cell<usize>,
    /// Edits applied silently, never asked for (excluded origins).
    background: Vec<bool>,
    /// How many edits are asked for (not background).
    asked_for: usize,
    /// Whether any edge exists (else every open edit is allowed, at every step).
    has_edges: bool,
}

impl Graph {
    fn new(trajectory: &Trajectory, exclude_origins: &[Origin]) -> Graph {
        let n = trajectory.edits.len();
        // A long trajectory names every edit in its natural order and edges.
        let ids = trajectory.edit_indices();
        let index = |id: &str| ids.get(id).map(|i| i.0);
        let mut successors = vec![BTreeSet::new(); n];
        for edge in &trajectory.order.edges {
            let (Some(a), Some(b)) = (index(&edge.from), index(&edge.to)) else {
                continue;
            };
            successors[a].insert(b);
            if edge.kind == OrderKind::Bi {
                successors[b].insert(a);
            }
        }
        let mut in_degree = vec![0; n];
        for succ in &successors {
            for &b in succ {
                in_degree[b] += 1;
            }
        }
        let mut natural: Vec<usize> = trajectory
            .order
            .natural
            .iter()
            .filter_map(|id| index(id))
            .collect();
        let mut listed = vec![false; n];
        for &i in &natural {
            listed[i] = true;
        }
        natural.extend((0..n).filter(|&i| !listed[i]));
        let background: Vec<bool> = trajectory
            .edits
            .iter()
            .map(|e| exclude_origins.contains(&e.origin) || trajectory.gold.applied.contains(&e.id))
            .collect();
        Graph {
            asked_natural: natural
                .iter()
                .copied()
                .filter(|&e| !background[e])
                .collect(),
            first_unapplied: Cell::new(0),
            asked_for: background.iter().filter(|&&b| !b).count(),
            has_edges: successors.iter().any(|s| !s.is_empty()),
            successors,
            in_degree,
            natural,
            background,
        }
    }

    /// Whether edit `e` is asked for and can be applied now.
    fn is_open(&self, state: &ReplayState, e: usize) -> bool {
        !self.background[e] && !state.is_applied(e) && state.is_ready(e)
    }

    /// Edits the suggester is asked for that can be applied now, in natural order.
    fn open(&self, state: &ReplayState) -> Vec<usize> {
        // Every step lists them all (without edges, all are allowed): one tight pass.
        let applied = state.applied();
        let sequential = state.is_sequential();
        let mut from = self.first_unapplied.get();
        while from < self.asked_natural.len() && applied[self.asked_natural[from]] {
            from += 1;
        }
        self.first_unapplied.set(from);
        let mut open = Vec::with_capacity(self.asked_natural.len() - from);
        for &e in &self.asked_natural[from..] {
            if !applied[e] && (!sequential || state.is_ready(e)) {
                open.push(e);
            }
        }
        open
    }

    /// Edits still to ask for (not applied, not background).
    fn remaining(&self, state: &ReplayState) -> Vec<usize> {
        state
            .remaining()
            .into_iter()
            .filter(|&e| !self.background[e])
            .collect()
    }

    /// How many edits asked for were applied.
    fn asked(&self, state: &ReplayState) -> usize {
        state
            .applied_order()
            .iter()
            .filter(|&&e| !self.background[e])
            .count()
    }

    /// Applies an edit a replay applied (initial or a step's), then the background
    /// edits that became due, exactly as the replay did.
    fn apply_stored(&self, state: &mut ReplayState, idx: usize) -> Result<(), ReplayError> {
        if idx >= state.edits().len() || state.is_applied(idx) || !state.is_ready(idx) {
            return Err(ReplayError::BadResume);
        }
        state.apply(idx);
        self.settle(state);
        Ok(())
    }

    /// Applies every background edit whose predecessors in natural order are all applied,
    /// and more in natural order while the edits left to ask for all wait on them.
    fn settle(&self, state: &mut ReplayState) {
        // Only background edits are ever applied here (and this runs after every step).
        if self.asked_for == self.background.len() {
            return;
        }
        let mut all_before_applied = true;
        for &e in &self.natural {
            if !state.is_applied(e) {
                if self.background[e] && all_before_applied && state.is_ready(e) {
                    state.apply(e);
                } else {
                    all_before_applied = false;
                }
            }
        }
        // (Counted, not listed: this runs after every step.)
        while self.asked(state) < self.asked_for
            && !self.natural.iter().any(|&e| self.is_open(state, e))
        {
            let Some(&e) = self
                .natural
                .iter()
                .find(|&&e| self.background[e] && !state.is_applied(e) && state.is_ready(e))
            else {
                break;
            };
            state.apply(e);
        }
    }
}

/// The successors of the applied edits, marked as edits are applied (they never
/// come undone), so a step costs its new edges, not every edge applied so far.
struct Follows {
    marked: Vec<bool>,
    /// How many edits of the applied order are marked.
    seen: usize,
}

impl Follows {
    fn new(n: usize) -> Follows {
        Follows {
            marked: vec![false; n],
            seen: 0,
        }
    }

    /// The `open` edits that are one-hop successors of applied edits; all of them if none.
    fn allowed(&mut self, graph: &Graph, state: &ReplayState, open: Vec<usize>) -> Vec<usize> {
        if !graph.has_edges {
            return open;
        }
        for &a in &state.applied_order()[self.seen..] {
            for &b in &graph.successors[a] {
                self.marked[b] = true;
            }
        }
        self.seen = state.applied_order().len();
        let allowed: Vec<usize> = open.iter().copied().filter(|&e| self.marked[e]).collect();
        if allowed.is_empty() { open } else { allowed }
    }
}

/// Re-applies a stored replay: `order` is its initial edit, then the edit of each step;
/// the edits of `exclude_origins` are applied silently in between, as the replay did.
/// `each(k, state)` sees the state after the `k`-th stored edit (the state step `k + 1`
/// was asked in). Returns the state after the last one.
pub fn reapply(
    trajectory: &Trajectory,
    exclude_origins: &[Origin],
    order: &[EditIndex],
    mut each: impl FnMut(usize, &ReplayState),
) -> Result<ReplayState, ReplayError> {
    let mut state = ReplayState::new(trajectory)?;
    let graph = Graph::new(trajectory, exclude_origins);
    graph.settle(&mut state);
    for (k, &idx) in order.iter().enumerate() {
        graph.apply_stored(&mut state, idx.0)?;
        each(k, &state);
    }
    Ok(state)
}

/// Each edit's first and last event time (ms; 0 for edits without events).
fn edit_times(trajectory: &Trajectory) -> Vec<(f64, f64)> {
    let t_of: std::collections::HashMap<u64, f64> =
        trajectory.events.iter().map(|e| (e.seq, e.t_ms)).collect();
    trajectory
        .edits
        .iter()
        .map(|edit| {
            let times = edit.events.iter().filter_map(|s| t_of.get(s).copied());
            let first = times.clone().fold(f64::INFINITY, f64::min);
            let last = times.fold(0.0, f64::max);
            (if first.is_finite() { first } else { 0.0 }, last)
        })
        .collect()
}

/// A small deterministic generator (SplitMix64) so tie-breaks depend only on the seed.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Replays `trajectory` through `suggester` (initialized for it here; shutting it
/// down is the caller's, who may reuse it for further trajectories). A suggester that
/// accepts a [`Suggester::gold_feed`] is offered the gold answers before each call.
pub fn replay(
    trajectory: &Trajectory,
    suggester: &mut dyn Suggester,
    workspace: &mut dyn Workspace,
    config: &ReplayConfig,
    hooks: ReplayHooks<'_>,
) -> Result<ReplayOutcome, ReplayError> {
    if trajectory.edits.is_empty() {
        return Err(ReplayError::Empty(trajectory.session.id.clone()));
    }
    let mut state = ReplayState::new(trajectory)?;
    let graph = Graph::new(trajectory, &config.exclude_origins);
    graph.settle(&mut state);
    let open = graph.open(&state);
    if open.is_empty() {
        return Err(ReplayError::Empty(trajectory.session.id.clone()));
    }
    let initial = initial_edit(trajectory, &graph, &open, config);
    let initial = hooks.resume.first().map_or(initial, |i| i.0);
    for idx in hooks
        .resume
        .iter()
        .map(|i| i.0)
        .chain(hooks.resume.is_empty().then_some(initial))
    {
        graph.apply_stored(&mut state, idx)?;
    }
    workspace.sync(&state).map_err(ReplayError::Workspace)?;
    if hooks.resume.is_empty() {
        hooks
            .observer
            .started(EditIndex(initial), &state)
            .map_err(|message| ReplayError::Hook { step: 0, message })?;
    }
    let root = workspace.root();
    let initialize_error = suggester
        .initialize(&InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            worktree: root.clone(),
            language: config.language.clone(),
            project: config.project.clone(),
            trajectory: trajectory.session.id.clone(),
            revealed: config.revealed.clone(),
        })
        .err()
        .map(|e| CallFailure::from(&e));
    // `recorded:SERVER` alone gets the session's offers, and each step's window.
    if let Some(feed) = suggester.offers_feed() {
        feed.session(&trajectory.offers);
    }
    let mut stepper = Stepper {
        session: &trajectory.session.id,
        graph: &graph,
        config,
        root,
        edit_times: edit_times(trajectory),
        history: suggester.needs_history(),
        follows: Follows::new(trajectory.edits.len()),
        alternatives: Alternatives::new(trajectory),
    };
    let mut asked = graph.asked(&state);
    let mut steps = 0;
    while asked < graph.asked_for {
        // Step n applies the (n+1)-th edit asked for; resumed replays continue the numbering.
        let step = asked;
        let record = stepper.step(step, &mut state, suggester, workspace)?;
        hooks
            .observer
            .step(&record, &state)
            .map_err(|message| ReplayError::Hook { step, message })?;
        // `next` is asked for; settling applies background edits only.
        asked += 1;
        steps += 1;
    }
    // No shutdown here: the caller may reuse the suggester for the next trajectory.
    Ok(ReplayOutcome {
        initial: EditIndex(initial),
        order: state
            .applied_order()
            .iter()
            .copied()
            .map(EditIndex)
            .collect(),
        steps,
        initialize_error,
    })
}

/// The edit a replay starts with, among the `open` ones: the first in natural order
/// (fixed), else the trajectory's own initial candidates if it names them, else those
/// of minimal in-degree, the seed breaking ties.
fn initial_edit(
    trajectory: &Trajectory,
    graph: &Graph,
    open: &[usize],
    config: &ReplayConfig,
) -> usize {
    match config.order {
        OrderMode::Fixed => open[0],
        OrderMode::Adaptive => {
            let named: Vec<usize> = trajectory
                .order
                .initial
                .iter()
                .filter_map(|id| trajectory.edit_index(id).map(|i| i.0))
                .collect();
            let named: Vec<usize> = named.into_iter().filter(|e| open.contains(e)).collect();
            let min = open
                .iter()
                .map(|&e| graph.in_degree[e])
                .min()
                .expect("non-empty");
            let candidates: Vec<usize> = if named.is_empty() {
                open.iter()
                    .copied()
                    .filter(|&e| graph.in_degree[e] == min)
                    .collect()
            } else {
                named
            };
            candidates[(splitmix(config.seed) % candidates.len() as u64) as usize]
        }
    }
}

/// What every step of one replay shares: the trajectory's order, the settings, the
/// worktree the suggester is told about and the edits' times.
///
/// Per step, only what the step needs: counts instead of lists, the history and files
/// only for a suggester that reads them, the remaining edits only when there are
/// predictions to match. Nothing accumulates: the observer has each step.
struct Stepper<'a> {
    session: &'a str,
    graph: &'a Graph,
    config: &'a ReplayConfig,
    root: String,
    /// Each edit's first and last event time, for `recorded:SERVER`'s windows.
    edit_times: Vec<(f64, f64)>,
    /// The suggester reads the applied edits and the files.
    history: bool,
    follows: Follows,
    /// The gold edits' other right answers.
    alternatives: Alternatives,
}

/// What a step's `suggest` call came to.
struct Suggested {
    predictions: Vec<PredictionRecord>,
    reads: Vec<StepRead>,
    error: Option<CallFailure>,
    latency: Duration,
}

/// What a step's `generate` call came to.
struct Generated {
    content: Option<ContentScore>,
    reads: Vec<StepRead>,
    error: Option<CallFailure>,
    latency: Duration,
}

impl Stepper<'_> {
    /// Step `step`: ask, match, fall back to generation when nothing kept the flow,
    /// apply the next edit.
    fn step(
        &mut self,
        step: usize,
        state: &mut ReplayState,
        suggester: &mut dyn Suggester,
        workspace: &mut dyn Workspace,
    ) -> Result<StepRecord, ReplayError> {
        let graph = self.graph;
        let remaining = graph.asked_for - step;
        let open = graph.open(state);
        let Some(&fixed_next) = open.first() else {
            return Err(ReplayError::Stuck(self.session.to_string()));
        };
        let allowed = self.follows.allowed(graph, state, open);
        let prior_edits = if self.history {
            applied_edits(state)
        } else {
            Vec::new()
        };
        let files = if self.history {
            step_files(state, &prior_edits)
        } else {
            Vec::new()
        };
        self.feed(suggester, state, &allowed);
        let suggested = self.suggest(
            step,
            state,
            suggester,
            &*workspace,
            &prior_edits,
            &files,
            &allowed,
        );
        let mut reads = suggested.reads;
        let predictions = suggested.predictions;
        let flow = FlowStep {
            predictions: predictions
                .iter()
                .map(|p| RankedPrediction {
                    rank: p.rank,
                    matched_gold: p.matched.map(|g| g.0),
                    class: p.class,
                })
                .collect(),
            allowed_gold: allowed.len(),
        };
        let kept = predictions
            .iter()
            .filter(|p| p.class == FlowClass::Keeping)
            .min_by_key(|p| p.rank);
        let mut content = kept.map(|p| {
            let gold = p.matched.expect("kept predictions matched");
            self.score_content(state, gold.0, &p.edit.text, false)
        });
        let next = match (self.config.order, kept) {
            (OrderMode::Adaptive, Some(p)) => p.matched.expect("kept predictions matched").0,
            (OrderMode::Adaptive, None) => allowed[0],
            (OrderMode::Fixed, _) => fixed_next,
        };
        let (mut generate_error, mut generate_latency) = (None, None);
        if kept.is_none() {
            let generated = self.generate(step, state, suggester, next, prior_edits, files);
            reads.extend(generated.reads);
            content = generated.content.or(content);
            generate_error = generated.error;
            generate_latency = Some(generated.latency);
        }
        let (reads, dropped_reads) = checked_reads(state, reads);
        let yardsticks = self.yardsticks(state, &predictions, &allowed, content.as_ref());
        let judge_case = content
            .as_ref()
            .filter(|_| self.config.judge_cases)
            .and_then(|c| judge_case(state, c.gold.0, &c.text, &applied_edits(state)));
        state.apply(next);
        graph.settle(state);
        workspace.sync(state).map_err(ReplayError::Workspace)?;
        Ok(StepRecord {
            step,
            allowed: allowed.into_iter().map(EditIndex).collect(),
            remaining,
            predictions,
            suggest_error: suggested.error,
            suggest_latency: suggested.latency,
            content,
            generate_error,
            generate_latency,
            applied: EditIndex(next),
            flow,
            reads,
            dropped_reads,
            yardsticks,
            judge_case,
        })
    }

    /// What the step offers a suggester that takes feeds: `recorded:SERVER` the time
    /// window between the last applied edit and the first remaining one, the test-only
    /// fed oracle the gold answers.
    fn feed(&self, suggester: &mut dyn Suggester, state: &ReplayState, allowed: &[usize]) {
        if let Some(feed) = suggester.offers_feed() {
            let since = state
                .applied_order()
                .iter()
                .map(|&e| self.edit_times[e].1)
                .fold(0.0, f64::max);
            let until = self
                .graph
                .remaining(state)
                .iter()
                .map(|&e| self.edit_times[e].0)
                .fold(f64::INFINITY, f64::min);
            feed.window(since, until);
        }
        if let Some(feed) = suggester.gold_feed() {
            feed.offer_suggestions(
                allowed
                    .iter()
                    .map(|&g| gold_as_suggestion(state, g))
                    .collect(),
                allowed
                    .iter()
                    .map(|&g| unchanged_at_gold(state, g))
                    .collect(),
            );
        }
    }

    /// The `suggest` call: its edits checked, then matched to the remaining gold edits
    /// and classified.
    #[allow(clippy::too_many_arguments)]
    fn suggest(
        &self,
        step: usize,
        state: &ReplayState,
        suggester: &mut dyn Suggester,
        workspace: &dyn Workspace,
        prior_edits: &[AppliedEdit],
        files: &[FileContent],
        allowed: &[usize],
    ) -> Suggested {
        let started = Instant::now();
        let answer = suggester.suggest(&SuggestParams {
            step,
            worktree: self.root.clone(),
            language: self.config.language.clone(),
            prior_edits: prior_edits.to_vec(),
            files: files.to_vec(),
        });
        let latency = started.elapsed();
        let mut reads: Vec<StepRead> = Vec::new();
        let answer = answer.map(|r| {
            reads.extend(
                r.reads
                    .into_iter()
                    .map(|read| reported(Call::Suggest, read)),
            );
            r.edits
        });
        let (edits, error) = match answer.and_then(|edits| validate(state, workspace, edits)) {
            Ok(edits) => (edits, None),
            Err(e) => (Vec::new(), Some(CallFailure::from(&e))),
        };
        let predictions = if edits.is_empty() {
            Vec::new()
        } else {
            // Edits waiting for others (sequential edits) have no place in the text yet.
            let candidates: Vec<usize> = self
                .graph
                .remaining(state)
                .into_iter()
                .filter(|&e| state.is_ready(e))
                .collect();
            classify(
                state,
                &edits,
                &candidates,
                allowed,
                self.config.rule,
                &self.alternatives,
            )
        };
        Suggested {
            predictions,
            reads,
            error,
            latency,
        }
    }

    /// The `generate` call for the edit `target` (nothing kept the flow): its text
    /// scored against the gold edit's.
    fn generate(
        &self,
        step: usize,
        state: &ReplayState,
        suggester: &mut dyn Suggester,
        target: usize,
        prior_edits: Vec<AppliedEdit>,
        files: Vec<FileContent>,
    ) -> Generated {
        let (start, end) = state.current_range(target);
        let file = state.edits()[target].file.clone();
        if let Some(feed) = suggester.gold_feed() {
            feed.offer_generation(state.edits()[target].after_text());
        }
        let started = Instant::now();
        let generated = suggester.generate(&GenerateParams {
            step,
            worktree: self.root.clone(),
            language: self.config.language.clone(),
            prior_edits,
            files: files_with_first(state, files, &file),
            file,
            start_line: start,
            end_line: end,
        });
        let latency = started.elapsed();
        match generated {
            Ok(result) => Generated {
                content: Some(self.score_content(state, target, &result.text, true)),
                reads: result
                    .reads
                    .into_iter()
                    .map(|read| reported(Call::Generate, read))
                    .collect(),
                error: None,
                latency,
            },
            Err(e) => Generated {
                content: None,
                reads: Vec::new(),
                error: Some(CallFailure::from(&e)),
                latency,
            },
        }
    }
}

impl Stepper<'_> {
    /// `text`'s content scores against gold edit `gold`'s closest right answer.
    fn score_content(
        &self,
        state: &ReplayState,
        gold: usize,
        text: &str,
        generated: bool,
    ) -> ContentScore {
        let rule = self.config.rule;
        let (answer, (bleu, es)) = if self.alternatives.has(gold) {
            let answers = self.alternatives.answers(state, gold);
            let answer = &answers[closest(state, &answers, text)];
            let scores = content_scores(rule, &answer.before, &answer.after, text);
            (answer.index, scores)
        } else {
            let edit = &state.edits()[gold];
            let scores = content_scores(rule, &edit.before_text(), &edit.after_text(), text);
            (0, scores)
        };
        ContentScore {
            gold: EditIndex(gold),
            text: text.to_string(),
            bleu,
            es,
            generated,
            answer,
        }
    }

    /// The step's yardsticks: its best-ranked prediction's place, its content against
    /// the answer it was scored against.
    fn yardsticks(
        &self,
        state: &ReplayState,
        predictions: &[PredictionRecord],
        allowed: &[usize],
        content: Option<&ContentScore>,
    ) -> StepYardsticks {
        let answer = content.map(|c| self.answer(state, c.gold.0, c.answer));
        StepYardsticks::of(
            state,
            predictions.first().map(|p| &p.edit),
            allowed,
            &self.alternatives,
            answer.as_ref().zip(content.map(|c| c.text.as_str())),
        )
    }

    /// Right answer `k` of gold edit `gold` (0: the edit itself).
    fn answer(&self, state: &ReplayState, gold: usize, k: usize) -> Answer {
        if k == 0 {
            return Answer::of_edit(state, gold);
        }
        let mut answers = self.alternatives.answers(state, gold);
        // Scored in this very state, so it is there; else the edit itself.
        let at = (answers.iter()).position(|a| a.index == k).unwrap_or(0);
        answers.swap_remove(at)
    }
}

/// A read listed in a call's result, in the one shape reads take.
fn reported(call: Call, read: SuggesterRead) -> StepRead {
    StepRead {
        call,
        source: ReadSource::Reported,
        file: read.file,
        start_line: read.start_line,
        end_line: read.end_line,
        via: None,
    }
}

fn applied_edits(state: &ReplayState) -> Vec<AppliedEdit> {
    state
        .applied_order()
        .iter()
        .enumerate()
        .map(|(step, &idx)| {
            let edit = &state.edits()[idx];
            let (start_line, end_line) = state.current_range(idx);
            AppliedEdit {
                file: edit.file.clone(),
                start_line,
                end_line,
                before: edit.before_text(),
                after: edit.after_text(),
                step,
            }
        })
        .collect()
}

/// The files a step concerns: those touched by applied edits, most recent first.
fn step_files(state: &ReplayState, prior: &[AppliedEdit]) -> Vec<FileContent> {
    let mut seen = Vec::new();
    for edit in prior.iter().rev() {
        if !seen.contains(&edit.file) && state.exists(&edit.file) {
            seen.push(edit.file.clone());
        }
    }
    seen.into_iter()
        .map(|path| FileContent {
            text: state.text(&path).unwrap_or_default(),
            path,
        })
        .collect()
}

fn files_with_first(
    state: &ReplayState,
    mut files: Vec<FileContent>,
    first: &str,
) -> Vec<FileContent> {
    files.retain(|f| f.path != first);
    files.insert(
        0,
        FileContent {
            path: first.to_string(),
            text: state.text(first).unwrap_or_default(),
        },
    );
    files
}

/// The reads a suggester reported, each path normalized to a [`RelPath`]; a read
/// whose path leaves the worktree, whose range is inverted, or which starts past the
/// end of a trajectory file (in the step's coordinates) is left out with a reason.
/// Files outside the trajectory (the rest of a checkout) are kept as reported.
fn checked_reads(state: &ReplayState, reads: Vec<StepRead>) -> (Vec<StepRead>, Vec<String>) {
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for mut r in reads {
        let range = match r.end_line {
            Some(end) => format!("{}..{end}", r.start_line),
            None => format!("{}..", r.start_line),
        };
        let what = format!("{} read {} {range}", r.call, r.file);
        let rel = match RelPath::parse(&r.file) {
            Ok(rel) => rel,
            Err(e) => {
                dropped.push(format!("{what}: {e}"));
                continue;
            }
        };
        r.file = rel.as_str().to_owned();
        if r.end_line.is_some_and(|end| end < r.start_line) {
            dropped.push(format!("{what}: the range ends before it starts"));
            continue;
        }
        if let Some(lines) = state.lines(&r.file) {
            let n = lines.len();
            if r.start_line > n || r.end_line.is_some_and(|end| end > n) {
                dropped.push(format!("{what}: past the end of the file ({n} lines now)"));
                continue;
            }
        }
        kept.push(r);
    }
    (kept, dropped)
}

/// A suggested edit with the current text of the lines it replaces.
struct Checked {
    edit: SuggestedEdit,
    current: String,
}

/// Rejects answers that name files or lines that do not exist now; paths are
/// normalized first (`./a.py` is `a.py`), and one that leaves the worktree is refused.
/// A file the trajectory does not track is fine if it exists inside the worktree (a
/// miss, not a failed step).
fn validate(
    state: &ReplayState,
    workspace: &dyn Workspace,
    edits: Vec<SuggestedEdit>,
) -> Result<Vec<Checked>, SuggestError> {
    let mut checked = Vec::with_capacity(edits.len());
    for mut edit in edits {
        edit.file = RelPath::parse(&edit.file)
            .map_err(|e| SuggestError::BadResult {
                method: "suggest".into(),
                reason: e.to_string(),
            })?
            .as_str()
            .to_owned();
        let untracked;
        let lines = match state.lines(&edit.file) {
            Some(lines) => lines,
            None => match workspace.read_untracked(&edit.file) {
                Some(text) => {
                    untracked = split_lines(&text);
                    &untracked[..]
                }
                None => {
                    return Err(SuggestError::BadResult {
                        method: "suggest".into(),
                        reason: format!(
                            "{} is neither a file of this trajectory nor a file inside the worktree",
                            edit.file
                        ),
                    });
                }
            },
        };
        if edit.start_line > edit.end_line || edit.end_line > lines.len() {
            return Err(SuggestError::BadResult {
                method: "suggest".into(),
                reason: format!(
                    "lines {}..{} are outside {} ({} lines now)",
                    edit.start_line,
                    edit.end_line,
                    edit.file,
                    lines.len()
                ),
            });
        }
        let current = lines[edit.start_line..edit.end_line].concat();
        checked.push(Checked { edit, current });
    }
    Ok(checked)
}

fn located<'a>(
    state: &'a ReplayState,
    gold: usize,
    before: &'a str,
    after: &'a str,
) -> Located<'a> {
    let (start, end) = state.current_range(gold);
    Located {
        file: &state.edits()[gold].file,
        start,
        end,
        before,
        after,
    }
}

fn classify(
    state: &ReplayState,
    edits: &[Checked],
    remaining: &[usize],
    allowed: &[usize],
    rule: MatchRule,
    alternatives: &Alternatives,
) -> Vec<PredictionRecord> {
    // Nothing to classify: skip building every remaining gold's texts (per step, that
    // made a long replay with a silent suggester quadratic for nothing).
    if edits.is_empty() {
        return Vec::new();
    }
    let texts: Vec<(String, String)> = remaining
        .iter()
        .map(|&g| {
            (
                state.edits()[g].before_text(),
                state.edits()[g].after_text(),
            )
        })
        .collect();
    // Alternatives (beyond the edit itself) only for the edits that have some.
    let others: Vec<Vec<Answer>> = remaining
        .iter()
        .map(|&g| match alternatives.has(g) {
            true => alternatives.answers(state, g).split_off(1),
            false => Vec::new(),
        })
        .collect();
    let golds: Vec<Vec<Located<'_>>> = remaining
        .iter()
        .zip(&texts)
        .zip(&others)
        .map(|((&g, (b, a)), others)| {
            std::iter::once(located(state, g, b, a))
                .chain(others.iter().map(|o| Located {
                    file: &o.file,
                    start: o.start,
                    end: o.end,
                    before: &o.before,
                    after: &o.after,
                }))
                .collect()
        })
        .collect();
    let golds: Vec<&[Located<'_>]> = golds.iter().map(Vec::as_slice).collect();
    let preds: Vec<Located<'_>> = edits
        .iter()
        .map(|c| Located {
            file: &c.edit.file,
            start: c.edit.start_line,
            end: c.edit.end_line,
            before: &c.current,
            after: &c.edit.text,
        })
        .collect();
    // Structure of the current files, parsed once per file and only when asked.
    let parsed: std::cell::RefCell<std::collections::HashMap<String, Option<FileStructure>>> =
        Default::default();
    let same_structure = |file: &str, a: usize, b: usize| -> bool {
        let mut cache = parsed.borrow_mut();
        let structure = cache.entry(file.to_string()).or_insert_with(|| {
            let language = Language::from_path(std::path::Path::new(file))?;
            Some(analyze(language, &state.text(file)?))
        });
        // No grammar for this file: position alone decides, as for other rules.
        structure
            .as_ref()
            .is_none_or(|s| s.path_at(a) == s.path_at(b))
    };
    let matches = match_among_alternatives(&preds, &golds, rule, Some(&same_structure));
    edits
        .iter()
        .zip(matches)
        .enumerate()
        .map(|(rank, (checked, matched))| {
            let matched = matched.map(|(m, _)| remaining[m]);
            let class = match matched {
                Some(g) if allowed.contains(&g) => FlowClass::Keeping,
                Some(_) => FlowClass::Jumping,
                None if reverts(state, &preds[rank]) => FlowClass::Reverting,
                None => FlowClass::Breaking,
            };
            PredictionRecord {
                edit: checked.edit.clone(),
                rank,
                matched: matched.map(EditIndex),
                class,
            }
        })
        .collect()
}

/// Whether an unmatched prediction undoes an applied edit: it overlaps the edit's
/// lines and its text is closer to what the edit removed than to what it added.
fn reverts(state: &ReplayState, pred: &Located<'_>) -> bool {
    state.applied_order().iter().any(|&a| {
        let edit = &state.edits()[a];
        let (before, after) = (edit.before_text(), edit.after_text());
        let applied = located(state, a, &before, &after);
        location_score(pred, &applied) > 0.0
            && historian_bleu(pred.after, &before) > historian_bleu(pred.after, &after)
    })
}

/// Historian BLEU-4 (0–100) and ES-Line (0–1) of `text` written in place of `before`,
/// against the gold `after`. An answer that leaves `before` unchanged scores 0 on both
/// under every rule but the Historian compat one (which keeps Historian's BLEU, above
/// 50 for an unchanged line against a slightly edited one).
pub fn content_scores(rule: MatchRule, before: &str, after: &str, text: &str) -> (f64, f64) {
    if rule.requires_change() && is_unchanged(before, text) {
        return (0.0, 0.0);
    }
    let es = excision_score_text(
        before,
        after,
        text,
        EsGranularity::Line,
        None,
        &ExcisionConfig::default(),
    );
    (historian_bleu(text, after), es.score)
}

/// The current text of a gold edit's lines, at its location: what doing nothing there says.
fn unchanged_at_gold(state: &ReplayState, gold: usize) -> SuggestedEdit {
    let (start_line, end_line) = state.current_range(gold);
    let file = &state.edits()[gold].file;
    let text = state
        .lines(file)
        .map(|lines| lines[start_line..end_line].concat())
        .unwrap_or_default();
    SuggestedEdit {
        file: file.clone(),
        start_line,
        end_line,
        text,
        confidence: Some(1.0),
    }
}

fn gold_as_suggestion(state: &ReplayState, gold: usize) -> SuggestedEdit {
    let (start_line, end_line) = state.current_range(gold);
    let edit = &state.edits()[gold];
    SuggestedEdit {
        file: edit.file.clone(),
        start_line,
        end_line,
        text: edit.after_text(),
        confidence: Some(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::Origin::{Format, User};
    use crate::core::trajectory::recorded_for_tests::recorded;
    use crate::engine::replay::matching::MatchRule;
    use crate::engine::replay::{DirWorkspace, FedSuggester};

    #[test]
    fn excluded_origins_are_applied_silently_in_their_place() {
        // The developer types a line, format-on-save reindents it, the developer edits
        // the reformatted line, then a line elsewhere.
        let (trajectory, _) = recorded(
            "def f(x):\n    return x\n",
            &[
                (0.0, 10, 10, "  y = x\n", User),
                (50.0, 10, 12, "    ", Format),
                (3000.0, 18, 19, "2 * x", User),
                (6000.0, 4, 5, "g", User),
            ],
        );
        let origins: Vec<(&str, Origin)> = trajectory
            .edits
            .iter()
            .map(|e| (e.id.as_str(), e.origin))
            .collect();
        assert_eq!(
            origins,
            vec![("e0", User), ("e1", Format), ("e2", User), ("e3", User)]
        );
        let dir = tempfile::tempdir().unwrap();
        let mut oracle = FedSuggester::oracle();
        let config = ReplayConfig {
            order: OrderMode::Fixed,
            rule: MatchRule::Historian,
            seed: 42,
            revealed: Default::default(),
            language: Some("python".into()),
            project: None,
            exclude_origins: vec![Format],
            judge_cases: false,
        };
        let mut kept = KeepSteps::default();
        let outcome = replay(
            &trajectory,
            &mut oracle,
            &mut DirWorkspace::new(dir.path()),
            &config,
            ReplayHooks {
                resume: &[],
                observer: &mut kept,
            },
        )
        .unwrap();
        // e1 is applied right after e0 without a step; e2 (which rewrites e1's line) follows.
        assert_eq!(outcome.order, [0, 1, 2, 3].map(EditIndex));
        assert_eq!(
            kept.steps.iter().map(|s| s.applied).collect::<Vec<_>>(),
            [2, 3].map(EditIndex)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
            "def g(x):\n    y = 2 * x\n    return x\n"
        );
        for step in &kept.steps {
            assert!(step.allowed.iter().all(|&g| g != EditIndex(1)));
            let prf = step.flow.prf();
            assert_eq!((prf.precision, prf.recall), (1.0, 1.0));
        }
    }
}
