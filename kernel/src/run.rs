//! The run loop of one guest thread (DESIGN.md, "The run loop"): deliver pending signals,
//! switch to the guest, serve what stopped it, repeat, until the thread or its process ends;
//! then the exit path (Linux `kernel/exit.c`): robust futexes and clear_child_tid, the last
//! thread out turns the process into a zombie, reparents its children to init and tells its
//! parent.
//!
//! Each guest thread gets a host thread of its own ([`spawn`]); the kinds of start are in
//! [`Start`].

use crate::arch::Regs;
use crate::arch::native::signal as frame;
use crate::engine::Event;
use crate::engine::{GuestThread, SiblingSeed};
use crate::kernel::Kernel;
use crate::signal::{self as sig, DefaultAction, sigbit};
use crate::syscall::{Action, dispatch, lock_mm};
use crate::task::{ExitStatus, JobState, Process, Task, lock};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use um_mm::{Access, HostOp, SegvCode};
use um_uapi::Errno;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::signal::Siginfo;

/// How a thread's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Only this thread ended.
    Thread(i32),
    /// The whole process ended.
    Group(ExitStatus),
}

use um_uapi::abi::signal::SA_NOCLDSTOP;
use um_uapi::abi::signal::SA_NOCLDWAIT;
use um_uapi::abi::signal::SA_NODEFER;
use um_uapi::abi::signal::SA_ONSTACK;
use um_uapi::abi::signal::SA_RESETHAND;
use um_uapi::abi::signal::SA_RESTART;
use um_uapi::abi::signal::SA_RESTORER;
use um_uapi::abi::signal::SS_DISABLE;
use um_uapi::abi::signal::SS_ONSTACK;

/// How a new guest thread starts.
// Each value is built once per task and moved into its host thread: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Start {
    /// init: a fresh stub, then exec of `path`.
    Exec {
        path: Vec<u8>,
        argv: Vec<Vec<u8>>,
        envp: Vec<Vec<u8>>,
        exec: ExecFn,
    },
    /// A forked process: a fresh stub, these registers and FP state.
    Fork { regs: Regs, fp: Vec<u8> },
    /// A thread (or vfork child) in an existing stub: its host thread and registers.
    Thread {
        seed: SiblingSeed,
        host_tid: libc::pid_t,
        regs: Regs,
        fp: Vec<u8>,
    },
}

/// The exec entry point (lives in `um-fs`, which the kernel cannot name).
pub type ExecFn =
    fn(&Arc<Kernel>, &Arc<Task>, &[u8], Vec<Vec<u8>>, Vec<Vec<u8>>) -> Result<Regs, Errno>;

/// Starts a host thread that serves `task` from `start` to its exit.
pub fn spawn(
    k: &Arc<Kernel>,
    task: Arc<Task>,
    start: Start,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let k = k.clone();
    std::thread::Builder::new()
        .name(format!("task-{}", task.tid))
        .stack_size(256 << 10)
        .spawn(move || {
            crate::current::set_current(Some(task.clone()));
            crate::cputime::start_serving(&task);
            let mut th = match start_thread(&k, &task, start) {
                Ok(th) => th,
                Err(e) => {
                    log::error!("pid {}: cannot start: {e}", task.tid);
                    exit_task(
                        &k,
                        &task,
                        None,
                        Exit::Group(ExitStatus::Signaled(sig::SIGKILL as i32)),
                    );
                    return;
                }
            };
            let exit = serve(&k, &task, &mut th);
            exit_task(&k, &task, Some(th), exit);
        })
}

fn start_thread(k: &Arc<Kernel>, task: &Arc<Task>, start: Start) -> Result<GuestThread, String> {
    let th = match start {
        Start::Exec {
            path,
            argv,
            envp,
            exec,
        } => {
            let mut th = GuestThread::new_process(k).map_err(|e| format!("stub: {e}"))?;
            let _ = k.exec_template.set(*th.template());
            publish(task, &th);
            th.regs = match exec(k, task, &path, argv, envp) {
                Ok(r) => r,
                Err(e) => {
                    crate::printk::line(&format!(
                        "Kernel panic - not syncing: Requested init {} failed (error -{}).",
                        String::from_utf8_lossy(&path),
                        e.get()
                    ));
                    shutdown(k, 1);
                }
            };
            th
        }
        Start::Fork { regs, fp } => {
            let mut th = GuestThread::new_process(k).map_err(|e| format!("stub: {e}"))?;
            th.set_fpregs(&fp).map_err(|e| format!("fp: {e}"))?;
            th.regs = regs;
            th
        }
        Start::Thread {
            seed,
            host_tid,
            regs,
            fp,
        } => {
            let th = seed
                .attach(host_tid, regs)
                .map_err(|e| format!("attach: {e}"))?;
            th.set_fpregs(&fp).map_err(|e| format!("fp: {e}"))?;
            th
        }
    };
    publish(task, &th);
    Ok(th)
}

