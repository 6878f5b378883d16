//! The mount tables (Linux `fs/namespace.c`, `fs/pnode.c`, mount_namespaces(7)).
//!
//! Each mount namespace ([`MntNs`], `um_kernel::mntns`) owns a [`Table`]; the caller's
//! namespace (`current->nsproxy->mnt_ns`) is the one every function here consults. A mount
//! attaches the root inode of a file system instance to a place: its parent mount's id and
//! the mount point's `(fs_id, id)` ([`Inode::fs_id`], [`Inode::id`]) on it, so a directory
//! seen through two mounts (a private bind) is two places. The path walk calls [`cross`]
//! after every lookup: a mount point of the mount the directory is on becomes the mounted root
//! (stacked mounts are crossed bottom up). Dentries are not cached, so the table, not the
//! dentry, is the truth; the walk keeps the mount point's name and parent on the crossed
//! dentry, which makes `..` and [`Dentry::path`] right. Per-mount state (read-only, nodev,
//! noexec) is found by path: [`mount_of`] gives the mount whose target is the longest prefix
//! of a dentry's path. Mount ids are global (from 21), peer group ids too (from 1);
//! [`Prop`] is a mount's propagation state, `receivers` the mounts that get a copy of what
//! is mounted under a shared one. [`pivot_root`], [`do_umount`] (`MNT_DETACH`, `MNT_EXPIRE`)
//! and [`do_mount`] (bind, rbind, move, remount, propagation changes) change a table;
//! [`mounts_of`] lists one as a process sees it from its root.
//!
//! Key types: [`Mount`] (one entry), [`MountInfo`] (a `/proc/mounts` line), [`FsFactory`]
//! (a file system type others can add with [`register_fs`]; [`register_show_options`] lets
//! one show its instances' options canonically, [`fs_names`] lists them for
//! `/proc/filesystems`). File system types built in:
//! `tmpfs` ([`crate::tmpfs`]), `devtmpfs` ([`crate::devfs`]), `proc` ([`crate::procfs`]),
//! `sysfs` ([`crate::sysfs`]), and bind mounts. [`boot_mounts`] records the hostfs root and mounts devtmpfs at
//! `/dev`. Neighbours: `namei` (crossing), `sys::mount` (the syscalls), hostfs, tmpfs, devfs.

use crate::hostfs::HostInode;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::mntns::MntNs;
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
/// `MS_UNBINDABLE`: bind mounts of it are refused.
pub const MS_UNBINDABLE: u64 = 1 << 17;
/// `MS_PRIVATE`: no propagation.
pub const MS_PRIVATE: u64 = 1 << 18;
/// `MS_SLAVE`: receives from its master's peer group, sends nothing.
pub const MS_SLAVE: u64 = 1 << 19;
/// `MS_SHARED`: in a peer group, sends and receives.
pub const MS_SHARED: u64 = 1 << 20;
/// `MS_UNBINDABLE | MS_PRIVATE | MS_SLAVE | MS_SHARED`: propagation changes.
pub const MS_PROPAGATION: u64 = MS_UNBINDABLE | MS_PRIVATE | MS_SLAVE | MS_SHARED;
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

/// The parent id `mountinfo` shows for a namespace's root mount: the invisible mount it sits
/// on (Linux's `rootfs`, id 1 in the initial namespace).
pub const ROOTFS_ID: u64 = 1;

/// Propagation state of a mount (Linux `mnt_share`, `mnt_master`, `MNT_UNBINDABLE`;
/// Documentation/filesystems/sharedsubtree.rst). Peer groups are numbered from 1 and shared
/// by every namespace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prop {
    /// The peer group this mount is in (`shared:N`), 0 if not shared.
    pub shared: u64,
    /// The peer group this mount receives from (`master:N`), 0 if not a slave.
    pub master: u64,
    /// Bind mounts of it are refused (`unbindable`).
    pub unbindable: bool,
}

/// One mounted file system.
pub struct Mount {
    /// The mount id (`mnt_id`, the first field of `mountinfo`): unique over all namespaces.
    pub id: u64,
    /// Order of mounting: of mounts on one place the latest is on top.
    pub seq: u64,
    /// The id of the mount this one is attached to ([`ROOTFS_ID`] for a namespace root).
    pub parent: u64,
    /// `(fs_id, id)` of the mount point, on the parent mount; `None` for the root mount.
    pub point: Option<(u64, u64)>,
    /// The root of what is mounted.
    pub root: Arc<dyn Inode>,
    /// Where that root is inside its file system (`mountinfo`'s root field: `/` unless a bind
    /// mount of a subdirectory).
    pub root_path: Vec<u8>,
    /// `mount`'s source argument (`none`, `tmpfs`, a bind source path ...).
    pub source: String,
    /// Where it is mounted (the path of its dentry chain).
    pub target: Vec<u8>,
    pub fstype: String,
    /// `MS_*` per-mount flags ([`MNT_FLAGS`] bits only).
    pub flags: AtomicU64,
    /// File-system specific options for `/proc/mounts`.
    pub data: String,
    /// Shared, slave, unbindable.
    pub prop: Mutex<Prop>,
    /// `MNT_EXPIRE`'s mark (`mnt_expiry_mark`): set by the first `umount2(MNT_EXPIRE)`,
    /// cleared when the mount is used.
    pub expiry_mark: std::sync::atomic::AtomicBool,
    /// Unmounted (`umount2`, lazily or not): in no table any more, but the dentries and
    /// files under it still carry it (`Dentry::mnt`) and see its flags.
    pub detached: std::sync::atomic::AtomicBool,
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

    /// The propagation state.
    pub fn prop(&self) -> Prop {
        *lock(&self.prop)
    }

    fn root_key(&self) -> (u64, u64) {
        (self.root.fs_id(), self.root.id())
    }

    /// A copy of this mount with other id, place and propagation (clone_mnt).
    fn clone_as(
        &self,
        id: u64,
        seq: u64,
        parent: u64,
        point: Option<(u64, u64)>,
        target: Vec<u8>,
        prop: Prop,
    ) -> Mount {
        Mount {
            id,
            seq,
            parent,
            point,
            root: self.root.clone(),
            root_path: self.root_path.clone(),
            source: self.source.clone(),
            target,
            fstype: self.fstype.clone(),
            flags: AtomicU64::new(self.flags()),
            data: self.data.clone(),
            prop: Mutex::new(prop),
            expiry_mark: Default::default(),
            detached: Default::default(),
        }
    }
}

