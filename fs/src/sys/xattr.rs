//! Extended attributes (Linux fs/xattr.c): setxattr, getxattr, listxattr, removexattr and
//! their `l*` (no follow) and `f*` (descriptor) variants.
//!
//! Everything generic is here, in Linux 6.1's order, so bad input fails the same way on every
//! file system: the path walk or the descriptor (`ENOENT`, `EBADF`, ...), `EROFS` for changes
//! on a read-only mount (`mnt_want_write`), then the arguments (`setxattr_copy`: `EINVAL` for
//! unknown flags, `ERANGE` for an empty name or one longer than `XATTR_NAME_MAX`, `E2BIG` for
//! a value over `XATTR_SIZE_MAX`, `EFAULT`), then `xattr_permission` (`EPERM` on an immutable
//! or append-only inode; `trusted.` needs CAP_SYS_ADMIN; `user.` only on regular files and
//! directories; then the file's own read or write permission), then the capability hooks
//! (security/commoncap.c: changing `security.*` needs CAP_SYS_ADMIN, `security.capability`
//! CAP_SETFCAP and a valid header), then `xattr_resolve_name` (`user.`, `trusted.`,
//! `security.`; the prefix alone is `EINVAL`, any other name `EOPNOTSUPP`). No POSIX ACLs:
//! `system.posix_acl_access` and `_default` are `EOPNOTSUPP` as on a file system built
//! without them.
//!
//! The file system keeps the attributes ([`Inode::getxattr`] and friends): tmpfs in memory,
//! hostfs as host xattrs. One without ([`Inode::has_xattrs`] false: procfs, sysfs, pipes,
//! sockets) answers as a Linux file system without `IOP_XATTR`: `EOPNOTSUPP` for get, set
//! and remove, an empty list (`vfs_listxattr` falls back to `security_inode_listsecurity`,
//! which lists nothing without an LSM).
//!
//! Sizes as `getxattr`/`listxattr` (fs/xattr.c): a size of 0 asks for the length, a buffer
//! too small is `ERANGE` (`E2BIG` when it was already the maximum), and `trusted.` names are
//! listed only to CAP_SYS_ADMIN (as `simple_xattr_list` and ext4's `trusted` handler).

use super::open::creds;
use super::{AT_FDCWD, AT_SYMLINK_NOFOLLOW, Target, resolve_at};
use crate::mount;
use crate::namei::{MAY_READ, MAY_WRITE, is_append, is_immutable, permission};
use std::sync::Arc;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{Dentry, Inode, Kstat, mode};
use um_uapi::abi::capability::{CAP_FOWNER, CAP_SETFCAP, CAP_SYS_ADMIN};
use um_uapi::abi::fcntl::O_PATH;
use um_uapi::abi::xattr::{
    VFS_CAP_REVISION_2, VFS_CAP_REVISION_3, VFS_CAP_REVISION_MASK, XATTR_CAPS_SZ_2,
    XATTR_CAPS_SZ_3, XATTR_CREATE, XATTR_LIST_MAX, XATTR_NAME_CAPS, XATTR_NAME_MAX, XATTR_REPLACE,
    XATTR_SECURITY_PREFIX, XATTR_SIZE_MAX, XATTR_SYSTEM_PREFIX, XATTR_TRUSTED_PREFIX,
    XATTR_USER_PREFIX,
};
use um_uapi::{Errno, SysResult};

/// What the call acts on: its metadata, its inode when it has one (a named file, or a
/// descriptor opened by name), and the dentry for the mount's read-only flag.
struct Object {
    st: Kstat,
    inode: Option<Arc<dyn Inode>>,
    dentry: Option<Arc<Dentry>>,
}

impl Object {
    fn of_dentry(d: Arc<Dentry>) -> SysResult<Object> {
        Ok(Object {
            st: d.inode.stat()?,
            inode: Some(d.inode.clone()),
            dentry: Some(d),
        })
    }

    /// The inode if its file system keeps attributes.
    fn xattr_inode(&self) -> Option<&Arc<dyn Inode>> {
        self.inode.as_ref().filter(|i| i.has_xattrs())
    }
}

/// `user_path_at(AT_FDCWD, path, follow ? LOOKUP_FOLLOW : 0)`.
fn by_path(c: &SyscallCtx<'_>, path: u64, follow: bool) -> SysResult<Object> {
    let flags = if follow { 0 } else { AT_SYMLINK_NOFOLLOW };
    match resolve_at(c, AT_FDCWD as u64, path, flags)? {
        Target::Dentry(d) => Object::of_dentry(d),
        Target::File(f) => match &f.dentry {
            Some(d) => Object::of_dentry(d.clone()),
            None => Ok(Object {
                st: f.ops.stat()?,
                inode: None,
                dentry: None,
            }),
        },
    }
}

