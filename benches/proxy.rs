//! Proxy benchmark: what the recording proxy costs, measured side by side in one run.
//!
//! 1. Hover round-trip latency, direct vs through `nextedit proxy` (recording on),
//!    against an echo server (this binary re-executed) and against real pyright; and
//!    completion round trips against the echo server, whose answer is a list of
//!    [`COMPLETION_ITEMS`] items with edits (each recorded as an offer).
//! 2. Throughput of large didOpen frames, direct vs through the proxy.
//! 3. Recorder capacity: small messages/s through the proxy with nothing lost.
//! 4. Causality (issue 28): a fast editor that sends a didChange the moment each
//!    completion answer arrives, 2,000 round trips, on a quiet and on a loaded machine:
//!    answers recorded without their request, reactions recorded before their cause.
//! 5. Offer burst (issue 28): 3,000 completion answers of 100 items, quiet and loaded; the time from the
//!    editor closing to every offer in the database.
//!
//! Run: `cargo bench --bench proxy` (add `-- --quick` for a short run, `-- --only
//! causality,burst` for some parts, `-- --baseline PATH` to measure another `nextedit`
//! binary's proxy side by side, e.g. one built from main before a change).
//! Targets (issue #2): ≤ 30 µs added p50, ≤ 300 µs added p99, ≥ 300 MB/s, ≥ 50k msgs/s;
//! (issue 28): 0 unattributed answers and 0 reactions before their cause, the burst in
//! the database ≤ 2 s after the editor closed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;
use support::Load;

use nextedit::core::lsp::framing::{FrameDecoder, encode_frame};
use nextedit::core::lsp::{Envelope, MessageKind};
use nextedit::core::record::uri::path_to_uri;
use nextedit::engine::lsp_client::LspClient;
use serde_json::json;

const ROLE: &str = "NEXTEDIT_BENCH_ROLE";
/// Overrides the echo server's completion items (the causality run's small answers).
const ITEMS: &str = "NEXTEDIT_BENCH_ITEMS";
const TIMEOUT: Duration = Duration::from_secs(60);
/// Items in the echo server's completion answer (the recorder keeps 100 as offers).
const COMPLETION_ITEMS: usize = 200;

/// The proxies measured: this build's, and the baseline's when given.
struct Proxies {
    current: PathBuf,
    baseline: Option<PathBuf>,
}

impl Proxies {
    fn each(&self) -> Vec<(&'static str, &Path)> {
        let mut out = vec![("this build", self.current.as_path())];
        if let Some(baseline) = &self.baseline {
            out.push(("baseline", baseline.as_path()));
        }
        out
    }
}

fn main() {
    if std::env::var(ROLE).as_deref() == Ok("echo") {
        echo_server();
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let proxies = Proxies {
        current: PathBuf::from(env!("CARGO_BIN_EXE_nextedit")),
        baseline: value("--baseline").map(PathBuf::from),
    };
    let only: Option<Vec<String>> =
        value("--only").map(|v| v.split(',').map(str::to_string).collect());
    let part = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|p| p == name));
    let tmp = tempfile::tempdir().expect("tempdir");
    println!(
        "nextedit proxy benchmark ({} mode){}\n",
        if quick { "quick" } else { "full" },
        proxies
            .baseline
            .as_ref()
            .map_or(String::new(), |b| format!(", baseline {}", b.display()))
    );
    let echo = || {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.env(ROLE, "echo");
        c
    };
    if part("latency") {
        latencies(&proxies, echo, tmp.path(), quick);
    }
    if part("throughput") {
        throughputs(echo, tmp.path(), quick);
    }
    if part("capacity") {
        capacities(echo, tmp.path(), quick);
    }
    if part("lag") {
        lags(echo, tmp.path(), quick);
    }
    if part("causality") {
        causalities(&proxies, echo, tmp.path());
    }
    if part("burst") {
        bursts(&proxies, echo, tmp.path());
    }
}

