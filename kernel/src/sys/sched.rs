//! Scheduling policy, nice values and CPU affinity (Linux `kernel/sched/syscalls.c`,
//! `kernel/sys.c` setpriority/getpriority, sched(7), sched_setscheduler(2), sched_setattr(2),
//! setpriority(2), sched_setaffinity(2)): sched_setscheduler, sched_getscheduler,
//! sched_setparam, sched_getparam, sched_setattr, sched_getattr, sched_get_priority_max/min,
//! sched_rr_get_interval, setpriority, getpriority, sched_setaffinity, sched_getaffinity,
//! getcpu.
//!
//! The policy, real-time priority, nice value and affinity mask are kept per thread
//! ([`SchedParams`] in [`Task::sched`]) with Linux's checks (valid policy and priority,
//! CAP_SYS_NICE or RLIMIT_RTPRIO for real-time, RLIMIT_NICE for a lower nice value, same owner
//! for another process, SCHED_RESET_ON_FORK), inherited at clone. The policy and nice value
//! are bookkeeping: every guest thread is a host thread that the host schedules as it likes
//! (making them host real-time threads would need the host's privilege and could starve it).
//! The affinity mask is honoured: the stub thread running the guest thread is pinned to the
//! same host CPUs (guest CPU N is host CPU N; [`crate::cpus`]), and getcpu answers inside it.
//! A positive nice value is given to the stub thread too ([`nice_host`]: a nice guest thread
//! yields to the others on the host as on Linux); a negative one is not (it would take time
//! from the host).

use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{Task, lock};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_uapi::abi::capability::CAP_SYS_NICE;
use um_uapi::abi::resource::{PRIO_PGRP, PRIO_PROCESS, PRIO_USER, RLIMIT_NICE, RLIMIT_RTPRIO};
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
/// The nice range (`MIN_NICE`, `MAX_NICE`, include/linux/sched/prio.h).
const MIN_NICE: i32 = -20;
const MAX_NICE: i32 = 19;
/// SCHED_RR's time slice (`RR_TIMESLICE`, 100 ms).
const RR_TIMESLICE_NS: i64 = 100_000_000;

/// A thread's scheduling state (Linux `task_struct` policy, rt_priority, static_prio,
/// sched_reset_on_fork, cpus_mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParams {
    pub policy: u32,
    /// The real-time priority (1..=99 for FIFO and RR, else 0).
    pub prio: u32,
    /// The nice value, -20..=19 (kept under every policy; the fair ones use it).
    pub nice: i32,
    pub reset_on_fork: bool,
    /// The CPUs the thread may run on (bit N: CPU N).
    pub cpus: u64,
}

impl Default for SchedParams {
    fn default() -> Self {
        SchedParams {
            policy: SCHED_NORMAL,
            prio: 0,
            nice: 0,
            reset_on_fork: false,
            // Every CPU; what is online is applied where the mask is used (the count is not
            // known yet when the first task is made).
            cpus: u64::MAX,
        }
    }
}

fn is_rt(policy: u32) -> bool {
    policy == SCHED_FIFO || policy == SCHED_RR
}

/// `fair_policy`: the policies the nice value of sched_setattr applies to.
fn is_fair(policy: u32) -> bool {
    policy == SCHED_NORMAL || policy == SCHED_BATCH
}

/// kernel/fork.c `sched_fork`: the child runs as its creator, unless SCHED_RESET_ON_FORK
/// sends a real-time creator's child back to SCHED_NORMAL at nice 0, and a negative nice
/// value back to 0 (the flag itself is not inherited then).
pub fn on_clone(parent: &Task, child: &Task) {
    let p = *lock(&parent.sched);
    *lock(&child.sched) = inherit(p);
}

fn inherit(mut p: SchedParams) -> SchedParams {
    if p.reset_on_fork {
        if is_rt(p.policy) {
            p.policy = SCHED_NORMAL;
            p.prio = 0;
            p.nice = 0;
        } else if p.nice < 0 {
            p.nice = 0;
        }
        p.reset_on_fork = false;
    }
    p
}

/// `can_nice`: `t` may get nice value `nice` (`is_nice_reduction` against the target's
/// RLIMIT_NICE, whose value is `20 - nice`), or the caller has CAP_SYS_NICE.
fn can_nice(c: &SyscallCtx<'_>, t: &Task, nice: i32) -> bool {
    let rlim = lock(&t.process.rlimits)[RLIMIT_NICE as usize].0;
    u64::try_from(20 - nice).unwrap_or(0) <= rlim || c.task.process.capable(CAP_SYS_NICE)
}

