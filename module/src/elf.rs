//! Parsing and validating a module object: the checks of Linux's `elf_validity_cache_copy`
//! and `setup_load_info` (`kernel/module/main.c`) on an ELF64 little-endian relocatable file,
//! turned into owned tables ([`ModuleObject`]) that [`crate::layout`] and [`crate::link`](mod@crate::link)
//! work from. Every offset and size read from the file is checked before use; malformed input
//! gives `ENOEXEC`, never a panic.
//!
//! Neighbours: [`crate::modinfo`] and [`crate::params`] read the special sections found here;
//! [`crate::layout`] decides where the sections go; [`crate::link`](mod@crate::link) applies the relocations.

use std::collections::HashMap;

use goblin::container::{Container, Ctx, Endian};
use goblin::elf::header::{EM_AARCH64, EM_X86_64, ET_REL};
use goblin::elf::reloc::RelocSection;
use goblin::elf::section_header::{
    SHF_ALLOC, SHN_ABS, SHN_COMMON, SHN_LORESERVE, SHN_UNDEF, SHT_NOBITS, SHT_REL, SHT_RELA,
    SHT_STRTAB, SHT_SYMTAB, SectionHeader,
};
use goblin::elf::sym::{STB_GLOBAL, STB_WEAK, STT_SECTION, Sym};

use crate::layout::{self, Plan};
use crate::modinfo;
use crate::params::{self, ParamDecl, ParamType};
use crate::{Layout, LoadError, Machine, RegionKind};

/// Size of `Elf64_Ehdr`.
const EHDR_SIZE: usize = 64;
/// Size of `Elf64_Shdr`.
const SHDR_SIZE: u64 = 64;
/// Size of `Elf64_Sym`.
const SYM_SIZE: u64 = 24;
/// Size of `Elf64_Rela`.
const RELA_SIZE: u64 = 24;

/// Where a section was placed: its region and offset inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub kind: RegionKind,
    pub offset: u64,
}

/// One section header, with the bytes of the sections we load or read.
#[derive(Clone, Debug)]
pub(crate) struct Section {
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    pub size: u64,
    pub align: u64,
    /// File contents (empty for `SHT_NOBITS` and for sections we neither load nor read).
    pub data: Vec<u8>,
    /// Where the section is loaded, if it is.
    pub place: Option<Place>,
}

/// One symbol table entry.
#[derive(Clone, Debug)]
pub(crate) struct Symbol {
    pub name: String,
    pub shndx: usize,
    pub value: u64,
    pub bind: u8,
    pub typ: u8,
}

impl Symbol {
    /// Defined in a real section (not undefined, absolute or common).
    pub fn section(&self) -> Option<usize> {
        let s = self.shndx as u32;
        (s != SHN_UNDEF && s < SHN_LORESERVE).then_some(self.shndx)
    }

    pub fn is_undefined(&self) -> bool {
        self.shndx as u32 == SHN_UNDEF
    }

    pub fn is_global(&self) -> bool {
        self.bind == STB_GLOBAL || self.bind == STB_WEAK
    }
}

/// A relocation decoded for the object's machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reloc {
    X86(um_arch_x86::module::Reloc),
    Arm64(um_arch_arm64::module::Reloc),
}

impl Reloc {
    pub fn size(self) -> usize {
        match self {
            Reloc::X86(r) => r.size(),
            Reloc::Arm64(r) => r.size(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Reloc::X86(r) => r.name(),
            Reloc::Arm64(r) => r.name(),
        }
    }

    /// A direct branch that may need a veneer (arm64 CALL26/JUMP26) or stub (x86_64 PLT32).
    pub fn is_branch(self) -> bool {
        match self {
            Reloc::X86(r) => r == um_arch_x86::module::Reloc::Plt32,
            Reloc::Arm64(r) => r.is_branch26(),
        }
    }

    pub fn uses_got(self) -> bool {
        match self {
            Reloc::X86(r) => r.uses_got(),
            Reloc::Arm64(_) => false,
        }
    }

    /// A 64-bit absolute relocation (what a pointer in `__param` carries).
    pub fn is_abs64(self) -> bool {
        matches!(
            self,
            Reloc::X86(um_arch_x86::module::Reloc::Abs64)
                | Reloc::Arm64(um_arch_arm64::module::Reloc::Abs64)
        )
    }
}

/// One `Elf64_Rela` entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rela {
    pub offset: u64,
    pub sym: usize,
    pub r_type: u32,
    pub reloc: Reloc,
    pub addend: i64,
}

