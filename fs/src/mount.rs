//! The mount table (Linux `fs/namespace.c`, reduced to one global namespace).
//!
//! A mount attaches the root inode of a file system instance to a mount point, keyed by the
//! mount point's `(fs_id, id)` ([`Inode::fs_id`], [`Inode::id`]). The path walk calls [`cross`]
//! after every lookup: a mount point becomes the mounted root (stacked mounts are crossed in
//! mount order). Dentries are not cached, so the table, not the dentry, is the truth; the
//! walk keeps the mount point's name and parent on the crossed dentry, which makes `..` and
//! [`Dentry::path`] right. Per-mount state (read-only, nodev, noexec) is found by path:
//! [`mount_of`] gives the mount whose target is the longest prefix of a dentry's path.
//!
//! Key types: [`Mount`] (one entry), [`MountInfo`] (a `/proc/mounts` line), [`FsFactory`]
//! (a file system type others can add with [`register_fs`]). File system types built in:
//! `tmpfs` ([`crate::tmpfs`]), `devtmpfs` ([`crate::devfs`]), `proc` ([`crate::procfs`]),
//! `sysfs` ([`crate::sysfs`]), and bind mounts. [`boot_mounts`] records the hostfs root and mounts devtmpfs at
//! `/dev`. Neighbours: `namei` (crossing), `sys::mount` (the syscalls), hostfs, tmpfs, devfs.

use crate::hostfs::HostInode;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use um_kernel::kernel::Kernel;
use um_kernel::task::lock;
use um_kernel::vfs::{BlockDevice, Dentry, FileOps, Inode, mode};
use um_kernel::wait::IoCtx;
use um_mm::PageCache;
use um_uapi::{Errno, SysResult};

/// `MS_RDONLY`.
pub const MS_RDONLY: u64 = 1;
/// `MS_NOSUID`.
pub const MS_NOSUID: u64 = 2;
/// `MS_NODEV`.
pub const MS_NODEV: u64 = 4;
/// `MS_NOEXEC`.
pub const MS_NOEXEC: u64 = 8;
/// `MS_SYNCHRONOUS`.
pub const MS_SYNCHRONOUS: u64 = 16;
/// `MS_REMOUNT`.
pub const MS_REMOUNT: u64 = 32;
/// `MS_MANDLOCK`.
pub const MS_MANDLOCK: u64 = 64;
/// `MS_DIRSYNC`.
pub const MS_DIRSYNC: u64 = 128;
/// `MS_NOSYMFOLLOW`.
pub const MS_NOSYMFOLLOW: u64 = 256;
/// `MS_NOATIME`.
pub const MS_NOATIME: u64 = 1024;
/// `MS_NODIRATIME`.
pub const MS_NODIRATIME: u64 = 2048;
/// `MS_BIND`.
pub const MS_BIND: u64 = 4096;
/// `MS_MOVE`.
pub const MS_MOVE: u64 = 8192;
/// `MS_REC`.
pub const MS_REC: u64 = 16384;
/// `MS_SILENT`.
pub const MS_SILENT: u64 = 32768;
/// `MS_UNBINDABLE | MS_PRIVATE | MS_SLAVE | MS_SHARED`: propagation changes.
pub const MS_PROPAGATION: u64 = (1 << 17) | (1 << 18) | (1 << 19) | (1 << 20);
/// `MS_RELATIME`.
pub const MS_RELATIME: u64 = 1 << 21;
/// `MS_STRICTATIME`.
pub const MS_STRICTATIME: u64 = 1 << 24;
/// `MS_LAZYTIME`.
pub const MS_LAZYTIME: u64 = 1 << 25;
/// `MS_MGC_MSK` / `MS_MGC_VAL`: the old magic in the top 16 bits.
const MS_MGC_MSK: u64 = 0xffff_0000;
const MS_MGC_VAL: u64 = 0xc0ed_0000;
/// Per-mount flags this table keeps.
const MNT_FLAGS: u64 = MS_RDONLY
    | MS_NOSUID
    | MS_NODEV
    | MS_NOEXEC
    | MS_NOATIME
    | MS_NODIRATIME
    | MS_RELATIME
    | MS_NOSYMFOLLOW;

/// `MNT_FORCE`.
pub const MNT_FORCE: u64 = 1;
/// `MNT_DETACH`.
pub const MNT_DETACH: u64 = 2;
/// `MNT_EXPIRE`.
pub const MNT_EXPIRE: u64 = 4;
/// `UMOUNT_NOFOLLOW`.
pub const UMOUNT_NOFOLLOW: u64 = 8;