/// Tells the task which host thread runs it (for kicks).
fn publish(task: &Task, th: &GuestThread) {
    task.host_pid.store(th.pid(), Ordering::Release);
    task.host_tid.store(th.tid(), Ordering::Release);
    *lock(&task.host_mapper) = th.host_mapper();
    // A new stub runs where its creator's host thread could; the guest thread's inherited
    // affinity mask says where it may.
    crate::sys::sched::pin_host(task, false);
    if lock(&task.sched).nice > 0 {
        crate::sys::sched::nice_host(task);
    }
}

/// Ends the kernel: `linux` exits with `code`, taking every stub with it.
pub fn shutdown(k: &Kernel, code: i32) -> ! {
    k.syscalls.profile_report();
    for hook in lock(&k.shutdown_hooks).iter() {
        hook();
    }
    std::process::exit(code)
}

/// The window around a file-page read fault whose pages are mapped with it: 1 MiB (256 pages
/// of 4 KiB), sixteen times Linux's `fault_around_bytes` (64 KiB), because a fault costs far
/// more here than a host mmap (a round trip through the kernel and, in the seccomp engine,
/// the stub's mapper): measured on fork+exec of busybox, 64 KiB -> 256 KiB took about a fifth
/// of the faults away and less CPU time in all, although each fault maps more; 256 KiB -> 1
/// MiB took 22 faults per fork+exec child down to 18 (the text of ld-musl and busybox in one
/// window each), and about 20 context switches, 11 host mmaps and 10 % of the CPU time per
/// fork+exec (perf stat, `seccomp_spin=0`, 2026-12-03).
const FILE_FAULT_AROUND_BYTES: u64 = 1 << 20;

/// The window of [`um_mm::Mm::map_present_around`] after a fault on a page that has a PTE
/// but no host mapping (a fork child's first touches): 64 KiB, in 4 KiB pages.
pub(crate) const PRESENT_AROUND_PAGES: usize = 16;

/// The fault-around ramp of one guest thread (DESIGN.md, "Faults"): 0, 4, 16, 32, 64, then
/// 128 pages (at most `prefault=`), stepping up only while each fault lands right after the
/// previous window, back to 0 on any other fault.
#[derive(Default)]
struct FaultAround {
    /// The page a sequential writer faults on next.
    next: u64,
    step: usize,
}

impl FaultAround {
    const RAMP: [usize; 6] = [0, 4, 16, 32, 64, 128];

    /// The window for a not-present fault on `page`, and the ramp moved on.
    fn window(&mut self, page: u64, max: usize) -> usize {
        self.step = if page == self.next && self.next != 0 {
            (self.step + 1).min(Self::RAMP.len() - 1)
        } else {
            0
        };
        Self::RAMP[self.step].min(max)
    }
}

/// The stub process of `task` is gone (or refused a host call): the thread group ends.
fn lost_stub(task: &Task, e: &std::io::Error) -> Exit {
    if lock(&task.process.exit).is_none() {
        log::error!("pid {}: lost its stub process: {e}", task.tid);
    }
    Exit::Group(ExitStatus::Signaled(sig::SIGKILL as i32))
}

