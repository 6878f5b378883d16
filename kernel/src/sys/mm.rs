//! Memory syscalls (Linux mm/mmap.c, mm/mprotect.c, mm/mremap.c, mm/madvise.c): argument
//! checking and the file lookup here, semantics in `um-mm`.

use crate::syscall::{SyscallCtx, SyscallTable, lock_mm};
use crate::task::lock;
use um_mm::{Backing, MapFlags, Prot, VmLock};
use um_uapi::{Errno, SysResult};

/// `PROT_SEM` (all arches; meaningless here, accepted and ignored).
const PROT_SEM: u64 = 0x8;

/// Checks the `prot` argument of mmap/mprotect (Linux `arch_validate_prot`: READ, WRITE, EXEC,
/// SEM, plus the arch's own bits for the features the guest has, e.g. arm64 `PROT_BTI`) and
/// keeps the bits `mm` knows. `extra`: the arch's accepted bits, which are not enforced.
fn prot_of(p: u64, extra: u32) -> SysResult<Prot> {
    // PROT_GROWSDOWN/PROT_GROWSUP (0x01000000/0x02000000) are accepted and ignored here.
    let known = 0x7 | PROT_SEM | u64::from(extra) | 0x0100_0000 | 0x0200_0000;
    if p & !known != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Prot::from_bits_truncate(p as u32 & 0x7))
}

/// The arch's extra `PROT_*` bits for the guest's capabilities.
fn extra_prot(c: &SyscallCtx<'_>) -> u32 {
    use crate::arch::native::hwcap;
    hwcap::extra_prot_bits(hwcap::Hwcaps {
        hwcap: c.kernel.hwcap,
        hwcap2: c.kernel.hwcap2,
    })
}

/// `LEGACY_MAP_MASK`: SHARED, PRIVATE, FIXED, ANONYMOUS, 32BIT (x86), ABOVE4G (x86), GROWSDOWN,
/// DENYWRITE, EXECUTABLE, LOCKED, NORESERVE, POPULATE, NONBLOCK, STACK, HUGETLB, UNINITIALIZED,
/// and the MAP_HUGE_2MB/MAP_HUGE_1GB size encodings (21 and 30 << MAP_HUGE_SHIFT 26).
const LEGACY_MAP_MASK: u32 = 0x01
    | 0x02
    | 0x10
    | 0x20
    | 0x40
    | 0x80
    | 0x100
    | 0x800
    | 0x1000
    | 0x2000
    | 0x4000
    | 0x8000
    | 0x1_0000
    | 0x2_0000
    | 0x4_0000
    | 0x400_0000
    | (21 << 26)
    | (30 << 26);

fn mmap(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (addr, len, prot, flags, fd, off) = (a[0], a[1], a[2], a[3] as u32, a[4], a[5]);
    let prot = prot_of(prot, extra_prot(c))?;
    // mm/mmap.c do_mmap: MAP_SHARED_VALIDATE refuses any flag outside LEGACY_MAP_MASK
    // (include/linux/mman.h; no file here supports MAP_SYNC) with EOPNOTSUPP. The other mapping
    // types ignore unknown flags, which the truncation below does.
    if flags & 3 == 3 && flags & !LEGACY_MAP_MASK != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    // The order of Linux's checks: the descriptor (ksys_mmap_pgoff: EBADF), then the length
    // and the mapping type (do_mmap: EINVAL), then the file's access mode (EACCES).
    let file = if flags & MapFlags::ANONYMOUS.bits() == 0 {
        Some(lock(&c.task.process.files()).get(fd)?)
    } else {
        None
    };
    if len == 0 || flags & 3 == 0 {
        return Err(Errno::EINVAL);
    }
    let flags = MapFlags::from_bits_truncate(flags);
    let mut may_write = true;
    let backing = if flags.contains(MapFlags::ANONYMOUS | MapFlags::HUGETLB) {
        // MAP_HUGETLB: a file of the internal hugetlbfs mount, of the MAP_HUGE_* size
        // (mm/mmap.c ksys_mmap_pgoff -> hugetlb_file_setup); um_mm::hugetlb.
        um_mm::hugetlb::anon_backing((a[3] as u32 >> 26) & 0x3f, len)?
    } else if flags.contains(MapFlags::ANONYMOUS) {
        Backing::Anon
    } else {
        let file = file.ok_or(Errno::EBADF)?;
        let acc = file.flags() & 3;
        // O_WRONLY files cannot be mapped; shared writable needs O_RDWR (mm/mmap.c do_mmap).
        if acc == 1 || (flags.contains(MapFlags::SHARED) && prot.contains(Prot::WRITE) && acc != 2)
        {
            return Err(Errno::EACCES);
        }
        if file.ops.maps_as_anonymous() {
            // /dev/zero: anonymous memory (a shared object for MAP_SHARED, made by Mm::mmap).
            return lock_mm(&c.mm()).mmap_may_write(
                addr,
                len,
                prot,
                flags,
                Backing::Anon,
                acc == 2,
            );
        }
        file.ops.mmap_check(off, len)?;
        let vm = file.ops.vm_file().ok_or(Errno::ENODEV)?;
        file.ops
            .may_mmap(flags.contains(MapFlags::SHARED) && prot.contains(Prot::WRITE))?;
        // VM_MAYWRITE: a shared mapping may later be made writable only through a descriptor
        // open for writing, of a file that allows shared writable mappings.
        may_write = acc == 2 && file.ops.may_mmap(true).is_ok();
        Backing::File {
            file: vm,
            offset: off,
        }
    };
    lock_mm(&c.mm()).mmap_may_write(addr, len, prot, flags, backing, may_write)
}

