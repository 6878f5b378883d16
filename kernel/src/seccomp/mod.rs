//! seccomp(2) for guest programs: strict mode and classic BPF filters over their syscalls
//! (Linux `kernel/seccomp.c`, seccomp(2), Documentation/userspace-api/seccomp_filter.rst).
//!
//! Unrelated to the host-side seccomp filter of the seccomp engine
//! ([`crate::engine::seccomp`]), which traps every guest syscall to this kernel: the filters
//! here are the guest's own, and run in this kernel on the way into [`crate::syscall::dispatch`].
//!
//! * State: each task has a [`SeccompSlot`] (Linux `task->seccomp`): its mode and the newest
//!   [`Filter`] of its chain; a filter points at the one installed before it (`prev`), so
//!   filters inherited over fork/clone are shared, and a chain is kept across execve (the
//!   task stays). Mode changes, TSYNC and the copy at clone are serialised by one lock
//!   ([`SYNC`], Linux's `sighand->siglock` for this purpose).
//! * Entry ([`secure_computing`]): the run loop calls it after the ptrace syscall-entry stop,
//!   as Linux's `syscall_trace_enter` does (ptrace report first, then `__secure_computing`,
//!   so a filter sees what the tracer left); both engines come through the same loop.
//! * Verdicts: every filter of the chain runs and the most restrictive action wins
//!   (`seccomp_run_filters`: the lowest `ret & SECCOMP_RET_ACTION_FULL` as a signed value,
//!   the newest filter on a tie). A per-filter bitmap remembers the syscalls that the whole
//!   chain allows whatever their arguments ([`bpf::const_allow`], Linux's action cache), so
//!   an allow-listed call does not run the programs.
//! * The BPF verifier and interpreter are in [`bpf`].
//!
//! * User notification (SECCOMP_RET_USER_NOTIF, the listener descriptor) is in [`notify`].
//!
//! Differences from Linux: see [`notify`] for user notification; SPEC_ALLOW is accepted
//! and changes nothing (there is no speculation control to leave off); a KILL_THREAD of a
//! thread that is not the last ends that thread with an exit code of 0 in our books (Linux
//! records SIGSYS, visible only if that thread is the leader and the last to go).

pub mod bpf;
pub mod notify;

use crate::engine::GuestThread;
use crate::kernel::Kernel;
use crate::signal::{self as sig, sigbit};
use crate::syscall::{Action, SyscallCtx, SyscallTable};
use crate::task::{ExitStatus, Task, lock};
use crate::vfs::OpenFile;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use um_uapi::abi::capability::CAP_SYS_ADMIN;
use um_uapi::abi::fcntl::{O_CLOEXEC, O_RDWR};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::ptrace::PTRACE_EVENT_SECCOMP;
use um_uapi::abi::seccomp::*;
use um_uapi::abi::signal::{SIGSYS, SYS_SECCOMP, Siginfo};
use um_uapi::{Errno, SysResult};

/// Serialises mode changes, TSYNC and the copy of a creator's state into a new task, so a
/// thread being created while another one synchronises ends up with the new filter.
static SYNC: Mutex<()> = Mutex::new(());

/// One attached filter (Linux `struct seccomp_filter`).
pub struct Filter {
    /// The program as seccomp runs it ([`bpf::check`]).
    prog: Vec<SockFilter>,
    /// The program as the guest gave it (PTRACE_SECCOMP_GET_FILTER).
    orig: Vec<SockFilter>,
    /// The filter installed before this one, shared with every task that inherited it.
    prev: Option<Arc<Filter>>,
    /// SECCOMP_FILTER_FLAG_LOG: the actions this filter decides are logged.
    log: bool,
    /// One bit per native syscall number: this filter and every older one allow the call
    /// whatever its arguments (Linux `action_cache.allow_native`).
    allow: Vec<u64>,
    /// SECCOMP_FILTER_FLAG_NEW_LISTENER: the user notification state its listener serves.
    notif: Option<Arc<notify::Notif>>,
}

