//! Signals: numbers, `sigaction` flags, `si_code` values and the structures the signal syscalls
//! exchange, identical on x86_64 and arm64.
//!
//! Sources: `include/uapi/asm-generic/signal.h` and `arch/x86/include/uapi/asm/signal.h` (signal
//! numbers, the same on both), `include/uapi/asm-generic/signal-defs.h` (`SA_*`, `SIG_*`),
//! `arch/{x86,arm64}/include/uapi/asm/signal.h` (`SA_RESTORER` 0x04000000 on both),
//! `include/uapi/asm-generic/siginfo.h` (`siginfo_t`, `SI_*`, `ILL_*`, `FPE_*`, `SEGV_*`, `BUS_*`,
//! `TRAP_*`, `CLD_*`, `POLL_*`, `SYS_*`), `include/linux/signal_types.h` / `kernel/signal.c`
//! (the `rt_sigaction` argument layout `struct sigaction` with `sa_restorer`; `sigset_t` is one
//! 64-bit word because `_NSIG` is 64), `include/uapi/linux/signal.h` (`SS_*`),
//! `include/linux/signal.h` (`sig_kernel_*` default actions).

use static_assertions::const_assert_eq;

/// A signal set: bit `n - 1` is signal `n` (`_NSIG_WORDS` is 1 on 64-bit).
pub type SigsetT = u64;

/// The mask bit of signal `sig` (1..=64); 0 for out-of-range numbers.
pub const fn sigmask(sig: u32) -> SigsetT {
    if sig >= 1 && sig <= NSIG {
        1u64 << (sig - 1)
    } else {
        0
    }
}

/// Hangup.
pub const SIGHUP: u32 = 1;
/// Interrupt (^C).
pub const SIGINT: u32 = 2;
/// Quit (^\).
pub const SIGQUIT: u32 = 3;
/// Illegal instruction.
pub const SIGILL: u32 = 4;
/// Trace/breakpoint trap.
pub const SIGTRAP: u32 = 5;
/// Abort.
pub const SIGABRT: u32 = 6;
/// Same as `SIGABRT`.
pub const SIGIOT: u32 = 6;
/// Bus error.
pub const SIGBUS: u32 = 7;
/// Arithmetic exception.
pub const SIGFPE: u32 = 8;
/// Kill (cannot be caught).
pub const SIGKILL: u32 = 9;
/// User signal 1.
pub const SIGUSR1: u32 = 10;
/// Segmentation fault.
pub const SIGSEGV: u32 = 11;
/// User signal 2.
pub const SIGUSR2: u32 = 12;
/// Broken pipe.
pub const SIGPIPE: u32 = 13;
/// Alarm clock.
pub const SIGALRM: u32 = 14;
/// Termination.
pub const SIGTERM: u32 = 15;
/// Coprocessor stack fault (unused).
pub const SIGSTKFLT: u32 = 16;
/// Child stopped or exited.
pub const SIGCHLD: u32 = 17;
/// Continue.
pub const SIGCONT: u32 = 18;
/// Stop (cannot be caught).
pub const SIGSTOP: u32 = 19;
/// Terminal stop (^Z).
pub const SIGTSTP: u32 = 20;
/// Background read from the tty.
pub const SIGTTIN: u32 = 21;
/// Background write to the tty.
pub const SIGTTOU: u32 = 22;
/// Urgent socket data.
pub const SIGURG: u32 = 23;
/// CPU time limit exceeded.
pub const SIGXCPU: u32 = 24;
/// File size limit exceeded.
pub const SIGXFSZ: u32 = 25;
/// Virtual timer.
pub const SIGVTALRM: u32 = 26;
/// Profiling timer.
pub const SIGPROF: u32 = 27;
/// Window size change.
pub const SIGWINCH: u32 = 28;
/// I/O possible.
pub const SIGIO: u32 = 29;
/// Same as `SIGIO`.
pub const SIGPOLL: u32 = 29;
/// Power failure.
pub const SIGPWR: u32 = 30;
/// Bad system call.
pub const SIGSYS: u32 = 31;
/// First real-time signal as the kernel numbers them (libcs reserve the first two or three).
pub const SIGRTMIN: u32 = 32;
/// Last real-time signal.
pub const SIGRTMAX: u32 = 64;
/// `_NSIG`: the number of signals.
pub const NSIG: u32 = 64;