fn latencies(proxies: &Proxies, echo: impl Fn() -> Command, dir: &Path, quick: bool) {
    let n = if quick { 500 } else { 5000 };
    println!(
        "hover round trip, {n} sequential requests after warm-up, direct and proxied interleaved"
    );
    println!(
        "{:<34} {:>10} {:>10} {:>10}",
        "", "p50 µs", "p99 µs", "mean µs"
    );
    let samples = latency(
        proxies,
        &echo,
        dir,
        n,
        &dir.join("echo.db"),
        "textDocument/hover",
    );
    print_latencies("echo", &samples);

    println!("\ncompletion round trip, {n} requests, {COMPLETION_ITEMS} items with edits each");
    let samples = latency(
        proxies,
        &echo,
        dir,
        n,
        &dir.join("echo-completion.db"),
        "textDocument/completion",
    );
    print_latencies("echo", &samples);

    let pyright = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/servers/node_modules/.bin/pyright-langserver");
    if pyright.exists() {
        let py = || {
            let mut c = Command::new(&pyright);
            c.arg("--stdio");
            c
        };
        // As many samples as the echo run: pyright's own tail (GC pauses) needs them for a stable p99.
        println!("\nhover round trip against pyright, {n} requests");
        let samples = latency(
            proxies,
            &py,
            dir,
            n,
            &dir.join("pyright.db"),
            "textDocument/hover",
        );
        print_latencies("pyright", &samples);
    } else {
        println!("\n(pyright not installed: `npm ci --prefix tests/servers` to include it)");
    }
}

fn throughputs(echo: impl Fn() -> Command, dir: &Path, quick: bool) {
    let frames = if quick { 16 } else { 64 };
    let size = 4 << 20;
    println!("\nlarge didOpen frames: {frames} × {} MiB", size >> 20);
    let direct = throughput(echo(), dir, frames, size, None);
    let proxied = throughput(echo(), dir, frames, size, Some(&dir.join("big.db")));
    println!("  direct (plain pipe)          {:>8.0} MB/s", direct);
    println!(
        "  via proxy (recording)        {:>8.0} MB/s   ratio {:.2}   target ≥ 300 MB/s",
        proxied,
        proxied / direct
    );
}

fn capacities(echo: impl Fn() -> Command, dir: &Path, quick: bool) {
    let seconds = if quick { 0.5 } else { 2.0 };
    println!(
        "\nrecorder capacity: small didChange notifications through the proxy, paced, then one unpaced burst"
    );
    for rate in [50_000.0, 100_000.0, 200_000.0] {
        let messages = (rate * seconds) as usize;
        let (achieved, recorded, dropped) = capacity(echo(), dir, messages, Some(rate));
        println!(
            "  paced {:>7.0}/s: sent {messages} at {achieved:>7.0}/s, {recorded} recorded, {dropped} dropped",
            rate
        );
    }
    let messages = if quick { 50_000 } else { 200_000 };
    let (achieved, recorded, dropped) = capacity(echo(), dir, messages, None);
    println!(
        "  burst: {messages} as fast as possible ({achieved:.0}/s), {recorded} recorded, {dropped} dropped"
    );
    println!("  target ≥ 50000/s with 0 lost");
}

fn lags(echo: impl Fn() -> Command, dir: &Path, quick: bool) {
    let rounds = if quick { 20 } else { 100 };
    let lag = commit_lag(echo(), dir, rounds);
    println!(
        "\ncommit lag: from a burst's last answer reaching the editor to the burst in the database\n\
         (what a SIGKILL of the proxy at that moment loses), {rounds} bursts of 50 hovers"
    );
    println!(
        "  p50 {:.1} ms   p95 {:.1} ms   max {:.1} ms   target ≤ 100 ms",
        percentile(&lag, 0.5) / 1000.0,
        percentile(&lag, 0.95) / 1000.0,
        percentile(&lag, 1.0) / 1000.0
    );
}

/// Per burst of 50 hovers through a recording proxy: the time from the last answer's
/// arrival until the database holds the burst (polled every 0.2 ms).
fn commit_lag(server: Command, dir: &Path, rounds: usize) -> Vec<Duration> {
    let db = dir.join("lag.db");
    let mut client = start(server, Some(&db));
    client.initialize(dir, TIMEOUT).expect("initialize");
    let count = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap_or(0)
    };
    // Settled: the handshake is in the database before the first burst.
    std::thread::sleep(Duration::from_millis(500));
    let conn = rusqlite::Connection::open(&db).expect("open the recording");
    let mut expected = count(&conn);
    let params =
        json!({"textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": 0}});
    let mut lags = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        for _ in 0..50 {
            client
                .request("textDocument/hover", params.clone(), TIMEOUT)
                .expect("hover");
        }
        let answered = Instant::now();
        expected += 100;
        while count(&conn) < expected {
            assert!(
                answered.elapsed() < TIMEOUT,
                "the burst never reached the database"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        lags.push(answered.elapsed());
    }
    client.shutdown(TIMEOUT).expect("shutdown");
    lags
}