/// Serves `task` on the current host thread until it exits.
pub fn serve(k: &Arc<Kernel>, task: &Arc<Task>, th: &mut GuestThread) -> Exit {
    // Consecutive protection faults at one address that resolving did not change: without
    // the access type (the ptrace engine does not get it), a fault that resolving cannot fix
    // (exec of a non-exec page) would otherwise loop forever.
    let mut repeat: (u64, u32) = (u64::MAX, 0);
    // Of those, how many changed the mapping (see below); bounded, so that a fault whose
    // handling always queues a host op cannot loop forever either.
    let mut changed_repeats = 0u32;
    // Fault-around for sequential anonymous faults (`prefault=`).
    let mut around = FaultAround::default();
    // The result of the syscall just served, for the restart rules at signal delivery.
    let mut syscall_ret: Option<u64> = None;
    loop {
        if let Some(e) = deliver_signals(k, task, th, syscall_ret.take()) {
            return e;
        }
        let mm_arc = task.mm();
        let mut mm = lock_mm(&mm_arc);
        let mut ops = mm.take_host_ops();
        if task.process.exec_unmap.swap(false, Ordering::AcqRel) {
            ops.insert(
                0,
                HostOp::Unmap {
                    addr: 0,
                    len: k.layout.task_size,
                },
            );
        }
        // The frames whose PTEs went with these ops: put only once the host has made them.
        let gather = mm.take_gathered();
        // Host-op ordering (ARCHITECTURE.md, "The seccomp engine"): the ops are made in the
        // host (ptrace engine) or queued in the mapper's first-in-first-out ring (seccomp
        // engine) before the mm lock goes, so a batch taken later (by another thread: a fork's
        // write-protect, an munmap; or by a shootdown) can never reach the host before this
        // one (a fault's Map), and a thread that finds no ops of its own still resumes only
        // after every earlier one is made (the mapper hands it back after them).
        if (!ops.is_empty() || !gather.is_empty()) && th.ordered_apply() {
            if let Err(e) = th.queue_now(&ops, gather) {
                drop(mm);
                return lost_stub(task, &e);
            }
            ops.clear();
        }
        drop(mm);
        if crate::arch::HAS_TSC_CTL {
            th.set_tsc_sigsegv(task.tsc_sigsegv.load(Ordering::Relaxed));
        }
        task.in_guest.store(true, Ordering::Release);
        // A signal that arrived between the check above and now: the kick is a host signal,
        // which stays pending on the stub thread and interrupts it right away.
        let ev = th.switch(&ops, || task.signal_pending());
        task.in_guest.store(false, Ordering::Release);
        crate::cputime::note_spin(task, th.take_spin());
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => return lost_stub(task, &e),
        };
        if !matches!(ev, Event::Fault { .. }) {
            // The guest made progress: a later fault at the same address is a new one (a
            // fork may have made the page copy-on-write again).
            repeat = (u64::MAX, 0);
        }
        match ev {
            Event::Syscall => {
                // ptrace syscall stops around the call ([`crate::ptrace`]).
                let traced = task.ptrace.traced();
                // Linux `syscall_trace_enter`: the ptrace entry stop first, then seccomp
                // ([`crate::seccomp`]) on what the tracer left, a call it cancelled (number
                // -1) included; only a fatal signal skips the filters. A cancelled call that
                // the filters let through keeps the tracer's return value.
                let cancelled = traced
                    && crate::ptrace::syscall_enter(k, task, th) == crate::ptrace::Enter::Skip;
                let action = if cancelled && crate::ptrace::fatal_signal_pending(task) {
                    Action::Return
                } else if let Some(a) = crate::seccomp::secure_computing(k, task, th) {
                    a
                } else if cancelled {
                    Action::Return
                } else {
                    dispatch(k, task, th)
                };
                if traced && matches!(action, Action::Return | Action::Jump) {
                    if let Some(info) = crate::ptrace::syscall_step(task, th) {
                        force_signal(task, info, th);
                    } else {
                        crate::ptrace::syscall_exit(k, task, th);
                    }
                }
                match action {
                    Action::Return => syscall_ret = Some(th.regs.return_value()),
                    Action::Jump => {}
                    Action::ExitThread(code) => return Exit::Thread(code),
                    Action::ExitGroup(st) => return Exit::Group(st),
                }
            }
            Event::Interrupted => {}
            Event::Fault {
                addr,
                not_present,
                write,
            } => {
                // A protection fault on a page the host has is served as a write; a
                // not-present one as a read unless the engine knows it was a write, which is
                // then served at once (a private page copied, a shared one dirtied) instead of
                // mapped read-only first for a second fault and a second host-op batch.
                let access = if not_present && !write {
                    Access::Read
                } else {
                    Access::Write
                };
                if !not_present && repeat.0 == addr {
                    repeat.1 += 1;
                } else {
                    repeat = (addr, 0);
                    changed_repeats = 0;
                }
                // userfaultfd: a missing page of a registered range (or a write to a
                // write-protected one) goes to its monitor; the thread sleeps there
                // (interruptibly) and, once woken, comes round the loop (signals first) and
                // retries the access (fs/userfaultfd.c handle_userfault, VM_FAULT_RETRY).
                let uffd = lock_mm(&task.mm()).userfault(addr, access);
                let r = if let Some((ctx, flags)) = uffd {
                    ctx.handle_fault(addr, flags)
                } else if repeat.1 >= 2 {
                    Err(SegvCode::AccErr)
                } else {
                    let mm_arc = task.mm();
                    let mut mm = lock_mm(&mm_arc);
                    // A not-present host fault on a page our table has: a fork child's (or a
                    // moved page's) first touch; its neighbours are likely next.
                    let had_pte = not_present && mm.pte(addr).is_some();
                    let queued = mm.host_ops_queued();
                    let r = mm.handle_fault(addr, access);
                    if r.is_ok() && mm.host_ops_queued() > queued && changed_repeats < 64 {
                        // The fault changed the mapping (a copy on write broken, a page
                        // mapped): a repeat is a new fault, e.g. after another thread's fork
                        // write-protected the page again before this one could retry (seen
                        // under load: three such faults in a row, a false SIGSEGV).
                        repeat = (addr, 0);
                        changed_repeats += 1;
                    }
                    if had_pte && r.is_ok() {
                        mm.map_present_around(addr, PRESENT_AROUND_PAGES);
                    }
                    if not_present && r.is_ok() {
                        let page = mm.granule().size();
                        let window = around.window(addr & !(page - 1), k.prefault_pages);
                        let n = if window > 0 {
                            mm.fault_around(addr, window)
                        } else {
                            0
                        };
                        around.next = (addr & !(page - 1)) + (n as u64 + 1) * page;
                        // File pages: the 1 MiB window around the fault (no ramp, as Linux).
                        mm.fault_around_file(addr, (FILE_FAULT_AROUND_BYTES / page) as usize);
                    }
                    r
                };
                if log::log_enabled!(log::Level::Debug) {
                    let pte = lock_mm(&task.mm()).pte(addr);
                    log::debug!(
                        "pid {} fault {addr:#x} {access:?} repeat {} -> {r:?} pte {pte:?}",
                        task.tid,
                        repeat.1
                    );
                }
                if let Err(code) = r {
                    let (signo, si_code) = match code {
                        SegvCode::MapErr => (sig::SIGSEGV, 1),
                        SegvCode::AccErr => (sig::SIGSEGV, 2),
                        SegvCode::Bus => (sig::SIGBUS, 2),
                        SegvCode::HwPoison => (sig::SIGBUS, 4),
                        SegvCode::Oom => {
                            log::warn!("pid {}: out of memory, killed", task.tid);
                            return Exit::Group(ExitStatus::Signaled(sig::SIGKILL as i32));
                        }
                    };
                    let info = if code == SegvCode::HwPoison {
                        // si_addr_lsb: the poisoned unit is one page.
                        let shift = lock_mm(&task.mm()).granule().size().trailing_zeros();
                        Siginfo::mce_fault(addr, shift as u16)
                    } else {
                        Siginfo::fault(signo, si_code, addr)
                    };
                    force_signal(task, info, th);
                }
            }
            Event::Signal { signo, addr, code } => {
                force_signal(task, Siginfo::fault(signo as u32, code, addr), th);
            }
        }
    }
}

