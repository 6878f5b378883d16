//! Virtual memory areas: contiguous ranges of guest address space with one protection and one
//! backing (Linux's `struct vm_area_struct`, include/linux/mm_types.h).
//!
//! [`Vma`] is plain data; [`crate::Mm`] keeps them in an ordered map and does the splitting and
//! merging. [`Backing`] says where a page comes from on a fault: zero-fill, a file through the
//! page cache, or a shared-anonymous object. Neighbours: [`crate::Mm`], [`crate::VmFile`],
//! [`crate::Shmem`].

use std::fmt;
use std::sync::Arc;

use crate::{MapFlags, Prot, Shmem, VmFile};

/// Where a vma's pages come from.
#[derive(Clone)]
pub enum Backing {
    /// Private anonymous memory: zero-filled on first touch.
    Anon,
    /// A file; `offset` is the byte offset (granule aligned) of the vma's first page.
    File { file: Arc<dyn VmFile>, offset: u64 },
    /// Shared anonymous memory (`MAP_SHARED|MAP_ANONYMOUS`, created by [`crate::Mm::mmap`] when
    /// given [`Backing::Anon`] with `MAP_SHARED`); `offset` as for files.
    Shmem { shm: Arc<Shmem>, offset: u64 },
}

impl Backing {
    /// The backing of the same object `delta` bytes further on (for the upper half of a split).
    pub(crate) fn advanced(&self, delta: u64) -> Backing {
        match self {
            Backing::Anon => Backing::Anon,
            Backing::File { file, offset } => Backing::File {
                file: file.clone(),
                offset: offset + delta,
            },
            Backing::Shmem { shm, offset } => Backing::Shmem {
                shm: shm.clone(),
                offset: offset + delta,
            },
        }
    }

    /// Byte offset of the vma's first page in its object (0 for private anonymous memory).
    pub fn offset(&self) -> u64 {
        match self {
            Backing::Anon => 0,
            Backing::File { offset, .. } | Backing::Shmem { offset, .. } => *offset,
        }
    }

    /// Whether `self` followed by `len` bytes continues as `next` (same object, contiguous
    /// offsets): one of the conditions for merging (mm/vma.c `is_mergeable_vma`).
    pub(crate) fn continues_as(&self, len: u64, next: &Backing) -> bool {
        match (self, next) {
            (Backing::Anon, Backing::Anon) => true,
            (Backing::File { file: a, offset: x }, Backing::File { file: b, offset: y }) => {
                a.id() == b.id() && x.checked_add(len) == Some(*y)
            }
            (Backing::Shmem { shm: a, offset: x }, Backing::Shmem { shm: b, offset: y }) => {
                Arc::ptr_eq(a, b) && x.checked_add(len) == Some(*y)
            }
            _ => false,
        }
    }
}

impl fmt::Debug for Backing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backing::Anon => f.write_str("Anon"),
            Backing::File { file, offset } => f
                .debug_struct("File")
                .field("file", &file.name())
                .field("offset", offset)
                .finish(),
            Backing::Shmem { shm, offset } => f
                .debug_struct("Shmem")
                .field("id", &shm.id())
                .field("offset", offset)
                .finish(),
        }
    }
}

/// Whether a vma's pages are locked in memory (Linux `VM_LOCKED`, `VM_LOCKONFAULT`;
/// mm/mlock.c). Guest memory is never paged out here, so a lock changes what is *populated*
/// (mlock faults the range in, `MLOCK_ONFAULT` does not) and what is counted (`VmLck`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VmLock {
    #[default]
    None,
    /// `VM_LOCKED`: populated when locked.
    Locked,
    /// `VM_LOCKED | VM_LOCKONFAULT`: locked as pages fault in.
    OnFault,
}

/// A userfaultfd context (Linux `struct userfaultfd_ctx`, fs/userfaultfd.c), implemented by the
/// file layer (`fs/src/userfaultfd.rs`). `mm` only keeps it on the vmas registered with it and
/// asks it two things; the run loop hands it the faults [`crate::Mm::userfault`] picks out.
pub trait Userfault: Send + Sync {
    /// Whether its descriptor is closed: registered ranges then fault as if unregistered
    /// (Linux `userfaultfd_release` clears them; here the stale registration is ignored).
    fn released(&self) -> bool;
    /// Hands the fault at `addr` (`UFFD_PAGEFAULT_FLAG_*` in `flags`) to the monitor and sleeps,
    /// interruptibly, until it is woken (`UFFDIO_COPY`, `UFFDIO_WAKE`, ..., the descriptor
    /// closed) or a signal is pending (fs/userfaultfd.c `handle_userfault`). `Ok` means retry
    /// the access; `Err` is the signal to raise instead (`UFFD_FEATURE_SIGBUS`).
    fn handle_fault(&self, addr: u64, flags: u64) -> Result<(), crate::SegvCode>;
}

