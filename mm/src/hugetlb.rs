//! Huge pages: the per-size pools and their accounting (Linux mm/hugetlb.c,
//! Documentation/admin-guide/mm/hugetlbpage.rst), and what a hugetlb mapping needs from `mm`.
//!
//! **Backing.** Guests run on the host's ordinary pages, so a "huge page" here is ordinary
//! memory of the huge size: a hugetlbfs file keeps its data in granule-sized frames like any
//! other file, and its mappings fault page by page. What the guest can observe of Linux's
//! huge pages is kept: the pools and their counters (`HugePages_*` in `/proc/meminfo`,
//! `/proc/sys/vm/nr_hugepages`, `/sys/kernel/mm/hugepages/hugepages-<N>kB/`), reservation at
//! mmap time (`ENOMEM` when the pool cannot cover a mapping, `hugetlb_reserve_pages`), and the
//! geometry: lengths round up to the huge page size, file offsets and `MAP_FIXED` addresses
//! must be multiples of it, addresses the kernel picks are aligned to it
//! (`hugetlb_get_unmapped_area`), and a mapping cannot be split inside a huge page
//! (`hugetlb_vm_op_split`: munmap/mprotect there are `EINVAL`).
//!
//! **Pools** ([`Pool`], one [`HState`] per size; [`pool`] is the kernel's): `nr` pages of
//! which `free` are unused, `resv` of the free ones promised to mappings, `surplus` made
//! beyond the persistent pool under `nr_overcommit_hugepages`. Writing `nr_hugepages` grows
//! the pool only as far as memory allows (pages not yet promised to other pools), and shrinks
//! it only down to the pages in use or reserved, making the rest surplus
//! (`set_max_huge_pages`). A pool page is not taken from the frame allocator: it is a promise
//! that the memory of one huge page is there when the guest touches it.
//!
//! **Reservations.** A private mapping reserves every huge page of its range, held by the
//! mapping ([`Reservation`] inside a [`HugeMapping`], given back when the last piece of the
//! mapping goes); a shared mapping reserves the file's pages not yet reserved or allocated,
//! held by the file until truncate (the file system's job, `fs/src/hugetlbfs.rs`, through
//! [`Pool::reserve`], [`Pool::take_reserved`], [`Pool::alloc`], [`Pool::put`]).
//! `MAP_NORESERVE` reserves nothing. Differences from Linux: pages a private mapping faults in
//! stay counted as reserved rather than in use, and a fault is never refused (no `SIGBUS`),
//! since the memory comes from the ordinary frames.
//!
//! Neighbours: [`crate::VmFile::huge_page_size`] and [`crate::VmFile::hugetlb_mmap`] (what
//! a hugetlbfs file answers), [`crate::Mm::mmap`] (geometry and reservation), the anonymous
//! `MAP_HUGETLB` file from the file system ([`set_file_setup`]); procfs and sysfs show and set
//! the pools.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use um_uapi::Errno;

use crate::{Backing, MapFlags, Mm, VmFile};

/// One pool: Linux `struct hstate`'s counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HState {
    /// Huge page size in bytes.
    pub size: u64,
    /// `nr_huge_pages`: all pages of the pool, surplus included (`HugePages_Total`).
    pub nr: u64,
    /// `free_huge_pages` (`HugePages_Free`), reserved ones included.
    pub free: u64,
    /// `resv_huge_pages` (`HugePages_Rsvd`): free pages promised to mappings.
    pub resv: u64,
    /// `surplus_huge_pages` (`HugePages_Surp`).
    pub surplus: u64,
    /// `nr_overcommit_huge_pages`: how many surplus pages may exist.
    pub overcommit: u64,
}

impl HState {
    /// `persistent_huge_pages`: what `nr_hugepages` reads.
    pub fn persistent(&self) -> u64 {
        self.nr - self.surplus
    }

