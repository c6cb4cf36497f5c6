//! Partial orders over a commit's edits: built from dependencies, imported from
//! EditFlow annotations or Historian graphs, and read back as pair labels; their
//! initial candidates and natural order, in near-linear time.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::core::trajectory::{EdgeReason, OrderEdge, OrderKind, PartialOrder, ReasonKind};

use super::HistoryError;
use super::dependency::{Dependency, DependencyKind};

/// The relation of an unordered pair `(low, high)` of edit indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PairLabel {
    /// Either may come first (EditFlow `bi-directional`).
    Bi,
    /// The lower index comes first.
    LowFirst,
    /// The higher index comes first.
    HighFirst,
    /// No relation.
    None,
}

impl PairLabel {
    /// Every label, in report order.
    pub const ALL: [PairLabel; 4] = [
        PairLabel::Bi,
        PairLabel::LowFirst,
        PairLabel::HighFirst,
        PairLabel::None,
    ];

    /// Short name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            PairLabel::Bi => "bi-directional",
            PairLabel::LowFirst => "lower before higher",
            PairLabel::HighFirst => "higher before lower",
            PairLabel::None => "no relation",
        }
    }

    /// True unless `None`.
    pub fn is_related(self) -> bool {
        self != PairLabel::None
    }
}

/// Edit ids in a trajectory: `e{index}`.
pub fn edit_id(index: usize) -> String {
    format!("e{index}")
}

fn edit_index(id: &str) -> Option<usize> {
    id.strip_prefix('e')?.parse().ok()
}

/// Builds the partial order of `count` edits from their dependencies.
///
/// Every dependency becomes a `bi` edge (EditFlow's annotators mark def/use,
/// import/use, signature/call, clones and test/implementation pairs as mutual)
/// except moves, which are `before` from the deletion to the insertion (unless
/// text moved both ways between the two). One edge per pair, with all reasons.
///
/// The natural order puts what an edit needs first where the `before` edges allow:
/// a definition or import before its first use, a changed signature before its call
/// sites ([`precedences`]).
pub fn order_from_dependencies(count: usize, dependencies: &[Dependency]) -> PartialOrder {
    let precedence = precedences(dependencies);
    complete_order_preferring(count, order_edges(dependencies), "derived", &precedence)
}

/// The provider → dependent pairs of `dependencies` a developer writes in that order:
/// a definition before its use (`def_use`, also as a language server saw it), an import
/// before the uses of the name (`import_use`), a definition before its import elsewhere
/// (`def_import`), a signature before its call sites (`signature_call`,
/// `argument_parameter`), a fixture before the test taking it. Clones, shared names,
/// comments and tests are not needs: either may come first.
pub fn precedences(dependencies: &[Dependency]) -> Vec<(usize, usize)> {
    let mut pairs: BTreeSet<(usize, usize)> = BTreeSet::new();
    for d in dependencies {
        let needs = matches!(
            d.kind,
            DependencyKind::DefUse
                | DependencyKind::SignatureCall
                | DependencyKind::ImportUse
                | DependencyKind::DefImport
                | DependencyKind::ArgumentParameter
                | DependencyKind::Fixture
                | DependencyKind::LspDefUse
                | DependencyKind::LspReference
        );
        if needs && d.from != d.to {
            pairs.insert((d.from, d.to));
        }
    }
    pairs.into_iter().collect()
}

/// One order edge per related pair of `dependencies`, with all its reasons: `bi`,
/// or `before` when moves fix one direction.
pub fn order_edges(dependencies: &[Dependency]) -> Vec<OrderEdge> {
    let mut pairs: BTreeMap<(usize, usize), Vec<&Dependency>> = BTreeMap::new();
    for dependency in dependencies {
        let key = (
            dependency.from.min(dependency.to),
            dependency.from.max(dependency.to),
        );
        pairs.entry(key).or_default().push(dependency);
    }
    let mut edges = Vec::with_capacity(pairs.len());
    for ((low, high), reasons) in pairs {
        let directions: BTreeSet<(usize, usize)> = reasons
            .iter()
            .filter(|d| d.kind.is_directed())
            .map(|d| (d.from, d.to))
            .collect();
        // A move fixes the order even when the moved code also carries def/use
        // relations (it always does): cut before paste.
        let (from, to, kind) = if directions.len() != 1 {
            (low, high, OrderKind::Bi)
        } else {
            let &(from, to) = directions
                .iter()
                .next()
                .expect("a pair has at least one reason");
            (from, to, OrderKind::Before)
        };
        edges.push(OrderEdge {
            from: edit_id(from),
            to: edit_id(to),
            kind,
            reasons: reasons
                .iter()
                .map(|d| EdgeReason {
                    kind: d.kind.into(),
                    detail: d.detail.clone(),
                })
                .collect(),
        });
    }
    edges
}

