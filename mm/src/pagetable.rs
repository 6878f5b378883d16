//! A multi-level radix page table whose geometry follows the granule.
//!
//! Like a hardware table, every level is one granule of 8-byte entries: `granule / 8` entries per
//! table (512 at 4K, 2048 at 16K, 8192 at 64K), and as many levels as it takes to cover the
//! configured virtual-address width, the top level taking whatever bits are left over. At 4K and 48
//! bits that is 4 levels of 512; at 16K and 48 bits it is 3 levels of 2048 under a 2-entry top
//! level, exactly arm64's 16K/48-bit layout (arch/arm64/include/asm/pgtable-hwdef.h). Nothing here
//! assumes 512 entries: the C arm64 port broke at 16K from exactly that.
//!
//! The table is software only (the host's page tables are driven through [`crate::HostOp`]s); it
//! records, per guest page, the [`Pte`]: the frame and [`PteFlags`]. Empty intermediate tables are
//! freed as soon as their last entry goes, like Linux's `free_pgtables` (mm/memory.c) but eager.
//! Neighbours: [`crate::Mm`] owns one per address space; frames' reference counts are the
//! caller's business ([`crate::FrameAllocator`]).

use bitflags::bitflags;

use crate::{Frame, Granule};

bitflags! {
    /// Per-page state. READ/WRITE/EXEC are the protection currently granted in the host mapping
    /// (the vma's protection minus whatever copy-on-write or dirty tracking withholds).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct PteFlags: u32 {
        const READ = 1 << 0;
        const WRITE = 1 << 1;
        const EXEC = 1 << 2;
        /// The frame is shared writable (MAP_SHARED): writes go to the shared frame, never COW.
        const SHARED = 1 << 3;
        /// The frame may be shared copy-on-write: never writable in the host while so marked; a
        /// write fault copies it (or, if this is the last reference to an anonymous frame, just
        /// takes it over).
        const COW = 1 << 4;
        /// Written since it was last clean (shared file pages: needs write-back).
        const DIRTY = 1 << 5;
        /// Anonymous memory (zero-fill, COW copies, shared-anonymous objects).
        const ANON = 1 << 6;
        /// A page-cache frame of a file.
        const FILE = 1 << 7;
        /// userfaultfd write-protected (Linux `_PAGE_UFFD_WP`, `UFFDIO_WRITEPROTECT`): never
        /// writable in the host; a write goes to the monitor ([`crate::Mm::userfault`]).
        const UFFD_WP = 1 << 8;
    }
}

/// One page-table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pte {
    pub frame: Frame,
    pub flags: PteFlags,
}

/// Shape of the tree, derived from the granule and VA width.
#[derive(Clone, Copy, Debug)]
struct Geom {
    page_shift: u32,
    /// Index bits per full level: log2(granule / 8).
    bits: u32,
    levels: u32,
    /// Index bits of the top level (1..=bits).
    top_bits: u32,
    va_bits: u32,
}

impl Geom {
    /// Shift of the address bits that index `level` (0 = top).
    fn shift(self, level: u32) -> u32 {
        self.page_shift + self.bits * (self.levels - 1 - level)
    }
    fn entries(self, level: u32) -> usize {
        1 << if level == 0 { self.top_bits } else { self.bits }
    }
    fn index(self, va: u64, level: u32) -> usize {
        ((va >> self.shift(level)) as usize) & (self.entries(level) - 1)
    }
    fn limit(self) -> u64 {
        if self.va_bits >= 64 {
            u64::MAX
        } else {
            1 << self.va_bits
        }
    }
}

enum Node {
    Dir {
        slots: Vec<Option<Box<Node>>>,
        used: usize,
    },
    Leaf {
        slots: Vec<Option<Pte>>,
        used: usize,
    },
}

impl Node {
    fn new(g: Geom, level: u32) -> Node {
        let n = g.entries(level);
        if level + 1 == g.levels {
            Node::Leaf {
                slots: vec![None; n],
                used: 0,
            }
        } else {
            Node::Dir {
                slots: (0..n).map(|_| None).collect(),
                used: 0,
            }
        }
    }

    fn used(&self) -> usize {
        match self {
            Node::Dir { used, .. } | Node::Leaf { used, .. } => *used,
        }
    }
}

/// The per-address-space page table.
pub struct PageTable {
    granule: Granule,
    geom: Geom,
    root: Node,
    len: usize,
    /// The most entries there have been at once (the resident high-water mark).
    peak: usize,
    /// Number of table pages, root included (what a real kernel would spend on page tables).
    tables: usize,
}

