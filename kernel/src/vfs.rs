//! The kernel's object traits for files (as Linux `include/linux/fs.h`): [`Inode`], [`Dentry`],
//! [`FileOps`], [`OpenFile`], and the per-process [`FdTable`].
//!
//! File systems (in `um-fs`) and drivers (in `um-drivers`) implement the traits; the path walk
//! and the file syscalls live in `um-fs`. The kernel itself only stores these objects in
//! processes (cwd, root, descriptors).

use crate::wait::{IoCtx, PollTable};
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use um_mm::VmFile;
use um_uapi::{Errno, SysResult};

/// File metadata in the kernel's own form; syscalls convert it to the arch's `struct stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kstat {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Kstat {
    /// The same metadata as a `struct statx` (all basic fields filled in).
    pub fn to_statx(&self) -> um_uapi::Statx {
        use um_uapi::StatxTimestamp;
        let ts = |t: (i64, i64)| StatxTimestamp {
            tv_sec: t.0,
            tv_nsec: t.1 as u32,
            reserved: 0,
        };
        // new_decode_dev (include/linux/kdev_t.h) split into major and minor.
        let major = |d: u64| (((d >> 32) & 0xffff_f000) | ((d >> 8) & 0xfff)) as u32;
        let minor = |d: u64| (((d >> 12) & 0xffff_ff00) | (d & 0xff)) as u32;
        um_uapi::Statx {
            stx_mask: 0x7ff, // STATX_BASIC_STATS
            stx_blksize: self.blksize as u32,
            stx_nlink: self.nlink as u32,
            stx_uid: self.uid,
            stx_gid: self.gid,
            stx_mode: self.mode as u16,
            stx_ino: self.ino,
            stx_size: self.size as u64,
            stx_blocks: self.blocks as u64,
            stx_atime: ts(self.atime),
            stx_ctime: ts(self.ctime),
            stx_mtime: ts(self.mtime),
            stx_rdev_major: major(self.rdev),
            stx_rdev_minor: minor(self.rdev),
            stx_dev_major: major(self.dev),
            stx_dev_minor: minor(self.dev),
            ..Default::default()
        }
    }
}

/// File type bits of `st_mode` (`S_IFMT` and friends).
pub mod mode {
    pub use um_uapi::abi::fcntl::S_IFBLK;
    pub use um_uapi::abi::fcntl::S_IFCHR;
    pub use um_uapi::abi::fcntl::S_IFDIR;
    pub use um_uapi::abi::fcntl::S_IFIFO;
    pub use um_uapi::abi::fcntl::S_IFLNK;
    pub use um_uapi::abi::fcntl::S_IFMT;
    pub use um_uapi::abi::fcntl::S_IFREG;
    pub use um_uapi::abi::fcntl::S_IFSOCK;
}

/// One directory entry as `getdents64` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    /// `DT_*` type.
    pub kind: u8,
    pub name: Vec<u8>,
}

