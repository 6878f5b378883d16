//! Process creation and waiting: clone flags, `struct clone_args`, wait options.
//!
//! Sources: `include/uapi/linux/sched.h` (`CLONE_*`, `struct clone_args`, `CLONE_ARGS_SIZE_VER*`,
//! `SCHED_*`), `include/uapi/linux/wait.h` (`W*`, `P_*`). The *order of the `clone` syscall
//! arguments* differs per arch (arm64 is `CLONE_BACKWARDS`); that lives in the arch crates.

use static_assertions::const_assert_eq;

bitflags::bitflags! {
    /// `clone`/`clone3` flags. The low byte of `clone`'s flags is the exit signal (`CSIGNAL`), not
    /// flags; `clone3` passes the exit signal separately and reuses 0x80 as `CLONE_NEWTIME`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct CloneFlags: u64 {
        /// `CSIGNAL`: mask of the exit signal in `clone`'s flags.
        const CSIGNAL = 0x0000_00ff;
        /// New time namespace (clone3 only; overlaps `CSIGNAL`).
        const NEWTIME = 0x0000_0080;
        /// Share the address space.
        const VM = 0x0000_0100;
        /// Share cwd, root and umask.
        const FS = 0x0000_0200;
        /// Share the fd table.
        const FILES = 0x0000_0400;
        /// Share signal handlers.
        const SIGHAND = 0x0000_0800;
        /// Return a pidfd.
        const PIDFD = 0x0000_1000;
        /// Continue tracing the child.
        const PTRACE = 0x0000_2000;
        /// Parent sleeps until the child execs or exits.
        const VFORK = 0x0000_4000;
        /// Same parent as the caller.
        const PARENT = 0x0000_8000;
        /// Same thread group.
        const THREAD = 0x0001_0000;
        /// New mount namespace.
        const NEWNS = 0x0002_0000;
        /// Share System V semaphore undo.
        const SYSVSEM = 0x0004_0000;
        /// Set the TLS register.
        const SETTLS = 0x0008_0000;
        /// Store the child tid in the parent.
        const PARENT_SETTID = 0x0010_0000;
        /// Clear (and futex-wake) the child tid at exit.
        const CHILD_CLEARTID = 0x0020_0000;
        /// Ignored (historic).
        const DETACHED = 0x0040_0000;
        /// Tracer cannot force `CLONE_PTRACE`.
        const UNTRACED = 0x0080_0000;
        /// Store the child tid in the child.
        const CHILD_SETTID = 0x0100_0000;
        /// New cgroup namespace.
        const NEWCGROUP = 0x0200_0000;
        /// New UTS namespace.
        const NEWUTS = 0x0400_0000;
        /// New IPC namespace.
        const NEWIPC = 0x0800_0000;
        /// New user namespace.
        const NEWUSER = 0x1000_0000;
        /// New pid namespace.
        const NEWPID = 0x2000_0000;
        /// New network namespace.
        const NEWNET = 0x4000_0000;
        /// Share the I/O context.
        const IO = 0x8000_0000;
        /// Reset signal handlers to default (clone3 only).
        const CLEAR_SIGHAND = 0x1_0000_0000;
        /// Start in the cgroup `cgroup` (clone3 only).
        const INTO_CGROUP = 0x2_0000_0000;
    }
}

/// `CSIGNAL`: mask of the exit signal in `clone`'s flags word.
pub const CSIGNAL: u64 = 0xff;
/// Size of `struct clone_args` version 0 (Linux 5.3).
pub const CLONE_ARGS_SIZE_VER0: usize = 64;
/// Version 1 (adds `set_tid`, `set_tid_size`; Linux 5.5).
pub const CLONE_ARGS_SIZE_VER1: usize = 80;
/// Version 2 (adds `cgroup`; Linux 5.7).
pub const CLONE_ARGS_SIZE_VER2: usize = 88;

