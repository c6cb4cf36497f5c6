//! The field's other yardsticks, each equal to its reference implementation.
//!
//! - [`delta_chrf`]: Zed's delta-chrF (character n-grams of the two edits, 0–100).
//! - [`exact_lines`]: Zed's exact-lines precision/recall/F1 over the changed lines of two patches.
//! - [`kept_rate`]: Zed's kept rate (how much of a prediction's new text the final text keeps).
//! - [`nep`]: the Next Edit Prediction benchmark's exact, partial and position match.
//! - [`pydifflib`]: Python `difflib`'s `SequenceMatcher` and `unified_diff`, which NEP's
//!   chunks come from. [`bag`]: multiset TP/FP/FN and the P/R/F1 built on them.
//!
//! Pinned reference commits and every convention: `docs/metrics.md`.

pub mod bag;
pub mod delta_chrf;
pub mod exact_lines;
pub mod kept_rate;
pub mod nep;
pub mod pydifflib;