/// Fills `initial` and `natural` for `edges` over `count` edits.
pub fn complete_order(count: usize, edges: Vec<OrderEdge>, source: &str) -> PartialOrder {
    complete_order_preferring(count, edges, source, &[])
}

/// [`complete_order`] with a natural order that places each edit's providers
/// (`precedence`, provider → dependent) before it where the `before` edges allow.
fn complete_order_preferring(
    count: usize,
    edges: Vec<OrderEdge>,
    source: &str,
    precedence: &[(usize, usize)],
) -> PartialOrder {
    let arcs = arcs(&edges);
    let mut in_degree = vec![0usize; count];
    for &(_, to) in &arcs {
        if to < count {
            in_degree[to] += 1;
        }
    }
    let minimum = in_degree.iter().copied().min().unwrap_or(0);
    let initial = (0..count)
        .filter(|&i| in_degree[i] == minimum)
        .map(edit_id)
        .collect();
    let natural = natural_order_preferring(count, &edges, precedence)
        .into_iter()
        .map(edit_id)
        .collect();
    PartialOrder {
        edges,
        initial,
        natural,
        source: Some(source.to_string()),
    }
}

/// Directed arcs of the graph: a `bi` edge is an arc each way.
fn arcs(edges: &[OrderEdge]) -> Vec<(usize, usize)> {
    let mut arcs = Vec::new();
    for edge in edges {
        let (Some(from), Some(to)) = (edit_index(&edge.from), edit_index(&edge.to)) else {
            continue;
        };
        arcs.push((from, to));
        if edge.kind == OrderKind::Bi {
            arcs.push((to, from));
        }
    }
    arcs
}

/// A deterministic total order consistent with the `before` edges that follows the
/// flow: start with the first minimal in-degree edit; after each edit, prefer an
/// unplaced neighbour of the most recent edit that has one, then the lowest index. Cycles of `before` edges are broken at the
/// lowest index so the order always covers every edit.
///
/// Near-linear: placed edits whose neighbours are all placed leave the list of
/// candidates for good, each edit's neighbour list is consumed from the front, and
/// the ready edits are kept in an ordered set, so a commit of thousands of edits
/// costs about its edges times a logarithm instead of the square of its edits.
pub fn natural_order(count: usize, edges: &[OrderEdge]) -> Vec<usize> {
    natural_order_preferring(count, edges, &[])
}