/// `sa_handler` value: default action.
pub const SIG_DFL: u64 = 0;
/// `sa_handler` value: ignore.
pub const SIG_IGN: u64 = 1;
/// `rt_sigprocmask` how: add to the mask.
pub const SIG_BLOCK: u32 = 0;
/// Remove from the mask.
pub const SIG_UNBLOCK: u32 = 1;
/// Replace the mask.
pub const SIG_SETMASK: u32 = 2;

/// `sa_flags`: no `SIGCHLD` when children stop.
pub const SA_NOCLDSTOP: u64 = 0x0000_0001;
/// Do not create zombies.
pub const SA_NOCLDWAIT: u64 = 0x0000_0002;
/// Three-argument handler with `siginfo_t`.
pub const SA_SIGINFO: u64 = 0x0000_0004;
/// Flag-support probe bit: never reported back as set.
pub const SA_UNSUPPORTED: u64 = 0x0000_0400;
/// Keep tag bits in `si_addr` (arm64 MTE/TBI).
pub const SA_EXPOSE_TAGBITS: u64 = 0x0000_0800;
/// `sa_restorer` is valid (x86_64 and arm64 both define it).
pub const SA_RESTORER: u64 = 0x0400_0000;
/// Run on the alternate signal stack.
pub const SA_ONSTACK: u64 = 0x0800_0000;
/// Restart interrupted syscalls.
pub const SA_RESTART: u64 = 0x1000_0000;
/// Do not block the signal in its handler.
pub const SA_NODEFER: u64 = 0x4000_0000;
/// Reset to `SIG_DFL` on delivery.
pub const SA_RESETHAND: u64 = 0x8000_0000;

/// `sigaltstack` `ss_flags`: currently on the alternate stack.
pub const SS_ONSTACK: i32 = 1;
/// The alternate stack is disabled.
pub const SS_DISABLE: i32 = 2;
/// Disarm the stack while a handler runs on it.
pub const SS_AUTODISARM: i32 = 1 << 31;

/// `si_code`: sent by `kill`/`raise`.
pub const SI_USER: i32 = 0;
/// Sent by the kernel.
pub const SI_KERNEL: i32 = 0x80;
/// Sent by `sigqueue`.
pub const SI_QUEUE: i32 = -1;
/// POSIX timer expiry.
pub const SI_TIMER: i32 = -2;
/// Message queue state change.
pub const SI_MESGQ: i32 = -3;
/// AIO completion.
pub const SI_ASYNCIO: i32 = -4;
/// Queued SIGIO.
pub const SI_SIGIO: i32 = -5;
/// Sent by `tkill`/`tgkill`.
pub const SI_TKILL: i32 = -6;
/// Sent by execve killing subsidiary threads.
pub const SI_DETHREAD: i32 = -7;
/// Sent by glibc async name lookup completion.
pub const SI_ASYNCNL: i32 = -60;

/// `SIGILL`: illegal opcode.
pub const ILL_ILLOPC: i32 = 1;
/// Illegal operand.
pub const ILL_ILLOPN: i32 = 2;
/// Illegal addressing mode.
pub const ILL_ILLADR: i32 = 3;
/// Illegal trap.
pub const ILL_ILLTRP: i32 = 4;
/// Privileged opcode.
pub const ILL_PRVOPC: i32 = 5;
/// Privileged register.
pub const ILL_PRVREG: i32 = 6;
/// Coprocessor error.
pub const ILL_COPROC: i32 = 7;
/// Internal stack error.
pub const ILL_BADSTK: i32 = 8;
/// Unimplemented instruction address.
pub const ILL_BADIADDR: i32 = 9;

