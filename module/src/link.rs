//! Linking a parsed module at chosen addresses: symbol resolution (Linux
//! `kernel/module/main.c` `simplify_symbols`), relocation (`apply_relocations` and the arch
//! `apply_relocate_add`, whose formulas live in `um_arch_x86::module` and
//! `um_arch_arm64::module`), veneers for far branches (`module_emit_plt_entry` in
//! `arch/arm64/kernel/module-plts.c`; x86_64 PLT stubs likewise), the x86_64 GOT, module
//! parameters (`parse_args`), exports and the init/exit entry points.
//!
//! All work happens on fresh buffers: an error returns before anything is handed out.
//!
//! Neighbours: [`crate::elf`] and [`crate::layout`] (input), [`crate::params`] (values); the
//! caller copies the resulting [`LinkedModule`] into memory.

use std::collections::HashMap;

use goblin::elf::section_header::{SHN_ABS, SHN_COMMON, SHT_NOBITS};
use goblin::elf::sym::STB_WEAK;
use um_uapi::Errno;

use crate::elf::{ModuleObject, Rela, RelaSection, Reloc};
use crate::layout::{GOT_ENTRY_SIZE, slot_geometry};
use crate::params::{CHARP_SLOT, Value};
use crate::{
    GotEntry, LinkedModule, LinkedRegion, LoadError, LoadedSection, Machine, ParamInfo, RegionKind,
    SymbolResolver, Veneer,
};

/// The symbol assemblers reference when GOT relocations are used; it means "this module's
/// GOT" and is never asked of the resolver.
pub const GOT_SYMBOL: &str = "_GLOBAL_OFFSET_TABLE_";

/// The region images being built.
struct Images {
    base: [u64; 5],
    bytes: [Vec<u8>; 5],
}

impl Images {
    fn slice(&mut self, kind: RegionKind, offset: u64, len: usize) -> Option<&mut [u8]> {
        let start = usize::try_from(offset).ok()?;
        self.bytes[kind.index()].get_mut(start..start.checked_add(len)?)
    }
}

/// The veneer/stub pool of one text region while linking.
#[derive(Default)]
struct PoolState {
    used: u64,
    by_target: HashMap<u64, u64>,
}

