//! Process control, written once for everything nextedit starts (the proxy's language
//! server, suggester processes, the tests of `tasks run`, the LSP client's servers):
//! a child in a process group of its own ([`in_own_group`]) set up between fork and
//! exec ([`at_exec`]: a cgroup joined, rlimits, descriptors passed on), signals to a
//! process or a whole group, adopting orphans ([`become_subreaper`]), reaping, ending
//! a whole tree ([`end_tree`]), the `/proc` scan ([`children_of`], [`descendants`],
//! [`user_threads`]), a thread's priority ([`lower_thread_priority`]) and waiting for
//! a child with a deadline ([`wait_until`]).
//!
//! The system calls go through rustix (already in the tree through `tempfile`): safe
//! functions over raw system calls, so the child's setup between fork and exec stays
//! async-signal-safe and allocation-free; `nix` would add a crate and goes through
//! libc. This is the one module of the crate allowed `unsafe` (`#![deny(unsafe_code)]`
//! at the root): `Command::pre_exec` itself, and the descriptors the child's setup
//! borrows by number.

use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use rustix::process::{Pid, WaitOptions};
pub use rustix::process::{Resource, Signal};

/// How often [`wait_until`] looks whether the child has exited.
const WAIT_POLL: Duration = Duration::from_millis(5);

/// Starts `command`'s child in a process group of its own (led by it), so the whole
/// tree it starts (a shell's helpers, a launcher's server) is signalled at once.
pub fn in_own_group(command: &mut Command) -> &mut Command {
    command.process_group(0)
}

/// What a child does between fork and exec, before any of its own code runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AtExec {
    /// Descriptors to write `0` to: a cgroup's `cgroup.procs`, which the child joins.
    pub join: Vec<RawFd>,
    /// Resource limits, soft and hard alike, set in this order.
    pub limits: Vec<(Resource, u64)>,
    /// Close-on-exec descriptors this child alone inherits (their flag cleared).
    pub inherit: Vec<RawFd>,
}

/// Has `command`'s child do `setup` between fork and exec; a step that fails fails the
/// spawn with its OS error. The descriptors must stay open until the child is spawned
/// (one closed meanwhile fails the spawn with `EBADF`).
pub fn at_exec(command: &mut Command, setup: AtExec) {
    let step = |result: rustix::io::Result<()>| result.map_err(io::Error::from);
    let hook = move || -> io::Result<()> {
        for &fd in &setup.join {
            // SAFETY: a descriptor number borrowed for one system call in the forked
            // child; if it is no longer open there, the call fails with EBADF.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            if rustix::io::write(fd, b"0")? != 1 {
                return Err(io::Error::from(io::ErrorKind::WriteZero));
            }
        }
        for &(resource, value) in &setup.limits {
            let limit = rustix::process::Rlimit {
                current: Some(value),
                maximum: Some(value),
            };
            step(rustix::process::setrlimit(resource, limit))?;
        }
        for &fd in &setup.inherit {
            // SAFETY: as above.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            step(rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty()))?;
        }
        Ok(())
    };
    // SAFETY: the hook runs in the child between fork and exec and makes only raw
    // system calls (write, prlimit64, fcntl) on values computed before the fork; it
    // allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(hook);
    }
}

/// A process id as rustix takes it; `None` for 0 (which would name our own group).
fn pid(pid: u32) -> Option<Pid> {
    Pid::from_raw(i32::try_from(pid).ok()?)
}

/// Sends `signal` to process `target`; whether it was sent.
pub fn signal(target: u32, signal: Signal) -> bool {
    pid(target).is_some_and(|p| rustix::process::kill_process(p, signal).is_ok())
}

/// Sends `signal` to every process of group `group`; whether one received it.
pub fn signal_group(group: u32, signal: Signal) -> bool {
    pid(group).is_some_and(|p| rustix::process::kill_process_group(p, signal).is_ok())
}

/// Whether a process of group `group` is still there.
pub fn group_alive(group: u32) -> bool {
    pid(group).is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
}

/// Whether process `target` exists (also one of another user's, which may not be
/// signalled).
pub fn exists(target: u32) -> bool {
    pid(target).is_some_and(|p| match rustix::process::test_kill_process(p) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    })
}

/// Makes this process the reaper of its descendants' orphans (`PR_SET_CHILD_SUBREAPER`):
/// a child that leaves its process group (a daemon) is re-parented here, where
/// [`children_of`] finds it. Whether it is now.
pub fn become_subreaper() -> bool {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
}