/// Makes the root inode of a new instance of a file system type from the mount flags and the
/// data string (`mount -o ...`).
pub type FsFactory = Arc<dyn Fn(u64, &[u8]) -> SysResult<Arc<dyn Inode>> + Send + Sync>;

/// One mounted file system.
pub struct Mount {
    /// Order of mounting (stacked mounts cross in this order).
    pub seq: u64,
    /// `(fs_id, id)` of the mount point; `None` for the root mount.
    pub point: Option<(u64, u64)>,
    /// The root of what is mounted.
    pub root: Arc<dyn Inode>,
    /// `mount`'s source argument (`none`, `tmpfs`, a bind source path ...).
    pub source: String,
    /// Where it is mounted (absolute path).
    pub target: Vec<u8>,
    pub fstype: String,
    /// `MS_*` per-mount flags ([`MNT_FLAGS`] bits only).
    pub flags: AtomicU64,
    /// File-system specific options for `/proc/mounts`.
    pub data: String,
}

impl Mount {
    /// The per-mount flags.
    pub fn flags(&self) -> u64 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Whether writes through this mount are refused.
    pub fn readonly(&self) -> bool {
        self.flags() & MS_RDONLY != 0
    }
}

/// A line of `/proc/mounts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountInfo {
    pub source: String,
    pub target: Vec<u8>,
    pub fstype: String,
    /// `rw,nosuid,...` as Linux `show_vfsmnt` prints them.
    pub options: String,
}

#[derive(Default)]
struct Table {
    mounts: Vec<Arc<Mount>>,
    next_seq: u64,
}

fn table() -> &'static Mutex<Table> {
    static T: OnceLock<Mutex<Table>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// Counts changes of the mount table (Linux `mnt_namespace.event`): `/proc/PID/mounts` and
/// `mountinfo` report POLLERR|POLLPRI to a poller that has not seen the latest one.
static MOUNT_EVENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where pollers of the mount table wait (`mnt_namespace.poll`).
pub static MOUNT_POLL: um_kernel::wait::WaitQueue = um_kernel::wait::WaitQueue::new();

/// The mount table's change count.
pub fn mount_event() -> u64 {
    MOUNT_EVENT.load(Ordering::Acquire)
}

/// A mount, unmount or remount happened (`touch_mnt_namespace`).
fn mounts_changed() {
    MOUNT_EVENT.fetch_add(1, Ordering::AcqRel);
    MOUNT_POLL.wake_all();
}

fn factories() -> &'static Mutex<BTreeMap<String, FsFactory>> {
    static F: OnceLock<Mutex<BTreeMap<String, FsFactory>>> = OnceLock::new();
    F.get_or_init(Default::default)
}

static PAGE_CACHE: OnceLock<Arc<PageCache>> = OnceLock::new();

/// The kernel's page cache (set at boot), for file systems that serve `mmap`.
pub fn page_cache() -> Option<&'static Arc<PageCache>> {
    PAGE_CACHE.get()
}

/// Makes the root of a new instance of a file system that lives on a block device (Linux's
/// `FS_REQUIRES_DEV` types, `get_tree_bdev`): the claimed device, the mount flags, the data.
pub type BdevFsFactory =
    Arc<dyn Fn(Arc<dyn BlockDevice>, u64, &[u8]) -> SysResult<Arc<dyn Inode>> + Send + Sync>;

fn bdev_factories() -> &'static Mutex<BTreeMap<String, BdevFsFactory>> {
    static F: OnceLock<Mutex<BTreeMap<String, BdevFsFactory>>> = OnceLock::new();
    F.get_or_init(Default::default)
}

/// Adds a block-device file system type (ext4 ...): `mount(2)` walks its source to a block
/// device node and claims the device for it.
pub fn register_bdev_fs(name: &str, factory: BdevFsFactory) {
    lock(bdev_factories()).insert(name.to_string(), factory);
}

/// The registered block-device file system types, in name order (`/proc/filesystems`).
pub fn bdev_fs_names() -> Vec<String> {
    lock(bdev_factories()).keys().cloned().collect()
}

/// Whether `fstype` needs a block device as its source (`fs_type->fs_flags & FS_REQUIRES_DEV`).
pub fn is_bdev_fs(fstype: &[u8]) -> bool {
    std::str::from_utf8(fstype).is_ok_and(|t| lock(bdev_factories()).contains_key(t))
}

