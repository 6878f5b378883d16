//! Syscalls the kernel crate owns, one file per family (process, memory, time, signals,
//! misc), each with a `register` function that `um-bin` calls while assembling the table.

pub mod misc;
pub mod mm;
pub mod process;
pub mod signal;
pub mod time;

use crate::syscall::SyscallTable;

/// Registers every syscall of this crate.
pub fn register(t: &mut SyscallTable) {
    misc::register(t);
    mm::register(t);
    process::register(t);
    signal::register(t);
    time::register(t);
}
