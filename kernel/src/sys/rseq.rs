//! rseq(2): restartable sequences, deliberately not provided.
//!
//! A Linux kernel built without `CONFIG_RSEQ` has no `sys_rseq`: the table entry is
//! `sys_ni_syscall` (kernel/sys_ni.c `COND_SYSCALL(rseq)`), which returns `ENOSYS` whatever the
//! arguments. glibc 2.35+ registers an rseq area for every thread at start-up and treats
//! `ENOSYS` as "no rseq" (sysdeps/unix/sysv/linux/rseq-internal.h `rseq_register_current_thread`:
//! on failure `__rseq_size` is set to 0 and `sched_getcpu` falls back to `getcpu`), so every
//! glibc program calls this once per thread and copes.
//!
//! Honouring a registration would mean keeping `cpu_id` in the guest's area right whenever the
//! host moves a stub thread to another CPU, and aborting a critical section the host
//! preempted or interrupted with a signal (kernel/rseq.c `__rseq_handle_notify_resume`); the
//! host schedules the stub threads without telling this kernel, so it cannot keep that
//! contract. We answer like a kernel without rseq. The handler exists only so that this
//! expected, handled `ENOSYS` does not produce the "unimplemented syscall" log line that the
//! gates treat as a missing feature.

use crate::syscall::{SyscallCtx, SyscallTable};
use um_uapi::{Errno, SysResult};

/// `sys_ni_syscall` for rseq: `ENOSYS` for any arguments (no validation, as Linux does none).
fn rseq(_c: &mut SyscallCtx<'_>, _a: [u64; 6]) -> SysResult {
    Err(Errno::ENOSYS)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("rseq", rseq)
        .enosys("as a kernel without CONFIG_RSEQ: the host moves and preempts the stub threads unseen, so cpu_id and critical-section aborts cannot be kept; glibc falls back");
}
