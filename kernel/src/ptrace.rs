//! ptrace(2) inside the guest: one guest thread traces another (strace, gdb).
//!
//! Linux's semantics (kernel/ptrace.c, kernel/signal.c `ptrace_stop`/`do_jobctl_trap`,
//! kernel/exit.c `wait_task_stopped`, ptrace(2)); gVisor's `pkg/sentry/kernel/ptrace.go` is
//! the map of an emulated ptrace that this follows.
//!
//! Each guest thread has its own kernel host thread (ARCHITECTURE.md, "Threads and
//! processes"), so a ptrace-stop is that host thread sleeping in [`stop`] with the guest's
//! registers parked in the tracee's [`PtraceSlot`]; the tracer's requests read and change the
//! parked copy, and a restart hands it back. The run loop calls in at a few points only:
//! syscall entry and exit ([`syscall_enter`], [`syscall_exit`]), signal delivery
//! ([`signal_stop`], [`jobctl`]), clone/exec/exit events, and the exit path. Memory is the
//! tracee's `Mm`, reached with the FOLL_FORCE accessors.
//!
//! Single-step (x86_64 only, [`crate::arch::HAS_SINGLE_STEP`]): PTRACE_SINGLESTEP sets the
//! trap flag in the parked registers (arch/x86/kernel/step.c `enable_single_step`, Linux's
//! TIF_FORCED_TF kept in `PtraceSlot::forced_tf`, so the tracer never sees a TF it did not
//! set and the next stop clears it). The guest runs natively, so the host CPU traps after one
//! instruction in every engine and the host's SIGTRAP (TRAP_TRACE) comes back as a guest
//! signal, reported as a signal-delivery stop; a stepped `syscall` reports its SIGTRAP
//! (TRAP_BRKPT) at syscall exit instead ([`syscall_step`]). `int3` breakpoints arrive the same
//! way, SI_KERNEL with the pc after the int3. FP registers: each stop snapshots the engine's
//! FP image (`GuestThread::get_fpregs`); GETFPREGS/SETFPREGS, NT_PRFPREG and NT_X86_XSTATE
//! read and change the snapshot, and the restart writes a changed one back. Debug registers
//! read as 0 and refuse any other value (EIO: gdb says "Couldn't write debug register" and
//! software watchpoints still work); arm64 answers SINGLESTEP with EIO.
//!
//! Differences from Linux, on purpose for now: the tracer is a process (any of its threads
//! may issue requests and wait, as if every tracer thread were the tracer); SYSEMU answers
//! EIO; no hardware breakpoints or watchpoints.

use crate::arch::Regs;
use crate::engine::GuestThread;
use crate::kernel::Kernel;
use crate::signal::{self as sig, sigbit};
use crate::syscall::{SyscallCtx, SyscallTable, lock_mm};
use crate::task::{ExitStatus, JobState, Process, Task, lock};
use crate::uaccess::{import_iovec, iovec_from_user};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::ptrace::*;
use um_uapi::abi::signal::{CLD_TRAPPED, SI_KERNEL, SI_USER, Siginfo};
use um_uapi::{Errno, SysResult};

/// `CAP_SYS_PTRACE`.
const CAP_SYS_PTRACE: u32 = 19;
/// clone flags that matter here (include/uapi/linux/sched.h).
const CLONE_VFORK: u64 = 0x4000;
const CLONE_PTRACE: u64 = 0x2000;
const CLONE_UNTRACED: u64 = 0x0080_0000;

/// A task's ptrace state: whether and by whom it is traced, and its stop.
#[derive(Default)]
pub struct PtraceSlot {
    /// Fast check for the run loop: a tracer is attached.
    traced: AtomicBool,
    /// A seized tracee must trap (PTRACE_INTERRUPT, a seize of a stopped task, a seized
    /// clone child: Linux JOBCTL_TRAP_STOP); also makes blocking syscalls return.
    trap: AtomicBool,
    /// The last restart was PTRACE_SINGLESTEP (Linux TIF_SINGLESTEP).
    stepping: AtomicBool,
    /// The trap flag in the registers is ours, not the tracee's (Linux TIF_FORCED_TF): it is
    /// hidden from the tracer and cleared at the next stop.
    forced_tf: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    link: Option<Link>,
    stop: Option<Stop>,
    /// The traced thread has exited: its status, for the tracer's wait (a ptrace zombie).
    exit: Option<ExitStatus>,
    /// The real parent's notification of this (leader's) process exit waits for the tracer
    /// to reap the ptrace zombie (kernel/exit.c: the tracer sees the exit first).
    deferred_notify: bool,
}

/// The tracer relation (Linux `task->ptrace` flags, `ptrace_message`, `parent`).
struct Link {
    tracer: Weak<Process>,
    seized: bool,
    options: u32,
    /// The last restart was PTRACE_SYSCALL: syscall stops are on.
    syscall: bool,
    /// `ptrace_message` (GETEVENTMSG).
    eventmsg: u64,
    /// This task has taken part in the current group stop (Linux clears
    /// JOBCTL_STOP_PENDING once a task has stopped for it).
    group_done: bool,
    /// SIGCONT came during a seized trap: a LISTEN re-traps at once (JOBCTL_TRAP_NOTIFY).
    trap_notify: bool,
}

/// Why a tracee is stopped; the wait status's stop code follows from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    SyscallEnter,
    SyscallExit,
    /// Signal-delivery stop for this signal.
    Signal(u32),
    /// PTRACE_EVENT_* stop (fork, vfork, clone, exec, vfork-done, exit).
    Event(u32),
    /// Group stop of a non-seized tracee (GETSIGINFO: EINVAL).
    Group(u32),
    /// PTRACE_EVENT_STOP trap of a seized tracee: the stop signal in a group stop, SIGTRAP
    /// otherwise.
    Trap(u32),
}

/// How the tracer restarted the tracee.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    /// Signal to deliver (signal-delivery stop) or send (other stops); 0 for none.
    pub sig: u32,
    /// PTRACE_SINGLESTEP: trap after one instruction.
    pub step: bool,
}

/// A tracee in a ptrace-stop.
struct Stop {
    why: Why,
    /// The stop code: `status >> 8` of the wait status (`exit_code`).
    code: u32,
    regs: Regs,
    /// The FP image (`GuestThread::get_fpregs`), taken at the stop (None if the engine had
    /// none); written back at the restart if a tracer changed it.
    fp: Option<Vec<u8>>,
    fp_dirty: bool,
    info: Siginfo,
    reported: bool,
    resume: Option<Resume>,
    /// PTRACE_LISTEN: stays stopped, but a notification ends the stop.
    listening: bool,
}

impl PtraceSlot {
    /// Whether a tracer is attached.
    pub fn traced(&self) -> bool {
        self.traced.load(Ordering::Acquire)
    }

    /// Whether a seized trap is due (counts as a pending signal for interruptible sleeps).
    pub fn trap_pending(&self) -> bool {
        self.trap.load(Ordering::Acquire)
    }
}

/// Whether `task` may not stop (it is being killed).
fn killed(task: &Task) -> bool {
    let k = sigbit(sig::SIGKILL);
    task.dying()
        || lock(&task.pending).bits() & k != 0
        || lock(&task.process.shared_pending).bits() & k != 0
}

/// Whether a fatal signal is on its way to `task` (Linux `fatal_signal_pending`).
pub(crate) fn fatal_signal_pending(task: &Task) -> bool {
    killed(task)
}

/// Whether `task`'s tracer asked for event `ev` (Linux `ptrace_event_enabled`).
pub fn event_enabled(task: &Task, ev: u32) -> bool {
    task.ptrace.traced()
        && lock(&task.ptrace.inner)
            .link
            .as_ref()
            .is_some_and(|l| l.options & (1 << ev) != 0)
}

/// PTRACE_O_SUSPEND_SECCOMP: the tracer (a checkpoint/restore tool) turned the tracee's
/// seccomp off (Linux `PT_SUSPEND_SECCOMP`).
pub fn seccomp_suspended(task: &Task) -> bool {
    task.ptrace.traced()
        && lock(&task.ptrace.inner)
            .link
            .as_ref()
            .is_some_and(|l| l.options & PTRACE_O_SUSPEND_SECCOMP != 0)
}

