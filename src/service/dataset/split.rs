//! Splits stratified by repository: `--split train=0.8,eval=0.2 --by repo --seed N`.
//!
//! Every row of one repository goes to one split, so no repository's code is in two
//! splits. The repositories are put in a seeded order (a 64-bit FNV-1a hash of the
//! seed and the name, finished with SplitMix64's mixer: the same on every machine and
//! every version), then each, in that order, goes to the split furthest below its
//! share of the rows (the first such split on a tie). Shares are met as closely as
//! whole repositories allow; with fewer repositories than splits some splits are empty.

use std::collections::BTreeMap;
use std::str::FromStr;

/// Named shares of the rows, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitSpec {
    /// (split name, share), shares > 0 summing to 1.
    pub parts: Vec<(String, f64)>,
}

impl Default for SplitSpec {
    /// Everything in `train`.
    fn default() -> SplitSpec {
        SplitSpec {
            parts: vec![("train".to_owned(), 1.0)],
        }
    }
}

/// Why a `--split` value is not a split spec.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SplitSpecError {
    /// A part without `=`.
    #[error("`{0}`: expected NAME=SHARE (train=0.8)")]
    NoShare(String),
    /// A name Hugging Face would not accept.
    #[error("`{0}`: a split name is letters, digits and _ (what Hugging Face accepts)")]
    BadName(String),
    /// A share outside (0, 1].
    #[error("`{share}` (split {name}): a share is a number in (0, 1]")]
    BadShare {
        /// The share as written.
        share: String,
        /// The split.
        name: String,
    },
    /// One name twice.
    #[error("split `{0}` is named twice")]
    Twice(String),
    /// Shares that do not add up to 1.
    #[error("the shares add up to {0}, not 1")]
    Total(f64),
}

impl FromStr for SplitSpec {
    type Err = SplitSpecError;

    fn from_str(text: &str) -> Result<SplitSpec, SplitSpecError> {
        let mut parts: Vec<(String, f64)> = Vec::new();
        for part in text.split(',') {
            let (name, share) = part
                .split_once('=')
                .ok_or_else(|| SplitSpecError::NoShare(part.to_owned()))?;
            let valid =
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid {
                return Err(SplitSpecError::BadName(name.to_owned()));
            }
            let share: f64 = share
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 1.0)
                .ok_or_else(|| SplitSpecError::BadShare {
                    share: share.to_owned(),
                    name: name.to_owned(),
                })?;
            if parts.iter().any(|(n, _)| n == name) {
                return Err(SplitSpecError::Twice(name.to_owned()));
            }
            parts.push((name.to_owned(), share));
        }
        let total: f64 = parts.iter().map(|(_, s)| s).sum();
        if (total - 1.0).abs() > 1e-6 {
            return Err(SplitSpecError::Total(total));
        }
        Ok(SplitSpec { parts })
    }
}

/// The split index of each row, given each row's repository.
pub fn assign_splits(repositories: &[&str], spec: &SplitSpec, seed: u64) -> Vec<usize> {
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    for repository in repositories {
        *sizes.entry(repository).or_default() += 1;
    }
    let mut order: Vec<(&str, usize)> = sizes.into_iter().collect();
    order.sort_by_key(|(name, _)| (seeded_rank(seed, name), *name));
    let total = repositories.len() as f64;
    let mut filled = vec![0usize; spec.parts.len()];
    let mut split_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, size) in order {
        let deficit = |i: usize| spec.parts[i].1 * total - filled[i] as f64;
        let mut best = 0;
        for i in 1..spec.parts.len() {
            if deficit(i) > deficit(best) {
                best = i;
            }
        }
        filled[best] += size;
        split_of.insert(name, best);
    }
    repositories.iter().map(|r| split_of[r]).collect()
}

/// A repository's place in the seeded order.
fn seeded_rank(seed: u64, name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in seed.to_le_bytes().iter().chain(name.as_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // SplitMix64's finalizer: nearby hashes land far apart.
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_why() {
        let spec: SplitSpec = "train=0.8,eval=0.2".parse().unwrap();
        assert_eq!(
            spec.parts,
            [("train".to_owned(), 0.8), ("eval".to_owned(), 0.2)]
        );
        let errors: Vec<String> = ["train=0.8", "train", "a-b=1", "a=0,b=1", "a=0.5,a=0.5"]
            .iter()
            .map(|s| s.parse::<SplitSpec>().unwrap_err().to_string())
            .collect();
        assert_eq!(
            errors,
            [
                "the shares add up to 0.8, not 1",
                "`train`: expected NAME=SHARE (train=0.8)",
                "`a-b`: a split name is letters, digits and _ (what Hugging Face accepts)",
                "`0` (split a): a share is a number in (0, 1]",
                "split `a` is named twice",
            ]
        );
    }

    #[test]
    fn a_repository_stays_whole_and_the_seed_decides() {
        let rows: Vec<String> = (0..40).map(|i| format!("repo{}", i % 10)).collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let spec: SplitSpec = "train=0.8,eval=0.2".parse().unwrap();
        let splits = assign_splits(&rows, &spec, 7);
        for (row, split) in rows.iter().zip(&splits) {
            let same: Vec<usize> = rows
                .iter()
                .zip(&splits)
                .filter(|(r, _)| *r == row)
                .map(|(_, s)| *s)
                .collect();
            assert!(same.iter().all(|s| s == split), "{row} split");
        }
        // Ten repositories of 4 rows: 8 in train, 2 in eval, exactly the shares.
        assert_eq!(splits.iter().filter(|s| **s == 1).count(), 8);
        assert_eq!(splits, assign_splits(&rows, &spec, 7));
        let other_seeds: Vec<Vec<usize>> = (0..5)
            .map(|seed| assign_splits(&rows, &spec, seed))
            .collect();
        assert!(other_seeds.iter().any(|s| *s != splits));
    }

    #[test]
    fn one_split_takes_everything() {
        assert_eq!(assign_splits(&["a", "b"], &SplitSpec::default(), 1), [0, 0]);
    }
}