fn print_latency(label: &str, samples: &[Duration]) {
    println!(
        "{:<34} {:>10.1} {:>10.1} {:>10.1}",
        label,
        percentile(samples, 0.50),
        percentile(samples, 0.99),
        mean(samples)
    );
}

/// Direct first, then each proxy with what it adds.
fn print_latencies(server: &str, samples: &[(String, Vec<Duration>)]) {
    let direct = &samples[0].1;
    print_latency(&format!("{server} direct"), direct);
    for (label, proxied) in &samples[1..] {
        print_latency(&format!("{server} via proxy ({label})"), proxied);
        let p50 = percentile(proxied, 0.50) - percentile(direct, 0.50);
        let p99 = percentile(proxied, 0.99) - percentile(direct, 0.99);
        println!(
            "{:<34} {:>+10.1} {:>+10.1}   targets ≤ 30 / ≤ 300",
            "  added by the proxy", p50, p99
        );
    }
}

fn percentile(samples: &[Duration], q: f64) -> f64 {
    let mut v: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

fn mean(samples: &[Duration]) -> f64 {
    samples.iter().map(|d| d.as_secs_f64() * 1e6).sum::<f64>() / samples.len() as f64
}

/// `server` behind `proxy` recording into a new `db`, its stdin and stdout piped to us.
fn spawn_piped(
    proxy: &Path,
    server: Command,
    db: &Path,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::process::ChildStdout,
) {
    let _ = std::fs::remove_file(db);
    let mut command = through(proxy, server, db);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().expect("spawn the proxy");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (child, stdin, stdout)
}

/// `server` behind the proxy of the `nextedit` binary `proxy`, recording into `db`.
fn through(proxy: &Path, server: Command, db: &Path) -> Command {
    let mut command = Command::new(proxy);
    command.arg("proxy").arg("--db").arg(db).arg("--");
    command.arg(server.get_program()).args(server.get_args());
    for (k, v) in server.get_envs() {
        if let Some(v) = v {
            command.env(k, v);
        }
    }
    command
}

fn start(server: Command, db: Option<&Path>) -> LspClient {
    start_with(Path::new(env!("CARGO_BIN_EXE_nextedit")), server, db)
}

fn start_with(proxy: &Path, server: Command, db: Option<&Path>) -> LspClient {
    let mut command = match db {
        Some(db) => through(proxy, server, db),
        None => server,
    };
    command.stderr(Stdio::null());
    LspClient::spawn(command).expect("spawn")
}

/// A warm client on `server` (direct, or through the recording proxy of `proxy`) with a file open.
fn warm_client(
    proxy: &Path,
    server: Command,
    dir: &Path,
    db: Option<&Path>,
) -> (LspClient, serde_json::Value) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let file = ws.join("main.py");
    let text = "def greet(name):\n    return 'hi ' + name\n\nprint(greet('x'))\n";
    std::fs::write(&file, text).unwrap();
    let uri = path_to_uri(&file);
    let mut client = start_with(proxy, server, db);
    client.initialize(&ws, TIMEOUT).expect("initialize");
    client
        .notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}))
        .unwrap();
    let params = json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 7}});
    for _ in 0..200 {
        client
            .request("textDocument/hover", params.clone(), TIMEOUT)
            .expect("hover");
    }
    (client, params)
}

/// Round trips of `method`, direct and through each proxy, measured in alternating
/// blocks of 100 so that drift (machine load, CPU frequency, server warm-up) affects
/// all alike. The first samples are the direct ones.
fn latency(
    proxies: &Proxies,
    server: &impl Fn() -> Command,
    dir: &Path,
    n: usize,
    db: &Path,
    method: &str,
) -> Vec<(String, Vec<Duration>)> {
    let mut clients = vec![(
        "direct".to_string(),
        warm_client(&proxies.current, server(), dir, None),
    )];
    for (i, (label, proxy)) in proxies.each().into_iter().enumerate() {
        let db = db.with_extension(format!("{i}.db"));
        clients.push((
            label.to_string(),
            warm_client(proxy, server(), dir, Some(&db)),
        ));
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(n); clients.len()];
    for block in 0..n.div_ceil(100) {
        for _ in 0..100.min(n - block * 100) {
            for ((_, (client, params)), samples) in clients.iter_mut().zip(&mut samples) {
                let t = Instant::now();
                client
                    .request(method, params.clone(), TIMEOUT)
                    .expect(method);
                samples.push(t.elapsed());
            }
        }
    }
    clients
        .into_iter()
        .zip(samples)
        .map(|((label, (mut client, _)), samples)| {
            client.shutdown(TIMEOUT).expect("shutdown");
            (label, samples)
        })
        .collect()
}

