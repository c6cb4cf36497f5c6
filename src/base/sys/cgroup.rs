//! A cgroup for one untrusted process tree: every process it starts is counted and
//! limited together (`pids.max`, the memory limit), the limit it hit is read from
//! the kernel's own counters, and the whole tree is killed at the end, daemons that
//! left its process group included.
//!
//! cgroup v2 is preferred: a child of this process's own cgroup when `pids` and
//! `memory` are delegated to it, else of the hierarchy's root (as root). cgroup v1
//! otherwise: one cgroup in the `pids` hierarchy and one in the `memory` hierarchy
//! (with `memory.memsw` when the kernel has it). Where none is writable (an
//! unprivileged user without delegation) [`layout`] says why, and the caller falls
//! back to per-process rlimits (`NEXTEDIT_CGROUP=off` forces that, for tests). The child joins in `pre_exec` (writing `0` to the
//! `cgroup.procs` files opened here), so nothing it starts escapes.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::limits::{Limit, Limits};

/// Where this process makes its trees' cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// A cgroup v2 directory with `pids` and `memory` enabled for its children.
    V2 {
        /// The parent of every tree's cgroup.
        parent: PathBuf,
    },
    /// cgroup v1: the parents in the `pids` and the `memory` hierarchies.
    V1 {
        /// Parent in the `pids` hierarchy.
        pids: PathBuf,
        /// Parent in the `memory` hierarchy.
        memory: PathBuf,
    },
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layout::V2 { parent } => write!(f, "cgroup v2 under {}", parent.display()),
            Layout::V1 { pids, memory } => write!(
                f,
                "cgroup v1 under {} and {}",
                pids.display(),
                memory.display()
            ),
        }
    }
}

/// Why this machine gives nextedit no cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoCgroup {
    /// `NEXTEDIT_CGROUP=off`.
    #[error("no cgroup (NEXTEDIT_CGROUP=off)")]
    Off,
    /// None found that nextedit may write.
    #[error(
        "no writable cgroup here (cgroup v2 with pids and memory delegated, or cgroup v1 pids and memory)"
    )]
    NotWritable,
}

/// The cgroup layout of this machine, found once per process; why there is none.
/// `NEXTEDIT_CGROUP=off` makes none (a test hook: the rlimit fallback, on a machine
/// that has cgroups).
pub fn layout() -> Result<&'static Layout, &'static NoCgroup> {
    static LAYOUT: OnceLock<Result<Layout, NoCgroup>> = OnceLock::new();
    LAYOUT
        .get_or_init(|| {
            if std::env::var_os("NEXTEDIT_CGROUP").is_some_and(|v| v == "off") {
                return Err(NoCgroup::Off);
            }
            discover()
        })
        .as_ref()
}

/// What to say where no cgroup can be made: the limits hold per process only.
pub fn per_process_note() -> Option<String> {
    let reason = layout().err()?;
    Some(format!(
        "{reason}: --memory and --pids limit each process (RLIMIT_AS, and RLIMIT_NPROC, which does not hold for root), not the whole tree"
    ))
}

/// A mounted cgroup hierarchy (from `/proc/self/mountinfo`).
struct Mount {
    /// `cgroup2` or `cgroup`.
    fstype: String,
    /// The cgroup mounted there (`/` unless in another cgroup namespace).
    root: PathBuf,
    point: PathBuf,
    /// Super options: a v1 hierarchy's controllers.
    options: Vec<String>,
}