/// The tracer of `task`, if any.
fn tracer_of(task: &Task) -> Option<Arc<Process>> {
    lock(&task.ptrace.inner)
        .link
        .as_ref()
        .and_then(|l| l.tracer.upgrade())
}

/// Tells the tracer a tracee changed state (kernel/signal.c `do_notify_parent_cldstop` with
/// `for_ptracer`, and the wakeup of its wait).
fn notify_tracer(k: &Kernel, task: &Task, tracer: &Arc<Process>, code: i32, status: i32) {
    let act = lock(&tracer.sigactions)[(sig::SIGCHLD - 1) as usize];
    if act.flags & um_uapi::abi::signal::SA_NOCLDSTOP == 0 || code != CLD_TRAPPED {
        let uid = lock(&task.process.creds).uid;
        let pid = task.pids.nr_in(tracer.pids.ns()) as i32;
        sig::send_to_process(k, tracer, Siginfo::chld(code, pid, uid, status, 0, 0));
    }
    tracer.child_wait.wake_all();
}

/// The ptrace-stop itself (kernel/signal.c `ptrace_stop`): parks the registers, tells the
/// tracer, sleeps until restarted, detached or killed. `None` if not traced or being killed
/// (the registers are then unchanged); else the restart and the (possibly changed) siginfo.
fn stop(
    k: &Kernel,
    task: &Task,
    th: &mut GuestThread,
    why: Why,
    code: u32,
    info: Siginfo,
) -> Option<(Resume, Siginfo)> {
    let tracer = {
        let mut g = lock(&task.ptrace.inner);
        let tracer = g.link.as_ref()?.tracer.upgrade()?;
        if killed(task) {
            return None;
        }
        // A trap flag set for PTRACE_SINGLESTEP is not the tracee's: the tracer does not see
        // it (arch/x86/kernel/ptrace.c `get_flags`), and it is off unless the restart asks
        // again (`user_disable_single_step`).
        let mut regs = th.regs;
        if task.ptrace.forced_tf.swap(false, Ordering::AcqRel) {
            crate::arch::set_single_step(&mut regs, false);
        }
        g.stop = Some(Stop {
            why,
            code,
            regs,
            fp: th.get_fpregs().ok(),
            fp_dirty: false,
            info,
            reported: false,
            resume: None,
            listening: false,
        });
        tracer
    };
    notify_tracer(k, task, &tracer, CLD_TRAPPED, code as i32);
    loop {
        task.waker.reset();
        {
            let mut g = lock(&task.ptrace.inner);
            let gone = g.link.is_none();
            let resumed = g.stop.as_ref().is_none_or(|s| s.resume.is_some());
            if gone || resumed || killed(task) {
                let Some(s) = g.stop.take() else {
                    return Some((Resume::default(), info));
                };
                th.regs = s.regs;
                if let Some(fp) = s.fp.as_ref().filter(|_| s.fp_dirty)
                    && let Err(e) = th.set_fpregs(fp)
                {
                    log::warn!("ptrace: pid {}: FP registers not set: {e}", task.tid);
                }
                let r = s.resume.unwrap_or_default();
                // arch/x86/kernel/step.c `enable_single_step`: TF in the saved context; a
                // TF the tracee had set itself stays its own.
                task.ptrace.stepping.store(r.step, Ordering::Release);
                if r.step && !crate::arch::set_single_step(&mut th.regs, true) {
                    task.ptrace.forced_tf.store(true, Ordering::Release);
                }
                return Some((r, s.info));
            }
        }
        task.waker.sleep(None);
    }
}

/// After a stop other than a signal-delivery stop, the restart's signal is sent to the
/// tracee (kernel/signal.c `ptrace_report_syscall`/`ptrace_do_notify` callers: `send_sig`).
fn send_resume_signal(task: &Arc<Task>, r: Resume) {
    if r.sig != 0 {
        sig::send_to_task(task, Siginfo::kill(r.sig, SI_KERNEL, 0, 0));
    }
}

/// What the syscall path does after the entry stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enter {
    /// Run the syscall in the (possibly changed) registers.
    Run,
    /// The tracer cancelled it (number -1) or the tracee is being killed: the return value
    /// register holds the result.
    Skip,
}

/// The stop both syscall stops make (`ptrace_report_syscall`): `None` when the tracer did not
/// restart with PTRACE_SYSCALL; else the tracer's resume (`None` if none came) and the
/// registers from before the stop, whose syscall view the tracer saw and may have changed.
fn syscall_stop(
    k: &Kernel,
    task: &Task,
    th: &mut GuestThread,
    exit: bool,
) -> Option<(Option<(Resume, Siginfo)>, Regs)> {
    let (why, info) = if exit {
        (Why::SyscallExit, PTRACE_SYSCALL_INFO_EXIT)
    } else {
        (Why::SyscallEnter, PTRACE_SYSCALL_INFO_ENTRY)
    };
    let sysgood = {
        let mut g = lock(&task.ptrace.inner);
        let l = g.link.as_mut().filter(|l| l.syscall)?;
        l.eventmsg = u64::from(info);
        l.options & PTRACE_O_TRACESYSGOOD != 0
    };
    let saved = th.regs;
    crate::arch::ptrace_syscall_regs(&mut th.regs, exit);
    let code = sig::SIGTRAP | if sysgood { 0x80 } else { 0 };
    let r = stop(
        k,
        task,
        th,
        why,
        code,
        Siginfo::new(sig::SIGTRAP, code as i32),
    );
    crate::arch::ptrace_syscall_restore(&mut th.regs, &saved);
    Some((r, saved))
}

/// Syscall-entry stop (`ptrace_report_syscall_entry`), if the tracer restarted with
/// PTRACE_SYSCALL.
pub fn syscall_enter(k: &Kernel, task: &Arc<Task>, th: &mut GuestThread) -> Enter {
    let Some((r, saved)) = syscall_stop(k, task, th, false) else {
        return Enter::Run;
    };
    let Some((r, _)) = r else {
        if killed(task) {
            return Enter::Skip;
        }
        th.regs = saved;
        return Enter::Run;
    };
    send_resume_signal(task, r);
    if killed(task) || th.regs.syscall_nr() as i64 == -1 {
        return Enter::Skip;
    }
    Enter::Run
}

/// Syscall-exit stop (`ptrace_report_syscall_exit`).
pub fn syscall_exit(k: &Kernel, task: &Arc<Task>, th: &mut GuestThread) {
    if let Some((Some((r, _)), _)) = syscall_stop(k, task, th, true) {
        send_resume_signal(task, r);
    }
}

/// After a syscall made while single-stepping: the step's SIGTRAP now, for the caller to
/// force (kernel/entry/common.c `syscall_exit_work` → `ptrace_report_syscall_exit` with
/// `step`, x86 `user_single_step_report`: SIGTRAP with TRAP_BRKPT); the syscall-exit stop is
/// not made then. Without it the trap would come one instruction later.
pub fn syscall_step(task: &Task, th: &mut GuestThread) -> Option<Siginfo> {
    if !task.ptrace.traced()
        || !task.ptrace.stepping.load(Ordering::Acquire)
        || !task.ptrace.forced_tf.swap(false, Ordering::AcqRel)
    {
        return None;
    }
    crate::arch::set_single_step(&mut th.regs, false);
    Some(Siginfo::fault(
        sig::SIGTRAP,
        um_uapi::abi::signal::TRAP_BRKPT,
        th.regs.pc(),
    ))
}

/// Before a signal handler's frame is written (arch/x86/kernel/signal.c `handle_signal`):
/// a single-stepped thread has the step turned off (`user_disable_single_step`), so the frame
/// saves the tracee's own flags, not our TF (else its sigreturn would trap again). Returns
/// whether it was stepping, for [`signal_delivered`].
pub fn signal_frame_step(task: &Task, th: &mut GuestThread) -> bool {
    if !task.ptrace.traced() || !task.ptrace.stepping.swap(false, Ordering::AcqRel) {
        return false;
    }
    if task.ptrace.forced_tf.swap(false, Ordering::AcqRel) {
        crate::arch::set_single_step(&mut th.regs, false);
    }
    true
}

