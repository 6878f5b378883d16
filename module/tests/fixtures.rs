//! Links the real module objects in `tests/fixtures/{x86_64,aarch64}` (built by
//! `tools/modules/build --fixtures`) at chosen addresses, on any host, and checks the result
//! against an independent reading of the objects (see `common`).

mod common;

use std::collections::BTreeSet;

use common::*;
use goblin::elf::Elf;
use um_module::{LinkedModule, Machine, ModuleObject, ParamType, Prot, RegionKind, link};

/// Module regions at `module`, kernel symbols at `kernel`.
fn link_at(
    arch: &str,
    name: &str,
    module: u64,
    kernel: u64,
    params: &str,
) -> (Vec<u8>, ModuleObject, LinkedModule, Kernel) {
    let bytes = fixture(arch, name);
    let obj = ModuleObject::parse(&bytes).unwrap_or_else(|e| panic!("{arch}/{name}: {e:?}"));
    let mut k = Kernel::at(kernel);
    // umbase is another module, loaded 512 MiB after this one (within ADRP's reach, beyond a
    // direct branch's).
    k.syms.insert("umbase_add".into(), module + 0x2000_0000);
    k.syms.insert("umbase_calls".into(), module + 0x2000_0040);
    let m = link(
        &obj,
        &bases(&obj.layout(), module, 0x1000),
        &|n: &str| k.resolve(n),
        params,
    )
    .unwrap_or_else(|e| panic!("{arch}/{name}: {e:?}"));
    (bytes, obj, m, k)
}

/// Undefined, named symbols of the object, read with goblin.
fn undefined(bytes: &[u8]) -> BTreeSet<String> {
    let elf = Elf::parse(bytes).unwrap();
    elf.syms
        .iter()
        .filter(|s| s.st_shndx == 0 && s.st_name != 0)
        .map(|s| elf.strtab.get_at(s.st_name).unwrap().to_string())
        .filter(|n| n != "_GLOBAL_OFFSET_TABLE_")
        .collect()
}

#[test]
fn every_fixture_parses_with_its_modinfo() {
    for arch in ARCHES {
        for name in MODULES {
            let bytes = fixture(arch, name);
            let obj =
                ModuleObject::parse(&bytes).unwrap_or_else(|e| panic!("{arch}/{name}: {e:?}"));
            let machine = if arch == "x86_64" {
                Machine::X86_64
            } else {
                Machine::Aarch64
            };
            assert_eq!(obj.machine(), machine);
            assert_eq!(obj.name(), name);
            assert_eq!(obj.vermagic(), Some(format!("{RELEASE} {arch}").as_str()));
            assert_eq!(obj.vermagic(), Some(machine.vermagic(RELEASE).as_str()));
            assert_eq!(obj.modinfo_value("license"), Some("GPL"));
            let want_deps: Vec<String> = if name == "umdep" {
                vec!["umbase".into()]
            } else {
                vec![]
            };
            assert_eq!(obj.depends(), want_deps, "{arch}/{name}");
            // The loader asks the resolver for exactly the object's undefined symbols.
            let mine: BTreeSet<String> = obj.undefined_symbols().into_iter().collect();
            assert_eq!(mine, undefined(&bytes), "{arch}/{name}");
            let l = obj.layout();
            assert!(l.get(RegionKind::Text).is_some() && l.get(RegionKind::InitText).is_some());
            for r in &l.regions {
                assert!(r.size > 0 && r.align.is_power_of_two() && r.align >= 16);
            }
        }
    }
}

#[test]
fn every_relocation_checks_out_near_and_far() {
    for arch in ARCHES {
        for name in MODULES {
            // Near: the kernel 16 MiB below the module (every branch direct). Far: 8 GiB away
            // (x86_64 stubs; arm64 veneers beyond ADRP's reach, with a literal). Middle: 1 GiB
            // (arm64 adrp/add/br veneers; x86_64 direct).
            for (module, kernel) in [
                (0x7f00_0000_0000u64, 0x7eff_ff00_0000u64),
                (0x7f00_0000_0000, 0x7efe_0000_0000),
                (0x7f00_0000_0000, 0x7f00_4000_0000),
            ] {
                let (bytes, _, m, k) = link_at(arch, name, module, kernel, "");
                let c = check_relocations(&bytes, &m, &k);
                assert!(!c.by_type.is_empty());
                // Every veneer emitted is used by some branch, and there is one per target
                // and region (deduplicated).
                let emitted: BTreeSet<(RegionKind, u64)> =
                    m.veneers.iter().map(|v| (v.kind, v.target)).collect();
                assert_eq!(
                    emitted.len(),
                    m.veneers.len(),
                    "{arch}/{name}: duplicate veneers"
                );
                assert_eq!(
                    emitted, c.via_veneer,
                    "{arch}/{name}: veneers emitted vs used"
                );
                if kernel == 0x7eff_ff00_0000 {
                    // Only umdep's call to umbase_add (512 MiB away, out of a direct
                    // arm64 branch's reach) needs one.
                    assert!(
                        m.veneers.iter().all(|v| v.target == module + 0x2000_0000),
                        "{arch}/{name}: no veneer needed near the kernel"
                    );
                }
            }
        }
    }
}