fn mounts() -> Vec<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            let fstype = right.first()?.to_string();
            if fstype != "cgroup" && fstype != "cgroup2" {
                return None;
            }
            Some(Mount {
                fstype,
                root: PathBuf::from(unescape(left.get(3)?)),
                point: PathBuf::from(unescape(left.get(4)?)),
                options: right
                    .get(2)
                    .map(|o| o.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as octal.
fn unescape(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// This process's cgroup in the hierarchy whose `/proc/self/cgroup` line matches.
fn own_cgroup(matches: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        matches(id, controllers).then(|| PathBuf::from(path))
    })
}

/// Where to try making cgroups in `mount`: this process's own cgroup, then the root.
fn candidates(mount: &Mount, own: Option<PathBuf>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(own) = own {
        // The path below the mounted cgroup, relative (joined to the mount point).
        let relative: PathBuf = own
            .strip_prefix(&mount.root)
            .unwrap_or(&own)
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        if !relative.as_os_str().is_empty() {
            dirs.push(mount.point.join(relative));
        }
    }
    dirs.push(mount.point.clone());
    dirs
}

fn words(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Whether a child made in `parent` gets `files`: made, looked at and removed.
fn probe(parent: &Path, files: &[&str]) -> bool {
    let dir = parent.join(format!("nextedit-probe-{}", std::process::id()));
    if std::fs::create_dir(&dir).is_err() {
        return false;
    }
    let ok = files.iter().all(|f| dir.join(f).exists());
    let _ = std::fs::remove_dir(&dir);
    ok
}

fn discover() -> Result<Layout, NoCgroup> {
    let mounts = mounts();
    const V2_CONTROLLERS: [&str; 2] = ["pids", "memory"];
    for mount in mounts.iter().filter(|m| m.fstype == "cgroup2") {
        let own = own_cgroup(|id, controllers| id == "0" && controllers.is_empty());
        for dir in candidates(mount, own) {
            let available = words(&dir.join("cgroup.controllers"));
            if !V2_CONTROLLERS
                .iter()
                .all(|c| available.iter().any(|a| a == c))
            {
                continue;
            }
            let enabled = words(&dir.join("cgroup.subtree_control"));
            if !V2_CONTROLLERS
                .iter()
                .all(|c| enabled.iter().any(|e| e == c))
            {
                // Fails (EBUSY) in a cgroup that holds processes itself, unless it is the root.
                let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+pids +memory");
            }
            if probe(&dir, &["pids.max", "memory.max"]) {
                return Ok(Layout::V2 { parent: dir });
            }
        }
    }
    let v1 = |controller: &str, file: &str| -> Option<PathBuf> {
        let mount = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == controller))?;
        let own = own_cgroup(|_, controllers| controllers.split(',').any(|c| c == controller));
        candidates(mount, own)
            .into_iter()
            .find(|dir| probe(dir, &[file]))
    };
    if let (Some(pids), Some(memory)) = (
        v1("pids", "pids.max"),
        v1("memory", "memory.limit_in_bytes"),
    ) {
        return Ok(Layout::V1 { pids, memory });
    }
    Err(NoCgroup::NotWritable)
}

/// The cgroups of this process, for [`kill_all`].
struct Live {
    /// Each cgroup's directories, registered before they are made.
    cgroups: Vec<Vec<PathBuf>>,
    /// Set by [`kill_all`]: no cgroup is made after it.
    closed: bool,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    cgroups: Vec::new(),
    closed: false,
});
/// Numbers the cgroups this process makes.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One process tree's cgroup (one directory in v2, two in v1), removed on drop after
/// every process in it is killed.
#[derive(Debug)]
pub struct Cgroup {
    v2: bool,
    /// v2: the cgroup; v1: the `pids` one, then the `memory` one.
    dirs: Vec<PathBuf>,
    /// Their `cgroup.procs`, open for the child to join before it executes.
    procs: Vec<File>,
}