/// Reaps every child that has exited, without waiting for the others.
pub fn reap_exited() {
    // `wait`, not `waitpid(None, …)`, which would wait for this process group's only.
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// Waits for child `target`, one no [`Child`] handle owns (an adopted orphan).
pub fn reap(target: u32) {
    if let Some(p) = pid(target) {
        let _ = rustix::process::waitpid(Some(p), WaitOptions::empty());
    }
}

/// Ends what is left of a process tree led by process group `group`: the group gets
/// SIGTERM, then SIGKILL after 200 ms if a member is still there (exited ones are
/// reaped meanwhile), then every other descendant of this process SIGKILL (up to three
/// rounds, 20 ms apart, for the orphans of orphans); everything exited is reaped.
pub fn end_tree(group: u32) {
    if signal_group(group, Signal::TERM) {
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline && group_alive(group) {
            reap_exited();
            std::thread::sleep(Duration::from_millis(10));
        }
        signal_group(group, Signal::KILL);
    }
    for _ in 0..3 {
        let children = descendants(std::process::id());
        if children.is_empty() {
            break;
        }
        for pid in children {
            signal(pid, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(20));
        reap_exited();
    }
    reap_exited();
}

/// Polls `child` every 5 ms until it exits (`Some` of its status) or `deadline`
/// passes (`None`; it is left running).
pub fn wait_until(child: &mut Child, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(WAIT_POLL);
    }
}

/// Kills `child` and waits for it (an error means it had been reaped already).
pub fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Lowers the calling thread's priority to nice `nice` (Linux applies nice values per
/// thread); a failure leaves it as it was.
pub fn lower_thread_priority(nice: i32) {
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice);
}

/// This process's real user id.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// This process's effective user id.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// One process as `/proc` shows it.
struct Proc {
    pid: u32,
    /// The owner of its `/proc` entry (its real user).
    uid: Option<u32>,
    /// `R`, `S`, `Z` (a zombie), …
    state: String,
    ppid: Option<u32>,
    /// Its threads (`num_threads`).
    threads: Option<u64>,
}

/// Every process in `/proc` now (empty where there is none).
fn scan() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            Some(Proc {
                pid,
                uid: entry.metadata().ok().map(|m| m.uid()),
                state: fields.first()?.to_string(),
                ppid: fields.get(1).and_then(|p| p.parse().ok()),
                // Field 20 of the line, the 18th after the command.
                threads: fields.get(17).and_then(|t| t.parse().ok()),
            })
        })
        .collect()
}

/// The processes whose parent is `parent`, zombies included (to be reaped).
pub fn children_of(parent: u32) -> Vec<u32> {
    (scan().into_iter())
        .filter(|p| p.ppid == Some(parent))
        .map(|p| p.pid)
        .collect()
}

/// The live (not zombie) descendants of `root`, children before grandchildren.
pub fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = (scan().into_iter())
        .filter(|p| p.state != "Z")
        .filter_map(|p| Some((p.pid, p.ppid?)))
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            (parents.iter())
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// Threads that user `uid`'s processes run now (what `RLIMIT_NPROC` counts).
pub fn user_threads(uid: u32) -> u64 {
    (scan().into_iter())
        .filter(|p| p.uid == Some(uid))
        .filter_map(|p| p.threads)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_in_proc_and_ended_with_its_group() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & wait"]);
        in_own_group(&mut command);
        let mut child = command.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while children_of(child.id()).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let sleep = children_of(child.id());
        assert_eq!(sleep.len(), 1, "sh's sleep");
        assert!(children_of(std::process::id()).contains(&child.id()));
        let below = descendants(std::process::id());
        assert!(below.contains(&child.id()) && below.contains(&sleep[0]));
        assert!(group_alive(child.id()));
        assert!(user_threads(uid()) >= 2);
        assert!(signal_group(child.id(), Signal::KILL));
        let status = wait_until(&mut child, Instant::now() + Duration::from_secs(5))
            .unwrap()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9));
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(child.id()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!group_alive(child.id()));
        assert!(!exists(0) && !signal(0, Signal::KILL));
    }

    #[test]
    fn a_limit_set_at_exec_holds_in_the_child() {
        let mut command = Command::new("sh");
        command.args(["-c", "ulimit -n; ulimit -c"]);
        at_exec(
            &mut command,
            AtExec {
                limits: vec![(Resource::Nofile, 64), (Resource::Core, 0)],
                ..AtExec::default()
            },
        );
        let output = command.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), "64\n0\n");
    }
}