    /// Pages in use (allocated to files or mappings).
    pub fn used(&self) -> u64 {
        self.nr - self.free
    }

    /// `return_unused_surplus_pages`: surplus pages nobody uses or reserved go away.
    fn drop_unused_surplus(&mut self) {
        while self.surplus > 0 && self.free > self.resv {
            self.nr -= 1;
            self.free -= 1;
            self.surplus -= 1;
        }
    }
}

/// The pools of one kernel, one per supported huge page size.
pub struct Pool {
    states: Mutex<Vec<HState>>,
}

impl Pool {
    /// Empty pools of `sizes` (bytes); the first is the default size (`default_hstate`).
    pub fn new(sizes: &[u64]) -> Pool {
        Pool {
            states: Mutex::new(
                sizes
                    .iter()
                    .map(|&size| HState {
                        size,
                        ..Default::default()
                    })
                    .collect(),
            ),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<HState>> {
        // Every critical section is plain arithmetic; a panic cannot leave it half done.
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with<T>(&self, size: u64, f: impl FnOnce(&mut HState) -> T) -> Result<T, Errno> {
        let mut s = self.lock();
        let h = s.iter_mut().find(|h| h.size == size).ok_or(Errno::EINVAL)?;
        Ok(f(h))
    }

    /// The supported sizes, the default first.
    pub fn sizes(&self) -> Vec<u64> {
        self.lock().iter().map(|h| h.size).collect()
    }

    /// The default huge page size (`Hugepagesize`).
    pub fn default_size(&self) -> u64 {
        self.lock().first().map_or(0, |h| h.size)
    }

    /// The counters of the pool of `size`, if that size is supported.
    pub fn stats(&self, size: u64) -> Option<HState> {
        self.lock().iter().find(|h| h.size == size).copied()
    }

    /// `Hugetlb:` of meminfo: bytes of all pools' pages.
    pub fn total_bytes(&self) -> u64 {
        self.lock().iter().map(|h| h.nr * h.size).sum()
    }

    /// The size a `MFD_HUGE_*` / `MAP_HUGE_*` field selects (`log2` of the size, 0 for the
    /// default; Linux `hstate_sizelog`), if supported.
    pub fn size_of_log(&self, log2: u32) -> Option<u64> {
        if log2 == 0 {
            return Some(self.default_size());
        }
        let size = 1u64.checked_shl(log2)?;
        self.stats(size).map(|h| h.size)
    }

    /// Writing `nr_hugepages` (mm/hugetlb.c `set_max_huge_pages`): surplus pages become
    /// persistent first; new pages come only while `avail` bytes of memory (what is free and
    /// not already promised to the free pages of every pool) allow; shrinking frees unused
    /// pages but keeps those in use or reserved, counting the excess as surplus. Returns the
    /// persistent count reached.
    pub fn set_nr(&self, size: u64, count: u64, avail: u64) -> Result<u64, Errno> {
        let mut s = self.lock();
        let promised: u64 = s.iter().map(|h| h.free * h.size).sum();
        let mut room = avail.saturating_sub(promised);
        let h = s.iter_mut().find(|h| h.size == size).ok_or(Errno::EINVAL)?;
        while h.surplus > 0 && count > h.persistent() {
            h.surplus -= 1;
        }
        while count > h.persistent() && room >= h.size {
            h.nr += 1;
            h.free += 1;
            room -= h.size;
        }
        let min_count = count.max(h.resv + h.nr - h.free);
        while min_count < h.persistent() && h.free > h.resv {
            h.nr -= 1;
            h.free -= 1;
        }
        while count < h.persistent() {
            h.surplus += 1;
        }
        Ok(h.persistent())
    }

    /// Writing `nr_overcommit_hugepages`.
    pub fn set_overcommit(&self, size: u64, n: u64) -> Result<(), Errno> {
        self.with(size, |h| h.overcommit = n)
    }

    /// `hugetlb_acct_memory(h, pages)` with `gather_surplus_pages`: promises `pages` free
    /// pages, making surplus pages up to the overcommit limit when the free ones do not
    /// suffice; `ENOMEM` (and nothing changed) when they still do not.
    pub fn reserve(&self, size: u64, pages: u64) -> Result<(), Errno> {
        self.with(size, |h| {
            let needed = (h.resv + pages).saturating_sub(h.free);
            if needed > 0 {
                if h.surplus + needed > h.overcommit {
                    return Err(Errno::ENOMEM);
                }
                h.nr += needed;
                h.free += needed;
                h.surplus += needed;
            }
            h.resv += pages;
            Ok(())
        })?
    }

    /// Gives back `pages` of a reservation that were never used.
    pub fn unreserve(&self, size: u64, pages: u64) {
        let _ = self.with(size, |h| {
            h.resv -= pages.min(h.resv);
            h.drop_unused_surplus();
        });
    }

    /// Allocates a page that was reserved (a fault or fallocate of a reserved file page).
    pub fn take_reserved(&self, size: u64) {
        let _ = self.with(size, |h| {
            if h.resv > 0 && h.free > 0 {
                h.resv -= 1;
                h.free -= 1;
            }
        });
    }

    /// Allocates a page without a reservation (`alloc_huge_page` with none): a free page
    /// nobody reserved, else a new surplus page under the overcommit limit; `ENOSPC` when
    /// neither is there (hugetlbfs_fallocate's answer).
    pub fn alloc(&self, size: u64) -> Result<(), Errno> {
        self.with(size, |h| {
            if h.free > h.resv {
                h.free -= 1;
                Ok(())
            } else if h.surplus < h.overcommit {
                h.nr += 1;
                h.surplus += 1;
                Ok(())
            } else {
                Err(Errno::ENOSPC)
            }
        })?
    }

    /// Frees an allocated page (`free_huge_page`): back to the pool, or gone if the pool has
    /// surplus pages.
    pub fn put(&self, size: u64) {
        let _ = self.with(size, |h| {
            if h.surplus > 0 {
                h.nr -= 1;
                h.surplus -= 1;
            } else {
                h.free += 1;
            }
        });
    }
}

/// The huge page sizes of this arch for guest page size `page` (bytes), the default first.
/// x86_64 (arch/x86/mm/hugetlbpage.c): PMD (2 MiB) and PUD (1 GiB, `gbpages`). arm64
/// (arch/arm64/mm/hugetlbpage.c `hugetlbpage_init`, `arch_hugetlb_valid_size`): PMD (the
/// default), contiguous PTEs, contiguous PMDs, and PUD with 4K pages.
pub fn arch_sizes(page: u64) -> Vec<u64> {
    // PMD_SIZE: one page of 8-byte entries' worth of pages.
    let pmd = page * (page / 8);
    if cfg!(target_arch = "aarch64") {
        // CONT_PTES / CONT_PMDS (arch/arm64/include/asm/pgtable-hwdef.h).
        let (cont_pte, cont_pmd) = match page {
            4096 => (16, 16),
            16384 => (128, 32),
            _ => (32, 32),
        };
        let mut v = vec![pmd, page * cont_pte, pmd * cont_pmd];
        if page == 4096 {
            v.push(pmd * 512);
        }
        v
    } else {
        vec![pmd, pmd * 512]
    }
}

/// The kernel's pools (sized for this boot's page size on first use).
pub fn pool() -> &'static Pool {
    static P: OnceLock<Pool> = OnceLock::new();
    P.get_or_init(|| Pool::new(&arch_sizes(crate::page_size())))
}

/// Huge pages promised to one private mapping; given back when dropped (the vma's
/// `resv_map`, `hugetlb_vm_op_close`).
pub struct Reservation {
    pool: &'static Pool,
    size: u64,
    pages: u64,
}

impl Reservation {
    /// Reserves `pages` huge pages of `size` in `pool` (`ENOMEM` if it cannot).
    pub fn new(pool: &'static Pool, size: u64, pages: u64) -> Result<Reservation, Errno> {
        pool.reserve(size, pages)?;
        Ok(Reservation { pool, size, pages })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.unreserve(self.size, self.pages);
    }
}

/// A hugetlbfs file as one mapping holds it: the file, plus the mapping's own reservation.
/// Every piece of a split mapping shares it (so the reservation goes with the last piece).
pub struct HugeMapping {
    inner: Arc<dyn VmFile>,
    _resv: Reservation,
}

impl VmFile for HugeMapping {
    fn id(&self) -> u64 {
        self.inner.id()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inner.read_page(offset, buf)
    }
    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        self.inner.write_page(offset, data)
    }
    fn name(&self) -> String {
        self.inner.name()
    }
    fn huge_page_size(&self) -> Option<u64> {
        self.inner.huge_page_size()
    }
    fn hugetlb_mmap(
        &self,
        offset: u64,
        len: u64,
        shared: bool,
        reserve: bool,
        write: bool,
    ) -> Result<Option<Reservation>, Errno> {
        self.inner.hugetlb_mmap(offset, len, shared, reserve, write)
    }
}

/// Makes the unlinked hugetlbfs file of an anonymous `MAP_HUGETLB` mapping: huge page size
/// and length (Linux `hugetlb_file_setup`). The file system registers it.
pub type FileSetup = fn(size: u64, len: u64) -> Result<Arc<dyn VmFile>, Errno>;

static FILE_SETUP: OnceLock<FileSetup> = OnceLock::new();

/// Registers the file system's [`FileSetup`] (hugetlbfs does at boot).
pub fn set_file_setup(f: FileSetup) {
    let _ = FILE_SETUP.set(f);
}

/// The backing of an anonymous `MAP_HUGETLB` mapping of `len` bytes (mm/mmap.c
/// `ksys_mmap_pgoff`): `log2` is the `MAP_HUGE_*` field; a size the kernel lacks is `EINVAL`,
/// as is a kernel without hugetlbfs.
pub fn anon_backing(log2: u32, len: u64) -> Result<Backing, Errno> {
    let size = pool().size_of_log(log2).ok_or(Errno::EINVAL)?;
    let len = len.checked_next_multiple_of(size).ok_or(Errno::ENOMEM)?;
    let setup = FILE_SETUP.get().ok_or(Errno::EINVAL)?;
    Ok(Backing::File {
        file: setup(size, len)?,
        offset: 0,
    })
}

/// The huge page size of a mapping's backing, if it is a hugetlbfs file (`is_vm_hugetlb_page`).
pub fn backing_huge_size(b: &Backing) -> Option<u64> {
    match b {
        Backing::File { file, .. } => file.huge_page_size(),
        _ => None,
    }
}

/// The mmap checks of a hugetlb mapping (mm/mmap.c `ksys_mmap_pgoff`,
/// fs/hugetlbfs/inode.c `hugetlbfs_file_mmap`): `MAP_HUGETLB` needs a hugetlbfs file
/// (`EINVAL`), the offset must be a multiple of the huge page size (`EINVAL`), and the
/// length rounds up to it. Returns the huge page size (None for other mappings) and the length.
pub(crate) fn mmap_geometry(
    backing: &Backing,
    flags: MapFlags,
    len: u64,
) -> Result<(Option<u64>, u64), Errno> {
    let Some(h) = backing_huge_size(backing) else {
        if flags.contains(MapFlags::HUGETLB) {
            return Err(Errno::EINVAL);
        }
        return Ok((None, len));
    };
    if backing.offset() % h != 0 {
        return Err(Errno::EINVAL);
    }
    Ok((
        Some(h),
        len.checked_next_multiple_of(h).ok_or(Errno::ENOMEM)?,
    ))
}

/// `hugetlbfs_file_mmap` for a new mapping of `len` bytes: the file reserves (`ENOMEM`
/// when the pool cannot cover it; `MAP_NORESERVE` reserves nothing, `VM_NORESERVE`) and a
/// writable mapping extends it; a private mapping's reservation is wrapped into the backing
/// it maps.
pub(crate) fn reserve(
    backing: Backing,
    len: u64,
    shared: bool,
    flags: MapFlags,
    prot: crate::Prot,
) -> Result<Backing, Errno> {
    let Backing::File { file, offset } = backing else {
        return Ok(backing);
    };
    if file.huge_page_size().is_none() {
        return Ok(Backing::File { file, offset });
    }
    let reserve = !flags.contains(MapFlags::NORESERVE);
    let write = prot.contains(crate::Prot::WRITE);
    let file = match file.hugetlb_mmap(offset, len, shared, reserve, write)? {
        Some(resv) => Arc::new(HugeMapping {
            inner: file,
            _resv: resv,
        }) as Arc<dyn VmFile>,
        None => file,
    };
    Ok(Backing::File { file, offset })
}

impl Mm {
    /// `hugetlb_vm_op_split`: whether splitting a vma at `start` or `end` (to unmap or
    /// change `[start, end)`) would cut a hugetlb mapping inside a huge page (`EINVAL`).
    pub(crate) fn hugetlb_split_refused(&self, start: u64, end: u64) -> bool {
        [start, end].into_iter().any(|a| {
            self.find_vma(a).is_some_and(|v| {
                v.start < a && backing_huge_size(&v.backing).is_some_and(|h| a % h != 0)
            })
        })
    }

