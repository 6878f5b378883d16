//! The ptrace engine: `PTRACE_SYSEMU` stops at every guest syscall without running it on the
//! host; page faults arrive as SIGSEGV signal-delivery-stops, which are suppressed.
//!
//! Hosts without `PTRACE_SYSEMU` (arm64 before Linux 5.3), and `nosysemu`/`nocancel` anywhere,
//! use `PTRACE_SYSCALL`: at the entry stop the call is neutralised, by setting its number to -1
//! ([`Intercept::Cancel`]) or, where a host seccomp filter kills on -1 (Android app sandboxes),
//! to getppid ([`Intercept::Substitute`]); the kernel's result is written at the exit stop.
//!
//! Host mapping changes are made by the stub itself: the engine writes them as a batch of
//! syscalls to the stub's data area and points the stub at its batch runner
//! (`PTRACE_CONT` until its `int3`), then restores the guest registers. The same data area and
//! batch format serve the seccomp engine.

use super::Event;
use crate::arch::Regs;
use crate::arch::native::host as arch;
use crate::arch::native::stub as layout;
use crate::kernel::Kernel;
use std::io;
use std::sync::{Arc, Mutex};
use um_mm::{HostOp, Prot};
use um_os_linux::ptrace::{self, Resume, Stop, Stopped};
use um_os_linux::shared::SharedPages;

/// Host syscall numbers the stub makes for the kernel, from the native table.
fn nr(name: &str) -> u64 {
    crate::arch::syscalls::number(name)
        .map(u64::from)
        .unwrap_or(u64::MAX)
}

/// How guest syscalls are kept from running on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intercept {
    /// `PTRACE_SYSEMU`: the host never runs the call.
    Sysemu,
    /// `PTRACE_SYSCALL`, number set to -1 at the entry stop (the host returns ENOSYS).
    Cancel,
    /// `PTRACE_SYSCALL`, number replaced by getppid at the entry stop (harmless, and allowed by
    /// any sandbox filter).
    Substitute,
}

/// One stub host process: a guest address space. Shared by the [`PtraceThread`]s of every
/// guest thread that runs in it (threads, and vfork children until they exec).
pub struct StubProcess {
    pid: libc::pid_t,
    base: u64,
    data: SharedPages,
    /// The data area holds one batch at a time.
    batch: Mutex<()>,
}

