//! Core dumps (Linux fs/coredump.c `do_coredump`, fs/binfmt_elf.c `elf_core_dump`).
//!
//! A process killed by a signal whose default action is "core" gets an ELF core file named by
//! `/proc/sys/kernel/core_pattern` ("core", in its working directory) when its `RLIMIT_CORE`
//! allows at least a page: an `ET_CORE` header, a `PT_NOTE` segment with `NT_PRSTATUS` (the
//! signal and the dying thread's registers in `user_regs_struct` order), `NT_PRPSINFO` and
//! `NT_AUXV` (the saved auxiliary vector, whose AT_ENTRY gives debuggers a PIE's load bias), and
//! one `PT_LOAD` per vma. What is dumped follows the default `coredump_filter` (0x33): private
//! and shared anonymous memory whole, private file mappings whole once written to (a page of
//! them is anonymous), the first page of other file mappings that starts with an ELF header,
//! nothing of the rest. Pages never touched are holes in the file, as Linux leaves them
//! (`dump_skip`); the bytes written count against the limit, and a dump that would pass it is
//! abandoned (no core bit), as `dump_emit` fails. The wait status then carries the core bit
//! (`WCOREDUMP`) and SIGCHLD `CLD_DUMPED` ([`um_kernel::task::ExitStatus::Dumped`]).
//!
//! [`layout`] is pure (unit tested with goblin); [`dump`] reads the address space and writes the
//! file through the VFS as the dying process. Installed by [`install`] from the syscall
//! registration; the kernel calls it through `um_kernel::signal::dump_core`.

use std::sync::Arc;
use um_kernel::arch::{self, Regs};
use um_kernel::kernel::Kernel;
use um_kernel::task::{Task, lock};
use um_kernel::vfs::{Owner, SetAttr, mode};
use um_kernel::wait::IoCtx;
use um_mm::{Backing, Prot, PteFlags};
use um_uapi::abi::signal::Siginfo;
use um_uapi::{Errno, SysResult};

use crate::namei::{MAY_EXEC, MAY_WRITE, permission};

/// `RLIMIT_CORE`.
const RLIMIT_CORE: usize = 4;
/// `ET_CORE`.
const ET_CORE: u16 = 4;
/// `PT_LOAD`, `PT_NOTE`.
const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// `NT_PRSTATUS`, `NT_PRPSINFO`, `NT_AUXV` (include/uapi/linux/elf.h).
const NT_PRSTATUS: u32 = 1;
const NT_PRPSINFO: u32 = 3;
const NT_AUXV: u32 = 6;
/// Sizes of the ELF64 header and program header.
const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;

/// Connects the writer to the kernel's signal code (once, at boot).
pub fn install() {
    um_kernel::signal::set_core_dumper(dump);
}

/// `/proc/sys/kernel/core_pattern`.
fn pattern() -> &'static std::sync::Mutex<String> {
    static P: std::sync::OnceLock<std::sync::Mutex<String>> = std::sync::OnceLock::new();
    P.get_or_init(|| std::sync::Mutex::new("core".to_string()))
}

/// The current core pattern.
pub fn core_pattern() -> String {
    lock(pattern()).clone()
}

/// Sets the core pattern (a sysctl write: the text up to the first newline, at most 127
/// bytes, `CORENAME_MAX_SIZE`).
pub fn set_core_pattern(data: &[u8]) -> SysResult<()> {
    let line = data.split(|&b| b == b'\n').next().unwrap_or(&[]);
    if line.len() > 127 {
        return Err(Errno::EINVAL);
    }
    *lock(pattern()) = String::from_utf8_lossy(line).into_owned();
    Ok(())
}

/// What `%` specifiers expand to (fs/coredump.c `format_corename`).
pub struct NameInfo<'a> {
    pub pid: u32,
    pub tid: u32,
    pub uid: u32,
    pub gid: u32,
    pub signo: i32,
    pub time: u64,
    pub host: &'a str,
    pub comm: &'a [u8],
    pub limit: u64,
}