/// A synchronous signal caused by the thread's own instruction (Linux `force_sig_info`): if it
/// is blocked or ignored it cannot be delivered, so the default action (death) applies.
fn force_signal(task: &Arc<Task>, info: Siginfo, th: &GuestThread) {
    let signo = info.si_signo as u32;
    let mut acts = lock(&task.process.sigactions);
    let blocked = *lock(&task.sigmask) & sigbit(signo) != 0;
    if blocked || acts[(signo - 1) as usize].handler == 1 {
        acts[(signo - 1) as usize].handler = 0;
        *lock(&task.sigmask) &= !sigbit(signo);
    }
    let fatal = acts[(signo - 1) as usize].handler == 0;
    drop(acts);
    if fatal {
        let comm = String::from_utf8_lossy(&lock(&task.process.comm)).into_owned();
        log::info!(
            "{comm}[{}]: {} at {:#x} ip {:#x} sp {:#x} (si_code {})",
            task.tid,
            if signo == sig::SIGSEGV {
                "segfault"
            } else {
                "fatal signal"
            },
            info.addr(),
            th.regs.pc(),
            th.regs.sp(),
            info.si_code
        );
    }
    let _ = lock(&task.pending).push(info);
}

/// The syscall restart rules (arch/x86/kernel/signal.c `handle_signal`/`arch_do_signal_or_restart`)
/// for a syscall that returned `ret`: with a handler about to run (`handler_flags`), or with
/// none (None).
fn restart_syscall(regs: &mut Regs, ret: u64, handler_flags: Option<u64>) {
    const SYS: Errno = Errno::ERESTARTSYS;
    const NOINTR: Errno = Errno::ERESTARTNOINTR;
    const NOHAND: Errno = Errno::ERESTARTNOHAND;
    const BLOCK: Errno = Errno::ERESTART_RESTARTBLOCK;
    // Only -1..=-4095 are errors; anything else is a value and `Errno::new` refuses it.
    let e = i32::try_from((ret as i64).wrapping_neg())
        .ok()
        .and_then(Errno::new);
    let restart = |regs: &mut Regs| crate::arch::restart_syscall(regs);
    match (e, handler_flags) {
        (Some(SYS), Some(f)) if f & SA_RESTART != 0 => restart(regs),
        (Some(SYS | NOHAND | BLOCK), Some(_)) => regs.set_return(Errno::EINTR.to_return()),
        (Some(NOINTR), Some(_)) => restart(regs),
        (Some(SYS | NOINTR | NOHAND | BLOCK), None) => restart(regs),
        _ => {}
    }
}

