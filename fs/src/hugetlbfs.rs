//! hugetlbfs (Linux fs/hugetlbfs/inode.c): files whose memory comes from a huge page pool.
//!
//! We run on the host's ordinary pages, so a huge page of a file here is ordinary memory of
//! the huge size: the data lives in a tmpfs file ([`crate::tmpfs::TmpInode`], page-granular
//! and sparse) and the page cache maps it page by page. What makes the file a hugetlbfs file
//! is the accounting and the geometry, both kept as Linux does (the pool and the rules for
//! mappings are `um_mm::hugetlb`):
//! - each huge page index of the file is *reserved* (by a shared mapping,
//!   `hugetlb_reserve_pages`: the file keeps the reservation until truncate) or *allocated*
//!   (by `fallocate`, or when a mapping faults a reserved page in), [`HugePages`]; truncate,
//!   hole punching and the file's end give them back to the pool;
//! - `write(2)` is `EINVAL` (hugetlbfs has no `write_iter`: data goes in through mappings),
//!   `read(2)` works; `ftruncate` to a size that is not a multiple of the huge page size is
//!   `EINVAL` (`hugetlbfs_setattr`); `fallocate` allocates whole huge pages (`ENOSPC` when
//!   the pool is out) or punches the whole ones in the range;
//! - `st_blksize` and `statfs`'s `f_bsize` are the huge page size; `HUGETLBFS_MAGIC`.
//!
//! Files come from the kernel's internal mounts, one per size (Linux `hugetlbfs_vfsmount[]`):
//! [`file_setup`] makes an unlinked one for `memfd_create(MFD_HUGETLB)` and for anonymous
//! `MAP_HUGETLB` mappings (registered with `um_mm::hugetlb::set_file_setup`), or from
//! `mount -t hugetlbfs [-o pagesize=,mode=,uid=,gid=]` ([`HugeDir`] wraps a tmpfs tree and
//! gives each regular file one [`HugeInode`]). `size=`, `min_size=` and `nr_inodes=` are
//! accepted and not enforced. Neighbours: [`crate::memfd`], `procfs/system.rs` (meminfo,
//! `/proc/sys/vm/nr_hugepages`), `sysfs.rs` (`/sys/kernel/mm/hugepages`).

use crate::tmpfs::{TmpFs, TmpInode};
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, GuestMem, Inode, Kstat, Owner, SetAttr, Statfs, mode, new_fs_id};
use um_kernel::wait::{IoCtx, PollTable};
use um_mm::VmFile;
use um_mm::hugetlb::{Pool, Reservation, pool};
use um_uapi::{Errno, SysResult};

/// `HUGETLBFS_MAGIC`.
pub const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;
/// `FALLOC_FL_KEEP_SIZE`.
const FALLOC_FL_KEEP_SIZE: u32 = 1;
/// `FALLOC_FL_PUNCH_HOLE`.
const FALLOC_FL_PUNCH_HOLE: u32 = 2;

/// What one huge page of a file holds from the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// Reserved by a shared mapping (counted in `HugePages_Rsvd`).
    Reserved,
    /// Allocated (no longer free).
    Allocated,
}

/// The huge pages of one file: index -> what it holds (Linux: the inode's `resv_map` and
/// its page cache of huge pages). Everything goes back to the pool when the file goes.
pub struct HugePages {
    pool: &'static Pool,
    size: u64,
    map: Mutex<BTreeMap<u64, Held>>,
}

impl HugePages {
    fn new(pool: &'static Pool, size: u64) -> HugePages {
        HugePages {
            pool,
            size,
            map: Mutex::new(BTreeMap::new()),
        }
    }

    /// A shared mapping of indices `[first, end)`: reserves the ones the file does not hold
    /// yet, all or none (`ENOMEM`).
    fn reserve_shared(&self, first: u64, end: u64) -> SysResult<()> {
        let mut m = lock(&self.map);
        let missing: Vec<u64> = (first..end).filter(|i| !m.contains_key(i)).collect();
        self.pool.reserve(self.size, missing.len() as u64)?;
        for i in missing {
            m.insert(i, Held::Reserved);
        }
        Ok(())
    }

