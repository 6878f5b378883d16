//! memfd files (Linux mm/memfd.c on top of mm/shmem.c): anonymous tmpfs files with seals.
//!
//! A memfd is a regular tmpfs file that was never linked anywhere: it is created in a private
//! tmpfs instance (Linux's internal `shm_mnt`) and unlinked at once, so `st_nlink` is 0, and it
//! lives while descriptors or mappings hold it. Its dentry has the name Linux shows,
//! `memfd:NAME (deleted)` under `/`, so `/proc/PID/fd/N` reads `/memfd:NAME (deleted)` and can
//! be opened again through that magic link. The mode is 0777 and the owner the caller's
//! fsuid/fsgid (`shmem_get_inode(..., S_IFREG | S_IRWXUGO, ...)`).
//!
//! Seals (`F_ADD_SEALS`, `F_GET_SEALS`, mm/memfd.c `memfd_add_seals`): a [`MemfdInode`] wraps
//! the tmpfs inode and a [`MemfdFile`] wraps its open file, and they refuse what the seals
//! forbid, as shmem does: `F_SEAL_WRITE` and `F_SEAL_FUTURE_WRITE` make `write` `EPERM`
//! (`shmem_write_begin`), `F_SEAL_GROW` refuses writes past the end and growing truncates,
//! `F_SEAL_SHRINK` shrinking truncates (`shmem_setattr`), and `F_SEAL_SEAL` refuses further
//! seals, and a new `MAP_SHARED` mapping with `PROT_WRITE` is `EPERM` under `F_SEAL_WRITE` or
//! `F_SEAL_FUTURE_WRITE` (`FileOps::may_mmap`). `fallocate` (`shmem_fallocate`): punching a
//! hole is a write (`EPERM` under the write seals), allocating past the end is growing
//! (`EPERM` under `F_SEAL_GROW`, even with `FALLOC_FL_KEEP_SIZE`). `F_SEAL_WRITE` is `EBUSY`
//! while a shared mapping may still write the file (`mapping_deny_writable`); so once sealed,
//! every shared mapping left lacks `VM_MAYWRITE` and `mprotect` cannot make it writable.
//!
//! `MFD_HUGETLB` (mm/memfd.c: `hugetlb_file_setup` instead of `shmem_file_setup`): the file
//! is a [`crate::hugetlbfs`] file of the internal mount of the chosen huge page size, with
//! the same seals (hugetlbfs keeps seals since Linux 4.16); hugetlbfs's own rules apply
//! under them (`write` is `EINVAL`, sizes are multiples of the huge page size).

use crate::tmpfs::TmpFs;
use std::any::Any;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::task::lock;
use um_kernel::vfs::{
    Dentry, DirEntry, FileOps, GuestMem, Inode, Kstat, OpenFile, Owner, SetAttr, Statfs,
};
use um_kernel::wait::{IoCtx, PollTable};
use um_mm::VmFile;
use um_uapi::{Errno, SysResult};

pub use um_uapi::abi::fcntl::F_SEAL_FUTURE_WRITE;
pub use um_uapi::abi::fcntl::F_SEAL_GROW;
pub use um_uapi::abi::fcntl::F_SEAL_SEAL;
pub use um_uapi::abi::fcntl::F_SEAL_SHRINK;
pub use um_uapi::abi::fcntl::F_SEAL_WRITE;
/// `F_ALL_SEALS` (Linux 6.1; `F_SEAL_EXEC` came in 6.3).
pub const F_ALL_SEALS: u32 =
    F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;
/// `F_ADD_SEALS`.
pub const F_ADD_SEALS: u64 = 1033;
/// `F_GET_SEALS`.
pub const F_GET_SEALS: u64 = 1034;

/// The private tmpfs instance memfds are made in (Linux `shm_mnt`).
fn shm_root() -> &'static Arc<dyn Inode> {
    static ROOT: OnceLock<Arc<dyn Inode>> = OnceLock::new();
    ROOT.get_or_init(|| TmpFs::new_root_inode(0o1777, 0, 0))
}

/// A memfd's inode: the tmpfs inode plus its seals.
pub struct MemfdInode {
    inner: Arc<dyn Inode>,
    /// A `MFD_HUGETLB` memfd (the inner file is a hugetlbfs one).
    hugetlb: bool,
    seals: AtomicU32,
    me: Weak<MemfdInode>,
}