impl StubProcess {
    /// Host pid.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

impl Drop for StubProcess {
    fn drop(&mut self) {
        // The last thread is gone: make sure the host process is too.
        um_os_linux::stub::kill(self.pid);
    }
}

/// One guest thread under ptrace: a host thread of a stub process, traced by the kernel
/// thread that serves the guest thread.
pub struct PtraceThread {
    /// The stub thread, stopped (None only while a switch is in progress or after death).
    stopped: Option<Stopped>,
    /// The guest registers (valid whenever the guest is not running).
    pub regs: Regs,
    /// Registers of the stub as exec left it: segments and flags for injected calls.
    template: Regs,
    stub: Arc<StubProcess>,
    tid: libc::pid_t,
    intercept: Intercept,
    /// Whether rdtsc faults, for the guest thread and in its host thread.
    pub(crate) tsc: super::Tsc,
}

fn prot_bits(p: Prot) -> u64 {
    let mut v = 0;
    if p.contains(Prot::READ) {
        v |= libc::PROT_READ;
    }
    if p.contains(Prot::WRITE) {
        v |= libc::PROT_WRITE;
    }
    if p.contains(Prot::EXEC) {
        v |= libc::PROT_EXEC;
    }
    v as u64
}

/// The host call (number and arguments) the stub makes for one mapping change: mmap of the
/// physical memory fd (3 in every stub), munmap or mprotect. Shared with the seccomp engine.
pub(crate) fn host_call(op: &HostOp) -> (u64, [u64; 6]) {
    match *op {
        HostOp::Map {
            addr,
            len,
            prot,
            phys_offset,
        } => (
            nr("mmap"),
            [
                addr,
                len,
                prot_bits(prot),
                (libc::MAP_SHARED | libc::MAP_FIXED) as u64,
                3,
                phys_offset,
            ],
        ),
        HostOp::Unmap { addr, len } => (nr("munmap"), [addr, len, 0, 0, 0, 0]),
        HostOp::Protect { addr, len, prot } => {
            (nr("mprotect"), [addr, len, prot_bits(prot), 0, 0, 0])
        }
    }
}

impl PtraceThread {
    /// Starts a fresh stub process and makes it ready: its data area mapped, everything the
    /// host put in it (stack, vDSO) unmapped. Must run on the host thread that will serve it.
    pub fn new_process(k: &Kernel, intercept: Intercept) -> io::Result<PtraceThread> {
        let spawned = um_os_linux::stub::spawn(
            &k.stub.image,
            k.phys.fd(),
            &[layout::DATA_SIZE as usize],
            None,
        )?;
        let pid = spawned.pid;
        let data = spawned
            .areas
            .into_iter()
            .next()
            .ok_or_else(|| io::Error::other("no data area"))?;
        let base = k.stub.base;
        let stub = Arc::new(StubProcess {
            pid,
            base,
            data,
            batch: Mutex::new(()),
        });
        let t = ptrace::seize(pid, 0)?;
        let template = arch::get_regs(&t)?;
        let mut th = PtraceThread {
            stopped: Some(t),
            regs: template,
            template,
            stub,
            tid: pid,
            intercept,
            tsc: super::Tsc::default(),
        };
        let page = um_os_linux::probe::page_size() as u64;
        let data_addr = base + layout::DATA_OFFSET;
        let setup: [(u64, [u64; 6]); 3] = [
            (
                nr("mmap"),
                [
                    data_addr,
                    layout::DATA_SIZE,
                    (libc::PROT_READ | libc::PROT_WRITE) as u64,
                    (libc::MAP_SHARED | libc::MAP_FIXED) as u64,
                    4,
                    0,
                ],
            ),
            (nr("close"), [4, 0, 0, 0, 0, 0]),
            (nr("munmap"), [0, base, 0, 0, 0, 0]),
        ];
        let above = k
            .stub
            .unmap_above(page)
            .into_iter()
            .map(|(addr, len)| (nr("munmap"), [addr, len, 0, 0, 0, 0]));
        for (n, args) in setup.into_iter().chain(above) {
            let r = th.inject(n, args)?;
            if r < 0 && n != nr("close") {
                return Err(io::Error::other(format!(
                    "stub setup call {n} failed: {}",
                    io::Error::from_raw_os_error(-r as i32)
                )));
            }
        }
        Ok(th)
    }

    /// Creates a new host thread in this thread's stub process (for a guest thread that shares
    /// the address space); returns its host tid. It parks until [`SiblingSeed::attach`].
    pub fn spawn_thread(&mut self) -> io::Result<libc::pid_t> {
        let t = self.take()?;
        let (t, r) = arch::stub_clone_thread(t, self.stub.base, &self.template)?;
        self.stopped = Some(t);
        if r < 0 {
            return Err(io::Error::from_raw_os_error(-r as i32));
        }
        Ok(r as libc::pid_t)
    }

    /// A handle to this thread's stub process, for attaching new threads from another host
    /// thread.
    pub fn sibling_template(&self) -> SiblingSeed {
        SiblingSeed {
            template: self.template,
            stub: self.stub.clone(),
            intercept: self.intercept,
            tsc: self.tsc.inherited(),
        }
    }

    /// The stub's host pid.
    pub fn pid(&self) -> libc::pid_t {
        self.stub.pid
    }

    /// This thread's host tid.
    pub fn tid(&self) -> libc::pid_t {
        self.tid
    }

    /// Whether other guest threads run in the same stub process.
    pub fn shares_stub(&self) -> bool {
        Arc::strong_count(&self.stub) > 1
    }

    /// The register template of this stub (for building exec registers).
    pub fn template(&self) -> &Regs {
        &self.template
    }

    /// The guest's FP/SIMD registers (the FP image: x86 XSAVE buffer, arm64 fpsimd record).
    pub fn get_fpregs(&self) -> io::Result<Vec<u8>> {
        let t = self
            .stopped
            .as_ref()
            .ok_or_else(|| io::Error::other("stub is not stopped"))?;
        arch::get_fpregs(t)
    }

    /// Sets the guest's FP/SIMD registers.
    pub fn set_fpregs(&self, b: &[u8]) -> io::Result<()> {
        let t = self
            .stopped
            .as_ref()
            .ok_or_else(|| io::Error::other("stub is not stopped"))?;
        arch::set_fpregs(t, b)
    }