    /// A mapping faults index `i` in: a reserved page becomes allocated. A page the file
    /// holds nothing for is a private mapping's (its own reservation covers it).
    fn fault(&self, i: u64) {
        let mut m = lock(&self.map);
        if let Some(h @ Held::Reserved) = m.get_mut(&i) {
            *h = Held::Allocated;
            self.pool.take_reserved(self.size);
        }
    }

    /// `hugetlbfs_fallocate`: allocates indices `[first, end)`; `ENOSPC` when the pool has
    /// no page (those allocated before stay).
    fn allocate(&self, first: u64, end: u64) -> SysResult<()> {
        let mut m = lock(&self.map);
        for i in first..end {
            match m.get(&i) {
                Some(Held::Allocated) => {}
                Some(Held::Reserved) => {
                    self.pool.take_reserved(self.size);
                    m.insert(i, Held::Allocated);
                }
                None => {
                    self.pool.alloc(self.size)?;
                    m.insert(i, Held::Allocated);
                }
            }
        }
        Ok(())
    }

    /// Gives back indices `[first, end)` (truncate, hole punch; `remove_inode_hugepages`
    /// and `hugetlb_unreserve_pages`).
    fn release(&self, first: u64, end: u64) {
        let mut m = lock(&self.map);
        let gone: Vec<(u64, Held)> = m.range(first..end).map(|(&i, &h)| (i, h)).collect();
        for (i, h) in gone {
            m.remove(&i);
            match h {
                Held::Reserved => self.pool.unreserve(self.size, 1),
                Held::Allocated => self.pool.put(self.size),
            }
        }
    }

    /// Allocated pages (for `st_blocks`).
    fn allocated(&self) -> u64 {
        lock(&self.map)
            .values()
            .filter(|&&h| h == Held::Allocated)
            .count() as u64
    }
}

impl Drop for HugePages {
    fn drop(&mut self) {
        self.release(0, u64::MAX);
    }
}

/// `hugetlbfs_statfs`: the huge page size as the block size; no limits are set, so the
/// block and inode counts are 0, as `simple_statfs` reports.
fn statfs_of(size: u64, fsid: u64) -> Statfs {
    Statfs {
        fs_type: HUGETLBFS_MAGIC,
        bsize: size as i64,
        blocks: 0,
        bfree: 0,
        bavail: 0,
        files: 0,
        ffree: 0,
        fsid,
        namelen: 255,
        frsize: size as i64,
        flags: 0,
    }
}

/// A regular hugetlbfs file: the tmpfs file with its data, and its huge pages.
pub struct HugeInode {
    inner: Arc<dyn Inode>,
    pages: Arc<HugePages>,
    /// Path shown in `/proc/PID/maps` for its mappings.
    name: String,
    me: Weak<HugeInode>,
}

impl HugeInode {
    fn new(inner: Arc<dyn Inode>, size: u64, name: String) -> Arc<HugeInode> {
        Arc::new_cyclic(|me| HugeInode {
            inner,
            pages: Arc::new(HugePages::new(pool(), size)),
            name,
            me: me.clone(),
        })
    }

    /// The huge page size.
    pub fn huge_page_size(&self) -> u64 {
        self.pages.size
    }

    fn tmp(&self) -> SysResult<&TmpInode> {
        self.inner
            .as_any()
            .downcast_ref::<TmpInode>()
            .ok_or(Errno::EINVAL)
    }

    /// The mappable side (the tmpfs file's page cache, with this file's accounting).
    pub fn vm(&self) -> SysResult<Arc<dyn VmFile>> {
        let inner = self.tmp()?.vm_file().ok_or(Errno::ENODEV)?;
        Ok(Arc::new(HugeVm {
            inner,
            inode: self.inner.clone(),
            pages: self.pages.clone(),
            name: self.name.clone(),
        }))
    }

    fn size(&self) -> SysResult<u64> {
        Ok(self.inner.stat()?.size.max(0) as u64)
    }
}

impl Inode for HugeInode {
    /// tmpfs's, with the huge page size as `st_blksize` and the allocated huge pages as
    /// `st_blocks` (hugetlbfs charges whole huge pages to `i_blocks`).
    fn stat(&self) -> SysResult<Kstat> {
        let mut st = self.inner.stat()?;
        st.blksize = self.pages.size as i64;
        st.blocks = (self.pages.allocated() * (self.pages.size / 512)) as i64;
        Ok(st)
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let inner = self.inner.open(io, flags)?;
        Ok(Box::new(HugeFile {
            inner,
            inode: self.me.upgrade().ok_or(Errno::ENOENT)?,
        }))
    }