impl Drop for Filter {
    /// Drops a long chain without recursing once per filter (a chain may hold thousands of
    /// one-instruction filters; the kernel's host threads have small stacks).
    fn drop(&mut self) {
        // No task and no newer filter uses this one any more: its listener hangs up.
        if let Some(n) = &self.notif {
            n.orphan();
        }
        let mut next = self.prev.take();
        while let Some(f) = next {
            next = match Arc::try_unwrap(f) {
                Ok(mut f) => f.prev.take(),
                Err(_) => None,
            };
        }
    }
}

impl Filter {
    fn allows(&self, nr: i32) -> bool {
        let Ok(n) = usize::try_from(nr) else {
            return false;
        };
        self.allow
            .get(n / 64)
            .is_some_and(|w| w & (1u64 << (n % 64)) != 0)
    }

    /// The filters of the chain from this one back, newest first.
    fn chain(self: &Arc<Self>) -> impl Iterator<Item = &Filter> {
        let mut cur: Option<&Filter> = Some(self);
        std::iter::from_fn(move || {
            let f = cur?;
            cur = f.prev.as_deref();
            Some(f)
        })
    }
}

/// A task's seccomp state (Linux `struct seccomp` in `task_struct`).
#[derive(Default)]
pub struct SeccompSlot {
    /// SECCOMP_MODE_*: read on every syscall without a lock.
    mode: AtomicU32,
    inner: Mutex<State>,
}

#[derive(Clone, Default)]
struct State {
    filter: Option<Arc<Filter>>,
    /// Filters attached to this task's chain (`Seccomp_filters:`).
    count: u32,
}

impl SeccompSlot {
    /// SECCOMP_MODE_DISABLED, _STRICT or _FILTER.
    pub fn mode(&self) -> u32 {
        self.mode.load(Ordering::Acquire)
    }

    /// How many filters the task's chain has.
    pub fn filter_count(&self) -> u32 {
        lock(&self.inner).count
    }
}

/// kernel/fork.c `copy_seccomp`: a new task (thread or process) starts with its creator's
/// mode and filters. Called once the child is in its process's thread list, so a TSYNC that
/// takes [`SYNC`] after this reaches it, and one before is seen in the creator's state.
pub fn on_clone(parent: &Task, child: &Task) {
    if parent.seccomp.mode() == SECCOMP_MODE_DISABLED {
        return;
    }
    let _g = lock(&SYNC);
    let st = lock(&parent.seccomp.inner).clone();
    *lock(&child.seccomp.inner) = st;
    child
        .seccomp
        .mode
        .store(parent.seccomp.mode(), Ordering::Release);
}

/// `seccomp_filter_release` (release_task): an exited task stops using its filters, so a
/// listener sees POLLHUP once the last task of its filter is gone.
pub fn on_exit(task: &Task) {
    let _g = lock(&SYNC);
    lock(&task.seccomp.inner).filter = None;
}

/// The syscalls strict mode allows (kernel/seccomp.c `mode1_syscalls`).
fn strict_allowed(nr: i32) -> bool {
    ["read", "write", "exit", "rt_sigreturn"]
        .iter()
        .filter_map(|n| crate::arch::syscalls::number(n))
        .any(|n| n as i64 == i64::from(nr))
}

/// Per-syscall seccomp (Linux `__secure_computing`), after the ptrace entry stop. `None`:
/// the syscall runs (in the registers as they are now). `Some(action)`: it does not;
/// `Action::Return` with the result already in the return register (or, for TRAP, the
/// registers rolled back and SIGSYS queued), or the thread or process ends.
pub fn secure_computing(k: &Arc<Kernel>, task: &Arc<Task>, th: &mut GuestThread) -> Option<Action> {
    let mode = task.seccomp.mode();
    if mode == SECCOMP_MODE_DISABLED || crate::ptrace::seccomp_suspended(task) {
        return None;
    }
    // syscall_get_nr: an int.
    let nr = th.regs.syscall_nr() as i32;
    if mode == SECCOMP_MODE_STRICT {
        if strict_allowed(nr) {
            return None;
        }
        audit_log(task, th, nr, sig::SIGKILL, SECCOMP_RET_KILL_THREAD);
        // do_exit(SIGKILL): this thread only; the process with it if it is the last.
        return Some(kill_thread(k, task, sig::SIGKILL, None));
    }
    filter(k, task, th, nr, false)
}