/// Links `obj` at `bases` (one base per region of [`ModuleObject::layout`], aligned as it
/// says), resolving undefined symbols through `resolver` and setting parameters from `params`
/// (the insmod argument string, e.g. `bufsize=128 greeting="hi there"`).
pub fn link(
    obj: &ModuleObject,
    bases: &[(RegionKind, u64)],
    resolver: &dyn SymbolResolver,
    params: &str,
) -> Result<LinkedModule, LoadError> {
    let name = obj.name.as_str();
    let plan = &obj.plan;

    // Bases: present, aligned, not wrapping, not overlapping.
    let mut base = [0u64; 5];
    let mut spans: Vec<(RegionKind, u64, u64)> = Vec::new();
    for spec in obj.layout().regions {
        let b = bases
            .iter()
            .find(|(k, _)| *k == spec.kind)
            .map(|&(_, b)| b)
            .ok_or_else(|| {
                LoadError::new(
                    Errno::EINVAL,
                    format!("{name}: no base address for the {:?} region", spec.kind),
                )
            })?;
        if b % spec.align != 0 {
            return Err(LoadError::new(
                Errno::EINVAL,
                format!(
                    "{name}: {:?} base {b:#x} is not aligned to {:#x}",
                    spec.kind, spec.align
                ),
            ));
        }
        let end = b.checked_add(spec.size).ok_or_else(|| {
            LoadError::new(
                Errno::EINVAL,
                format!("{name}: {:?} region at {b:#x} wraps", spec.kind),
            )
        })?;
        if let Some((other, _, _)) = spans.iter().find(|&&(_, s, e)| b < e && s < end) {
            return Err(LoadError::new(
                Errno::EINVAL,
                format!(
                    "{name}: {:?} region at {b:#x} overlaps the {other:?} region",
                    spec.kind
                ),
            ));
        }
        spans.push((spec.kind, b, end));
        base[spec.kind.index()] = b;
    }

    // Fresh images with the section contents; x86 stub pools filled with int3.
    let mut img = Images {
        base,
        bytes: Default::default(),
    };
    for kind in RegionKind::ALL {
        let size = usize::try_from(plan.size(kind))
            .map_err(|_| LoadError::new(Errno::ENOMEM, format!("{name}: module too large")))?;
        img.bytes[kind.index()] = vec![0; size];
    }
    let mut sections = Vec::new();
    let mut sec_addr: Vec<Option<u64>> = vec![None; obj.sections.len()];
    for (i, sec) in obj.sections.iter().enumerate() {
        let Some(place) = sec.place else { continue };
        let addr = img.base[place.kind.index()].wrapping_add(place.offset);
        sec_addr[i] = Some(addr);
        if sec.sh_type != SHT_NOBITS {
            let dst = img
                .slice(place.kind, place.offset, sec.data.len())
                .ok_or_else(|| {
                    LoadError::noexec(format!("{name}: section {} misplaced", sec.name))
                })?;
            dst.copy_from_slice(&sec.data);
        }
        sections.push(LoadedSection {
            index: i,
            name: sec.name.clone(),
            addr,
            size: sec.size,
            kind: place.kind,
        });
    }
    if obj.machine == Machine::X86_64 {
        for kind in [RegionKind::Text, RegionKind::InitText] {
            if let Some(pool) = plan.pool(kind) {
                let (slot, _) = slot_geometry(obj.machine);
                if let Some(s) = img.slice(kind, pool.offset, (pool.slots * slot) as usize) {
                    s.fill(0xcc);
                }
            }
        }
    }
    let got_base = plan
        .got
        .as_ref()
        .map(|g| img.base[RegionKind::Rodata.index()].wrapping_add(g.offset));

    // simplify_symbols: every symbol gets a final value. None = defined in a section that is
    // not loaded (an error only if a relocation uses it).
    let own = obj.own_definitions();
    let mut values: Vec<Option<u64>> = Vec::with_capacity(obj.symbols.len());
    let mut used_symbols: Vec<String> = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    for (i, s) in obj.symbols.iter().enumerate() {
        let shndx = s.shndx as u32;
        let v = if i == 0 {
            Some(0)
        } else if shndx == SHN_COMMON {
            // "Common symbol: %s" / "please compile with -fno-common"
            return Err(LoadError::noexec(format!(
                "{name}: common symbol {} (compile with -fno-common)",
                s.name
            )));
        } else if shndx == SHN_ABS {
            Some(s.value)
        } else if s.is_undefined() {
            if s.name.is_empty() {
                Some(0)
            } else if s.name == GOT_SYMBOL {
                Some(got_base.unwrap_or(0))
            } else if let Some(&d) = own.get(s.name.as_str()) {
                let def = &obj.symbols[d];
                match def.section() {
                    Some(sec) => sec_addr
                        .get(sec)
                        .copied()
                        .flatten()
                        .map(|a| a.wrapping_add(def.value)),
                    None => Some(def.value),
                }
            } else if let Some(addr) = resolver.resolve(&s.name) {
                if !used_symbols.contains(&s.name) {
                    used_symbols.push(s.name.clone());
                }
                Some(addr)
            } else if s.bind == STB_WEAK {
                // "Ok if weak": an unresolved weak reference is 0.
                Some(0)
            } else {
                if !unknown.contains(&s.name.as_str()) {
                    unknown.push(&s.name);
                }
                Some(0)
            }
        } else {
            s.section()
                .and_then(|sec| sec_addr.get(sec).copied().flatten())
                .map(|a| a.wrapping_add(s.value))
        };
        values.push(v);
    }
    if let Some(first) = unknown.first() {
        // Linux logs "%s: Unknown symbol %s (err %d)" per symbol and fails with -ENOENT.
        let more = match unknown.len() {
            1 => String::new(),
            n => format!(" and {} more: {}", n - 1, unknown[1..].join(", ")),
        };
        return Err(LoadError::new(
            Errno::ENOENT,
            format!("{name}: Unknown symbol {first} (err -2){more}"),
        ));
    }

    // The GOT.
    let mut got = Vec::new();
    if let (Some(g), Some(gbase)) = (&plan.got, got_base) {
        for (k, &sym) in g.symbols.iter().enumerate() {
            let value = values.get(sym).copied().flatten().ok_or_else(|| {
                LoadError::noexec(format!(
                    "{name}: GOT entry for {} which is in a section that is not loaded",
                    obj.symbol_label(sym)
                ))
            })?;
            let off = g.offset + k as u64 * GOT_ENTRY_SIZE;
            img.slice(RegionKind::Rodata, off, 8)
                .ok_or_else(|| LoadError::noexec(format!("{name}: GOT misplaced")))?
                .copy_from_slice(&value.to_le_bytes());
            got.push(GotEntry {
                symbol: obj.symbol_label(sym),
                addr: gbase + off - g.offset,
                value,
            });
        }
    }

    // apply_relocations.
    let mut pools: [PoolState; 5] = Default::default();
    let mut veneers = Vec::new();
    for rs in &obj.relas {
        for r in &rs.entries {
            relocate(
                obj,
                &mut img,
                &values,
                got_base,
                rs,
                r,
                &mut pools,
                &mut veneers,
            )?;
        }
    }

    // Parameters (parse_args), after relocation so a charp pointer overrides the default.
    let settings = crate::params::settings(&obj.params, params, name)?;
    for st in settings {
        let decl = &obj.params[st.decl];
        let vplace = obj.sections[decl.var_section].place.ok_or_else(|| {
            LoadError::noexec(format!("{name}: parameter {} not loaded", decl.name))
        })?;
        let bytes = match st.value {
            Value::Bytes(b) => b,
            Value::Charp(s) => {
                let (pool, slot) = plan.charp.zip(decl.charp_slot).ok_or_else(|| {
                    LoadError::noexec(format!("{name}: no space for {}", decl.name))
                })?;
                let off = pool.offset + slot * CHARP_SLOT;
                let dst = img
                    .slice(RegionKind::Data, off, CHARP_SLOT as usize)
                    .ok_or_else(|| {
                        LoadError::noexec(format!("{name}: parameter space misplaced"))
                    })?;
                dst.fill(0);
                dst[..s.len()].copy_from_slice(&s);
                let addr = img.base[RegionKind::Data.index()] + off;
                addr.to_le_bytes().to_vec()
            }
        };
        img.slice(vplace.kind, vplace.offset + decl.var_offset, bytes.len())
            .ok_or_else(|| LoadError::noexec(format!("{name}: parameter {} misplaced", decl.name)))?
            .copy_from_slice(&bytes);
    }
    let params = obj
        .params
        .iter()
        .map(|d| ParamInfo {
            name: d.name.clone(),
            ty: d.ty,
            perm: d.perm,
            addr: sec_addr[d.var_section]
                .unwrap_or(0)
                .wrapping_add(d.var_offset),
        })
        .collect();

    // Exports and entry points: defined symbols in loaded sections.
    let defined = |sym_name: &str, globals_only: bool| -> Option<u64> {
        obj.symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.name == sym_name && s.section().is_some() && (s.is_global() || !globals_only)
            })
            .find_map(|(i, _)| values.get(i).copied().flatten())
    };
    let mut exports = Vec::new();
    for e in &obj.exports {
        let addr = defined(e, true)
            .or_else(|| defined(e, false))
            .ok_or_else(|| {
                LoadError::noexec(format!(
                    "{name}: exported symbol {e} is not defined in the module"
                ))
            })?;
        exports.push((e.clone(), addr));
    }
    let init = defined("init_module", true);
    let exit = defined("cleanup_module", true);

    let core_size = [RegionKind::Text, RegionKind::Rodata, RegionKind::Data]
        .iter()
        .map(|&k| plan.size(k))
        .sum();
    let regions = obj
        .layout()
        .regions
        .iter()
        .map(|spec| LinkedRegion {
            kind: spec.kind,
            addr: img.base[spec.kind.index()],
            bytes: std::mem::take(&mut img.bytes[spec.kind.index()]),
            prot: spec.kind.prot(),
        })
        .collect();
    Ok(LinkedModule {
        regions,
        init,
        exit,
        exports,
        used_symbols,
        params,
        core_size,
        sections,
        veneers,
        got,
    })
}

