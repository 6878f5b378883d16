//! The kernel's view of a mounted ext4 (Linux `fs/ext4/file.c`, `dir.c`, `symlink.c` and the
//! inode operations of `namei.c`): [`Ext4Inode`] is a `um_kernel::vfs::Inode`, its open files
//! are [`Ext4File`] (regular files, with a [`Ext4Vm`] for `mmap` and exec through the kernel's
//! page cache) and [`Ext4Dir`]; device nodes and FIFOs open the kernel's drivers and pipes by
//! number, as on every other file system.
//!
//! On a read-write mount the namespace and attribute changes go to [`crate::write`]; an
//! inode object keeps only its number and rereads the inode (from the block cache) for each
//! use, so every object of one inode sees every change. `write(2)` writes through to the
//! device and into the cached pages (`PageCache::update`), truncate drops the pages past
//! the end; an unlinked file still open is freed at its last close. Read-only mounts give
//! `EROFS`. Page-cache pages are filled from [`Ext4::read`] at the guest's page size,
//! whatever the block size (1K blocks under 16K pages read 16 blocks per page).
//! Neighbours: [`crate::fs`] (the file system), `um_fs::mount` (the mount table).

use crate::disk::{RawInode, iflags};
use crate::fs::Ext4;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use um_kernel::vfs::{self, DirEntry, FileOps, Inode, Kstat, Owner, SetAttr, Statfs, mode};
use um_kernel::wait::IoCtx;
use um_mm::VmFile;
use um_uapi::{Errno, SysResult};

/// One mounted instance: the file system and its identity in the mount table.
pub struct Mounted {
    pub fs: Ext4,
    pub fs_id: u64,
    /// The page-cache object of each regular file in use: open files and mappings hold it
    /// (`Ext4File`, the VMAs), so an unlinked inode is freed when the last of them goes.
    pub vms: Mutex<HashMap<u32, Weak<Ext4Vm>>>,
}

impl Mounted {
    /// The page-cache key of inode `ino`: distinct from hostfs ids (bit 63 clear) and tmpfs
    /// ones (bit 62 clear there), unique per mount and inode.
    fn vm_id(&self, ino: u32) -> u64 {
        (3 << 62) | ((self.fs_id & 0xf_ffff) << 40) | ino as u64
    }

    /// Frees inode `ino` (its last link is gone) unless a file is still open or mapped on
    /// it; then it goes on the orphan list until [`Ext4Vm`]'s drop.
    fn release(&self, ino: u32) -> SysResult<()> {
        let vms = um_kernel::task::lock(&self.vms);
        if vms.get(&ino).is_some_and(|w| w.strong_count() > 0) {
            return self.fs.orphan_add(ino);
        }
        if let Some(c) = um_fs::mount::page_cache() {
            c.invalidate(self.vm_id(ino));
        }
        self.fs.evict_if_unlinked(ino)
    }
}

