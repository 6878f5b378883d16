//! Scheduling policy and priority (Linux `kernel/sched/syscalls.c`, sched(7),
//! sched_setscheduler(2), sched_rr_get_interval(2)): sched_setscheduler, sched_getscheduler,
//! sched_setparam, sched_getparam, sched_setattr, sched_getattr, sched_get_priority_max/min,
//! sched_rr_get_interval.
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
        s.policy
            | if s.reset_on_fork {
                SCHED_RESET_ON_FORK
            } else {
                0
            },
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
        p if [SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE].contains(&(p as u32)) => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

fn sched_get_priority_min(_c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match a[0] as i32 {
        p if p == SCHED_FIFO as i32 || p == SCHED_RR as i32 => Ok(1),
        p if [SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE].contains(&(p as u32)) => Ok(0),
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

/// `struct sched_attr` sizes (include/uapi/linux/sched/types.h): VER0 without the
/// utilization clamps, VER1 with them.
const SCHED_ATTR_SIZE_VER0: usize = 48;
const SCHED_ATTR_SIZE_VER1: usize = 56;
/// sched_attr.sched_flags (include/uapi/linux/sched.h).
const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;
const SCHED_FLAG_KEEP_PARAMS: u64 = 0x10;
/// Every flag Linux knows (`SCHED_FLAG_ALL`).
const SCHED_FLAG_ALL: u64 = 0x7f;
/// The default `sched_util_max` (`SCHED_CAPACITY_SCALE`).
const UCLAMP_MAX: u32 = 1024;

/// sched_getattr(2): the policy, flags, nice 0 (nice values are not kept), priority and the
/// default utilization clamps, in at most `usize` bytes (`sched_attr_copy_to_user`).
fn sched_getattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, usize_, flags) = (a[0] as i32, a[2] as usize, a[3]);
    if a[1] == 0
        || pid < 0
        || usize_ > um_mm::page_size() as usize
        || usize_ < SCHED_ATTR_SIZE_VER0
        || flags != 0
    {
        return Err(Errno::EINVAL);
    }
    let s = *lock(&find(c, pid)?.sched);
    let size = usize_.min(SCHED_ATTR_SIZE_VER1);
    let mut b = Vec::with_capacity(SCHED_ATTR_SIZE_VER1);
    b.extend_from_slice(&(size as u32).to_le_bytes());
    b.extend_from_slice(&s.policy.to_le_bytes());
    let fl = if s.reset_on_fork {
        SCHED_FLAG_RESET_ON_FORK
    } else {
        0
    };
    b.extend_from_slice(&fl.to_le_bytes());
    b.extend_from_slice(&0i32.to_le_bytes());
    b.extend_from_slice(&s.prio.to_le_bytes());
    b.extend_from_slice(&[0u8; 24]); // runtime, deadline, period
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&UCLAMP_MAX.to_le_bytes());
    c.write_bytes(a[1], &b[..size])?;
    Ok(0)
}

/// sched_setattr(2) (`sched_copy_attr`, then sched_setscheduler's rules): the policy,
/// priority and SCHED_FLAG_RESET_ON_FORK; KEEP_POLICY and KEEP_PARAMS; no SCHED_DEADLINE,
/// and the nice value is accepted but not kept.
fn sched_setattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, uattr, flags) = (a[0] as i32, a[1], a[2]);
    if uattr == 0 || pid < 0 || flags != 0 {
        return Err(Errno::EINVAL);
    }
    let size = u32::from_le_bytes(
        c.read_bytes(uattr, 4)?
            .try_into()
            .map_err(|_| Errno::EFAULT)?,
    );
    let size = match size as usize {
        0 => SCHED_ATTR_SIZE_VER0,
        n if n < SCHED_ATTR_SIZE_VER0 || n > um_mm::page_size() as usize => {
            c.write_u32(uattr, SCHED_ATTR_SIZE_VER1 as u32)?;
            return Err(Errno::E2BIG);
        }
        n => n,
    };
    let b = c.read_bytes(uattr, size)?;
    // A larger struct than this kernel knows: what it adds must be zero.
    if b.len() > SCHED_ATTR_SIZE_VER1 && b[SCHED_ATTR_SIZE_VER1..].iter().any(|&x| x != 0) {
        c.write_u32(uattr, SCHED_ATTR_SIZE_VER1 as u32)?;
        return Err(Errno::E2BIG);
    }
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let policy = u32_at(4);
    let fl = u64::from(u32_at(8)) | (u64::from(u32_at(12)) << 32);
    let prio = u32_at(20);
    if (policy as i32) < 0 || fl & !SCHED_FLAG_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let t = find(c, pid)?;
    let cur = *lock(&t.sched);
    let mut policy = if fl & SCHED_FLAG_KEEP_POLICY != 0 {
        cur.policy
    } else {
        policy
    };
    if fl & SCHED_FLAG_RESET_ON_FORK != 0 {
        policy |= SCHED_RESET_ON_FORK;
    }
    let prio = if fl & SCHED_FLAG_KEEP_PARAMS != 0 {
        cur.prio
    } else {
        prio
    };
    set(c, &t, Some(policy), prio)
}

/// Registers the scheduling-policy syscalls.
pub fn register(t: &mut SyscallTable) {
    t.register("sched_setscheduler", sched_setscheduler)
        .partial(
            "recorded and reported with Linux's checks; the host schedules every thread as it \
         likes; no SCHED_DEADLINE",
        );
    t.register("sched_setparam", sched_setparam)
        .partial("recorded and reported with Linux's checks, as sched_setscheduler");
    t.register("sched_getscheduler", sched_getscheduler);
    t.register("sched_getparam", sched_getparam);
    t.register("sched_get_priority_max", sched_get_priority_max);
    t.register("sched_get_priority_min", sched_get_priority_min);
    t.register("sched_getattr", sched_getattr)
        .partial("sched_nice is always 0 (nice values are not kept)");
    t.register("sched_setattr", sched_setattr).partial(
        "policy, priority and RESET_ON_FORK as sched_setscheduler; no SCHED_DEADLINE, the nice \
         value is not kept",
    );
    t.register("sched_rr_get_interval", sched_rr_get_interval)
        .partial(
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