/// `SIGFPE`: integer divide by zero.
pub const FPE_INTDIV: i32 = 1;
/// Integer overflow.
pub const FPE_INTOVF: i32 = 2;
/// Floating-point divide by zero.
pub const FPE_FLTDIV: i32 = 3;
/// Floating-point overflow.
pub const FPE_FLTOVF: i32 = 4;
/// Floating-point underflow.
pub const FPE_FLTUND: i32 = 5;
/// Floating-point inexact result.
pub const FPE_FLTRES: i32 = 6;
/// Floating-point invalid operation.
pub const FPE_FLTINV: i32 = 7;
/// Subscript out of range.
pub const FPE_FLTSUB: i32 = 8;
/// Undiagnosed floating-point exception.
pub const FPE_FLTUNK: i32 = 14;
/// Trap on condition.
pub const FPE_CONDTRAP: i32 = 15;

/// `SIGSEGV`: address not mapped.
pub const SEGV_MAPERR: i32 = 1;
/// Invalid permissions for a mapped object.
pub const SEGV_ACCERR: i32 = 2;

/// x86 `sigcontext.trapno` of a page fault (`X86_TRAP_PF`, arch/x86/include/asm/trapnr.h). The
/// host kernel records the vector and the page-fault error code of a user fault for the signal
/// (arch/x86/mm/fault.c `set_signal_archinfo`) and copies both into the frame's `trapno` and
/// `err` (arch/x86/kernel/signal_64.c `setup_sigcontext`).
pub const X86_TRAP_PF: u64 = 14;
/// The page-fault error code's bit for a write access (`X86_PF_WRITE`,
/// arch/x86/include/asm/trap_pf.h).
pub const X86_PF_WRITE: u64 = 1 << 1;
/// Failed address bound checks.
pub const SEGV_BNDERR: i32 = 3;
/// Failed protection key checks.
pub const SEGV_PKUERR: i32 = 4;
/// ADI not enabled (sparc).
pub const SEGV_ACCADI: i32 = 5;
/// Disrupting MCD error (sparc).
pub const SEGV_ADIDERR: i32 = 6;
/// Precise MCD exception (sparc).
pub const SEGV_ADIPERR: i32 = 7;
/// Asynchronous MTE tag check fault (arm64).
pub const SEGV_MTEAERR: i32 = 8;
/// Synchronous MTE tag check fault (arm64).
pub const SEGV_MTESERR: i32 = 9;

/// `SIGBUS`: invalid address alignment.
pub const BUS_ADRALN: i32 = 1;
/// Non-existent physical address.
pub const BUS_ADRERR: i32 = 2;
/// Object-specific hardware error (e.g. access beyond the end of a mapped file).
pub const BUS_OBJERR: i32 = 3;
/// Hardware memory error consumed: action required.
pub const BUS_MCEERR_AR: i32 = 4;
/// Hardware memory error detected: action optional.
pub const BUS_MCEERR_AO: i32 = 5;

/// `SIGTRAP`: process breakpoint.
pub const TRAP_BRKPT: i32 = 1;
/// Process trace trap.
pub const TRAP_TRACE: i32 = 2;
/// Process taken branch trap.
pub const TRAP_BRANCH: i32 = 3;
/// Hardware breakpoint/watchpoint.
pub const TRAP_HWBKPT: i32 = 4;
/// Undiagnosed trap.
pub const TRAP_UNK: i32 = 5;
/// Perf event with `sigtrap=1`.
pub const TRAP_PERF: i32 = 6;

/// `SIGCHLD`: child exited.
pub const CLD_EXITED: i32 = 1;
/// Child was killed.
pub const CLD_KILLED: i32 = 2;
/// Child terminated abnormally (core dump).
pub const CLD_DUMPED: i32 = 3;
/// Traced child has trapped.
pub const CLD_TRAPPED: i32 = 4;
/// Child has stopped.
pub const CLD_STOPPED: i32 = 5;
/// Stopped child has continued.
pub const CLD_CONTINUED: i32 = 6;