fn next_mount_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(21);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn next_seq() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn next_group() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A line of `/proc/mounts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountInfo {
    pub source: String,
    pub target: Vec<u8>,
    pub fstype: String,
    /// `rw,nosuid,...` as Linux `show_vfsmnt` prints them.
    pub options: String,
    /// The mount id and its parent's (`mountinfo`'s first two fields).
    pub id: u64,
    pub parent: u64,
    /// The mount's root inside its file system (`mountinfo`'s fourth field).
    pub root_path: Vec<u8>,
    /// `st_dev` of the mounted root (`major:minor`).
    pub dev: u64,
    /// Shared, slave, unbindable (`mountinfo`'s optional fields).
    pub prop: Prop,
}

/// A namespace's mounts (the table behind [`MntNs::table`]).
#[derive(Default)]
pub struct Table {
    mounts: Vec<Arc<Mount>>,
}

impl Table {
    fn by_id(&self, id: u64) -> Option<&Arc<Mount>> {
        self.mounts.iter().find(|m| m.id == id)
    }

    /// Whether `m` is mount `top` or attached below it (through parent ids).
    fn descends(&self, m: &Mount, top: u64) -> bool {
        let mut cur = m.id;
        for _ in 0..=self.mounts.len() {
            if cur == top {
                return true;
            }
            match self.by_id(cur) {
                Some(x) if x.parent != cur => cur = x.parent,
                _ => return false,
            }
        }
        false
    }

    /// Replaces the entry with `m.id` (the table holds `Arc`s; a change is a new entry).
    fn replace(&mut self, m: Mount) {
        if let Some(slot) = self.mounts.iter_mut().find(|x| x.id == m.id) {
            *slot = Arc::new(m);
        }
    }
}

/// The table of namespace `ns` (made empty on first use).
pub fn table_of(ns: &MntNs) -> &Mutex<Table> {
    ns.table
        .get_or_init(|| Box::new(Mutex::new(Table::default())))
        .downcast_ref::<Mutex<Table>>()
        .expect("um_fs::mount owns every mount namespace's table")
}

/// Every live namespace (for propagation between them).
fn namespaces() -> &'static Mutex<Vec<Weak<MntNs>>> {
    static N: OnceLock<Mutex<Vec<Weak<MntNs>>>> = OnceLock::new();
    N.get_or_init(Default::default)
}

fn live_namespaces() -> Vec<Arc<MntNs>> {
    let mut v = lock(namespaces());
    v.retain(|w| w.strong_count() > 0);
    v.iter().filter_map(Weak::upgrade).collect()
}

/// The caller's namespace (`current->nsproxy->mnt_ns`; the initial one off a task).
fn cur_ns() -> Arc<MntNs> {
    um_kernel::mntns::current()
}

/// `copy_mnt_ns`: a new namespace with a copy of every mount of `from` (new ids, the same
/// places); copies of shared mounts are peers of the originals, slaves stay slaves of the
/// same master, private and unbindable ones stay so.
fn copy_ns(from: &MntNs, owner: Arc<um_kernel::userns::UserNs>) -> SysResult<Arc<MntNs>> {
    let t = lock(table_of(from));
    let mut ids = BTreeMap::new();
    ids.insert(ROOTFS_ID, ROOTFS_ID);
    for m in &t.mounts {
        ids.insert(m.id, next_mount_id());
    }
    let mut copy = Table::default();
    for m in &t.mounts {
        let parent = ids.get(&m.parent).copied().unwrap_or(ROOTFS_ID);
        let c = m.clone_as(
            ids[&m.id],
            m.seq,
            parent,
            m.point,
            m.target.clone(),
            m.prop(),
        );
        copy.mounts.push(Arc::new(c));
    }
    drop(t);
    let root = lock(&from.root).clone();
    let ns = MntNs::with_table(Box::new(Mutex::new(copy)), root, owner);
    lock(namespaces()).push(Arc::downgrade(&ns));
    mounts_changed();
    Ok(ns)
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

/// How a file system type shows a mounted instance's options in `/proc/mounts` (Linux
/// `super_operations.show_options`), from the instance's root inode; `None`: as given.
pub type ShowOptions = Arc<dyn Fn(&dyn Inode) -> Option<String> + Send + Sync>;

fn show_options_fns() -> &'static Mutex<BTreeMap<String, ShowOptions>> {
    static F: OnceLock<Mutex<BTreeMap<String, ShowOptions>>> = OnceLock::new();
    F.get_or_init(Default::default)
}

/// Registers how `/proc/mounts` shows the options of file system type `name` (overlayfs's
/// canonical `lowerdir=...,upperdir=...` with the defaults it implies).
pub fn register_show_options(name: &str, show: ShowOptions) {
    lock(show_options_fns()).insert(name.to_string(), show);
}

fn show_options(fstype: &str, root: &dyn Inode) -> Option<String> {
    let f = lock(show_options_fns()).get(fstype).cloned()?;
    f(root)
}

/// The names [`register_fs`] added, in name order (`/proc/filesystems`).
pub fn fs_names() -> Vec<String> {
    lock(factories()).keys().cloned().collect()
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

/// Whether two dentries name the same place: the same object, or the same inode at the same
/// path (the walk makes a new dentry per lookup, so `path_equal` is by place here).
pub fn same_place(a: &Arc<Dentry>, b: &Arc<Dentry>) -> bool {
    Arc::ptr_eq(a, b)
        || (a.inode.fs_id() == b.inode.fs_id()
            && a.inode.id() == b.inode.id()
            && a.path() == b.path())
}

/// After a lookup in directory `dir`: what is mounted on `inode` there in the caller's
/// namespace, if anything (the topmost of stacked mounts). A mount is attached to a place on
/// its parent mount (`mnt_parent`, `mnt_mountpoint`), so the same directory seen through
/// another mount (a private bind of it) is not crossed.
pub fn cross(dir: &Dentry, inode: Arc<dyn Inode>) -> Arc<dyn Inode> {
    cross_mnt(dir, inode).0
}

/// [`cross`], also giving the mount crossed into (the topmost), if any: the walk makes the
/// dentry of its root carry it ([`Dentry::mount_root`]).
pub fn cross_mnt(dir: &Dentry, inode: Arc<dyn Inode>) -> (Arc<dyn Inode>, Option<Arc<Mount>>) {
    let ns = cur_ns();
    let t = lock(table_of(&ns));
    let key = (inode.fs_id(), inode.id());
    if !t.mounts.iter().any(|m| m.point == Some(key)) {
        return (inode, None);
    }
    let Some(parent) = mount_of_in(&t, dir) else {
        return (inode, None);
    };
    cross_from(&t, parent.id, inode)
}

/// Crosses from mount `pid`'s `inode` into what is stacked there.
fn cross_from(
    t: &Table,
    mut pid: u64,
    inode: Arc<dyn Inode>,
) -> (Arc<dyn Inode>, Option<Arc<Mount>>) {
    let mut cur = inode;
    let mut top = None;
    for _ in 0..=t.mounts.len() {
        let key = (cur.fs_id(), cur.id());
        match t
            .mounts
            .iter()
            .filter(|m| m.parent == pid && m.point == Some(key))
            .max_by_key(|m| m.seq)
        {
            Some(m) => {
                pid = m.id;
                cur = m.root.clone();
                top = Some(m.clone());
            }
            None => break,
        }
    }
    (cur, top)
}

/// `LOOKUP_MOUNTPOINT` (umount2's walk): the last component crosses into what is mounted on
/// it, so `umount2(".")` after `pivot_root(".", ".")` finds the old root on top.
pub fn cross_last(d: &Arc<Dentry>) -> Arc<Dentry> {
    let ns = cur_ns();
    let t = lock(table_of(&ns));
    let Some(m) = mount_of_in(&t, d) else {
        return d.clone();
    };
    let (top, mnt) = cross_from(&t, m.id, d.inode.clone());
    match mnt {
        Some(mnt) if !Arc::ptr_eq(&top, &d.inode) => {
            Dentry::mount_root(d.parent.clone(), &d.name, top, mnt)
        }
        _ => d.clone(),
    }
}

/// Whether something is mounted on `inode` (unlink, rmdir and rename of it are `EBUSY`).
pub fn is_mountpoint(inode: &dyn Inode) -> bool {
    let key = (inode.fs_id(), inode.id());
    lock(table_of(&cur_ns()))
        .mounts
        .iter()
        .any(|m| m.point == Some(key))
}

/// Whether `inode` is the root of a mount (statx's `STATX_ATTR_MOUNT_ROOT`).
pub fn is_mount_root(inode: &dyn Inode) -> bool {
    let key = (inode.fs_id(), inode.id());
    lock(table_of(&cur_ns()))
        .mounts
        .iter()
        .any(|m| m.root_key() == key)
}

/// Whether `a` is `b` or below it, component-wise (`/a` is under `/`, `/ab` is not under `/a`).
pub fn under(a: &[u8], b: &[u8]) -> bool {
    b == b"/" || a == b || (a.starts_with(b) && a.get(b.len()) == Some(&b'/'))
}

/// `path` with its prefix `from` replaced by `to` (both component-wise prefixes).
fn rebase(path: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let rest = if from == b"/" {
        path
    } else {
        &path[from.len().min(path.len())..]
    };
    if rest.is_empty() || rest == b"/" {
        return to.to_vec();
    }
    if to == b"/" {
        return rest.to_vec();
    }
    let mut out = to.to_vec();
    out.extend_from_slice(rest);
    out
}

/// `path` as seen from a root at `root` (`seq_path_root`), `None` if it is not below it.
pub fn relative_to(path: &[u8], root: &[u8]) -> Option<Vec<u8>> {
    under(path, root).then(|| rebase(path, root, b"/"))
}

/// The mount a dentry belongs to in table `t`: the mount whose target is the longest prefix
/// of its path; of mounts stacked on that place, the one whose root the dentry is, else the
/// topmost.
fn mount_of_in(t: &Table, d: &Dentry) -> Option<Arc<Mount>> {
    // The mount the walk crossed into above `d` (Linux's `path.mnt`), if it still is in
    // this table or was unmounted since (a detached mount lives on in what was opened
    // under it). A mount of another namespace (the caller unshared since) is looked up by
    // path here instead.
    if let Some(m) = d
        .pinned_mount()
        .and_then(|m| m.clone().downcast::<Mount>().ok())
        && (m.detached.load(Ordering::Relaxed) || t.mounts.iter().any(|x| Arc::ptr_eq(x, &m)))
    {
        return Some(m);
    }
    let path = d.path();
    let key = (d.inode.fs_id(), d.inode.id());
    let mut best: Option<&Arc<Mount>> = None;
    for m in &t.mounts {
        if !under(&path, &m.target) {
            continue;
        }
        let better = match best {
            None => true,
            Some(b) if m.target.len() != b.target.len() => m.target.len() > b.target.len(),
            Some(b) if path == m.target => {
                let (mr, br) = (m.root_key() == key, b.root_key() == key);
                (mr && !br) || (mr == br && m.seq > b.seq)
            }
            Some(b) => m.seq > b.seq,
        };
        if better {
            best = Some(m);
        }
    }
    best.cloned()
}

/// The mount a dentry belongs to, in the caller's namespace. This is a use of the mount (the
/// file syscalls ask it for the mount's flags), so it clears an `MNT_EXPIRE` mark as Linux's
/// `mntput` does; the walks do not (umount2 must find its mark still set).
pub fn mount_of(d: &Dentry) -> Option<Arc<Mount>> {
    let m = mount_of_in(&lock(table_of(&cur_ns())), d);
    if let Some(m) = &m {
        m.expiry_mark.store(false, Ordering::Relaxed);
    }
    m
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

/// The mounts of namespace `ns` seen from a root at `root` (a process's root dentry), in
/// mount order, as `/proc/PID/mounts` and `mountinfo` list them: mounts outside the root
/// are left out and targets are relative to it (fs/proc_namespace.c, `seq_path_root`).
pub fn mounts_of(ns: &MntNs, root: &Dentry) -> Vec<MountInfo> {
    let rp = root.path();
    lock(table_of(ns))
        .mounts
        .iter()
        .filter_map(|m| {
            let target = relative_to(&m.target, &rp)?;
            Some(MountInfo {
                source: m.source.clone(),
                target,
                fstype: m.fstype.clone(),
                options: options(m.flags(), &m.data),
                id: m.id,
                parent: m.parent,
                root_path: m.root_path.clone(),
                dev: m.root.stat().map_or(0, |s| s.dev),
                prop: m.prop(),
            })
        })
        .collect()
}

/// The caller's mounts from its root (what `/proc/self/mounts` lists).
pub fn mounts() -> Vec<MountInfo> {
    let root = um_kernel::current::current().map(|t| lock(&t.process.fs).root.clone());
    let ns = cur_ns();
    match root {
        Some(r) => mounts_of(&ns, &r),
        None => lock(table_of(&ns))
            .mounts
            .iter()
            .map(|m| MountInfo {
                source: m.source.clone(),
                target: m.target.clone(),
                fstype: m.fstype.clone(),
                options: options(m.flags(), &m.data),
                id: m.id,
                parent: m.parent,
                root_path: m.root_path.clone(),
                dev: m.root.stat().map_or(0, |s| s.dev),
                prop: m.prop(),
            })
            .collect(),
    }
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

    /// `mountinfo`'s optional fields (fs/proc_namespace.c `show_mountinfo`): `shared:N`,
    /// `master:N`, `unbindable`, each followed by a space.
    pub fn optional_fields(&self) -> String {
        let mut s = String::new();
        if self.prop.shared != 0 {
            s.push_str(&format!("shared:{} ", self.prop.shared));
        }
        if self.prop.master != 0 {
            s.push_str(&format!("master:{} ", self.prop.master));
        }
        if self.prop.unbindable {
            s.push_str("unbindable ");
        }
        s
    }
}

/// What to add to a table.
struct NewMount<'a> {
    parent: u64,
    point: Option<(u64, u64)>,
    root: Arc<dyn Inode>,
    root_path: Vec<u8>,
    source: &'a str,
    target: Vec<u8>,
    fstype: &'a str,
    flags: u64,
    data: &'a str,
    prop: Prop,
}

fn add_to(t: &mut Table, n: NewMount<'_>) -> Arc<Mount> {
    let m = Arc::new(Mount {
        id: next_mount_id(),
        seq: next_seq(),
        parent: n.parent,
        point: n.point,
        root: n.root,
        root_path: n.root_path,
        source: n.source.to_string(),
        target: n.target,
        fstype: n.fstype.to_string(),
        flags: AtomicU64::new(n.flags & MNT_FLAGS),
        data: n.data.to_string(),
        prop: Mutex::new(n.prop),
        expiry_mark: Default::default(),
        detached: Default::default(),
    });
    t.mounts.push(m.clone());
    mounts_changed();
    m
}

/// The mounts that receive what is mounted on or unmounted from `p` (`propagate_mnt`,
/// fs/pnode.c): its peers and its slaves, and theirs, in every namespace; each with whether
/// it is a peer of `p` (else a slave).
fn receivers(p: &Mount) -> Vec<(Arc<MntNs>, Arc<Mount>, bool)> {
    let pr = p.prop();
    if pr.shared == 0 {
        return Vec::new();
    }
    let all: Vec<(Arc<MntNs>, Vec<Arc<Mount>>)> = live_namespaces()
        .into_iter()
        .map(|ns| {
            let v = lock(table_of(&ns)).mounts.clone();
            (ns, v)
        })
        .collect();
    // The groups that receive: p's, and every shared slave's group below it.
    let mut groups = vec![pr.shared];
    loop {
        let mut grew = false;
        for m in all.iter().flat_map(|(_, v)| v) {
            let q = m.prop();
            if q.master != 0
                && groups.contains(&q.master)
                && q.shared != 0
                && !groups.contains(&q.shared)
            {
                groups.push(q.shared);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    let mut out = Vec::new();
    for (ns, v) in &all {
        for m in v {
            if m.id == p.id {
                continue;
            }
            let q = m.prop();
            if q.shared == pr.shared {
                out.push((ns.clone(), m.clone(), true));
            } else if (q.shared != 0 && groups.contains(&q.shared))
                || (q.master != 0 && groups.contains(&q.master))
            {
                out.push((ns.clone(), m.clone(), false));
            }
        }
    }
    out
}

/// After `m` was attached below `parent`: a mount made under a shared mount is shared
/// (`invent_group_ids`), and a copy of it goes to each receiver of `parent` that shows the
/// same directory (peers get peers of `m`, slaves get slaves of it).
fn propagate_mount(parent: &Mount, m: &Arc<Mount>) {
    if parent.prop().shared == 0 {
        return;
    }
    let mut mp = m.prop();
    if mp.shared == 0 {
        mp.shared = next_group();
        mp.unbindable = false;
        *lock(&m.prop) = mp;
    }
    for (ns, q, peer) in receivers(parent) {
        // The new mount is not attached to itself (Linux propagates before attaching).
        if q.id == m.id || q.root_key() != parent.root_key() || q.root_path != parent.root_path {
            continue;
        }
        let target = rebase(&m.target, &parent.target, &q.target);
        let prop = if peer {
            Prop {
                shared: mp.shared,
                ..Prop::default()
            }
        } else {
            Prop {
                master: mp.shared,
                ..Prop::default()
            }
        };
        let mut t = lock(table_of(&ns));
        if t.mounts
            .iter()
            .any(|x| x.parent == q.id && x.point == m.point && x.root_key() == m.root_key())
        {
            continue;
        }
        let c = m.clone_as(next_mount_id(), next_seq(), q.id, m.point, target, prop);
        t.mounts.push(Arc::new(c));
    }
    mounts_changed();
}

/// After `m` was detached from `parent`: its copies on the receivers of `parent` go too
/// (`propagate_umount`).
fn propagate_umount(parent: &Mount, m: &Mount) {
    for (ns, q, _) in receivers(parent) {
        let mut t = lock(table_of(&ns));
        let gone: Vec<u64> = t
            .mounts
            .iter()
            .filter(|x| x.parent == q.id && x.point == m.point && x.root_key() == m.root_key())
            .map(|x| x.id)
            .collect();
        for g in gone {
            let keep: Vec<Arc<Mount>> = t
                .mounts
                .iter()
                .filter(|x| !t.descends(x, g))
                .cloned()
                .collect();
            for x in t.mounts.iter().filter(|x| t.descends(x, g)) {
                x.detached.store(true, Ordering::Relaxed);
            }
            t.mounts = keep;
        }
    }
    mounts_changed();
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

/// Whether `d` is the root of mount `m` (`path_mounted`).
fn is_root_of(m: &Mount, d: &Dentry) -> bool {
    // The root dentry the walk made on crossing into `m` carries it.
    let pinned = d
        .mnt
        .as_ref()
        .and_then(|x| x.downcast_ref::<Mount>())
        .is_some_and(|x| std::ptr::eq(x, m));
    pinned || m.target == d.path() && m.root_key() == (d.inode.fs_id(), d.inode.id())
}

/// The mount whose root `d` is (the target of umount, remount, a propagation change), or
/// `EINVAL`.
fn mount_at_in(t: &Table, d: &Dentry) -> SysResult<Arc<Mount>> {
    mount_of_in(t, d)
        .filter(|m| is_root_of(m, d))
        .ok_or(Errno::EINVAL)
}

/// The mount whose root inode `d` is, when `d`'s path no longer leads there: a directory
/// held open (or as cwd) across a pivot_root that moved its mount, as bwrap's
/// `pivot_root(".", ".")` then `fchdir(old root)` and `umount2(".", MNT_DETACH)` does. The
/// newest such mount (the one on top).
fn moved_root_in(t: &Table, d: &Dentry) -> Option<Arc<Mount>> {
    let key = (d.inode.fs_id(), d.inode.id());
    t.mounts
        .iter()
        .filter(|m| m.root_key() == key)
        .max_by_key(|m| m.seq)
        .cloned()
}

/// `mount(2)` after the paths are walked: `source` is the source string (and for a bind
/// mount or a move, `bind_src` the walked source), `target` the walked mount point. The
/// caller checked CAP_SYS_ADMIN. The cases in Linux `path_mount`'s order: bind remount,
/// remount, bind (`MS_REC`: with the mounts below), propagation change, move, new mount.
pub fn do_mount(
    k: &Arc<Kernel>,
    source: &[u8],
    bind_src: Option<&Arc<Dentry>>,
    target: &Arc<Dentry>,
    fstype: &[u8],
    flags: u64,
    data: &[u8],
) -> SysResult<()> {
    do_mount_in(&cur_ns(), k, source, bind_src, target, fstype, flags, data)
}

#[allow(clippy::too_many_arguments)]
fn do_mount_in(
    ns: &MntNs,
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
    let table = table_of(ns);
    if flags & MS_REMOUNT != 0 {
        let m = mount_at_in(&lock(table), target)?;
        let keep = m.flags() & !(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
        let new = if flags & MS_BIND != 0 {
            // reconfigure_mnt: this mount's flags only.
            keep | (flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC))
        } else {
            (m.flags() & !MS_RDONLY) | (flags & MS_RDONLY)
        };
        // A block-device file system instance mounted read-only (SB_RDONLY, reported as
        // ST_RDONLY by its statfs) does not become writable by a remount here: Linux's
        // ext4_reconfigure would load the journal and check the features, which this kernel
        // does only at mount time. A remount of a read-write instance (rw -> ro -> rw, or
        // only other flags) changes the mount's flags, as for every other file system.
        let sb_ro = m.root.statfs().is_ok_and(|s| s.sb_readonly());
        if flags & MS_BIND == 0 && new & MS_RDONLY == 0 && sb_ro && is_bdev_fs(m.fstype.as_bytes())
        {
            log::error!(
                "{} ({}): cannot remount read-write: mounted read-only; umount and mount it \
                 read-write",
                m.fstype,
                m.source
            );
            return Err(Errno::EROFS);
        }
        m.flags.store(new & MNT_FLAGS, Ordering::Relaxed);
        mounts_changed();
        if flags & MS_BIND == 0 {
            if let Some(h) = m.root.as_any().downcast_ref::<HostInode>() {
                h.set_readonly(new & MS_RDONLY != 0);
            }
        }
        return Ok(());
    }
    let tst = target.inode.stat()?;
    let tpath = target.path();
    let tkey = Some((target.inode.fs_id(), target.inode.id()));
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
        let mut t = lock(table);
        let parent = mount_of_in(&t, target).ok_or(Errno::EINVAL)?;
        // do_loopback: the source's mount, which must be of this namespace and bindable.
        let Some(sm) = mount_of_in(&t, s) else {
            return Err(Errno::EINVAL);
        };
        let sp = sm.prop();
        if sp.unbindable {
            return Err(Errno::EINVAL);
        }
        let spath = s.path();
        // clone_mnt: a bind of a shared mount is its peer, of a slave a slave of its master.
        let prop = Prop {
            shared: sp.shared,
            master: sp.master,
            unbindable: false,
        };
        let top = add_to(
            &mut t,
            NewMount {
                parent: parent.id,
                point: tkey,
                root: s.inode.clone(),
                root_path: rebase(&spath, &sm.target, &sm.root_path),
                source: &sm.source,
                target: tpath.clone(),
                fstype: &sm.fstype,
                flags: sm.flags(),
                data: &sm.data,
                prop,
            },
        );
        if flags & MS_REC != 0 {
            // copy_tree: the mounts below the source too (not unbindable ones), in order.
            let mut ids = BTreeMap::new();
            ids.insert(sm.id, top.id);
            let below: Vec<Arc<Mount>> = t
                .mounts
                .iter()
                .filter(|x| {
                    x.id != sm.id
                        && x.id != top.id
                        && t.descends(x, sm.id)
                        && under(&x.target, &spath)
                })
                .cloned()
                .collect();
            for x in below {
                let xp = x.prop();
                let Some(&parent) = ids.get(&x.parent) else {
                    continue;
                };
                if xp.unbindable {
                    continue;
                }
                let id = next_mount_id();
                ids.insert(x.id, id);
                let prop = Prop {
                    unbindable: false,
                    ..xp
                };
                let c = x.clone_as(
                    id,
                    next_seq(),
                    parent,
                    x.point,
                    rebase(&x.target, &spath, &tpath),
                    prop,
                );
                t.mounts.push(Arc::new(c));
            }
        }
        drop(t);
        propagate_mount(&parent, &top);
        return Ok(());
    }
    if flags & MS_PROPAGATION != 0 {
        // do_change_type: exactly one type, on a mount root; MS_REC for the mounts below.
        let typ = flags & MS_PROPAGATION;
        if typ.count_ones() != 1
            || flags & !(MS_PROPAGATION | MS_REC | MS_SILENT | MS_RELATIME) != 0
        {
            return Err(Errno::EINVAL);
        }
        let t = lock(table);
        // The old root held open across pivot_root(".", ".") (crun makes it private before
        // it detaches it) is found by its root inode, as umount2 finds it.
        let m = mount_at_in(&t, target).or_else(|e| moved_root_in(&t, target).ok_or(e))?;
        let ids: Vec<Arc<Mount>> = if flags & MS_REC != 0 {
            t.mounts
                .iter()
                .filter(|x| t.descends(x, m.id))
                .cloned()
                .collect()
        } else {
            vec![m]
        };
        drop(t);
        for x in ids {
            change_type(&x, typ);
        }
        mounts_changed();
        return Ok(());
    }
    if flags & MS_MOVE != 0 {
        let s = bind_src.ok_or(Errno::EINVAL)?;
        let mut t = lock(table);
        let m = mount_at_in(&t, s)?;
        if m.point.is_none() {
            return Err(Errno::EINVAL);
        }
        let spath = s.path();
        // do_move_mount: not below itself, not from under a shared parent.
        if under(&tpath, &spath) {
            return Err(Errno::ELOOP);
        }
        if t.by_id(m.parent).is_some_and(|p| p.prop().shared != 0) {
            return Err(Errno::EINVAL);
        }
        let parent = mount_of_in(&t, target).ok_or(Errno::EINVAL)?;
        let sub: Vec<Arc<Mount>> = t
            .mounts
            .iter()
            .filter(|x| t.descends(x, m.id))
            .cloned()
            .collect();
        for x in sub {
            let target = rebase(&x.target, &spath, &tpath);
            let c = if x.id == m.id {
                x.clone_as(x.id, next_seq(), parent.id, tkey, target, x.prop())
            } else {
                x.clone_as(x.id, x.seq, x.parent, x.point, target, x.prop())
            };
            t.replace(c);
        }
        drop(t);
        mounts_changed();
        return Ok(());
    }
    if target.parent.is_none() {
        // Mounting over the root directory itself is not supported.
        return Err(Errno::EBUSY);
    }
    if tst.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    let fstype = std::str::from_utf8(fstype).map_err(|_| Errno::ENODEV)?;
    let root = if is_bdev_fs(fstype.as_bytes()) {
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
        mount_bdev(fstype, st.rdev, flags, data)?
    } else {
        new_instance(k, fstype, flags, data)?
    };
    // The options as the file system shows them (`s_op->show_options`), else as given.
    let data =
        show_options(fstype, &*root).unwrap_or_else(|| String::from_utf8_lossy(data).into_owned());
    let mut t = lock(table);
    let parent = mount_of_in(&t, target).ok_or(Errno::EINVAL)?;
    let m = add_to(
        &mut t,
        NewMount {
            parent: parent.id,
            point: tkey,
            root,
            root_path: b"/".to_vec(),
            source: &src,
            target: tpath,
            fstype,
            flags,
            data: &data,
            prop: Prop::default(),
        },
    );
    drop(t);
    propagate_mount(&parent, &m);
    Ok(())
}

/// A mount tree attached nowhere: what open_tree(`OPEN_TREE_CLONE`) and fsmount(2) give
/// (Linux keeps it in an anonymous mount namespace). `mounts[0]` is the top; the others'
/// `parent` fields are ids inside the tree, their targets lie under `base`. Every one is
/// [`Mount::detached`], so what is reached through the descriptor (its dentry carries the top)
/// sees the tree's flags, and mount_setattr(2) on the descriptor changes them.
pub struct Detached {
    mounts: Vec<Arc<Mount>>,
    base: Vec<u8>,
}

impl Detached {
    /// The top mount, which the descriptor's dentry carries.
    pub fn top(&self) -> Arc<Mount> {
        self.mounts[0].clone()
    }
}

fn detach_copy(mut m: Mount) -> Arc<Mount> {
    m.detached = std::sync::atomic::AtomicBool::new(true);
    Arc::new(m)
}

/// open_tree(`OPEN_TREE_CLONE`) after the walk (fs/namespace.c `open_detached_copy`,
/// `copy_tree` with `CL_PRIVATE`): a private copy of the mount `s` is on, from `s` down, and
/// with `recursive` of the mounts below it (unbindable ones skipped; an unbindable source is
/// `EINVAL`, as a mount of no namespace of the caller's).
pub fn clone_tree(s: &Dentry, recursive: bool) -> SysResult<Detached> {
    let ns = cur_ns();
    let t = lock(table_of(&ns));
    let sm = mount_of_in(&t, s).ok_or(Errno::EINVAL)?;
    if sm.prop().unbindable {
        return Err(Errno::EINVAL);
    }
    let spath = s.path();
    let mut top = sm.clone_as(
        next_mount_id(),
        next_seq(),
        0,
        None,
        spath.clone(),
        Prop::default(),
    );
    top.root = s.inode.clone();
    top.root_path = rebase(&spath, &sm.target, &sm.root_path);
    let mut mounts = vec![detach_copy(top)];
    if recursive {
        let mut ids = BTreeMap::new();
        ids.insert(sm.id, mounts[0].id);
        let below: Vec<Arc<Mount>> = t
            .mounts
            .iter()
            .filter(|x| x.id != sm.id && t.descends(x, sm.id) && under(&x.target, &spath))
            .cloned()
            .collect();
        for x in below {
            let Some(&parent) = ids.get(&x.parent) else {
                continue;
            };
            if x.prop().unbindable {
                continue;
            }
            let id = next_mount_id();
            ids.insert(x.id, id);
            let c = x.clone_as(
                id,
                next_seq(),
                parent,
                x.point,
                x.target.clone(),
                Prop::default(),
            );
            mounts.push(detach_copy(c));
        }
    }
    Ok(Detached {
        mounts,
        base: spath,
    })
}

/// fsmount(2) (fs/namespace.c): a detached mount of the file system instance `root` a
/// configured context made, with per-mount flags `flags` (`MS_*`).
pub fn new_detached(
    root: Arc<dyn Inode>,
    source: &str,
    fstype: &str,
    flags: u64,
    data: &str,
) -> Detached {
    let m = Mount {
        id: next_mount_id(),
        seq: next_seq(),
        parent: 0,
        point: None,
        root,
        root_path: b"/".to_vec(),
        source: source.to_string(),
        target: b"/".to_vec(),
        fstype: fstype.to_string(),
        flags: AtomicU64::new(flags & MNT_FLAGS),
        data: data.to_string(),
        prop: Mutex::new(Prop::default()),
        expiry_mark: Default::default(),
        detached: std::sync::atomic::AtomicBool::new(true),
    };
    Detached {
        mounts: vec![Arc::new(m)],
        base: b"/".to_vec(),
    }
}

/// A new file system instance of type `fstype` for fsconfig(`FSCONFIG_CMD_CREATE`): `ENODEV`
/// for an unknown type; a block-device type needs `bdev` (the walked source).
pub fn create_instance(
    k: &Arc<Kernel>,
    fstype: &str,
    bdev: Option<&Dentry>,
    flags: u64,
    data: &[u8],
) -> SysResult<Arc<dyn Inode>> {
    if is_bdev_fs(fstype.as_bytes()) {
        let s = bdev.ok_or(Errno::EINVAL)?;
        let st = s.inode.stat()?;
        if st.mode & mode::S_IFMT != mode::S_IFBLK {
            return Err(Errno::ENOTBLK);
        }
        if is_nodev(s) {
            return Err(Errno::EACCES);
        }
        return mount_bdev(fstype, st.rdev, flags, data);
    }
    new_instance(k, fstype, flags, data)
}

/// Whether `fstype` is a file system type this kernel has (fsopen's `get_fs_type`).
pub fn fs_type_known(fstype: &str) -> bool {
    matches!(fstype, "tmpfs" | "devtmpfs" | "proc" | "sysfs")
        || lock(factories()).contains_key(fstype)
        || is_bdev_fs(fstype.as_bytes())
}

/// move_mount(2) of a detached tree (`attach_recursive_mnt`): its top goes on `target` (a
/// directory for a directory, `ENOTDIR`/`EISDIR` otherwise), the rest below it with their
/// paths rebased, and the new mounts propagate as a mount there would.
pub fn attach_tree(tree: &Detached, target: &Dentry) -> SysResult<Arc<Mount>> {
    let top = &tree.mounts[0];
    let dir = |m: u32| m & mode::S_IFMT == mode::S_IFDIR;
    let (tst, sst) = (target.inode.stat()?, top.root.stat()?);
    if dir(sst.mode) != dir(tst.mode) {
        return Err(if dir(tst.mode) {
            Errno::ENOTDIR
        } else {
            Errno::EISDIR
        });
    }
    if target.parent.is_none() {
        return Err(Errno::EBUSY);
    }
    let ns = cur_ns();
    let mut t = lock(table_of(&ns));
    let parent = mount_of_in(&t, target).ok_or(Errno::EINVAL)?;
    let tpath = target.path();
    let tkey = Some((target.inode.fs_id(), target.inode.id()));
    let mut ids = BTreeMap::new();
    let mut first = None;
    for (i, m) in tree.mounts.iter().enumerate() {
        let (par, point) = if i == 0 {
            (parent.id, tkey)
        } else {
            match ids.get(&m.parent) {
                Some(&p) => (p, m.point),
                None => continue,
            }
        };
        let id = next_mount_id();
        ids.insert(m.id, id);
        let c = Arc::new(m.clone_as(
            id,
            next_seq(),
            par,
            point,
            rebase(&m.target, &tree.base, &tpath),
            m.prop(),
        ));
        first.get_or_insert_with(|| c.clone());
        t.mounts.push(c);
    }
    drop(t);
    mounts_changed();
    let top = first.ok_or(Errno::EINVAL)?;
    propagate_mount(&parent, &top);
    Ok(top)
}

/// mount_setattr(2) after the path is walked (fs/namespace.c `do_mount_setattr`): `target`
/// must be a mount's root (`EINVAL`); that mount, or with `recursive` it and every mount below
/// it, loses the `MS_*` per-mount flags `clr` and gains `set`, then takes `propagation` (0 or
/// one `MS_*` type). The caller checked CAP_SYS_ADMIN and the attribute words.
pub fn do_setattr(
    target: &Dentry,
    recursive: bool,
    set: u64,
    clr: u64,
    propagation: u64,
) -> SysResult<()> {
    let ns = cur_ns();
    let t = lock(table_of(&ns));
    let m = mount_at_in(&t, target)?;
    let all: Vec<Arc<Mount>> = if recursive {
        t.mounts
            .iter()
            .filter(|x| t.descends(x, m.id))
            .cloned()
            .collect()
    } else {
        vec![m]
    };
    drop(t);
    for x in &all {
        let f = (x.flags() & !clr) | set;
        x.flags.store(f & MNT_FLAGS, Ordering::Relaxed);
        if propagation != 0 {
            change_type(x, propagation);
        }
    }
    mounts_changed();
    Ok(())
}

/// `change_mnt_propagation` for one mount.
fn change_type(m: &Mount, typ: u64) {
    let mut p = m.prop();
    match typ {
        MS_SHARED => {
            if p.shared == 0 {
                p.shared = next_group();
            }
            p.unbindable = false;
        }
        MS_SLAVE => {
            // do_make_slave: a shared mount with peers becomes a slave of its group; without
            // peers it keeps the master it had (none: private).
            if p.shared != 0 {
                let g = p.shared;
                let peers = live_namespaces().iter().any(|ns| {
                    lock(table_of(ns))
                        .mounts
                        .iter()
                        .any(|x| x.id != m.id && x.prop().shared == g)
                });
                if peers {
                    p.master = g;
                }
            }
            p.shared = 0;
            p.unbindable = false;
        }
        MS_PRIVATE => p = Prop::default(),
        _ => {
            p = Prop {
                unbindable: true,
                ..Prop::default()
            }
        }
    }
    *lock(&m.prop) = p;
}

/// `umount2(2)` after the path is walked (with [`cross_last`]): `MNT_DETACH` takes the
/// mounts below too (lazy: they are gone from the namespace at once, open files keep their
/// inodes); without it mounts below, or a process whose root or cwd is in the mount, make it
/// `EBUSY`; `MNT_EXPIRE` marks the mount (`EAGAIN`) and unmounts a marked one that was not
/// used since. `procs` are the live processes (for the busy check).
pub fn do_umount(
    target: &Dentry,
    flags: u64,
    procs: &[Arc<um_kernel::task::Process>],
) -> SysResult<()> {
    if flags & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0
        || flags & MNT_EXPIRE != 0 && flags & (MNT_FORCE | MNT_DETACH) != 0
    {
        return Err(Errno::EINVAL);
    }
    let ns = cur_ns();
    let table = table_of(&ns);
    let t = lock(table);
    let m = mount_at_in(&t, target).or_else(|e| moved_root_in(&t, target).ok_or(e))?;
    if m.point.is_none() {
        return Err(Errno::EBUSY);
    }
    let busy = || {
        procs.iter().any(|p| {
            // A zombie holds no root or cwd any more (exit_fs).
            if lock(&p.exit).is_some() || !Arc::ptr_eq(&um_kernel::mntns::of(p), &ns) {
                return false;
            }
            let fs = lock(&p.fs).clone();
            [&fs.root, &fs.cwd]
                .iter()
                .any(|d| mount_of_in(&t, d).is_some_and(|x| x.id == m.id))
        })
    };
    if flags & MNT_EXPIRE != 0 {
        let own_root = um_kernel::current::current()
            .map(|c| lock(&c.process.fs).root.clone())
            .is_some_and(|r| mount_of_in(&t, &r).is_some_and(|x| x.id == m.id));
        if own_root {
            return Err(Errno::EINVAL);
        }
        if busy() || t.mounts.iter().any(|x| x.parent == m.id) {
            return Err(Errno::EBUSY);
        }
        if !m.expiry_mark.swap(true, Ordering::Relaxed) {
            return Err(Errno::EAGAIN);
        }
    } else if flags & MNT_DETACH == 0 && (t.mounts.iter().any(|x| x.parent == m.id) || busy()) {
        return Err(Errno::EBUSY);
    }
    drop(t);
    let mut t = lock(table);
    let keep: Vec<Arc<Mount>> = t
        .mounts
        .iter()
        .filter(|x| !t.descends(x, m.id))
        .cloned()
        .collect();
    for x in t.mounts.iter().filter(|x| t.descends(x, m.id)) {
        x.detached.store(true, Ordering::Relaxed);
    }
    t.mounts = keep;
    let parent = t.by_id(m.parent).cloned();
    drop(t);
    mounts_changed();
    if let Some(p) = parent {
        propagate_umount(&p, &m);
    }
    Ok(())
}

/// `pivot_root(2)` after the paths are walked (fs/namespace.c): the caller's root mount
/// moves to `put_old`, the mount at `new_root` becomes the namespace's root, and every
/// process of the namespace whose root or cwd was the old root gets `new_root` instead
/// (`chroot_fs_refs`). Checks in Linux's order: `ENOTDIR` for a non-directory; `EINVAL`
/// when a mount involved is shared; `EBUSY` when `new_root` or `put_old` is on the current
/// root mount; `EINVAL` when the root or `new_root` is not a mount's root, or `put_old` is
/// not at or under `new_root`. The caller checked CAP_SYS_ADMIN.
pub fn pivot_root(
    caller: &um_kernel::task::Process,
    procs: &[Arc<um_kernel::task::Process>],
    new: &Arc<Dentry>,
    old: &Arc<Dentry>,
) -> SysResult<()> {
    for d in [new, old] {
        if d.inode.stat()?.mode & mode::S_IFMT != mode::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
    }
    let ns = um_kernel::mntns::of(caller);
    let root = lock(&caller.fs).root.clone();
    let mut t = lock(table_of(&ns));
    let new_mnt = mount_of_in(&t, new).ok_or(Errno::EINVAL)?;
    let root_mnt = mount_of_in(&t, &root).ok_or(Errno::EINVAL)?;
    let old_mnt = mount_of_in(&t, old).ok_or(Errno::EINVAL)?;
    let shared = |id: u64| t.by_id(id).is_some_and(|m| m.prop().shared != 0);
    if old_mnt.prop().shared != 0 || shared(new_mnt.parent) || shared(root_mnt.parent) {
        return Err(Errno::EINVAL);
    }
    if new_mnt.id == root_mnt.id || old_mnt.id == root_mnt.id {
        return Err(Errno::EBUSY);
    }
    if !is_root_of(&root_mnt, &root) || !is_root_of(&new_mnt, new) || new_mnt.point.is_none() {
        return Err(Errno::EINVAL);
    }
    let (np, op, rp) = (new.path(), old.path(), root.path());
    if !under(&op, &np) || !under(&np, &rp) || !t.descends(&old_mnt, new_mnt.id) {
        return Err(Errno::EINVAL);
    }
    // The old root and what hangs below it (but not new_root's subtree) move to put_old.
    let moved: Vec<Arc<Mount>> = t
        .mounts
        .iter()
        .filter(|x| t.descends(x, root_mnt.id) && !t.descends(x, new_mnt.id))
        .cloned()
        .collect();
    let okey = Some((old.inode.fs_id(), old.inode.id()));
    for x in moved {
        let target = rebase(&x.target, &root_mnt.target, &op);
        let c = if x.id == root_mnt.id {
            x.clone_as(x.id, next_seq(), old_mnt.id, okey, target, x.prop())
        } else {
            x.clone_as(x.id, x.seq, x.parent, x.point, target, x.prop())
        };
        t.replace(c);
    }
    let n = new_mnt.clone_as(
        new_mnt.id,
        new_mnt.seq,
        root_mnt.parent,
        None,
        new_mnt.target.clone(),
        new_mnt.prop(),
    );
    t.replace(n);
    drop(t);
    *lock(&ns.root) = Some(new.clone());
    for p in procs {
        if !Arc::ptr_eq(&um_kernel::mntns::of(p), &ns) {
            continue;
        }
        let mut fs = lock(&p.fs);
        if same_place(&fs.root, &root) {
            fs.root = new.clone();
        }
        if same_place(&fs.cwd, &root) {
            fs.cwd = new.clone();
        }
    }
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
    um_kernel::mntns::set_copy_hook(copy_ns);
    let ns = um_kernel::mntns::root();
    {
        let mut v = lock(namespaces());
        if !v.iter().any(|w| w.as_ptr() == Arc::as_ptr(ns)) {
            v.push(Arc::downgrade(ns));
        }
    }
    *lock(&ns.root) = Some(root.clone());
    let mut t = lock(table_of(ns));
    t.mounts.clear();
    add_to(
        &mut t,
        NewMount {
            parent: ROOTFS_ID,
            point: None,
            root: root.inode.clone(),
            root_path: b"/".to_vec(),
            source,
            target: b"/".to_vec(),
            fstype,
            flags: if ro { MS_RDONLY } else { 0 },
            data: "",
            prop: Prop::default(),
        },
    );
    drop(t);
    crate::devfs::register_mem_devices();
    crate::userfaultfd::register_dev();
    match root.inode.lookup(b"dev") {
        Ok(dev)
            if dev
                .stat()
                .is_ok_and(|s| s.mode & mode::S_IFMT == mode::S_IFDIR) =>
        {
            let d = Dentry::child(root, b"dev", dev);
            match do_mount_in(
                ns,
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
    let mut t = lock(table_of(um_kernel::mntns::root()));
    let parent = mount_of_in(&t, &d).map_or(ROOTFS_ID, |m| m.id);
    add_to(
        &mut t,
        NewMount {
            parent,
            point,
            root: inode,
            root_path: b"/".to_vec(),
            source: host,
            target: d.path(),
            fstype: "hostfs",
            flags: if readonly { MS_RDONLY } else { 0 },
            data: "",
            prop: Prop::default(),
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use um_kernel::vfs::Owner;

    fn tmp() -> Arc<dyn Inode> {
        crate::tmpfs::TmpFs::new_root_inode(0o755, 0, 0)
    }

    fn key(i: &Arc<dyn Inode>) -> (u64, u64) {
        (i.fs_id(), i.id())
    }

    /// A registered namespace with a tmpfs root mount; returns it, the root inode and the
    /// root mount.
    fn ns_with_root() -> (Arc<MntNs>, Arc<dyn Inode>, Arc<Mount>) {
        let ns = MntNs::with_table(
            Box::new(Mutex::new(Table::default())),
            None,
            um_kernel::userns::root().clone(),
        );
        lock(namespaces()).push(Arc::downgrade(&ns));
        let r = tmp();
        let m = mount_in(&ns, ROOTFS_ID, None, r.clone(), b"/", Prop::default());
        (ns, r, m)
    }

    fn mount_in(
        ns: &MntNs,
        parent: u64,
        point: Option<(u64, u64)>,
        root: Arc<dyn Inode>,
        target: &[u8],
        prop: Prop,
    ) -> Arc<Mount> {
        add_to(
            &mut lock(table_of(ns)),
            NewMount {
                parent,
                point,
                root,
                root_path: b"/".to_vec(),
                source: "t",
                target: target.to_vec(),
                fstype: "tmpfs",
                flags: 0,
                data: "",
                prop,
            },
        )
    }

    #[test]
    fn a_directory_through_a_private_bind_is_another_place() {
        let (ns, r, root) = ns_with_root();
        let a = r.mkdir(b"a", 0o755, Owner::default()).unwrap();
        let b = r.mkdir(b"b", 0o755, Owner::default()).unwrap();
        let x = tmp();
        let sub = x.mkdir(b"sub", 0o755, Owner::default()).unwrap();
        let xm = mount_in(
            &ns,
            root.id,
            Some(key(&a)),
            x.clone(),
            b"/a",
            Prop::default(),
        );
        let bm = mount_in(
            &ns,
            root.id,
            Some(key(&b)),
            x.clone(),
            b"/b",
            Prop::default(),
        );
        let y = tmp();
        let ym = mount_in(
            &ns,
            xm.id,
            Some(key(&sub)),
            y.clone(),
            b"/a/sub",
            Prop::default(),
        );
        propagate_mount(&xm, &ym);
        let t = lock(table_of(&ns));
        // /a/sub crosses into y, /b/sub (the same inode through the bind) does not.
        assert_eq!(key(&cross_from(&t, xm.id, sub.clone()).0), key(&y));
        assert_eq!(key(&cross_from(&t, bm.id, sub.clone()).0), key(&sub));
        assert_eq!(t.mounts.len(), 4);
        assert!(t.descends(&ym, root.id) && !t.descends(&bm, xm.id));
    }

    #[test]
    fn shared_peers_and_slaves_receive() {
        let (ns, r, root) = ns_with_root();
        let a = r.mkdir(b"a", 0o755, Owner::default()).unwrap();
        let x = tmp();
        let sub = x.mkdir(b"sub", 0o755, Owner::default()).unwrap();
        let sub2 = x.mkdir(b"sub2", 0o755, Owner::default()).unwrap();
        let xm = mount_in(
            &ns,
            root.id,
            Some(key(&a)),
            x.clone(),
            b"/a",
            Prop::default(),
        );
        change_type(&xm, MS_SHARED);
        let g = xm.prop().shared;
        assert_ne!(g, 0);
        // A copy of the namespace: /a's copy is a peer.
        let peer_ns = copy_ns(&ns, um_kernel::userns::root().clone()).unwrap();
        lock(namespaces()).push(Arc::downgrade(&peer_ns));
        let pm = lock(table_of(&peer_ns))
            .mounts
            .iter()
            .find(|m| m.target == b"/a")
            .cloned()
            .unwrap();
        assert_eq!(pm.prop().shared, g);
        assert_ne!(pm.id, xm.id);
        // Mounted in the peer: the original gets it, as a peer of the new mount.
        let y = tmp();
        let ym = mount_in(
            &peer_ns,
            pm.id,
            Some(key(&sub)),
            y.clone(),
            b"/a/sub",
            Prop::default(),
        );
        propagate_mount(&pm, &ym);
        let t = lock(table_of(&ns));
        assert_eq!(key(&cross_from(&t, xm.id, sub.clone()).0), key(&y));
        let got = t.mounts.iter().find(|m| m.target == b"/a/sub").unwrap();
        assert_eq!(got.prop().shared, ym.prop().shared);
        drop(t);
        // The peer becomes a slave: it still receives, but sends nothing.
        change_type(&pm, MS_SLAVE);
        assert_eq!(
            pm.prop(),
            Prop {
                shared: 0,
                master: g,
                unbindable: false
            }
        );
        let z = tmp();
        let zm = mount_in(
            &peer_ns,
            pm.id,
            Some(key(&sub2)),
            z.clone(),
            b"/a/sub2",
            Prop::default(),
        );
        propagate_mount(&pm, &zm);
        assert_eq!(
            key(&cross_from(&lock(table_of(&ns)), xm.id, sub2.clone()).0),
            key(&sub2)
        );
        let w = tmp();
        let wm = mount_in(
            &ns,
            xm.id,
            Some(key(&sub2)),
            w.clone(),
            b"/a/sub2",
            Prop::default(),
        );
        propagate_mount(&xm, &wm);
        let pt = lock(table_of(&peer_ns));
        let recv = pt.mounts.iter().find(|m| m.root_key() == key(&w)).unwrap();
        assert_eq!(recv.prop().master, wm.prop().shared);
        assert_eq!(recv.parent, pm.id);
    }

    #[test]
    fn rebase_and_relative() {
        assert_eq!(rebase(b"/proc", b"/", b"/mnt/old"), b"/mnt/old/proc");
        assert_eq!(rebase(b"/", b"/", b"/mnt/old"), b"/mnt/old");
        assert_eq!(rebase(b"/mnt/x", b"/mnt", b"/"), b"/x");
        assert_eq!(rebase(b"/mnt", b"/mnt", b"/"), b"/");
        assert_eq!(relative_to(b"/mnt/old", b"/mnt"), Some(b"/old".to_vec()));
        assert_eq!(relative_to(b"/proc", b"/mnt"), None);
        assert_eq!(relative_to(b"/proc", b"/"), Some(b"/proc".to_vec()));
    }

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
            id: 21,
            parent: 1,
            root_path: b"/".to_vec(),
            dev: 0,
            prop: Prop::default(),
        };
        assert_eq!(l.line(), b"/dev/root /a\\040b hostfs rw 0 0\n".to_vec());
    }
}
