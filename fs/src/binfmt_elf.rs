//! The ELF loader: maps a 64-bit little-endian executable (and its program interpreter) into a
//! fresh guest address space and builds its initial stack, as Linux `fs/binfmt_elf.c`
//! (`load_elf_binary`, `load_elf_interp`, `elf_load`, `create_elf_tables`) does.
//!
//! Only the ELF header and the program headers are read (through [`ExecSource::read_at`]); the
//! segments are mapped from the file's page cache ([`ExecSource::vm_file`]) so that a binary run by
//! a hundred processes shares its text frames. The caller (`fs/exec.c`'s counterpart) resolves
//! the path, checks permissions, flushes the old address space (Linux `begin_new_exec`), hands us
//! an empty [`Mm`], and afterwards points the thread at [`LoadedImage::entry`] and
//! [`LoadedImage::sp`].
//!
//! Every error is found before the address space is touched (header checks for the executable and
//! the interpreter, `E2BIG` for the strings); after that point (Linux's "point of no return") an
//! error leaves a half-built address space and the caller must kill the task, as Linux sends
//! `SIGSEGV`.
//!
//! Alignment is always to the guest granule ([`Mm::granule`]), so 16K-page arm64 guests work; an
//! ELF file whose segment file offsets are not congruent to their addresses modulo the granule
//! (a binary linked for 4K pages run with 16K pages) cannot be mapped from the page cache, so such
//! a segment is copied into anonymous memory instead (Linux would fail the exec with `EINVAL`).

use std::sync::Arc;

use goblin::container::{Container, Ctx, Endian};
use goblin::elf::header::{
    EI_CLASS, EI_DATA, ELFCLASS64, ELFDATA2LSB, ELFMAG, ET_DYN, ET_EXEC, SELFMAG,
};
use goblin::elf::program_header::{
    PF_R, PF_W, PF_X, PT_GNU_STACK, PT_INTERP, PT_LOAD, PT_PHDR, ProgramHeader,
};
use goblin::elf64::header::Header;
use um_mm::{Backing, Granule, MapFlags, Mm, Prot, VmFile};
use um_uapi::Errno;

use crate::exec_stack::auxv::*;
use crate::exec_stack::{ArgLimits, StackParams, build_stack_with};

/// `e_machine` of x86_64.
pub const EM_X86_64: u16 = 62;
/// `e_machine` of arm64.
pub const EM_AARCH64: u16 = 183;
/// Linux `PATH_MAX`: the longest PT_INTERP the kernel accepts (`p_filesz > PATH_MAX` fails).
pub const PATH_MAX: u64 = 4096;
/// `sizeof(struct elf64_hdr)`.
const EHDR_SIZE: usize = 64;
/// `sizeof(struct elf64_phdr)`: AT_PHENT and the only `e_phentsize` accepted.
pub const PHDR_SIZE: u16 = 56;
/// `setup_arg_pages()`: the initial stack VMA extends this far below the arguments.
const STACK_EXPAND: u64 = 128 << 10;
/// Chunk size when copying a segment that cannot be mapped from the page cache.
const COPY_CHUNK: usize = 64 << 10;

/// An executable file opened for exec: the bytes (for the headers) and the page-cache object the
/// segments are mapped from.
pub trait ExecSource {
    /// Reads at `off`; returns how many bytes were read (0 at end of file).
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno>;
    /// The file as the page cache knows it (`Backing::File`).
    fn vm_file(&self) -> Arc<dyn VmFile>;
}

/// Opens the PT_INTERP path (without its NUL) for exec, as `open_exec()` does: path walk from the
/// caller's root and cwd, exec permission, not a directory.
pub type OpenInterp<'a> = dyn FnMut(&[u8]) -> Result<Box<dyn ExecSource>, Errno> + 'a;

/// Everything about the new program that does not come from the ELF file.
#[derive(Clone, Debug)]
pub struct ExecParams<'a> {
    /// Argument strings (non-empty: `fs/exec.c` adds an empty `argv[0]` when argc is 0).
    pub argv: &'a [Vec<u8>],
    /// Environment strings.
    pub envp: &'a [Vec<u8>],
    /// The filename passed to execve (`bprm->filename`, AT_EXECFN).
    pub execfn: &'a [u8],
    /// The guest's `e_machine` ([`EM_X86_64`] or [`EM_AARCH64`]).
    pub machine: u16,
    /// `ELF_PLATFORM` ("x86_64", "aarch64"); empty for none (then no AT_PLATFORM).
    pub platform: &'a [u8],
    /// AT_HWCAP.
    pub hwcap: u64,
    /// AT_HWCAP2.
    pub hwcap2: u64,
    /// AT_UID.
    pub uid: u32,
    /// AT_EUID.
    pub euid: u32,
    /// AT_GID.
    pub gid: u32,
    /// AT_EGID.
    pub egid: u32,
    /// AT_SECURE (setuid/setgid exec).
    pub secure: bool,
    /// The 16 bytes behind AT_RANDOM.
    pub random: [u8; 16],
    /// AT_CLKTCK (`USER_HZ`, 100).
    pub clktck: u64,
    /// The vDSO to map (AT_SYSINFO_EHDR names where it went), if any.
    pub vdso: Option<&'a um_kernel::arch::vdso::VdsoImage>,
    /// AT_MINSIGSTKSZ, if the architecture reports it.
    pub minsigstksz: Option<u64>,
}

/// The result of a successful load: where the thread starts and what `mm_struct` records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedImage {
    /// Where the thread starts: the interpreter's entry if there is one, else the program's.
    pub entry: u64,
    /// The initial stack pointer (argc is stored there).
    pub sp: u64,
    /// The program's own entry point, load bias applied (AT_ENTRY).
    pub exe_entry: u64,
    /// The program's load bias (0 for ET_EXEC).
    pub load_bias: u64,
    /// Where the interpreter was loaded (AT_BASE), if there is one.
    pub interp_base: Option<u64>,
    /// `mm->start_brk`: page-aligned end of the program's highest segment.
    pub start_brk: u64,
    /// AT_PHDR: the address of the program headers in guest memory.
    pub phdr: u64,
    /// `mm->start_code`.
    pub start_code: u64,
    /// `mm->end_code`.
    pub end_code: u64,
    /// `mm->start_data`.
    pub start_data: u64,
    /// `mm->end_data`.
    pub end_data: u64,
    /// `mm->start_stack`: lowest address of the initial stack VMA.
    pub stack_start: u64,
    /// PT_GNU_STACK asked for an executable stack.
    pub executable_stack: bool,
    /// `mm->arg_start`.
    pub argv_start: u64,
    /// `mm->arg_end`.
    pub argv_end: u64,
    /// `mm->env_start`.
    pub env_start: u64,
    /// `mm->env_end`.
    pub env_end: u64,
    /// The auxiliary vector as placed on the stack, AT_NULL included (`mm->saved_auxv`).
    pub auxv: Vec<(u64, u64)>,
}

