//! The loader's refusals: each bad object or bad link request gives the errno Linux would
//! (`ENOEXEC` for malformed objects, wrong machines, unknown relocations and overflows,
//! `ENOENT` for undefined symbols, `EINVAL`/`ERANGE`/`ENOSPC` for bad parameters) and a
//! one-line message naming what is wrong. The bad objects are the fixtures with a few bytes
//! patched (offsets found with goblin).

mod common;

use common::*;
use goblin::elf::Elf;
use um_module::{LoadError, ModuleObject, RegionKind, link};
use um_uapi::Errno;

fn parse_err(bytes: &[u8]) -> LoadError {
    match ModuleObject::parse(bytes) {
        Ok(o) => panic!("parsed {}", o.name()),
        Err(e) => e,
    }
}

fn link_err(bytes: &[u8], k: &Kernel, module: u64, params: &str) -> LoadError {
    let obj = ModuleObject::parse(bytes).unwrap();
    match link(
        &obj,
        &bases(&obj.layout(), module, 0x1000),
        &|n: &str| k.resolve(n),
        params,
    ) {
        Ok(_) => panic!("linked"),
        Err(e) => e,
    }
}

fn assert_err(e: &LoadError, errno: Errno, needles: &[&str]) {
    assert_eq!(e.errno, errno, "{e:?}");
    assert!(!e.msg.contains('\n'), "one line: {e:?}");
    for n in needles {
        assert!(e.msg.contains(n), "{e:?} should mention {n:?}");
    }
}

/// File offset of the first entry of the RELA section applying to the section `target`.
fn first_rela(bytes: &[u8], target: &str) -> usize {
    let elf = Elf::parse(bytes).unwrap();
    for (ri, _) in &elf.shdr_relocs {
        let sh = &elf.section_headers[*ri];
        let t = &elf.section_headers[sh.sh_info as usize];
        if elf.shdr_strtab.get_at(t.sh_name) == Some(target) {
            return sh.sh_offset as usize;
        }
    }
    panic!("no relocations for {target}");
}

fn section_header_offset(bytes: &[u8], name: &str) -> usize {
    let elf = Elf::parse(bytes).unwrap();
    let i = elf
        .section_headers
        .iter()
        .position(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name))
        .unwrap();
    elf.header.e_shoff as usize + 64 * i
}

#[test]
fn unknown_relocation_type() {
    for (arch, bad) in [
        ("x86_64", 3u32 /* GOT32 */),
        ("aarch64", 311 /* ADR_GOT_PAGE */),
    ] {
        let mut b = fixture(arch, "umchar");
        let at = first_rela(&b, ".text") + 8; // r_info: type in the low 32 bits
        b[at..at + 4].copy_from_slice(&bad.to_le_bytes());
        let e = parse_err(&b);
        assert_err(
            &e,
            Errno::ENOEXEC,
            &[
                "umchar",
                "unsupported RELA relocation type",
                &bad.to_string(),
                ".text+",
            ],
        );
    }
}

