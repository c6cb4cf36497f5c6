//! Each offer's outcome, read from what the session did after the answer: the edits
//! (with the origin the recorder tagged), the editor's `suggestion` signals and the
//! later requests. Then, for taken text, what happened next (kept rate, reversal,
//! edits inside it) and, for a dismissed offer, whether the developer typed the same
//! text there anyway ("right but not taken").
//!
//! Rules (docs/live.md): an answer's items share one outcome. Its anchor is where the
//! first item's edit starts (or the start of the word before the request position).
//! Going forward in seq order, the first of these decides:
//! - a change makes an item's text appear at the anchor: **accepted** when a tool made
//!   the change (origin `completion`, `code_action`, `rename`) or when one change
//!   inserted at least two of its characters at once, or the editor signalled
//!   `accepted`; **dismissed** (typed by hand) when it came keystroke by keystroke;
//! - an inline item's leading words appear that way, and the next change goes
//!   elsewhere: **partially accepted**;
//! - a new request about the same line of the same file: **superseded**;
//! - a change on another line or in another file, a deletion before the anchor, or
//!   the editor's `hidden` signal: **dismissed**;
//! - the end of the session: **dismissed** (never used).
//!
//! A didChange's changes are judged together, as the text they leave (an item with its
//! import, `additionalTextEdits`, in any order); an inline item taken in parts is
//! followed where its last taken part ended.

use std::collections::HashMap;

use serde::Serialize;

use super::place::TakenPlace;
use super::span::TrackedSpan;
use super::{Offer, OfferKind};
use crate::core::metrics::yardsticks::kept_rate::kept_rate;
use crate::core::trajectory::{
    Change, EventBody, Origin, SignalKind, SuggestionSignal, Trajectory,
};

/// The windows the analysis uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveConfig {
    /// A dismissed offer typed by hand within this many milliseconds is right but not taken.
    pub within_ms: f64,
}

impl Default for LiveConfig {
    fn default() -> LiveConfig {
        LiveConfig {
            within_ms: 30_000.0,
        }
    }
}

/// The kept rate is measured this long after acceptance (30 s, 5 min), and at the end.
pub const KEPT_AFTER_MS: [f64; 2] = [30_000.0, 300_000.0];

/// How an acceptance was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// The recorder tagged the change as a tool's (`origin`).
    Origin,
    /// One change inserted the item's text (two or more characters at once).
    Text,
    /// The editor's `suggestion` signal said so.
    Signal,
}

/// Why an offer counts as dismissed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DismissReason {
    /// The next change went to another line or file.
    TypedElsewhere {
        /// Seq of that change.
        change_seq: u64,
    },
    /// The developer typed an item's text keystroke by keystroke.
    TypedByHand {
        /// Seq of the change that completed it.
        change_seq: u64,
    },
    /// The editor signalled that it hid the suggestion.
    Hidden {
        /// Seq of the signal.
        signal_seq: u64,
    },
    /// Nothing decided before the session ended.
    SessionEnded,
}

/// What became of one answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// An item was taken whole.
    Accepted {
        /// Its 0-based rank.
        rank: usize,
        /// Answer to acceptance, milliseconds.
        after_ms: f64,
        /// Seq of the change (or signal) that took it.
        seq: u64,
        /// How that was recognised.
        evidence: Evidence,
        /// Origin of the change.
        origin: Origin,
    },
    /// The leading words of an inline item were taken.
    Partial {
        /// Its 0-based rank.
        rank: usize,
        /// Characters taken.
        chars: usize,
        /// Answer to the last taken part, milliseconds.
        after_ms: f64,
        /// Seq of the last change that took a part.
        seq: u64,
    },
    /// The developer did not take it.
    Dismissed(DismissReason),
    /// A new request about the same place came before any outcome.
    Superseded {
        /// Seq of that request.
        by_request_seq: u64,
        /// Answer to that request, milliseconds.
        after_ms: f64,
    },
}

impl Outcome {
    /// The outcome's snake-case name.
    pub fn key(&self) -> &'static str {
        match self {
            Outcome::Accepted { .. } => "accepted",
            Outcome::Partial { .. } => "partial",
            Outcome::Dismissed(_) => "dismissed",
            Outcome::Superseded { .. } => "superseded",
        }
    }

    /// Rank of the item taken (whole or in part).
    pub fn taken_rank(&self) -> Option<usize> {
        match self {
            Outcome::Accepted { rank, .. } | Outcome::Partial { rank, .. } => Some(*rank),
            _ => None,
        }
    }
}

/// What happened to taken text afterwards.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aftermath {
    /// Characters taken.
    pub chars: usize,
    /// Share of them still present 30 s after (or at the end, when sooner).
    pub kept_30s: f64,
    /// … 5 min after (or at the end, when sooner).
    pub kept_5min: f64,
    /// … at the session's end.
    pub kept_end: f64,
    /// Acceptance to the moment none of it was left (deleted or undone), milliseconds.
    pub reversed_after_ms: Option<f64>,
    /// Later changes inside it that left some of it.
    pub edits_inside: usize,
    /// Zed's kept rate (`compute_kept_rate`) of the taken text against the text at its
    /// place at the session's end (or when none of it was left).
    pub zed_kept_rate: f64,
}

/// A dismissed offer the developer typed anyway.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RightButNotTaken {
    /// Rank of the item whose text appeared.
    pub rank: usize,
    /// Answer to the change that completed it, milliseconds.
    pub after_ms: f64,
    /// Seq of that change.
    pub change_seq: u64,
}

