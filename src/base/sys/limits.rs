//! The limits of one untrusted process tree (a suggester process and everything it
//! starts, or one test run): processes, memory and disk, each with a flag and a
//! default, and [`Limit`], the typed failure of a tree that hit one (the wall clock is
//! the callers' time-outs, reported as [`Limit::Time`] by test runs).

use serde::{Deserialize, Serialize};

/// Default `--pids`: processes and threads alive at once in one tree (a cgroup's
/// `pids.max` counts threads). A language server on Node or the JVM runs a few dozen
/// threads and a test suite a few processes; 1,024 stops a fork bomb while the
/// machine is still responsive.
pub const DEFAULT_PIDS: u32 = 1024;
/// Default `--memory` of one tree, MiB: a language server on a large project or a test
/// suite fits; a suggester that loads a model asks for more (`--memory`). Two replay
/// workers or test runs leave most of a 24 GiB machine free, and a runaway allocation
/// stops long before it swaps the machine. `tasks run` had this as a per-process limit.
pub const DEFAULT_MEMORY_MIB: u64 = 4096;
/// Default `--disk`, MiB: what a tree may write into its scratch directory, the size
/// of its private `/tmp` and the largest single file. A checkout, a virtualenv's
/// caches or a language server's index take far less.
pub const DEFAULT_DISK_MIB: u64 = 4096;

/// How much one process tree may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Processes and threads alive at once.
    pub pids: u32,
    /// Memory of the whole tree, MiB.
    pub memory_mib: u64,
    /// Bytes in its scratch directory, in its `/tmp`, and in any one file it writes, MiB.
    pub disk_mib: u64,
}

impl Limits {
    /// The defaults.
    pub const DEFAULT: Limits = Limits {
        pids: DEFAULT_PIDS,
        memory_mib: DEFAULT_MEMORY_MIB,
        disk_mib: DEFAULT_DISK_MIB,
    };

    /// The memory limit in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_mib.saturating_mul(1 << 20)
    }

    /// The disk limit in bytes.
    pub fn disk_bytes(&self) -> u64 {
        self.disk_mib.saturating_mul(1 << 20)
    }

    /// The limits as a test run's cache key names them (`pids 1024, memory 4096 MiB,
    /// disk 4096 MiB`): an execution under other limits may end otherwise.
    pub fn describe(&self) -> String {
        format!(
            "pids {}, memory {} MiB, disk {} MiB",
            self.pids, self.memory_mib, self.disk_mib
        )
    }
}

impl Default for Limits {
    /// [`Limits::DEFAULT`].
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// The limit a tree hit; it was killed for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    /// Too many processes or threads at once (`--pids`).
    Pids,
    /// The tree's memory (`--memory`): the kernel's OOM killer ended one of its processes.
    Memory,
    /// Its scratch directory, its `/tmp` or one file grew past `--disk`.
    Disk,
    /// The wall clock (`--timeout`).
    Time,
}

impl Limit {
    /// Every limit, in declaration order.
    pub const ALL: [Limit; 4] = [Limit::Pids, Limit::Memory, Limit::Disk, Limit::Time];

    /// The stored name: `pids`, `memory`, `disk`, `time`.
    pub fn key(self) -> &'static str {
        match self {
            Limit::Pids => "pids",
            Limit::Memory => "memory",
            Limit::Disk => "disk",
            Limit::Time => "time",
        }
    }

    /// The limit stored as `key`, if it is one.
    pub fn from_key(key: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|l| l.key() == key)
    }

    /// The flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Limit::Pids => "--pids",
            Limit::Memory => "--memory",
            Limit::Disk => "--disk",
            Limit::Time => "--timeout",
        }
    }
}

impl std::fmt::Display for Limit {
    /// `limit: pids`, as reports and messages show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "limit: {}", self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_round_trip_through_their_keys() {
        for limit in Limit::ALL {
            assert_eq!(Limit::from_key(limit.key()), Some(limit));
        }
        assert_eq!(Limit::from_key("cpu"), None);
        assert_eq!(Limit::Pids.to_string(), "limit: pids");
        assert_eq!(
            Limits::DEFAULT.describe(),
            "pids 1024, memory 4096 MiB, disk 4096 MiB"
        );
    }
}
