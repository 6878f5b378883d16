//! Host calls that change a host directory tree, for hostfs write support.
//!
//! Every call names its object as one component relative to a directory fd (`*at()`), never
//! follows a symlink in that component, and refuses names containing `/` or equal to `..`, so
//! a guest can never reach a host path outside the hostfs root (the VFS above resolves `..` and
//! symlinks itself). Where the host has no race-free no-follow form (`chmod` of an object, and
//! `utimensat` on a directory fd), the object is first opened `O_PATH|O_NOFOLLOW` and named
//! through `/proc/self/fd/N`, which names exactly that inode.
//!
//! Neighbour: [`crate::host`] has lookups, `openat`, reading; hostfs in `um-fs` calls both.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

fn cvt(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// One component: not empty, no `/`, not `.` or `..`, no NUL.
fn comp(name: &[u8]) -> io::Result<CString> {
    if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn proc_fd(fd: BorrowedFd<'_>) -> CString {
    // A formatted number never contains NUL.
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdirat(dir: BorrowedFd<'_>, name: &[u8], mode: u32) -> io::Result<()> {
    let c = comp(name)?;
    // SAFETY: NUL-terminated name; no memory is written.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) })
}

/// `mknodat(dir, name, mode, dev)`.
pub fn mknodat(dir: BorrowedFd<'_>, name: &[u8], mode: u32, dev: u64) -> io::Result<()> {
    let c = comp(name)?;
    // SAFETY: NUL-terminated name; no memory is written.
    cvt(unsafe {
        libc::mknodat(
            dir.as_raw_fd(),
            c.as_ptr(),
            mode as libc::mode_t,
            dev as libc::dev_t,
        )
    })
}

/// `symlinkat(target, dir, name)`; the target is stored as text and never followed by hostfs.
pub fn symlinkat(target: &[u8], dir: BorrowedFd<'_>, name: &[u8]) -> io::Result<()> {
    let c = comp(name)?;
    let t = CString::new(target).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: NUL-terminated strings; no memory is written.
    cvt(unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), c.as_ptr()) })
}

/// `linkat(olddir, oldname, newdir, newname, 0)` (never follows a symlink).
pub fn linkat(
    olddir: BorrowedFd<'_>,
    oldname: &[u8],
    newdir: BorrowedFd<'_>,
    newname: &[u8],
) -> io::Result<()> {
    let (o, n) = (comp(oldname)?, comp(newname)?);
    // SAFETY: NUL-terminated names; no memory is written.
    cvt(unsafe {
        libc::linkat(
            olddir.as_raw_fd(),
            o.as_ptr(),
            newdir.as_raw_fd(),
            n.as_ptr(),
            0,
        )
    })
}

/// `unlinkat(dir, name, AT_REMOVEDIR if rmdir)`.
pub fn unlinkat(dir: BorrowedFd<'_>, name: &[u8], rmdir: bool) -> io::Result<()> {
    let c = comp(name)?;
    let flags = if rmdir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: NUL-terminated name; no memory is written.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) })
}

/// `renameat2(olddir, oldname, newdir, newname, flags)`.
pub fn renameat2(
    olddir: BorrowedFd<'_>,
    oldname: &[u8],
    newdir: BorrowedFd<'_>,
    newname: &[u8],
    flags: u32,
) -> io::Result<()> {
    let (o, n) = (comp(oldname)?, comp(newname)?);
    // SAFETY: NUL-terminated names; no memory is written.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            olddir.as_raw_fd(),
            o.as_ptr(),
            newdir.as_raw_fd(),
            n.as_ptr(),
            flags,
        )
    };
    cvt(r as libc::c_int)
}

/// `chmod` of the inode an `O_PATH` (or any) fd refers to, through `/proc/self/fd/N`. The
/// caller must have checked the fd is not a symlink (Linux cannot chmod a symlink).
pub fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    let p = proc_fd(fd);
    // SAFETY: NUL-terminated path; no memory is written.
    cvt(unsafe { libc::fchmodat(libc::AT_FDCWD, p.as_ptr(), mode as libc::mode_t, 0) })
}

