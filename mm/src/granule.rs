//! The guest page size ("granule"), chosen at run time.
//!
//! x86_64 guests always use 4 KiB pages; arm64 guests may use 4 KiB or 16 KiB (`pagesize=`; and,
//! in principle, 64 KiB), at least the host kernel's page size because a guest page is one host
//! mapping of a physical-memory frame. Everything in this crate that depends on the page size
//! (frame size, page-table geometry, address alignment) takes it from a [`Granule`] rather than
//! from a constant, so that one binary serves every granule. Neighbours:
//! [`crate::FrameAllocator`] and [`crate::PageTable`] are parameterised by it; [`crate::Mm`]
//! aligns every guest address with it.
//!
//! Code that needs Linux's `PAGE_SIZE` without an address space at hand (block sizes that
//! `stat`/`statfs` of in-memory file systems report, pipe buffer sizes) asks [`page_size`]: the
//! granule boot chose ([`Granule::set_system`]), 4 KiB before that and in unit tests.

use std::sync::atomic::{AtomicU32, Ordering};

/// log2 of the page size of this boot's guests.
static SYSTEM_SHIFT: AtomicU32 = AtomicU32::new(12);

/// Linux's `PAGE_SIZE` for this boot: the granule boot chose with [`Granule::set_system`] (4 KiB
/// until then).
pub fn page_size() -> u64 {
    Granule::system().size()
}

/// A guest page size: a power of two between 4 KiB and 64 KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granule {
    shift: u32,
}

impl Granule {
    /// 4 KiB pages (x86_64, arm64 with 4K pages).
    pub const K4: Granule = Granule { shift: 12 };
    /// 16 KiB pages (arm64 with 16K pages, e.g. Apple silicon hosts).
    pub const K16: Granule = Granule { shift: 14 };
    /// 64 KiB pages (arm64 with 64K pages).
    pub const K64: Granule = Granule { shift: 16 };

    /// The granule of `size` bytes, if it is a power of two between 4 KiB and 64 KiB.
    pub fn new(size: u64) -> Option<Granule> {
        if size.is_power_of_two() && (4096..=65536).contains(&size) {
            Some(Granule {
                shift: size.trailing_zeros(),
            })
        } else {
            None
        }
    }

    /// The granule of this boot's guests ([`page_size`]).
    pub fn system() -> Granule {
        Granule {
            shift: SYSTEM_SHIFT.load(Ordering::Relaxed),
        }
    }

    /// Makes `g` the granule of this boot's guests; boot calls it once, before any guest runs.
    pub fn set_system(g: Granule) {
        SYSTEM_SHIFT.store(g.shift, Ordering::Relaxed);
    }

    /// log2 of the page size.
    pub fn shift(self) -> u32 {
        self.shift
    }

    /// The page size in bytes.
    pub fn size(self) -> u64 {
        1 << self.shift
    }

    /// Mask of the in-page offset bits.
    fn mask(self) -> u64 {
        self.size() - 1
    }

    /// Rounds `a` down to a page boundary.
    pub fn align_down(self, a: u64) -> u64 {
        a & !self.mask()
    }

    /// Rounds `a` up to a page boundary; `None` if that overflows (Linux's `PAGE_ALIGN` would wrap
    /// to 0, which its callers then reject; we make the overflow explicit).
    pub fn align_up(self, a: u64) -> Option<u64> {
        a.checked_add(self.mask()).map(|v| v & !self.mask())
    }

    /// Whether `a` is on a page boundary.
    pub fn is_aligned(self, a: u64) -> bool {
        a & self.mask() == 0
    }

    /// Offset of `a` within its page.
    pub fn offset_in_page(self, a: u64) -> u64 {
        a & self.mask()
    }

    /// Number of whole pages in `len` bytes (`len` is expected to be aligned).
    pub fn pages(self, len: u64) -> u64 {
        len >> self.shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_alignment() {
        assert_eq!(Granule::K4.size(), 4096);
        assert_eq!(Granule::K16.size(), 16384);
        assert_eq!(Granule::new(16384), Some(Granule::K16));
        assert_eq!(Granule::new(8192).map(Granule::shift), Some(13));
        assert_eq!(Granule::new(3000), None);
        assert_eq!(Granule::new(2048), None);
        assert_eq!(Granule::new(1 << 20), None);
        let g = Granule::K16;
        assert_eq!(g.align_down(0x4001), 0x4000);
        assert_eq!(g.align_up(0x4001), Some(0x8000));
        assert_eq!(g.align_up(0x4000), Some(0x4000));
        assert_eq!(g.align_up(u64::MAX - 5), None);
        assert!(g.is_aligned(0xc000));
        assert!(!g.is_aligned(0x1000));
        assert!(Granule::K4.is_aligned(0x1000));
        assert_eq!(g.offset_in_page(0x4123), 0x123);
        assert_eq!(g.pages(0x10000), 4);
    }

    #[test]
    fn system_granule_defaults_to_4k() {
        // Nothing in the unit tests sets it: Linux's PAGE_SIZE of a 4K boot.
        assert_eq!(Granule::system(), Granule::K4);
        assert_eq!(page_size(), 4096);
    }
}
