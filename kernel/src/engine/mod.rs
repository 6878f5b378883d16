//! Engines: how a guest thread is run until it needs the kernel.
//!
//! `switch` runs the guest thread (after replaying the queued host mapping changes in its stub)
//! until one [`Event`]. Two engines implement it (DESIGN.md): ptrace ([`ptrace`]) and seccomp
//! ([`seccomp`]). The run loop in [`crate::run`] is the same for both: it holds a
//! [`GuestThread`], whose `regs` are the guest registers whenever the kernel owns the thread.

pub mod ptrace;
pub mod seccomp;

use crate::arch::Regs;
use crate::kernel::{EngineKind, Kernel};
use std::io;
use um_mm::{Gather, HostOp};

/// Why a guest thread stopped running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// It made a syscall; number and arguments are in the registers.
    Syscall,
    /// It touched memory it may not: `addr`, and what the host said (`not_present`: the page
    /// is not mapped in the host at all; otherwise a protection fault; `write`: the host's
    /// fault record says the access was a write, false where the engine cannot tell).
    Fault {
        addr: u64,
        not_present: bool,
        write: bool,
    },
    /// The host delivered a synchronous signal for guest code (SIGILL, SIGFPE, SIGBUS, SIGTRAP).
    Signal { signo: i32, addr: u64, code: i32 },
    /// The kernel interrupted it (a signal is pending for it).
    Interrupted,
}

enum Engine {
    Ptrace(ptrace::PtraceThread),
    Seccomp(seccomp::SeccompThread),
}

/// Whether `rdtsc` faults in a stub thread: what the guest thread asked for with
/// prctl(PR_SET_TSC) and what its host thread has. The host state follows the thread: a fresh
/// stub process starts with the TSC readable, a thread the stub clones inherits its creator's
/// (the host's TIF_NOTSC is copied on clone, as the guest's is).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tsc {
    /// The guest thread's mode (Task::tsc_sigsegv).
    pub want_off: bool,
    /// The host thread's.
    pub host_off: bool,
}

impl Tsc {
    /// The host call that brings the host thread to the guest's mode, if it differs (the
    /// caller makes it in the stub thread before the guest runs).
    pub fn sync_call(&mut self) -> Option<(u64, [u64; 6])> {
        if self.want_off == self.host_off {
            return None;
        }
        let c = crate::arch::tsc_call(self.want_off)?;
        self.host_off = self.want_off;
        Some(c)
    }

    /// The state of a host thread cloned from this one.
    pub fn inherited(self) -> Tsc {
        Tsc {
            want_off: self.host_off,
            host_off: self.host_off,
        }
    }
}

/// One guest thread as the run loop sees it, in whichever engine runs it.
pub struct GuestThread {
    /// The guest registers (valid whenever the guest is not running).
    pub regs: Regs,
    engine: Engine,
}

/// What a new host thread of an existing stub needs to be attached from another kernel thread.
#[derive(Clone)]
pub enum SiblingSeed {
    Ptrace(ptrace::SiblingSeed),
    Seccomp(seccomp::SeccompSeed),
}

/// Makes host mapping changes in a seccomp stub process through its mapper thread, from a
/// kernel thread that does not serve it (a shootdown: `crate::shootdown`). Weak: it neither
/// keeps the stub alive nor counts as a thread sharing it.
#[derive(Clone)]
pub struct HostMapper(std::sync::Weak<seccomp::SeccompProcess>);

impl HostMapper {
    /// Makes `ops` in the stub and waits until the mapper has acknowledged them (its eventfd,
    /// which the guest cannot forge), then puts the frames of `gather`; the caller holds the
    /// stub's mm lock. False if the stub is gone. If the mapper fails, the stub process is
    /// killed: a host mapping must not outlive the PTE it stood for.
    pub fn apply(&self, ops: &[HostOp], gather: Gather) -> bool {
        let Some(p) = self.0.upgrade() else {
            return false;
        };
        if let Err(e) = p.map_ops(ops, gather) {
            log::warn!("shootdown: stub {}: {e}; killing it", p.pid());
            um_os_linux::stub::kill(p.pid());
        }
        true
    }
}

