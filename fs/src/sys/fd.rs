//! Descriptor operations: dup, dup2, dup3, fcntl (Linux fs/file.c, fs/fcntl.c).
//!
//! The signal-driven I/O commands (`F_SETOWN`, `F_SETOWN_EX`, `F_SETSIG` and their getters,
//! `O_ASYNC` through `F_SETFL`) are served by `crate::fasync`, leases (`F_SETLEASE`,
//! `F_GETLEASE`) by `crate::locks`, and `F_NOTIFY` by `crate::dnotify`.

use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_uapi::{Errno, SysResult};

const F_DUPFD: u64 = 0;
const F_GETFD: u64 = 1;
const F_SETFD: u64 = 2;
const F_GETFL: u64 = 3;
const F_SETFL: u64 = 4;
const F_DUPFD_CLOEXEC: u64 = 1030;
const F_SETOWN: u64 = 8;
const F_GETOWN: u64 = 9;
const F_SETSIG: u64 = 10;
const F_GETSIG: u64 = 11;
const F_SETOWN_EX: u64 = 15;
const F_GETOWN_EX: u64 = 16;
const F_SETLEASE: u64 = 1024;
const F_GETLEASE: u64 = 1025;
const F_NOTIFY: u64 = 1026;
use um_uapi::abi::fcntl::O_APPEND;
use um_uapi::abi::fcntl::O_ASYNC;
/// `_NSIG`: the largest signal `F_SETSIG` takes.
const NSIG: u64 = 64;
use um_uapi::abi::fcntl::O_CLOEXEC;
/// Flags F_SETFL may change: O_APPEND, O_NONBLOCK, O_ASYNC, O_NOATIME, and the arch's
/// O_DIRECT ([`setfl_mask`]).
const SETFL_MASK: u32 = 0o2000 | 0o4000 | 0o20000 | 0o1000000;

/// What F_SETFL may change (`SETFL_MASK` in fs/fcntl.c). `O_DIRECT` makes a pipe write
/// packets; other files here take it as open(2) does, with no effect on their I/O.
fn setfl_mask() -> u32 {
    SETFL_MASK | um_kernel::arch::native::abi::O_DIRECT
}

fn dup(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let table = c.task.process.files();
    let mut files = lock(&table);
    let f = files.get(a[0])?;
    Ok(files.install(f, false, 0)? as u64)
}

fn dup3(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[2] & !u64::from(O_CLOEXEC) != 0 || a[0] == a[1] {
        return Err(Errno::EINVAL);
    }
    let newfd = u32::try_from(a[1]).map_err(|_| Errno::EBADF)?;
    let table = c.task.process.files();
    let mut files = lock(&table);
    let f = files.get(a[0])?;
    files.install_at(newfd, f, a[2] & u64::from(O_CLOEXEC) != 0)?;
    Ok(newfd as u64)
}

fn dup2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] == a[1] {
        lock(&c.task.process.files()).get(a[0])?;
        return Ok(a[1]);
    }
    dup3(c, [a[0], a[1], 0, 0, 0, 0])
}

/// F_GETLK/F_SETLK/F_SETLKW and the OFD variants (fs/locks.c `fcntl_getlk`/`fcntl_setlk`).
fn record_lock(c: &mut SyscallCtx<'_>, fd: u64, cmd: u64, arg: u64) -> SysResult {
    use crate::locks::{self, F_RDLCK, F_UNLCK, F_WRLCK, Family, Lock, Owner};
    use um_uapi::abi::fcntl::Flock;
    use um_uapi::abi::pod::Pod;
    let f = lock(&c.task.process.files()).get(fd)?;
    let mut fl = Flock::from_bytes(&c.read_bytes(arg, Flock::SIZE)?).ok_or(Errno::EFAULT)?;
    let ofd = matches!(cmd, 36..=38);
    if ofd && fl.l_pid != 0 {
        return Err(Errno::EINVAL);
    }
    let key = locks::file_key(&f).ok_or(Errno::EBADF)?;
    // The range: l_start from SEEK_SET/CUR/END, l_len 0 = to EOF and beyond, negative = before.
    let base: i64 = match fl.l_whence {
        0 => 0,
        1 => *lock(&f.pos) as i64,
        2 => f.ops.size()? as i64,
        _ => return Err(Errno::EINVAL),
    };
    let start = base.checked_add(fl.l_start).ok_or(Errno::EOVERFLOW)?;
    let (start, end) = match fl.l_len {
        0 => (start, u64::MAX as i64),
        n if n > 0 => (start, start.checked_add(n - 1).ok_or(Errno::EOVERFLOW)?),
        n => (start.checked_add(n).ok_or(Errno::EINVAL)?, start - 1),
    };
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    let owner = if ofd {
        locks::description_owner(&f)
    } else {
        Owner::Process(c.task.process.pid)
    };
    let want = Lock {
        owner,
        family: Family::Posix,
        write: fl.l_type == F_WRLCK,
        start: start as u64,
        end: end as u64,
        pid: c.task.process.pid,
    };
    match cmd {
        5 | 36 => {
            if fl.l_type != F_RDLCK && fl.l_type != F_WRLCK {
                return Err(Errno::EINVAL);
            }
            match locks::test_lock(key, &want) {
                None => fl.l_type = F_UNLCK,
                Some(l) => {
                    fl.l_type = if l.write { F_WRLCK } else { F_RDLCK };
                    fl.l_whence = 0;
                    fl.l_start = l.start as i64;
                    fl.l_len = if l.end == u64::MAX {
                        0
                    } else {
                        (l.end - l.start + 1) as i64
                    };
                    // The holder as the caller's pid namespace sees it (0 outside it).
                    fl.l_pid = match l.owner {
                        Owner::Process(_) => c.kernel.tasks.vnr(c.task, l.pid) as i32,
                        Owner::File(_) => -1,
                    };
                }
            }
            c.write_bytes(arg, &fl.as_bytes())?;
            Ok(0)
        }
        _ => {
            let acc = f.flags() & 3;
            match fl.l_type {
                F_RDLCK if acc == 1 => return Err(Errno::EBADF),
                F_WRLCK if acc == 0 => return Err(Errno::EBADF),
                F_RDLCK | F_WRLCK | F_UNLCK => {}
                _ => return Err(Errno::EINVAL),
            }
            let wait = matches!(cmd, 7 | 38);
            locks::set_lock(c.task, key, want, fl.l_type == F_UNLCK, wait)?;
            Ok(0)
        }
    }
}

