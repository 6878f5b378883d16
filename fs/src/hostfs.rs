//! hostfs: a host directory as the guest's file system (Linux `fs/hostfs`).
//!
//! Confinement: a directory inode holds an `O_PATH` fd of its host directory; every lookup is
//! one `openat`/`fstatat` of a single component relative to such an fd, with `O_NOFOLLOW`.
//! The VFS handles `..` (through the dentry's parent) and symlinks (by reading them and walking
//! the target itself, inside the guest's root), so no host path outside the root is ever
//! reached. Host device nodes, sockets and fifos are never opened on the host: a guest that
//! could open them would reach outside its root. A FIFO opens the kernel's own pipe keyed by
//! the inode ([`crate::mount::inode_key`]), a character or block device node opens the
//! kernel's driver for its number ([`um_kernel::vfs::open_chrdev`], `open_blkdev`).
//!
//! Writes (create, mkdir, mknod, symlink, link, unlink, rmdir, rename, chmod, chown,
//! truncate, utimes) go through [`um_os_linux::hostdir`], whose calls take one component
//! relative to a directory fd and never follow a symlink. Files are written as the host user;
//! the owner, group, mode and node type the guest sees are [`crate::hostfs_meta`]'s metadata
//! (a user xattr, or the sidecar at the root, whose names are hidden here): chown and chmod
//! record there and never change the host owner, new files get the creator's ids
//! ([`hostfs_meta::init_owner`]), and mknod of a device, FIFO or socket makes an empty regular
//! host file that says what it is. The guest's extended attributes are host xattrs of ours
//! ([`crate::hostfs_xattr`]), or sidecar entries where the host takes none.
//!
//! Lookups and attributes are cached ([`crate::hostfs_cache`]): a walk through names this
//! kernel has seen recently makes no host call, and an open of a file makes one (`openat`).
//! Every operation here that changes a name or an attribute on the host drops what it affects
//! from the cache before it returns; changes made on the host by others are seen at most
//! [`crate::hostfs_cache::TTL`] late.

use crate::hostfs_cache::{self, Cache, HostId};
use crate::hostfs_meta::{self, Meta, MetaStore, host_mode, init_owner, reserved};
use crate::hostfs_xattr;
use std::any::Any;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Instant;
use um_kernel::task::lock;
use um_kernel::vfs::{
    self, DirEntry, FileOps, Inode, Kstat, Owner, SetAttr, Statfs, TimeSet, mode,
};
use um_kernel::wait::IoCtx;
use um_mm::{PageCache, VmFile};
use um_os_linux::host::{self, HostStat};
use um_os_linux::hostdir;
use um_os_linux::xattr::XattrLoc;
use um_uapi::{Errno, SysResult};

/// Converts a host error into the errno the guest sees.
pub fn host_errno(e: std::io::Error) -> Errno {
    e.raw_os_error().and_then(Errno::new).unwrap_or(Errno::EIO)
}

fn kstat(s: &HostStat) -> Kstat {
    Kstat {
        dev: s.dev,
        ino: s.ino,
        mode: s.mode,
        nlink: s.nlink,
        uid: s.uid,
        gid: s.gid,
        rdev: s.rdev,
        size: s.size,
        blksize: s.blksize,
        blocks: s.blocks,
        atime: s.atime,
        mtime: s.mtime,
        ctime: s.ctime,
    }
}

/// A mounted hostfs.
pub struct HostFs {
    /// Whether the mount is read-only (`ro`).
    readonly: AtomicBool,
    /// The page cache, kept coherent with writes through file descriptors.
    cache: Arc<PageCache>,
    /// [`Inode::fs_id`] of this instance.
    id: u64,
    /// Guest owners, groups, modes and node types.
    meta: MetaStore,
    /// Host inode and device of the root directory (where the metadata store's names are
    /// hidden).
    root_ino: u64,
    root_dev: u64,
    /// Lookups and host attributes ([`crate::hostfs_cache`]).
    names: Mutex<Cache>,
}

impl HostFs {
    fn cache(&self) -> MutexGuard<'_, Cache> {
        lock(&self.names)
    }

    /// The attributes of host inode `id` changed through this kernel.
    fn forget_attrs(&self, id: HostId) {
        self.cache().forget_attrs(id);
    }

    /// Host inode `id` may have lost its last name, or its permissions changed: its
    /// attributes and its spare fd go ([`Cache::forget_inode`]).
    fn forget_inode(&self, id: HostId) {
        self.cache().forget_inode(id);
    }
}

enum Kind {
    /// A directory: its own O_PATH fd (shared with the lookup cache).
    Dir(Arc<OwnedFd>),
    /// Anything else: reached through its parent directory and name.
    Other {
        parent: Arc<HostInode>,
        name: Vec<u8>,
    },
}

/// A hostfs inode.
pub struct HostInode {
    fs: Arc<HostFs>,
    kind: Kind,
    ino: u64,
    dev: u64,
    me: Weak<HostInode>,
    vm: OnceLock<Arc<HostVmFile>>,
    /// The read-write fd `create` opened, handed to the first `open` (so a new file created
    /// with mode 0444 can still be written through the descriptor that created it).
    created: Mutex<Option<OwnedFd>>,
}