/// The entries of one `SHT_RELA` section whose target section is loaded.
#[derive(Clone, Debug)]
pub(crate) struct RelaSection {
    pub target: usize,
    pub entries: Vec<Rela>,
}

/// A parsed, validated module object. Owns everything it needs; the input bytes can go.
#[derive(Clone, Debug)]
pub struct ModuleObject {
    pub(crate) machine: Machine,
    pub(crate) sections: Vec<Section>,
    pub(crate) symbols: Vec<Symbol>,
    pub(crate) relas: Vec<RelaSection>,
    pub(crate) modinfo: Vec<(String, String)>,
    pub(crate) name: String,
    pub(crate) exports: Vec<String>,
    pub(crate) params: Vec<ParamDecl>,
    pub(crate) plan: Plan,
}

/// `bytes[off..off + size]`, or `ENOEXEC` naming `what`.
fn range<'a>(bytes: &'a [u8], off: u64, size: u64, what: &str) -> Result<&'a [u8], LoadError> {
    let end = off.checked_add(size);
    let r = match (
        usize::try_from(off),
        end.and_then(|e| usize::try_from(e).ok()),
    ) {
        (Ok(s), Some(e)) => bytes.get(s..e),
        _ => None,
    };
    r.ok_or_else(|| {
        LoadError::noexec(format!(
            "{what} (offset {off:#x}, size {size:#x}) lies outside the {}-byte file",
            bytes.len()
        ))
    })
}

/// The NUL-terminated string at `off` in a string table.
fn cstr(table: &[u8], off: usize, what: &str) -> Result<String, LoadError> {
    let tail = table.get(off..).ok_or_else(|| {
        LoadError::noexec(format!("{what}: name offset {off:#x} is out of range"))
    })?;
    let len = tail
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| LoadError::noexec(format!("{what}: name is not NUL-terminated")))?;
    Ok(String::from_utf8_lossy(&tail[..len]).into_owned())
}

struct Header {
    machine: Machine,
    shoff: u64,
    shnum: usize,
    shstrndx: usize,
}