/// flock(2) (fs/locks.c): whole-file locks owned by the open file description.
fn flock(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use crate::locks::{self, Family, Lock};
    const LOCK_SH: u64 = 1;
    const LOCK_EX: u64 = 2;
    const LOCK_NB: u64 = 4;
    const LOCK_UN: u64 = 8;
    let f = lock(&c.task.process.files()).get(a[0])?;
    let op = a[1] & !LOCK_NB;
    if op != LOCK_SH && op != LOCK_EX && op != LOCK_UN {
        return Err(Errno::EINVAL);
    }
    let key = locks::file_key(&f).ok_or(Errno::EBADF)?;
    let want = Lock {
        owner: locks::description_owner(&f),
        family: Family::Flock,
        write: op == LOCK_EX,
        start: 0,
        end: u64::MAX,
        pid: c.task.process.pid,
    };
    // Converting a lock drops the old one first (flock is not atomic about conversions).
    if op != LOCK_UN {
        locks::set_lock(c.task, key, want, true, false)?;
    }
    locks::set_lock(c.task, key, want, op == LOCK_UN, a[1] & LOCK_NB == 0)?;
    Ok(0)
}

/// The owner, signal, lease and notification commands (fs/fcntl.c `do_fcntl`), served
/// without the descriptor table locked (leases look at every table).
/// An owner id coming in (`F_SETOWN`, `F_SETOWN_EX`): the kernel-wide id of the number the
/// caller's pid namespace gives (`find_vpid`: `ESRCH` for one it does not have); 0 clears.
fn owner_in(c: &SyscallCtx<'_>, id: u32) -> SysResult<u32> {
    if id == 0 {
        return Ok(0);
    }
    c.kernel.tasks.global_of(c.task, id).ok_or(Errno::ESRCH)
}

