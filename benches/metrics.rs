//! Metric benchmarks (`cargo bench --bench metrics`), printed as plain text.
//!
//! - ES-Line and ES-Token on a 10,000-line file pair with a 5-line edit (target: ES-Line
//!   ≤ 20 ms), plus a worst case with no shared prefix/suffix;
//! - ContextBench scoring throughput (tasks/s) on the shared demo cases;
//! - sacrebleu-compatible sentence BLEU against sacrebleu itself when a Python with
//!   sacrebleu is available (`SACREBLEU_PYTHON`, default `/tmp/sacrebleu-venv/bin/python`):
//!   same inputs, same scores checked, time ratio printed.

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use nextedit::core::metrics::bleu::sacrebleu_sentence_bleu;
use nextedit::core::metrics::contextbench::{
    ContextBenchConfig, Mode, evaluate, parse_gold_jsonl, parse_predictions_jsonl,
};
use nextedit::core::metrics::excision::{EsGranularity, ExcisionConfig, excision_score_text};
use nextedit::core::syntax::Language;
use nextedit::service::contextbench_io::DirRepo;

/// Deterministic pseudo-random numbers (xorshift64*), so every run times the same input.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A Python-looking file of `lines` lines.
fn synthetic_python(rng: &mut Rng, lines: usize) -> Vec<String> {
    let names = [
        "alpha", "beta", "gamma", "delta", "value", "total", "items", "result",
    ];
    let mut out = Vec::with_capacity(lines);
    while out.len() < lines {
        let f = rng.below(100_000);
        out.push(format!("def function_{f}(x, y):"));
        for _ in 0..rng.below(8) + 2 {
            let a = names[rng.below(8) as usize];
            let b = names[rng.below(8) as usize];
            let n = rng.below(1000);
            out.push(format!("    {a} = {b} + x * {n}  # step {n}"));
        }
        out.push("    return x".to_owned());
        out.push(String::new());
    }
    out.truncate(lines);
    out
}

fn time<F: FnMut()>(mut f: F, min_runs: usize, budget: Duration) -> (Duration, usize) {
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < min_runs || start.elapsed() < budget {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
        if samples.len() >= 10_000 {
            break;
        }
    }
    samples.sort();
    (samples[samples.len() / 2], samples.len())
}

