//! wait4 and waitid (Linux `kernel/exit.c` `do_wait`): zombies, stopped and continued
//! children, reaping.
//!
//! Ids coming in (a pid, a process group) are numbers of the caller's pid namespace, turned
//! into kernel-wide ids before the search; the pid reported is the child's number there
//! ([`crate::pidns`]).

use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{ExitStatus, JobState, Process, lock};
use crate::wait::{WaitError, wait_event};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::resource::Rusage;
use um_uapi::abi::signal::Siginfo;
use um_uapi::{Errno, SysResult};

const WNOHANG: u64 = 1;
const WUNTRACED: u64 = 2;
const WEXITED: u64 = 4;
const WCONTINUED: u64 = 8;
const WNOWAIT: u64 = 0x0100_0000;
const WNOTHREAD: u64 = 0x2000_0000;
const WALL: u64 = 0x4000_0000;
const WCLONE: u64 = 0x8000_0000;

/// Which children a wait is for.
#[derive(Clone, Copy)]
enum Which {
    Any,
    Pid(u32),
    Pgid(u32),
}

/// What a wait found.
struct Found {
    pid: u32,
    status: i32,
    /// si_code and si_status for waitid.
    code: i32,
    si_status: i32,
    uid: u32,
    /// The child, for wait4's rusage.
    child: Arc<Process>,
}

fn matches(which: Which, c: &Process) -> bool {
    match which {
        Which::Any => true,
        Which::Pid(p) => c.pid == p,
        Which::Pgid(g) => c.pgid.load(Ordering::Relaxed) == g,
    }
}

/// One look at the children: Some(found), or None if something matches but has nothing to
/// report. `Err(ECHILD)` if nothing matches at all.
fn scan(c: &SyscallCtx<'_>, which: Which, opts: u64) -> SysResult<Option<Found>> {
    let me = &c.task.process;
    // Tracees first (kernel/exit.c `ptrace_do_wait`): their ptrace-stops and ptrace zombies.
    let pick = |t: &crate::task::Task| match which {
        Which::Any => true,
        Which::Pid(p) => t.tid == p,
        Which::Pgid(g) => t.process.pgid.load(Ordering::Relaxed) == g,
    };
    let (mut any, rep) = crate::ptrace::wait_scan(
        c.kernel,
        me,
        pick,
        opts & WALL != 0,
        opts & WCLONE != 0,
        opts & WEXITED != 0,
        opts & WNOWAIT != 0,
    );
    if let Some(r) = rep {
        return Ok(Some(Found {
            pid: r.task.pids.nr_in(me.pids.ns()),
            status: r.status,
            code: r.code,
            si_status: r.si_status,
            uid: lock(&r.task.process.creds).uid,
            child: r.task.process.clone(),
        }));
    }
    let children: Vec<Arc<Process>> = lock(&me.children).clone();
    for ch in children.iter().filter(|ch| matches(which, ch)) {
        any = true;
        let uid = lock(&ch.creds).uid;
        if ch.zombie.load(Ordering::Acquire) && opts & WEXITED != 0 {
            let st = lock(&ch.exit).unwrap_or(ExitStatus::Exited(0));
            let (code, si_status) = match st {
                ExitStatus::Exited(v) => (1, v),
                ExitStatus::Signaled(s) => (2, s),
                ExitStatus::Dumped(s) => (3, s),
            };
            if opts & WNOWAIT == 0 {
                lock(&me.children).retain(|x| !Arc::ptr_eq(x, ch));
                c.kernel.tasks.remove(ch.pid);
                // wait_task_zombie: the child's and its descendants' largest resident size
                // join the parent's cmaxrss.
                let rss = ch
                    .maxrss_kb
                    .load(Ordering::Relaxed)
                    .max(ch.cmaxrss_kb.load(Ordering::Relaxed));
                me.cmaxrss_kb.fetch_max(rss, Ordering::Relaxed);
                // ... and its CPU times (and its children's) join the parent's cutime/cstime.
                crate::cputime::reap(me, ch);
            }
            return Ok(Some(Found {
                pid: ch.pids.nr_in(me.pids.ns()),
                status: st.wstatus(),
                code,
                si_status,
                uid,
                child: ch.clone(),
            }));
        }
        // A child this process traces reports its stops as a tracee (above).
        if crate::ptrace::traced_by(c.kernel, ch, me) {
            continue;
        }
        let mut job = lock(&ch.job);
        match *job {
            JobState::Stopped {
                sig,
                reported: false,
            } if opts & WUNTRACED != 0 => {
                if opts & WNOWAIT == 0 {
                    *job = JobState::Stopped {
                        sig,
                        reported: true,
                    };
                }
                return Ok(Some(Found {
                    pid: ch.pids.nr_in(me.pids.ns()),
                    status: ((sig as i32) << 8) | 0x7f,
                    code: 5,
                    si_status: sig as i32,
                    uid,
                    child: ch.clone(),
                }));
            }
            JobState::Continued if opts & WCONTINUED != 0 => {
                if opts & WNOWAIT == 0 {
                    *job = JobState::Running;
                }
                return Ok(Some(Found {
                    pid: ch.pids.nr_in(me.pids.ns()),
                    status: 0xffff,
                    code: 6,
                    si_status: 18,
                    uid,
                    child: ch.clone(),
                }));
            }
            _ => {}
        }
    }
    if any { Ok(None) } else { Err(Errno::ECHILD) }
}