/// Expands a core pattern: `%%`, `%p`/`%P` (pid), `%i`/`%I` (tid), `%u`, `%g`, `%s`
/// (signal), `%t` (time), `%h` (host name), `%e` (comm), `%c` (core limit); an unknown
/// specifier expands to nothing, as Linux drops it. A `/` in `%e` or `%h` becomes `!`.
pub fn expand_pattern(pat: &str, n: &NameInfo<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut it = pat.bytes();
    while let Some(b) = it.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        let Some(spec) = it.next() else { break };
        let s: Vec<u8> = match spec {
            b'%' => b"%".to_vec(),
            b'p' | b'P' => n.pid.to_string().into_bytes(),
            b'i' | b'I' => n.tid.to_string().into_bytes(),
            b'u' => n.uid.to_string().into_bytes(),
            b'g' => n.gid.to_string().into_bytes(),
            b's' => n.signo.to_string().into_bytes(),
            b't' => n.time.to_string().into_bytes(),
            b'c' => n.limit.to_string().into_bytes(),
            b'h' => n.host.as_bytes().to_vec(),
            b'e' => n.comm.to_vec(),
            _ => Vec::new(),
        };
        let slashless = matches!(spec, b'h' | b'e');
        out.extend(
            s.iter()
                .map(|&c| if slashless && c == b'/' { b'!' } else { c }),
        );
    }
    out
}

/// One `PT_LOAD` of the core: a vma and how much of it is in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    pub prot: Prot,
    /// Bytes from `start` that are dumped (0, a page, or the whole vma).
    pub dump: u64,
}

/// The headers and notes of a core file and where each segment's bytes go (fs/binfmt_elf.c
/// `elf_core_dump`: header, program headers, notes, then the segments from the next page).
pub fn layout(machine: u16, notes: &[u8], segs: &[Segment], page: u64) -> (Vec<u8>, Vec<u64>) {
    let phnum = 1 + segs.len();
    let notes_off = (EHDR_SIZE + phnum * PHDR_SIZE) as u64;
    let data_off = (notes_off + notes.len() as u64).next_multiple_of(page);
    let mut h = Vec::with_capacity(notes_off as usize + notes.len());
    // e_ident: ELFMAG, ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_NONE.
    h.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    h.extend_from_slice(&ET_CORE.to_le_bytes());
    h.extend_from_slice(&machine.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes()); // e_version
    h.extend_from_slice(&0u64.to_le_bytes()); // e_entry
    h.extend_from_slice(&(EHDR_SIZE as u64).to_le_bytes()); // e_phoff
    h.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    h.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    h.extend_from_slice(&(EHDR_SIZE as u16).to_le_bytes());
    h.extend_from_slice(&(PHDR_SIZE as u16).to_le_bytes());
    h.extend_from_slice(&(phnum as u16).to_le_bytes());
    h.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    let phdr = |h: &mut Vec<u8>,
                ty: u32,
                flags: u32,
                off: u64,
                va: u64,
                filesz: u64,
                memsz: u64,
                align: u64| {
        h.extend_from_slice(&ty.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&off.to_le_bytes());
        h.extend_from_slice(&va.to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes()); // p_paddr
        h.extend_from_slice(&filesz.to_le_bytes());
        h.extend_from_slice(&memsz.to_le_bytes());
        h.extend_from_slice(&align.to_le_bytes());
    };
    phdr(&mut h, PT_NOTE, 0, notes_off, 0, notes.len() as u64, 0, 4);
    let mut offs = Vec::with_capacity(segs.len());
    let mut off = data_off;
    for s in segs {
        // PF_X 1, PF_W 2, PF_R 4.
        let flags = u32::from(s.prot.contains(Prot::EXEC))
            | u32::from(s.prot.contains(Prot::WRITE)) << 1
            | u32::from(s.prot.contains(Prot::READ)) << 2;
        phdr(
            &mut h,
            PT_LOAD,
            flags,
            off,
            s.start,
            s.dump,
            s.end - s.start,
            page,
        );
        offs.push(off);
        off += s.dump;
    }
    h.extend_from_slice(notes);
    (h, offs)
}