/// [`natural_order`] where an edit about to be placed first gives way to its unplaced
/// providers (`precedence`, provider → dependent): the lowest-index provider that the
/// `before` edges let come now, and its own providers before it, so a definition comes
/// before its first use and an import before the definition that uses it. A `before`
/// edge (a move, an imported order) wins over a provider; a cycle of providers is cut
/// where it closes. Without providers this is [`natural_order`].
pub fn natural_order_preferring(
    count: usize,
    edges: &[OrderEdge],
    precedence: &[(usize, usize)],
) -> Vec<usize> {
    let graph = Graph::new(count, edges);
    let mut providers = Providers::new(count, precedence);
    let mut blockers_left: Vec<usize> = graph.blockers.iter().map(BTreeSet::len).collect();
    let mut ready: BTreeSet<usize> = (0..count).filter(|&i| blockers_left[i] == 0).collect();
    let mut placed = vec![false; count];
    let mut order = Vec::with_capacity(count);
    // Placed edits that may still have an unplaced neighbour, most recent last, as a
    // list linked through `earlier` so exhausted ones are spliced out anywhere.
    let mut earlier: Vec<Option<usize>> = vec![None; count];
    let mut latest: Option<usize> = None;
    // How far each edit's (ascending) neighbour list is known to be placed.
    let mut consumed = vec![0usize; count];
    let mut lowest_unplaced = 0usize;
    while order.len() < count {
        let first = order
            .is_empty()
            .then(|| {
                (0..count).find(|&i| graph.in_degree[i] == graph.minimum && ready.contains(&i))
            })
            .flatten();
        let from_recent = if first.is_some() {
            None
        } else {
            // Walk from the most recent placed edit back; drop the exhausted ones.
            let mut later: Option<usize> = None;
            let mut current = latest;
            let mut found = None;
            while let Some(recent) = current {
                let list = &graph.neighbours[recent];
                while consumed[recent] < list.len() && placed[list[consumed[recent]]] {
                    consumed[recent] += 1;
                }
                if consumed[recent] == list.len() {
                    // Every neighbour placed: it can never offer one again.
                    match later {
                        Some(l) => earlier[l] = earlier[recent],
                        None => latest = earlier[recent],
                    }
                    current = earlier[recent];
                    continue;
                }
                found = list[consumed[recent]..]
                    .iter()
                    .copied()
                    .find(|&n| !placed[n] && blockers_left[n] == 0);
                if found.is_some() {
                    break;
                }
                later = Some(recent);
                current = earlier[recent];
            }
            found
        };
        while lowest_unplaced < count && placed[lowest_unplaced] {
            lowest_unplaced += 1;
        }
        let next = first
            .or(from_recent)
            .or_else(|| ready.first().copied())
            .unwrap_or(lowest_unplaced);
        // Give way to what `next` needs, and to what that needs in turn.
        let next = providers.first_needed(next, &placed, &blockers_left, order.len());
        placed[next] = true;
        ready.remove(&next);
        for &blocked in &graph.blocks[next] {
            blockers_left[blocked] -= 1;
            if blockers_left[blocked] == 0 && !placed[blocked] {
                ready.insert(blocked);
            }
        }
        earlier[next] = latest;
        latest = Some(next);
        order.push(next);
    }
    order
}

/// What each edit needs placed before it (provider → dependent pairs), walked from an
/// edit about to be placed down to a provider that needs nothing unplaced.
struct Providers {
    /// Each edit's providers, ascending.
    lists: Vec<Vec<usize>>,
    /// How far each list is known to be placed.
    placed_upto: Vec<usize>,
    /// The placement whose walk last visited each edit (the cycle guard of one walk).
    visited_at: Vec<usize>,
}

impl Providers {
    fn new(count: usize, precedence: &[(usize, usize)]) -> Self {
        let mut lists: Vec<Vec<usize>> = vec![Vec::new(); count];
        for &(provider, dependent) in precedence {
            if provider < count && dependent < count && provider != dependent {
                lists[dependent].push(provider);
            }
        }
        for list in &mut lists {
            list.sort_unstable();
            list.dedup();
        }
        Providers {
            lists,
            placed_upto: vec![0; count],
            visited_at: vec![usize::MAX; count],
        }
    }

    /// The edit to place instead of `next` (placement number `stamp`): its lowest
    /// unplaced provider the `before` edges let come now, that provider's own, and so on;
    /// `next` itself when it needs nothing more. A provider already on this walk (a
    /// cycle) is skipped.
    fn first_needed(
        &mut self,
        mut next: usize,
        placed: &[bool],
        blockers_left: &[usize],
        stamp: usize,
    ) -> usize {
        self.visited_at[next] = stamp;
        loop {
            let list = &self.lists[next];
            let upto = &mut self.placed_upto[next];
            while *upto < list.len() && placed[list[*upto]] {
                *upto += 1;
            }
            let visited = &self.visited_at;
            let provider = list[*upto..]
                .iter()
                .copied()
                .find(|&p| !placed[p] && blockers_left[p] == 0 && visited[p] != stamp);
            let Some(provider) = provider else {
                return next;
            };
            self.visited_at[provider] = stamp;
            next = provider;
        }
    }
}

/// The adjacency a natural order walks: neighbours (either direction, ascending),
/// `before` constraints both ways, and in-degrees.
struct Graph {
    neighbours: Vec<Vec<usize>>,
    blockers: Vec<BTreeSet<usize>>,
    blocks: Vec<Vec<usize>>,
    in_degree: Vec<usize>,
    minimum: usize,
}

