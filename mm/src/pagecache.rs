//! The page cache: file pages held in frames, shared by every address space.
//!
//! Keyed by (file id, page index). A file mapped by a hundred processes is one set of frames:
//! private mappings map the cached frame read-only and copy it on write, shared mappings map it
//! writable (mm/filemap.c `filemap_fault` is the model). The cache holds one reference to each
//! frame it caches; [`PageCache::get_page`] gives the caller another.
//!
//! Key types: [`VmFile`], the trait a file system implements to make a file mappable, and
//! [`PageCache`]. Coherence with `read(2)`/`write(2)` is the file system's job: a write through
//! the fd goes into the cached pages too ([`PageCache::update`]); a file system whose store lags
//! behind the cache reads through [`PageCache::read_cached`]; pages it drops (truncate, hole
//! punch) it removes from the cache ([`PageCache::drop_range`], [`PageCache::zero_range`] for
//! partial pages) and from every address space that maps them
//! ([`PageCache::unmap_mapping_range`], the reverse map in [`crate::rmap`]), so no mapping keeps
//! the old frame. Neighbours:
//! [`crate::FrameAllocator`] below, [`crate::Mm`] (the fault path) above, `fs` implements
//! [`VmFile`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use um_uapi::Errno;

use crate::rmap::{Obj, Rmap, unmap_object};
use crate::{Frame, FrameAllocator};

/// A file that can be mapped. File systems implement it (hostfs reads the host file with pread).
pub trait VmFile: Send + Sync {
    /// Unique per open inode: the page-cache key.
    fn id(&self) -> u64;
    /// Current file size in bytes.
    fn size(&self) -> u64;
    /// Fills `buf` from the backing store at byte `offset`; returns the bytes read. A short read
    /// leaves the rest of the page zero (the tail of the last page, as Linux does).
    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno>;
    /// Writes back a dirty shared page (MAP_SHARED write-back, msync).
    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno>;
    /// Path shown in /proc/PID/maps.
    fn name(&self) -> String;
    /// `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)` of `len` bytes at `offset`, for
    /// `MADV_REMOVE` (mm/madvise.c calls `vfs_fallocate`): the file system frees the range and
    /// unmaps it everywhere ([`PageCache::unmap_mapping_range`]). Called with no `Mm` lock
    /// held. `EOPNOTSUPP` where the file system cannot punch holes.
    fn punch_hole(&self, _offset: u64, _len: u64) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }
    /// The huge page size of a hugetlbfs file (its mappings keep to that geometry, see
    /// [`crate::hugetlb`]); None for every other file.
    fn huge_page_size(&self) -> Option<u64> {
        None
    }
    /// hugetlbfs (fs/hugetlbfs/inode.c `hugetlbfs_file_mmap`): a new mapping of `len`
    /// bytes at `offset`. With `reserve` (no `MAP_NORESERVE`), reserves the huge pages it
    /// needs (`hugetlb_reserve_pages`; `ENOMEM` when the pool cannot): a shared mapping's
    /// reservation stays with the file, a private one's is returned for the mapping to hold.
    /// A `write`able mapping extends the file to cover it.
    fn hugetlb_mmap(
        &self,
        _offset: u64,
        _len: u64,
        _shared: bool,
        _reserve: bool,
        _write: bool,
    ) -> Result<Option<crate::hugetlb::Reservation>, Errno> {
        Ok(None)
    }
}

/// Cached file pages: file id -> page index -> frame.
pub struct PageCache {
    frames: Arc<FrameAllocator>,
    pages: Mutex<Pages>,
    /// Which address spaces map which file ([`crate::rmap`]).
    pub(crate) rmap: Rmap,
}

/// What the cache's lock guards.
#[derive(Default)]
struct Pages {
    files: HashMap<u64, BTreeMap<u64, Frame>>,
    /// Files with a miss being read now: (misses in flight, changes since they began). A miss
    /// that read the file while its data changed (write, punch, truncate) reads again rather
    /// than insert what may be the old data (Linux holds `invalidate_lock` for the same
    /// reason).
    inflight: HashMap<u64, (usize, u64)>,
}

impl std::ops::Deref for Pages {
    type Target = HashMap<u64, BTreeMap<u64, Frame>>;
    fn deref(&self) -> &Self::Target {
        &self.files
    }
}

impl std::ops::DerefMut for Pages {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.files
    }
}

impl Pages {
    /// The data of `file_id` changed: misses in flight must read again.
    fn changed(&mut self, file_id: u64) {
        if let Some(e) = self.inflight.get_mut(&file_id) {
            e.1 += 1;
        }
    }