#[test]
fn umrelocs_covers_every_relocation_type() {
    let want: [(&str, &[u32]); 2] = [
        ("x86_64", &[1, 2, 4, 9, 10, 11, 24, 41, 42]),
        (
            "aarch64",
            &[
                257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 273, 274, 275,
                276, 277, 278, 282, 283, 284, 285, 286, 299,
            ],
        ),
    ];
    for (arch, types) in want {
        let (bytes, _, m, k) = link_at(arch, "umrelocs", 0x7f00_0000_0000, 0x7efe_0000_0000, "");
        let c = check_relocations(&bytes, &m, &k);
        for t in types {
            assert!(c.by_type.contains_key(t), "{arch}: type {t} not exercised");
        }
    }
}

#[test]
fn arm64_veneers_only_for_far_targets_and_shared() {
    let (bytes, obj, m, k) = link_at(
        "aarch64",
        "umveneer",
        0x7f00_0000_0000,
        0x7efe_0000_0000,
        "",
    );
    // Independently: the kernel functions branched to from core text and from init text.
    let elf = Elf::parse(&bytes).unwrap();
    let mut core = BTreeSet::new();
    let mut init = BTreeSet::new();
    for (ri, relocs) in &elf.shdr_relocs {
        let t = elf.section_headers[*ri].sh_info as usize;
        let tname = elf
            .shdr_strtab
            .get_at(elf.section_headers[t].sh_name)
            .unwrap();
        for r in relocs.iter().filter(|r| r.r_type == 282 || r.r_type == 283) {
            let s = elf.syms.get(r.r_sym).unwrap();
            if s.st_shndx == 0 {
                let n = elf.strtab.get_at(s.st_name).unwrap().to_string();
                if tname.starts_with(".init") {
                    init.insert(n)
                } else {
                    core.insert(n)
                };
            }
        }
    }
    assert!(core.len() >= 4 && !init.is_empty(), "{core:?} {init:?}");
    let count = |kind| m.veneers.iter().filter(|v| v.kind == kind).count();
    assert_eq!(
        count(RegionKind::Text),
        core.len(),
        "one veneer per kernel function from text"
    );
    assert_eq!(
        count(RegionKind::InitText),
        init.len(),
        "one per function from init text"
    );
    // The slots reserved are enough and not absurd.
    assert!(obj.veneer_slots(RegionKind::Text) >= core.len() as u64);
    let c = check_relocations(&bytes, &m, &k);
    assert!(c.direct_branches > 0, "module-internal calls stay direct");

    // Veneers sit at the end of their text region.
    for v in &m.veneers {
        let r = m.region(v.kind).unwrap();
        assert!(v.addr >= r.addr && v.addr + 16 <= r.addr + r.bytes.len() as u64);
        assert_eq!(v.addr % 16, 0);
    }

    // Only the far ones: put one function near, the rest far.
    let mut k2 = Kernel::at(0x7efe_0000_0000);
    k2.syms.insert("kfree".into(), 0x7f00_0100_0000);
    let m2 = link(
        &obj,
        &bases(&obj.layout(), 0x7f00_0000_0000, 0x1000),
        &|n: &str| k2.resolve(n),
        "",
    )
    .unwrap();
    assert!(m2.veneers.iter().all(|v| v.target != 0x7f00_0100_0000));
    assert_eq!(
        m2.veneers
            .iter()
            .filter(|v| v.kind == RegionKind::Text)
            .count(),
        core.len() - 1
    );
    check_relocations(&bytes, &m2, &k2);
}

