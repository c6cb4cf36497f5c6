//! `nextedit live` analysis benchmark: how long working out every answer's outcome and
//! aftermath takes on long sessions, side by side by length. A synthetic session types
//! a file line by line (one keystroke per change, 10 per second), asks for a completion
//! list of 20 items every 30 keystrokes, takes every other list's first item (a
//! `completion` change) and deletes part of every fourth taken item a minute later.
//!
//! Run: `cargo bench --bench live` (`-- --quick` for the two shorter sessions only).

use std::time::Instant;

use nextedit::core::trajectory::{
    Change, Event, EventBody, FileEntry, Offer, OfferEdit, Origin, SessionInfo, SessionKind,
    Trajectory,
};
use nextedit::engine::live::{LiveConfig, OfferKind, SessionLive};

/// A session of `keys` keystrokes with its offers.
fn session(keys: usize) -> (Trajectory, Vec<Offer>) {
    let mut t = Trajectory::new(SessionInfo::new("bench", SessionKind::Recorded));
    t.files.push(FileEntry::new("a.py", Some(String::new())));
    let (mut text, mut offers, mut seq, mut ms) = (String::new(), Vec::new(), 0u64, 0.0);
    let push = |t: &mut Trajectory,
                text: &mut String,
                seq: &mut u64,
                ms: f64,
                at: usize,
                end: usize,
                after: &str,
                origin: Origin| {
        *seq += 1;
        let before = text[at..end].to_string();
        text.replace_range(at..end, after);
        t.events.push(Event {
            seq: *seq,
            t_ms: ms,
            body: EventBody::Change(Change {
                file: "a.py".into(),
                version: *seq as i64,
                start_byte: at,
                end_byte: end,
                start_line: 0,
                end_line: 0,
                new_end_line: 0,
                before,
                after: after.into(),
                origin,
            }),
        });
    };
    let mut taken = Vec::new();
    for k in 0..keys {
        ms += 100.0;
        let ch = if k % 40 == 39 { "\n" } else { "x" };
        let at = text.len();
        push(&mut t, &mut text, &mut seq, ms, at, at, ch, Origin::User);
        if k % 30 == 29 && ch != "\n" {
            seq += 2;
            let at = text.len();
            let line = text.matches('\n').count();
            let col = at - text.rfind('\n').map_or(0, |i| i + 1);
            for rank in 0..20 {
                let item = format!("item_{rank}_value");
                offers.push(Offer {
                    seq,
                    rank,
                    request_seq: seq - 1,
                    t_ms: ms + 50.0,
                    latency_ms: 50.0,
                    kind: OfferKind::Completion,
                    method: "textDocument/completion".into(),
                    file: "a.py".into(),
                    line: Some(line),
                    col_byte: Some(col),
                    label: Some(item.clone()),
                    text: item.clone(),
                    edits: vec![OfferEdit {
                        file: "a.py".into(),
                        start_byte: at,
                        end_byte: at,
                        text: item,
                    }],
                    list_size: 20,
                    server: "bench-server".into(),
                });
            }
            if (k / 30) % 2 == 0 {
                ms += 300.0;
                push(
                    &mut t,
                    &mut text,
                    &mut seq,
                    ms,
                    at,
                    at,
                    "item_0_value",
                    Origin::Completion,
                );
                taken.push((at, ms));
            }
        }
    }
    // Every fourth taken item loses "_value" a minute later (at the end, in order).
    for (i, (at, _)) in taken.iter().enumerate().rev() {
        if i % 4 == 0 {
            ms += 100.0;
            push(
                &mut t,
                &mut text,
                &mut seq,
                ms,
                at + 6,
                at + 12,
                "",
                Origin::User,
            );
        }
    }
    (t, offers)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let lengths: &[usize] = if quick {
        &[2_000, 10_000]
    } else {
        &[2_000, 10_000, 50_000]
    };
    println!(
        "{:>9}  {:>8}  {:>7}  {:>10}  {:>12}",
        "keys", "answers", "items", "analysis", "per answer"
    );
    for &keys in lengths {
        let (trajectory, offers) = session(keys);
        let answers = offers.len() / 20;
        let started = Instant::now();
        let live = SessionLive::of("bench", &trajectory, &offers, LiveConfig::default());
        let took = started.elapsed();
        assert_eq!(live.outcomes.len(), answers);
        println!(
            "{keys:>9}  {answers:>8}  {:>7}  {:>8.1} ms  {:>9.1} µs",
            offers.len(),
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e6 / answers as f64
        );
    }
}