    /// `hugetlb_get_unmapped_area`: a free range of `len` bytes aligned to `h`, the hint if
    /// it is aligned and free.
    pub(crate) fn huge_unmapped_area(&self, hint: u64, len: u64, h: u64) -> Result<u64, Errno> {
        if hint != 0 && hint % h == 0 && self.range_free(hint, len) {
            return Ok(hint);
        }
        // Any free range one huge page longer holds an aligned one; the highest such start
        // keeps a top-down search top-down.
        let a = self.get_unmapped_area(0, len.checked_add(h).ok_or(Errno::ENOMEM)?)?;
        Ok((a + h) / h * h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M2: u64 = 2 << 20;
    const G1: u64 = 1 << 30;

    fn pool2() -> &'static Pool {
        Box::leak(Box::new(Pool::new(&[M2, G1])))
    }

    #[test]
    fn sizes_per_arch() {
        let s = arch_sizes(4096);
        assert_eq!(s[0], M2, "PMD is the default");
        if cfg!(target_arch = "aarch64") {
            assert_eq!(s, vec![M2, 64 << 10, 32 << 20, G1]);
            assert_eq!(arch_sizes(16384), vec![32 << 20, M2, G1]);
        } else {
            assert_eq!(s, vec![M2, G1]);
        }
        let p = Pool::new(&s);
        assert_eq!(p.size_of_log(0), Some(M2));
        assert_eq!(p.size_of_log(21), Some(M2));
        assert_eq!(p.size_of_log(30), Some(G1));
        assert_eq!(p.size_of_log(23), None, "8 MiB exists nowhere");
    }

    #[test]
    fn pool_grows_as_memory_allows() {
        let p = pool2();
        assert_eq!(p.set_nr(M2, 3, 100 * M2), Ok(3));
        let h = p.stats(M2).unwrap();
        assert_eq!((h.nr, h.free, h.resv, h.surplus), (3, 3, 0, 0));
        // 10 pages of memory, 3 of them promised to the free pages already: 7 more.
        assert_eq!(p.set_nr(M2, 50, 10 * M2), Ok(10));
        assert_eq!(p.set_nr(G1, 1, 10 * M2), Ok(0), "no room for 1 GiB");
        assert_eq!(p.set_nr(M2, 0, 0), Ok(0));
        assert_eq!(p.total_bytes(), 0);
        assert_eq!(p.set_nr(4096, 1, G1), Err(Errno::EINVAL));
    }

    #[test]
    fn reservations_and_allocations() {
        let p = pool2();
        p.set_nr(M2, 2, G1).unwrap();
        let r = Reservation::new(p, M2, 2).unwrap();
        assert_eq!(p.stats(M2).unwrap().resv, 2);
        assert_eq!(
            Reservation::new(p, M2, 1).err(),
            Some(Errno::ENOMEM),
            "all promised"
        );
        assert_eq!(p.alloc(M2), Err(Errno::ENOSPC));
        p.take_reserved(M2);
        let h = p.stats(M2).unwrap();
        assert_eq!((h.free, h.resv), (1, 1));
        drop(r);
        // The reservation still held one page; the taken page stays in use.
        let h = p.stats(M2).unwrap();
        assert_eq!((h.nr, h.free, h.resv), (2, 1, 0));
        p.alloc(M2).unwrap();
        assert_eq!(p.stats(M2).unwrap().free, 0);
        p.put(M2);
        p.put(M2);
        assert_eq!(p.stats(M2).unwrap().free, 2);
    }

    #[test]
    fn shrinking_below_use_makes_surplus() {
        let p = pool2();
        p.set_nr(M2, 3, G1).unwrap();
        p.alloc(M2).unwrap();
        let r = Reservation::new(p, M2, 1).unwrap();
        assert_eq!(p.set_nr(M2, 0, G1), Ok(0));
        let h = p.stats(M2).unwrap();
        // One in use, one reserved: both kept, as surplus.
        assert_eq!((h.nr, h.free, h.resv, h.surplus), (2, 1, 1, 2));
        drop(r);
        let h = p.stats(M2).unwrap();
        assert_eq!((h.nr, h.free, h.surplus), (1, 0, 1));
        p.put(M2);
        assert_eq!(
            p.stats(M2).unwrap(),
            HState {
                size: M2,
                ..Default::default()
            }
        );
    }

    /// A hugetlbfs file over `pool`: every mapping reserves its whole range.
    struct HugeFake(&'static Pool);

    impl VmFile for HugeFake {
        fn id(&self) -> u64 {
            0x4855_4745
        }
        fn size(&self) -> u64 {
            u64::MAX / 2
        }
        fn read_page(&self, _offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
            Ok(buf.len())
        }
        fn write_page(&self, _offset: u64, _data: &[u8]) -> Result<(), Errno> {
            Ok(())
        }
        fn name(&self) -> String {
            "/huge".into()
        }
        fn huge_page_size(&self) -> Option<u64> {
            Some(M2)
        }
        fn hugetlb_mmap(
            &self,
            offset: u64,
            len: u64,
            _shared: bool,
            reserve: bool,
            _write: bool,
        ) -> Result<Option<Reservation>, Errno> {
            let pages = (offset + len).div_ceil(M2) - offset / M2;
            reserve
                .then(|| Reservation::new(self.0, M2, pages))
                .transpose()
        }
    }

    #[test]
    fn mappings_keep_huge_geometry_and_reserve() {
        use crate::HeapMemory;
        use crate::{FrameAllocator, Granule, Layout, PageCache, Prot};
        let fa = Arc::new(FrameAllocator::new(
            Arc::new(HeapMemory::new(4 << 20)),
            Granule::K4,
        ));
        let cache = Arc::new(PageCache::new(fa.clone()));
        let layout = Layout {
            task_size: 0x7fff_ffff_0000,
            mmap_base: 0x7f00_0000_0000 - 0x1000,
            stack_top: 0x7ffe_0000_0000,
            stack_limit: 8 << 20,
            min_addr: 0x10000,
        };
        let mut mm = Mm::new(fa, cache, layout);
        let p = pool2();
        p.set_nr(M2, 2, G1).unwrap();
        let file: Arc<dyn VmFile> = Arc::new(HugeFake(p));
        let b = |offset| Backing::File {
            file: file.clone(),
            offset,
        };
        let rw = Prot::READ | Prot::WRITE;
        let priv_ = MapFlags::PRIVATE;
        assert_eq!(mm.mmap(0, M2, rw, priv_, b(4096)), Err(Errno::EINVAL));
        let fixed = priv_ | MapFlags::FIXED;
        assert_eq!(
            mm.mmap(0x4000_1000, M2, rw, fixed, b(0)),
            Err(Errno::EINVAL)
        );
        // 3 MiB rounds up to two huge pages, at an aligned address, both reserved.
        let a = mm.mmap(0, 3 << 20, rw, priv_, b(0)).unwrap();
        assert_eq!(a % M2, 0);
        assert_eq!(mm.find_vma(a).unwrap().len(), 2 * M2);
        assert_eq!(p.stats(M2).unwrap().resv, 2);
        assert_eq!(mm.mmap(0, M2, rw, priv_, b(0)), Err(Errno::ENOMEM));
        let nores = priv_ | MapFlags::NORESERVE;
        let n = mm.mmap(0, M2, rw, nores, b(0)).unwrap();
        assert!(
            !mm.find_vma(n).unwrap().accounted,
            "the pool is its accounting"
        );
        mm.munmap(n, M2).unwrap();
        // No cut inside a huge page; whole huge pages may go.
        assert_eq!(mm.munmap(a, M2 / 4), Err(Errno::EINVAL));
        assert_eq!(mm.munmap(a + 4096, M2), Err(Errno::EINVAL));
        assert_eq!(mm.mprotect(a, 4096, Prot::READ), Err(Errno::EINVAL));
        assert_eq!(
            mm.mmap(
                a + 4096,
                4096,
                rw,
                fixed | MapFlags::ANONYMOUS,
                Backing::Anon
            ),
            Err(Errno::EINVAL)
        );
        // mremap: never grows, shrinks in whole huge pages only.
        assert_eq!(mm.mremap(a, 2 * M2, 3 * M2, 1, 0), Err(Errno::EINVAL));
        assert_eq!(mm.mremap(a + 4096, M2, M2, 1, 0), Err(Errno::EINVAL));
        mm.mprotect(a + M2, M2, Prot::READ).unwrap();
        mm.munmap(a, M2).unwrap();
        assert_eq!(
            p.stats(M2).unwrap().resv,
            2,
            "the rest of the mapping holds it"
        );
        mm.munmap(a + M2, M2).unwrap();
        assert_eq!(p.stats(M2).unwrap().resv, 0);
        assert_eq!(
            mm.mmap(
                0,
                M2,
                rw,
                priv_ | MapFlags::ANONYMOUS | MapFlags::HUGETLB,
                Backing::Anon
            ),
            Err(Errno::EINVAL),
            "MAP_HUGETLB needs a hugetlbfs file"
        );
    }

    #[test]
    fn overcommit_makes_surplus_pages() {
        let p = pool2();
        assert_eq!(p.reserve(M2, 1), Err(Errno::ENOMEM));
        p.set_overcommit(M2, 2).unwrap();
        let r = Reservation::new(p, M2, 2).unwrap();
        let h = p.stats(M2).unwrap();
        assert_eq!((h.nr, h.free, h.resv, h.surplus), (2, 2, 2, 2));
        assert_eq!(h.persistent(), 0);
        assert_eq!(p.alloc(M2), Err(Errno::ENOSPC));
        drop(r);
        assert_eq!(p.stats(M2).unwrap().nr, 0, "unused surplus goes");
        p.alloc(M2).unwrap();
        assert_eq!(p.stats(M2).unwrap().surplus, 1);
        p.put(M2);
        assert_eq!(p.stats(M2).unwrap().nr, 0);
    }
}