/// `SIGPOLL`: data input available.
pub const POLL_IN: i32 = 1;
/// Output buffers available.
pub const POLL_OUT: i32 = 2;
/// Input message available.
pub const POLL_MSG: i32 = 3;
/// I/O error.
pub const POLL_ERR: i32 = 4;
/// High priority input available.
pub const POLL_PRI: i32 = 5;
/// Device disconnected.
pub const POLL_HUP: i32 = 6;

/// `SIGSYS`: seccomp triggered.
pub const SYS_SECCOMP: i32 = 1;
/// Syscall user dispatch triggered.
pub const SYS_USER_DISPATCH: i32 = 2;

/// `sigevent.sigev_notify`: deliver a signal.
pub const SIGEV_SIGNAL: i32 = 0;
/// No notification.
pub const SIGEV_NONE: i32 = 1;
/// Start a thread (libc-level).
pub const SIGEV_THREAD: i32 = 2;
/// Deliver to a specific thread.
pub const SIGEV_THREAD_ID: i32 = 4;
/// `sizeof(struct sigevent)` (`SIGEV_MAX_SIZE`, include/uapi/asm-generic/siginfo.h).
pub const SIGEVENT_SIZE: usize = 64;

/// What happens to a process when a signal with `SIG_DFL` disposition arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DefaultAction {
    /// Terminate.
    Terminate,
    /// Terminate and dump core.
    CoreDump,
    /// Ignore.
    Ignore,
    /// Stop.
    Stop,
    /// Continue (if stopped).
    Continue,
}

/// The default action of signal `sig` (`include/linux/signal.h`, `SIG_KERNEL_*_MASK`); real-time
/// and unknown signals terminate.
pub const fn default_action(sig: u32) -> DefaultAction {
    match sig {
        SIGCHLD | SIGURG | SIGWINCH => DefaultAction::Ignore,
        SIGCONT => DefaultAction::Continue,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => DefaultAction::Stop,
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ
        | SIGSYS => DefaultAction::CoreDump,
        _ => DefaultAction::Terminate,
    }
}

/// Signals that can be neither caught, blocked nor ignored.
pub const UNBLOCKABLE: SigsetT = sigmask(SIGKILL) | sigmask(SIGSTOP);

crate::pod_struct! {
    /// `stack_t` (`sigaltstack`): 24 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Stack {
        /// Base address.
        pub ss_sp: u64,
        /// `SS_*`.
        pub ss_flags: i32,
        /// Padding.
        pub pad: i32,
        /// Size in bytes.
        pub ss_size: u64,
    }
}

const_assert_eq!(core::mem::size_of::<Stack>(), 24);
const_assert_eq!(core::mem::offset_of!(Stack, ss_flags), 8);
const_assert_eq!(core::mem::offset_of!(Stack, ss_size), 16);

crate::pod_struct! {
    /// The `struct sigaction` that `rt_sigaction` reads and writes on x86_64 and arm64 (both
    /// define `SA_RESTORER`, so `sa_restorer` sits before the mask): 32 bytes. The syscall's
    /// `sigsetsize` argument must be 8.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct KernelSigaction {
        /// Handler address, or `SIG_DFL`/`SIG_IGN`.
        pub sa_handler: u64,
        /// `SA_*`.
        pub sa_flags: u64,
        /// Return trampoline (with `SA_RESTORER`; x86_64 libcs always set it, arm64 uses the vDSO).
        pub sa_restorer: u64,
        /// Signals blocked while the handler runs.
        pub sa_mask: SigsetT,
    }
}

const_assert_eq!(core::mem::size_of::<KernelSigaction>(), 32);
const_assert_eq!(core::mem::offset_of!(KernelSigaction, sa_flags), 8);
const_assert_eq!(core::mem::offset_of!(KernelSigaction, sa_restorer), 16);
const_assert_eq!(core::mem::offset_of!(KernelSigaction, sa_mask), 24);