/// `__seccomp_filter`: runs the chain over this syscall and carries out the verdict.
/// `recheck`: the second run after a tracer saw SECCOMP_RET_TRACE (a TRACE now allows).
fn filter(
    k: &Arc<Kernel>,
    task: &Arc<Task>,
    th: &mut GuestThread,
    nr: i32,
    recheck: bool,
) -> Option<Action> {
    let f = lock(&task.seccomp.inner).filter.clone()?;
    let (ret, log, matched) = run_filters_match(&f, nr, &th.regs);
    let action = ret & SECCOMP_RET_ACTION_FULL;
    let data = ret & SECCOMP_RET_DATA;
    match action {
        SECCOMP_RET_ERRNO => {
            // The low 16 bits as an errno, at most MAX_ERRNO; 0 makes the call "succeed".
            let e = data.min(MAX_ERRNO);
            th.regs.set_return((-i64::from(e)) as u64);
            if log {
                audit_log(task, th, nr, 0, ret);
            }
            Some(Action::Return)
        }
        SECCOMP_RET_TRAP => {
            // The handler sees the original registers (syscall_rollback), and si_errno
            // carries the filter's data (force_sig_seccomp).
            let ip = th.regs.pc();
            syscall_rollback(&mut th.regs);
            let mut info = Siginfo::sys(SYS_SECCOMP, ip, nr, crate::arch::AUDIT_ARCH);
            info.si_errno = data as i32;
            force_sigsys(task, info);
            if log {
                audit_log(task, th, nr, 0, ret);
            }
            Some(Action::Return)
        }
        SECCOMP_RET_USER_NOTIF => {
            if log {
                audit_log(task, th, nr, 0, ret);
            }
            // The filter that decided must have a listener; without one (never had, or
            // closed) the call gets ENOSYS.
            let outcome = match matched.and_then(|(x, d)| x.notif.as_ref().map(|n| (n, d))) {
                Some((n, d)) => notify::notify(n, task, d),
                None => notify::Outcome::Return(Errno::ENOSYS.to_return()),
            };
            match outcome {
                notify::Outcome::Continue => None,
                notify::Outcome::Return(v) => {
                    th.regs.set_return(v);
                    Some(Action::Return)
                }
            }
        }
        SECCOMP_RET_TRACE => {
            if recheck {
                return None;
            }
            if log {
                audit_log(task, th, nr, 0, ret);
            }
            if !crate::ptrace::event_enabled(task, PTRACE_EVENT_SECCOMP) {
                // No tracer that asked for PTRACE_O_TRACESECCOMP: ENOSYS.
                th.regs.set_return(Errno::ENOSYS.to_return());
                return Some(Action::Return);
            }
            crate::arch::seccomp_stop_regs(&mut th.regs);
            crate::ptrace::event_stop(k, task, th, PTRACE_EVENT_SECCOMP, u64::from(data));
            // Dying, or the tracer cancelled the call (number -1): skip it, with the
            // return value the tracer left.
            let nr = th.regs.syscall_nr() as i32;
            if crate::ptrace::fatal_signal_pending(task) || nr < 0 {
                return Some(Action::Return);
            }
            // The tracer may have changed the call: the filters judge it again.
            filter(k, task, th, nr, true)
        }
        SECCOMP_RET_LOG => {
            audit_log(task, th, nr, 0, ret);
            None
        }
        SECCOMP_RET_ALLOW => None,
        // KILL_THREAD, KILL_PROCESS, and any value Linux does not know (treated as
        // KILL_PROCESS): SIGSYS with a core dump, unless only this thread ends.
        _ => {
            audit_log(task, th, nr, SIGSYS, ret);
            let last = task.process.live_threads(k).len() <= 1;
            if action == SECCOMP_RET_KILL_THREAD && !last {
                return Some(Action::ExitThread(0));
            }
            let mut regs = th.regs;
            syscall_rollback(&mut regs);
            let mut info = Siginfo::sys(SYS_SECCOMP, th.regs.pc(), nr, crate::arch::AUDIT_ARCH);
            info.si_errno = data as i32;
            Some(kill_thread(k, task, SIGSYS, Some((&regs, &info))))
        }
    }
}