/// `elf_validity_cache_copy`'s header checks: magic, ELFCLASS64, little-endian, ET_REL, a
/// machine we relocate, sane section header table.
fn parse_header(bytes: &[u8]) -> Result<Header, LoadError> {
    let ident = bytes.get(..EHDR_SIZE).ok_or_else(|| {
        LoadError::noexec(format!(
            "file too short for an ELF header ({} bytes)",
            bytes.len()
        ))
    })?;
    if ident[..4] != *b"\x7fELF" {
        return Err(LoadError::noexec("not an ELF file (bad magic)"));
    }
    if ident[4] != goblin::elf::header::ELFCLASS64 {
        return Err(LoadError::noexec(format!(
            "not a 64-bit ELF file (class {})",
            ident[4]
        )));
    }
    if ident[5] != goblin::elf::header::ELFDATA2LSB {
        return Err(LoadError::noexec(format!(
            "not a little-endian ELF file (data {})",
            ident[5]
        )));
    }
    let h = goblin::elf64::header::Header::parse(bytes)
        .map_err(|e| LoadError::noexec(format!("bad ELF header: {e}")))?;
    if h.e_type != ET_REL {
        return Err(LoadError::noexec(format!(
            "not a relocatable object (e_type {}; modules are ET_REL)",
            h.e_type
        )));
    }
    let machine = match h.e_machine {
        EM_X86_64 => Machine::X86_64,
        EM_AARCH64 => Machine::Aarch64,
        m => {
            return Err(LoadError::noexec(format!(
                "unsupported machine {m} (e_machine)"
            )));
        }
    };
    if u64::from(h.e_shentsize) != SHDR_SIZE {
        return Err(LoadError::noexec(format!(
            "bad section header size {}",
            h.e_shentsize
        )));
    }
    if h.e_shnum == 0 || h.e_shoff == 0 {
        return Err(LoadError::noexec("no section headers"));
    }
    let shnum = usize::from(h.e_shnum);
    let shstrndx = usize::from(h.e_shstrndx);
    if shstrndx >= shnum {
        return Err(LoadError::noexec(format!(
            "section name table index {shstrndx} out of range ({shnum} sections)"
        )));
    }
    range(
        bytes,
        h.e_shoff,
        SHDR_SIZE * shnum as u64,
        "section header table",
    )?;
    Ok(Header {
        machine,
        shoff: h.e_shoff,
        shnum,
        shstrndx,
    })
}

impl ModuleObject {
    /// Parses and validates a module object: ELF64, little-endian, `ET_REL`, x86_64 or
    /// aarch64; sections inside the file; one symbol table; `SHT_RELA` relocations of known
    /// types inside their sections; `.modinfo` with a `name=`; well-formed `__param` entries.
    /// Computes the layout too (no addresses needed).
    pub fn parse(bytes: &[u8]) -> Result<ModuleObject, LoadError> {
        let hdr = parse_header(bytes)?;
        let ctx = Ctx::new(Container::Big, Endian::Little);
        let shoff = usize::try_from(hdr.shoff).map_err(|_| LoadError::noexec("bad e_shoff"))?;
        let shdrs = SectionHeader::parse(bytes, shoff, hdr.shnum, ctx)
            .map_err(|e| LoadError::noexec(format!("bad section headers: {e}")))?;
        if shdrs.len() != hdr.shnum {
            return Err(LoadError::noexec("bad section header count"));
        }

        // Section names. Linux insists the table ends in NUL ("ELF Spec violation: section
        // name table isn't null terminated").
        let shstr = shdrs
            .get(hdr.shstrndx)
            .ok_or_else(|| LoadError::noexec("no section name table"))?;
        if shstr.sh_type == SHT_NOBITS {
            return Err(LoadError::noexec("section name table has no contents"));
        }
        let shstrtab = range(bytes, shstr.sh_offset, shstr.sh_size, "section name table")?;
        if shstrtab.last() != Some(&0) {
            return Err(LoadError::noexec("section name table isn't NUL-terminated"));
        }

        let mut sections = Vec::with_capacity(shdrs.len());
        for (i, sh) in shdrs.iter().enumerate() {
            let name = cstr(shstrtab, sh.sh_name, &format!("section {i}"))?;
            // Every section with contents must lie inside the file ("Module len %lu truncated").
            if sh.sh_type != SHT_NOBITS {
                range(bytes, sh.sh_offset, sh.sh_size, &format!("section {name}"))?;
            }
            let align = sh.sh_addralign.max(1);
            if !align.is_power_of_two() {
                return Err(LoadError::noexec(format!(
                    "section {name}: alignment {align:#x} is not a power of two"
                )));
            }
            let kind = layout::classify(&name, sh.sh_type, sh.sh_flags);
            if kind.is_some() && align > layout::MAX_ALIGN {
                return Err(LoadError::noexec(format!(
                    "section {name}: alignment {align:#x} is larger than {:#x}",
                    layout::MAX_ALIGN
                )));
            }
            let wanted = kind.is_some() || modinfo::is_read_section(&name);
            let data = if wanted && sh.sh_type != SHT_NOBITS {
                range(bytes, sh.sh_offset, sh.sh_size, &name)?.to_vec()
            } else {
                Vec::new()
            };
            sections.push(Section {
                name,
                sh_type: sh.sh_type,
                flags: sh.sh_flags,
                size: sh.sh_size,
                align,
                data,
                place: None,
            });
        }

        // .modinfo first, so later messages can name the module.
        let modinfo = modinfo::parse(&sections);
        let name = modinfo::module_name(&modinfo)?;
        let exports = modinfo::exports(&sections);

        let (symtab_index, symbols) = parse_symbols(bytes, &shdrs, &name, ctx)?;
        let relas = parse_relas(
            bytes,
            &shdrs,
            &sections,
            &symbols,
            symtab_index,
            hdr.machine,
            &name,
            ctx,
        )?;
        let params = params::decode(&sections, &symbols, &relas, &name)?;

        let mut obj = ModuleObject {
            machine: hdr.machine,
            sections,
            symbols,
            relas,
            modinfo,
            name,
            exports,
            params,
            plan: Plan::default(),
        };
        obj.plan = layout::plan(&mut obj)?;
        Ok(obj)
    }