fn bench_es() {
    let mut rng = Rng(0x5eed);
    let o = synthetic_python(&mut rng, 10_000);
    let mut a = o.clone();
    let mut b = o.clone();
    for k in 0..5 {
        a[5_000 + k] = format!("    patched_{k} = gold(x, {k})");
        b[5_000 + k] = format!("    patched_{k} = guess(x, {k})");
    }
    let (o, a, b) = (
        o.join("\n") + "\n",
        a.join("\n") + "\n",
        b.join("\n") + "\n",
    );
    let cfg = ExcisionConfig::default();
    let (line, n_line) = time(
        || {
            black_box(excision_score_text(
                &o,
                &a,
                &b,
                EsGranularity::Line,
                None,
                &cfg,
            ));
        },
        20,
        Duration::from_secs(2),
    );
    let (token, n_token) = time(
        || {
            black_box(excision_score_text(
                &o,
                &a,
                &b,
                EsGranularity::Token,
                Some(Language::Python),
                &cfg,
            ));
        },
        5,
        Duration::from_secs(3),
    );
    let es = excision_score_text(&o, &a, &b, EsGranularity::Line, None, &cfg).score;
    println!(
        "ES on 10,000 lines ({} KiB) with a 5-line edit:",
        o.len() >> 10
    );
    println!(
        "  ES-Line   median {:>9.3} ms  ({n_line} runs; target ≤ 20 ms; score {es:.4})",
        ms(line)
    );
    println!(
        "  ES-Token  median {:>9.3} ms  ({n_token} runs; one full + two incremental tree-sitter parses)",
        ms(token)
    );

    // Worst case for the LCS: nothing shared at the ends, edits spread everywhere.
    let mut rng = Rng(0xbad);
    let o: Vec<String> = synthetic_python(&mut rng, 2_000);
    let a: Vec<String> = o
        .iter()
        .map(|l| {
            if rng.below(10) == 0 {
                format!("{l} # a")
            } else {
                l.clone()
            }
        })
        .collect();
    let b: Vec<String> = o
        .iter()
        .map(|l| {
            if rng.below(10) == 0 {
                format!("{l} # b")
            } else {
                l.clone()
            }
        })
        .collect();
    let (o, a, b) = (o.join("\n"), a.join("\n"), b.join("\n"));
    let (worst, n) = time(
        || {
            black_box(excision_score_text(
                &o,
                &a,
                &b,
                EsGranularity::Line,
                None,
                &cfg,
            ));
        },
        5,
        Duration::from_secs(2),
    );
    println!(
        "  ES-Line   median {:>9.3} ms  ({n} runs; 2,000 lines, 10% of lines edited throughout)",
        ms(worst)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn bench_contextbench() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/contextbench-demo/");
    let read = |n: &str| std::fs::read_to_string(format!("{demo}{n}")).expect("demo data");
    let cases = [
        ("case1_gold.jsonl", "case1_pred.jsonl"),
        ("case2_gold.jsonl", "case2_pred.jsonl"),
        (
            "case3_benchkit_gold.jsonl",
            "case3_benchkit_converted_pred.jsonl",
        ),
    ];
    let tasks: Vec<_> = cases
        .iter()
        .map(|(g, p)| {
            (
                parse_gold_jsonl(&read(g)).unwrap().remove(0),
                parse_predictions_jsonl(&read(p)).unwrap().remove(0),
            )
        })
        .collect();
    let repo = DirRepo::new(demo);
    println!("ContextBench scoring (3 demo tasks; file reads and tree-sitter parses included):");
    for mode in [Mode::Compat, Mode::Fixed] {
        let cfg = ContextBenchConfig {
            mode,
            ..Default::default()
        };
        let start = Instant::now();
        let mut n = 0usize;
        while start.elapsed() < Duration::from_secs(2) {
            for (g, p) in &tasks {
                black_box(evaluate(g, p, &repo, &cfg).unwrap());
                n += 1;
            }
        }
        let rate = n as f64 / start.elapsed().as_secs_f64();
        println!("  {mode:?}: {rate:>10.0} tasks/s  ({n} tasks)");
    }
}

fn bench_bleu_vs_sacrebleu() {
    let mut rng = Rng(42);
    let words = [
        "return", "self", "x", "y", "=", "+", "(", ")", "foo", "bar", "if", "else", ":", "0", "1",
    ];
    let sentence = |rng: &mut Rng| -> String {
        let n = 5 + rng.below(25);
        (0..n)
            .map(|_| words[rng.below(words.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let pairs: Vec<(String, String)> = (0..5_000)
        .map(|_| (sentence(&mut rng), sentence(&mut rng)))
        .collect();
    let start = Instant::now();
    let ours: Vec<f64> = pairs
        .iter()
        .map(|(h, r)| sacrebleu_sentence_bleu(h, &[r.as_str()]))
        .collect();
    let ours_t = start.elapsed();
    black_box(&ours);
    println!(
        "sacrebleu-style sentence BLEU (13a, exp, effective order), {} pairs:",
        pairs.len()
    );
    println!(
        "  nextedit   {:>9.3} ms total, {:>7.2} µs/pair",
        ms(ours_t),
        ours_t.as_secs_f64() * 1e6 / pairs.len() as f64
    );

    let python = std::env::var("SACREBLEU_PYTHON")
        .unwrap_or_else(|_| "/tmp/sacrebleu-venv/bin/python".to_owned());
    if !Path::new(&python).exists() {
        println!(
            "  sacrebleu  skipped: no Python with sacrebleu at {python} (set SACREBLEU_PYTHON)"
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("nextedit-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("pairs.tsv");
    let mut f = std::fs::File::create(&input).unwrap();
    for (h, r) in &pairs {
        writeln!(f, "{h}\t{r}").unwrap();
    }
    drop(f);
    let script = r#"
import sys, time
from sacrebleu.metrics import BLEU
pairs = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8")]
bleu = BLEU(effective_order=True)
t = time.perf_counter()
scores = [bleu.sentence_score(h, [r]).score for h, r in pairs]
dt = time.perf_counter() - t
print(dt)
for s in scores: print(repr(s))
"#;
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(&input)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let Ok(out) = out
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    else {
        println!("  sacrebleu  skipped: could not run {python}");
        return;
    };
    let mut lines = out.lines();
    let Some(Ok(py_t)) = lines.next().map(str::parse::<f64>) else {
        println!("  sacrebleu  skipped: unexpected output from {python}");
        return;
    };
    let theirs: Vec<f64> = lines.filter_map(|l| l.parse().ok()).collect();
    let max_diff = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!(
        "  sacrebleu  {:>9.3} ms total, {:>7.2} µs/pair (sacrebleu 2.x, same inputs)",
        py_t * 1e3,
        py_t * 1e6 / pairs.len() as f64
    );
    println!(
        "  ratio      sacrebleu / nextedit = {:.1}×; scores compared: {}, max |diff| = {max_diff:e}",
        py_t / ours_t.as_secs_f64(),
        theirs.len()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters nothing here.
    bench_es();
    println!();
    bench_contextbench();
    println!();
    bench_bleu_vs_sacrebleu();
}