/// `fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW)`; an empty name changes `dir` itself
/// (`AT_EMPTY_PATH`). `u32::MAX` leaves an id unchanged.
pub fn fchownat(dir: BorrowedFd<'_>, name: &[u8], uid: u32, gid: u32) -> io::Result<()> {
    let (c, flags) = if name.is_empty() {
        (
            CString::default(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    } else {
        (comp(name)?, libc::AT_SYMLINK_NOFOLLOW)
    };
    // SAFETY: NUL-terminated name; no memory is written.
    cvt(unsafe { libc::fchownat(dir.as_raw_fd(), c.as_ptr(), uid, gid, flags) })
}

/// A time for [`utimensat`]: `None` is `UTIME_OMIT`, `Some(None)` is `UTIME_NOW`.
pub type HostTime = Option<Option<(i64, i64)>>;

/// `utimensat(dir, name, times, AT_SYMLINK_NOFOLLOW)`; an empty name changes `dir` itself
/// (through `/proc/self/fd/N`, as `O_PATH` fds cannot be used directly).
pub fn utimensat(
    dir: BorrowedFd<'_>,
    name: &[u8],
    atime: HostTime,
    mtime: HostTime,
) -> io::Result<()> {
    let ts = |t: HostTime| match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(None) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(Some((s, ns))) => libc::timespec {
            tv_sec: s,
            tv_nsec: ns,
        },
    };
    let times = [ts(atime), ts(mtime)];
    if name.is_empty() {
        let p = proc_fd(dir);
        // SAFETY: NUL-terminated path; the kernel reads two timespecs.
        cvt(unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), times.as_ptr(), 0) })
    } else {
        let c = comp(name)?;
        // SAFETY: NUL-terminated name; the kernel reads two timespecs.
        cvt(unsafe {
            libc::utimensat(
                dir.as_raw_fd(),
                c.as_ptr(),
                times.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })
    }
}

/// `ftruncate(fd, len)`.
pub fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    let len = i64::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: no memory is involved.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len) })
}

/// `fsync(fd)` or `fdatasync(fd)`.
pub fn fsync(fd: BorrowedFd<'_>, datasync: bool) -> io::Result<()> {
    // SAFETY: no memory is involved.
    cvt(unsafe {
        if datasync {
            libc::fdatasync(fd.as_raw_fd())
        } else {
            libc::fsync(fd.as_raw_fd())
        }
    })
}

/// `fallocate(fd, mode, off, len)`.
pub fn fallocate(fd: BorrowedFd<'_>, mode: i32, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: no memory is involved.
    cvt(unsafe { libc::fallocate(fd.as_raw_fd(), mode, off as libc::off_t, len as libc::off_t) })
}

/// Host file system statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostStatfs {
    pub fs_type: i64,
    pub bsize: i64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub namelen: i64,
    pub frsize: i64,
}

/// `fstatfs(fd)` (works on `O_PATH` fds).
// The field types differ between host arches.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
pub fn fstatfs(fd: BorrowedFd<'_>) -> io::Result<HostStatfs> {
    // SAFETY: fstatfs writes one struct statfs.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        cvt(libc::fstatfs(fd.as_raw_fd(), &mut st))?;
        Ok(HostStatfs {
            fs_type: st.f_type as i64,
            bsize: st.f_bsize as i64,
            blocks: st.f_blocks as u64,
            bfree: st.f_bfree as u64,
            bavail: st.f_bavail as u64,
            files: st.f_files as u64,
            ffree: st.f_ffree as u64,
            namelen: st.f_namelen as i64,
            frsize: st.f_frsize as i64,
        })
    }
}

/// The host's real uid and gid (hostfs writes as this user).
pub fn host_ids() -> (u32, u32) {
    // SAFETY: getuid/getgid cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_only() {
        assert!(comp(b"..").is_err());
        assert!(comp(b"a/b").is_err());
        assert!(comp(b"").is_err());
        assert!(comp(b".").is_err());
        assert!(comp(b"a").is_ok());
    }
}
