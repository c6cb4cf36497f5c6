//! The JSON `nextedit live --json` prints and the lines of `sessions export --offers`,
//! built from typed values in this one module (field names are a wire format).

use serde_json::{Value, json};

use super::figures::LiveFigures;
use super::outcome::OfferOutcome;

/// One group's figures.
pub fn figures(f: &LiveFigures) -> Value {
    let ranks: serde_json::Map<String, Value> = f
        .ranks
        .iter()
        .map(|(rank, n)| (rank.to_string(), json!(n)))
        .collect();
    json!({
        "group": f.group, "sessions": f.sessions, "offers": f.offers, "items": f.items,
        "accepted": f.accepted, "partial": f.partial, "dismissed": f.dismissed,
        "superseded": f.superseded, "acceptance_rate": f.acceptance_rate,
        "ranks": ranks, "rank_mean": f.rank_mean,
        "latency_p50_ms": f.latency_p50_ms, "latency_p95_ms": f.latency_p95_ms,
        "chars_accepted": f.chars_accepted, "chars_typed": f.chars_typed,
        "kept_30s": f.kept_30s, "kept_5min": f.kept_5min, "kept_end": f.kept_end,
        "zed_kept_rate": f.zed_kept_rate,
        "reversals": f.reversals, "edits_inside": f.edits_inside,
        "right_but_not_taken": f.right_but_not_taken,
    })
}

/// The whole `live --json` document: the groups and every answer's outcome.
pub fn live(groups: &[LiveFigures], sessions: &[super::figures::SessionLive]) -> Value {
    json!({
        "groups": groups.iter().map(figures).collect::<Vec<_>>(),
        "offers": sessions.iter().flat_map(|s| s.outcomes.iter().map(move |o| {
            let mut v = outcome(o);
            v["session"] = json!(s.session);
            v
        })).collect::<Vec<_>>(),
    })
}

/// One answer's outcome, with its items.
pub fn outcome(o: &OfferOutcome) -> Value {
    let first = o.first();
    json!({
        "request_seq": o.request_seq, "seq": first.seq, "t_ms": first.t_ms,
        "latency_ms": first.latency_ms, "kind": first.kind.as_str(), "method": first.method,
        "server": first.server, "file": first.file, "language": o.language,
        "line": first.line, "col_byte": first.col_byte, "list_size": first.list_size,
        "outcome": serde_json::to_value(&o.outcome).unwrap_or(Value::Null),
        "aftermath": o.aftermath, "right_but_not_taken": o.right_but_not_taken,
    })
}

/// One line of `sessions export --offers`: the context before, the offer, its outcome
/// and what the developer wrote instead. `context_chars` bounds the context (its end is kept).
pub fn export_line(o: &OfferOutcome, context_chars: usize) -> Value {
    let skip = o
        .context_before
        .chars()
        .count()
        .saturating_sub(context_chars);
    let context: String = o.context_before.chars().skip(skip).collect();
    let mut line = outcome(o);
    line["context_before"] = json!(context);
    line["items"] = json!(
        o.items
            .iter()
            .map(|i| json!({
                "rank": i.rank, "label": i.label, "text": i.text, "edits": i.edits,
            }))
            .collect::<Vec<_>>()
    );
    line["written_instead"] = json!(o.written_instead);
    line
}