/// A parsed ELF header with its program headers.
struct Elf {
    hdr: Header,
    phdrs: Vec<ProgramHeader>,
}

impl Elf {
    fn loads(&self) -> impl Iterator<Item = &ProgramHeader> {
        self.phdrs.iter().filter(|p| p.p_type == PT_LOAD)
    }
}

/// Reads until `buf` is full or the file ends; returns how much was read.
fn read_full(src: &dyn ExecSource, mut off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        let n = src.read_at(off, &mut buf[done..])?;
        if n == 0 {
            break;
        }
        done += n;
        off += n as u64;
    }
    Ok(done)
}

/// Linux `elf_read()`: a short read is `EIO`.
fn read_exact(src: &dyn ExecSource, off: u64, buf: &mut [u8]) -> Result<(), Errno> {
    if read_full(src, off, buf)? != buf.len() {
        Err(Errno::EIO)
    } else {
        Ok(())
    }
}

/// Why a header was refused; the executable and the interpreter map these to different errnos.
enum BadHeader {
    /// Not ELF at all (bad magic).
    Magic,
    /// ELF, but not ours: class, byte order, machine, type or program header table.
    Format,
    /// The program headers could not be read.
    Io(Errno),
}

/// Reads and checks the ELF header and the program headers (Linux `load_elf_binary` up to
/// `load_elf_phdrs`).
fn read_elf(src: &dyn ExecSource, machine: u16) -> Result<Elf, BadHeader> {
    let mut buf = [0u8; EHDR_SIZE];
    let n = read_full(src, 0, &mut buf).map_err(BadHeader::Io)?;
    // A file too short to hold the header is not an executable. (Linux zero-pads bprm->buf and
    // only fails later, with EIO, if the zero-padded header still names program headers.)
    if n < EHDR_SIZE {
        return Err(BadHeader::Format);
    }
    // "First of all, some simple consistency checks"
    if &buf[..SELFMAG] != ELFMAG {
        return Err(BadHeader::Magic);
    }
    // elf_check_arch(): 64-bit little-endian of the guest's machine (the 32-bit compat loader
    // is not implemented).
    if buf[EI_CLASS] != ELFCLASS64 || buf[EI_DATA] != ELFDATA2LSB {
        return Err(BadHeader::Format);
    }
    let hdr = Header::parse(&buf).map_err(|_| BadHeader::Format)?;
    if hdr.e_type != ET_EXEC && hdr.e_type != ET_DYN {
        return Err(BadHeader::Format);
    }
    if hdr.e_machine != machine {
        return Err(BadHeader::Format);
    }
    // load_elf_phdrs(): "If the size of this structure has changed, then punt, since we will be
    // doing the wrong thing." and "Sanity check the number of program headers..."
    if hdr.e_phentsize != PHDR_SIZE {
        return Err(BadHeader::Format);
    }
    let size = usize::from(hdr.e_phnum) * usize::from(PHDR_SIZE);
    if size == 0 || size > 65536 {
        return Err(BadHeader::Format);
    }
    let mut ph = vec![0u8; size];
    read_exact(src, hdr.e_phoff, &mut ph).map_err(BadHeader::Io)?;
    let ctx = Ctx::new(Container::Big, Endian::Little);
    let phdrs = ProgramHeader::parse(&ph, 0, usize::from(hdr.e_phnum), ctx)
        .map_err(|_| BadHeader::Format)?;
    Ok(Elf { hdr, phdrs })
}

/// Linux `make_prot()`: PF_R/PF_W/PF_X to PROT_READ/WRITE/EXEC.
fn make_prot(p_flags: u32) -> Prot {
    let mut prot = Prot::empty();
    if p_flags & PF_R != 0 {
        prot |= Prot::READ;
    }
    if p_flags & PF_W != 0 {
        prot |= Prot::WRITE;
    }
    if p_flags & PF_X != 0 {
        prot |= Prot::EXEC;
    }
    prot
}

/// Linux `maximum_alignment()`: the largest power-of-two `p_align` of the PT_LOADs, at least a page.
fn maximum_alignment(elf: &Elf, g: Granule) -> u64 {
    let a = elf
        .loads()
        .map(|p| p.p_align)
        .filter(|a| a.is_power_of_two())
        .max()
        .unwrap_or(0);
    a.max(g.size())
}

/// Checks the PT_LOADs before anything is mapped: each must fit in the address space with
/// `p_filesz <= p_memsz` (Linux: `EINVAL` for the program, `ENOMEM` for the interpreter), and
/// they must be in ascending `p_vaddr` order as the ELF specification requires (`ENOEXEC`).
/// Returns the span `[ELF_PAGESTART(min vaddr), max vaddr + memsz)` (`total_mapping_size`).
fn check_loads(elf: &Elf, task_size: u64, g: Granule, too_big: Errno) -> Result<(u64, u64), Errno> {
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut prev = 0u64;
    for p in elf.loads() {
        // "Check to see if the section's size will overflow the allowed task size."
        if p.p_filesz > p.p_memsz
            || p.p_memsz > task_size
            || p.p_vaddr >= task_size
            || task_size - p.p_memsz < p.p_vaddr
            || p.p_offset.checked_add(p.p_filesz).is_none()
        {
            return Err(too_big);
        }
        if p.p_vaddr < prev {
            return Err(Errno::ENOEXEC);
        }
        prev = p.p_vaddr;
        lo = lo.min(g.align_down(p.p_vaddr));
        hi = hi.max(p.p_vaddr + p.p_memsz);
    }
    if lo == u64::MAX {
        // total_mapping_size() == 0: nothing to load.
        return Err(Errno::ENOEXEC);
    }
    Ok((lo, hi))
}

