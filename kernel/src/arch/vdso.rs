//! The vDSO: a small ELF shared object that exec maps into every guest and names in
//! `AT_SYSINFO_EHDR` (Linux `arch_setup_additional_pages`, arch/x86/entry/vdso/vma.c and
//! arch/arm64/kernel/vdso.c). What it contains is the arch's business (`arch/*/src/vdso.rs`:
//! symbols, version, machine code); this module lays it out as an ELF image the way the
//! consumers read it: musl (`src/internal/vdso.c`), glibc (`elf/setup-vdso.h`) and Go
//! (`runtime/vdso_linux.go`) find it through the program headers, `PT_DYNAMIC`, `DT_HASH`,
//! `DT_SYMTAB`/`DT_STRTAB` and, for the version check, `DT_VERSYM`/`DT_VERDEF`. Section headers
//! are there too, for `readelf`/gdb on a dump.
//!
//! One image per boot, built once ([`image`], after [`init`] said whether the host's vDSO is
//! usable from the guest); `binfmt_elf::load_elf` copies it into a private read+exec mapping
//! named `[vdso]`.
//!
//! **Time at native speed.** Guest clocks are the host's clocks. Every stub process is exec'd
//! without address randomisation (`um_os_linux::stub`), so the host maps its own vDSO and vvar
//! pages at one place in all of them, above the guest's TASK_SIZE where the guest cannot map
//! anything, and the engines leave them mapped. Boot checks that place ([`HostVdso`]) and
//! [`init`] then makes each time function of the guest's vDSO a jump into the host's vDSO
//! (`arch/*/src/vdso.rs` `forward`): clock_gettime costs what it costs natively. Without that
//! (the check failed, or the host has no vDSO) the functions make the syscall.
//!
//! **Time namespaces.** The host's vDSO cannot add a time namespace's offsets, so a process
//! outside the initial one gets [`timens_image`]: the same layout, the time functions making
//! the syscall (which `crate::timens` shifts). Exec picks the image
//! ([`image_for_exec`]); a process that changes namespace while running (the child of fork
//! after `unshare(CLONE_NEWTIME)`, setns) gets its `[vdso]` rewritten in place, so addresses its
//! libc already looked up stay valid.
//!
//! ```text
//! 0x000  Elf64_Ehdr
//! 0x040  Elf64_Phdr: PT_LOAD (whole image, R+X), PT_DYNAMIC
//!        .hash  .dynsym  .dynstr  .gnu.version  .gnu.version_d  .text  .dynamic  .shstrtab
//!        section headers
//! ```

use std::sync::OnceLock;

/// An ELF image ready to be mapped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VdsoImage {
    /// The whole file (loaded as it is at the mapping's start).
    pub bytes: Vec<u8>,
    /// Offset of the sigreturn trampoline (arm64 `__kernel_rt_sigreturn`), if the arch has one.
    pub sigreturn: Option<u64>,
}

/// One function as the builder sees it (the arch crates' `vdso::Function`, arch-neutral, with
/// its final code).
pub struct Function<'a> {
    pub name: &'a str,
    pub aliases: &'a [&'a str],
    pub code: Vec<u8>,
    pub entry: usize,
}

/// The host's vDSO as every stub process has it.
#[derive(Clone, Debug)]
pub struct HostVdso {
    /// Where the host mapped its vDSO image in the stubs (the same in all of them).
    pub addr: u64,
    /// A copy of the image (the host kernel's, the same in every process).
    pub image: Vec<u8>,
}

impl HostVdso {
    /// The address of function `name` in the stubs, if the host's vDSO defines it.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        let elf = goblin::elf::Elf::parse(&self.image).ok()?;
        let load = elf
            .program_headers
            .iter()
            .find(|p| p.p_type == goblin::elf::program_header::PT_LOAD)?;
        let sym = elf.dynsyms.iter().find(|s| {
            s.is_function() && s.st_shndx != 0 && elf.dynstrtab.get_at(s.st_name) == Some(name)
        })?;
        let off = sym.st_value.checked_sub(load.p_vaddr)?;
        (off < self.image.len() as u64).then(|| self.addr + off)
    }
}

/// What to build: the arch's constants and functions.
pub struct Spec<'a> {
    pub machine: u16,
    pub soname: &'a str,
    pub version: &'a str,
    pub sigreturn: Option<&'a str>,
    pub functions: Vec<Function<'a>>,
}

