//! Physical frames: granule-sized slices of a [`PhysMemory`], reference counted.
//!
//! [`FrameAllocator`] owns the free list and the per-frame reference counts. A frame is referenced
//! once by every page-table entry that maps it (in any address space), once by the page cache
//! ([`crate::PageCache`]) while it caches a file page, and once by a shared-anonymous object
//! ([`crate::Shmem`]) while it holds a page; it returns to the free list when the last reference is
//! put. This is Linux's `struct page` refcount (`get_page`/`put_page`, include/linux/mm.h) without
//! the rest of `struct page`.
//!
//! The allocator is shared by every address space and every kernel thread, so its state is behind
//! one mutex; every operation is O(1) under it. Frame contents are only ever copied in and out
//! (never borrowed), because guest threads may be writing the same bytes through their host
//! mappings at the same time. Neighbours: [`crate::Granule`] (frame size), [`crate::PhysMemory`]
//! (the memory itself).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::PhysMemory;
use um_uapi::Errno;

use crate::Granule;
use crate::commit::Commit;

/// A physical frame number: frame `n` covers bytes `n * granule .. (n + 1) * granule` of
/// physical memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame(pub u32);

struct Inner {
    /// Reference count per frame; 0 means free.
    refs: Vec<u32>,
    /// Free frames, popped from the end (initialised so that low frames go first).
    free: Vec<u32>,
}

/// Hands out frames of physical memory and counts references to them.
pub struct FrameAllocator {
    phys: Arc<dyn PhysMemory>,
    granule: Granule,
    inner: Mutex<Inner>,
    /// The memory commitments against these frames (overcommit accounting).
    commit: Commit,
    /// Whether frames an address space drops from a PTE wait in its [`Gather`] until the engine
    /// has removed their host mapping ([`FrameAllocator::set_deferred_free`]).
    deferred: AtomicBool,
}

/// Frames whose last PTE went while a host mapping of them may still exist (Linux's
/// `mmu_gather`, mm/mmu_gather.c: pages are freed only after the TLB flush). The engine keeps
/// it until the host mappings are provably gone, then drops it: dropping puts every frame.
pub struct Gather {
    frames: Option<Arc<FrameAllocator>>,
    list: Vec<Frame>,
}

impl Gather {
    /// An empty gather (nothing to put).
    pub fn empty() -> Gather {
        Gather {
            frames: None,
            list: Vec::new(),
        }
    }

    /// Whether it holds no frame.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many frame references it holds.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Adds the frames of `other`.
    pub fn append(&mut self, mut other: Gather) {
        if self.frames.is_none() {
            self.frames = other.frames.take();
        }
        self.list.append(&mut other.list);
    }
}

impl Default for Gather {
    fn default() -> Gather {
        Gather::empty()
    }
}

impl Drop for Gather {
    fn drop(&mut self) {
        if let Some(fa) = &self.frames {
            for f in self.list.drain(..) {
                fa.put(f);
            }
        }
    }
}

impl std::fmt::Debug for Gather {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gather({} frames)", self.list.len())
    }
}

impl FrameAllocator {
    /// Manages all of `phys` as frames of `granule` bytes (a trailing partial frame is unused).
    pub fn new(phys: Arc<dyn PhysMemory>, granule: Granule) -> FrameAllocator {
        let n = ((phys.size() as u64) >> granule.shift()).min(u64::from(u32::MAX)) as u32;
        FrameAllocator {
            phys,
            granule,
            inner: Mutex::new(Inner {
                refs: vec![0; n as usize],
                free: (0..n).rev().collect(),
            }),
            commit: Commit::new(u64::from(n), granule.size()),
            deferred: AtomicBool::new(false),
        }
    }

    /// Makes address spaces defer putting the frames their PTEs drop until the engine takes
    /// them with their host ops ([`crate::Mm::take_gathered`]) and drops them once the host
    /// mappings are gone. The kernel turns this on at boot: its host mappings are made after
    /// the PTE changes (the seccomp engine's mapper thread runs them asynchronously, and other
    /// threads of a process may run guest code meanwhile), and a frame reused before that
    /// would be readable through the stale mapping. Off (the default, for tests): put at once.
    pub fn set_deferred_free(&self, on: bool) {
        self.deferred.store(on, Ordering::Relaxed);
    }

    /// Whether [`Self::set_deferred_free`] is on.
    pub fn deferred_free(&self) -> bool {
        self.deferred.load(Ordering::Relaxed)
    }

