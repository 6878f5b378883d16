//! The kernel's view of a mounted ext4 (Linux `fs/ext4/file.c`, `dir.c`, `symlink.c` and the
//! inode operations of `namei.c`): [`Ext4Inode`] is a `um_kernel::vfs::Inode`, its open files
//! are [`Ext4File`] (regular files, with a [`Ext4Vm`] for `mmap` and exec through the kernel's
//! page cache) and [`Ext4Dir`]; device nodes and FIFOs open the kernel's drivers and pipes by
//! number, as on every other file system.
//!
//! Read-only: every namespace and attribute change is `EROFS` (the mount refuses `rw`, see
//! [`crate::mount`]). Page-cache pages are filled from [`Ext4::read`] at the guest's page
//! size, whatever the block size (1K blocks under 16K pages read 16 blocks per page).
//! Neighbours: [`crate::fs`] (the file system), `um_fs::mount` (the mount table).

use crate::disk::{RawInode, iflags};
use crate::fs::Ext4;
use std::any::Any;
use std::sync::{Arc, OnceLock};
use um_kernel::vfs::{self, DirEntry, FileOps, Inode, Kstat, Owner, SetAttr, Statfs, mode};
use um_kernel::wait::IoCtx;
use um_mm::VmFile;
use um_uapi::{Errno, SysResult};

/// One mounted instance: the file system and its identity in the mount table.
pub struct Mounted {
    pub fs: Ext4,
    pub fs_id: u64,
}

/// An inode of a mounted ext4.
pub struct Ext4Inode {
    m: Arc<Mounted>,
    raw: RawInode,
    /// The path from the file system's root, for `/proc/PID/maps`.
    path: Vec<u8>,
    vm: OnceLock<Arc<Ext4Vm>>,
}

/// `EXT4_FT_*` to `DT_*` (fs/ext4/ext4.h, include/linux/fs_types.h).
fn dt_of(ft: u8) -> u8 {
    match ft {
        1 => 8,
        2 => 4,
        3 => 2,
        4 => 6,
        5 => 1,
        6 => 12,
        7 => 10,
        _ => 0,
    }
}

impl Ext4Inode {
    /// The root directory of a mounted file system.
    pub fn root(m: Arc<Mounted>) -> SysResult<Arc<Ext4Inode>> {
        let raw = m.fs.inode(crate::disk::ROOT_INO)?;
        Ok(Arc::new(Ext4Inode {
            m,
            raw,
            path: Vec::new(),
            vm: OnceLock::new(),
        }))
    }

    fn is_dir(&self) -> bool {
        self.raw.fmt() == mode::S_IFDIR
    }

    fn kstat(&self) -> Kstat {
        let r = &self.raw;
        let rdev = if matches!(r.fmt(), mode::S_IFCHR | mode::S_IFBLK) {
            let (ma, mi) = r.rdev();
            vfs::encode_dev(ma, mi)
        } else {
            0
        };
        Kstat {
            dev: self.m.fs.rdev(),
            ino: r.ino as u64,
            mode: r.mode as u32,
            nlink: r.links as u64,
            uid: r.uid,
            gid: r.gid,
            rdev,
            size: r.size as i64,
            blksize: self.m.fs.sb.block_size as i64,
            blocks: r.blocks as i64,
            atime: r.atime,
            mtime: r.mtime,
            ctime: r.ctime,
        }
    }

    /// The page-cache key: distinct from hostfs ids (bit 63 clear) and tmpfs ones (bit 62
    /// clear there), unique per mount and inode.
    fn vm_id(&self) -> u64 {
        (3 << 62) | ((self.m.fs_id & 0xf_ffff) << 40) | self.raw.ino as u64
    }