/// The handler's frame is set up (kernel/signal.c `signal_delivered`): a thread that was
/// single-stepped stops now, at the handler's first instruction, with SIGTRAP
/// (`ptrace_notify(SIGTRAP, 0)`: wait status code SIGTRAP, si_code SIGTRAP), so a debugger
/// stepping into a signal keeps control.
pub fn signal_delivered(k: &Kernel, task: &Arc<Task>, th: &mut GuestThread, stepping: bool) {
    if !stepping || !task.ptrace.traced() {
        return;
    }
    let info = Siginfo::kill(
        sig::SIGTRAP,
        sig::SIGTRAP as i32,
        task.pids.own() as i32,
        lock(&task.process.creds).uid,
    );
    if let Some((r, _)) = stop(k, task, th, Why::Event(0), sig::SIGTRAP, info) {
        send_resume_signal(task, r);
    }
}

/// An event stop (`ptrace_event`): `ev` with message `msg`, if the tracer asked for it.
/// PTRACE_EVENT_STOP traps go through [`jobctl`].
pub fn event_stop(k: &Kernel, task: &Arc<Task>, th: &mut GuestThread, ev: u32, msg: u64) {
    {
        let mut g = lock(&task.ptrace.inner);
        match g.link.as_mut() {
            Some(l) if l.options & (1 << ev) != 0 => l.eventmsg = msg,
            _ => return,
        }
    }
    let code = sig::SIGTRAP | (ev << 8);
    let info = Siginfo::kill(sig::SIGTRAP, code as i32, task.pids.own() as i32, 0);
    if let Some((r, _)) = stop(k, task, th, Why::Event(ev), code, info) {
        send_resume_signal(task, r);
    }
}

/// After a successful execve (fs/exec.c `exec_binprm`): PTRACE_EVENT_EXEC, or for a plain
/// (not seized) tracee without the option, a SIGTRAP.
pub fn exec_event(k: &Kernel, task: &Arc<Task>, th: &mut GuestThread) {
    if !task.ptrace.traced() {
        return;
    }
    let (opt, seized) = {
        let g = lock(&task.ptrace.inner);
        match g.link.as_ref() {
            Some(l) => (l.options & PTRACE_O_TRACEEXEC != 0, l.seized),
            None => return,
        }
    };
    if opt {
        let tid = tracer_of(task).map_or(0, |t| task.pids.nr_in(t.pids.ns()));
        event_stop(k, task, th, PTRACE_EVENT_EXEC, u64::from(tid));
    } else if !seized {
        sig::send_to_task(task, Siginfo::kill(sig::SIGTRAP, SI_USER, 0, 0));
    }
}

/// A signal dequeued for delivery (kernel/signal.c `ptrace_signal`): the signal-delivery
/// stop. Returns the signal to deliver (the tracer may have changed or cancelled it).
pub fn signal_stop(
    k: &Kernel,
    task: &Arc<Task>,
    th: &mut GuestThread,
    info: Siginfo,
) -> Option<Siginfo> {
    let signo = info.si_signo as u32;
    if !task.ptrace.traced() || signo == sig::SIGKILL {
        return Some(info);
    }
    let tracer = tracer_of(task);
    let Some((r, new_info)) = stop(k, task, th, Why::Signal(signo), signo, info) else {
        // Being killed: SIGKILL is next anyway. Not traced after all: deliver.
        return (!killed(task)).then_some(info);
    };
    if r.sig == 0 {
        return None;
    }
    let mut out = new_info;
    if r.sig != new_info.si_signo as u32 {
        // "If the debugger wanted something specific in the siginfo structure then it should
        // have updated *info via PTRACE_SETSIGINFO" (ptrace_signal).
        let (pid, uid) = tracer.as_ref().map_or((0, 0), |t| {
            (
                crate::pidns::tgid_seen_by(t, &task.process) as i32,
                lock(&t.creds).uid,
            )
        });
        out = Siginfo::kill(r.sig, SI_USER, pid, uid);
    }
    // A signal the thread now blocks is queued again.
    if *lock(&task.sigmask) & sigbit(r.sig) != 0 {
        let _ = lock(&task.pending).push(out);
        return None;
    }
    Some(out)
}

/// Job-control traps at signal delivery (kernel/signal.c `do_jobctl_trap`, `do_signal_stop`
/// for a traced task): a seized trap that is due, or this task's report of a group stop.
/// Returns true if the task stopped (the caller looks at its signals again).
pub fn jobctl(k: &Kernel, task: &Arc<Task>, th: &mut GuestThread) -> bool {
    if !task.ptrace.traced() {
        return false;
    }
    let job = match *lock(&task.process.job) {
        JobState::Stopped { sig, .. } => Some(sig),
        _ => None,
    };
    let why = {
        let mut g = lock(&task.ptrace.inner);
        let Some(l) = g.link.as_mut() else {
            return false;
        };
        if job.is_none() {
            l.group_done = false;
        }
        let trap = task.ptrace.trap.swap(false, Ordering::AcqRel);
        if trap && l.seized {
            if job.is_some() {
                l.group_done = true;
            }
            Why::Trap(job.unwrap_or(sig::SIGTRAP))
        } else if let Some(s) = job.filter(|_| !l.group_done) {
            l.group_done = true;
            if l.seized {
                Why::Trap(s)
            } else {
                Why::Group(s)
            }
        } else {
            return false;
        }
    };
    let (code, info) = match why {
        Why::Trap(s) => {
            let code = s | (PTRACE_EVENT_STOP << 8);
            (code, Siginfo::kill(s, code as i32, 0, 0))
        }
        Why::Group(s) => (s, Siginfo::default()),
        _ => unreachable!("jobctl makes only traps and group stops"),
    };
    if let Some((r, _)) = stop(k, task, th, why, code, info) {
        send_resume_signal(task, r);
    }
    true
}

/// Whether a job-stopped traced task runs anyway: its tracer restarted it from its group
/// stop (a ptrace restart overrides the group stop for that task).
pub fn released_from_group_stop(task: &Task) -> bool {
    task.ptrace.traced()
        && lock(&task.ptrace.inner)
            .link
            .as_ref()
            .is_some_and(|l| l.group_done)
}

/// SIGCONT ended `p`'s group stop: listening seized tracees re-trap (`ptrace_trap_notify`).
pub fn on_continue(p: &Process) {
    for t in lock(&p.threads).iter().filter_map(Weak::upgrade) {
        if !t.ptrace.traced() {
            continue;
        }
        let mut g = lock(&t.ptrace.inner);
        let Some(l) = g.link.as_mut() else { continue };
        if !l.seized {
            continue;
        }
        l.trap_notify = true;
        if let Some(s) = g.stop.as_mut().filter(|s| s.listening) {
            s.resume = Some(Resume::default());
            s.listening = false;
            t.ptrace.trap.store(true, Ordering::Release);
            if let Some(l) = g.link.as_mut() {
                l.trap_notify = false;
            }
            drop(g);
            t.waker.wake();
        }
    }
}

/// A new task made by clone (kernel/fork.c `kernel_clone`, `ptrace_init_task`): traced too if
/// its creator's tracer asked for this kind of child (or CLONE_PTRACE). Returns the event the
/// creator reports ([`event_stop`]), if any.
pub fn on_clone(parent: &Task, child: &Arc<Task>, flags: u64, exit_signal: u64) -> Option<u32> {
    if !parent.ptrace.traced() {
        return None;
    }
    let g = lock(&parent.ptrace.inner);
    let l = g.link.as_ref()?;
    let tracer = l.tracer.upgrade()?;
    let mut ev = if flags & CLONE_UNTRACED != 0 {
        0
    } else if flags & CLONE_VFORK != 0 {
        PTRACE_EVENT_VFORK
    } else if exit_signal != u64::from(sig::SIGCHLD) {
        PTRACE_EVENT_CLONE
    } else {
        PTRACE_EVENT_FORK
    };
    if ev != 0 && l.options & (1 << ev) == 0 {
        ev = 0;
    }
    if ev == 0 && flags & CLONE_PTRACE == 0 {
        return None;
    }
    let (seized, options) = (l.seized, l.options);
    drop(g);
    link(child, &tracer, seized, options);
    if seized {
        child.ptrace.trap.store(true, Ordering::Release);
    } else {
        let _ = lock(&child.pending).push(Siginfo::kill(sig::SIGSTOP, SI_KERNEL, 0, 0));
    }
    (ev != 0).then_some(ev)
}

