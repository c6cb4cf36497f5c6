//! What became of the offers a language server made in a recorded session
//! (`nextedit live`, docs/live.md): the typed offers ([`Offer`]), each offer's outcome
//! and what happened next (`outcome`, with the inserted text tracked through later
//! edits by `span`, and the text at its place by `place` for Zed's kept rate), the
//! figures over one or many sessions (`figures`), their text, JSON and HTML forms
//! (`text`, `json`, `html`) and the preference-training lines of `sessions export
//! --offers` ([`export_lines`], each built by `json::export_line`). Pure: offers and a
//! trajectory in, typed values out; the outcome is computed when read, never stored, so
//! it can be recomputed. The stored offers become [`Offer`]s in `service::sessions`.

pub mod figures;
pub mod html;
pub mod json;
pub mod outcome;
pub mod place;
pub mod span;
pub mod text;

pub use figures::{GroupBy, LiveFigures, SessionLive, figures};
pub use outcome::{
    Aftermath, DismissReason, Evidence, LiveConfig, OfferOutcome, Outcome, RightButNotTaken,
    analyse,
};

pub use crate::core::lsp::OfferKind;
pub use crate::core::trajectory::{Offer, OfferEdit};

/// The program name of a server command (`/usr/bin/pyright-langserver --stdio` →
/// `pyright-langserver`), the name `--by server` groups by and `recorded:SERVER` matches.
pub fn server_name(command: &[String]) -> String {
    // `node …/pyright-langserver.js` or `python -m pylsp`: the first argument that is
    // not an interpreter names the server.
    const INTERPRETERS: [&str; 6] = ["node", "python", "python3", "env", "npx", "uvx"];
    let base = |arg: &str| {
        let name = arg.rsplit('/').next().unwrap_or(arg);
        name.strip_suffix(".js").unwrap_or(name).to_string()
    };
    command
        .iter()
        .map(|arg| base(arg))
        .find(|name| !name.starts_with('-') && !INTERPRETERS.contains(&name.as_str()))
        .unwrap_or_default()
}

/// Whether an offer's server matches `wanted` (`recorded:pyright` matches
/// `pyright-langserver`): the server name contains it.
pub fn server_matches(server: &str, wanted: &str) -> bool {
    server.contains(wanted)
}

/// The lines of `sessions export --offers`: each answer of a recorded trajectory with
/// its context (at most `context_chars` before the place), items, outcome and what
/// the developer wrote instead.
pub fn export_lines(
    trajectory: &crate::core::trajectory::Trajectory,
    context_chars: usize,
) -> Vec<serde_json::Value> {
    analyse(trajectory, &trajectory.offers, LiveConfig::default())
        .iter()
        .map(|o| json::export_line(o, context_chars))
        .collect()
}
