//! `um-module`: the loadable-module loader. It turns the bytes of a module (an ELF relocatable
//! object, `ET_REL`, for x86_64 or arm64) into relocated memory images, the way Linux's
//! `kernel/module/main.c` (`load_module`: `setup_load_info`, `layout_sections`,
//! `simplify_symbols`, `apply_relocations`) and the arch hooks in `arch/x86/kernel/module.c`,
//! `arch/arm64/kernel/module.c` and `arch/arm64/kernel/module-plts.c` do.
//!
//! It is pure: it never touches host memory, maps nothing and runs no module code. The caller
//! (the kernel's module registry, helper crate `um-modshim`) does:
//!
//! 1. [`ModuleObject::parse`] — validate the object and read `.modinfo`, `__param` and
//!    `__ksymtab_strings`; check the name, vermagic and dependencies it reports;
//! 2. [`ModuleObject::layout`] — how big and how aligned each region must be (no addresses
//!    needed), then reserve memory for each region;
//! 3. [`link()`] — with the chosen base addresses, a [`SymbolResolver`] for the kernel's and
//!    other modules' exports and the insmod argument string, get back the region images
//!    ([`LinkedModule`]) with every relocation applied and every parameter set. Errors are
//!    all-or-nothing: a [`LoadError`] (errno + one-line message) and no output;
//! 4. copy each region's bytes into place, apply its [`Prot`], flush the instruction cache on
//!    arm64, call `init`, and free the init regions afterwards.
//!
//! Where things go ([`RegionKind`]): executable sections in `Text` (`.init*` ones in
//! `InitText`), read-only data in `Rodata`, writable data and bss in `Data` (`.init*` data of
//! both kinds in `InitData`). Branch veneers (arm64 PLT entries for CALL26/JUMP26 beyond
//! +-128 MiB; x86_64 stubs for PLT32 beyond +-2 GiB) go at the end of the text region holding
//! the branch (`Text` or `InitText`), the x86_64 GOT at the end of `Rodata`, and the copies of
//! `charp` parameter strings at the end of `Data`.
//!
//! Modules: [`elf`] (parsing and validation), [`modinfo`] (`.modinfo`, exports), [`params`]
//! (`__param` and the insmod argument string), [`layout`] (regions, veneer and GOT counts),
//! [`link`](mod@link) (symbols and relocations). Neighbours: `um-arch-x86::module` and
//! `um-arch-arm64::module` (the relocation formulas), `um-uapi` (errno); the caller is the
//! kernel side (`um-modshim`).

#![forbid(unsafe_code)]

pub mod elf;
#[doc(hidden)]
pub mod fuzzing;
pub mod layout;
pub mod link;
pub mod modinfo;
pub mod params;

use std::fmt;

use um_uapi::Errno;

pub use elf::ModuleObject;
pub use link::link;
pub use params::{ParamInfo, ParamType};

/// The architecture a module was built for (its ELF `e_machine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Machine {
    /// `EM_X86_64` (62).
    X86_64,
    /// `EM_AARCH64` (183).
    Aarch64,
}

impl Machine {
    /// The ELF `e_machine` value.
    pub fn elf_machine(self) -> u16 {
        match self {
            Machine::X86_64 => goblin::elf::header::EM_X86_64,
            Machine::Aarch64 => goblin::elf::header::EM_AARCH64,
        }
    }

    /// The name `uname -m` gives, which is also the arch word of the vermagic string.
    pub fn name(self) -> &'static str {
        match self {
            Machine::X86_64 => "x86_64",
            Machine::Aarch64 => "aarch64",
        }
    }

    /// The `vermagic=` a module built for kernel `release` on this machine carries:
    /// `"<release> <arch>"`, as `UM_VERMAGIC` in `include/module/um_module.h` writes it.
    pub fn vermagic(self, release: &str) -> String {
        format!("{release} {}", self.name())
    }
}

/// Why a module cannot be loaded: the errno `init_module` returns and a one-line message for
/// the kernel log naming the module, section, symbol or relocation concerned.
#[derive(Clone, PartialEq, Eq)]
pub struct LoadError {
    /// `ENOEXEC` for a malformed object, a wrong machine, an unknown relocation or an overflow
    /// (as Linux's module.c); `ENOENT` for an undefined symbol (`simplify_symbols`); `EINVAL`,
    /// `ERANGE` or `ENOSPC` for a bad parameter (`parse_args`); `EINVAL` for bad base
    /// addresses; `ENOMEM` for a module too big to lay out.
    pub errno: Errno,
    /// One line, no trailing newline.
    pub msg: String,
}

impl LoadError {
    pub(crate) fn new(errno: Errno, msg: impl Into<String>) -> LoadError {
        LoadError {
            errno,
            msg: msg.into(),
        }
    }

    /// `ENOEXEC`: the object is malformed or uses something we do not support.
    pub(crate) fn noexec(msg: impl Into<String>) -> LoadError {
        LoadError::new(Errno::ENOEXEC, msg)
    }
}

impl fmt::Debug for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?})", self.msg, self.errno)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for LoadError {}

/// The kinds of memory a module is laid out in (Linux's `enum mod_mem_type`, less the
/// `ro_after_init` split). `Data` includes bss. Veneers/stubs are in `Text`/`InitText`, the
/// x86_64 GOT in `Rodata`, copies of `charp` parameters in `Data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegionKind {
    /// Executable code (MOD_TEXT), including `.exit.text` and veneers.
    Text,
    /// Read-only data (MOD_RODATA), including the x86_64 GOT.
    Rodata,
    /// Writable data and bss (MOD_DATA, MOD_RO_AFTER_INIT), including parameter strings.
    Data,
    /// `.init*` code (MOD_INIT_TEXT), freed after init.
    InitText,
    /// `.init*` data, read-only or not (MOD_INIT_DATA, MOD_INIT_RODATA), freed after init.
    InitData,
}