    fn entries(&self) -> SysResult<Vec<DirEntry>> {
        let all = self.m.fs.dir_entries(&self.raw)?;
        let parent = all
            .iter()
            .find(|e| e.name == b"..")
            .map(|e| e.ino)
            .unwrap_or(self.raw.ino);
        let mut out = vec![
            DirEntry {
                ino: self.raw.ino as u64,
                kind: 4,
                name: b".".to_vec(),
            },
            DirEntry {
                ino: parent as u64,
                kind: 4,
                name: b"..".to_vec(),
            },
        ];
        out.extend(
            all.into_iter()
                .filter(|e| e.name != b"." && e.name != b"..")
                .map(|e| DirEntry {
                    ino: e.ino as u64,
                    kind: dt_of(e.file_type),
                    name: e.name,
                }),
        );
        Ok(out)
    }
}

impl Inode for Ext4Inode {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.kstat())
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        if !self.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let ino = self.m.fs.lookup(&self.raw, name)?.ok_or(Errno::ENOENT)?;
        let raw = self.m.fs.inode(ino)?;
        let mut path = self.path.clone();
        path.push(b'/');
        path.extend_from_slice(name);
        Ok(Arc::new(Ext4Inode {
            m: self.m.clone(),
            raw,
            path,
            vm: OnceLock::new(),
        }))
    }

    fn readlink(&self) -> SysResult<Vec<u8>> {
        if self.raw.fmt() != mode::S_IFLNK {
            return Err(Errno::EINVAL);
        }
        self.m.fs.readlink(&self.raw)
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let write = flags & 3 != 0;
        let st = self.kstat();
        match self.raw.fmt() {
            mode::S_IFDIR => {
                if write {
                    return Err(Errno::EISDIR);
                }
                Ok(Box::new(Ext4Dir {
                    st,
                    entries: self.entries()?,
                }))
            }
            mode::S_IFREG => {
                if write {
                    return Err(Errno::EROFS);
                }
                Ok(Box::new(Ext4File {
                    m: self.m.clone(),
                    raw: self.raw.clone(),
                    st,
                    vm: self.vm_file_arc(),
                }))
            }
            mode::S_IFIFO => um_fs::mount::open_fifo(um_fs::mount::inode_key(self), flags, io),
            mode::S_IFCHR => vfs::open_chrdev(st.rdev, io, flags),
            mode::S_IFBLK => vfs::open_blkdev(st.rdev, io, flags),
            _ => Err(Errno::ENXIO),
        }
    }

    fn id(&self) -> u64 {
        self.raw.ino as u64
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn create(&self, _: &[u8], _: u32, _: Owner) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EROFS)
    }
    fn mkdir(&self, _: &[u8], _: u32, _: Owner) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EROFS)
    }
    fn mknod(&self, _: &[u8], _: u32, _: u64, _: Owner) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EROFS)
    }
    fn symlink(&self, _: &[u8], _: &[u8], _: Owner) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EROFS)
    }
    fn link(&self, _: &[u8], _: &Arc<dyn Inode>) -> SysResult<()> {
        Err(Errno::EROFS)
    }
    fn unlink(&self, _: &[u8]) -> SysResult<()> {
        Err(Errno::EROFS)
    }
    fn rmdir(&self, _: &[u8]) -> SysResult<()> {
        Err(Errno::EROFS)
    }
    fn rename(&self, _: &[u8], _: &Arc<dyn Inode>, _: &[u8], _: u32) -> SysResult<()> {
        Err(Errno::EROFS)
    }
    fn setattr(&self, _: &SetAttr) -> SysResult<()> {
        Err(Errno::EROFS)
    }
    fn tmpfile(&self, _: u32, _: Owner, _: bool) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EROFS)
    }

    fn fs_id(&self) -> u64 {
        self.m.fs_id
    }

    fn statfs(&self) -> SysResult<Statfs> {
        let sb = &self.m.fs.sb;
        let u = &sb.uuid;
        let word = |i: usize| u32::from_le_bytes([u[i], u[i + 1], u[i + 2], u[i + 3]]) as u64;
        Ok(Statfs {
            // EXT4_SUPER_MAGIC; f_fsid as ext4_statfs makes it from the UUID.
            fs_type: 0xEF53,
            bsize: sb.block_size as i64,
            blocks: sb.blocks_count - sb.first_data_block as u64,
            bfree: sb.free_blocks,
            bavail: sb.free_blocks.saturating_sub(sb.r_blocks_count),
            files: sb.inodes_count as u64,
            ffree: sb.free_inodes as u64,
            fsid: (word(0) ^ word(8)) | (word(4) ^ word(12)) << 32,
            namelen: 255,
            frsize: sb.block_size as i64,
            flags: 0,
        })
    }

    fn fsflags(&self) -> Option<u32> {
        // EXT4_FL_USER_VISIBLE.
        Some(self.raw.flags & 0x705B_DFFF)
    }

    fn set_fsflags(&self, _flags: u32) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    fn has_xattrs(&self) -> bool {
        true
    }

    fn getxattr(&self, name: &[u8]) -> SysResult<Vec<u8>> {
        self.m
            .fs
            .xattrs(&self.raw)?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or(Errno::ENODATA)
    }

    fn setxattr(&self, _: &[u8], _: &[u8], _: u32) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    fn removexattr(&self, _: &[u8]) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    fn listxattr(&self) -> SysResult<Vec<Vec<u8>>> {
        Ok(self
            .m
            .fs
            .xattrs(&self.raw)?
            .into_iter()
            .map(|(n, _)| n)
            .collect())
    }
}