/// One answer (its items share the outcome) and everything learnt about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfferOutcome {
    /// Seq of the request.
    pub request_seq: u64,
    /// The items, in rank order.
    #[serde(skip)]
    pub items: Vec<Offer>,
    /// The file's language, when the trajectory knows it.
    pub language: Option<String>,
    /// Where the items' text goes, in the file's text at the answer.
    pub anchor: usize,
    /// What became of it.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// For taken text: what happened next.
    pub aftermath: Option<Aftermath>,
    /// For a dismissed answer: the same text typed there anyway.
    pub right_but_not_taken: Option<RightButNotTaken>,
    /// What the developer wrote at the anchor instead (a dismissed answer's line
    /// from the anchor on, once the developer moved on), for `sessions export --offers`.
    pub written_instead: Option<String>,
    /// The file's text before the anchor, at the answer.
    #[serde(skip)]
    pub context_before: String,
    /// Seqs of the changes that took its text (not counted as typed).
    #[serde(skip)]
    pub taken_seqs: Vec<u64>,
}

impl OfferOutcome {
    /// The first item (kind, server, file and times are the answer's).
    pub fn first(&self) -> &Offer {
        &self.items[0]
    }
}

/// One step of the session as the analysis sees it.
enum Step<'a> {
    Change(u64, f64, &'a Change),
    Reload(u64, f64, &'a str, &'a str),
    Signal(u64, f64, Option<&'a str>, &'a serde_json::Value),
}

/// Every answer's outcome, in the order of the requests. `offers` are one session's
/// (any order); items of one answer share `request_seq`.
pub fn analyse(trajectory: &Trajectory, offers: &[Offer], config: LiveConfig) -> Vec<OfferOutcome> {
    let mut lists: Vec<Vec<Offer>> = Vec::new();
    let mut by_request: HashMap<u64, usize> = HashMap::new();
    let mut sorted = offers.to_vec();
    sorted.sort_by_key(|o| (o.request_seq, o.rank));
    for offer in sorted {
        match by_request.get(&offer.request_seq) {
            Some(&i) => lists[i].push(offer),
            None => {
                by_request.insert(offer.request_seq, lists.len());
                lists.push(vec![offer]);
            }
        }
    }
    let steps: Vec<Step> = trajectory
        .events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Change(c) => Some(Step::Change(e.seq, e.t_ms, c)),
            EventBody::Open {
                file,
                text: Some(text),
                ..
            } => Some(Step::Reload(e.seq, e.t_ms, file, text)),
            EventBody::Signal(s) if s.kind == SignalKind::Suggestion => {
                Some(Step::Signal(e.seq, e.t_ms, s.file.as_deref(), &s.payload))
            }
            _ => None,
        })
        .collect();
    // The file texts at each answer: the base texts with every change before it.
    let mut texts: HashMap<&str, String> = trajectory
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.base_text.clone().unwrap_or_default()))
        .collect();
    let language = |file: &str| {
        trajectory
            .files
            .iter()
            .find(|f| f.path == file)
            .and_then(|f| f.language.clone())
    };
    // In answer order, each with a copy of its file's text at the answer (one at a
    // time: a long session's lists never hold their texts all at once).
    let mut order: Vec<usize> = (0..lists.len()).collect();
    order.sort_by_key(|&i| lists[i][0].seq);
    let mut next = 0;
    let mut outcomes: Vec<(usize, OfferOutcome)> = Vec::with_capacity(lists.len());
    for &i in &order {
        let items = &lists[i];
        while next < steps.len() && step_seq(&steps[next]) < items[0].seq {
            apply_step(&mut texts, &steps[next]);
            next += 1;
        }
        let text = texts
            .get(items[0].file.as_str())
            .cloned()
            .unwrap_or_default();
        // Lists are in request order: the later requests are the lists after this one.
        let mut outcome = decide(items, text, &steps[next..], &lists[i + 1..], config);
        outcome.language = language(&items[0].file);
        outcomes.push((i, outcome));
    }
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, o)| o).collect()
}

fn step_seq(step: &Step) -> u64 {
    match step {
        Step::Change(seq, ..) | Step::Reload(seq, ..) | Step::Signal(seq, ..) => *seq,
    }
}

fn step_t(step: &Step) -> f64 {
    match step {
        Step::Change(_, t, _) | Step::Reload(_, t, ..) | Step::Signal(_, t, ..) => *t,
    }
}

fn apply_step<'a>(texts: &mut HashMap<&'a str, String>, step: &Step<'a>) {
    match step {
        Step::Change(_, _, c) => {
            if let Some(text) = texts.get_mut(c.file.as_str())
                && c.end_byte <= text.len()
                && text.is_char_boundary(c.start_byte)
                && text.is_char_boundary(c.end_byte)
                && c.start_byte <= c.end_byte
            {
                text.replace_range(c.start_byte..c.end_byte, &c.after);
            }
        }
        Step::Reload(_, _, file, new) => {
            if let Some(text) = texts.get_mut(file) {
                *text = new.to_string();
            }
        }
        Step::Signal(..) => {}
    }
}

/// Applies a change to one text (the analysis's own copy).
fn apply_to(text: &mut String, start: usize, end: usize, after: &str) {
    if start <= end
        && end <= text.len()
        && text.is_char_boundary(start)
        && text.is_char_boundary(end)
    {
        text.replace_range(start..end, after);
    }
}