impl HostInode {
    /// The root inode of a hostfs at `path`.
    pub fn new_root(
        path: &std::path::Path,
        readonly: bool,
        cache: Arc<PageCache>,
    ) -> std::io::Result<Arc<HostInode>> {
        let fd = host::open_root(path)?;
        let st = host::fstatat(fd.as_fd(), b"")?;
        let meta_root = host::openat(fd.as_fd(), b".", libc::O_PATH | libc::O_DIRECTORY, 0)?;
        let meta = MetaStore::new(meta_root, st.dev, readonly, &path.display().to_string());
        let fs = Arc::new(HostFs {
            readonly: AtomicBool::new(readonly),
            cache,
            id: vfs::new_fs_id(),
            meta,
            root_ino: st.ino,
            root_dev: st.dev,
            names: Mutex::default(),
        });
        Ok(Arc::new_cyclic(|me| HostInode {
            fs,
            kind: Kind::Dir(Arc::new(fd)),
            ino: st.ino,
            dev: st.dev,
            me: me.clone(),
            vm: OnceLock::new(),
            created: Mutex::new(None),
        }))
    }

    /// Whether this hostfs is mounted read-only.
    pub fn readonly(&self) -> bool {
        self.fs.readonly.load(Ordering::Relaxed)
    }

    /// Changes the read-only flag (`mount -o remount,ro|rw`).
    pub fn set_readonly(&self, ro: bool) {
        self.fs.readonly.store(ro, Ordering::Relaxed);
    }

    fn check_writable(&self) -> SysResult<()> {
        if self.readonly() {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    /// Whether this is the root directory of its hostfs.
    fn is_root(&self) -> bool {
        matches!(self.kind, Kind::Dir(_))
            && self.ino == self.fs.root_ino
            && self.dev == self.fs.root_dev
    }

    /// Whether `name` in this directory is one of the metadata store's own files, which the
    /// guest never sees.
    fn hidden(&self, name: &[u8]) -> bool {
        reserved(name) && self.is_root()
    }

    /// A new name here: EPERM for the metadata store's names.
    fn check_new_name(&self, name: &[u8]) -> SysResult<()> {
        if self.hidden(name) {
            Err(Errno::EPERM)
        } else {
            Ok(())
        }
    }

    /// Where this inode's metadata xattr lives.
    fn loc(&self) -> SysResult<XattrLoc<'_>> {
        match &self.kind {
            Kind::Dir(fd) => Ok(XattrLoc::At(fd.as_fd(), b"")),
            Kind::Other { parent, name } => Ok(XattrLoc::At(parent.dir_fd()?, name)),
        }
    }

    /// The host's stat, the guest's view of it, and the stored metadata behind that view.
    fn guest_stat(&self) -> SysResult<(HostStat, Kstat, Option<Meta>)> {
        let hs = self.cached_host_stat()?;
        let meta = self.fs.meta.get(self.loc()?, &hs);
        let mut st = kstat(&hs);
        if let Some(m) = &meta {
            m.apply(&mut st);
        }
        Ok((hs, st, meta))
    }

    /// Records the metadata of the new entry `name` of this directory; if that fails the
    /// entry is removed again, so no file appears with the host's owner instead.
    fn record_new(&self, name: &[u8], loc: XattrLoc<'_>, hs: &HostStat, m: Meta) -> SysResult<()> {
        self.fs.meta.set(loc, hs, m).inspect_err(|_| {
            let dir = hs.mode & mode::S_IFMT == mode::S_IFDIR;
            if let Ok(d) = self.dir_fd() {
                let _ = hostdir::unlinkat(d, name, dir);
            }
        })
    }

    /// Makes a new regular host file `name` for guest metadata `m` (a regular file, or an
    /// emulated node); returns its read-write fd.
    fn create_host_file(&self, name: &[u8], m: Meta) -> SysResult<OwnedFd> {
        let r = host::openat(
            self.dir_fd()?,
            name,
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            host_mode(m.perm, false),
        );
        self.forget_name(name);
        let fd = r.map_err(host_errno)?;
        let hs = host::fstatat(fd.as_fd(), b"").map_err(host_errno)?;
        self.record_new(name, XattrLoc::Fd(fd.as_fd()), &hs, m)?;
        Ok(fd)
    }

    /// Changes the host mode to [`host_mode`] of the guest's (never the host owner). A host
    /// that refuses (a file of another host user) leaves it: the guest's mode is the metadata.
    fn chmod_host(&self, hs: &HostStat, perm: u32) -> SysResult<()> {
        let fmt = hs.mode & mode::S_IFMT;
        let want = host_mode(perm, fmt == mode::S_IFDIR);
        if hs.mode & 0o7777 == want {
            return Ok(());
        }
        let r = match &self.kind {
            Kind::Dir(fd) => hostdir::chmod_fd(fd.as_fd(), want),
            Kind::Other { parent, name } => {
                let fd =
                    host::openat(parent.dir_fd()?, name, libc::O_PATH, 0).map_err(host_errno)?;
                hostdir::chmod_fd(fd.as_fd(), want)
            }
        };
        match r {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                log::debug!("hostfs: host mode of {} not changed: {e}", self.path_name());
                Ok(())
            }
            r => r.map_err(host_errno),
        }
    }