fn throughput(server: Command, dir: &Path, frames: usize, size: usize, db: Option<&Path>) -> f64 {
    let mut client = start(server, db);
    client.initialize(dir, TIMEOUT).expect("initialize");
    let text = "x".repeat(size - 1) + "\n";
    let bodies: Vec<Vec<u8>> = (0..frames)
        .map(|i| {
            let body = json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": format!("file:///big/{i}.py"), "languageId": "python", "version": 1, "text": text}}});
            encode_frame(body.to_string().as_bytes())
        })
        .collect();
    let total: usize = bodies.iter().map(Vec::len).sum();
    let t = Instant::now();
    for frame in &bodies {
        client.send_raw(frame).unwrap();
    }
    // A request after the frames: its answer means the server has read them all.
    client.request("sync", json!({}), TIMEOUT).expect("sync");
    let elapsed = t.elapsed();
    client.shutdown(TIMEOUT).expect("shutdown");
    total as f64 / elapsed.as_secs_f64() / 1e6
}

/// Sends `messages` notifications (at `rate` per second, or unpaced) through a
/// recording proxy; returns the send rate achieved, messages recorded and copies dropped.
fn capacity(server: Command, dir: &Path, messages: usize, rate: Option<f64>) -> (f64, i64, i64) {
    let db = dir.join(format!("capacity-{}.db", rate.map_or(0, |r| r as u64)));
    let (mut child, mut stdin, mut stdout) =
        spawn_piped(Path::new(env!("CARGO_BIN_EXE_nextedit")), server, &db);
    let drain = std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stdout.read_to_end(&mut sink);
    });
    let uri = "file:///bench/typing.py";
    let mut batch = Vec::new();
    batch.extend(encode_frame(
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": ""}}})
            .to_string()
            .as_bytes(),
    ));
    let t = Instant::now();
    for i in 0..messages {
        let body = json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": i + 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": i % 80}, "end": {"line": 0, "character": i % 80}}, "text": "a"}]}});
        batch.extend(encode_frame(body.to_string().as_bytes()));
        if (i + 1) % 500 == 0 {
            stdin.write_all(&batch).unwrap();
            batch.clear();
            if let Some(rate) = rate {
                let due = Duration::from_secs_f64((i + 1) as f64 / rate);
                if let Some(wait) = due.checked_sub(t.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
        }
    }
    stdin.write_all(&batch).unwrap();
    let sent_in = t.elapsed();
    drop(stdin);
    child.wait().unwrap();
    drain.join().unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let recorded: i64 = conn
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    let dropped: i64 = conn
        .query_row("SELECT dropped FROM sessions", [], |r| r.get(0))
        .unwrap();
    (messages as f64 / sent_in.as_secs_f64(), recorded, dropped)
}

/// Causality, for each proxy, on a quiet and on a loaded machine.
fn causalities(proxies: &Proxies, echo: impl Fn() -> Command, dir: &Path) {
    let rounds = 2_000;
    println!(
        "\ncausality: a fast editor sends a didChange the moment each completion answer (3 items)\n\
         arrives, {rounds} round trips; answers recorded without their request (no method, no offers),\n\
         reactions recorded before their cause (in sequence, in time)"
    );
    println!(
        "{:<26} {:>13} {:>13} {:>13} {:>8} {:>7}",
        "", "unattributed", "seq before", "time before", "rt µs", "exit s"
    );
    for (label, proxy) in proxies.each() {
        for loaded in [false, true] {
            let load = loaded.then(Load::start);
            let mut server = echo();
            server.env(ITEMS, "3");
            let c = causality(proxy, server, dir, rounds);
            drop(load);
            println!(
                "{:<26} {:>6} / {rounds} {:>6} / {rounds} {:>6} / {rounds} {:>8.1} {:>7.2}",
                format!("{label}, {}", if loaded { "loaded" } else { "quiet" }),
                c.unattributed,
                c.sequenced_before,
                c.stamped_before,
                c.round_trip_us,
                c.exit_seconds
            );
        }
    }
    println!("  target 0 / {rounds} in every column");
}

/// What a causality run's recording says.
struct Causality {
    unattributed: usize,
    sequenced_before: usize,
    stamped_before: usize,
    /// The round trips' mean, microseconds.
    round_trip_us: f64,
    /// From the editor's `exit` to the proxy's exit (the recording written), seconds.
    exit_seconds: f64,
}