/// A position carried over a change: insertions at it stay after it.
fn carry(pos: usize, start: usize, end: usize, inserted: usize) -> usize {
    if start < pos {
        if end <= pos {
            pos + inserted - (end - start)
        } else {
            start
        }
    } else {
        pos
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte offset of (line, byte column) in `text`, clamped to the line's end.
fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let mut at = (start + col).min(end);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count()
}

/// Where each item's text would go, and the text.
fn targets(items: &[Offer], text: &str) -> (usize, Vec<(usize, String)>) {
    let word_start = |at: usize| {
        text[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_word(*c))
            .last()
            .map_or(at, |(i, _)| i)
    };
    let position = items[0]
        .line
        .map(|line| offset_of(text, line, items[0].col_byte.unwrap_or(0)));
    let targets: Vec<(usize, String)> = items
        .iter()
        .map(|item| {
            let edit = item
                .edits
                .iter()
                .filter(|e| e.file == item.file)
                .find(|e| {
                    position.is_some_and(|p| e.start_byte <= p && p <= e.end_byte.max(e.start_byte))
                })
                .or_else(|| item.edits.iter().find(|e| e.file == item.file));
            match edit {
                // An insertion at the position whose text starts with the word typed
                // so far (an item without a text edit): the editor replaces the word.
                Some(e)
                    if e.start_byte == e.end_byte
                        && e.start_byte <= text.len()
                        && text.is_char_boundary(e.start_byte)
                        && e.text
                            .starts_with(&text[word_start(e.start_byte)..e.start_byte]) =>
                {
                    (word_start(e.start_byte), e.text.clone())
                }
                Some(e) => (e.start_byte.min(text.len()), e.text.clone()),
                None => (word_start(position.unwrap_or(0)), item.text.clone()),
            }
        })
        .collect();
    let anchor = targets.first().map_or(0, |t| t.0);
    (anchor, targets)
}

/// The signal's action (`accepted`, `partial`, `hidden`, `shown`) when it is about this answer.
/// What a `suggestion` signal (schemas/signals.schema.json) says about this answer:
/// its event (`shown`, `hidden`, `accepted`, `accepted_part`), the item it names by
/// its text (rank), and how much of it was taken. `None` when it is about another file
/// or names a text none of the items has.
fn signal_about(
    file: Option<&str>,
    payload: &serde_json::Value,
    items: &[Offer],
) -> Option<(String, usize, Option<usize>)> {
    let signal = SuggestionSignal::read(payload)?;
    if file.is_some_and(|f| f != items[0].file) {
        return None;
    }
    let rank = match &signal.text {
        Some(text) => items.iter().position(|i| i.text == *text)?,
        None => 0,
    };
    let length = signal.accepted_length.map(|r| r as usize);
    Some((signal.event.as_str().to_string(), rank, length))
}

fn decide(
    items: &[Offer],
    text: String,
    steps: &[Step],
    later: &[Vec<Offer>],
    config: LiveConfig,
) -> OfferOutcome {
    let mut watch = Watch::new(items, text);
    let (outcome, decided_at) = watch.run(steps, later);
    let rest = &steps[(decided_at + 1).min(steps.len())..];
    let aftermath = watch.aftermath(&outcome, rest);
    let right_but_not_taken = watch.right_but_not_taken(&outcome, steps, decided_at, config);
    let Watch {
        first,
        anchor,
        context_before,
        text,
        targets,
        taken_seqs,
        ..
    } = watch;
    let written_instead = match &outcome {
        Outcome::Dismissed(reason) => Some(written_at(
            &first.file,
            text,
            targets[0].0,
            // The change that completed a hand-typed item is in `text` already.
            &steps[(decided_at
                + usize::from(matches!(reason, DismissReason::TypedByHand { .. })))
            .min(steps.len())..],
            first.t_ms + config.within_ms,
        )),
        _ => None,
    };
    OfferOutcome {
        request_seq: first.request_seq,
        items: items.to_vec(),
        language: None,
        anchor,
        outcome,
        aftermath,
        right_but_not_taken,
        written_instead,
        context_before,
        taken_seqs,
    }
}

/// The item of `targets` whose text stands at its place in `text`, if any.
fn present(text: &str, targets: &[(usize, String)]) -> Option<usize> {
    targets.iter().position(|(at, want)| {
        !want.is_empty() && text.get(*at..at + want.len()) == Some(want.as_str())
    })
}

/// The longest part of an item taken so far: (rank, bytes, time, seq).
type Part = (usize, usize, f64, u64);

/// What the watch over one answer carries from step to step: the file's text as the
/// steps left it, the items' places in it, and what was taken of them so far.
struct Watch<'a> {
    items: &'a [Offer],
    first: &'a Offer,
    /// Where the first item goes, before any step.
    anchor: usize,
    /// The text before the anchor, before any step.
    context_before: String,
    text: String,
    /// Each item's place and text, kept in step with the changes.
    targets: Vec<(usize, String)>,
    /// The item that stood at its place before any step (typing it is no evidence).
    already: Option<usize>,
    partial: Option<Part>,
    /// Seqs of the changes that took the answer.
    taken_seqs: Vec<u64>,
}

impl<'a> Watch<'a> {
    fn new(items: &'a [Offer], text: String) -> Watch<'a> {
        let (anchor, targets) = targets(items, &text);
        Watch {
            items,
            first: &items[0],
            anchor,
            context_before: text[..anchor].to_string(),
            already: present(&text, &targets),
            text,
            targets,
            partial: None,
            taken_seqs: Vec::new(),
        }
    }

    /// The steps in order until one decides: the outcome and the index of the step
    /// that decided it (`steps.len()` when none did).
    fn run(&mut self, steps: &[Step], later: &[Vec<Offer>]) -> (Outcome, usize) {
        let mut later = later.iter().map(|l| &l[0]).peekable();
        let mut k = 0;
        while k < steps.len() {
            let step = &steps[k];
            if let Some(outcome) = self.superseded(&mut later, step_seq(step)) {
                return (outcome, k);
            }
            let mut next = k + 1;
            let decided = match step {
                Step::Signal(seq, t, file, payload) => {
                    self.on_signal(*seq, *t, *file, payload).map(|o| (o, k))
                }
                Step::Reload(seq, ..) => Some((
                    Outcome::Dismissed(DismissReason::TypedElsewhere { change_seq: *seq }),
                    k,
                )),
                Step::Change(..) => {
                    // The changes of one didChange are judged together, after the last
                    // one: an editor may replace the typed word in two changes (Neovim),
                    // put an import at the top beside the item (`additionalTextEdits`,
                    // in any order), or type the item in keystroke by keystroke.
                    next = group_end(steps, k);
                    self.on_changes(&steps[k..next]).map(|(outcome, in_text)| {
                        // Changes that put the item in `text`: what follows starts
                        // after them.
                        (outcome, if in_text { next - 1 } else { k })
                    })
                }
            };
            if let Some(decided) = decided {
                return decided;
            }
            k = next;
        }
        let outcome = match self.partial {
            Some(part) => self.as_partial(part),
            None => Outcome::Dismissed(DismissReason::SessionEnded),
        };
        (outcome, steps.len())
    }

    fn as_partial(&self, (rank, bytes, t, seq): Part) -> Outcome {
        Outcome::Partial {
            rank,
            chars: self.targets[rank].1[..bytes].chars().count(),
            after_ms: t - self.first.t_ms,
            seq,
        }
    }

    /// A later request about the same line, made before the step numbered `step_seq`
    /// (and before any part was taken), supersedes the answer.
    fn superseded<'o>(
        &self,
        later: &mut std::iter::Peekable<impl Iterator<Item = &'o Offer>>,
        step_seq: u64,
    ) -> Option<Outcome> {
        while let Some(other) = later.peek() {
            if other.request_seq > step_seq {
                break;
            }
            let other = later.next().unwrap();
            let anchor_now = self.targets.first().map_or(self.anchor, |t| t.0);
            if other.file == self.first.file
                && other.line == Some(line_of(&self.text, anchor_now))
                && self.partial.is_none()
            {
                return Some(Outcome::Superseded {
                    by_request_seq: other.request_seq,
                    after_ms: other.request_t_ms() - self.first.t_ms,
                });
            }
        }
        None
    }