/// Linux `elf_load()`: maps one PT_LOAD at `bias + p_vaddr`. The file part is a private mapping
/// of the page cache; the end of its last page is zeroed if the segment is writable (`padzero`);
/// the rest of `p_memsz` is anonymous zero pages (`vm_brk_flags`, which Linux maps read-write, and
/// executable if the segment is). `first_flags` is added to the first mmap (MAP_FIXED or
/// MAP_FIXED_NOREPLACE).
fn elf_load(
    mm: &mut Mm,
    src: &dyn ExecSource,
    file: &Arc<dyn VmFile>,
    p: &ProgramHeader,
    bias: u64,
    first_flags: MapFlags,
) -> Result<(), Errno> {
    let g = mm.granule();
    let prot = make_prot(p.p_flags);
    let addr = bias.checked_add(p.p_vaddr).ok_or(Errno::EINVAL)?;
    let page_off = g.offset_in_page(addr);
    let map_start = addr - page_off;
    let mut next_flags = first_flags;
    let (zero_start, zero_end);
    if p.p_filesz > 0 {
        // elf_map(): size = p_filesz + ELF_PAGEOFFSET(p_vaddr), off = p_offset - ELF_PAGEOFFSET.
        let map_len = g.align_up(p.p_filesz + page_off).ok_or(Errno::EINVAL)?;
        let private = MapFlags::PRIVATE | next_flags;
        next_flags = MapFlags::FIXED;
        match p
            .p_offset
            .checked_sub(page_off)
            .filter(|o| g.is_aligned(*o))
        {
            Some(off) => {
                mm.mmap(
                    map_start,
                    map_len,
                    prot,
                    private,
                    Backing::File {
                        file: file.clone(),
                        offset: off,
                    },
                )?;
            }
            None => {
                // Offset and address disagree modulo the granule: copy instead of mapping.
                log::warn!(
                    "binfmt_elf: segment at {:#x} (offset {:#x}) not congruent modulo {:#x}; copying",
                    p.p_vaddr,
                    p.p_offset,
                    g.size()
                );
                mm.mmap(
                    map_start,
                    map_len,
                    prot,
                    private | MapFlags::ANONYMOUS,
                    Backing::Anon,
                )?;
                let mut buf = vec![0u8; COPY_CHUNK];
                let mut done = 0u64;
                while done < p.p_filesz {
                    let want = (p.p_filesz - done).min(COPY_CHUNK as u64) as usize;
                    let got = read_full(src, p.p_offset + done, &mut buf[..want])?;
                    if got == 0 {
                        break;
                    }
                    mm.write_bytes_force(addr + done, &buf[..got])?;
                    done += got as u64;
                }
            }
        }
        zero_start = addr + p.p_filesz;
        zero_end = addr + p.p_memsz;
        if p.p_memsz > p.p_filesz && prot.contains(Prot::WRITE) {
            // padzero(): "Zero the end of the last mapped page but ignore any errors if the
            // segment isn't writable." We do not write at all then (write_bytes_force would
            // succeed where Linux's clear_user fails).
            let in_page = g.offset_in_page(zero_start);
            if in_page != 0 {
                let zeros = vec![0u8; (g.size() - in_page) as usize];
                mm.write_bytes_force(zero_start, &zeros)
                    .map_err(|_| Errno::EFAULT)?;
            }
        }
    } else {
        zero_start = map_start;
        zero_end = map_start + page_off + p.p_memsz;
    }
    if p.p_memsz > p.p_filesz {
        // "Map the last of the segment. If the header is requesting these pages to be
        // executable, honour that (ppc32 needs this)."
        let zs = g.align_up(zero_start).ok_or(Errno::ENOMEM)?;
        let ze = g.align_up(zero_end).ok_or(Errno::ENOMEM)?;
        if ze > zs {
            let mut bss_prot = Prot::READ | Prot::WRITE;
            if prot.contains(Prot::EXEC) {
                bss_prot |= Prot::EXEC;
            }
            mm.mmap(
                zs,
                ze - zs,
                bss_prot,
                MapFlags::PRIVATE | MapFlags::ANONYMOUS | next_flags,
                Backing::Anon,
            )?;
        }
    }
    Ok(())
}

/// Linux `ELF_ET_DYN_BASE`: where PIE programs go, 2/3 of the user address space (x86_64 uses
/// `DEFAULT_MAP_WINDOW / 3 * 2`, arm64 `2 * DEFAULT_MAP_WINDOW_64 / 3`), page-aligned. No
/// randomisation.
pub fn elf_et_dyn_base(task_size: u64, g: Granule) -> u64 {
    g.align_down(task_size / 3 * 2)
}

