//! Extended attributes (Linux fs/xattr.c): setxattr, getxattr, listxattr, removexattr and
//! their `l*` (no follow) and `f*` (descriptor) variants.
//!
//! No file system here keeps extended attributes: hostfs, tmpfs, procfs and the pseudo files
//! all behave like a Linux file system without xattr handlers (no `IOP_XATTR`). The calls
//! still do everything Linux does before it asks the file system, in Linux 6.1's order, so
//! bad input fails the same way: the path walk or the descriptor (`ENOENT`, `EBADF`, ...),
//! `EROFS` for changes on a read-only mount (`mnt_want_write`), then the arguments
//! (`setxattr_copy`: `EINVAL` for unknown flags, `ERANGE` for an empty name or one longer
//! than `XATTR_NAME_MAX`, `E2BIG` for a value over `XATTR_SIZE_MAX`, `EFAULT`), then
//! `xattr_permission`; and at the end the answer of a file system without handlers:
//! `xattr_resolve_name` gives `EOPNOTSUPP` for get, set and remove, while `vfs_listxattr`
//! falls back to `security_inode_listsecurity`, which lists nothing without an LSM, so
//! listxattr returns 0 (an empty list), as it does on such a file system under Linux.

use super::open::creds;
use super::{AT_FDCWD, AT_SYMLINK_NOFOLLOW, Target, resolve_at};
use crate::mount;
use crate::namei::{MAY_READ, MAY_WRITE, permission};
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{Dentry, Kstat, mode};
use um_uapi::{Errno, SysResult};

/// `XATTR_NAME_MAX`: the longest name, without its NUL.
const XATTR_NAME_MAX: usize = 255;
/// `XATTR_SIZE_MAX`: the largest value.
const XATTR_SIZE_MAX: u64 = 65536;
/// `XATTR_CREATE` | `XATTR_REPLACE`.
const XATTR_FLAGS: u64 = 0x1 | 0x2;
use um_uapi::abi::fcntl::O_PATH;

/// What the call acts on: its metadata and, when it has a name, the dentry (for the mount's
/// read-only flag).
struct Object {
    st: Kstat,
    dentry: Option<std::sync::Arc<Dentry>>,
}

/// `user_path_at(AT_FDCWD, path, follow ? LOOKUP_FOLLOW : 0)`.
fn by_path(c: &SyscallCtx<'_>, path: u64, follow: bool) -> SysResult<Object> {
    let flags = if follow { 0 } else { AT_SYMLINK_NOFOLLOW };
    match resolve_at(c, AT_FDCWD as u64, path, flags)? {
        Target::Dentry(d) => Ok(Object {
            st: d.inode.stat()?,
            dentry: Some(d),
        }),
        Target::File(f) => Ok(Object {
            st: f.ops.stat()?,
            dentry: None,
        }),
    }
}

/// `fdget(fd)`: `EBADF` for a closed or `O_PATH` descriptor.
fn by_fd(c: &SyscallCtx<'_>, fd: u64) -> SysResult<Object> {
    let f = lock(&c.task.process.files()).get(fd)?;
    if f.flags() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    Ok(Object {
        st: f.ops.stat()?,
        dentry: f.dentry.clone(),
    })
}

/// `mnt_want_write`: changes on a read-only mount are `EROFS`.
fn want_write(o: &Object) -> SysResult<()> {
    match &o.dentry {
        Some(d) => mount::check_writable(d),
        None => Ok(()),
    }
}