    /// An editor signal about the answer: accepted, hidden, or a part accepted.
    fn on_signal(
        &mut self,
        seq: u64,
        t: f64,
        file: Option<&str>,
        payload: &serde_json::Value,
    ) -> Option<Outcome> {
        match signal_about(file, payload, self.items)
            .as_ref()
            .map(|(e, r, l)| (e.as_str(), *r, *l))
        {
            Some(("accepted", rank, _)) => Some(Outcome::Accepted {
                rank,
                after_ms: t - self.first.t_ms,
                seq,
                evidence: Evidence::Signal,
                origin: Origin::User,
            }),
            Some(("accepted_part", rank, Some(length))) => {
                // The editor's count is in position-encoding units; characters are
                // near enough for the word-by-word parts it sends.
                let want = &self.targets[rank].1;
                let bytes = want
                    .char_indices()
                    .nth(length)
                    .map_or(want.len(), |(i, _)| i);
                if bytes > 0 && self.partial.is_none_or(|p| p.1 < bytes) {
                    self.partial = Some((rank, bytes, t, seq));
                }
                None
            }
            Some(("hidden", ..)) => Some(match self.partial {
                Some(part) => self.as_partial(part),
                None => Outcome::Dismissed(DismissReason::Hidden { signal_seq: seq }),
            }),
            _ => None,
        }
    }

    /// One didChange's changes (`group`), applied: the outcome they decide, and
    /// whether they put an item in the text.
    fn on_changes(&mut self, group: &[Step]) -> Option<(Outcome, bool)> {
        let first = self.first;
        let applied = Group::apply(
            group,
            &first.file,
            first.kind,
            self.partial.map(|p| (p.0, p.1)),
            &mut self.text,
            &mut self.targets,
        );
        let (last_seq, t) = match group.last() {
            Some(Step::Change(seq, t, _)) => (*seq, *t),
            _ => unreachable!("a group holds changes only"),
        };
        let found = present(&self.text, &self.targets).filter(|r| Some(*r) != self.already);
        match (found, applied.elsewhere) {
            (Some(rank), _) => {
                let taken = applied.tool || applied.inserted >= 2;
                if taken {
                    self.taken_seqs.extend(&applied.seqs);
                }
                let outcome = if taken {
                    Outcome::Accepted {
                        rank,
                        after_ms: t - first.t_ms,
                        seq: last_seq,
                        evidence: if applied.tool {
                            Evidence::Origin
                        } else {
                            Evidence::Text
                        },
                        origin: applied.origin,
                    }
                } else {
                    Outcome::Dismissed(DismissReason::TypedByHand {
                        change_seq: last_seq,
                    })
                };
                Some((outcome, true))
            }
            (None, Some(change_seq)) => {
                // The list closed: the group is the rest of the session's.
                applied.undo(&mut self.text, &mut self.targets);
                let outcome = match self.partial {
                    Some(part) => self.as_partial(part),
                    None => Outcome::Dismissed(DismissReason::TypedElsewhere { change_seq }),
                };
                Some((outcome, false))
            }
            (None, None) if first.kind == OfferKind::InlineCompletion && applied.inserted >= 2 => {
                // The leading words of an inline item, inserted at once.
                if let Some((rank, common)) = leading_words(
                    &self.text,
                    &self.targets,
                    self.partial.map_or(0, |p| p.1),
                    applied.reach,
                ) {
                    self.partial = Some((rank, common, t, last_seq));
                    self.taken_seqs.extend(&applied.seqs);
                }
                None
            }
            (None, None) => None,
        }
    }

    /// What became of the taken item (or part) in the `rest` of the session.
    fn aftermath(&self, outcome: &Outcome, rest: &[Step]) -> Option<Aftermath> {
        let (file, targets, t0) = (&self.first.file, &self.targets, self.first.t_ms);
        match outcome {
            Outcome::Accepted { rank, after_ms, .. } => Some(follow(
                file,
                targets[*rank].0,
                &targets[*rank].1,
                t0 + after_ms,
                rest,
            )),
            Outcome::Partial {
                rank,
                chars,
                after_ms,
                ..
            } => {
                let taken: String = targets[*rank].1.chars().take(*chars).collect();
                Some(follow(file, targets[*rank].0, &taken, t0 + after_ms, rest))
            }
            _ => None,
        }
    }