    /// This inode's host identity, the key of its attributes (and, for a directory, of its
    /// names) in the cache.
    fn hid(&self) -> HostId {
        (self.dev, self.ino)
    }

    /// `name` in this directory was created, removed or renamed through this kernel: its
    /// cached lookup goes, and so do this directory's attributes (times, link count).
    fn forget_name(&self, name: &[u8]) {
        let mut c = self.fs.cache();
        c.forget_name(self.hid(), name);
        c.forget_attrs(self.hid());
    }

    /// The host's stat of this inode through the cache (fresh for [`hostfs_cache::TTL`]).
    fn cached_host_stat(&self) -> SysResult<HostStat> {
        let now = Instant::now();
        let generation = {
            let c = self.fs.cache();
            if let Some(st) = c.attrs(self.hid(), now) {
                return Ok(st);
            }
            c.generation()
        };
        let st = self.host_stat()?;
        if (st.dev, st.ino) == self.hid() {
            self.fs.cache().fill_attrs(&st, generation, now);
        }
        Ok(st)
    }

    /// A child inode after a lookup of `name` in this directory: from the cache, else one
    /// host `fstatat` (and an `O_PATH` open for a directory), whose answer is cached.
    fn child(&self, name: &[u8]) -> SysResult<Arc<HostInode>> {
        let dir = self.dir_fd()?;
        let now = Instant::now();
        let cached = {
            let c = self.fs.cache();
            c.lookup(self.hid(), name, now).ok_or(c.generation())
        };
        let (id, dirfd) = match cached {
            Ok(hostfs_cache::Dentry::Positive { id, dir }) => (id, dir),
            Ok(hostfs_cache::Dentry::Negative) => return Err(Errno::ENOENT),
            Err(generation) => {
                let st = match host::fstatat(dir, name) {
                    Ok(st) => st,
                    Err(e) => {
                        let e = host_errno(e);
                        if e == Errno::ENOENT {
                            let neg = hostfs_cache::Dentry::Negative;
                            self.fs.cache().fill(self.hid(), name, neg, generation, now);
                        }
                        return Err(e);
                    }
                };
                let dirfd = if st.mode & mode::S_IFMT == mode::S_IFDIR {
                    let fd = host::openat(dir, name, libc::O_PATH | libc::O_DIRECTORY, 0)
                        .map_err(host_errno)?;
                    Some(Arc::new(fd))
                } else {
                    None
                };
                let id = (st.dev, st.ino);
                let pos = hostfs_cache::Dentry::Positive {
                    id,
                    dir: dirfd.clone(),
                };
                let mut c = self.fs.cache();
                c.fill(self.hid(), name, pos, generation, now);
                c.fill_attrs(&st, generation, now);
                (id, dirfd)
            }
        };
        let kind = match dirfd {
            Some(fd) => Kind::Dir(fd),
            None => Kind::Other {
                parent: self.me.upgrade().ok_or(Errno::ENOENT)?,
                name: name.to_vec(),
            },
        };
        Ok(Arc::new_cyclic(|me| HostInode {
            fs: self.fs.clone(),
            kind,
            ino: id.1,
            dev: id.0,
            me: me.clone(),
            vm: OnceLock::new(),
            created: Mutex::new(None),
        }))
    }

    /// Another inode of the same hostfs instance, or EXDEV.
    fn same_fs<'a>(&self, other: &'a Arc<dyn Inode>) -> SysResult<&'a HostInode> {
        match other.as_any().downcast_ref::<HostInode>() {
            Some(h) if Arc::ptr_eq(&h.fs, &self.fs) => Ok(h),
            _ => Err(Errno::EXDEV),
        }
    }

    /// After the host file was truncated to `size` (mm/truncate.c `truncate_pagecache`): the
    /// pages wholly past the new end leave every mapping, private copies too (an access there
    /// is `SIGBUS`), before and after the cache drops them; the tail of the new last page is
    /// zeroed in the cache. The pages before it stay cached, so mappings of them keep seeing
    /// `write(2)`.
    fn truncated(&self, size: u64) {
        let (c, id) = (&self.fs.cache, Inode::id(self));
        let ps = c.granule().size();
        let hole = size.div_ceil(ps);
        c.unmap_mapping_range(id, hole, u64::MAX, true);
        c.zero_range(id, size, hole * ps);
        c.drop_range(id, hole, u64::MAX);
        c.unmap_mapping_range(id, hole, u64::MAX, true);
    }

    fn host_stat(&self) -> SysResult<HostStat> {
        match &self.kind {
            Kind::Dir(fd) => host::fstatat(fd.as_fd(), b"").map_err(host_errno),
            Kind::Other { parent, name } => parent
                .dir_fd()
                .and_then(|d| host::fstatat(d, name).map_err(host_errno)),
        }
    }

    fn dir_fd(&self) -> SysResult<std::os::fd::BorrowedFd<'_>> {
        match &self.kind {
            Kind::Dir(fd) => Ok(fd.as_fd()),
            Kind::Other { .. } => Err(Errno::ENOTDIR),
        }
    }

    fn open_host(&self, flags: i32) -> SysResult<OwnedFd> {
        match &self.kind {
            Kind::Dir(fd) => {
                host::openat(fd.as_fd(), b".", flags | libc::O_DIRECTORY, 0).map_err(host_errno)
            }
            Kind::Other { parent, name } => {
                host::openat(parent.dir_fd()?, name, flags, 0).map_err(host_errno)
            }
        }
    }

    fn path_name(&self) -> String {
        match &self.kind {
            Kind::Dir(_) => String::from("hostfs dir"),
            Kind::Other { name, .. } => String::from_utf8_lossy(name).into_owned(),
        }
    }
}

