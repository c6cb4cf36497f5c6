//! Starting an untrusted process tree confined, watching it, and ending all of it.
//!
//! [`Jail::command`] builds the `Command`: the sandbox's command line around the
//! program (with the seccomp filters' descriptors), the environment allow-list
//! ([`super::env`]), its own process group, and a setup at exec
//! ([`super::process::at_exec`]) that joins the tree's cgroup ([`super::cgroup`])
//! before anything runs and sets the rlimits: the largest
//! file (`RLIMIT_FSIZE` = `--disk`), no core files, and where no cgroup can be made,
//! `RLIMIT_NPROC` and a per-process `RLIMIT_AS` instead (not enforced for root, which
//! is why the cgroup matters). [`Pending::spawn`] starts it and returns the [`Tree`]:
//! a watchdog thread reads the cgroup's counters and the size of the scratch
//! directory and of the sandbox's `/tmp`, and kills the whole tree at the first
//! limit it hits, which [`Tree::limit`] then names. Dropping the tree kills what is
//! left of it (cgroup members, the process group, orphans adopted as subreaper). The
//! process groups of live trees are kept in a registry, so a signal handler can kill
//! them all before nextedit exits. The system calls themselves are
//! [`super::process`]'s.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::cgroup::Cgroup;
use super::env::Environment;
use super::limits::{Limit, Limits};
use super::process::{self, AtExec, Resource, Signal};
use super::sandbox::Sandbox;

/// How often the watchdog reads the cgroup's counters.
const WATCH_EVERY: Duration = Duration::from_millis(100);
/// Every how many of those it also measures the disk (a directory walk).
const DISK_EVERY: u32 = 5;
/// Entries a disk measure looks at, at most (a walk stays cheap on any tree).
const DISK_WALK_LIMIT: usize = 200_000;