fn munmap(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    lock_mm(&c.mm()).munmap(a[0], a[1])?;
    Ok(0)
}

fn mprotect(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let prot = prot_of(a[2], extra_prot(c))?;
    lock_mm(&c.mm()).mprotect(a[0], a[1], prot)?;
    Ok(0)
}

fn brk(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    Ok(lock_mm(&c.mm()).brk(a[0]))
}

use um_uapi::abi::mman::MADV_HWPOISON;
const MADV_SOFT_OFFLINE: u32 = 101;
use um_uapi::abi::capability::CAP_SYS_ADMIN;

fn madvise(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (start, len_in, advice) = (a[0], a[1], a[2] as u32);
    if advice == MADV_HWPOISON || advice == MADV_SOFT_OFFLINE {
        return inject_memory_failure(c, start, len_in, advice == MADV_SOFT_OFFLINE);
    }
    if advice == MADV_REMOVE {
        return madvise_remove(c, start, len_in);
    }
    lock_mm(&c.mm()).madvise(start, len_in, advice)?;
    Ok(0)
}

/// `MADV_REMOVE` (include/uapi/asm-generic/mman-common.h).
const MADV_REMOVE: u32 = 9;

/// mm/madvise.c `madvise_remove`: the checks under the address space's lock, then, with it
/// released (Linux drops `mmap_lock` around `vfs_fallocate`), a hole punch of each vma's part
/// of the object, which unmaps the pages from every address space that maps them.
fn madvise_remove(c: &SyscallCtx<'_>, start: u64, len_in: u64) -> SysResult {
    let (targets, hole) = lock_mm(&c.mm()).remove_targets(start, len_in)?;
    for (backing, offset, len) in targets {
        um_mm::punch_backing(&backing, offset, len, &c.kernel.page_cache)?;
    }
    if hole {
        return Err(Errno::ENOMEM);
    }
    Ok(0)
}

/// madvise's memory-failure injection (mm/madvise.c: the start, length and overflow checks of
/// `do_madvise`, then `madvise_inject_error`: CAP_SYS_ADMIN, then each page of
/// `[start, start + len_in)`), with the kernel's log line per page.
fn inject_memory_failure(c: &SyscallCtx<'_>, start: u64, len_in: u64, soft: bool) -> SysResult {
    let mm = c.mm();
    let mut mm = lock_mm(&mm);
    let page = mm.granule().size();
    if start % page != 0 {
        return Err(Errno::EINVAL);
    }
    let len = len_in.checked_next_multiple_of(page).ok_or(Errno::EINVAL)?;
    let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
    if end == start {
        return Ok(0);
    }
    if !c.task.process.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let pages = mm.inject_memory_failure(start, start + len_in, soft)?;
    log::info!(
        "{} {pages} page(s) at process virtual address {start:#x} (pid {})",
        if soft {
            "Soft offlining"
        } else {
            "Injecting memory failure for"
        },
        c.task.tid
    );
    Ok(0)
}

fn mremap(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    lock_mm(&c.mm()).mremap(a[0], a[1], a[2], a[3] as u32, a[4])
}

fn msync(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    lock_mm(&c.mm()).msync(a[0], a[1], a[2] as u32)?;
    Ok(0)
}

/// Checks that `[addr, addr+len)` is entirely mapped (ENOMEM otherwise), as mlock and
/// mincore require; returns the page-aligned start and end.
fn mapped_range(c: &SyscallCtx<'_>, addr: u64, len: u64) -> SysResult<(u64, u64)> {
    let mm = c.mm();
    let m = lock_mm(&mm);
    let g = m.granule();
    let start = g.align_down(addr);
    let end = addr
        .checked_add(len)
        .and_then(|e| g.align_up(e))
        .ok_or(Errno::ENOMEM)?;
    let mut a = start;
    while a < end {
        let v = m.find_vma(a).ok_or(Errno::ENOMEM)?;
        a = v.end;
    }
    Ok((start, end))
}

/// `MLOCK_ONFAULT` (mlock2's only flag).
const MLOCK_ONFAULT: u64 = 1;
/// mlockall flags.
const MCL_CURRENT: u64 = 1;
const MCL_FUTURE: u64 = 2;
const MCL_ONFAULT: u64 = 4;
/// `RLIMIT_MEMLOCK`.
const RLIMIT_MEMLOCK: usize = 8;