/// Makes `tracer` the tracer of `t`.
fn link(t: &Arc<Task>, tracer: &Arc<Process>, seized: bool, options: u32) {
    let mut g = lock(&t.ptrace.inner);
    g.link = Some(Link {
        tracer: Arc::downgrade(tracer),
        seized,
        options,
        syscall: false,
        eventmsg: 0,
        group_done: false,
        trap_notify: false,
    });
    g.exit = None;
    g.deferred_notify = false;
    t.ptrace.traced.store(true, Ordering::Release);
    drop(g);
    let mut list = lock(&tracer.tracees);
    if !list.iter().any(|x| Arc::ptr_eq(x, t)) {
        list.push(t.clone());
    }
}

/// Ends the trace of `t` (`__ptrace_unlink`): a stopped tracee goes on with `sig`. Returns
/// whether the real parent's notification of its exit was waiting for the tracer.
fn unlink(t: &Arc<Task>, tracer: Option<&Arc<Process>>, sig: u32) -> bool {
    let mut g = lock(&t.ptrace.inner);
    g.link = None;
    t.ptrace.traced.store(false, Ordering::Release);
    t.ptrace.trap.store(false, Ordering::Release);
    if let Some(s) = g.stop.as_mut()
        && s.resume.is_none()
    {
        s.resume = Some(Resume { sig, step: false });
    }
    g.exit = None;
    let deferred = std::mem::take(&mut g.deferred_notify);
    drop(g);
    t.waker.wake();
    if let Some(tr) = tracer {
        lock(&tr.tracees).retain(|x| !Arc::ptr_eq(x, t));
    }
    deferred
}

/// PTRACE_EVENT_EXIT, before the thread lets go of anything (kernel/exit.c `do_exit`).
pub fn exit_event(k: &Kernel, task: &Arc<Task>, th: &mut GuestThread, st: ExitStatus) {
    if task.ptrace.traced() {
        event_stop(k, task, th, PTRACE_EVENT_EXIT, st.wstatus() as u64);
    }
}

/// A traced thread that is not its process's leader has exited: a ptrace zombie for the
/// tracer's wait (kernel/exit.c `exit_notify` with a tracer).
pub fn thread_exited(k: &Kernel, task: &Arc<Task>, st: ExitStatus) {
    if !task.ptrace.traced() {
        return;
    }
    let Some(tracer) = tracer_of(task) else {
        return;
    };
    lock(&task.ptrace.inner).exit = Some(st);
    notify_exit(k, task, &tracer, st);
}

fn notify_exit(k: &Kernel, task: &Task, tracer: &Arc<Process>, st: ExitStatus) {
    let (code, status) = match st {
        ExitStatus::Exited(c) => (1, c),
        ExitStatus::Signaled(s) => (2, s),
        ExitStatus::Dumped(s) => (3, s),
    };
    notify_tracer(k, task, tracer, code, status);
}

/// The process of a traced leader has ended. A tracer that is the real parent learns of it
/// through its children (the trace just ends); another tracer sees it first, and the real
/// parent's notification waits for that (returns true: deferred, see [`wait_scan`]).
pub fn process_exited(k: &Kernel, p: &Arc<Process>, st: ExitStatus) -> bool {
    let Some(leader) = k.tasks.get(p.pid).filter(|t| t.ptrace.traced()) else {
        return false;
    };
    let Some(tracer) = tracer_of(&leader) else {
        return false;
    };
    let parent = lock(&p.parent).upgrade();
    if parent.as_ref().is_some_and(|pp| Arc::ptr_eq(pp, &tracer)) {
        unlink(&leader, Some(&tracer), 0);
        return false;
    }
    {
        let mut g = lock(&leader.ptrace.inner);
        g.exit = Some(st);
        g.deferred_notify = true;
    }
    notify_exit(k, &leader, &tracer, st);
    true
}

/// The tracer process `p` is gone (kernel/ptrace.c `exit_ptrace`): its tracees are detached,
/// or killed if they asked for it (PTRACE_O_EXITKILL).
pub fn tracer_exited(k: &Arc<Kernel>, p: &Arc<Process>) {
    let list = std::mem::take(&mut *lock(&p.tracees));
    for t in list {
        let kill = lock(&t.ptrace.inner)
            .link
            .as_ref()
            .is_some_and(|l| l.options & PTRACE_O_EXITKILL != 0);
        if kill {
            sig::send_to_process(k, &t.process, Siginfo::kill(sig::SIGKILL, SI_KERNEL, 0, 0));
        }
        if unlink(&t, None, 0) {
            crate::run::notify_parent_late(k, &t.process);
        }
    }
}

/// For `/proc/PID/status` TracerPid: the tracer's kernel-wide pid, 0 if none.
pub fn tracer_pid(task: &Task) -> u32 {
    tracer_of(task).map_or(0, |t| t.pid)
}

/// Whether the task is in a ptrace-stop (`/proc/PID/stat` state `t`).
pub fn is_stopped(task: &Task) -> bool {
    task.ptrace.traced()
        && lock(&task.ptrace.inner)
            .stop
            .as_ref()
            .is_some_and(|s| s.resume.is_none())
}

/// Whether `p`'s leader is traced by `tracer` (its stops are reported through the tracer's
/// tracee list, not as a child's job-control stop).
pub fn traced_by(k: &Kernel, p: &Process, tracer: &Arc<Process>) -> bool {
    k.tasks
        .get(p.pid)
        .filter(|t| t.ptrace.traced())
        .and_then(|t| tracer_of(&t))
        .is_some_and(|t| Arc::ptr_eq(&t, tracer))
}

/// What a tracer's wait found among its tracees.
pub struct Report {
    pub task: Arc<Task>,
    /// The wait status.
    pub status: i32,
    /// waitid's si_code and si_status.
    pub code: i32,
    pub si_status: i32,
}

/// The tracer's wait over its tracees (kernel/exit.c `ptrace_do_wait`): a ptrace-stop not yet
/// reported (no WUNTRACED needed) or a ptrace zombie (with `exited`, reaped unless `nowait`).
/// `pick` says which tracees the wait is for; `wall`/`wclone` are `__WALL`/`__WCLONE` (a
/// thread that is not a leader counts as a clone child). Returns (any matched, report).
pub fn wait_scan(
    k: &Arc<Kernel>,
    me: &Arc<Process>,
    pick: impl Fn(&Task) -> bool,
    wall: bool,
    wclone: bool,
    exited: bool,
    nowait: bool,
) -> (bool, Option<Report>) {
    let list: Vec<Arc<Task>> = lock(&me.tracees).clone();
    let mut any = false;
    for t in list {
        let clone_child = t.tid != t.process.pid;
        if !wall && clone_child != wclone {
            continue;
        }
        if !pick(&t) {
            continue;
        }
        any = true;
        let mut g = lock(&t.ptrace.inner);
        if let Some(st) = g.exit.filter(|_| exited) {
            let (code, si_status) = match st {
                ExitStatus::Exited(c) => (1, c),
                ExitStatus::Signaled(s) => (2, s),
                ExitStatus::Dumped(s) => (3, s),
            };
            drop(g);
            if !nowait && unlink(&t, Some(me), 0) {
                crate::run::notify_parent_late(k, &t.process);
            }
            return (
                true,
                Some(Report {
                    task: t,
                    status: st.wstatus(),
                    code,
                    si_status,
                }),
            );
        }
        if let Some(s) = g.stop.as_mut()
            && !s.reported
            && s.resume.is_none()
        {
            if !nowait {
                s.reported = true;
            }
            let code = s.code;
            drop(g);
            return (
                true,
                Some(Report {
                    task: t,
                    status: ((code as i32) << 8) | 0x7f,
                    code: CLD_TRAPPED,
                    si_status: code as i32,
                }),
            );
        }
    }
    (any, None)
}

