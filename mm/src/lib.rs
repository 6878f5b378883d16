//! `um-mm`: guest address spaces.
//!
//! Owns everything about guest memory that is not a host call: the frame allocator over physical
//! memory ([`FrameAllocator`], frames of the guest page size), page tables generic over the
//! granule ([`PageTable`], 4K and 16K), the VMA map with Linux `mmap`/`munmap`/`mprotect`/`brk`/
//! `mremap` semantics ([`Mm`]), the page cache for file mappings ([`PageCache`], behind the
//! [`VmFile`] trait that file systems implement), fault resolution (zero-fill, file pages, COW,
//! stack growth), copying to and from guest memory, overcommit accounting ([`commit`]), and the
//! huge page pools with the rules of hugetlb mappings ([`hugetlb`]), and the reverse map from files
//! and shared memory objects to the address spaces mapping them (`rmap`: `unmap_mapping_range`).
//!
//! The host side of a mapping is not done here: every change to what the guest may see is queued
//! as a [`HostOp`] that the engine replays in the stub process before the guest runs again
//! ([`Mm::take_host_ops`]). Invariant: the host mapping never grants more than the PTE, and a
//! PTE never grants write to a frame that is shared copy-on-write.
//!
//! Neighbours: `um-uapi` below; `kernel` and `fs` above. The memory the frames live in is a
//! [`PhysMemory`] the caller gives (the kernel's: the host memfd of `um_os_linux::physmem`), so
//! this crate makes no host call.
#![forbid(unsafe_code)]

pub mod commit;
mod frame;
mod granule;
pub mod hugetlb;
mod mm;
mod pagecache;
mod pagetable;
mod physmem;
mod rmap;
mod shmem;
mod vma;

pub use frame::{Frame, FrameAllocator, Gather};
pub use granule::{Granule, page_size};
pub use mm::{Access, HostOp, Layout, MapFlags, Mm, Prot, SegvCode, Vdso, punch_backing};
pub use pagecache::{PageCache, VmFile};
pub use pagetable::{PageTable, Pte, PteFlags};
pub use physmem::{HeapMemory, PhysMemory};
pub use rmap::set_shootdown;
pub use shmem::Shmem;
pub use vma::{Backing, UffdReg, Userfault, VmLock, Vma};