#[test]
fn overflow() {
    // x86_64: R_X86_64_32 against a symbol beyond 4 GiB (module.c: "overflow in relocation").
    let b = fixture("x86_64", "umrelocs");
    let mut k = Kernel::at(0x7eff_ff00_0000);
    k.syms.insert("rel_s32".into(), 0x1_0000_0000);
    let e = link_err(&b, &k, 0x7f00_0000_0000, "");
    assert_err(
        &e,
        Errno::ENOEXEC,
        &[
            "umrelocs",
            "overflow in relocation type 10",
            "R_X86_64_32",
            "rel_s32",
        ],
    );
    // R_X86_64_32S: a positive value past 2^31.
    let mut k = Kernel::at(0x7eff_ff00_0000);
    k.syms.insert("rel_s32s".into(), 0x8000_0000);
    assert_err(
        &link_err(&b, &k, 0x7f00_0000_0000, ""),
        Errno::ENOEXEC,
        &["R_X86_64_32S"],
    );
    // PC32 between regions 4 GiB apart: the GOT in Rodata out of reach of the text.
    let obj = ModuleObject::parse(&b).unwrap();
    let k = Kernel::at(0x7eff_ff00_0000);
    let mut bs = bases(&obj.layout(), 0x7f00_0000_0000, 0x1000);
    for (kind, base) in &mut bs {
        if *kind == RegionKind::Rodata {
            *base += 1 << 32;
        }
    }
    let e = link(&obj, &bs, &|n: &str| k.resolve(n), "").unwrap_err();
    assert_err(&e, Errno::ENOEXEC, &["overflow in relocation"]);

    // aarch64 small code model: ADRP reaches +-4 GiB, so data of another module 8 GiB away
    // cannot be addressed (Linux keeps every module within 2 GiB of the kernel for this).
    let b = fixture("aarch64", "umdep");
    let mut k = Kernel::at(0x7eff_ff00_0000);
    k.syms.insert("umbase_calls".into(), 0x7f02_0000_0000);
    let e = link_err(&b, &k, 0x7f00_0000_0000, "");
    assert_err(
        &e,
        Errno::ENOEXEC,
        &[
            "umdep: overflow in relocation type 275",
            "R_AARCH64_ADR_PREL_PG_HI21",
            "umbase_calls",
        ],
    );

    // aarch64: MOVW_UABS_G0 (checked) with a value past 16 bits.
    let b = fixture("aarch64", "umrelocs");
    let mut k = Kernel::at(0x7eff_ff00_0000);
    k.syms.insert("rel_s16".into(), 0x1_0000);
    let e = link_err(&b, &k, 0x7f00_0000_0000, "");
    assert_err(
        &e,
        Errno::ENOEXEC,
        &[
            "overflow in relocation type 263",
            "R_AARCH64_MOVW_UABS_G0",
            "rel_s16",
        ],
    );
    // ABS32 with a value past 32 bits (MOVW_UABS_G1 on the same symbol fails first).
    let mut k = Kernel::at(0x7eff_ff00_0000);
    k.syms.insert("rel_s32".into(), 0x1_0000_0000);
    let e = link_err(&b, &k, 0x7f00_0000_0000, "");
    assert_err(&e, Errno::ENOEXEC, &["overflow in relocation", "rel_s32"]);
    // ADR/LDR literal from text to rodata more than 1 MiB away.
    let obj = ModuleObject::parse(&b).unwrap();
    let k = Kernel::at(0x7eff_ff00_0000);
    let mut bs = bases(&obj.layout(), 0x7f00_0000_0000, 0x1000);
    for (kind, base) in &mut bs {
        if *kind == RegionKind::Rodata {
            *base += 1 << 21;
        }
    }
    let e = link(&obj, &bs, &|n: &str| k.resolve(n), "").unwrap_err();
    assert_err(
        &e,
        Errno::ENOEXEC,
        &["overflow in relocation", "umrelocs_lit"],
    );
}

#[test]
fn undefined_symbol() {
    for arch in ARCHES {
        let b = fixture(arch, "umchar");
        let mut k = Kernel::at(0x7eff_ff00_0000);
        k.syms.remove("kzalloc");
        let e = link_err(&b, &k, 0x7f00_0000_0000, "");
        assert_err(
            &e,
            Errno::ENOENT,
            &["umchar: Unknown symbol kzalloc (err -2)"],
        );
        // Several: all named on the one line.
        k.syms.remove("kfree");
        let e = link_err(&b, &k, 0x7f00_0000_0000, "");
        assert_err(&e, Errno::ENOENT, &["kzalloc", "kfree", "1 more"]);
    }
    // umdep without umbase loaded.
    let b = fixture("x86_64", "umdep");
    let mut k = Kernel::at(0x7eff_ff00_0000);
    k.syms.remove("umbase_add");
    k.syms.remove("umbase_calls");
    assert_err(
        &link_err(&b, &k, 0x7f00_0000_0000, ""),
        Errno::ENOENT,
        &["umdep: Unknown symbol umbase"],
    );
}

