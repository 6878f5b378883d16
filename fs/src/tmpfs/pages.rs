//! The data of a tmpfs regular file: a sparse map of pages, and the instance's block count
//! (Linux mm/shmem.c keeps a file's folios in its `address_space` and counts them in
//! `shmem_sb_info.used_blocks`).
//!
//! Key types: [`Blocks`] (one per tmpfs instance: the `size=` / `nr_blocks=` limit in pages and
//! the pages allocated), [`PageMap`] (one per regular file: its length and its pages, page
//! index -> [`Page`]). A page absent from the map is a hole: it reads as zeros and costs
//! nothing. Writes allocate the pages they touch; truncate frees the pages past the new end;
//! growing a file allocates nothing. `fallocate` reserves pages without data
//! ([`Page::Unwritten`], Linux's falloc'd folios that are not yet uptodate): they are charged
//! and counted in `st_blocks`, read as zeros and are holes to `SEEK_DATA`, as in shmem.
//! Everything here is pure bookkeeping under the file's lock; `tmpfs.rs` (the inode and the
//! page-cache side, `TmpVm`) is the only user.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use um_uapi::{Errno, SysResult};

/// The pages of one tmpfs instance: its limit and what its files hold
/// (`shmem_sb_info.max_blocks`, `used_blocks`).
#[derive(Debug)]
pub struct Blocks {
    /// The most pages the instance may hold; `u64::MAX` when unlimited.
    limit: u64,
    /// Pages allocated by its files now.
    used: AtomicU64,
}