#[test]
fn umrelocs_branches_share_veneers() {
    // aarch64: bl ext_fn; bl ext_fn; bl ext_fn2; b ext_fn in .text.umrelocs, plus ext_fn from
    // init and exit text. ADRP reach (1 GiB away) and beyond it (8 GiB away).
    for kernel in [0x7f00_4000_0000u64, 0x7efe_0000_0000] {
        let (bytes, _, m, k) = link_at("aarch64", "umrelocs", 0x7f00_0000_0000, kernel, "");
        let text: Vec<_> = m
            .veneers
            .iter()
            .filter(|v| v.kind == RegionKind::Text)
            .collect();
        let init: Vec<_> = m
            .veneers
            .iter()
            .filter(|v| v.kind == RegionKind::InitText)
            .collect();
        assert_eq!(text.len(), 2, "ext_fn and ext_fn2: {text:?}");
        assert_eq!(init.len(), 1, "ext_fn from init text");
        // Within ADRP's +-4 GiB: adrp x16; add; br. Beyond: ldr x16, .+8; br; .quad.
        for v in &m.veneers {
            let first = u32_at(m.read(v.addr, 4).unwrap());
            if kernel == 0x7f00_4000_0000 {
                assert_eq!(first & 0x9f00_001f, 0x9000_0010, "adrp x16");
            } else {
                assert_eq!(first, 0x5800_0050, "ldr x16, .+8");
            }
        }
        check_relocations(&bytes, &m, &k);
    }
    // x86_64: call/jmp ext_fn@PLT share a stub; ext_fn2 has its own.
    let (bytes, _, m, k) = link_at("x86_64", "umrelocs", 0x7f00_0000_0000, 0x7efe_0000_0000, "");
    assert_eq!(
        m.veneers
            .iter()
            .filter(|v| v.kind == RegionKind::Text)
            .count(),
        2
    );
    assert_eq!(
        m.veneers
            .iter()
            .filter(|v| v.kind == RegionKind::InitText)
            .count(),
        1
    );
    check_relocations(&bytes, &m, &k);
}

#[test]
fn x86_got_entries_are_per_symbol_and_hold_addresses() {
    for name in ["umdep", "umrelocs"] {
        let (bytes, obj, m, k) = link_at("x86_64", name, 0x7f00_0000_0000, 0x7eff_ff00_0000, "");
        let c = check_relocations(&bytes, &m, &k);
        assert!(!c.got.is_empty(), "{name} uses the GOT");
        assert_eq!(m.got.len(), c.got.len(), "{name}: one entry per symbol");
        assert_eq!(obj.got_slots(), m.got.len() as u64);
        for g in &m.got {
            assert_eq!(c.got.get(&g.symbol), Some(&g.addr), "{name}: {}", g.symbol);
        }
    }
    // umdep: the imported variable and its own global both go through the GOT.
    let (_, _, m, k) = link_at("x86_64", "umdep", 0x7f00_0000_0000, 0x7eff_ff00_0000, "");
    let calls = m.got.iter().find(|g| g.symbol == "umbase_calls").unwrap();
    assert_eq!(calls.value, k.resolve("umbase_calls").unwrap());
    let own = m.got.iter().find(|g| g.symbol == "umdep_writes").unwrap();
    let data = m.region(RegionKind::Data).unwrap();
    assert!(own.value >= data.addr && own.value < data.addr + data.bytes.len() as u64);
}

#[test]
fn umbase_exports_and_entry_points() {
    for arch in ARCHES {
        let (bytes, _, m, _) = link_at(arch, "umbase", 0x5000_0000, 0x4000_0000, "");
        let elf = Elf::parse(&bytes).unwrap();
        for e in ["umbase_add", "umbase_calls"] {
            let s = elf
                .syms
                .iter()
                .find(|s| elf.strtab.get_at(s.st_name) == Some(e))
                .unwrap();
            let sec = m.sections.iter().find(|x| x.index == s.st_shndx).unwrap();
            assert_eq!(m.export(e), Some(sec.addr + s.st_value), "{arch}: {e}");
        }
        assert_eq!(m.exports.len(), 2);
        assert_eq!(m.used_symbols, vec!["um_printk".to_string()]);
        let init = m.init.unwrap();
        let it = m.region(RegionKind::InitText).unwrap();
        assert!(
            init >= it.addr && init < it.addr + it.bytes.len() as u64,
            "init in init text"
        );
        let exit = m.exit.unwrap();
        let t = m.region(RegionKind::Text).unwrap();
        assert!(
            exit >= t.addr && exit < t.addr + t.bytes.len() as u64,
            "exit in core text"
        );
        // Protections and core size.
        for r in &m.regions {
            let want = match r.kind {
                RegionKind::Text | RegionKind::InitText => Prot::ReadExec,
                RegionKind::Rodata => Prot::Read,
                _ => Prot::ReadWrite,
            };
            assert_eq!(r.prot, want);
        }
        let core: u64 = m
            .regions
            .iter()
            .filter(|r| !r.kind.is_init())
            .map(|r| r.bytes.len() as u64)
            .sum();
        assert_eq!(m.core_size, core);
    }
}

