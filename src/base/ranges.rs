//! The ranges nextedit's numbers must lie in, in one place: every numeric flag of
//! every command is parsed by one of the value parsers here (so a bad value is a
//! usage error, exit 2, whose message names the flag and the range), and the same
//! checks apply to settings read back from a database to resume a run. Pure.
//!
//! Why these bounds: seconds are finite and at most a week (longer than any model load
//! or test run, and `Duration` cannot hold 1e308 s); workers are at most 256 (more
//! than any machine this runs on has cores, and each costs a thread, a scratch
//! directory and a suggester process); samples and repetitions are at most 1,000
//! (pass@k is reported up to k = 100 from n = 200 in the literature, and intervals over
//! more than a thousand repetitions are no narrower in practice, while each repetition
//! or sample is a full run's work and storage).

use std::fmt::Display;

/// A value outside the range it must lie in (the message a user sees after the flag).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// A number outside its range, or text that spells none.
    #[error("{got} is not {range}")]
    Outside {
        /// The value as given (or as typed).
        got: String,
        /// The range in words (`a whole number from 1 to 256`).
        range: String,
    },
    /// A blank pattern.
    #[error("an empty pattern would match everything: name what to match")]
    Blank,
}

impl RangeError {
    /// This error as the value of `flag` (or of the stored setting the flag sets).
    pub fn of_flag(self, flag: &'static str) -> FlagError {
        FlagError { flag, why: self }
    }
}

/// A flag's value (or the stored setting it sets) outside its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {why}")]
pub struct FlagError {
    /// The flag (`--timeout`).
    pub flag: &'static str,
    /// What is wrong with its value.
    pub why: RangeError,
}

/// Longest time limit, in seconds: a week.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// Most workers a command starts (`--jobs`).
pub const MAX_JOBS: usize = 256;
/// Most answers asked per task (`tasks run --samples`).
pub const MAX_SAMPLES: u32 = 1_000;
/// Most repetitions of a replay (`replay --repetitions`).
pub const MAX_REPETITIONS: u32 = 1_000;
/// Most failures in a row before giving up on a suggester (`--give-up-after`).
pub const MAX_GIVE_UP_AFTER: u32 = 1_000;
/// Smallest and largest address-space limit of a test run, MiB (`tasks run --memory`):
/// below 16 MiB no interpreter starts; above 1 TiB it limits nothing.
pub const MEMORY_MIB: (u64, u64) = (16, 1 << 20);
/// Longest pause, in milliseconds: a day.
pub const MAX_PAUSE_MS: f64 = 24.0 * 3600.0 * 1000.0;

/// A range of real numbers: finite, above `min` (or at least it), at most `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Real {
    /// The smallest value, or the bound every value must exceed.
    pub min: f64,
    /// Whether `min` itself is outside the range.
    pub above_min: bool,
    /// The largest value.
    pub max: f64,
    /// What the number counts (`seconds`), for the message.
    pub unit: &'static str,
}

/// A range of whole numbers, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whole {
    /// The smallest value.
    pub min: u64,
    /// The largest value.
    pub max: u64,
}

