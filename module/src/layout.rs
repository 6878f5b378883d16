//! Laying a module out in regions, before any address is known: which region each allocated
//! section goes to (Linux `kernel/module/main.c` `layout_sections` with
//! `module_init_layout_section`: executable → text, read-only → rodata, writable → data,
//! `.init*` → the init regions), and the extra space [`crate::link`](mod@crate::link) will fill:
//!
//! - veneer/stub slots at the end of `Text` and `InitText`: the worst case, one per distinct
//!   (symbol, addend) reached by a CALL26/JUMP26 (arm64) or PLT32 (x86_64) from another
//!   section, as `count_plts` in `arch/arm64/kernel/module-plts.c` (branches to the same
//!   section are always in range, so they need none);
//! - the x86_64 GOT at the end of `Rodata`: one 8-byte entry per symbol used by
//!   `GOTPCREL`/`GOTPCRELX`/`REX_GOTPCRELX`;
//! - `charp` parameter strings at the end of `Data`: [`crate::params::CHARP_SLOT`] bytes per
//!   `charp` parameter.
//!
//! Neighbours: [`crate::elf`] (the sections and relocations), [`crate::link`](mod@crate::link) (fills it in).

use std::collections::BTreeSet;

use goblin::elf::section_header::{SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE};
use um_uapi::Errno;

use crate::elf::{ModuleObject, Place};
use crate::modinfo::{KSYMTAB_STRINGS, MODINFO};
use crate::params::CHARP_SLOT;
use crate::{Layout, LoadError, Machine, RegionKind, RegionSpec};

/// The largest section alignment accepted (a page of the largest granule).
pub const MAX_ALIGN: u64 = 64 * 1024;
/// The largest region accepted: beyond this a module is refused with `ENOMEM` (a branch
/// cannot even cross such a text region).
pub const MAX_REGION_SIZE: u64 = 256 << 20;
/// Minimum region alignment reported.
const MIN_REGION_ALIGN: u64 = 16;
/// Size of a GOT entry.
pub const GOT_ENTRY_SIZE: u64 = 8;

/// Linux clears SHF_ALLOC on these (`__versions`, `.modinfo`); `__ksymtab_strings` is read at
/// parse time and needed by nothing at run time.
const NOT_LOADED: [&str; 3] = [MODINFO, "__versions", KSYMTAB_STRINGS];

/// The region an allocated section goes to, or `None` if it is not loaded.
pub(crate) fn classify(name: &str, _sh_type: u32, flags: u64) -> Option<RegionKind> {
    if flags & u64::from(SHF_ALLOC) == 0 || NOT_LOADED.contains(&name) {
        return None;
    }
    let init = name.starts_with(".init");
    Some(if flags & u64::from(SHF_EXECINSTR) != 0 {
        if init {
            RegionKind::InitText
        } else {
            RegionKind::Text
        }
    } else if init {
        RegionKind::InitData
    } else if flags & u64::from(SHF_WRITE) != 0 {
        RegionKind::Data
    } else {
        RegionKind::Rodata
    })
}

/// A pool of equal slots at `offset` in a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pool {
    pub offset: u64,
    pub slots: u64,
}

/// The x86_64 GOT: at `offset` in `Rodata`, one entry per symbol index, in this order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Got {
    pub offset: u64,
    pub symbols: Vec<usize>,
}

impl Got {
    pub fn slot(&self, sym: usize) -> Option<u64> {
        self.symbols
            .iter()
            .position(|&s| s == sym)
            .map(|i| i as u64)
    }
}

/// Everything [`crate::link`](mod@crate::link) needs to know about the layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// (size, align) per region, indexed by [`RegionKind::index`]; size 0 = absent.
    pub regions: [(u64, u64); 5],
    /// Veneer/stub slots per text region (index as above; only Text and InitText are used).
    pub pools: [Option<Pool>; 5],
    pub got: Option<Got>,
    /// `charp` string slots in `Data`.
    pub charp: Option<Pool>,
}

impl Plan {
    pub fn layout(&self) -> Layout {
        Layout {
            regions: RegionKind::ALL
                .iter()
                .filter_map(|&kind| {
                    let (size, align) = self.regions[kind.index()];
                    (size > 0).then_some(RegionSpec { kind, size, align })
                })
                .collect(),
        }
    }

    pub fn pool(&self, kind: RegionKind) -> Option<&Pool> {
        self.pools[kind.index()].as_ref()
    }

    pub fn size(&self, kind: RegionKind) -> u64 {
        self.regions[kind.index()].0
    }
}

fn align_up(v: u64, align: u64) -> Option<u64> {
    v.checked_add(align - 1).map(|x| x & !(align - 1))
}

/// Bytes and alignment of one veneer/stub slot on this machine.
pub(crate) fn slot_geometry(machine: Machine) -> (u64, u64) {
    match machine {
        Machine::X86_64 => (
            um_arch_x86::module::PLT_STUB_SIZE,
            um_arch_x86::module::PLT_STUB_ALIGN,
        ),
        Machine::Aarch64 => (
            um_arch_arm64::module::VENEER_SIZE,
            um_arch_arm64::module::VENEER_ALIGN,
        ),
    }
}