/// A new instance of block-device file system `fstype` on device `rdev` (the source of
/// `mount(2)`, or `root=` at boot): `ENODEV` for an unknown type, `ENXIO` for no device.
pub fn mount_bdev(fstype: &str, rdev: u64, flags: u64, data: &[u8]) -> SysResult<Arc<dyn Inode>> {
    let f = lock(bdev_factories())
        .get(fstype)
        .cloned()
        .ok_or(Errno::ENODEV)?;
    let dev = um_kernel::vfs::claim_bdev(rdev, flags & MS_RDONLY == 0)?;
    f(dev, flags, data)
}

/// Adds a file system type (`register_filesystem`); a later registration replaces an earlier.
pub fn register_fs(name: &str, factory: FsFactory) {
    lock(factories()).insert(name.to_string(), factory);
}

/// The key of an inode for things that meet at one file (FIFOs, bound sockets): unique per
/// (file system instance, inode).
pub fn inode_key(inode: &dyn Inode) -> u64 {
    inode
        .fs_id()
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(32)
        ^ inode.id()
}

/// Opens a FIFO: the kernel's pipe for `key` ([`crate::pipe::open_fifo`]).
pub fn open_fifo(key: u64, flags: u32, io: &IoCtx<'_>) -> SysResult<Box<dyn FileOps>> {
    crate::pipe::open_fifo(key, flags, io)
}

/// After a lookup: what is mounted on `inode`, if anything (topmost of stacked mounts).
pub fn cross(inode: Arc<dyn Inode>) -> Arc<dyn Inode> {
    let t = lock(table());
    if t.mounts.len() <= 1 {
        return inode;
    }
    let mut cur = inode;
    let mut after = 0;
    loop {
        let key = (cur.fs_id(), cur.id());
        match t
            .mounts
            .iter()
            .find(|m| m.seq >= after && m.point == Some(key))
        {
            Some(m) => {
                after = m.seq + 1;
                cur = m.root.clone();
            }
            None => return cur,
        }
    }
}

/// Whether something is mounted on `inode` (unlink, rmdir and rename of it are `EBUSY`).
pub fn is_mountpoint(inode: &dyn Inode) -> bool {
    let key = (inode.fs_id(), inode.id());
    lock(table()).mounts.iter().any(|m| m.point == Some(key))
}

/// Whether `inode` is the root of a mount (statx's `STATX_ATTR_MOUNT_ROOT`).
pub fn is_mount_root(inode: &dyn Inode) -> bool {
    let key = (inode.fs_id(), inode.id());
    lock(table())
        .mounts
        .iter()
        .any(|m| (m.root.fs_id(), m.root.id()) == key)
}

/// Whether `a` is `b` or below it, component-wise (`/a` is under `/`, `/ab` is not under `/a`).
fn under(a: &[u8], b: &[u8]) -> bool {
    b == b"/" || a == b || (a.starts_with(b) && a.get(b.len()) == Some(&b'/'))
}

/// The mount a dentry belongs to: the latest mount whose target is the longest prefix of its
/// path.
pub fn mount_of(d: &Dentry) -> Option<Arc<Mount>> {
    let path = d.path();
    let t = lock(table());
    let mut best: Option<&Arc<Mount>> = None;
    for m in &t.mounts {
        if under(&path, &m.target) && best.is_none_or(|b| m.target.len() >= b.target.len()) {
            best = Some(m);
        }
    }
    best.cloned()
}

/// Whether writes under `d` are refused by its mount (`EROFS`).
pub fn is_readonly(d: &Dentry) -> bool {
    mount_of(d).is_some_and(|m| m.readonly())
}

/// Whether device nodes under `d` may not be opened (`MS_NODEV`).
pub fn is_nodev(d: &Dentry) -> bool {
    mount_of(d).is_some_and(|m| m.flags() & MS_NODEV != 0)
}

/// Whether programs under `d` may not be executed (`MS_NOEXEC`).
pub fn is_noexec(d: &Dentry) -> bool {
    mount_of(d).is_some_and(|m| m.flags() & MS_NOEXEC != 0)
}

/// `EROFS` if `d`'s mount is read-only.
pub fn check_writable(d: &Dentry) -> SysResult<()> {
    if is_readonly(d) {
        Err(Errno::EROFS)
    } else {
        Ok(())
    }
}