/// Whether `me` may read and write `target`'s memory through `/proc/PID/mem` (fs/proc/base.c
/// `proc_mem_open`, `mm_access` with PTRACE_MODE_ATTACH): its own, its tracer's, or what
/// [`may_attach`] allows.
pub fn may_access_mem(me: &Arc<Process>, target: &Arc<Process>) -> SysResult<()> {
    if Arc::ptr_eq(me, target) {
        return Ok(());
    }
    let traced_by_me = lock(&target.threads)
        .iter()
        .filter_map(Weak::upgrade)
        .any(|t| tracer_of(&t).is_some_and(|tr| Arc::ptr_eq(&tr, me)));
    if traced_by_me {
        return Ok(());
    }
    may_attach(me, target)
}

/// Linux `ptrace_may_access` (kernel/ptrace.c `__ptrace_may_access`) with `PTRACE_MODE_*_REALCREDS`
/// for the calls that borrow ptrace's check without tracing: the same thread group always
/// may; otherwise CAP_SYS_PTRACE, or the caller's real ids match every uid and gid of the
/// target's, and for `attach` (PTRACE_MODE_ATTACH: pidfd_getfd) also Yama's relational scope
/// ([`may_attach`]); `EPERM` otherwise. kcmp(2) uses PTRACE_MODE_READ (`attach` false).
pub fn may_access(me: &Arc<Process>, target: &Arc<Process>, attach: bool) -> SysResult<()> {
    if Arc::ptr_eq(me, target) {
        return Ok(());
    }
    if attach {
        return may_attach(me, target);
    }
    if me.capable(CAP_SYS_PTRACE) {
        return Ok(());
    }
    let mc = *lock(&me.creds);
    let tc = *lock(&target.creds);
    let ids_match = [tc.uid, tc.euid, tc.suid].iter().all(|&u| u == mc.uid)
        && [tc.gid, tc.egid, tc.sgid].iter().all(|&g| g == mc.gid);
    if ids_match { Ok(()) } else { Err(Errno::EPERM) }
}

/// Linux `__ptrace_may_access` for attach, with Yama's scope 1 (security/yama/yama_lsm.c
/// `YAMA_SCOPE_RELATIONAL`): the tracer has CAP_SYS_PTRACE, or it is an ancestor of the
/// target and its credentials match the target's (uids and gids).
fn may_attach(me: &Arc<Process>, target: &Arc<Process>) -> SysResult<()> {
    if me.capable(CAP_SYS_PTRACE) {
        return Ok(());
    }
    // One lock at a time (the two may be the same mutex).
    let mc = *lock(&me.creds);
    let tc = *lock(&target.creds);
    let ids_match = [tc.uid, tc.euid, tc.suid].iter().all(|&u| u == mc.uid)
        && [tc.gid, tc.egid, tc.sgid].iter().all(|&g| g == mc.gid);
    if !ids_match {
        return Err(Errno::EPERM);
    }
    let mut up = lock(&target.parent).upgrade();
    while let Some(a) = up {
        if Arc::ptr_eq(&a, me) {
            return Ok(());
        }
        if a.pid == 1 {
            break;
        }
        up = lock(&a.parent).upgrade();
    }
    Err(Errno::EPERM)
}

/// The largest valid signal number for a restart's data (`valid_signal`).
const NSIG: u64 = 64;

fn sys_ptrace(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (req, pid, addr, data) = (a[0], a[1] as i32, a[2], a[3]);
    let me = c.task.process.clone();
    if req == PTRACE_TRACEME {
        // ptrace_traceme: the parent becomes the tracer.
        if c.task.ptrace.traced() {
            return Err(Errno::EPERM);
        }
        let parent = lock(&me.parent).upgrade().ok_or(Errno::EPERM)?;
        link(c.task, &parent, false, 0);
        return Ok(0);
    }
    if pid <= 0 {
        return Err(Errno::ESRCH);
    }
    let t = c
        .kernel
        .tasks
        .find_task_vpid(c.task, pid as u32)
        .ok_or(Errno::ESRCH)?;
    if req == PTRACE_ATTACH || req == PTRACE_SEIZE {
        return attach(c, &t, req == PTRACE_SEIZE, addr, data);
    }
    if !tracer_of(&t).is_some_and(|tr| Arc::ptr_eq(&tr, &me)) {
        return Err(Errno::ESRCH);
    }
    match req {
        PTRACE_KILL => {
            sig::send_to_process(
                c.kernel,
                &t.process,
                Siginfo::kill(sig::SIGKILL, SI_KERNEL, 0, 0),
            );
            return Ok(0);
        }
        PTRACE_INTERRUPT => {
            let seized = lock(&t.ptrace.inner)
                .link
                .as_ref()
                .is_some_and(|l| l.seized);
            if !seized || addr != 0 || data != 0 {
                return Err(Errno::EIO);
            }
            t.ptrace.trap.store(true, Ordering::Release);
            t.kick();
            return Ok(0);
        }
        _ => {}
    }
    // ptrace_check_attach: the rest needs the tracee stopped.
    if !is_stopped(&t) {
        return Err(Errno::ESRCH);
    }
    let restart = |syscall: Option<bool>, listen: bool, step: bool| -> SysResult {
        if data > NSIG {
            return Err(Errno::EIO);
        }
        let mut g = lock(&t.ptrace.inner);
        let Inner { link, stop, .. } = &mut *g;
        let (Some(l), Some(s)) = (link.as_mut(), stop.as_mut()) else {
            return Err(Errno::ESRCH);
        };
        if listen {
            // ptrace_listen: only a seized tracee's group-stop trap.
            if !l.seized || !matches!(s.why, Why::Trap(sg) if sg != sig::SIGTRAP) {
                return Err(Errno::EIO);
            }
            if std::mem::take(&mut l.trap_notify) {
                s.resume = Some(Resume::default());
                t.ptrace.trap.store(true, Ordering::Release);
            } else {
                s.listening = true;
            }
        } else {
            if let Some(sc) = syscall {
                l.syscall = sc;
            }
            s.resume = Some(Resume {
                sig: data as u32,
                step,
            });
        }
        drop(g);
        t.waker.wake();
        Ok(0)
    };
    match req {
        PTRACE_PEEKTEXT | PTRACE_PEEKDATA => {
            let mut b = [0u8; 8];
            lock_mm(&t.mm())
                .read_bytes_force(addr, &mut b)
                .map_err(|_| Errno::EIO)?;
            c.write_bytes(data, &b)?;
            Ok(0)
        }
        PTRACE_POKETEXT | PTRACE_POKEDATA => {
            lock_mm(&t.mm())
                .write_bytes_force(addr, &data.to_le_bytes())
                .map_err(|_| Errno::EIO)?;
            Ok(0)
        }
        PTRACE_PEEKUSR => {
            let v = with_stop(&t, |s| peek_user(&s.regs, addr))??;
            c.write_u64(data, v)?;
            Ok(0)
        }
        PTRACE_POKEUSR => with_stop(&t, |s| poke_user(&mut s.regs, addr, data))?,
        PTRACE_GETREGS if cfg!(target_arch = "x86_64") => {
            let b = with_stop(&t, |s| crate::arch::prstatus(&s.regs))?;
            c.write_bytes(data, &b)?;
            Ok(0)
        }
        PTRACE_SETREGS if cfg!(target_arch = "x86_64") => {
            let n = crate::arch::prstatus(&Regs::default()).len();
            let b = c.read_bytes(data, n)?;
            with_stop(&t, |s| crate::arch::set_prstatus(&mut s.regs, &b))??;
            Ok(0)
        }
        PTRACE_GETFPREGS if cfg!(target_arch = "x86_64") => {
            let b = with_stop(&t, |s| fp_get(s, NT_PRFPREG))??;
            c.write_bytes(data, &b)?;
            Ok(0)
        }
        PTRACE_SETFPREGS if cfg!(target_arch = "x86_64") => {
            let b = c.read_bytes(data, 512)?;
            with_stop(&t, |s| fp_set(s, NT_PRFPREG, &b))??;
            Ok(0)
        }
        PTRACE_GETREGSET | PTRACE_SETREGSET => regset(c, &t, req == PTRACE_SETREGSET, addr, data),
        PTRACE_GETSIGINFO => {
            let info = with_stop(&t, |s| match s.why {
                Why::Group(_) => Err(Errno::EINVAL),
                _ => Ok(s.info),
            })??;
            c.write_bytes(data, &info.as_bytes())?;
            Ok(0)
        }
        PTRACE_SETSIGINFO => {
            let b = c.read_bytes(data, 128)?;
            let info = Siginfo::from_bytes(&b).ok_or(Errno::EFAULT)?;
            with_stop(&t, |s| match s.why {
                Why::Group(_) => Err(Errno::EINVAL),
                _ => {
                    s.info = info;
                    Ok(0)
                }
            })?
        }
        PTRACE_PEEKSIGINFO => peek_siginfo(c, &t, addr, data),
        PTRACE_GETEVENTMSG => {
            let m = lock(&t.ptrace.inner)
                .link
                .as_ref()
                .map_or(0, |l| l.eventmsg);
            c.write_u64(data, m)?;
            Ok(0)
        }
        PTRACE_SETOPTIONS => {
            if data & !u64::from(PTRACE_O_MASK) != 0 {
                return Err(Errno::EINVAL);
            }
            // ptrace_setoptions: suspending the tracee's seccomp needs CAP_SYS_ADMIN and a
            // tracer without seccomp of its own.
            if data & u64::from(PTRACE_O_SUSPEND_SECCOMP) != 0
                && (!lock(&me.caps).has(um_uapi::abi::capability::CAP_SYS_ADMIN)
                    || c.task.seccomp.mode() != 0)
            {
                return Err(Errno::EPERM);
            }
            if let Some(l) = lock(&t.ptrace.inner).link.as_mut() {
                l.options = data as u32;
            }
            Ok(0)
        }
        PTRACE_GETSIGMASK | PTRACE_SETSIGMASK => {
            if addr != 8 {
                return Err(Errno::EINVAL);
            }
            if req == PTRACE_GETSIGMASK {
                let m = *lock(&t.sigmask);
                c.write_u64(data, m)?;
            } else {
                let m = c.read_u64(data)?;
                *lock(&t.sigmask) = m & !sig::UNBLOCKABLE;
            }
            Ok(0)
        }
        PTRACE_GET_SYSCALL_INFO => {
            let msg = lock(&t.ptrace.inner)
                .link
                .as_ref()
                .map_or(0, |l| l.eventmsg);
            let (op, bytes, len) = with_stop(&t, |s| syscall_info(s, msg))?;
            let _ = op;
            let n = (addr as usize).min(len);
            c.write_bytes(data, &bytes[..n])?;
            Ok(len as u64)
        }
        um_uapi::abi::seccomp::PTRACE_SECCOMP_GET_FILTER => {
            crate::seccomp::ptrace_get_filter(c, &t, addr, data)
        }
        PTRACE_CONT => restart(Some(false), false, false),
        PTRACE_SYSCALL => restart(Some(true), false, false),
        // kernel/ptrace.c ptrace_resume: a step turns syscall stops off.
        PTRACE_SINGLESTEP if crate::arch::HAS_SINGLE_STEP => restart(Some(false), false, true),
        PTRACE_LISTEN => restart(None, true, false),
        PTRACE_DETACH => {
            if data > NSIG {
                return Err(Errno::EIO);
            }
            if unlink(&t, Some(&me), data as u32) {
                crate::run::notify_parent_late(c.kernel, &t.process);
            }
            Ok(0)
        }
        _ => Err(Errno::EIO),
    }
}

