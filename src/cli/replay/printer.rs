//! What a replay run says, printed: notes on stderr, each trajectory's steps on stdout
//! (a table or a JSON line; kept for the one document of `--json`), and the progress
//! over its trajectories.

use std::io::Write;

use nextedit::progress::Progress;
use nextedit::run::json::{Layout, ReplayDocument};
use nextedit::run::{RunEvents, json, text};
use nextedit::store::StoredStep;

/// Prints what a run says: messages on stderr, each trajectory's steps on stdout.
pub(super) struct Printer {
    /// JSON (a document or lines) instead of tables.
    pub(super) layout: Option<Layout>,
    pub(super) progress: Progress,
    /// `--json`: what is printed as one document at the end.
    pub(super) document: ReplayDocument,
}

impl Printer {
    /// A printer of this layout with this progress.
    pub(super) fn new(layout: Option<Layout>, progress: Progress) -> Printer {
        Printer {
            layout,
            progress,
            document: ReplayDocument::default(),
        }
    }
}

impl RunEvents for Printer {
    fn note(&self, message: &str) {
        let message = nextedit::secrets::scrub(message);
        self.progress.suspend(|| eprintln!("nextedit: {message}"));
    }

    fn selected(&self, range: &str, selection: &nextedit::history::Selection) {
        let line = nextedit::history::selection::describe_selection(range, selection);
        self.progress.suspend(|| eprintln!("nextedit: {line}"));
    }

    fn replayed(&self, key: &str, steps: &[StoredStep]) -> std::io::Result<()> {
        match self.layout {
            Some(Layout::Document) => self.document.push(json::trajectory_steps(key, steps)),
            Some(Layout::Lines) => self.progress.suspend(|| {
                writeln!(
                    std::io::stdout().lock(),
                    "{}",
                    json::trajectory_steps(key, steps)
                )
            })?,
            None => self
                .progress
                .suspend(|| text::print_steps(&mut std::io::stdout().lock(), key, steps))?,
        }
        let s = if steps.len() == 1 { "" } else { "s" };
        self.progress.item(key, &format!("{} step{s}", steps.len()));
        Ok(())
    }

    fn started(&self, trajectories: usize) {
        self.progress.start(trajectories);
    }

    fn failed(&self, key: &str, error: &str) {
        self.note(&format!("skipping {key}: {error}"));
        self.progress.item(key, "skipped");
    }
}