impl MemfdInode {
    /// The seals now.
    pub fn seals(&self) -> u32 {
        self.seals.load(Ordering::Acquire)
    }

    /// `memfd_add_seals` after the caller checked `FMODE_WRITE`: `EINVAL` for unknown seals,
    /// `EPERM` once `F_SEAL_SEAL` is set, `EBUSY` for a new `F_SEAL_WRITE` while
    /// `mapped_writable` says a shared mapping may still write the file
    /// (`mapping_deny_writable`).
    pub fn add_seals(&self, seals: u32, mapped_writable: impl FnOnce() -> bool) -> SysResult<()> {
        if seals & !F_ALL_SEALS != 0 {
            return Err(Errno::EINVAL);
        }
        let now = self.seals();
        if now & F_SEAL_SEAL != 0 {
            return Err(Errno::EPERM);
        }
        if seals & F_SEAL_WRITE != 0 && now & F_SEAL_WRITE == 0 && mapped_writable() {
            return Err(Errno::EBUSY);
        }
        self.seals
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & F_SEAL_SEAL == 0).then_some(s | seals)
            })
            .map(|_| ())
            .map_err(|_| Errno::EPERM)
    }

    fn size(&self) -> SysResult<u64> {
        Ok(self.inner.stat()?.size.max(0) as u64)
    }
}

/// Creates a memfd named `memfd:NAME` owned by `owner`, with `F_SEAL_SEAL` set unless
/// `allow_sealing` (`MFD_ALLOW_SEALING`); returns its dentry (`/memfd:NAME (deleted)`).
/// `huge`: the huge page size of a `MFD_HUGETLB` memfd (a hugetlbfs file).
pub fn create(
    name: &[u8],
    owner: Owner,
    allow_sealing: bool,
    huge: Option<u64>,
) -> SysResult<Arc<Dentry>> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut shown = b"memfd:".to_vec();
    shown.extend_from_slice(name);
    shown.extend_from_slice(b" (deleted)");
    let root = shm_root();
    let inner: Arc<dyn Inode> = match huge {
        Some(size) => {
            let path = format!("/{}", String::from_utf8_lossy(&shown));
            crate::hugetlbfs::file_setup(size, 0, owner, path)?
        }
        None => {
            let tmp_name = format!("memfd-{}", NEXT.fetch_add(1, Ordering::Relaxed));
            let inner = root.create(tmp_name.as_bytes(), 0o777, owner)?;
            root.unlink(tmp_name.as_bytes())?;
            inner
        }
    };
    let inode = Arc::new_cyclic(|me| MemfdInode {
        hugetlb: huge.is_some(),
        inner,
        seals: AtomicU32::new(if allow_sealing { 0 } else { F_SEAL_SEAL }),
        me: me.clone(),
    });
    let parent = Dentry::root(root.clone());
    Ok(Dentry::child(&parent, &shown, inode))
}

/// The memfd behind an open file, if it is one.
pub fn memfd_of(f: &OpenFile) -> Option<&MemfdInode> {
    f.ops
        .as_any()
        .and_then(|a| a.downcast_ref::<MemfdFile>())
        .map(|m| &*m.inode)
}

/// `memfd_fcntl` (mm/memfd.c): `F_ADD_SEALS` needs a writable descriptor (`EPERM`) and an
/// argument that fits an `unsigned int` (`EINVAL`); both are `EINVAL` on other files. A new
/// write seal looks through every address space of `k` for a shared mapping that may write
/// the file (Linux keeps that count in `i_mmap_writable`; a mapping made while the seal is
/// being added, between this scan and the seal, is not seen).
pub fn fcntl(k: &Kernel, f: &OpenFile, cmd: u64, arg: u64) -> SysResult<u64> {
    match cmd {
        F_ADD_SEALS => {
            if arg > u64::from(u32::MAX) {
                return Err(Errno::EINVAL);
            }
            if f.flags() & 3 == 0 || f.flags() & 3 == 3 {
                return Err(Errno::EPERM);
            }
            let mapped_writable = || {
                let Some(id) = f.ops.vm_file().map(|v| v.id()) else {
                    return false;
                };
                k.tasks
                    .processes()
                    .iter()
                    .any(|p| lock(&lock(&p.mm).clone()).maps_shared_writable(id))
            };
            memfd_of(f)
                .ok_or(Errno::EINVAL)?
                .add_seals(arg as u32, mapped_writable)?;
            Ok(0)
        }
        F_GET_SEALS => Ok(u64::from(memfd_of(f).ok_or(Errno::EINVAL)?.seals())),
        _ => Err(Errno::EINVAL),
    }
}

