//! mount, umount2, pivot_root (Linux fs/namespace.c): argument copying, the CAP_SYS_ADMIN
//! check (in the user namespace that owns the caller's mount namespace, `may_mount`) and
//! path walks; the tables themselves are [`crate::mount`]. Inside a user namespace other
//! than the initial one only the file systems Linux marks `FS_USERNS_MOUNT` may be mounted
//! anew ([`userns_mountable`]); binds, moves, remounts and propagation changes are allowed.

use super::{AT_FDCWD, lookup};
use crate::mount::{self, MS_BIND, MS_REMOUNT, UMOUNT_NOFOLLOW};
use crate::namei::Last;
use std::any::Any;
use std::sync::{Arc, Mutex};
use um_kernel::sysarg::args;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{Dentry, FileOps, Inode, Kstat, OpenFile};
use um_uapi::abi::fcntl::{AT_EMPTY_PATH, AT_NO_AUTOMOUNT, AT_RECURSIVE, AT_SYMLINK_NOFOLLOW};
use um_uapi::abi::mount::*;
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

/// The per-mount `MOUNT_ATTR_*` bits of `w` (not the atime mode) as `MS_*` flags.
fn attr_to_ms(w: u64) -> u64 {
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
}

/// mount_setattr(2) (fs/namespace.c): flags `AT_EMPTY_PATH | AT_RECURSIVE |
/// AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT` (else `EINVAL`); a `struct mount_attr` of at least
/// version 0 (`EINVAL`), at most a page (`E2BIG`), zero past what is known (`E2BIG`);
/// CAP_SYS_ADMIN (`EPERM`); known attribute bits, at most one propagation type and a whole
/// atime mode (`build_mount_kattr`, `EINVAL`). Idmapped mounts are not implemented:
/// `MOUNT_ATTR_IDMAP` is `EINVAL`, as for a descriptor that is not a user namespace.
fn mount_setattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
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
    let (mut set, mut clr) = (attr_to_ms(attr.attr_set), attr_to_ms(attr.attr_clr));
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

/// A descriptor of a detached mount tree (open_tree with `OPEN_TREE_CLONE`, fsmount): an
/// `O_PATH` file on the tree's top; move_mount(2) attaches the tree once.
struct MountFd {
    dentry: Arc<Dentry>,
    tree: Mutex<Option<mount::Detached>>,
    /// Once attached: the root dentry of the attached top, which a later move_mount moves.
    attached: Mutex<Option<Arc<Dentry>>>,
}