/// `check_same_owner` / `set_one_prio_perm`: the caller's euid is the target's uid or euid.
/// One lock at a time: the target is often the caller's own process (the same mutex).
fn same_owner(c: &SyscallCtx<'_>, t: &Task) -> bool {
    let mine = *lock(&c.task.process.creds);
    let theirs = *lock(&t.process.creds);
    mine.euid == theirs.euid || mine.euid == theirs.uid
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

/// What a change asks for: the policy (None keeps it: sched_setparam, KEEP_POLICY), the
/// reset-on-fork flag with it, the real-time priority and, from sched_setattr, the nice value
/// (None keeps it).
struct Change {
    policy: Option<u32>,
    prio: u32,
    nice: Option<i32>,
    /// SCHED_FLAG_KEEP_PARAMS: the policy, priority and nice value stay as they are (only the
    /// reset-on-fork flag changes).
    keep_params: bool,
}

/// `__sched_setscheduler`'s checks and the change.
fn set(c: &SyscallCtx<'_>, t: &Task, ch: Change) -> SysResult {
    let cur = *lock(&t.sched);
    let (policy, reset) = match ch.policy {
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
    let (prio, nice) = if ch.keep_params {
        (cur.prio, cur.nice)
    } else {
        (ch.prio, ch.nice.unwrap_or(cur.nice))
    };
    // Valid priorities: 1..=99 for real-time policies, 0 for the others.
    if prio > MAX_RT_PRIO || is_rt(policy) != (prio != 0) {
        return Err(Errno::EINVAL);
    }
    if !c.task.process.capable(CAP_SYS_NICE) {
        // user_check_sched_setscheduler, in its order.
        if is_fair(policy) && nice < cur.nice && !can_nice(c, t, nice) {
            return Err(Errno::EPERM);
        }
        if is_rt(policy) {
            let rtprio = lock(&t.process.rlimits)[RLIMIT_RTPRIO as usize].0;
            if policy != cur.policy && rtprio == 0 {
                return Err(Errno::EPERM);
            }
            if prio > cur.prio && u64::from(prio) > rtprio {
                return Err(Errno::EPERM);
            }
        }
        // Leaving SCHED_IDLE is like lowering the nice value to what it is.
        if cur.policy == SCHED_IDLE && policy != SCHED_IDLE && !can_nice(c, t, cur.nice) {
            return Err(Errno::EPERM);
        }
        if !same_owner(c, t) {
            return Err(Errno::EPERM);
        }
        if cur.reset_on_fork && !reset {
            return Err(Errno::EPERM);
        }
    }
    let mut s = lock(&t.sched);
    s.reset_on_fork = reset;
    if ch.keep_params {
        // `__setscheduler_params` is what changes the policy too: KEEP_PARAMS keeps it.
        return Ok(0);
    }
    s.policy = policy;
    s.prio = prio;
    // __setscheduler_params: only the fair policies take sched_setattr's nice value.
    if is_fair(policy) && s.nice != nice {
        s.nice = nice;
        drop(s);
        nice_host(t);
    }
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
    let (pid, policy): (i32, i32) = args(&a)?;
    if policy < 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = read_param(c, a[2])?;
    let t = find(c, pid)?;
    let ch = Change {
        policy: Some(policy as u32),
        prio,
        nice: None,
        keep_params: false,
    };
    set(c, &t, ch)
}

fn sched_setparam(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = read_param(c, a[1])?;
    let t = find(c, pid)?;
    let ch = Change {
        policy: None,
        prio,
        nice: None,
        keep_params: false,
    };
    set(c, &t, ch)
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

/// sched_getattr(2): the policy, flags, nice value (`get_params`: not for the real-time
/// policies, which report their priority instead), priority and the default utilization
/// clamps, in at most `usize` bytes (`sched_attr_copy_to_user`).
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
    let nice = if is_rt(s.policy) { 0 } else { s.nice };
    b.extend_from_slice(&nice.to_le_bytes());
    b.extend_from_slice(&s.prio.to_le_bytes());
    b.extend_from_slice(&[0u8; 24]); // runtime, deadline, period
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&UCLAMP_MAX.to_le_bytes());
    c.write_bytes(a[1], &b[..size])?;
    Ok(0)
}

/// sched_setattr(2) (`sched_copy_attr`, then sched_setscheduler's rules): the policy,
/// priority, nice value (clamped to -20..=19) and SCHED_FLAG_RESET_ON_FORK; KEEP_POLICY and
/// KEEP_PARAMS; no SCHED_DEADLINE.
fn sched_setattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, uattr, flags): (i32, u64, u64) = args(&a)?;
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
    let nice = (u32_at(16) as i32).clamp(MIN_NICE, MAX_NICE);
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
    let ch = Change {
        policy: Some(policy),
        prio,
        nice: Some(nice),
        keep_params: fl & SCHED_FLAG_KEEP_PARAMS != 0,
    };
    set(c, &t, ch)
}

