//! The file system calls std lacks here, through rustix (see [`super::process`] on
//! why that crate): an exclusive advisory lock ([`lock_exclusive`], `flock(2)`, for
//! the store's files and the run's scratch directories), whether a directory takes
//! new files ([`may_create_in`]), whether a file system is full ([`is_full`]) and an
//! anonymous memory file ([`memory_file`], the seccomp filters).

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::path::Path;

/// An exclusive `flock(2)` on `file`, held until it is closed (the kernel drops it
/// however its process ends). `wait`: blocks until it is free; else a lock held
/// elsewhere fails at once with an error of kind [`io::ErrorKind::WouldBlock`].
pub fn lock_exclusive(file: &File, wait: bool) -> io::Result<()> {
    use rustix::fs::FlockOperation;
    let operation = if wait {
        FlockOperation::LockExclusive
    } else {
        FlockOperation::NonBlockingLockExclusive
    };
    rustix::fs::flock(file, operation).map_err(io::Error::from)
}

/// Whether this process may create files in `dir` (`access(2)`: written and searched,
/// as its real user).
pub fn may_create_in(dir: &Path) -> bool {
    use rustix::fs::Access;
    rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK).is_ok()
}

/// Whether the file system holding `path` has blocks and none free for its user
/// (`statvfs(2)`); `None` when it cannot be asked.
pub fn is_full(path: &Path) -> Option<bool> {
    let stat = rustix::fs::statvfs(path).ok()?;
    Some(stat.f_blocks > 0 && stat.f_bavail == 0)
}

/// A new anonymous file in memory named `name` (`memfd_create(2)`), closed on exec.
pub fn memory_file(name: &CStr) -> io::Result<File> {
    let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)?;
    Ok(File::from(fd))
}