/// Process groups of the trees alive in this process, for [`kill_all`]; also held
/// while spawning, so [`reap_orphans`] never mistakes a new tree for an orphan.
static LIVE_GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Whether this process adopts its trees' orphans ([`become_subreaper`]).
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Why a confined process could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum JailError {
    /// The seccomp filters.
    #[error(transparent)]
    Seccomp(#[from] super::seccomp::SeccompError),
    /// The tree's cgroup (where cgroups can be made).
    #[error("cannot make the process tree's cgroup: {0}")]
    Cgroup(#[source] std::io::Error),
    /// The scratch's home directory.
    #[error("cannot create {path}: {source}")]
    Home {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Where and under what an untrusted process tree runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Jail {
    /// The sandbox; `None` runs the program as it is (`--sandbox off`).
    pub sandbox: Option<Sandbox>,
    /// Its limits.
    pub limits: Limits,
    /// Its environment beyond the allow-list.
    pub env: Environment,
    /// Its `HOME`, created if missing (inside the sandbox's scratch when sandboxed).
    pub home: PathBuf,
    /// The directory whose size counts against the disk limit, if any.
    pub disk: Option<PathBuf>,
}

impl Default for Jail {
    /// Unsandboxed, [`Limits::DEFAULT`], the allow-list alone, no home of its own
    /// (`HOME=/nonexistent`), no directory watched.
    fn default() -> Jail {
        Jail {
            sandbox: None,
            limits: Limits::DEFAULT,
            env: Environment::default(),
            home: PathBuf::from(NO_HOME),
            disk: None,
        }
    }
}

/// `HOME` of a process given no directory of its own.
const NO_HOME: &str = "/nonexistent";

impl Jail {
    /// A jail in `sandbox` (when given) whose scratch directory `scratch` holds its
    /// `HOME` (`scratch/home`) and counts against the disk limit.
    pub fn in_scratch(
        sandbox: Option<Sandbox>,
        scratch: &Path,
        limits: Limits,
        env: Environment,
    ) -> Jail {
        Jail {
            sandbox,
            limits,
            env,
            home: scratch.join("home"),
            disk: Some(scratch.to_path_buf()),
        }
    }

    /// Puts the tree in `sandbox`, its `HOME` and disk watch in the sandbox's scratch
    /// unless set already.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Jail {
        if self.home == Path::new(NO_HOME) {
            self.home = sandbox.scratch.join("home");
        }
        if self.disk.is_none() {
            self.disk = Some(sandbox.scratch.clone());
        }
        self.sandbox = Some(sandbox);
        self
    }

    /// A command running `argv` in `cwd` confined, and what starts it.
    pub fn command(&self, argv: &[String], cwd: &Path) -> Result<(Command, Pending), JailError> {
        if self.home != Path::new(NO_HOME) {
            std::fs::create_dir_all(&self.home).map_err(|source| JailError::Home {
                path: self.home.clone(),
                source,
            })?;
        }
        let seccomp = match &self.sandbox {
            Some(_) => super::seccomp::filter_files()?,
            None => Vec::new(),
        };
        let fds: Vec<RawFd> = seccomp.iter().map(AsRawFd::as_raw_fd).collect();
        let full = match &self.sandbox {
            Some(sandbox) => sandbox.wrap(argv, cwd, &fds, self.limits.disk_bytes()),
            None => argv.to_vec(),
        };
        let mut command = Command::new(&full[0]);
        process::in_own_group(command.args(&full[1..]));
        if cwd.is_dir() {
            command.current_dir(cwd);
        }
        self.env.apply(&mut command, &self.home);
        // Where cgroups exist, the tree gets one or does not start; elsewhere rlimits.
        let cgroup = Cgroup::create(&self.limits).map_err(JailError::Cgroup)?;
        let join: Vec<RawFd> = cgroup.as_ref().map(Cgroup::join_fds).unwrap_or_default();
        let mut limits = vec![
            (Resource::Fsize, self.limits.disk_bytes()),
            (Resource::Core, 0),
        ];
        if cgroup.is_none() {
            limits.extend([
                (Resource::As, self.limits.memory_bytes()),
                (
                    Resource::Nproc,
                    u64::from(self.limits.pids) + process::user_threads(process::uid()),
                ),
            ]);
        }
        // The seccomp descriptors are inherited by this child alone: bwrap reads the
        // filters from them.
        process::at_exec(
            &mut command,
            AtExec {
                join,
                limits,
                inherit: fds,
            },
        );
        let sandbox_tmp = self.sandbox.is_some();
        Ok((
            command,
            Pending {
                seccomp,
                cgroup,
                disk: self.disk.clone().map(|d| (d, self.limits.disk_bytes())),
                sandbox_tmp,
            },
        ))
    }
}

/// A confined command not started yet.
pub struct Pending {
    /// Kept open until the child has its copies.
    seccomp: Vec<OwnedFd>,
    cgroup: Option<Cgroup>,
    disk: Option<(PathBuf, u64)>,
    sandbox_tmp: bool,
}

impl Pending {
    /// Starts `command` (the one [`Jail::command`] made, its stdio set by the caller).
    pub fn spawn(self, command: &mut Command) -> std::io::Result<(Child, Tree)> {
        let child = {
            let mut groups = LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
            let child = command.spawn()?;
            groups.push(child.id());
            child
        };
        drop(self.seccomp);
        let state = Arc::new(State {
            pgid: child.id(),
            cgroup: self.cgroup,
            disk: self.disk,
            sandbox_tmp: self.sandbox_tmp,
            hit: Mutex::new(None),
        });
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let watched = state.clone();
        let watchdog = std::thread::Builder::new()
            .name("nextedit-watchdog".into())
            .spawn(move || {
                let mut tick = 0u32;
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(WATCH_EVERY)
                {
                    tick = tick.wrapping_add(1);
                    if watched.check(tick % DISK_EVERY == 0).is_some() {
                        return;
                    }
                }
            })
            .ok();
        Ok((
            child,
            Tree {
                state,
                stop: Some(stop),
                watchdog,
            },
        ))
    }
}

struct State {
    pgid: u32,
    cgroup: Option<Cgroup>,
    disk: Option<(PathBuf, u64)>,
    sandbox_tmp: bool,
    hit: Mutex<Option<Limit>>,
}

impl State {
    /// The limit hit so far, looking again now (the disk too when `disk`); the first
    /// one found kills the tree.
    fn check(&self, disk: bool) -> Option<Limit> {
        if let Some(hit) = *self.hit.lock().unwrap_or_else(|e| e.into_inner()) {
            return Some(hit);
        }
        let found = self.cgroup.as_ref().and_then(Cgroup::hit).or_else(|| {
            let (dir, limit) = self.disk.as_ref().filter(|_| disk)?;
            (usage(dir) >= *limit || self.tmp_full()).then_some(Limit::Disk)
        })?;
        self.record(found);
        Some(found)
    }

    fn record(&self, limit: Limit) {
        let mut hit = self.hit.lock().unwrap_or_else(|e| e.into_inner());
        if hit.is_none() {
            *hit = Some(limit);
            drop(hit);
            self.kill();
        }
    }

    /// Whether the sandbox's `/tmp` (a tmpfs of `--disk` bytes) is full, seen through
    /// `/proc/PID/root` of a process inside it.
    fn tmp_full(&self) -> bool {
        let Some(cgroup) = self.cgroup.as_ref().filter(|_| self.sandbox_tmp) else {
            return false;
        };
        // The first member is bwrap itself, outside the sandbox's mount namespace.
        cgroup
            .members()
            .into_iter()
            .filter(|&pid| pid as u32 != self.pgid)
            .find_map(|pid| super::files::is_full(Path::new(&format!("/proc/{pid}/root/tmp"))))
            .unwrap_or(false)
    }

    fn kill(&self) {
        process::signal_group(self.pgid, Signal::KILL);
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
    }
}

/// Bytes allocated under `dir` (symlinks not followed; at most `DISK_WALK_LIMIT`
/// entries looked at).
pub fn usage(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > DISK_WALK_LIMIT {
                return total;
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// A running confined process tree. Dropped, every process of it is killed (call
/// after the caller has waited for its child).
pub struct Tree {
    state: Arc<State>,
    stop: Option<crossbeam_channel::Sender<()>>,
    watchdog: Option<std::thread::JoinHandle<()>>,
}

impl Tree {
    /// The limit the tree hit (it was killed for it), looking again now.
    pub fn limit(&self) -> Option<Limit> {
        self.state.check(true)
    }

    /// Records that the tree ran out of time and kills it.
    pub fn time_out(&self) {
        self.state.record(Limit::Time);
    }

    /// Kills every process of the tree (its cgroup and its process group).
    pub fn kill(&self) {
        self.state.kill();
    }

    /// Whether a cgroup holds the tree (else rlimits limit each process).
    pub fn in_cgroup(&self) -> bool {
        self.state.cgroup.is_some()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(watchdog) = self.watchdog.take() {
            let _ = watchdog.join();
        }
        self.state.kill();
        if let Ok(mut groups) = LIVE_GROUPS.lock() {
            groups.retain(|&g| g != self.state.pgid);
        }
        reap_orphans();
    }
}

/// Kills every confined tree still alive (for signal handlers, which exit without
/// running destructors).
pub fn kill_all() {
    for pgid in LIVE_GROUPS.lock().map(|g| g.clone()).unwrap_or_default() {
        process::signal_group(pgid, Signal::KILL);
    }
    super::cgroup::kill_all();
}

/// Makes this process the reaper of its trees' orphans (`PR_SET_CHILD_SUBREAPER`), so
/// a background child that left its tree's process group (a daemon) is re-parented
/// here and killed with its tree where no cgroup holds it. Only for programs whose
/// other children are all started through [`Jail`] (`replay`, `tasks run`, `complete`).
pub fn become_subreaper() {
    SUBREAPER.store(process::become_subreaper(), Ordering::SeqCst);
}

/// Kills and reaps every child of this process that is not a live tree: the orphans
/// re-parented here by [`become_subreaper`]. Repeats until none is left (an orphan's
/// own children are re-parented when it dies).
fn reap_orphans() {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return;
    }
    let me = std::process::id();
    for _ in 0..20 {
        // The lock is held from the listing to the kill, so a tree another thread is
        // starting (it holds the lock from spawn to registration) is never taken for
        // an orphan.
        let orphans: Vec<u32> = {
            let Ok(live) = LIVE_GROUPS.lock() else {
                return;
            };
            let orphans: Vec<u32> = process::children_of(me)
                .into_iter()
                .filter(|pid| !live.contains(pid))
                .collect();
            for &pid in &orphans {
                // A child of this process that no `Child` handle owns (it was
                // re-parented here).
                process::signal(pid, Signal::KILL);
            }
            orphans
        };
        if orphans.is_empty() {
            return;
        }
        for pid in orphans {
            process::reap(pid);
        }
    }
}