impl Ext4Inode {
    fn vm_file_arc(&self) -> Arc<Ext4Vm> {
        self.vm
            .get_or_init(|| {
                Arc::new(Ext4Vm {
                    m: self.m.clone(),
                    raw: self.raw.clone(),
                    id: self.vm_id(),
                    name: String::from_utf8_lossy(&self.path).into_owned(),
                })
            })
            .clone()
    }
}

/// An open directory: its entries as of the open (the file system does not change).
pub struct Ext4Dir {
    st: Kstat,
    entries: Vec<DirEntry>,
}

impl FileOps for Ext4Dir {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        Ok(self.entries.clone())
    }
}

/// An open regular file.
pub struct Ext4File {
    m: Arc<Mounted>,
    raw: RawInode,
    st: Kstat,
    vm: Arc<Ext4Vm>,
}

impl FileOps for Ext4File {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.m.fs.read(&self.raw, off, buf)
    }

    fn write(&self, _io: &IoCtx<'_>, _data: &[u8], _off: u64) -> SysResult<usize> {
        Err(Errno::EBADF)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }

    fn seek_data_hole(&self, off: u64, data: bool) -> SysResult<u64> {
        let size = self.raw.size;
        if off >= size {
            return Err(Errno::ENXIO);
        }
        if self.raw.has_flag(iflags::INLINE_DATA) {
            return Ok(if data { off } else { size });
        }
        // ext4_iomap_seek: walk the block map from `off`; unwritten extents count as holes
        // here (Linux looks at the page cache for them; this file system has nothing dirty).
        let bs = self.m.fs.sb.block_size as u64;
        let mut pos = off;
        while pos < size {
            let lblk = pos / bs;
            if lblk > u32::MAX as u64 {
                break;
            }
            let (is_data, len) = match self.m.fs.map(&self.raw, lblk as u32)? {
                crate::fs::Mapping::Mapped { len, unwritten, .. } => (!unwritten, len),
                crate::fs::Mapping::Hole { len } => (false, len),
            };
            if is_data == data {
                return Ok(pos.max(off));
            }
            pos = (lblk + len.max(1) as u64) * bs;
        }
        if data { Err(Errno::ENXIO) } else { Ok(size) }
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        Some(self.vm.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// The page-cache side of a regular file.
pub struct Ext4Vm {
    m: Arc<Mounted>,
    raw: RawInode,
    id: u64,
    name: String,
}

impl VmFile for Ext4Vm {
    fn id(&self) -> u64 {
        self.id
    }

    fn size(&self) -> u64 {
        self.raw.size
    }

    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.m.fs.read(&self.raw, offset, buf)
    }

    fn write_page(&self, _offset: u64, _data: &[u8]) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