/// `fdget(fd)`: `EBADF` for a closed or `O_PATH` descriptor.
fn by_fd(c: &SyscallCtx<'_>, fd: u64) -> SysResult<Object> {
    let f = lock(&c.task.process.files()).get(fd)?;
    if f.flags() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    match &f.dentry {
        Some(d) => Object::of_dentry(d.clone()),
        None => Ok(Object {
            st: f.ops.stat()?,
            inode: None,
            dentry: None,
        }),
    }
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

/// `xattr_permission` (fs/xattr.c), with `may_write_xattr` for changes.
fn xattr_permission(c: &SyscallCtx<'_>, o: &Object, name: &[u8], mask: u32) -> SysResult<()> {
    let st = &o.st;
    if mask & MAY_WRITE != 0
        && let Some(i) = &o.inode
        && (is_immutable(i.as_ref()) || is_append(i.as_ref()))
    {
        return Err(Errno::EPERM);
    }
    if name.starts_with(XATTR_SECURITY_PREFIX) || name.starts_with(XATTR_SYSTEM_PREFIX) {
        return Ok(());
    }
    let denied = if mask & MAY_WRITE != 0 {
        Errno::EPERM
    } else {
        Errno::ENODATA
    };
    let p = &c.task.process;
    if name.starts_with(XATTR_TRUSTED_PREFIX) {
        return if p.capable(CAP_SYS_ADMIN) {
            Ok(())
        } else {
            Err(denied)
        };
    }
    let cr = creds(c);
    if name.starts_with(XATTR_USER_PREFIX) {
        let fmt = st.mode & mode::S_IFMT;
        if fmt != mode::S_IFREG && fmt != mode::S_IFDIR {
            return Err(denied);
        }
        // inode_owner_or_capable: the owner, or CAP_FOWNER.
        let sticky_dir = fmt == mode::S_IFDIR && st.mode & 0o1000 != 0;
        if sticky_dir && mask & MAY_WRITE != 0 && cr.fsuid != st.uid && !p.capable(CAP_FOWNER) {
            return Err(Errno::EPERM);
        }
    }
    permission(st, &cr, mask)
}

/// `security_inode_setxattr` / `security_inode_removexattr` without an LSM: the capability
/// module's `cap_inode_setxattr` (changing `security.*` needs CAP_SYS_ADMIN) and, for
/// `security.capability`, `cap_convert_nscap` (CAP_SETFCAP and a version 2 or 3 header of
/// the right size, else `EINVAL`). `value` is `None` for a removal.
fn security_check(c: &SyscallCtx<'_>, name: &[u8], value: Option<&[u8]>) -> SysResult<()> {
    let p = &c.task.process;
    if name == XATTR_NAME_CAPS {
        let Some(v) = value else {
            // cap_inode_removexattr: CAP_SETFCAP (in the file's user namespace).
            return if p.capable(CAP_SETFCAP) {
                Ok(())
            } else {
                Err(Errno::EPERM)
            };
        };
        let rev = v
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & VFS_CAP_REVISION_MASK);
        let valid = matches!(
            (v.len(), rev),
            (XATTR_CAPS_SZ_2, Some(VFS_CAP_REVISION_2))
                | (XATTR_CAPS_SZ_3, Some(VFS_CAP_REVISION_3))
        );
        if !valid {
            return Err(Errno::EINVAL);
        }
        return if p.capable(CAP_SETFCAP) {
            Ok(())
        } else {
            Err(Errno::EPERM)
        };
    }
    if name.starts_with(XATTR_SECURITY_PREFIX) && !p.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// `xattr_resolve_name` over the handlers tmpfs and hostfs have (`user.`, `trusted.`,
/// `security.`): the bare prefix is `EINVAL`, an unknown namespace (and `system.`, no ACLs
/// here) `EOPNOTSUPP`.
fn resolve_name(name: &[u8]) -> SysResult<()> {
    for prefix in [
        XATTR_USER_PREFIX,
        XATTR_TRUSTED_PREFIX,
        XATTR_SECURITY_PREFIX,
    ] {
        if name.starts_with(prefix) {
            return if name.len() == prefix.len() {
                Err(Errno::EINVAL)
            } else {
                Ok(())
            };
        }
    }
    Err(Errno::EOPNOTSUPP)
}

/// `setxattr()` after the lookup: `setxattr_copy`, then `vfs_setxattr`.
fn do_set(c: &SyscallCtx<'_>, o: &Object, a: [u64; 6]) -> SysResult {
    want_write(o)?;
    let (name, value, size, flags) = (a[1], a[2], a[3], a[4]);
    if flags & !u64::from(XATTR_CREATE | XATTR_REPLACE) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = read_name(c, name)?;
    let mut v = Vec::new();
    if size > 0 {
        if size > XATTR_SIZE_MAX as u64 {
            return Err(Errno::E2BIG);
        }
        v = c.read_bytes(value, size as usize)?;
    }
    xattr_permission(c, o, &name, MAY_WRITE)?;
    security_check(c, &name, Some(&v))?;
    let Some(inode) = o.xattr_inode() else {
        return Err(Errno::EOPNOTSUPP);
    };
    resolve_name(&name)?;
    // __vfs_setxattr: a size of 0 sets an empty value ("empty EA, do not remove").
    inode.setxattr(&name, &v, flags as u32)?;
    Ok(0)
}

/// `getxattr()` after the lookup.
fn do_get(c: &SyscallCtx<'_>, o: &Object, a: [u64; 6]) -> SysResult {
    let name = read_name(c, a[1])?;
    let (buf, size) = (a[2], a[3] as usize);
    xattr_permission(c, o, &name, MAY_READ)?;
    let Some(inode) = o.xattr_inode() else {
        return Err(Errno::EOPNOTSUPP);
    };
    resolve_name(&name)?;
    let v = inode.getxattr(&name)?;
    if size == 0 {
        return Ok(v.len() as u64);
    }
    if v.len() > size.min(XATTR_SIZE_MAX) {
        return Err(if size >= XATTR_SIZE_MAX {
            Errno::E2BIG
        } else {
            Errno::ERANGE
        });
    }
    c.write_bytes(buf, &v)?;
    Ok(v.len() as u64)
}

/// `listxattr()` after the lookup: the names, each with its NUL.
fn do_list(c: &SyscallCtx<'_>, o: &Object, a: [u64; 6]) -> SysResult {
    let (buf, size) = (a[1], a[2] as usize);
    let Some(inode) = o.xattr_inode() else {
        return Ok(0);
    };
    let trusted = c.task.process.capable(CAP_SYS_ADMIN);
    let mut list = Vec::new();
    for n in inode.listxattr()? {
        if n.starts_with(XATTR_TRUSTED_PREFIX) && !trusted {
            continue;
        }
        list.extend_from_slice(&n);
        list.push(0);
    }
    if size == 0 {
        return Ok(list.len() as u64);
    }
    if list.len() > size.min(XATTR_LIST_MAX) {
        return Err(if size >= XATTR_LIST_MAX {
            Errno::E2BIG
        } else {
            Errno::ERANGE
        });
    }
    c.write_bytes(buf, &list)?;
    Ok(list.len() as u64)
}

/// `removexattr()` after the lookup.
fn do_remove(c: &SyscallCtx<'_>, o: &Object, a: [u64; 6]) -> SysResult {
    want_write(o)?;
    let name = read_name(c, a[1])?;
    xattr_permission(c, o, &name, MAY_WRITE)?;
    security_check(c, &name, None)?;
    let Some(inode) = o.xattr_inode() else {
        return Err(Errno::EOPNOTSUPP);
    };
    resolve_name(&name)?;
    inode.removexattr(&name)?;
    Ok(0)
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

/// What `docs/syscalls.md` says of every call of the family.
const NO_ACLS: &str = "user., trusted. and security. attributes on tmpfs and hostfs (host xattrs); no POSIX ACLs (system.posix_acl_* is EOPNOTSUPP)";

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("setxattr", setxattr).partial(NO_ACLS);
    t.register("lsetxattr", lsetxattr).partial(NO_ACLS);
    t.register("fsetxattr", fsetxattr).partial(NO_ACLS);
    t.register("getxattr", getxattr).partial(NO_ACLS);
    t.register("lgetxattr", lgetxattr).partial(NO_ACLS);
    t.register("fgetxattr", fgetxattr).partial(NO_ACLS);
    t.register("listxattr", listxattr).partial(NO_ACLS);
    t.register("llistxattr", llistxattr).partial(NO_ACLS);
    t.register("flistxattr", flistxattr).partial(NO_ACLS);
    t.register("removexattr", removexattr).partial(NO_ACLS);
    t.register("lremovexattr", lremovexattr).partial(NO_ACLS);
    t.register("fremovexattr", fremovexattr).partial(NO_ACLS);
}
