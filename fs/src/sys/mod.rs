//! File syscalls, one file per family (Linux `fs/open.c`, `fs/read_write.c`, `fs/stat.c`,
//! `fs/readdir.c`, `fs/fcntl.c`, `fs/namei.c`), and the helpers they share for `*at()` lookups.

pub mod aio;
pub mod epoll;
pub mod eventfd;
pub mod execve;
pub mod fd;
pub mod inotify;
pub mod memfd;
pub mod mount;
pub mod namespace;
pub mod open;
pub mod openat2;
pub mod pipe;
pub mod poll;
pub mod rw;
pub mod splice;
pub mod stat;
pub mod sync_file_range;
pub mod userfaultfd;
pub mod xattr;

use crate::namei::{self, Last};
use std::sync::Arc;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{Dentry, OpenFile};
use um_uapi::{Errno, SysResult};

pub use um_uapi::abi::fcntl::AT_EMPTY_PATH;
pub use um_uapi::abi::fcntl::AT_FDCWD;
pub use um_uapi::abi::fcntl::AT_SYMLINK_NOFOLLOW;

/// What a `*at()` path names: a dentry, or (with `AT_EMPTY_PATH`) an open file that may have none.
pub enum Target {
    Dentry(Arc<Dentry>),
    File(Arc<OpenFile>),
}

/// The directory a relative path starts from: the cwd for `AT_FDCWD`, else the fd's dentry.
pub fn start_dir(c: &SyscallCtx<'_>, dirfd: u64) -> SysResult<Arc<Dentry>> {
    if dirfd as i32 == AT_FDCWD {
        return Ok(lock(&c.task.process.fs).cwd.clone());
    }
    let f = lock(&c.task.process.files()).get(dirfd as i32 as i64 as u64 & 0xffff_ffff)?;
    f.dentry.clone().ok_or(Errno::ENOTDIR)
}

/// Resolves `(dirfd, path)` as the `*at()` calls do.
pub fn resolve_at(c: &SyscallCtx<'_>, dirfd: u64, path_addr: u64, flags: u64) -> SysResult<Target> {
    let path = c.read_cstr(path_addr, 4096)?;
    if path.is_empty() {
        if flags & AT_EMPTY_PATH == 0 {
            return Err(Errno::ENOENT);
        }
        if dirfd as i32 == AT_FDCWD {
            return Ok(Target::Dentry(lock(&c.task.process.fs).cwd.clone()));
        }
        let f = lock(&c.task.process.files()).get(dirfd & 0xffff_ffff)?;
        return Ok(match &f.dentry {
            Some(d) => Target::Dentry(d.clone()),
            None => Target::File(f),
        });
    }
    let last = if flags & AT_SYMLINK_NOFOLLOW != 0 {
        Last::NoFollow
    } else {
        Last::Follow
    };
    Ok(Target::Dentry(lookup(c, dirfd, &path, last)?))
}

/// Walks `path` relative to `dirfd`.
pub fn lookup(c: &SyscallCtx<'_>, dirfd: u64, path: &[u8], last: Last) -> SysResult<Arc<Dentry>> {
    let fs = lock(&c.task.process.fs).clone();
    let start = if path.first() == Some(&b'/') {
        fs.root.clone()
    } else {
        start_dir(c, dirfd)?
    };
    let creds = *lock(&c.task.process.creds);
    namei::walk_with(&fs, &creds, &start, path, last)
}

/// Registers every file syscall.
pub fn register(t: &mut SyscallTable) {
    // Not a syscall family: the core dump writer the signal code calls (fs/coredump.c).
    crate::coredump::install();
    aio::register(t);
    epoll::register(t);
    eventfd::register(t);
    execve::register(t);
    fd::register(t);
    inotify::register(t);
    memfd::register(t);
    mount::register(t);
    namespace::register(t);
    open::register(t);
    openat2::register(t);
    pipe::register(t);
    poll::register(t);
    rw::register(t);
    splice::register(t);
    stat::register(t);
    sync_file_range::register(t);
    userfaultfd::register(t);
    xattr::register(t);
}
