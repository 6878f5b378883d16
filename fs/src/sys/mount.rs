//! mount, umount2, pivot_root (Linux fs/namespace.c): argument copying, the CAP_SYS_ADMIN
//! check (in the user namespace that owns the caller's mount namespace, `may_mount`) and
//! path walks; the tables themselves are [`crate::mount`]. Inside a user namespace other
//! than the initial one only the file systems Linux marks `FS_USERNS_MOUNT` may be mounted
//! anew ([`userns_mountable`]); binds, moves, remounts and propagation changes are allowed.

use super::{AT_FDCWD, lookup};
use crate::mount::{self, MS_BIND, MS_REMOUNT, UMOUNT_NOFOLLOW};
use crate::namei::Last;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_uapi::{Errno, SysResult};

/// `may_mount`: CAP_SYS_ADMIN in the user namespace owning the caller's mount namespace.
fn capable_sys_admin(c: &SyscallCtx<'_>) -> SysResult<()> {
    let p = &c.task.process;
    let ns = um_kernel::mntns::of(p);
    if p.ns_capable(ns.owner(), um_uapi::abi::capability::CAP_SYS_ADMIN) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// The file systems with `FS_USERNS_MOUNT` in Linux (mm/shmem.c tmpfs, fs/ramfs,
/// fs/proc/root.c, fs/sysfs, fs/devpts, ipc/mqueue.c, kernel/cgroup, fs/overlayfs,
/// fs/fuse): the only ones a user namespace's root may mount.
pub fn userns_mountable(fstype: &[u8]) -> bool {
    matches!(
        fstype,
        b"tmpfs"
            | b"ramfs"
            | b"proc"
            | b"sysfs"
            | b"devpts"
            | b"mqueue"
            | b"cgroup"
            | b"cgroup2"
            | b"overlay"
            | b"fuse"
    )
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
    // mount_capable / fs_context: a new mount of a file system without FS_USERNS_MOUNT
    // needs CAP_SYS_ADMIN in the initial user namespace.
    if flags & (MS_BIND | MS_REMOUNT | mount::MS_MOVE | mount::MS_PROPAGATION) == 0
        && !userns_mountable(&fstype)
        && !c
            .task
            .process
            .capable(um_uapi::abi::capability::CAP_SYS_ADMIN)
    {
        return Err(Errno::EPERM);
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

/// mount_setattr(2) (fs/namespace.c): flags `AT_EMPTY_PATH | AT_RECURSIVE |
/// AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT` (else `EINVAL`); a `struct mount_attr` of at least
/// version 0 (`EINVAL`), at most a page (`E2BIG`), zero past what is known (`E2BIG`);
/// CAP_SYS_ADMIN (`EPERM`); known attribute bits, at most one propagation type and a whole
/// atime mode (`build_mount_kattr`, `EINVAL`). Idmapped mounts need user namespaces, which do
/// not exist here: `MOUNT_ATTR_IDMAP` is `EINVAL`, as for a descriptor that is not one.
fn mount_setattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use um_uapi::abi::fcntl::{AT_EMPTY_PATH, AT_NO_AUTOMOUNT, AT_RECURSIVE, AT_SYMLINK_NOFOLLOW};
    use um_uapi::abi::mount::*;
    let (dirfd, path, flags, uattr, usize_) = (a[0], a[1], a[2], a[3], a[4] as usize);
    if flags & !(AT_EMPTY_PATH | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) != 0 {
        return Err(Errno::EINVAL);
    }
    if usize_ > 4096 {
        return Err(Errno::E2BIG);
    }
    if usize_ < MOUNT_ATTR_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    capable_sys_admin(c)?;
    let raw = c.read_bytes(uattr, usize_)?;
    if raw[MOUNT_ATTR_SIZE_VER0..].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let mut head = [0u8; MOUNT_ATTR_SIZE_VER0];
    head.copy_from_slice(&raw[..MOUNT_ATTR_SIZE_VER0]);
    let attr = MountAttr::from_bytes(&head);
    if attr.attr_set == 0 && attr.attr_clr == 0 && attr.propagation == 0 {
        return Ok(0);
    }
    if attr.propagation & !mount::MS_PROPAGATION != 0 || attr.propagation.count_ones() > 1 {
        return Err(Errno::EINVAL);
    }
    if (attr.attr_set | attr.attr_clr) & !MOUNT_SETATTR_VALID_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    if (attr.attr_set | attr.attr_clr) & MOUNT_ATTR_IDMAP != 0 {
        return Err(Errno::EINVAL);
    }
    // The per-mount bits as MS_* flags.
    let ms = |w: u64| {
        [
            (MOUNT_ATTR_RDONLY, mount::MS_RDONLY),
            (MOUNT_ATTR_NOSUID, mount::MS_NOSUID),
            (MOUNT_ATTR_NODEV, mount::MS_NODEV),
            (MOUNT_ATTR_NOEXEC, mount::MS_NOEXEC),
            (MOUNT_ATTR_NODIRATIME, mount::MS_NODIRATIME),
            (MOUNT_ATTR_NOSYMFOLLOW, mount::MS_NOSYMFOLLOW),
        ]
        .iter()
        .filter(|(bit, _)| w & bit != 0)
        .fold(0, |acc, (_, f)| acc | f)
    };
    let (mut set, mut clr) = (ms(attr.attr_set), ms(attr.attr_clr));
    // The atime mode: set only together with clearing the whole __ATIME field.
    if attr.attr_clr & MOUNT_ATTR__ATIME != 0 {
        if attr.attr_clr & MOUNT_ATTR__ATIME != MOUNT_ATTR__ATIME {
            return Err(Errno::EINVAL);
        }
        clr |= mount::MS_RELATIME | mount::MS_NOATIME;
        match attr.attr_set & MOUNT_ATTR__ATIME {
            MOUNT_ATTR_RELATIME => set |= mount::MS_RELATIME,
            MOUNT_ATTR_NOATIME => set |= mount::MS_NOATIME,
            MOUNT_ATTR_STRICTATIME => {}
            _ => return Err(Errno::EINVAL),
        }
    } else if attr.attr_set & MOUNT_ATTR__ATIME != 0 {
        return Err(Errno::EINVAL);
    }
    let d = match super::resolve_at(
        c,
        dirfd,
        path,
        flags & (AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW),
    )? {
        super::Target::Dentry(d) => d,
        super::Target::File(_) => return Err(Errno::EINVAL),
    };
    mount::do_setattr(&d, flags & AT_RECURSIVE != 0, set, clr, attr.propagation)?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("mount", sys_mount);
    t.register("umount2", umount2);
    t.register("pivot_root", pivot_root);
    t.register("mount_setattr", mount_setattr)
        .partial("no idmapped mounts (MOUNT_ATTR_IDMAP is EINVAL: no user namespaces)");
}
