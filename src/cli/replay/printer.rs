//! What a replay run says, printed: notes on stderr, each trajectory's steps on stdout
//! (a JSON line or a table).

use std::io::Write;

use nextedit::run::{RunEvents, json, text};
use nextedit::store::StoredStep;

/// Prints what a run says: messages on stderr, each trajectory's steps on stdout.
pub(super) struct Printer {
    pub(super) json: bool,
}

impl RunEvents for Printer {
    fn note(&self, message: &str) {
        eprintln!("nextedit: {message}");
    }

    fn selected(&self, range: &str, selection: &nextedit::history::Selection) {
        eprintln!(
            "nextedit: {}",
            nextedit::history::selection::describe_selection(range, selection)
        );
    }

    fn replayed(&self, key: &str, steps: &[StoredStep]) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        if self.json {
            writeln!(out, "{}", json::trajectory_steps(key, steps))
        } else {
            text::print_steps(&mut out, key, steps)
        }
    }
}