impl Cgroup {
    /// A new cgroup limited to `limits`; `None` where [`layout`] found none.
    pub fn create(limits: &Limits) -> Result<Option<Cgroup>, std::io::Error> {
        let Ok(layout) = layout() else {
            return Ok(None);
        };
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep(layout));
        // Named by this process and a counter; a name a dead process with the same pid
        // left behind (a SIGKILL runs no clean-up, and pids are reused) is skipped, or
        // creating the directory would fail on a stranger's leftover.
        let (v2, dirs) = loop {
            let name = format!(
                "nextedit-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst)
            );
            let (v2, dirs) = match layout {
                Layout::V2 { parent } => (true, vec![parent.join(&name)]),
                Layout::V1 { pids, memory } => (false, vec![pids.join(&name), memory.join(&name)]),
            };
            if !dirs.iter().any(|dir| dir.exists()) {
                break (v2, dirs);
            }
        };
        {
            // Registered before it exists, so a signal's clean-up never misses it.
            let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
            if live.closed {
                return Err(std::io::Error::other("nextedit is stopping"));
            }
            live.cgroups.push(dirs.clone());
        }
        // Dropped on an error below: what was made is removed, the registration too.
        let mut made = Cgroup {
            v2,
            dirs,
            procs: Vec::new(),
        };
        for dir in &made.dirs {
            std::fs::create_dir(dir)?;
        }
        let memory = limits.memory_bytes().to_string();
        let write = |dir: &Path, file: &str, value: &str| std::fs::write(dir.join(file), value);
        if v2 {
            let dir = &made.dirs[0];
            write(dir, "pids.max", &limits.pids.to_string())?;
            write(dir, "memory.max", &memory)?;
            // Best effort: no swap to spill into, and an OOM kill ends the whole tree.
            let _ = write(dir, "memory.swap.max", "0");
            let _ = write(dir, "memory.oom.group", "1");
        } else {
            write(&made.dirs[0], "pids.max", &limits.pids.to_string())?;
            write(&made.dirs[1], "memory.limit_in_bytes", &memory)?;
            // Only on kernels with swap accounting; must follow limit_in_bytes.
            let _ = write(&made.dirs[1], "memory.memsw.limit_in_bytes", &memory);
        }
        for dir in &made.dirs {
            made.procs.push(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"))?,
            );
        }
        Ok(Some(made))
    }

    /// The `cgroup.procs` descriptors a child writes `0` to in `pre_exec` to join.
    pub fn join_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// The limit the tree hit, from the kernel's counters: a fork refused at
    /// `pids.max`, or a process the OOM killer ended.
    pub fn hit(&self) -> Option<Limit> {
        let counter = |path: PathBuf, key: &str| -> u64 {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        let (pids, memory) = if self.v2 {
            (
                counter(self.dirs[0].join("pids.events"), "max "),
                counter(self.dirs[0].join("memory.events"), "oom_kill "),
            )
        } else {
            (
                counter(self.dirs[0].join("pids.events"), "max "),
                counter(self.dirs[1].join("memory.oom_control"), "oom_kill "),
            )
        };
        if memory > 0 {
            Some(Limit::Memory)
        } else if pids > 0 {
            Some(Limit::Pids)
        } else {
            None
        }
    }

    /// The processes in the tree now.
    pub fn members(&self) -> Vec<libc::pid_t> {
        members(&self.dirs)
    }

    /// Kills every process in the tree, until none is left (bounded: a second).
    pub fn kill(&self) {
        kill_members(&self.dirs);
    }
}

/// How old an empty cgroup of a process gone must be before [`sweep`] removes it.
const LEFTOVER_AGE: Duration = Duration::from_secs(60);

/// The parent directories of this layout's cgroups (one in v2, two in v1).
fn parents(layout: &Layout) -> Vec<&Path> {
    match layout {
        Layout::V2 { parent } => vec![parent.as_path()],
        Layout::V1 { pids, memory } => vec![pids.as_path(), memory.as_path()],
    }
}

/// Removes the empty cgroups a nextedit that no longer runs left behind (a SIGKILL
/// runs no clean-up); once per process, before its first cgroup. Only names this code
/// makes (`nextedit-PID-N`) whose PID has no process and that are a minute old are
/// touched (a nextedit in another pid namespace is invisible here: its cgroup is empty
/// only for the moment between making it and starting its child), and removing a
/// cgroup that still has a member fails, so nothing in use is removed.
fn sweep(layout: &Layout) {
    for parent in parents(layout) {
        let Ok(entries) = std::fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("nextedit-"))
                .and_then(|rest| rest.split_once('-'))
                .filter(|(_, n)| n.parse::<u64>().is_ok())
                .and_then(|(pid, _)| pid.parse::<u32>().ok())
            else {
                continue;
            };
            let dir = entry.path();
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > LEFTOVER_AGE));
            if old
                && !Path::new(&format!("/proc/{pid}")).exists()
                && members(std::slice::from_ref(&dir)).is_empty()
            {
                let _ = std::fs::remove_dir(&dir);
            }
        }
    }
}

