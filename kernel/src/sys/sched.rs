//! Scheduling policy and priority (Linux `kernel/sched/syscalls.c`, sched(7),
//! sched_setscheduler(2), sched_rr_get_interval(2)): sched_setscheduler, sched_getscheduler,
//! sched_setparam, sched_getparam, sched_get_priority_max/min, sched_rr_get_interval.
//!
//! The policy and priority are kept per thread ([`SchedParams`] in [`Task::sched`]) with
//! Linux's checks (valid policy and priority, CAP_SYS_NICE or RLIMIT_RTPRIO for real-time,
//! same owner for another process, SCHED_RESET_ON_FORK), inherited at clone. They are
//! bookkeeping only: every guest thread is a host thread that the host schedules as it likes
//! (making them host real-time threads would need the host's privilege and could starve it).

use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{Task, lock};
use std::sync::Arc;
use um_uapi::abi::capability::CAP_SYS_NICE;
use um_uapi::{Errno, SysResult};

/// Policies (include/uapi/linux/sched.h).
pub const SCHED_NORMAL: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
pub const SCHED_DEADLINE: u32 = 6;
/// Or'ed into the policy: children go back to SCHED_NORMAL.
pub const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;
/// The highest real-time priority (`MAX_RT_PRIO - 1`).
const MAX_RT_PRIO: u32 = 99;
/// RLIMIT_RTPRIO.
const RLIMIT_RTPRIO: usize = 14;
/// SCHED_RR's time slice (`RR_TIMESLICE`, 100 ms).
const RR_TIMESLICE_NS: i64 = 100_000_000;

/// A thread's scheduling policy (Linux `task_struct` policy, rt_priority,
/// sched_reset_on_fork).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedParams {
    pub policy: u32,
    /// The real-time priority (1..=99 for FIFO and RR, else 0).
    pub prio: u32,
    pub reset_on_fork: bool,
}

fn is_rt(policy: u32) -> bool {
    policy == SCHED_FIFO || policy == SCHED_RR
}

/// kernel/fork.c `sched_fork`: the child runs as its creator, unless SCHED_RESET_ON_FORK
/// sends a real-time creator's child back to SCHED_NORMAL (the flag itself is not inherited
/// then).
pub fn on_clone(parent: &Task, child: &Task) {
    let p = *lock(&parent.sched);
    *lock(&child.sched) = inherit(p);
}

fn inherit(mut p: SchedParams) -> SchedParams {
    if p.reset_on_fork {
        if is_rt(p.policy) {
            p.policy = SCHED_NORMAL;
            p.prio = 0;
        }
        p.reset_on_fork = false;
    }
    p
}

/// The thread `pid` names (0: the caller), ESRCH if none (`find_process_by_pid`).
fn find(c: &SyscallCtx<'_>, pid: i32) -> SysResult<Arc<Task>> {
    if pid == 0 {
        return Ok(c.task.clone());
    }
    c.kernel
        .tasks
        .find_task_vpid(c.task, pid as u32)
        .ok_or(Errno::ESRCH)
}

/// `__sched_setscheduler`'s checks and the change; `policy` None keeps the current one
/// (sched_setparam).
fn set(c: &SyscallCtx<'_>, t: &Task, policy: Option<u32>, prio: u32) -> SysResult {
    let cur = *lock(&t.sched);
    let (policy, reset) = match policy {
        Some(p) => (p & !SCHED_RESET_ON_FORK, p & SCHED_RESET_ON_FORK != 0),
        None => (cur.policy, cur.reset_on_fork),
    };
    if !matches!(
        policy,
        SCHED_NORMAL | SCHED_FIFO | SCHED_RR | SCHED_BATCH | SCHED_IDLE
    ) {
        // SCHED_DEADLINE needs sched_setattr's parameters.
        return Err(Errno::EINVAL);
    }
    // Valid priorities: 1..=99 for real-time policies, 0 for the others.
    if prio > MAX_RT_PRIO || is_rt(policy) != (prio != 0) {
        return Err(Errno::EINVAL);
    }
    let me = &c.task.process;
    if !lock(&me.caps).has(CAP_SYS_NICE) {
        // user_check_sched_setscheduler.
        if is_rt(policy) {
            let rtprio = lock(&t.process.rlimits)[RLIMIT_RTPRIO].0;
            if policy != cur.policy && rtprio == 0 {
                return Err(Errno::EPERM);
            }
            if prio > cur.prio && u64::from(prio) > rtprio {
                return Err(Errno::EPERM);
            }
        }
        if cur.policy == SCHED_IDLE && policy != SCHED_IDLE {
            // Leaving SCHED_IDLE is like lowering the nice value: refused to a user.
            return Err(Errno::EPERM);
        }
        // check_same_owner: the caller's euid is the target's uid or euid.
        let (mine, theirs) = (*lock(&me.creds), *lock(&t.process.creds));
        if mine.euid != theirs.euid && mine.euid != theirs.uid {
            return Err(Errno::EPERM);
        }
        if cur.reset_on_fork && !reset {
            return Err(Errno::EPERM);
        }
    }
    *lock(&t.sched) = SchedParams {
        policy,
        prio,
        reset_on_fork: reset,
    };
    Ok(0)
}