crate::pod_struct! {
    /// `siginfo_t`: 128 bytes (`SI_MAX_SIZE`). The header (`si_signo`, `si_errno`, `si_code`) is
    /// followed by 4 bytes of padding and the 112-byte `_sifields` union, kept here as 32-bit
    /// words; use the constructors and accessors for the union members. Offsets (from the start
    /// of the struct, `include/uapi/asm-generic/siginfo.h`, 64-bit): `si_pid` 16, `si_uid` 20,
    /// `si_status` 24, `si_utime` 32, `si_stime` 40 (sigchld); `si_tid` 16, `si_overrun` 20,
    /// `si_value` 24 (timer, rt); `si_addr` 16, `si_addr_lsb` 24 (sigfault); `si_band` 16,
    /// `si_fd` 24 (sigpoll); `si_call_addr` 16, `si_syscall` 24, `si_arch` 28 (sigsys).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[repr(align(8))]
    pub struct Siginfo {
        /// Signal number.
        pub si_signo: i32,
        /// An errno value (rarely used).
        pub si_errno: i32,
        /// `SI_*` or a signal-specific code.
        pub si_code: i32,
        /// Padding before the union.
        pub pad0: i32,
        /// The `_sifields` union as little-endian 32-bit words.
        pub fields: [u32; 28],
    }
}

const_assert_eq!(core::mem::size_of::<Siginfo>(), 128);
const_assert_eq!(core::mem::align_of::<Siginfo>(), 8);
const_assert_eq!(core::mem::offset_of!(Siginfo, si_code), 8);
const_assert_eq!(core::mem::offset_of!(Siginfo, fields), 16);

impl Siginfo {
    /// A siginfo with only the header set.
    pub const fn new(signo: u32, code: i32) -> Self {
        Siginfo {
            si_signo: signo as i32,
            si_errno: 0,
            si_code: code,
            pad0: 0,
            fields: [0; 28],
        }
    }

    fn get32(&self, off: usize) -> u32 {
        self.fields[(off - 16) / 4]
    }
    fn set32(&mut self, off: usize, v: u32) {
        self.fields[(off - 16) / 4] = v;
    }
    fn get64(&self, off: usize) -> u64 {
        u64::from(self.get32(off)) | (u64::from(self.get32(off + 4)) << 32)
    }
    fn set64(&mut self, off: usize, v: u64) {
        self.set32(off, v as u32);
        self.set32(off + 4, (v >> 32) as u32);
    }

    /// `kill`/`tkill`-style info (`_kill`): sender pid and uid.
    pub fn kill(signo: u32, code: i32, pid: i32, uid: u32) -> Self {
        let mut s = Self::new(signo, code);
        s.set_pid(pid);
        s.set_uid(uid);
        s
    }

    /// `sigqueue`/`rt_sigqueueinfo`-style info (`_rt`): sender and value.
    pub fn rt(signo: u32, code: i32, pid: i32, uid: u32, value: u64) -> Self {
        let mut s = Self::kill(signo, code, pid, uid);
        s.set_value(value);
        s
    }

    /// `SIGCHLD` info (`_sigchld`); `utime`/`stime` in clock ticks.
    pub fn chld(code: i32, pid: i32, uid: u32, status: i32, utime: i64, stime: i64) -> Self {
        let mut s = Self::kill(SIGCHLD, code, pid, uid);
        s.set32(24, status as u32);
        s.set64(32, utime as u64);
        s.set64(40, stime as u64);
        s
    }

    /// Fault info (`_sigfault`) for `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGTRAP`.
    pub fn fault(signo: u32, code: i32, addr: u64) -> Self {
        let mut s = Self::new(signo, code);
        s.set64(16, addr);
        s
    }

    /// A memory-failure `SIGBUS` (`BUS_MCEERR_AR`) at `addr`: `_sigfault` with `si_addr_lsb`,
    /// the least significant bit of the reported address (the page shift), the short after
    /// `si_addr` (mm/memory-failure.c `kill_proc`, `force_sig_mceerr`).
    pub fn mce_fault(addr: u64, addr_lsb: u16) -> Self {
        let mut s = Self::fault(SIGBUS, BUS_MCEERR_AR, addr);
        s.set32(24, u32::from(addr_lsb));
        s
    }