/// A vma's userfaultfd registration (Linux `vm_userfaultfd_ctx` and the `VM_UFFD_*` flags).
#[derive(Clone)]
pub struct UffdReg {
    pub ctx: Arc<dyn Userfault>,
    /// `UFFDIO_REGISTER_MODE_*` (only MISSING is implemented).
    pub mode: u64,
}

impl UffdReg {
    /// Whether this is a registration with `ctx` (the same context object).
    pub fn is(&self, ctx: &Arc<dyn Userfault>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.ctx), Arc::as_ptr(ctx))
    }
}

impl fmt::Debug for UffdReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UffdReg({:p}, mode {:#x})",
            Arc::as_ptr(&self.ctx),
            self.mode
        )
    }
}

/// One mapped range `[start, end)`.
#[derive(Clone, Debug)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub prot: Prot,
    /// The mapping's lasting flags (SHARED or PRIVATE, GROWSDOWN, ...); one-shot flags such as
    /// FIXED and POPULATE are not kept.
    pub flags: MapFlags,
    pub backing: Backing,
    /// "[heap]", "[stack]", "[vdso]", or a prctl(PR_SET_VMA_ANON_NAME) name.
    pub name: Option<String>,
    /// mlock state (`MAP_LOCKED`, mlock, mlock2, mlockall).
    pub lock: VmLock,
    /// `MADV_WIPEONFORK` (Linux `VM_WIPEONFORK`): a child gets this range empty (zero-fill).
    pub wipe_on_fork: bool,
    /// `MADV_DONTDUMP` (Linux `VM_DONTDUMP`): left out of core dumps.
    pub dont_dump: bool,
    /// Linux `VM_MAYWRITE` of a shared mapping: false when the file was not open for writing
    /// or refuses shared writable mappings (a sealed memfd); mprotect cannot add PROT_WRITE.
    pub may_write: bool,
    /// Linux `VM_ACCOUNT`: the vma's pages are charged to the overcommit accounting
    /// ([`crate::commit`]): private writable mappings without `MAP_NORESERVE`, the heap, the
    /// stacks, and private mappings mprotect made writable.
    pub accounted: bool,
    /// userfaultfd registration (`UFFDIO_REGISTER`), if any.
    pub uffd: Option<UffdReg>,
}

impl Vma {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Always false: a vma is never empty (present for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Whether `addr` is inside.
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    /// MAP_SHARED (writes reach the object and every other mapper).
    pub fn is_shared(&self) -> bool {
        self.flags.contains(MapFlags::SHARED)
    }

    /// Whether this is a stack that grows down on faults below it.
    pub fn grows_down(&self) -> bool {
        self.flags.contains(MapFlags::GROWSDOWN)
    }

    /// The path column of /proc/PID/maps: the file name, "/dev/zero (deleted)" for shared
    /// anonymous memory (as Linux shows it), else the vma name if any.
    pub fn path(&self) -> Option<String> {
        match &self.backing {
            Backing::File { file, .. } => Some(file.name()),
            Backing::Shmem { .. } => Some("/dev/zero (deleted)".to_string()),
            Backing::Anon => self.name.clone(),
        }
    }

    /// Whether `next` may be merged onto the end of `self` (mm/vma.c `can_vma_merge_after`).
    pub(crate) fn can_merge_with(&self, next: &Vma) -> bool {
        self.end == next.start
            && self.prot == next.prot
            && self.flags == next.flags
            && self.name == next.name
            && self.lock == next.lock
            && self.wipe_on_fork == next.wipe_on_fork
            && self.may_write == next.may_write
            && self.dont_dump == next.dont_dump
            && self.accounted == next.accounted
            // is_mergeable_vma: the same userfaultfd context (or none) and mode.
            && match (&self.uffd, &next.uffd) {
                (None, None) => true,
                (Some(a), Some(b)) => a.is(&b.ctx) && a.mode == b.mode,
                _ => false,
            }
            && self.backing.continues_as(self.len(), &next.backing)
    }
}
