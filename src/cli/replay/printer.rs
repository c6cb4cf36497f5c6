//! What a replay run says, printed: notes on stderr, each trajectory's steps on stdout
//! (a JSON line or a table), and the progress over its trajectories.

use nextedit::progress::Progress;
use nextedit::run::{RunError, RunEvents, json, text};
use nextedit::store::StoredStep;

/// Prints what a run says: messages on stderr, each trajectory's steps on stdout.
pub(super) struct Printer {
    pub(super) json: bool,
    pub(super) progress: Progress,
}

impl RunEvents for Printer {
    fn note(&self, message: &str) {
        self.progress.suspend(|| eprintln!("nextedit: {message}"));
    }

    fn selected(&self, range: &str, selection: &nextedit::history::Selection) {
        let line = nextedit::history::selection::describe_selection(range, selection);
        self.progress.suspend(|| eprintln!("nextedit: {line}"));
    }

    fn replayed(
        &self,
        key: &str,
        steps: &mut dyn Iterator<Item = Result<StoredStep, RunError>>,
    ) -> Result<(), RunError> {
        let mut printed = Ok(0);
        self.progress.suspend(|| {
            let mut out = std::io::stdout().lock();
            printed = if self.json {
                json::write_trajectory_steps(&mut out, key, steps)
            } else {
                text::print_steps(&mut out, key, steps)
            };
        });
        let count = printed?;
        let s = if count == 1 { "" } else { "s" };
        self.progress.item(key, &format!("{count} step{s}"));
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
