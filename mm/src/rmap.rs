//! The reverse map: which address spaces map a file or a shared memory object (Linux's
//! `address_space->i_mmap`, include/linux/fs.h), and [`unmap_object`], Linux's
//! `unmap_mapping_range` (mm/memory.c), which removes a range of an object's pages from every
//! address space that maps it.
//!
//! A file system that drops pages (hole punch, truncate: Linux `shmem_fallocate`,
//! `shmem_setattr`, `truncate_pagecache`) or `MADV_REMOVE` of shared anonymous memory must not
//! leave them mapped: a process that still has the old frame would read the old bytes instead of
//! zeros (or instead of `SIGBUS` past the end of a file). Each [`crate::Mm`] registers itself
//! here, by a weak reference, for every object one of its vmas maps (shared or private), once
//! [`crate::Mm::into_shared`] has put it behind its lock; it leaves when it is dropped.
//! Registrations are not removed at munmap: an address space that no longer maps the object
//! just finds nothing to zap.
//!
//! **Locking.** Order: an `Mm`'s lock, then the page cache's lock (and this map's), then a
//! file's own data lock. [`unmap_object`] takes each mapper's `Mm` lock in turn (never two at
//! once, and never while holding this map's lock: it works on a snapshot), so its caller must
//! hold no `Mm` lock, no page-cache lock and no file data lock. `MADV_REMOVE` therefore punches
//! after the caller's own `Mm` lock is released, as Linux's `madvise_remove` drops
//! `mmap_lock` around `vfs_fallocate`.
//!
//! **The host side.** Zapping queues `HostOp::Unmap` on the address space; an engine replays
//! it before a thread of that address space runs guest code again. A thread that runs guest
//! code right now would keep the old host mapping until then, so after zapping another address
//! space [`unmap_object`] calls the shootdown hook the kernel installs ([`set_shootdown`], a
//! TLB shootdown's equivalent): it interrupts that address space's threads in the guest and
//! waits until the queue has been taken.
//!
//! Neighbours: [`crate::PageCache`] owns the map for files; [`crate::Shmem`] uses it for shared
//! anonymous memory and SysV shm.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use crate::Mm;

/// A mappable object: a file by its page-cache id, or a [`crate::Shmem`] by its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Obj {
    File(u64),
    Shmem(u64),
}

/// Object -> the address spaces that (may) map it.
#[derive(Default)]
pub(crate) struct Rmap {
    map: Mutex<HashMap<Obj, Vec<Weak<Mutex<Mm>>>>>,
}

impl Rmap {
    fn lock(&self) -> MutexGuard<'_, HashMap<Obj, Vec<Weak<Mutex<Mm>>>>> {
        // Each critical section is one map operation: a panic cannot leave it half done.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that `mm` maps `obj`.
    pub(crate) fn add(&self, obj: Obj, mm: &Weak<Mutex<Mm>>) {
        let mut m = self.lock();
        let v = m.entry(obj).or_default();
        v.retain(|w| w.strong_count() > 0);
        if !v.iter().any(|w| w.ptr_eq(mm)) {
            v.push(mm.clone());
        }
    }

    /// Forgets `mm` for `obj` (the address space is going).
    pub(crate) fn remove(&self, obj: Obj, mm: &Weak<Mutex<Mm>>) {
        let mut m = self.lock();
        if let Some(v) = m.get_mut(&obj) {
            v.retain(|w| !w.ptr_eq(mm) && w.strong_count() > 0);
            if v.is_empty() {
                m.remove(&obj);
            }
        }
    }

    /// The live address spaces registered for `obj`.
    pub(crate) fn mappers(&self, obj: Obj) -> Vec<Arc<Mutex<Mm>>> {
        self.lock()
            .get(&obj)
            .map(|v| v.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    }

    /// Objects with registrations (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

type Shootdown = Box<dyn Fn(&Arc<Mutex<Mm>>) + Send + Sync>;

static SHOOTDOWN: OnceLock<Shootdown> = OnceLock::new();

/// Installs the kernel's shootdown: called, with no lock held, for each address space other
/// than the caller's whose host mapping [`unmap_object`] changed, to make its threads that run
/// guest code take the queued host ops (and, ideally, to wait until they have). Only the first
/// call counts.
pub fn set_shootdown(f: impl Fn(&Arc<Mutex<Mm>>) + Send + Sync + 'static) {
    let _ = SHOOTDOWN.set(Box::new(f));
}

/// Linux `unmap_mapping_range`: removes pages `first..=last` (in pages of the object) of `obj`
/// from every address space that maps it: their PTEs go (without write-back: the data is being
/// discarded), frame references are dropped and host unmaps queued. In private mappings the
/// pages still shared with the object go; copies made on write stay unless `even_cows` (Linux
/// `zap_details.even_cows`: false for a hole punch, true for truncate). The caller holds no
/// `Mm` lock (see the module docs).
pub(crate) fn unmap_object(rmap: &Rmap, obj: Obj, first: u64, last: u64, even_cows: bool) {
    for mm in rmap.mappers(obj) {
        let changed = mm
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .zap_object(obj, first, last, even_cows);
        if changed && let Some(f) = SHOOTDOWN.get() {
            f(&mm);
        }
    }
}
