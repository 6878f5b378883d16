//! tmpfs: a file system in kernel memory (Linux `mm/shmem.c`, without swap).
//!
//! Key types: [`TmpFs`] (one instance: its id, inode numbers, the namespace lock), [`TmpInode`]
//! (directory entries in a `BTreeMap`, file data in a `Vec<u8>`, a symlink's target, or
//! nothing for FIFOs, sockets and device nodes). Regular files are mappable: [`TmpVm`] is their
//! [`VmFile`], so the page cache serves `mmap`; `write(2)` and truncate invalidate the file's
//! cached pages, and the page cache writes dirty shared pages back through `write_page`.
//! Every change to the tree takes the instance's namespace lock, so a rename between two
//! directories sees both consistently; lookups take only the directory's own lock.
//!
//! Opening a FIFO opens the kernel pipe keyed by the inode ([`crate::mount::open_fifo`]), a
//! character device the driver registered for its number ([`um_kernel::vfs::open_chrdev`]).
//! Neighbours: `devfs` (devtmpfs is a tmpfs), `mount` (instances are made by `mount -t tmpfs`).

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
use um_uapi::{Errno, SysResult};

/// `TMPFS_MAGIC`.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
/// Largest tmpfs file (`MAX_LFS_FILESIZE` would be larger; data lives in one `Vec`).
const MAX_FILE: u64 = 1 << 40;

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
}

impl TmpFs {
    /// A new instance; returns its root directory. `data` is the mount option string
    /// (`mode=`, `uid=`, `gid=` are used; `size=`, `nr_inodes=` accepted and ignored).
    pub fn new_root(_name: &str, _dev_only: bool, data: &[u8]) -> SysResult<Arc<dyn Inode>> {
        let (mode, uid, gid) = parse_options(data, 0o1777)?;
        Ok(Self::new_root_inode(mode, uid, gid))
    }

