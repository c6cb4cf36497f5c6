//! Very long recorded sessions: 410,000 content changes through the whole recorded
//! path — the recorder (LSP frames → records), SQLite (one transaction per 20 ms
//! burst's worth, as the proxy's tap does), the export that rebuilds every text and
//! coalesces the changes into edits, the dependency analysis, and the replay state —
//! with the time of each stage and the process's peak memory after each.
//!
//! The session is synthetic but shaped like typing valid code: statements typed key
//! by key (60 ms apart, a typo erased now and then), identifiers renamed by selecting
//! and typing, lines deleted, comment markers at three cursors in one didChange;
//! pauses between bursts, switches between 4 files of about 400 lines.
//!
//! Run: `cargo bench --bench long_session`. `-- --changes N` records another size
//! (default 410,000 changes: about 20,000 edits); `--lengths 1000,5000,20000` (the
//! default; `all` is the whole session) runs the dependency analysis on the
//! session's first N edits for each N, each in a child process of its own so each
//! peak is its size's, and prints a table of cost against session length with the
//! growth of the time from one length to the next; up to `--reference-up-to`
//! edits (default 5,000) the child also runs the reference analysis that reparses
//! in full after every edit and says whether its edges are the same.

use nextedit::store::SessionRead;
use nextedit::store::SessionStore;
use std::time::Instant;

use nextedit::core::lsp::Direction;
use nextedit::core::lsp::framing::encode_frame;
use nextedit::core::record::privacy::PrivacyFilter;
use nextedit::core::record::{RecorderConfig, SessionRecorder};
use nextedit::core::trajectory::Trajectory;
use nextedit::engine::history::{recorded_order_by_full_parses, recorded_order_with_counts};
use nextedit::engine::replay::state::ReplayState;
use nextedit::store::{Database, NewSession, SessionEnd};
use serde_json::json;

/// The process's peak resident memory so far (VmHWM), in MiB.
fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// A deterministic pseudo-random source (PCG-style LCG), so every run types the same.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// One LSP position (UTF-16; the synthetic text is ASCII) of a byte offset.
fn position(text: &str, byte: usize) -> serde_json::Value {
    let line = text[..byte].matches('\n').count();
    let col = byte - text[..byte].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": col})
}