/// PTRACE_PEEKSIGINFO (kernel/ptrace.c `ptrace_peek_siginfo`): `addr` is a
/// `struct ptrace_peeksiginfo_args { u64 off; u32 flags; s32 nr; }`; copies up to `nr`
/// queued siginfos, from the `off`-th, of the thread's queue (or with
/// PTRACE_PEEKSIGINFO_SHARED the process's) to `data`, 128 bytes each, and returns how many
/// it copied; EINVAL for unknown flags or a negative `off` or `nr`, EFAULT if the first copy
/// faults (a later fault ends the copy early).
fn peek_siginfo(c: &mut SyscallCtx<'_>, t: &Task, addr: u64, data: u64) -> SysResult {
    let b = c.read_bytes(addr, 16)?;
    let off = u64::from_le_bytes(b[0..8].try_into().map_err(|_| Errno::EFAULT)?);
    let flags = u32::from_le_bytes(b[8..12].try_into().map_err(|_| Errno::EFAULT)?);
    let nr = i32::from_le_bytes(b[12..16].try_into().map_err(|_| Errno::EFAULT)?);
    if flags & !PTRACE_PEEKSIGINFO_SHARED != 0 || nr < 0 || (off as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let infos: Vec<Siginfo> = {
        let q = if flags & PTRACE_PEEKSIGINFO_SHARED != 0 {
            lock(&t.process.shared_pending)
        } else {
            lock(&t.pending)
        };
        q.infos()
            .skip(off as usize)
            .take(nr as usize)
            .copied()
            .collect()
    };
    let mut done = 0u64;
    for info in &infos {
        if let Err(e) = c.write_bytes(data + done * 128, &info.as_bytes()) {
            return if done > 0 { Ok(done) } else { Err(e) };
        }
        done += 1;
    }
    Ok(done)
}

/// Runs `f` on the tracee's stop (ESRCH if it is not stopped any more).
fn with_stop<R>(t: &Task, f: impl FnOnce(&mut Stop) -> R) -> SysResult<R> {
    let mut g = lock(&t.ptrace.inner);
    let s = g.stop.as_mut().filter(|s| s.resume.is_none());
    s.map(f).ok_or(Errno::ESRCH)
}

/// `offsetof(struct user, u_debugreg)` and `sizeof(struct user)` on x86_64
/// (arch/x86/include/asm/user_64.h).
const USER_DEBUGREG: u64 = 848;
const USER_SIZE: u64 = 912;

/// PTRACE_PEEKUSR (arch/x86/kernel/ptrace.c `arch_ptrace`): the registers at the start of
/// `struct user`, the debug registers (all zero: none are offered), zero elsewhere.
fn peek_user(regs: &Regs, addr: u64) -> SysResult<u64> {
    if !cfg!(target_arch = "x86_64") || addr & 7 != 0 || addr >= USER_SIZE - 3 {
        return Err(Errno::EIO);
    }
    let b = crate::arch::prstatus(regs);
    let off = addr as usize;
    if off + 8 <= b.len() {
        return Ok(u64::from_le_bytes(
            b[off..off + 8].try_into().map_err(|_| Errno::EIO)?,
        ));
    }
    Ok(0)
}

/// PTRACE_POKEUSR: a register (with SETREGS' checks); a debug register only to 0 (hardware
/// breakpoints are refused, so debuggers fall back to software ones).
fn poke_user(regs: &mut Regs, addr: u64, v: u64) -> SysResult {
    if !cfg!(target_arch = "x86_64") || addr & 7 != 0 || addr >= USER_SIZE - 3 {
        return Err(Errno::EIO);
    }
    let n = crate::arch::prstatus(regs).len() as u64;
    if addr < n {
        let mut b = crate::arch::prstatus(regs);
        b[addr as usize..addr as usize + 8].copy_from_slice(&v.to_le_bytes());
        crate::arch::set_prstatus(regs, &b)?;
        return Ok(0);
    }
    if addr >= USER_DEBUGREG && v != 0 {
        return Err(Errno::EIO);
    }
    Ok(0)
}

/// PTRACE_GETREGSET/SETREGSET (kernel/ptrace.c `ptrace_regset`): `data` is a `struct iovec`
/// whose length is cut to the regset's size and written back.
fn regset(c: &mut SyscallCtx<'_>, t: &Task, set: bool, note: u64, iov: u64) -> SysResult {
    let base = c.read_u64(iov)?;
    let len = c.read_u64(iov + 8)? as usize;
    let fp = note == NT_PRFPREG || (cfg!(target_arch = "x86_64") && note == NT_X86_XSTATE);
    let cur = with_stop(t, |s| {
        if fp {
            fp_get(s, note)
        } else {
            regset_bytes(&s.regs, note)
        }
    })??;
    if len % 4 != 0 || (note == NT_PRSTATUS && len % 8 != 0) {
        return Err(Errno::EINVAL);
    }
    let n = len.min(cur.len());
    if set {
        let b = c.read_bytes(base, n)?;
        with_stop(t, |s| {
            if fp {
                fp_set(s, note, &b)
            } else {
                set_regset(&mut s.regs, note, &b)
            }
        })??;
    } else {
        c.write_bytes(base, &cur[..n])?;
    }
    c.write_u64(iov + 8, n as u64)?;
    Ok(0)
}

/// The FP regset `note` of a stopped tracee (EIO if the engine gave no FP state).
fn fp_get(s: &Stop, note: u64) -> SysResult<Vec<u8>> {
    crate::arch::fp_regset(s.fp.as_deref().ok_or(Errno::EIO)?, note)
}

/// Changes the FP regset `note` of a stopped tracee; the restart writes it back.
fn fp_set(s: &mut Stop, note: u64, b: &[u8]) -> SysResult<()> {
    crate::arch::set_fp_regset(s.fp.as_deref_mut().ok_or(Errno::EIO)?, note, b)?;
    s.fp_dirty = true;
    Ok(())
}

/// The regsets offered: NT_PRSTATUS on both arches; arm64 also NT_ARM_TLS and
/// NT_ARM_SYSTEM_CALL (how an arm64 tracer reads and changes the syscall number).
fn regset_bytes(regs: &Regs, note: u64) -> SysResult<Vec<u8>> {
    match note {
        NT_PRSTATUS => Ok(crate::arch::prstatus(regs)),
        NT_ARM_TLS if cfg!(target_arch = "aarch64") => Ok(regs.tls().to_le_bytes().to_vec()),
        NT_ARM_SYSTEM_CALL if cfg!(target_arch = "aarch64") => {
            Ok((regs.syscall_nr() as i32).to_le_bytes().to_vec())
        }
        _ => Err(Errno::EINVAL),
    }
}

fn set_regset(regs: &mut Regs, note: u64, b: &[u8]) -> SysResult<()> {
    match note {
        NT_PRSTATUS => crate::arch::set_prstatus(regs, b),
        NT_ARM_TLS if cfg!(target_arch = "aarch64") && b.len() == 8 => {
            regs.set_tls(u64::from_le_bytes(b.try_into().map_err(|_| Errno::EINVAL)?));
            Ok(())
        }
        NT_ARM_SYSTEM_CALL if cfg!(target_arch = "aarch64") && b.len() == 4 => {
            let nr = i32::from_le_bytes(b.try_into().map_err(|_| Errno::EINVAL)?);
            regs.set_syscall_nr(nr as i64 as u64);
            Ok(())
        }
        _ => Err(Errno::EINVAL),
    }
}

/// PTRACE_GET_SYSCALL_INFO (kernel/ptrace.c `ptrace_get_syscall_info`): entry (number and
/// arguments) at an entry stop, exit (value, error flag) at an exit stop, only the header
/// elsewhere. Returns (op, bytes, size the op defines).
fn syscall_info(s: &Stop, eventmsg: u64) -> (u8, [u8; 88], usize) {
    let r = &s.regs;
    let (ip, sp) = (r.pc(), r.sp());
    match s.why {
        Why::SyscallEnter => {
            let mut w = vec![r.syscall_nr()];
            w.extend_from_slice(&r.syscall_args());
            let op = PTRACE_SYSCALL_INFO_ENTRY;
            let b = syscall_info_bytes(op, crate::arch::AUDIT_ARCH, ip, sp, &w);
            (op, b, SYSCALL_INFO_ENTRY_SIZE)
        }
        Why::SyscallExit => {
            let v = r.return_value();
            let err = (v as i64) < 0 && (v as i64) >= -4095;
            let op = PTRACE_SYSCALL_INFO_EXIT;
            let b = syscall_info_bytes(op, crate::arch::AUDIT_ARCH, ip, sp, &[v, u64::from(err)]);
            (op, b, SYSCALL_INFO_EXIT_SIZE)
        }
        // ptrace_get_syscall_info_seccomp: the call as at entry and the filter's data.
        Why::Event(PTRACE_EVENT_SECCOMP) => {
            let mut w = vec![r.syscall_nr()];
            w.extend_from_slice(&r.syscall_args());
            w.push(eventmsg & 0xffff_ffff);
            let op = PTRACE_SYSCALL_INFO_SECCOMP;
            let b = syscall_info_bytes(op, crate::arch::AUDIT_ARCH, ip, sp, &w);
            (op, b, SYSCALL_INFO_SECCOMP_SIZE)
        }
        _ => {
            let op = PTRACE_SYSCALL_INFO_NONE;
            let b = syscall_info_bytes(op, crate::arch::AUDIT_ARCH, ip, sp, &[]);
            (op, b, SYSCALL_INFO_HEADER)
        }
    }
}

/// PTRACE_ATTACH and PTRACE_SEIZE (kernel/ptrace.c `ptrace_attach`).
fn attach(c: &mut SyscallCtx<'_>, t: &Arc<Task>, seize: bool, addr: u64, data: u64) -> SysResult {
    let me = c.task.process.clone();
    if seize {
        if addr != 0 {
            return Err(Errno::EIO);
        }
        if data & !u64::from(PTRACE_O_MASK) != 0 {
            return Err(Errno::EINVAL);
        }
    }
    if Arc::ptr_eq(&t.process, &me) || t.dying() || t.exited.load(Ordering::Acquire) {
        return Err(Errno::EPERM);
    }
    may_attach(&me, &t.process)?;
    if t.ptrace.traced() {
        return Err(Errno::EPERM);
    }
    link(t, &me, seize, if seize { data as u32 } else { 0 });
    let job_stopped = matches!(*lock(&t.process.job), JobState::Stopped { .. });
    if seize {
        if job_stopped {
            t.ptrace.trap.store(true, Ordering::Release);
        }
        t.kick();
    } else {
        sig::send_to_task(t, Siginfo::kill(sig::SIGSTOP, SI_KERNEL, 0, 0));
    }
    Ok(0)
}

/// process_vm_readv/writev (mm/process_vm_access.c): copies between the caller's iovecs and
/// another process's, with ptrace's attach check (`mm_access`, PTRACE_MODE_ATTACH_REALCREDS);
/// a partial transfer returns what was copied, nothing copied the error.
fn process_vm(c: &mut SyscallCtx<'_>, a: [u64; 6], write: bool) -> SysResult {
    let (pid, lvec, lcnt, rvec, rcnt, flags) = (a[0] as i32, a[1], a[2], a[3], a[4], a[5]);
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    // `process_vm_rw`: the local vector is the caller's (`import_iovec`: access_ok, shortened
    // to MAX_RW_COUNT) and nothing to copy ends the call before the remote one is read.
    let local = import_iovec(c, lvec, lcnt)?;
    if local.total == 0 {
        return Ok(0);
    }
    let local: Vec<(u64, u64)> = local.segs.iter().map(|s| (s.base, s.len)).collect();
    let remote = iovec_from_user(c, rvec, rcnt)?;
    let remote = remote.iter().map(|s| (s.base, s.len));
    if pid <= 0 {
        return Err(Errno::ESRCH);
    }
    let t = c
        .kernel
        .tasks
        .find_task_vpid(c.task, pid as u32)
        .ok_or(Errno::ESRCH)?;
    let me = c.task.process.clone();
    if !Arc::ptr_eq(&t.process, &me) && !tracer_of(&t).is_some_and(|tr| Arc::ptr_eq(&tr, &me)) {
        may_attach(&me, &t.process)?;
    }
    let rmm = t.mm();
    let mut done = 0u64;
    let mut li = local.into_iter().filter(|v| v.1 > 0);
    let mut cur = li.next();
    let mut off = 0u64;
    for (rbase, rlen) in remote.filter(|v| v.1 > 0) {
        let mut roff = 0u64;
        while roff < rlen {
            let Some((lbase, llen)) = cur else {
                return Ok(done);
            };
            let n = (llen - off).min(rlen - roff).min(1 << 20);
            let mut buf = vec![0u8; n as usize];
            let r = if write {
                c.read_bytes(lbase + off, n as usize).and_then(|b| {
                    buf = b;
                    lock_mm(&rmm).write_bytes(rbase + roff, &buf)
                })
            } else {
                // The remote guard must be gone before the local write: the remote address
                // space is the caller's own when it names itself or a CLONE_VM sibling.
                let r = lock_mm(&rmm).read_bytes(rbase + roff, &mut buf);
                r.and_then(|()| c.write_bytes(lbase + off, &buf))
            };
            if let Err(e) = r {
                return if done > 0 { Ok(done) } else { Err(e) };
            }
            done += n;
            roff += n;
            off += n;
            if off == llen {
                cur = li.next();
                off = 0;
            }
        }
    }
    Ok(done)
}

fn process_vm_readv(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    process_vm(c, a, false)
}

fn process_vm_writev(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    process_vm(c, a, true)
}

/// Registers ptrace(2) and process_vm_readv/writev.
pub fn register(t: &mut SyscallTable) {
    t.register("process_vm_readv", process_vm_readv);
    t.register("process_vm_writev", process_vm_writev);
    t.register("ptrace", sys_ptrace).partial(
        "no SYSEMU or debug registers (hardware watchpoints: EIO); SINGLESTEP on x86_64 only; the tracer is a whole process",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_user_reads_regs_and_zero_debugregs() {
        if !cfg!(target_arch = "x86_64") {
            assert_eq!(peek_user(&Regs::default(), 0), Err(Errno::EIO));
            return;
        }
        let mut r = Regs::default();
        r.set_pc(0x1234);
        let rip = 16 * 8;
        assert_eq!(peek_user(&r, rip), Ok(0x1234));
        assert_eq!(peek_user(&r, USER_DEBUGREG + 7 * 8), Ok(0));
        assert_eq!(peek_user(&r, 3), Err(Errno::EIO));
        assert_eq!(peek_user(&r, USER_SIZE), Err(Errno::EIO));
        assert_eq!(poke_user(&mut r, rip, 0x5678), Ok(0));
        assert_eq!(r.pc(), 0x5678);
        assert_eq!(poke_user(&mut r, USER_DEBUGREG + 7 * 8, 1), Err(Errno::EIO));
    }

    #[test]
    fn regsets_round_trip_and_refuse_unknown_notes() {
        let mut r = Regs::default();
        r.set_sp(0x7000);
        let b = regset_bytes(&r, NT_PRSTATUS).unwrap();
        assert_eq!(
            b.len(),
            if cfg!(target_arch = "x86_64") {
                216
            } else {
                272
            }
        );
        let mut r2 = r;
        r2.set_sp(0);
        set_regset(&mut r2, NT_PRSTATUS, &b).unwrap();
        assert_eq!(r2.sp(), 0x7000);
        assert_eq!(regset_bytes(&r, 0x999), Err(Errno::EINVAL));
        if cfg!(target_arch = "aarch64") {
            set_regset(&mut r2, NT_ARM_SYSTEM_CALL, &(-1i32).to_le_bytes()).unwrap();
            assert_eq!(r2.syscall_nr() as i64, -1);
        }
    }

    #[test]
    fn single_step_flag_and_fp_regsets() {
        let mut r = Regs::default();
        if !crate::arch::HAS_SINGLE_STEP {
            assert!(!crate::arch::set_single_step(&mut r, true));
            return;
        }
        assert!(!crate::arch::set_single_step(&mut r, true), "TF was clear");
        assert!(crate::arch::set_single_step(&mut r, false), "TF was set");
        // An XSAVE image as the engines give it: FXSAVE area, frame description (magic1,
        // extended size, xfeatures 0x7, size) at 464, header at 512.
        let mut img = vec![0u8; 832];
        img[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
        img[464..468].copy_from_slice(&0x4650_5853u32.to_le_bytes());
        img[472..480].copy_from_slice(&7u64.to_le_bytes());
        img[512..520].copy_from_slice(&3u64.to_le_bytes());
        let fx = crate::arch::fp_regset(&img, NT_PRFPREG).unwrap();
        assert_eq!(fx.len(), 512);
        let xs = crate::arch::fp_regset(&img, NT_X86_XSTATE).unwrap();
        assert_eq!(xs.len(), 832);
        assert_eq!(
            u64::from_le_bytes(xs[464..472].try_into().unwrap()),
            7,
            "XCR0"
        );
        assert!(xs[472..512].iter().all(|&b| b == 0));
        // xmm0 (offset 160) through NT_X86_XSTATE; the frame description stays.
        let mut w = xs.clone();
        w[160] = 0x42;
        crate::arch::set_fp_regset(&mut img, NT_X86_XSTATE, &w).unwrap();
        assert_eq!(img[160], 0x42);
        assert_eq!(&img[464..468], &0x4650_5853u32.to_le_bytes());
        // Linux's refusals: a partial XSAVE buffer, a feature outside XCR0, a reserved MXCSR bit.
        let short = &w[..600];
        assert_eq!(
            crate::arch::set_fp_regset(&mut img, NT_X86_XSTATE, short),
            Err(Errno::EFAULT)
        );
        let mut bad = w.clone();
        bad[512] = 0x8f;
        assert_eq!(
            crate::arch::set_fp_regset(&mut img, NT_X86_XSTATE, &bad),
            Err(Errno::EINVAL)
        );
        let mut fx2 = fx.clone();
        fx2[24..28].copy_from_slice(&0xffff_0000u32.to_le_bytes());
        assert_eq!(
            crate::arch::set_fp_regset(&mut img, NT_PRFPREG, &fx2),
            Err(Errno::EINVAL)
        );
        // A legacy-only image has no XSTATE regset.
        assert_eq!(
            crate::arch::fp_regset(&img[..512], NT_X86_XSTATE),
            Err(Errno::ENODEV)
        );
    }

    #[test]
    fn syscall_info_ops() {
        let mut r = Regs::default();
        r.set_return((-2i64) as u64);
        let mut s = Stop {
            why: Why::SyscallExit,
            code: 0x85,
            regs: r,
            fp: None,
            fp_dirty: false,
            info: Siginfo::default(),
            reported: false,
            resume: None,
            listening: false,
        };
        let (op, b, n) = syscall_info(&s, 0);
        assert_eq!((op, n), (PTRACE_SYSCALL_INFO_EXIT, 33));
        assert_eq!(i64::from_le_bytes(b[24..32].try_into().unwrap()), -2);
        assert_eq!(b[32], 1, "is_error");
        s.why = Why::Signal(10);
        assert_eq!(syscall_info(&s, 0).2, SYSCALL_INFO_HEADER);
        // A seccomp stop: the call and the filter's SECCOMP_RET_DATA.
        s.why = Why::Event(PTRACE_EVENT_SECCOMP);
        s.regs.set_syscall_nr(39);
        let (op, b, n) = syscall_info(&s, 0x1234);
        assert_eq!((op, n), (PTRACE_SYSCALL_INFO_SECCOMP, 84));
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 39);
        assert_eq!(u32::from_le_bytes(b[80..84].try_into().unwrap()), 0x1234);
    }
}