/// The name argument (`strncpy_from_user` into a `XATTR_NAME_MAX + 1` buffer): `ERANGE` if
/// empty or too long, `EFAULT` if unreadable.
fn read_name(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Vec<u8>> {
    match c.read_cstr(addr, XATTR_NAME_MAX + 1) {
        Ok(n) if n.is_empty() => Err(Errno::ERANGE),
        Ok(n) => Ok(n),
        Err(Errno::ENAMETOOLONG) => Err(Errno::ERANGE),
        Err(e) => Err(e),
    }
}

/// `xattr_permission` (fs/xattr.c): `security.` and `system.` are left to the file system,
/// `trusted.` needs CAP_SYS_ADMIN, `user.` exists only on regular files and directories
/// (and a sticky directory's only for its owner); then the inode's DAC permission.
fn xattr_permission(c: &SyscallCtx<'_>, st: &Kstat, name: &[u8], mask: u32) -> SysResult<()> {
    let cr = creds(c);
    if name.starts_with(b"security.") || name.starts_with(b"system.") {
        return Ok(());
    }
    let denied = if mask & MAY_WRITE != 0 {
        Errno::EPERM
    } else {
        Errno::ENODATA
    };
    if name.starts_with(b"trusted.") {
        return if cr.euid == 0 { Ok(()) } else { Err(denied) };
    }
    if name.starts_with(b"user.") {
        let fmt = st.mode & mode::S_IFMT;
        if fmt != mode::S_IFREG && fmt != mode::S_IFDIR {
            return Err(denied);
        }
        let sticky_dir = fmt == mode::S_IFDIR && st.mode & 0o1000 != 0;
        if sticky_dir && mask & MAY_WRITE != 0 && cr.fsuid != 0 && cr.fsuid != st.uid {
            return Err(Errno::EPERM);
        }
    }
    permission(st, &cr, mask)
}

/// `setxattr()` after the lookup: `setxattr_copy`, then `vfs_setxattr`.
fn do_set(c: &SyscallCtx<'_>, o: &Object, a: [u64; 6]) -> SysResult {
    want_write(o)?;
    let (name, value, size, flags) = (a[1], a[2], a[3], a[4]);
    if flags & !XATTR_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let name = read_name(c, name)?;
    if size > 0 {
        if size > XATTR_SIZE_MAX {
            return Err(Errno::E2BIG);
        }
        c.read_bytes(value, size as usize)?;
    }
    xattr_permission(c, &o.st, &name, MAY_WRITE)?;
    // xattr_resolve_name without IOP_XATTR.
    Err(Errno::EOPNOTSUPP)
}

/// `getxattr()` after the lookup.
fn do_get(c: &SyscallCtx<'_>, o: &Object, a: [u64; 6]) -> SysResult {
    let name = read_name(c, a[1])?;
    xattr_permission(c, &o.st, &name, MAY_READ)?;
    Err(Errno::EOPNOTSUPP)
}

/// `listxattr()` after the lookup: no `listxattr` inode operation, no LSM: nothing to list.
fn do_list(_c: &SyscallCtx<'_>, _o: &Object, _a: [u64; 6]) -> SysResult {
    Ok(0)
}

/// `removexattr()` after the lookup.
fn do_remove(c: &SyscallCtx<'_>, o: &Object, a: [u64; 6]) -> SysResult {
    want_write(o)?;
    let name = read_name(c, a[1])?;
    xattr_permission(c, &o.st, &name, MAY_WRITE)?;
    Err(Errno::EOPNOTSUPP)
}

fn setxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], true)?;
    do_set(c, &o, a)
}

fn lsetxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], false)?;
    do_set(c, &o, a)
}

fn fsetxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_fd(c, a[0])?;
    do_set(c, &o, a)
}

fn getxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], true)?;
    do_get(c, &o, a)
}

fn lgetxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], false)?;
    do_get(c, &o, a)
}

fn fgetxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_fd(c, a[0])?;
    do_get(c, &o, a)
}

fn listxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], true)?;
    do_list(c, &o, a)
}

fn llistxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], false)?;
    do_list(c, &o, a)
}

fn flistxattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_fd(c, a[0])?;
    do_list(c, &o, a)
}

fn removexattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], true)?;
    do_remove(c, &o, a)
}

fn lremovexattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_path(c, a[0], false)?;
    do_remove(c, &o, a)
}

fn fremovexattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let o = by_fd(c, a[0])?;
    do_remove(c, &o, a)
}

/// What `docs/syscalls.md` says of get, set and remove.
const NO_XATTRS: &str = "no file system here keeps extended attributes: after Linux's checks the answer is EOPNOTSUPP, as from a file system without xattr handlers";

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("setxattr", setxattr).partial(NO_XATTRS);
    t.register("lsetxattr", lsetxattr).partial(NO_XATTRS);
    t.register("fsetxattr", fsetxattr).partial(NO_XATTRS);
    t.register("getxattr", getxattr).partial(NO_XATTRS);
    t.register("lgetxattr", lgetxattr).partial(NO_XATTRS);
    t.register("fgetxattr", fgetxattr).partial(NO_XATTRS);
    t.register("listxattr", listxattr);
    t.register("llistxattr", llistxattr);
    t.register("flistxattr", flistxattr);
    t.register("removexattr", removexattr).partial(NO_XATTRS);
    t.register("lremovexattr", lremovexattr).partial(NO_XATTRS);
    t.register("fremovexattr", fremovexattr).partial(NO_XATTRS);
}