crate::pod_struct! {
    /// `struct clone_args` (`clone3`), version 2: 88 bytes. A shorter `size` from the guest
    /// leaves the later fields zero; a longer one must have only zero bytes past 88.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CloneArgs {
        /// `CLONE_*` flags (no exit signal here).
        pub flags: u64,
        /// Where to store the pidfd (`CLONE_PIDFD`).
        pub pidfd: u64,
        /// Child tid address (`CLONE_CHILD_SETTID`/`CLONE_CHILD_CLEARTID`).
        pub child_tid: u64,
        /// Parent tid address (`CLONE_PARENT_SETTID`).
        pub parent_tid: u64,
        /// Signal sent to the parent at exit.
        pub exit_signal: u64,
        /// Lowest address of the child stack.
        pub stack: u64,
        /// Size of the child stack.
        pub stack_size: u64,
        /// TLS value (`CLONE_SETTLS`).
        pub tls: u64,
        /// Address of an array of tids to request.
        pub set_tid: u64,
        /// Length of `set_tid`.
        pub set_tid_size: u64,
        /// cgroup fd (`CLONE_INTO_CGROUP`).
        pub cgroup: u64,
    }
}

const_assert_eq!(core::mem::size_of::<CloneArgs>(), CLONE_ARGS_SIZE_VER2);
const_assert_eq!(
    core::mem::offset_of!(CloneArgs, set_tid),
    CLONE_ARGS_SIZE_VER0
);
const_assert_eq!(
    core::mem::offset_of!(CloneArgs, cgroup),
    CLONE_ARGS_SIZE_VER1
);
const_assert_eq!(core::mem::offset_of!(CloneArgs, exit_signal), 32);
const_assert_eq!(core::mem::offset_of!(CloneArgs, tls), 56);

impl CloneArgs {
    /// Parses a guest `clone_args` of `b.len()` bytes (the syscall's `size`): at least
    /// `CLONE_ARGS_SIZE_VER0`; bytes past the known struct must be zero. `None` means `EINVAL`
    /// (too small) or `E2BIG` (non-zero tail): use [`CloneArgs::check_size`] to tell them apart.
    pub fn from_guest(b: &[u8]) -> Option<Self> {
        if b.len() < CLONE_ARGS_SIZE_VER0
            || b[b.len().min(CLONE_ARGS_SIZE_VER2)..]
                .iter()
                .any(|&x| x != 0)
        {
            return None;
        }
        let mut full = [0u8; CLONE_ARGS_SIZE_VER2];
        let n = b.len().min(CLONE_ARGS_SIZE_VER2);
        full[..n].copy_from_slice(&b[..n]);
        <Self as crate::abi::Pod>::from_bytes(&full)
    }

    /// `Ok` if `size` is acceptable; `Err(false)` for too small (`EINVAL`), `Err(true)` for a
    /// longer struct (`E2BIG` if its tail is not zero, checked by [`CloneArgs::from_guest`]).
    pub const fn check_size(size: usize) -> Result<(), bool> {
        if size < CLONE_ARGS_SIZE_VER0 {
            Err(false)
        } else if size > 4096 {
            Err(true)
        } else {
            Ok(())
        }
    }
}

bitflags::bitflags! {
    /// `wait4`/`waitid` options (`include/uapi/linux/wait.h`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct WaitOptions: u32 {
        /// Do not block.
        const WNOHANG = 0x0000_0001;
        /// Report stopped children (`WSTOPPED` for waitid).
        const WUNTRACED = 0x0000_0002;
        /// Same bit as `WUNTRACED`.
        const WSTOPPED = 0x0000_0002;
        /// Report exited children (waitid).
        const WEXITED = 0x0000_0004;
        /// Report continued children.
        const WCONTINUED = 0x0000_0008;
        /// Leave the child waitable (waitid).
        const WNOWAIT = 0x0100_0000;
        /// `__WNOTHREAD`: only children of this thread.
        const WNOTHREAD = 0x2000_0000;
        /// `__WALL`: all children, clone or not.
        const WALL = 0x4000_0000;
        /// `__WCLONE`: only "clone" children (exit signal other than SIGCHLD).
        const WCLONE = 0x8000_0000;
    }
}

