//! Shared anonymous memory: the object behind `MAP_SHARED|MAP_ANONYMOUS`.
//!
//! Linux backs a shared anonymous mapping with a shmem file (mm/shmem.c `shmem_zero_setup`) so
//! that every process that inherits the mapping across fork sees the same pages, including pages
//! first touched after the fork. [`Shmem`] is that object reduced to what we need: page index ->
//! frame, zero-filled on first touch, freed when the last vma referring to it goes (it lives in
//! an `Arc` held by [`crate::Backing::Shmem`]). `MADV_REMOVE` frees pages and unmaps them from
//! every address space ([`Shmem::punch`]). Neighbours: [`crate::FrameAllocator`],
//! [`crate::Mm`]'s fault path.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use um_uapi::Errno;

use crate::rmap::{Obj, unmap_object};
use crate::{Frame, FrameAllocator, PageCache};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A shared anonymous memory object.
pub struct Shmem {
    id: u64,
    frames: Arc<FrameAllocator>,
    pages: Mutex<BTreeMap<u64, Frame>>,
}

impl Shmem {
    /// A new, empty object.
    pub fn new(frames: Arc<FrameAllocator>) -> Shmem {
        Shmem {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            frames,
            pages: Mutex::new(BTreeMap::new()),
        }
    }

    /// A number unique among shmem objects (the inode number in /proc/PID/maps).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The frame of page `pgoff`, zero-filled on first use; returns with a reference for the
    /// caller.
    pub fn get_page(&self, pgoff: u64) -> Result<Frame, Errno> {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        let f = match pages.get(&pgoff) {
            Some(&f) => f,
            None => {
                let f = self.frames.alloc_zeroed()?;
                pages.insert(pgoff, f);
                f
            }
        };
        self.frames.get(f);
        Ok(f)
    }

    /// Whether page `pgoff` has been allocated (mincore).
    pub fn contains(&self, pgoff: u64) -> bool {
        self.pages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&pgoff)
    }

    /// `MADV_REMOVE` (Linux `shmem_fallocate` with `FALLOC_FL_PUNCH_HOLE`): frees pages
    /// `first..=last` and removes them from every address space that maps this object
    /// ([`crate::rmap`], through `cache`'s map), so the next access reads a new zero page. Call
    /// it with no `Mm` lock held. The pages go first, then the mappings: a fault in between
    /// either still has its PTE (zapped next) or gets a new zero page, and there is nothing to
    /// write back.
    pub fn punch(&self, first: u64, last: u64, cache: &PageCache) {
        if first > last {
            return;
        }
        let gone: Vec<Frame> = {
            let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
            let keys: Vec<u64> = pages.range(first..=last).map(|(&k, _)| k).collect();
            keys.iter().filter_map(|k| pages.remove(k)).collect()
        };
        for f in gone {
            self.frames.put(f);
        }
        unmap_object(&cache.rmap, Obj::Shmem(self.id), first, last, false);
    }

    /// Pages currently allocated.
    pub fn pages(&self) -> usize {
        self.pages.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for Shmem {
    fn drop(&mut self) {
        let pages = std::mem::take(&mut *self.pages.lock().unwrap_or_else(|e| e.into_inner()));
        for f in pages.into_values() {
            self.frames.put(f);
        }
    }
}
