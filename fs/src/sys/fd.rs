//! Descriptor operations: dup, dup2, dup3, fcntl (Linux fs/file.c, fs/fcntl.c).

use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_uapi::{Errno, SysResult};

const F_DUPFD: u64 = 0;
const F_GETFD: u64 = 1;
const F_SETFD: u64 = 2;
const F_GETFL: u64 = 3;
const F_SETFL: u64 = 4;
const F_DUPFD_CLOEXEC: u64 = 1030;
/// O_CLOEXEC.
const O_CLOEXEC: u64 = 0o2000000;
/// Flags F_SETFL may change: O_APPEND, O_NONBLOCK, O_ASYNC, O_DIRECT (arch), O_NOATIME.
const SETFL_MASK: u32 = 0o2000 | 0o4000 | 0o20000 | 0o1000000;

fn dup(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let table = c.task.process.files();
    let mut files = lock(&table);
    let f = files.get(a[0])?;
    Ok(files.install(f, false, 0)? as u64)
}

fn dup3(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[2] & !O_CLOEXEC != 0 || a[0] == a[1] {
        return Err(Errno::EINVAL);
    }
    let newfd = u32::try_from(a[1]).map_err(|_| Errno::EBADF)?;
    let table = c.task.process.files();
    let mut files = lock(&table);
    let f = files.get(a[0])?;
    files.install_at(newfd, f, a[2] & O_CLOEXEC != 0)?;
    Ok(newfd as u64)
}

fn dup2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] == a[1] {
        lock(&c.task.process.files()).get(a[0])?;
        return Ok(a[1]);
    }
    dup3(c, [a[0], a[1], 0, 0, 0, 0])
}

fn fcntl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let table = c.task.process.files();
    let mut files = lock(&table);
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let f = files.get(a[0])?;
            let min = u32::try_from(a[2]).map_err(|_| Errno::EINVAL)?;
            Ok(files.install(f, a[1] == F_DUPFD_CLOEXEC, min)? as u64)
        }
        F_GETFD => Ok(files.entry_mut(a[0])?.cloexec as u64),
        F_SETFD => {
            files.entry_mut(a[0])?.cloexec = a[2] & 1 != 0;
            Ok(0)
        }
        F_GETFL => Ok(files.get(a[0])?.flags() as u64),
        F_SETFL => {
            let f = files.get(a[0])?;
            let old = f.flags();
            let new = (old & !SETFL_MASK) | (a[2] as u32 & SETFL_MASK);
            f.flags.store(new, std::sync::atomic::Ordering::Relaxed);
            Ok(0)
        }
        // F_SETPIPE_SZ, F_GETPIPE_SZ (fs/pipe.c `pipe_fcntl`).
        1031 | 1032 => {
            let f = files.get(a[0])?;
            let p = crate::pipe::pipe_of(&f).ok_or(Errno::EBADF)?;
            if a[1] == 1032 {
                return Ok(p.capacity() as u64);
            }
            let privileged = lock(&c.task.process.creds).euid == 0;
            Ok(p.set_capacity(a[2], privileged)? as u64)
        }
        _ => {
            files.get(a[0])?;
            Err(Errno::EINVAL)
        }
    }
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("dup", dup);
    t.register("dup2", dup2);
    t.register("dup3", dup3);
    t.register("fcntl", fcntl);
}
