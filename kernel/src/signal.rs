//! Signals (Linux `kernel/signal.c`): pending queues, sending, and the choice of what happens
//! when one is delivered. Building the arch signal frame is the arch crate's job; the run loop
//! delivers pending signals before it switches back to the guest.

use crate::kernel::Kernel;
use crate::task::{Process, Task, lock};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_uapi::abi::signal::Siginfo;
use um_uapi::{Errno, SysResult};

// Signal numbers are the uapi's (the same on x86_64 and arm64).
pub use um_uapi::abi::signal::{
    NSIG, SIGABRT, SIGALRM, SIGBUS, SIGCHLD, SIGCONT, SIGFPE, SIGHUP, SIGILL, SIGINT, SIGIO,
    SIGKILL, SIGPIPE, SIGPROF, SIGPWR, SIGQUIT, SIGRTMIN, SIGSEGV, SIGSTOP, SIGSYS, SIGTERM,
    SIGTRAP, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGUSR1, SIGUSR2, SIGVTALRM, SIGWINCH, SIGXCPU,
    SIGXFSZ,
};

/// The bit of `sig` in a sigset.
pub const fn sigbit(sig: u32) -> u64 {
    1u64 << (sig - 1)
}

/// Signals that can never be blocked, caught or ignored.
pub const UNBLOCKABLE: u64 = sigbit(SIGKILL) | sigbit(SIGSTOP);

/// What the default action of a signal is (signal(7)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    Term,
    Core,
    Ign,
    Stop,
    Cont,
}

/// The default action of `sig`.
pub fn default_action(sig: u32) -> DefaultAction {
    match sig {
        SIGCHLD | SIGURG | SIGWINCH => DefaultAction::Ign,
        SIGCONT => DefaultAction::Cont,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => DefaultAction::Stop,
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ
        | SIGSYS => DefaultAction::Core,
        _ => DefaultAction::Term,
    }
}

/// A queue of pending signals: standard signals coalesce, real-time ones queue.
#[derive(Default, Clone)]
pub struct SigQueue {
    bits: u64,
    infos: VecDeque<Siginfo>,
}

impl SigQueue {
    /// The pending set.
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// Adds a signal; false if it was not queued (a standard signal already pending is not
    /// queued twice: kernel/signal.c `legacy_queue`).
    pub fn push(&mut self, info: Siginfo) -> bool {
        let sig = info.si_signo as u32;
        if sig == 0 || sig > NSIG {
            return false;
        }
        if sig < SIGRTMIN && self.bits & sigbit(sig) != 0 {
            return false;
        }
        self.bits |= sigbit(sig);
        self.infos.push_back(info);
        true
    }

    /// Takes the lowest-numbered pending signal not in `blocked` (synchronous signals first,
    /// as Linux `dequeue_signal` does).
    pub fn take(&mut self, blocked: u64) -> Option<Siginfo> {
        let avail = self.bits & !blocked;
        if avail == 0 {
            return None;
        }
        const SYNC: u64 = sigbit(SIGSEGV)
            | sigbit(SIGBUS)
            | sigbit(SIGILL)
            | sigbit(SIGTRAP)
            | sigbit(SIGFPE)
            | sigbit(SIGSYS);
        let pick = if avail & SYNC != 0 {
            avail & SYNC
        } else {
            avail
        };
        let sig = pick.trailing_zeros() + 1;
        let i = self.infos.iter().position(|x| x.si_signo as u32 == sig)?;
        let info = self.infos.remove(i)?;
        if !self.infos.iter().any(|x| x.si_signo as u32 == sig) {
            self.bits &= !sigbit(sig);
        }
        Some(info)
    }

    /// How many signals are queued (each takes a `sigqueue` in Linux, charged to
    /// RLIMIT_SIGPENDING).
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// The queued signals in queue order (PTRACE_PEEKSIGINFO walks `pending->list`).
    pub fn infos(&self) -> impl Iterator<Item = &Siginfo> {
        self.infos.iter()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// Removes every instance of the signals in `set` (e.g. SIGCONT discards stops).
    pub fn discard(&mut self, set: u64) {
        self.bits &= !set;
        self.infos.retain(|x| set & sigbit(x.si_signo as u32) == 0);
    }
}

impl Task {
    /// Whether a signal that this thread does not block is pending for it or its process, or
    /// the thread is being killed: its process is exiting (exit_group or a fatal signal in
    /// another thread) or exec in another thread is taking the process over. Linux queues
    /// SIGKILL on every other thread for both (`zap_other_threads`, `de_thread`), so a thread
    /// asleep in a syscall wakes with `ERESTARTSYS` and dies on its way out.
    pub fn signal_pending(&self) -> bool {
        if self.dying() || self.ptrace.trap_pending() {
            return true;
        }
        let blocked = *lock(&self.sigmask);
        lock(&self.pending).bits() & !blocked != 0
            || lock(&self.process.shared_pending).bits() & !blocked != 0
    }