#[test]
fn sections_are_placed_inside_their_regions_aligned_and_apart() {
    for arch in ARCHES {
        for name in MODULES {
            let bytes = fixture(arch, name);
            let (_, obj, m, _) = link_at(arch, name, 0x10_0000_0000, 0x10_1000_0000, "");
            let elf = Elf::parse(&bytes).unwrap();
            let layout = obj.layout();
            for s in &m.sections {
                let r = m.region(s.kind).unwrap();
                assert!(s.addr >= r.addr && s.addr + s.size <= r.addr + r.bytes.len() as u64);
                let align = elf.section_headers[s.index].sh_addralign.max(1);
                assert_eq!(s.addr % align, 0, "{arch}/{name} {}", s.name);
                assert_eq!(layout.get(s.kind).unwrap().size, r.bytes.len() as u64);
                // Section bytes are the file's where no relocation applies: checked through
                // .rodata-like sections that have no relocations.
                if s.name.starts_with(".rodata.str") {
                    let sh = &elf.section_headers[s.index];
                    let file = &bytes[sh.sh_offset as usize..(sh.sh_offset + sh.sh_size) as usize];
                    assert_eq!(m.read(s.addr, s.size as usize).unwrap(), file);
                }
            }
            let mut spans: Vec<(u64, u64)> = m
                .sections
                .iter()
                .filter(|s| s.size > 0)
                .map(|s| (s.addr, s.addr + s.size))
                .collect();
            spans.sort();
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0, "{arch}/{name}: sections overlap");
            }
            // Never loaded: .modinfo, __ksymtab_strings, .comment, symbol tables.
            for s in &m.sections {
                assert!(
                    ![
                        ".modinfo",
                        "__ksymtab_strings",
                        ".comment",
                        ".symtab",
                        ".strtab"
                    ]
                    .contains(&s.name.as_str())
                );
            }
        }
    }
}

#[test]
fn params_are_set_from_the_argument_string() {
    for arch in ARCHES {
        let bytes = fixture(arch, "umchar");
        let obj = ModuleObject::parse(&bytes).unwrap();
        let mut p = obj.params();
        p.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            p,
            vec![
                ("bufsize".into(), ParamType::Int, 0o444),
                ("greeting".into(), ParamType::Charp, 0o444)
            ]
        );
        let (_, _, m, _) = link_at(
            arch,
            "umchar",
            0x7f00_0000_0000,
            0x7eff_ff00_0000,
            "bufsize=0x80  greeting=\"hello there\" unknown=1",
        );
        let bufsize = m.params.iter().find(|p| p.name == "bufsize").unwrap();
        assert_eq!(
            ParamType::Int
                .format(m.read(bufsize.addr, 4).unwrap())
                .as_deref(),
            Some("128")
        );
        let greeting = m.params.iter().find(|p| p.name == "greeting").unwrap();
        let ptr = u64_at(m.read(greeting.addr, 8).unwrap());
        let data = m.region(RegionKind::Data).unwrap();
        assert!(
            ptr >= data.addr && ptr < data.addr + data.bytes.len() as u64,
            "the string lives in Data"
        );
        assert_eq!(m.read(ptr, 12).unwrap(), b"hello there\0");

        // Without arguments, the defaults stay: 4096 and a pointer to "" in .rodata.
        let (_, _, m, _) = link_at(arch, "umchar", 0x7f00_0000_0000, 0x7eff_ff00_0000, "");
        let bufsize = m.params.iter().find(|p| p.name == "bufsize").unwrap();
        assert_eq!(
            ParamType::Int
                .format(m.read(bufsize.addr, 4).unwrap())
                .as_deref(),
            Some("4096")
        );
        let greeting = m.params.iter().find(|p| p.name == "greeting").unwrap();
        let ptr = u64_at(m.read(greeting.addr, 8).unwrap());
        assert_eq!(m.read(ptr, 1).unwrap(), b"\0");
    }
    // A bool and an int on umveneer; `verbose` alone means true.
    let (_, _, m, _) = link_at(
        "aarch64",
        "umveneer",
        0x7f00_0000_0000,
        0x7eff_ff00_0000,
        "rounds=-3 verbose",
    );
    let get = |n: &str| m.params.iter().find(|p| p.name == n).unwrap().clone();
    assert_eq!(get("verbose").ty, ParamType::Bool);
    assert_eq!(m.read(get("verbose").addr, 1).unwrap(), &[1]);
    assert_eq!(
        ParamType::Int
            .format(m.read(get("rounds").addr, 4).unwrap())
            .as_deref(),
        Some("-3")
    );
}

#[test]
fn linking_is_deterministic() {
    for arch in ARCHES {
        let (_, _, a, _) = link_at(arch, "umdep", 0x7f00_0000_0000, 0x7efe_0000_0000, "");
        let (_, _, b, _) = link_at(arch, "umdep", 0x7f00_0000_0000, 0x7efe_0000_0000, "");
        assert_eq!(a, b);
    }
}
