//! Signal syscalls (kernel/signal.c): actions, masks, sending, waiting, and the return from a
//! handler. Delivery itself happens in the run loop ([`crate::run`]).

use crate::signal as sigs;
use crate::sysarg::args;
use crate::syscall::{Action, SyscallCtx, SyscallTable};
use crate::task::{ExitStatus, Process, SigAction, lock};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::signal::Siginfo;
use um_uapi::{Errno, SysResult};

const SIGKILL: u64 = 9;
const SIGSTOP: u64 = 19;
/// Bits that can never be blocked.
const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

fn rt_sigaction(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (sig, act, oact, size): (u64, u64, u64, u64) = args(&a)?;
    if size != 8 || sig == 0 || sig > 64 {
        return Err(Errno::EINVAL);
    }
    let new = if act != 0 {
        if sig == SIGKILL || sig == SIGSTOP {
            return Err(Errno::EINVAL);
        }
        let b = c.read_bytes(act, 32)?;
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        Some(SigAction {
            handler: w(0),
            flags: w(1),
            restorer: w(2),
            mask: w(3) & !UNBLOCKABLE,
        })
    } else {
        None
    };
    let mut acts = lock(&c.task.process.sigactions);
    let old = acts[(sig - 1) as usize];
    if oact != 0 {
        let mut b = Vec::with_capacity(32);
        for v in [old.handler, old.flags, old.restorer, old.mask] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        c.write_bytes(oact, &b)?;
    }
    if let Some(n) = new {
        acts[(sig - 1) as usize] = n;
    }
    Ok(0)
}

fn rt_sigprocmask(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (how, set, oset, size): (u64, u64, u64, u64) = args(&a)?;
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let new = if set != 0 {
        Some(c.read_u64(set)?)
    } else {
        None
    };
    let mut mask = lock(&c.task.sigmask);
    let old = *mask;
    if let Some(s) = new {
        *mask = match how {
            0 => old | s,  // SIG_BLOCK
            1 => old & !s, // SIG_UNBLOCK
            2 => s,        // SIG_SETMASK
            _ => return Err(Errno::EINVAL),
        } & !UNBLOCKABLE;
    }
    drop(mask);
    if oset != 0 {
        c.write_u64(oset, old)?;
    }
    Ok(0)
}

fn sigaltstack(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use um_uapi::abi::signal::SS_AUTODISARM;
    use um_uapi::abi::signal::SS_DISABLE;
    use um_uapi::abi::signal::SS_ONSTACK;
    const MINSIGSTKSZ: u64 = 2048;
    let (ss, oss): (u64, u64) = args(&a)?;
    let cur = *lock(&c.task.altstack);
    let sp = c.regs().sp();
    let on = cur.2 & SS_DISABLE == 0 && sp > cur.0 && sp <= cur.0 + cur.1;
    if ss != 0 {
        let b = c.read_bytes(ss, 24)?;
        let sp_new = u64::from_le_bytes(b[0..8].try_into().map_err(|_| Errno::EFAULT)?);
        let flags = i32::from_le_bytes(b[8..12].try_into().map_err(|_| Errno::EFAULT)?);
        let size = u64::from_le_bytes(b[16..24].try_into().map_err(|_| Errno::EFAULT)?);
        if on {
            return Err(Errno::EPERM);
        }
        let mode = flags & !SS_AUTODISARM;
        if mode != 0 && mode != SS_DISABLE && mode != SS_ONSTACK {
            return Err(Errno::EINVAL);
        }
        let new = if mode == SS_DISABLE {
            (0, 0, SS_DISABLE)
        } else {
            if size < MINSIGSTKSZ {
                return Err(Errno::ENOMEM);
            }
            (sp_new, size, flags & SS_AUTODISARM)
        };
        if oss != 0 {
            write_stack(c, oss, cur, on)?;
        }
        *lock(&c.task.altstack) = new;
        return Ok(0);
    }
    if oss != 0 {
        write_stack(c, oss, cur, on)?;
    }
    Ok(0)
}

fn write_stack(c: &SyscallCtx<'_>, addr: u64, st: (u64, u64, i32), on: bool) -> SysResult<()> {
    let mut b = [0u8; 24];
    b[0..8].copy_from_slice(&st.0.to_le_bytes());
    let flags = if on { 1 } else { st.2 };
    b[8..12].copy_from_slice(&flags.to_le_bytes());
    b[16..24].copy_from_slice(&st.1.to_le_bytes());
    c.write_bytes(addr, &b)
}