impl Inode for HostInode {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.guest_stat()?.1)
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        if self.hidden(name) {
            return Err(Errno::ENOENT);
        }
        Ok(self.child(name)?)
    }

    fn readlink(&self) -> SysResult<Vec<u8>> {
        match &self.kind {
            Kind::Other { parent, name } => {
                host::readlinkat(parent.dir_fd()?, name).map_err(host_errno)
            }
            Kind::Dir(_) => Err(Errno::EINVAL),
        }
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        // What the guest sees: an emulated node opens as the node it says it is.
        let st = self.stat()?;
        let acc = (flags & 3) as i32;
        match st.mode & mode::S_IFMT {
            mode::S_IFDIR => {
                if acc != libc::O_RDONLY {
                    return Err(Errno::EISDIR);
                }
                let fd = self.open_host(libc::O_RDONLY)?;
                Ok(Box::new(HostDir {
                    fd,
                    fs: self.fs.clone(),
                    root: self.is_root(),
                    id: self.hid(),
                }))
            }
            mode::S_IFREG => {
                if acc != libc::O_RDONLY && self.readonly() {
                    return Err(Errno::EROFS);
                }
                let created = lock(&self.created).take();
                // A read-only host fd may become a spare when this file closes, unless an
                // inode is forgotten (unlinked, renamed over, changed) while it is open.
                let spare = (created.is_none() && acc == libc::O_RDONLY)
                    .then(|| self.fs.cache().inode_generation());
                let fd = match created {
                    Some(fd) => fd,
                    None if spare.is_some() => {
                        let now = Instant::now();
                        let kept = self.fs.cache().take_spare(self.hid(), now);
                        match kept {
                            Some(fd) => fd,
                            None => self.open_host(libc::O_RDONLY)?,
                        }
                    }
                    None => self.open_host(if acc == 3 { libc::O_RDWR } else { acc })?,
                };
                let me = self.me.upgrade().ok_or(Errno::ENOENT)?;
                Ok(Box::new(HostFile {
                    fd: Some(fd),
                    inode: me,
                    privs: AtomicBool::new(hostfs_meta::has_privs(st.mode)),
                    spare,
                }))
            }
            // The kernel's own pipe, never the host FIFO.
            mode::S_IFIFO => crate::mount::open_fifo(crate::mount::inode_key(self), flags, io),
            // The kernel's driver for the device number, never the host device.
            mode::S_IFCHR => vfs::open_chrdev(st.rdev, io, flags),
            mode::S_IFBLK => vfs::open_blkdev(st.rdev, io, flags),
            // Sockets are connected by path through the socket layer.
            _ => Err(Errno::ENXIO),
        }
    }

    fn id(&self) -> u64 {
        self.ino ^ (self.dev << 40)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn create(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        self.check_new_name(name)?;
        let m = init_owner(&self.stat()?, owner, mode::S_IFREG | (mode & 0o7777));
        let fd = self.create_host_file(name, m)?;
        let child = self.child(name)?;
        *lock(&child.created) = Some(fd);
        Ok(child)
    }

    fn mkdir(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        self.check_new_name(name)?;
        let m = init_owner(&self.stat()?, owner, mode::S_IFDIR | (mode & 0o7777));
        let r = hostdir::mkdirat(self.dir_fd()?, name, host_mode(m.perm, true));
        self.forget_name(name);
        r.map_err(host_errno)?;
        let child = self.child(name)?;
        let hs = child.host_stat()?;
        let r = self.record_new(name, child.loc()?, &hs, m);
        // The metadata changed the new inode's ctime (or the entry went again).
        self.forget_name(name);
        self.fs.forget_attrs(child.hid());
        r?;
        Ok(child)
    }

    fn mknod(&self, name: &[u8], mode: u32, rdev: u64, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        self.check_new_name(name)?;
        match mode & mode::S_IFMT {
            0 | mode::S_IFREG => {
                let ino = self.create(name, mode & 0o7777, owner)?;
                // mknod does not open the file.
                if let Some(h) = ino.as_any().downcast_ref::<HostInode>() {
                    lock(&h.created).take();
                }
                Ok(ino)
            }
            // Never a host node (a host device would reach outside the guest, and the host
            // user may not make one): an empty regular file whose metadata names the type
            // and device number. Opening it opens what it names (see `open`).
            fmt @ (mode::S_IFIFO | mode::S_IFSOCK | mode::S_IFCHR | mode::S_IFBLK) => {
                let mut m = init_owner(&self.stat()?, owner, mode);
                if matches!(fmt, mode::S_IFCHR | mode::S_IFBLK) {
                    m.rdev = rdev;
                }
                drop(self.create_host_file(name, m)?);
                Ok(self.child(name)?)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn symlink(&self, name: &[u8], target: &[u8], owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        self.check_new_name(name)?;
        let m = init_owner(&self.stat()?, owner, mode::S_IFLNK | 0o777);
        let r = hostdir::symlinkat(target, self.dir_fd()?, name);
        self.forget_name(name);
        r.map_err(host_errno)?;
        let child = self.child(name)?;
        let hs = child.host_stat()?;
        let r = self.record_new(name, child.loc()?, &hs, m);
        self.forget_name(name);
        self.fs.forget_attrs(child.hid());
        r?;
        Ok(child)
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> SysResult<()> {
        self.check_writable()?;
        self.check_new_name(name)?;
        // The metadata is the inode's (its xattr, or a sidecar entry keyed by inode number):
        // the new name shares it, as in Linux.
        let t = self.same_fs(target)?;
        let r = match &t.kind {
            Kind::Dir(_) => return Err(Errno::EPERM),
            Kind::Other {
                parent,
                name: old_name,
            } => hostdir::linkat(parent.dir_fd()?, old_name, self.dir_fd()?, name),
        };
        // The target's link count and ctime changed too.
        self.forget_name(name);
        self.fs.forget_attrs(t.hid());
        r.map_err(host_errno)
    }

    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        self.check_writable()?;
        if self.hidden(name) {
            return Err(Errno::ENOENT);
        }
        let dir = self.dir_fd()?;
        let hs = host::fstatat(dir, name).map_err(host_errno)?;
        if hs.mode & mode::S_IFMT == mode::S_IFDIR {
            return Err(Errno::EISDIR);
        }
        let r = hostdir::unlinkat(dir, name, false);
        self.forget_name(name);
        self.fs.forget_inode((hs.dev, hs.ino));
        r.map_err(host_errno)?;
        if hs.nlink <= 1 {
            self.fs.meta.forget(&hs);
        }
        Ok(())
    }

    fn rmdir(&self, name: &[u8]) -> SysResult<()> {
        self.check_writable()?;
        if self.hidden(name) {
            return Err(Errno::ENOENT);
        }
        let dir = self.dir_fd()?;
        let hs = host::fstatat(dir, name).map_err(host_errno)?;
        let r = hostdir::unlinkat(dir, name, true);
        // The directory's inode number may come back as another one: nothing cached under
        // it may survive.
        self.fs.cache().clear();
        r.map_err(host_errno)?;
        self.fs.meta.forget(&hs);
        Ok(())
    }

    fn rename(
        &self,
        old_name: &[u8],
        new_dir: &Arc<dyn Inode>,
        new_name: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        self.check_writable()?;
        if self.hidden(old_name) {
            return Err(Errno::ENOENT);
        }
        let nd = self.same_fs(new_dir)?;
        nd.check_new_name(new_name)?;
        // The metadata moves with the inode; an inode this rename removes (the last link of
        // a replaced target) loses its sidecar entry.
        use um_uapi::abi::fcntl::RENAME_EXCHANGE;
        let src = host::fstatat(self.dir_fd()?, old_name).map_err(host_errno)?;
        let dst = host::fstatat(nd.dir_fd()?, new_name).ok();
        let replaced = if flags & RENAME_EXCHANGE == 0 {
            dst.filter(|v| (v.ino, v.dev) != (src.ino, src.dev))
        } else {
            None
        };
        let r = hostdir::renameat2(self.dir_fd()?, old_name, nd.dir_fd()?, new_name, flags);
        // Both names, both directories and the inodes moved (ctime) change. A directory
        // replaced by the rename goes, and its inode number may come back: start over.
        if replaced.is_some_and(|v| v.mode & mode::S_IFMT == mode::S_IFDIR) {
            self.fs.cache().clear();
        } else {
            self.forget_name(old_name);
            nd.forget_name(new_name);
            let mut c = self.fs.cache();
            c.forget_inode((src.dev, src.ino));
            if let Some(v) = dst {
                c.forget_inode((v.dev, v.ino));
            }
        }
        r.map_err(host_errno)?;
        if let Some(v) = replaced
            && (v.nlink <= 1 || v.mode & mode::S_IFMT == mode::S_IFDIR)
        {
            self.fs.meta.forget(&v);
        }
        Ok(())
    }

    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        let r = self.setattr_host(attr);
        // Whatever part of it was made.
        self.fs.forget_inode(self.hid());
        r
    }

    fn fsync(&self, datasync: bool) -> SysResult<()> {
        let fd = self.open_host(libc::O_RDONLY)?;
        hostdir::fsync(fd.as_fd(), datasync).map_err(host_errno)
    }

    fn fs_id(&self) -> u64 {
        self.fs.id
    }

    fn statfs(&self) -> SysResult<Statfs> {
        let s = match &self.kind {
            Kind::Dir(fd) => hostdir::fstatfs(fd.as_fd()),
            Kind::Other { parent, .. } => hostdir::fstatfs(parent.dir_fd()?),
        }
        .map_err(host_errno)?;
        Ok(Statfs {
            // HOSTFS_SUPER_MAGIC (fs/hostfs/hostfs_kern.c).
            fs_type: 0x00c0_ffee,
            bsize: s.bsize,
            blocks: s.blocks,
            bfree: s.bfree,
            bavail: s.bavail,
            files: s.files,
            ffree: s.ffree,
            fsid: self.fs.id,
            namelen: s.namelen,
            frsize: s.frsize,
            flags: 0,
        })
    }

    /// Always: host xattrs where the host takes them, else the sidecar
    /// ([`crate::hostfs_xattr`], [`crate::hostfs_meta`]).
    fn has_xattrs(&self) -> bool {
        true
    }

    fn getxattr(&self, name: &[u8]) -> SysResult<Vec<u8>> {
        match self.xattr_home()? {
            XattrHome::Host(loc) => hostfs_xattr::get(loc, name),
            XattrHome::Sidecar(hs) => self.fs.meta.sidecar_getxattr(&hs, name),
            XattrHome::None => Err(Errno::ENODATA),
        }
    }

    fn setxattr(&self, name: &[u8], value: &[u8], flags: u32) -> SysResult<()> {
        self.check_writable()?;
        let _g = lock(&self.fs.meta.attr_lock);
        let r = match self.xattr_home()? {
            XattrHome::Host(loc) => hostfs_xattr::set(loc, name, value, flags),
            XattrHome::Sidecar(hs) => self.fs.meta.sidecar_setxattr(&hs, name, Some(value), flags),
            XattrHome::None => Err(Errno::EOPNOTSUPP),
        };
        // The ctime changed.
        self.fs.forget_attrs(self.hid());
        r
    }

    fn removexattr(&self, name: &[u8]) -> SysResult<()> {
        self.check_writable()?;
        let _g = lock(&self.fs.meta.attr_lock);
        let r = match self.xattr_home()? {
            XattrHome::Host(loc) => hostfs_xattr::remove(loc, name),
            XattrHome::Sidecar(hs) => self.fs.meta.sidecar_setxattr(&hs, name, None, 0),
            XattrHome::None => Err(Errno::ENODATA),
        };
        self.fs.forget_attrs(self.hid());
        r
    }

    fn listxattr(&self) -> SysResult<Vec<Vec<u8>>> {
        match self.xattr_home()? {
            XattrHome::Host(loc) => hostfs_xattr::list(loc),
            XattrHome::Sidecar(hs) => Ok(self.fs.meta.sidecar_listxattr(&hs)),
            XattrHome::None => Ok(Vec::new()),
        }
    }
}

/// Where the guest's attributes of one hostfs inode live.
enum XattrHome<'a> {
    /// Host xattrs of ours at this place.
    Host(XattrLoc<'a>),
    /// The sidecar, under this host inode (the host file system takes no user xattrs).
    Sidecar(HostStat),
    /// Nowhere: not a regular file or directory on the host.
    None,
}

impl HostInode {
    /// The host side of [`Inode::setattr`].
    fn setattr_host(&self, attr: &SetAttr) -> SysResult<()> {
        self.check_writable()?;
        if attr.mode.is_some() || attr.uid.is_some() || attr.gid.is_some() {
            // chown(2)/chmod(2) change the guest's metadata only, never the host owner.
            let _guard = lock(&self.fs.meta.attr_lock);
            let hs = self.host_stat()?;
            if attr.mode.is_some() && hs.mode & mode::S_IFMT == mode::S_IFLNK {
                // Linux: symlink permissions cannot be changed.
                return Err(Errno::EOPNOTSUPP);
            }
            let loc = self.loc()?;
            let mut m = self
                .fs
                .meta
                .get(loc, &hs)
                .unwrap_or_else(|| Meta::of_host(&hs));
            if let Some(p) = attr.mode {
                m.perm = p & 0o7777;
                // First, so the host user can write the file's xattr.
                self.chmod_host(&hs, m.perm)?;
            }
            m.uid = attr.uid.unwrap_or(m.uid);
            m.gid = attr.gid.unwrap_or(m.gid);
            self.fs.meta.set(loc, &hs, m)?;
        }
        if let Some(size) = attr.size {
            match &self.kind {
                Kind::Dir(_) => return Err(Errno::EISDIR),
                Kind::Other { .. } => {
                    let fd = self.open_host(libc::O_WRONLY)?;
                    hostdir::ftruncate(fd.as_fd(), size).map_err(host_errno)?;
                    self.truncated(size);
                }
            }
        }
        if attr.atime.is_some() || attr.mtime.is_some() {
            let t = |t: Option<TimeSet>| match t {
                None => None,
                Some(TimeSet::Now) => Some(None),
                Some(TimeSet::At(s, ns)) => Some(Some((s, ns))),
            };
            let (a, m) = (t(attr.atime), t(attr.mtime));
            match &self.kind {
                Kind::Dir(fd) => hostdir::utimensat(fd.as_fd(), b"", a, m),
                Kind::Other { parent, name } => hostdir::utimensat(parent.dir_fd()?, name, a, m),
            }
            .map_err(host_errno)?;
        }
        Ok(())
    }

    /// Where the guest's attributes of this inode live: host regular files and directories
    /// only (the host refuses user xattrs on anything else, and the sidecar does the same).
    fn xattr_home(&self) -> SysResult<XattrHome<'_>> {
        let hs = self.host_stat()?;
        let fmt = hs.mode & mode::S_IFMT;
        if fmt != mode::S_IFREG && fmt != mode::S_IFDIR {
            Ok(XattrHome::None)
        } else if self.fs.meta.host_xattrs() {
            Ok(XattrHome::Host(self.loc()?))
        } else {
            Ok(XattrHome::Sidecar(hs))
        }
    }
}

/// An open hostfs directory.
struct HostDir {
    fd: OwnedFd,
    fs: Arc<HostFs>,
    /// The root: the metadata store's names are left out of listings.
    root: bool,
    /// Its host identity (reading it changes its atime).
    id: HostId,
}

fn dt_of(kind: u8) -> u8 {
    kind
}

/// `fstat` of an open hostfs file or directory `id`: the host's, as the guest sees it, through
/// the attribute cache (the fd names the inode itself).
fn fd_stat(fs: &HostFs, id: HostId, fd: std::os::fd::BorrowedFd<'_>) -> SysResult<Kstat> {
    let now = Instant::now();
    let generation = {
        let c = fs.cache();
        c.attrs(id, now).ok_or(c.generation())
    };
    let hs = match generation {
        Ok(hs) => hs,
        Err(generation) => {
            let hs = host::fstatat(fd, b"").map_err(host_errno)?;
            if (hs.dev, hs.ino) == id {
                fs.cache().fill_attrs(&hs, generation, now);
            }
            hs
        }
    };
    let mut st = kstat(&hs);
    if let Some(m) = fs.meta.get(XattrLoc::Fd(fd), &hs) {
        m.apply(&mut st);
    }
    Ok(st)
}

impl FileOps for HostDir {
    fn stat(&self) -> SysResult<Kstat> {
        fd_stat(&self.fs, self.id, self.fd.as_fd())
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        self.fs.forget_attrs(self.id);
        let st = self.stat()?;
        let mut out = vec![
            DirEntry {
                ino: st.ino,
                kind: 4,
                name: b".".to_vec(),
            },
            DirEntry {
                ino: st.ino,
                kind: 4,
                name: b"..".to_vec(),
            },
        ];
        for e in host::read_dir(self.fd.as_fd()).map_err(host_errno)? {
            if self.root && reserved(&e.name) {
                continue;
            }
            out.push(DirEntry {
                ino: e.ino,
                kind: dt_of(e.kind),
                name: e.name,
            });
        }
        Ok(out)
    }
}

/// An open hostfs regular file.
struct HostFile {
    /// Always there until the file is dropped, which keeps it as a spare if it may.
    fd: Option<OwnedFd>,
    inode: Arc<HostInode>,
    /// The file was setuid (or setgid and group-executable) when opened: the first write by
    /// an unprivileged process clears that. (Bits set by a chmod after the open are not
    /// looked at again, to keep `stat` off the write path; Linux rechecks on every write.)
    privs: AtomicBool,
    /// A read-only host fd, which may serve another open of the inode once this one closes
    /// ([`crate::hostfs_cache`], "Spare descriptors"): the inode generation it opened at.
    spare: Option<u64>,
}

impl Drop for HostFile {
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take()
            && let Some(opened) = self.spare
        {
            let back =
                self.inode
                    .fs
                    .cache()
                    .put_spare(self.inode.hid(), fd, opened, Instant::now());
            // Closed outside the lock.
            drop(back);
        }
    }
}

