//! ptrace, with the tracee's state in types (after Reverie's `safeptrace`).
//!
//! A [`Stopped`] tracee is the only thing whose registers can be read or written; resuming it
//! consumes the handle and gives a [`Running`] one, whose only operation is to wait for the next
//! [`Event`]. So "wrote registers of a running thread" cannot be written down.
//!
//! All requests must come from the host thread that attached (Linux ptrace(2): the tracer is a
//! thread, not a process); the kernel therefore serves each guest thread from one host thread.

use std::io;

/// The host signal the kernel sends a stub thread to interrupt guest code it runs (a guest
/// signal is pending for it). A real-time signal that nothing else uses.
pub const KICK_SIGNAL: i32 = 35;

/// `PTRACE_SYSEMU` (x86: 31; arm64: 31 since Linux 5.3). Not in every libc.
pub const PTRACE_SYSEMU: libc::c_uint = 31;
/// `NT_PRSTATUS`: general registers.
pub const NT_PRSTATUS: u32 = 1;
/// `NT_PRFPREG`: FP registers (x86 `user_fpregs_struct`, arm64 `user_fpsimd_state`).
pub const NT_PRFPREG: u32 = 2;
/// `NT_X86_XSTATE`.
pub const NT_X86_XSTATE: u32 = 0x202;
/// `NT_ARM_TLS`.
pub const NT_ARM_TLS: u32 = 0x401;
/// `NT_ARM_SYSTEM_CALL`.
pub const NT_ARM_SYSTEM_CALL: u32 = 0x404;

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// How to resume a stopped tracee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Run until the next syscall entry, which is reported and not executed (`PTRACE_SYSEMU`).
    Sysemu,
    /// Run until the next syscall entry or exit (`PTRACE_SYSCALL`).
    Syscall,
    /// Run freely (`PTRACE_CONT`).
    Cont,
    /// Single-step (`PTRACE_SINGLESTEP`). From a syscall stop on arm64 this is a pseudo-step:
    /// a SIGTRAP stop at syscall exit, before any user instruction runs.
    Step,
}

/// What a tracee did.
#[derive(Debug)]
pub enum Event {
    /// It stopped; see [`Stopped::stop`] for why.
    Stopped(Stopped),
    /// It exited with a status.
    Exited(i32),
    /// It was killed by a signal.
    Killed(i32),
}

/// Why a tracee stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// A syscall stop (`SIGTRAP | 0x80`, with `PTRACE_O_TRACESYSGOOD`).
    Syscall,
    /// A signal is about to be delivered (signal-delivery-stop).
    Signal(i32),
    /// A `PTRACE_EVENT_*` stop (event number), including group-stop/interrupt (`PTRACE_EVENT_STOP`).
    Event(i32, i32),
}

/// A traced host thread that is stopped.
#[derive(Debug)]
pub struct Stopped {
    tid: libc::pid_t,
    stop: Stop,
}

/// A traced host thread that is running.
#[derive(Debug)]
pub struct Running {
    tid: libc::pid_t,
}

/// Attaches to `tid` with `PTRACE_SEIZE` (options `EXITKILL | TRACESYSGOOD` plus `extra`),
/// interrupts it and waits for it to stop.
pub fn seize(tid: libc::pid_t, extra: libc::c_int) -> io::Result<Stopped> {
    let opts = libc::PTRACE_O_EXITKILL | libc::PTRACE_O_TRACESYSGOOD | extra;
    // SAFETY: PTRACE_SEIZE takes a pid and an options word; no pointers.
    check(unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0, opts as libc::c_long) })?;
    // SAFETY: PTRACE_INTERRUPT takes only a pid.
    check(unsafe { libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0) })?;
    match (Running { tid }).wait()? {
        Event::Stopped(s) => Ok(s),
        Event::Exited(c) => Err(io::Error::other(format!(
            "tracee exited ({c}) while attaching"
        ))),
        Event::Killed(s) => Err(io::Error::other(format!(
            "tracee killed by signal {s} while attaching"
        ))),
    }
}

impl Running {
    /// The host thread id.
    pub fn tid(&self) -> libc::pid_t {
        self.tid
    }

    /// Waits for the tracee's next event. `EINTR` is retried.
    pub fn wait(self) -> io::Result<Event> {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into our local.
            let r = unsafe { libc::waitpid(self.tid, &mut status, libc::__WALL) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            return Ok(decode(self.tid, status));
        }
    }
}

