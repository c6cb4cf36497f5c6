//! Proxy benchmark: what the recording proxy costs, measured side by side in one run.
//!
//! 1. Hover round-trip latency, direct vs through `nextedit proxy` (recording on),
//!    against an echo server (this binary re-executed) and against real pyright; and
//!    completion round trips against the echo server, whose answer is a list of
//!    [`COMPLETION_ITEMS`] items with edits (each recorded as an offer).
//! 2. Throughput of large didOpen frames, direct vs through the proxy.
//! 3. Recorder capacity: small messages/s through the proxy with nothing lost.
//!
//! Run: `cargo bench --bench proxy` (add `-- --quick` for a short run).
//! Targets (issue #2): ≤ 30 µs added p50, ≤ 300 µs added p99, ≥ 300 MB/s, ≥ 50k msgs/s.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nextedit::lsp::client::{LspClient, path_to_uri};
use nextedit::lsp::framing::{FrameDecoder, encode_frame};
use nextedit::lsp::{Envelope, MessageKind};
use serde_json::json;

const ROLE: &str = "NEXTEDIT_BENCH_ROLE";
const TIMEOUT: Duration = Duration::from_secs(60);
/// Items in the echo server's completion answer (the recorder keeps 100 as offers).
const COMPLETION_ITEMS: usize = 200;

fn main() {
    if std::env::var(ROLE).as_deref() == Ok("echo") {
        echo_server();
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let tmp = tempfile::tempdir().expect("tempdir");
    println!(
        "nextedit proxy benchmark ({} mode)\n",
        if quick { "quick" } else { "full" }
    );

    let n = if quick { 500 } else { 5000 };
    println!(
        "hover round trip, {n} sequential requests after warm-up, direct and proxied interleaved"
    );
    println!(
        "{:<28} {:>10} {:>10} {:>10}",
        "", "p50 µs", "p99 µs", "mean µs"
    );
    let echo = || {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.env(ROLE, "echo");
        c
    };
    let (direct, proxied) = latency(
        echo,
        tmp.path(),
        n,
        &tmp.path().join("echo.db"),
        "textDocument/hover",
    );
    print_latency("echo direct", &direct);
    print_latency("echo via proxy (recording)", &proxied);
    print_added(&direct, &proxied);

    println!("\ncompletion round trip, {n} requests, {COMPLETION_ITEMS} items with edits each");
    let (direct, proxied) = latency(
        echo,
        tmp.path(),
        n,
        &tmp.path().join("echo-completion.db"),
        "textDocument/completion",
    );
    print_latency("echo direct", &direct);
    print_latency("echo via proxy (recording)", &proxied);
    print_added(&direct, &proxied);

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
        let (direct, proxied) = latency(
            py,
            tmp.path(),
            n,
            &tmp.path().join("pyright.db"),
            "textDocument/hover",
        );
        print_latency("pyright direct", &direct);
        print_latency("pyright via proxy (recording)", &proxied);
        print_added(&direct, &proxied);
    } else {
        println!("\n(pyright not installed: `npm ci --prefix tests/servers` to include it)");
    }

    let frames = if quick { 16 } else { 64 };
    let size = 4 << 20;
    println!("\nlarge didOpen frames: {frames} × {} MiB", size >> 20);
    let direct = throughput(echo(), tmp.path(), frames, size, None);
    let proxied = throughput(
        echo(),
        tmp.path(),
        frames,
        size,
        Some(&tmp.path().join("big.db")),
    );
    println!("  direct (plain pipe)          {:>8.0} MB/s", direct);
    println!(
        "  via proxy (recording)        {:>8.0} MB/s   ratio {:.2}   target ≥ 300 MB/s",
        proxied,
        proxied / direct
    );

    let seconds = if quick { 0.5 } else { 2.0 };
    println!(
        "\nrecorder capacity: small didChange notifications through the proxy, paced, then one unpaced burst"
    );
    for rate in [50_000.0, 100_000.0, 200_000.0] {
        let messages = (rate * seconds) as usize;
        let (achieved, recorded, dropped) = capacity(echo(), tmp.path(), messages, Some(rate));
        println!(
            "  paced {:>7.0}/s: sent {messages} at {achieved:>7.0}/s, {recorded} recorded, {dropped} dropped",
            rate
        );
    }
    let messages = if quick { 50_000 } else { 200_000 };
    let (achieved, recorded, dropped) = capacity(echo(), tmp.path(), messages, None);
    println!(
        "  burst: {messages} as fast as possible ({achieved:.0}/s), {recorded} recorded, {dropped} dropped"
    );
    println!("  target ≥ 50000/s with 0 lost");

    let rounds = if quick { 20 } else { 100 };
    let lag = commit_lag(echo(), tmp.path(), rounds);
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
        "{:<28} {:>10.1} {:>10.1} {:>10.1}",
        label,
        percentile(samples, 0.50),
        percentile(samples, 0.99),
        mean(samples)
    );
}