    /// A dismissed answer whose text was typed at its place within the window anyway.
    fn right_but_not_taken(
        &self,
        outcome: &Outcome,
        steps: &[Step],
        decided_at: usize,
        config: LiveConfig,
    ) -> Option<RightButNotTaken> {
        let t0 = self.first.t_ms;
        match outcome {
            Outcome::Dismissed(DismissReason::TypedByHand { change_seq }) => {
                let t = steps.get(decided_at).map_or(t0, step_t);
                let rank = present(&self.text, &self.targets).unwrap_or(0);
                (t - t0 <= config.within_ms).then_some(RightButNotTaken {
                    rank,
                    after_ms: t - t0,
                    change_seq: *change_seq,
                })
            }
            Outcome::Dismissed(_) => typed_anyway(
                &self.first.file,
                self.text.clone(),
                self.targets.clone(),
                self.already,
                t0,
                &steps[decided_at.min(steps.len())..],
                config,
            ),
            _ => None,
        }
    }
}

/// The end of the didChange whose first change is `steps[k]`: its changes share the
/// file and the version.
fn group_end(steps: &[Step], k: usize) -> usize {
    let Step::Change(_, _, head) = &steps[k] else {
        return k + 1;
    };
    k + steps[k..]
        .iter()
        .take_while(|s| matches!(s, Step::Change(_, _, c) if c.file == head.file && c.version == head.version))
        .count()
}

/// One didChange's changes, applied to the analysis's text and targets in order (each
/// judged against the text the earlier ones left), and what they say about an answer.
struct Group {
    /// Seqs of its changes.
    seqs: Vec<u64>,
    /// Characters they inserted.
    inserted: usize,
    /// A tool made one of them (origin `completion`, `code_action`, `rename`).
    tool: bool,
    /// A tool's origin, else the last change's.
    origin: Origin,
    /// The first change that went elsewhere: another file, another line, before the
    /// anchor, or (an inline item) not at the place its taken part ends.
    elsewhere: Option<u64>,
    /// What it replaced, to undo it: (start, length inserted, text replaced).
    replaced: Vec<(usize, usize, String)>,
    /// The targets' places before it.
    places: Vec<usize>,
    /// Where the text it inserted ends.
    reach: usize,
}

impl Group {
    fn apply(
        steps: &[Step],
        file: &str,
        kind: OfferKind,
        taken: Option<(usize, usize)>,
        text: &mut String,
        targets: &mut [(usize, String)],
    ) -> Group {
        let mut group = Group {
            seqs: Vec::with_capacity(steps.len()),
            inserted: 0,
            tool: false,
            origin: Origin::User,
            elsewhere: None,
            replaced: Vec::new(),
            places: targets.iter().map(|t| t.0).collect(),
            reach: 0,
        };
        for step in steps {
            let Step::Change(seq, _, c) = step else {
                continue;
            };
            let anchor = targets[0].0;
            let tool = matches!(
                c.origin,
                Origin::Completion | Origin::CodeAction | Origin::Rename
            );
            let same_line = c.start_byte >= anchor
                && line_of(text, c.start_byte) == line_of(text, anchor)
                && !c.before.contains('\n');
            // An inline item taken in parts (word, line): the next part goes where the
            // last one ended, whatever the line.
            let part_end = taken.map_or(anchor, |(rank, bytes)| targets[rank].0 + bytes);
            let next_part = kind == OfferKind::InlineCompletion
                && c.start_byte == c.end_byte
                && c.start_byte == part_end;
            if c.file != file || !(same_line || tool || next_part) {
                group.elsewhere.get_or_insert(*seq);
            }
            group.seqs.push(*seq);
            group.inserted += c.after.chars().count();
            if tool {
                group.tool = true;
                group.origin = c.origin;
            } else if !group.tool {
                group.origin = c.origin;
            }
            if c.file != file {
                continue;
            }
            if let Some(before) = text.get(c.start_byte..c.end_byte).map(str::to_string) {
                apply_to(text, c.start_byte, c.end_byte, &c.after);
                group.replaced.push((c.start_byte, c.after.len(), before));
            }
            for target in targets.iter_mut() {
                target.0 = carry(target.0, c.start_byte, c.end_byte, c.after.len());
            }
            group.reach = carry(group.reach, c.start_byte, c.end_byte, c.after.len())
                .max(c.start_byte + c.after.len());
        }
        group
    }

    /// Takes its changes back out of `text` and `targets`.
    fn undo(&self, text: &mut String, targets: &mut [(usize, String)]) {
        for (start, len, before) in self.replaced.iter().rev() {
            text.replace_range(*start..start + len, before);
        }
        for (target, place) in targets.iter_mut().zip(&self.places) {
            target.0 = *place;
        }
    }
}

/// The first item whose leading words (ending at a word boundary), more than `min`
/// bytes of them, are at its place, before `reach` (what was there already is not
/// taken): its rank and their length in bytes.
fn leading_words(
    text: &str,
    targets: &[(usize, String)],
    min: usize,
    reach: usize,
) -> Option<(usize, usize)> {
    targets.iter().enumerate().find_map(|(rank, (at, want))| {
        let have = text.get(*at..reach.max(*at)).unwrap_or("");
        let common = want
            .char_indices()
            .map(|(i, ch)| i + ch.len_utf8())
            .take_while(|&end| have.get(..end) == want.get(..end))
            .last()
            .unwrap_or(0);
        let at_word_end = want[common..].chars().next().is_none_or(|ch| !is_word(ch))
            || want[..common]
                .chars()
                .next_back()
                .is_some_and(|ch| !is_word(ch));
        (common > min && at_word_end).then_some((rank, common))
    })
}