impl Graph {
    fn new(count: usize, edges: &[OrderEdge]) -> Self {
        let mut blockers = vec![BTreeSet::new(); count];
        let mut neighbours = vec![BTreeSet::new(); count];
        for edge in edges {
            let (Some(from), Some(to)) = (edit_index(&edge.from), edit_index(&edge.to)) else {
                continue;
            };
            if from >= count || to >= count || from == to {
                continue;
            }
            neighbours[from].insert(to);
            neighbours[to].insert(from);
            if edge.kind == OrderKind::Before {
                blockers[to].insert(from);
            }
        }
        let mut blocks = vec![Vec::new(); count];
        for (to, froms) in blockers.iter().enumerate() {
            for &from in froms {
                blocks[from].push(to);
            }
        }
        let mut in_degree = vec![0usize; count];
        for &(_, to) in &arcs(edges) {
            if to < count {
                in_degree[to] += 1;
            }
        }
        let minimum = in_degree.iter().copied().min().unwrap_or(0);
        Graph {
            neighbours: neighbours
                .into_iter()
                .map(|set| set.into_iter().collect())
                .collect(),
            blockers,
            blocks,
            in_degree,
            minimum,
        }
    }
}

/// The label of every related pair in `order`, keyed by `(low, high)`.
pub fn pair_labels(order: &PartialOrder) -> BTreeMap<(usize, usize), PairLabel> {
    let mut directions: BTreeMap<(usize, usize), (bool, bool)> = BTreeMap::new();
    for (from, to) in arcs(&order.edges) {
        if from == to {
            continue;
        }
        let entry = directions.entry((from.min(to), from.max(to))).or_default();
        if from < to {
            entry.0 = true;
        } else {
            entry.1 = true;
        }
    }
    directions
        .into_iter()
        .map(|(pair, (forward, backward))| {
            let label = match (forward, backward) {
                (true, true) => PairLabel::Bi,
                (true, false) => PairLabel::LowFirst,
                _ => PairLabel::HighFirst,
            };
            (pair, label)
        })
        .collect()
}

/// One labelled pair of an EditFlow annotation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AnnotatedPair {
    /// `[edit 0, edit 1]` hunk indices (not always ascending).
    pub edit_hunk_pair: [usize; 2],
    /// `bi-directional`, `0 before 1`, `1 before 0` or `no relation`.
    pub edit_order: String,
    /// Free-text category.
    #[serde(default)]
    pub reason: String,
}

/// Converts EditFlow labelled pairs into `(low, high) → label` (unlisted = no relation).
pub fn editflow_labels(
    pairs: &[AnnotatedPair],
) -> Result<BTreeMap<(usize, usize), PairLabel>, HistoryError> {
    let mut labels = BTreeMap::new();
    for pair in pairs {
        let [first, second] = pair.edit_hunk_pair;
        let first_before_second = match pair.edit_order.as_str() {
            "bi-directional" => None,
            "0 before 1" => Some(true),
            "1 before 0" => Some(false),
            "no relation" => {
                labels.insert((first.min(second), first.max(second)), PairLabel::None);
                continue;
            }
            other => {
                return Err(HistoryError::Annotation(format!(
                    "pair {first},{second} has unknown edit_order {other:?}"
                )));
            }
        };
        let label = match first_before_second {
            None => PairLabel::Bi,
            Some(first_wins) => {
                if (first < second) == first_wins {
                    PairLabel::LowFirst
                } else {
                    PairLabel::HighFirst
                }
            }
        };
        labels.insert((first.min(second), first.max(second)), label);
    }
    Ok(labels)
}

/// An EditFlow annotation as a partial order over `count` edits.
pub fn order_from_editflow(
    count: usize,
    pairs: &[AnnotatedPair],
) -> Result<PartialOrder, HistoryError> {
    let mut edges = Vec::new();
    for pair in pairs {
        let [first, second] = pair.edit_hunk_pair;
        if first >= count || second >= count {
            return Err(HistoryError::Annotation(format!(
                "pair {first},{second} names a hunk the commit does not have ({count} hunks)"
            )));
        }
        let reasons = if pair.reason.is_empty() {
            Vec::new()
        } else {
            vec![EdgeReason {
                kind: ReasonKind::Annotated,
                detail: pair.reason.clone(),
            }]
        };
        let (from, to, kind) = match pair.edit_order.as_str() {
            "bi-directional" => (first.min(second), first.max(second), OrderKind::Bi),
            "0 before 1" => (first, second, OrderKind::Before),
            "1 before 0" => (second, first, OrderKind::Before),
            "no relation" => continue,
            other => {
                return Err(HistoryError::Annotation(format!(
                    "pair {first},{second} has unknown edit_order {other:?}"
                )));
            }
        };
        edges.push(OrderEdge {
            from: edit_id(from),
            to: edit_id(to),
            kind,
            reasons,
        });
    }
    Ok(complete_order(count, edges, "editflow-annotation"))
}