/// The process's resident memory now (VmRSS), in MiB.
fn resident_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The child's part: the dependency analysis of the trajectory in `file`; prints
/// `edges seconds peak resident` and, with `reference`, the seconds of the analysis
/// that reparses in full after every edit and whether its edges are the same
/// (the differing edges on stderr).
fn analyze(file: &str, reference: bool) {
    let trajectory: Trajectory =
        serde_json::from_slice(&std::fs::read(file).unwrap()).expect("the parent wrote it");
    let resident = resident_mib();
    let t = Instant::now();
    let (order, counts) = recorded_order_with_counts(&trajectory);
    let seconds = t.elapsed().as_secs_f64();
    let peak = peak_mib();
    print!(
        "{} {seconds:.3} {peak:.1} {resident:.1} {}/{}/{}",
        order.edges.len(),
        counts.windows,
        counts.reparses,
        counts.amortized
    );
    if reference {
        let t = Instant::now();
        let full = recorded_order_by_full_parses(&trajectory);
        let full_seconds = t.elapsed().as_secs_f64();
        for edge in full.edges.iter().filter(|e| !order.edges.contains(e)) {
            eprintln!("      only with full reparses: {edge:?}");
        }
        for edge in order.edges.iter().filter(|e| !full.edges.contains(e)) {
            eprintln!("      only with windows: {edge:?}");
        }
        let same = if full.edges == order.edges {
            "yes"
        } else {
            "NO"
        };
        print!(" {full_seconds:.2} {same}");
    }
    println!();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--analyze") {
        analyze(&args[i + 1], args.iter().any(|a| a == "--reference"));
        return;
    }
    let changes: usize = args
        .iter()
        .position(|a| a == "--changes")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(410_000);
    let dir = tempfile::tempdir().unwrap();
    let mut db = Database::open(&dir.path().join("long.db")).unwrap();
    let session = db
        .begin_session(&NewSession {
            workspace: Some("/ws".into()),
            record_raw: false,
            ..NewSession::default()
        })
        .unwrap();
    let mut recorder = SessionRecorder::new(RecorderConfig {
        record_raw: false,
        record_server_raw: false,
        privacy: PrivacyFilter::with_defaults(),
        workspace: Some("/ws".into()),
    });
    let base_line = "    value = compute(value, 42)  # a line of ordinary code\n";
    let mut docs: Vec<String> = (0..4)
        .map(|f| {
            format!(
                "def main_{f}(value):\n{}    return value\n",
                base_line.repeat(400)
            )
        })
        .collect();
    let mut versions = [1i64; 4];
    let mut t_ns = 0u64;
    let mut dice = Dice(7);
    let mut records = Vec::new();
    let mut batches = 0usize;
    let started = Instant::now();
    let observe = |recorder: &mut SessionRecorder,
                   records: &mut Vec<_>,
                   t_ns: u64,
                   body: serde_json::Value| {
        let body = body.to_string();
        let frame = encode_frame(body.as_bytes());
        records.extend(recorder.observe_frame(
            Direction::ClientToServer,
            t_ns,
            &frame,
            frame.len() - body.len(),
            false,
        ));
    };
    for (f, doc) in docs.iter().enumerate() {
        observe(
            &mut recorder,
            &mut records,
            0,
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": format!("file:///ws/m{f}.py"), "languageId": "python", "version": 1, "text": doc}}}),
        );
    }
    let (mut file, mut sent, mut serial) = (0usize, 0usize, 0usize);
    let mut write_time = 0.0;
    while sent < changes {
        // One burst: a new statement typed key by key (with a typo fixed on the way),
        // an identifier renamed, a line deleted, or a comment marker at three cursors.
        if dice.below(8) == 0 {
            file = dice.below(4);
        }
        t_ns += [300, 2_500, 9_000][dice.below(3)] * 1_000_000;
        let doc = &docs[file];
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(
                doc.match_indices('\n')
                    .map(|(i, _)| i + 1)
                    .filter(|&i| i < doc.len()),
            )
            .collect();
        let line = line_starts[dice.below(line_starts.len())];
        // Each didChange: a list of (start, end, text) in the text as each one leaves it.
        let mut burst: Vec<Vec<(usize, usize, String)>> = Vec::new();
        match dice.below(10) {
            0..=5 => {
                serial += 1;
                let statement = format!("    total_{serial} = compute(value, {serial})\n");
                for (k, ch) in statement.char_indices() {
                    burst.push(vec![(line + k, line + k, ch.to_string())]);
                    if k == 9 && dice.below(3) == 0 {
                        burst.push(vec![(line + k + 1, line + k + 1, "x".into())]);
                        burst.push(vec![(line + k + 1, line + k + 2, String::new())]);
                    }
                }
            }
            6 | 7 => {
                if let Some(at) = doc[line..].find("value").map(|i| line + i) {
                    burst.push(vec![(at, at + 5, "a".into())]);
                    for (k, ch) in "mount".char_indices() {
                        burst.push(vec![(at + 1 + k, at + 1 + k, ch.to_string())]);
                    }
                }
            }
            8 => {
                let end = doc[line..].find('\n').map_or(doc.len(), |i| line + i + 1);
                burst.push(vec![(line, end, String::new())]);
            }
            _ => {
                let picks: Vec<usize> = (0..3)
                    .map(|k| {
                        line_starts[(line_starts.iter().position(|&s| s == line).unwrap() + k * 7)
                            % line_starts.len()]
                    })
                    .collect();
                let mut sorted = picks.clone();
                sorted.sort_unstable();
                sorted.dedup();
                // Bottom-up, so each position is still valid when its change applies.
                burst.push(
                    sorted
                        .iter()
                        .rev()
                        .map(|&at| (at, at, "# ".to_string()))
                        .collect(),
                );
            }
        }
        for did_change in burst {
            if sent >= changes {
                break;
            }
            let doc = &mut docs[file];
            let mut content_changes = Vec::new();
            for (start, end, text) in did_change {
                content_changes.push(json!({"range": {"start": position(doc, start), "end": position(doc, end)}, "text": text}));
                doc.replace_range(start..end, &text);
            }
            versions[file] += 1;
            observe(
                &mut recorder,
                &mut records,
                t_ns,
                json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": format!("file:///ws/m{file}.py"), "version": versions[file]},
                    "contentChanges": content_changes}}),
            );
            sent += 1;
            t_ns += 60_000_000;
            if records.len() >= 2_000 {
                let w = Instant::now();
                db.write_records(session, &records).unwrap();
                write_time += w.elapsed().as_secs_f64();
                records.clear();
                batches += 1;
            }
        }
    }
    let w = Instant::now();
    db.write_records(session, &records).unwrap();
    db.end_session(session, SessionEnd::Exited(Some(0)), 0)
        .unwrap();
    write_time += w.elapsed().as_secs_f64();
    let record_total = started.elapsed().as_secs_f64();
    println!("long session: {changes} didChange notifications over 4 files ({batches} batches)");
    println!(
        "  record + store   {:8.2} s  ({:.0} changes/s; SQLite {:.2} s)   peak {:7.1} MiB",
        record_total,
        changes as f64 / record_total,
        write_time,
        peak_mib()
    );
    let t = Instant::now();
    let trajectory = db.trajectory(session).unwrap();
    let export = t.elapsed().as_secs_f64();
    let raw = trajectory
        .events
        .iter()
        .filter(|e| matches!(e.body, nextedit::core::trajectory::EventBody::Change(_)))
        .count();
    println!(
        "  export+coalesce  {:8.2} s  ({raw} raw changes → {} edits)                peak {:7.1} MiB",
        export,
        trajectory.edits.len(),
        peak_mib()
    );
    for (f, doc) in docs.iter().enumerate() {
        let path = format!("m{f}.py");
        let final_text = trajectory
            .files
            .iter()
            .find(|x| x.path == path)
            .and_then(|x| x.final_text.clone());
        assert_eq!(final_text.as_deref(), Some(doc.as_str()), "{path} rebuilt");
    }
    // The dependency analysis (incremental parsing, symbol indexes, look-alike edits
    // chained) over the session's first N edits for each N, each in a child process
    // of its own so each size's peak memory is its own: how the cost grows.
    let all = trajectory.edits.len();
    let lengths: Vec<usize> = args
        .iter()
        .position(|a| a == "--lengths")
        .and_then(|i| args.get(i + 1))
        .map_or("1000,5000,20000", String::as_str)
        .split(',')
        .filter_map(|n| {
            if n == "all" {
                Some(all)
            } else {
                n.parse().ok()
            }
        })
        .collect();
    let reference_up_to: usize = args
        .iter()
        .position(|a| a == "--reference-up-to")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(5_000);
    println!(
        "  dependency analysis by session length (one child process per length; peak: its VmHWM, \
         loading included; resident: its memory before the analysis, the trajectory without events; \
         × time: against the row above (× edits); windows/full/am.: queries a window answered, \
         full reparses, of those amortized)"
    );
    println!(
        "    {:>7} {:>9} {:>9} {:>9} {:>10} {:>9} {:>12} {:>17}   {:>12} {:>9}",
        "edits",
        "edges",
        "seconds",
        "µs/edit",
        "peak MiB",
        "resident",
        "× time",
        "windows/full/am.",
        "full reparse",
        "same edges"
    );
    let mut previous: Option<(usize, f64)> = None;
    for length in lengths {
        if length > all {
            println!(
                "    {length:>7} (the session has only {all} edits: record more with --changes)"
            );
            continue;
        }
        let mut head = trajectory.clone();
        head.edits.truncate(length);
        // The analysis reads the files and edits only; the raw events stay home.
        head.events.clear();
        let file = dir.path().join(format!("head-{length}.json"));
        std::fs::write(&file, serde_json::to_vec(&head).unwrap()).unwrap();
        drop(head);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child.arg("--analyze").arg(&file);
        if length <= reference_up_to {
            child.arg("--reference");
        }
        let output = child.output().expect("the bench runs itself as a child");
        assert!(
            output.status.success(),
            "analysis of {length} edits: {output:?}"
        );
        print!("{}", String::from_utf8_lossy(&output.stderr));
        let answer = String::from_utf8(output.stdout).unwrap();
        let fields: Vec<&str> = answer.split_whitespace().collect();
        let [edges, seconds, peak, resident, parses, reference @ ..] = &fields[..] else {
            panic!("the child's answer: {answer:?}");
        };
        let seconds: f64 = seconds.parse().unwrap();
        let ratio = previous.map_or("-".to_string(), |(edits, time)| {
            format!(
                "{:.2} ({:.1}×)",
                seconds / time,
                length as f64 / edits as f64
            )
        });
        let (reference_seconds, same) = match reference {
            [time, same] => (format!("{time} s"), *same),
            _ => ("-".to_string(), "-"),
        };
        println!(
            "    {:>7} {:>9} {:>9.2} {:>9.0} {:>10} {:>9} {:>12} {:>17}   {:>12} {:>9}",
            length,
            edges,
            seconds,
            seconds * 1e6 / length as f64,
            peak,
            resident,
            ratio,
            parses,
            reference_seconds,
            same
        );
        previous = Some((length, seconds));
    }
    let t = Instant::now();
    let mut state = ReplayState::new(&trajectory).unwrap();
    let built = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for idx in 0..state.edits().len() {
        state.apply(idx);
    }
    let applied = t.elapsed().as_secs_f64();
    for (f, doc) in docs.iter().enumerate() {
        assert_eq!(
            state.text(&format!("m{f}.py")).as_deref(),
            Some(doc.as_str())
        );
    }
    println!(
        "  replay state     {:8.2} s build, {:.2} s to apply all ({:.1} µs/edit)   peak {:7.1} MiB",
        built,
        applied,
        applied * 1e6 / state.edits().len() as f64,
        peak_mib()
    );
}
