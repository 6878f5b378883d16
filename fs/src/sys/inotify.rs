//! inotify_init, inotify_init1, inotify_add_watch, inotify_rm_watch (Linux
//! fs/notify/inotify/inotify_user.c). The instance and the hooks are [`crate::inotify`].

use super::open::creds;
use super::{AT_FDCWD, lookup};
use crate::inotify::{
    ALL_INOTIFY_BITS, IN_DONT_FOLLOW, IN_MASK_ADD, IN_MASK_CREATE, IN_ONLYDIR, Inotify, InotifyFile,
};
use crate::namei::{Last, MAY_READ, permission};
use std::sync::Arc;
use um_kernel::sysarg::args;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{OpenFile, mode};
use um_uapi::{Errno, SysResult};

/// `IN_CLOEXEC` (= `O_CLOEXEC`).
const IN_CLOEXEC: u64 = 0o2000000;
/// `IN_NONBLOCK` (= `O_NONBLOCK`).
const IN_NONBLOCK: u64 = 0o4000;
use um_uapi::abi::fcntl::O_PATH;

fn inotify_init1(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = a[0];
    if flags & !(IN_CLOEXEC | IN_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let g = Inotify::new();
    // O_RDONLY, as anon_inode_getfd("inotify", ..., O_RDONLY | flags).
    let f = OpenFile::new(Box::new(InotifyFile(g)), (flags & IN_NONBLOCK) as u32, None);
    Ok(lock(&c.task.process.files()).install(f, flags & IN_CLOEXEC != 0, 0)? as u64)
}

fn inotify_init(c: &mut SyscallCtx<'_>, _a: [u64; 6]) -> SysResult {
    inotify_init1(c, [0; 6])
}

/// The instance behind descriptor `fd`: `EBADF` if not open (or `O_PATH`), `EINVAL` if not
/// an inotify descriptor.
fn instance(c: &SyscallCtx<'_>, fd: u64) -> SysResult<Arc<Inotify>> {
    let f = lock(&c.task.process.files()).get(fd)?;
    if f.flags() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    f.ops
        .as_any()
        .and_then(|a| a.downcast_ref::<InotifyFile>())
        .map(|i| i.0.clone())
        .ok_or(Errno::EINVAL)
}

fn inotify_add_watch(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, path, mask): (u64, u64, u32) = args(&a)?;
    if mask & ALL_INOTIFY_BITS == 0 {
        return Err(Errno::EINVAL);
    }
    lock(&c.task.process.files()).get(fd)?;
    if mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0 {
        return Err(Errno::EINVAL);
    }
    let g = instance(c, fd)?;
    // inotify_find_inode: user_path_at, LOOKUP_DIRECTORY for IN_ONLYDIR, then MAY_READ.
    let p = c.read_path(path)?;
    let last = if mask & IN_DONT_FOLLOW != 0 {
        Last::NoFollow
    } else {
        Last::Follow
    };
    let d = lookup(c, AT_FDCWD as u64, &p, last)?;
    let st = d.inode.stat()?;
    if mask & IN_ONLYDIR != 0 && st.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    permission(&st, &creds(c), MAY_READ)?;
    Ok(g.add_watch(&*d.inode, mask)? as u64)
}

fn inotify_rm_watch(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let g = instance(c, a[0])?;
    g.rm_watch(a[1] as i32)?;
    Ok(0)
}

/// Registers this family (and connects inotify's close events to the VFS).
pub fn register(t: &mut SyscallTable) {
    crate::inotify::install();
    t.register("inotify_init", inotify_init);
    t.register("inotify_init1", inotify_init1);
    t.register("inotify_add_watch", inotify_add_watch);
    t.register("inotify_rm_watch", inotify_rm_watch);
}