const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
const SYM_SIZE: usize = 24;
const SHDR_SIZE: usize = 64;
const VERDEF_SIZE: usize = 20;
const VERDAUX_SIZE: usize = 8;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PF_X: u32 = 1;
const PF_R: u32 = 4;

const SHT_PROGBITS: u32 = 1;
const SHT_STRTAB: u32 = 3;
const SHT_HASH: u32 = 5;
const SHT_DYNAMIC: u32 = 6;
const SHT_DYNSYM: u32 = 11;
const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;

const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_SONAME: u64 = 14;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_VERDEF: u64 = 0x6fff_fffc;
const DT_VERDEFNUM: u64 = 0x6fff_fffd;

const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const STT_FUNC: u8 = 2;
const VER_FLG_BASE: u16 = 1;

/// The guest page the image must fit in (the smallest granule).
const MAX_SIZE: usize = 4096;

/// The SysV ELF hash (`DT_HASH`, System V ABI "Hash Table").
pub fn elf_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xf000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

fn align(v: &mut Vec<u8>, to: usize) {
    while v.len() % to != 0 {
        v.push(0);
    }
}

fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

/// A string table under construction.
struct StrTab(Vec<u8>);

impl StrTab {
    fn new() -> StrTab {
        StrTab(vec![0])
    }
    fn add(&mut self, s: &str) -> u32 {
        let at = self.0.len() as u32;
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        at
    }
}