#[test]
fn wrong_machine_class_type_and_magic() {
    let good = fixture("x86_64", "umbase");
    let mut b = good.clone();
    b[18..20].copy_from_slice(&40u16.to_le_bytes()); // EM_ARM
    assert_err(&parse_err(&b), Errno::ENOEXEC, &["unsupported machine 40"]);
    let mut b = good.clone();
    b[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    assert_err(
        &parse_err(&b),
        Errno::ENOEXEC,
        &["not a relocatable object"],
    );
    let mut b = good.clone();
    b[4] = 1; // ELFCLASS32
    assert_err(&parse_err(&b), Errno::ENOEXEC, &["64-bit"]);
    let mut b = good.clone();
    b[5] = 2; // big-endian
    assert_err(&parse_err(&b), Errno::ENOEXEC, &["little-endian"]);
    let mut b = good.clone();
    b[0] = b'X';
    assert_err(&parse_err(&b), Errno::ENOEXEC, &["not an ELF file"]);
    assert_err(&parse_err(b"#!/bin/sh\n"), Errno::ENOEXEC, &["too short"]);
}

#[test]
fn truncated_objects() {
    for arch in ARCHES {
        let good = fixture(arch, "umveneer");
        // Every length short of the whole file fails cleanly (the section headers are last).
        for len in (0..good.len()).step_by(7).chain([good.len() - 1]) {
            let e = parse_err(&good[..len]);
            assert_eq!(e.errno, Errno::ENOEXEC, "{arch} len {len}: {e:?}");
        }
    }
}

#[test]
fn malformed_objects() {
    let good = fixture("aarch64", "umchar");
    // A relocation offset past the end of its section.
    let mut b = good.clone();
    let at = first_rela(&b, ".text");
    b[at..at + 8].copy_from_slice(&0x10_0000u64.to_le_bytes());
    assert_err(
        &parse_err(&b),
        Errno::ENOEXEC,
        &["runs past the end of the section"],
    );
    // A symbol index past the symbol table.
    let mut b = good.clone();
    let at = first_rela(&b, ".text") + 12; // r_info high half
    b[at..at + 4].copy_from_slice(&0xffffu32.to_le_bytes());
    assert_err(
        &parse_err(&b),
        Errno::ENOEXEC,
        &["symbol index 65535 out of range"],
    );
    // A section whose contents lie outside the file.
    let mut b = good.clone();
    let sh = section_header_offset(&b, ".text");
    b[sh + 24..sh + 32].copy_from_slice(&0x7fff_ffffu64.to_le_bytes()); // sh_offset
    assert_err(
        &parse_err(&b),
        Errno::ENOEXEC,
        &["section .text", "outside"],
    );
    // SHT_REL instead of SHT_RELA.
    let mut b = good.clone();
    let sh = section_header_offset(&b, ".rela.text");
    b[sh + 4..sh + 8].copy_from_slice(&9u32.to_le_bytes());
    assert_err(&parse_err(&b), Errno::ENOEXEC, &["REL relocation"]);
    // No symbol table.
    let mut b = good.clone();
    let sh = section_header_offset(&b, ".symtab");
    b[sh + 4..sh + 8].copy_from_slice(&1u32.to_le_bytes()); // SHT_PROGBITS
    assert_err(&parse_err(&b), Errno::ENOEXEC, &["no symbols"]);
    // No name= in .modinfo.
    let mut b = good.clone();
    let pos = b.windows(6).position(|w| w == b"\0name=").unwrap() + 1;
    b[pos..pos + 5].copy_from_slice(b"nome=");
    assert_err(&parse_err(&b), Errno::ENOEXEC, &["no name"]);
    // A common symbol (not built with -fno-common).
    let mut b = good.clone();
    let elf = Elf::parse(&good).unwrap();
    let symtab = elf.section_headers.iter().find(|s| s.sh_type == 2).unwrap();
    let i = elf
        .syms
        .iter()
        .position(|s| elf.strtab.get_at(s.st_name) == Some("init_module"))
        .unwrap();
    let at = symtab.sh_offset as usize + 24 * i + 6; // st_shndx
    b[at..at + 2].copy_from_slice(&0xfff2u16.to_le_bytes());
    let obj = ModuleObject::parse(&b).unwrap();
    let k = Kernel::at(0x7eff_ff00_0000);
    let e = link(
        &obj,
        &bases(&obj.layout(), 0x7f00_0000_0000, 0x1000),
        &|n: &str| k.resolve(n),
        "",
    )
    .unwrap_err();
    assert_err(&e, Errno::ENOEXEC, &["common symbol init_module"]);
}

#[test]
fn bad_parameters() {
    let b = fixture("x86_64", "umchar");
    let k = Kernel::at(0x7eff_ff00_0000);
    let e = link_err(&b, &k, 0x7f00_0000_0000, "bufsize=lots");
    assert_err(
        &e,
        Errno::EINVAL,
        &["umchar: `lots' invalid for parameter `bufsize'"],
    );
    let e = link_err(&b, &k, 0x7f00_0000_0000, "bufsize=99999999999");
    assert_err(&e, Errno::ERANGE, &["bufsize"]);
    let e = link_err(&b, &k, 0x7f00_0000_0000, "bufsize");
    assert_err(&e, Errno::EINVAL, &["bufsize"]);
    let long = format!("greeting={}", "x".repeat(1025));
    let e = link_err(&b, &k, 0x7f00_0000_0000, &long);
    assert_err(&e, Errno::ENOSPC, &["too large for parameter `greeting'"]);
}

#[test]
fn bad_bases() {
    let b = fixture("x86_64", "umchar");
    let obj = ModuleObject::parse(&b).unwrap();
    let k = Kernel::at(0x7eff_ff00_0000);
    let good = bases(&obj.layout(), 0x7f00_0000_0000, 0x1000);
    let r = |bs: &[(RegionKind, u64)]| link(&obj, bs, &|n: &str| k.resolve(n), "").unwrap_err();
    assert_err(
        &r(&good[1..]),
        Errno::EINVAL,
        &["no base address for the Text region"],
    );
    let mut bs = good.clone();
    bs[0].1 += 4;
    assert_err(&r(&bs), Errno::EINVAL, &["not aligned"]);
    let mut bs = good.clone();
    bs[1].1 = bs[0].1;
    assert_err(&r(&bs), Errno::EINVAL, &["overlaps"]);
    let mut bs = good.clone();
    bs[0].1 = 0u64.wrapping_sub(obj.layout().regions[0].align);
    assert_err(&r(&bs), Errno::EINVAL, &["wraps"]);
}
