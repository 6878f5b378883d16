//! I/O priorities: ioprio_set and ioprio_get (Linux block/ioprio.c, block/blk-ioc.c
//! `set_task_ioprio` and `__copy_io`, include/linux/ioprio.h `__get_task_ioprio`,
//! ioprio_set(2)).
//!
//! A thread's value is kept in [`crate::task::Task::ioprio`] (Linux `io_context->ioprio`),
//! copied to the threads and processes it creates. It changes no scheduling here: there is
//! no block layer queueing guest I/O, every read and write is done at once by the host, so
//! the value is bookkeeping that `ionice` and databases read back as Linux would answer.
//! Who may set what (`ioprio_check_cap`, `set_task_ioprio`) and which threads `which`/`who`
//! name (the ones of setpriority(2), [`super::sched::prio_targets`]) follow Linux.

use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{Task, lock};
use std::sync::atomic::Ordering;
use um_uapi::abi::capability::{CAP_SYS_ADMIN, CAP_SYS_NICE};
use um_uapi::abi::probe::{
    IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE, IOPRIO_CLASS_NONE, IOPRIO_CLASS_RT, IOPRIO_NR_LEVELS,
    IOPRIO_WHO_PGRP, IOPRIO_WHO_PROCESS, IOPRIO_WHO_USER, ioprio_class, ioprio_level, ioprio_value,
};
use um_uapi::abi::resource::{PRIO_PGRP, PRIO_PROCESS, PRIO_USER};
use um_uapi::{Errno, SysResult};

/// `ioprio_check_cap`: a valid class and level; the real-time class needs CAP_SYS_NICE or
/// CAP_SYS_ADMIN (`EPERM`), a bad class or level is `EINVAL`.
fn check_cap(c: &SyscallCtx<'_>, ioprio: u32) -> SysResult<()> {
    let level = ioprio_level(ioprio);
    match ioprio_class(ioprio) {
        IOPRIO_CLASS_RT | IOPRIO_CLASS_BE => {
            let p = &c.task.process;
            if ioprio_class(ioprio) == IOPRIO_CLASS_RT
                && !p.capable(CAP_SYS_NICE)
                && !p.capable(CAP_SYS_ADMIN)
            {
                return Err(Errno::EPERM);
            }
            if level >= IOPRIO_NR_LEVELS {
                return Err(Errno::EINVAL);
            }
        }
        IOPRIO_CLASS_IDLE => {}
        IOPRIO_CLASS_NONE if level == 0 => {}
        _ => return Err(Errno::EINVAL),
    }
    Ok(())
}

/// setpriority's `which` for an `IOPRIO_WHO_*` one.
fn which(w: u32) -> SysResult<u64> {
    Ok(u64::from(match w {
        IOPRIO_WHO_PROCESS => PRIO_PROCESS,
        IOPRIO_WHO_PGRP => PRIO_PGRP,
        IOPRIO_WHO_USER => PRIO_USER,
        _ => return Err(Errno::EINVAL),
    }))
}

/// `__get_task_ioprio`: the value in effect; one never set (class NONE) follows the
/// scheduling policy and nice value (`task_nice_ioclass`, `task_nice_ioprio`).
fn effective(t: &Task) -> u32 {
    let v = t.ioprio.load(Ordering::Relaxed);
    if ioprio_class(v) != IOPRIO_CLASS_NONE {
        return v;
    }
    let s = *lock(&t.sched);
    use super::sched::{SCHED_FIFO, SCHED_IDLE, SCHED_RR};
    let class = match s.policy {
        SCHED_IDLE => IOPRIO_CLASS_IDLE,
        SCHED_FIFO | SCHED_RR | super::sched::SCHED_DEADLINE => IOPRIO_CLASS_RT,
        _ => IOPRIO_CLASS_BE,
    };
    ioprio_value(class, ((s.nice + 20) / 5) as u32)
}

/// ioprio_set(2): `EINVAL`/`EPERM` from the value first, then each thread named in turn
/// (`set_task_ioprio`: the caller's uid or euid must be the thread's uid, or CAP_SYS_NICE;
/// `EPERM` stops the walk); `ESRCH` if none is named.
fn ioprio_set(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // SYSCALL_DEFINE3(ioprio_set, int, which, int, who, int, ioprio)
    let (which_, who, ioprio): (u32, u32, u32) = args(&a)?;
    check_cap(c, ioprio)?;
    let w = which(which_)?;
    let targets = if w == u64::from(PRIO_USER) && who == 0 {
        // `make_kuid(current_user_ns(), who)`: for ioprio_set, who 0 is uid 0 whoever
        // calls (ioprio_get compares with the caller's uid instead, as setpriority does).
        c.kernel
            .tasks
            .all()
            .into_iter()
            .filter(|t| {
                !t.exited.load(Ordering::Acquire)
                    && lock(&t.process.creds).uid == 0
                    && c.kernel.tasks.vnr(c.task, t.tid) != 0
            })
            .collect()
    } else {
        super::sched::prio_targets(c, w, who)?
    };
    if targets.is_empty() {
        return Err(Errno::ESRCH);
    }
    let mine = *lock(&c.task.process.creds);
    for t in targets {
        let uid = lock(&t.process.creds).uid;
        if uid != mine.euid && uid != mine.uid && !c.task.process.capable(CAP_SYS_NICE) {
            return Err(Errno::EPERM);
        }
        t.ioprio.store(ioprio, Ordering::Relaxed);
    }
    Ok(0)
}

/// ioprio_get(2): one thread's value as set (`get_task_raw_ioprio`: 0, class NONE, if never
/// set), or for a group or user the best (numerically lowest) value in effect among their
/// threads (`get_task_ioprio`, `ioprio_best`); `ESRCH` if none.
fn ioprio_get(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // SYSCALL_DEFINE2(ioprio_get, int, which, int, who)
    let (which_, who): (u32, u32) = args(&a)?;
    let w = which(which_)?;
    let targets = super::sched::prio_targets(c, w, who)?;
    let v = if w == u64::from(PRIO_PROCESS) {
        targets.first().map(|t| t.ioprio.load(Ordering::Relaxed))
    } else {
        targets.iter().map(|t| effective(t)).min()
    };
    v.map(u64::from).ok_or(Errno::ESRCH)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("ioprio_set", ioprio_set);
    t.register("ioprio_get", ioprio_get);
}