/// One edge of a Historian partial-order file (`{src, tgt, reason}`).
#[derive(Debug, Clone, Deserialize)]
pub struct HistorianEdge {
    /// Source edit index.
    pub src: usize,
    /// Target edit index.
    pub tgt: usize,
    /// Free text.
    #[serde(default)]
    pub reason: String,
}

/// A Historian/EditFlow order graph as a partial order; an edge present in both
/// directions becomes one `bi` edge.
pub fn order_from_historian(
    count: usize,
    edges: &[HistorianEdge],
) -> Result<PartialOrder, HistoryError> {
    let arcs: BTreeMap<(usize, usize), &str> = edges
        .iter()
        .map(|e| ((e.src, e.tgt), e.reason.as_str()))
        .collect();
    let mut out = Vec::new();
    for (&(from, to), reason) in &arcs {
        if from >= count || to >= count {
            return Err(HistoryError::Annotation(format!(
                "edge {from}→{to} names an edit the commit does not have ({count} edits)"
            )));
        }
        let mutual = arcs.contains_key(&(to, from));
        if mutual && from > to {
            continue;
        }
        let reasons = if reason.is_empty() {
            Vec::new()
        } else {
            vec![EdgeReason {
                kind: ReasonKind::Historian,
                detail: reason.to_string(),
            }]
        };
        let kind = if mutual {
            OrderKind::Bi
        } else {
            OrderKind::Before
        };
        out.push(OrderEdge {
            from: edit_id(from),
            to: edit_id(to),
            kind,
            reasons,
        });
    }
    Ok(complete_order(count, out, "historian"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::history::dependency::DependencyKind;

    fn dep(from: usize, to: usize, kind: DependencyKind) -> Dependency {
        Dependency {
            from,
            to,
            kind,
            detail: String::new(),
        }
    }

    /// The first, quadratic, natural order: the reference the near-linear one must match.
    /// A deterministic total order consistent with the `before` edges that follows the
    /// flow: start with the first minimal in-degree edit; after each edit, prefer an
    /// unplaced neighbour of the most recent edit that has one, then the lowest index. Cycles of `before` edges are broken at the
    /// lowest index so the order always covers every edit.
    fn natural_order_reference(count: usize, edges: &[OrderEdge]) -> Vec<usize> {
        let mut blockers = vec![BTreeSet::new(); count];
        let mut neighbours = vec![BTreeSet::new(); count];
        for edge in edges {
            let (Some(from), Some(to)) = (edit_index(&edge.from), edit_index(&edge.to)) else {
                continue;
            };
            if from >= count || to >= count || from == to {
                continue;
            }
            neighbours[from].insert(to);
            neighbours[to].insert(from);
            if edge.kind == OrderKind::Before {
                blockers[to].insert(from);
            }
        }
        let mut in_degree = vec![0usize; count];
        for &(_, to) in &arcs(edges) {
            if to < count {
                in_degree[to] += 1;
            }
        }
        let minimum = in_degree.iter().copied().min().unwrap_or(0);
        let mut placed = vec![false; count];
        let mut order = Vec::with_capacity(count);
        while order.len() < count {
            let ready =
                |i: usize, placed: &[bool]| !placed[i] && blockers[i].iter().all(|&b| placed[b]);
            let from_recent = order.iter().rev().find_map(|&recent: &usize| {
                neighbours[recent]
                    .iter()
                    .copied()
                    .find(|&n| ready(n, &placed))
            });
            // Start where a session can start: the first minimal in-degree edit.
            let first = order
                .is_empty()
                .then(|| (0..count).find(|&i| in_degree[i] == minimum && ready(i, &placed)))
                .flatten();
            let next = first
                .or(from_recent)
                .or_else(|| (0..count).find(|&i| ready(i, &placed)))
                .or_else(|| (0..count).find(|&i| !placed[i]))
                .expect("an unplaced edit exists while the order is incomplete");
            placed[next] = true;
            order.push(next);
        }
        order
    }

    /// The near-linear natural order is the reference's, edit for edit, on random
    /// graphs with `bi` and `before` edges (cycles of `before` included).
    #[test]
    fn natural_order_matches_the_quadratic_reference() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut below = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for round in 0..400 {
            let count = 1 + below(40);
            let edge_count = below(count * 3);
            let edges: Vec<OrderEdge> = (0..edge_count)
                .map(|_| OrderEdge {
                    from: edit_id(below(count)),
                    to: edit_id(below(count)),
                    kind: if below(5) == 0 {
                        OrderKind::Before
                    } else {
                        OrderKind::Bi
                    },
                    reasons: Vec::new(),
                })
                .collect();
            assert_eq!(
                natural_order(count, &edges),
                natural_order_reference(count, &edges),
                "round {round}"
            );
        }
    }

    #[test]
    fn moves_are_directed_and_the_rest_mutual() {
        let order = order_from_dependencies(
            4,
            &[
                dep(2, 0, DependencyKind::DefUse),
                dep(3, 1, DependencyKind::Move),
                dep(0, 2, DependencyKind::Clone),
            ],
        );
        let labels: Vec<_> = pair_labels(&order).into_iter().collect();
        assert_eq!(
            labels,
            vec![((0, 2), PairLabel::Bi), ((1, 3), PairLabel::HighFirst)]
        );
        assert_eq!(order.initial, vec!["e3".to_string()]);
        // e2 defines what e0 uses: it comes first (before this issue: e3, e1, e0, e2).
        assert_eq!(order.natural, vec!["e3", "e1", "e2", "e0"]);
    }

    /// The shape of flask fbb6f0bc: uses of a class (e1, e3) come before the edit that
    /// defines it (e4), which uses an import (e2); a call site (e0) of a re-signed
    /// function (e5). The natural order writes the import, then the class, then its
    /// uses, and the signature before its call; a move (e6 cut before e7 pasted) still
    /// wins over a provider (e7 defines what e6 uses; with no edge into it, e6 starts);
    /// a cycle of providers (e8, e9) is cut where it closes.
    #[test]
    fn the_natural_order_puts_what_an_edit_needs_first() {
        let found = [
            dep(4, 1, DependencyKind::DefUse),
            dep(4, 3, DependencyKind::DefUse),
            dep(2, 4, DependencyKind::ImportUse),
            dep(5, 0, DependencyKind::SignatureCall),
            dep(1, 3, DependencyKind::Clone),
            dep(6, 7, DependencyKind::Move),
            dep(7, 6, DependencyKind::DefUse),
            dep(8, 9, DependencyKind::DefUse),
            dep(9, 8, DependencyKind::DefUse),
        ];
        let order = order_from_dependencies(10, &found);
        assert_eq!(
            order.natural,
            ["e6", "e7", "e5", "e0", "e2", "e4", "e1", "e3", "e9", "e8"]
        );
        // The same edges without the providers: the order of the commit's own flow.
        assert_eq!(
            natural_order(10, &order.edges),
            [6, 7, 0, 5, 1, 3, 4, 2, 8, 9]
        );
        // Clones, shared names, comments and tests are no needs.
        assert_eq!(
            precedences(&[
                dep(1, 0, DependencyKind::Clone),
                dep(1, 0, DependencyKind::TestName),
                dep(3, 2, DependencyKind::DefImport),
                dep(4, 2, DependencyKind::Fixture),
            ]),
            [(3, 2), (4, 2)]
        );
    }

    #[test]
    fn editflow_pairs_keep_their_position_meaning() {
        let pairs: Vec<AnnotatedPair> = serde_json::from_str(
            r#"[{"edit_hunk_pair":[3,1],"edit_order":"0 before 1"},
                {"edit_hunk_pair":[0,1],"edit_order":"bi-directional"},
                {"edit_hunk_pair":[2,0],"edit_order":"1 before 0"}]"#,
        )
        .unwrap();
        let labels: Vec<_> = editflow_labels(&pairs).unwrap().into_iter().collect();
        assert_eq!(
            labels,
            vec![
                ((0, 1), PairLabel::Bi),
                ((0, 2), PairLabel::LowFirst),
                ((1, 3), PairLabel::HighFirst)
            ]
        );
        let order = order_from_editflow(4, &pairs).unwrap();
        assert_eq!(pair_labels(&order), editflow_labels(&pairs).unwrap());
    }
}