fn options(flags: u64, data: &str) -> String {
    let mut o = String::from(if flags & MS_RDONLY != 0 { "ro" } else { "rw" });
    for (bit, name) in [
        (MS_NOSUID, "nosuid"),
        (MS_NODEV, "nodev"),
        (MS_NOEXEC, "noexec"),
        (MS_NOSYMFOLLOW, "nosymfollow"),
        (MS_NOATIME, "noatime"),
        (MS_NODIRATIME, "nodiratime"),
        (MS_RELATIME, "relatime"),
    ] {
        if flags & bit != 0 {
            o.push(',');
            o.push_str(name);
        }
    }
    if !data.is_empty() {
        o.push(',');
        o.push_str(data);
    }
    o
}

/// Every mount, root first, as `/proc/mounts` lists them.
pub fn mounts() -> Vec<MountInfo> {
    lock(table())
        .mounts
        .iter()
        .map(|m| MountInfo {
            source: m.source.clone(),
            target: m.target.clone(),
            fstype: m.fstype.clone(),
            options: options(m.flags(), &m.data),
        })
        .collect()
}

impl MountInfo {
    /// The `/proc/mounts` line: `source target fstype options 0 0\n`, with spaces, tabs,
    /// newlines and backslashes octal-escaped as Linux `mangle` does.
    pub fn line(&self) -> Vec<u8> {
        fn esc(out: &mut Vec<u8>, s: &[u8]) {
            for &b in s {
                if matches!(b, b' ' | b'\t' | b'\n' | b'\\') {
                    out.extend_from_slice(format!("\\{b:03o}").as_bytes());
                } else {
                    out.push(b);
                }
            }
        }
        let mut out = Vec::new();
        esc(&mut out, self.source.as_bytes());
        out.push(b' ');
        esc(&mut out, &self.target);
        out.push(b' ');
        esc(&mut out, self.fstype.as_bytes());
        out.push(b' ');
        esc(&mut out, self.options.as_bytes());
        out.extend_from_slice(b" 0 0\n");
        out
    }
}

fn add(
    point: Option<(u64, u64)>,
    root: Arc<dyn Inode>,
    source: &str,
    target: Vec<u8>,
    fstype: &str,
    flags: u64,
    data: &str,
) {
    let mut t = lock(table());
    let seq = t.next_seq;
    t.next_seq += 1;
    mounts_changed();
    t.mounts.push(Arc::new(Mount {
        seq,
        point,
        root,
        source: source.to_string(),
        target,
        fstype: fstype.to_string(),
        flags: AtomicU64::new(flags & MNT_FLAGS),
        data: data.to_string(),
    }));
}

/// A new instance of file system type `fstype`.
fn new_instance(
    k: &Arc<Kernel>,
    fstype: &str,
    flags: u64,
    data: &[u8],
) -> SysResult<Arc<dyn Inode>> {
    match fstype {
        "tmpfs" => crate::tmpfs::TmpFs::new_root(data, k.frames.total_frames() as u64),
        "devtmpfs" => Ok(crate::devfs::devtmpfs()),
        "proc" => crate::procfs::mount(k),
        "sysfs" => crate::sysfs::mount(k),
        _ => {
            let f = lock(factories()).get(fstype).cloned();
            match f {
                Some(f) => f(flags, data),
                None => Err(Errno::ENODEV),
            }
        }
    }
}

/// The mount whose root `d` is (the target of umount or remount), or `EINVAL`.
fn mount_at(d: &Dentry) -> SysResult<Arc<Mount>> {
    let path = d.path();
    let key = (d.inode.fs_id(), d.inode.id());
    lock(table())
        .mounts
        .iter()
        .rev()
        .find(|m| m.target == path && (m.root.fs_id(), m.root.id()) == key)
        .cloned()
        .ok_or(Errno::EINVAL)
}

