//! The seccomp filters every sandboxed process runs under, loaded by bubblewrap from
//! memory files (`--add-seccomp-fd FD`, one per filter) right before it starts the
//! program, so its own set-up is not filtered.
//!
//! The first filter fails with `EPERM` the system calls that change the sandbox
//! itself or reach past it: mounting and unmounting (old and new mount API),
//! `pivot_root`, `chroot`, new namespaces (`unshare`, `setns`, a `clone` asking for
//! one), the kernel keyring, `ptrace` and cross-process memory access, BPF,
//! `perf_event_open`, file handles, kernel modules, kexec, swap, reboot, accounting
//! and quotas. `EPERM`, not a kill: a program that probes (a test runner, a language
//! server) goes on. On x86-64 the x32 numbers of the same calls are denied too. The
//! second answers `clone3` with `ENOSYS`, so the C library falls back to `clone`,
//! whose flags the first filter can read (`clone3` passes them in memory).
//!
//! Compiled with `seccompiler` (rust-vmm's, pure Rust, used by Firecracker):
//! `libseccomp` would add a C library to build against and install.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// System calls the first filter denies, on every architecture.
const DENIED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_userfaultfd,
];

/// x86-64 only: I/O port access.
#[cfg(target_arch = "x86_64")]
const DENIED_ARCH: &[libc::c_long] = &[libc::SYS_iopl, libc::SYS_ioperm];
#[cfg(not(target_arch = "x86_64"))]
const DENIED_ARCH: &[libc::c_long] = &[];

/// The `clone` flags that make a namespace.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    0x80, // CLONE_NEWTIME
];

/// The bit x32 system call numbers carry on x86-64.
#[cfg(target_arch = "x86_64")]
const X32: libc::c_long = 0x4000_0000;

/// Why the filters cannot be made.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SeccompError {
    /// This architecture or rule set is not something seccompiler compiles.
    #[error("cannot compile the sandbox's seccomp filter: {0}")]
    Compile(String),
    /// The memory file bubblewrap reads it from.
    #[error("cannot hand the seccomp filter to bwrap: {0}")]
    Io(String),
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<Vec<u8>, SeccompError> {
    let error = |e: &dyn std::fmt::Display| SeccompError::Compile(e.to_string());
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| error(&e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| error(&e))?;
    let program: BpfProgram = filter.try_into().map_err(|e| error(&e))?;
    // The kernel's `struct sock_filter`, as bwrap passes the bytes to seccomp(2).
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    Ok(bytes)
}

/// Each number of `calls`, and on x86-64 its x32 twin too (`c_long` is `i64` on the
/// 64-bit architectures seccompiler compiles for).
fn with_abis(calls: impl Iterator<Item = libc::c_long>) -> Vec<i64> {
    let mut numbers = Vec::new();
    for call in calls {
        numbers.push(call);
        #[cfg(target_arch = "x86_64")]
        numbers.push(call | X32);
    }
    numbers
}

/// The two filters' programs, compiled once per process.
pub fn programs() -> Result<&'static [Vec<u8>; 2], SeccompError> {
    static PROGRAMS: OnceLock<Result<[Vec<u8>; 2], SeccompError>> = OnceLock::new();
    PROGRAMS
        .get_or_init(|| {
            let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            for call in with_abis(DENIED.iter().chain(DENIED_ARCH).copied()) {
                // No rule: every call of it matches.
                denied.insert(call, Vec::new());
            }
            let clone_rules = NAMESPACE_FLAGS
                .iter()
                .map(|&flag| {
                    let flag = flag as u32 as u64;
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(flag),
                        flag,
                    )
                    .and_then(|c| SeccompRule::new(vec![c]))
                    .map_err(|e| SeccompError::Compile(e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            for call in with_abis([libc::SYS_clone].into_iter()) {
                denied.insert(call, clone_rules.clone());
            }
            let mut enosys: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            for call in with_abis([libc::SYS_clone3].into_iter()) {
                enosys.insert(call, Vec::new());
            }
            Ok([
                compile(denied, libc::EPERM)?,
                compile(enosys, libc::ENOSYS)?,
            ])
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The filters, each in a memory file at offset 0 (close-on-exec: the caller clears
/// the flag in the child alone, so no other child inherits them).
pub fn filter_files() -> Result<Vec<OwnedFd>, SeccompError> {
    programs()?
        .iter()
        .map(|program| {
            let io = |e: std::io::Error| SeccompError::Io(e.to_string());
            let mut file = super::files::memory_file(c"nextedit-seccomp").map_err(io)?;
            file.write_all(program).map_err(io)?;
            file.rewind().map_err(io)?;
            Ok(OwnedFd::from(file))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_compile_to_whole_instructions() {
        let [denied, enosys] = programs().unwrap();
        assert!(!denied.is_empty() && denied.len() % 8 == 0);
        assert!(!enosys.is_empty() && enosys.len() % 8 == 0);
        assert_eq!(filter_files().unwrap().len(), 2);
    }
}
