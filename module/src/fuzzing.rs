//! The body shared by the cargo-fuzz target (`module/fuzz/fuzz_targets/load.rs`) and the
//! stable deterministic-mutation test (`module/tests/fuzz_stable.rs`): parse arbitrary bytes
//! as a module and, if that works, lay it out and link it at made-up addresses with a resolver
//! that knows every name. Anything may fail; nothing may panic.
//!
//! Neighbours: everything public in this crate.

use crate::{ModuleObject, RegionKind, link};

/// Regions beyond this total are not linked (the buffers would only slow the fuzzer down).
const MAX_LINK_BYTES: u64 = 16 << 20;

/// How far [`exercise`] got, so a test can tell its mutations reach the deep code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Depth {
    /// `parse` refused the bytes.
    Refused,
    /// Parsed, but no link succeeded (or the layout was too big to try).
    Parsed,
    /// At least one link succeeded.
    Linked,
}

/// Runs parse → layout → link on `bytes` with three address choices (near, so branches reach
/// directly; far, so veneers/stubs and overflows are exercised; tiny symbol values).
pub fn exercise(bytes: &[u8]) -> Depth {
    let Ok(obj) = ModuleObject::parse(bytes) else {
        return Depth::Refused;
    };
    let _ = (obj.name(), obj.modinfo(), obj.depends(), obj.vermagic());
    let _ = (obj.undefined_symbols(), obj.exports(), obj.params());
    let layout = obj.layout();
    if layout.total_size() > MAX_LINK_BYTES {
        return Depth::Parsed;
    }
    let mut depth = Depth::Parsed;
    // (module base, kernel symbol base, mask of the hash): near, far, and tiny symbol values
    // (which fit even 16-bit absolute relocations).
    let configs = [
        (0x4000_0000u64, 0x4800_0000u64, 0xffffu64),
        (0x7f12_3456_0000, 0x5555_0000_0000, 0xffff),
        (0x4000_0000, 0, 0xff0),
    ];
    for (start, kernel, mask) in configs {
        let mut next = start;
        let mut bases = Vec::new();
        for r in &layout.regions {
            next = next.next_multiple_of(r.align.max(4096));
            bases.push((r.kind, next));
            next += r.size + 0x1000;
        }
        let resolver = |name: &str| -> Option<u64> {
            let h = name
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
            Some(kernel + (h & mask) * 16)
        };
        if let Ok(m) = link(&obj, &bases, &resolver, "a=1 b=\"x y\" c -- d") {
            let _ = m.region(RegionKind::Text);
            depth = Depth::Linked;
        }
    }
    depth
}