impl Blocks {
    /// An instance's count with a limit of `limit` pages (`u64::MAX`: unlimited).
    pub fn new(limit: u64) -> Arc<Blocks> {
        Arc::new(Blocks {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// The limit in pages (`u64::MAX`: unlimited).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Pages allocated now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Charges `n` pages, all or none (`shmem_inode_acct_blocks`): false when they do not fit.
    fn charge(&self, n: u64) -> bool {
        n == 0
            || self
                .used
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                    u.checked_add(n).filter(|&v| v <= self.limit)
                })
                .is_ok()
    }

    /// Gives `n` pages back (`shmem_inode_unacct_blocks`).
    fn uncharge(&self, n: u64) {
        if n > 0 {
            self.used.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

/// One allocated page of a file.
enum Page {
    /// Reserved by `fallocate` and never written: reads as zeros, a hole to `SEEK_DATA`
    /// (shmem leaves falloc'd folios !uptodate; `folio_seek_hole_data` skips them). It holds no
    /// memory here, only its charge.
    Unwritten,
    /// Written data, a whole page; bytes past the file's end are zero.
    Data(Box<[u8]>),
}

/// A tmpfs regular file's contents: its length and its allocated pages.
pub struct PageMap {
    len: u64,
    pages: BTreeMap<u64, Page>,
    blocks: Arc<Blocks>,
    /// The page size (`um_mm::page_size()` for real files; tests use small pages).
    psize: u64,
}

impl Drop for PageMap {
    /// The file's pages go back to the instance when its last user (inode, mapping) goes
    /// (`shmem_evict_inode` after unlink and the last close).
    fn drop(&mut self) {
        self.blocks.uncharge(self.pages.len() as u64);
    }
}

impl PageMap {
    /// An empty file charging its pages to `blocks`, in pages of `psize` bytes.
    pub fn new(blocks: Arc<Blocks>, psize: u64) -> PageMap {
        assert!(psize.is_power_of_two());
        PageMap {
            len: 0,
            pages: BTreeMap::new(),
            blocks,
            psize,
        }
    }

    /// The file's length in bytes.
    pub fn size(&self) -> u64 {
        self.len
    }

    /// Pages allocated (written or reserved), for `st_blocks`.
    pub fn allocated(&self) -> u64 {
        self.pages.len() as u64
    }

    /// Reads at `off` into `buf`; returns the bytes read (0 at or past the end). Holes and
    /// reserved pages read as zeros.
    pub fn read(&self, off: u64, buf: &mut [u8]) -> usize {
        if off >= self.len || buf.is_empty() {
            return 0;
        }
        let n = (buf.len() as u64).min(self.len - off) as usize;
        let end = off + n as u64;
        buf[..n].fill(0);
        let (first, last) = (off / self.psize, (end - 1) / self.psize);
        for (&idx, page) in self.pages.range(first..=last) {
            if let Page::Data(d) = page {
                let start = idx * self.psize;
                let (lo, hi) = (off.max(start), end.min(start + self.psize));
                buf[(lo - off) as usize..(hi - off) as usize]
                    .copy_from_slice(&d[(lo - start) as usize..(hi - start) as usize]);
            }
        }
        n
    }

    /// Stores `data` at `off`, allocating the pages it touches; stops at the first page that
    /// cannot be charged. Returns the bytes stored. Does not change the length.
    fn store(&mut self, off: u64, data: &[u8]) -> usize {
        let psize = self.psize as usize;
        let mut done = 0usize;
        while done < data.len() {
            let pos = off + done as u64;
            let idx = pos / self.psize;
            let at = (pos % self.psize) as usize;
            let n = (self.psize as usize - at).min(data.len() - done);
            let src = &data[done..done + n];
            let fill = || {
                let mut d = vec![0u8; psize].into_boxed_slice();
                d[at..at + n].copy_from_slice(src);
                Page::Data(d)
            };
            match self.pages.get_mut(&idx) {
                Some(Page::Data(d)) => d[at..at + n].copy_from_slice(src),
                // shmem_write_begin on a falloc'd folio: it becomes data, already charged.
                Some(p) => *p = fill(),
                None => {
                    if !self.blocks.charge(1) {
                        break;
                    }
                    self.pages.insert(idx, fill());
                }
            }
            done += n;
        }
        done
    }

    /// `write(2)` at `off`: allocates the pages it touches and extends the file past what it
    /// wrote. A write that only partly fits the instance's limit writes what fits
    /// (`generic_perform_write` stops at the first page `shmem_write_begin` cannot get);
    /// `ENOSPC` when nothing fits.
    pub fn write(&mut self, off: u64, data: &[u8]) -> SysResult<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let done = self.store(off, data);
        if done == 0 {
            return Err(Errno::ENOSPC);
        }
        self.len = self.len.max(off + done as u64);
        Ok(done)
    }

    /// Write-back of a shared mapping's dirty page: what lies below the end is stored (the
    /// page is allocated if it was a hole); it never extends the file. `ENOSPC` if a page
    /// could not be allocated (Linux would have failed the write fault with SIGBUS).
    pub fn write_back(&mut self, off: u64, data: &[u8]) -> SysResult<()> {
        if off >= self.len {
            return Ok(());
        }
        let n = (data.len() as u64).min(self.len - off) as usize;
        if self.store(off, &data[..n]) < n {
            return Err(Errno::ENOSPC);
        }
        Ok(())
    }

    /// Sets the length (`shmem_setattr`). Growing allocates nothing (the new part is a hole);
    /// shrinking, or truncating to the same length, frees every page past the end (also
    /// pages `fallocate` reserved there with `FALLOC_FL_KEEP_SIZE`) and zeroes the tail of
    /// the last page (`shmem_truncate_range(inode, newsize, -1)`).
    pub fn truncate(&mut self, new: u64) {
        if new > self.len {
            self.len = new;
            return;
        }
        self.len = new;
        let gone = self.pages.split_off(&new.div_ceil(self.psize));
        self.blocks.uncharge(gone.len() as u64);
        self.zero(new, new.div_ceil(self.psize) * self.psize);
    }

    /// Zeroes `[lo, hi)` in the data pages it covers (partial pages of a truncate or punch:
    /// `truncate_inode_partial_folio`).
    fn zero(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        let (first, last) = (lo / self.psize, (hi - 1) / self.psize);
        for (&idx, page) in self.pages.range_mut(first..=last) {
            if let Page::Data(d) = page {
                let start = idx * self.psize;
                let (a, b) = (lo.max(start) - start, hi.min(start + self.psize) - start);
                d[a as usize..b as usize].fill(0);
            }
        }
    }

    /// `FALLOC_FL_PUNCH_HOLE`: frees the whole pages in `[off, off + len)` and zeroes the
    /// parts of partial ones (`shmem_truncate_range(inode, off, off + len - 1)`); the length
    /// stays. Pages past the end (reserved with `KEEP_SIZE`) are freed too.
    pub fn punch(&mut self, off: u64, len: u64) {
        let end = off.saturating_add(len);
        let (full_lo, full_hi) = (off.div_ceil(self.psize), end / self.psize);
        if full_lo < full_hi {
            let gone: Vec<u64> = self
                .pages
                .range(full_lo..full_hi)
                .map(|(&k, _)| k)
                .collect();
            for k in &gone {
                self.pages.remove(k);
            }
            self.blocks.uncharge(gone.len() as u64);
        }
        let head_end = end.min(full_lo.saturating_mul(self.psize));
        self.zero(off, head_end);
        self.zero(off.max(full_hi.saturating_mul(self.psize)), end);
    }

    /// `fallocate` modes 0 and `FALLOC_FL_KEEP_SIZE`: allocates every page of
    /// `[off, off + len)` that is not yet, all or nothing (`ENOSPC`, nothing allocated: shmem
    /// undoes a partial allocation). The length is the caller's.
    pub fn reserve(&mut self, off: u64, len: u64) -> SysResult<()> {
        if len == 0 {
            return Ok(());
        }
        let first = off / self.psize;
        let end = off
            .checked_add(len)
            .ok_or(Errno::EFBIG)?
            .div_ceil(self.psize);
        let held = self.pages.range(first..end).count() as u64;
        let need = (end - first) - held;
        if !self.blocks.charge(need) {
            return Err(Errno::ENOSPC);
        }
        for idx in first..end {
            self.pages.entry(idx).or_insert(Page::Unwritten);
        }
        Ok(())
    }

    /// Grows the length to `new` if it is larger (fallocate without `KEEP_SIZE`).
    pub fn extend(&mut self, new: u64) {
        self.len = self.len.max(new);
    }

    /// `SEEK_DATA` (`data`) or `SEEK_HOLE` from `off` (mm/filemap.c
    /// `mapping_seek_hole_data`, as `shmem_file_llseek` calls it): data is a written page;
    /// holes and reserved pages are holes, and the end of the file is one. `ENXIO` at or past
    /// the end, or when no data follows `off`.
    pub fn seek(&self, off: u64, data: bool) -> SysResult<u64> {
        if off >= self.len {
            return Err(Errno::ENXIO);
        }
        let first = off / self.psize;
        let mut written = self
            .pages
            .range(first..)
            .filter(|(_, p)| matches!(p, Page::Data(_)))
            .map(|(&k, _)| k);
        if data {
            let pos = match written.next() {
                Some(idx) => (idx * self.psize).max(off),
                None => return Err(Errno::ENXIO),
            };
            return if pos >= self.len {
                Err(Errno::ENXIO)
            } else {
                Ok(pos)
            };
        }
        // The first page from `first` on that is not written data.
        let mut hole = first;
        for idx in written {
            if idx != hole {
                break;
            }
            hole += 1;
        }
        Ok(hole.saturating_mul(self.psize).max(off).min(self.len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PS: u64 = 16;

    fn map(limit: u64) -> (Arc<Blocks>, PageMap) {
        let b = Blocks::new(limit);
        (b.clone(), PageMap::new(b, PS))
    }

    fn read_all(m: &PageMap) -> Vec<u8> {
        let mut v = vec![0xaa; m.size() as usize];
        assert_eq!(m.read(0, &mut v), m.size() as usize);
        v
    }

    #[test]
    fn sparse_write_and_read() {
        let (b, mut m) = map(u64::MAX);
        // One byte far out allocates one page, not the whole range.
        assert_eq!(m.write(1 << 32, b"x").unwrap(), 1);
        assert_eq!((m.size(), m.allocated(), b.used()), ((1 << 32) + 1, 1, 1));
        let mut buf = [0xffu8; 4];
        assert_eq!(m.read((1 << 32) - 2, &mut buf), 3);
        assert_eq!(buf, [0, 0, b'x', 0xff]);
        // A write across pages allocates each page it touches.
        m.write(10, b"abcdefghij").unwrap();
        assert_eq!(m.allocated(), 3);
        let mut buf = [0u8; 12];
        assert_eq!(m.read(9, &mut buf), 12);
        assert_eq!(&buf, b"\0abcdefghij\0");
        assert_eq!(m.read(m.size(), &mut buf), 0);
        drop(m);
        assert_eq!(b.used(), 0, "dropping the file frees its pages");
    }

    #[test]
    fn truncate_frees_and_zeroes_tail() {
        let (b, mut m) = map(u64::MAX);
        m.write(0, &[7u8; 40]).unwrap();
        assert_eq!(b.used(), 3);
        m.truncate(20);
        assert_eq!((m.size(), b.used()), (20, 2));
        // Growing again is sparse and shows zeros past the old end.
        m.truncate(100);
        assert_eq!((m.size(), b.used()), (100, 2));
        let v = read_all(&m);
        assert!(v[..20].iter().all(|&c| c == 7) && v[20..].iter().all(|&c| c == 0));
        m.truncate(0);
        assert_eq!((m.size(), b.used()), (0, 0));
    }

    #[test]
    fn write_back_allocates_but_never_extends() {
        let (b, mut m) = map(u64::MAX);
        m.truncate(20);
        m.write_back(8, &[1u8; 16]).unwrap();
        assert_eq!((m.size(), b.used()), (20, 2));
        let v = read_all(&m);
        assert_eq!(
            &v[6..22.min(v.len())],
            &[0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
        );
        m.write_back(40, &[1u8; 16]).unwrap();
        assert_eq!(b.used(), 2);
    }

    #[test]
    fn punch_frees_whole_pages_and_zeroes_parts() {
        let (b, mut m) = map(u64::MAX);
        m.write(0, &[5u8; 64]).unwrap();
        assert_eq!(b.used(), 4);
        // [10, 40): page 1 freed, pages 0 and 2 zeroed in part.
        m.punch(10, 30);
        assert_eq!((m.size(), b.used()), (64, 3));
        let v = read_all(&m);
        assert!(v[..10].iter().all(|&c| c == 5));
        assert!(v[10..40].iter().all(|&c| c == 0));
        assert!(v[40..].iter().all(|&c| c == 5));
        // Inside one page.
        m.punch(50, 2);
        assert_eq!(read_all(&m)[49..53], [5, 0, 0, 5]);
        // Past the end: the length stays.
        m.punch(0, 1000);
        assert_eq!((m.size(), b.used()), (64, 0));
        assert!(read_all(&m).iter().all(|&c| c == 0));
    }

    #[test]
    fn seek_data_and_hole() {
        let (_, mut m) = map(u64::MAX);
        m.truncate(10 * PS);
        m.write(PS * 2 + 3, b"ab").unwrap();
        m.write(PS * 3, b"cd").unwrap();
        m.write(PS * 6, b"ef").unwrap();
        assert_eq!(m.seek(0, true), Ok(2 * PS));
        assert_eq!(m.seek(2 * PS + 5, true), Ok(2 * PS + 5));
        assert_eq!(m.seek(0, false), Ok(0));
        assert_eq!(m.seek(2 * PS + 1, false), Ok(4 * PS));
        assert_eq!(m.seek(5 * PS, true), Ok(6 * PS));
        assert_eq!(m.seek(7 * PS, true), Err(Errno::ENXIO));
        assert_eq!(m.seek(7 * PS, false), Ok(7 * PS));
        assert_eq!(m.seek(10 * PS, false), Err(Errno::ENXIO));
        // A data page holding the end: the hole is the end.
        m.write(10 * PS - 1, b"z").unwrap();
        m.truncate(10 * PS - 4);
        assert_eq!(m.seek(9 * PS, false), Ok(10 * PS - 4));
        // Reserved pages are holes.
        m.reserve(0, PS * 2).unwrap();
        assert_eq!(m.seek(0, false), Ok(0));
        assert_eq!(m.seek(0, true), Ok(2 * PS));
    }

    #[test]
    fn limit_is_enforced_and_released() {
        let (b, mut m) = map(4);
        // A write that partly fits writes what fits; then ENOSPC.
        assert_eq!(m.write(8, &[1u8; 100]).unwrap(), 4 * PS as usize - 8);
        assert_eq!((b.used(), m.size()), (4, 4 * PS));
        assert_eq!(m.write(4 * PS, b"x"), Err(Errno::ENOSPC));
        // Overwriting held pages needs nothing new.
        assert_eq!(m.write(0, &[2u8; 16]).unwrap(), 16);
        // Growing by truncate is free; a write into the hole is not.
        m.truncate(100 * PS);
        assert_eq!(m.write(50 * PS, b"x"), Err(Errno::ENOSPC));
        m.punch(0, 2 * PS);
        assert_eq!(b.used(), 2);
        let mut m2 = PageMap::new(b.clone(), PS);
        assert_eq!(m2.write(0, &[3u8; 48]).unwrap(), 32);
        assert_eq!(b.used(), 4);
        drop(m2);
        assert_eq!(b.used(), 2);
    }

    #[test]
    fn reserve_is_all_or_nothing() {
        let (b, mut m) = map(4);
        m.write(0, b"a").unwrap();
        assert_eq!(m.reserve(0, 5 * PS), Err(Errno::ENOSPC));
        assert_eq!((b.used(), m.allocated()), (1, 1));
        m.reserve(PS / 2, 3 * PS).unwrap();
        assert_eq!((b.used(), m.allocated(), m.size()), (4, 4, 1));
        // Writing into reserved pages needs no new charge; they become data.
        m.extend(4 * PS);
        assert_eq!(m.write(PS, &[9u8; 48]).unwrap(), 48);
        assert_eq!(b.used(), 4);
        assert_eq!(m.seek(0, false), Ok(4 * PS));
        // Truncating to the same length frees reservations past the end.
        let (b2, mut m2) = map(u64::MAX);
        m2.reserve(0, 3 * PS).unwrap();
        assert_eq!((b2.used(), m2.size()), (3, 0));
        assert!(read_all(&m2).is_empty());
        m2.truncate(0);
        assert_eq!(b2.used(), 0);
    }
}
