//! tmpfs: a file system in kernel memory (Linux `mm/shmem.c`, without swap).
//!
//! Key types: [`TmpFs`] (one instance: its id, inode numbers, the namespace lock, its block
//! count), [`TmpInode`] (directory entries in a `BTreeMap`, file data in a sparse
//! `PageMap`, a symlink's target, or nothing for FIFOs, sockets and device nodes). Regular
//! files are mappable: [`TmpVm`] is their [`VmFile`], so the page cache serves `mmap`, and
//! the cached pages are never older than the file's own pages: `write(2)` writes into the
//! cached pages too (`PageCache::update`), `read(2)` reads the cached ones over the file's
//! (a shared mapping's writes reach the file only at write-back, through `write_page`), and
//! truncate and hole punching remove the pages from every address space that maps them
//! (`PageCache::unmap_mapping_range`, before and after the file's pages go, as
//! `shmem_setattr` and `shmem_fallocate` do), drop them from the cache and zero the partial
//! pages in place.
//!
//! File data is page-granular and sparse, as in shmem (`pages.rs`): holes cost nothing and
//! read as zeros, `lseek(SEEK_DATA/SEEK_HOLE)` sees them, `fallocate` reserves pages
//! (`FALLOC_FL_KEEP_SIZE` too) or punches holes that free them. An instance mounted with
//! a limit counts its allocated pages and refuses more with `ENOSPC`; `statfs` reports its
//! blocks. A user's mount is limited to half of the guest's RAM unless `size=` or
//! `nr_blocks=` says otherwise (`size=N%` of RAM; `size=0` is unlimited), as Linux; the
//! kernel's internal instances ([`TmpFs::new_root_inode`]) are unlimited.
//!
//! Every change to the tree takes the instance's namespace lock, so a rename between two
//! directories sees both consistently; lookups take only the directory's own lock.
//!
//! Opening a FIFO opens the kernel pipe keyed by the inode ([`crate::mount::open_fifo`]), a
//! character or block device the driver registered for its number
//! ([`um_kernel::vfs::open_chrdev`], [`um_kernel::vfs::open_blkdev`]).
//! Neighbours: `devfs` (devtmpfs is a tmpfs), `mount` (instances are made by `mount -t tmpfs`).

mod pages;

use pages::{Blocks, PageMap};
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::task::lock;
use um_kernel::vfs::{
    self, DirEntry, FileOps, Inode, Kstat, Owner, SetAttr, Statfs, TimeSet, mode,
};
use um_kernel::wait::IoCtx;
use um_mm::VmFile;
use um_uapi::abi::fcntl::{STATX_ATTR_APPEND, STATX_ATTR_IMMUTABLE, STATX_ATTR_NODUMP};
use um_uapi::abi::fs::{FS_APPEND_FL, FS_IMMUTABLE_FL, FS_NOATIME_FL, FS_NODUMP_FL};
use um_uapi::{Errno, SysResult};

/// `TMPFS_MAGIC`.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
/// Largest tmpfs file (`MAX_LFS_FILESIZE`: data is sparse, so any offset is fine).
const MAX_FILE: u64 = i64::MAX as u64;
/// `FALLOC_FL_KEEP_SIZE`.
const FALLOC_FL_KEEP_SIZE: u32 = 1;
/// `FALLOC_FL_PUNCH_HOLE`.
const FALLOC_FL_PUNCH_HOLE: u32 = 2;

/// The current time for timestamps.
pub fn now() -> (i64, i64) {
    um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).unwrap_or((0, 0))
}

/// One tmpfs instance.
pub struct TmpFs {
    /// [`Inode::fs_id`].
    id: u64,
    /// `st_dev`: an anonymous device `0:N` (Linux `get_anon_bdev`).
    dev: u64,
    next_ino: AtomicU64,
    /// Serialises changes to the tree.
    ns: Mutex<()>,
    /// Its size limit and allocated pages (`shmem_sb_info.max_blocks`, `used_blocks`).
    blocks: Arc<Blocks>,
}

impl TmpFs {
    /// A new instance mounted by a user; returns its root directory. `data` is the mount
    /// option string (`mode=`, `uid=`, `gid=`, `size=` and `nr_blocks=` are used;
    /// `nr_inodes=` and the others are accepted and ignored); `ram_pages` is the guest's
    /// memory in pages. Without a size the instance holds at most half of RAM, as Linux's
    /// `shmem_default_max_blocks` (mm/shmem.c); `size=0` lifts the limit.
    pub fn new_root(data: &[u8], ram_pages: u64) -> SysResult<Arc<dyn Inode>> {
        let o = parse_options(data, 0o1777, ram_pages)?;
        Ok(Self::new_instance(o.mode, o.uid, o.gid, o.limit))
    }

    /// A new unlimited instance with a root of permission bits `mode`, as a [`TmpInode`]
    /// (the kernel's internal mounts: Linux sets no limit on `SB_KERNMOUNT` instances).
    pub fn new_root_inode(mode: u32, uid: u32, gid: u32) -> Arc<TmpInode> {
        Self::new_instance(mode, uid, gid, u64::MAX)
    }

    /// A new instance of at most `limit` pages (`u64::MAX`: unlimited).
    fn new_instance(mode: u32, uid: u32, gid: u32, limit: u64) -> Arc<TmpInode> {
        static ANON: AtomicU64 = AtomicU64::new(32);
        let fs = Arc::new(TmpFs {
            id: vfs::new_fs_id(),
            dev: vfs::encode_dev(0, ANON.fetch_add(1, Ordering::Relaxed) as u32),
            next_ino: AtomicU64::new(1),
            ns: Mutex::new(()),
            blocks: Blocks::new(limit),
        });
        let root = TmpInode::new(
            &fs,
            mode::S_IFDIR | (mode & 0o7777),
            Owner { uid, gid },
            0,
            Body::Dir(Mutex::new(BTreeMap::new())),
        );
        lock(&root.meta).nlink = 2;
        root
    }
}

/// The options of a tmpfs instance (`shmem_parse_one`).
#[derive(Debug, PartialEq, Eq)]
struct Options {
    mode: u32,
    uid: u32,
    gid: u32,
    /// Pages (`size=` rounded up, `nr_blocks=`); `u64::MAX` = unlimited.
    limit: u64,
}

