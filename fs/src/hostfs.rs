//! hostfs: a host directory as the guest's file system (Linux `fs/hostfs`).
//!
//! Confinement: a directory inode holds an `O_PATH` fd of its host directory; every lookup is
//! one `openat`/`fstatat` of a single component relative to such an fd, with `O_NOFOLLOW`.
//! The VFS handles `..` (through the dentry's parent) and symlinks (by reading them and walking
//! the target itself, inside the guest's root), so no host path outside the root is ever
//! reached. Host device nodes, sockets and fifos are never opened on the host: a guest that
//! could open them would reach outside its root. A FIFO opens the kernel's own pipe keyed by
//! the inode ([`crate::mount::inode_key`]), a character device node opens the kernel's driver
//! for its number ([`um_kernel::vfs::open_chrdev`]).
//!
//! Writes (create, mkdir, mknod of FIFOs and sockets, symlink, link, unlink, rmdir, rename,
//! chmod, chown, truncate, utimes) go through [`um_os_linux::hostdir`], whose calls take one
//! component relative to a directory fd and never follow a symlink. Files are written as the
//! host user and report the host's owner (guest-side ownership is not kept yet); a `chown` the
//! host refuses with EPERM is accepted without effect for the same reason.

use std::any::Any;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::task::lock;
use um_kernel::vfs::{
    self, DirEntry, FileOps, Inode, Kstat, Owner, SetAttr, Statfs, TimeSet, mode,
};
use um_kernel::wait::IoCtx;
use um_mm::{PageCache, VmFile};
use um_os_linux::host::{self, HostStat};
use um_os_linux::hostdir;
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
}