/// Follows taken text through the rest of the session.
fn follow(file: &str, at: usize, taken: &str, t0: f64, rest: &[Step]) -> Aftermath {
    let mut span = TrackedSpan::new(taken, at);
    let mut place = TakenPlace::new(taken, at);
    let mut kept = [None, None];
    let mut reversed_after_ms = None;
    for step in rest {
        let t = step_t(step);
        for (i, after) in KEPT_AFTER_MS.iter().enumerate() {
            if kept[i].is_none() && t > t0 + after {
                kept[i] = Some(span.kept_rate());
            }
        }
        match step {
            Step::Change(_, _, c) if c.file == file => {
                span.apply(c.start_byte, c.end_byte, c.after.len());
                place.apply(c.start_byte, c.end_byte, &c.after);
            }
            Step::Reload(_, _, f, _) if *f == file => {
                span.apply(0, usize::MAX / 2, 0);
                place.clear();
            }
            _ => continue,
        }
        if reversed_after_ms.is_none() && span.kept_chars() == 0 && span.chars() > 0 {
            reversed_after_ms = Some(t - t0);
            // Nothing left to follow: every later figure is 0 (and the place is
            // followed no further: what is typed there later was not taken).
            break;
        }
    }
    let end = span.kept_rate();
    Aftermath {
        chars: span.chars(),
        kept_30s: kept[0].unwrap_or(end),
        kept_5min: kept[1].unwrap_or(end),
        kept_end: end,
        reversed_after_ms,
        edits_inside: span.edits_inside,
        // Zed's kept rate of the taken text at its place: nothing was there before it.
        zed_kept_rate: kept_rate("", taken, place.text()).kept_rate,
    }
}

/// A dismissed answer's text typed at its place within the window.
fn typed_anyway(
    file: &str,
    mut text: String,
    mut targets: Vec<(usize, String)>,
    already: Option<usize>,
    t0: f64,
    rest: &[Step],
    config: LiveConfig,
) -> Option<RightButNotTaken> {
    for step in rest {
        let Step::Change(seq, t, c) = step else {
            continue;
        };
        if *t - t0 > config.within_ms {
            return None;
        }
        if c.file != file {
            continue;
        }
        apply_to(&mut text, c.start_byte, c.end_byte, &c.after);
        for target in &mut targets {
            target.0 = carry(target.0, c.start_byte, c.end_byte, c.after.len());
        }
        let found = targets.iter().position(|(at, want)| {
            !want.is_empty() && text.get(*at..at + want.len()) == Some(want.as_str())
        });
        if let Some(rank) = found.filter(|r| Some(*r) != already) {
            return Some(RightButNotTaken {
                rank,
                after_ms: t - t0,
                change_seq: *seq,
            });
        }
    }
    None
}