impl SiblingSeed {
    /// Takes over host thread `tid` of the seed's stub process on the calling host thread.
    pub fn attach(&self, tid: libc::pid_t, regs: Regs) -> io::Result<GuestThread> {
        let engine = match self {
            SiblingSeed::Ptrace(s) => Engine::Ptrace(s.attach(tid, regs)?),
            SiblingSeed::Seccomp(s) => Engine::Seccomp(s.attach(tid, regs)?),
        };
        Ok(GuestThread { regs, engine })
    }
}

impl GuestThread {
    /// Starts a fresh stub process in the kernel's engine. Must run on the host thread that
    /// will serve it.
    pub fn new_process(k: &Kernel) -> io::Result<GuestThread> {
        let engine = match k.engine {
            EngineKind::Ptrace(i) => Engine::Ptrace(ptrace::PtraceThread::new_process(k, i)?),
            EngineKind::Seccomp(t) => Engine::Seccomp(seccomp::SeccompThread::new_process(k, t)?),
        };
        let regs = *match &engine {
            Engine::Ptrace(p) => p.template(),
            Engine::Seccomp(s) => s.template(),
        };
        Ok(GuestThread { regs, engine })
    }

    /// Replays `ops`, then runs the guest until the next event. `interrupted` is asked once
    /// the stub is ready: a signal that arrived meanwhile is served before the guest runs.
    pub fn switch(&mut self, ops: &[HostOp], interrupted: impl Fn() -> bool) -> io::Result<Event> {
        match &mut self.engine {
            Engine::Ptrace(p) => {
                p.regs = self.regs;
                let r = p.switch(ops, interrupted);
                self.regs = p.regs;
                r
            }
            Engine::Seccomp(s) => {
                s.regs = self.regs;
                let r = s.switch(ops, interrupted);
                self.regs = s.regs;
                r
            }
        }
    }

    /// Makes the host mapping changes `ops` now and waits until they are done, then puts the
    /// frames of `gather` (whose host mappings they removed); the guest does not run. The
    /// caller holds the address space's mm lock: that is what keeps the host in the order the
    /// mm made its changes when several threads take ops (ARCHITECTURE.md, "The seccomp
    /// engine", host-op ordering). For a fork, whose child must not run before the parent's
    /// pages are write-protected in the host.
    pub fn apply_now(&mut self, ops: &[HostOp], gather: Gather) -> io::Result<()> {
        match &mut self.engine {
            Engine::Ptrace(p) => {
                p.apply_now(ops)?;
                drop(gather);
                Ok(())
            }
            Engine::Seccomp(s) => s.apply_now(ops, gather),
        }
    }

    /// Hands the host mapping changes `ops` on in the mm's order, with the frames `gather`
    /// whose host mappings they remove; the caller holds the mm lock. The ptrace engine makes
    /// them now ([`Self::apply_now`]); the seccomp engine queues them in the mapper's ring and
    /// returns, its next resume of this thread going through the mapper after them, and the
    /// frames put once the mapper has acknowledged them.
    pub fn queue_now(&mut self, ops: &[HostOp], gather: Gather) -> io::Result<()> {
        match &mut self.engine {
            Engine::Ptrace(_) => self.apply_now(ops, gather),
            Engine::Seccomp(s) => s.queue_now(ops, gather),
        }
    }

    /// Whether the ops taken from the mm must be handed on under the mm lock
    /// ([`Self::queue_now`]) rather than to [`Self::switch`]: always. In the ptrace engine the
    /// injected calls are synchronous anyway; in the seccomp engine a shootdown from another
    /// process ([`HostMapper`]) may take this address space's later ops at any time: they must
    /// not reach the mapper's ring before these.
    pub fn ordered_apply(&self) -> bool {
        true
    }