    /// A gather of `list` (frames whose references the caller holds) that puts them on drop.
    pub fn gather(self: &Arc<Self>, list: Vec<Frame>) -> Gather {
        Gather {
            frames: Some(self.clone()),
            list,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the counts half-updated (every critical
        // section is a single push/pop plus a counter store), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The overcommit accounting of this memory.
    pub fn commit(&self) -> &Commit {
        &self.commit
    }

    /// The frame size.
    pub fn granule(&self) -> Granule {
        self.granule
    }

    /// The physical memory the frames live in.
    pub fn phys(&self) -> &dyn PhysMemory {
        &*self.phys
    }

    /// Allocates a frame with reference count 1 and unspecified contents; `ENOMEM` when physical
    /// memory is exhausted.
    pub fn alloc(&self) -> Result<Frame, Errno> {
        let mut inner = self.lock();
        let n = inner.free.pop().ok_or(Errno::ENOMEM)?;
        inner.refs[n as usize] = 1;
        Ok(Frame(n))
    }

    /// Allocates a zero-filled frame.
    pub fn alloc_zeroed(&self) -> Result<Frame, Errno> {
        let f = self.alloc()?;
        self.phys
            .zero(self.offset(f) as usize, self.granule.size() as usize);
        Ok(f)
    }

    /// Takes one more reference to an allocated frame.
    pub fn get(&self, f: Frame) {
        let mut inner = self.lock();
        let r = &mut inner.refs[f.0 as usize];
        debug_assert!(*r > 0, "get of free frame {f:?}");
        *r += 1;
    }

    /// Drops one reference; the frame is freed when none remain.
    pub fn put(&self, f: Frame) {
        let mut inner = self.lock();
        let r = &mut inner.refs[f.0 as usize];
        if *r == 0 {
            // A double put is a kernel bug; refuse to corrupt the free list in release builds.
            debug_assert!(false, "put of free frame {f:?}");
            log::error!("mm: put of free frame {f:?}");
            return;
        }
        *r -= 1;
        if *r == 0 {
            inner.free.push(f.0);
        }
    }

    /// Current reference count (0 for a free frame).
    pub fn refcount(&self, f: Frame) -> u32 {
        self.lock().refs[f.0 as usize]
    }

    /// Byte offset of the frame in physical memory (the file offset to mmap from the memfd).
    pub fn offset(&self, f: Frame) -> u64 {
        u64::from(f.0) << self.granule.shift()
    }

    /// Number of frames managed.
    pub fn total_frames(&self) -> usize {
        self.lock().refs.len()
    }

    /// Number of frames currently free.
    pub fn free_frames(&self) -> usize {
        self.lock().free.len()
    }

    fn check(&self, off: usize, len: usize) {
        // Within-frame bounds: the memory only checks the whole memory, so an overrun into the next
        // frame would otherwise be silent corruption. Offsets come from kernel code, not guests.
        assert!(
            off.checked_add(len)
                .is_some_and(|e| e as u64 <= self.granule.size()),
            "frame access {off:#x}+{len:#x} beyond the frame"
        );
    }

    /// Copies `buf.len()` bytes at `off` within frame `f` into `buf`.
    pub fn read(&self, f: Frame, off: usize, buf: &mut [u8]) {
        self.check(off, buf.len());
        self.phys.read(self.offset(f) as usize + off, buf);
    }

    /// Copies `data` to `off` within frame `f`.
    pub fn write(&self, f: Frame, off: usize, data: &[u8]) {
        self.check(off, data.len());
        self.phys.write(self.offset(f) as usize + off, data);
    }

    /// Atomic compare-and-exchange of the aligned u32 at `off` within frame `f`; returns the value
    /// found (see [`PhysMemory::cmpxchg_u32`]).
    pub fn cmpxchg_u32(&self, f: Frame, off: usize, old: u32, new: u32) -> u32 {
        self.check(off, 4);
        self.phys
            .cmpxchg_u32(self.offset(f) as usize + off, old, new)
    }

    /// Copies the whole of `src` into `dst` (the copy-on-write copy).
    pub fn copy_frame(&self, src: Frame, dst: Frame) {
        self.phys.copy(
            self.offset(src) as usize,
            self.offset(dst) as usize,
            self.granule.size() as usize,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HeapMemory;

    fn alloc16() -> FrameAllocator {
        FrameAllocator::new(Arc::new(HeapMemory::new(8 * 16384)), Granule::K16)
    }

    #[test]
    fn alloc_refcount_free() {
        let fa = alloc16();
        assert_eq!(fa.total_frames(), 8);
        assert_eq!(fa.free_frames(), 8);
        let a = fa.alloc_zeroed().unwrap();
        assert_eq!(fa.refcount(a), 1);
        assert_eq!(fa.offset(a), u64::from(a.0) * 16384);
        fa.get(a);
        assert_eq!(fa.refcount(a), 2);
        fa.put(a);
        assert_eq!(fa.free_frames(), 7);
        fa.put(a);
        assert_eq!(fa.refcount(a), 0);
        assert_eq!(fa.free_frames(), 8);
    }

    #[test]
    fn exhaustion_is_enomem() {
        let fa = alloc16();
        let frames: Vec<_> = (0..8).map(|_| fa.alloc().unwrap()).collect();
        assert_eq!(fa.alloc(), Err(Errno::ENOMEM));
        fa.put(frames[3]);
        assert_eq!(fa.alloc(), Ok(frames[3]));
    }

    #[test]
    fn read_write_copy() {
        let fa = alloc16();
        let a = fa.alloc_zeroed().unwrap();
        let b = fa.alloc().unwrap();
        fa.write(a, 16380, b"abcd");
        fa.copy_frame(a, b);
        let mut buf = [0u8; 6];
        fa.read(b, 16378, &mut buf);
        assert_eq!(&buf, b"\0\0abcd");
    }

    #[test]
    #[should_panic]
    fn overrun_is_a_bug() {
        let fa = alloc16();
        let a = fa.alloc().unwrap();
        fa.write(a, 16383, b"xy");
    }
}
