//! Engines: how a guest thread is run until it needs the kernel.
//!
//! `switch` runs the guest thread (after replaying the queued host mapping changes in its stub)
//! until one [`Event`]. Two engines will implement it (DESIGN.md): ptrace ([`ptrace`], here) and
//! seccomp. The run loop in [`crate::run`] is the same for both.

pub mod ptrace;

/// Why a guest thread stopped running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// It made a syscall; number and arguments are in the registers.
    Syscall,
    /// It touched memory it may not: `addr`, and what the host said (`not_present`: the page
    /// is not mapped in the host at all; otherwise a protection fault). `pc` for the log.
    Fault { addr: u64, not_present: bool },
    /// The host delivered a synchronous signal for guest code (SIGILL, SIGFPE, SIGBUS, SIGTRAP).
    Signal { signo: i32, addr: u64, code: i32 },
    /// The kernel interrupted it (a signal is pending for it).
    Interrupted,
}
