//! The named BLEU variants `nextedit score bleu` offers: each reference
//! implementation's formula, default tokenizer and smoothing options, resolved into
//! a [`BleuSpec`] and the label reports give it (`historian`, `nltk-method1`,
//! `sacrebleu-exp`…).

use super::bleu::{BleuFormula, BleuSpec, BleuTokenizer, NltkSmoothing, SacreSmoothing};

/// A BLEU reference implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BleuVariant {
    /// Historian's BLEU-4 (CodeXGLUE's smoothed formula on Historian's tokens), 0–100.
    Historian,
    /// CodeXGLUE code-to-text smooth BLEU (MOSES/NIST tokens), 0–100.
    Codexglue,
    /// sacrebleu `sentence_bleu` (13a tokens), 0–100.
    Sacrebleu,
    /// NLTK `sentence_bleu` (wordpunct tokens), 0–1.
    Nltk,
    /// tensorflow-nmt `compute_bleu` (13a tokens), 0–1.
    Nmt,
}

/// A variant and the smoothing options given for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BleuOptions<'a> {
    /// The reference implementation.
    pub variant: BleuVariant,
    /// Smoothing by name: `method0`…`method7` (nltk), `exp|floor|add-k|none`
    /// (sacrebleu), `none|add-one` (nmt); the variant's default when `None`.
    pub smoothing: Option<&'a str>,
    /// The value of sacrebleu's floor (default 0.1) or add-k (default 1) smoothing.
    pub smooth_value: Option<f64>,
    /// sacrebleu's `use_effective_order` (only sacrebleu may turn it off).
    pub effective_order: bool,
}

/// Options that do not fit the variant (the messages name the command-line options).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BleuOptionError {
    /// historian and codexglue have their own fixed smoothing.
    #[error("--smoothing does not apply to --variant {0} (its smoothing is fixed)")]
    FixedSmoothing(&'static str),
    /// Only sacrebleu has an effective-order switch.
    #[error("--no-effective-order applies to --variant sacrebleu only")]
    EffectiveOrder,
    /// An NLTK smoothing that is not `method0`…`method7`.
    #[error("--smoothing `{0}`: nltk takes method0, method1, … method7")]
    Nltk(String),
    /// A sacrebleu smoothing that is not exp, floor, add-k or none.
    #[error("--smoothing `{0}`: sacrebleu takes exp, floor, add-k or none")]
    Sacrebleu(String),
    /// An nmt smoothing that is not none or add-one.
    #[error("--smoothing `{0}`: nmt takes none or add-one")]
    Nmt(String),
    /// A smoothing value for a variant other than sacrebleu.
    #[error("--smooth-value applies to sacrebleu's floor and add-k smoothing only")]
    SmoothValue,
    /// A smoothing value for sacrebleu's exp or none smoothing.
    #[error("--smooth-value applies to floor and add-k smoothing only")]
    SacrebleuSmoothValue,
}

impl BleuOptions<'_> {
    /// The spec (with the variant's own tokenizer) and the variant's label.
    pub fn resolve(&self) -> Result<(BleuSpec, String), BleuOptionError> {
        let fixed = |name: &'static str| match self.smoothing {
            Some(_) => Err(BleuOptionError::FixedSmoothing(name)),
            None => Ok(()),
        };
        if !self.effective_order && self.variant != BleuVariant::Sacrebleu {
            return Err(BleuOptionError::EffectiveOrder);
        }
        let (formula, tokenizer, label) = match self.variant {
            BleuVariant::Historian => {
                fixed("historian")?;
                (
                    BleuFormula::Smooth,
                    BleuTokenizer::Historian,
                    "historian".to_owned(),
                )
            }
            BleuVariant::Codexglue => {
                fixed("codexglue")?;
                (
                    BleuFormula::Smooth,
                    BleuTokenizer::Nist,
                    "codexglue".to_owned(),
                )
            }
            BleuVariant::Nltk => {
                let name = self.smoothing.unwrap_or("method1");
                let method = name
                    .strip_prefix("method")
                    .and_then(|k| k.parse::<usize>().ok())
                    .and_then(|k| NltkSmoothing::ALL.get(k).copied())
                    .ok_or_else(|| BleuOptionError::Nltk(name.to_owned()))?;
                if self.smooth_value.is_some() {
                    return Err(BleuOptionError::SmoothValue);
                }
                (
                    BleuFormula::Nltk(method),
                    BleuTokenizer::Wordpunct,
                    format!("nltk-{name}"),
                )
            }
            BleuVariant::Sacrebleu => {
                let name = self.smoothing.unwrap_or("exp");
                let smoothing = match (name, self.smooth_value) {
                    ("exp", None) => SacreSmoothing::Exp,
                    ("floor", v) => SacreSmoothing::Floor(v.unwrap_or(0.1)),
                    ("add-k", v) => SacreSmoothing::AddK(v.unwrap_or(1.0)),
                    ("none", None) => SacreSmoothing::None,
                    ("exp" | "none", Some(_)) => {
                        return Err(BleuOptionError::SacrebleuSmoothValue);
                    }
                    _ => return Err(BleuOptionError::Sacrebleu(name.to_owned())),
                };
                (
                    BleuFormula::Sacrebleu {
                        smoothing,
                        effective_order: self.effective_order,
                    },
                    BleuTokenizer::Thirteen,
                    format!("sacrebleu-{name}"),
                )
            }
            BleuVariant::Nmt => {
                let name = self.smoothing.unwrap_or("none");
                let smooth = match name {
                    "none" => false,
                    "add-one" => true,
                    _ => return Err(BleuOptionError::Nmt(name.to_owned())),
                };
                if self.smooth_value.is_some() {
                    return Err(BleuOptionError::SmoothValue);
                }
                (
                    BleuFormula::Nmt { smooth },
                    BleuTokenizer::Thirteen,
                    format!("nmt-{name}"),
                )
            }
        };
        Ok((BleuSpec { tokenizer, formula }, label))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(variant: BleuVariant, smoothing: Option<&str>) -> BleuOptions<'_> {
        BleuOptions {
            variant,
            smoothing,
            smooth_value: None,
            effective_order: true,
        }
    }

    #[test]
    fn defaults_are_each_variants_own() {
        let label = |variant| options(variant, None).resolve().unwrap().1;
        assert_eq!(label(BleuVariant::Historian), "historian");
        assert_eq!(label(BleuVariant::Nltk), "nltk-method1");
        assert_eq!(label(BleuVariant::Sacrebleu), "sacrebleu-exp");
        assert_eq!(label(BleuVariant::Nmt), "nmt-none");
    }

    #[test]
    fn options_that_do_not_fit_are_refused() {
        assert_eq!(
            options(BleuVariant::Historian, Some("exp")).resolve(),
            Err(BleuOptionError::FixedSmoothing("historian"))
        );
        assert_eq!(
            options(BleuVariant::Nltk, Some("method8")).resolve(),
            Err(BleuOptionError::Nltk("method8".into()))
        );
    }
}