    /// A handle that makes host mapping changes in this thread's stub process from any
    /// kernel thread (the seccomp engine's mapper); None in the ptrace engine.
    pub fn host_mapper(&self) -> Option<HostMapper> {
        match &self.engine {
            Engine::Ptrace(_) => None,
            Engine::Seccomp(s) => Some(HostMapper(s.mapper())),
        }
    }

    /// Whether `rdtsc` must fault in this thread (prctl(PR_SET_TSC, PR_TSC_SIGSEGV)): the
    /// next switch makes the host thread agree before the guest runs.
    pub fn set_tsc_sigsegv(&mut self, off: bool) {
        match &mut self.engine {
            Engine::Ptrace(p) => p.tsc.want_off = off,
            Engine::Seccomp(s) => s.tsc.want_off = off,
        }
    }

    /// Wall time (ns) spent spinning for handoffs since the last call: by the stub thread
    /// while the kernel served, and by the kernel thread while the guest ran (the seccomp
    /// engine; the ptrace engine never spins). Neither is the guest's CPU time.
    pub fn take_spin(&mut self) -> (u64, u64) {
        match &mut self.engine {
            Engine::Ptrace(_) => (0, 0),
            Engine::Seccomp(s) => s.take_spin(),
        }
    }

    /// Creates a new host thread in this thread's stub process, for a guest thread that shares
    /// the address space: its host tid and the seed its serving thread attaches with.
    pub fn spawn_thread(&mut self) -> io::Result<(libc::pid_t, SiblingSeed)> {
        match &mut self.engine {
            Engine::Ptrace(p) => {
                let tid = p.spawn_thread()?;
                Ok((tid, SiblingSeed::Ptrace(p.sibling_template())))
            }
            Engine::Seccomp(s) => {
                let (tid, seed) = s.spawn_thread()?;
                Ok((tid, SiblingSeed::Seccomp(seed)))
            }
        }
    }

    /// The stub's host pid.
    pub fn pid(&self) -> libc::pid_t {
        match &self.engine {
            Engine::Ptrace(p) => p.pid(),
            Engine::Seccomp(s) => s.pid(),
        }
    }

    /// This thread's host tid.
    pub fn tid(&self) -> libc::pid_t {
        match &self.engine {
            Engine::Ptrace(p) => p.tid(),
            Engine::Seccomp(s) => s.tid(),
        }
    }

    /// Whether other guest threads run in the same stub process.
    pub fn shares_stub(&self) -> bool {
        match &self.engine {
            Engine::Ptrace(p) => p.shares_stub(),
            Engine::Seccomp(s) => s.shares_stub(),
        }
    }

    /// The register template of this stub (for building exec registers).
    pub fn template(&self) -> &Regs {
        match &self.engine {
            Engine::Ptrace(p) => p.template(),
            Engine::Seccomp(s) => s.template(),
        }
    }

    /// The guest's FP/SIMD registers (the `NT_PRFPREG` image).
    pub fn get_fpregs(&self) -> io::Result<Vec<u8>> {
        match &self.engine {
            Engine::Ptrace(p) => p.get_fpregs(),
            Engine::Seccomp(s) => s.get_fpregs(),
        }
    }

    /// Sets the guest's FP/SIMD registers.
    pub fn set_fpregs(&self, b: &[u8]) -> io::Result<()> {
        match &self.engine {
            Engine::Ptrace(p) => p.set_fpregs(b),
            Engine::Seccomp(s) => s.set_fpregs(b),
        }
    }

    /// Ends this host thread (the whole stub process if no other guest thread uses it).
    pub fn kill(&mut self) -> io::Result<()> {
        match &mut self.engine {
            Engine::Ptrace(p) => p.kill(),
            Engine::Seccomp(s) => s.kill(),
        }
    }
}