impl HostFile {
    fn fd(&self) -> SysResult<std::os::fd::BorrowedFd<'_>> {
        self.fd.as_ref().map(|f| f.as_fd()).ok_or(Errno::EBADF)
    }

    /// `file_remove_privs` (fs/inode.c): a write by a process without `CAP_FSETID` (fsuid 0
    /// here) clears setuid, and setgid with group execute, before the data changes
    /// (`should_remove_suid`).
    fn remove_privs(&self, io: &IoCtx<'_>) -> SysResult<()> {
        if !self.privs.load(Ordering::Relaxed) || lock(&io.task.process.creds).fsuid == 0 {
            return Ok(());
        }
        let fs = &self.inode.fs;
        let _guard = lock(&fs.meta.attr_lock);
        let hs = host::fstatat(self.fd()?, b"").map_err(host_errno)?;
        let loc = XattrLoc::Fd(self.fd()?);
        let mut m = fs.meta.get(loc, &hs).unwrap_or_else(|| Meta::of_host(&hs));
        if hostfs_meta::has_privs(mode::S_IFREG | m.perm) {
            m.perm = hostfs_meta::strip_privs(m.perm);
            fs.meta.set(loc, &hs, m)?;
        }
        self.privs.store(false, Ordering::Relaxed);
        Ok(())
    }
}