impl RegionKind {
    /// All kinds, in layout order.
    pub const ALL: [RegionKind; 5] = [
        RegionKind::Text,
        RegionKind::Rodata,
        RegionKind::Data,
        RegionKind::InitText,
        RegionKind::InitData,
    ];

    /// Protection the region gets once its bytes are in place.
    pub fn prot(self) -> Prot {
        match self {
            RegionKind::Text | RegionKind::InitText => Prot::ReadExec,
            RegionKind::Rodata => Prot::Read,
            RegionKind::Data | RegionKind::InitData => Prot::ReadWrite,
        }
    }

    /// Whether the region is freed once init returns.
    pub fn is_init(self) -> bool {
        matches!(self, RegionKind::InitText | RegionKind::InitData)
    }

    pub(crate) fn index(self) -> usize {
        match self {
            RegionKind::Text => 0,
            RegionKind::Rodata => 1,
            RegionKind::Data => 2,
            RegionKind::InitText => 3,
            RegionKind::InitData => 4,
        }
    }
}

/// Page protection of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prot {
    /// `PROT_READ | PROT_EXEC`.
    ReadExec,
    /// `PROT_READ`.
    Read,
    /// `PROT_READ | PROT_WRITE`.
    ReadWrite,
}

/// Size and alignment one region needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionSpec {
    /// Which region.
    pub kind: RegionKind,
    /// Bytes, including veneers, GOT and parameter-string space (not rounded to pages).
    pub size: u64,
    /// Required alignment of the base address (a power of two, at least 16).
    pub align: u64,
}

/// The regions a module needs: one per kind that is non-empty, in [`RegionKind::ALL`] order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The non-empty regions.
    pub regions: Vec<RegionSpec>,
}

impl Layout {
    /// The spec of one region, if the module has it.
    pub fn get(&self, kind: RegionKind) -> Option<&RegionSpec> {
        self.regions.iter().find(|r| r.kind == kind)
    }

    /// Sum of all region sizes.
    pub fn total_size(&self) -> u64 {
        self.regions.iter().map(|r| r.size).sum()
    }
}

/// Looks up symbols the module does not define: the kernel's exported symbols and other
/// modules' exports. Returns the address, or `None` if unknown.
pub trait SymbolResolver {
    /// The address of `name`, if it is exported.
    fn resolve(&self, name: &str) -> Option<u64>;
}

impl<F: Fn(&str) -> Option<u64>> SymbolResolver for F {
    fn resolve(&self, name: &str) -> Option<u64> {
        self(name)
    }
}

/// One region's final image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedRegion {
    /// Which region.
    pub kind: RegionKind,
    /// The base address it was linked at.
    pub addr: u64,
    /// Its full contents (`size` bytes from the layout; bss and padding zeroed).
    pub bytes: Vec<u8>,
    /// The protection to apply after copying.
    pub prot: Prot,
}

/// Where one loaded ELF section ended up (like `/sys/module/<name>/sections/<section>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedSection {
    /// Index in the object's section header table.
    pub index: usize,
    /// Section name.
    pub name: String,
    /// Final address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
    /// The region it is in.
    pub kind: RegionKind,
}

/// One branch veneer (arm64 PLT entry) or x86_64 PLT stub that [`link()`] emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Veneer {
    /// The text region it is in.
    pub kind: RegionKind,
    /// Its address.
    pub addr: u64,
    /// Where it jumps.
    pub target: u64,
}

/// One x86_64 GOT entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GotEntry {
    /// The symbol whose address the entry holds.
    pub symbol: String,
    /// The entry's address (in `Rodata`).
    pub addr: u64,
    /// The value stored there.
    pub value: u64,
}

/// A module ready to be copied into place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedModule {
    /// The regions, in layout order.
    pub regions: Vec<LinkedRegion>,
    /// Address of `init_module`, if defined.
    pub init: Option<u64>,
    /// Address of `cleanup_module`, if defined.
    pub exit: Option<u64>,
    /// `EXPORT_SYMBOL`ed names and their final addresses.
    pub exports: Vec<(String, u64)>,
    /// Undefined symbols the resolver resolved (for use counts), each once.
    pub used_symbols: Vec<String>,
    /// Module parameters: name, type, permissions, address of the variable.
    pub params: Vec<ParamInfo>,
    /// Bytes of the core regions (`Text` + `Rodata` + `Data`), for `/proc/modules`.
    pub core_size: u64,
    /// Where each loaded section is.
    pub sections: Vec<LoadedSection>,
    /// Veneers/stubs actually emitted (only for branches out of direct range).
    pub veneers: Vec<Veneer>,
    /// The GOT (x86_64 only; empty when no GOT relocation is used).
    pub got: Vec<GotEntry>,
}

impl LinkedModule {
    /// One region, if present.
    pub fn region(&self, kind: RegionKind) -> Option<&LinkedRegion> {
        self.regions.iter().find(|r| r.kind == kind)
    }

    /// The address of an exported symbol.
    pub fn export(&self, name: &str) -> Option<u64> {
        self.exports
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, a)| a)
    }

    /// Reads `len` bytes at address `addr` from the linked images, if they lie in one region.
    pub fn read(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.regions.iter().find_map(|r| {
            let off = usize::try_from(addr.checked_sub(r.addr)?).ok()?;
            r.bytes.get(off..off.checked_add(len)?)
        })
    }
}
