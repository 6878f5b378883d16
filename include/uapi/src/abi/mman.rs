//! Memory-mapping flags shared by x86_64 and arm64 (`include/uapi/asm-generic/mman-common.h`,
//! `include/uapi/asm-generic/mman.h`, `include/uapi/linux/mman.h`). Arch-only bits
//! (x86_64 `MAP_32BIT` 0x40; arm64 `PROT_BTI` 0x10, `PROT_MTE` 0x20) belong to the arch crates.

/// No access.
pub const PROT_NONE: u32 = 0x0;
/// Readable.
pub const PROT_READ: u32 = 0x1;
/// Writable.
pub const PROT_WRITE: u32 = 0x2;
/// Executable.
pub const PROT_EXEC: u32 = 0x4;
/// `mprotect`: extend the change down to the start of a grows-down VMA.
pub const PROT_GROWSDOWN: u32 = 0x0100_0000;
/// `mprotect`: extend the change up to the end of a grows-up VMA.
pub const PROT_GROWSUP: u32 = 0x0200_0000;

/// Shared mapping.
pub const MAP_SHARED: u32 = 0x01;
/// Private copy-on-write mapping.
pub const MAP_PRIVATE: u32 = 0x02;
/// Shared, and fail on unknown flags.
pub const MAP_SHARED_VALIDATE: u32 = 0x03;
/// Mask of the mapping type.
pub const MAP_TYPE: u32 = 0x0f;
/// Place exactly at `addr`, replacing what is there.
pub const MAP_FIXED: u32 = 0x10;
/// Not backed by a file.
pub const MAP_ANONYMOUS: u32 = 0x20;
/// Stack-like segment.
pub const MAP_GROWSDOWN: u32 = 0x0100;
/// Ignored.
pub const MAP_DENYWRITE: u32 = 0x0800;
/// Ignored.
pub const MAP_EXECUTABLE: u32 = 0x1000;
/// Lock the pages.
pub const MAP_LOCKED: u32 = 0x2000;
/// Do not reserve swap.
pub const MAP_NORESERVE: u32 = 0x4000;
/// Prefault the pages.
pub const MAP_POPULATE: u32 = 0x8000;
/// With `MAP_POPULATE`: do not block on I/O.
pub const MAP_NONBLOCK: u32 = 0x01_0000;
/// Address suitable for a stack (hint).
pub const MAP_STACK: u32 = 0x02_0000;
/// Huge pages.
pub const MAP_HUGETLB: u32 = 0x04_0000;
/// Synchronous page faults (DAX; needs `MAP_SHARED_VALIDATE`).
pub const MAP_SYNC: u32 = 0x08_0000;
/// Like `MAP_FIXED` but fail with `EEXIST` instead of replacing.
pub const MAP_FIXED_NOREPLACE: u32 = 0x10_0000;
/// Anonymous pages need not be cleared (ignored without a config option).
pub const MAP_UNINITIALIZED: u32 = 0x400_0000;

/// `mremap`: may move the mapping.
pub const MREMAP_MAYMOVE: u32 = 1;
/// Move to `new_address`.
pub const MREMAP_FIXED: u32 = 2;
/// Leave the old range mapped (empty).
pub const MREMAP_DONTUNMAP: u32 = 4;

/// `msync`: asynchronous.
pub const MS_ASYNC: u32 = 1;
/// Invalidate other mappings.
pub const MS_INVALIDATE: u32 = 2;
/// Synchronous.
pub const MS_SYNC: u32 = 4;

/// `mlockall`: current pages.
pub const MCL_CURRENT: u32 = 1;
/// Future pages.
pub const MCL_FUTURE: u32 = 2;
/// Lock on fault.
pub const MCL_ONFAULT: u32 = 4;

/// `madvise`: no special treatment.
pub const MADV_NORMAL: u32 = 0;
/// Random access.
pub const MADV_RANDOM: u32 = 1;
/// Sequential access.
pub const MADV_SEQUENTIAL: u32 = 2;
/// Will need these pages.
pub const MADV_WILLNEED: u32 = 3;
/// Drop these pages (private anonymous memory reads back as zero).
pub const MADV_DONTNEED: u32 = 4;
/// Pages may be freed lazily.
pub const MADV_FREE: u32 = 8;
/// Remove the backing store.
pub const MADV_REMOVE: u32 = 9;
/// Do not inherit across fork.
pub const MADV_DONTFORK: u32 = 10;
/// Inherit across fork.
pub const MADV_DOFORK: u32 = 11;
/// KSM may merge.
pub const MADV_MERGEABLE: u32 = 12;
/// KSM may not merge.
pub const MADV_UNMERGEABLE: u32 = 13;
/// Use transparent huge pages.
pub const MADV_HUGEPAGE: u32 = 14;
/// Do not use transparent huge pages.
pub const MADV_NOHUGEPAGE: u32 = 15;
/// Exclude from core dumps.
pub const MADV_DONTDUMP: u32 = 16;
/// Include in core dumps.
pub const MADV_DODUMP: u32 = 17;
/// Zero in the child after fork.
pub const MADV_WIPEONFORK: u32 = 18;
/// Undo `MADV_WIPEONFORK`.
pub const MADV_KEEPONFORK: u32 = 19;
/// Deactivate.
pub const MADV_COLD: u32 = 20;
/// Reclaim.
pub const MADV_PAGEOUT: u32 = 21;
/// Prefault readable.
pub const MADV_POPULATE_READ: u32 = 22;
/// Prefault writable.
pub const MADV_POPULATE_WRITE: u32 = 23;
/// Like `MADV_DONTNEED`, also for locked pages.
pub const MADV_DONTNEED_LOCKED: u32 = 24;
/// Collapse into huge pages.
pub const MADV_COLLAPSE: u32 = 25;
/// Poison a page (testing).
pub const MADV_HWPOISON: u32 = 100;