fn check_sig(sig: u64) -> SysResult<()> {
    if sig > 64 { Err(Errno::EINVAL) } else { Ok(()) }
}

fn sender_info(c: &SyscallCtx<'_>, sig: u64, code: i32) -> Siginfo {
    Siginfo::kill(
        sig as u32,
        code,
        c.task.process.pid as i32,
        lock(&c.task.process.creds).uid,
    )
}

/// The process that `pid` (a number of the caller's pid namespace) names for kill(2) and
/// rt_sigqueueinfo(2): the thread group of the task with that id, which may be any of its
/// threads (kernel/signal.c `kill_proc_info` looks the pid up as PIDTYPE_PID and signals its
/// group).
fn process_of(c: &SyscallCtx<'_>, pid: u32) -> SysResult<Arc<Process>> {
    let t = c
        .kernel
        .tasks
        .find_task_vpid(c.task, pid)
        .ok_or(Errno::ESRCH)?;
    Ok(t.process.clone())
}

/// A siginfo the kernel made for the caller's kill or tkill names the sender as the target's
/// namespace sees it (`__send_signal_locked`: `task_tgid_nr_ns(current, task_active_pid_ns(t))`).
fn sender_for(c: &SyscallCtx<'_>, to: &Process, mut info: Siginfo) -> Siginfo {
    info.set_pid(crate::pidns::tgid_seen_by(&c.task.process, to) as i32);
    info
}

/// Sends `info` to process `p` if the caller may (`group_send_sig_info`): the permission is
/// checked for signal 0 too; a zombie takes nothing.
fn send_group(c: &SyscallCtx<'_>, p: &Arc<Process>, sig: u64, info: Siginfo) -> SysResult<()> {
    sigs::check_kill_permission(&c.task.process, p, sig as u32, info.si_code)?;
    if sig != 0 && !p.zombie.load(Ordering::Acquire) {
        sigs::check_sigpending(c.kernel, p, sig as u32, info.si_code)?;
        sigs::send_to_process(c.kernel, p, info);
    }
    Ok(())
}

/// kill(2): to a process, a process group, or everyone (kernel/signal.c `kill_something_info`).
fn kill(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    check_sig(a[1])?;
    let (pid, sig): (i32, u64) = args(&a)?;
    let info = sender_info(c, sig, 0 /* SI_USER */);
    let k = c.kernel;
    match pid {
        p if p > 0 => {
            let proc = process_of(c, p as u32)?;
            send_group(c, &proc, sig, sender_for(c, &proc, info))?;
        }
        -1 => {
            // Everyone but init and the caller; only errors other than EPERM count
            // (`kill_something_info`).
            let mut count = 0;
            let mut ret = Ok(());
            // Those the caller's namespace sees, but its init (`task_pid_vnr(p) > 1`).
            let ns = c.task.pids.ns();
            for p in k.tasks.processes() {
                if p.pids.nr_in(ns) > 1 && p.pid != 1 && !Arc::ptr_eq(&p, &c.task.process) {
                    count += 1;
                    match send_group(c, &p, sig, sender_for(c, &p, info)) {
                        Err(Errno::EPERM) | Ok(()) => {}
                        Err(e) => ret = Err(e),
                    }
                }
            }
            if count == 0 {
                return Err(Errno::ESRCH);
            }
            ret?;
        }
        p => {
            // A group (0: the caller's): success if any member took it (`__kill_pgrp_info`).
            let pgid = if p == 0 {
                c.task.process.pgid.load(Ordering::Relaxed)
            } else {
                k.tasks
                    .global_of(c.task, p.unsigned_abs())
                    .ok_or(Errno::ESRCH)?
            };
            let members: Vec<Arc<Process>> = k
                .tasks
                .processes()
                .into_iter()
                .filter(|x| x.pgid.load(Ordering::Relaxed) == pgid)
                .collect();
            let mut ret = Err(Errno::ESRCH);
            let mut any = false;
            for m in &members {
                match send_group(c, m, sig, sender_for(c, m, info)) {
                    Ok(()) => any = true,
                    Err(e) => ret = Err(e),
                }
            }
            if !any {
                ret?;
            }
        }
    }
    Ok(0)
}