/// Index range of the slots of a table at `base` (covering `span` bytes each, `n` of them) that
/// intersect `[start, end)`.
fn slot_range(base: u64, span: u64, n: usize, start: u64, end: u64) -> std::ops::Range<usize> {
    let first = if start > base {
        ((start - base) / span) as usize
    } else {
        0
    };
    let last = if end <= base {
        0
    } else {
        (((end - base - 1) / span) as usize + 1).min(n)
    };
    first.min(last)..last
}

impl PageTable {
    /// An empty table for `va_bits`-bit guest addresses (48 is the usual choice).
    ///
    /// Panics if `va_bits` does not exceed the page shift or exceeds 64: that is a configuration
    /// bug, not guest input.
    pub fn new(granule: Granule, va_bits: u32) -> PageTable {
        let page_shift = granule.shift();
        assert!(
            va_bits > page_shift && va_bits <= 64,
            "bad va_bits {va_bits}"
        );
        let bits = page_shift - 3; // entries are 8 bytes, a table is one granule
        let index_bits = va_bits - page_shift;
        let levels = index_bits.div_ceil(bits);
        let top_bits = index_bits - bits * (levels - 1);
        let geom = Geom {
            page_shift,
            bits,
            levels,
            top_bits,
            va_bits,
        };
        PageTable {
            granule,
            geom,
            root: Node::new(geom, 0),
            len: 0,
            peak: 0,
            tables: 1,
        }
    }

    /// The page size.
    pub fn granule(&self) -> Granule {
        self.granule
    }

    /// Number of levels.
    pub fn levels(&self) -> u32 {
        self.geom.levels
    }

    /// Entries in each table of `level` (0 = top).
    pub fn entries_at(&self, level: u32) -> usize {
        self.geom.entries(level)
    }

    /// Table pages currently allocated, root included.
    pub fn table_count(&self) -> usize {
        self.tables
    }

    /// Number of present entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The most entries present at once since the table was made.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Whether no entry is present.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entry for the page containing `va`.
    pub fn get(&self, va: u64) -> Option<Pte> {
        let g = self.geom;
        if va >= g.limit() {
            return None;
        }
        let mut node = &self.root;
        let mut level = 0;
        loop {
            let i = g.index(va, level);
            match node {
                Node::Dir { slots, .. } => node = slots[i].as_deref()?,
                Node::Leaf { slots, .. } => return slots[i],
            }
            level += 1;
        }
    }

    /// Sets the entry for the page containing `va`, returning the old one.
    ///
    /// Panics if `va` is beyond the table's VA width: [`crate::Mm`] checks guest addresses against
    /// the task size first, so this is a kernel bug.
    pub fn set(&mut self, va: u64, pte: Pte) -> Option<Pte> {
        let g = self.geom;
        assert!(va < g.limit(), "va {va:#x} beyond {} bits", g.va_bits);
        let mut node = &mut self.root;
        let mut level = 0;
        loop {
            let i = g.index(va, level);
            match node {
                Node::Dir { slots, used } => {
                    if slots[i].is_none() {
                        slots[i] = Some(Box::new(Node::new(g, level + 1)));
                        *used += 1;
                        self.tables += 1;
                    }
                    node = slots[i].as_deref_mut().expect("just filled");
                }
                Node::Leaf { slots, used } => {
                    let old = slots[i].replace(pte);
                    if old.is_none() {
                        *used += 1;
                        self.len += 1;
                        self.peak = self.peak.max(self.len);
                    }
                    return old;
                }
            }
            level += 1;
        }
    }

    /// Removes the entry for the page containing `va`, freeing tables that become empty.
    pub fn remove(&mut self, va: u64) -> Option<Pte> {
        let g = self.geom;
        if va >= g.limit() {
            return None;
        }
        let end = va.saturating_add(1);
        let mut out = Vec::with_capacity(1);
        let mut freed = 0;
        Self::drain_rec(g, &mut self.root, 0, 0, va, end, &mut out, &mut freed);
        self.tables -= freed;
        self.len -= out.len();
        out.pop().map(|(_, p)| p)
    }

    /// Calls `f(page_va, pte)` for every present entry with `start <= page_va < end`, in address
    /// order.
    pub fn for_each_in(&self, start: u64, end: u64, mut f: impl FnMut(u64, Pte)) {
        let end = end.min(self.geom.limit());
        if start < end {
            Self::walk(self.geom, &self.root, 0, 0, start, end, &mut f);
        }
    }

