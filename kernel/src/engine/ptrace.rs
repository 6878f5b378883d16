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

/// One guest thread under ptrace, with its stub process.
pub struct PtraceThread {
    /// The stub thread, stopped (None only while a switch is in progress or after death).
    stopped: Option<Stopped>,
    /// The guest registers (valid whenever the guest is not running).
    pub regs: Regs,
    /// Registers of the stub as exec left it: segments and flags for injected calls.
    template: Regs,
    base: u64,
    data: SharedPages,
    pid: libc::pid_t,
    intercept: Intercept,
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

impl PtraceThread {
    /// Starts a fresh stub process and makes it ready: its data area mapped, everything the
    /// host put in it (stack, vDSO) unmapped. Must run on the host thread that will serve it.
    pub fn new_process(k: &Kernel, intercept: Intercept) -> io::Result<PtraceThread> {
        let data = SharedPages::new(layout::DATA_SIZE as usize)?;
        let pid = um_os_linux::stub::spawn(&k.stub.image, &[k.phys.fd(), data.fd()])?;
        let t = match ptrace::seize(pid, 0) {
            Ok(t) => t,
            Err(e) => {
                um_os_linux::stub::kill(pid);
                return Err(e);
            }
        };
        let template = arch::get_regs(&t)?;
        let base = k.stub.base;
        let mut th = PtraceThread {
            stopped: Some(t),
            regs: template,
            template,
            base,
            data,
            pid,
            intercept,
        };
        let top = 1u64 << k.stub.va_bits;
        let page = um_os_linux::probe::page_size() as u64;
        let data_addr = base + layout::DATA_OFFSET;
        let setup: [(u64, [u64; 6]); 4] = [
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
            (
                nr("munmap"),
                [
                    base + layout::STUB_REGION,
                    top - page - (base + layout::STUB_REGION),
                    0,
                    0,
                    0,
                    0,
                ],
            ),
        ];
        for (n, args) in setup {
            let r = th.inject(n, args)?;
            if r < 0 && n != nr("close") {
                let _ = th.kill();
                return Err(io::Error::other(format!(
                    "stub setup call {n} failed: {}",
                    io::Error::from_raw_os_error(-r as i32)
                )));
            }
        }
        Ok(th)
    }

    /// The stub's host pid.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// The register template of this stub (for building exec registers).
    pub fn template(&self) -> &Regs {
        &self.template
    }

    fn take(&mut self) -> io::Result<Stopped> {
        self.stopped
            .take()
            .ok_or_else(|| io::Error::other("stub is not stopped"))
    }

    fn inject(&mut self, n: u64, args: [u64; 6]) -> io::Result<i64> {
        let t = self.take()?;
        let (t, r) = arch::stub_syscall(t, self.base, &self.template, n, args)?;
        self.stopped = Some(t);
        Ok(r)
    }

    /// Replays host mapping changes in the stub.
    fn flush(&mut self, ops: &[HostOp]) -> io::Result<()> {
        let (mmap, munmap, mprotect) = (nr("mmap"), nr("munmap"), nr("mprotect"));
        for chunk in ops.chunks(layout::MAX_OPS) {
            for (i, op) in chunk.iter().enumerate() {
                let (n, a): (u64, [u64; 6]) = match *op {
                    HostOp::Map {
                        addr,
                        len,
                        prot,
                        phys_offset,
                    } => (
                        mmap,
                        [
                            addr,
                            len,
                            prot_bits(prot),
                            (libc::MAP_SHARED | libc::MAP_FIXED) as u64,
                            3,
                            phys_offset,
                        ],
                    ),
                    HostOp::Unmap { addr, len } => (munmap, [addr, len, 0, 0, 0, 0]),
                    HostOp::Protect { addr, len, prot } => {
                        (mprotect, [addr, len, prot_bits(prot), 0, 0, 0])
                    }
                };
                let off = layout::OPS + i * layout::OP_SIZE;
                self.data.store(off, n);
                for (j, v) in a.iter().enumerate() {
                    self.data.store(off + 8 + j * 8, *v);
                }
            }
            self.data.store(layout::COUNT, chunk.len() as u64);
            let t = self.take()?;
            let t = arch::stub_batch(t, self.base, &self.template)?;
            self.stopped = Some(t);
            for (i, op) in chunk.iter().enumerate() {
                let res = self
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

    /// Replays `ops`, then runs the guest until the next event.
    pub fn switch(&mut self, ops: &[HostOp]) -> io::Result<Event> {
        if !ops.is_empty() {
            self.flush(ops)?;
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
                    Stop::Syscall if self.intercept == Intercept::Sysemu => {
                        self.regs = arch::get_regs(&s)?;
                        self.stopped = Some(s);
                        return Ok(Event::Syscall);
                    }
                    Stop::Syscall => {
                        // Entry stop: keep the guest's registers, neutralise the call, and run
                        // to the exit stop, where the kernel's result will be written.
                        let regs = arch::get_regs(&s)?;
                        let mut neutral = regs;
                        neutral.set_syscall_nr(match self.intercept {
                            Intercept::Substitute => nr("getppid"),
                            _ => u64::MAX,
                        });
                        arch::set_regs(&s, &neutral)?;
                        let exit = s.resume(Resume::Syscall, 0)?.wait()?;
                        match exit {
                            ptrace::Event::Stopped(e) if e.stop() == Stop::Syscall => {
                                self.regs = regs;
                                self.stopped = Some(e);
                                return Ok(Event::Syscall);
                            }
                            ptrace::Event::Stopped(e) => {
                                return Err(io::Error::other(format!(
                                    "no syscall-exit stop: {:?}",
                                    e.stop()
                                )));
                            }
                            ptrace::Event::Exited(c) => {
                                return Err(io::Error::other(format!("stub exited ({c})")));
                            }
                            ptrace::Event::Killed(sig) => {
                                return Err(io::Error::other(format!(
                                    "stub killed by signal {sig}"
                                )));
                            }
                        }
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
                                    return Ok(Event::Fault {
                                        addr,
                                        not_present: code == 1,
                                    });
                                }
                                return Ok(Event::Signal {
                                    signo: sig,
                                    addr,
                                    code,
                                });
                            }
                            // Asynchronous host signals to the stub (none are expected: the
                            // stub is in its own session) are dropped.
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

    /// Kills the stub process and waits until it is gone (reaped: no zombie stays behind).
    pub fn kill(&mut self) -> io::Result<()> {
        um_os_linux::stub::kill(self.pid);
        // A stopped tracee dies once resumed after SIGKILL; resuming fails if it is already
        // dead, which is fine. Every stop until the exit is resumed.
        let Some(s) = self.stopped.take() else {
            return Ok(());
        };
        let Ok(mut running) = s.resume(Resume::Cont, 0) else {
            return Ok(());
        };
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

impl Drop for PtraceThread {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