/// An inode: a file system object, whatever its type.
pub trait Inode: Send + Sync + Any {
    /// Its metadata.
    fn stat(&self) -> SysResult<Kstat>;
    /// Looks up `name` (one component, never `.` or `..`) in this directory.
    fn lookup(&self, _name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::ENOTDIR)
    }
    /// The target of a symlink.
    fn readlink(&self) -> SysResult<Vec<u8>> {
        Err(Errno::EINVAL)
    }
    /// Opens the inode; `flags` are the open(2) flags. `io` lets an open block (a FIFO waits
    /// for its other end).
    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>>;
    /// A "magic link" (`/proc/PID/root`, `/proc/PID/cwd`, `/proc/PID/fd/N`): following it
    /// jumps straight to this dentry instead of walking the text `readlink` gives. The path
    /// walk must use it, so such a link can never lead outside the guest's root.
    fn magic_link(&self) -> Option<Arc<Dentry>> {
        None
    }
    /// The process a `/proc/PID` directory stands for: an open descriptor of it is also a
    /// pidfd for pidfd_send_signal(2) (kernel/signal.c `pidfd_to_pid`, fs/proc/base.c
    /// `tgid_pidfd_to_pid`). None for every other inode.
    fn pidfd_process(&self) -> Option<std::sync::Weak<crate::task::Process>> {
        None
    }
    /// A stable identity within its file system, used to tell inodes apart.
    fn id(&self) -> u64;
    /// Upcast for file systems that need their own type back.
    fn as_any(&self) -> &dyn Any;

    // Namespace and attribute operations (Linux `struct inode_operations`). `self` is the
    // directory; `name` is one component, never `.` or `..`; the file system itself answers
    // EEXIST / ENOENT / ENOTEMPTY. Permission checks and read-only mounts are the caller's job. The defaults are what Linux answers when a file
    // system lacks the operation (fs/namei.c: `vfs_create` EACCES, the others EPERM).

    /// Creates a regular file (`vfs_create`); `mode` has the permission bits only, umask applied.
    fn create(&self, _name: &[u8], _mode: u32, _owner: Owner) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EACCES)
    }
    /// Creates a directory.
    fn mkdir(&self, _name: &[u8], _mode: u32, _owner: Owner) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EPERM)
    }
    /// Creates a FIFO, socket or device node; `mode` includes the `S_IFMT` type.
    fn mknod(
        &self,
        _name: &[u8],
        _mode: u32,
        _rdev: u64,
        _owner: Owner,
    ) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EPERM)
    }
    /// Creates a symlink to `target`.
    fn symlink(&self, _name: &[u8], _target: &[u8], _owner: Owner) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EPERM)
    }
    /// Makes `name` a new hard link to `target` (an inode of the same file system, else EXDEV).
    fn link(&self, _name: &[u8], _target: &Arc<dyn Inode>) -> SysResult<()> {
        Err(Errno::EPERM)
    }
    /// Removes a non-directory entry.
    fn unlink(&self, _name: &[u8]) -> SysResult<()> {
        Err(Errno::EPERM)
    }
    /// Removes an empty directory.
    fn rmdir(&self, _name: &[u8]) -> SysResult<()> {
        Err(Errno::EPERM)
    }
    /// Moves `old_name` here to `new_name` in `new_dir` (same file system, else EXDEV).
    /// `flags` are `RENAME_NOREPLACE` / `RENAME_EXCHANGE`; Linux's checks on directories
    /// (EISDIR, ENOTDIR, ENOTEMPTY, moving into a descendant) are the file system's.
    fn rename(
        &self,
        _old_name: &[u8],
        _new_dir: &Arc<dyn Inode>,
        _new_name: &[u8],
        _flags: u32,
    ) -> SysResult<()> {
        Err(Errno::EPERM)
    }
    /// Changes attributes (`notify_change`): mode bits, owner, size, times.
    fn setattr(&self, _attr: &SetAttr) -> SysResult<()> {
        Err(Errno::EPERM)
    }
    /// Writes the file's data and metadata to stable storage.
    fn fsync(&self, _datasync: bool) -> SysResult<()> {
        Ok(())
    }
    /// Identity of the mounted file system instance this inode belongs to (unique per
    /// instance; see [`new_fs_id`]). Mount points are keyed by `(fs_id, id)`.
    fn fs_id(&self) -> u64 {
        0
    }
    /// File system statistics (`statfs`).
    fn statfs(&self) -> SysResult<Statfs> {
        Err(Errno::ENOSYS)
    }
    /// `fallocate(2)` on a regular file (`file_operations.fallocate`), after the syscall's
    /// generic checks: `mode` (`FALLOC_FL_*`), `offset` and `len` (> 0, their sum fits).
    /// `None` when the file system has no allocation of its own: the syscall then emulates
    /// plain allocation by growing the size and hole punching by writing zeros, and refuses
    /// the rest (`EOPNOTSUPP`). tmpfs allocates and frees pages.
    fn fallocate(&self, _mode: u32, _offset: u64, _len: u64) -> Option<SysResult<()>> {
        None
    }
    /// Creates an unnamed regular file in this directory (`inode_operations.tmpfile`, for
    /// `O_TMPFILE`): link count 0, freed with its last reference unless `linkable` (no
    /// `O_EXCL`) lets [`Inode::link`] give it a name (Linux `I_LINKABLE`). `mode` is the
    /// permission bits after the umask. `EOPNOTSUPP` where the file system cannot.
    fn tmpfile(&self, _mode: u32, _owner: Owner, _linkable: bool) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EOPNOTSUPP)
    }
    /// The inode flags (`FS_*_FL`: immutable, append-only, nodump, noatime), as
    /// `FS_IOC_GETFLAGS` reports them (`inode_operations.fileattr_get`); `None` when the
    /// file system keeps none (the ioctl is then `ENOTTY`). The path walk and the file
    /// syscalls enforce immutable and append-only from these (`IS_IMMUTABLE`, `IS_APPEND`).
    fn fsflags(&self) -> Option<u32> {
        None
    }
    /// Sets the flags (`fileattr_set`), after the generic owner and capability checks;
    /// `EOPNOTSUPP` for flags this file system cannot keep.
    fn set_fsflags(&self, _flags: u32) -> SysResult<()> {
        Err(Errno::ENOTTY)
    }
    /// The `STATX_ATTR_*` bits this file system can report (`stx_attributes_mask`).
    fn statx_attributes_mask(&self) -> u64 {
        0
    }

    // Extended attributes (the `sb->s_xattr` handlers and `inode_operations.listxattr` of
    // fs/xattr.c). The syscalls (um-fs `sys/xattr.rs`) do every generic check first: names
    // are whole (`user.x`, `trusted.x`, `security.x`) with a namespace the VFS knows and at
    // most `XATTR_NAME_MAX` bytes, values at most `XATTR_SIZE_MAX`, permissions checked.

    /// Whether this inode's file system keeps extended attributes at all (Linux `IOP_XATTR`).
    /// Without, get, set and remove are `EOPNOTSUPP` and the list is empty, and the file
    /// system's methods below are never called.
    fn has_xattrs(&self) -> bool {
        false
    }
    /// The value of attribute `name`; `ENODATA` if the inode has none of that name.
    fn getxattr(&self, _name: &[u8]) -> SysResult<Vec<u8>> {
        Err(Errno::EOPNOTSUPP)
    }
    /// Sets `name` to `value` (which may be empty); `flags` are `XATTR_CREATE` (`EEXIST` if it
    /// exists) and `XATTR_REPLACE` (`ENODATA` if it does not). Updates the ctime.
    fn setxattr(&self, _name: &[u8], _value: &[u8], _flags: u32) -> SysResult<()> {
        Err(Errno::EOPNOTSUPP)
    }
    /// Removes attribute `name`; `ENODATA` if there is none.
    fn removexattr(&self, _name: &[u8]) -> SysResult<()> {
        Err(Errno::EOPNOTSUPP)
    }
    /// The names of all the inode's attributes, every namespace (the syscall hides
    /// `trusted.` ones from callers without CAP_SYS_ADMIN).
    fn listxattr(&self) -> SysResult<Vec<Vec<u8>>> {
        Ok(Vec::new())
    }
}