/// Ends the thread, and the process with it if it is the last thread (or the signal kills
/// the group: SIGSYS from KILL_PROCESS). `core`: the registers and siginfo to dump core
/// with (SIGSYS's default action), none for strict mode's SIGKILL.
fn kill_thread(
    k: &Arc<Kernel>,
    task: &Arc<Task>,
    signo: u32,
    core: Option<(&crate::arch::Regs, &Siginfo)>,
) -> Action {
    let last = task.process.live_threads(k).len() <= 1;
    if core.is_none() && !last {
        return Action::ExitThread(0);
    }
    let dumped = core.is_some_and(|(regs, info)| sig::dump_core(k, task, regs, info));
    Action::ExitGroup(if dumped {
        ExitStatus::Dumped(signo as i32)
    } else {
        ExitStatus::Signaled(signo as i32)
    })
}

/// `syscall_rollback`: the return register back to its value at entry (x86_64 rax = the
/// number, arm64 x0 = the first argument), so a handler or a core dump sees the call.
fn syscall_rollback(regs: &mut crate::arch::Regs) {
    let v = if cfg!(target_arch = "x86_64") {
        regs.syscall_nr()
    } else {
        regs.syscall_args()[0]
    };
    regs.set_return(v);
}

/// `force_sig_info_to_task(.., HANDLER_CURRENT)` for SIGSYS: a blocked or ignored SIGSYS
/// is reset to its default action (and unblocked), so the trap is never lost.
fn force_sigsys(task: &Arc<Task>, info: Siginfo) {
    let bit = sigbit(SIGSYS);
    let blocked = *lock(&task.sigmask) & bit != 0;
    {
        let mut acts = lock(&task.process.sigactions);
        let act = &mut acts[(SIGSYS - 1) as usize];
        if blocked || act.handler == 1 {
            act.handler = 0;
        }
    }
    if blocked {
        *lock(&task.sigmask) &= !bit;
    }
    sig::send_to_task(task, info);
}

/// `seccomp_run_filters`: every filter of the chain over this call's `seccomp_data`; the
/// lowest action wins, the newest filter on a tie. Returns the verdict and whether the
/// filter that decided it asked for logging.
#[cfg(test)]
fn run_filters(f: &Arc<Filter>, nr: i32, regs: &crate::arch::Regs) -> (u32, bool) {
    let (ret, log, _) = run_filters_match(f, nr, regs);
    (ret, log)
}