fn members(dirs: &[PathBuf]) -> Vec<libc::pid_t> {
    let mut pids: Vec<libc::pid_t> = dirs
        .iter()
        .flat_map(|dir| words(&dir.join("cgroup.procs")))
        .filter_map(|w| w.parse().ok())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

fn kill_members(dirs: &[PathBuf]) {
    // cgroup v2 (Linux 5.14) kills the whole cgroup at once, forks in flight included.
    if let Some(dir) = dirs.first() {
        let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    }
    for _ in 0..200 {
        let pids = members(dirs);
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            // A pid read from the tree's own cgroup.procs; a pid reused meanwhile would
            // be in that cgroup only if it belongs to the tree.
            super::process::signal(pid as u32, super::process::Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn remove(dirs: &[PathBuf]) {
    for dir in dirs.iter().rev() {
        // A process killed a moment ago may still be leaving the cgroup.
        for _ in 0..100 {
            match std::fs::remove_dir(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => break,
            }
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill();
        self.procs.clear();
        remove(&self.dirs);
        if let Ok(mut live) = LIVE.lock() {
            live.cgroups.retain(|dirs| *dirs != self.dirs);
        }
    }
}

/// Kills every process of every live cgroup of this process and removes them, and
/// makes no cgroup after (for a signal's clean-up, which exits without running
/// destructors).
pub fn kill_all() {
    let all = {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.closed = true;
        live.cgroups.clone()
    };
    for dirs in all {
        kill_members(&dirs);
        remove(&dirs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_of_a_dead_process_with_this_pid_is_skipped_not_failed_on() {
        let Ok(layout) = layout() else {
            return; // no writable cgroup hierarchy here: nothing to name
        };
        let parents = parents(layout);
        // The next two names this process would take, left behind as a SIGKILLed
        // process with the same pid would leave them.
        let next = NEXT.load(Ordering::SeqCst);
        let leftovers: Vec<PathBuf> = (next..next + 2)
            .flat_map(|n| {
                let name = format!("nextedit-{}-{n}", std::process::id());
                parents.iter().map(move |p| p.join(&name))
            })
            .collect();
        for dir in &leftovers {
            std::fs::create_dir(dir).unwrap();
        }
        let made = Cgroup::create(&Limits::DEFAULT);
        for dir in &leftovers {
            std::fs::remove_dir(dir).unwrap();
        }
        let made = made.unwrap().expect("a cgroup where the layout has one");
        assert!(made.dirs.iter().all(|d| !leftovers.contains(d)));
        assert!(made.dirs.iter().all(|d| d.exists()));
    }

    #[test]
    fn the_empty_leftovers_of_processes_gone_are_swept_and_nothing_else() {
        let Ok(layout) = layout() else {
            return; // no writable cgroup hierarchy here: nothing to sweep
        };
        // A pid with no process: a child that has exited and been reaped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        let make = |name: String, made: std::time::SystemTime| -> Vec<PathBuf> {
            parents(layout)
                .iter()
                .map(|p| {
                    let dir = p.join(&name);
                    std::fs::create_dir(&dir).unwrap();
                    File::open(&dir).unwrap().set_modified(made).unwrap();
                    dir
                })
                .collect()
        };
        let leftover = make(format!("nextedit-{gone}-7"), hour_ago);
        // Just made (maybe by a nextedit in another pid namespace), this process's
        // (alive), and a name this code never makes.
        let young = make(format!("nextedit-{gone}-8"), std::time::SystemTime::now());
        let alive = make(format!("nextedit-{}-999999", std::process::id()), hour_ago);
        let stranger = make(format!("nextedit-{gone}-x"), hour_ago);
        sweep(layout);
        let exists = |dirs: &[PathBuf]| dirs.iter().map(|d| d.exists()).collect::<Vec<_>>();
        let now = [&leftover, &young, &alive, &stranger].map(|dirs| exists(dirs));
        for dir in [&leftover, &young, &alive, &stranger].into_iter().flatten() {
            let _ = std::fs::remove_dir(dir);
        }
        let n = leftover.len();
        assert_eq!(
            now,
            [vec![false; n], vec![true; n], vec![true; n], vec![true; n]]
        );
    }

    #[test]
    fn candidates_are_the_own_cgroup_then_the_root() {
        let mount = Mount {
            fstype: "cgroup2".into(),
            root: "/".into(),
            point: "/sys/fs/cgroup".into(),
            options: Vec::new(),
        };
        assert_eq!(
            candidates(&mount, Some("/user.slice/u".into())),
            [
                PathBuf::from("/sys/fs/cgroup/user.slice/u"),
                PathBuf::from("/sys/fs/cgroup")
            ]
        );
        assert_eq!(
            candidates(&mount, Some("/".into())),
            [PathBuf::from("/sys/fs/cgroup")]
        );
        assert_eq!(unescape("/a\\040b"), "/a b");
    }
}