impl Inode for MemfdInode {
    fn stat(&self) -> SysResult<Kstat> {
        self.inner.stat()
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let inner = self.inner.open(io, flags)?;
        let inode = self.me.upgrade().ok_or(Errno::ENOENT)?;
        Ok(Box::new(MemfdFile { inner, inode }))
    }

    fn id(&self) -> u64 {
        self.inner.id()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// `shmem_setattr`: size changes against `F_SEAL_SHRINK` / `F_SEAL_GROW`.
    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        if let Some(new) = attr.size {
            // hugetlbfs_setattr checks the huge page multiple before the seals.
            if let Some(h) = self
                .inner
                .as_any()
                .downcast_ref::<crate::hugetlbfs::HugeInode>()
                && new % h.huge_page_size() != 0
            {
                return Err(Errno::EINVAL);
            }
            let seals = self.seals();
            let old = self.size()?;
            if new < old && seals & F_SEAL_SHRINK != 0 || new > old && seals & F_SEAL_GROW != 0 {
                return Err(Errno::EPERM);
            }
        }
        self.inner.setattr(attr)
    }

    fn fsync(&self, datasync: bool) -> SysResult<()> {
        self.inner.fsync(datasync)
    }

    fn fs_id(&self) -> u64 {
        self.inner.fs_id()
    }

    fn statfs(&self) -> SysResult<Statfs> {
        self.inner.statfs()
    }

    // A memfd is a shmem (or hugetlbfs) file: its attributes are the inner inode's.
    fn has_xattrs(&self) -> bool {
        self.inner.has_xattrs()
    }

    fn getxattr(&self, name: &[u8]) -> SysResult<Vec<u8>> {
        self.inner.getxattr(name)
    }

    fn setxattr(&self, name: &[u8], value: &[u8], flags: u32) -> SysResult<()> {
        self.inner.setxattr(name, value, flags)
    }

    fn removexattr(&self, name: &[u8]) -> SysResult<()> {
        self.inner.removexattr(name)
    }

    fn listxattr(&self) -> SysResult<Vec<Vec<u8>>> {
        self.inner.listxattr()
    }

    /// `shmem_fallocate`'s seal checks, then tmpfs's fallocate.
    fn fallocate(&self, mode: u32, offset: u64, len: u64) -> Option<SysResult<()>> {
        const KEEP_SIZE: u32 = 1;
        const PUNCH_HOLE: u32 = 2;
        let seals = self.seals();
        match mode {
            m if m == PUNCH_HOLE | KEEP_SIZE
                && seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 =>
            {
                return Some(Err(Errno::EPERM));
            }
            0 | KEEP_SIZE if seals & F_SEAL_GROW != 0 => match self.size() {
                Ok(size) if offset.saturating_add(len) > size => return Some(Err(Errno::EPERM)),
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            },
            _ => {}
        }
        self.inner.fallocate(mode, offset, len)
    }
}

/// An open memfd.
pub struct MemfdFile {
    inner: Box<dyn FileOps>,
    inode: Arc<MemfdInode>,
}

