//! Helpers shared by the loader's integration tests: the fixtures, choosing addresses, and an
//! *independent* reading of what the loader produced — the objects are re-read with goblin's
//! full `Elf` parser and every relocated field is decoded from the instruction or data bytes
//! with decoders written here, not with the loader's or the arch crates' code.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use goblin::elf::Elf;
use um_module::{Layout, LinkedModule, RegionKind};

pub const ARCHES: [&str; 2] = ["x86_64", "aarch64"];
pub const MODULES: [&str; 6] = ["umbase", "umdep", "umchar", "umveneer", "umfw", "umrelocs"];
pub const RELEASE: &str = "6.1.0-um";

pub fn fixture_path(arch: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(arch)
        .join(format!("{name}.ko"))
}

pub fn fixture(arch: &str, name: &str) -> Vec<u8> {
    let p = fixture_path(arch, name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Consecutive bases from `start`, each page-aligned, `gap` bytes apart.
pub fn bases(layout: &Layout, start: u64, gap: u64) -> Vec<(RegionKind, u64)> {
    let mut next = start;
    layout
        .regions
        .iter()
        .map(|r| {
            next = next.next_multiple_of(r.align.max(0x1000));
            let b = next;
            next += r.size + gap;
            (r.kind, b)
        })
        .collect()
}

/// A kernel symbol table: every name the tests may be asked for, at `base + 0x40 * i`, plus
/// the fixed values umrelocs needs (rel_s16 fits 16 bits, rel_s32 32, rel_s32s a
/// sign-extended 32, rel_s48 48, rel_far anything).
pub struct Kernel {
    pub syms: HashMap<String, u64>,
}

pub const KERNEL_FUNCS: [&str; 16] = [
    "um_printk",
    "kmalloc",
    "kzalloc",
    "kfree",
    "copy_to_user",
    "copy_from_user",
    "um_register_chrdev",
    "um_unregister_chrdev",
    "um_proc_create",
    "um_proc_remove",
    "request_firmware",
    "release_firmware",
    "ext_fn",
    "ext_fn2",
    "ext_data",
    "memcpy",
];

impl Kernel {
    pub fn at(base: u64) -> Kernel {
        let mut syms: HashMap<String, u64> = KERNEL_FUNCS
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), base + 0x40 * i as u64))
            .collect();
        syms.insert("rel_s16".into(), 0xbeef);
        syms.insert("rel_s32".into(), 0xdead_beef);
        syms.insert("rel_s32s".into(), 0xffff_ffff_8000_1234);
        syms.insert("rel_s48".into(), 0xcafe_1234_5678);
        syms.insert("rel_far".into(), 0x1234_5678_9abc_def0);
        // umbase's exports, for umdep.
        syms.insert("umbase_add".into(), base + 0x10_0000);
        syms.insert("umbase_calls".into(), base + 0x10_0040);
        Kernel { syms }
    }

    pub fn resolve(&self, name: &str) -> Option<u64> {
        self.syms.get(name).copied()
    }
}

pub fn sext(v: u64, bits: u32) -> i64 {
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

pub fn u32_at(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().unwrap())
}

pub fn u64_at(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().unwrap())
}

/// Where an arm64 veneer at `v` jumps: `adrp x16; add x16; br x16` or `ldr x16, .+8; br x16;
/// .quad target`.
pub fn arm64_veneer_target(m: &LinkedModule, v: u64) -> u64 {
    let b = m.read(v, 16).expect("veneer bytes");
    let w: Vec<u32> = b.chunks_exact(4).map(u32_at).collect();
    if w[0] & 0x9f00_001f == 0x9000_0010 {
        assert_eq!(w[1] & 0xffc0_03ff, 0x9100_0210, "add x16, x16, #imm");
        assert_eq!(w[2], 0xd61f_0200, "br x16");
        let imm = u64::from((w[0] >> 5) & 0x7_ffff) << 2 | u64::from((w[0] >> 29) & 3);
        let page = (v & !0xfff).wrapping_add((sext(imm, 21) << 12) as u64);
        page + u64::from((w[1] >> 10) & 0xfff)
    } else {
        assert_eq!(w[0], 0x5800_0050, "ldr x16, .+8");
        assert_eq!(w[1], 0xd61f_0200, "br x16");
        u64_at(&b[8..])
    }
}

/// Where an x86_64 PLT stub at `v` jumps: `jmp *0(%rip)` then the 8-byte target.
pub fn x86_stub_target(m: &LinkedModule, v: u64) -> u64 {
    let b = m.read(v, 14).expect("stub bytes");
    assert_eq!(&b[..6], &[0xff, 0x25, 0, 0, 0, 0], "jmp *0(%rip)");
    u64_at(&b[6..])
}