/// Time limits: more than 0 and at most a week.
pub const SECONDS: Real = Real {
    min: 0.0,
    above_min: true,
    max: MAX_SECONDS,
    unit: "seconds",
};
/// Waits that may be 0 (exit grace periods, windows): 0 to a week.
pub const SECONDS_OR_ZERO: Real = Real {
    above_min: false,
    ..SECONDS
};
/// Pauses in milliseconds: 0 to a day.
pub const PAUSE_MS: Real = Real {
    min: 0.0,
    above_min: false,
    max: MAX_PAUSE_MS,
    unit: "milliseconds",
};
/// Thresholds and shares: 0 to 1.
pub const FRACTION: Real = Real {
    min: 0.0,
    above_min: false,
    max: 1.0,
    unit: "",
};
/// Smoothing constants: 0 to 1,000.
pub const SMOOTHING: Real = Real {
    min: 0.0,
    above_min: false,
    max: 1_000.0,
    unit: "",
};
/// `--jobs`.
pub const JOBS: Whole = Whole {
    min: 1,
    max: MAX_JOBS as u64,
};
/// `--max-tests` of `tasks run`.
pub const MAX_TESTS: Whole = Whole {
    min: 1,
    max: 10_000,
};
/// `--samples`.
pub const SAMPLES: Whole = Whole {
    min: 1,
    max: MAX_SAMPLES as u64,
};
/// `--repetitions`.
pub const REPETITIONS: Whole = Whole {
    min: 1,
    max: MAX_REPETITIONS as u64,
};
/// `--give-up-after`.
pub const GIVE_UP_AFTER: Whole = Whole {
    min: 1,
    max: MAX_GIVE_UP_AFTER as u64,
};
/// `--memory`, MiB.
pub const MEMORY: Whole = Whole {
    min: MEMORY_MIB.0,
    max: MEMORY_MIB.1,
};
/// Counts of items to keep or look at (`--max-per-commit`, `--limit`): 1 to a million.
pub const COUNT: Whole = Whole {
    min: 1,
    max: 1_000_000,
};
/// Counts where 0 means none (`--context-k`): 0 to 1,000.
pub const COUNT_OR_NONE: Whole = Whole { min: 0, max: 1_000 };

impl Real {
    /// `value` if it lies in the range, else what the range is.
    pub fn check(&self, value: f64) -> Result<f64, RangeError> {
        let low_ok = if self.above_min {
            value > self.min
        } else {
            value >= self.min
        };
        if value.is_finite() && low_ok && value <= self.max {
            Ok(value)
        } else if value.is_finite() && value.abs() >= 1e9 {
            // 1e308, not its 309 digits.
            Err(self.expected(format!("{value:e}")))
        } else {
            Err(self.expected(value))
        }
    }

    /// The number `text` spells, if it lies in the range.
    pub fn parse(&self, text: &str) -> Result<f64, RangeError> {
        let text = text.trim();
        let value: f64 = text.parse().map_err(|_| self.expected(text))?;
        // Said as typed (`nan`, not `NaN`; all of a huge number's digits).
        self.check(value).map_err(|_| self.expected(text))
    }

    fn expected(&self, got: impl Display) -> RangeError {
        let unit = if self.unit.is_empty() {
            "a number".to_string()
        } else {
            format!("a number of {}", self.unit)
        };
        let low = if self.above_min {
            format!("greater than {}", self.min)
        } else {
            format!("from {}", self.min)
        };
        let to = if self.above_min { "and at most" } else { "to" };
        RangeError::Outside {
            got: got.to_string(),
            range: format!("{unit} {low} {to} {}", self.max),
        }
    }
}

impl Whole {
    /// `value` if it lies in the range, else what the range is.
    pub fn check(&self, value: u64) -> Result<u64, RangeError> {
        if (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(self.expected(value))
        }
    }

    /// The whole number `text` spells, if it lies in the range.
    pub fn parse(&self, text: &str) -> Result<u64, RangeError> {
        let text = text.trim();
        let value: u64 = text.parse().map_err(|_| self.expected(text))?;
        self.check(value)
    }

    fn expected(&self, got: impl Display) -> RangeError {
        RangeError::Outside {
            got: got.to_string(),
            range: format!("a whole number from {} to {}", self.min, self.max),
        }
    }
}

/// Value parser of a time limit in seconds ([`SECONDS`]).
pub fn seconds(text: &str) -> Result<f64, RangeError> {
    SECONDS.parse(text)
}

/// Value parser of a wait that may be 0 ([`SECONDS_OR_ZERO`]).
pub fn seconds_or_zero(text: &str) -> Result<f64, RangeError> {
    SECONDS_OR_ZERO.parse(text)
}