impl FileOps for MemfdFile {
    /// A regular file has no poll method (epoll_ctl refuses it with EPERM; poll and select
    /// call it always ready).
    fn can_poll(&self) -> bool {
        false
    }

    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.inner.read(io, buf, off)
    }

    /// `shmem_write_begin`: no writes under `F_SEAL_WRITE`/`F_SEAL_FUTURE_WRITE`, none past
    /// the end under `F_SEAL_GROW`.
    fn write(&self, io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        // hugetlbfs has no write at all: vfs_write's EINVAL comes before any seal.
        if self.inode.hugetlb {
            return Err(Errno::EINVAL);
        }
        let seals = self.inode.seals();
        if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
            return Err(Errno::EPERM);
        }
        if seals & F_SEAL_GROW != 0 && off.saturating_add(data.len() as u64) > self.inode.size()? {
            return Err(Errno::EPERM);
        }
        self.inner.write(io, data, off)
    }

    fn stat(&self) -> SysResult<Kstat> {
        self.inner.stat()
    }

    fn size(&self) -> SysResult<u64> {
        self.inner.size()
    }

    fn seek_data_hole(&self, off: u64, data: bool) -> SysResult<u64> {
        self.inner.seek_data_hole(off, data)
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        self.inner.readdir()
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        self.inner.ioctl(io, cmd, arg, mem)
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        self.inner.poll(events, pt)
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        self.inner.vm_file()
    }

    /// No writable shared mapping under `F_SEAL_WRITE` (`mapping_map_writable`) or
    /// `F_SEAL_FUTURE_WRITE` (`seal_check_future_write`).
    fn may_mmap(&self, shared_write: bool) -> SysResult<()> {
        if shared_write && self.inode.seals() & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memfd(allow: bool) -> Arc<MemfdInode> {
        let d = create(b"t", Owner::default(), allow, None).unwrap();
        assert_eq!(d.path(), b"/memfd:t (deleted)".to_vec());
        let st = d.inode.stat().unwrap();
        assert_eq!(st.mode, 0o100777);
        assert_eq!(st.nlink, 0, "never linked");
        let any = d.inode.as_any();
        let m = any.downcast_ref::<MemfdInode>().unwrap();
        m.me.upgrade().unwrap()
    }

    #[test]
    fn sealing_needs_allow_sealing() {
        let m = memfd(false);
        assert_eq!(m.seals(), F_SEAL_SEAL);
        assert_eq!(m.add_seals(F_SEAL_GROW, || false), Err(Errno::EPERM));
    }

    #[test]
    fn seals_accumulate_until_seal_seal() {
        let m = memfd(true);
        assert_eq!(m.seals(), 0);
        assert_eq!(
            m.add_seals(0x20, || false),
            Err(Errno::EINVAL),
            "unknown seal"
        );
        m.add_seals(F_SEAL_GROW, || false).unwrap();
        m.add_seals(F_SEAL_SHRINK | F_SEAL_SEAL, || false).unwrap();
        assert_eq!(m.seals(), F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
        assert_eq!(m.add_seals(F_SEAL_WRITE, || false), Err(Errno::EPERM));
    }

    #[test]
    fn size_seals_refuse_truncate() {
        let m = memfd(true);
        let grow = SetAttr {
            size: Some(100),
            ..Default::default()
        };
        m.setattr(&grow).unwrap();
        m.add_seals(F_SEAL_GROW | F_SEAL_SHRINK, || false).unwrap();
        let bigger = SetAttr {
            size: Some(200),
            ..Default::default()
        };
        let smaller = SetAttr {
            size: Some(50),
            ..Default::default()
        };
        assert_eq!(m.setattr(&bigger), Err(Errno::EPERM));
        assert_eq!(m.setattr(&smaller), Err(Errno::EPERM));
        m.setattr(&grow).unwrap();
        assert_eq!(m.stat().unwrap().size, 100);
    }

    #[test]
    fn seals_refuse_fallocate() {
        let m = memfd(true);
        assert_eq!(m.fallocate(0, 0, 100), Some(Ok(())));
        assert_eq!(m.stat().unwrap().size, 100);
        m.add_seals(F_SEAL_GROW, || false).unwrap();
        assert_eq!(m.fallocate(1, 50, 100), Some(Err(Errno::EPERM)));
        assert_eq!(m.fallocate(0, 0, 100), Some(Ok(())));
        assert_eq!(m.fallocate(3, 0, 100), Some(Ok(())));
        m.add_seals(F_SEAL_WRITE, || false).unwrap();
        assert_eq!(m.fallocate(3, 0, 100), Some(Err(Errno::EPERM)));
        assert_eq!(m.fallocate(8, 0, 100), Some(Err(Errno::EOPNOTSUPP)));
    }

    #[test]
    fn write_seal_waits_for_writable_shared_mappings() {
        let m = memfd(true);
        // A shared mapping that may write blocks F_SEAL_WRITE only, and only a new one.
        assert_eq!(m.add_seals(F_SEAL_WRITE, || true), Err(Errno::EBUSY));
        assert_eq!(m.seals(), 0);
        m.add_seals(F_SEAL_SHRINK, || true).unwrap();
        m.add_seals(F_SEAL_WRITE, || false).unwrap();
        m.add_seals(F_SEAL_WRITE | F_SEAL_GROW, || true).unwrap();
        assert_eq!(m.seals(), F_SEAL_SHRINK | F_SEAL_WRITE | F_SEAL_GROW);
    }
}