/// Owner of a new inode: the caller's fsuid and fsgid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

/// A time to set in [`SetAttr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSet {
    /// The current time (`UTIME_NOW`).
    Now,
    /// This (seconds, nanoseconds).
    At(i64, i64),
}

/// Attribute changes (Linux `struct iattr`): `None` leaves a field alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// Permission bits (`07777`).
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// New size (truncate or extend with zeros).
    pub size: Option<u64>,
    pub atime: Option<TimeSet>,
    pub mtime: Option<TimeSet>,
}

/// File system statistics in the kernel's form (`struct kstatfs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statfs {
    /// Magic number (`TMPFS_MAGIC`, ...).
    pub fs_type: i64,
    pub bsize: i64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub fsid: u64,
    pub namelen: i64,
    pub frsize: i64,
    /// `ST_*` flags of the file system instance itself: `ST_RDONLY` (1) when it was mounted
    /// read-only (Linux's `sb->s_flags & SB_RDONLY`); the syscall adds the mount's flags
    /// (fs/statfs.c calculate_f_flags).
    pub flags: i64,
}

impl Statfs {
    /// Whether the file system instance is read-only (`ST_RDONLY` in [`Statfs::flags`]).
    pub fn sb_readonly(&self) -> bool {
        self.flags & um_uapi::abi::fcntl::ST_RDONLY != 0
    }
}

/// A fresh file system instance id for [`Inode::fs_id`] (never 0).
pub fn new_fs_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Opens a character device: the driver's `open` for one (major, minor).
pub type ChrdevOpen = Arc<dyn Fn(&IoCtx<'_>, u32) -> SysResult<Box<dyn FileOps>> + Send + Sync>;

fn chrdevs() -> &'static Mutex<BTreeMap<(u32, u32), ChrdevOpen>> {
    static CHRDEVS: OnceLock<Mutex<BTreeMap<(u32, u32), ChrdevOpen>>> = OnceLock::new();
    CHRDEVS.get_or_init(Default::default)
}

/// The block devices' drivers, as [`chrdevs`] (a separate number space, as in Linux).
fn blkdevs() -> &'static Mutex<BTreeMap<(u32, u32), ChrdevOpen>> {
    static BLKDEVS: OnceLock<Mutex<BTreeMap<(u32, u32), ChrdevOpen>>> = OnceLock::new();
    BLKDEVS.get_or_init(Default::default)
}

/// `new_decode_dev` (include/linux/kdev_t.h): a `dev_t` as (major, minor).
pub fn decode_dev(dev: u64) -> (u32, u32) {
    let major = (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)) as u32;
    let minor = (((dev >> 12) & 0xffff_ff00) | (dev & 0xff)) as u32;
    (major, minor)
}

/// `new_encode_dev`: (major, minor) as a `dev_t`.
pub fn encode_dev(major: u32, minor: u32) -> u64 {
    let (ma, mi) = (major as u64, minor as u64);
    (mi & 0xff) | ((ma & 0xfff) << 8) | ((mi & !0xff) << 12) | ((ma & !0xfff) << 32)
}