/// Delivers what is pending for `task` before it returns to the guest: default actions,
/// job-control stops, and handler frames. Returns an exit if a signal ends the process.
fn deliver_signals(
    k: &Arc<Kernel>,
    task: &Arc<Task>,
    th: &mut GuestThread,
    mut syscall_ret: Option<u64>,
) -> Option<Exit> {
    let p = &task.process;
    loop {
        if let Some(st) = *lock(&p.exit) {
            return Some(Exit::Group(st));
        }
        if task.zap.load(Ordering::Acquire) {
            return Some(Exit::Thread(0));
        }
        // A traced thread reports traps and group stops to its tracer first.
        if crate::ptrace::jobctl(k, task, th) {
            continue;
        }
        // Job control: a stopped process's threads wait here for SIGCONT or SIGKILL (a
        // traced one only until its tracer restarts it).
        let stopped = matches!(*lock(&p.job), JobState::Stopped { .. })
            && !crate::ptrace::released_from_group_stop(task);
        if stopped {
            task.waker.reset();
            let still = matches!(*lock(&p.job), JobState::Stopped { .. });
            let killed = (lock(&task.pending).bits() | lock(&p.shared_pending).bits())
                & sigbit(sig::SIGKILL)
                != 0;
            if still && !killed && lock(&p.exit).is_none() {
                task.waker.sleep(None);
                continue;
            }
        }
        notify_continued(k, p);
        let mask = *lock(&task.sigmask);
        let info = lock(&task.pending)
            .take(mask)
            .or_else(|| lock(&p.shared_pending).take(mask));
        // SI_TIMER: the timer's overrun count is settled at dequeue, and the signal of a
        // deleted timer is dropped.
        let mut info = info;
        if let Some(i) = info.as_mut()
            && !crate::sys::timer::signal_dequeued(p.pid, i)
        {
            continue;
        }
        let Some(info) = info else {
            if let Some(ret) = syscall_ret {
                restart_syscall(&mut th.regs, ret, None);
            }
            if let Some(m) = lock(&task.saved_mask).take() {
                *lock(&task.sigmask) = m;
            }
            return None;
        };
        // The signal-delivery stop of a traced thread: the tracer may change or cancel it.
        let Some(info) = crate::ptrace::signal_stop(k, task, th, info) else {
            continue;
        };
        let signo = info.si_signo as u32;
        let act = lock(&p.sigactions)[(signo - 1) as usize];
        if signo == sig::SIGKILL {
            return Some(Exit::Group(ExitStatus::Signaled(signo as i32)));
        }
        match act.handler {
            1 => continue,
            0 if sig::init_drops(p, &info) => continue,
            0 => match sig::default_action(signo) {
                DefaultAction::Ign | DefaultAction::Cont => continue,
                DefaultAction::Stop => {
                    group_stop(k, p, signo);
                    continue;
                }
                DefaultAction::Term => {
                    return Some(Exit::Group(ExitStatus::Signaled(signo as i32)));
                }
                DefaultAction::Core => {
                    // fs/coredump.c do_coredump, before the group exits; the wait status
                    // gets the core bit only if a core file was written.
                    let dumped = sig::dump_core(k, task, &th.regs, &info);
                    let signo = signo as i32;
                    return Some(Exit::Group(if dumped {
                        ExitStatus::Dumped(signo)
                    } else {
                        ExitStatus::Signaled(signo)
                    }));
                }
            },
            handler => {
                if let Some(ret) = syscall_ret.take() {
                    restart_syscall(&mut th.regs, ret, Some(act.flags));
                }
                // The mask in the frame is the one to go back to: a sigsuspend-style saved
                // mask if there is one.
                let cur = *lock(&task.sigmask);
                let old_mask = lock(&task.saved_mask).take().unwrap_or(cur);
                let stepping = crate::ptrace::signal_frame_step(task, th);
                match setup_frame(task, th, signo, handler, &act, &info, old_mask) {
                    Ok(()) => {
                        let mut m = cur | act.mask;
                        if act.flags & SA_NODEFER == 0 {
                            m |= sigbit(signo);
                        }
                        *lock(&task.sigmask) = m & !sig::UNBLOCKABLE;
                        if act.flags & SA_RESETHAND != 0 {
                            // kernel/signal.c get_signal: SA_ONESHOT resets the handler to
                            // SIG_DFL and nothing else (the flags, SA_SIGINFO included, stay).
                            lock(&p.sigactions)[(signo - 1) as usize].handler = 0;
                        }
                        crate::ptrace::signal_delivered(k, task, th, stepping);
                    }
                    Err(()) => {
                        // The frame could not be written (bad stack): SIGSEGV, uncatchable now.
                        let comm = String::from_utf8_lossy(&lock(&p.comm)).into_owned();
                        log::info!(
                            "{comm}[{}]: cannot deliver signal {signo}: bad stack {:#x}",
                            task.tid,
                            th.regs.sp()
                        );
                        return Some(Exit::Group(ExitStatus::Signaled(sig::SIGSEGV as i32)));
                    }
                }
            }
        }
    }
}