/// The threads `which`/`who` name for setpriority and getpriority (kernel/sys.c): one thread
/// (PRIO_PROCESS: `who` a thread id, 0 the caller), every thread of a process group
/// (PRIO_PGRP, 0 the caller's) or of the processes whose real uid is `who` (PRIO_USER, 0 the
/// caller's). EINVAL for another `which`.
pub(crate) fn prio_targets(c: &SyscallCtx<'_>, which: u64, who: u32) -> SysResult<Vec<Arc<Task>>> {
    // Threads that have exited are gone, but a zombie process (its leader) is still there
    // to be asked until it is reaped.
    let live = |t: &Arc<Task>| !t.exited.load(Ordering::Acquire) || t.tid == t.process.pid;
    Ok(match u32::try_from(which).map_err(|_| Errno::EINVAL)? {
        PRIO_PROCESS => {
            if who == 0 {
                vec![c.task.clone()]
            } else {
                c.kernel
                    .tasks
                    .find_task_vpid(c.task, who)
                    .into_iter()
                    .filter(live)
                    .collect()
            }
        }
        PRIO_PGRP => {
            let pgid = if who == 0 {
                Some(c.task.process.pgid.load(Ordering::Relaxed))
            } else {
                c.kernel.tasks.global_of(c.task, who)
            };
            let Some(pgid) = pgid else {
                return Ok(Vec::new());
            };
            c.kernel
                .tasks
                .all()
                .into_iter()
                .filter(|t| live(t) && t.process.pgid.load(Ordering::Relaxed) == pgid)
                .collect()
        }
        PRIO_USER => {
            let uid = if who == 0 {
                lock(&c.task.process.creds).uid
            } else {
                who
            };
            c.kernel
                .tasks
                .all()
                .into_iter()
                .filter(|t| {
                    live(t)
                        && lock(&t.process.creds).uid == uid
                        && c.kernel.tasks.vnr(c.task, t.tid) != 0
                })
                .collect()
        }
        _ => return Err(Errno::EINVAL),
    })
}

/// getpriority(2): the highest priority among the threads named, as `20 - nice` (the C
/// library turns it back into a nice value); ESRCH if none.
fn getpriority(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    prio_targets(c, a[0], a[1] as u32)?
        .iter()
        .map(|t| (20 - lock(&t.sched).nice) as u64)
        .max()
        .ok_or(Errno::ESRCH)
}

/// setpriority(2) (`set_one_prio` for each thread named): EPERM for another user's thread,
/// EACCES for a lower nice value than RLIMIT_NICE allows; the answer is the last thread's
/// error, 0 once any thread changed, ESRCH if none was named.
fn setpriority(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let nice = (a[2] as i32).clamp(MIN_NICE, MAX_NICE);
    // Linux's `error`: ESRCH until a thread is found; a failure replaces it, a success
    // replaces only ESRCH.
    let mut err = Some(Errno::ESRCH);
    for t in prio_targets(c, a[0], a[1] as u32)? {
        if !same_owner(c, &t) && !c.task.process.capable(CAP_SYS_NICE) {
            err = Some(Errno::EPERM);
            continue;
        }
        if nice < lock(&t.sched).nice && !can_nice(c, &t, nice) {
            err = Some(Errno::EACCES);
            continue;
        }
        if err == Some(Errno::ESRCH) {
            err = None;
        }
        lock(&t.sched).nice = nice;
        nice_host(&t);
    }
    err.map_or(Ok(0), Err)
}

/// Gives the host thread of `t` (if it has one yet) the guest thread's nice value, but never
/// below 0: a guest may make its own work yield to the host's, not take CPU time from it.
/// Best effort, as the host may refuse.
pub fn nice_host(t: &Task) {
    let tid = t.host_tid.load(Ordering::Acquire);
    if tid > 0 {
        let _ = um_os_linux::host::set_nice(tid, lock(&t.sched).nice.max(0));
    }
}

/// Pins the host thread of `t` (if it has one yet) to its guest mask's CPUs; with
/// `release`, a thread whose mask is every guest CPU again is let run on every host CPU.
/// Best effort: a host that refuses (a cpuset without those CPUs) leaves the stub where it
/// was, and getcpu still answers inside the mask.
pub fn pin_host(t: &Task, release: bool) {
    let tid = t.host_tid.load(Ordering::Acquire);
    let mask = lock(&t.sched).cpus & crate::cpus::mask();
    if tid <= 0 {
        return;
    }
    if mask != crate::cpus::mask() {
        let _ = um_os_linux::host::set_affinity(tid, mask);
    } else if release {
        let _ = um_os_linux::host::set_affinity(tid, u64::MAX);
    }
}