/// Registers the driver of character device `major:minor` (Linux `register_chrdev_region` +
/// `cdev_add`); a later registration replaces an earlier one.
pub fn register_chrdev(major: u32, minor: u32, open: ChrdevOpen) {
    crate::task::lock(chrdevs()).insert((major, minor), open);
}

/// Opens the character device `rdev` (fs/char_dev.c `chrdev_open`): ENXIO if no driver.
pub fn open_chrdev(rdev: u64, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
    let key = decode_dev(rdev);
    let open = crate::task::lock(chrdevs()).get(&key).cloned();
    match open {
        Some(f) => f(io, flags),
        None => Err(Errno::ENXIO),
    }
}

/// Registers the driver of block device `major:minor` (Linux `add_disk` of a gendisk).
pub fn register_blkdev(major: u32, minor: u32, open: ChrdevOpen) {
    crate::task::lock(blkdevs()).insert((major, minor), open);
}

/// Removes the driver of block device `major:minor` (`del_gendisk`); its node then opens with
/// ENXIO.
pub fn unregister_blkdev(major: u32, minor: u32) {
    crate::task::lock(blkdevs()).remove(&(major, minor));
}

/// What `sync(2)` flushes besides the file systems: every disk's write cache (fs/sync.c
/// `ksys_sync` ends with `sync_bdevs`). Drivers register one hook each at boot.
type SyncHook = Arc<dyn Fn() + Send + Sync>;

fn sync_hooks() -> &'static Mutex<Vec<SyncHook>> {
    static HOOKS: OnceLock<Mutex<Vec<SyncHook>>> = OnceLock::new();
    HOOKS.get_or_init(Default::default)
}

/// Adds a hook that [`sync_all`] runs.
pub fn register_sync(hook: SyncHook) {
    crate::task::lock(sync_hooks()).push(hook);
}

/// Runs every [`register_sync`] hook (`sync(2)`, `syncfs(2)`).
pub fn sync_all() {
    let hooks: Vec<SyncHook> = crate::task::lock(sync_hooks()).clone();
    for h in hooks {
        h();
    }
}

/// Opens the block device `rdev` (block/bdev.c `blkdev_open`): ENXIO if no driver.
pub fn open_blkdev(rdev: u64, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
    let key = decode_dev(rdev);
    let open = crate::task::lock(blkdevs()).get(&key).cloned();
    match open {
        Some(f) => f(io, flags),
        None => Err(Errno::ENXIO),
    }
}

/// A block device as a file system sees it (Linux `struct block_device` under `sb->s_bdev`):
/// byte-addressed reads of a disk or partition, with no file position and no task, so a
/// mount at boot (`root=/dev/ubda`) and one by `mount(2)` read the same way. Drivers hand
/// these out through [`register_bdev`]; the holder keeps the device claimed (as
/// `bdev_file_open_by_dev` with a holder does), so `O_EXCL` opens are `EBUSY` while mounted.
pub trait BlockDevice: Send + Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Fills `buf` from byte `off`; `EIO` for a range past the end or a host error.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()>;
    /// Whether writes are refused (a read-only disk).
    fn read_only(&self) -> bool;
    /// The device's name (`ubdb`, `ubda1`), for log lines and `/proc/mounts`.
    fn name(&self) -> String;
    /// Its device number.
    fn rdev(&self) -> u64;
    /// Writes `data` at byte `off` (a file system's metadata and data); `EIO` past the end,
    /// `EROFS` on a device claimed read-only.
    fn write_at(&self, _off: u64, _data: &[u8]) -> SysResult<()> {
        Err(Errno::EROFS)
    }
    /// Makes every write so far durable (`blkdev_issue_flush`: the host file's fsync).
    fn flush(&self) -> SysResult<()> {
        Ok(())
    }
}

/// Claims a block device for a file system: `write` asks for write access as well.
pub type BdevOpen = Arc<dyn Fn(bool) -> SysResult<Arc<dyn BlockDevice>> + Send + Sync>;

/// The claimable block devices by (major, minor): name and opener.
type BdevTable = BTreeMap<(u32, u32), (String, BdevOpen)>;

fn bdevs() -> &'static Mutex<BdevTable> {
    static BDEVS: OnceLock<Mutex<BdevTable>> = OnceLock::new();
    BDEVS.get_or_init(Default::default)
}

/// Registers how file systems claim block device `major:minor`, named `name` (`ubda1`).
pub fn register_bdev(major: u32, minor: u32, name: String, open: BdevOpen) {
    crate::task::lock(bdevs()).insert((major, minor), (name, open));
}

/// Removes what [`register_bdev`] added.
pub fn unregister_bdev(major: u32, minor: u32) {
    crate::task::lock(bdevs()).remove(&(major, minor));
}

