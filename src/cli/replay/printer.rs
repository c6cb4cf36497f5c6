//! What a replay run says, printed (the `run::RunEvents` the CLI implements): notes on
//! stderr, each trajectory's steps on stdout
//! (a table or a JSON line; for the one document of `--json`, which steps it will read
//! back and write at the end), and the progress over its trajectories.

use std::io::Write;

use nextedit::base::progress::Progress;
use nextedit::service::run::json::{Layout, ReplayDocument};
use nextedit::service::run::{NewSteps, RunError, RunEvents, json, text};
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

impl Printer {
    /// Progress: trajectory `key` added `count` steps.
    fn said(&self, key: &str, count: usize) {
        let s = if count == 1 { "" } else { "s" };
        self.progress.item(key, &format!("{count} step{s}"));
    }
}

impl RunEvents for Printer {
    fn note(&self, message: &str) {
        let message = nextedit::base::secrets::scrub(message);
        self.progress.suspend(|| eprintln!("nextedit: {message}"));
    }

    fn selected(&self, range: &str, selection: &nextedit::engine::history::Selection) {
        let line = nextedit::engine::history::selection::describe_selection(range, selection);
        self.progress.suspend(|| eprintln!("nextedit: {line}"));
    }

    fn replayed(
        &self,
        new: &NewSteps,
        steps: &mut dyn Iterator<Item = Result<StoredStep, RunError>>,
    ) -> Result<(), RunError> {
        let key = new.key.as_str();
        // Written at the end, after the summary: counted now, read again then.
        if self.layout == Some(Layout::Document) {
            let mut count = 0;
            for step in steps {
                step?;
                count += 1;
            }
            self.document.push(new.clone());
            self.said(key, count);
            return Ok(());
        }
        let mut printed = Ok(0);
        self.progress.suspend(|| {
            let mut out = std::io::stdout().lock();
            printed = match self.layout {
                Some(_) => json::write_trajectory_steps(&mut out, key, steps),
                None => text::print_steps(&mut out, key, steps),
            };
            // A JSON line's end.
            if self.layout.is_some()
                && printed.is_ok()
                && let Err(error) = writeln!(out)
            {
                printed = Err(RunError::Print(error));
            }
        });
        let count = printed?;
        self.said(key, count);
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
