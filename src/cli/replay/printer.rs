//! What a replay run says, printed: notes on stderr, each trajectory's steps on stdout
//! (a JSON line or a table), and the progress over its trajectories.

use std::io::Write;

use nextedit::progress::Progress;
use nextedit::run::{RunEvents, json, text};
use nextedit::store::StoredStep;

/// Prints what a run says: messages on stderr, each trajectory's steps on stdout.
pub(super) struct Printer {
    pub(super) json: bool,
    pub(super) progress: Progress,
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
        self.progress.suspend(|| {
            let mut out = std::io::stdout().lock();
            if self.json {
                writeln!(out, "{}", json::trajectory_steps(key, steps))
            } else {
                text::print_steps(&mut out, key, steps)
            }
        })?;
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