impl FileOps for HostFile {
    /// A regular file has no poll method (epoll_ctl refuses it with EPERM; poll and select
    /// call it always ready).
    fn can_poll(&self) -> bool {
        false
    }

    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let r = host::pread(self.fd()?, buf, off).map_err(host_errno);
        // The host may have moved the atime.
        self.inode.fs.forget_attrs(self.inode.hid());
        r
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        let r = self.remove_privs(io);
        let r = r.and_then(|()| host::pwrite(self.fd()?, data, off).map_err(host_errno));
        // Size, times, and perhaps the mode (remove_privs) changed.
        self.inode.fs.forget_attrs(self.inode.hid());
        let n = r?;
        // Through the page cache: mapped pages see the write (Linux generic_perform_write).
        let id = Inode::id(&*self.inode);
        self.inode.fs.cache.update(id, off, &data[..n]);
        Ok(n)
    }

    fn stat(&self) -> SysResult<Kstat> {
        fd_stat(&self.inode.fs, self.inode.hid(), self.fd()?)
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        let ino = &self.inode;
        let vm = ino.vm.get_or_init(|| {
            Arc::new(HostVmFile {
                fd: ino.open_host(libc::O_RDONLY).ok(),
                wfd: OnceLock::new(),
                inode: Arc::downgrade(ino),
                id: Inode::id(&**ino),
                name: ino.path_name(),
            })
        });
        vm.fd.as_ref()?;
        Some(vm.clone() as Arc<dyn VmFile>)
    }
}