    /// A new instance with a root of permission bits `mode`, as a [`TmpInode`].
    pub fn new_root_inode(mode: u32, uid: u32, gid: u32) -> Arc<TmpInode> {
        static ANON: AtomicU64 = AtomicU64::new(32);
        let fs = Arc::new(TmpFs {
            id: vfs::new_fs_id(),
            dev: vfs::encode_dev(0, ANON.fetch_add(1, Ordering::Relaxed) as u32),
            next_ino: AtomicU64::new(1),
            ns: Mutex::new(()),
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

/// Parses `mode=`, `uid=`, `gid=` from a tmpfs option string (`shmem_parse_one`).
fn parse_options(data: &[u8], default_mode: u32) -> SysResult<(u32, u32, u32)> {
    let (mut m, mut uid, mut gid) = (default_mode, 0, 0);
    let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    for opt in text
        .trim_end_matches('\0')
        .split(',')
        .filter(|o| !o.is_empty())
    {
        let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
        match k {
            "mode" => m = u32::from_str_radix(v, 8).map_err(|_| Errno::EINVAL)? & 0o7777,
            "uid" => uid = v.parse().map_err(|_| Errno::EINVAL)?,
            "gid" => gid = v.parse().map_err(|_| Errno::EINVAL)?,
            "size" | "nr_blocks" | "nr_inodes" | "mpol" | "huge" | "inode32" | "inode64"
            | "noswap" | "quota" | "usrquota" | "grpquota" => {}
            // Generic options the mount syscall passes through in the data string.
            "rw" | "ro" | "nosuid" | "nodev" | "noexec" | "relatime" | "noatime" | "defaults" => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok((m, uid, gid))
}

enum Body {
    Dir(Mutex<BTreeMap<Vec<u8>, Arc<TmpInode>>>),
    File(Arc<Mutex<Vec<u8>>>),
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
}

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

    fn invalidate(&self) {
        if let Some(c) = crate::mount::page_cache() {
            c.invalidate(self.vm_id());
        }
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
        let child = TmpInode::new(&self.fs, mode, owner, rdev, body);
        if child.is_dir() {
            lock(&child.meta).nlink = 2;
        }
        self.insert(name, child)
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

    fn data(&self) -> SysResult<&Arc<Mutex<Vec<u8>>>> {
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
        lock(self.data()?).resize(size as usize, 0);
        self.invalidate();
        let t = now();
        let mut m = lock(&self.meta);
        m.mtime = t;
        m.ctime = t;
        Ok(())
    }
}

impl Inode for TmpInode {
    fn stat(&self) -> SysResult<Kstat> {
        let size = match &self.body {
            Body::File(d) => lock(d).len() as i64,
            Body::Symlink(t) => t.len() as i64,
            Body::Dir(_) => 4096,
            Body::Special => 0,
        };
        let m = lock(&self.meta);
        let page = um_mm::page_size();
        Ok(Kstat {
            dev: self.fs.dev,
            ino: self.ino,
            mode: m.mode,
            nlink: m.nlink,
            uid: m.uid,
            gid: m.gid,
            rdev: m.rdev,
            size,
            // shmem: whole pages (PAGE_SIZE), counted in 512-byte units.
            blksize: page as i64,
            blocks: (size as u64).div_ceil(page) as i64 * (page / 512) as i64,
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
        let body = Body::File(Arc::new(Mutex::new(Vec::new())));
        self.make(name, mode::S_IFREG | (mode & 0o7777), owner, 0, body)
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
            if m.nlink == 0 {
                // Linux vfs_link: an unlinked file cannot get a name again (unless O_TMPFILE).
                return Err(Errno::ENOENT);
            }
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
        // No size limit is kept: report half of a notional 1 GiB free, like an unlimited tmpfs
        // (`size=0` reports zeros, which confuses df; this keeps it readable).
        let blocks = 262_144;
        Ok(Statfs {
            fs_type: TMPFS_MAGIC,
            bsize: um_mm::page_size() as i64,
            blocks,
            bfree: blocks,
            bavail: blocks,
            files: 1 << 20,
            ffree: (1u64 << 20).saturating_sub(self.fs.next_ino.load(Ordering::Relaxed)),
            fsid: self.fs.id,
            namelen: 255,
            frsize: um_mm::page_size() as i64,
            flags: 0,
        })
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

    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let d = lock(self.inode.data()?);
        let Ok(off) = usize::try_from(off) else {
            return Ok(0);
        };
        if off >= d.len() {
            return Ok(0);
        }
        let n = buf.len().min(d.len() - off);
        buf[..n].copy_from_slice(&d[off..off + n]);
        Ok(n)
    }

    fn write(&self, _io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        let end = off.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        if end > MAX_FILE {
            return Err(Errno::EFBIG);
        }
        {
            let mut d = lock(self.inode.data()?);
            if d.len() < end as usize {
                d.resize(end as usize, 0);
            }
            d[off as usize..end as usize].copy_from_slice(data);
        }
        self.inode.invalidate();
        let t = now();
        let mut m = lock(&self.inode.meta);
        m.mtime = t;
        m.ctime = t;
        Ok(data.len())
    }

    fn stat(&self) -> SysResult<Kstat> {
        self.inode.stat()
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        let data = self.inode.data().ok()?.clone();
        let ino = &self.inode;
        let vm = ino.vm.get_or_init(|| {
            Arc::new(TmpVm {
                data,
                id: ino.vm_id(),
                name: format!("/tmpfs-inode-{}", ino.ino),
            })
        });
        Some(vm.clone() as Arc<dyn VmFile>)
    }
}

/// The page-cache side of a tmpfs regular file.
pub struct TmpVm {
    data: Arc<Mutex<Vec<u8>>>,
    id: u64,
    name: String,
}

impl VmFile for TmpVm {
    fn id(&self) -> u64 {
        self.id
    }

    fn size(&self) -> u64 {
        lock(&self.data).len() as u64
    }

    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let d = lock(&self.data);
        let Ok(off) = usize::try_from(offset) else {
            return Ok(0);
        };
        if off >= d.len() {
            return Ok(0);
        }
        let n = buf.len().min(d.len() - off);
        buf[..n].copy_from_slice(&d[off..off + n]);
        Ok(n)
    }

    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        // Write-back of a shared mapping never extends the file: bytes past EOF are dropped.
        let mut d = lock(&self.data);
        let Ok(off) = usize::try_from(offset) else {
            return Ok(());
        };
        if off >= d.len() {
            return Ok(());
        }
        let n = data.len().min(d.len() - off);
        d[off..off + n].copy_from_slice(&data[..n]);
        Ok(())
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Arc<TmpInode> {
        TmpFs::new_root_inode(0o1777, 0, 0)
    }

    fn own() -> Owner {
        Owner::default()
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
        lock(file.inode.data().unwrap()).extend_from_slice(b"hello");
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
        assert_eq!(&lock(file.inode.data().unwrap())[..], b"HE");
    }

    #[test]
    fn options() {
        assert_eq!(
            parse_options(b"mode=755,size=10m", 0o1777).unwrap(),
            (0o755, 0, 0)
        );
        assert_eq!(parse_options(b"", 0o1777).unwrap(), (0o1777, 0, 0));
        assert!(parse_options(b"bogus", 0o1777).is_err());
    }
}
