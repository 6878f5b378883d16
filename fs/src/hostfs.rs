//! hostfs: a host directory as the guest's file system (Linux `fs/hostfs`).
//!
//! Confinement: a directory inode holds an `O_PATH` fd of its host directory; every lookup is
//! one `openat`/`fstatat` of a single component relative to such an fd, with `O_NOFOLLOW`.
//! The VFS handles `..` (through the dentry's parent) and symlinks (by reading them and walking
//! the target itself, inside the guest's root), so no host path outside the root is ever
//! reached. Host device nodes, sockets and fifos are never opened on the host: a guest that
//! could open them would reach outside its root.

use std::any::Any;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, OnceLock, Weak};
use um_kernel::vfs::{DirEntry, FileOps, Inode, Kstat, mode};
use um_kernel::wait::IoCtx;
use um_mm::{PageCache, VmFile};
use um_os_linux::host::{self, HostStat};
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
    pub readonly: bool,
    /// The page cache, kept coherent with writes through file descriptors.
    cache: Arc<PageCache>,
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
        let fs = Arc::new(HostFs { readonly, cache });
        Ok(Arc::new_cyclic(|me| HostInode {
            fs,
            kind: Kind::Dir(fd),
            ino: st.ino,
            dev: st.dev,
            me: me.clone(),
            vm: OnceLock::new(),
        }))
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
        }))
    }

    fn readlink(&self) -> SysResult<Vec<u8>> {
        match &self.kind {
            Kind::Other { parent, name } => {
                host::readlinkat(parent.dir_fd()?, name).map_err(host_errno)
            }
            Kind::Dir(_) => Err(Errno::EINVAL),
        }
    }

    fn open(&self, _io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
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
                if acc != libc::O_RDONLY && self.fs.readonly {
                    return Err(Errno::EROFS);
                }
                let fd = self.open_host(acc)?;
                let me = self.me.upgrade().ok_or(Errno::ENOENT)?;
                Ok(Box::new(HostFile { fd, inode: me }))
            }
            // Host device nodes, fifos and sockets stay on the host.
            _ => Err(Errno::ENXIO),
        }
    }

    fn id(&self) -> u64 {
        self.ino ^ (self.dev << 40)
    }

    fn as_any(&self) -> &dyn Any {
        self
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
        // Cached pages of this file are stale now (pages already mapped keep their frames).
        self.inode.fs.cache.invalidate(Inode::id(&*self.inode));
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

    fn write_page(&self, _offset: u64, _data: &[u8]) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