fn do_wait(c: &SyscallCtx<'_>, which: Which, opts: u64) -> SysResult<Option<Found>> {
    let me = c.task.process.clone();
    if opts & WNOHANG != 0 {
        return scan(c, which, opts);
    }
    let mut err = None;
    let r = wait_event(c.task, &[&me.child_wait], None, || {
        match scan(c, which, opts) {
            Ok(Some(f)) => Some(Some(f)),
            Ok(None) => None,
            Err(e) => {
                err = Some(e);
                Some(None)
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    match r {
        Ok(f) => Ok(f),
        Err(WaitError::Interrupted) => Err(Errno::ERESTARTSYS),
        Err(WaitError::TimedOut) => Ok(None),
    }
}

fn which_from_pid(c: &SyscallCtx<'_>, pid: i32) -> Which {
    // A number the caller's namespace does not have matches nobody (kernel-wide id 0).
    let global = |nr: u32| c.kernel.tasks.global_of(c.task, nr).unwrap_or(0);
    match pid {
        -1 => Which::Any,
        0 => Which::Pgid(c.task.process.pgid.load(Ordering::Relaxed)),
        p if p < 0 => Which::Pgid(global(p.unsigned_abs())),
        p => Which::Pid(global(p as u32)),
    }
}

/// What wait4 reports of the child it found (kernel/exit.c: `getrusage(p, RUSAGE_BOTH)`): its
/// own CPU times plus its reaped children's, and the larger of their resident high-water marks.
fn child_rusage(ch: &Process) -> Rusage {
    let t = crate::cputime::process_times(ch) + crate::cputime::children_times(ch);
    Rusage {
        ru_utime: crate::cputime::ns_to_timeval(t.user),
        ru_stime: crate::cputime::ns_to_timeval(t.system),
        ru_maxrss: ch
            .maxrss_now_kb()
            .max(ch.cmaxrss_kb.load(Ordering::Relaxed)) as i64,
        ..Rusage::default()
    }
}

fn wait4(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, status, opts, rusage): (i32, u64, u64, u64) = args(&a)?;
    if opts & !(WNOHANG | WUNTRACED | WCONTINUED | WNOTHREAD | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    if pid == i32::MIN {
        return Err(Errno::ESRCH);
    }
    let which = which_from_pid(c, pid);
    match do_wait(c, which, opts | WEXITED)? {
        None => Ok(0),
        Some(f) => {
            if status != 0 {
                c.write_u32(status, f.status as u32)?;
            }
            if rusage != 0 {
                c.write_bytes(rusage, &child_rusage(&f.child).as_bytes())?;
            }
            Ok(f.pid as u64)
        }
    }
}

fn waitid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (idtype, id, infop, opts): (u64, u32, u64, u64) = args(&a)?;
    if opts & !(WNOHANG | WUNTRACED | WEXITED | WCONTINUED | WNOWAIT | WNOTHREAD | WALL | WCLONE)
        != 0
    {
        return Err(Errno::EINVAL);
    }
    if opts & (WEXITED | WUNTRACED | WCONTINUED) == 0 {
        return Err(Errno::EINVAL);
    }
    let mut opts = opts;
    let mut pidfd_nonblock = false;
    let which = match idtype {
        0 => Which::Any,                                                    // P_ALL
        1 => Which::Pid(c.kernel.tasks.global_of(c.task, id).unwrap_or(0)), // P_PID
        2 if id == 0 => Which::Pgid(c.task.process.pgid.load(Ordering::Relaxed)),
        2 => Which::Pgid(c.kernel.tasks.global_of(c.task, id).unwrap_or(0)), // P_PGID
        // P_PIDFD (kernel_waitid): the pidfd's process; a non-blocking pidfd means WNOHANG.
        3 if (id as i32) < 0 => return Err(Errno::EINVAL),
        3 => {
            let (p, nonblock) = crate::pidfd::pid_of_fd(c, u64::from(id))?;
            if nonblock {
                opts |= WNOHANG;
                pidfd_nonblock = true;
            }
            Which::Pid(p.pid)
        }
        _ => return Err(Errno::EINVAL),
    };
    let found = do_wait(c, which, opts)?;
    // kernel_waitid: nothing to report through a non-blocking pidfd, when the caller did not
    // ask for WNOHANG itself, is EAGAIN.
    if found.is_none() && pidfd_nonblock && a[3] & WNOHANG == 0 {
        return Err(Errno::EAGAIN);
    }
    if infop != 0 {
        let info = match &found {
            Some(f) => Siginfo::chld(f.code, f.pid as i32, f.uid, f.si_status, 0, 0),
            None => Siginfo::default(),
        };
        c.write_bytes(infop, &info.as_bytes())?;
    }
    // The raw syscall's fifth argument (kernel_waitid): the found child's rusage.
    if a[4] != 0
        && let Some(f) = &found
    {
        c.write_bytes(a[4], &child_rusage(&f.child).as_bytes())?;
    }
    Ok(0)
}

/// setpgid(2) (kernel/sys.c): the target is the caller or one of its children (ESRCH); a
/// child in another session is EPERM and one that has exec'd EACCES; a session leader cannot
/// move (EPERM); the group joined must exist in the caller's session (EPERM).
fn setpgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let me = &c.task.process;
    if (a[1] as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    // Both ids are numbers of the caller's pid namespace.
    let task = if a[0] as i32 == 0 {
        c.task.clone()
    } else {
        let nr = a[0] as i32 as u32;
        c.kernel
            .tasks
            .find_task_vpid(c.task, nr)
            .ok_or(Errno::ESRCH)?
    };
    let pid = task.tid;
    let pgid = if a[1] as i32 == 0 {
        task.process.pid
    } else {
        // A group the namespace does not have cannot be joined.
        c.kernel
            .tasks
            .global_of(c.task, a[1] as u32)
            .ok_or(Errno::EPERM)?
    };
    let target = task.process.clone();
    // Only a thread group leader names its process.
    if target.pid != pid && a[0] as i32 != 0 {
        return Err(Errno::EINVAL);
    }
    let my_sid = me.sid.load(Ordering::Relaxed);
    if !Arc::ptr_eq(&target, me) {
        if !lock(&me.children).iter().any(|ch| Arc::ptr_eq(ch, &target)) {
            return Err(Errno::ESRCH);
        }
        if target.sid.load(Ordering::Relaxed) != my_sid {
            return Err(Errno::EPERM);
        }
        // Linux tests PF_FORKNOEXEC: a child that has exec'd is out of the parent's reach.
        if target.did_exec.load(Ordering::Acquire) {
            return Err(Errno::EACCES);
        }
    }
    // A session leader cannot change its group.
    if target.sid.load(Ordering::Relaxed) == target.pid {
        return Err(Errno::EPERM);
    }
    if pgid != target.pid {
        // The group must exist in the caller's session.
        let ok = c.kernel.tasks.processes().iter().any(|p| {
            p.pgid.load(Ordering::Relaxed) == pgid && p.sid.load(Ordering::Relaxed) == my_sid
        });
        if !ok {
            return Err(Errno::EPERM);
        }
    }
    target.pgid.store(pgid, Ordering::Relaxed);
    Ok(0)
}

/// The process `pid` (a number of the caller's namespace, any of its threads; 0 the
/// caller) names for getpgid and getsid (`find_task_by_vpid`).
fn process_of(c: &SyscallCtx<'_>, pid: u64) -> SysResult<Arc<Process>> {
    if pid == 0 {
        return Ok(c.task.process.clone());
    }
    let t = c.kernel.tasks.find_task_vpid(c.task, pid as u32);
    Ok(t.ok_or(Errno::ESRCH)?.process.clone())
}

fn getpgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = process_of(c, a[0])?;
    let g = p.pgid.load(Ordering::Relaxed);
    Ok(u64::from(c.kernel.tasks.vnr(c.task, g)))
}

fn getpgrp(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let g = c.task.process.pgid.load(Ordering::Relaxed);
    Ok(u64::from(c.kernel.tasks.vnr(c.task, g)))
}

fn getsid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = process_of(c, a[0])?;
    let s = p.sid.load(Ordering::Relaxed);
    Ok(u64::from(c.kernel.tasks.vnr(c.task, s)))
}

fn setsid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let me = &c.task.process;
    // A process group leader cannot start a session (its group would span two sessions).
    let leads = c
        .kernel
        .tasks
        .processes()
        .iter()
        .any(|p| p.pid != me.pid && p.pgid.load(Ordering::Relaxed) == me.pid);
    if me.pgid.load(Ordering::Relaxed) == me.pid && leads
        || me.sid.load(Ordering::Relaxed) == me.pid
    {
        return Err(Errno::EPERM);
    }
    me.sid.store(me.pid, Ordering::Relaxed);
    me.pgid.store(me.pid, Ordering::Relaxed);
    Ok(u64::from(me.pids.own()))
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("wait4", wait4);
    t.register("waitid", waitid);
    t.register("setpgid", setpgid);
    t.register("getpgid", getpgid);
    t.register("getpgrp", getpgrp);
    t.register("getsid", getsid);
    t.register("setsid", setsid);
}