/// Applies one relocation, emitting a veneer/stub if a branch is out of range.
#[allow(clippy::too_many_arguments)]
fn relocate(
    obj: &ModuleObject,
    img: &mut Images,
    values: &[Option<u64>],
    got_base: Option<u64>,
    rs: &RelaSection,
    r: &Rela,
    pools: &mut [PoolState; 5],
    veneers: &mut Vec<Veneer>,
) -> Result<(), LoadError> {
    let name = obj.name.as_str();
    let tsec = &obj.sections[rs.target];
    let Some(place) = tsec.place else {
        return Ok(());
    };
    let where_ = || format!("{}+{:#x}", tsec.name, r.offset);
    let s = values.get(r.sym).copied().flatten().ok_or_else(|| {
        LoadError::noexec(format!(
            "{name}: {} at {} against {}, which is in a section that is not loaded",
            r.reloc.name(),
            where_(),
            obj.symbol_label(r.sym)
        ))
    })?;
    let p = img.base[place.kind.index()]
        .wrapping_add(place.offset)
        .wrapping_add(r.offset);
    let off = place.offset + r.offset;
    let size = r.reloc.size();
    let overflow = |val: u64| {
        // "module %s: overflow in relocation type %d val %Lx"
        LoadError::noexec(format!(
            "{name}: overflow in relocation type {} ({}) val {val:#x} at {} against {}",
            r.r_type,
            r.reloc.name(),
            where_(),
            obj.symbol_label(r.sym)
        ))
    };
    let malformed = |what: &str| {
        LoadError::noexec(format!(
            "{name}: {} at {}: {what}",
            r.reloc.name(),
            where_()
        ))
    };

    match r.reloc {
        Reloc::Arm64(rel) => {
            use um_arch_arm64::module::{RelocError, apply, veneer};
            let val = s.wrapping_add(r.addend as u64);
            let dst = img
                .slice(place.kind, off, size)
                .ok_or_else(|| malformed("outside the section"))?;
            match apply(rel, dst, p, val) {
                Ok(()) => Ok(()),
                Err(RelocError::Overflow) if rel.is_branch26() => {
                    let (at, fresh) = veneer_slot(obj, img, pools, place.kind, val)
                        .ok_or_else(|| overflow(val))?;
                    if fresh {
                        let v = veneer(at, val);
                        let voff = at - img.base[place.kind.index()];
                        img.slice(place.kind, voff, v.len())
                            .ok_or_else(|| malformed("veneer outside the region"))?
                            .copy_from_slice(&v);
                        veneers.push(Veneer {
                            kind: place.kind,
                            addr: at,
                            target: val,
                        });
                    }
                    let dst = img
                        .slice(place.kind, off, size)
                        .ok_or_else(|| malformed("outside the section"))?;
                    apply(rel, dst, p, at).map_err(|_| overflow(val))
                }
                Err(RelocError::Overflow) => Err(overflow(val)),
                Err(RelocError::Truncated) => Err(malformed("runs past the end of the section")),
            }
        }
        Reloc::X86(rel) => {
            use um_arch_x86::module::{Reloc as X, RelocError, apply, plt_stub, plt32_target};
            let got = if rel.uses_got() {
                let g = obj
                    .plan
                    .got
                    .as_ref()
                    .zip(got_base)
                    .and_then(|(g, b)| g.slot(r.sym).map(|k| b + k * GOT_ENTRY_SIZE));
                Some(g.ok_or_else(|| malformed("no GOT entry"))?)
            } else {
                None
            };
            let dst = img
                .slice(place.kind, off, size)
                .ok_or_else(|| malformed("outside the section"))?;
            let val = s.wrapping_add(r.addend as u64);
            let err = |e: RelocError| match e {
                RelocError::Overflow => overflow(val),
                RelocError::Truncated => malformed("runs past the end of the section"),
                // "Invalid relocation target, existing value is nonzero"
                RelocError::NotZero => {
                    malformed("invalid relocation target, existing value is nonzero")
                }
                RelocError::NoGotEntry => malformed("no GOT entry"),
            };
            match apply(rel, dst, p, s, r.addend, got) {
                Ok(()) => Ok(()),
                Err(RelocError::Overflow) if rel == X::Plt32 => {
                    let target = plt32_target(s, r.addend);
                    let (at, fresh) = veneer_slot(obj, img, pools, place.kind, target)
                        .ok_or_else(|| overflow(val))?;
                    if fresh {
                        let v = plt_stub(target);
                        let voff = at - img.base[place.kind.index()];
                        img.slice(place.kind, voff, v.len())
                            .ok_or_else(|| malformed("stub outside the region"))?
                            .copy_from_slice(&v);
                        veneers.push(Veneer {
                            kind: place.kind,
                            addr: at,
                            target,
                        });
                    }
                    let dst = img
                        .slice(place.kind, off, size)
                        .ok_or_else(|| malformed("outside the section"))?;
                    // The field becomes stub - (P + 4): a call/jmp lands on the stub.
                    apply(X::Plt32, dst, p, at, -4, None).map_err(err)
                }
                Err(e) => Err(err(e)),
            }
        }
    }
}

/// The veneer/stub for `target` in `kind`'s pool: an existing one for the same target
/// (deduplicated by final address), else the next free slot. `None` when the pool is full
/// (a branch within its own section was out of range: Linux's "fundamental limitation").
fn veneer_slot(
    obj: &ModuleObject,
    img: &Images,
    pools: &mut [PoolState; 5],
    kind: RegionKind,
    target: u64,
) -> Option<(u64, bool)> {
    let pool = obj.plan.pool(kind)?;
    let st = &mut pools[kind.index()];
    if let Some(&at) = st.by_target.get(&target) {
        return Some((at, false));
    }
    if st.used >= pool.slots {
        return None;
    }
    let (slot, _) = slot_geometry(obj.machine);
    let at = img.base[kind.index()] + pool.offset + st.used * slot;
    st.used += 1;
    st.by_target.insert(target, at);
    Some((at, true))
}