/// Claims block device `rdev` for a file system (block/bdev.c `blkdev_get_by_dev`): `ENXIO`
/// when no driver has it.
pub fn claim_bdev(rdev: u64, write: bool) -> SysResult<Arc<dyn BlockDevice>> {
    let open = crate::task::lock(bdevs())
        .get(&decode_dev(rdev))
        .map(|(_, o)| o.clone());
    open.ok_or(Errno::ENXIO)?(write)
}

/// The device number of the block device called `name` (`ubda`, `ubda1`), as
/// init/do_mounts.c `name_to_dev_t` resolves `root=/dev/NAME`.
pub fn bdev_by_name(name: &str) -> Option<u64> {
    crate::task::lock(bdevs())
        .iter()
        .find(|(_, (n, _))| n == name)
        .map(|(&(ma, mi), _)| encode_dev(ma, mi))
}

/// A name in the directory tree, with its inode (Linux `struct dentry`). `..` is the parent
/// link, so a walk never asks the file system for `..` and can never climb above its root.
pub struct Dentry {
    pub name: Vec<u8>,
    pub parent: Option<Arc<Dentry>>,
    pub inode: Arc<dyn Inode>,
    /// A file system mounted on this dentry, if any: the walk crosses into its root.
    pub mounted: Mutex<Option<Arc<Dentry>>>,
    /// For the root of a mount reached by crossing into it: that mount (`um_fs::mount::Mount`,
    /// type-erased because the mount table lives above this crate). The dentries below point
    /// up to it, so a dentry carries its mount as Linux's `struct path` does: a file opened
    /// under a mount that is later detached (`umount2(MNT_DETACH)`) keeps that mount's flags.
    pub mnt: Option<Arc<dyn Any + Send + Sync>>,
}

impl Dentry {
    /// A root dentry of a file system.
    pub fn root(inode: Arc<dyn Inode>) -> Arc<Dentry> {
        Arc::new(Dentry {
            name: b"/".to_vec(),
            parent: None,
            inode,
            mounted: Mutex::new(None),
            mnt: None,
        })
    }

    /// A child dentry.
    pub fn child(parent: &Arc<Dentry>, name: &[u8], inode: Arc<dyn Inode>) -> Arc<Dentry> {
        Arc::new(Dentry {
            name: name.to_vec(),
            parent: Some(parent.clone()),
            inode,
            mounted: Mutex::new(None),
            mnt: None,
        })
    }

    /// The root dentry of mount `mnt`, reached by crossing from `parent`'s child `name`.
    pub fn mount_root(
        parent: Option<Arc<Dentry>>,
        name: &[u8],
        inode: Arc<dyn Inode>,
        mnt: Arc<dyn Any + Send + Sync>,
    ) -> Arc<Dentry> {
        Arc::new(Dentry {
            name: name.to_vec(),
            parent,
            inode,
            mounted: Mutex::new(None),
            mnt: Some(mnt),
        })
    }

    /// The nearest mount root at or above this dentry that knows its mount, and that mount.
    pub fn pinned_mount(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        let mut cur: Option<&Dentry> = Some(self);
        while let Some(d) = cur {
            if let Some(m) = &d.mnt {
                return Some(m);
            }
            cur = d.parent.as_deref();
        }
        None
    }

    /// The absolute path of this dentry, for `getcwd`, `/proc/PID/exe` and logs.
    pub fn path(&self) -> Vec<u8> {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut cur: Option<&Dentry> = Some(self);
        while let Some(d) = cur {
            if d.parent.is_some() {
                parts.push(d.name.clone());
            }
            cur = d.parent.as_deref();
        }
        if parts.is_empty() {
            return b"/".to_vec();
        }
        let mut out = Vec::new();
        for p in parts.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(p);
        }
        out
    }
}