fn print_added(direct: &[Duration], proxied: &[Duration]) {
    let p50 = percentile(proxied, 0.50) - percentile(direct, 0.50);
    let p99 = percentile(proxied, 0.99) - percentile(direct, 0.99);
    println!(
        "{:<28} {:>+10.1} {:>+10.1}   targets ≤ 30 / ≤ 300",
        "added by the proxy", p50, p99
    );
}

fn percentile(samples: &[Duration], q: f64) -> f64 {
    let mut v: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

fn mean(samples: &[Duration]) -> f64 {
    samples.iter().map(|d| d.as_secs_f64() * 1e6).sum::<f64>() / samples.len() as f64
}

fn through_proxy(server: Command, db: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nextedit"));
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
    let mut command = match db {
        Some(db) => through_proxy(server, db),
        None => server,
    };
    command.stderr(Stdio::null());
    LspClient::spawn(command).expect("spawn")
}

/// A warm client on `server` (direct, or through a recording proxy) with a file open.
fn warm_client(server: Command, dir: &Path, db: Option<&Path>) -> (LspClient, serde_json::Value) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let file = ws.join("main.py");
    let text = "def greet(name):\n    return 'hi ' + name\n\nprint(greet('x'))\n";
    std::fs::write(&file, text).unwrap();
    let uri = path_to_uri(&file);
    let mut client = start(server, db);
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

/// Hover round trips, direct and proxied, measured in alternating blocks of 100 so
/// that drift (machine load, CPU frequency, server warm-up) affects both alike.
fn latency(
    server: impl Fn() -> Command,
    dir: &Path,
    n: usize,
    db: &Path,
    method: &str,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut direct, direct_params) = warm_client(server(), dir, None);
    let (mut proxied, proxied_params) = warm_client(server(), dir, Some(db));
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for block in 0..n.div_ceil(100) {
        for _ in 0..100.min(n - block * 100) {
            let t = Instant::now();
            direct
                .request(method, direct_params.clone(), TIMEOUT)
                .expect(method);
            a.push(t.elapsed());
            let t = Instant::now();
            proxied
                .request(method, proxied_params.clone(), TIMEOUT)
                .expect(method);
            b.push(t.elapsed());
        }
    }
    direct.shutdown(TIMEOUT).expect("shutdown");
    proxied.shutdown(TIMEOUT).expect("shutdown");
    (a, b)
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
    let _ = std::fs::remove_file(&db);
    let mut command = through_proxy(server, &db);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
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

/// A minimal server: answers `initialize`, every other request with a small
/// result, and exits on `exit` or EOF.
fn echo_server() {
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut decoder = FrameDecoder::new();
    let mut buf = vec![0u8; 1 << 20];
    let items: Vec<serde_json::Value> = (0..COMPLETION_ITEMS)
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
