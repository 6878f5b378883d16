//! Process file descriptors (Linux kernel/pid.c `pidfd_create`, `pidfd_poll`, `pidfd_pid`).
//!
//! A [`PidFd`] names one process (the thread group, `PIDTYPE_TGID`) for as long as the
//! descriptor lives, so it is not fooled by a later process with the same number. It becomes
//! readable (`POLLIN`) once every thread of the group has exited (`thread_group_exited`):
//! the exit path wakes the process's `vfork_wait` queue then, which is where pollers wait.
//! It cannot be read or written (`EINVAL`, as `pidfd_fops` has neither). The syscalls are in
//! `sys/pidfd.rs`; `waitid(P_PIDFD)` finds the process through [`pid_of_fd`].

use crate::syscall::SyscallCtx;
use crate::task::{Process, lock};
use crate::vfs::{FileOps, Kstat};
use crate::wait::PollTable;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use um_uapi::{Errno, SysResult};

/// `POLLIN | POLLRDNORM`.
const POLLIN_RDNORM: u16 = 0x1 | 0x40;
pub use um_uapi::abi::fcntl::O_NONBLOCK;

/// An open pidfd.
pub struct PidFd {
    process: Arc<Process>,
    ino: u64,
}

impl PidFd {
    /// A pidfd for `process`.
    pub fn new(process: Arc<Process>) -> PidFd {
        static NEXT: AtomicU64 = AtomicU64::new(1 << 32);
        PidFd {
            process,
            ino: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The process it names.
    pub fn process(&self) -> &Arc<Process> {
        &self.process
    }

    /// Whether the whole thread group has exited (Linux `thread_group_exited`).
    pub fn exited(&self) -> bool {
        !lock(&self.process.threads)
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .any(|t| !t.exited.load(Ordering::Acquire))
    }
}

impl FileOps for PidFd {
    /// An anonymous inode (`anon_inode_getfd("[pidfd]", ...)`): mode 0600, no file type.
    fn stat(&self) -> SysResult<Kstat> {
        Ok(crate::vfs::anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }

    fn is_stream(&self) -> bool {
        true
    }

    /// `pidfd_poll`: readable once the process has exited.
    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.process.vfork_wait);
        }
        if self.exited() {
            events & POLLIN_RDNORM
        } else {
            0
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("[pidfd]")
    }
}

/// `pidfd_get_pid`: the process behind descriptor `fd` and whether the descriptor is
/// non-blocking; `EBADF` if `fd` is not open or not a pidfd.
pub fn pid_of_fd(c: &SyscallCtx<'_>, fd: u64) -> SysResult<(Arc<Process>, bool)> {
    let f = lock(&c.task.process.files()).get(fd)?;
    let p = f
        .ops
        .as_any()
        .and_then(|a| a.downcast_ref::<PidFd>())
        .ok_or(Errno::EBADF)?;
    Ok((p.process.clone(), f.flags() & O_NONBLOCK != 0))
}

/// `pidfd_to_pid` (kernel/signal.c) for pidfd_send_signal(2): a pidfd, or an open `/proc/PID`
/// directory (`tgid_pidfd_to_pid`); `EBADF` for anything else, `ESRCH` if the process of a
/// `/proc/PID` descriptor is gone altogether.
pub fn signal_target_of_fd(c: &SyscallCtx<'_>, fd: u64) -> SysResult<Arc<Process>> {
    let f = lock(&c.task.process.files()).get(fd)?;
    if let Some(p) = f.ops.as_any().and_then(|a| a.downcast_ref::<PidFd>()) {
        return Ok(p.process.clone());
    }
    let weak = f
        .dentry
        .as_ref()
        .and_then(|d| d.inode.pidfd_process())
        .ok_or(Errno::EBADF)?;
    weak.upgrade().ok_or(Errno::ESRCH)
}