/// Places every loaded section (sets `Section::place`) and sizes the regions.
pub(crate) fn plan(obj: &mut ModuleObject) -> Result<Plan, LoadError> {
    let mut plan = Plan::default();
    let too_big = |kind: RegionKind, name: &str| {
        LoadError::new(
            Errno::ENOMEM,
            format!(
                "{name}: module too large: the {kind:?} region exceeds {MAX_REGION_SIZE} bytes"
            ),
        )
    };

    // Sections, in index order within each region (layout_sections).
    let mut sizes = [0u64; 5];
    let mut aligns = [MIN_REGION_ALIGN; 5];
    for sec in &mut obj.sections {
        let Some(kind) = classify(&sec.name, sec.sh_type, sec.flags) else {
            continue;
        };
        let k = kind.index();
        let offset = align_up(sizes[k], sec.align).ok_or_else(|| too_big(kind, &obj.name))?;
        sizes[k] = offset
            .checked_add(sec.size)
            .filter(|&s| s <= MAX_REGION_SIZE)
            .ok_or_else(|| too_big(kind, &obj.name))?;
        aligns[k] = aligns[k].max(sec.align);
        sec.place = Some(Place { kind, offset });
    }

    // Veneer/stub slots: distinct (symbol, addend) per text region, skipping branches to
    // the branch's own section (count_plts).
    let mut keys: [BTreeSet<(usize, i64)>; 5] = Default::default();
    let mut got_syms: Vec<usize> = Vec::new();
    for rs in &obj.relas {
        let Some(place) = obj.sections.get(rs.target).and_then(|s| s.place) else {
            continue;
        };
        for r in &rs.entries {
            if r.reloc.is_branch()
                && matches!(place.kind, RegionKind::Text | RegionKind::InitText)
                && obj.symbols.get(r.sym).and_then(|s| s.section()) != Some(rs.target)
            {
                keys[place.kind.index()].insert((r.sym, r.addend));
            }
            if r.reloc.uses_got() && !got_syms.contains(&r.sym) {
                got_syms.push(r.sym);
            }
        }
    }
    let (slot_size, slot_align) = slot_geometry(obj.machine);
    for kind in [RegionKind::Text, RegionKind::InitText] {
        let k = kind.index();
        let n = keys[k].len() as u64;
        if n == 0 {
            continue;
        }
        let offset = align_up(sizes[k], slot_align).ok_or_else(|| too_big(kind, &obj.name))?;
        sizes[k] = n
            .checked_mul(slot_size)
            .and_then(|b| offset.checked_add(b))
            .filter(|&s| s <= MAX_REGION_SIZE)
            .ok_or_else(|| too_big(kind, &obj.name))?;
        aligns[k] = aligns[k].max(slot_align);
        plan.pools[k] = Some(Pool { offset, slots: n });
    }

    // The GOT, in Rodata.
    if !got_syms.is_empty() {
        let k = RegionKind::Rodata.index();
        let offset = align_up(sizes[k], GOT_ENTRY_SIZE)
            .ok_or_else(|| too_big(RegionKind::Rodata, &obj.name))?;
        sizes[k] = (got_syms.len() as u64)
            .checked_mul(GOT_ENTRY_SIZE)
            .and_then(|b| offset.checked_add(b))
            .filter(|&s| s <= MAX_REGION_SIZE)
            .ok_or_else(|| too_big(RegionKind::Rodata, &obj.name))?;
        plan.got = Some(Got {
            offset,
            symbols: got_syms,
        });
    }

    // charp strings, in Data.
    let charps = obj.params.iter().filter(|p| p.charp_slot.is_some()).count() as u64;
    if charps > 0 {
        let k = RegionKind::Data.index();
        let offset = align_up(sizes[k], 8).ok_or_else(|| too_big(RegionKind::Data, &obj.name))?;
        sizes[k] = charps
            .checked_mul(CHARP_SLOT)
            .and_then(|b| offset.checked_add(b))
            .filter(|&s| s <= MAX_REGION_SIZE)
            .ok_or_else(|| too_big(RegionKind::Data, &obj.name))?;
        plan.charp = Some(Pool {
            offset,
            slots: charps,
        });
    }

    for kind in RegionKind::ALL {
        let k = kind.index();
        plan.regions[k] = (sizes[k], aligns[k]);
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = SHF_ALLOC as u64;
    const W: u64 = SHF_WRITE as u64;
    const X: u64 = SHF_EXECINSTR as u64;

    #[test]
    fn classification_follows_layout_sections() {
        assert_eq!(classify(".text", 1, A | X), Some(RegionKind::Text));
        assert_eq!(classify(".exit.text", 1, A | X), Some(RegionKind::Text));
        assert_eq!(classify(".init.text", 1, A | X), Some(RegionKind::InitText));
        assert_eq!(classify(".rodata.str1.1", 1, A), Some(RegionKind::Rodata));
        assert_eq!(classify(".data", 1, A | W), Some(RegionKind::Data));
        assert_eq!(classify(".bss", 8, A | W), Some(RegionKind::Data));
        assert_eq!(classify("__param", 1, A | W), Some(RegionKind::Data));
        assert_eq!(classify(".init.data", 1, A | W), Some(RegionKind::InitData));
        assert_eq!(classify(".init.rodata", 1, A), Some(RegionKind::InitData));
        assert_eq!(classify(".modinfo", 1, A), None);
        assert_eq!(classify("__ksymtab_strings", 1, A), None);
        assert_eq!(classify(".comment", 1, 0), None);
        assert_eq!(classify(".debug_info", 1, 0), None);
    }
}