/// `can_do_mlock` and the `RLIMIT_MEMLOCK` check of `do_mlock`/`mlockall` (mm/mlock.c): root
/// (CAP_IPC_LOCK) may lock anything; others need a non-zero limit (else EPERM) and may not lock
/// more than it in all (ENOMEM). `more` is how many bytes the call would add at most.
fn check_memlock(c: &SyscallCtx<'_>, more: u64) -> SysResult<()> {
    if lock(&c.task.process.creds).euid == 0 {
        return Ok(());
    }
    let limit = lock(&c.task.process.rlimits)[RLIMIT_MEMLOCK].0;
    if limit == 0 {
        return Err(Errno::EPERM);
    }
    if limit == u64::MAX {
        return Ok(());
    }
    let m = c.mm();
    let locked = {
        let m = lock_mm(&m);
        m.locked_pages() * m.granule().size()
    };
    if locked.saturating_add(more) > limit {
        return Err(Errno::ENOMEM);
    }
    Ok(())
}

/// mlock and mlock2 (mm/mlock.c `do_mlock`): the pages of the range are locked; guest memory
/// is never paged out here, so what changes is that the range is faulted in now (not with
/// `MLOCK_ONFAULT`) and counted in `VmLck`.
fn do_mlock(c: &SyscallCtx<'_>, addr: u64, len: u64, onfault: bool) -> SysResult {
    check_memlock(c, len)?;
    let l = if onfault {
        VmLock::OnFault
    } else {
        VmLock::Locked
    };
    lock_mm(&c.mm()).mlock(addr, len, l)?;
    Ok(0)
}

fn mlock(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_mlock(c, a[0], a[1], false)
}

fn mlock2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[2] & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    do_mlock(c, a[0], a[1], a[2] & MLOCK_ONFAULT != 0)
}

fn munlock(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    lock_mm(&c.mm()).mlock(a[0], a[1], VmLock::None)?;
    Ok(0)
}

fn mlockall(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = a[0];
    // MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT; none, unknown bits, or MCL_ONFAULT alone: EINVAL.
    if f == 0 || f & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || f == MCL_ONFAULT {
        return Err(Errno::EINVAL);
    }
    let total = {
        let m = c.mm();
        let m = lock_mm(&m);
        m.total_vm() * m.granule().size()
    };
    // mlockall checks the whole address space against the limit for MCL_CURRENT.
    check_memlock(c, if f & MCL_CURRENT != 0 { total } else { 0 })?;
    let l = if f & MCL_ONFAULT != 0 {
        VmLock::OnFault
    } else {
        VmLock::Locked
    };
    let future = if f & MCL_FUTURE != 0 { l } else { VmLock::None };
    let current = (f & MCL_CURRENT != 0).then_some(l);
    lock_mm(&c.mm()).mlockall(current, future);
    Ok(0)
}

fn munlockall(c: &mut SyscallCtx<'_>, _a: [u64; 6]) -> SysResult {
    lock_mm(&c.mm()).mlockall(Some(VmLock::None), VmLock::None);
    Ok(0)
}

/// mincore (mm/mincore.c): one byte per page, 1 if the page is resident: mapped here, or in
/// the page cache of the file (or shared memory object) behind the mapping.
fn mincore(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (addr, len, vec) = (a[0], a[1], a[2]);
    let g = lock_mm(&c.mm()).granule();
    if !g.is_aligned(addr) {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let (start, end) = mapped_range(c, addr, len)?;
    let out = lock_mm(&c.mm()).mincore(start, end)?;
    c.write_bytes(vec, &out)?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("mmap", mmap);
    t.register("munmap", munmap);
    t.register("mprotect", mprotect);
    t.register("brk", brk);
    t.register("madvise", madvise);
    t.register("mremap", mremap);
    t.register("msync", msync);
    t.register("mlock", mlock);
    t.register("munlock", munlock);
    t.register("mlock2", mlock2);
    t.register("mlockall", mlockall);
    t.register("munlockall", munlockall);
    t.register("mincore", mincore);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prot_bits() {
        let rw = Prot::READ | Prot::WRITE;
        assert_eq!(prot_of(3, 0), Ok(rw));
        assert_eq!(prot_of(7 | PROT_SEM, 0), Ok(rw | Prot::EXEC));
        assert_eq!(prot_of(1 | 0x0100_0000, 0), Ok(Prot::READ));
        // arm64 PROT_BTI (0x10): only where the arch accepts it (a guest with BTI).
        assert_eq!(prot_of(0x10 | 5, 0), Err(Errno::EINVAL));
        assert_eq!(prot_of(0x10 | 5, 0x10), Ok(Prot::READ | Prot::EXEC));
        // PROT_MTE (0x20) is never accepted: MTE is masked.
        assert_eq!(prot_of(0x20 | 3, 0x10), Err(Errno::EINVAL));
        assert_eq!(prot_of(0x40, 0), Err(Errno::EINVAL));
    }
}