fn setup_frame(
    task: &Arc<Task>,
    th: &mut GuestThread,
    signo: u32,
    handler: u64,
    act: &crate::task::SigAction,
    info: &Siginfo,
    old_mask: u64,
) -> Result<(), ()> {
    let fp = th.get_fpregs().map_err(|_| ())?;
    let (ss_sp, ss_size, ss_flags) = *lock(&task.altstack);
    let sp = th.regs.sp();
    let on_alt = ss_flags & SS_DISABLE == 0 && sp > ss_sp && sp <= ss_sp + ss_size;
    let stack_top = if act.flags & SA_ONSTACK != 0 && ss_flags & SS_DISABLE == 0 && !on_alt {
        Some(ss_sp + ss_size)
    } else {
        None
    };
    let info_bytes: [u8; 128] = info.as_bytes().try_into().map_err(|_| ())?;
    // arm64 `setup_return`: without SA_RESTORER the handler returns to the vDSO's
    // `__kernel_rt_sigreturn` (glibc installs handlers that way). x86_64 has no such trampoline
    // (its vDSO has none; 64-bit libcs always pass SA_RESTORER).
    let restorer = if act.flags & SA_RESTORER != 0 {
        act.restorer
    } else if let Some(tramp) = lock_mm(&task.mm()).vdso().and_then(|v| v.sigreturn) {
        tramp
    } else {
        log::warn!("signal {signo}: handler without SA_RESTORER and no vDSO trampoline");
        act.restorer
    };
    let d = frame::Delivery {
        signo,
        handler,
        restorer,
        info: &info_bytes,
        old_mask,
        stack_top,
        altstack: (ss_sp, if on_alt { SS_ONSTACK } else { ss_flags }, ss_size),
    };
    let f = frame::setup_rt_frame(&th.regs, &fp, &d);
    lock_mm(&task.mm())
        .write_bytes(f.addr, &f.bytes)
        .map_err(|_| ())?;
    // x86: a handler starts with the reset FP control state (Linux `handle_signal` ->
    // `fpu__clear_user_states`); arm64 keeps it.
    if let Some(init) = frame::handler_fp_image(&fp) {
        th.set_fpregs(&init).map_err(|_| ())?;
    }
    th.regs = f.regs;
    Ok(())
}

/// Stops the whole process for `signo` (Linux `do_signal_stop`) and tells the parent.
fn group_stop(k: &Arc<Kernel>, p: &Arc<Process>, signo: u32) {
    {
        let mut j = lock(&p.job);
        if matches!(*j, JobState::Stopped { .. }) {
            return;
        }
        *j = JobState::Stopped {
            sig: signo,
            reported: false,
        };
    }
    for t in p.live_threads(k) {
        t.kick();
    }
    if let Some(parent) = lock(&p.parent).upgrade() {
        let act = lock(&parent.sigactions)[(sig::SIGCHLD - 1) as usize];
        if act.flags & SA_NOCLDSTOP == 0 {
            let uid = lock(&p.creds).uid;
            sig::send_to_process(
                k,
                &parent,
                Siginfo::chld(
                    5, /* CLD_STOPPED */
                    crate::pidns::tgid_seen_by(p, &parent) as i32,
                    uid,
                    signo as i32,
                    0,
                    0,
                ),
            );
        }
        parent.child_wait.wake_all();
    }
}

/// After SIGCONT: tell the parent once (CLD_CONTINUED).
fn notify_continued(k: &Arc<Kernel>, p: &Arc<Process>) {
    if *lock(&p.job) != JobState::Continued || p.cont_notified.swap(true, Ordering::AcqRel) {
        return;
    }
    if let Some(parent) = lock(&p.parent).upgrade() {
        let act = lock(&parent.sigactions)[(sig::SIGCHLD - 1) as usize];
        if act.flags & SA_NOCLDSTOP == 0 {
            let uid = lock(&p.creds).uid;
            sig::send_to_process(
                k,
                &parent,
                Siginfo::chld(
                    6, /* CLD_CONTINUED */
                    crate::pidns::tgid_seen_by(p, &parent) as i32,
                    uid,
                    sig::SIGCONT as i32,
                    0,
                    0,
                ),
            );
        }
        parent.child_wait.wake_all();
    }
}