fn decode(tid: libc::pid_t, status: libc::c_int) -> Event {
    if libc::WIFEXITED(status) {
        return Event::Exited(libc::WEXITSTATUS(status));
    }
    if libc::WIFSIGNALED(status) {
        return Event::Killed(libc::WTERMSIG(status));
    }
    let sig = libc::WSTOPSIG(status);
    let event = (status >> 16) & 0xff;
    let stop = if sig == libc::SIGTRAP | 0x80 {
        Stop::Syscall
    } else if event != 0 {
        Stop::Event(event, sig)
    } else {
        Stop::Signal(sig)
    };
    Event::Stopped(Stopped { tid, stop })
}

impl Stopped {
    /// The host thread id.
    pub fn tid(&self) -> libc::pid_t {
        self.tid
    }

    /// Why it stopped.
    pub fn stop(&self) -> Stop {
        self.stop
    }

    /// Reads register set `nt` into `buf`; returns the number of bytes the host filled in.
    pub fn get_regset(&self, nt: u32, buf: &mut [u8]) -> io::Result<usize> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: the iovec describes `buf`, which outlives the call; the host writes at most
        // iov_len bytes and updates iov_len.
        check(unsafe { libc::ptrace(libc::PTRACE_GETREGSET, self.tid, nt as usize, &mut iov) })?;
        Ok(iov.iov_len)
    }

    /// Writes register set `nt` from `buf`.
    pub fn set_regset(&self, nt: u32, buf: &[u8]) -> io::Result<()> {
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut _,
            iov_len: buf.len(),
        };
        // SAFETY: the iovec describes `buf`; PTRACE_SETREGSET only reads from it.
        check(unsafe { libc::ptrace(libc::PTRACE_SETREGSET, self.tid, nt as usize, &mut iov) })?;
        Ok(())
    }

    /// The audit arch of the syscall this thread is stopped in (`PTRACE_GET_SYSCALL_INFO`,
    /// Linux 5.3: `struct ptrace_syscall_info` has `op` at byte 0 and `arch` at bytes 4..8),
    /// or `None` where the host has no such request.
    pub fn syscall_arch(&self) -> io::Result<Option<u32>> {
        let mut info = [0u8; 88];
        // SAFETY: the host writes at most `addr` (the buffer's length) bytes of
        // `struct ptrace_syscall_info` to `info`.
        let r = unsafe {
            libc::ptrace(
                0x420e, // PTRACE_GET_SYSCALL_INFO
                self.tid,
                info.len(),
                info.as_mut_ptr(),
            )
        };
        match check(r) {
            Ok(_) => Ok(Some(u32::from_le_bytes([
                info[4], info[5], info[6], info[7],
            ]))),
            Err(e) if e.raw_os_error() == Some(libc::EIO) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The siginfo of a signal-delivery-stop, as the raw 128 bytes.
    pub fn get_siginfo(&self) -> io::Result<[u8; 128]> {
        let mut si = [0u8; 128];
        // SAFETY: PTRACE_GETSIGINFO writes a siginfo_t (128 bytes) to the buffer.
        check(unsafe { libc::ptrace(libc::PTRACE_GETSIGINFO, self.tid, 0, si.as_mut_ptr()) })?;
        Ok(si)
    }

    /// Resumes the tracee, delivering host signal `sig` (0 for none).
    pub fn resume(self, how: Resume, sig: i32) -> io::Result<Running> {
        let req = match how {
            // (`as _`: the request type is c_uint in glibc's libc bindings, c_int in musl's.)
            Resume::Sysemu => PTRACE_SYSEMU as _,
            Resume::Syscall => libc::PTRACE_SYSCALL,
            Resume::Cont => libc::PTRACE_CONT,
            Resume::Step => libc::PTRACE_SINGLESTEP,
        };
        // SAFETY: a resume request with a signal number in `data`; no pointers.
        check(unsafe { libc::ptrace(req, self.tid, 0, sig as libc::c_long) })?;
        Ok(Running { tid: self.tid })
    }

    /// Detaches from the tracee, letting it run on untraced (`PTRACE_DETACH`, no signal).
    pub fn detach(self) -> io::Result<()> {
        // SAFETY: PTRACE_DETACH with a pid and signal 0; no pointers.
        check(unsafe { libc::ptrace(libc::PTRACE_DETACH, self.tid, 0, 0) })?;
        Ok(())
    }

    /// Gives up the handle without resuming (the caller kills the tracee).
    pub fn into_tid(self) -> libc::pid_t {
        self.tid
    }
}

/// Sends `sig` to one host thread.
pub fn tgkill(tgid: libc::pid_t, tid: libc::pid_t, sig: i32) -> io::Result<()> {
    // SAFETY: tgkill takes three integers.
    check(unsafe { libc::syscall(libc::SYS_tgkill, tgid, tid, sig) })?;
    Ok(())
}