/// What an open file can do. Offsets are explicit: the kernel keeps the file position in
/// [`OpenFile`] and passes it in, so positional and streaming I/O share one interface.
pub trait FileOps: Send + Sync {
    /// Reads at `off` (ignored by streams). A read that must wait blocks through `io`.
    fn read(&self, _io: &IoCtx<'_>, _buf: &mut [u8], _off: u64) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    /// Writes at `off` (ignored by streams).
    fn write(&self, _io: &IoCtx<'_>, _data: &[u8], _off: u64) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    /// Whether this is a stream (console, pipe, socket): no positions, `lseek` is `ESPIPE`.
    fn is_stream(&self) -> bool {
        false
    }
    /// Metadata of the open file.
    fn stat(&self) -> SysResult<Kstat>;
    /// fchmod/fchown of a file without a name (a pipe's pipefs inode, a socket's sockfs
    /// one: `simple_setattr`, `sockfs_setattr`), after the caller's permission was checked
    /// against [`FileOps::stat`]. Files that have a dentry change their inode instead.
    fn setattr(&self, _attr: &SetAttr) -> SysResult<()> {
        Err(Errno::EOPNOTSUPP)
    }
    /// Current size, for `SEEK_END`.
    fn size(&self) -> SysResult<u64> {
        Ok(self.stat()?.size.max(0) as u64)
    }
    /// `lseek` `SEEK_DATA` (`data`) or `SEEK_HOLE` from `off` (mm/filemap.c
    /// `mapping_seek_hole_data`): `ENXIO` at or past the end (or, for `SEEK_DATA`, when only
    /// holes follow). The default is `generic_file_llseek`'s: the whole file is data and
    /// the only hole is at the end.
    fn seek_data_hole(&self, off: u64, data: bool) -> SysResult<u64> {
        let size = self.size()?;
        if off >= size {
            return Err(Errno::ENXIO);
        }
        Ok(if data { off } else { size })
    }
    /// Directory entries (all of them; the syscall pages through them by position).
    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        Err(Errno::ENOTDIR)
    }
    /// A device or file specific control. `arg` is the raw guest argument; the driver copies
    /// through `mem`.
    fn ioctl(
        &self,
        _io: &IoCtx<'_>,
        _cmd: u32,
        _arg: u64,
        _mem: &mut dyn GuestMem,
    ) -> SysResult<u64> {
        Err(Errno::ENOTTY)
    }
    /// Readiness right now: the subset of `events` (POLLIN 0x1, POLLOUT 0x4, ...) that would
    /// not block, plus POLLERR/POLLHUP. With a poll table, the file also registers the poller
    /// on the wait queues that will be woken when readiness changes. Regular files are always
    /// ready.
    fn poll(&self, events: u16, _pt: Option<&PollTable<'_>>) -> u16 {
        events & (0x1 | 0x4 | 0x40 | 0x100)
    }
    /// Whether the file has a poll method at all (Linux `file_can_poll`: `f_op->poll` is set).
    /// epoll refuses files without one (`EPERM`); poll(2) and select(2) then use the default
    /// readiness above. Regular files and directories are decided by the caller from their type.
    fn can_poll(&self) -> bool {
        true
    }
    /// Whether mmap of this file makes anonymous memory (Linux `/dev/zero`'s `mmap_zero`:
    /// shared anonymous memory for MAP_SHARED, private zero pages for MAP_PRIVATE).
    fn maps_as_anonymous(&self) -> bool {
        false
    }
    /// The mappable file behind this open file, for `mmap`.
    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        None
    }
    /// Whether a mapping of this file may be made (the file's `f_op->mmap` refusing, as
    /// shmem does for a sealed memfd): `shared_write` for a `MAP_SHARED` mapping with
    /// `PROT_WRITE`.
    fn may_mmap(&self, _shared_write: bool) -> SysResult<()> {
        Ok(())
    }
    /// Whether a mapping of `len` bytes at file offset `off` fits what the file maps (Linux's
    /// `f_op->mmap` refusing a geometry: a packet socket maps its rings exactly, from offset 0,
    /// else `EINVAL`). Checked before [`FileOps::vm_file`].
    fn mmap_check(&self, _off: u64, _len: u64) -> SysResult<()> {
        Ok(())
    }
    /// The concrete object, for calls that act on one kind of file only (socket calls on a
    /// socket, `epoll_ctl` on an epoll instance, `timerfd_settime` on a timerfd); `None` for
    /// files no such call needs to recognise.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
    /// For an anonymous-inode file (eventfd, epoll, timerfd, signalfd ...): the name
    /// `/proc/PID/fd/N` shows after `anon_inode:`, e.g. `[eventfd]` (fs/anon_inodes.c).
    fn anon_name(&self) -> Option<&'static str> {
        None
    }
    /// `fsync` of this open file when its driver has one of its own (block/fops.c
    /// `blkdev_fsync`: an open block device flushes its disk, not the device node's inode);
    /// `None`: the inode's [`Inode::fsync`].
    fn fsync(&self, _datasync: bool) -> Option<SysResult<()>> {
        None
    }
}

/// Guest memory as seen by a driver's ioctl: copies only.
pub trait GuestMem {
    /// copy_from_user.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> SysResult<()>;
    /// copy_to_user.
    fn write(&mut self, addr: u64, data: &[u8]) -> SysResult<()>;
}

/// An open file description (Linux `struct file`).
pub struct OpenFile {
    pub ops: Box<dyn FileOps>,
    /// open(2) status flags (O_APPEND, O_NONBLOCK, access mode ...).
    pub flags: AtomicU32,
    pub pos: Mutex<u64>,
    /// Where it was opened, if it has a name.
    pub dentry: Option<Arc<Dentry>>,
    /// The write access a regular file opened for writing holds while it is open.
    pub write_access: OnceLock<WriteAccess>,
}