/// The fast editor through `proxy`: it reads the proxy's output itself and writes the
/// didChange and the next request the moment an answer arrives.
fn causality(proxy: &Path, server: Command, dir: &Path, rounds: u64) -> Causality {
    let db = dir.join("causality.db");
    let (mut child, mut stdin, mut stdout) = spawn_piped(proxy, server, &db);
    let mut decoder = FrameDecoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut send = |messages: &[serde_json::Value]| {
        let mut bytes = Vec::new();
        for m in messages {
            bytes.extend(encode_frame(m.to_string().as_bytes()));
        }
        stdin.write_all(&bytes).unwrap();
        stdin.flush().unwrap();
    };
    let mut answer = |id: u64| loop {
        while let Some(chunk) = decoder.next_chunk() {
            let Some(body) = chunk.body() else { continue };
            let envelope = Envelope::parse(body).unwrap();
            if envelope.kind == MessageKind::Response
                && envelope.id == Some(id.to_string().as_str())
            {
                return;
            }
        }
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "the proxy closed its output");
        decoder.feed(&buf[..n]);
    };
    let uri = "file:///bench/fast.py";
    let completion = |id: u64, column: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/completion",
               "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": column}}})
    };
    send(&[
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}),
    ]);
    answer(0);
    send(&[
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": ""}}}),
        completion(1, 0),
    ]);
    let t = Instant::now();
    for k in 1..=rounds {
        answer(k);
        let change = json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": k + 1},
            "contentChanges": [{"range": {"start": {"line": 0, "character": k - 1}, "end": {"line": 0, "character": k - 1}}, "text": "x"}]}});
        if k < rounds {
            send(&[change, completion(k + 1, k)]);
        } else {
            send(&[change]);
        }
    }
    let round_trip_us = t.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    send(&[json!({"jsonrpc": "2.0", "id": rounds + 1, "method": "shutdown"})]);
    answer(rounds + 1);
    let t = Instant::now();
    send(&[json!({"jsonrpc": "2.0", "method": "exit"})]);
    drop(stdin);
    child.wait().unwrap();
    let exit_seconds = t.elapsed().as_secs_f64();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows = |sql: &str| -> Vec<(i64, i64, Option<String>)> {
        conn.prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let answers = rows(&format!(
        "SELECT m.seq, m.t_ns, (SELECT m.method WHERE EXISTS (SELECT 1 FROM offers o WHERE o.seq = m.seq)) \
         FROM messages m WHERE m.dir = 's2c' AND m.kind = 'response' \
         AND CAST(m.msg_id AS INTEGER) BETWEEN 1 AND {rounds} ORDER BY m.seq"
    ));
    let changes = rows(
        "SELECT seq, t_ns, method FROM messages WHERE dir = 'c2s' AND method = 'textDocument/didChange' ORDER BY seq",
    );
    assert_eq!(
        (answers.len(), changes.len()),
        (rounds as usize, rounds as usize)
    );
    Causality {
        unattributed: answers
            .iter()
            .filter(|a| a.2.as_deref() != Some("textDocument/completion"))
            .count(),
        sequenced_before: answers
            .iter()
            .zip(&changes)
            .filter(|(a, c)| c.0 < a.0)
            .count(),
        stamped_before: answers
            .iter()
            .zip(&changes)
            .filter(|(a, c)| c.1 < a.1)
            .count(),
        round_trip_us,
        exit_seconds,
    }
}

/// The offer burst, for each proxy.
fn bursts(proxies: &Proxies, echo: impl Fn() -> Command, dir: &Path) {
    let (answers, items) = (3_000, 100);
    println!(
        "\noffer burst: {answers} completion answers of {items} items, pipelined; from the editor\n\
         closing to the proxy's exit (every offer in the database)"
    );
    for (label, proxy) in proxies.each() {
        // Also with a busy loop on every core: the recorder and its writer run at nice
        // 10 while the editor is there, so the drain after it has gone is what competes.
        for loaded in [false, true] {
            let load = loaded.then(Load::start);
            let mut server = echo();
            server.env(ITEMS, items.to_string());
            let (sent, drained, offers, cpu) = burst(proxy, server, dir, answers);
            drop(load);
            let label = format!("{label}, {}", if loaded { "loaded" } else { "quiet" });
            // A burst that lost offers is not a figure.
            assert_eq!(offers, (answers * items) as i64, "{label}: offers lost");
            println!(
                "  {label:<20} answered in {sent:.2} s, in the database {drained:.2} s after the editor closed, {offers} offers, proxy CPU {cpu:.2} s"
            );
        }
    }
    println!("  target ≤ 2 s, {} offers", answers * items);
}