/// The exit path of one thread, on its own host thread.
pub fn exit_task(k: &Arc<Kernel>, task: &Arc<Task>, mut th: Option<GuestThread>, exit: Exit) {
    let p = task.process.clone();
    // PTRACE_EVENT_EXIT while the thread still has everything.
    if let Some(th) = th.as_mut()
        && task.ptrace.traced()
    {
        let st = lock(&p.exit).unwrap_or(match exit {
            Exit::Thread(c) => ExitStatus::Exited(c),
            Exit::Group(st) => st,
        });
        crate::ptrace::exit_event(k, task, th, st);
    }
    if let Exit::Group(st) = exit {
        let mut e = lock(&p.exit);
        if e.is_none() {
            *e = Some(st);
        }
        drop(e);
        for t in p.live_threads(k) {
            if t.tid != task.tid {
                t.kick();
            }
        }
    }
    for hook in lock(&k.thread_exit_hooks).iter() {
        hook(task);
    }
    // The thread's CPU times join its process while its host thread can still be read.
    crate::cputime::exit_thread(task);
    // Its seccomp filters: a listener hangs up once no task uses its filter.
    crate::seccomp::on_exit(task);
    // Release the host thread first (the process's last one kills the stub).
    drop(th);
    task.host_tid.store(0, Ordering::Release);
    let last = {
        let threads = lock(&p.threads);
        task.exited.store(true, Ordering::Release);
        !threads
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .any(|t| !t.exited.load(Ordering::Acquire))
    };
    if task.tid != p.pid {
        let st = lock(&p.exit).unwrap_or(match exit {
            Exit::Thread(c) => ExitStatus::Exited(c),
            Exit::Group(st) => st,
        });
        crate::ptrace::thread_exited(k, task, st);
        k.tasks.remove(task.tid);
    }
    // Robust futexes and CLONE_CHILD_CLEARTID (what pthread_join waits for), while the
    // process's address space is still the one the thread ran in. After the tid left the
    // task table and the host thread is gone: Linux wakes the joiner from `exit_mm`, only
    // microseconds before `release_task` frees the tid, and programs count on a joined
    // thread's tid being ESRCH; our host-thread teardown (a ptrace kill and wait) would
    // otherwise stretch that window to milliseconds.
    crate::sys::futex::mm_release(task);
    if !last {
        return;
    }
    let st = lock(&p.exit).unwrap_or(match exit {
        Exit::Thread(c) => ExitStatus::Exited(c),
        Exit::Group(st) => st,
    });
    *lock(&p.exit) = Some(st);
    exit_process(k, &p, st);
}

/// The last thread is gone: release the process's resources, reparent its children, and tell
/// the parent (or end the kernel, for init).
fn exit_process(k: &Arc<Kernel>, p: &Arc<Process>, st: ExitStatus) {
    // Its tracees are let go (or killed, PTRACE_O_EXITKILL).
    crate::ptrace::tracer_exited(k, p);
    p.vfork_done.store(true, Ordering::Release);
    p.vfork_wait.wake_all();
    crate::sys::timer::exit_process(p.pid);
    for hook in lock(&k.process_exit_hooks).iter() {
        hook(p);
    }
    // Drop what the process holds: descriptors (closing pipes wakes readers), memory (its
    // resident high-water mark kept for the parent's getrusage). The descriptor table may be
    // shared with other processes (CLONE_FILES): only this process's reference goes, and the
    // files close when the last sharer lets go (kernel/exit.c `exit_files`,
    // `put_files_struct`).
    p.note_maxrss();
    let files = std::mem::take(&mut *lock(&p.files));
    drop(files);
    // mm->exe_file goes with the mm: the program may be written again.
    *lock(&p.exe) = None;
    *lock(&p.mm) = Arc::new(Mutex::new(um_mm::Mm::new(
        k.frames.clone(),
        k.page_cache.clone(),
        k.layout,
    )));
    // exit_task_namespaces: a zombie no longer holds its mount namespace, so a namespace and
    // the mounts only it has go with its last live process.
    *lock(&p.mntns) = crate::mntns::root().clone();
    if p.pid == 1 {
        crate::printk::line(&format!(
            "Kernel panic - not syncing: Attempted to kill init! exitcode=0x{:08x}",
            st.wstatus()
        ));
        let code = match st {
            ExitStatus::Exited(c) => c,
            ExitStatus::Signaled(s) | ExitStatus::Dumped(s) => 128 + s,
        };
        shutdown(k, code);
    }
    // The init of a pid namespace takes the namespace's other processes with it.
    crate::pidns::zap(k, p);
    // Orphans go to the nearest subreaper above, else init (Linux `forget_original_parent`),
    // and those that asked for it (PR_SET_PDEATHSIG) get their signal.
    let orphans = std::mem::take(&mut *lock(&p.children));
    for c in &orphans {
        for t in c.live_threads(k) {
            let s = t.pdeath_signal.load(Ordering::Relaxed);
            if s != 0 {
                sig::send_to_process(k, c, Siginfo::kill(s, 0x80 /* SI_KERNEL */, 0, 0));
            }
        }
    }
    if !orphans.is_empty() {
        if let Some(reaper) = find_new_reaper(k, p) {
            for c in orphans {
                c.ppid.store(reaper.pid, Ordering::Relaxed);
                *lock(&c.parent) = Arc::downgrade(&reaper);
                // reparent_leader: "We don't want people slaying init."
                c.exit_signal.store(sig::SIGCHLD, Ordering::Relaxed);
                lock(&reaper.children).push(c.clone());
                // A child that is already a zombie is announced to its new parent.
                if c.zombie.load(Ordering::Acquire) {
                    let st = lock(&c.exit).unwrap_or(ExitStatus::Exited(0));
                    notify_parent(k, &c, &reaper, st);
                }
            }
            reaper.child_wait.wake_all();
        }
    }
    // A tracer other than the parent sees the exit first; the parent hears of it when the
    // tracer has reaped it or let go ([`notify_parent_late`]).
    if crate::ptrace::process_exited(k, p, st) {
        return;
    }
    notify_parent_late(k, p);
}

