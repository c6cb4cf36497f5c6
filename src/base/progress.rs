//! Progress of the long commands (replay, derive --range, import (historian-testset
//! too), eval-order, export trajectories|results, score contextbench) on stderr, one
//! piece for all of them: an indicatif bar with count, rate and ETA when stderr is a
//! terminal, one line `nextedit: [n/N] item: outcome` per finished item when it is not
//! (a log keeps every item), and nothing with `--quiet`. The bar is hidden while
//! anything else is written, so lines never tear it. Replay's printer feeds it from
//! `run::RunEvents` (`started`, `replayed`, `failed`).

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressStyle};

/// How progress shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar that redraws in place (stderr is a terminal).
    Bar,
    /// One line per finished item (stderr is a file or a pipe).
    Lines,
    /// Nothing (`--quiet`).
    Quiet,
}

impl ProgressMode {
    /// `Quiet` when asked, else a bar on a terminal and lines elsewhere.
    pub fn detect(quiet: bool) -> ProgressMode {
        if quiet {
            ProgressMode::Quiet
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Bar
        } else {
            ProgressMode::Lines
        }
    }
}

/// The progress of one batch of items (trajectories, commits, files, instances).
/// Shared by worker threads: every method takes `&self`.
pub struct Progress {
    mode: ProgressMode,
    /// What the items are, plural (`trajectories`, `commits`).
    unit: &'static str,
    total: AtomicU64,
    done: AtomicU64,
    bar: OnceLock<ProgressBar>,
}

impl Progress {
    /// Progress of `unit` items, not started yet (see [`Progress::start`]).
    pub fn new(mode: ProgressMode, unit: &'static str) -> Progress {
        Progress {
            mode,
            unit,
            total: AtomicU64::new(0),
            done: AtomicU64::new(0),
            bar: OnceLock::new(),
        }
    }

    /// Starts counting towards `total` items (the bar appears now).
    pub fn start(&self, total: usize) {
        self.total.store(total as u64, Ordering::Relaxed);
        if self.mode == ProgressMode::Bar {
            let bar = self.bar.get_or_init(|| {
                let bar = ProgressBar::new(total as u64);
                let template = format!(
                    "{{bar:40}} {{pos}}/{{len}} {} {{per_sec}} eta {{eta}} {{msg}}",
                    self.unit
                );
                bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
                bar
            });
            bar.set_length(total as u64);
        }
    }

    /// An item started: the bar names it while it runs (a slow fetch shows what it is
    /// waiting on); nothing without a bar.
    pub fn working_on(&self, what: &str) {
        if let Some(bar) = self.bar.get() {
            bar.set_message(what.to_string());
        }
    }

    /// An item finished: `what` names it, `outcome` says how it went. A line
    /// `nextedit: [3/10] <what>: <outcome>` without a terminal.
    pub fn item(&self, what: &str, outcome: &str) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        match self.mode {
            ProgressMode::Bar => {
                if let Some(bar) = self.bar.get() {
                    bar.set_message(what.to_string());
                    bar.inc(1);
                }
            }
            ProgressMode::Lines => {
                let total = self.total.load(Ordering::Relaxed);
                eprintln!("nextedit: [{n}/{total}] {what}: {outcome}");
            }
            ProgressMode::Quiet => {}
        }
    }

    /// Runs `write` with the bar hidden, for output that must not tear it (a message
    /// on stderr, a table on a terminal's stdout).
    pub fn suspend<T>(&self, write: impl FnOnce() -> T) -> T {
        match self.bar.get() {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    /// Removes the bar (the count is said by the command's own summary).
    pub fn finish(&self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