    /// Whether this thread is to end without returning to its program: its process is exiting
    /// or another thread's exec is removing it.
    pub fn dying(&self) -> bool {
        lock(&self.process.exit).is_some() || self.zap.load(Ordering::Acquire)
    }

    /// Makes the thread notice a signal: wakes it if it sleeps in the kernel, and interrupts
    /// its guest code if it runs (the engine turns the host signal into `Event::Interrupted`).
    pub fn kick(&self) {
        self.waker.wake();
        let (pid, tid) = (
            self.host_pid.load(Ordering::Acquire),
            self.host_tid.load(Ordering::Acquire),
        );
        if pid > 0 && tid > 0 && self.in_guest.load(Ordering::Acquire) {
            let _ = um_os_linux::ptrace::tgkill(pid, tid, KICK_SIGNAL);
        }
    }
}

/// The host signal that interrupts a stub thread running guest code.
pub const KICK_SIGNAL: i32 = um_os_linux::ptrace::KICK_SIGNAL;

/// Whether `sig`, with its current action, would be ignored if sent to `p` (so it need not
/// even be queued, as Linux `sig_ignored` decides).
fn ignored(p: &Process, t: Option<&Task>, sig: u32) -> bool {
    let act = lock(&p.sigactions)[(sig - 1) as usize];
    // sig_ignored: a blocked signal is never ignored, not even by init (the handler may change
    // before it is unblocked, and sigtimedwait may want it, real_blocked: busybox init blocks
    // SIGUSR2 and SIGTERM and takes them with sigtimedwait). SIGKILL and SIGSTOP are never
    // blocked. A blocked signal with the default action that init later unblocks is dropped
    // at delivery (`init_drops`).
    let blocked = |t: &Task| (*lock(&t.sigmask) | *lock(&t.real_blocked)) & sigbit(sig) != 0;
    if t.is_some_and(blocked) {
        return false;
    }
    // init is unkillable (SIGNAL_UNKILLABLE, kernel/signal.c `sig_task_ignored`): a signal
    // with the default action, SIGKILL and SIGSTOP included, does not reach it. Faults the
    // kernel forces on init's own instructions bypass this path.
    if p.pid == 1 && act.handler == 0 {
        return true;
    }
    // The init of a pid namespace likewise, except that SIGKILL and SIGSTOP from an ancestor
    // namespace (a sender that cannot see it as a number of its own) get through
    // (`__send_signal_locked`'s `force`).
    if act.handler == 0 && crate::pidns::is_ns_init(p) {
        let force = crate::current::current().is_none_or(|c| c.pids.nr_in(p.pids.ns()) == 0);
        if !(force && (sig == SIGKILL || sig == SIGSTOP)) {
            return true;
        }
    }
    if sig == SIGKILL || sig == SIGSTOP {
        return false;
    }
    act.handler == 1 || (act.handler == 0 && default_action(sig) == DefaultAction::Ign)
}

/// Whether init (global or a namespace's) drops the dequeued signal `info`, whose action is
/// the default one (kernel/signal.c `get_signal`: "Global init gets no signals it doesn't
/// want", `SIGNAL_UNKILLABLE && !sig_kernel_only`). It got queued only because it was blocked
/// (see `ignored`). A fault the kernel forced on init's own instruction (a synchronous fault
/// signal with a kernel si_code) is not dropped: Linux `force_sig_info` clears
/// SIGNAL_UNKILLABLE for it.
pub fn init_drops(p: &Process, info: &Siginfo) -> bool {
    let sig = info.si_signo as u32;
    if !(p.pid == 1 || crate::pidns::is_ns_init(p)) || sig == SIGKILL || sig == SIGSTOP {
        return false;
    }
    let fault = matches!(sig, SIGSEGV | SIGBUS | SIGILL | SIGFPE | SIGTRAP | SIGSYS);
    !(fault && info.si_code > 0)
}

/// Sends `info` to one thread.
pub fn send_to_task(t: &Arc<Task>, info: Siginfo) {
    let sig = info.si_signo as u32;
    if ignored(&t.process, Some(t), sig) {
        return;
    }
    prepare(&t.process, sig);
    // A signal that coalesced with one already pending wakes nobody (Linux returns before
    // `complete_signal`): a storm of them must not keep interrupting the target's guest code.
    if lock(&t.pending).push(info) {
        t.kick();
    }
}

/// Sends `info` to a process: queued for the group, and one thread that does not block it is
/// woken (Linux `complete_signal`).
pub fn send_to_process(k: &Kernel, p: &Arc<Process>, info: Siginfo) {
    let sig = info.si_signo as u32;
    let threads = p.live_threads(k);
    // Linux checks the task the signal is sent through (the group leader for kill(2)).
    let leader = threads.iter().find(|t| t.tid == p.pid);
    if ignored(p, leader.map(|t| &**t), sig) {
        return;
    }
    prepare(p, sig);
    if !lock(&p.shared_pending).push(info) {
        return;
    }
    let target = threads
        .iter()
        .find(|t| *lock(&t.sigmask) & sigbit(sig) == 0)
        .or(threads.first())
        .cloned();
    if sig == SIGKILL {
        for t in &threads {
            t.kick();
        }
    } else if let Some(t) = target {
        t.kick();
    }
}

/// Stop and continue signals cancel each other out when queued (Linux `prepare_signal`).
fn prepare(p: &Process, sig: u32) {
    const STOPS: u64 = sigbit(SIGSTOP) | sigbit(SIGTSTP) | sigbit(SIGTTIN) | sigbit(SIGTTOU);
    if sig == SIGCONT || sig == SIGKILL {
        lock(&p.shared_pending).discard(STOPS);
        p.resume_from_stop();
    } else if STOPS & sigbit(sig) != 0 {
        lock(&p.shared_pending).discard(sigbit(SIGCONT));
    }
}

/// Sends `info` to every process in process group `pgid`; `ESRCH` if there is none.
pub fn send_to_pgrp(k: &Kernel, pgid: u32, info: Siginfo) -> SysResult<()> {
    let procs: Vec<Arc<Process>> = k
        .tasks
        .processes()
        .into_iter()
        .filter(|p| p.pgid.load(Ordering::Relaxed) == pgid)
        .collect();
    if procs.is_empty() {
        return Err(Errno::ESRCH);
    }
    for p in procs {
        send_to_process(k, &p, info);
    }
    Ok(())
}

/// Writes a core file for `task`, killed by `info`, with registers `regs`; true if it did.
pub type CoreDumper = fn(&Arc<Kernel>, &Arc<Task>, &crate::arch::Regs, &Siginfo) -> bool;

/// The core dump writer, set once at boot by the file layer (it needs the VFS).
static CORE_DUMPER: std::sync::OnceLock<CoreDumper> = std::sync::OnceLock::new();

/// Sets the core dump writer (the first call wins).
pub fn set_core_dumper(f: CoreDumper) {
    let _ = CORE_DUMPER.set(f);
}

/// Dumps core for a signal whose default action is to (Linux `do_coredump`); false when no
/// writer is installed or it wrote nothing.
pub fn dump_core(
    k: &Arc<Kernel>,
    task: &Arc<Task>,
    regs: &crate::arch::Regs,
    info: &Siginfo,
) -> bool {
    CORE_DUMPER.get().is_some_and(|f| f(k, task, regs, info))
}

use um_uapi::abi::capability::CAP_KILL;
use um_uapi::abi::signal::SI_USER;
/// RLIMIT_SIGPENDING.
const RLIMIT_SIGPENDING: usize = 11;

/// kernel/signal.c `check_kill_permission`: a signal sent by a user (`si_code <= 0`) to
/// another process needs CAP_KILL or a matching uid (`kill_ok_by_cred`: the sender's real or
/// effective uid is the target's real or saved uid); SIGCONT within a session is always
/// allowed. `EPERM` otherwise.
pub fn check_kill_permission(
    sender: &Arc<Process>,
    target: &Arc<Process>,
    sig: u32,
    code: i32,
) -> SysResult<()> {
    if code > 0 || Arc::ptr_eq(sender, target) {
        return Ok(());
    }
    let me = *lock(&sender.creds);
    let t = *lock(&target.creds);
    let ok = me.euid == t.suid
        || me.euid == t.uid
        || me.uid == t.suid
        || me.uid == t.uid
        || sender.capable(CAP_KILL);
    let same_session = target.sid.load(Ordering::Relaxed) == sender.sid.load(Ordering::Relaxed);
    if ok || (sig == SIGCONT && same_session) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// kernel/signal.c `__send_signal_locked` and `__sigqueue_alloc`: a real-time signal sent
/// with a siginfo other than kill(2)'s cannot be queued beyond the target's RLIMIT_SIGPENDING,
/// which counts the signals queued to all processes of the target's real uid (its
/// `ucounts`); the sender gets `EAGAIN`. (Other signals are delivered anyway, as Linux does
/// when only their information is lost.)
pub fn check_sigpending(k: &Kernel, target: &Process, sig: u32, code: i32) -> SysResult<()> {
    if sig < SIGRTMIN || code == SI_USER {
        return Ok(());
    }
    let limit = lock(&target.rlimits)[RLIMIT_SIGPENDING].0;
    if limit == u64::MAX {
        return Ok(());
    }
    let uid = lock(&target.creds).uid;
    let mut queued = 0u64;
    for p in k.tasks.processes() {
        if lock(&p.creds).uid != uid {
            continue;
        }
        queued += lock(&p.shared_pending).len() as u64;
        for t in lock(&p.threads).iter().filter_map(std::sync::Weak::upgrade) {
            queued += lock(&t.pending).len() as u64;
        }
    }
    if queued + 1 > limit {
        return Err(Errno::EAGAIN);
    }
    Ok(())
}