/// [`run_filters`], also naming the filter that decided (Linux's `match`, whose listener
/// a USER_NOTIF verdict goes to) and the `seccomp_data` the filters saw.
fn run_filters_match<'a>(
    f: &'a Arc<Filter>,
    nr: i32,
    regs: &crate::arch::Regs,
) -> (u32, bool, Option<(&'a Filter, SeccompData)>) {
    if f.allows(nr) {
        return (SECCOMP_RET_ALLOW, false, None);
    }
    let d = SeccompData {
        nr,
        arch: crate::arch::AUDIT_ARCH,
        instruction_pointer: regs.pc(),
        args: regs.syscall_args(),
    };
    let bytes = d.as_bytes();
    let mut words = [0u32; 16];
    for (w, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    let mut ret = SECCOMP_RET_ALLOW;
    let mut log = false;
    let mut matched = None;
    for x in f.chain() {
        let cur = bpf::run(&x.prog, &words);
        if ((cur & SECCOMP_RET_ACTION_FULL) as i32) < ((ret & SECCOMP_RET_ACTION_FULL) as i32) {
            ret = cur;
            log = x.log;
            matched = Some(x);
        }
    }
    (ret, log, matched.map(|x| (x, d)))
}

/// `seccomp_log` with the default `actions_logged` (every action but ALLOW; TRAP, ERRNO,
/// USER_NOTIF and TRACE only from a filter with SECCOMP_FILTER_FLAG_LOG, which the callers
/// check): the audit record Linux prints when no audit daemon takes it.
fn audit_log(task: &Task, th: &GuestThread, nr: i32, signr: u32, ret: u32) {
    let p = &task.process;
    let comm = String::from_utf8_lossy(&lock(&p.comm)).into_owned();
    let creds = *lock(&p.creds);
    log::info!(
        "audit: type=1326 auid=4294967295 uid={} gid={} ses=4294967295 pid={} comm=\"{comm}\" \
         sig={signr} arch={:x} syscall={nr} compat=0 ip={:#x} code={ret:#x}",
        creds.uid,
        creds.gid,
        task.tid,
        crate::arch::AUDIT_ARCH,
        th.regs.pc(),
    );
}

/// `seccomp_may_assign_mode`: a task in one mode cannot switch to the other.
fn may_assign(task: &Task, mode: u32) -> bool {
    let cur = task.seccomp.mode();
    cur == SECCOMP_MODE_DISABLED || cur == mode
}

/// SECCOMP_SET_MODE_STRICT (`seccomp_set_mode_strict`); on x86 it also makes rdtsc fault
/// (`disable_TSC`).
fn set_mode_strict(task: &Task) -> SysResult {
    let _g = lock(&SYNC);
    if !may_assign(task, SECCOMP_MODE_STRICT) {
        return Err(Errno::EINVAL);
    }
    if crate::arch::HAS_TSC_CTL {
        task.tsc_sigsegv.store(true, Ordering::Relaxed);
    }
    task.seccomp
        .mode
        .store(SECCOMP_MODE_STRICT, Ordering::Release);
    Ok(0)
}

/// `seccomp_prepare_user_filter` + `seccomp_prepare_filter`: reads and checks the guest's
/// `struct sock_fprog` and program.
fn prepare_filter(c: &SyscallCtx<'_>, uargs: u64) -> SysResult<(Vec<SockFilter>, Vec<SockFilter>)> {
    let b = c.read_bytes(uargs, SockFprog::SIZE)?;
    let fprog = SockFprog::from_bytes(&b).ok_or(Errno::EFAULT)?;
    let len = usize::from(fprog.len);
    if len == 0 || len > BPF_MAXINSNS {
        return Err(Errno::EINVAL);
    }
    // Without no_new_privs a filter needs CAP_SYS_ADMIN: an unprivileged task must not change
    // how a setuid program it runs behaves.
    {
        let caps = lock(&c.task.process.caps);
        if !caps.no_new_privs && !caps.has(CAP_SYS_ADMIN) {
            return Err(Errno::EACCES);
        }
    }
    // bpf_check_basics_ok: no program at all is EINVAL, an unreadable one EFAULT.
    if fprog.filter == 0 {
        return Err(Errno::EINVAL);
    }
    let raw = c.read_bytes(fprog.filter, len * SockFilter::SIZE)?;
    let orig: Vec<SockFilter> = raw
        .chunks_exact(SockFilter::SIZE)
        .filter_map(SockFilter::from_bytes)
        .collect();
    let prog = bpf::check(&orig)?;
    Ok((prog, orig))
}

/// The native syscall numbers `prog` allows whatever the arguments, one bit each.
fn allow_bitmap(prog: &[SockFilter]) -> Vec<u64> {
    let n = crate::arch::syscalls::MAX_NR as usize + 1;
    let mut bits = vec![0u64; n.div_ceil(64)];
    for nr in 0..n {
        if bpf::const_allow(prog, nr as u32, crate::arch::AUDIT_ARCH) {
            bits[nr / 64] |= 1 << (nr % 64);
        }
    }
    bits
}

/// `is_ancestor`: `parent` (none: the empty chain) is `child` or older than it.
fn is_ancestor(parent: Option<&Arc<Filter>>, child: Option<&Arc<Filter>>) -> bool {
    let Some(parent) = parent else {
        return true;
    };
    let mut cur = child.map(|c| &**c);
    while let Some(c) = cur {
        if std::ptr::eq(c, &**parent) {
            return true;
        }
        cur = c.prev.as_deref();
    }
    false
}

/// SECCOMP_SET_MODE_FILTER (`seccomp_set_mode_filter`, `seccomp_attach_filter`,
/// `seccomp_can_sync_threads`, `seccomp_sync_threads`).
fn set_mode_filter(c: &mut SyscallCtx<'_>, flags: u32, uargs: u64) -> SysResult {
    if flags & !SECCOMP_FILTER_FLAG_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    let tsync = flags & SECCOMP_FILTER_FLAG_TSYNC != 0;
    let listener = flags & SECCOMP_FILTER_FLAG_NEW_LISTENER != 0;
    // A TSYNC failure returns a thread id, a listener a descriptor: together only when a TSYNC
    // failure is ESRCH.
    if tsync && listener && flags & SECCOMP_FILTER_FLAG_TSYNC_ESRCH == 0 {
        return Err(Errno::EINVAL);
    }
    if flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 && !listener {
        return Err(Errno::EINVAL);
    }
    let (prog, orig) = prepare_filter(c, uargs)?;
    let own_allow = allow_bitmap(&prog);
    let task = c.task;
    // The listener's descriptor is taken first (Linux `get_unused_fd_flags(O_CLOEXEC)`), so
    // running out of descriptors fails before anything is attached.
    let notif =
        listener.then(|| notify::Notif::new(flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0));
    let listener_fd = match &notif {
        Some(n) => {
            let file = OpenFile::new(
                Box::new(notify::Listener::new(n.clone())),
                O_RDWR | O_CLOEXEC,
                None,
            );
            Some(lock(&task.process.files()).install(file, true, 0)?)
        }
        None => None,
    };
    let r = attach_filter(c, flags, prog, orig, own_allow, notif);
    match (r, listener_fd) {
        (Ok(_), Some(fd)) => Ok(u64::from(fd)),
        (r, Some(fd)) => {
            let _ = lock(&task.process.files()).remove(u64::from(fd));
            r
        }
        (r, None) => r,
    }
}

/// The locked part of [`set_mode_filter`] (`seccomp_attach_filter`, TSYNC).
fn attach_filter(
    c: &mut SyscallCtx<'_>,
    flags: u32,
    prog: Vec<SockFilter>,
    orig: Vec<SockFilter>,
    own_allow: Vec<u64>,
    notif: Option<Arc<notify::Notif>>,
) -> SysResult {
    let tsync = flags & SECCOMP_FILTER_FLAG_TSYNC != 0;
    let task = c.task;
    let _g = lock(&SYNC);
    if !may_assign(task, SECCOMP_MODE_FILTER) {
        return Err(Errno::EINVAL);
    }
    let cur = lock(&task.seccomp.inner).clone();
    // has_duplicate_listener: one open listener per chain.
    if notif.is_some()
        && let Some(f) = &cur.filter
        && f.chain()
            .any(|x| x.notif.as_ref().is_some_and(|n| n.attached()))
    {
        return Err(Errno::EBUSY);
    }
    let mut total = prog.len();
    if let Some(f) = &cur.filter {
        total += f.chain().map(|x| x.prog.len() + 4).sum::<usize>();
    }
    if total > MAX_INSNS_PER_PATH {
        return Err(Errno::ENOMEM);
    }
    let others: Vec<Arc<Task>> = task
        .process
        .live_threads(c.kernel)
        .into_iter()
        .filter(|t| t.tid != task.tid)
        .collect();
    if tsync {
        for t in &others {
            let ok = match t.seccomp.mode() {
                SECCOMP_MODE_DISABLED => true,
                SECCOMP_MODE_FILTER => {
                    let tf = lock(&t.seccomp.inner).filter.clone();
                    is_ancestor(tf.as_ref(), cur.filter.as_ref())
                }
                _ => false,
            };
            if !ok {
                if flags & SECCOMP_FILTER_FLAG_TSYNC_ESRCH != 0 {
                    return Err(Errno::ESRCH);
                }
                // The first thread that cannot be synchronised, as the caller numbers it.
                return Ok(u64::from(t.pids.nr_in(task.pids.ns())));
            }
        }
    }
    let allow = match &cur.filter {
        Some(prev) => own_allow
            .iter()
            .zip(prev.allow.iter())
            .map(|(a, b)| a & b)
            .collect(),
        None => own_allow,
    };
    let f = Arc::new(Filter {
        prog,
        orig,
        prev: cur.filter,
        log: flags & SECCOMP_FILTER_FLAG_LOG != 0,
        allow,
        notif,
    });
    let st = State {
        filter: Some(f),
        count: cur.count + 1,
    };
    *lock(&task.seccomp.inner) = st.clone();
    task.seccomp
        .mode
        .store(SECCOMP_MODE_FILTER, Ordering::Release);
    if tsync {
        // no_new_privs is per process here, so the threads share the caller's already.
        for t in &others {
            *lock(&t.seccomp.inner) = st.clone();
            t.seccomp.mode.store(SECCOMP_MODE_FILTER, Ordering::Release);
        }
    }
    Ok(0)
}

/// SECCOMP_GET_ACTION_AVAIL: 0 for an action this kernel carries out, EOPNOTSUPP otherwise.
fn get_action_avail(c: &SyscallCtx<'_>, uargs: u64) -> SysResult {
    let b = c.read_bytes(uargs, 4)?;
    let action = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    match action {
        SECCOMP_RET_KILL_PROCESS
        | SECCOMP_RET_KILL_THREAD
        | SECCOMP_RET_TRAP
        | SECCOMP_RET_ERRNO
        | SECCOMP_RET_USER_NOTIF
        | SECCOMP_RET_TRACE
        | SECCOMP_RET_LOG
        | SECCOMP_RET_ALLOW => Ok(0),
        _ => Err(Errno::EOPNOTSUPP),
    }
}

/// `do_seccomp`.
fn do_seccomp(c: &mut SyscallCtx<'_>, op: u32, flags: u32, uargs: u64) -> SysResult {
    match op {
        SECCOMP_SET_MODE_STRICT => {
            if flags != 0 || uargs != 0 {
                return Err(Errno::EINVAL);
            }
            set_mode_strict(c.task)
        }
        SECCOMP_SET_MODE_FILTER => set_mode_filter(c, flags, uargs),
        SECCOMP_GET_ACTION_AVAIL => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            get_action_avail(c, uargs)
        }
        SECCOMP_GET_NOTIF_SIZES => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            let sizes = SeccompNotifSizes {
                seccomp_notif: SECCOMP_NOTIF_SIZE,
                seccomp_notif_resp: SECCOMP_NOTIF_RESP_SIZE,
                seccomp_data: SeccompData::SIZE as u16,
            };
            c.write_bytes(uargs, &sizes.as_bytes())?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// seccomp(2).
fn sys_seccomp(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_seccomp(c, a[0] as u32, a[1] as u32, a[2])
}

/// prctl(PR_GET_SECCOMP): the mode.
pub fn prctl_get(task: &Task) -> SysResult {
    Ok(u64::from(task.seccomp.mode()))
}

/// prctl(PR_SET_SECCOMP, mode, filter) (`prctl_set_seccomp`): strict ignores the filter;
/// no flags.
pub fn prctl_set(c: &mut SyscallCtx<'_>, mode: u64, filter: u64) -> SysResult {
    match mode {
        m if m == u64::from(SECCOMP_MODE_STRICT) => do_seccomp(c, SECCOMP_SET_MODE_STRICT, 0, 0),
        m if m == u64::from(SECCOMP_MODE_FILTER) => {
            do_seccomp(c, SECCOMP_SET_MODE_FILTER, 0, filter)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// PTRACE_SECCOMP_GET_FILTER (`seccomp_get_filter`): the tracee's filter number `index`
/// (0 the oldest) as the guest installed it, copied to `buf` unless that is 0; returns its
/// length. The tracer needs CAP_SYS_ADMIN and no seccomp of its own.
pub fn ptrace_get_filter(c: &SyscallCtx<'_>, t: &Task, index: u64, buf: u64) -> SysResult {
    if !lock(&c.task.process.caps).has(CAP_SYS_ADMIN)
        || c.task.seccomp.mode() != SECCOMP_MODE_DISABLED
    {
        return Err(Errno::EACCES);
    }
    if t.seccomp.mode() != SECCOMP_MODE_FILTER {
        return Err(Errno::EINVAL);
    }
    let st = lock(&t.seccomp.inner).clone();
    let f = st.filter.ok_or(Errno::EINVAL)?;
    let chain: Vec<&Filter> = f.chain().collect();
    let n = chain.len() as u64;
    if index >= n {
        return Err(Errno::ENOENT);
    }
    let x = chain[(n - 1 - index) as usize];
    if buf != 0 {
        let bytes: Vec<u8> = x.orig.iter().flat_map(|i| i.as_bytes()).collect();
        c.write_bytes(buf, &bytes)?;
    }
    Ok(x.orig.len() as u64)
}

/// Registers seccomp(2).
pub fn register(t: &mut SyscallTable) {
    t.register("seccomp", sys_seccomp);
}

#[cfg(test)]
mod tests {
    use super::*;
    use um_uapi::abi::seccomp::bpf::*;

    fn ret(v: u32) -> Vec<SockFilter> {
        vec![SockFilter {
            code: RET | K,
            jt: 0,
            jf: 0,
            k: v,
        }]
    }

    fn chain(rets: &[u32]) -> Arc<Filter> {
        let mut prev: Option<Arc<Filter>> = None;
        for (i, &r) in rets.iter().enumerate() {
            let prog = bpf::check(&ret(r)).unwrap();
            let mut allow = allow_bitmap(&prog);
            if let Some(p) = &prev {
                allow.iter_mut().zip(&p.allow).for_each(|(a, b)| *a &= b);
            }
            prev = Some(Arc::new(Filter {
                orig: prog.clone(),
                prog,
                prev,
                log: i == 1,
                allow,
                notif: None,
            }));
        }
        prev.unwrap()
    }

    #[test]
    fn the_most_restrictive_action_wins_newest_first_on_ties() {
        let regs = crate::arch::Regs::default();
        let order = [
            SECCOMP_RET_KILL_PROCESS,
            SECCOMP_RET_KILL_THREAD,
            SECCOMP_RET_TRAP | 1,
            SECCOMP_RET_ERRNO | 2,
            SECCOMP_RET_USER_NOTIF,
            SECCOMP_RET_TRACE | 3,
            SECCOMP_RET_LOG,
            SECCOMP_RET_ALLOW,
        ];
        for (i, &strong) in order.iter().enumerate() {
            for &weak in &order[i..] {
                // Whichever was installed first, the stronger action decides.
                assert_eq!(run_filters(&chain(&[strong, weak]), 1, &regs).0, strong);
                assert_eq!(run_filters(&chain(&[weak, strong]), 1, &regs).0, strong);
            }
        }
        // Same action, different data: the newest filter's value.
        assert_eq!(
            run_filters(
                &chain(&[SECCOMP_RET_ERRNO | 1, SECCOMP_RET_ERRNO | 2]),
                1,
                &regs
            ),
            (SECCOMP_RET_ERRNO | 2, true)
        );
        // An unknown action (0x10000) sorts by its value, below TRAP.
        assert_eq!(
            run_filters(&chain(&[SECCOMP_RET_TRAP, 0x0001_0000]), 1, &regs).0,
            0x0001_0000
        );
    }

    #[test]
    fn the_cache_remembers_only_what_every_filter_allows() {
        let f = chain(&[SECCOMP_RET_ALLOW, SECCOMP_RET_ALLOW]);
        assert!(f.allows(0) && f.allows(crate::arch::syscalls::MAX_NR as i32));
        assert!(!f.allows(-1) && !f.allows(crate::arch::syscalls::MAX_NR as i32 + 1));
        let g = Arc::new(Filter {
            prog: bpf::check(&ret(SECCOMP_RET_ERRNO)).unwrap(),
            orig: Vec::new(),
            allow: vec![0; f.allow.len()],
            prev: Some(f.clone()),
            log: false,
            notif: None,
        });
        assert!(!g.allows(0));
        assert!(is_ancestor(Some(&f), Some(&g)));
        assert!(!is_ancestor(Some(&g), Some(&f)));
        assert!(is_ancestor(None, Some(&f)));
    }

    #[test]
    fn a_long_chain_drops_without_deep_recursion() {
        let prog = bpf::check(&ret(SECCOMP_RET_ALLOW)).unwrap();
        let mut prev = None;
        for _ in 0..100_000 {
            prev = Some(Arc::new(Filter {
                prog: prog.clone(),
                orig: Vec::new(),
                prev,
                log: false,
                allow: Vec::new(),
                notif: None,
            }));
        }
        let t = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(move || drop(prev))
            .unwrap();
        t.join().unwrap();
    }

    #[test]
    fn strict_mode_allows_four_calls() {
        let n = |s| crate::arch::syscalls::number(s).unwrap() as i32;
        assert!(strict_allowed(n("read")) && strict_allowed(n("write")));
        assert!(strict_allowed(n("exit")) && strict_allowed(n("rt_sigreturn")));
        assert!(!strict_allowed(n("exit_group")) && !strict_allowed(n("getpid")));
        assert!(!strict_allowed(-1));
    }
}