/// The anchor's line from the anchor on, after the developer's changes within the window.
fn written_at(file: &str, mut text: String, mut at: usize, rest: &[Step], until: f64) -> String {
    for step in rest {
        let Step::Change(_, t, c) = step else {
            continue;
        };
        if *t > until {
            break;
        }
        if c.file != file {
            continue;
        }
        apply_to(&mut text, c.start_byte, c.end_byte, &c.after);
        at = carry(at, c.start_byte, c.end_byte, c.after.len());
    }
    let at = at.min(text.len());
    let tail = &text[at..];
    tail[..tail.find('\n').unwrap_or(tail.len())].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::{Event, FileEntry, SessionInfo, SessionKind};
    use crate::engine::live::OfferEdit;

    /// A session of one file `a.py` built change by change, with offers.
    struct Session {
        trajectory: Trajectory,
        text: String,
        seq: u64,
    }

    impl Session {
        fn new(base: &str) -> Session {
            let mut trajectory = Trajectory::new(SessionInfo::new("1", SessionKind::Recorded));
            let mut file = FileEntry::new("a.py", Some(base.to_string()));
            file.language = Some("python".into());
            trajectory.files.push(file);
            Session {
                trajectory,
                text: base.to_string(),
                seq: 0,
            }
        }

        /// Replaces the first `old` found after byte `from` by `new` at time `t`.
        fn change(&mut self, t: f64, from: usize, old: &str, new: &str, origin: Origin) -> u64 {
            let start = from + self.text[from..].find(old).unwrap();
            let end = start + old.len();
            self.seq += 1;
            self.trajectory.events.push(Event {
                seq: self.seq,
                t_ms: t,
                body: EventBody::Change(Change {
                    file: "a.py".into(),
                    version: self.seq as i64,
                    start_byte: start,
                    end_byte: end,
                    start_line: 0,
                    end_line: 0,
                    new_end_line: 0,
                    before: old.into(),
                    after: new.into(),
                    origin,
                }),
            });
            self.text.replace_range(start..end, new);
            self.seq
        }

        /// One didChange of several changes at time `t`: each `(from, old, new)` replaces
        /// the first `old` after byte `from` in the text the earlier ones left.
        fn did_change(&mut self, t: f64, changes: &[(usize, &str, &str)], origin: Origin) -> u64 {
            let version = self.seq as i64 + 1_000;
            for (from, old, new) in changes {
                self.change(t, *from, old, new, origin);
                if let Some(Event {
                    body: EventBody::Change(c),
                    ..
                }) = self.trajectory.events.last_mut()
                {
                    c.version = version;
                }
            }
            self.seq
        }

        /// Types `text` at byte `at`, one keystroke every 100 ms from `t`.
        fn type_keys(&mut self, t: f64, at: usize, text: &str) {
            for (i, (offset, ch)) in text.char_indices().enumerate() {
                self.change(
                    t + 100.0 * i as f64,
                    at + offset,
                    "",
                    &ch.to_string(),
                    Origin::User,
                );
            }
        }

        /// An answer now, at `t`, asked `latency` ms earlier at (line, col), its items
        /// replacing `replace` bytes before the position.
        fn offer(
            &mut self,
            t: f64,
            line: usize,
            col: usize,
            replace: usize,
            items: &[&str],
            kind: OfferKind,
        ) -> Vec<Offer> {
            self.seq += 2;
            let at = offset_of(&self.text, line, col);
            items
                .iter()
                .enumerate()
                .map(|(rank, text)| Offer {
                    seq: self.seq,
                    rank,
                    request_seq: self.seq - 1,
                    t_ms: t,
                    latency_ms: 40.0 + 10.0 * rank as f64,
                    kind,
                    method: "textDocument/completion".into(),
                    file: "a.py".into(),
                    line: Some(line),
                    col_byte: Some(col),
                    label: Some(text.to_string()),
                    text: text.to_string(),
                    edits: vec![OfferEdit {
                        file: "a.py".into(),
                        start_byte: at - replace,
                        end_byte: at,
                        text: text.to_string(),
                    }],
                    list_size: items.len(),
                    server: "pyright-langserver".into(),
                })
                .collect()
        }
    }

    #[test]
    fn zeds_kept_rate_is_by_token_at_the_taken_texts_place() {
        let mut s = Session::new("x = \n");
        let offers = s.offer(1_000.0, 0, 4, 0, &["print(a)"], OfferKind::Completion);
        s.change(1_500.0, 4, "", "print(a)", Origin::Completion);
        // "a" becomes "b" inside it; what is typed after it is not at its place.
        s.change(2_000.0, 10, "a", "b", Origin::User);
        s.change(2_500.0, 12, "", " # done", Origin::User);
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        let after = outcomes[0].aftermath.as_ref().expect("taken");
        // print ( a ) → print ( b ): "print", "(" and ")" kept, 7 of 8 bytes.
        assert_eq!(after.zed_kept_rate, 0.875);
        // The character view agrees here: of the 8 taken bytes, the replaced "a" is lost.
        assert_eq!(after.kept_end, 0.875);
    }

    #[test]
    fn accepted_kept_partly_then_dismissed_but_typed() {
        let mut s = Session::new("import os\npri\n");
        // "pri" at line 1; the list offers print (rank 0) and private (rank 1).
        let mut offers = s.offer(
            1_000.0,
            1,
            3,
            3,
            &["private", "print"],
            OfferKind::Completion,
        );
        // The completion replaces "pri" by "print" (rank 1) 500 ms after the answer.
        let accept = s.change(1_500.0, 10, "pri", "print", Origin::Completion);
        // 40 s later, "nt" is deleted: 3 of 5 characters remain.
        s.change(41_500.0, 10, "nt", "", Origin::User);
        // A new list at the end of the file, dismissed, then "return" typed by hand.
        s.change(42_000.0, 13, "\n", "\n\n", Origin::User);
        offers.extend(s.offer(43_000.0, 2, 0, 0, &["return"], OfferKind::Completion));
        s.change(44_000.0, 0, "import", "import sys,", Origin::User);
        let at = s.text.len() - 1;
        s.type_keys(50_000.0, at, "return");
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        assert_eq!(outcomes.len(), 2);
        assert_eq!(
            outcomes[0].outcome,
            Outcome::Accepted {
                rank: 1,
                after_ms: 500.0,
                seq: accept,
                evidence: Evidence::Origin,
                origin: Origin::Completion
            }
        );
        assert_eq!(
            outcomes[0].aftermath,
            Some(Aftermath {
                chars: 5,
                kept_30s: 1.0,
                kept_5min: 0.6,
                kept_end: 0.6,
                reversed_after_ms: None,
                edits_inside: 1,
                // Zed's kept rate is by token: "pri" keeps none of the token "print".
                zed_kept_rate: 0.0,
            })
        );
        assert_eq!(outcomes[1].outcome.key(), "dismissed");
        // The last keystroke ("n") came 500 ms after 50 s: 7.5 s after the answer at 43 s.
        assert_eq!(
            outcomes[1]
                .right_but_not_taken
                .as_ref()
                .map(|r| (r.rank, r.after_ms)),
            Some((0, 7_500.0))
        );
        assert_eq!(outcomes[1].written_instead.as_deref(), Some("return"));
        assert_eq!(outcomes[1].context_before, "import os\npri\n");
    }

    #[test]
    fn superseded_hand_typed_and_reversed() {
        let mut s = Session::new("x = \n");
        let mut offers = s.offer(1_000.0, 0, 4, 0, &["value"], OfferKind::Completion);
        s.type_keys(1_200.0, 4, "v");
        // Asked again on the same line before anything was taken.
        offers.extend(s.offer(
            1_500.0,
            0,
            5,
            1,
            &["value", "values"],
            OfferKind::Completion,
        ));
        s.type_keys(1_600.0, 5, "alue");
        // Then an accepted answer undone at once.
        offers.extend(s.offer(3_000.0, 0, 9, 5, &["values"], OfferKind::Completion));
        s.change(3_100.0, 4, "value", "values", Origin::Completion);
        s.change(3_400.0, 4, "values", "value", Origin::User);
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        let keys: Vec<&str> = outcomes.iter().map(|o| o.outcome.key()).collect();
        assert_eq!(keys, ["superseded", "dismissed", "accepted"]);
        assert!(matches!(
            outcomes[1].outcome,
            Outcome::Dismissed(DismissReason::TypedByHand { .. })
        ));
        // Typed by hand 1.9 s after the second answer (at 1.5 s; the last key at 1.6 + 0.3 s).
        assert_eq!(
            outcomes[1].right_but_not_taken.as_ref().map(|r| r.after_ms),
            Some(400.0)
        );
        // "values" replaced by "value": the insertion of "s" is gone, but "value" was
        // already there, so the tracked "values" keeps nothing at the start…
        let after = outcomes[2].aftermath.as_ref().unwrap();
        assert_eq!(after.kept_end, 0.0);
        assert_eq!(after.reversed_after_ms, Some(300.0));
    }

    #[test]
    fn inline_item_taken_word_by_word() {
        let mut s = Session::new("def f():\n    \n");
        let offers = s.offer(
            1_000.0,
            1,
            4,
            0,
            &["return self.value"],
            OfferKind::InlineCompletion,
        );
        s.change(2_000.0, 13, "", "return ", Origin::User);
        s.change(2_500.0, 20, "", "self.", Origin::User);
        s.change(3_000.0, 0, "def", "def", Origin::User);
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        assert_eq!(
            outcomes[0].outcome,
            Outcome::Partial {
                rank: 0,
                chars: 12,
                after_ms: 1_500.0,
                seq: 4
            }
        );
        assert_eq!(outcomes[0].aftermath.as_ref().map(|a| a.chars), Some(12));
    }

    #[test]
    fn editor_signals_decide() {
        let mut s = Session::new("def f():\n    \n");
        let mut offers = s.offer(
            1_000.0,
            1,
            4,
            0,
            &["return 1", "return self.value"],
            OfferKind::InlineCompletion,
        );
        let signal = |s: &mut Session, t: f64, payload: serde_json::Value| {
            s.seq += 1;
            s.trajectory.events.push(Event {
                seq: s.seq,
                t_ms: t,
                body: EventBody::Signal(crate::core::trajectory::Signal {
                    kind: "suggestion".into(),
                    file: Some("a.py".into()),
                    payload,
                }),
            });
        };
        // "return " (7 characters) of rank 1 taken word by word, then the rest hidden.
        signal(
            &mut s,
            1_500.0,
            serde_json::json!({"event": "shown", "text": "return self.value"}),
        );
        signal(
            &mut s,
            2_000.0,
            serde_json::json!({"event": "accepted_part", "text": "return self.value", "acceptedLength": 7}),
        );
        s.change(2_000.0, 13, "", "return ", Origin::User);
        signal(
            &mut s,
            2_500.0,
            serde_json::json!({"event": "hidden", "text": "return self.value"}),
        );
        // A second answer, accepted by the editor's word.
        offers.extend(s.offer(
            3_000.0,
            1,
            11,
            0,
            &["self.value"],
            OfferKind::InlineCompletion,
        ));
        signal(
            &mut s,
            3_200.0,
            serde_json::json!({"event": "accepted", "text": "self.value", "acceptedLength": 10}),
        );
        s.change(3_200.0, 20, "", "self.value", Origin::User);
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        assert_eq!(
            outcomes[0].outcome,
            Outcome::Partial {
                rank: 1,
                chars: 7,
                after_ms: 1_000.0,
                seq: 4
            }
        );
        assert_eq!(outcomes[1].outcome.key(), "accepted");
        assert_eq!(outcomes[1].outcome.taken_rank(), Some(0));
    }

    #[test]
    fn an_item_with_an_import_is_accepted_whatever_the_order_of_its_changes() {
        // "pa" replaced by "path" and an import put at the top, in one didChange: VS
        // Code sends the lower change first, another editor the import first.
        for import_first in [false, true] {
            let mut s = Session::new("import sys\n\nos.pa\n");
            let offers = s.offer(1_000.0, 2, 5, 2, &["pardir", "path"], OfferKind::Completion);
            let changes: [(usize, &str, &str); 2] = [(15, "pa", "path"), (0, "", "import os\n")];
            let order: Vec<(usize, &str, &str)> = if import_first {
                vec![changes[1], (25, "pa", "path")]
            } else {
                changes.to_vec()
            };
            let seq = s.did_change(1_050.0, &order, Origin::User);
            s.change(3_000.0, 0, "import sys", "import sys, re", Origin::User);
            let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
            assert_eq!(
                outcomes[0].outcome,
                Outcome::Accepted {
                    rank: 1,
                    after_ms: 50.0,
                    seq,
                    evidence: Evidence::Text,
                    origin: Origin::User
                },
                "import first: {import_first}"
            );
            assert_eq!(outcomes[0].taken_seqs, vec![seq - 1, seq]);
            assert_eq!(
                outcomes[0].aftermath.as_ref().map(|a| a.kept_end),
                Some(1.0)
            );
        }
    }

    #[test]
    fn a_change_elsewhere_in_the_same_did_change_as_typing_dismisses() {
        // One letter at the place and one on another line: the list closed.
        let mut s = Session::new("x = 1\nos.pa\n");
        let offers = s.offer(1_000.0, 1, 5, 2, &["path"], OfferKind::Completion);
        let seq = s.did_change(1_100.0, &[(11, "", "t"), (0, "x", "y")], Origin::User);
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        assert_eq!(
            outcomes[0].outcome,
            Outcome::Dismissed(DismissReason::TypedElsewhere { change_seq: seq })
        );
        // The group was taken back: what was written instead starts at the anchor.
        assert_eq!(outcomes[0].written_instead.as_deref(), Some("pat"));
    }

    #[test]
    fn an_inline_item_taken_line_by_line_is_accepted_and_one_line_is_partial() {
        let item = "total = a + b\n    return total";
        // Whole, in two parts: the first line, then the rest on the next line.
        let mut s = Session::new("def f(a, b):\n    \nx = 1\n");
        let offers = s.offer(1_000.0, 1, 4, 0, &[item], OfferKind::InlineCompletion);
        s.change(1_500.0, 17, "", "total = a + b", Origin::User);
        let last = s.change(2_000.0, 30, "", "\n    return total", Origin::User);
        s.change(3_000.0, 48, "x", "y", Origin::User);
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        assert_eq!(
            outcomes[0].outcome,
            Outcome::Accepted {
                rank: 0,
                after_ms: 1_000.0,
                seq: last,
                evidence: Evidence::Text,
                origin: Origin::User
            }
        );
        assert_eq!(outcomes[0].taken_seqs, vec![last - 1, last]);
        // The first line only, then a change on another line.
        let mut s = Session::new("def f(a, b):\n    \nx = 1\n");
        let offers = s.offer(1_000.0, 1, 4, 0, &[item], OfferKind::InlineCompletion);
        let part = s.change(1_500.0, 17, "", "total = a + b", Origin::User);
        s.change(3_000.0, 31, "x", "y", Origin::User);
        let outcomes = analyse(&s.trajectory, &offers, LiveConfig::default());
        assert_eq!(
            outcomes[0].outcome,
            Outcome::Partial {
                rank: 0,
                chars: 13,
                after_ms: 500.0,
                seq: part
            }
        );
    }
}
