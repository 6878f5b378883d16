//! mount, umount2, pivot_root (Linux fs/namespace.c): argument copying, the CAP_SYS_ADMIN
//! check (euid 0) and path walks; the tables themselves are [`crate::mount`].

use super::{AT_FDCWD, lookup};
use crate::mount::{self, MS_BIND, MS_REMOUNT, UMOUNT_NOFOLLOW};
use crate::namei::Last;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_uapi::{Errno, SysResult};

fn capable_sys_admin(c: &SyscallCtx<'_>) -> SysResult<()> {
    if lock(&c.task.process.creds).euid == 0 {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// An optional string argument (NULL is empty), at most a page.
fn opt_str(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Vec<u8>> {
    if addr == 0 {
        Ok(Vec::new())
    } else {
        c.read_cstr(addr, 4096)
    }
}

fn sys_mount(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    capable_sys_admin(c)?;
    let (src_addr, target_addr, type_addr, flags, data_addr) = (a[0], a[1], a[2], a[3], a[4]);
    let source = opt_str(c, src_addr)?;
    let target = c.read_path(target_addr)?;
    let fstype = opt_str(c, type_addr)?;
    let data = opt_str(c, data_addr)?;
    let cwd = AT_FDCWD as u64;
    let t = lookup(c, cwd, &target, Last::Follow)?;
    let bind = if flags & (MS_BIND | mount::MS_MOVE) != 0 && flags & MS_REMOUNT == 0 {
        if source.is_empty() {
            return Err(Errno::ENOENT);
        }
        Some(lookup(c, cwd, &source, Last::Follow)?)
    } else if flags & MS_REMOUNT == 0 && mount::is_bdev_fs(&fstype) {
        // A block-device file system's source is a path to the device node (lookup_bdev).
        if source.is_empty() {
            return Err(Errno::ENOTBLK);
        }
        Some(lookup(c, cwd, &source, Last::Follow)?)
    } else {
        None
    };
    if flags & (MS_BIND | MS_REMOUNT) == 0
        && flags & mount::MS_PROPAGATION == 0
        && fstype.is_empty()
    {
        return Err(Errno::EINVAL);
    }
    mount::do_mount(c.kernel, &source, bind.as_ref(), &t, &fstype, flags, &data)?;
    Ok(0)
}

fn umount2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    capable_sys_admin(c)?;
    let path = c.read_path(a[0])?;
    let last = if a[1] & UMOUNT_NOFOLLOW != 0 {
        Last::NoFollow
    } else {
        Last::Follow
    };
    // LOOKUP_MOUNTPOINT: the last component is crossed too.
    let d = mount::cross_last(&lookup(c, AT_FDCWD as u64, &path, last)?);
    mount::do_umount(&d, a[1], &c.kernel.tasks.processes())?;
    Ok(0)
}

/// pivot_root(2): CAP_SYS_ADMIN (`EPERM`), both paths walked as directories (`ENOTDIR`);
/// the rest is [`mount::pivot_root`].
fn pivot_root(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    capable_sys_admin(c)?;
    let new_root = c.read_path(a[0])?;
    let put_old = c.read_path(a[1])?;
    let cwd = AT_FDCWD as u64;
    let new = lookup(c, cwd, &new_root, Last::Follow)?;
    // lock_mount(&old): put_old is where the old root goes, on top of what is there.
    let old = mount::cross_last(&lookup(c, cwd, &put_old, Last::Follow)?);
    mount::pivot_root(&c.task.process, &c.kernel.tasks.processes(), &new, &old)?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("mount", sys_mount);
    t.register("umount2", umount2);
    t.register("pivot_root", pivot_root);
}