/// `struct sched_param`: one int.
fn read_param(c: &SyscallCtx<'_>, addr: u64) -> SysResult<u32> {
    if addr == 0 {
        return Err(Errno::EINVAL);
    }
    let b = c.read_bytes(addr, 4)?;
    let prio = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    u32::try_from(prio).map_err(|_| Errno::EINVAL)
}

fn sched_setscheduler(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, policy) = (a[0] as i32, a[1] as i32);
    if policy < 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = read_param(c, a[2])?;
    let t = find(c, pid)?;
    set(c, &t, Some(policy as u32), prio)
}

fn sched_setparam(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = read_param(c, a[1])?;
    let t = find(c, pid)?;
    set(c, &t, None, prio)
}

fn sched_getscheduler(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let s = *lock(&find(c, pid)?.sched);
    Ok(u64::from(
        s.policy | if s.reset_on_fork { SCHED_RESET_ON_FORK } else { 0 },
    ))
}

fn sched_getparam(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let pid = a[0] as i32;
    if a[1] == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let s = *lock(&find(c, pid)?.sched);
    c.write_u32(a[1], s.prio)?;
    Ok(0)
}

fn sched_get_priority_max(_c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match a[0] as i32 {
        p if p == SCHED_FIFO as i32 || p == SCHED_RR as i32 => Ok(u64::from(MAX_RT_PRIO)),
        p if [SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE].contains(&(p as u32)) => {
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn sched_get_priority_min(_c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match a[0] as i32 {
        p if p == SCHED_FIFO as i32 || p == SCHED_RR as i32 => Ok(1),
        p if [SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE].contains(&(p as u32)) => {
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// The time slice: SCHED_RR's 100 ms; 0 for SCHED_FIFO (it runs until it yields) and, as
/// here nothing shares a run queue slice, for the other policies.
fn sched_rr_get_interval(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let s = *lock(&find(c, pid)?.sched);
    let ns = if s.policy == SCHED_RR {
        RR_TIMESLICE_NS
    } else {
        0
    };
    let mut b = (ns / 1_000_000_000).to_le_bytes().to_vec();
    b.extend_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    c.write_bytes(a[1], &b)?;
    Ok(0)
}

/// Registers the scheduling-policy syscalls.
pub fn register(t: &mut SyscallTable) {
    t.register("sched_setscheduler", sched_setscheduler).partial(
        "recorded and reported with Linux's checks; the host schedules every thread as it \
         likes; no SCHED_DEADLINE",
    );
    t.register("sched_setparam", sched_setparam)
        .partial("recorded and reported with Linux's checks, as sched_setscheduler");
    t.register("sched_getscheduler", sched_getscheduler);
    t.register("sched_getparam", sched_getparam);
    t.register("sched_get_priority_max", sched_get_priority_max);
    t.register("sched_get_priority_min", sched_get_priority_min);
    t.register("sched_rr_get_interval", sched_rr_get_interval).partial(
        "100 ms for SCHED_RR, 0 for every other policy (Linux gives SCHED_OTHER its CFS slice)",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_on_fork_sends_rt_children_back_to_normal() {
        let fifo = SchedParams {
            policy: SCHED_FIFO,
            prio: 10,
            reset_on_fork: true,
        };
        assert_eq!(inherit(fifo), SchedParams::default());
        let batch = SchedParams {
            policy: SCHED_BATCH,
            prio: 0,
            reset_on_fork: true,
        };
        assert_eq!(inherit(batch).policy, SCHED_BATCH);
        assert!(!inherit(batch).reset_on_fork);
        let plain = SchedParams {
            reset_on_fork: false,
            ..fifo
        };
        assert_eq!(inherit(plain), plain);
    }
}