    fn id(&self) -> u64 {
        self.inner.id()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// `hugetlbfs_setattr`: a new size must be a multiple of the huge page size; the pages
    /// past a smaller one go back to the pool (`hugetlb_vmtruncate`).
    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        if let Some(new) = attr.size {
            let h = self.pages.size;
            if new % h != 0 {
                return Err(Errno::EINVAL);
            }
            if new < self.size()? {
                self.pages.release(new / h, u64::MAX);
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
        Ok(statfs_of(self.pages.size, self.inner.fs_id()))
    }

    /// `hugetlbfs_fallocate`: allocation takes whole huge pages from the pool (reserved ones
    /// first) and may grow the size; a hole punch frees the whole huge pages inside the
    /// range (`hugetlbfs_punch_hole`).
    fn fallocate(&self, mode: u32, offset: u64, len: u64) -> Option<SysResult<()>> {
        let h = self.pages.size;
        let r = (|| {
            let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
            match mode {
                0 | FALLOC_FL_KEEP_SIZE => {
                    self.pages.allocate(offset / h, end.div_ceil(h))?;
                    if mode == 0 && end > self.size()? {
                        self.inner.setattr(&SetAttr {
                            size: Some(end),
                            ..Default::default()
                        })?;
                    }
                    Ok(())
                }
                m if m == FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE => {
                    let (first, last) = (offset.div_ceil(h), end / h);
                    if first < last {
                        self.pages.release(first, last);
                        if let Some(r) = self.inner.fallocate(mode, first * h, (last - first) * h) {
                            r?;
                        }
                    }
                    Ok(())
                }
                _ => Err(Errno::EOPNOTSUPP),
            }
        })();
        Some(r)
    }
}

/// An open hugetlbfs file: reads through tmpfs, no writes.
struct HugeFile {
    inner: Box<dyn FileOps>,
    inode: Arc<HugeInode>,
}

impl FileOps for HugeFile {
    fn can_poll(&self) -> bool {
        false
    }

    /// `hugetlbfs_read_iter`: holes read as zeros.
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.inner.read(io, buf, off)
    }

    /// hugetlbfs has no `write_iter`: `vfs_write` answers `EINVAL`.
    fn write(&self, _io: &IoCtx<'_>, _data: &[u8], _off: u64) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn stat(&self) -> SysResult<Kstat> {
        self.inode.stat()
    }

    fn size(&self) -> SysResult<u64> {
        self.inner.size()
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        self.inner.ioctl(io, cmd, arg, mem)
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        self.inner.poll(events, pt)
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        self.inode.vm().ok()
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// The page-cache side of a hugetlbfs file: tmpfs's, plus the huge page geometry and the
/// reservations its mappings take.
struct HugeVm {
    inner: Arc<dyn VmFile>,
    /// The tmpfs file (to extend it).
    inode: Arc<dyn Inode>,
    pages: Arc<HugePages>,
    name: String,
}

impl VmFile for HugeVm {
    fn id(&self) -> u64 {
        self.inner.id()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    /// A fault: the huge page it lands in is now in use.
    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.pages.fault(offset / self.pages.size);
        self.inner.read_page(offset, buf)
    }

    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        self.inner.write_page(offset, data)
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn huge_page_size(&self) -> Option<u64> {
        Some(self.pages.size)
    }

    /// `MADV_REMOVE`: `hugetlbfs_punch_hole`, whole huge pages only (as `fallocate`).
    fn punch_hole(&self, offset: u64, len: u64) -> Result<(), Errno> {
        let h = self.pages.size;
        let (first, last) = (offset.div_ceil(h), offset.saturating_add(len) / h);
        if first < last {
            self.pages.release(first, last);
            self.inner.punch_hole(first * h, (last - first) * h)?;
        }
        Ok(())
    }

    /// `hugetlbfs_file_mmap`: `hugetlb_reserve_pages` (a shared mapping reserves the file's
    /// pages it covers that the file does not hold yet, kept by the file; a private one
    /// every page of its range, kept by the mapping), then a writable mapping extends the
    /// file to its end (so its pages are inside the file when they fault).
    fn hugetlb_mmap(
        &self,
        offset: u64,
        len: u64,
        shared: bool,
        reserve: bool,
        write: bool,
    ) -> Result<Option<Reservation>, Errno> {
        let h = self.pages.size;
        let end_byte = offset.checked_add(len).ok_or(Errno::EOVERFLOW)?;
        let (first, end) = (offset / h, end_byte.div_ceil(h));
        let resv = match (reserve, shared) {
            (false, _) => None,
            (true, true) => {
                self.pages.reserve_shared(first, end)?;
                None
            }
            (true, false) => Some(Reservation::new(self.pages.pool, h, end - first)?),
        };
        if write && self.inner.size() < end_byte {
            self.inode.setattr(&SetAttr {
                size: Some(end_byte),
                ..Default::default()
            })?;
        }
        Ok(resv)
    }
}

/// The internal mount of huge page size `size` (Linux `hugetlbfs_vfsmount[idx]`).
fn internal_root(size: u64) -> Arc<dyn Inode> {
    static ROOTS: OnceLock<Mutex<HashMap<u64, Arc<dyn Inode>>>> = OnceLock::new();
    let mut m = lock(ROOTS.get_or_init(Default::default));
    m.entry(size)
        .or_insert_with(|| TmpFs::new_root_inode(0o1777, 0, 0))
        .clone()
}

/// `hugetlb_file_setup`: a new unlinked file on the internal mount of `size` (which must be
/// a supported size: `ENODEV`), of `len` bytes, owned by `owner`, mapped under `name`.
pub fn file_setup(size: u64, len: u64, owner: Owner, name: String) -> SysResult<Arc<HugeInode>> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    if pool().stats(size).is_none() {
        return Err(Errno::ENODEV);
    }
    let root = internal_root(size);
    let tmp_name = format!("huge-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let inner = root.create(tmp_name.as_bytes(), 0o777, owner)?;
    root.unlink(tmp_name.as_bytes())?;
    if len > 0 {
        inner.setattr(&SetAttr {
            size: Some(len),
            ..Default::default()
        })?;
    }
    Ok(HugeInode::new(inner, size, name))
}

/// `vm.hugetlb_shm_group`: the group allowed `SHM_HUGETLB` without `CAP_IPC_LOCK`.
static SHM_GROUP: AtomicU32 = AtomicU32::new(0);

/// `vm.hugetlb_shm_group`.
pub fn shm_group() -> u32 {
    SHM_GROUP.load(Ordering::Relaxed)
}

/// Sets `vm.hugetlb_shm_group`.
pub fn set_shm_group(gid: u32) {
    SHM_GROUP.store(gid, Ordering::Relaxed);
}

/// The hugetlb part of a `shmget(SHM_HUGETLB)` of `size` bytes (ipc/shm.c `newseg`,
/// `hugetlb_file_setup`): the `SHM_HUGE_*` size must be one the kernel has (`EINVAL`), the
/// caller needs `CAP_IPC_LOCK` or `vm.hugetlb_shm_group` (`may`; else `EPERM`: Linux's
/// deprecated fallback to `RLIMIT_MEMLOCK` is not offered), and unless `SHM_NORESERVE` the
/// pool must cover the size rounded up to huge pages (`ENOMEM`). Returns the reservation the
/// segment holds. The segment's memory is ordinary shared memory: `shmat` does not keep the
/// huge page geometry.
pub fn shm_reserve(size: u64, shmflg: u32, may: bool) -> SysResult<Option<Reservation>> {
    use um_uapi::abi::ipc::SHM_NORESERVE;
    let p = pool();
    let h = p.size_of_log((shmflg >> 26) & 0x3f).ok_or(Errno::EINVAL)?;
    if !may {
        return Err(Errno::EPERM);
    }
    if shmflg & SHM_NORESERVE != 0 {
        return Ok(None);
    }
    Reservation::new(p, h, size.div_ceil(h))
        .map(Some)
        .map_err(|_| Errno::ENOMEM)
}

/// The file of an anonymous `MAP_HUGETLB` mapping (`um_mm::hugetlb::FileSetup`).
fn anon_file(size: u64, len: u64) -> Result<Arc<dyn VmFile>, Errno> {
    file_setup(
        size,
        len,
        Owner::default(),
        "/anon_hugepage (deleted)".into(),
    )?
    .vm()
}

/// One mounted hugetlbfs: its page size and the hugetlbfs file of each tmpfs file in it.
struct HugeFs {
    size: u64,
    id: u64,
    files: Mutex<HashMap<u64, Arc<HugeInode>>>,
}

impl HugeFs {
    /// The hugetlbfs face of a tmpfs inode of this instance.
    fn wrap(self: &Arc<Self>, inner: Arc<dyn Inode>) -> SysResult<Arc<dyn Inode>> {
        let fmt = inner.stat()?.mode & mode::S_IFMT;
        Ok(match fmt {
            mode::S_IFDIR => Arc::new(HugeDir {
                inner,
                fs: self.clone(),
            }),
            mode::S_IFREG => {
                let mut files = lock(&self.files);
                files
                    .entry(inner.id())
                    .or_insert_with(|| {
                        let name = format!("/hugetlbfs-inode-{}", inner.id());
                        HugeInode::new(inner, self.size, name)
                    })
                    .clone()
            }
            _ => inner,
        })
    }

    /// Forgets the files no name links any more (their pages go with the last user).
    fn sweep(&self) {
        lock(&self.files).retain(|_, f| f.inner.stat().is_ok_and(|s| s.nlink > 0));
    }
}

/// The tmpfs inode behind a hugetlbfs one (for calls that take another inode).
fn unwrap(i: &Arc<dyn Inode>) -> Arc<dyn Inode> {
    let any = i.as_any();
    if let Some(d) = any.downcast_ref::<HugeDir>() {
        d.inner.clone()
    } else if let Some(f) = any.downcast_ref::<HugeInode>() {
        f.inner.clone()
    } else {
        i.clone()
    }
}

/// A directory of a mounted hugetlbfs: tmpfs's, handing out hugetlbfs files.
pub struct HugeDir {
    inner: Arc<dyn Inode>,
    fs: Arc<HugeFs>,
}

impl Inode for HugeDir {
    fn stat(&self) -> SysResult<Kstat> {
        let mut st = self.inner.stat()?;
        st.blksize = self.fs.size as i64;
        Ok(st)
    }
    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        self.fs.wrap(self.inner.lookup(name)?)
    }
    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        self.inner.open(io, flags)
    }
    fn id(&self) -> u64 {
        self.inner.id()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn create(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.fs.wrap(self.inner.create(name, mode, owner)?)
    }
    fn mkdir(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.fs.wrap(self.inner.mkdir(name, mode, owner)?)
    }
    fn mknod(&self, name: &[u8], mode: u32, rdev: u64, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.inner.mknod(name, mode, rdev, owner)
    }
    fn symlink(&self, name: &[u8], target: &[u8], owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.inner.symlink(name, target, owner)
    }
    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> SysResult<()> {
        self.inner.link(name, &unwrap(target))
    }
    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        self.inner.unlink(name)?;
        self.fs.sweep();
        Ok(())
    }
    fn rmdir(&self, name: &[u8]) -> SysResult<()> {
        self.inner.rmdir(name)
    }
    fn rename(
        &self,
        old_name: &[u8],
        new_dir: &Arc<dyn Inode>,
        new_name: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        self.inner
            .rename(old_name, &unwrap(new_dir), new_name, flags)?;
        self.fs.sweep();
        Ok(())
    }
    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        self.inner.setattr(attr)
    }
    fn fs_id(&self) -> u64 {
        self.inner.fs_id()
    }
    fn statfs(&self) -> SysResult<Statfs> {
        Ok(statfs_of(self.fs.size, self.fs.id))
    }
    fn tmpfile(&self, mode: u32, owner: Owner, linkable: bool) -> SysResult<Arc<dyn Inode>> {
        self.fs.wrap(self.inner.tmpfile(mode, owner, linkable)?)
    }
}