/// One ELF note: "CORE" owner, 4-byte aligned name and descriptor.
fn note(out: &mut Vec<u8>, ty: u32, desc: &[u8]) {
    out.extend_from_slice(&5u32.to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(b"CORE\0\0\0\0");
    out.extend_from_slice(desc);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// What the notes say about the process.
pub struct NoteInfo<'a> {
    pub info: &'a Siginfo,
    pub regs: &'a [u64],
    pub sigpend: u64,
    pub sighold: u64,
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub sid: i32,
    pub uid: u32,
    pub gid: u32,
    pub fname: &'a [u8],
    pub args: &'a [u8],
    /// The saved auxiliary vector as bytes (`mm->saved_auxv`): empty for none.
    pub auxv: &'a [u8],
}

/// `NT_PRSTATUS` (`struct elf_prstatus`: 112 bytes before `pr_reg`, the registers, then
/// `pr_fpvalid` and padding to 8) and `NT_PRPSINFO` (`struct elf_prpsinfo`, 136 bytes).
pub fn notes(n: &NoteInfo<'_>) -> Vec<u8> {
    let mut st = Vec::with_capacity(112 + n.regs.len() * 8 + 8);
    st.extend_from_slice(&n.info.si_signo.to_le_bytes());
    st.extend_from_slice(&n.info.si_code.to_le_bytes());
    st.extend_from_slice(&n.info.si_errno.to_le_bytes());
    st.extend_from_slice(&(n.info.si_signo as i16).to_le_bytes()); // pr_cursig
    st.extend_from_slice(&[0; 2]);
    st.extend_from_slice(&n.sigpend.to_le_bytes());
    st.extend_from_slice(&n.sighold.to_le_bytes());
    for v in [n.pid, n.ppid, n.pgrp, n.sid] {
        st.extend_from_slice(&v.to_le_bytes());
    }
    st.extend_from_slice(&[0; 64]); // pr_utime, pr_stime, pr_cutime, pr_cstime
    for r in n.regs {
        st.extend_from_slice(&r.to_le_bytes());
    }
    st.extend_from_slice(&0i32.to_le_bytes()); // pr_fpvalid
    st.resize(st.len().next_multiple_of(8), 0);
    let mut ps = Vec::with_capacity(136);
    ps.extend_from_slice(&[b'R', b'R', 0, 0, 0, 0, 0, 0]); // state, sname, zomb, nice, pad
    ps.extend_from_slice(&0u64.to_le_bytes()); // pr_flag
    ps.extend_from_slice(&n.uid.to_le_bytes());
    ps.extend_from_slice(&n.gid.to_le_bytes());
    for v in [n.pid, n.ppid, n.pgrp, n.sid] {
        ps.extend_from_slice(&v.to_le_bytes());
    }
    let mut fname = [0u8; 16];
    let k = n.fname.len().min(15);
    fname[..k].copy_from_slice(&n.fname[..k]);
    ps.extend_from_slice(&fname);
    let mut args = [0u8; 80];
    let k = n.args.len().min(79);
    for (d, &s) in args.iter_mut().zip(&n.args[..k]) {
        // fill_psinfo: the NULs between arguments become spaces.
        *d = if s == 0 { b' ' } else { s };
    }
    ps.extend_from_slice(&args);
    let mut out = Vec::new();
    note(&mut out, NT_PRSTATUS, &st);
    note(&mut out, NT_PRPSINFO, &ps);
    // fs/binfmt_elf.c fill_auxv_note: debuggers find a PIE's load bias from its AT_ENTRY
    // (gdb `svr4_exec_displacement`), so without it a core of a PIE has no symbols.
    if !n.auxv.is_empty() {
        note(&mut out, NT_AUXV, n.auxv);
    }
    out
}

/// `do_coredump` for `task`; true if a core file was written whole.
fn dump(k: &Arc<Kernel>, task: &Arc<Task>, regs: &Regs, info: &Siginfo) -> bool {
    match write_core(k, task, regs, info) {
        Ok(()) => true,
        Err(e) => {
            um_kernel::printk::line(&format!(
                "coredump: pid {} ({}): no core written: {e:?}",
                task.process.pid,
                String::from_utf8_lossy(&lock(&task.process.comm))
            ));
            false
        }
    }
}

fn write_core(k: &Kernel, task: &Arc<Task>, regs: &Regs, info: &Siginfo) -> SysResult<()> {
    let p = &task.process;
    let limit = lock(&p.rlimits)[RLIMIT_CORE].0;
    let page = um_mm::page_size();
    if limit < page {
        // binfmt->min_coredump: a limit below a page means no core.
        return Err(Errno::EFBIG);
    }
    let mm = lock(&p.mm).clone();
    let filter = p.coredump_filter.load(std::sync::atomic::Ordering::Relaxed);
    let want = |bit: u32| filter & (1 << bit) != 0;
    // What to dump of each vma, decided from its backing and PTEs (vma_dump_size, with the
    // coredump_filter bits 0 anonymous private, 1 anonymous shared, 2 file private, 3 file
    // shared, 4 ELF headers), and whether it is anonymous memory.
    let (segs, anon): (Vec<Segment>, Vec<bool>) = {
        let m = um_kernel::syscall::lock_mm(&mm);
        m.vmas()
            .iter()
            .map(|v| {
                let whole = v.end - v.start;
                let dump = match &v.backing {
                    _ if v.dont_dump => 0,
                    Backing::Anon if want(0) => whole,
                    Backing::Shmem { .. } if want(1) => whole,
                    Backing::Anon | Backing::Shmem { .. } => 0,
                    Backing::File { .. } if v.is_shared() => {
                        if want(3) {
                            whole
                        } else {
                            0
                        }
                    }
                    Backing::File { offset, .. } => {
                        let mut written = false;
                        m.for_each_pte(v.start, v.end, |_, pte| {
                            written |= pte.flags.contains(PteFlags::ANON);
                        });
                        if (written && want(0)) || want(2) {
                            whole
                        } else if want(4) && *offset == 0 && v.prot.contains(Prot::READ) {
                            page // the ELF header page, checked when read below
                        } else {
                            0
                        }
                    }
                };
                let seg = Segment {
                    start: v.start,
                    end: v.end,
                    prot: v.prot,
                    dump,
                };
                (
                    seg,
                    matches!(v.backing, Backing::Anon | Backing::Shmem { .. }),
                )
            })
            .unzip()
    };
    let creds = *lock(&p.creds);
    let comm = lock(&p.comm).clone();
    let (a0, a1, _, _) = *lock(&p.arg_range);
    let mut args = vec![0u8; (a1.saturating_sub(a0)).min(80) as usize];
    if um_kernel::syscall::lock_mm(&mm)
        .read_bytes_force(a0, &mut args)
        .is_err()
    {
        args.clear();
    }
    let sighold = *lock(&task.sigmask);
    let sigpend = lock(&task.pending).bits() | lock(&p.shared_pending).bits();
    let ppid = p.ppid.load(std::sync::atomic::Ordering::Relaxed) as i32;
    let auxv: Vec<u8> = lock(&p.auxv)
        .iter()
        .flat_map(|&(k, v)| k.to_le_bytes().into_iter().chain(v.to_le_bytes()))
        .collect();
    let notes = notes(&NoteInfo {
        info,
        regs: &regs.w,
        sigpend,
        sighold,
        pid: p.pid as i32,
        ppid,
        pgrp: p.pgid.load(std::sync::atomic::Ordering::Relaxed) as i32,
        sid: p.sid.load(std::sync::atomic::Ordering::Relaxed) as i32,
        uid: creds.uid,
        gid: creds.gid,
        fname: &comm,
        args: &args,
        auxv: &auxv,
    });
    let (head, offs) = layout(arch::ELF_MACHINE, &notes, &segs, page);

    // The file core_pattern names (relative to the working directory, or absolute),
    // replacing what is there (an existing core is unlinked first), created 0600 less the
    // umask, owned by the dying process's fsuid. A pipe pattern ("|helper") is not offered.
    let pat = core_pattern();
    if pat.starts_with('|') || pat.is_empty() {
        return Err(Errno::EOPNOTSUPP);
    }
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // `%h`: the dying process's UTS namespace's host name (fs/coredump.c `utsname()`).
    let host = lock(um_kernel::utsns::of(p).nodename(k)).clone();
    let path = expand_pattern(
        &pat,
        &NameInfo {
            pid: p.pid,
            tid: task.tid,
            uid: creds.uid,
            gid: creds.gid,
            signo: info.si_signo,
            time,
            host: &host,
            comm: &comm,
            limit,
        },
    );
    let fsctx = lock(&p.fs).clone();
    let umask = fsctx.umask;
    let (cwd, name) = crate::namei::walk_parent_with(&fsctx, &creds, &fsctx.cwd, &path)?;
    let name: &[u8] = &name;
    let dst = cwd.inode.stat()?;
    permission(&dst, &creds, MAY_WRITE | MAY_EXEC)?;
    crate::mount::check_writable(&cwd)?;
    match cwd.inode.lookup(name) {
        Ok(old) => {
            if old.stat()?.mode & mode::S_IFMT != mode::S_IFREG {
                return Err(Errno::EEXIST);
            }
            cwd.inode.unlink(name)?;
        }
        Err(Errno::ENOENT) => {}
        Err(e) => return Err(e),
    }
    let inode = cwd.inode.create(
        name,
        0o600 & !umask,
        Owner {
            uid: creds.fsuid,
            gid: creds.fsgid,
        },
    )?;
    let io = IoCtx {
        task,
        nonblock: false,
        flags: 0,
    };
    let f = inode.open(&io, 1 /* O_WRONLY */)?;
    let mut written = 0u64;
    let mut emit = |off: u64, data: &[u8]| -> SysResult<()> {
        // dump_emit: the limit counts what is written; holes are free.
        written += data.len() as u64;
        if written > limit {
            return Err(Errno::EFBIG);
        }
        let mut done = 0;
        while done < data.len() {
            let n = f.write(&io, &data[done..], off + done as u64)?;
            if n == 0 {
                return Err(Errno::EIO);
            }
            done += n;
        }
        Ok(())
    };
    // From here the core counts as dumped even if the limit cuts it short (elf_core_dump sets
    // has_dumped before writing; dump_emit past the limit just ends the file there).
    match write_body(&mut emit, &mm, &head, &segs, &offs, &anon, page) {
        Ok(end) => inode.setattr(&SetAttr {
            // The holes at the end still make up the file's size (dump_skip's final write).
            size: Some(end),
            ..Default::default()
        }),
        Err(Errno::EFBIG) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes the headers and the segments through `emit`; returns the file's full length.
fn write_body(
    emit: &mut impl FnMut(u64, &[u8]) -> SysResult<()>,
    mm: &Arc<std::sync::Mutex<um_mm::Mm>>,
    head: &[u8],
    segs: &[Segment],
    offs: &[u64],
    anon: &[bool],
    page: u64,
) -> SysResult<u64> {
    emit(0, head)?;
    let mut end = head.len() as u64;
    let mut buf = vec![0u8; page as usize];
    for ((s, &off), &anon) in segs.iter().zip(offs).zip(anon) {
        let mut va = s.start;
        while va < s.start + s.dump {
            // A file page is read through the page cache; an untouched anonymous page is a
            // hole (get_dump_page returns no page, dump_skip).
            let present = um_kernel::syscall::lock_mm(mm).pte(va).is_some();
            if present || !anon {
                let ok = um_kernel::syscall::lock_mm(mm)
                    .read_bytes_force(va, &mut buf)
                    .is_ok();
                let elf_page_only = s.dump == page && s.end - s.start > page;
                if ok && (!elf_page_only || buf.starts_with(b"\x7fELF")) {
                    emit(off + (va - s.start), &buf)?;
                }
            }
            va += page;
        }
        end = end.max(off + s.dump);
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use goblin::elf::Elf;

    #[test]
    fn core_pattern_specifiers_expand_as_format_corename() {
        let n = NameInfo {
            pid: 42,
            tid: 43,
            uid: 1000,
            gid: 100,
            signo: 11,
            time: 1_700_000_000,
            host: "box",
            comm: b"a/b",
            limit: 4096,
        };
        assert_eq!(
            expand_pattern("/cores/core.%e.%p.%i.%s.%u.%g.%t.%h.%c.%%.%z", &n),
            b"/cores/core.a!b.42.43.11.1000.100.1700000000.box.4096.%.".to_vec()
        );
        assert_eq!(expand_pattern("core", &n), b"core".to_vec());
        assert_eq!(expand_pattern("dump-%p%", &n), b"dump-42".to_vec());
        assert!(set_core_pattern(&[b'x'; 128]).is_err());
    }

    #[test]
    fn core_file_layout_reads_back_as_elf_core() {
        for (machine, nregs) in [(62u16, 27usize), (183, 34)] {
            let regs: Vec<u64> = (0..nregs as u64).map(|i| 0x1000 + i).collect();
            let info = Siginfo::new(11, 1);
            let n = notes(&NoteInfo {
                info: &info,
                regs: &regs,
                sigpend: 0,
                sighold: 0,
                pid: 42,
                ppid: 1,
                pgrp: 42,
                sid: 1,
                uid: 0,
                gid: 0,
                fname: b"crash",
                args: b"crash\0-x\0",
                auxv: &[9, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x20, 0, 0, 0, 0, 0, 0],
            });
            // elf_prstatus is 336 bytes on x86_64 and 392 on arm64; elf_prpsinfo 136.
            let prstatus = 112 + nregs * 8 + 8;
            assert_eq!(prstatus, if machine == 62 { 336 } else { 392 });
            assert_eq!(n.len(), 12 + 8 + prstatus + 12 + 8 + 136 + 12 + 8 + 16);
            let segs = [
                Segment {
                    start: 0x40_0000,
                    end: 0x40_3000,
                    prot: Prot::READ | Prot::EXEC,
                    dump: 0x1000,
                },
                Segment {
                    start: 0x7f00_0000_0000,
                    end: 0x7f00_0000_2000,
                    prot: Prot::READ | Prot::WRITE,
                    dump: 0x2000,
                },
            ];
            let (head, offs) = layout(machine, &n, &segs, 0x1000);
            assert_eq!(offs, vec![0x1000, 0x2000]);
            let mut file = head.clone();
            file.resize(0x4000, 0);
            let elf = Elf::parse(&file).expect("goblin parses the core");
            assert_eq!(elf.header.e_type, ET_CORE);
            assert_eq!(elf.header.e_machine, machine);
            assert_eq!(elf.program_headers.len(), 3);
            let ph = &elf.program_headers[2];
            assert_eq!(
                (ph.p_type, ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_flags),
                (PT_LOAD, 0x7f00_0000_0000, 0x2000, 0x2000, 6)
            );
            assert_eq!(elf.program_headers[1].p_flags, 5);
            let notes: Vec<_> = elf
                .iter_note_headers(&file)
                .expect("notes")
                .map(|r| r.expect("a note"))
                .collect();
            assert_eq!(notes.len(), 3);
            assert_eq!(notes[2].n_type, NT_AUXV);
            assert_eq!(notes[2].desc[8..10], [0x10, 0x20]);
            assert_eq!((notes[0].n_type, notes[0].name), (NT_PRSTATUS, "CORE"));
            let d = notes[0].desc;
            assert_eq!(i32::from_le_bytes(d[0..4].try_into().unwrap()), 11);
            assert_eq!(i32::from_le_bytes(d[32..36].try_into().unwrap()), 42);
            assert_eq!(u64::from_le_bytes(d[112..120].try_into().unwrap()), 0x1000);
            assert_eq!(notes[1].n_type, NT_PRPSINFO);
            assert_eq!(&notes[1].desc[40..45], b"crash");
            assert_eq!(&notes[1].desc[56..64], b"crash -x");
        }
    }
}