    /// The architecture the module was built for.
    pub fn machine(&self) -> Machine {
        self.machine
    }

    /// The module name (`.modinfo` `name=`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// All `.modinfo` `key=value` pairs, in file order.
    pub fn modinfo(&self) -> &[(String, String)] {
        &self.modinfo
    }

    /// The first value of a `.modinfo` key.
    pub fn modinfo_value(&self, key: &str) -> Option<&str> {
        self.modinfo
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Module names from `depends=` (comma-separated; empty when none).
    pub fn depends(&self) -> Vec<String> {
        self.modinfo
            .iter()
            .filter(|(k, _)| k == "depends")
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    /// `vermagic=`, e.g. `"6.1.0-um x86_64"`.
    pub fn vermagic(&self) -> Option<&str> {
        self.modinfo_value("vermagic")
    }

    /// The undefined symbols the caller's resolver will be asked for (each once, in symbol
    /// table order), without those the module defines itself and `_GLOBAL_OFFSET_TABLE_`.
    pub fn undefined_symbols(&self) -> Vec<String> {
        let own = self.own_definitions();
        let mut out: Vec<String> = Vec::new();
        for s in self.symbols.iter().skip(1) {
            if s.is_undefined()
                && !s.name.is_empty()
                && s.name != crate::link::GOT_SYMBOL
                && !own.contains_key(s.name.as_str())
                && !out.contains(&s.name)
            {
                out.push(s.name.clone());
            }
        }
        out
    }

    /// Names given to `EXPORT_SYMBOL` (from `__ksymtab_strings`).
    pub fn exports(&self) -> &[String] {
        &self.exports
    }

    /// The module parameters: name, type and sysfs permissions.
    pub fn params(&self) -> Vec<(String, ParamType, u32)> {
        self.params
            .iter()
            .map(|p| (p.name.clone(), p.ty, p.perm))
            .collect()
    }

    /// The regions to reserve, with their sizes (including veneers, GOT and parameter-string
    /// space) and alignments.
    pub fn layout(&self) -> Layout {
        self.plan.layout()
    }

    /// How many veneer/stub slots are reserved at the end of a text region (the worst case:
    /// one per distinct (symbol, addend) branched to from another section).
    pub fn veneer_slots(&self, kind: RegionKind) -> u64 {
        self.plan.pool(kind).map_or(0, |p| p.slots)
    }

    /// How many GOT entries are reserved (x86_64: one per symbol used by GOTPCREL forms).
    pub fn got_slots(&self) -> u64 {
        self.plan.got.as_ref().map_or(0, |g| g.symbols.len() as u64)
    }

    /// Global (or weak) symbols the module defines in a section, by name.
    pub(crate) fn own_definitions(&self) -> HashMap<&str, usize> {
        let mut m = HashMap::new();
        for (i, s) in self.symbols.iter().enumerate() {
            if s.is_global()
                && !s.name.is_empty()
                && (s.section().is_some() || s.shndx as u32 == SHN_ABS)
            {
                m.entry(s.name.as_str()).or_insert(i);
            }
        }
        m
    }

    /// A name for messages: the symbol's name, or its section's for section symbols.
    pub(crate) fn symbol_label(&self, index: usize) -> String {
        match self.symbols.get(index) {
            Some(s) if s.typ == STT_SECTION || s.name.is_empty() => s
                .section()
                .and_then(|i| self.sections.get(i))
                .map_or_else(|| format!("symbol #{index}"), |sec| sec.name.clone()),
            Some(s) => s.name.clone(),
            None => format!("symbol #{index}"),
        }
    }
}

/// The symbol table (`SHT_SYMTAB`) and its string table. Linux: "module has no symbols
/// (stripped?)" when there is none.
fn parse_symbols(
    bytes: &[u8],
    shdrs: &[SectionHeader],
    name: &str,
    ctx: Ctx,
) -> Result<(usize, Vec<Symbol>), LoadError> {
    let (index, symtab) = shdrs
        .iter()
        .enumerate()
        .find(|(_, s)| s.sh_type == SHT_SYMTAB)
        .ok_or_else(|| LoadError::noexec(format!("{name}: module has no symbols (stripped?)")))?;
    if symtab.sh_entsize != SYM_SIZE || symtab.sh_size % SYM_SIZE != 0 {
        return Err(LoadError::noexec(format!(
            "{name}: bad symbol table entry size {} (table {} bytes)",
            symtab.sh_entsize, symtab.sh_size
        )));
    }
    let strtab = shdrs
        .get(symtab.sh_link as usize)
        .filter(|s| s.sh_type == SHT_STRTAB)
        .ok_or_else(|| LoadError::noexec(format!("{name}: symbol table has no string table")))?;
    let strings = range(
        bytes,
        strtab.sh_offset,
        strtab.sh_size,
        "symbol string table",
    )?;
    range(bytes, symtab.sh_offset, symtab.sh_size, "symbol table")?;
    let count = (symtab.sh_size / SYM_SIZE) as usize;
    let off =
        usize::try_from(symtab.sh_offset).map_err(|_| LoadError::noexec("bad symtab offset"))?;
    let syms = Sym::parse(bytes, off, count, ctx)
        .map_err(|e| LoadError::noexec(format!("{name}: bad symbol table: {e}")))?;
    let mut out = Vec::with_capacity(syms.len());
    for (i, s) in syms.iter().enumerate() {
        let sname = if s.st_name == 0 {
            String::new()
        } else {
            cstr(strings, s.st_name, &format!("{name}: symbol {i}"))?
        };
        let shndx = s.st_shndx;
        let reserved = shndx as u32 >= SHN_LORESERVE;
        if shndx as u32 != SHN_UNDEF && !reserved && shndx >= shdrs.len() {
            return Err(LoadError::noexec(format!(
                "{name}: symbol {sname} has section index {shndx} out of range"
            )));
        }
        if reserved && shndx as u32 != SHN_ABS && shndx as u32 != SHN_COMMON {
            return Err(LoadError::noexec(format!(
                "{name}: symbol {sname} has unsupported section index {shndx:#x}"
            )));
        }
        out.push(Symbol {
            name: sname,
            shndx,
            value: s.st_value,
            bind: s.st_bind(),
            typ: s.st_type(),
        });
    }
    if out.is_empty() {
        return Err(LoadError::noexec(format!("{name}: empty symbol table")));
    }
    Ok((index, out))
}

/// The `SHT_RELA` sections that apply to loaded sections (others, e.g. for `.debug_*` or
/// `.comment`, are skipped as in `apply_relocations`), decoded for the machine.
#[allow(clippy::too_many_arguments)]
fn parse_relas(
    bytes: &[u8],
    shdrs: &[SectionHeader],
    sections: &[Section],
    symbols: &[Symbol],
    symtab_index: usize,
    machine: Machine,
    name: &str,
    ctx: Ctx,
) -> Result<Vec<RelaSection>, LoadError> {
    let mut out = Vec::new();
    for (i, sh) in shdrs.iter().enumerate() {
        if sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL {
            continue;
        }
        let rname = sections.get(i).map_or("?", |s| s.name.as_str());
        let target = sh.sh_info as usize;
        let tsec = sections.get(target).ok_or_else(|| {
            LoadError::noexec(format!(
                "{name}: {rname} applies to section {target}, out of range"
            ))
        })?;
        // Only relocations of sections we load matter (Linux: "Don't bother with
        // non-allocated sections").
        if tsec.flags & u64::from(SHF_ALLOC) == 0
            || layout::classify(&tsec.name, tsec.sh_type, tsec.flags).is_none()
        {
            continue;
        }
        if sh.sh_type == SHT_REL {
            // arch/{x86,arm64}/kernel/module.c have no apply_relocate: "REL relocation
            // unsupported".
            return Err(LoadError::noexec(format!(
                "{name}: REL relocation section {rname} unsupported (both arches use RELA)"
            )));
        }
        if sh.sh_link as usize != symtab_index {
            return Err(LoadError::noexec(format!(
                "{name}: {rname} does not use the symbol table (sh_link {})",
                sh.sh_link
            )));
        }
        if sh.sh_entsize != RELA_SIZE || sh.sh_size % RELA_SIZE != 0 {
            return Err(LoadError::noexec(format!(
                "{name}: {rname}: bad entry size {} (section {} bytes)",
                sh.sh_entsize, sh.sh_size
            )));
        }
        range(bytes, sh.sh_offset, sh.sh_size, rname)?;
        let off = usize::try_from(sh.sh_offset).map_err(|_| LoadError::noexec("bad offset"))?;
        let size = usize::try_from(sh.sh_size).map_err(|_| LoadError::noexec("bad size"))?;
        let rs = RelocSection::parse(bytes, off, size, true, ctx)
            .map_err(|e| LoadError::noexec(format!("{name}: {rname}: {e}")))?;
        let mut entries = Vec::with_capacity(rs.len());
        for (k, r) in rs.iter().enumerate() {
            if r.r_sym >= symbols.len() {
                return Err(LoadError::noexec(format!(
                    "{name}: {rname} entry {k}: symbol index {} out of range",
                    r.r_sym
                )));
            }
            let reloc = match machine {
                Machine::X86_64 => um_arch_x86::module::Reloc::from_type(r.r_type).map(Reloc::X86),
                Machine::Aarch64 => {
                    um_arch_arm64::module::Reloc::from_type(r.r_type).map(Reloc::Arm64)
                }
            }
            .ok_or_else(|| {
                LoadError::noexec(format!(
                    "{name}: unsupported RELA relocation type {} at {}+{:#x} ({rname} entry {k})",
                    r.r_type, tsec.name, r.r_offset
                ))
            })?;
            let end = r.r_offset.checked_add(reloc.size() as u64);
            if end.is_none_or(|e| e > tsec.size) {
                return Err(LoadError::noexec(format!(
                    "{name}: {} at {}+{:#x} runs past the end of the section ({} bytes)",
                    reloc.name(),
                    tsec.name,
                    r.r_offset,
                    tsec.size
                )));
            }
            entries.push(Rela {
                offset: r.r_offset,
                sym: r.r_sym,
                r_type: r.r_type,
                reloc,
                addend: r.r_addend.unwrap_or(0),
            });
        }
        out.push(RelaSection { target, entries });
    }
    Ok(out)
}