/// Tells the real parent that `p` has ended (or, with no parent, forgets it): the end of
/// [`exit_process`], and what a tracer's reap of a traced process leaves for the parent.
pub(crate) fn notify_parent_late(k: &Arc<Kernel>, p: &Arc<Process>) {
    let st = lock(&p.exit).unwrap_or(ExitStatus::Exited(0));
    let Some(parent) = lock(&p.parent).upgrade() else {
        k.tasks.remove(p.pid);
        return;
    };
    notify_parent(k, p, &parent, st);
    parent.child_wait.wake_all();
}

/// kernel/exit.c `find_new_reaper`: the nearest ancestor that is a child subreaper
/// (PR_SET_CHILD_SUBREAPER) and still has a live thread, looked for only when one was
/// set above `p` (`has_child_subreaper`); otherwise init.
fn find_new_reaper(k: &Arc<Kernel>, p: &Arc<Process>) -> Option<Arc<Process>> {
    if p.has_child_subreaper.load(Ordering::Relaxed) {
        let mut up = lock(&p.parent).upgrade();
        while let Some(a) = up {
            // Only within the orphan's pid namespace (crate::pidns), up to its init.
            if a.pid == 1 || crate::pidns::is_ns_init(&a) || !crate::pidns::same_ns(&a, p) {
                break;
            }
            if a.child_subreaper.load(Ordering::Relaxed)
                && !a.zombie.load(Ordering::Acquire)
                && !a.live_threads(k).is_empty()
            {
                return Some(a);
            }
            up = lock(&a.parent).upgrade();
        }
    }
    // The init of the orphan's pid namespace (crate::pidns).
    crate::pidns::child_reaper(k, p)
}

/// kernel/signal.c `do_notify_parent`: the child `p` has ended with `st`. A parent that
/// ignores SIGCHLD (or says SA_NOCLDWAIT) reaps it at once; otherwise it becomes a zombie and
/// the parent gets its exit signal.
fn notify_parent(k: &Arc<Kernel>, p: &Arc<Process>, parent: &Arc<Process>, st: ExitStatus) {
    let act = lock(&parent.sigactions)[(sig::SIGCHLD - 1) as usize];
    let exit_signal = p.exit_signal.load(Ordering::Relaxed);
    let autoreap =
        exit_signal == sig::SIGCHLD && (act.handler == 1 || act.flags & SA_NOCLDWAIT != 0);
    if autoreap {
        lock(&parent.children).retain(|c| !Arc::ptr_eq(c, p));
        k.tasks.remove(p.pid);
    } else {
        p.zombie.store(true, Ordering::Release);
        if exit_signal != 0 {
            let (code, status) = match st {
                ExitStatus::Exited(c) => (1 /* CLD_EXITED */, c),
                ExitStatus::Signaled(s) => (2 /* CLD_KILLED */, s),
                ExitStatus::Dumped(s) => (3 /* CLD_DUMPED */, s),
            };
            let uid = lock(&p.creds).uid;
            // si_pid as the parent's pid namespace sees the child.
            let spid = crate::pidns::tgid_seen_by(p, parent) as i32;
            let mut info = Siginfo::chld(code, spid, uid, status, 0, 0);
            info.si_signo = exit_signal as i32;
            sig::send_to_process(k, parent, info);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FaultAround;

    #[test]
    fn fault_around_ramp_steps_up_while_sequential_and_resets() {
        let mut a = FaultAround::default();
        assert_eq!(a.window(0x1000, 128), 0);
        a.next = 0x2000;
        assert_eq!(a.window(0x2000, 128), 4);
        a.next = 0x7000;
        assert_eq!(a.window(0x7000, 128), 16);
        a.next = 0x18000;
        assert_eq!(a.window(0x18000, 128), 32);
        a.next = 0x39000;
        assert_eq!(a.window(0x39000, 128), 64);
        a.next = 0x7a000;
        assert_eq!(a.window(0x7a000, 128), 128);
        a.next = 0xfb000;
        assert_eq!(a.window(0xfb000, 128), 128, "the top step stays");
        a.next = 0x17c000;
        assert_eq!(
            a.window(0x17c000, 32),
            32,
            "capped by prefault= at the top too"
        );
        assert_eq!(a.window(0x9000_0000, 32), 0, "elsewhere: back to 0");
        a.next = 0x9000_1000;
        assert_eq!(a.window(0x9000_1000, 2), 2, "capped by prefault=");
        a.next = 0x9000_4000;
        assert_eq!(a.window(0x9000_4000, 0), 0, "prefault=0 disables");
    }
}