impl OpenFile {
    /// Wraps file operations.
    pub fn new(ops: Box<dyn FileOps>, flags: u32, dentry: Option<Arc<Dentry>>) -> Arc<OpenFile> {
        Arc::new(OpenFile {
            ops,
            flags: AtomicU32::new(flags),
            pos: Mutex::new(0),
            dentry,
            write_access: OnceLock::new(),
        })
    }

    /// The status flags.
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }
}

/// What runs when an open file description goes away (Linux `__fput`, which calls
/// `fsnotify_close`): set once at boot by the file layer.
static RELEASE_HOOK: OnceLock<fn(&OpenFile)> = OnceLock::new();

/// Sets the release hook (the first call wins).
pub fn set_release_hook(hook: fn(&OpenFile)) {
    let _ = RELEASE_HOOK.set(hook);
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        if let Some(hook) = RELEASE_HOOK.get() {
            hook(self);
        }
    }
}

/// One descriptor slot.
#[derive(Clone)]
pub struct FdEntry {
    pub file: Arc<OpenFile>,
    pub cloexec: bool,
}

/// A process's descriptor table.
#[derive(Clone)]
pub struct FdTable {
    fds: BTreeMap<u32, FdEntry>,
    /// The soft `RLIMIT_NOFILE` of the process that owns the table: descriptors go below it.
    nofile: u32,
}

/// The default soft `RLIMIT_NOFILE` (and so the default table limit).
pub const NR_OPEN: u32 = 1024;

impl Default for FdTable {
    fn default() -> Self {
        FdTable {
            fds: BTreeMap::new(),
            nofile: NR_OPEN,
        }
    }
}

impl FdTable {
    /// Follows a new soft `RLIMIT_NOFILE` (setrlimit/prlimit): later allocations stay below it;
    /// descriptors already above it stay open, as in Linux.
    pub fn set_nofile(&mut self, limit: u64) {
        self.nofile = u32::try_from(limit).unwrap_or(u32::MAX);
    }

    /// The limit descriptors stay below.
    pub fn nofile(&self) -> u32 {
        self.nofile
    }

    /// The entry for `fd`, or `EBADF`.
    pub fn get(&self, fd: u64) -> SysResult<Arc<OpenFile>> {
        u32::try_from(fd)
            .ok()
            .and_then(|fd| self.fds.get(&fd))
            .map(|e| e.file.clone())
            .ok_or(Errno::EBADF)
    }

    /// The entry for `fd` for a call that operates on the open file itself, not only on the
    /// path it names: `EBADF` for an `O_PATH` descriptor too (Linux `fdget`, which passes
    /// `FMODE_PATH` as the mask `__fget_light` refuses; `fdget_raw` is [`FdTable::get`]).
    pub fn get_nopath(&self, fd: u64) -> SysResult<Arc<OpenFile>> {
        use um_uapi::abi::fcntl::O_PATH;
        let f = self.get(fd)?;
        if f.flags() & O_PATH != 0 {
            return Err(Errno::EBADF);
        }
        Ok(f)
    }

    /// Installs at the lowest free descriptor `>= min`.
    pub fn install(&mut self, file: Arc<OpenFile>, cloexec: bool, min: u32) -> SysResult<u32> {
        let mut fd = min;
        for (&k, _) in self.fds.range(min..) {
            if k != fd {
                break;
            }
            fd += 1;
        }
        if fd >= self.nofile {
            return Err(Errno::EMFILE);
        }
        self.fds.insert(fd, FdEntry { file, cloexec });
        Ok(fd)
    }

    /// Installs at exactly `fd`, returning what was there.
    pub fn install_at(
        &mut self,
        fd: u32,
        file: Arc<OpenFile>,
        cloexec: bool,
    ) -> SysResult<Option<FdEntry>> {
        if fd >= self.nofile {
            return Err(Errno::EBADF);
        }
        Ok(self.fds.insert(fd, FdEntry { file, cloexec }))
    }

    /// Removes `fd`.
    pub fn remove(&mut self, fd: u64) -> SysResult<FdEntry> {
        u32::try_from(fd)
            .ok()
            .and_then(|fd| self.fds.remove(&fd))
            .ok_or(Errno::EBADF)
    }

    /// Close-on-exec flag access.
    pub fn entry_mut(&mut self, fd: u64) -> SysResult<&mut FdEntry> {
        u32::try_from(fd)
            .ok()
            .and_then(|fd| self.fds.get_mut(&fd))
            .ok_or(Errno::EBADF)
    }

    /// Drops every close-on-exec descriptor (execve).
    pub fn close_on_exec(&mut self) {
        self.fds.retain(|_, e| !e.cloexec);
    }

    /// Iterates over open descriptors.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &FdEntry)> {
        self.fds.iter().map(|(k, v)| (*k, v))
    }

    /// Closes everything.
    pub fn clear(&mut self) {
        self.fds.clear();
    }
}