    fn take(&mut self) -> io::Result<Stopped> {
        self.stopped
            .take()
            .ok_or_else(|| io::Error::other("stub is not stopped"))
    }

    fn inject(&mut self, n: u64, args: [u64; 6]) -> io::Result<i64> {
        let t = self.take()?;
        let (t, r) = arch::stub_syscall(t, self.stub.base, &self.template, n, args)?;
        self.stopped = Some(t);
        Ok(r)
    }

    /// Replays host mapping changes in the stub.
    fn flush(&mut self, ops: &[HostOp]) -> io::Result<()> {
        let stub = self.stub.clone();
        let _batch = stub.batch.lock().unwrap_or_else(|e| e.into_inner());
        for chunk in ops.chunks(layout::MAX_OPS) {
            for (i, op) in chunk.iter().enumerate() {
                let (n, a) = host_call(op);
                let off = layout::OPS + i * layout::OP_SIZE;
                stub.data.store(off, n);
                for (j, v) in a.iter().enumerate() {
                    stub.data.store(off + 8 + j * 8, *v);
                }
            }
            stub.data.store(layout::COUNT, chunk.len() as u64);
            let t = self.take()?;
            let t = arch::stub_batch(t, stub.base, &self.template)?;
            self.stopped = Some(t);
            for (i, op) in chunk.iter().enumerate() {
                let res = stub
                    .data
                    .load(layout::OPS + i * layout::OP_SIZE + layout::RESULT_OFF)
                    as i64;
                // mm only protects pages it has PTEs for; if the host never had one mapped,
                // mprotect says ENOMEM and the next access simply faults it in.
                let ignorable =
                    matches!(op, HostOp::Protect { .. }) && res == -(libc::ENOMEM as i64);
                if (-4095..0).contains(&res) && !ignorable {
                    return Err(io::Error::other(format!(
                        "host mapping change {op:?} failed: {}",
                        io::Error::from_raw_os_error(-res as i32)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Makes `ops` in the host now ([`super::GuestThread::apply_now`]).
    pub fn apply_now(&mut self, ops: &[HostOp]) -> io::Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        self.flush(ops)
    }

    /// Replays `ops`, then runs the guest until the next event. `interrupted` is asked once
    /// the stub is ready: a signal that arrived meanwhile is served before the guest runs.
    pub fn switch(&mut self, ops: &[HostOp], interrupted: impl Fn() -> bool) -> io::Result<Event> {
        if !ops.is_empty() {
            self.flush(ops)?;
        }
        if let Some((n, args)) = self.tsc.sync_call() {
            let r = self.inject(n, args)?;
            if r < 0 {
                return Err(io::Error::other(format!(
                    "host prctl(PR_SET_TSC) failed: {}",
                    io::Error::from_raw_os_error(-r as i32)
                )));
            }
        }
        if interrupted() {
            return Ok(Event::Interrupted);
        }
        let t = self.take()?;
        arch::set_regs(&t, &self.regs)?;
        let how = if self.intercept == Intercept::Sysemu {
            Resume::Sysemu
        } else {
            Resume::Syscall
        };
        let mut running = t.resume(how, 0)?;
        loop {
            match running.wait()? {
                ptrace::Event::Stopped(s) => match s.stop() {
                    Stop::Syscall => {
                        // Leave the entry stop for the stop where the kernel answers the call
                        // (the fallbacks neutralise the call first): crate::arch::syscall_stop.
                        let neutral = match self.intercept {
                            Intercept::Sysemu => None,
                            Intercept::Cancel => Some(u64::MAX),
                            Intercept::Substitute => Some(nr("getppid")),
                        };
                        let (e, regs, native_abi) = crate::arch::syscall_stop(s, neutral)?;
                        self.regs = regs;
                        self.stopped = Some(e);
                        if !native_abi {
                            // An `int $0x80` call: without IA32 emulation (Linux built
                            // without CONFIG_IA32_EMULATION, or booted ia32_emulation=0) the
                            // instruction takes a #GP, SIGSEGV with SI_KERNEL at the
                            // instruction (arch/x86/kernel/traps.c exc_general_protection).
                            return Ok(Event::Signal {
                                signo: libc::SIGSEGV,
                                addr: 0,
                                code: 0x80,
                            });
                        }
                        return Ok(Event::Syscall);
                    }
                    Stop::Signal(sig) => {
                        let si = s.get_siginfo()?;
                        let code = i32::from_le_bytes([si[8], si[9], si[10], si[11]]);
                        let addr = u64::from_le_bytes(si[16..24].try_into().unwrap_or([0; 8]));
                        match sig {
                            libc::SIGSEGV
                            | libc::SIGILL
                            | libc::SIGFPE
                            | libc::SIGBUS
                            | libc::SIGTRAP => {
                                self.regs = arch::get_regs(&s)?;
                                self.stopped = Some(s);
                                // si_code > 0 means the kernel raised it for this instruction.
                                if sig == libc::SIGSEGV && code > 0 && code != 0x80 {
                                    // The siginfo does not say whether it was a write.
                                    return Ok(Event::Fault {
                                        addr,
                                        not_present: code == 1,
                                        write: false,
                                    });
                                }
                                return Ok(Event::Signal {
                                    signo: sig,
                                    addr,
                                    code,
                                });
                            }
                            // The kernel interrupting this thread (a guest signal for it).
                            crate::signal::KICK_SIGNAL => {
                                self.regs = arch::get_regs(&s)?;
                                self.stopped = Some(s);
                                return Ok(Event::Interrupted);
                            }
                            // Other asynchronous host signals to the stub (none are expected:
                            // the stub is in its own session) are dropped.
                            _ => running = s.resume(how, 0)?,
                        }
                    }
                    // Group-stop or PTRACE_INTERRUPT: just carry on.
                    Stop::Event(_, _) => running = s.resume(how, 0)?,
                },
                ptrace::Event::Exited(c) => {
                    return Err(io::Error::other(format!("stub exited ({c})")));
                }
                ptrace::Event::Killed(sig) => {
                    return Err(io::Error::other(format!("stub killed by signal {sig}")));
                }
            }
        }
    }

    /// Ends this host thread: the whole stub process if no other guest thread uses it,
    /// else just this thread (it makes an exit call). Waits until it is gone.
    pub fn kill(&mut self) -> io::Result<()> {
        let Some(s) = self.stopped.take() else {
            return Ok(());
        };
        let running = if self.shares_stub() {
            let mut r = self.template;
            r.set_syscall_nr(u64::MAX);
            arch::set_regs(&s, &r)?;
            match arch::stub_syscall(s, self.stub.base, &self.template, nr("exit"), [0; 6]) {
                // The thread is gone once the injected exit ran.
                Ok(_) | Err(_) => return Ok(()),
            }
        } else {
            um_os_linux::stub::kill(self.stub.pid);
            // A stopped tracee dies once resumed after SIGKILL; resuming fails if it is
            // already dead, which is fine. Every stop until the exit is resumed.
            match s.resume(Resume::Cont, 0) {
                Ok(r) => r,
                Err(_) => return Ok(()),
            }
        };
        let mut running = running;
        loop {
            match running.wait() {
                Ok(ptrace::Event::Stopped(s)) => match s.resume(Resume::Cont, 0) {
                    Ok(r) => running = r,
                    Err(_) => return Ok(()),
                },
                Ok(_) | Err(_) => return Ok(()),
            }
        }
    }
}

/// What a new host thread of an existing stub needs to be attached from another kernel
/// thread (see [`PtraceThread::sibling_template`]).
#[derive(Clone)]
pub struct SiblingSeed {
    template: Regs,
    stub: Arc<StubProcess>,
    intercept: Intercept,
    /// The TSC mode the new host thread inherited from the thread that cloned it.
    tsc: super::Tsc,
}

impl SiblingSeed {
    /// Seizes host thread `tid` of the seed's stub process on the calling host thread.
    pub fn attach(&self, tid: libc::pid_t, regs: Regs) -> io::Result<PtraceThread> {
        let t = ptrace::seize(tid, 0)?;
        Ok(PtraceThread {
            stopped: Some(t),
            regs,
            template: self.template,
            stub: self.stub.clone(),
            tid,
            intercept: self.intercept,
            tsc: self.tsc,
        })
    }
}

impl Drop for PtraceThread {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