fn fcntl_async(c: &mut SyscallCtx<'_>, fd: u64, cmd: u64, arg: u64) -> SysResult {
    use crate::fasync;
    let f = lock(&c.task.process.files()).get_nopath(fd)?;
    let ids = {
        let cr = lock(&c.task.process.creds);
        (cr.uid, cr.euid, cr.fsuid)
    };
    fasync::init(c.kernel);
    match cmd {
        // Owner ids are kept kernel-wide and cross in and out through the caller's pid
        // namespace (f_setown's find_vpid, f_getown's pid_vnr).
        F_GETOWN => {
            let mut fown = fasync::fown(&f);
            fown.id = c.kernel.tasks.vnr(c.task, fown.id);
            Ok(fown.getown() as u64)
        }
        F_SETOWN => {
            let (kind, id) = fasync::decode_setown(arg as i32)?;
            let id = owner_in(c, id)?;
            fasync::check_owner(c.kernel, kind, id)?;
            fasync::set_owner(&f, kind, id, ids.0, ids.1);
            Ok(0)
        }
        F_GETOWN_EX => {
            let fown = fasync::fown(&f);
            let (ty, _) = fown.getown_ex();
            // f_getown_ex: the id only while its task (or group) still exists.
            let pid = if fasync::check_owner(c.kernel, fown.kind, fown.id).is_err() {
                0
            } else {
                c.kernel.tasks.vnr(c.task, fown.id) as i32
            };
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&ty.to_le_bytes());
            b[4..].copy_from_slice(&pid.to_le_bytes());
            c.write_bytes(arg, &b)?;
            Ok(0)
        }
        F_SETOWN_EX => {
            let b = c.read_bytes(arg, 8)?;
            let ty = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let pid = i32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            let (kind, id) = fasync::decode_setown_ex(ty, pid)?;
            let id = owner_in(c, id)?;
            fasync::check_owner(c.kernel, kind, id)?;
            fasync::set_owner(&f, kind, id, ids.0, ids.1);
            Ok(0)
        }
        F_GETSIG => Ok(u64::from(fasync::fown(&f).signum)),
        F_SETSIG => {
            // valid_signal: 0 (plain SIGIO) to _NSIG.
            if arg > NSIG {
                return Err(Errno::EINVAL);
            }
            fasync::set_signal(&f, arg as u32);
            Ok(0)
        }
        F_GETLEASE => Ok(crate::locks::get_lease(&f) as u64),
        F_SETLEASE => {
            let cap = c.task.process.capable(crate::locks::CAP_LEASE);
            let r = crate::locks::set_lease(c.kernel, &f, fd as i32, arg as i16, ids.2, cap)?;
            if arg as i16 != crate::locks::F_UNLCK {
                // lease_setup: the caller becomes the owner the break is signalled to.
                let pid = c.task.process.pid;
                fasync::set_owner(&f, fasync::OwnerKind::Pid, pid, ids.0, ids.1);
            }
            Ok(r)
        }
        _ => crate::dnotify::fcntl_notify(
            &f,
            fd as i32,
            arg as u32,
            c.task.process.pid,
            (ids.0, ids.1),
        ),
    }
}

fn fcntl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if matches!(a[1], 5..=7 | 36..=38) {
        return record_lock(c, a[0], a[1], a[2]);
    }
    if matches!(
        a[1],
        F_SETOWN
            | F_GETOWN
            | F_SETSIG
            | F_GETSIG
            | F_SETOWN_EX
            | F_GETOWN_EX
            | F_SETLEASE
            | F_GETLEASE
            | F_NOTIFY
    ) {
        return fcntl_async(c, a[0], a[1], a[2]);
    }
    let table = c.task.process.files();
    let mut files = lock(&table);
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let f = files.get(a[0])?;
            // f_dupfd: a start at or above RLIMIT_NOFILE is EINVAL (EMFILE is for a full table).
            let min = u32::try_from(a[2]).map_err(|_| Errno::EINVAL)?;
            if min >= files.nofile() {
                return Err(Errno::EINVAL);
            }
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
            let new = (old & !setfl_mask()) | (a[2] as u32 & setfl_mask());
            // setfl: turning O_NOATIME on needs ownership or CAP_FOWNER.
            use um_uapi::abi::fcntl::O_NOATIME;
            // setfl: an append-only file's descriptor cannot drop O_APPEND.
            if (old ^ new) & O_APPEND != 0
                && f.dentry
                    .as_ref()
                    .is_some_and(|d| crate::namei::is_append(&*d.inode))
            {
                return Err(Errno::EPERM);
            }
            if new & O_NOATIME != 0 && old & O_NOATIME == 0 {
                if let Some(d) = &f.dentry {
                    if !super::open::owner_or_capable(c, &d.inode.stat()?) {
                        return Err(Errno::EPERM);
                    }
                }
            }
            f.flags.store(new, std::sync::atomic::Ordering::Relaxed);
            drop(files);
            // setfl: turning FASYNC on or off arms or disarms signal-driven I/O.
            if (old ^ new) & O_ASYNC != 0 {
                crate::fasync::init(c.kernel);
                crate::fasync::set_async(&f, a[0] as i32, new & O_ASYNC != 0);
            }
            Ok(0)
        }
        // F_SETPIPE_SZ, F_GETPIPE_SZ (fs/pipe.c `pipe_fcntl`).
        1031 | 1032 => {
            let f = files.get(a[0])?;
            let p = crate::pipe::pipe_of(&f).ok_or(Errno::EBADF)?;
            if a[1] == 1032 {
                return Ok(p.capacity() as u64);
            }
            // pipe_set_size: beyond pipe-max-size needs CAP_SYS_RESOURCE.
            let privileged = c.task.process.capable(crate::pipe::CAP_SYS_RESOURCE);
            Ok(p.set_capacity(a[2], privileged)? as u64)
        }
        crate::memfd::F_ADD_SEALS | crate::memfd::F_GET_SEALS => {
            // Sealing looks at every address space: not with the descriptor table locked.
            let f = files.get(a[0])?;
            drop(files);
            crate::memfd::fcntl(c.kernel, &f, a[1], a[2])
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
    t.register("flock", flock);
}
