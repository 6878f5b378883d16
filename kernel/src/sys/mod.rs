//! Syscalls the kernel crate owns, one file per family (process, credentials, memory, time,
//! signals, misc, the probed-for ioprio and kcmp, and `absent.rs`: the calls left out on
//! purpose), each with a `register` function that `um-bin` calls while assembling the table.

pub mod absent;
pub mod cred;
pub mod fork;
pub mod futex;
pub mod ioprio;
pub mod kcmp;
pub mod membarrier;
pub mod misc;
pub mod mm;
pub mod ns;
pub mod pidfd;
pub mod process;
pub mod rseq;
pub mod sched;
pub mod signal;
pub mod syslog;
pub mod time;
pub mod timer;
pub mod wait;

use crate::syscall::SyscallTable;

/// Registers every syscall of this crate.
pub fn register(t: &mut SyscallTable) {
    absent::register(t);
    cred::register(t);
    fork::register(t);
    membarrier::register(t);
    misc::register(t);
    // After misc, whose set_robust_list only checks the length.
    futex::register(t);
    ioprio::register(t);
    kcmp::register(t);
    mm::register(t);
    ns::register(t);
    pidfd::register(t);
    process::register(t);
    rseq::register(t);
    sched::register(t);
    signal::register(t);
    syslog::register(t);
    time::register(t);
    timer::register(t);
    wait::register(t);
    crate::ptrace::register(t);
    crate::seccomp::register(t);
}