fn to_thread(c: &mut SyscallCtx<'_>, tgid: Option<u32>, tid: u32, sig: u64) -> SysResult {
    check_sig(sig)?;
    let info = sender_info(c, sig, -6 /* SI_TKILL */);
    send_thread(c, tgid, tid, sig, info, true)
}

/// `do_send_specific`: one thread, `ESRCH` unless it exists (in `tgid`, if given); the
/// permission and RLIMIT_SIGPENDING checks of its process. `kernel_info`: the kernel made
/// `info` (tkill, tgkill), so its sender is named as the target sees it.
fn send_thread(
    c: &SyscallCtx<'_>,
    tgid: Option<u32>,
    tid: u32,
    sig: u64,
    info: Siginfo,
    kernel_info: bool,
) -> SysResult {
    // Both ids are numbers of the caller's namespace.
    let t = c
        .kernel
        .tasks
        .find_task_vpid(c.task, tid)
        .ok_or(Errno::ESRCH)?;
    if tgid.is_some_and(|g| g != t.process.pids.nr_in(c.task.pids.ns()))
        || t.exited.load(Ordering::Acquire)
    {
        return Err(Errno::ESRCH);
    }
    sigs::check_kill_permission(&c.task.process, &t.process, sig as u32, info.si_code)?;
    let info = if kernel_info {
        sender_for(c, &t.process, info)
    } else {
        info
    };
    if sig != 0 {
        sigs::check_sigpending(c.kernel, &t.process, sig as u32, info.si_code)?;
        sigs::send_to_task(&t, info);
    }
    Ok(0)
}

fn tkill(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    to_thread(c, None, a[0] as u32, a[1])
}

fn tgkill(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] as i32 <= 0 || a[1] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    to_thread(c, Some(a[0] as u32), a[1] as u32, a[2])
}

fn rt_sigqueueinfo(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    check_sig(a[1])?;
    let mut info = Siginfo::from_bytes(&c.read_bytes(a[2], 128)?).ok_or(Errno::EFAULT)?;
    // Only the kernel may claim kernel or kill() codes for someone else's process.
    if (info.si_code >= 0 || info.si_code == -6) && a[0] as u32 != c.task.process.pids.own() {
        return Err(Errno::EPERM);
    }
    info.si_signo = a[1] as i32;
    let p = process_of(c, a[0] as u32)?;
    send_group(c, &p, a[1], info)?;
    Ok(0)
}

fn rt_tgsigqueueinfo(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    check_sig(a[2])?;
    let mut info = Siginfo::from_bytes(&c.read_bytes(a[3], 128)?).ok_or(Errno::EFAULT)?;
    if (info.si_code >= 0 || info.si_code == -6) && a[0] as u32 != c.task.process.pids.own() {
        return Err(Errno::EPERM);
    }
    info.si_signo = a[2] as i32;
    send_thread(c, Some(a[0] as u32), a[1] as u32, a[2], info, false)
}

fn rt_sigpending(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[1] != 8 {
        return Err(Errno::EINVAL);
    }
    let blocked = *lock(&c.task.sigmask);
    let p = (lock(&c.task.pending).bits() | lock(&c.task.process.shared_pending).bits()) & blocked;
    c.write_u64(a[0], p)?;
    Ok(0)
}

/// rt_sigreturn: back from a handler, through the frame the kernel built.
fn rt_sigreturn(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    use crate::arch::native::signal as frame;
    let cur = c.thread.regs;
    let addr = frame::frame_addr_at_sigreturn(&cur);
    let bad = |c: &mut SyscallCtx<'_>| {
        c.action = Action::ExitGroup(ExitStatus::Signaled(11));
        Ok(0)
    };
    let Ok(bytes) = c.read_bytes(addr, frame::FRAME_SIZE as usize) else {
        return bad(c);
    };
    let Some(r) = frame::restore_rt_frame(&cur, &bytes) else {
        return bad(c);
    };
    if r.fpstate_addr != 0 {
        let Ok(current) = c.thread.get_fpregs() else {
            return bad(c);
        };
        let mut read = |a: u64, n: usize| c.read_bytes(a, n).ok();
        let Some(fp) = frame::fp_image_from_frame(&mut read, r.fpstate_addr, &current) else {
            return bad(c);
        };
        if c.thread.set_fpregs(&fp).is_err() {
            return bad(c);
        }
    }
    *lock(&c.task.sigmask) = r.mask & !UNBLOCKABLE;
    // restore_altstack: errors are ignored, as Linux does.
    let (sp, flags, size) = r.altstack;
    if flags & 2 != 0 {
        *lock(&c.task.altstack) = (0, 0, 2);
    } else if size >= 2048 {
        *lock(&c.task.altstack) = (sp, size, flags & (1 << 31));
    }
    c.thread.regs = r.regs;
    c.action = Action::Jump;
    Ok(0)
}