struct Section {
    name: u32,
    kind: u32,
    flags: u64,
    off: usize,
    size: usize,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

/// Lays out `spec` as an ELF shared object (see the module documentation).
pub fn build(spec: &Spec<'_>) -> VdsoImage {
    // Symbols: 0 is the null symbol; each function, then its aliases.
    let mut dynstr = StrTab::new();
    let soname = dynstr.add(spec.soname);
    let version = dynstr.add(spec.version);
    let mut text = Vec::new();
    // (name offset, binding, text offset of the entry, size from the entry)
    let mut syms: Vec<(u32, u8, usize, usize)> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut sigreturn_text = None;
    for f in &spec.functions {
        align(&mut text, 16);
        let entry = text.len() + f.entry;
        text.extend_from_slice(&f.code);
        let size = f.code.len() - f.entry;
        syms.push((dynstr.add(f.name), STB_GLOBAL, entry, size));
        names.push(f.name);
        for a in f.aliases {
            syms.push((dynstr.add(a), STB_WEAK, entry, size));
            names.push(a);
        }
        if spec.sigreturn == Some(f.name) {
            sigreturn_text = Some(entry);
        }
    }
    let nsyms = syms.len() + 1;

    let mut img = vec![0u8; EHDR_SIZE + 2 * PHDR_SIZE];

    // .hash: one bucket per symbol, chains by index (System V ABI).
    align(&mut img, 8);
    let hash_off = img.len();
    let nbucket = nsyms as u32;
    let mut buckets = vec![0u32; nbucket as usize];
    let mut chains = vec![0u32; nsyms];
    for (i, name) in names.iter().enumerate() {
        let idx = (i + 1) as u32;
        let b = (elf_hash(name.as_bytes()) % nbucket) as usize;
        // Append idx at the end of bucket b's chain.
        if buckets[b] == 0 {
            buckets[b] = idx;
        } else {
            let mut at = buckets[b] as usize;
            while chains[at] != 0 {
                at = chains[at] as usize;
            }
            chains[at] = idx;
        }
    }
    put32(&mut img, nbucket);
    put32(&mut img, nsyms as u32);
    buckets.iter().for_each(|&b| put32(&mut img, b));
    chains.iter().for_each(|&c| put32(&mut img, c));
    let hash_size = img.len() - hash_off;

    // .dynsym (values are filled once .text has its place).
    align(&mut img, 8);
    let dynsym_off = img.len();
    img.resize(dynsym_off + nsyms * SYM_SIZE, 0);

    // .dynstr
    let dynstr_off = img.len();
    img.extend_from_slice(&dynstr.0);

    // .gnu.version: index 0 (local) for the null symbol, 2 (our version) for the rest.
    align(&mut img, 2);
    let versym_off = img.len();
    put16(&mut img, 0);
    for _ in &syms {
        put16(&mut img, 2);
    }

    // .gnu.version_d: the base definition (the soname) and the version node.
    align(&mut img, 8);
    let verdef_off = img.len();
    for (i, (flags, name, off)) in [
        (VER_FLG_BASE, spec.soname, soname),
        (0, spec.version, version),
    ]
    .into_iter()
    .enumerate()
    {
        put16(&mut img, 1); // vd_version
        put16(&mut img, flags);
        put16(&mut img, (i + 1) as u16); // vd_ndx
        put16(&mut img, 1); // vd_cnt
        put32(&mut img, elf_hash(name.as_bytes()));
        put32(&mut img, VERDEF_SIZE as u32); // vd_aux
        let next = if i == 0 {
            VERDEF_SIZE + VERDAUX_SIZE
        } else {
            0
        };
        put32(&mut img, next as u32);
        put32(&mut img, off); // vda_name
        put32(&mut img, 0); // vda_next
    }
    let verdef_size = img.len() - verdef_off;

    // .text
    align(&mut img, 16);
    let text_off = img.len();
    img.extend_from_slice(&text);

    // .dynamic
    align(&mut img, 8);
    let dynamic_off = img.len();
    for (tag, val) in [
        (DT_HASH, hash_off as u64),
        (DT_STRTAB, dynstr_off as u64),
        (DT_SYMTAB, dynsym_off as u64),
        (DT_STRSZ, dynstr.0.len() as u64),
        (DT_SYMENT, SYM_SIZE as u64),
        (DT_SONAME, u64::from(soname)),
        (DT_VERSYM, versym_off as u64),
        (DT_VERDEF, verdef_off as u64),
        (DT_VERDEFNUM, 2),
        (DT_NULL, 0),
    ] {
        put64(&mut img, tag);
        put64(&mut img, val);
    }
    let dynamic_size = img.len() - dynamic_off;

    // .shstrtab
    let mut shstr = StrTab::new();
    let sec =
        |shstr: &mut StrTab, name, kind, flags, off, size, link, info, align, entsize| Section {
            name: shstr.add(name),
            kind,
            flags,
            off,
            size,
            link,
            info,
            align,
            entsize,
        };
    let a = SHF_ALLOC;
    let sections = [
        sec(
            &mut shstr, ".hash", SHT_HASH, a, hash_off, hash_size, 2, 0, 8, 4,
        ),
        sec(
            &mut shstr,
            ".dynsym",
            SHT_DYNSYM,
            a,
            dynsym_off,
            nsyms * SYM_SIZE,
            3,
            1,
            8,
            24,
        ),
        sec(
            &mut shstr,
            ".dynstr",
            SHT_STRTAB,
            a,
            dynstr_off,
            dynstr.0.len(),
            0,
            0,
            1,
            0,
        ),
        sec(
            &mut shstr,
            ".gnu.version",
            SHT_GNU_VERSYM,
            a,
            versym_off,
            nsyms * 2,
            2,
            0,
            2,
            2,
        ),
        sec(
            &mut shstr,
            ".gnu.version_d",
            SHT_GNU_VERDEF,
            a,
            verdef_off,
            verdef_size,
            3,
            2,
            8,
            0,
        ),
        sec(
            &mut shstr,
            ".text",
            SHT_PROGBITS,
            a | SHF_EXECINSTR,
            text_off,
            text.len(),
            0,
            0,
            16,
            0,
        ),
        sec(
            &mut shstr,
            ".dynamic",
            SHT_DYNAMIC,
            a | SHF_WRITE,
            dynamic_off,
            dynamic_size,
            3,
            0,
            8,
            16,
        ),
    ];
    let shstrtab_name = shstr.add(".shstrtab");
    let shstrtab_off = img.len();
    img.extend_from_slice(&shstr.0);
    let shstrtab_size = shstr.0.len();

    align(&mut img, 8);
    let shoff = img.len();
    img.extend_from_slice(&[0u8; SHDR_SIZE]);
    let shstrtab = Section {
        name: shstrtab_name,
        kind: SHT_STRTAB,
        flags: 0,
        off: shstrtab_off,
        size: shstrtab_size,
        link: 0,
        info: 0,
        align: 1,
        entsize: 0,
    };
    let all = sections.iter().chain(std::iter::once(&shstrtab));
    let mut shnum = 1u16;
    for s in all {
        put32(&mut img, s.name);
        put32(&mut img, s.kind);
        put64(&mut img, s.flags);
        // Loaded at 0: addresses are file offsets (the shstrtab is not allocated).
        put64(
            &mut img,
            if s.flags & SHF_ALLOC != 0 {
                s.off as u64
            } else {
                0
            },
        );
        put64(&mut img, s.off as u64);
        put64(&mut img, s.size as u64);
        put32(&mut img, s.link);
        put32(&mut img, s.info);
        put64(&mut img, s.align);
        put64(&mut img, s.entsize);
        shnum += 1;
    }
    let text_shndx = 6u16;
    let total = img.len();
    assert!(
        total <= MAX_SIZE,
        "vDSO image of {total} bytes exceeds a page"
    );

    // Symbol values.
    for (i, &(name, bind, entry, size)) in syms.iter().enumerate() {
        let mut s = Vec::with_capacity(SYM_SIZE);
        put32(&mut s, name);
        s.push((bind << 4) | STT_FUNC);
        s.push(0);
        put16(&mut s, text_shndx);
        put64(&mut s, (text_off + entry) as u64);
        put64(&mut s, size as u64);
        let at = dynsym_off + (i + 1) * SYM_SIZE;
        img[at..at + SYM_SIZE].copy_from_slice(&s);
    }

    // ELF header.
    let mut h = Vec::with_capacity(EHDR_SIZE + 2 * PHDR_SIZE);
    h.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    h.extend_from_slice(&[0; 8]);
    put16(&mut h, 3); // ET_DYN
    put16(&mut h, spec.machine);
    put32(&mut h, 1); // EV_CURRENT
    put64(&mut h, 0); // e_entry
    put64(&mut h, EHDR_SIZE as u64); // e_phoff
    put64(&mut h, shoff as u64);
    put32(&mut h, 0); // e_flags
    put16(&mut h, EHDR_SIZE as u16);
    put16(&mut h, PHDR_SIZE as u16);
    put16(&mut h, 2);
    put16(&mut h, SHDR_SIZE as u16);
    put16(&mut h, shnum);
    put16(&mut h, shnum - 1); // .shstrtab is last
    // PT_LOAD: the whole image, read + exec.
    for (kind, flags, off, size, align) in [
        (PT_LOAD, PF_R | PF_X, 0, total, MAX_SIZE as u64),
        (PT_DYNAMIC, PF_R, dynamic_off, dynamic_size, 8),
    ] {
        put32(&mut h, kind);
        put32(&mut h, flags);
        put64(&mut h, off as u64);
        put64(&mut h, off as u64);
        put64(&mut h, off as u64);
        put64(&mut h, size as u64);
        put64(&mut h, size as u64);
        put64(&mut h, align);
    }
    img[..h.len()].copy_from_slice(&h);

    VdsoImage {
        bytes: img,
        sigreturn: sigreturn_text.map(|e| (text_off + e) as u64),
    }
}

macro_rules! spec_for {
    ($arch:ident, $machine:expr, $fns:ident, $host:expr, $timens:expr) => {
        Spec {
            machine: $machine,
            soname: $arch::vdso::SONAME,
            version: $arch::vdso::VERSION,
            sigreturn: $arch::vdso::SIGRETURN,
            functions: $fns
                .iter()
                .map(|f| {
                    // Forward to the host's function where it has one; the entry is then the
                    // start of the jump.
                    match f
                        .host
                        .and_then(|n| $host.and_then(|h: &HostVdso| h.symbol(n)))
                    {
                        // For a time namespace: the syscall, padded to the jump's length, so
                        // the image has the forwarding one's layout.
                        Some(target) if $timens => {
                            let mut code = f.code.clone();
                            let len = $arch::vdso::forward(target).len();
                            if code.len() < len {
                                code.resize(len, 0);
                            }
                            Function {
                                name: f.name,
                                aliases: f.aliases,
                                code,
                                entry: f.entry,
                            }
                        }
                        Some(target) => Function {
                            name: f.name,
                            aliases: f.aliases,
                            code: $arch::vdso::forward(target),
                            entry: 0,
                        },
                        None => Function {
                            name: f.name,
                            aliases: f.aliases,
                            code: f.code.clone(),
                            entry: f.entry,
                        },
                    }
                })
                .collect(),
        }
    };
}

/// The x86_64 image, forwarding to `host` where it can.
pub fn build_x86_64(host: Option<&HostVdso>) -> VdsoImage {
    build_x86_64_for(host, false)
}

/// The x86_64 image for a process in a time namespace: the layout of
/// [`build_x86_64`]`(host)`, every time function making the syscall.
pub fn build_x86_64_timens(host: Option<&HostVdso>) -> VdsoImage {
    build_x86_64_for(host, true)
}

fn build_x86_64_for(host: Option<&HostVdso>, timens: bool) -> VdsoImage {
    let fns = um_arch_x86::vdso::functions();
    build(&spec_for!(
        um_arch_x86,
        um_arch_x86::ELF_MACHINE,
        fns,
        host,
        timens
    ))
}

/// The arm64 image, forwarding to `host` where it can.
pub fn build_aarch64(host: Option<&HostVdso>) -> VdsoImage {
    build_aarch64_for(host, false)
}

/// The arm64 image for a process in a time namespace (see [`build_x86_64_timens`]).
pub fn build_aarch64_timens(host: Option<&HostVdso>) -> VdsoImage {
    build_aarch64_for(host, true)
}

fn build_aarch64_for(host: Option<&HostVdso>, timens: bool) -> VdsoImage {
    let fns = um_arch_arm64::vdso::functions();
    build(&spec_for!(
        um_arch_arm64,
        um_arch_arm64::ELF_MACHINE,
        fns,
        host,
        timens
    ))
}

static IMAGE: OnceLock<VdsoImage> = OnceLock::new();
static TIMENS_IMAGE: OnceLock<VdsoImage> = OnceLock::new();

fn build_native(host: Option<&HostVdso>, timens: bool) -> VdsoImage {
    if crate::arch::ELF_MACHINE == um_arch_arm64::ELF_MACHINE {
        build_aarch64_for(host, timens)
    } else {
        build_x86_64_for(host, timens)
    }
}

/// Builds the boot's images, forwarding time functions to `host` (see the module
/// documentation), and hands `crate::timens` the rewrite of a process's vDSO when it
/// changes time namespace. Returns the guest functions that forward. Only the first call has
/// an effect.
pub fn init(host: Option<&HostVdso>) -> Vec<&'static str> {
    let _ = IMAGE.set(build_native(host, false));
    let _ = TIMENS_IMAGE.set(build_native(host, true));
    crate::timens::set_vdso_switch(switch_time_namespace);
    let forwarded = |names: Vec<(&'static str, Option<&'static str>)>| {
        names
            .into_iter()
            .filter(|(_, h)| h.is_some_and(|h| host.and_then(|v| v.symbol(h)).is_some()))
            .map(|(n, _)| n)
            .collect()
    };
    if crate::arch::ELF_MACHINE == um_arch_arm64::ELF_MACHINE {
        forwarded(
            um_arch_arm64::vdso::functions()
                .iter()
                .map(|f| (f.name, f.host))
                .collect(),
        )
    } else {
        forwarded(
            um_arch_x86::vdso::functions()
                .iter()
                .map(|f| (f.name, f.host))
                .collect(),
        )
    }
}