/// Loads the program in `exe` (and its PT_INTERP interpreter, opened through `open_interp`) into
/// the empty address space `mm`, maps and fills the initial stack, and returns where the thread
/// starts. See the module documentation for the error contract.
pub fn load_elf(
    mm: &mut Mm,
    exe: &dyn ExecSource,
    open_interp: &mut OpenInterp<'_>,
    p: &ExecParams<'_>,
) -> Result<LoadedImage, Errno> {
    let g = mm.granule();
    let layout = mm.layout();
    let task_size = layout.task_size;

    let elf = read_elf(exe, p.machine).map_err(|e| match e {
        BadHeader::Magic | BadHeader::Format => Errno::ENOEXEC,
        BadHeader::Io(e) => e,
    })?;

    // The first PT_INTERP names the interpreter.
    let mut interp: Option<(Box<dyn ExecSource>, Elf)> = None;
    if let Some(ph) = elf.phdrs.iter().find(|ph| ph.p_type == PT_INTERP) {
        if ph.p_filesz > PATH_MAX || ph.p_filesz < 2 {
            return Err(Errno::ENOEXEC);
        }
        let mut path = vec![0u8; ph.p_filesz as usize];
        read_exact(exe, ph.p_offset, &mut path)?;
        // "make sure path is NULL terminated"
        if path.last() != Some(&0) {
            return Err(Errno::ENOEXEC);
        }
        let len = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        if len == 0 {
            return Err(Errno::ENOEXEC);
        }
        let src = open_interp(&path[..len])?;
        // "Some simple consistency checks for the interpreter": not ELF or not our machine is
        // ELIBBAD; load_elf_interp() refuses types other than ET_EXEC/ET_DYN (folded in here).
        let ielf = read_elf(src.as_ref(), p.machine).map_err(|e| match e {
            BadHeader::Magic | BadHeader::Format => Errno::ELIBBAD,
            BadHeader::Io(e) => e,
        })?;
        interp = Some((src, ielf));
    }

    // PT_GNU_STACK decides whether the stack is executable (EXSTACK_ENABLE_X); without it a
    // 64-bit program gets a non-executable stack.
    let executable_stack = elf
        .phdrs
        .iter()
        .find(|ph| ph.p_type == PT_GNU_STACK)
        .is_some_and(|ph| ph.p_flags & PF_X != 0);

    let (lo, hi) = check_loads(&elf, task_size, g, Errno::EINVAL)?;
    let ispan = match &interp {
        Some((_, ielf)) => Some(check_loads(ielf, task_size, g, Errno::ENOMEM)?),
        None => None,
    };

    // The stack layout depends only on the strings and the number of auxv entries, so a dry run
    // with placeholder values finds E2BIG and the stack size before anything is mapped.
    let limits = ArgLimits::linux(layout.stack_limit, g.size());
    let platform = if p.platform.is_empty() {
        None
    } else {
        Some(p.platform)
    };
    let auxv_for = |phdr: u64, base: u64, entry: u64, vdso: Option<u64>| {
        let mut v = Vec::with_capacity(24);
        // ARCH_DLINFO comes first (x86_64 and arm64: AT_SYSINFO_EHDR, AT_MINSIGSTKSZ).
        if let Some(a) = vdso {
            v.push((AT_SYSINFO_EHDR, a));
        }
        if let Some(a) = p.minsigstksz {
            v.push((AT_MINSIGSTKSZ, a));
        }
        v.extend_from_slice(&[
            (AT_HWCAP, p.hwcap),
            (AT_PAGESZ, g.size()),
            (AT_CLKTCK, p.clktck),
            (AT_PHDR, phdr),
            (AT_PHENT, u64::from(PHDR_SIZE)),
            (AT_PHNUM, u64::from(elf.hdr.e_phnum)),
            (AT_BASE, base),
            (AT_FLAGS, 0),
            (AT_ENTRY, entry),
            (AT_UID, u64::from(p.uid)),
            (AT_EUID, u64::from(p.euid)),
            (AT_GID, u64::from(p.gid)),
            (AT_EGID, u64::from(p.egid)),
            (AT_SECURE, u64::from(p.secure)),
            // AT_RANDOM goes here (the stack builder inserts it after AT_SECURE).
            (AT_HWCAP2, p.hwcap2),
            // AT_EXECFN, AT_PLATFORM are appended by the stack builder.
        ]);
        v
    };
    let stack_params = |auxv| StackParams {
        argv: p.argv,
        envp: p.envp,
        execfn: p.execfn,
        platform,
        random: p.random,
        auxv,
    };
    let dry = build_stack_with(
        layout.stack_top,
        &stack_params(auxv_for(0, 0, 0, p.vdso.map(|_| 0))),
        &limits,
    )?;

    // ---- Point of no return: from here on the address space is modified. ----

    // setup_arg_pages(): the stack VMA covers the arguments plus 128 KiB, capped by the rlimit.
    let need = g.align_up(dry.bytes.len() as u64).ok_or(Errno::E2BIG)?;
    let stack_size = g
        .align_up((dry.bytes.len() as u64 + STACK_EXPAND).min(layout.stack_limit))
        .ok_or(Errno::E2BIG)?
        .max(need);
    let stack_top = g.align_down(layout.stack_top);
    if stack_top != layout.stack_top {
        return Err(Errno::EINVAL);
    }
    let stack_start = stack_top.checked_sub(stack_size).ok_or(Errno::ENOMEM)?;
    let mut stack_prot = Prot::READ | Prot::WRITE;
    if executable_stack {
        stack_prot |= Prot::EXEC;
    }
    mm.mmap(
        stack_start,
        stack_size,
        stack_prot,
        MapFlags::PRIVATE | MapFlags::ANONYMOUS | MapFlags::FIXED | MapFlags::GROWSDOWN,
        Backing::Anon,
    )?;
    mm.set_name(stack_start, stack_size, Some("[stack]".to_string()))?;

    // Load bias (load_elf_binary, first PT_LOAD).
    let first_vaddr = elf.loads().next().map(|ph| ph.p_vaddr).unwrap_or(0);
    let load_bias = if elf.hdr.e_type == ET_DYN {
        // PIE (with interpreter) at ELF_ET_DYN_BASE, aligned to the largest p_align. Linux puts
        // a loader without PT_INTERP (static-pie, ld.so run directly) in the mmap region; we put
        // it at ELF_ET_DYN_BASE too, which keeps it away from what it will mmap itself.
        let mut base = elf_et_dyn_base(task_size, g);
        let align = maximum_alignment(&elf, g);
        if align < task_size / 4 {
            base &= !(align - 1);
        }
        // "we must lower it by the first vaddr so that the remaining calculations based on the
        // ELF vaddrs will be correctly offset. The result is then page aligned."
        g.align_down(base.wrapping_sub(first_vaddr))
    } else {
        0
    };
    let exe_file = exe.vm_file();
    let mut seg_flags = if elf.hdr.e_type == ET_DYN {
        // total_mapping_size(): reserve the whole span so the segments land together and
        // nothing else can take the holes between them.
        let start = load_bias.wrapping_add(lo);
        let end = g
            .align_up(load_bias.wrapping_add(hi))
            .ok_or(Errno::EINVAL)?;
        if start >= end || end > task_size {
            return Err(Errno::EINVAL);
        }
        mm.mmap(
            start,
            end - start,
            Prot::empty(),
            MapFlags::PRIVATE | MapFlags::ANONYMOUS | MapFlags::FIXED_NOREPLACE,
            Backing::Anon,
        )?;
        MapFlags::FIXED
    } else {
        // ET_EXEC: the first mapping must not clobber anything (MAP_FIXED_NOREPLACE).
        MapFlags::FIXED_NOREPLACE
    };

    let mut phdr_addr = None;
    let (mut start_code, mut end_code, mut start_data, mut end_data) = (u64::MAX, 0u64, 0u64, 0u64);
    let mut elf_brk = 0u64;
    for ph in elf.loads() {
        elf_load(mm, exe, &exe_file, ph, load_bias, seg_flags)?;
        seg_flags = MapFlags::FIXED;
        // "Figure out which segment in the file contains the Program Header table, and map to
        // the associated memory address."
        if ph.p_offset <= elf.hdr.e_phoff && elf.hdr.e_phoff < ph.p_offset + ph.p_filesz {
            phdr_addr = Some(elf.hdr.e_phoff - ph.p_offset + ph.p_vaddr);
        }
        let k = ph.p_vaddr;
        if ph.p_flags & PF_X != 0 && k < start_code {
            start_code = k;
        }
        start_data = start_data.max(k);
        let k = ph.p_vaddr + ph.p_filesz;
        if ph.p_flags & PF_X != 0 {
            end_code = end_code.max(k);
        }
        end_data = end_data.max(k);
        elf_brk = elf_brk.max(ph.p_vaddr + ph.p_memsz);
    }
    if start_code == u64::MAX {
        start_code = 0;
    }
    // Linux computes AT_PHDR from the segment holding e_phoff; PT_PHDR is the fallback for files
    // whose headers are not loaded.
    let phdr_vaddr = phdr_addr
        .or_else(|| {
            elf.phdrs
                .iter()
                .find(|ph| ph.p_type == PT_PHDR)
                .map(|ph| ph.p_vaddr)
        })
        .unwrap_or(0);
    let phdr = load_bias.wrapping_add(phdr_vaddr);
    let exe_entry = load_bias.wrapping_add(elf.hdr.e_entry);
    let start_brk = g.align_up(load_bias + elf_brk).ok_or(Errno::EINVAL)?;

    // load_elf_interp(): the interpreter goes wherever mmap puts its whole span.
    let mut interp_base = None;
    let entry = match (&interp, ispan) {
        (Some((src, ielf)), Some((ilo, ihi))) => {
            let ifile = src.vm_file();
            let load_addr = if ielf.hdr.e_type == ET_DYN {
                let span = g.align_up(ihi).ok_or(Errno::ENOMEM)? - ilo;
                let at = mm.mmap(
                    0,
                    span,
                    Prot::empty(),
                    MapFlags::PRIVATE | MapFlags::ANONYMOUS,
                    Backing::Anon,
                )?;
                // "load_addr = map_addr - ELF_PAGESTART(vaddr)"
                at.wrapping_sub(ilo)
            } else {
                0
            };
            for ph in ielf.loads() {
                elf_load(mm, src.as_ref(), &ifile, ph, load_addr, MapFlags::FIXED)?;
            }
            interp_base = Some(load_addr);
            load_addr.wrapping_add(ielf.hdr.e_entry)
        }
        _ => exe_entry,
    };
    // BAD_ADDR(elf_entry) is EINVAL.
    if entry >= task_size {
        return Err(Errno::EINVAL);
    }

    // "mm->start_brk = mm->brk = ELF_PAGEALIGN(elf_brk)" (no brk randomisation).
    mm.set_brk_start(start_brk);

    // arch_setup_additional_pages(): the vDSO goes wherever mmap puts it (arm64's
    // get_unmapped_area; x86_64 picks a random spot near the stack), read and exec, named
    // "[vdso]". It is a private copy of the boot's image, so a guest that writes to it after an
    // mprotect changes only its own.
    let vdso = match p.vdso {
        Some(v) => {
            let len = g.align_up(v.bytes.len() as u64).ok_or(Errno::ENOMEM)?;
            let at = mm.mmap(
                0,
                len,
                Prot::READ | Prot::EXEC,
                MapFlags::PRIVATE | MapFlags::ANONYMOUS,
                Backing::Anon,
            )?;
            mm.write_bytes_force(at, &v.bytes)?;
            mm.set_name(at, len, Some("[vdso]".to_string()))?;
            mm.set_vdso(Some(um_mm::Vdso {
                base: at,
                sigreturn: v.sigreturn.map(|o| at + o),
            }));
            Some(at)
        }
        None => None,
    };

    // create_elf_tables().
    let img = build_stack_with(
        layout.stack_top,
        &stack_params(auxv_for(phdr, interp_base.unwrap_or(0), exe_entry, vdso)),
        &limits,
    )?;
    debug_assert_eq!(img.sp, dry.sp);
    mm.write_bytes(img.sp, &img.bytes)?;

    Ok(LoadedImage {
        entry,
        sp: img.sp,
        exe_entry,
        load_bias,
        interp_base,
        start_brk,
        phdr,
        start_code: load_bias.wrapping_add(start_code),
        end_code: load_bias.wrapping_add(end_code),
        start_data: load_bias.wrapping_add(start_data),
        end_data: load_bias.wrapping_add(end_data),
        stack_start,
        executable_stack,
        argv_start: img.argv_start,
        argv_end: img.argv_end,
        env_start: img.env_start,
        env_end: img.env_end,
        auxv: img.auxv,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use um_mm::HeapMemory;
    use um_mm::{FrameAllocator, Layout, PageCache};

    use super::*;
    use crate::exec_stack::parse::{aux, cstr_at, parse_with};

    /// A file held in memory: the tests' [`ExecSource`] and [`VmFile`].
    struct MemFile {
        id: u64,
        name: String,
        data: Vec<u8>,
    }

    static NEXT_ID: AtomicU64 = AtomicU64::new(1);

    impl VmFile for MemFile {
        fn id(&self) -> u64 {
            self.id
        }
        fn size(&self) -> u64 {
            self.data.len() as u64
        }
        fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
            let start = (offset as usize).min(self.data.len());
            let n = buf.len().min(self.data.len() - start);
            buf[..n].copy_from_slice(&self.data[start..start + n]);
            Ok(n)
        }
        fn write_page(&self, _offset: u64, _data: &[u8]) -> Result<(), Errno> {
            Err(Errno::EACCES)
        }
        fn name(&self) -> String {
            self.name.clone()
        }
    }

    struct Src(Arc<MemFile>);

    impl ExecSource for Src {
        fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
            self.0.read_page(off, buf)
        }
        fn vm_file(&self) -> Arc<dyn VmFile> {
            self.0.clone()
        }
    }

    fn src(name: &str, data: Vec<u8>) -> Src {
        Src(Arc::new(MemFile {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name: name.into(),
            data,
        }))
    }

    fn host(path: &[u8]) -> Result<Box<dyn ExecSource>, Errno> {
        let p = std::str::from_utf8(path).map_err(|_| Errno::ENOENT)?;
        let data = std::fs::read(p).map_err(|_| Errno::ENOENT)?;
        Ok(Box::new(src(p, data)))
    }

    fn no_interp(_: &[u8]) -> Result<Box<dyn ExecSource>, Errno> {
        panic!("no interpreter expected")
    }

    const STATIC_EXEC: &[u8] = include_bytes!("../testdata/elf/static-exec");
    const STATIC_PIE: &[u8] = include_bytes!("../testdata/elf/static-pie");
    const STATIC_PIE_16K: &[u8] = include_bytes!("../testdata/elf/static-pie-16k");

    const TASK_SIZE: u64 = 0x7fc0_0000_0000;

    fn new_mm(g: Granule) -> Mm {
        let phys = Arc::new(HeapMemory::new(64 << 20));
        let frames = Arc::new(FrameAllocator::new(phys, g));
        let cache = Arc::new(PageCache::new(frames.clone()));
        Mm::new(
            frames,
            cache,
            Layout {
                task_size: TASK_SIZE,
                mmap_base: 0x7fb0_0000_0000,
                stack_top: 0x7fbf_ffff_c000,
                stack_limit: 8 << 20,
                min_addr: 0x10000,
            },
        )
    }

    fn argv() -> Vec<Vec<u8>> {
        vec![b"prog".to_vec(), b"--flag".to_vec(), b"x".to_vec()]
    }
    fn envp() -> Vec<Vec<u8>> {
        vec![b"HOME=/".to_vec(), b"PATH=/bin".to_vec()]
    }

    fn params<'a>(argv: &'a [Vec<u8>], envp: &'a [Vec<u8>], machine: u16) -> ExecParams<'a> {
        ExecParams {
            argv,
            envp,
            execfn: b"/bin/prog",
            machine,
            platform: b"x86_64",
            hwcap: 0x178bfbff,
            hwcap2: 2,
            uid: 1000,
            euid: 1001,
            gid: 100,
            egid: 101,
            secure: false,
            random: core::array::from_fn(|i| 0xc0 + i as u8),
            clktck: 100,
            vdso: Some(um_kernel::arch::vdso::image()),
            minsigstksz: Some(2048),
        }
    }

    fn read(mm: &mut Mm, addr: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        mm.read_bytes(addr, &mut b)
            .unwrap_or_else(|e| panic!("read {addr:#x}+{len}: {e:?}"));
        b
    }

    fn parse_file(data: &[u8], machine: u16) -> Elf {
        let s = src("x", data.to_vec());
        read_elf(&s, machine).unwrap_or_else(|_| panic!("fixture does not parse"))
    }

    /// Checks the segments of `data` as loaded at `bias`: file bytes where the file has them,
    /// zeroes for the rest of `p_memsz` (including the tail of the last file page when writable).
    fn check_segments(mm: &mut Mm, data: &[u8], machine: u16, bias: u64) {
        let elf = parse_file(data, machine);
        let vmas = mm.vmas();
        for ph in elf.loads() {
            let addr = bias + ph.p_vaddr;
            if ph.p_filesz > 0 {
                let got = read(mm, addr, ph.p_filesz as usize);
                let want = &data[ph.p_offset as usize..(ph.p_offset + ph.p_filesz) as usize];
                assert_eq!(got, want, "segment at {:#x}", ph.p_vaddr);
                let v = vmas
                    .iter()
                    .find(|v| v.start <= addr && addr < v.end)
                    .expect("no vma");
                assert_eq!(v.prot.contains(Prot::EXEC), ph.p_flags & PF_X != 0, "{v:?}");
                assert_eq!(
                    v.prot.contains(Prot::WRITE),
                    ph.p_flags & PF_W != 0,
                    "{v:?}"
                );
            }
            if ph.p_memsz > ph.p_filesz {
                let bss = read(mm, addr + ph.p_filesz, (ph.p_memsz - ph.p_filesz) as usize);
                assert!(
                    bss.iter().all(|&b| b == 0),
                    "bss of {:#x} not zero",
                    ph.p_vaddr
                );
                if ph.p_flags & PF_W != 0 {
                    let g = mm.granule();
                    let end = g.align_up(addr + ph.p_filesz).unwrap();
                    let tail = read(mm, addr + ph.p_filesz, (end - addr - ph.p_filesz) as usize);
                    assert!(tail.iter().all(|&b| b == 0), "padzero");
                }
            }
        }
    }

    /// Checks the stack and auxv of a loaded image against the file.
    fn check_image(mm: &mut Mm, img: &LoadedImage, data: &[u8], machine: u16, interp: bool) {
        let g = mm.granule();
        let elf = parse_file(data, machine);
        assert_eq!(img.sp % 16, 0);
        assert!(g.is_aligned(img.start_brk));
        // The thread starts in an executable vma.
        let vmas = mm.vmas();
        let ev = vmas
            .iter()
            .find(|v| v.start <= img.entry && img.entry < v.end)
            .expect("entry unmapped");
        assert!(ev.prot.contains(Prot::EXEC), "entry vma {ev:?}");
        // The program's own entry bytes are the file's.
        let ph = elf
            .loads()
            .find(|ph| ph.p_vaddr <= elf.hdr.e_entry && elf.hdr.e_entry < ph.p_vaddr + ph.p_filesz)
            .unwrap();
        let off = (elf.hdr.e_entry - ph.p_vaddr + ph.p_offset) as usize;
        let n = (ph.p_offset + ph.p_filesz) as usize - off;
        let n = n.min(16);
        assert_eq!(img.exe_entry, img.load_bias + elf.hdr.e_entry);
        assert_eq!(read(mm, img.exe_entry, n), &data[off..off + n]);
        // The stack as _start sees it.
        let stack = vmas
            .iter()
            .find(|v| v.start <= img.sp && img.sp < v.end)
            .expect("stack");
        assert!(stack.flags.contains(MapFlags::GROWSDOWN));
        assert_eq!(stack.end, mm.layout().stack_top);
        assert_eq!(stack.start, img.stack_start);
        assert_eq!(stack.name.as_deref(), Some("[stack]"));
        let mut rd = |a: u64, b: &mut [u8]| mm.read_bytes(a, b).unwrap();
        let parsed = parse_with(img.sp, &mut rd);
        assert_eq!(parsed.argv, argv());
        assert_eq!(parsed.envp, envp());
        assert_eq!(parsed.auxv, img.auxv);
        let a = |k| aux(&parsed.auxv, k).unwrap_or_else(|| panic!("no auxv {k}"));
        let keys: Vec<u64> = parsed.auxv.iter().map(|e| e.0).collect();
        assert_eq!(
            keys,
            vec![
                AT_SYSINFO_EHDR,
                AT_MINSIGSTKSZ,
                AT_HWCAP,
                AT_PAGESZ,
                AT_CLKTCK,
                AT_PHDR,
                AT_PHENT,
                AT_PHNUM,
                AT_BASE,
                AT_FLAGS,
                AT_ENTRY,
                AT_UID,
                AT_EUID,
                AT_GID,
                AT_EGID,
                AT_SECURE,
                AT_RANDOM,
                AT_HWCAP2,
                AT_EXECFN,
                AT_PLATFORM,
                AT_NULL
            ]
        );
        assert_eq!(a(AT_PAGESZ), g.size());
        // The vDSO: its own read+exec mapping holding the image, recorded in the mm.
        let vd = a(AT_SYSINFO_EHDR);
        let vv = vmas.iter().find(|v| v.start == vd).expect("vdso vma");
        assert_eq!(vv.name.as_deref(), Some("[vdso]"));
        assert_eq!(vv.prot, Prot::READ | Prot::EXEC);
        let want = &um_kernel::arch::vdso::image().bytes;
        let mut got_vdso = vec![0u8; want.len()];
        rd(vd, &mut got_vdso);
        assert_eq!(&got_vdso, want);
        assert_eq!(a(AT_ENTRY), img.exe_entry);
        assert_eq!(a(AT_PHENT), 56);
        assert_eq!(a(AT_PHNUM), u64::from(elf.hdr.e_phnum));
        assert_eq!(
            (a(AT_UID), a(AT_EUID), a(AT_GID), a(AT_EGID)),
            (1000, 1001, 100, 101)
        );
        assert_eq!(a(AT_BASE) != 0, interp);
        assert_eq!(a(AT_BASE), img.interp_base.unwrap_or(0));
        assert_eq!(a(AT_PHDR), img.phdr);
        let phsize = usize::from(elf.hdr.e_phnum) * 56;
        let phoff = elf.hdr.e_phoff as usize;
        let mut got = vec![0u8; phsize];
        rd(a(AT_PHDR), &mut got);
        assert_eq!(
            got,
            &data[phoff..phoff + phsize],
            "AT_PHDR does not point at the phdrs"
        );
        let mut r = [0u8; 16];
        rd(a(AT_RANDOM), &mut r);
        assert_eq!(r, params(&[], &[], 0).random);
        assert_eq!(cstr_at(&mut rd, a(AT_EXECFN)), b"/bin/prog");
        assert_eq!(cstr_at(&mut rd, a(AT_PLATFORM)), b"x86_64");
        assert_eq!(cstr_at(&mut rd, img.argv_start), b"prog");
        assert_eq!(cstr_at(&mut rd, img.env_start), b"HOME=/");
        assert_eq!(mm.vdso().map(|v| v.base), Some(vd));
    }

    #[test]
    fn static_exec() {
        let mut mm = new_mm(Granule::K4);
        let exe = src("static-exec", STATIC_EXEC.to_vec());
        let (a, e) = (argv(), envp());
        let img = load_elf(&mut mm, &exe, &mut no_interp, &params(&a, &e, EM_X86_64)).unwrap();
        assert_eq!(img.load_bias, 0);
        assert_eq!(img.interp_base, None);
        assert_eq!(img.entry, 0x401000);
        assert_eq!(img.phdr, 0x400040);
        assert_eq!(img.start_brk, 0x406000); // 0x402000 + 0x30a0, page-aligned
        assert!(!img.executable_stack);
        check_segments(&mut mm, STATIC_EXEC, EM_X86_64, 0);
        check_image(&mut mm, &img, STATIC_EXEC, EM_X86_64, false);
    }

    #[test]
    fn static_pie() {
        let mut mm = new_mm(Granule::K4);
        let exe = src("static-pie", STATIC_PIE.to_vec());
        let (a, e) = (argv(), envp());
        let img = load_elf(&mut mm, &exe, &mut no_interp, &params(&a, &e, EM_X86_64)).unwrap();
        assert_eq!(img.load_bias, elf_et_dyn_base(TASK_SIZE, Granule::K4));
        assert_eq!(img.entry, img.load_bias + 0x1000);
        assert_eq!(img.interp_base, None);
        check_segments(&mut mm, STATIC_PIE, EM_X86_64, img.load_bias);
        check_image(&mut mm, &img, STATIC_PIE, EM_X86_64, false);
    }

    #[test]
    fn static_pie_16k_granule() {
        // (The 4K-linked fixtures have all their segments in one 16K page, so the last mapping
        // wins and text is not executable, as on Linux; the dynamic PIE test covers the copy
        // fallback for 4K-linked files.)
        let data = STATIC_PIE_16K;
        let mut mm = new_mm(Granule::K16);
        let exe = src("pie16k", data.to_vec());
        let (a, e) = (argv(), envp());
        let img = load_elf(&mut mm, &exe, &mut no_interp, &params(&a, &e, EM_X86_64)).unwrap();
        assert_eq!(img.load_bias % 0x4000, 0);
        assert_eq!(img.start_brk % 0x4000, 0);
        check_image(&mut mm, &img, data, EM_X86_64, false);
        check_segments(&mut mm, data, EM_X86_64, img.load_bias);
        // Congruent segments are mapped from the page cache (shared frames), not copied, and
        // every mapping is whole 16K pages.
        let elf = parse_file(data, EM_X86_64);
        let vmas = mm.vmas();
        for ph in elf.loads().filter(|ph| ph.p_filesz > 0) {
            let a = img.load_bias + ph.p_vaddr;
            let v = vmas.iter().find(|v| v.start <= a && a < v.end).unwrap();
            assert!(matches!(v.backing, Backing::File { .. }), "{v:?}");
        }
        assert!(
            vmas.iter()
                .all(|v| v.start % 0x4000 == 0 && v.end % 0x4000 == 0)
        );
        // The same file at 4K pages: AT_PAGESZ says which.
        let mut mm4 = new_mm(Granule::K4);
        let img4 = load_elf(&mut mm4, &exe, &mut no_interp, &params(&a, &e, EM_X86_64)).unwrap();
        assert_eq!(aux(&img4.auxv, AT_PAGESZ), Some(4096));
        assert_eq!(aux(&img.auxv, AT_PAGESZ), Some(16384));
        check_segments(&mut mm4, data, EM_X86_64, img4.load_bias);
    }

    /// The host's `/bin/true`: a dynamic PIE with PT_INTERP, loaded with the host's interpreter.
    #[test]
    fn host_dynamic_pie() {
        let machine = match std::env::consts::ARCH {
            "x86_64" => EM_X86_64,
            "aarch64" => EM_AARCH64,
            _ => return,
        };
        let Ok(data) = std::fs::read("/bin/true") else {
            return;
        };
        let elf = read_elf(&src("t", data.clone()), machine)
            .map_err(|_| ())
            .expect("/bin/true is an ELF file of the host's machine");
        let Some(ip) = elf.phdrs.iter().find(|p| p.p_type == PT_INTERP) else {
            return; // a static /bin/true: nothing to test here
        };
        let ipath = data[ip.p_offset as usize..(ip.p_offset + ip.p_filesz) as usize - 1].to_vec();
        let idata = std::fs::read(std::str::from_utf8(&ipath).unwrap()).unwrap();
        for g in [Granule::K4, Granule::K16] {
            let mut mm = new_mm(g);
            let exe = src("/bin/true", data.clone());
            let (a, e) = (argv(), envp());
            let mut opened = Vec::new();
            let mut open = |p: &[u8]| {
                opened.push(p.to_vec());
                host(p)
            };
            let mut prm = params(&a, &e, machine);
            prm.platform = b"x86_64";
            let img = load_elf(&mut mm, &exe, &mut open, &prm).unwrap();
            assert_eq!(opened, vec![ipath.clone()]);
            let base = img.interp_base.expect("interpreter base");
            assert!(base != 0 && g.is_aligned(base));
            assert!(
                base < mm.layout().mmap_base,
                "interpreter is in the mmap area"
            );
            let ielf = parse_file(&idata, machine);
            assert_eq!(img.entry, base + ielf.hdr.e_entry);
            assert_eq!(img.load_bias, g.align_down(elf_et_dyn_base(TASK_SIZE, g)));
            // The interpreter's entry bytes.
            let ph = ielf
                .loads()
                .find(|ph| {
                    ph.p_vaddr <= ielf.hdr.e_entry && ielf.hdr.e_entry < ph.p_vaddr + ph.p_filesz
                })
                .unwrap();
            let off = (ielf.hdr.e_entry - ph.p_vaddr + ph.p_offset) as usize;
            assert_eq!(read(&mut mm, img.entry, 16), &idata[off..off + 16]);
            check_image(&mut mm, &img, &data, machine, true);
            if g == Granule::K4 {
                check_segments(&mut mm, &data, machine, img.load_bias);
                check_segments(&mut mm, &idata, machine, base);
            } else {
                // 4K-linked segments share 16K pages, so only the last (writable) segment of
                // each file is fully checkable; its file part was copied (not congruent).
                let last = elf.loads().last().unwrap();
                let off = last.p_offset as usize;
                assert_eq!(
                    read(
                        &mut mm,
                        img.load_bias + last.p_vaddr,
                        last.p_filesz as usize
                    ),
                    &data[off..off + last.p_filesz as usize]
                );
            }
        }
    }

    fn load_err(data: Vec<u8>, machine: u16) -> Errno {
        let mut mm = new_mm(Granule::K4);
        let exe = src("bad", data);
        let (a, e) = (argv(), envp());
        let before = mm.vmas().len();
        let err = load_elf(&mut mm, &exe, &mut host, &params(&a, &e, machine)).unwrap_err();
        assert_eq!(
            mm.vmas().len(),
            before,
            "a refused exec must not touch the address space"
        );
        err
    }

    #[test]
    fn bad_files() {
        // Truncated header.
        assert_eq!(
            load_err(STATIC_EXEC[..20].to_vec(), EM_X86_64),
            Errno::ENOEXEC
        );
        assert_eq!(
            load_err(STATIC_EXEC[..63].to_vec(), EM_X86_64),
            Errno::ENOEXEC
        );
        assert_eq!(load_err(Vec::new(), EM_X86_64), Errno::ENOEXEC);
        // Wrong machine.
        assert_eq!(load_err(STATIC_EXEC.to_vec(), EM_AARCH64), Errno::ENOEXEC);
        // A text file (a script without binfmt_script).
        assert_eq!(
            load_err(b"#!/bin/sh\necho hi\n".to_vec(), EM_X86_64),
            Errno::ENOEXEC
        );
        // 32-bit class, big-endian data.
        let mut d = STATIC_EXEC.to_vec();
        d[EI_CLASS] = 1;
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        let mut d = STATIC_EXEC.to_vec();
        d[EI_DATA] = 2;
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        // ET_REL.
        let mut d = STATIC_EXEC.to_vec();
        d[16] = 1;
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        // e_phentsize wrong, e_phnum 0.
        let mut d = STATIC_EXEC.to_vec();
        d[54] = 32;
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        let mut d = STATIC_EXEC.to_vec();
        d[56] = 0;
        d[57] = 0;
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        // Program headers cut off: elf_read() says EIO.
        assert_eq!(load_err(STATIC_EXEC[..100].to_vec(), EM_X86_64), Errno::EIO);
    }

    /// Rewrites the first PT_LOAD-less program header (GNU_STACK) of the static exec.
    fn with_phdr(f: impl Fn(&mut [u8], &mut Vec<u8>)) -> Vec<u8> {
        let mut d = STATIC_EXEC.to_vec();
        let elf = parse_file(STATIC_EXEC, EM_X86_64);
        let i = elf
            .phdrs
            .iter()
            .position(|p| p.p_type == PT_GNU_STACK)
            .unwrap();
        let off = elf.hdr.e_phoff as usize + i * 56;
        let mut tail = Vec::new();
        let mut ph = d[off..off + 56].to_vec();
        f(&mut ph, &mut tail);
        d[off..off + 56].copy_from_slice(&ph);
        d.extend_from_slice(&tail);
        d
    }

    fn set_interp(ph: &mut [u8], tail: &mut Vec<u8>, path: &[u8], at: u64) {
        ph[0..4].copy_from_slice(&PT_INTERP.to_le_bytes());
        ph[8..16].copy_from_slice(&at.to_le_bytes());
        ph[32..40].copy_from_slice(&(path.len() as u64).to_le_bytes());
        tail.extend_from_slice(path);
    }

    #[test]
    fn bad_interpreters() {
        let at = STATIC_EXEC.len() as u64;
        // Not NUL-terminated, empty, too short.
        let d = with_phdr(|ph, t| set_interp(ph, t, b"/lib/ld.so", at));
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        let d = with_phdr(|ph, t| set_interp(ph, t, b"\0\0", at));
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        let d = with_phdr(|ph, t| set_interp(ph, t, b"\0", at));
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        // Missing: open_interp's error.
        let d = with_phdr(|ph, t| set_interp(ph, t, b"/nonexistent/ld.so\0", at));
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOENT);
        // Not ELF, or another machine: ELIBBAD.
        let dir = std::env::temp_dir().join(format!("binfmt-elf-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("text");
        std::fs::write(&text, b"hello\n").unwrap();
        let mut arm = STATIC_EXEC.to_vec();
        arm[18] = EM_AARCH64 as u8;
        let armp = dir.join("arm");
        std::fs::write(&armp, &arm).unwrap();
        for p in [&text, &armp] {
            let mut path = p.to_str().unwrap().as_bytes().to_vec();
            path.push(0);
            let d = with_phdr(|ph, t| set_interp(ph, t, &path, at));
            assert_eq!(load_err(d, EM_X86_64), Errno::ELIBBAD, "{p:?}");
        }
        // A good interpreter (here the static-pie) is loaded in the mmap area.
        let good = dir.join("good");
        std::fs::write(&good, STATIC_PIE).unwrap();
        let mut path = good.to_str().unwrap().as_bytes().to_vec();
        path.push(0);
        let d = with_phdr(|ph, t| set_interp(ph, t, &path, at));
        let mut mm = new_mm(Granule::K4);
        let exe = src("with-interp", d);
        let (a, e) = (argv(), envp());
        let img = load_elf(&mut mm, &exe, &mut host, &params(&a, &e, EM_X86_64)).unwrap();
        let base = img.interp_base.unwrap();
        assert_eq!(img.entry, base + 0x1000);
        assert_eq!(read(&mut mm, img.entry, 14), &STATIC_PIE[0x1000..0x100e]);
        check_segments(&mut mm, STATIC_PIE, EM_X86_64, base);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn executable_stack_and_e2big() {
        // PT_GNU_STACK with PF_X.
        let d = with_phdr(|ph, _| ph[4..8].copy_from_slice(&(PF_R | PF_W | PF_X).to_le_bytes()));
        let mut mm = new_mm(Granule::K4);
        let exe = src("xstack", d);
        let (a, e) = (argv(), envp());
        let img = load_elf(&mut mm, &exe, &mut no_interp, &params(&a, &e, EM_X86_64)).unwrap();
        assert!(img.executable_stack);
        let v = mm
            .vmas()
            .into_iter()
            .find(|v| v.start <= img.sp && img.sp < v.end)
            .unwrap();
        assert!(v.prot.contains(Prot::EXEC));
        // Arguments over a quarter of the 8 MiB stack rlimit.
        let big: Vec<Vec<u8>> = (0..20).map(|_| vec![b'a'; 120_000]).collect();
        let mut mm = new_mm(Granule::K4);
        let exe = src("big", STATIC_EXEC.to_vec());
        let err =
            load_elf(&mut mm, &exe, &mut no_interp, &params(&big, &e, EM_X86_64)).unwrap_err();
        assert_eq!(err, Errno::E2BIG);
        assert!(mm.vmas().is_empty());
    }

    #[test]
    fn segments_out_of_order_or_too_big() {
        let elf = parse_file(STATIC_EXEC, EM_X86_64);
        let loads: Vec<usize> = elf
            .phdrs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.p_type == PT_LOAD)
            .map(|(i, _)| i)
            .collect();
        let phoff = elf.hdr.e_phoff as usize;
        // Swap two PT_LOADs: descending vaddr.
        let mut d = STATIC_EXEC.to_vec();
        let (a, b) = (phoff + loads[1] * 56, phoff + loads[2] * 56);
        let pa = d[a..a + 56].to_vec();
        let pb = d[b..b + 56].to_vec();
        d[a..a + 56].copy_from_slice(&pb);
        d[b..b + 56].copy_from_slice(&pa);
        assert_eq!(load_err(d, EM_X86_64), Errno::ENOEXEC);
        // p_memsz past TASK_SIZE.
        let mut d = STATIC_EXEC.to_vec();
        let o = phoff + loads[2] * 56 + 40;
        d[o..o + 8].copy_from_slice(&TASK_SIZE.to_le_bytes());
        assert_eq!(load_err(d, EM_X86_64), Errno::EINVAL);
        // p_filesz > p_memsz.
        let mut d = STATIC_EXEC.to_vec();
        let o = phoff + loads[1] * 56 + 32;
        d[o..o + 8].copy_from_slice(&0x10_0000u64.to_le_bytes());
        assert_eq!(load_err(d, EM_X86_64), Errno::EINVAL);
    }
}