/// Sleeps until a signal is delivered, with `mask` in force meanwhile (rt_sigsuspend, pause).
fn suspend(c: &mut SyscallCtx<'_>, mask: Option<u64>) -> SysResult {
    if let Some(m) = mask {
        let old = std::mem::replace(&mut *lock(&c.task.sigmask), m & !UNBLOCKABLE);
        *lock(&c.task.saved_mask) = Some(old);
    }
    let _ = crate::wait::wait_event(c.task, &[], None, || None::<()>);
    Err(Errno::ERESTARTNOHAND)
}

fn rt_sigsuspend(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[1] != 8 {
        return Err(Errno::EINVAL);
    }
    let m = c.read_u64(a[0])?;
    suspend(c, Some(m))
}

fn pause(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    suspend(c, None)
}

fn rt_sigtimedwait(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (set, info, ts, size): (u64, u64, u64, u64) = args(&a)?;
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let want = c.read_u64(set)? & !UNBLOCKABLE;
    let deadline = if ts != 0 {
        let b = c.read_bytes(ts, 16)?;
        let s = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
        let ns = i64::from_le_bytes(b[8..].try_into().map_err(|_| Errno::EFAULT)?);
        if s < 0 || !(0..1_000_000_000).contains(&ns) {
            return Err(Errno::EINVAL);
        }
        Some(std::time::Instant::now() + std::time::Duration::new(s as u64, ns as u32))
    } else {
        None
    };
    let task = c.task.clone();
    // A deleted timer's signal is dropped as it is dequeued, and the wait goes on.
    let take = || loop {
        let mut i = lock(&task.pending)
            .take(!want)
            .or_else(|| lock(&task.process.shared_pending).take(!want))?;
        if crate::sys::timer::signal_dequeued(task.process.pid, &mut i) {
            return Some(i);
        }
    };
    // Block the waited-for signals meanwhile so they are not delivered to a handler
    // (kernel/signal.c do_sigtimedwait), and let other signals interrupt the wait.
    let got = match take() {
        Some(i) => Some(i),
        None => {
            let old = *lock(&task.sigmask);
            *lock(&task.real_blocked) = old;
            *lock(&task.sigmask) = old & !want;
            let r = crate::wait::wait_event(&task, &[], deadline, take);
            *lock(&task.sigmask) = old;
            *lock(&task.real_blocked) = 0;
            match r {
                Ok(i) => Some(i),
                Err(crate::wait::WaitError::TimedOut) => return Err(Errno::EAGAIN),
                Err(crate::wait::WaitError::Interrupted) => return Err(Errno::EINTR),
            }
        }
    };
    let i = got.ok_or(Errno::EAGAIN)?;
    if info != 0 {
        c.write_bytes(info, &i.as_bytes())?;
    }
    Ok(i.si_signo as u64)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("rt_sigaction", rt_sigaction);
    t.register("rt_sigprocmask", rt_sigprocmask);
    t.register("sigaltstack", sigaltstack);
    t.register("kill", kill);
    t.register("tkill", tkill);
    t.register("tgkill", tgkill);
    t.register("rt_sigqueueinfo", rt_sigqueueinfo);
    t.register("rt_tgsigqueueinfo", rt_tgsigqueueinfo);
    t.register("rt_sigpending", rt_sigpending);
    t.register("rt_sigreturn", rt_sigreturn);
    t.register("rt_sigsuspend", rt_sigsuspend);
    t.register("pause", pause);
    t.register("rt_sigtimedwait", rt_sigtimedwait);
}