enum Kind {
    /// A directory: its own O_PATH fd.
    Dir(OwnedFd),
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
        let fs = Arc::new(HostFs {
            readonly: AtomicBool::new(readonly),
            cache,
            id: vfs::new_fs_id(),
        });
        Ok(Arc::new_cyclic(|me| HostInode {
            fs,
            kind: Kind::Dir(fd),
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

    /// A child inode after a host lookup of `name` in this directory.
    fn child(&self, name: &[u8]) -> SysResult<Arc<HostInode>> {
        let dir = self.dir_fd()?;
        let st = host::fstatat(dir, name).map_err(host_errno)?;
        let kind = if st.mode & mode::S_IFMT == mode::S_IFDIR {
            Kind::Dir(
                host::openat(dir, name, libc::O_PATH | libc::O_DIRECTORY, 0).map_err(host_errno)?,
            )
        } else {
            let parent = self.me.upgrade().ok_or(Errno::ENOENT)?;
            Kind::Other {
                parent,
                name: name.to_vec(),
            }
        };
        Ok(Arc::new_cyclic(|me| HostInode {
            fs: self.fs.clone(),
            kind,
            ino: st.ino,
            dev: st.dev,
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

    fn invalidate(&self) {
        self.fs.cache.invalidate(Inode::id(self));
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
        Ok(kstat(&self.host_stat()?))
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
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
        let st = self.host_stat()?;
        let acc = (flags & 3) as i32;
        match st.mode & mode::S_IFMT {
            mode::S_IFDIR => {
                if acc != libc::O_RDONLY {
                    return Err(Errno::EISDIR);
                }
                let fd = self.open_host(libc::O_RDONLY)?;
                Ok(Box::new(HostDir { fd }))
            }
            mode::S_IFREG => {
                if acc != libc::O_RDONLY && self.readonly() {
                    return Err(Errno::EROFS);
                }
                let fd = match lock(&self.created).take() {
                    Some(fd) => fd,
                    None => self.open_host(if acc == 3 { libc::O_RDWR } else { acc })?,
                };
                let me = self.me.upgrade().ok_or(Errno::ENOENT)?;
                Ok(Box::new(HostFile { fd, inode: me }))
            }
            // The kernel's own pipe, never the host FIFO.
            mode::S_IFIFO => crate::mount::open_fifo(crate::mount::inode_key(self), flags, io),
            // The kernel's driver for the device number, never the host device.
            mode::S_IFCHR => vfs::open_chrdev(st.rdev, io, flags),
            // Sockets are connected by path through the socket layer; block devices have no
            // drivers.
            _ => Err(Errno::ENXIO),
        }
    }

    fn id(&self) -> u64 {
        self.ino ^ (self.dev << 40)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn create(&self, name: &[u8], mode: u32, _owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        let fd = host::openat(
            self.dir_fd()?,
            name,
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            mode & 0o7777,
        )
        .map_err(host_errno)?;
        let child = self.child(name)?;
        *lock(&child.created) = Some(fd);
        Ok(child)
    }

    fn mkdir(&self, name: &[u8], mode: u32, _owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        hostdir::mkdirat(self.dir_fd()?, name, mode & 0o7777).map_err(host_errno)?;
        Ok(self.child(name)?)
    }

    fn mknod(&self, name: &[u8], mode: u32, _rdev: u64, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        match mode & mode::S_IFMT {
            0 | mode::S_IFREG => {
                let ino = self.create(name, mode & 0o7777, owner)?;
                // mknod does not open the file.
                if let Some(h) = ino.as_any().downcast_ref::<HostInode>() {
                    lock(&h.created).take();
                }
                Ok(ino)
            }
            mode::S_IFIFO | mode::S_IFSOCK => {
                hostdir::mknodat(self.dir_fd()?, name, mode, 0).map_err(host_errno)?;
                Ok(self.child(name)?)
            }
            // Device nodes only on tmpfs/devtmpfs: a hostfs node would be a host device.
            mode::S_IFCHR | mode::S_IFBLK => Err(Errno::EPERM),
            _ => Err(Errno::EINVAL),
        }
    }

    fn symlink(&self, name: &[u8], target: &[u8], _owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.check_writable()?;
        hostdir::symlinkat(target, self.dir_fd()?, name).map_err(host_errno)?;
        Ok(self.child(name)?)
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> SysResult<()> {
        self.check_writable()?;
        let t = self.same_fs(target)?;
        match &t.kind {
            Kind::Dir(_) => Err(Errno::EPERM),
            Kind::Other {
                parent,
                name: old_name,
            } => hostdir::linkat(parent.dir_fd()?, old_name, self.dir_fd()?, name)
                .map_err(host_errno),
        }
    }

    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        self.check_writable()?;
        let dir = self.dir_fd()?;
        if host::fstatat(dir, name).map_err(host_errno)?.mode & mode::S_IFMT == mode::S_IFDIR {
            return Err(Errno::EISDIR);
        }
        hostdir::unlinkat(dir, name, false).map_err(host_errno)
    }

    fn rmdir(&self, name: &[u8]) -> SysResult<()> {
        self.check_writable()?;
        hostdir::unlinkat(self.dir_fd()?, name, true).map_err(host_errno)
    }

    fn rename(
        &self,
        old_name: &[u8],
        new_dir: &Arc<dyn Inode>,
        new_name: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        self.check_writable()?;
        let nd = self.same_fs(new_dir)?;
        hostdir::renameat2(self.dir_fd()?, old_name, nd.dir_fd()?, new_name, flags)
            .map_err(host_errno)
    }

    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        self.check_writable()?;
        if let Some(m) = attr.mode {
            match &self.kind {
                Kind::Dir(fd) => hostdir::chmod_fd(fd.as_fd(), m & 0o7777).map_err(host_errno)?,
                Kind::Other { parent, name } => {
                    let fd = host::openat(parent.dir_fd()?, name, libc::O_PATH, 0)
                        .map_err(host_errno)?;
                    let st = host::fstatat(fd.as_fd(), b"").map_err(host_errno)?;
                    if st.mode & mode::S_IFMT == mode::S_IFLNK {
                        // Linux: symlink permissions cannot be changed.
                        return Err(Errno::EOPNOTSUPP);
                    }
                    hostdir::chmod_fd(fd.as_fd(), m & 0o7777).map_err(host_errno)?;
                }
            }
        }
        if attr.uid.is_some() || attr.gid.is_some() {
            let (uid, gid) = (attr.uid.unwrap_or(u32::MAX), attr.gid.unwrap_or(u32::MAX));
            let r = match &self.kind {
                Kind::Dir(fd) => hostdir::fchownat(fd.as_fd(), b"", uid, gid),
                Kind::Other { parent, name } => hostdir::fchownat(parent.dir_fd()?, name, uid, gid),
            };
            match r {
                Ok(()) => {}
                // Guest-side ownership is not kept yet: the host user cannot give files away.
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    log::debug!("hostfs: chown {uid}:{gid} of {} not kept", self.path_name());
                }
                Err(e) => return Err(host_errno(e)),
            }
        }
        if let Some(size) = attr.size {
            match &self.kind {
                Kind::Dir(_) => return Err(Errno::EISDIR),
                Kind::Other { .. } => {
                    let fd = self.open_host(libc::O_WRONLY)?;
                    hostdir::ftruncate(fd.as_fd(), size).map_err(host_errno)?;
                    self.invalidate();
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
}

/// An open hostfs directory.
struct HostDir {
    fd: OwnedFd,
}

fn dt_of(kind: u8) -> u8 {
    kind
}

impl FileOps for HostDir {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(kstat(
            &host::fstatat(self.fd.as_fd(), b"").map_err(host_errno)?,
        ))
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
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
    fd: OwnedFd,
    inode: Arc<HostInode>,
}

impl FileOps for HostFile {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        host::pread(self.fd.as_fd(), buf, off).map_err(host_errno)
    }

    fn write(&self, _io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        let n = host::pwrite(self.fd.as_fd(), data, off).map_err(host_errno)?;
        // Through the page cache: mapped pages see the write (Linux generic_perform_write).
        let id = Inode::id(&*self.inode);
        self.inode.fs.cache.update(id, off, &data[..n]);
        Ok(n)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(kstat(
            &host::fstatat(self.fd.as_fd(), b"").map_err(host_errno)?,
        ))
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
            done += host::pwrite(fd.as_fd(), &data[done..n], offset + done as u64)
                .map_err(host_errno)?;
        }
        Ok(())
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