/// The boot's image (syscall-only if [`init`] was not called).
pub fn image() -> &'static VdsoImage {
    IMAGE.get_or_init(|| build_native(None, false))
}

/// The image for processes outside the initial time namespace: [`image`]'s layout, but the
/// time functions make the syscall, since the host's vDSO cannot add the namespace's offsets
/// (Linux gives such processes a time-namespace vvar page instead).
pub fn timens_image() -> &'static VdsoImage {
    TIMENS_IMAGE.get_or_init(|| build_native(None, true))
}

/// The image exec maps for process `p`: the one for the time namespace it will run in
/// (exec enters the namespace for children, `crate::timens::on_exec`).
pub fn image_for_exec(p: &crate::task::Process) -> &'static VdsoImage {
    if crate::timens::exec_in_root(p) {
        image()
    } else {
        timens_image()
    }
}

/// Rewrites the `[vdso]` of `mm` for a process that entered the initial time namespace
/// (`root`) or another one (Linux `vdso_join_timens`). The two images have one layout, so
/// function addresses a libc has looked up stay valid. Nothing happens if the guest has
/// unmapped or moved its vDSO.
fn switch_time_namespace(mm: &mut um_mm::Mm, root: bool) {
    let Some(v) = mm.vdso() else {
        return;
    };
    let intact = mm
        .find_vma(v.base)
        .is_some_and(|vma| vma.start == v.base && vma.name.as_deref() == Some("[vdso]"));
    if !intact {
        return;
    }
    let img = if root { image() } else { timens_image() };
    if let Err(e) = mm.write_bytes_force(v.base, &img.bytes) {
        log::debug!("vdso: cannot switch time namespace: {e:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16at(b: &[u8], o: usize) -> u16 {
        u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
    }
    fn u32at(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
    }
    fn u64at(b: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
    }
    fn cstr(b: &[u8], o: usize) -> &[u8] {
        let end = b[o..].iter().position(|&c| c == 0).unwrap();
        &b[o..o + end]
    }

    /// musl's lookup (src/internal/vdso.c `__vdsosym`), done independently of the builder:
    /// program headers → PT_LOAD and PT_DYNAMIC, then DT_HASH, DT_SYMTAB, DT_STRTAB, and the
    /// version check through DT_VERSYM/DT_VERDEF. Returns the symbol's offset in the image.
    fn musl_lookup(img: &[u8], vername: &str, name: &str) -> Option<u64> {
        let phoff = u64at(img, 0x20) as usize;
        let phnum = u16at(img, 0x38) as usize;
        let (mut base, mut dynv) = (None, None);
        for i in 0..phnum {
            let ph = phoff + i * 56;
            match u32at(img, ph) {
                1 => base = Some(u64at(img, ph + 8) - u64at(img, ph + 16)),
                2 => dynv = Some(u64at(img, ph + 8) as usize),
                _ => {}
            }
        }
        let (base, mut d) = (base?, dynv?);
        let (mut strings, mut syms, mut hashtab, mut versym, mut verdef) = (0, 0, 0, 0, 0);
        loop {
            let (tag, val) = (u64at(img, d), u64at(img, d + 8));
            let at = (base + val) as usize;
            match tag {
                0 => break,
                5 => strings = at,
                6 => syms = at,
                4 => hashtab = at,
                0x6fff_fff0 => versym = at,
                0x6fff_fffc => verdef = at,
                _ => {}
            }
            d += 16;
        }
        let nchain = u32at(img, hashtab + 4) as usize;
        for i in 0..nchain {
            let s = syms + i * 24;
            let info = img[s + 4];
            if (1u32 << (info & 0xf)) & 0x27 == 0 || (1u32 << (info >> 4)) & 0x406 == 0 {
                continue;
            }
            if u16at(img, s + 6) == 0
                || cstr(img, strings + u32at(img, s) as usize) != name.as_bytes()
            {
                continue;
            }
            // checkver()
            let vsym = u16at(img, versym + i * 2) & 0x7fff;
            let mut def = verdef;
            loop {
                if u16at(img, def + 2) & VER_FLG_BASE == 0 && u16at(img, def + 4) & 0x7fff == vsym {
                    break;
                }
                let next = u32at(img, def + 16) as usize;
                if next == 0 {
                    return None;
                }
                def += next;
            }
            let aux = def + u32at(img, def + 12) as usize;
            if cstr(img, strings + u32at(img, aux) as usize) != vername.as_bytes() {
                continue;
            }
            return Some(u64at(img, s + 8) + base);
        }
        None
    }

    #[test]
    fn elf_hash_matches_the_abi_examples() {
        assert_eq!(elf_hash(b""), 0);
        assert_eq!(elf_hash(b"printf"), 0x077905a6);
        assert_eq!(elf_hash(b"exit"), 0x0006cf04);
    }

    #[test]
    fn arm64_symbols_are_found_as_musl_and_glibc_find_them() {
        let v = build_aarch64(None);
        assert!(v.bytes.len() <= 4096);
        for f in um_arch_arm64::vdso::functions() {
            let at = musl_lookup(&v.bytes, "LINUX_2.6.39", f.name).unwrap() as usize;
            assert_eq!(
                &v.bytes[at..at + f.code.len() - f.entry],
                &f.code[f.entry..]
            );
        }
        assert_eq!(
            musl_lookup(&v.bytes, "LINUX_2.6", "__kernel_clock_gettime"),
            None
        );
        assert_eq!(musl_lookup(&v.bytes, "LINUX_2.6.39", "clock_gettime"), None);
        let sr = v.sigreturn.unwrap() as usize;
        assert_eq!(
            Some(sr as u64),
            musl_lookup(&v.bytes, "LINUX_2.6.39", "__kernel_rt_sigreturn")
        );
        // `mov x8, #139; svc #0`, preceded by a nop (what libgcc's unwinder matches).
        assert_eq!(u32at(&v.bytes, sr), 0xd280_1168);
        assert_eq!(u32at(&v.bytes, sr + 4), 0xd400_0001);
        assert_eq!(u32at(&v.bytes, sr - 4), 0xd503_201f);
    }

    #[test]
    fn x86_64_symbols_and_aliases() {
        let v = build_x86_64(None);
        assert_eq!(v.sigreturn, None);
        for (name, nr) in [
            ("__vdso_clock_gettime", 228u32),
            ("clock_gettime", 228),
            ("__vdso_gettimeofday", 96),
            ("__vdso_time", 201),
            ("__vdso_getcpu", 309),
            ("getcpu", 309),
        ] {
            let at = musl_lookup(&v.bytes, "LINUX_2.6", name).unwrap() as usize;
            assert_eq!(v.bytes[at], 0xb8, "{name}");
            assert_eq!(u32at(&v.bytes, at + 1), nr, "{name}");
            assert_eq!(&v.bytes[at + 5..at + 8], &[0x0f, 0x05, 0xc3]);
        }
    }

    /// Forwarding: with a host vDSO (here: our own syscall image standing in for one, at a
    /// stub address), each time function becomes a jump to the host's function of that name;
    /// getcpu and the sigreturn trampoline stay as they are.
    #[test]
    fn time_functions_forward_to_the_host_vdso() {
        let at = 0x7fff_f7fc_0000u64;
        let host = HostVdso {
            addr: at,
            image: build_x86_64(None).bytes,
        };
        let hostfn = |n: &str| at + musl_lookup(&host.image, "LINUX_2.6", n).unwrap();
        assert_eq!(host.symbol("__vdso_time"), Some(hostfn("__vdso_time")));
        assert_eq!(host.symbol("no_such_function"), None);
        let v = build_x86_64(Some(&host));
        for name in [
            "__vdso_clock_gettime",
            "__vdso_gettimeofday",
            "__vdso_time",
            "__vdso_clock_getres",
        ] {
            let a = musl_lookup(&v.bytes, "LINUX_2.6", name).unwrap() as usize;
            assert_eq!(&v.bytes[a..a + 2], &[0x48, 0xb8], "{name}");
            assert_eq!(u64at(&v.bytes, a + 2), hostfn(name), "{name}");
            assert_eq!(&v.bytes[a + 10..a + 12], &[0xff, 0xe0], "{name}");
        }
        let a = musl_lookup(&v.bytes, "LINUX_2.6", "__vdso_getcpu").unwrap() as usize;
        assert_eq!(v.bytes[a], 0xb8, "getcpu makes the syscall");

        let host = HostVdso {
            addr: at,
            image: build_aarch64(None).bytes,
        };
        let v = build_aarch64(Some(&host));
        for name in [
            "__kernel_clock_gettime",
            "__kernel_gettimeofday",
            "__kernel_clock_getres",
        ] {
            let a = musl_lookup(&v.bytes, "LINUX_2.6.39", name).unwrap() as usize;
            assert_eq!(u32at(&v.bytes, a), 0x5800_0050, "{name}: ldr x16, #8");
            assert_eq!(u32at(&v.bytes, a + 4), 0xd61f_0200, "{name}: br x16");
            let want = at + musl_lookup(&host.image, "LINUX_2.6.39", name).unwrap();
            assert_eq!(u64at(&v.bytes, a + 8), want, "{name}");
        }
        let sr = v.sigreturn.unwrap() as usize;
        assert_eq!(
            u32at(&v.bytes, sr),
            0xd280_1168,
            "sigreturn is never forwarded"
        );
    }

    /// The time-namespace image has the forwarding image's layout (only code differs) and
    /// its time functions make the syscall.
    #[test]
    fn timens_image_keeps_the_layout() {
        let at = 0x7fff_f7fc_0000u64;
        for (host_img, timens, fwd, version, names) in [
            (
                build_x86_64(None).bytes,
                build_x86_64_timens as fn(Option<&HostVdso>) -> VdsoImage,
                build_x86_64 as fn(Option<&HostVdso>) -> VdsoImage,
                "LINUX_2.6",
                &["__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time"][..],
            ),
            (
                build_aarch64(None).bytes,
                build_aarch64_timens,
                build_aarch64,
                "LINUX_2.6.39",
                &["__kernel_clock_gettime", "__kernel_gettimeofday"][..],
            ),
        ] {
            let host = HostVdso {
                addr: at,
                image: host_img,
            };
            let (t, f) = (timens(Some(&host)), fwd(Some(&host)));
            assert_eq!(t.bytes.len(), f.bytes.len());
            assert_eq!(t.sigreturn, f.sigreturn);
            for name in names {
                let a = musl_lookup(&t.bytes, version, name);
                assert_eq!(a, musl_lookup(&f.bytes, version, name), "{name}");
                let a = a.unwrap() as usize;
                assert_ne!(&t.bytes[a..a + 8], &f.bytes[a..a + 8], "{name}");
            }
            // Outside .text, byte for byte the same.
            let e = goblin::elf::Elf::parse(&t.bytes).unwrap();
            let text = e
                .section_headers
                .iter()
                .find(|s| e.shdr_strtab.get_at(s.sh_name) == Some(".text"))
                .unwrap();
            let (ts, te) = (
                text.sh_offset as usize,
                (text.sh_offset + text.sh_size) as usize,
            );
            assert_eq!(&t.bytes[..ts], &f.bytes[..ts]);
            assert_eq!(&t.bytes[te..], &f.bytes[te..]);
        }
        // x86_64: `mov eax, 228; syscall; ret`.
        let host = HostVdso {
            addr: at,
            image: build_x86_64(None).bytes,
        };
        let t = build_x86_64_timens(Some(&host));
        let a = musl_lookup(&t.bytes, "LINUX_2.6", "__vdso_clock_gettime").unwrap() as usize;
        assert_eq!(t.bytes[a], 0xb8);
        assert_eq!(u32at(&t.bytes, a + 1), 228);
        // arm64: `mov x8, #113; svc #0`.
        let host = HostVdso {
            addr: at,
            image: build_aarch64(None).bytes,
        };
        let t = build_aarch64_timens(Some(&host));
        let a = musl_lookup(&t.bytes, "LINUX_2.6.39", "__kernel_clock_gettime").unwrap() as usize;
        assert_eq!(u32at(&t.bytes, a), 0xd280_0008 | (113 << 5));
        assert_eq!(u32at(&t.bytes, a + 4), 0xd400_0001);
    }

    /// The real host vDSO of this test process has the functions the guest's forward to.
    #[test]
    fn the_host_vdso_has_the_forwarded_functions() {
        let Some(image) = um_os_linux::probe::own_vdso() else {
            panic!("this host maps no vDSO into processes");
        };
        let host = HostVdso { addr: 0, image };
        let names: &[&str] = if cfg!(target_arch = "aarch64") {
            &[
                "__kernel_clock_gettime",
                "__kernel_gettimeofday",
                "__kernel_clock_getres",
            ]
        } else {
            &[
                "__vdso_clock_gettime",
                "__vdso_gettimeofday",
                "__vdso_time",
                "__vdso_clock_getres",
            ]
        };
        for n in names {
            assert!(host.symbol(n).is_some(), "host vDSO lacks {n}");
        }
    }

    #[test]
    fn goblin_reads_the_image() {
        use goblin::elf::Elf;
        for (v, machine, version) in [
            (build_x86_64(None), 62u16, "LINUX_2.6"),
            (build_aarch64(None), 183, "LINUX_2.6.39"),
        ] {
            let e = Elf::parse(&v.bytes).unwrap();
            assert_eq!(e.header.e_type, goblin::elf::header::ET_DYN);
            assert_eq!(e.header.e_machine, machine);
            assert_eq!(e.soname, Some("linux-vdso.so.1"));
            let text = e
                .section_headers
                .iter()
                .find(|s| e.shdr_strtab.get_at(s.sh_name) == Some(".text"))
                .unwrap();
            for s in e.dynsyms.iter().skip(1) {
                assert!(s.is_function());
                assert!(s.st_value >= text.sh_addr && s.st_value < text.sh_addr + text.sh_size);
            }
            let vd = e.verdef.as_ref().unwrap();
            let names: Vec<_> = vd
                .iter()
                .map(|d| {
                    e.dynstrtab
                        .get_at(d.iter().next().unwrap().vda_name)
                        .unwrap()
                })
                .collect();
            assert_eq!(names, ["linux-vdso.so.1", version]);
            let dynamic = e.dynamic.as_ref().unwrap();
            assert!(dynamic.info.hash.is_some());
        }
    }
}
