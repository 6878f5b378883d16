//! kcmp(2) (Linux kernel/kcmp.c): whether two processes share a kernel resource.
//!
//! Both pids are of the caller's pid namespace (`ESRCH`), and the caller needs ptrace's read
//! access to both (`PTRACE_MODE_READ_REALCREDS`, [`crate::ptrace::may_access`]; `EPERM`). The
//! answer is 0 for the same object, else 1 or 2 by an order of the objects' addresses that
//! is consistent for as long as both exist (Linux obfuscates the pointers with a per-boot
//! cookie for the same reason: the order means nothing, only its consistency does).
//!
//! What each type compares here: `KCMP_FILE` the open file descriptions behind two
//! descriptors (`EBADF` if either is not open), `KCMP_VM` the address spaces, `KCMP_FILES`
//! the descriptor tables (shared by `CLONE_FILES`). This kernel shares the filesystem
//! context, the signal handlers and the SysV undo list only within a thread group, so
//! `KCMP_FS`, `KCMP_SIGHAND` and `KCMP_SYSVSEM` compare thread groups, and `KCMP_IO` (no
//! `CLONE_IO`) compares threads. `KCMP_EPOLL_TFD` compares a descriptor of the first process
//! with the file an epoll instance of the second watches under a descriptor number
//! ([`set_epoll_target_hook`]: epoll lives in the file layer).

use crate::ptrace::may_access;
use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{Task, lock};
use crate::vfs::OpenFile;
use std::sync::{Arc, OnceLock};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::probe::{
    KCMP_EPOLL_TFD, KCMP_FILE, KCMP_FILES, KCMP_FS, KCMP_IO, KCMP_SIGHAND, KCMP_SYSVSEM, KCMP_VM,
    KcmpEpollSlot,
};
use um_uapi::{Errno, SysResult};

/// `get_epoll_tfile_raw_ptr`: the file the epoll instance `epoll` watches as descriptor
/// `tfd`, the `toff`-th such item; `EINVAL` if `epoll` is not an epoll file, `ENOENT` if
/// there is no such item.
pub type EpollTarget = fn(&OpenFile, u32, u32) -> SysResult<Arc<OpenFile>>;

static EPOLL_TARGET: OnceLock<EpollTarget> = OnceLock::new();

/// Sets the epoll lookup (the file layer does at boot; the first call wins).
pub fn set_epoll_target_hook(f: EpollTarget) {
    let _ = EPOLL_TARGET.set(f);
}

/// `kcmp_ptr`: 0 for the same object, else 1 or 2 by address.
fn order(a: usize, b: usize) -> u64 {
    match a.cmp(&b) {
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Less => 1,
        std::cmp::Ordering::Greater => 2,
    }
}

/// `get_file_raw_ptr`: the open file behind `fd` in `t`'s table.
fn file_of(t: &Task, fd: u64) -> SysResult<Arc<OpenFile>> {
    lock(&t.process.files()).get(fd)
}

fn kcmp(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // SYSCALL_DEFINE5(kcmp, pid_t, pid1, pid_t, pid2, int, type, unsigned long, idx1,
    // unsigned long, idx2)
    let (pid1, pid2, kind, idx1, idx2): (i32, i32, u32, u64, u64) = args(&a)?;
    let find = |pid: i32| {
        u32::try_from(pid)
            .ok()
            .filter(|&p| p > 0)
            .and_then(|p| c.kernel.tasks.find_task_vpid(c.task, p))
    };
    let (Some(t1), Some(t2)) = (find(pid1), find(pid2)) else {
        return Err(Errno::ESRCH);
    };
    may_access(&c.task.process, &t1.process, false)?;
    may_access(&c.task.process, &t2.process, false)?;
    let ptr = |p: &Arc<crate::task::Process>| Arc::as_ptr(p) as usize;
    match kind {
        KCMP_FILE => {
            let (f1, f2) = (file_of(&t1, idx1), file_of(&t2, idx2));
            match (f1, f2) {
                (Ok(f1), Ok(f2)) => Ok(order(Arc::as_ptr(&f1) as usize, Arc::as_ptr(&f2) as usize)),
                _ => Err(Errno::EBADF),
            }
        }
        KCMP_VM => Ok(order(
            Arc::as_ptr(&t1.mm()) as usize,
            Arc::as_ptr(&t2.mm()) as usize,
        )),
        KCMP_FILES => Ok(order(
            Arc::as_ptr(&t1.process.files()) as usize,
            Arc::as_ptr(&t2.process.files()) as usize,
        )),
        KCMP_FS | KCMP_SIGHAND | KCMP_SYSVSEM => Ok(order(ptr(&t1.process), ptr(&t2.process))),
        KCMP_IO => Ok(order(Arc::as_ptr(&t1) as usize, Arc::as_ptr(&t2) as usize)),
        KCMP_EPOLL_TFD => {
            // `kcmp_epoll_target`: the slot is read first (`EFAULT`, also for a NULL one).
            let slot = KcmpEpollSlot::from_bytes(&c.read_bytes(idx2, KcmpEpollSlot::SIZE)?)
                .ok_or(Errno::EFAULT)?;
            let f1 = file_of(&t1, idx1)?;
            let ep = file_of(&t2, u64::from(slot.efd))?;
            let hook = EPOLL_TARGET.get().ok_or(Errno::EINVAL)?;
            let target = hook(&ep, slot.tfd, slot.toff)?;
            Ok(order(
                Arc::as_ptr(&f1) as usize,
                Arc::as_ptr(&target) as usize,
            ))
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("kcmp", kcmp).partial(
        "KCMP_FS/SIGHAND/SYSVSEM compare thread groups and KCMP_IO threads (no CLONE_FS/SIGHAND/SYSVSEM/IO sharing between processes); Linux answers 0 for two tasks that have no undo list or I/O context",
    );
}