/// The options of a mount (`hugetlbfs_parse_param`): the page size (`EINVAL` for one the
/// kernel lacks, "Unsupported page size") and the tmpfs options for the root (`mode=`,
/// default 0755, `uid=`, `gid=`); `size=`, `min_size=`, `nr_inodes=` are accepted only.
fn parse_options(data: &[u8], pool: &Pool) -> SysResult<(u64, String)> {
    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    let mut size = pool.default_size();
    let mut tmp = vec!["size=0".to_string()];
    let mut mode_set = false;
    for opt in s.split(',').filter(|o| !o.is_empty()) {
        let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
        match k {
            "pagesize" => {
                size = crate::tmpfs::memparse(v)?;
                if pool.stats(size).is_none() {
                    return Err(Errno::EINVAL);
                }
            }
            "size" | "min_size" | "nr_inodes" => {
                // A percentage of the pool, or a size: checked, not enforced.
                if !v.ends_with('%') {
                    crate::tmpfs::memparse(v)?;
                }
            }
            "mode" | "uid" | "gid" => {
                mode_set |= k == "mode";
                tmp.push(opt.to_string());
            }
            _ => return Err(Errno::EINVAL),
        }
    }
    if !mode_set {
        tmp.push("mode=755".to_string());
    }
    Ok((size, tmp.join(",")))
}

