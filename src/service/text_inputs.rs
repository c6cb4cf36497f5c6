//! The texts a text metric scores (`nextedit score bleu|sari|es|diffbleu`): the
//! origin O, the references A and the prediction B, each read from a file or, for
//! at most one of them, from standard input (`-`).
//!
//! Kept out of [`crate::core::metrics`], which stays pure (strings in, numbers out).

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why the texts could not be read (the messages name the command-line options).
#[derive(Debug, thiserror::Error)]
pub enum TextInputError {
    /// More than one text was to come from standard input.
    #[error("only one of --origin, --reference, --prediction can be `-` (standard input)")]
    TwoStdins,
    /// More than one of the named texts was to come from standard input.
    #[error("only one of {0} can be `-` (standard input)")]
    TwoStdinsAmong(String),
    /// The metric needs an origin and none was given.
    #[error("--origin is required for this metric")]
    NoOrigin,
    /// Standard input could not be read.
    #[error("reading {flag} from standard input")]
    Stdin {
        /// The option that said `-`.
        flag: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("reading {flag} file `{}`", path.display())]
    File {
        /// The option that named the file.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A metric defined on one reference was given several.
    #[error("{metric} compares with one reference; {count} --reference files were given")]
    OneReference {
        /// The metric's name.
        metric: &'static str,
        /// How many were given.
        count: usize,
    },
}

/// The texts of one scoring call: origin (empty when not needed), references, prediction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextInputs {
    /// The original document O (empty when the metric does not use it).
    pub origin: String,
    /// The reference revisions A, the ground truth.
    pub references: Vec<String>,
    /// The predicted revision B.
    pub prediction: String,
}

impl TextInputs {
    /// Reads the texts; at most one path may be `-`. Without an origin the origin is
    /// empty, unless `need_origin` makes that an error.
    pub fn read(
        origin: Option<&Path>,
        references: &[PathBuf],
        prediction: &Path,
        need_origin: bool,
    ) -> Result<TextInputs, TextInputError> {
        let dashes = origin
            .into_iter()
            .chain(references.iter().map(PathBuf::as_path))
            .chain(std::iter::once(prediction))
            .filter(|p| p.as_os_str() == "-")
            .count();
        if dashes > 1 {
            return Err(TextInputError::TwoStdins);
        }
        let origin = match (origin, need_origin) {
            (Some(p), _) => read_input("--origin", p)?,
            (None, true) => return Err(TextInputError::NoOrigin),
            (None, false) => String::new(),
        };
        Ok(TextInputs {
            origin,
            references: references
                .iter()
                .map(|p| read_input("--reference", p))
                .collect::<Result<_, _>>()?,
            prediction: read_input("--prediction", prediction)?,
        })
    }

    /// The only reference, for metrics defined on one (ES, DiffBLEU).
    pub fn single_reference(&self, metric: &'static str) -> Result<&str, TextInputError> {
        match self.references.as_slice() {
            [one] => Ok(one),
            many => Err(TextInputError::OneReference {
                metric,
                count: many.len(),
            }),
        }
    }

    /// Total bytes of every text (to decide whether progress is worth showing).
    pub fn total_len(&self) -> usize {
        self.origin.len()
            + self.prediction.len()
            + self.references.iter().map(String::len).sum::<usize>()
    }
}

/// Texts named by their options (`--base`, `--final`, …), at most one of them `-`.
pub fn read_named(texts: &[(&'static str, &Path)]) -> Result<Vec<String>, TextInputError> {
    if texts.iter().filter(|(_, p)| p.as_os_str() == "-").count() > 1 {
        let flags: Vec<&str> = texts.iter().map(|(f, _)| *f).collect();
        return Err(TextInputError::TwoStdinsAmong(flags.join(", ")));
    }
    texts.iter().map(|&(flag, p)| read_input(flag, p)).collect()
}

/// One text: the file at `path`, or standard input for `-`.
fn read_input(flag: &'static str, path: &Path) -> Result<String, TextInputError> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|source| TextInputError::Stdin { flag, source })?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|source| TextInputError::File {
        flag,
        path: path.to_owned(),
        source,
    })
}