    fn walk(
        g: Geom,
        node: &Node,
        level: u32,
        base: u64,
        start: u64,
        end: u64,
        f: &mut impl FnMut(u64, Pte),
    ) {
        let span = 1u64 << g.shift(level);
        match node {
            Node::Dir { slots, used } => {
                if *used == 0 {
                    return;
                }
                for i in slot_range(base, span, slots.len(), start, end) {
                    if let Some(child) = &slots[i] {
                        Self::walk(g, child, level + 1, base + i as u64 * span, start, end, f);
                    }
                }
            }
            Node::Leaf { slots, used } => {
                if *used == 0 {
                    return;
                }
                for i in slot_range(base, span, slots.len(), start, end) {
                    if let Some(p) = slots[i] {
                        f(base + i as u64 * span, p);
                    }
                }
            }
        }
    }

    /// Calls `f(page_va, &mut pte)` for every present entry in `[start, end)`, in address order.
    pub fn update_in(&mut self, start: u64, end: u64, mut f: impl FnMut(u64, &mut Pte)) {
        let end = end.min(self.geom.limit());
        if start < end {
            Self::walk_mut(self.geom, &mut self.root, 0, 0, start, end, &mut f);
        }
    }

    fn walk_mut(
        g: Geom,
        node: &mut Node,
        level: u32,
        base: u64,
        start: u64,
        end: u64,
        f: &mut impl FnMut(u64, &mut Pte),
    ) {
        let span = 1u64 << g.shift(level);
        match node {
            Node::Dir { slots, .. } => {
                let n = slots.len();
                for i in slot_range(base, span, n, start, end) {
                    if let Some(child) = &mut slots[i] {
                        Self::walk_mut(g, child, level + 1, base + i as u64 * span, start, end, f);
                    }
                }
            }
            Node::Leaf { slots, .. } => {
                let n = slots.len();
                for i in slot_range(base, span, n, start, end) {
                    if let Some(p) = &mut slots[i] {
                        f(base + i as u64 * span, p);
                    }
                }
            }
        }
    }

    /// Removes and returns every entry in `[start, end)`, in address order, freeing tables that
    /// become empty.
    pub fn drain_range(&mut self, start: u64, end: u64) -> Vec<(u64, Pte)> {
        let end = end.min(self.geom.limit());
        let mut out = Vec::new();
        if start < end {
            let mut freed = 0;
            Self::drain_rec(
                self.geom,
                &mut self.root,
                0,
                0,
                start,
                end,
                &mut out,
                &mut freed,
            );
            self.tables -= freed;
            self.len -= out.len();
        }
        out
    }