/// A number of bytes with an optional binary suffix (`memparse`: k, m, g, t, p, e), or a
/// percentage of RAM (`size=50%`, `ram_pages` pages of `pg` bytes), as `shmem_parse_one`.
fn parse_size(v: &str, ram_pages: u64, pg: u64) -> SysResult<u64> {
    if let Some(pct) = v.strip_suffix('%') {
        let pct = pct.parse::<u64>().map_err(|_| Errno::EINVAL)?;
        // `size = totalram_pages() * PAGE_SIZE / 100 * size` (in that order, in bytes).
        return (ram_pages * pg / 100).checked_mul(pct).ok_or(Errno::EINVAL);
    }
    memparse(v)
}

/// A number with an optional binary suffix (lib/cmdline.c `memparse`: k, m, g, t, p, e);
/// `EINVAL` for anything else or an overflow. Mount options of tmpfs and hugetlbfs use it.
pub(crate) fn memparse(v: &str) -> SysResult<u64> {
    let (digits, shift) = match v.as_bytes().last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&v[..v.len() - 1], 10),
        Some(b'm') => (&v[..v.len() - 1], 20),
        Some(b'g') => (&v[..v.len() - 1], 30),
        Some(b't') => (&v[..v.len() - 1], 40),
        Some(b'p') => (&v[..v.len() - 1], 50),
        Some(b'e') => (&v[..v.len() - 1], 60),
        _ => (v, 0),
    };
    let n: u64 = digits.parse().map_err(|_| Errno::EINVAL)?;
    n.checked_shl(shift)
        .filter(|r| r >> shift == n)
        .ok_or(Errno::EINVAL)
}

