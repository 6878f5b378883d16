//! Helper processes that `linux` starts on the host for a driver (the `passt` network backend):
//! an ordinary fork and exec through `std::process::Command`, with two things set in the
//! child before the exec that only an `unsafe` `pre_exec` hook can do, so they live here.
//!
//! - `PR_SET_PDEATHSIG` = `SIGKILL`: the helper dies with `linux`, however `linux` ends (a
//!   `SIGKILL` of `linux` runs no shutdown hook). It fires when the *thread* that forked exits,
//!   so callers spawn from a thread that lives as long as the kernel (the boot thread). If
//!   `linux` died between the fork and the `prctl`, the child sees a different parent and exits.
//! - The one descriptor the helper is given (`keep`) loses `FD_CLOEXEC` in the child only, so
//!   no other child started meanwhile inherits it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Spawns `cmd` with `keep` open across the exec (at its number) and `PR_SET_PDEATHSIG`
/// `SIGKILL`. The caller waits for (reaps) the child.
pub fn spawn_with_fd(cmd: &mut Command, keep: BorrowedFd<'_>) -> io::Result<Child> {
    let fd = keep.as_raw_fd();
    // SAFETY: getpid takes no arguments.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the hook runs in the forked child before exec and calls only async-signal-safe
    // functions (prctl, getppid, fcntl) with integer arguments; it touches no memory shared
    // with other threads of the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(126);
            }
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}
