//! Derive every commit among a real repository's last 1,000 (no `--lsp`):
//! commits per second and peak memory.
//!
//! Usage: `NEXTEDIT_BENCH_REPO=/path/to/repo cargo bench --bench derive`
//! (or pass the path as the first argument). Optional `NEXTEDIT_BENCH_COMMITS`
//! changes the count. Without a repository the bench says so and exits 0.

use std::time::Instant;

use nextedit::engine::history::{CommitSource, GitRepository, HistoryError, derive_commit};

fn peak_rss_kib() -> Option<u64> {
    // Linux only: the high-water mark of resident memory.
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .or_else(|| std::env::var("NEXTEDIT_BENCH_REPO").ok());
    let Some(path) = path else {
        println!(
            "derive bench skipped: set NEXTEDIT_BENCH_REPO to a git repository (or pass its path)"
        );
        return;
    };
    let count: usize = std::env::var("NEXTEDIT_BENCH_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let raw = git2::Repository::open(&path).expect("the bench repository opens");
    let mut walk = raw.revwalk().unwrap();
    walk.push_head().unwrap();
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .unwrap();
    let commits: Vec<String> = walk
        .take(count)
        .map(|oid| oid.unwrap().to_string())
        .collect();
    let repo = GitRepository::open(std::path::Path::new(&path)).unwrap();
    let project = repo.project();

    let start = Instant::now();
    let mut load_seconds = 0.0;
    // (seconds, sha, edits, edges) of the slowest commits, to see what costs.
    let mut slowest: Vec<(f64, String, usize, usize)> = Vec::new();
    let (mut derived, mut merges, mut failed, mut edits, mut edges, mut files) = (0, 0, 0, 0, 0, 0);
    for sha in &commits {
        let load_start = Instant::now();
        let record = repo.load(sha).expect("commits of the walk load");
        load_seconds += load_start.elapsed().as_secs_f64();
        let derive_start = Instant::now();
        match derive_commit(&record, project.as_deref()) {
            Ok(t) => {
                slowest.push((
                    derive_start.elapsed().as_secs_f64(),
                    sha.clone(),
                    t.edits.len(),
                    t.order.edges.len(),
                ));
                derived += 1;
                edits += t.edits.len();
                edges += t.order.edges.len();
                files += t.files.len();
            }
            Err(HistoryError::Merge { .. }) => merges += 1,
            Err(error) => {
                failed += 1;
                eprintln!("failed {sha}: {error}");
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!("repository        {path}");
    println!(
        "commits           {} ({derived} derived, {merges} merges refused, {failed} failed)",
        commits.len()
    );
    println!("files / edits     {files} / {edits}, {edges} order edges");
    println!(
        "total             {seconds:.2} s ({load_seconds:.2} s reading git objects and diffing trees)"
    );
    println!(
        "throughput        {:.1} commits/s",
        commits.len() as f64 / seconds
    );
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (secs, sha, n_edits, n_edges) in slowest.iter().take(3) {
        println!(
            "slow commit       {} {secs:.2} s, {n_edits} edits, {n_edges} edges",
            &sha[..10]
        );
    }
    match peak_rss_kib() {
        Some(kib) => println!("peak memory       {:.1} MiB (VmHWM)", kib as f64 / 1024.0),
        None => println!("peak memory       unavailable (no /proc/self/status)"),
    }
}