/// Parses `mode=`, `uid=`, `gid=`, `size=`, `nr_blocks=` from a tmpfs option string
/// (`shmem_parse_one`). The default limit is half of the `ram_pages` (at least one page);
/// `size=0` / `nr_blocks=0` mean unlimited, as in Linux.
fn parse_options(data: &[u8], default_mode: u32, ram_pages: u64) -> SysResult<Options> {
    // shmem_init_fs_context: the root belongs to the mounter's fs ids; `uid=`/`gid=` are
    // ids of its user namespace (`make_kuid`, `EINVAL` when unmapped).
    let cur = um_kernel::current::current();
    let (fsuid, fsgid) = cur.as_ref().map_or((0, 0), |t| {
        let c = *um_kernel::task::lock(&t.process.creds);
        (c.fsuid, c.fsgid)
    });
    let ns = cur.as_ref().map_or_else(
        || um_kernel::userns::root().clone(),
        |t| um_kernel::userns::of(&t.process),
    );
    let (mut m, mut uid, mut gid) = (default_mode, fsuid, fsgid);
    let mut limit = (ram_pages / 2).max(1);
    let pg = um_mm::page_size();
    let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    for opt in text
        .trim_end_matches('\0')
        .split(',')
        .filter(|o| !o.is_empty())
    {
        let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
        match k {
            "mode" => m = u32::from_str_radix(v, 8).map_err(|_| Errno::EINVAL)? & 0o7777,
            "uid" => {
                let id = v.parse().map_err(|_| Errno::EINVAL)?;
                uid = um_kernel::userns::make_kuid(&ns, id).ok_or(Errno::EINVAL)?;
            }
            "gid" => {
                let id = v.parse().map_err(|_| Errno::EINVAL)?;
                gid = um_kernel::userns::make_kgid(&ns, id).ok_or(Errno::EINVAL)?;
            }
            // `ctx->blocks = DIV_ROUND_UP(size, PAGE_SIZE)`.
            "size" => {
                limit = match parse_size(v, ram_pages, pg)? {
                    0 => u64::MAX,
                    b => b.div_ceil(pg),
                }
            }
            "nr_blocks" => {
                limit = match parse_size(v, ram_pages, pg)? {
                    0 => u64::MAX,
                    b => b,
                }
            }
            "nr_inodes" | "mpol" | "huge" | "inode32" | "inode64" | "noswap" | "quota"
            | "usrquota" | "grpquota" => {}
            // Generic options the mount syscall passes through in the data string.
            "rw" | "ro" | "nosuid" | "nodev" | "noexec" | "relatime" | "noatime" | "defaults" => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(Options {
        mode: m,
        uid,
        gid,
        limit,
    })
}

enum Body {
    Dir(Mutex<BTreeMap<Vec<u8>, Arc<TmpInode>>>),
    /// A regular file's data, shared with its [`TmpVm`].
    File(Arc<Mutex<PageMap>>),
    Symlink(Vec<u8>),
    Special,
}

struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u64,
    rdev: u64,
    atime: (i64, i64),
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// Inode flags (`shmem_inode_info.fsflags`): only [`USER_MODIFIABLE`] ones are ever set.
    fsflags: u32,
    /// An `O_TMPFILE` file that `link` may still name (Linux `I_LINKABLE`).
    linkable: bool,
    /// Extended attributes by full name (`shmem_inode_info.xattrs`, a `simple_xattrs` tree
    /// ordered by name, so `listxattr` lists in name order as Linux 6.2+ does).
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// `SHMEM_FL_USER_MODIFIABLE` (mm/shmem.c): the inode flags tmpfs keeps.
const USER_MODIFIABLE: u32 = FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL;
/// `SHMEM_FL_INHERITED`: the flags a new inode takes from its directory.
const INHERITED: u32 = FS_NODUMP_FL | FS_NOATIME_FL;

/// A tmpfs inode.
pub struct TmpInode {
    fs: Arc<TmpFs>,
    ino: u64,
    me: Weak<TmpInode>,
    meta: Mutex<Meta>,
    body: Body,
    /// A directory's parent (for rename's loop check); the root's is empty.
    parent: Mutex<Weak<TmpInode>>,
    vm: OnceLock<Arc<TmpVm>>,
}

fn dt(mode: u32) -> u8 {
    ((mode & mode::S_IFMT) >> 12) as u8
}

impl TmpInode {
    fn new(fs: &Arc<TmpFs>, mode: u32, owner: Owner, rdev: u64, body: Body) -> Arc<TmpInode> {
        let t = now();
        let ino = fs.next_ino.fetch_add(1, Ordering::Relaxed);
        Arc::new_cyclic(|me| TmpInode {
            fs: fs.clone(),
            ino,
            me: me.clone(),
            meta: Mutex::new(Meta {
                mode,
                uid: owner.uid,
                gid: owner.gid,
                nlink: 1,
                rdev,
                atime: t,
                mtime: t,
                ctime: t,
                fsflags: 0,
                linkable: false,
                xattrs: BTreeMap::new(),
            }),
            body,
            parent: Mutex::new(Weak::new()),
            vm: OnceLock::new(),
        })
    }

    fn entries(&self) -> SysResult<&Mutex<BTreeMap<Vec<u8>, Arc<TmpInode>>>> {
        match &self.body {
            Body::Dir(e) => Ok(e),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir(_))
    }

    fn me(&self) -> SysResult<Arc<TmpInode>> {
        self.me.upgrade().ok_or(Errno::ENOENT)
    }

    fn touch_dir(&self) {
        let t = now();
        let mut m = lock(&self.meta);
        m.mtime = t;
        m.ctime = t;
    }

    /// The page-cache id of a regular file: distinct from every hostfs id (bit 63) and
    /// from other tmpfs instances.
    fn vm_id(&self) -> u64 {
        (1 << 63) | (self.fs.id << 40) | self.ino
    }

    /// Inserts a new inode under `name` (the namespace lock held by the caller).
    fn insert(&self, name: &[u8], child: Arc<TmpInode>) -> SysResult<Arc<dyn Inode>> {
        let mut e = lock(self.entries()?);
        if e.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        if child.is_dir() {
            *lock(&child.parent) = self.me.clone();
            lock(&self.meta).nlink += 1;
        }
        e.insert(name.to_vec(), child.clone());
        drop(e);
        self.touch_dir();
        Ok(child)
    }

    fn make(
        &self,
        name: &[u8],
        mode: u32,
        owner: Owner,
        rdev: u64,
        body: Body,
    ) -> SysResult<Arc<dyn Inode>> {
        // inode_init_owner: the setgid-directory rules.
        let (owner, perm) = crate::namei::inode_init_owner(&self.stat()?, owner, mode);
        let mode = (mode & mode::S_IFMT) | perm;
        let _ns = lock(&self.fs.ns);
        let e = lock(self.entries()?);
        if e.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        drop(e);
        let child = self.new_child(mode, owner, rdev, body);
        if child.is_dir() {
            lock(&child.meta).nlink = 2;
        }
        self.insert(name, child)
    }

    /// A new inode for this directory: `shmem_get_inode` inherits [`INHERITED`] flags.
    fn new_child(&self, mode: u32, owner: Owner, rdev: u64, body: Body) -> Arc<TmpInode> {
        let child = TmpInode::new(&self.fs, mode, owner, rdev, body);
        lock(&child.meta).fsflags = lock(&self.meta).fsflags & INHERITED;
        child
    }

    fn same_fs(&self, other: &Arc<dyn Inode>) -> SysResult<Arc<TmpInode>> {
        match other.as_any().downcast_ref::<TmpInode>() {
            Some(t) if Arc::ptr_eq(&t.fs, &self.fs) => t.me(),
            _ => Err(Errno::EXDEV),
        }
    }

    /// Whether `self` is `dir` or one of its ancestors.
    fn is_ancestor_of(&self, dir: &TmpInode) -> bool {
        let mut cur = dir.me.upgrade();
        while let Some(c) = cur {
            if c.ino == self.ino {
                return true;
            }
            cur = lock(&c.parent).upgrade();
        }
        false
    }

    fn data(&self) -> SysResult<&Arc<Mutex<PageMap>>> {
        match &self.body {
            Body::File(d) => Ok(d),
            Body::Dir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    fn truncate(&self, size: u64) -> SysResult<()> {
        if size > MAX_FILE {
            return Err(Errno::EFBIG);
        }
        truncate_range(self.data()?, self.vm_id(), size);
        let t = now();
        let mut m = lock(&self.meta);
        m.mtime = t;
        m.ctime = t;
        Ok(())
    }
}

impl Inode for TmpInode {
    fn stat(&self) -> SysResult<Kstat> {
        let page = um_mm::page_size();
        let (size, pages) = match &self.body {
            Body::File(d) => {
                let d = lock(d);
                (d.size() as i64, d.allocated())
            }
            Body::Symlink(t) => (t.len() as i64, (t.len() as u64).div_ceil(page)),
            Body::Dir(_) => (4096, 4096u64.div_ceil(page)),
            Body::Special => (0, 0),
        };
        let m = lock(&self.meta);
        Ok(Kstat {
            dev: self.fs.dev,
            ino: self.ino,
            mode: m.mode,
            nlink: m.nlink,
            uid: m.uid,
            gid: m.gid,
            rdev: m.rdev,
            size,
            // shmem: the pages allocated (holes are free), counted in 512-byte units.
            blksize: page as i64,
            blocks: (pages * (page / 512)) as i64,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
        })
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        let e = lock(self.entries()?);
        e.get(name)
            .map(|i| i.clone() as Arc<dyn Inode>)
            .ok_or(Errno::ENOENT)
    }

    fn readlink(&self) -> SysResult<Vec<u8>> {
        match &self.body {
            Body::Symlink(t) => Ok(t.clone()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let (fmt, rdev) = {
            let m = lock(&self.meta);
            (m.mode & mode::S_IFMT, m.rdev)
        };
        match &self.body {
            Body::Dir(_) => {
                if flags & 3 != 0 {
                    return Err(Errno::EISDIR);
                }
                Ok(Box::new(TmpDirFile { inode: self.me()? }))
            }
            Body::File(_) => Ok(Box::new(TmpFile { inode: self.me()? })),
            Body::Symlink(_) => Err(Errno::ELOOP),
            Body::Special => match fmt {
                mode::S_IFIFO => crate::mount::open_fifo(crate::mount::inode_key(self), flags, io),
                mode::S_IFCHR => vfs::open_chrdev(rdev, io, flags),
                mode::S_IFBLK => vfs::open_blkdev(rdev, io, flags),
                _ => Err(Errno::ENXIO),
            },
        }
    }

    fn id(&self) -> u64 {
        self.ino
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn create(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        let data = PageMap::new(self.fs.blocks.clone(), um_mm::page_size());
        let body = Body::File(Arc::new(Mutex::new(data)));
        self.make(name, mode::S_IFREG | (mode & 0o7777), owner, 0, body)
    }

    /// `shmem_tmpfile`: a regular file in no directory, link count 0 (`d_tmpfile`).
    fn tmpfile(&self, mode: u32, owner: Owner, linkable: bool) -> SysResult<Arc<dyn Inode>> {
        let st = self.stat()?;
        if st.mode & mode::S_IFMT != mode::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        let (owner, perm) = crate::namei::inode_init_owner(&st, owner, mode::S_IFREG | mode);
        let data = PageMap::new(self.fs.blocks.clone(), um_mm::page_size());
        let body = Body::File(Arc::new(Mutex::new(data)));
        let child = self.new_child(mode::S_IFREG | perm, owner, 0, body);
        {
            let mut m = lock(&child.meta);
            m.nlink = 0;
            m.linkable = linkable;
        }
        Ok(child)
    }

    fn fsflags(&self) -> Option<u32> {
        Some(lock(&self.meta).fsflags)
    }

    /// `shmem_fileattr_set`: only [`USER_MODIFIABLE`] flags (anything else `EOPNOTSUPP`).
    fn set_fsflags(&self, flags: u32) -> SysResult<()> {
        if flags & !USER_MODIFIABLE != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut m = lock(&self.meta);
        m.fsflags = flags;
        m.ctime = now();
        Ok(())
    }

    /// `shmem_getattr`: append-only, immutable and nodump are reported.
    fn statx_attributes_mask(&self) -> u64 {
        STATX_ATTR_APPEND | STATX_ATTR_IMMUTABLE | STATX_ATTR_NODUMP
    }

    /// `shmem_xattr_handlers`: security, trusted and (since Linux 6.6) user attributes, on
    /// every kind of inode (the syscall keeps `user.` to files and directories).
    fn has_xattrs(&self) -> bool {
        true
    }

    fn getxattr(&self, name: &[u8]) -> SysResult<Vec<u8>> {
        lock(&self.meta)
            .xattrs
            .get(name)
            .cloned()
            .ok_or(Errno::ENODATA)
    }

    /// `simple_xattr_set`, then `shmem_xattr_handler_set` moves the ctime.
    fn setxattr(&self, name: &[u8], value: &[u8], flags: u32) -> SysResult<()> {
        use um_uapi::abi::xattr::{XATTR_CREATE, XATTR_REPLACE};
        let mut m = lock(&self.meta);
        let exists = m.xattrs.contains_key(name);
        if exists && flags & XATTR_CREATE != 0 {
            return Err(Errno::EEXIST);
        }
        if !exists && flags & XATTR_REPLACE != 0 {
            return Err(Errno::ENODATA);
        }
        m.xattrs.insert(name.to_vec(), value.to_vec());
        m.ctime = now();
        Ok(())
    }

    fn removexattr(&self, name: &[u8]) -> SysResult<()> {
        let mut m = lock(&self.meta);
        m.xattrs.remove(name).ok_or(Errno::ENODATA)?;
        m.ctime = now();
        Ok(())
    }

    fn listxattr(&self) -> SysResult<Vec<Vec<u8>>> {
        Ok(lock(&self.meta).xattrs.keys().cloned().collect())
    }

    fn mkdir(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        let body = Body::Dir(Mutex::new(BTreeMap::new()));
        self.make(name, mode::S_IFDIR | (mode & 0o7777), owner, 0, body)
    }

    fn mknod(&self, name: &[u8], mode: u32, rdev: u64, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        match mode & mode::S_IFMT {
            0 | mode::S_IFREG => self.create(name, mode, owner),
            mode::S_IFIFO | mode::S_IFSOCK => self.make(name, mode, owner, 0, Body::Special),
            mode::S_IFCHR | mode::S_IFBLK => self.make(name, mode, owner, rdev, Body::Special),
            _ => Err(Errno::EINVAL),
        }
    }

    fn symlink(&self, name: &[u8], target: &[u8], owner: Owner) -> SysResult<Arc<dyn Inode>> {
        if target.len() >= 4096 {
            return Err(Errno::ENAMETOOLONG);
        }
        let body = Body::Symlink(target.to_vec());
        self.make(name, mode::S_IFLNK | 0o777, owner, 0, body)
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> SysResult<()> {
        let t = self.same_fs(target)?;
        if t.is_dir() {
            return Err(Errno::EPERM);
        }
        let _ns = lock(&self.fs.ns);
        let mut e = lock(self.entries()?);
        if e.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        {
            let mut m = lock(&t.meta);
            if m.nlink == 0 && !m.linkable {
                // Linux vfs_link: an unlinked file cannot get a name again, except an
                // O_TMPFILE file opened without O_EXCL (I_LINKABLE, cleared by its first link).
                return Err(Errno::ENOENT);
            }
            m.linkable = false;
            m.nlink += 1;
            m.ctime = now();
        }
        e.insert(name.to_vec(), t);
        drop(e);
        self.touch_dir();
        Ok(())
    }

    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        let _ns = lock(&self.fs.ns);
        let mut e = lock(self.entries()?);
        let child = e.get(name).ok_or(Errno::ENOENT)?;
        if child.is_dir() {
            return Err(Errno::EISDIR);
        }
        let child = e.remove(name).ok_or(Errno::ENOENT)?;
        drop(e);
        {
            let mut m = lock(&child.meta);
            m.nlink = m.nlink.saturating_sub(1);
            m.ctime = now();
        }
        self.touch_dir();
        Ok(())
    }

    fn rmdir(&self, name: &[u8]) -> SysResult<()> {
        let _ns = lock(&self.fs.ns);
        let mut e = lock(self.entries()?);
        let child = e.get(name).ok_or(Errno::ENOENT)?;
        if !child.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if !lock(child.entries()?).is_empty() {
            return Err(Errno::ENOTEMPTY);
        }
        let child = e.remove(name).ok_or(Errno::ENOENT)?;
        drop(e);
        lock(&child.meta).nlink = 0;
        lock(&self.meta).nlink -= 1;
        self.touch_dir();
        Ok(())
    }

    fn rename(
        &self,
        old_name: &[u8],
        new_dir: &Arc<dyn Inode>,
        new_name: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        const NOREPLACE: u32 = 1;
        const EXCHANGE: u32 = 2;
        if flags & !(NOREPLACE | EXCHANGE) != 0 || flags == NOREPLACE | EXCHANGE {
            return Err(Errno::EINVAL);
        }
        let nd = self.same_fs(new_dir)?;
        nd.entries()?;
        let _ns = lock(&self.fs.ns);
        let same_dir = nd.ino == self.ino;
        let src = lock(self.entries()?)
            .get(old_name)
            .cloned()
            .ok_or(Errno::ENOENT)?;
        let dst = lock(nd.entries()?).get(new_name).cloned();
        if flags & EXCHANGE != 0 {
            let dst = dst.ok_or(Errno::ENOENT)?;
            if src.is_dir() && src.is_ancestor_of(&nd) || dst.is_dir() && dst.is_ancestor_of(self) {
                return Err(Errno::EINVAL);
            }
            if !same_dir {
                if src.is_dir() != dst.is_dir() {
                    let me = self.me()?;
                    let (gain, lose) = if src.is_dir() {
                        (nd.clone(), me)
                    } else {
                        (me, nd.clone())
                    };
                    lock(&gain.meta).nlink += 1;
                    lock(&lose.meta).nlink -= 1;
                }
                if src.is_dir() {
                    *lock(&src.parent) = Arc::downgrade(&nd);
                }
                if dst.is_dir() {
                    *lock(&dst.parent) = self.me.clone();
                }
            }
            lock(self.entries()?).insert(old_name.to_vec(), dst.clone());
            lock(nd.entries()?).insert(new_name.to_vec(), src.clone());
            let t = now();
            lock(&src.meta).ctime = t;
            lock(&dst.meta).ctime = t;
            self.touch_dir();
            nd.touch_dir();
            return Ok(());
        }
        if let Some(d) = &dst {
            if flags & NOREPLACE != 0 {
                return Err(Errno::EEXIST);
            }
            if Arc::ptr_eq(d, &src) {
                // Two names of one inode: rename does nothing (Linux `vfs_rename`).
                return Ok(());
            }
            match (src.is_dir(), d.is_dir()) {
                (true, false) => return Err(Errno::ENOTDIR),
                (false, true) => return Err(Errno::EISDIR),
                (true, true) if !lock(d.entries()?).is_empty() => {
                    return Err(Errno::ENOTEMPTY);
                }
                _ => {}
            }
        }
        if src.is_dir() && src.is_ancestor_of(&nd) {
            return Err(Errno::EINVAL);
        }
        if let Some(d) = &dst {
            if d.is_ancestor_of(self) {
                // The target is an ancestor of the source (fs/namei.c: ENOTEMPTY).
                return Err(Errno::ENOTEMPTY);
            }
        }
        lock(self.entries()?).remove(old_name);
        let old = lock(nd.entries()?).insert(new_name.to_vec(), src.clone());
        if let Some(d) = old {
            let mut m = lock(&d.meta);
            if d.is_dir() {
                m.nlink = 0;
                drop(m);
                lock(&nd.meta).nlink -= 1;
            } else {
                m.nlink = m.nlink.saturating_sub(1);
                m.ctime = now();
            }
        }
        if src.is_dir() && !same_dir {
            lock(&self.meta).nlink -= 1;
            lock(&nd.meta).nlink += 1;
            *lock(&src.parent) = Arc::downgrade(&nd);
        }
        lock(&src.meta).ctime = now();
        self.touch_dir();
        if !same_dir {
            nd.touch_dir();
        }
        Ok(())
    }

    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        if let Some(size) = attr.size {
            self.truncate(size)?;
        }
        let t = now();
        let mut m = lock(&self.meta);
        if let Some(mode) = attr.mode {
            m.mode = (m.mode & mode::S_IFMT) | (mode & 0o7777);
        }
        if let Some(uid) = attr.uid {
            m.uid = uid;
        }
        if let Some(gid) = attr.gid {
            m.gid = gid;
        }
        let pick = |s: TimeSet| match s {
            TimeSet::Now => t,
            TimeSet::At(a, b) => (a, b),
        };
        if let Some(a) = attr.atime {
            m.atime = pick(a);
        }
        if let Some(x) = attr.mtime {
            m.mtime = pick(x);
        }
        m.ctime = t;
        Ok(())
    }

    fn fs_id(&self) -> u64 {
        self.fs.id
    }

    fn statfs(&self) -> SysResult<Statfs> {
        // shmem_statfs: with size=, the instance's blocks and what is left of them; without,
        // a notional 1 GiB less what is used (Linux reports zeros for an unlimited tmpfs,
        // which confuses df).
        let pg = um_mm::page_size();
        let b = &self.fs.blocks;
        let blocks = if b.limit() == u64::MAX {
            (1u64 << 30) / pg
        } else {
            b.limit()
        };
        let free = blocks.saturating_sub(b.used());
        Ok(Statfs {
            fs_type: TMPFS_MAGIC,
            bsize: pg as i64,
            blocks,
            bfree: free,
            bavail: free,
            files: 1 << 20,
            ffree: (1u64 << 20).saturating_sub(self.fs.next_ino.load(Ordering::Relaxed)),
            fsid: self.fs.id,
            namelen: 255,
            frsize: um_mm::page_size() as i64,
            flags: 0,
        })
    }

    /// `shmem_fallocate`: mode 0 and `FALLOC_FL_KEEP_SIZE` allocate the range's pages (all or
    /// nothing: `ENOSPC` leaves nothing allocated), mode 0 then grows the size; `PUNCH_HOLE |
    /// KEEP_SIZE` frees the whole pages in the range and zeroes the partial ones. Other modes
    /// are `EOPNOTSUPP`, as in shmem.
    fn fallocate(&self, mode: u32, offset: u64, len: u64) -> Option<SysResult<()>> {
        let data = match self.data() {
            Ok(d) => d,
            Err(e) => return Some(Err(e)),
        };
        let end = match offset.checked_add(len) {
            Some(e) if e <= MAX_FILE => e,
            _ => return Some(Err(Errno::EFBIG)),
        };
        let grew = match mode {
            0 | FALLOC_FL_KEEP_SIZE => {
                let mut d = lock(data);
                if let Err(e) = d.reserve(offset, len) {
                    return Some(Err(e));
                }
                let grow = mode == 0 && end > d.size();
                if grow {
                    d.extend(end);
                }
                grow
            }
            m if m == FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE => {
                punch_range(data, self.vm_id(), offset, len);
                true
            }
            _ => return Some(Err(Errno::EOPNOTSUPP)),
        };
        let t = now();
        let mut m = lock(&self.meta);
        m.ctime = t;
        if grew {
            m.mtime = t;
        }
        Some(Ok(()))
    }
}

/// An open tmpfs directory.
struct TmpDirFile {
    inode: Arc<TmpInode>,
}

impl FileOps for TmpDirFile {
    fn stat(&self) -> SysResult<Kstat> {
        self.inode.stat()
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        let parent = lock(&self.inode.parent)
            .upgrade()
            .map_or(self.inode.ino, |p| p.ino);
        let mut out = vec![
            DirEntry {
                ino: self.inode.ino,
                kind: 4,
                name: b".".to_vec(),
            },
            DirEntry {
                ino: parent,
                kind: 4,
                name: b"..".to_vec(),
            },
        ];
        for (name, i) in lock(self.inode.entries()?).iter() {
            out.push(DirEntry {
                ino: i.ino,
                kind: dt(lock(&i.meta).mode),
                name: name.clone(),
            });
        }
        Ok(out)
    }
}

/// An open tmpfs regular file.
struct TmpFile {
    inode: Arc<TmpInode>,
}

impl FileOps for TmpFile {
    /// A regular file has no poll method (epoll_ctl refuses it with EPERM; poll and select
    /// call it always ready).
    fn can_poll(&self) -> bool {
        false
    }

    /// The file's pages, with the cached ones over them: a shared mapping's writes not yet
    /// written back are there (Linux reads the very pages mappings write).
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let n = lock(self.inode.data()?).read(off, buf);
        if let Some(c) = crate::mount::page_cache() {
            c.read_cached(self.inode.vm_id(), off, &mut buf[..n]);
        }
        Ok(n)
    }

    /// Writes allocate the pages they touch; a write that only partly fits the instance's
    /// `size=` writes what fits, then `ENOSPC`.
    fn write(&self, _io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        // generic_write_checks_count: past s_maxbytes is EFBIG, up to it the write is cut.
        if off >= MAX_FILE && !data.is_empty() {
            return Err(Errno::EFBIG);
        }
        let data = &data[..data.len().min((MAX_FILE - off.min(MAX_FILE)) as usize)];
        let n = lock(self.inode.data()?).write(off, data)?;
        // Into the cached pages too, so mappings see it (Linux writes the very pages they map).
        if let Some(c) = crate::mount::page_cache() {
            c.update(self.inode.vm_id(), off, &data[..n]);
        }
        let t = now();
        let mut m = lock(&self.inode.meta);
        m.mtime = t;
        m.ctime = t;
        Ok(n)
    }

    /// `shmem_file_llseek`: holes are the pages never written.
    fn seek_data_hole(&self, off: u64, data: bool) -> SysResult<u64> {
        lock(self.inode.data()?).seek(off, data)
    }

    fn stat(&self) -> SysResult<Kstat> {
        self.inode.stat()
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        self.inode.vm_file()
    }
}

impl TmpInode {
    /// The page-cache side of a regular file (what `mmap` maps); also for file systems built
    /// on tmpfs files that map one without opening it (hugetlbfs's `MAP_HUGETLB` files).
    pub fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        let data = self.data().ok()?.clone();
        let vm = self.vm.get_or_init(|| {
            Arc::new(TmpVm {
                data,
                id: self.vm_id(),
                name: format!("/tmpfs-inode-{}", self.ino),
            })
        });
        Some(vm.clone() as Arc<dyn VmFile>)
    }
}

/// Hole punch of `[off, off + len)` of the file `data` (page-cache id `id`), as
/// `shmem_fallocate`: the whole pages leave every mapping (private copies made on write stay),
/// the file frees them and zeroes the parts of partial pages, the cache drops the whole pages
/// and zeroes the partial ones in place, and the whole pages are unmapped again (pages faulted
/// back in meanwhile; Linux's `truncate_inode_folio` unmaps such raced folios). No lock is held
/// across the unmaps (they take `Mm` locks: see `um_mm`'s reverse map).
fn punch_range(data: &Mutex<PageMap>, id: u64, off: u64, len: u64) {
    let ps = um_mm::page_size();
    let end = off.saturating_add(len);
    let (lo, hi) = (off.div_ceil(ps), end / ps);
    let cache = crate::mount::page_cache();
    if let Some(c) = cache
        && lo < hi
    {
        c.unmap_mapping_range(id, lo, hi - 1, false);
    }
    lock(data).punch(off, len);
    let Some(c) = cache else { return };
    if lo < hi {
        c.zero_range(id, off, lo * ps);
        c.zero_range(id, hi * ps, end);
        c.drop_range(id, lo, hi - 1);
        c.unmap_mapping_range(id, lo, hi - 1, false);
    } else {
        c.zero_range(id, off, end);
    }
}

/// Truncate of the file `data` (page-cache id `id`) to `size`, as `shmem_setattr`: when it
/// shrinks, the pages wholly past the new end leave every mapping, private copies too (so an
/// access there is `SIGBUS`), before and after the file and the cache drop them; the tail of
/// the new last page is zeroed in the cache as in the file.
fn truncate_range(data: &Mutex<PageMap>, id: u64, size: u64) {
    let ps = um_mm::page_size();
    let old = lock(data).size();
    let hole = size.div_ceil(ps);
    let cache = crate::mount::page_cache();
    let unmap = old > hole * ps;
    if let Some(c) = cache
        && unmap
    {
        c.unmap_mapping_range(id, hole, u64::MAX, true);
    }
    lock(data).truncate(size);
    let Some(c) = cache else { return };
    if size <= old {
        c.zero_range(id, size, hole * ps);
        c.drop_range(id, hole, u64::MAX);
    }
    if unmap {
        c.unmap_mapping_range(id, hole, u64::MAX, true);
    }
}

/// The page-cache side of a tmpfs regular file.
pub struct TmpVm {
    data: Arc<Mutex<PageMap>>,
    id: u64,
    name: String,
}

impl VmFile for TmpVm {
    fn id(&self) -> u64 {
        self.id
    }

    fn size(&self) -> u64 {
        lock(&self.data).size()
    }

    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        Ok(lock(&self.data).read(offset, buf))
    }

    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        // Write-back of a shared mapping never extends the file: bytes past EOF are dropped;
        // a hole it covers gets its page (ENOSPC if the instance is full).
        lock(&self.data).write_back(offset, data)
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    /// `MADV_REMOVE`: a hole punch (`shmem_fallocate`).
    fn punch_hole(&self, offset: u64, len: u64) -> Result<(), Errno> {
        punch_range(&self.data, self.id, offset, len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use um_uapi::abi::fs::FS_COMPR_FL;

    fn root() -> Arc<TmpInode> {
        TmpFs::new_root_inode(0o1777, 0, 0)
    }

    fn own() -> Owner {
        Owner::default()
    }

    impl TmpInode {
        fn readdir_names(&self) -> Vec<Vec<u8>> {
            lock(self.entries().unwrap()).keys().cloned().collect()
        }
    }

    #[test]
    fn create_lookup_unlink() {
        let r = root();
        let f = r.create(b"a", 0o644, own()).unwrap();
        assert_eq!(f.stat().unwrap().mode, mode::S_IFREG | 0o644);
        assert_eq!(r.create(b"a", 0o644, own()).err(), Some(Errno::EEXIST));
        assert_eq!(r.lookup(b"a").unwrap().id(), f.id());
        assert_eq!(r.rmdir(b"a").err(), Some(Errno::ENOTDIR));
        r.unlink(b"a").unwrap();
        assert_eq!(r.lookup(b"a").err(), Some(Errno::ENOENT));
        assert_eq!(f.stat().unwrap().nlink, 0);
    }

    #[test]
    fn tmpfile_is_unnamed_until_linked_once() {
        let r = root();
        let t = r.tmpfile(0o600, own(), true).unwrap();
        let st = t.stat().unwrap();
        assert_eq!((st.mode, st.nlink), (mode::S_IFREG | 0o600, 0));
        assert!(r.readdir_names().is_empty());
        r.link(b"named", &t).unwrap();
        assert_eq!(t.stat().unwrap().nlink, 1);
        // The first link used up I_LINKABLE: once unlinked again, it stays nameless.
        r.unlink(b"named").unwrap();
        assert_eq!(r.link(b"again", &t).err(), Some(Errno::ENOENT));
        // O_EXCL: never linkable.
        let x = r.tmpfile(0o600, own(), false).unwrap();
        assert_eq!(r.link(b"x", &x).err(), Some(Errno::ENOENT));
        let f = r.create(b"f", 0o644, own()).unwrap();
        let ff = f.as_any().downcast_ref::<TmpInode>().unwrap();
        assert_eq!(ff.tmpfile(0o600, own(), true).err(), Some(Errno::ENOTDIR));
    }

    #[test]
    fn inode_flags_are_shmem_s() {
        let r = root();
        let d = r.mkdir(b"d", 0o755, own()).unwrap();
        assert_eq!(d.fsflags(), Some(0));
        // Only immutable, append-only, nodump and noatime are kept (shmem_fileattr_set).
        assert_eq!(d.set_fsflags(FS_COMPR_FL).err(), Some(Errno::EOPNOTSUPP));
        d.set_fsflags(FS_NODUMP_FL | FS_APPEND_FL).unwrap();
        assert_eq!(d.fsflags(), Some(FS_NODUMP_FL | FS_APPEND_FL));
        // New inodes inherit nodump and noatime only (SHMEM_FL_INHERITED).
        let dd = d.as_any().downcast_ref::<TmpInode>().unwrap().me().unwrap();
        let f = dd.create(b"f", 0o644, own()).unwrap();
        assert_eq!(f.fsflags(), Some(FS_NODUMP_FL));
        assert_eq!(
            f.statx_attributes_mask(),
            STATX_ATTR_APPEND | STATX_ATTR_IMMUTABLE | STATX_ATTR_NODUMP
        );
    }

    #[test]
    fn dirs_links_and_nlink() {
        let r = root();
        let d = r.mkdir(b"d", 0o755, own()).unwrap();
        assert_eq!(r.stat().unwrap().nlink, 3);
        assert_eq!(d.stat().unwrap().nlink, 2);
        let dd = d.as_any().downcast_ref::<TmpInode>().unwrap().me().unwrap();
        let f = dd.create(b"f", 0o600, own()).unwrap();
        assert_eq!(r.rmdir(b"d").err(), Some(Errno::ENOTEMPTY));
        r.link(b"g", &f).unwrap();
        assert_eq!(f.stat().unwrap().nlink, 2);
        assert_eq!(r.link(b"h", &d).err(), Some(Errno::EPERM));
        dd.unlink(b"f").unwrap();
        r.rmdir(b"d").unwrap();
        assert_eq!(r.stat().unwrap().nlink, 2);
    }

    #[test]
    fn rename_rules() {
        let r = root();
        let rd: Arc<dyn Inode> = r.clone();
        let a = r.mkdir(b"a", 0o755, own()).unwrap();
        let a_t = a.as_any().downcast_ref::<TmpInode>().unwrap().me().unwrap();
        let b = a_t.mkdir(b"b", 0o755, own()).unwrap();
        // A directory cannot move below itself.
        assert_eq!(r.rename(b"a", &b, b"x", 0).err(), Some(Errno::EINVAL));
        r.create(b"f", 0o644, own()).unwrap();
        assert_eq!(r.rename(b"f", &rd, b"a", 0).err(), Some(Errno::EISDIR));
        assert_eq!(r.rename(b"a", &rd, b"f", 0).err(), Some(Errno::ENOTDIR));
        r.create(b"g", 0o644, own()).unwrap();
        assert_eq!(r.rename(b"f", &rd, b"g", 1).err(), Some(Errno::EEXIST));
        assert_eq!(r.rename(b"f", &rd, b"g", 4).err(), Some(Errno::EINVAL));
        r.rename(b"f", &rd, b"g", 0).unwrap();
        assert_eq!(r.lookup(b"f").err(), Some(Errno::ENOENT));
        // Moving a directory between parents moves its `..` link count.
        a_t.create(b"x", 0o644, own()).unwrap();
        let ad: Arc<dyn Inode> = a_t.clone();
        r.rename(b"g", &ad, b"y", 0).unwrap();
        let bt = b.as_any().downcast_ref::<TmpInode>().unwrap().me().unwrap();
        a_t.rename(b"b", &rd, b"b2", 0).unwrap();
        assert_eq!(r.stat().unwrap().nlink, 4);
        assert_eq!(a_t.stat().unwrap().nlink, 2);
        assert_eq!(lock(&bt.parent).upgrade().unwrap().ino, r.ino);
        // Exchange swaps the two names.
        a_t.rename(b"x", &ad, b"y", 2).unwrap();
    }

    #[test]
    fn data_truncate_and_times() {
        let r = root();
        let f = r.create(b"f", 0o644, own()).unwrap();
        let ft = f.as_any().downcast_ref::<TmpInode>().unwrap().me().unwrap();
        let file = TmpFile { inode: ft };
        let vm = file.vm_file().unwrap();
        lock(file.inode.data().unwrap()).write(0, b"hello").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(vm.read_page(0, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"hello");
        f.setattr(&SetAttr {
            size: Some(2),
            mtime: Some(TimeSet::At(5, 6)),
            mode: Some(0o4755),
            ..Default::default()
        })
        .unwrap();
        let st = f.stat().unwrap();
        assert_eq!(
            (st.size, st.mtime, st.mode),
            (2, (5, 6), mode::S_IFREG | 0o4755)
        );
        vm.write_page(0, b"HEL").unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(lock(file.inode.data().unwrap()).read(0, &mut buf), 2);
        assert_eq!(&buf[..2], b"HE");
    }

    #[test]
    fn options() {
        let pg = um_mm::page_size();
        // A guest of 1000 pages: the default and percentages are of those.
        let ram = 1000;
        let o = parse_options(b"mode=755,size=10m", 0o1777, ram).unwrap();
        assert_eq!(
            (o.mode, o.uid, o.gid, o.limit),
            (0o755, 0, 0, (10 << 20) / pg)
        );
        let o = parse_options(b"", 0o1777, ram).unwrap();
        assert_eq!((o.mode, o.limit), (0o1777, 500));
        assert!(parse_options(b"bogus", 0o1777, ram).is_err());
        // size=0 lifts the limit; a percentage is of RAM; sizes round up to pages.
        assert_eq!(parse_options(b"size=0", 0, ram).unwrap().limit, u64::MAX);
        assert_eq!(parse_options(b"size=50%", 0, ram).unwrap().limit, 500);
        assert_eq!(parse_options(b"size=10%", 0, ram).unwrap().limit, 100);
        assert!(parse_options(b"size=x%", 0, ram).is_err());
        assert_eq!(parse_options(b"size=1", 0, ram).unwrap().limit, 1);
        assert_eq!(
            parse_options(b"size=32M", 0, ram).unwrap().limit,
            (32 << 20) / pg
        );
        assert_eq!(parse_options(b"nr_blocks=3", 0, ram).unwrap().limit, 3);
        assert_eq!(parse_options(b"nr_blocks=1k", 0, ram).unwrap().limit, 1024);
        assert_eq!(
            parse_options(b"nr_blocks=0", 0, ram).unwrap().limit,
            u64::MAX
        );
        assert!(parse_options(b"size=12q", 0, ram).is_err());
        assert!(parse_options(b"size=99999999999e", 0, ram).is_err());
        // A tiny guest still gets a page.
        assert_eq!(parse_options(b"", 0, 1).unwrap().limit, 1);
    }

    fn file_of(f: &Arc<dyn Inode>) -> TmpFile {
        let inode = f.as_any().downcast_ref::<TmpInode>().unwrap().me().unwrap();
        TmpFile { inode }
    }

    #[test]
    fn size_limit_counts_pages_not_lengths() {
        let pg = um_mm::page_size();
        let root = TmpFs::new_root(format!("size={}", 4 * pg).as_bytes(), 1000).unwrap();
        let f = root.create(b"f", 0o644, own()).unwrap();
        let size = |n: u64| SetAttr {
            size: Some(n),
            ..Default::default()
        };
        // Growing by truncate is a hole: free, and far past the limit.
        f.setattr(&size(1 << 32)).unwrap();
        let st = root.statfs().unwrap();
        assert_eq!((st.blocks, st.bfree), (4, 4));
        assert_eq!(f.stat().unwrap().blocks, 0);
        // Writes are charged per page; one that only partly fits writes what fits.
        // (Through the file's data: `TmpFile::write` adds only times and invalidation.)
        let file = file_of(&f);
        let w = |data: &[u8], off: u64| lock(file.inode.data().unwrap()).write(off, data);
        assert_eq!(w(&vec![1u8; 3 * pg as usize], 10 * pg), Ok(3 * pg as usize));
        assert_eq!(w(&vec![1u8; 2 * pg as usize], 20 * pg), Ok(pg as usize));
        assert_eq!(w(b"x", 30 * pg), Err(Errno::ENOSPC));
        assert_eq!(root.statfs().unwrap().bfree, 0);
        assert_eq!(f.stat().unwrap().blocks as u64, 4 * pg / 512);
        // fallocate: ENOSPC allocates nothing; punching frees whole pages.
        assert_eq!(f.fallocate(0, 0, pg), Some(Err(Errno::ENOSPC)));
        assert_eq!(f.fallocate(3, 10 * pg + 1, 2 * pg), Some(Ok(())));
        assert_eq!(root.statfs().unwrap().bfree, 1);
        assert_eq!(f.fallocate(1, 0, 1), Some(Ok(())));
        assert_eq!(f.fallocate(8, 0, 1), Some(Err(Errno::EOPNOTSUPP)));
        assert_eq!(f.stat().unwrap().size, 1 << 32, "KEEP_SIZE keeps the size");
        assert_eq!(file.seek_data_hole(0, true), Ok(10 * pg));
        assert_eq!(
            file.seek_data_hole(10 * pg, false),
            Ok(11 * pg),
            "page 10 zeroed in part"
        );
        // Truncate gives pages back, and so does the last reference of an unlinked file.
        f.setattr(&size(10 * pg)).unwrap();
        assert_eq!(root.statfs().unwrap().bfree, 3);
        root.unlink(b"f").unwrap();
        assert_eq!(root.statfs().unwrap().bfree, 3);
        drop(file);
        drop(f);
        assert_eq!(root.statfs().unwrap().bfree, 4);
    }

    #[test]
    fn fallocate_grows_without_keep_size() {
        let pg = um_mm::page_size();
        let r = root();
        let f = r.create(b"f", 0o644, own()).unwrap();
        assert_eq!(f.fallocate(0, pg, 2 * pg), Some(Ok(())));
        let st = f.stat().unwrap();
        assert_eq!((st.size as u64, st.blocks as u64), (3 * pg, 2 * pg / 512));
        // Reserved pages read as zeros and are holes.
        let file = file_of(&f);
        assert_eq!(file.seek_data_hole(0, true), Err(Errno::ENXIO));
        assert_eq!(file.seek_data_hole(pg, false), Ok(pg));
        let mut buf = [9u8; 8];
        assert_eq!(lock(file.inode.data().unwrap()).read(pg, &mut buf), 8);
        assert_eq!(buf, [0; 8]);
        assert_eq!(
            f.fallocate(0, MAX_FILE, 1),
            Some(Err(Errno::EFBIG)),
            "past MAX_LFS_FILESIZE"
        );
    }
}