/// Opened `O_PATH`: the descriptor table refuses it to every I/O call (`EBADF`, as `fdget`),
/// so only metadata and the mount calls reach it.
impl FileOps for MountFd {
    fn stat(&self) -> SysResult<Kstat> {
        self.dentry.inode.stat()
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// What an fsopen(2) context has been told (fs/fs_context.c): the source, the options for the
/// file system, read-only, and after `FSCONFIG_CMD_CREATE` the instance.
#[derive(Default)]
struct FsCtx {
    source: Option<String>,
    options: Vec<String>,
    readonly: bool,
    root: Option<Arc<dyn Inode>>,
    /// Mounted by fsmount(2) already (`FS_CONTEXT_AWAITING_MOUNT` passed).
    mounted: bool,
}

/// An fsopen(2) descriptor (`anon_inode:[fscontext]`).
struct FsContextFd {
    fstype: String,
    ctx: Mutex<FsCtx>,
    ino: u64,
}

impl FileOps for FsContextFd {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(um_kernel::vfs::anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }
    fn anon_name(&self) -> Option<&'static str> {
        Some("[fscontext]")
    }
    /// fscontext_fops has no poll: epoll_ctl refuses it (`EPERM`).
    fn can_poll(&self) -> bool {
        false
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// A new descriptor for `ops` (with `dentry` for the mount ones), close-on-exec if asked.
fn install(
    c: &SyscallCtx<'_>,
    ops: Box<dyn FileOps>,
    flags: u32,
    dentry: Option<Arc<Dentry>>,
    cloexec: bool,
) -> SysResult {
    let f = OpenFile::new(ops, flags, dentry);
    let fd = lock(&c.task.process.files()).install(f, cloexec, 0)?;
    Ok(u64::from(fd))
}

/// open_tree(2) (fs/namespace.c): without `OPEN_TREE_CLONE` an `O_PATH` descriptor of the
/// place; with it (CAP_SYS_ADMIN, `may_mount`) a detached private copy of the mount there,
/// and with `AT_RECURSIVE` of the mounts below too ([`mount::clone_tree`]). Unknown flags, or
/// `AT_RECURSIVE` without a clone, are `EINVAL`.
fn open_tree(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (dirfd, path, flags): (u64, u64, u32) = args(&a)?;
    let flags = u64::from(flags);
    let known = AT_EMPTY_PATH
        | AT_NO_AUTOMOUNT
        | AT_RECURSIVE
        | AT_SYMLINK_NOFOLLOW
        | OPEN_TREE_CLONE
        | OPEN_TREE_CLOEXEC;
    if flags & !known != 0 || flags & AT_RECURSIVE != 0 && flags & OPEN_TREE_CLONE == 0 {
        return Err(Errno::EINVAL);
    }
    let clone = flags & OPEN_TREE_CLONE != 0;
    if clone {
        capable_sys_admin(c)?;
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
    let cloexec = flags & OPEN_TREE_CLOEXEC != 0;
    let o_path = um_uapi::abi::fcntl::O_PATH;
    if !clone {
        return install(
            c,
            Box::new(MountFd {
                dentry: d.clone(),
                tree: Mutex::new(None),
                attached: Mutex::new(None),
            }),
            o_path,
            Some(d),
            cloexec,
        );
    }
    let tree = mount::clone_tree(&d, flags & AT_RECURSIVE != 0)?;
    let top = Dentry::mount_root(d.parent.clone(), &d.name, d.inode.clone(), tree.top());
    install(
        c,
        Box::new(MountFd {
            dentry: top.clone(),
            tree: Mutex::new(Some(tree)),
            attached: Mutex::new(None),
        }),
        o_path,
        Some(top),
        cloexec,
    )
}

/// move_mount(2) (fs/namespace.c): CAP_SYS_ADMIN; the source is a descriptor of a detached
/// tree (attached at the target, once: `attach_recursive_mnt`) or the root of a mount (moved
/// there, as `MS_MOVE`). `MOVE_MOUNT_F_EMPTY_PATH`/`T_EMPTY_PATH` let an empty path name the
/// descriptor; `F_SYMLINKS`/`T_SYMLINKS` follow a final symlink. Other flags (`SET_GROUP`,
/// newer ones) are `EINVAL`.
fn move_mount(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (from_dfd, from_path, to_dfd, to_path, flags): (u64, u64, u64, u64, u32) = args(&a)?;
    let flags = u64::from(flags);
    let known = MOVE_MOUNT_F_SYMLINKS
        | MOVE_MOUNT_F_AUTOMOUNTS
        | MOVE_MOUNT_F_EMPTY_PATH
        | MOVE_MOUNT_T_SYMLINKS
        | MOVE_MOUNT_T_AUTOMOUNTS
        | MOVE_MOUNT_T_EMPTY_PATH;
    if flags & !known != 0 {
        return Err(Errno::EINVAL);
    }
    capable_sys_admin(c)?;
    let walk_flags = |empty: u64, symlinks: u64| {
        (if flags & empty != 0 { AT_EMPTY_PATH } else { 0 })
            | (if flags & symlinks != 0 {
                0
            } else {
                AT_SYMLINK_NOFOLLOW
            })
    };
    let from = super::resolve_at(
        c,
        from_dfd,
        from_path,
        walk_flags(MOVE_MOUNT_F_EMPTY_PATH, MOVE_MOUNT_F_SYMLINKS),
    )?;
    let to = match super::resolve_at(
        c,
        to_dfd,
        to_path,
        walk_flags(MOVE_MOUNT_T_EMPTY_PATH, MOVE_MOUNT_T_SYMLINKS),
    )? {
        super::Target::Dentry(d) => d,
        super::Target::File(_) => return Err(Errno::EINVAL),
    };
    let mut from = match from {
        super::Target::Dentry(d) => d,
        super::Target::File(_) => return Err(Errno::EINVAL),
    };
    // A detached tree's descriptor, named by an empty path: attached once; after that the
    // descriptor names the attached mount, which moves.
    if c.read_cstr(from_path, 1)?.is_empty() {
        let f = lock(&c.task.process.files()).get(from_dfd & 0xffff_ffff)?;
        if let Some(m) = f.ops.as_any().and_then(|x| x.downcast_ref::<MountFd>()) {
            let mut tree = lock(&m.tree);
            if let Some(t) = tree.as_ref() {
                let top = mount::attach_tree(t, &to)?;
                let root = top.root.clone();
                *lock(&m.attached) =
                    Some(Dentry::mount_root(to.parent.clone(), &to.name, root, top));
                *tree = None;
                return Ok(0);
            }
            if let Some(d) = lock(&m.attached).clone() {
                from = d;
            }
        }
    }
    mount::do_mount(c.kernel, b"", Some(&from), &to, b"", mount::MS_MOVE, b"")?;
    Ok(0)
}

/// fsopen(2) (fs/fsopen.c): a configuration context for a new instance of `fsname`
/// (`ENODEV` for an unknown type), CAP_SYS_ADMIN (`may_mount`; in a user namespace only the
/// `FS_USERNS_MOUNT` types), flags `FSOPEN_CLOEXEC` only.
fn fsopen(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[1] & !FSOPEN_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    capable_sys_admin(c)?;
    let name = c.read_cstr(a[0], 4096)?;
    let fstype = String::from_utf8(name).map_err(|_| Errno::ENODEV)?;
    if !mount::fs_type_known(&fstype) {
        return Err(Errno::ENODEV);
    }
    if !userns_mountable(fstype.as_bytes())
        && !c
            .task
            .process
            .capable(um_uapi::abi::capability::CAP_SYS_ADMIN)
    {
        return Err(Errno::EPERM);
    }
    static INO: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let ino = INO.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ops = FsContextFd {
        fstype,
        ctx: Mutex::new(FsCtx::default()),
        ino,
    };
    install(c, Box::new(ops), 0o2, None, a[1] & FSOPEN_CLOEXEC != 0)
}

/// The context behind descriptor `fd` (`EINVAL` for any other file, as `fscontext_fops`).
fn fs_context(c: &SyscallCtx<'_>, fd: u64) -> SysResult<Arc<OpenFile>> {
    let f = lock(&c.task.process.files()).get(fd & 0xffff_ffff)?;
    if f.ops.as_any().is_some_and(|x| x.is::<FsContextFd>()) {
        Ok(f)
    } else {
        Err(Errno::EINVAL)
    }
}

/// fsconfig(2) (fs/fsopen.c): `SET_FLAG` (a key, no value; `ro`/`rw` set the instance's
/// read-only state, others become options), `SET_STRING` (`source`, or `key=value`
/// options), `CMD_CREATE` (the instance is made from the options: `EBUSY` if made already).
/// Binary, path and descriptor values and `CMD_RECONFIGURE` are `EOPNOTSUPP` here; unknown
/// commands `EOPNOTSUPP` as Linux 6.1.
fn fsconfig(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, cmd, key, value, aux): (u64, u32, u64, u64, i32) = args(&a)?;
    let f = fs_context(c, fd)?;
    let Some(ctx) = f.ops.as_any().and_then(|x| x.downcast_ref::<FsContextFd>()) else {
        return Err(Errno::EINVAL);
    };
    let key = if key == 0 {
        None
    } else {
        Some(String::from_utf8_lossy(&c.read_cstr(key, 256)?).into_owned())
    };
    let mut st = lock(&ctx.ctx);
    match u64::from(cmd) {
        FSCONFIG_SET_FLAG => {
            let k = key.ok_or(Errno::EINVAL)?;
            if value != 0 || aux != 0 {
                return Err(Errno::EINVAL);
            }
            match k.as_str() {
                "ro" => st.readonly = true,
                "rw" => st.readonly = false,
                _ => st.options.push(k),
            }
            Ok(0)
        }
        FSCONFIG_SET_STRING => {
            let k = key.ok_or(Errno::EINVAL)?;
            if value == 0 || aux != 0 {
                return Err(Errno::EINVAL);
            }
            let v = String::from_utf8_lossy(&c.read_cstr(value, 4096)?).into_owned();
            if k == "source" {
                if st.source.is_some() {
                    return Err(Errno::EINVAL);
                }
                st.source = Some(v);
            } else {
                st.options.push(format!("{k}={v}"));
            }
            Ok(0)
        }
        FSCONFIG_CMD_CREATE => {
            if key.is_some() || value != 0 || aux != 0 {
                return Err(Errno::EINVAL);
            }
            if st.root.is_some() {
                return Err(Errno::EBUSY);
            }
            let data = st.options.join(",");
            let bdev = if mount::is_bdev_fs(ctx.fstype.as_bytes()) {
                let src = st.source.clone().ok_or(Errno::EINVAL)?;
                Some(lookup(c, AT_FDCWD as u64, src.as_bytes(), Last::Follow)?)
            } else {
                None
            };
            let ro = if st.readonly { mount::MS_RDONLY } else { 0 };
            st.root = Some(mount::create_instance(
                c.kernel,
                &ctx.fstype,
                bdev.as_deref(),
                ro,
                data.as_bytes(),
            )?);
            Ok(0)
        }
        FSCONFIG_SET_BINARY
        | FSCONFIG_SET_PATH
        | FSCONFIG_SET_PATH_EMPTY
        | FSCONFIG_SET_FD
        | FSCONFIG_CMD_RECONFIGURE => Err(Errno::EOPNOTSUPP),
        _ => Err(Errno::EOPNOTSUPP),
    }
}

/// fsmount(2) (fs/namespace.c): a detached mount of a created context's instance
/// (`EINVAL` before `FSCONFIG_CMD_CREATE`; `EBUSY` for a second fsmount of one context),
/// with the per-mount `MOUNT_ATTR_*` bits of `attr_flags` (`MOUNT_ATTR_IDMAP` and unknown bits
/// `EINVAL`); flags `FSMOUNT_CLOEXEC` only.
fn fsmount(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, flags, attr): (u64, u32, u32) = args(&a)?;
    let (flags, attr) = (u64::from(flags), u64::from(attr));
    if flags & !FSMOUNT_CLOEXEC != 0
        || attr & !MOUNT_SETATTR_VALID_FLAGS != 0
        || attr & MOUNT_ATTR_IDMAP != 0
    {
        return Err(Errno::EINVAL);
    }
    capable_sys_admin(c)?;
    let f = fs_context(c, fd)?;
    let Some(ctx) = f.ops.as_any().and_then(|x| x.downcast_ref::<FsContextFd>()) else {
        return Err(Errno::EINVAL);
    };
    let mut st = lock(&ctx.ctx);
    let root = st.root.clone().ok_or(Errno::EINVAL)?;
    if st.mounted {
        return Err(Errno::EBUSY);
    }
    let mut ms = attr_to_ms(attr);
    ms |= match attr & MOUNT_ATTR__ATIME {
        MOUNT_ATTR_NOATIME => mount::MS_NOATIME,
        MOUNT_ATTR_STRICTATIME => 0,
        _ => mount::MS_RELATIME,
    };
    if st.readonly {
        ms |= mount::MS_RDONLY;
    }
    st.mounted = true;
    let source = st.source.clone().unwrap_or_else(|| "none".to_string());
    let tree = mount::new_detached(
        root.clone(),
        &source,
        &ctx.fstype,
        ms,
        &st.options.join(","),
    );
    drop(st);
    let top = Dentry::mount_root(None, b"/", root, tree.top());
    install(
        c,
        Box::new(MountFd {
            dentry: top.clone(),
            tree: Mutex::new(Some(tree)),
            attached: Mutex::new(None),
        }),
        um_uapi::abi::fcntl::O_PATH,
        Some(top),
        flags & FSMOUNT_CLOEXEC != 0,
    )
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("mount", sys_mount);
    t.register("open_tree", open_tree).partial(
        "a clone's mounts are the tree at open_tree time; no mount namespace is made for it",
    );
    t.register("move_mount", move_mount)
        .partial("MOVE_MOUNT_SET_GROUP is EINVAL");
    t.register("fsopen", fsopen);
    t.register("fsconfig", fsconfig)
        .partial("binary, path and descriptor values and FSCONFIG_CMD_RECONFIGURE are EOPNOTSUPP");
    t.register("fsmount", fsmount);
    t.register("umount2", umount2);
    t.register("pivot_root", pivot_root);
    t.register("mount_setattr", mount_setattr)
        .partial("no idmapped mounts (MOUNT_ATTR_IDMAP is EINVAL: no user namespaces)");
}