/// Writers and deniers of writing per inode (Linux `inode->i_writecount`: positive while files
/// are open for writing, negative while the file is being executed), keyed by the file
/// layer's inode key. A program cannot be written while it runs, nor run while it is open
/// for writing: both are `ETXTBSY` (fs/namei.c `get_write_access` in `do_dentry_open`,
/// fs/exec.c `deny_write_access` in `do_open_execat`, kept by `mm->exe_file`).
fn write_counts() -> &'static Mutex<HashMap<u64, i64>> {
    static COUNTS: OnceLock<Mutex<HashMap<u64, i64>>> = OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

/// Adds `delta` to `key`'s count if `ok(count)`; drops the entry at zero.
fn adjust_write_count(key: u64, delta: i64, ok: impl Fn(i64) -> bool) -> bool {
    let mut m = crate::task::lock(write_counts());
    let cur = m.get(&key).copied().unwrap_or(0);
    if !ok(cur) {
        return false;
    }
    let new = cur + delta;
    if new == 0 {
        m.remove(&key);
    } else {
        m.insert(key, new);
    }
    true
}

/// Write access to an inode (`get_write_access`), released when dropped.
#[derive(Debug)]
pub struct WriteAccess(u64);

impl WriteAccess {
    /// `ETXTBSY` while the inode is being executed.
    pub fn get(key: u64) -> SysResult<WriteAccess> {
        if adjust_write_count(key, 1, |c| c >= 0) {
            Ok(WriteAccess(key))
        } else {
            Err(Errno::ETXTBSY)
        }
    }
}

impl Drop for WriteAccess {
    fn drop(&mut self) {
        adjust_write_count(self.0, -1, |_| true);
    }
}

/// Writing to an inode denied (`deny_write_access`), allowed again when dropped.
#[derive(Debug)]
pub struct DenyWrite(u64);

impl DenyWrite {
    /// `ETXTBSY` while the inode is open for writing.
    pub fn new(key: u64) -> SysResult<DenyWrite> {
        if adjust_write_count(key, -1, |c| c <= 0) {
            Ok(DenyWrite(key))
        } else {
            Err(Errno::ETXTBSY)
        }
    }
}

impl Clone for DenyWrite {
    /// Another denial of the same inode (a forked process's copy of `mm->exe_file`); cannot
    /// fail, as this one already keeps writers out.
    fn clone(&self) -> DenyWrite {
        adjust_write_count(self.0, -1, |_| true);
        DenyWrite(self.0)
    }
}

impl Drop for DenyWrite {
    fn drop(&mut self) {
        adjust_write_count(self.0, 1, |_| true);
    }
}

/// The program a process runs (Linux `mm->exe_file`): its dentry, and the denial of writes
/// to it that lasts while the process runs it.
#[derive(Clone)]
pub struct ExeFile {
    pub dentry: Arc<Dentry>,
    pub deny: DenyWrite,
}

/// The `Kstat` of a pseudo file: `mode` (type and permission bits), owned by `uid:gid`, on the
/// anonymous device `0:dev_minor` (pipes, sockets, and the anonymous-inode files of
/// fs/anon_inodes.c: pidfd, the seccomp listener).
pub fn anon_kstat(mode: u32, ino: u64, dev_minor: u64, uid: u32, gid: u32) -> Kstat {
    let t = um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).unwrap_or((0, 0));
    Kstat {
        dev: dev_minor,
        ino,
        mode,
        nlink: 1,
        uid,
        gid,
        rdev: 0,
        size: 0,
        blksize: um_mm::page_size() as i64,
        blocks: 0,
        atime: t,
        mtime: t,
        ctime: t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_access_and_its_denial_exclude_each_other() {
        // Keys no file system hands out; the registry is process-wide.
        let (a, b) = (u64::MAX - 1, u64::MAX - 2);
        let w1 = WriteAccess::get(a).unwrap();
        let w2 = WriteAccess::get(a).unwrap();
        assert_eq!(DenyWrite::new(a).unwrap_err(), Errno::ETXTBSY);
        drop(w1);
        assert_eq!(DenyWrite::new(a).unwrap_err(), Errno::ETXTBSY);
        drop(w2);
        let d1 = DenyWrite::new(a).unwrap();
        let d2 = d1.clone();
        assert_eq!(WriteAccess::get(a).unwrap_err(), Errno::ETXTBSY);
        // Another inode is not affected.
        drop(WriteAccess::get(b).unwrap());
        drop(d1);
        assert_eq!(WriteAccess::get(a).unwrap_err(), Errno::ETXTBSY);
        drop(d2);
        drop(WriteAccess::get(a).unwrap());
        assert!(!lock_counts().contains_key(&a) && !lock_counts().contains_key(&b));
    }

    fn lock_counts() -> std::sync::MutexGuard<'static, HashMap<u64, i64>> {
        crate::task::lock(write_counts())
    }
}