/// `mount(2)` after the paths are walked: `source` is the source string (and for a bind
/// mount, `bind_src` the walked source), `target` the walked mount point. The caller checked
/// CAP_SYS_ADMIN.
pub fn do_mount(
    k: &Arc<Kernel>,
    source: &[u8],
    bind_src: Option<&Arc<Dentry>>,
    target: &Arc<Dentry>,
    fstype: &[u8],
    flags: u64,
    data: &[u8],
) -> SysResult<()> {
    let mut flags = flags;
    if flags & MS_MGC_MSK == MS_MGC_VAL {
        flags &= !MS_MGC_MSK;
    }
    // fs/namespace.c path_mount: MS_NOATIME etc. default to relatime.
    if flags & (MS_NOATIME | MS_RELATIME | MS_STRICTATIME) == 0 {
        flags |= MS_RELATIME;
    }
    if flags & MS_REMOUNT != 0 {
        let m = mount_at(target)?;
        let keep = m.flags() & !(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
        let new = if flags & MS_BIND != 0 {
            keep | (flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC))
        } else {
            (m.flags() & !MS_RDONLY) | (flags & MS_RDONLY)
        };
        if flags & MS_BIND == 0 && new & MS_RDONLY == 0 && is_bdev_fs(m.fstype.as_bytes()) {
            // The block-device file systems here are read-only so far (ext4's write side
            // is not done): `remount,rw` is refused as their rw mount is.
            log::error!(
                "{} ({}): cannot remount read-write: no write support yet",
                m.fstype,
                m.source
            );
            return Err(Errno::EROFS);
        }
        m.flags.store(new & MNT_FLAGS, Ordering::Relaxed);
        mounts_changed();
        if let Some(h) = m.root.as_any().downcast_ref::<HostInode>() {
            h.set_readonly(new & MS_RDONLY != 0);
        }
        return Ok(());
    }
    if flags & MS_PROPAGATION != 0 {
        // Propagation types (shared, private, slave, unbindable): one namespace without
        // propagation, so every mount already behaves as private.
        mount_at(target)?;
        return Ok(());
    }
    if flags & MS_MOVE != 0 {
        return Err(Errno::EINVAL);
    }
    if target.parent.is_none() {
        // Mounting over the root directory itself is not supported.
        return Err(Errno::EBUSY);
    }
    let tst = target.inode.stat()?;
    let point = Some((target.inode.fs_id(), target.inode.id()));
    let tpath = target.path();
    let src = String::from_utf8_lossy(source).into_owned();
    if flags & MS_BIND != 0 {
        let s = bind_src.ok_or(Errno::ENOENT)?;
        let sst = s.inode.stat()?;
        let dir = |m: u32| m & mode::S_IFMT == mode::S_IFDIR;
        if dir(sst.mode) != dir(tst.mode) {
            return Err(if dir(tst.mode) {
                Errno::ENOTDIR
            } else {
                Errno::EISDIR
            });
        }
        // /proc/mounts shows a bind mount with the source and type of the mount it came from.
        let (source, fstype, data) = match mount_of(s) {
            Some(m) => (m.source.clone(), m.fstype.clone(), m.data.clone()),
            None => (src, "none".to_string(), String::new()),
        };
        add(
            point,
            s.inode.clone(),
            &source,
            tpath,
            &fstype,
            flags,
            &data,
        );
        return Ok(());
    }
    if tst.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    let fstype = std::str::from_utf8(fstype).map_err(|_| Errno::ENODEV)?;
    if is_bdev_fs(fstype.as_bytes()) {
        // get_tree_bdev -> lookup_bdev: the source must name a block device node on a
        // mount that allows devices.
        let s = bind_src.ok_or(Errno::ENOTBLK)?;
        let st = s.inode.stat()?;
        if st.mode & mode::S_IFMT != mode::S_IFBLK {
            return Err(Errno::ENOTBLK);
        }
        if is_nodev(s) {
            return Err(Errno::EACCES);
        }
        let root = mount_bdev(fstype, st.rdev, flags, data)?;
        let data = String::from_utf8_lossy(data).into_owned();
        add(point, root, &src, tpath, fstype, flags, &data);
        return Ok(());
    }
    let root = new_instance(k, fstype, flags, data)?;
    let data = String::from_utf8_lossy(data).into_owned();
    add(point, root, &src, tpath, fstype, flags, &data);
    Ok(())
}

/// `umount2(2)` after the path is walked. With `MNT_DETACH` the mounts below go too;
/// without it they make it `EBUSY`.
pub fn do_umount(target: &Dentry, flags: u64) -> SysResult<()> {
    if flags & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0
        || flags & MNT_EXPIRE != 0 && flags & (MNT_FORCE | MNT_DETACH) != 0
    {
        return Err(Errno::EINVAL);
    }
    let m = mount_at(target)?;
    if m.point.is_none() {
        return Err(Errno::EBUSY);
    }
    let mut t = lock(table());
    let below = |x: &Mount| x.seq != m.seq && under(&x.target, &m.target) && x.seq > m.seq;
    if flags & MNT_DETACH == 0 && t.mounts.iter().any(|x| below(x)) {
        return Err(Errno::EBUSY);
    }
    t.mounts.retain(|x| x.seq != m.seq && !below(x));
    drop(t);
    mounts_changed();
    Ok(())
}