/// `WNOHANG`.
pub const WNOHANG: u32 = 0x1;
/// `WUNTRACED`.
pub const WUNTRACED: u32 = 0x2;
/// `WSTOPPED`.
pub const WSTOPPED: u32 = 0x2;
/// `WEXITED`.
pub const WEXITED: u32 = 0x4;
/// `WCONTINUED`.
pub const WCONTINUED: u32 = 0x8;
/// `WNOWAIT`.
pub const WNOWAIT: u32 = 0x0100_0000;
/// `__WNOTHREAD`.
pub const WNOTHREAD: u32 = 0x2000_0000;
/// `__WALL`.
pub const WALL: u32 = 0x4000_0000;
/// `__WCLONE`.
pub const WCLONE: u32 = 0x8000_0000;

/// `waitid` id types: any child.
pub const P_ALL: u32 = 0;
/// A pid.
pub const P_PID: u32 = 1;
/// A process group.
pub const P_PGID: u32 = 2;
/// A pidfd.
pub const P_PIDFD: u32 = 3;

/// Wait status of a normal exit with `code` (`WIFEXITED`).
pub const fn w_exitcode(code: u32, sig: u32) -> i32 {
    ((code << 8) | sig) as i32
}
/// Wait status of a stop by `sig` (`WIFSTOPPED`).
pub const fn w_stopcode(sig: u32) -> i32 {
    ((sig << 8) | 0x7f) as i32
}
/// Wait status of a continued child (`WIFCONTINUED`).
pub const W_CONTINUED: i32 = 0xffff;
/// Core-dump bit in a wait status.
pub const WCOREFLAG: i32 = 0x80;

/// Scheduling policies.
pub const SCHED_NORMAL: u32 = 0;
/// FIFO real-time.
pub const SCHED_FIFO: u32 = 1;
/// Round-robin real-time.
pub const SCHED_RR: u32 = 2;
/// Batch.
pub const SCHED_BATCH: u32 = 3;
/// Idle.
pub const SCHED_IDLE: u32 = 5;
/// Deadline.
pub const SCHED_DEADLINE: u32 = 6;
/// Flag ORed into the policy: reset on fork.
pub const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Pod;

    #[test]
    fn clone_args() {
        let a = CloneArgs {
            flags: CloneFlags::VM.bits(),
            exit_signal: 17,
            tls: 5,
            ..Default::default()
        };
        let b = a.as_bytes();
        assert_eq!(b.len(), 88);
        assert_eq!(b[32], 17);
        assert_eq!(CloneArgs::from_bytes(&b), Some(a));
        let v0 = CloneArgs::from_guest(&b[..64]).unwrap();
        assert_eq!(v0.tls, 5);
        assert_eq!(v0.cgroup, 0);
        let mut long = b.clone();
        long.extend_from_slice(&[0; 8]);
        assert_eq!(CloneArgs::from_guest(&long), Some(a));
        long[90] = 1;
        assert_eq!(CloneArgs::from_guest(&long), None);
        assert_eq!(CloneArgs::from_guest(&b[..63]), None);
        assert_eq!(CloneArgs::check_size(63), Err(false));
    }

    #[test]
    fn flags_and_status() {
        let f = CloneFlags::from_bits_retain(0x3d0f00 | 17);
        assert!(f.contains(CloneFlags::THREAD | CloneFlags::SETTLS | CloneFlags::CHILD_CLEARTID));
        assert_eq!(f.bits() & CSIGNAL, 17);
        assert_eq!(CloneFlags::CLEAR_SIGHAND.bits(), 1 << 32);
        assert_eq!(WaitOptions::WALL.bits(), 0x4000_0000);
        assert_eq!(w_exitcode(3, 0), 0x300);
        assert_eq!(w_stopcode(19), 0x137f);
    }
}