/// Value parser of a pause in milliseconds ([`PAUSE_MS`]).
pub fn pause_ms(text: &str) -> Result<f64, RangeError> {
    PAUSE_MS.parse(text)
}

/// Value parser of a threshold from 0 to 1 ([`FRACTION`]).
pub fn fraction(text: &str) -> Result<f64, RangeError> {
    FRACTION.parse(text)
}

/// Value parser of a smoothing constant ([`SMOOTHING`]).
pub fn smoothing(text: &str) -> Result<f64, RangeError> {
    SMOOTHING.parse(text)
}

/// Value parser of `--jobs` ([`JOBS`]).
pub fn jobs(text: &str) -> Result<usize, RangeError> {
    JOBS.parse(text).map(|n| n as usize)
}

/// Value parser of `--max-tests` ([`MAX_TESTS`]).
pub fn max_tests(text: &str) -> Result<usize, RangeError> {
    MAX_TESTS.parse(text).map(|n| n as usize)
}

/// Value parser of `--samples` ([`SAMPLES`]).
pub fn samples(text: &str) -> Result<u32, RangeError> {
    SAMPLES.parse(text).map(|n| n as u32)
}

/// Value parser of `--repetitions` ([`REPETITIONS`]).
pub fn repetitions(text: &str) -> Result<u32, RangeError> {
    REPETITIONS.parse(text).map(|n| n as u32)
}

/// Value parser of `--give-up-after` ([`GIVE_UP_AFTER`]).
pub fn give_up_after(text: &str) -> Result<u32, RangeError> {
    GIVE_UP_AFTER.parse(text).map(|n| n as u32)
}

/// Value parser of `--memory` in MiB ([`MEMORY`]).
pub fn memory_mib(text: &str) -> Result<u64, RangeError> {
    MEMORY.parse(text)
}

/// Value parser of a count of at least 1 ([`COUNT`]).
pub fn count(text: &str) -> Result<usize, RangeError> {
    COUNT.parse(text).map(|n| n as usize)
}

/// Value parser of a count where 0 means none ([`COUNT_OR_NONE`]).
pub fn count_or_none(text: &str) -> Result<usize, RangeError> {
    COUNT_OR_NONE.parse(text).map(|n| n as usize)
}

/// Value parser of a pattern that must not be blank (an empty glob would match
/// every file: `sessions purge --file ''`).
pub fn not_blank(text: &str) -> Result<String, RangeError> {
    if text.trim().is_empty() {
        Err(RangeError::Blank)
    } else {
        Ok(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_finite_positive_and_at_most_a_week() {
        assert_eq!(seconds("60"), Ok(60.0));
        assert_eq!(seconds(" 0.5 "), Ok(0.5));
        assert_eq!(seconds("604800"), Ok(MAX_SECONDS));
        for bad in [
            "-1", "0", "nan", "NaN", "inf", "-inf", "1e308", "604801", "", "x",
        ] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(
            seconds("-1").unwrap_err().to_string(),
            "-1 is not a number of seconds greater than 0 and at most 604800"
        );
        assert_eq!(seconds_or_zero("0"), Ok(0.0));
        assert!(seconds_or_zero("-0.1").is_err());
    }

    #[test]
    fn whole_numbers_stay_in_their_range() {
        assert_eq!(jobs("256"), Ok(256));
        for bad in [
            "0",
            "257",
            "-1",
            "4294967295",
            "18446744073709551616",
            "1.5",
            "nan",
        ] {
            assert!(jobs(bad).is_err(), "{bad}");
        }
        assert_eq!(
            repetitions("4294967295").unwrap_err().to_string(),
            "4294967295 is not a whole number from 1 to 1000"
        );
        assert_eq!(count_or_none("0"), Ok(0));
        assert!(not_blank(" ").is_err());
        assert_eq!(not_blank("*.env"), Ok("*.env".to_string()));
    }
}
