//! Metrics: pure functions from texts, token sequences and read/edit records to numbers.
//!
//! Architecture invariant: no I/O, no files, no SQLite, no async. Callers read inputs
//! and hand them over as strings or slices; file contents needed by ContextBench come
//! through the [`contextbench::RepoView`] trait.
//!
//! - [`bleu`]: Historian BLEU-4, NLTK, sacrebleu and tensorflow-nmt sentence BLEU
//!   (a `BleuSpec` picks tokenizer and formula). [`bleu_variant`]: the named variants
//!   `score bleu` offers with their smoothing options, resolved to a spec.
//! - [`ngram`]: the n-gram counts BLEU and SARI share.
//! - [`sari`]: SARI in the orig, HF, skip, EASSE and t2t conventions.
//! - [`lcs`]: linear-memory longest common subsequence.
//! - [`excision`]: the Excision Score (ES-Line, ES-Token).
//! - [`diffbleu`]: DiffBLEU; [`similarity`]: exact match, edit similarity, chrF.
//! - [`contextbench`]: ContextBench coverage, precision, AUC, redundancy, EditLoc.
//! - [`flow`]: flow aggregation over replay steps (micro/macro P/R/F1, flow shares,
//!   hit@k, MRR).
//! - [`statistics`]: the one mean and nearest-rank quantile of every report.
//! - [`yardsticks`]: Zed's delta-chrF, exact lines and kept rate; NEP's matches.
//!
//! Definitions, conventions and compat differences: `docs/metrics.md`.

pub mod bleu;
pub mod bleu_variant;
pub mod contextbench;
pub mod diffbleu;
pub mod excision;
pub mod flow;
pub mod lcs;
pub mod ngram;
pub mod sari;
pub mod similarity;
pub mod statistics;
pub mod yardsticks;