/// `mount -t hugetlbfs`: a new instance.
fn mount(data: &[u8]) -> SysResult<Arc<dyn Inode>> {
    let (size, tmp_opts) = parse_options(data, pool())?;
    let root = TmpFs::new_root(tmp_opts.as_bytes(), 0)?;
    let fs = Arc::new(HugeFs {
        size,
        id: new_fs_id(),
        files: Mutex::new(HashMap::new()),
    });
    fs.wrap(root)
}

/// Registers the file system type and the `MAP_HUGETLB` file maker (at boot).
pub fn register() {
    um_mm::hugetlb::set_file_setup(anon_file);
    crate::mount::register_fs("hugetlbfs", Arc::new(|_flags, data| mount(data)));
}

#[cfg(test)]
mod tests {
    use super::*;

    const M2: u64 = 2 << 20;

    fn test_pool() -> &'static Pool {
        let p: &'static Pool = Box::leak(Box::new(Pool::new(&[M2, 1 << 30])));
        p.set_nr(M2, 2, 1 << 30).unwrap();
        p
    }

    #[test]
    fn file_pages_reserve_fault_and_release() {
        let p = test_pool();
        let f = HugePages::new(p, M2);
        f.reserve_shared(0, 2).unwrap();
        assert_eq!(p.stats(M2).unwrap().resv, 2);
        // Mapping the same range again takes nothing more.
        f.reserve_shared(0, 2).unwrap();
        assert_eq!(f.reserve_shared(0, 3), Err(Errno::ENOMEM));
        f.fault(1);
        f.fault(1);
        let s = p.stats(M2).unwrap();
        assert_eq!((s.free, s.resv), (1, 1));
        assert_eq!(f.allocated(), 1);
        f.release(1, u64::MAX);
        let s = p.stats(M2).unwrap();
        assert_eq!((s.free, s.resv), (2, 1));
        drop(f);
        assert_eq!(p.stats(M2).unwrap().resv, 0);
    }

    #[test]
    fn fallocate_takes_free_pages() {
        let p = test_pool();
        let f = HugePages::new(p, M2);
        f.allocate(0, 2).unwrap();
        assert_eq!(p.stats(M2).unwrap().free, 0);
        assert_eq!(f.allocate(2, 3), Err(Errno::ENOSPC));
        f.release(0, 1);
        assert_eq!(p.stats(M2).unwrap().free, 1);
    }

    #[test]
    fn mount_options() {
        let p = test_pool();
        assert_eq!(
            parse_options(b"", p).unwrap(),
            (M2, "size=0,mode=755".to_string())
        );
        assert_eq!(
            parse_options(b"pagesize=1G,mode=1777,uid=5,size=50%", p).unwrap(),
            (1 << 30, "size=0,mode=1777,uid=5".to_string())
        );
        assert_eq!(parse_options(b"pagesize=4k", p).err(), Some(Errno::EINVAL));
        assert_eq!(parse_options(b"bogus", p).err(), Some(Errno::EINVAL));
    }
}