/// Boot: remembers the page cache, records the hostfs root as the first mount
/// (`/dev/root / hostfs rw 0 0`), registers the memory devices, and mounts devtmpfs on `/dev`
/// (as `CONFIG_DEVTMPFS_MOUNT` does) when the root has that directory.
pub fn boot_mounts(kernel: &Arc<Kernel>, root: &Arc<Dentry>) {
    let ro = root
        .inode
        .as_any()
        .downcast_ref::<HostInode>()
        .is_some_and(|h| h.readonly());
    let fstype = if root.inode.as_any().is::<HostInode>() {
        "hostfs"
    } else {
        "rootfs"
    };
    boot_mounts_as(kernel, root, "/dev/root", fstype, ro);
}

/// [`boot_mounts`] for a root of any type: `/proc/mounts` shows `source` and `fstype` (a
/// block-device root: `/dev/ubda / ext4 ro 0 0`).
pub fn boot_mounts_as(
    kernel: &Arc<Kernel>,
    root: &Arc<Dentry>,
    source: &str,
    fstype: &str,
    ro: bool,
) {
    let _ = PAGE_CACHE.set(kernel.page_cache.clone());
    {
        let mut t = lock(table());
        t.mounts.clear();
        t.next_seq = 0;
    }
    add(
        None,
        root.inode.clone(),
        source,
        b"/".to_vec(),
        fstype,
        if ro { MS_RDONLY } else { 0 },
        "",
    );
    crate::devfs::register_mem_devices();
    crate::userfaultfd::register_dev();
    match root.inode.lookup(b"dev") {
        Ok(dev)
            if dev
                .stat()
                .is_ok_and(|s| s.mode & mode::S_IFMT == mode::S_IFDIR) =>
        {
            let d = Dentry::child(root, b"dev", dev);
            match do_mount(
                kernel,
                b"devtmpfs",
                None,
                &d,
                b"devtmpfs",
                MS_NOSUID,
                b"mode=755",
            ) {
                Ok(()) => log::info!("devtmpfs: mounted"),
                Err(e) => log::warn!("devtmpfs: cannot mount on /dev: {e}"),
            }
        }
        _ => log::info!("devtmpfs: no /dev in the root, not mounted"),
    }
}

/// Boot: mounts the host directory `host` (a hostfs of its own, confined to it as the root is)
/// on the guest directory `guest` (an absolute path of directories in the root file system),
/// for `bind=HOST:GUEST` (`linux run --bind`). `ENOENT`/`ENOTDIR` when the guest path is not a
/// directory of the root; the host side's errors as `EIO`-free strings are the caller's.
pub fn boot_bind(
    root: &Arc<Dentry>,
    guest: &[u8],
    inode: Arc<dyn Inode>,
    host: &str,
    readonly: bool,
) -> SysResult<()> {
    let mut d = root.clone();
    for name in guest.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
        if name == b"." || name == b".." {
            return Err(Errno::EINVAL);
        }
        let i = d.inode.lookup(name)?;
        if i.stat()?.mode & mode::S_IFMT != mode::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        d = Dentry::child(&d, name, i);
    }
    if d.parent.is_none() {
        return Err(Errno::EBUSY);
    }
    let point = Some((d.inode.fs_id(), d.inode.id()));
    add(
        point,
        inode,
        host,
        d.path(),
        "hostfs",
        if readonly { MS_RDONLY } else { 0 },
        "",
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_is_component_wise() {
        assert!(under(b"/a/b", b"/a"));
        assert!(under(b"/a", b"/a"));
        assert!(!under(b"/ab", b"/a"));
        assert!(under(b"/x", b"/"));
    }

    #[test]
    fn options_and_lines() {
        assert_eq!(options(0, ""), "rw");
        assert_eq!(
            options(MS_RDONLY | MS_NOSUID, "mode=755"),
            "ro,nosuid,mode=755"
        );
        let l = MountInfo {
            source: "/dev/root".into(),
            target: b"/a b".to_vec(),
            fstype: "hostfs".into(),
            options: "rw".into(),
        };
        assert_eq!(l.line(), b"/dev/root /a\\040b hostfs rw 0 0\n".to_vec());
    }
}