/// The page-cache side of a hostfs file.
struct HostVmFile {
    fd: Option<OwnedFd>,
    /// Opened read-write on the first write-back (MAP_SHARED + msync/munmap).
    wfd: OnceLock<Option<OwnedFd>>,
    /// Weak: the inode owns this object.
    inode: Weak<HostInode>,
    id: u64,
    name: String,
}

impl VmFile for HostVmFile {
    fn id(&self) -> u64 {
        self.id
    }

    fn size(&self) -> u64 {
        self.fd
            .as_ref()
            .and_then(|fd| host::fstatat(fd.as_fd(), b"").ok())
            .map(|s| s.size.max(0) as u64)
            .unwrap_or(0)
    }

    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let fd = self.fd.as_ref().ok_or(Errno::EIO)?;
        let mut done = 0;
        while done < buf.len() {
            let n = host::pread(fd.as_fd(), &mut buf[done..], offset + done as u64)
                .map_err(host_errno)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    /// Writes a dirty shared page back, never past the end of the file (Linux writeback
    /// writes only up to i_size; the rest of the last page is not part of the file).
    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let size = self.size();
        if offset >= size {
            return Ok(());
        }
        let n = ((size - offset) as usize).min(data.len());
        if self
            .inode
            .upgrade()
            .is_none_or(|i| i.fs.readonly.load(Ordering::Relaxed))
        {
            return Err(Errno::EROFS);
        }
        let fd = self
            .wfd
            .get_or_init(|| self.inode.upgrade()?.open_host(libc::O_RDWR).ok())
            .as_ref()
            .ok_or(Errno::EROFS)?;
        let mut done = 0;
        while done < n {
            let r = host::pwrite(fd.as_fd(), &data[done..n], offset + done as u64);
            if let Some(i) = self.inode.upgrade() {
                i.fs.forget_attrs(i.hid());
            }
            done += r.map_err(host_errno)?;
        }
        Ok(())
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    /// `MADV_REMOVE`: the host file system punches the hole (`EOPNOTSUPP` where it cannot), and
    /// the cached pages get the zeros in place, so every mapping sees them.
    fn punch_hole(&self, offset: u64, len: u64) -> Result<(), Errno> {
        const PUNCH: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        let inode = self.inode.upgrade().ok_or(Errno::EIO)?;
        if inode.fs.readonly.load(Ordering::Relaxed) {
            return Err(Errno::EROFS);
        }
        let fd = self
            .wfd
            .get_or_init(|| inode.open_host(libc::O_RDWR).ok())
            .as_ref()
            .ok_or(Errno::EROFS)?;
        let r = hostdir::fallocate(fd.as_fd(), PUNCH, offset, len);
        inode.fs.forget_attrs(inode.hid());
        r.map_err(host_errno)?;
        let end = offset.saturating_add(len).min(self.size().max(offset));
        inode.fs.cache.zero_range(self.id, offset, end);
        Ok(())
    }
}