    fn drain_rec(
        g: Geom,
        node: &mut Node,
        level: u32,
        base: u64,
        start: u64,
        end: u64,
        out: &mut Vec<(u64, Pte)>,
        freed: &mut usize,
    ) {
        let span = 1u64 << g.shift(level);
        match node {
            Node::Dir { slots, used } => {
                let n = slots.len();
                for i in slot_range(base, span, n, start, end) {
                    let Some(child) = &mut slots[i] else { continue };
                    let cbase = base + i as u64 * span;
                    Self::drain_rec(g, child, level + 1, cbase, start, end, out, freed);
                    if child.used() == 0 {
                        slots[i] = None;
                        *used -= 1;
                        *freed += 1;
                    }
                }
            }
            Node::Leaf { slots, used } => {
                let n = slots.len();
                for i in slot_range(base, span, n, start, end) {
                    if let Some(p) = slots[i].take() {
                        *used -= 1;
                        out.push((base + i as u64 * span, p));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pte(n: u32) -> Pte {
        Pte {
            frame: Frame(n),
            flags: PteFlags::READ | PteFlags::ANON,
        }
    }

    #[test]
    fn geometry_follows_granule() {
        let t4 = PageTable::new(Granule::K4, 48);
        assert_eq!(t4.levels(), 4);
        assert_eq!(t4.entries_at(0), 512);
        assert_eq!(t4.entries_at(3), 512);
        let t16 = PageTable::new(Granule::K16, 48);
        assert_eq!(t16.levels(), 4);
        assert_eq!(t16.entries_at(0), 2);
        assert_eq!(t16.entries_at(1), 2048);
        assert_eq!(t16.entries_at(3), 2048);
        let t16_47 = PageTable::new(Granule::K16, 47);
        assert_eq!(t16_47.levels(), 3);
        assert_eq!(t16_47.entries_at(0), 2048);
        let t64 = PageTable::new(Granule::K64, 48);
        assert_eq!(t64.levels(), 3);
        assert_eq!(t64.entries_at(0), 64);
        assert_eq!(t64.entries_at(1), 8192);
    }

    /// Map, look up, iterate and unmap across leaf and top-level boundaries.
    fn exercise(g: Granule, freed_tables: usize) {
        let mut t = PageTable::new(g, 48);
        let page = g.size();
        let entries = g.size() / 8;
        // One leaf table covers `entries` pages; the top-level slot covers 2^(48-top_bits).
        let leaf_span = entries * page;
        let top_span = 1u64 << (48 - t.geom.top_bits);
        let vas = [
            0,
            leaf_span - page,
            leaf_span,
            top_span - page,
            top_span,
            (1u64 << 48) - page,
        ];
        for (i, &va) in vas.iter().enumerate() {
            assert_eq!(t.set(va, pte(i as u32)), None);
        }
        assert_eq!(t.len(), vas.len());
        for (i, &va) in vas.iter().enumerate() {
            assert_eq!(t.get(va), Some(pte(i as u32)));
            assert_eq!(t.get(va + page - 1), Some(pte(i as u32)), "same page");
        }
        assert_eq!(t.get(page), None);
        assert_eq!(t.get(1 << 48), None);
        // Replace returns the old entry and keeps the count.
        assert_eq!(t.set(0, pte(99)), Some(pte(0)));
        assert_eq!(t.len(), vas.len());

        // Iteration over a range crossing the top-level boundary, in order.
        let mut seen = Vec::new();
        t.for_each_in(leaf_span, top_span + page, |va, p| {
            seen.push((va, p.frame.0))
        });
        assert_eq!(
            seen,
            vec![(leaf_span, 2), (top_span - page, 3), (top_span, 4)]
        );

        // update_in touches only the range.
        t.update_in(top_span - page, top_span + page, |_, p| {
            p.flags |= PteFlags::COW
        });
        assert!(t.get(top_span).unwrap().flags.contains(PteFlags::COW));
        assert!(!t.get(leaf_span).unwrap().flags.contains(PteFlags::COW));

        // Draining the two pages around the top boundary frees their now-empty tables.
        let tables_before = t.table_count();
        let drained = t.drain_range(top_span - page, top_span + page);
        assert_eq!(drained.len(), 2);
        assert_eq!(drained[0].0, top_span - page);
        assert_eq!(drained[1].0, top_span);
        assert_eq!(t.len(), vas.len() - 2);
        // top_span - page sat alone in its two lowest tables; top_span alone under its top slot
        // at 4K (3 tables), but shares its level-1 table with the last page at 16K (2 tables).
        assert_eq!(tables_before - t.table_count(), freed_tables);

        assert_eq!(t.remove(leaf_span), Some(pte(2)));
        assert_eq!(t.remove(leaf_span), None);
        // Removing the rest leaves only the root.
        t.drain_range(0, u64::MAX);
        assert!(t.is_empty());
        assert_eq!(t.table_count(), 1);
    }

    #[test]
    fn map_unmap_4k() {
        exercise(Granule::K4, 5);
    }

    #[test]
    fn map_unmap_16k() {
        exercise(Granule::K16, 4);
    }

    #[test]
    fn sixteen_k_uses_2048_entry_leaves() {
        let g = Granule::K16;
        let mut t = PageTable::new(g, 48);
        // Pages 0 and 2047 share a leaf; page 2048 needs a new one (at 4K-style 512 it would be
        // page 512 that did).
        t.set(0, pte(1));
        let base = t.table_count();
        t.set(511 * g.size(), pte(2));
        t.set(512 * g.size(), pte(3));
        t.set(2047 * g.size(), pte(4));
        assert_eq!(t.table_count(), base);
        t.set(2048 * g.size(), pte(5));
        assert_eq!(t.table_count(), base + 1);
        assert_eq!(t.get(512 * g.size()), Some(pte(3)));
        assert_eq!(t.get(2048 * g.size()), Some(pte(5)));
    }

    #[test]
    fn dense_range() {
        let g = Granule::K4;
        let mut t = PageTable::new(g, 39);
        for i in 0..2000u64 {
            t.set(0x40_0000 + i * g.size(), pte(i as u32));
        }
        let mut n = 0;
        t.for_each_in(
            0x40_0000 + 10 * g.size(),
            0x40_0000 + 1010 * g.size(),
            |va, p| {
                assert_eq!(u64::from(p.frame.0), (va - 0x40_0000) / g.size());
                n += 1;
            },
        );
        assert_eq!(n, 1000);
        assert_eq!(t.drain_range(0, 0x40_0000 + 1000 * g.size()).len(), 1000);
        assert_eq!(t.len(), 1000);
    }
}