/// sched_getaffinity(2): the thread's mask (of the online CPUs), in `cpumask_size()` = 8
/// bytes; EINVAL for a buffer shorter than that or not a multiple of 8.
fn sched_getaffinity(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, len): (i32, usize) = args(&a)?;
    if len < 8 || len % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    if pid < 0 {
        return Err(Errno::ESRCH);
    }
    let t = find(c, pid)?;
    let mask = lock(&t.sched).cpus & crate::cpus::mask();
    c.write_bytes(a[2], &mask.to_le_bytes())?;
    Ok(8)
}

/// sched_setaffinity(2) (`sched_setaffinity` in kernel/sched/syscalls.c, in its order): the
/// mask is copied (EFAULT; a short one is zero-filled), the thread found (ESRCH), the caller
/// must own it or have CAP_SYS_NICE (EPERM), and the mask must hold an online CPU (EINVAL).
/// Then the thread's stub is pinned there.
fn sched_setaffinity(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let m = c.read_bytes(a[2], (a[1] as usize).min(128))?;
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::ESRCH);
    }
    let t = find(c, pid)?;
    if !same_owner(c, &t) && !c.task.process.capable(CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    let word = m
        .iter()
        .take(8)
        .enumerate()
        .fold(0u64, |w, (i, &b)| w | u64::from(b) << (8 * i));
    let mask = word & crate::cpus::mask();
    if mask == 0 {
        return Err(Errno::EINVAL);
    }
    lock(&t.sched).cpus = mask;
    pin_host(&t, true);
    Ok(0)
}

/// getcpu(2): the host CPU of the thread serving the call when it is in the caller's mask
/// (the stub is pinned to the mask, so where it runs is), else the mask's first CPU; one NUMA
/// node. The unused third argument (`tcache`) is ignored, as Linux does.
fn getcpu(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let mask = lock(&c.task.sched).cpus & crate::cpus::mask();
    let here = um_os_linux::host::current_cpu() % crate::cpus::online();
    let cpu = if mask & (1u64 << here) != 0 {
        here
    } else {
        mask.trailing_zeros().min(crate::cpus::online() - 1)
    };
    if a[0] != 0 {
        c.write_bytes(a[0], &cpu.to_le_bytes())?;
    }
    if a[1] != 0 {
        c.write_bytes(a[1], &0u32.to_le_bytes())?;
    }
    Ok(0)
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
    t.register("sched_getattr", sched_getattr);
    t.register("sched_setattr", sched_setattr).partial(
        "policy, priority, nice value and RESET_ON_FORK as sched_setscheduler and setpriority; \
         no SCHED_DEADLINE",
    );
    t.register("getpriority", getpriority);
    t.register("setpriority", setpriority)
        .partial("recorded and reported with Linux's checks; the host schedules as it likes");
    t.register("sched_getaffinity", sched_getaffinity);
    t.register("sched_setaffinity", sched_setaffinity);
    t.register("getcpu", getcpu);
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
            nice: -4,
            reset_on_fork: true,
            cpus: 0b10,
        };
        // Policy, priority and nice value reset; the affinity mask is inherited.
        assert_eq!(
            inherit(fifo),
            SchedParams {
                cpus: 0b10,
                ..SchedParams::default()
            }
        );
        let batch = SchedParams {
            policy: SCHED_BATCH,
            prio: 0,
            nice: -3,
            reset_on_fork: true,
            cpus: u64::MAX,
        };
        assert_eq!(inherit(batch).policy, SCHED_BATCH);
        assert_eq!(
            inherit(batch).nice,
            0,
            "a negative nice value goes back to 0"
        );
        assert!(!inherit(batch).reset_on_fork);
        let nice5 = SchedParams { nice: 5, ..batch };
        assert_eq!(inherit(nice5).nice, 5, "a positive one is kept");
        let plain = SchedParams {
            reset_on_fork: false,
            ..fifo
        };
        assert_eq!(inherit(plain), plain);
    }

    #[test]
    fn fair_policies_are_normal_and_batch() {
        assert!(is_fair(SCHED_NORMAL) && is_fair(SCHED_BATCH));
        assert!(!is_fair(SCHED_IDLE) && !is_fair(SCHED_FIFO) && !is_fair(SCHED_RR));
    }
}
