//! The run loop of one guest thread (DESIGN.md, "The run loop"): switch to the guest, serve
//! what stopped it, flush the host mapping changes into the next switch, repeat, until the
//! thread or its process ends.

use crate::engine::Event;
use crate::engine::ptrace::PtraceThread;
use crate::kernel::Kernel;
use crate::syscall::{Action, dispatch, lock_mm};
use crate::task::{ExitStatus, Task, lock};
use std::sync::Arc;
use um_mm::{Access, HostOp, SegvCode};

/// How a thread's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Only this thread ended.
    Thread(i32),
    /// The whole process ended.
    Group(ExitStatus),
}

/// Signal numbers the run loop raises itself.
const SIGKILL: i32 = 9;
const SIGSEGV: i32 = 11;
const SIGBUS: i32 = 7;

/// Serves `task` on the current host thread until it exits. `th` is its engine state, with the
/// registers to start from.
pub fn serve(k: &Arc<Kernel>, task: &Arc<Task>, th: &mut PtraceThread) -> Exit {
    // Consecutive protection faults at one address: without the access type (the ptrace
    // engine does not get it), a fault that resolving cannot fix (exec of a non-exec page)
    // would otherwise loop forever.
    let mut repeat: (u64, u32) = (u64::MAX, 0);
    loop {
        let mut ops = lock_mm(&task.mm()).take_host_ops();
        if task
            .process
            .exec_unmap
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            ops.insert(
                0,
                HostOp::Unmap {
                    addr: 0,
                    len: k.layout.task_size,
                },
            );
        }
        let ev = match th.switch(&ops) {
            Ok(ev) => ev,
            Err(e) => {
                log::error!("pid {}: lost its stub process: {e}", task.tid);
                return Exit::Group(ExitStatus::Signaled(SIGKILL));
            }
        };
        match ev {
            Event::Syscall => {
                let mut regs = th.regs;
                let action = dispatch(k, task, &mut regs);
                th.regs = regs;
                match action {
                    Action::Return | Action::Jump => {}
                    Action::ExitThread(code) => return Exit::Thread(code),
                    Action::ExitGroup(st) => return Exit::Group(st),
                }
            }
            Event::Fault { addr, not_present } => {
                let access = if not_present {
                    Access::Read
                } else {
                    Access::Write
                };
                if !not_present && repeat.0 == addr {
                    repeat.1 += 1;
                } else {
                    repeat = (addr, 0);
                }
                let r = if repeat.1 >= 2 {
                    Err(SegvCode::AccErr)
                } else {
                    lock_mm(&task.mm()).handle_fault(addr, access)
                };
                if let Err(code) = r {
                    let comm = String::from_utf8_lossy(&lock(&task.process.comm)).into_owned();
                    let (signo, what) = match code {
                        SegvCode::MapErr => (SIGSEGV, "SEGV_MAPERR"),
                        SegvCode::AccErr => (SIGSEGV, "SEGV_ACCERR"),
                        SegvCode::Bus => (SIGBUS, "BUS_ADRERR"),
                        SegvCode::Oom => (SIGKILL, "out of memory"),
                    };
                    log::info!(
                        "{comm}[{}]: segfault at {addr:#x} ip {:#x} sp {:#x} ({what})",
                        task.tid,
                        th.regs.pc(),
                        th.regs.sp(),
                    );
                    return Exit::Group(ExitStatus::Signaled(signo));
                }
            }
            Event::Signal { signo, addr, code } => {
                let comm = String::from_utf8_lossy(&lock(&task.process.comm)).into_owned();
                log::info!(
                    "{comm}[{}]: fatal signal {signo} (code {code}) at {addr:#x} ip {:#x}",
                    task.tid,
                    th.regs.pc()
                );
                return Exit::Group(ExitStatus::Signaled(signo));
            }
        }
    }
}