/// What [`check_relocations`] found.
#[derive(Default, Debug)]
pub struct Checked {
    /// Relocations checked, by type number.
    pub by_type: BTreeMap<u32, usize>,
    /// Branches that went through a veneer/stub: (region of the branch, final target).
    pub via_veneer: BTreeSet<(RegionKind, u64)>,
    /// Branches that went direct.
    pub direct_branches: usize,
    /// GOT entry address per symbol name (x86_64).
    pub got: BTreeMap<String, u64>,
}

/// Re-reads the object with goblin's `Elf` and checks every relocation of every loaded
/// section against the linked bytes: the decoded field must give S + A (or the page, low 12
/// bits, 16-bit group... the relocation asks for), the bits around the field must be the
/// object's, branches out of range must go through a veneer that jumps to S + A, GOT forms
/// through an entry that holds S.
pub fn check_relocations(bytes: &[u8], m: &LinkedModule, kernel: &Kernel) -> Checked {
    let elf = Elf::parse(bytes).expect("goblin parses the fixture");
    let arm = elf.header.e_machine == goblin::elf::header::EM_AARCH64;
    let sec_addr: HashMap<usize, u64> = m.sections.iter().map(|s| (s.index, s.addr)).collect();
    let sec_kind: HashMap<usize, RegionKind> =
        m.sections.iter().map(|s| (s.index, s.kind)).collect();
    let got_base = m.got.first().map(|g| g.addr);
    let mut out = Checked::default();
    for (rel_index, relocs) in &elf.shdr_relocs {
        let target = elf.section_headers[*rel_index].sh_info as usize;
        let Some(&taddr) = sec_addr.get(&target) else {
            continue;
        };
        let kind = sec_kind[&target];
        let tsh = &elf.section_headers[target];
        for r in relocs.iter() {
            let sym = elf.syms.get(r.r_sym).unwrap();
            let sname = elf.strtab.get_at(sym.st_name).unwrap_or("");
            let s = if sym.st_shndx == 0 {
                if sname == "_GLOBAL_OFFSET_TABLE_" {
                    got_base.unwrap_or(0)
                } else {
                    kernel
                        .resolve(sname)
                        .unwrap_or_else(|| panic!("test kernel lacks {sname}"))
                }
            } else if sym.st_shndx == goblin::elf::section_header::SHN_ABS as usize {
                sym.st_value
            } else {
                sec_addr[&sym.st_shndx] + sym.st_value
            };
            let a = r.r_addend.unwrap();
            let sa = s.wrapping_add(a as u64);
            let p = taddr + r.r_offset;
            let orig_at = (tsh.sh_offset + r.r_offset) as usize;
            let label = format!(
                "type {} at {:#x} against {sname:?}+{a:#x}",
                r.r_type, r.r_offset
            );
            *out.by_type.entry(r.r_type).or_default() += 1;
            if arm {
                check_arm64(
                    m,
                    &mut out,
                    kind,
                    r.r_type,
                    p,
                    sa,
                    &bytes[orig_at..],
                    &label,
                );
            } else {
                check_x86(m, &mut out, kind, r.r_type, p, s, a, sname, &label);
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn check_arm64(
    m: &LinkedModule,
    out: &mut Checked,
    kind: RegionKind,
    r_type: u32,
    p: u64,
    sa: u64,
    orig: &[u8],
    label: &str,
) {
    let data = |n| {
        m.read(p, n)
            .unwrap_or_else(|| panic!("{label}: place not in the image"))
    };
    // Instruction relocations only (data ones may be 2 bytes at the end of a section).
    let insn = if (257..=262).contains(&r_type) {
        0
    } else {
        u32_at(data(4))
    };
    let orig_insn = if (257..=262).contains(&r_type) {
        0
    } else {
        u32_at(orig)
    };
    let keep = |mask: u32| {
        assert_eq!(
            insn & !mask,
            orig_insn & !mask,
            "{label}: opcode bits changed"
        )
    };
    let page = |x: u64| x & !0xfff;
    match r_type {
        257 => assert_eq!(u64_at(data(8)), sa, "{label} ABS64"),
        258 => assert_eq!(u64::from(u32_at(data(4))), sa, "{label} ABS32"),
        259 => assert_eq!(
            u64::from(u16::from_le_bytes(data(2).try_into().unwrap())),
            sa,
            "{label} ABS16"
        ),
        260 => assert_eq!(p.wrapping_add(u64_at(data(8))), sa, "{label} PREL64"),
        261 => assert_eq!(
            p.wrapping_add(u32_at(data(4)) as i32 as u64),
            sa,
            "{label} PREL32"
        ),
        262 => assert_eq!(
            p.wrapping_add(i16::from_le_bytes(data(2).try_into().unwrap()) as u64),
            sa,
            "{label} PREL16"
        ),
        263..=269 => {
            let group = (r_type - 263) / 2;
            keep(0xffff << 5);
            assert_eq!(
                u64::from((insn >> 5) & 0xffff),
                (sa >> (16 * group)) & 0xffff,
                "{label} MOVW G{group}"
            );
        }
        273 => {
            keep(0x7_ffff << 5);
            let d = sext(u64::from((insn >> 5) & 0x7_ffff), 19) * 4;
            assert_eq!(p.wrapping_add(d as u64), sa, "{label} LD_PREL_LO19");
        }
        274..=276 => {
            keep((3 << 29) | (0x7_ffff << 5));
            let imm = sext(
                u64::from((insn >> 5) & 0x7_ffff) << 2 | u64::from((insn >> 29) & 3),
                21,
            );
            if r_type == 274 {
                assert_eq!(p.wrapping_add(imm as u64), sa, "{label} ADR");
            } else {
                assert_eq!(
                    page(p).wrapping_add((imm << 12) as u64),
                    page(sa),
                    "{label} ADRP"
                );
            }
        }
        277 | 278 | 284 | 285 | 286 | 299 => {
            let shift = match r_type {
                284 => 1,
                285 => 2,
                286 => 3,
                299 => 4,
                _ => 0,
            };
            keep(0xfff << 10);
            assert_eq!(
                u64::from((insn >> 10) & 0xfff),
                (sa & 0xfff) >> shift,
                "{label} LO12"
            );
        }
        282 | 283 => {
            keep(0x03ff_ffff);
            let dest = p.wrapping_add((sext(u64::from(insn & 0x03ff_ffff), 26) * 4) as u64);
            let reach =
                |to: u64| (-(1i64 << 27)..(1i64 << 27)).contains(&(to.wrapping_sub(p) as i64));
            if dest == sa {
                assert!(reach(sa));
                out.direct_branches += 1;
            } else {
                assert!(!reach(sa), "{label}: veneer used for a target in range");
                assert!(
                    m.veneers.iter().any(|v| v.addr == dest && v.kind == kind),
                    "{label}: not a veneer"
                );
                assert_eq!(arm64_veneer_target(m, dest), sa, "{label}: veneer target");
                out.via_veneer.insert((kind, sa));
            }
        }
        _ => panic!("{label}: unexpected arm64 relocation"),
    }
}

#[allow(clippy::too_many_arguments)]
fn check_x86(
    m: &LinkedModule,
    out: &mut Checked,
    kind: RegionKind,
    r_type: u32,
    p: u64,
    s: u64,
    a: i64,
    sname: &str,
    label: &str,
) {
    let data = |n| {
        m.read(p, n)
            .unwrap_or_else(|| panic!("{label}: place not in the image"))
    };
    let sa = s.wrapping_add(a as u64);
    let f32 = || u32_at(data(4)) as i32 as i64 as u64;
    match r_type {
        1 => assert_eq!(u64_at(data(8)), sa, "{label} R_X86_64_64"),
        2 => assert_eq!(p.wrapping_add(f32()), sa, "{label} PC32"),
        10 => assert_eq!(u64::from(u32_at(data(4))), sa, "{label} 32"),
        11 => assert_eq!(f32(), sa, "{label} 32S"),
        24 => assert_eq!(p.wrapping_add(u64_at(data(8))), sa, "{label} PC64"),
        4 => {
            // The CPU branches to the end of the field (p + 4) plus the field.
            let dest = p.wrapping_add(4).wrapping_add(f32());
            let want = sa.wrapping_add(4);
            let reach = i32::try_from(sa.wrapping_sub(p) as i64).is_ok();
            if dest == want {
                assert!(reach);
                out.direct_branches += 1;
            } else {
                assert!(!reach, "{label}: stub used for a target in range");
                assert!(
                    m.veneers.iter().any(|v| v.addr == dest && v.kind == kind),
                    "{label}: not a stub"
                );
                assert_eq!(x86_stub_target(m, dest), want, "{label}: stub target");
                out.via_veneer.insert((kind, want));
            }
        }
        9 | 41 | 42 => {
            // field = G + A - P, so the entry is at P + field - A and must hold S.
            let g = p.wrapping_add(f32()).wrapping_sub(a as u64);
            let ro = m.region(RegionKind::Rodata).expect("GOT lives in Rodata");
            assert!(
                g >= ro.addr && g + 8 <= ro.addr + ro.bytes.len() as u64,
                "{label}: GOT entry outside Rodata"
            );
            assert_eq!(u64_at(m.read(g, 8).unwrap()), s, "{label}: GOT entry value");
            if let Some(&prev) = out.got.get(sname) {
                assert_eq!(prev, g, "{label}: one GOT entry per symbol");
            }
            out.got.insert(sname.to_string(), g);
        }
        _ => panic!("{label}: unexpected x86_64 relocation"),
    }
}