    /// POSIX timer info (`_timer`, `si_code` `SI_TIMER`).
    pub fn timer(signo: u32, tid: i32, overrun: i32, value: u64) -> Self {
        let mut s = Self::new(signo, SI_TIMER);
        s.set32(16, tid as u32);
        s.set32(20, overrun as u32);
        s.set_value(value);
        s
    }

    /// `SIGIO`/`SIGPOLL` info (`_sigpoll`): band event bits and fd.
    pub fn poll(signo: u32, code: i32, band: i64, fd: i32) -> Self {
        let mut s = Self::new(signo, code);
        s.set64(16, band as u64);
        s.set32(24, fd as u32);
        s
    }

    /// `SIGSYS` info (`_sigsys`): caller address, syscall number, `AUDIT_ARCH_*`.
    pub fn sys(code: i32, call_addr: u64, syscall: i32, arch: u32) -> Self {
        let mut s = Self::new(SIGSYS, code);
        s.set64(16, call_addr);
        s.set32(24, syscall as u32);
        s.set32(28, arch);
        s
    }

    /// `si_pid` (kill, rt, sigchld).
    pub fn pid(&self) -> i32 {
        self.get32(16) as i32
    }
    /// Sets `si_pid`.
    pub fn set_pid(&mut self, pid: i32) {
        self.set32(16, pid as u32);
    }
    /// `si_uid` (kill, rt, sigchld).
    pub fn uid(&self) -> u32 {
        self.get32(20)
    }
    /// Sets `si_uid`.
    pub fn set_uid(&mut self, uid: u32) {
        self.set32(20, uid);
    }
    /// `si_status` (sigchld): exit code or signal.
    pub fn status(&self) -> i32 {
        self.get32(24) as i32
    }
    /// `si_utime` (sigchld).
    pub fn utime(&self) -> i64 {
        self.get64(32) as i64
    }
    /// `si_stime` (sigchld).
    pub fn stime(&self) -> i64 {
        self.get64(40) as i64
    }
    /// `si_addr` (sigfault).
    pub fn addr(&self) -> u64 {
        self.get64(16)
    }
    /// `si_addr_lsb` (sigfault, `BUS_MCEERR_*`).
    pub fn set_addr_lsb(&mut self, lsb: i16) {
        let w = (self.get32(24) & 0xffff_0000) | u32::from(lsb as u16);
        self.set32(24, w);
    }
    /// `si_value` (rt, timer): `sival_ptr`, or `sival_int` in the low 32 bits.
    pub fn value(&self) -> u64 {
        self.get64(24)
    }
    /// Sets `si_value`.
    pub fn set_value(&mut self, v: u64) {
        self.set64(24, v);
    }
    /// `si_tid` (timer): the kernel timer id.
    pub fn timer_id(&self) -> i32 {
        self.get32(16) as i32
    }
    /// `si_overrun` (timer).
    pub fn overrun(&self) -> i32 {
        self.get32(20) as i32
    }
    /// `si_band` (sigpoll).
    pub fn band(&self) -> i64 {
        self.get64(16) as i64
    }
    /// `si_fd` (sigpoll).
    pub fn fd(&self) -> i32 {
        self.get32(24) as i32
    }
    /// `si_syscall` (sigsys).
    pub fn syscall(&self) -> i32 {
        self.get32(24) as i32
    }
    /// `si_arch` (sigsys).
    pub fn arch(&self) -> u32 {
        self.get32(28)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Pod;

    #[test]
    fn numbers() {
        assert_eq!(sigmask(SIGHUP), 1);
        assert_eq!(sigmask(64), 1 << 63);
        assert_eq!(sigmask(0), 0);
        assert_eq!(sigmask(65), 0);
        assert_eq!(UNBLOCKABLE, (1 << 8) | (1 << 18));
        assert_eq!((X86_TRAP_PF, X86_PF_WRITE), (14, 2));
        assert_eq!(default_action(SIGCHLD), DefaultAction::Ignore);
        assert_eq!(default_action(SIGSEGV), DefaultAction::CoreDump);
        assert_eq!(default_action(SIGTSTP), DefaultAction::Stop);
        assert_eq!(default_action(SIGRTMIN + 3), DefaultAction::Terminate);
    }

    #[test]
    fn siginfo_layout() {
        let s = Siginfo::chld(CLD_EXITED, 42, 1000, 3, 7, 9);
        let b = s.as_bytes();
        assert_eq!(b.len(), 128);
        assert_eq!(&b[0..4], &17i32.to_le_bytes());
        assert_eq!(&b[8..12], &1i32.to_le_bytes());
        assert_eq!(&b[16..20], &42i32.to_le_bytes());
        assert_eq!(&b[20..24], &1000u32.to_le_bytes());
        assert_eq!(&b[24..28], &3i32.to_le_bytes());
        assert_eq!(&b[32..40], &7i64.to_le_bytes());
        assert_eq!(&b[40..48], &9i64.to_le_bytes());
        let back = Siginfo::from_bytes(&b).unwrap();
        assert_eq!(
            (
                back.pid(),
                back.uid(),
                back.status(),
                back.utime(),
                back.stime()
            ),
            (42, 1000, 3, 7, 9)
        );

        let f = Siginfo::fault(SIGSEGV, SEGV_MAPERR, 0xdead_beef_0000_1000);
        assert_eq!(
            &f.as_bytes()[16..24],
            &0xdead_beef_0000_1000u64.to_le_bytes()
        );
        assert_eq!(f.addr(), 0xdead_beef_0000_1000);
        // si_addr_lsb: the short right after si_addr (asm-generic/siginfo.h `_sigfault`).
        let m = Siginfo::mce_fault(0x7000, 12);
        let b = m.as_bytes();
        assert_eq!(&b[0..4], &7i32.to_le_bytes());
        assert_eq!(&b[8..12], &4i32.to_le_bytes());
        assert_eq!(&b[16..24], &0x7000u64.to_le_bytes());
        assert_eq!(&b[24..26], &12u16.to_le_bytes());

        let r = Siginfo::rt(SIGRTMIN, SI_QUEUE, 5, 6, 0x1234_5678_9abc);
        assert_eq!(r.value(), 0x1234_5678_9abc);
        assert_eq!(&r.as_bytes()[24..32], &0x1234_5678_9abcu64.to_le_bytes());
        let t = Siginfo::timer(SIGALRM, 3, 2, 77);
        assert_eq!(
            (t.si_code, t.timer_id(), t.overrun(), t.value()),
            (SI_TIMER, 3, 2, 77)
        );
        let p = Siginfo::poll(SIGIO, POLL_IN, 1, 4);
        assert_eq!((p.band(), p.fd()), (1, 4));
        let y = Siginfo::sys(SYS_SECCOMP, 0x4000, 59, 0xc000_003e);
        assert_eq!((y.addr(), y.syscall(), y.arch()), (0x4000, 59, 0xc000_003e));
    }

    #[test]
    fn sigaction_and_stack_bytes() {
        let a = KernelSigaction {
            sa_handler: 1,
            sa_flags: SA_RESTORER | SA_SIGINFO,
            sa_restorer: 2,
            sa_mask: 3,
        };
        let b = a.as_bytes();
        assert_eq!(b.len(), 32);
        assert_eq!(b[24], 3);
        assert_eq!(KernelSigaction::from_bytes(&b), Some(a));
        let st = Stack {
            ss_sp: 0x1000,
            ss_flags: SS_DISABLE,
            pad: 0,
            ss_size: 8192,
        };
        let sb = st.as_bytes();
        assert_eq!(sb.len(), 24);
        assert_eq!(sb[8], 2);
        assert_eq!(Stack::from_bytes(&sb), Some(st));
    }
}