/// Sends `answers` completion requests at once through `proxy`, reads every answer, closes
/// the editor's side; returns the seconds to the last answer, the seconds from closing to
/// the proxy's exit, the offers recorded and the CPU seconds of the proxy (its echo server
/// included: a few per cent).
fn burst(proxy: &Path, server: Command, dir: &Path, answers: usize) -> (f64, f64, i64, f64) {
    let db = dir.join("burst.db");
    let (mut child, mut stdin, mut stdout) = spawn_piped(proxy, server, &db);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut decoder = FrameDecoder::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut seen = 0;
        loop {
            let n = stdout.read(&mut buf).unwrap_or(0);
            if n == 0 {
                return;
            }
            decoder.feed(&buf[..n]);
            while decoder.next_chunk().is_some() {
                seen += 1;
                if seen == answers + 1 {
                    let _ = done_tx.send(());
                }
            }
        }
    });
    let uri = "file:///bench/burst.py";
    let mut bytes = Vec::new();
    for message in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
            "text": "def greet(name):\n    return 'hi ' + name\n\nprint(greet('x'))\n"}}}),
    ] {
        bytes.extend(encode_frame(message.to_string().as_bytes()));
    }
    for id in 1..=answers {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/completion",
            "params": {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 11}}});
        bytes.extend(encode_frame(request.to_string().as_bytes()));
    }
    let t = Instant::now();
    stdin.write_all(&bytes).unwrap();
    done_rx.recv_timeout(TIMEOUT).expect("every answer");
    let sent = t.elapsed().as_secs_f64();
    let closed = Instant::now();
    drop(stdin);
    let cpu = wait_with_cpu(&mut child);
    let drained = closed.elapsed().as_secs_f64();
    reader.join().unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let offers: i64 = conn
        .query_row("SELECT count(*) FROM offers", [], |r| r.get(0))
        .unwrap();
    (sent, drained, offers, cpu)
}

/// Waits for `child`; returns the CPU seconds (user + system) it used, its threads'
/// together (on a loaded machine the wall time says more about the others).
fn wait_with_cpu(child: &mut std::process::Child) -> f64 {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 on our own child, which nothing else
    // waits for, fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// A minimal server: answers `initialize`, every other request with a small
/// result, and exits on `exit` or EOF.
fn echo_server() {
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut decoder = FrameDecoder::new();
    let mut buf = vec![0u8; 1 << 20];
    let count = std::env::var(ITEMS)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(COMPLETION_ITEMS);
    let items: Vec<serde_json::Value> = (0..count)
        .map(|i| json!({"label": format!("greet_{i}"), "kind": 3, "sortText": format!("{i:05}"),
                        "textEdit": {"range": {"start": {"line": 3, "character": 6}, "end": {"line": 3, "character": 11}}, "newText": format!("greet_{i}")}}))
        .collect();
    let completion = json!({"isIncomplete": false, "items": items}).to_string();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        decoder.feed(&buf[..n]);
        while let Some(chunk) = decoder.next_chunk() {
            let Some(body) = chunk.body() else { continue };
            let Ok(envelope) = Envelope::parse(body) else {
                continue;
            };
            match (envelope.kind, envelope.method.as_deref(), envelope.id) {
                (MessageKind::Request, Some("initialize"), Some(id)) => reply(
                    &mut stdout,
                    id,
                    r#"{"capabilities":{"textDocumentSync":2,"hoverProvider":true}}"#,
                ),
                (MessageKind::Request, Some("shutdown"), Some(id)) => {
                    reply(&mut stdout, id, "null")
                }
                (MessageKind::Request, Some("textDocument/completion"), Some(id)) => {
                    reply(&mut stdout, id, &completion)
                }
                (MessageKind::Request, _, Some(id)) => reply(
                    &mut stdout,
                    id,
                    r#"{"contents":{"kind":"plaintext","value":"(function) def greet(name) -> str"}}"#,
                ),
                (MessageKind::Notification, Some("exit"), _) => return,
                _ => {}
            }
        }
    }
}

fn reply(out: &mut impl Write, id: &str, result: &str) {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
    out.write_all(&encode_frame(body.as_bytes())).unwrap();
    out.flush().unwrap();
}