    /// A miss of `file_id` begins; returns the change count to compare at its end.
    fn begin_miss(&mut self, file_id: u64) -> u64 {
        let e = self.inflight.entry(file_id).or_insert((0, 0));
        e.0 += 1;
        e.1
    }

    /// A miss of `file_id` that began at change count `seen` ends; whether the file changed
    /// meanwhile.
    fn end_miss(&mut self, file_id: u64, seen: u64) -> bool {
        let Some(e) = self.inflight.get_mut(&file_id) else {
            return false;
        };
        let changed = e.1 != seen;
        e.0 -= 1;
        if e.0 == 0 {
            self.inflight.remove(&file_id);
        }
        changed
    }
}

impl PageCache {
    /// An empty cache allocating from `frames`.
    pub fn new(frames: Arc<FrameAllocator>) -> PageCache {
        PageCache {
            frames,
            pages: Mutex::new(Pages::default()),
            rmap: Rmap::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pages> {
        // Every critical section is a single map operation plus refcount calls; a panic cannot
        // leave the map inconsistent, so poisoning is ignored.
        self.pages.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The page size of the cache's frames.
    pub fn granule(&self) -> crate::Granule {
        self.frames.granule()
    }

    /// Whether page `pgoff` (in granules) of the file `file_id` is cached (mincore).
    pub fn contains(&self, file_id: u64, pgoff: u64) -> bool {
        self.lock()
            .get(&file_id)
            .is_some_and(|m| m.contains_key(&pgoff))
    }

    /// The frame caching page `pgoff` (in granules) of `file`, read on a miss; beyond EOF the page
    /// is zero. Returns with one reference for the caller.
    pub fn get_page(&self, file: &Arc<dyn VmFile>, pgoff: u64) -> Result<Frame, Errno> {
        let id = file.id();
        if let Some(&f) = self.lock().get(&id).and_then(|m| m.get(&pgoff)) {
            self.frames.get(f);
            return Ok(f);
        }
        // Miss: read without holding the lock (the read may block on the host file system), then
        // insert unless another thread won the race, as filemap_fault's add_to_page_cache does;
        // read again if the file's data changed during the read (a few times at most: then the
        // last read is taken).
        let g = self.frames.granule();
        let offset = pgoff.checked_mul(g.size()).ok_or(Errno::EINVAL)?;
        let frame = self.frames.alloc()?;
        let mut buf = vec![0u8; g.size() as usize];
        let mut tries = 0;
        let mut map = loop {
            let seen = self.lock().begin_miss(id);
            buf.fill(0);
            let r = if offset < file.size() {
                file.read_page(offset, &mut buf)
            } else {
                Ok(0)
            };
            let mut map = self.lock();
            let changed = map.end_miss(id, seen);
            match r {
                Ok(n) => {
                    let n = n.min(buf.len());
                    buf[n..].fill(0);
                }
                Err(e) => {
                    drop(map);
                    self.frames.put(frame);
                    return Err(e);
                }
            }
            tries += 1;
            if !changed || tries >= 8 {
                break map;
            }
        };
        self.frames.write(frame, 0, &buf);
        let ent = map.entry(id).or_default();
        if let Some(&f) = ent.get(&pgoff) {
            self.frames.get(f);
            drop(map);
            self.frames.put(frame);
            return Ok(f);
        }
        ent.insert(pgoff, frame);
        // One reference for the cache (from alloc), one for the caller.
        self.frames.get(frame);
        Ok(frame)
    }

    /// Drops every cached page of `file_id`. Frames still mapped somewhere keep their mappers'
    /// references; the next fault of an unmapped page rereads the file.
    pub fn invalidate(&self, file_id: u64) {
        let removed = {
            let mut map = self.lock();
            map.changed(file_id);
            map.remove(&file_id)
        };
        for f in removed.into_iter().flat_map(BTreeMap::into_values) {
            self.frames.put(f);
        }
    }

    /// Calls `f(frame, offset in the page, range in the caller's buffer)` for each cached page of
    /// `pages` that overlaps file bytes `[offset, end)` (`end > offset`).
    fn for_each_overlap(
        &self,
        pages: &BTreeMap<u64, Frame>,
        offset: u64,
        end: u64,
        mut f: impl FnMut(Frame, usize, std::ops::Range<usize>),
    ) {
        let g = self.frames.granule();
        let (first, last) = (offset >> g.shift(), (end - 1) >> g.shift());
        for (&pgoff, &frame) in pages.range(first..=last) {
            let start = pgoff << g.shift();
            let lo = offset.max(start);
            let hi = end.min(start + g.size());
            f(
                frame,
                (lo - start) as usize,
                (lo - offset) as usize..(hi - offset) as usize,
            );
        }
    }

    /// `write(2)` through the page cache: `data`, just written to file `file_id` at `offset`, is
    /// copied into the cached pages it overlaps, so every mapping of those frames sees it at
    /// once, as Linux's `generic_perform_write` writes into the very pages mappings map.
    /// Pages not cached are read from the file on their next fault.
    pub fn update(&self, file_id: u64, offset: u64, data: &[u8]) {
        let Some(end) = offset.checked_add(data.len() as u64) else {
            return;
        };
        if data.is_empty() {
            return;
        }
        let mut map = self.lock();
        map.changed(file_id);
        let Some(pages) = map.get(&file_id) else {
            return;
        };
        self.for_each_overlap(pages, offset, end, |frame, in_page, r| {
            self.frames.write(frame, in_page, &data[r]);
        });
    }

    /// Writes the cached page `pgoff` of `file` back to the file (no-op if not cached).
    pub fn write_back(&self, file: &Arc<dyn VmFile>, pgoff: u64) -> Result<(), Errno> {
        let frame = {
            let map = self.lock();
            match map.get(&file.id()).and_then(|m| m.get(&pgoff)) {
                Some(&f) => {
                    self.frames.get(f);
                    f
                }
                None => return Ok(()),
            }
        };
        let r = self.write_back_frame(file, pgoff, frame);
        self.frames.put(frame);
        r
    }

    /// Writes `frame`, which holds page `pgoff` of `file`, back to the file: only the part below
    /// EOF, since a shared mapping's bytes past EOF are never written to the file (Linux's
    /// writepage clamps to i_size the same way).
    pub fn write_back_frame(
        &self,
        file: &Arc<dyn VmFile>,
        pgoff: u64,
        frame: Frame,
    ) -> Result<(), Errno> {
        let g = self.frames.granule();
        let offset = pgoff.checked_mul(g.size()).ok_or(Errno::EINVAL)?;
        let size = file.size();
        if offset >= size {
            return Ok(());
        }
        let n = (size - offset).min(g.size()) as usize;
        let mut buf = vec![0u8; n];
        self.frames.read(frame, 0, &mut buf);
        file.write_page(offset, &buf)
    }

    /// Drops the cached pages `first..=last` of `file_id` (truncate, hole punch: Linux
    /// `truncate_inode_pages_range`). Frames still mapped keep their mappers' references: the
    /// caller unmaps them ([`PageCache::unmap_mapping_range`]).
    pub fn drop_range(&self, file_id: u64, first: u64, last: u64) {
        if first > last {
            return;
        }
        let removed: Vec<Frame> = {
            let mut map = self.lock();
            map.changed(file_id);
            let Some(pages) = map.get_mut(&file_id) else {
                return;
            };
            let keys: Vec<u64> = pages.range(first..=last).map(|(&k, _)| k).collect();
            let out = keys.iter().filter_map(|k| pages.remove(k)).collect();
            if pages.is_empty() {
                map.remove(&file_id);
            }
            out
        };
        for f in removed {
            self.frames.put(f);
        }
    }

    /// Zeroes bytes `[lo, hi)` of `file_id` in the pages cached (the partial pages of a punch or
    /// truncate, `truncate_inode_partial_folio`): every mapping of them sees the zeros.
    pub fn zero_range(&self, file_id: u64, lo: u64, hi: u64) {
        if lo < hi {
            self.update(file_id, lo, &vec![0u8; (hi - lo) as usize]);
        }
    }

    /// `read(2)` of a file whose store is behind its cached pages (tmpfs: a shared mapping's
    /// writes reach the store only at write-back): overwrites `buf`, read from the store at
    /// `offset`, with the bytes of the pages cached, which are never older than the store.
    pub fn read_cached(&self, file_id: u64, offset: u64, buf: &mut [u8]) {
        let Some(end) = offset.checked_add(buf.len() as u64) else {
            return;
        };
        if buf.is_empty() {
            return;
        }
        let map = self.lock();
        let Some(pages) = map.get(&file_id) else {
            return;
        };
        self.for_each_overlap(pages, offset, end, |frame, in_page, r| {
            self.frames.read(frame, in_page, &mut buf[r]);
        });
    }

    /// Linux `unmap_mapping_range` for file `file_id`: pages `first..=last` leave every address
    /// space that maps them ([`crate::rmap`]; private copies made on write stay unless
    /// `even_cows`). Call it with no `Mm` lock, no page-cache lock and no file data lock held.
    pub fn unmap_mapping_range(&self, file_id: u64, first: u64, last: u64, even_cows: bool) {
        if first <= last {
            unmap_object(&self.rmap, Obj::File(file_id), first, last, even_cows);
        }
    }

    /// Number of cached pages (all files).
    pub fn cached_pages(&self) -> usize {
        self.lock().values().map(BTreeMap::len).sum()
    }

    /// Drops every cached page (memory pressure, shutdown).
    pub fn clear(&self) {
        let all = std::mem::take(&mut self.lock().files);
        for f in all.into_values().flat_map(BTreeMap::into_values) {
            self.frames.put(f);
        }
    }
}

impl Drop for PageCache {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Granule;
    use crate::HeapMemory;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An in-memory file for tests: counts reads, records writes.
    pub(crate) struct FakeFile {
        pub id: u64,
        pub data: Mutex<Vec<u8>>,
        pub reads: AtomicUsize,
    }

    impl FakeFile {
        pub(crate) fn new(id: u64, data: Vec<u8>) -> Arc<FakeFile> {
            Arc::new(FakeFile {
                id,
                data: Mutex::new(data),
                reads: AtomicUsize::new(0),
            })
        }
        pub(crate) fn bytes(&self) -> Vec<u8> {
            self.data.lock().unwrap().clone()
        }
    }

    impl VmFile for FakeFile {
        fn id(&self) -> u64 {
            self.id
        }
        fn size(&self) -> u64 {
            self.data.lock().unwrap().len() as u64
        }
        fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let d = self.data.lock().unwrap();
            let off = offset as usize;
            let n = d.len().saturating_sub(off).min(buf.len());
            buf[..n].copy_from_slice(&d[off..off + n]);
            Ok(n)
        }
        fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
            let mut d = self.data.lock().unwrap();
            let off = offset as usize;
            if d.len() < off + data.len() {
                d.resize(off + data.len(), 0);
            }
            d[off..off + data.len()].copy_from_slice(data);
            Ok(())
        }
        fn name(&self) -> String {
            format!("/fake/{}", self.id)
        }
    }

    #[test]
    fn cache_hits_share_one_frame_and_zero_past_eof() {
        let fa = Arc::new(FrameAllocator::new(
            Arc::new(HeapMemory::new(16 * 4096)),
            Granule::K4,
        ));
        let start = fa.free_frames();
        let cache = PageCache::new(fa.clone());
        let ff = FakeFile::new(7, vec![0xab; 5000]);
        let file: Arc<dyn VmFile> = ff.clone();
        let a = cache.get_page(&file, 1).unwrap();
        let b = cache.get_page(&file, 1).unwrap();
        assert_eq!(a, b);
        assert_eq!(ff.reads.load(Ordering::SeqCst), 1);
        assert_eq!(fa.refcount(a), 3); // cache + two callers
        let mut buf = [0u8; 4096];
        fa.read(a, 0, &mut buf);
        assert!(buf[..904].iter().all(|&x| x == 0xab));
        assert!(buf[904..].iter().all(|&x| x == 0));
        let far = cache.get_page(&file, 10).unwrap();
        fa.read(far, 0, &mut buf);
        assert!(buf.iter().all(|&x| x == 0));
        assert_eq!(ff.reads.load(Ordering::SeqCst), 1, "no read beyond EOF");

        // Write back clamps to EOF.
        fa.write(a, 0, b"XY");
        cache.write_back(&file, 1).unwrap();
        let bytes = ff.bytes();
        assert_eq!(bytes.len(), 5000);
        assert_eq!(&bytes[4096..4098], b"XY");

        cache.invalidate(7);
        assert_eq!(cache.cached_pages(), 0);
        assert_eq!(fa.refcount(a), 2, "mappers keep their references");
        fa.put(a);
        fa.put(b);
        fa.put(far);
        assert_eq!(fa.free_frames(), start);
    }

    /// write(2) lands in cached frames (what mappings see), at either granule; uncached pages
    /// are left to the next fault.
    #[test]
    fn update_writes_through_cached_pages() {
        for g in [Granule::K4, Granule::K16] {
            let ps = g.size() as usize;
            let fa = Arc::new(FrameAllocator::new(Arc::new(HeapMemory::new(8 * ps)), g));
            let cache = PageCache::new(fa.clone());
            let ff = FakeFile::new(3, vec![1; 3 * ps]);
            let file: Arc<dyn VmFile> = ff.clone();
            let p0 = cache.get_page(&file, 0).unwrap();
            let p2 = cache.get_page(&file, 2).unwrap();
            // 3 pages from just before the end of page 0 to the start of page 2; page 1 is not
            // cached.
            let data = vec![9u8; ps + 20];
            let off = (ps - 10) as u64;
            cache.update(3, off, &data);
            cache.update(4, 0, &data); // another file: nothing cached, nothing happens
            cache.update(3, 0, &[]);
            let mut buf = vec![0u8; ps];
            fa.read(p0, 0, &mut buf);
            assert!(buf[..ps - 10].iter().all(|&x| x == 1));
            assert!(buf[ps - 10..].iter().all(|&x| x == 9));
            fa.read(p2, 0, &mut buf);
            assert!(buf[..10].iter().all(|&x| x == 9), "{g:?}");
            assert!(buf[10..].iter().all(|&x| x == 1));
            assert_eq!(cache.cached_pages(), 2);
            fa.put(p0);
            fa.put(p2);
        }
    }

    /// drop_range drops only its pages, zero_range zeroes cached bytes in place, read_cached
    /// lays cached pages over what the store returned.
    #[test]
    fn drop_zero_and_read_cached() {
        let g = Granule::K4;
        let ps = g.size() as usize;
        let fa = Arc::new(FrameAllocator::new(Arc::new(HeapMemory::new(8 * ps)), g));
        let start = fa.free_frames();
        let cache = PageCache::new(fa.clone());
        let ff = FakeFile::new(5, vec![3; 3 * ps]);
        let file: Arc<dyn VmFile> = ff.clone();
        for i in 0..3 {
            let f = cache.get_page(&file, i).unwrap();
            fa.write(f, 0, b"M");
            fa.put(f);
        }
        cache.drop_range(5, 1, 1);
        assert!(cache.contains(5, 0) && !cache.contains(5, 1) && cache.contains(5, 2));
        cache.zero_range(5, 2 * ps as u64, 2 * ps as u64 + 1);
        let mut buf = vec![9u8; 3 * ps];
        cache.read_cached(5, 0, &mut buf);
        assert_eq!(buf[0], b'M', "cached page 0 laid over");
        assert_eq!(buf[ps], 9, "page 1 left as the store read it");
        assert_eq!(buf[2 * ps], 0, "zeroed in place");
        assert_eq!(buf[2 * ps + 1], 3);
        cache.drop_range(5, 0, u64::MAX);
        assert_eq!(cache.cached_pages(), 0);
        assert_eq!(fa.free_frames(), start);
    }

    /// A file whose data changes while a miss reads it (its first read): the miss reads again.
    struct Racy {
        cache: std::sync::OnceLock<Arc<PageCache>>,
        reads: AtomicUsize,
    }

    impl VmFile for Racy {
        fn id(&self) -> u64 {
            11
        }
        fn size(&self) -> u64 {
            4096
        }
        fn read_page(&self, _offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
            let n = self.reads.fetch_add(1, Ordering::SeqCst);
            buf.fill(if n == 0 { b'o' } else { b'n' });
            if n == 0 {
                // A write(2) lands meanwhile (tmpfs: store first, then PageCache::update).
                self.cache.get().unwrap().update(11, 0, b"n");
            }
            Ok(buf.len())
        }
        fn write_page(&self, _offset: u64, _data: &[u8]) -> Result<(), Errno> {
            Ok(())
        }
        fn name(&self) -> String {
            "racy".into()
        }
    }

    #[test]
    fn a_miss_racing_a_change_reads_again() {
        let fa = Arc::new(FrameAllocator::new(
            Arc::new(HeapMemory::new(4 * 4096)),
            Granule::K4,
        ));
        let cache = Arc::new(PageCache::new(fa.clone()));
        let racy = Arc::new(Racy {
            cache: Default::default(),
            reads: AtomicUsize::new(0),
        });
        let _ = racy.cache.set(cache.clone());
        let file: Arc<dyn VmFile> = racy.clone();
        let f = cache.get_page(&file, 0).unwrap();
        let mut b = [0u8; 1];
        fa.read(f, 0, &mut b);
        assert_eq!(&b, b"n", "the new data is cached, not the old");
        assert_eq!(racy.reads.load(Ordering::SeqCst), 2);
        fa.put(f);
        cache.clear();
    }
}