/// An inode of a mounted ext4.
pub struct Ext4Inode {
    m: Arc<Mounted>,
    ino: u32,
    /// The path from the file system's root, for `/proc/PID/maps`.
    path: Vec<u8>,
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
        m.fs.inode(crate::disk::ROOT_INO)?;
        Ok(Arc::new(Ext4Inode {
            m,
            ino: crate::disk::ROOT_INO,
            path: Vec::new(),
        }))
    }

    /// The inode as it is now.
    fn raw(&self) -> SysResult<RawInode> {
        self.m.fs.inode(self.ino)
    }

    fn child(&self, name: &[u8], ino: u32) -> Arc<dyn Inode> {
        let mut path = self.path.clone();
        path.push(b'/');
        path.extend_from_slice(name);
        Arc::new(Ext4Inode {
            m: self.m.clone(),
            ino,
            path,
        })
    }

    /// The other inode of a two-inode operation, on this same mount (`EXDEV` otherwise).
    fn same_fs<'a>(&self, other: &'a Arc<dyn Inode>) -> SysResult<&'a Ext4Inode> {
        let o = other
            .as_any()
            .downcast_ref::<Ext4Inode>()
            .ok_or(Errno::EXDEV)?;
        if !Arc::ptr_eq(&o.m, &self.m) {
            return Err(Errno::EXDEV);
        }
        Ok(o)
    }

    fn new_child(
        &self,
        name: &[u8],
        mode: u32,
        owner: Owner,
        rdev: (u32, u32),
        target: Option<&[u8]>,
    ) -> SysResult<Arc<dyn Inode>> {
        let ino = self
            .m
            .fs
            .create(self.ino, name, mode, owner.uid, owner.gid, rdev, target)?;
        // A reused number must not find the old file's pages.
        if let Some(c) = um_fs::mount::page_cache() {
            c.invalidate(self.m.vm_id(ino));
        }
        Ok(self.child(name, ino))
    }

    fn kstat(&self) -> SysResult<Kstat> {
        let r = &self.raw()?;
        let rdev = if matches!(r.fmt(), mode::S_IFCHR | mode::S_IFBLK) {
            let (ma, mi) = r.rdev();
            vfs::encode_dev(ma, mi)
        } else {
            0
        };
        Ok(Kstat {
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
        })
    }

    fn vm_id(&self) -> u64 {
        self.m.vm_id(self.ino)
    }

    fn entries(&self) -> SysResult<Vec<DirEntry>> {
        let all = {
            let _g = self.m.fs.read_guard();
            self.m.fs.dir_entries(&self.raw()?)?
        };
        let parent = all
            .iter()
            .find(|e| e.name == b"..")
            .map(|e| e.ino)
            .unwrap_or(self.ino);
        let mut out = vec![
            DirEntry {
                ino: self.ino as u64,
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
        self.kstat()
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        let raw = self.raw()?;
        if raw.fmt() != mode::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        let ino = {
            let _g = self.m.fs.read_guard();
            let raw = self.raw()?;
            self.m.fs.lookup(&raw, name)?.ok_or(Errno::ENOENT)?
        };
        self.m.fs.inode(ino)?;
        Ok(self.child(name, ino))
    }

    fn readlink(&self) -> SysResult<Vec<u8>> {
        let raw = self.raw()?;
        if raw.fmt() != mode::S_IFLNK {
            return Err(Errno::EINVAL);
        }
        let _g = self.m.fs.read_guard();
        self.m.fs.readlink(&self.raw()?)
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let write = flags & 3 != 0;
        let st = self.kstat()?;
        let raw = self.raw()?;
        match raw.fmt() {
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
                if write && !self.m.fs.writable() {
                    return Err(Errno::EROFS);
                }
                Ok(Box::new(Ext4File {
                    m: self.m.clone(),
                    ino: self.ino,
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
        self.ino as u64
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn create(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.new_child(name, mode::S_IFREG | (mode & 0o7777), owner, (0, 0), None)
    }
    fn mkdir(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.new_child(name, mode::S_IFDIR | (mode & 0o7777), owner, (0, 0), None)
    }
    fn mknod(&self, name: &[u8], mode: u32, rdev: u64, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        let dev = vfs::decode_dev(rdev);
        self.new_child(name, mode, owner, dev, None)
    }
    fn symlink(&self, name: &[u8], target: &[u8], owner: Owner) -> SysResult<Arc<dyn Inode>> {
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        if target.len() >= self.m.fs.sb.block_size as usize {
            return Err(Errno::ENAMETOOLONG);
        }
        self.new_child(name, mode::S_IFLNK | 0o777, owner, (0, 0), Some(target))
    }
    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> SysResult<()> {
        let t = self.same_fs(target)?;
        self.m.fs.link(self.ino, name, t.ino)
    }
    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        let (ino, gone) = self.m.fs.unlink(self.ino, name, false)?;
        if gone {
            self.m.release(ino)?;
        }
        Ok(())
    }
    fn rmdir(&self, name: &[u8]) -> SysResult<()> {
        let (ino, _) = self.m.fs.unlink(self.ino, name, true)?;
        self.m.release(ino)
    }
    fn rename(
        &self,
        old: &[u8],
        new_dir: &Arc<dyn Inode>,
        new: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        let nd = self.same_fs(new_dir)?;
        if let Some(gone) = self.m.fs.rename(self.ino, old, nd.ino, new, flags)? {
            self.m.release(gone)?;
        }
        Ok(())
    }
    fn setattr(&self, a: &SetAttr) -> SysResult<()> {
        if !self.m.fs.writable() {
            return Err(Errno::EROFS);
        }
        let t = |x: Option<vfs::TimeSet>| {
            x.map(|x| match x {
                vfs::TimeSet::Now => crate::write::now(),
                vfs::TimeSet::At(s, n) => (s, n),
            })
        };
        if let Some(size) = a.size {
            let raw = self.raw()?;
            if raw.fmt() == mode::S_IFDIR {
                return Err(Errno::EISDIR);
            }
            if raw.fmt() != mode::S_IFREG {
                return Err(Errno::EINVAL);
            }
            self.truncate_to(raw.size, size)?;
        }
        if a.mode.is_some()
            || a.uid.is_some()
            || a.gid.is_some()
            || a.atime.is_some()
            || a.mtime.is_some()
        {
            self.m
                .fs
                .set_attr(self.ino, a.mode, a.uid, a.gid, t(a.atime), t(a.mtime))?;
        }
        Ok(())
    }
    fn fsync(&self, _datasync: bool) -> SysResult<()> {
        if self.m.fs.writable() {
            self.m.fs.sync()?;
        }
        Ok(())
    }
    fn tmpfile(&self, _: u32, _: Owner, _: bool) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::EOPNOTSUPP)
    }
    fn fallocate(&self, mode: u32, offset: u64, len: u64) -> Option<SysResult<()>> {
        if !self.m.fs.writable() {
            return Some(Err(Errno::EROFS));
        }
        Some(self.punch_or_allocate(mode, offset, len))
    }

    fn fs_id(&self) -> u64 {
        self.m.fs_id
    }

    fn statfs(&self) -> SysResult<Statfs> {
        let sb = &self.m.fs.sb;
        let (bfree, ffree) = self.m.fs.free_counts();
        let u = &sb.uuid;
        let word = |i: usize| u32::from_le_bytes([u[i], u[i + 1], u[i + 2], u[i + 3]]) as u64;
        Ok(Statfs {
            // EXT4_SUPER_MAGIC; f_fsid as ext4_statfs makes it from the UUID.
            fs_type: 0xEF53,
            bsize: sb.block_size as i64,
            blocks: sb.blocks_count - sb.first_data_block as u64,
            bfree,
            bavail: bfree.saturating_sub(sb.r_blocks_count),
            files: sb.inodes_count as u64,
            ffree,
            fsid: (word(0) ^ word(8)) | (word(4) ^ word(12)) << 32,
            namelen: 255,
            frsize: sb.block_size as i64,
            // ST_RDONLY for an instance mounted read-only (SB_RDONLY).
            flags: if self.m.fs.writable() {
                0
            } else {
                um_uapi::abi::fcntl::ST_RDONLY
            },
        })
    }

    fn fsflags(&self) -> Option<u32> {
        // EXT4_FL_USER_VISIBLE.
        Some(self.raw().map(|r| r.flags).unwrap_or(0) & 0x705B_DFFF)
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
            .xattrs(&self.raw()?)?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or(Errno::ENODATA)
    }

    fn setxattr(&self, name: &[u8], value: &[u8], flags: u32) -> SysResult<()> {
        self.m.fs.set_xattr(self.ino, name, Some(value), flags)
    }

    fn removexattr(&self, name: &[u8]) -> SysResult<()> {
        self.m.fs.set_xattr(self.ino, name, None, 0)
    }

    fn listxattr(&self) -> SysResult<Vec<Vec<u8>>> {
        Ok(self
            .m
            .fs
            .xattrs(&self.raw()?)?
            .into_iter()
            .map(|(n, _)| n)
            .collect())
    }
}

impl Ext4Inode {
    /// The inode's page-cache object: the one in use, else a new one.
    fn vm_file_arc(&self) -> Arc<Ext4Vm> {
        let mut vms = um_kernel::task::lock(&self.m.vms);
        if let Some(v) = vms.get(&self.ino).and_then(Weak::upgrade) {
            return v;
        }
        let v = Arc::new(Ext4Vm {
            m: self.m.clone(),
            ino: self.ino,
            id: self.vm_id(),
            name: String::from_utf8_lossy(&self.path).into_owned(),
        });
        vms.insert(self.ino, Arc::downgrade(&v));
        v
    }

    /// fallocate with the page cache kept right: a punched range leaves the cache and every
    /// mapping, the partial pages at its edges are zeroed in the cache (as tmpfs's
    /// `punch_range`).
    fn punch_or_allocate(&self, mode: u32, offset: u64, len: u64) -> SysResult<()> {
        const PUNCH: u32 = 3;
        let cache = um_fs::mount::page_cache();
        let id = self.vm_id();
        let ps = um_mm::page_size();
        let end = offset.saturating_add(len);
        let (lo, hi) = (offset.div_ceil(ps), end / ps);
        if mode == PUNCH
            && let Some(c) = cache
            && lo < hi
        {
            c.unmap_mapping_range(id, lo, hi - 1, false);
        }
        self.m.fs.fallocate(self.ino, mode, offset, len)?;
        if mode == PUNCH
            && let Some(c) = cache
        {
            if lo < hi {
                c.zero_range(id, offset, lo * ps);
                c.zero_range(id, hi * ps, end);
                c.drop_range(id, lo, hi - 1);
                c.unmap_mapping_range(id, lo, hi - 1, false);
            } else {
                c.zero_range(id, offset, end);
            }
        }
        Ok(())
    }

    /// Truncate with the page cache kept right (as tmpfs's `truncate_range`, Linux
    /// `truncate_pagecache`): pages wholly past the new end leave every mapping and the
    /// cache; the tail of the new last page is zeroed in the cache as on the disk.
    fn truncate_to(&self, old: u64, size: u64) -> SysResult<()> {
        let ps = um_mm::page_size();
        let id = self.vm_id();
        let hole = size.div_ceil(ps);
        let cache = um_fs::mount::page_cache();
        let unmap = old > hole * ps;
        if let Some(c) = cache
            && unmap
        {
            c.unmap_mapping_range(id, hole, u64::MAX, true);
        }
        self.m.fs.truncate(self.ino, size)?;
        if let Some(c) = cache {
            if size <= old {
                c.zero_range(id, size, hole * ps);
                c.drop_range(id, hole, u64::MAX);
            }
            if unmap {
                c.unmap_mapping_range(id, hole, u64::MAX, true);
            }
        }
        Ok(())
    }
}

/// An open directory: its entries as of the open.
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
    ino: u32,
    vm: Arc<Ext4Vm>,
}

impl FileOps for Ext4File {
    /// The file's blocks, with the cached pages over them (a shared mapping's writes not
    /// yet written back are there).
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let n = {
            let _g = self.m.fs.read_guard();
            let raw = self.m.fs.inode(self.ino)?;
            self.m.fs.read(&raw, off, buf)?
        };
        if let Some(c) = um_fs::mount::page_cache() {
            c.read_cached(self.vm.id, off, &mut buf[..n]);
        }
        Ok(n)
    }

    fn write(&self, _io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        let n = self.m.fs.write_file(self.ino, off, data)?;
        if let Some(c) = um_fs::mount::page_cache() {
            c.update(self.vm.id, off, &data[..n]);
        }
        Ok(n)
    }

    fn stat(&self) -> SysResult<Kstat> {
        let raw = self.m.fs.inode(self.ino)?;
        Ok(Kstat {
            dev: self.m.fs.rdev(),
            ino: raw.ino as u64,
            mode: raw.mode as u32,
            nlink: raw.links as u64,
            uid: raw.uid,
            gid: raw.gid,
            rdev: 0,
            size: raw.size as i64,
            blksize: self.m.fs.sb.block_size as i64,
            blocks: raw.blocks as i64,
            atime: raw.atime,
            mtime: raw.mtime,
            ctime: raw.ctime,
        })
    }

    fn fsync(&self, _datasync: bool) -> Option<SysResult<()>> {
        Some(if self.m.fs.writable() {
            self.m.fs.sync()
        } else {
            Ok(())
        })
    }

    fn seek_data_hole(&self, off: u64, data: bool) -> SysResult<u64> {
        let raw = self.m.fs.inode(self.ino)?;
        let size = raw.size;
        if off >= size {
            return Err(Errno::ENXIO);
        }
        if raw.has_flag(iflags::INLINE_DATA) {
            return Ok(if data { off } else { size });
        }
        // ext4_iomap_seek: walk the block map from `off`; unwritten extents count as holes
        // here (Linux looks at the page cache for them; writes here go to the disk at once).
        let bs = self.m.fs.sb.block_size as u64;
        let mut pos = off;
        while pos < size {
            let lblk = pos / bs;
            if lblk > u32::MAX as u64 {
                break;
            }
            let (is_data, len) = match self.m.fs.map(&raw, lblk as u32)? {
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
    ino: u32,
    id: u64,
    name: String,
}

impl Drop for Ext4Vm {
    /// The last open file and mapping of the inode are gone: an unlinked one is freed now.
    fn drop(&mut self) {
        {
            let mut vms = um_kernel::task::lock(&self.m.vms);
            if vms.get(&self.ino).is_some_and(|w| w.strong_count() == 0) {
                vms.remove(&self.ino);
            }
        }
        if !self.m.fs.writable() {
            return;
        }
        let unlinked = self.m.fs.inode(self.ino).is_ok_and(|r| r.links == 0);
        if unlinked && let Err(e) = self.m.release(self.ino) {
            log::warn!(
                "EXT4-fs ({}): inode #{}: freeing at last close failed: {e:?}",
                self.m.fs.dev_name(),
                self.ino
            );
        }
    }
}

impl VmFile for Ext4Vm {
    fn id(&self) -> u64 {
        self.id
    }

    fn size(&self) -> u64 {
        self.m.fs.inode(self.ino).map(|r| r.size).unwrap_or(0)
    }

    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let _g = self.m.fs.read_guard();
        let raw = self.m.fs.inode(self.ino)?;
        self.m.fs.read(&raw, offset, buf)
    }

    /// A dirty shared page goes back to its blocks, never past the end of the file.
    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let size = self.size();
        if offset >= size {
            return Ok(());
        }
        let n = ((size - offset) as usize).min(data.len());
        self.m
            .fs
            .write_file(self.ino, offset, &data[..n])
            .map(|_| ())
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
