//! open, openat, close, getcwd, chdir, fchdir, readlink, access (Linux fs/open.c, fs/namei.c,
//! fs/d_path.c).

use super::{AT_FDCWD, Target, lookup, resolve_at};
use crate::namei::Last;
use um_kernel::arch::native::abi::OPEN_FLAGS_ARCH as ARCH;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, Kstat, OpenFile, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::fcntl::OpenFlags;
use um_uapi::{Errno, SysResult};

/// An `O_PATH` descriptor: names a file, cannot read or write it.
struct PathOnly {
    stat: Kstat,
}

impl FileOps for PathOnly {
    fn read(&self, _: &IoCtx<'_>, _: &mut [u8], _: u64) -> SysResult<usize> {
        Err(Errno::EBADF)
    }
    fn write(&self, _: &IoCtx<'_>, _: &[u8], _: u64) -> SysResult<usize> {
        Err(Errno::EBADF)
    }
    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.stat)
    }
}

fn do_openat(
    c: &mut SyscallCtx<'_>,
    dirfd: u64,
    path_addr: u64,
    flags: u64,
    _mode: u64,
) -> SysResult {
    let flags = flags as u32;
    if flags & !ARCH.known_bits() != 0 {
        // Linux ignores unknown open flags (for compatibility), except through openat2.
    }
    let path = c.read_path(path_addr)?;
    let o = OpenFlags::from_bits_truncate(flags);
    let cloexec = o.contains(OpenFlags::CLOEXEC);
    if o.contains(OpenFlags::CREAT) || o.contains(OpenFlags::TRUNC) && flags & 3 != 0 {
        // hostfs is read-only for now: creating or truncating needs the write support.
        match lookup(c, dirfd, &path, Last::Follow) {
            Ok(_) if o.contains(OpenFlags::EXCL) && o.contains(OpenFlags::CREAT) => {
                return Err(Errno::EEXIST);
            }
            Ok(_) => {}
            Err(Errno::ENOENT) => return Err(Errno::EROFS),
            Err(e) => return Err(e),
        }
    }
    let last = if flags & ARCH.nofollow != 0 {
        Last::NoFollow
    } else {
        Last::Follow
    };
    let d = lookup(c, dirfd, &path, last)?;
    let st = d.inode.stat()?;
    let fmt = st.mode & mode::S_IFMT;
    if flags & ARCH.nofollow != 0 && fmt == mode::S_IFLNK && flags & 0o10000000 == 0 {
        return Err(Errno::ELOOP);
    }
    if flags & ARCH.directory != 0 && fmt != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    // O_PATH
    let file = if flags & 0o10000000 != 0 {
        OpenFile::new(Box::new(PathOnly { stat: st }), flags, Some(d))
    } else {
        if fmt == mode::S_IFDIR && flags & 3 != 0 {
            return Err(Errno::EISDIR);
        }
        let ops = d.inode.open(
            &IoCtx {
                task: c.task,
                nonblock: flags & 0o4000 != 0,
            },
            flags,
        )?;
        OpenFile::new(ops, flags, Some(d))
    };
    let fd = lock(&c.task.process.files()).install(file, cloexec, 0)?;
    Ok(fd as u64)
}

fn openat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_openat(c, a[0], a[1], a[2], a[3])
}

fn open(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_openat(c, AT_FDCWD as u64, a[0], a[1], a[2])
}

fn close(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    lock(&c.task.process.files()).remove(a[0])?;
    Ok(0)
}

fn getcwd(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cwd = lock(&c.task.process.fs).cwd.clone();
    let mut p = cwd.path();
    p.push(0);
    if p.len() as u64 > a[1] {
        return Err(Errno::ERANGE);
    }
    c.write_bytes(a[0], &p)?;
    Ok(p.len() as u64)
}

fn chdir(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let path = c.read_path(a[0])?;
    let d = lookup(c, AT_FDCWD as u64, &path, Last::Follow)?;
    if d.inode.stat()?.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    lock(&c.task.process.fs).cwd = d;
    Ok(0)
}

fn fchdir(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = lock(&c.task.process.files()).get(a[0])?;
    let d = f.dentry.clone().ok_or(Errno::ENOTDIR)?;
    if d.inode.stat()?.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    lock(&c.task.process.fs).cwd = d;
    Ok(0)
}

fn do_readlinkat(c: &mut SyscallCtx<'_>, dirfd: u64, path: u64, buf: u64, size: u64) -> SysResult {
    if (size as i64) <= 0 {
        return Err(Errno::EINVAL);
    }
    let d = match resolve_at(
        c,
        dirfd,
        path,
        super::AT_SYMLINK_NOFOLLOW | super::AT_EMPTY_PATH,
    )? {
        Target::Dentry(d) => d,
        Target::File(_) => return Err(Errno::EINVAL),
    };
    let t = d.inode.readlink()?;
    let n = t.len().min(size as usize);
    c.write_bytes(buf, &t[..n])?;
    Ok(n as u64)
}

fn readlinkat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_readlinkat(c, a[0], a[1], a[2], a[3])
}

fn readlink(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_readlinkat(c, AT_FDCWD as u64, a[0], a[1], a[2])
}

fn do_faccessat(
    c: &mut SyscallCtx<'_>,
    dirfd: u64,
    path: u64,
    amode: u64,
    flags: u64,
) -> SysResult {
    if amode & !7 != 0 || flags & !(0x200 | 0x100 | 0x1000) != 0 {
        return Err(Errno::EINVAL);
    }
    let st = match resolve_at(c, dirfd, path, flags)? {
        Target::Dentry(d) => d.inode.stat()?,
        Target::File(f) => f.ops.stat()?,
    };
    // Root may read and write anything; execute needs some x bit (or a directory).
    if amode & 1 != 0 && st.mode & 0o111 == 0 && st.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::EACCES);
    }
    Ok(0)
}

fn faccessat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_faccessat(c, a[0], a[1], a[2], 0)
}

fn faccessat2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_faccessat(c, a[0], a[1], a[2], a[3])
}

fn access(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_faccessat(c, AT_FDCWD as u64, a[0], a[1], 0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("openat", openat);
    t.register("open", open);
    t.register("close", close);
    t.register("getcwd", getcwd);
    t.register("chdir", chdir);
    t.register("fchdir", fchdir);
    t.register("readlinkat", readlinkat);
    t.register("readlink", readlink);
    t.register("faccessat", faccessat);
    t.register("faccessat2", faccessat2);
    t.register("access", access);
}
