//! Address spaces: the VMA map, fault resolution and copies to and from guest memory.
//!
//! [`Mm`] is one guest address space (Linux's `struct mm_struct`): an ordered map of [`Vma`]s, a
//! [`PageTable`], the brk, and a queue of [`HostOp`]s. It implements `mmap`, `munmap`,
//! `mprotect`, `brk`, `mremap`, `madvise` and `msync` with Linux's argument checking and error
//! codes (mm/mmap.c, mm/vma.c, mm/mremap.c, mm/mprotect.c, mm/madvise.c, mm/msync.c), resolves
//! guest page faults (mm/memory.c: zero-fill, file pages from the page cache, copy-on-write, stack
//! growth) and copies bytes in and out of guest memory the way `copy_{from,to}_user` do, faulting
//! pages in as needed.
//!
//! Nothing here touches a host process. Every change to what the guest may access is queued as a
//! [`HostOp`]; the engine drains the queue with [`Mm::take_host_ops`] and replays it, in order, in
//! the stub process before the guest runs again. Invariants:
//! - a page is mapped in the host only while it has a PTE, with the PTE's READ/WRITE/EXEC;
//! - a PTE never has WRITE while it is COW (frame possibly shared) or while it is a clean page of a
//!   shared file mapping (so the first write faults and marks it DIRTY, Linux's write-notify);
//! - every PTE holds one frame reference, released when the PTE goes.
//!
//! Locking: `Mm` is plain data behind `&mut self`; the kernel keeps it behind its own lock (one per
//! address space, like `mmap_lock`), made by [`Mm::into_shared`], which also registers it in the
//! reverse map ([`crate::rmap`]) so other processes' hole punches and truncates reach its PTEs.
//! The frame allocator and page cache it points to are shared and internally locked; an `Mm`
//! lock comes before theirs, and no `Mm` lock is held while another is taken. Neighbours: [`crate::FrameAllocator`], [`crate::PageCache`],
//! [`crate::Shmem`], [`crate::PageTable`], [`crate::Vma`].

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, Weak};

use bitflags::bitflags;
use um_uapi::Errno;

use crate::rmap::Obj;
use crate::{
    Backing, FrameAllocator, Granule, PageCache, PageTable, Pte, PteFlags, Shmem, UffdReg,
    Userfault, VmLock, Vma,
};
use um_uapi::abi::userfaultfd::{
    UFFD_PAGEFAULT_FLAG_WP, UFFD_PAGEFAULT_FLAG_WRITE, UFFDIO_REGISTER_MODE_MISSING,
    UFFDIO_REGISTER_MODE_WP,
};

bitflags! {
    /// Page protection (Linux PROT_* values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Prot: u32 {
        const READ = 0x1;
        const WRITE = 0x2;
        const EXEC = 0x4;
    }
}

bitflags! {
    /// mmap flags (Linux MAP_* values; identical on x86_64 and arm64).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MapFlags: u32 {
        const SHARED = 0x01;
        const PRIVATE = 0x02;
        /// SHARED|PRIVATE: "shared, and reject unknown flags". The mapping type is the value of
        /// the low two bits, not a flag test.
        const SHARED_VALIDATE = 0x03;
        const FIXED = 0x10;
        const ANONYMOUS = 0x20;
        const GROWSDOWN = 0x100;
        const DENYWRITE = 0x800;
        const EXECUTABLE = 0x1000;
        const LOCKED = 0x2000;
        const NORESERVE = 0x4000;
        const POPULATE = 0x8000;
        const NONBLOCK = 0x10000;
        const STACK = 0x20000;
        const HUGETLB = 0x40000;
        const SYNC = 0x80000;
        const FIXED_NOREPLACE = 0x100000;
    }
}

/// The kind of guest access that faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Exec,
}

/// Why a fault could not be resolved: what to deliver to the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegvCode {
    /// SIGSEGV, SEGV_MAPERR (1): no mapping at the address.
    MapErr,
    /// SIGSEGV, SEGV_ACCERR (2): the mapping forbids the access.
    AccErr,
    /// SIGBUS, BUS_ADRERR (2): the backing file could not be read (Linux: VM_FAULT_SIGBUS).
    Bus,
    /// SIGBUS, BUS_MCEERR_AR (4): the page is poisoned (`MADV_HWPOISON`, `UFFDIO_POISON`;
    /// Linux: VM_FAULT_HWPOISON), reported with the page shift as `si_addr_lsb`.
    HwPoison,
    /// Out of physical memory (Linux: VM_FAULT_OOM -> the OOM killer): the kernel should kill
    /// the task with SIGKILL rather than deliver a catchable signal.
    Oom,
}

impl SegvCode {
    /// The `si_code` for the siginfo.
    pub fn si_code(self) -> i32 {
        match self {
            SegvCode::MapErr => 1,
            SegvCode::AccErr | SegvCode::Bus => 2,
            SegvCode::HwPoison => 4,
            SegvCode::Oom => 0,
        }
    }
}

/// A change the engine must make to the stub process's host mapping before the guest runs on.
/// Replay in order: later ops may override earlier ones for the same page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostOp {
    /// `mmap(addr, len, prot, MAP_SHARED|MAP_FIXED, physmem_fd, phys_offset)`.
    Map {
        addr: u64,
        len: u64,
        prot: Prot,
        phys_offset: u64,
    },
    /// `munmap(addr, len)` (the range may include pages the host never had).
    Unmap { addr: u64, len: u64 },
    /// `mprotect(addr, len, prot)` (only ever over pages that have PTEs; if the host has lost one,
    /// mprotect fails with ENOMEM and the engine may ignore that: the next access faults and
    /// re-maps it).
    Protect { addr: u64, len: u64, prot: Prot },
}

/// Where things go in the guest address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// End of the guest address space (exclusive).
    pub task_size: u64,
    /// Top-down mmap allocation starts below this.
    pub mmap_base: u64,
    /// Top of the main stack.
    pub stack_top: u64,
    /// RLIMIT_STACK in bytes: the most the stack may grow to.
    pub stack_limit: u64,
    /// mmap_min_addr: nothing may be mapped below (64 KiB by default).
    pub min_addr: u64,
}

use um_uapi::abi::mman::MREMAP_DONTUNMAP;
use um_uapi::abi::mman::MREMAP_FIXED;
use um_uapi::abi::mman::MREMAP_MAYMOVE;

use um_uapi::abi::mman::MADV_DODUMP;
use um_uapi::abi::mman::MADV_DONTDUMP;
use um_uapi::abi::mman::MADV_DONTNEED;
use um_uapi::abi::mman::MADV_DONTNEED_LOCKED;
use um_uapi::abi::mman::MADV_FREE;
use um_uapi::abi::mman::MADV_KEEPONFORK;
use um_uapi::abi::mman::MADV_POPULATE_READ;
use um_uapi::abi::mman::MADV_POPULATE_WRITE;
use um_uapi::abi::mman::MADV_REMOVE;
use um_uapi::abi::mman::MADV_WIPEONFORK;

use um_uapi::abi::mman::MS_ASYNC;
use um_uapi::abi::mman::MS_INVALIDATE;
use um_uapi::abi::mman::MS_SYNC;

/// vm.max_map_count default (include/linux/mm.h DEFAULT_MAX_MAP_COUNT).
const MAX_MAP_COUNT: usize = 65530;

/// Flags a vma keeps; the rest only steer the mmap call itself.
const KEPT_FLAGS: MapFlags = MapFlags::GROWSDOWN
    .union(MapFlags::DENYWRITE)
    .union(MapFlags::EXECUTABLE)
    .union(MapFlags::NORESERVE);

fn prot_of(flags: PteFlags) -> Prot {
    Prot::from_bits_truncate(flags.bits())
}

fn with_prot(flags: PteFlags, prot: Prot) -> PteFlags {
    (flags - (PteFlags::READ | PteFlags::WRITE | PteFlags::EXEC))
        | PteFlags::from_bits_truncate(prot.bits())
}

/// Whether a write may go straight to the PTE's frame.
fn write_ok(flags: PteFlags) -> bool {
    !flags.contains(PteFlags::COW)
        && !flags.contains(PteFlags::UFFD_WP)
        && (!flags.contains(PteFlags::FILE | PteFlags::SHARED) || flags.contains(PteFlags::DIRTY))
}

/// The protection the host mapping of a page gets: the vma's, minus WRITE while the page is COW
/// or a clean shared-file page (mm/mmap.c `vma_wants_writenotify`, mm/memory.c `do_wp_page`).
fn effective_prot(vma: &Vma, flags: PteFlags) -> Prot {
    let mut p = vma.prot;
    if !write_ok(flags) {
        p.remove(Prot::WRITE);
    }
    p
}

/// Linux's `vma_is_accessible`: any of read, write, exec.
fn accessible(prot: Prot) -> bool {
    prot.intersects(Prot::all())
}

/// The object a backing maps, as the reverse map names it.
fn obj_of(b: &Backing) -> Option<Obj> {
    match b {
        Backing::Anon => None,
        Backing::File { file, .. } => Some(Obj::File(file.id())),
        Backing::Shmem { shm, .. } => Some(Obj::Shmem(shm.id())),
    }
}

/// `MADV_REMOVE`'s `vfs_fallocate(PUNCH_HOLE | KEEP_SIZE)` of `len` bytes at `offset` of the
/// object `backing` maps (one of [`Mm::remove_targets`]): a file punches through
/// [`crate::VmFile::punch_hole`], shared anonymous memory and SysV shm through
/// [`Shmem::punch`]. Call it with no `Mm` lock held: it unmaps the pages everywhere.
pub fn punch_backing(
    backing: &Backing,
    offset: u64,
    len: u64,
    cache: &PageCache,
) -> Result<(), Errno> {
    match backing {
        Backing::Anon => Err(Errno::EINVAL),
        Backing::File { file, .. } => file.punch_hole(offset, len),
        Backing::Shmem { shm, .. } => {
            let shift = cache.granule().shift();
            let (first, end) = (offset.div_ceil(1 << shift), (offset + len) >> shift);
            if first < end {
                shm.punch(first, end - 1, cache);
            }
            Ok(())
        }
    }
}

/// Address bits the page table must cover to reach `task_size - 1`.
fn va_bits(layout: Layout, granule: Granule) -> u32 {
    (64 - layout.task_size.saturating_sub(1).leading_zeros()).max(granule.shift() + 1)
}

/// One guest address space.
pub struct Mm {
    frames: Arc<FrameAllocator>,
    cache: Arc<PageCache>,
    layout: Layout,
    granule: Granule,
    /// Keyed by start address; never overlapping.
    vmas: BTreeMap<u64, Vma>,
    pt: PageTable,
    ops: Vec<HostOp>,
    start_brk: u64,
    brk: u64,
    vdso: Option<Vdso>,
    /// The lock new mappings get (`mlockall(MCL_FUTURE)`; Linux `mm->def_flags`).
    def_lock: VmLock,
    /// Pages of this address space's accounted vmas, charged to the frames'
    /// [`crate::commit::Commit`].
    committed: u64,
    /// Pages `UFFDIO_POISON` marked (Linux's `PTE_MARKER_POISONED`): no PTE, and an access is
    /// SIGBUS until the page is unmapped or zapped.
    poisoned: std::collections::BTreeSet<u64>,
    /// This address space behind its lock ([`Mm::into_shared`]), as the reverse map knows it.
    me: Weak<Mutex<Mm>>,
    /// Whether `me` is set: only then is it registered in the reverse map.
    shared: bool,
    /// The objects it is registered for in the reverse map ([`crate::rmap`]).
    rmapped: HashSet<Obj>,
    /// How many times [`Mm::take_host_ops`] ran (the shootdown waits for the next one).
    ops_taken: u64,
    /// Frames whose PTE went, held until the engine takes them with the ops that unmap them
    /// ([`Mm::take_gathered`]; only with [`FrameAllocator::set_deferred_free`]).
    gathered: Vec<crate::Frame>,
}

/// Where exec mapped the vDSO (Linux `mm->context.vdso`): kept even if the guest unmaps or
/// moves the mapping, as Linux keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vdso {
    /// The image's first byte (AT_SYSINFO_EHDR).
    pub base: u64,
    /// The sigreturn trampoline, where the arch has one (arm64 `__kernel_rt_sigreturn`).
    pub sigreturn: Option<u64>,
}

impl Mm {
    /// An empty address space.
    pub fn new(frames: Arc<FrameAllocator>, cache: Arc<PageCache>, layout: Layout) -> Mm {
        let granule = frames.granule();
        let va_bits =
            (64 - layout.task_size.saturating_sub(1).leading_zeros()).max(granule.shift() + 1);
        Mm {
            pt: PageTable::new(granule, va_bits),
            frames,
            cache,
            layout,
            granule,
            vmas: BTreeMap::new(),
            ops: Vec::new(),
            start_brk: 0,
            brk: 0,
            vdso: None,
            def_lock: VmLock::None,
            committed: 0,
            poisoned: Default::default(),
            me: Weak::new(),
            shared: false,
            rmapped: HashSet::new(),
            ops_taken: 0,
            gathered: Vec::new(),
        }
    }

    /// Puts the address space behind the lock the kernel keeps it under, and registers it in the
    /// reverse map ([`crate::rmap`]) for every file and shared memory object it maps, so hole
    /// punches and truncates reach it. Every address space that runs guest code is made
    /// through here.
    pub fn into_shared(self) -> Arc<Mutex<Mm>> {
        Arc::new_cyclic(|me| {
            let mut mm = self;
            mm.me = me.clone();
            mm.shared = true;
            let objs: Vec<Obj> = mm
                .vmas
                .values()
                .filter_map(|v| obj_of(&v.backing))
                .collect();
            for o in objs {
                mm.rmap_add(o);
            }
            Mutex::new(mm)
        })
    }

    /// Registers this address space for `obj` in the reverse map (once).
    fn rmap_add(&mut self, obj: Obj) {
        if self.shared && self.rmapped.insert(obj) {
            self.cache.rmap.add(obj, &self.me);
        }
    }

    /// Linux `zap_page_range_single` over the range [`crate::rmap::unmap_object`] asks for:
    /// drops the PTEs of pages `first..=last` of `obj` in every vma mapping it (in private vmas
    /// only those still mapping the object's page, unless `even_cows`), without write-back,
    /// and queues their host unmaps. Whether anything was dropped.
    pub(crate) fn zap_object(&mut self, obj: Obj, first: u64, last: u64, even_cows: bool) -> bool {
        let shift = self.granule.shift();
        let ranges: Vec<(u64, u64)> = self
            .vmas
            .values()
            .filter(|v| obj_of(&v.backing) == Some(obj))
            .filter_map(|v| {
                let vfirst = v.backing.offset() >> shift;
                let vlast = vfirst + (v.len() >> shift) - 1;
                let (lo, hi) = (first.max(vfirst), last.min(vlast));
                (lo <= hi).then(|| {
                    (
                        v.start + ((lo - vfirst) << shift),
                        v.start + ((hi - vfirst + 1) << shift),
                    )
                })
            })
            .collect();
        let mut changed = false;
        for (s, e) in ranges {
            let mut gone = Vec::new();
            self.pt.for_each_in(s, e, |va, pte| {
                // FILE: a page of the file (shared, or private and not yet copied); SHARED: a
                // shmem page. The rest are private copies made on write (anonymous).
                if even_cows || pte.flags.intersects(PteFlags::FILE | PteFlags::SHARED) {
                    gone.push(va);
                }
            });
            for va in gone {
                if let Some(pte) = self.pt.remove(va) {
                    self.put_pte_frame(pte.frame);
                    self.ops.push(HostOp::Unmap {
                        addr: va,
                        len: self.granule.size(),
                    });
                    changed = true;
                }
            }
        }
        changed
    }

    /// Whether host ops are queued that no engine has taken yet.
    pub fn host_ops_pending(&self) -> bool {
        !self.ops.is_empty()
    }

    /// How many host ops are queued (not yet taken).
    pub fn host_ops_queued(&self) -> usize {
        self.ops.len()
    }

    /// How many times the queued host ops were taken ([`Mm::take_host_ops`]).
    pub fn host_ops_taken(&self) -> u64 {
        self.ops_taken
    }

    /// Drops the reference a PTE held on `frame`, whose host mapping an op queued now removes
    /// or replaces: at once, or (with [`FrameAllocator::set_deferred_free`]) only when the
    /// engine drops the [`crate::Gather`] it takes with those ops ([`Mm::take_gathered`]).
    fn put_pte_frame(&mut self, frame: crate::Frame) {
        if self.frames.deferred_free() {
            self.gathered.push(frame);
        } else {
            self.frames.put(frame);
        }
    }

    /// The frames whose PTEs went since the last call (their host unmaps are among the ops
    /// queued so far): the caller takes them with [`Mm::take_host_ops`], under the same lock
    /// hold, and drops them only once the host has made those ops (mm/mmu_gather.c
    /// `tlb_finish_mmu` frees after the flush). Dropping early is what the deferral prevents:
    /// another thread of the process could still read or write a reused frame.
    pub fn take_gathered(&mut self) -> crate::Gather {
        self.frames.gather(std::mem::take(&mut self.gathered))
    }

    /// `MADV_REMOVE` (mm/madvise.c `madvise_remove`), the part under the address space's lock:
    /// checks each vma of `[addr, addr + len)` in order (locked: `EINVAL`; no object, private
    /// anonymous memory: `EINVAL`; not a shared mapping that may be written: `EACCES`) and
    /// returns what to punch, `(object, byte offset, length)` per vma, and whether part of the
    /// range is unmapped (then `ENOMEM` after the punches, as Linux). The caller punches each with
    /// [`punch_backing`] once it has released this address space's lock.
    #[allow(clippy::type_complexity)]
    pub fn remove_targets(
        &self,
        addr: u64,
        len: u64,
    ) -> Result<(Vec<(Backing, u64, u64)>, bool), Errno> {
        let g = self.granule;
        if !g.is_aligned(addr) {
            return Err(Errno::EINVAL);
        }
        let alen = g.align_up(len).ok_or(Errno::EINVAL)?;
        let end = addr.checked_add(alen).ok_or(Errno::EINVAL)?;
        if end == addr {
            return Ok((Vec::new(), false));
        }
        let hole = !self.covered(addr, end);
        let mut out = Vec::new();
        for k in self.keys_in(addr, end) {
            let v = &self.vmas[&k];
            if v.lock != VmLock::None || matches!(v.backing, Backing::Anon) {
                return Err(Errno::EINVAL);
            }
            if !v.is_shared() || !v.may_write {
                return Err(Errno::EACCES);
            }
            let (s, e) = (v.start.max(addr), v.end.min(end));
            out.push((v.backing.clone(), v.backing.offset() + (s - v.start), e - s));
        }
        Ok((out, hole))
    }

    /// Where exec mapped the vDSO, if it did.
    pub fn vdso(&self) -> Option<Vdso> {
        self.vdso
    }

    /// Records where exec mapped the vDSO.
    pub fn set_vdso(&mut self, v: Option<Vdso>) {
        self.vdso = v;
    }

    /// The page size.
    pub fn granule(&self) -> Granule {
        self.granule
    }

    /// The layout this address space was created with.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// mm/mmap.c `stack_guard_gap`: 256 pages.
    fn guard_gap(&self) -> u64 {
        256 << self.granule.shift()
    }

    /// Lowest address a vma's neighbour below may reach (mm.h `vm_start_gap`).
    fn start_gap(&self, v: &Vma) -> u64 {
        if v.grows_down() {
            v.start.saturating_sub(self.guard_gap())
        } else {
            v.start
        }
    }

    fn vma_at(&self, addr: u64) -> Option<&Vma> {
        self.vmas
            .range(..=addr)
            .next_back()
            .map(|(_, v)| v)
            .filter(|v| v.end > addr)
    }

    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.vmas
            .range(..end)
            .next_back()
            .is_some_and(|(_, v)| v.end > start)
    }

    /// Whether `[start, end)` is entirely covered by vmas.
    fn covered(&self, start: u64, end: u64) -> bool {
        let first = self.vma_at(start).map_or(start, |v| v.start);
        let mut cursor = start;
        for v in self.vmas.range(first..end).map(|(_, v)| v) {
            if v.start > cursor {
                return false;
            }
            cursor = v.end;
            if cursor >= end {
                return true;
            }
        }
        cursor >= end
    }

    /// Pages of `[start, end)` that lie in accounted vmas.
    fn accounted_in(&self, start: u64, end: u64) -> u64 {
        self.keys_in(start, end)
            .iter()
            .map(|k| &self.vmas[k])
            .filter(|v| v.accounted)
            .map(|v| self.granule.pages(v.end.min(end) - v.start.max(start)))
            .sum()
    }

    /// Releases `pages` of this address space's charge (vm_unacct_memory).
    fn uncharge(&mut self, pages: u64) {
        self.committed -= pages;
        self.frames.commit().uncharge(pages);
    }

    /// Keys of the vmas overlapping `[start, end)`, in order.
    fn keys_in(&self, start: u64, end: u64) -> Vec<u64> {
        let first = self.vma_at(start).map_or(start, |v| v.start);
        self.vmas.range(first..end).map(|(&k, _)| k).collect()
    }

    /// Splits the vma containing `addr` (strictly inside) in two at `addr` (mm/vma.c
    /// `split_vma`).
    fn split_at(&mut self, addr: u64) {
        let hi = match self.vmas.range_mut(..addr).next_back() {
            Some((&k, v)) if v.end > addr => {
                let hi = Vma {
                    start: addr,
                    end: v.end,
                    backing: v.backing.advanced(addr - k),
                    ..v.clone()
                };
                v.end = addr;
                hi
            }
            _ => return,
        };
        self.vmas.insert(addr, hi);
    }

    /// Applies `f` to the vmas of `[start, end)`, split at the ends first and merged again
    /// after (the shape of mlock_fixup, madvise_update_vma, prctl's vma naming).
    fn update_range(&mut self, start: u64, end: u64, mut f: impl FnMut(&mut Vma)) {
        self.split_at(start);
        self.split_at(end);
        for k in self.keys_in(start, end) {
            f(self.vmas.get_mut(&k).expect("key listed"));
        }
        self.merge_around(start, end);
    }

    /// Merges compatible neighbours among the vmas touching `[start, end]` (mm/vma.c
    /// `vma_merge_*`): adjacent anonymous vmas with equal protection and flags, or contiguous
    /// pieces of one file.
    fn merge_around(&mut self, start: u64, end: u64) {
        let first = self
            .vmas
            .range(..start)
            .next_back()
            .map_or(start, |(&k, _)| k);
        let keys: Vec<u64> = self.vmas.range(first..=end).map(|(&k, _)| k).collect();
        let Some((&head, rest)) = keys.split_first() else {
            return;
        };
        let mut cur = head;
        for &k in rest {
            if self.vmas[&cur].can_merge_with(&self.vmas[&k]) {
                let next = self.vmas.remove(&k).expect("key listed");
                self.vmas.get_mut(&cur).expect("key listed").end = next.end;
            } else {
                cur = k;
            }
        }
    }

    /// Drops the PTEs of `vma` in `[start, end)`, writing dirty shared file pages back first
    /// (there is no background writeback here, so unmapping is where the data must reach the
    /// file) and releasing the frames (mm/memory.c `zap_pte_range`).
    fn zap(&mut self, vma: &Vma, start: u64, end: u64) {
        // Released highest address first: the allocator hands frames out last-freed first, so
        // memory mapped again in address order gets ascending frames, whose host mappings merge
        // into one call per run (a sequential writer after munmap costs one mmap per window,
        // not one per page).
        for (va, pte) in self.pt.drain_range(start, end).into_iter().rev() {
            self.release(vma, va, pte);
        }
        // zap_nonpresent_ptes: userfaultfd poison markers go too.
        if !self.poisoned.is_empty() {
            self.poisoned.retain(|&va| va < start || va >= end);
        }
    }

    fn release(&mut self, vma: &Vma, va: u64, pte: Pte) {
        if pte
            .flags
            .contains(PteFlags::FILE | PteFlags::SHARED | PteFlags::DIRTY)
            && let Backing::File { file, offset } = &vma.backing
        {
            let pgoff = (offset + (va - vma.start)) >> self.granule.shift();
            if let Err(e) = self.cache.write_back_frame(file, pgoff, pte.frame) {
                log::warn!("mm: write-back of {} page {pgoff} failed: {e}", file.name());
            }
        }
        self.put_pte_frame(pte.frame);
    }

    /// Removes every mapping in `[start, end)` (aligned), queueing host unmaps.
    fn unmap_range(&mut self, start: u64, end: u64) {
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<u64> = self.vmas.range(start..end).map(|(&k, _)| k).collect();
        for k in keys {
            let v = self.vmas.remove(&k).expect("key listed");
            if v.accounted {
                self.uncharge(self.granule.pages(v.len()));
            }
            self.zap(&v, v.start, v.end);
            self.ops.push(HostOp::Unmap {
                addr: v.start,
                len: v.len(),
            });
        }
    }

    /// Whether `[addr, addr + len)` can take a new mapping: inside the task, above min_addr, no
    /// overlap, and clear of the guard gap of a stack above it.
    pub(crate) fn range_free(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        if addr < self.layout.min_addr || end > self.layout.task_size || self.overlaps(addr, end) {
            return false;
        }
        match self.vmas.range(end..).next() {
            Some((_, n)) => self.start_gap(n) >= end,
            None => true,
        }
    }

    fn lowest_addr(&self) -> u64 {
        self.granule
            .align_up(self.layout.min_addr)
            .unwrap_or(u64::MAX)
    }

    /// Highest free range of `len` bytes below mmap_base (mm/mmap.c `unmapped_area_topdown`).
    fn find_topdown(&self, len: u64) -> Option<u64> {
        let lo = self.lowest_addr();
        let mut high = self
            .granule
            .align_down(self.layout.mmap_base.min(self.layout.task_size));
        for v in self.vmas.values().rev() {
            if v.end <= high && high - v.end >= len {
                let a = high - len;
                return (a >= lo).then_some(a);
            }
            high = high.min(self.start_gap(v));
            if high < lo.checked_add(len)? {
                return None;
            }
        }
        (high >= lo.checked_add(len)?).then(|| high - len)
    }

    /// Lowest free range of `len` bytes at or above `low` (mm/mmap.c `unmapped_area`), the
    /// fallback when the top-down search fails.
    fn find_bottomup(&self, low: u64, len: u64) -> Option<u64> {
        let mut cand = self.granule.align_up(low.max(self.lowest_addr()))?;
        for v in self.vmas.values() {
            if v.end <= cand {
                continue;
            }
            if cand.checked_add(len)? <= self.start_gap(v) {
                return Some(cand);
            }
            cand = cand.max(v.end);
        }
        (cand.checked_add(len)? <= self.layout.task_size).then_some(cand)
    }

    /// mm/mmap.c `get_unmapped_area` for non-fixed mappings: the hint if it is free, else
    /// top-down below mmap_base, else bottom-up from TASK_UNMAPPED_BASE (task_size / 3).
    pub(crate) fn get_unmapped_area(&self, hint: u64, len: u64) -> Result<u64, Errno> {
        if len > self.layout.task_size {
            return Err(Errno::ENOMEM);
        }
        // round_hint_to_min: align down, and lift a low non-zero hint to mmap_min_addr.
        let mut hint = self.granule.align_down(hint);
        if hint != 0 && hint < self.layout.min_addr {
            hint = self.lowest_addr();
        }
        if hint != 0 && self.range_free(hint, len) {
            return Ok(hint);
        }
        self.find_topdown(len)
            .or_else(|| {
                let base = self.granule.align_down(self.layout.task_size / 3);
                self.find_bottomup(base, len)
            })
            .ok_or(Errno::ENOMEM)
    }

    /// Maps `len` bytes (mm/mmap.c `do_mmap`). `backing` is [`Backing::Anon`] for anonymous
    /// mappings (shared ones get a fresh [`Shmem`] object) or [`Backing::File`]. The caller (the
    /// syscall layer) has already checked the fd's access mode against the protection.
    pub fn mmap(
        &mut self,
        addr: u64,
        len: u64,
        prot: Prot,
        flags: MapFlags,
        backing: Backing,
    ) -> Result<u64, Errno> {
        self.mmap_may_write(addr, len, prot, flags, backing, true)
    }

    /// [`Mm::mmap`] of a file that may not be written through a shared mapping later
    /// (`may_write` false: mm/mmap.c do_mmap clears VM_MAYWRITE when the file is not open for
    /// writing, and shmem when a memfd is sealed against writes).
    pub fn mmap_may_write(
        &mut self,
        addr: u64,
        len: u64,
        prot: Prot,
        flags: MapFlags,
        backing: Backing,
        may_write: bool,
    ) -> Result<u64, Errno> {
        let g = self.granule;
        if !Prot::all().contains(prot) {
            return Err(Errno::EINVAL);
        }
        // sys_mmap: the offset must be page aligned.
        if !g.is_aligned(backing.offset()) {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let shared = match flags.bits() & MapFlags::SHARED_VALIDATE.bits() {
            0x1 | 0x3 => true,
            0x2 => false,
            _ => return Err(Errno::EINVAL),
        };
        // MAP_SHARED_VALIDATE rejects flags it does not know, and MAP_SYNC (no DAX here).
        if flags.bits() & MapFlags::SHARED_VALIDATE.bits() == MapFlags::SHARED_VALIDATE.bits()
            && (!MapFlags::all().contains(flags) || flags.contains(MapFlags::SYNC))
        {
            return Err(Errno::EOPNOTSUPP);
        }
        let len = g.align_up(len).ok_or(Errno::ENOMEM)?;
        if backing.offset().checked_add(len).is_none() {
            return Err(Errno::EOVERFLOW);
        }
        // hugetlbfs files (crate::hugetlb): MAP_HUGETLB needs one, the offset is a multiple
        // of the huge page size and the length rounds up to it.
        let (huge, len) = crate::hugetlb::mmap_geometry(&backing, flags, len)?;
        if len > self.layout.task_size {
            return Err(Errno::ENOMEM);
        }
        let fixed = flags.intersects(MapFlags::FIXED | MapFlags::FIXED_NOREPLACE);
        let addr = if fixed {
            if addr > self.layout.task_size - len {
                return Err(Errno::ENOMEM);
            }
            // hugetlb: prepare_hugepage_range wants a huge-page aligned address.
            if !g.is_aligned(addr) || huge.is_some_and(|h| addr % h != 0) {
                return Err(Errno::EINVAL);
            }
            // security_mmap_addr (security/min_addr.c): mapping below mmap_min_addr is EPERM.
            if addr < self.layout.min_addr {
                return Err(Errno::EPERM);
            }
            if flags.contains(MapFlags::FIXED_NOREPLACE) && self.overlaps(addr, addr + len) {
                return Err(Errno::EEXIST);
            }
            // Replacing part of a hugetlb mapping splits it: EINVAL inside a huge page.
            if self.hugetlb_split_refused(addr, addr + len) {
                return Err(Errno::EINVAL);
            }
            addr
        } else if let Some(h) = huge {
            self.huge_unmapped_area(addr, len, h)?
        } else {
            self.get_unmapped_area(addr, len)?
        };
        if self.vmas.len() >= MAX_MAP_COUNT {
            return Err(Errno::ENOMEM);
        }
        // hugetlb_reserve_pages: the huge page pool must cover the mapping (ENOMEM).
        let backing = crate::hugetlb::reserve(backing, len, shared, flags, prot)?;
        // mm/mmap.c mmap_region: a private writable mapping is charged (VM_ACCOUNT) unless
        // MAP_NORESERVE, which only the never-overcommit policy ignores; what it replaces is
        // released, so only the difference is judged.
        let commit = self.frames.commit();
        // Hugetlb mappings are not: their pool is their accounting (accountable_mapping).
        let accounted = !shared
            && huge.is_none()
            && prot.contains(Prot::WRITE)
            && (!flags.contains(MapFlags::NORESERVE)
                || commit.mode() == crate::commit::OVERCOMMIT_NEVER);
        let pages = g.pages(len);
        if accounted {
            let replaced = if fixed {
                self.accounted_in(addr, addr + len)
            } else {
                0
            };
            commit.charge(pages - replaced, || self.total_vm())?;
            // unmap_range releases the replaced pages' charge: they are this mapping's now.
            commit.charge_anyway(replaced);
            self.committed += pages;
        }
        if fixed {
            self.unmap_range(addr, addr + len);
        }
        let backing = match backing {
            Backing::Anon if shared => Backing::Shmem {
                shm: Arc::new(Shmem::new(self.frames.clone())),
                offset: 0,
            },
            b => b,
        };
        let kind = if shared {
            MapFlags::SHARED
        } else {
            MapFlags::PRIVATE
        };
        let lock = if flags.contains(MapFlags::LOCKED) {
            VmLock::Locked
        } else {
            self.def_lock
        };
        self.vmas.insert(
            addr,
            Vma {
                start: addr,
                end: addr + len,
                prot,
                flags: (flags & KEPT_FLAGS) | kind,
                backing,
                name: None,
                lock,
                wipe_on_fork: false,
                may_write,
                dont_dump: false,
                accounted,
                uffd: None,
            },
        );
        if let Some(o) = obj_of(&self.vmas[&addr].backing) {
            self.rmap_add(o);
        }
        self.merge_around(addr, addr + len);
        // MAP_LOCKED (or mlockall(MCL_FUTURE) without MCL_ONFAULT) implies populating
        // (mm/mmap.c do_mmap: VM_LOCKED without VM_LOCKONFAULT sets *populate).
        if (flags.contains(MapFlags::POPULATE) || lock == VmLock::Locked)
            && !flags.contains(MapFlags::NONBLOCK)
        {
            self.populate(addr, addr + len);
        }
        Ok(addr)
    }

    /// Prefaults `[start, end)` (mm/gup.c `populate_vma_page_range`): write faults for private
    /// writable mappings, read faults otherwise; stops quietly at the first failure, as
    /// MAP_POPULATE does.
    fn populate(&mut self, start: u64, end: u64) {
        let mut va = start;
        while va < end {
            let Some(v) = self.vma_at(va) else { return };
            let access = if v.prot.contains(Prot::WRITE) && !v.is_shared() {
                Access::Write
            } else {
                Access::Read
            };
            if self.fault_page(va, access, false).is_err() {
                return;
            }
            va += self.granule.size();
        }
    }

    /// munmap (mm/vma.c `do_vmi_munmap`): splits vmas, releases frames, queues unmaps. Unmapping
    /// a hole is not an error.
    pub fn munmap(&mut self, addr: u64, len: u64) -> Result<(), Errno> {
        let g = self.granule;
        let ts = self.layout.task_size;
        if !g.is_aligned(addr) || addr > ts {
            return Err(Errno::EINVAL);
        }
        let len = g.align_up(len).ok_or(Errno::EINVAL)?;
        if len == 0 || len > ts - addr {
            return Err(Errno::EINVAL);
        }
        // mm/vma.c vms_gather_munmap_vmas: a hole punched in the middle of a vma makes one
        // more; at vm.max_map_count that is ENOMEM (an unmap may go one over, not two).
        if self.vmas.len() >= MAX_MAP_COUNT
            && self
                .vma_at(addr)
                .is_some_and(|v| v.start < addr && addr + len < v.end)
        {
            return Err(Errno::ENOMEM);
        }
        // hugetlb_vm_op_split: a hugetlb mapping is not cut inside a huge page.
        if self.hugetlb_split_refused(addr, addr + len) {
            return Err(Errno::EINVAL);
        }
        self.unmap_range(addr, addr + len);
        Ok(())
    }

    /// mprotect (mm/mprotect.c `do_mprotect_pkey`). Unlike Linux, which changes the vmas before a
    /// hole and then fails, a range that is not fully mapped fails with ENOMEM before any change.
    pub fn mprotect(&mut self, addr: u64, len: u64, prot: Prot) -> Result<(), Errno> {
        let g = self.granule;
        if !g.is_aligned(addr) || !Prot::all().contains(prot) {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(());
        }
        let len = g.align_up(len).ok_or(Errno::ENOMEM)?;
        let end = addr.checked_add(len).ok_or(Errno::ENOMEM)?;
        if !self.covered(addr, end) {
            return Err(Errno::ENOMEM);
        }
        // hugetlb_vm_op_split: a hugetlb mapping is not cut inside a huge page.
        if self.hugetlb_split_refused(addr, end) {
            return Err(Errno::EINVAL);
        }
        // do_mprotect_pkey: PROT_WRITE on a shared mapping without VM_MAYWRITE is EACCES.
        if prot.contains(Prot::WRITE)
            && self
                .keys_in(addr, end)
                .iter()
                .any(|k| self.vmas[k].is_shared() && !self.vmas[k].may_write)
        {
            return Err(Errno::EACCES);
        }
        // mm/mprotect.c mprotect_fixup: a private mapping made writable for the first time
        // is charged from then on (and stays charged when write is taken away again).
        let newly = |v: &Vma| {
            prot.contains(Prot::WRITE)
                && !v.is_shared()
                && !v.accounted
                && !v.prot.contains(Prot::WRITE)
                && !v.flags.contains(MapFlags::NORESERVE)
        };
        let charge: u64 = self
            .keys_in(addr, end)
            .iter()
            .map(|k| &self.vmas[k])
            .filter(|v| newly(v))
            .map(|v| g.pages(v.end.min(end) - v.start.max(addr)))
            .sum();
        if charge > 0 {
            self.frames.commit().charge(charge, || self.total_vm())?;
            self.committed += charge;
        }
        self.split_at(addr);
        self.split_at(end);
        for k in self.keys_in(addr, end) {
            let v = self.vmas.get_mut(&k).expect("key listed");
            if newly(&*v) {
                v.accounted = true;
            }
            v.prot = prot;
            let v = v.clone();
            let ops = &mut self.ops;
            let size = g.size();
            self.pt.update_in(v.start, v.end, |va, pte| {
                let p = effective_prot(&v, pte.flags);
                if p != prot_of(pte.flags) {
                    pte.flags = with_prot(pte.flags, p);
                    ops.push(HostOp::Protect {
                        addr: va,
                        len: size,
                        prot: p,
                    });
                }
            });
        }
        self.merge_around(addr, end);
        Ok(())
    }

    /// Sets the ELF loader's brk start (end of bss); brk starts there with an empty heap.
    pub fn set_brk_start(&mut self, start: u64) {
        let start = self.granule.align_up(start).unwrap_or(start);
        self.start_brk = start;
        self.brk = start;
    }

    /// (start_brk, brk).
    pub fn brk_range(&self) -> (u64, u64) {
        (self.start_brk, self.brk)
    }

    /// sys_brk (mm/mmap.c): moves the break and returns the new one, or the old one on failure.
    pub fn brk(&mut self, new_brk: u64) -> u64 {
        let g = self.granule;
        if new_brk < self.start_brk {
            return self.brk;
        }
        let (Some(newbrk), Some(oldbrk)) = (g.align_up(new_brk), g.align_up(self.brk)) else {
            return self.brk;
        };
        if newbrk > self.layout.task_size {
            return self.brk;
        }
        if oldbrk == newbrk {
            self.brk = new_brk;
            return new_brk;
        }
        if new_brk <= self.brk {
            self.unmap_range(newbrk, oldbrk);
            self.brk = new_brk;
            return new_brk;
        }
        // Refuse to grow into (or within a page of) the next mapping's guard gap.
        let next = self.vmas.range(..).map(|(_, v)| v).find(|v| v.end > oldbrk);
        if let Some(n) = next
            && newbrk.saturating_add(g.size()) > self.start_gap(n)
        {
            return self.brk;
        }
        if self.vmas.len() >= MAX_MAP_COUNT {
            return self.brk;
        }
        // do_brk_flags: the heap is accounted.
        let pages = g.pages(newbrk - oldbrk);
        if self
            .frames
            .commit()
            .charge(pages, || self.total_vm())
            .is_err()
        {
            return self.brk;
        }
        self.committed += pages;
        self.vmas.insert(
            oldbrk,
            Vma {
                start: oldbrk,
                end: newbrk,
                prot: Prot::READ | Prot::WRITE,
                flags: MapFlags::PRIVATE,
                backing: Backing::Anon,
                name: Some("[heap]".to_string()),
                lock: self.def_lock,
                wipe_on_fork: false,
                may_write: true,
                dont_dump: false,
                accounted: true,
                uffd: None,
            },
        );
        self.merge_around(oldbrk, newbrk);
        // sys_brk populates the new heap when mm->def_flags has VM_LOCKED (mm/mmap.c).
        if self.def_lock == VmLock::Locked {
            self.populate(oldbrk, newbrk);
        }
        self.brk = new_brk;
        new_brk
    }

    /// mremap (mm/mremap.c). `flags`: MREMAP_MAYMOVE 1, MREMAP_FIXED 2, MREMAP_DONTUNMAP 4.
    pub fn mremap(
        &mut self,
        old_addr: u64,
        old_len: u64,
        new_len: u64,
        flags: u32,
        new_addr: u64,
    ) -> Result<u64, Errno> {
        let g = self.granule;
        if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0 {
            return Err(Errno::EINVAL);
        }
        let maymove = flags & MREMAP_MAYMOVE != 0;
        if flags & MREMAP_FIXED != 0 && !maymove {
            return Err(Errno::EINVAL);
        }
        let dontunmap = flags & MREMAP_DONTUNMAP != 0;
        if dontunmap && (!maymove || old_len != new_len) {
            return Err(Errno::EINVAL);
        }
        if !g.is_aligned(old_addr) {
            return Err(Errno::EINVAL);
        }
        let mut old_len = g.align_up(old_len).ok_or(Errno::EINVAL)?;
        let new_len = g.align_up(new_len).ok_or(Errno::EINVAL)?;
        if new_len == 0 || old_addr.checked_add(old_len).is_none() {
            return Err(Errno::EINVAL);
        }
        // mm/mremap.c (5.16+): a hugetlb mapping moves or shrinks in whole huge pages at
        // aligned addresses, and never grows (its reservation could not follow).
        let new_len = match self
            .vma_at(old_addr)
            .and_then(|v| crate::hugetlb::backing_huge_size(&v.backing))
        {
            Some(h) => {
                old_len = old_len.checked_next_multiple_of(h).ok_or(Errno::EINVAL)?;
                let new_len = new_len.checked_next_multiple_of(h).ok_or(Errno::EINVAL)?;
                if old_addr % h != 0 || new_addr % h != 0 || new_len > old_len {
                    return Err(Errno::EINVAL);
                }
                new_len
            }
            None => new_len,
        };

        if flags & MREMAP_FIXED != 0 {
            // mremap_to
            let ts = self.layout.task_size;
            if !g.is_aligned(new_addr) {
                return Err(Errno::EINVAL);
            }
            if new_len > ts || new_addr > ts - new_len {
                return Err(Errno::EINVAL);
            }
            if new_addr < old_addr + old_len && old_addr < new_addr + new_len {
                return Err(Errno::EINVAL);
            }
            if new_addr < self.layout.min_addr {
                return Err(Errno::EPERM);
            }
            self.unmap_range(new_addr, new_addr + new_len);
            if old_len > new_len {
                self.unmap_range(old_addr + new_len, old_addr + old_len);
                old_len = new_len;
            }
            let vma = self.vma_to_resize(old_addr, old_len)?;
            self.charge_move(&vma, old_len, new_len, dontunmap)?;
            self.move_vma(&vma, old_addr, old_len, new_addr, new_len, dontunmap);
            return Ok(new_addr);
        }

        if self.vma_at(old_addr).is_none() {
            return Err(Errno::EFAULT);
        }
        // Shrinking (or same size) is an munmap of the tail.
        if old_len >= new_len && !dontunmap {
            if old_len > new_len {
                self.unmap_range(old_addr + new_len, old_addr + old_len);
            }
            return Ok(old_addr);
        }
        let vma = self.vma_to_resize(old_addr, old_len)?;
        // Grow in place when the vma ends where the old range does and the space after it is free.
        if !dontunmap && old_len > 0 && old_addr + old_len == vma.end {
            let delta = new_len - old_len;
            if vma.end.checked_add(delta).is_some() && self.range_free(vma.end, delta) {
                if vma.accounted {
                    let pages = g.pages(delta);
                    self.frames.commit().charge(pages, || self.total_vm())?;
                    self.committed += pages;
                }
                let new_end = vma.end + delta;
                self.vmas.get_mut(&vma.start).expect("vma exists").end = new_end;
                self.merge_around(vma.start, new_end);
                return Ok(old_addr);
            }
        }
        if !maymove {
            return Err(Errno::ENOMEM);
        }
        if self.vmas.len() >= MAX_MAP_COUNT {
            return Err(Errno::ENOMEM);
        }
        let dest = self.get_unmapped_area(0, new_len)?;
        self.charge_move(&vma, old_len, new_len, dontunmap)?;
        self.move_vma(&vma, old_addr, old_len, dest, new_len, dontunmap);
        Ok(dest)
    }

    /// The charge for moving `old_len` bytes of `vma` to a new range of `new_len` (mm/mremap.c
    /// `vma_to_resize`, `move_vma`): the growth, or all of it when the old range stays
    /// (MREMAP_DONTUNMAP). [`Mm::move_vma`] then hands the old range's charge to the new one.
    fn charge_move(
        &mut self,
        vma: &Vma,
        old_len: u64,
        new_len: u64,
        dontunmap: bool,
    ) -> Result<(), Errno> {
        if !vma.accounted {
            return Ok(());
        }
        let kept = if dontunmap { 0 } else { old_len };
        let pages = self.granule.pages(new_len.saturating_sub(kept));
        self.frames.commit().charge(pages, || self.total_vm())
    }

    /// mm/mremap.c `vma_to_resize`: the old range must lie within one vma; old_len 0 (duplicate a
    /// mapping) is only allowed for shared mappings.
    fn vma_to_resize(&self, old_addr: u64, old_len: u64) -> Result<Vma, Errno> {
        let vma = self.vma_at(old_addr).cloned().ok_or(Errno::EFAULT)?;
        if old_len > vma.end - old_addr {
            return Err(Errno::EFAULT);
        }
        if old_len == 0 && !vma.is_shared() {
            return Err(Errno::EINVAL);
        }
        Ok(vma)
    }

    /// mm/mremap.c `move_vma`: a new vma at `new_addr` continuing the same object, the old range's
    /// PTEs moved over (frames keep their references), the old range unmapped unless DONTUNMAP
    /// (which leaves it mapped but empty).
    fn move_vma(
        &mut self,
        vma: &Vma,
        old_addr: u64,
        old_len: u64,
        new_addr: u64,
        new_len: u64,
        dontunmap: bool,
    ) {
        let size = self.granule.size();
        let nv = Vma {
            start: new_addr,
            end: new_addr + new_len,
            backing: vma.backing.advanced(old_addr - vma.start),
            // mremap_userfaultfd_prep: without UFFD_FEATURE_EVENT_REMAP (not offered) the moved
            // range leaves its userfaultfd behind; with DONTUNMAP the old range keeps it.
            uffd: None,
            ..vma.clone()
        };
        if old_len > 0 {
            // move_ptes: userfaultfd poison markers move with the pages.
            let marks: Vec<u64> = self
                .poisoned
                .range(old_addr..old_addr + old_len)
                .copied()
                .collect();
            for va in marks {
                self.poisoned.remove(&va);
                self.poisoned.insert(va - old_addr + new_addr);
            }
            let moved = self.pt.drain_range(old_addr, old_addr + old_len);
            self.ops.push(HostOp::Unmap {
                addr: old_addr,
                len: old_len,
            });
            for (va, pte) in moved {
                let nva = va - old_addr + new_addr;
                self.pt.set(nva, pte);
                self.ops.push(HostOp::Map {
                    addr: nva,
                    len: size,
                    prot: prot_of(pte.flags),
                    phys_offset: self.frames.offset(pte.frame),
                });
            }
            if !dontunmap {
                // The PTEs are gone already, so this only drops the vma range.
                self.unmap_range(old_addr, old_addr + old_len);
                if nv.accounted {
                    // Its charge moves with the pages (charge_move charged only the growth).
                    self.frames
                        .commit()
                        .charge_anyway(self.granule.pages(old_len.min(new_len)));
                }
            }
        }
        if nv.accounted {
            self.committed += self.granule.pages(new_len);
        }
        self.vmas.insert(new_addr, nv);
        self.merge_around(new_addr, new_addr + new_len);
    }

    /// madvise (mm/madvise.c). MADV_DONTNEED drops the pages (private anonymous memory reads back
    /// zero, file and shared pages refault from their object); MADV_POPULATE_* prefault; every
    /// other known advice is accepted and ignored. Unmapped parts of the range give ENOMEM after
    /// the advice was applied to the mapped parts, as Linux does.
    pub fn madvise(&mut self, addr: u64, len: u64, advice: u32) -> Result<(), Errno> {
        let g = self.granule;
        if !g.is_aligned(addr) {
            return Err(Errno::EINVAL);
        }
        // madvise_behavior_valid: 0-4 and 8-25 (5-7 were never assigned), less those whose
        // kernel option the configuration here lacks (procfs/config.rs): MADV_MERGEABLE and
        // UNMERGEABLE (12, 13; CONFIG_KSM), MADV_HUGEPAGE, NOHUGEPAGE (14, 15) and COLLAPSE (25;
        // CONFIG_TRANSPARENT_HUGEPAGE).
        if !matches!(advice, 0..=4 | 8..=11 | 16..=24) {
            return Err(Errno::EINVAL);
        }
        let alen = g.align_up(len).ok_or(Errno::EINVAL)?;
        let end = addr.checked_add(alen).ok_or(Errno::EINVAL)?;
        if end == addr {
            return Ok(());
        }
        let hole = !self.covered(addr, end);
        let keys = self.keys_in(addr, end);
        // mm/madvise.c: MADV_DONTNEED of locked memory and MADV_FREE of anything but private
        // anonymous memory are EINVAL (madvise_dontneed_free_valid_vma); so is MADV_WIPEONFORK
        // of a file or shared mapping (madvise_vma_behavior).
        let anon_private = |v: &Vma| matches!(v.backing, Backing::Anon) && !v.is_shared();
        let invalid = keys.iter().map(|k| &self.vmas[k]).any(|v| match advice {
            MADV_DONTNEED | MADV_REMOVE => v.lock != VmLock::None,
            MADV_FREE | MADV_WIPEONFORK => !anon_private(v),
            _ => false,
        });
        if invalid {
            return Err(Errno::EINVAL);
        }
        match advice {
            MADV_DONTNEED | MADV_DONTNEED_LOCKED => {
                for k in keys {
                    let v = self.vmas[&k].clone();
                    let (s, e) = (v.start.max(addr), v.end.min(end));
                    self.zap(&v, s, e);
                    self.ops.push(HostOp::Unmap {
                        addr: s,
                        len: e - s,
                    });
                }
            }
            // Only the checks: the punch itself needs this address space's lock released
            // (the kernel's madvise calls remove_targets and punch_backing).
            MADV_REMOVE => {
                self.remove_targets(addr, len)?;
            }
            MADV_DONTDUMP | MADV_DODUMP if !hole => {
                self.update_range(addr, end, |v| v.dont_dump = advice == MADV_DONTDUMP);
            }
            MADV_WIPEONFORK | MADV_KEEPONFORK => {
                self.update_range(addr, end, |v| v.wipe_on_fork = advice == MADV_WIPEONFORK);
            }
            MADV_POPULATE_READ | MADV_POPULATE_WRITE => {
                let access = if advice == MADV_POPULATE_WRITE {
                    Access::Write
                } else {
                    Access::Read
                };
                if hole {
                    return Err(Errno::ENOMEM);
                }
                let mut va = addr;
                while va < end {
                    match self.fault_page(va, access, false) {
                        Ok(_) => {}
                        Err(SegvCode::Oom) => return Err(Errno::ENOMEM),
                        Err(_) => return Err(Errno::EFAULT),
                    }
                    va += g.size();
                }
            }
            _ => {}
        }
        if hole {
            return Err(Errno::ENOMEM);
        }
        Ok(())
    }

    /// `MADV_HWPOISON` and `MADV_SOFT_OFFLINE` (mm/madvise.c `madvise_inject_error`,
    /// CONFIG_MEMORY_FAILURE): each page of `[addr, end)` is faulted in as `get_user_pages`
    /// would (`EFAULT` where it cannot be); then a hard failure drops the page and leaves a
    /// poison marker, so the next access is SIGBUS `BUS_MCEERR_AR` until the range is unmapped
    /// or zapped (`memory_failure` on an anonymous page: a hwpoison entry), and a soft offline
    /// keeps the contents (Linux migrates them to a new frame, which changes nothing the
    /// process can see). Differences: the failure hits this address space's mapping of the
    /// page, not the frame's other users (another process sharing it copy-on-write, a shared
    /// file page's other mappers), and frames are not kept out of use. Returns the pages hit.
    pub fn inject_memory_failure(&mut self, addr: u64, end: u64, soft: bool) -> Result<u64, Errno> {
        let pg = self.granule.size();
        let mut va = self.granule.align_down(addr);
        let mut n = 0;
        while va < end {
            self.fault_page(va, Access::Read, false)
                .map_err(|e| match e {
                    SegvCode::Oom => Errno::ENOMEM,
                    _ => Errno::EFAULT,
                })?;
            if !soft {
                let vma = self.vma_at(va).ok_or(Errno::EFAULT)?.clone();
                self.zap(&vma, va, va + pg);
                self.ops.push(HostOp::Unmap { addr: va, len: pg });
                self.poisoned.insert(va);
            }
            n += 1;
            va += pg;
        }
        Ok(n)
    }

    /// msync (mm/msync.c): writes the DIRTY pages of shared file mappings in the range back to
    /// their files and write-protects them again so the next write is tracked. Linux makes
    /// MS_ASYNC a no-op because background writeback exists; there is none here, so MS_ASYNC
    /// writes back too. Holes give ENOMEM after the mapped parts are done.
    pub fn msync(&mut self, addr: u64, len: u64, flags: u32) -> Result<(), Errno> {
        let g = self.granule;
        if flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
            || !g.is_aligned(addr)
            || (flags & MS_ASYNC != 0 && flags & MS_SYNC != 0)
        {
            return Err(Errno::EINVAL);
        }
        let alen = g.align_up(len).ok_or(Errno::ENOMEM)?;
        let end = addr.checked_add(alen).ok_or(Errno::ENOMEM)?;
        if end == addr {
            return Ok(());
        }
        let hole = !self.covered(addr, end);
        // mm/msync.c: MS_INVALIDATE of a locked vma is EBUSY.
        if flags & MS_INVALIDATE != 0
            && self
                .keys_in(addr, end)
                .iter()
                .any(|k| self.vmas[k].lock != VmLock::None)
        {
            return Err(Errno::EBUSY);
        }
        let mut result = Ok(());
        if flags & (MS_ASYNC | MS_SYNC) != 0 {
            for k in self.keys_in(addr, end) {
                let v = self.vmas[&k].clone();
                let Backing::File { file, offset } = &v.backing else {
                    continue;
                };
                if !v.is_shared() {
                    continue;
                }
                let (s, e) = (v.start.max(addr), v.end.min(end));
                let mut dirty = Vec::new();
                self.pt.for_each_in(s, e, |va, pte| {
                    if pte.flags.contains(PteFlags::DIRTY) {
                        dirty.push((va, pte));
                    }
                });
                for (va, mut pte) in dirty {
                    let pgoff = (offset + (va - v.start)) >> g.shift();
                    if let Err(err) = self.cache.write_back_frame(file, pgoff, pte.frame) {
                        if result.is_ok() {
                            result = Err(err);
                        }
                        continue;
                    }
                    pte.flags.remove(PteFlags::DIRTY);
                    let p = effective_prot(&v, pte.flags);
                    pte.flags = with_prot(pte.flags, p);
                    self.pt.set(va, pte);
                    self.ops.push(HostOp::Protect {
                        addr: va,
                        len: g.size(),
                        prot: p,
                    });
                }
            }
        }
        result?;
        if hole {
            return Err(Errno::ENOMEM);
        }
        Ok(())
    }

    /// Names the vmas in `[addr, addr + len)` (splitting at the edges), for "[stack]", "[vdso]"
    /// and prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME). ENOMEM if the range is not fully mapped.
    pub fn set_name(&mut self, addr: u64, len: u64, name: Option<String>) -> Result<(), Errno> {
        let g = self.granule;
        if !g.is_aligned(addr) {
            return Err(Errno::EINVAL);
        }
        let len = g.align_up(len).ok_or(Errno::EINVAL)?;
        let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
        if end == addr {
            return Ok(());
        }
        if !self.covered(addr, end) {
            return Err(Errno::ENOMEM);
        }
        self.update_range(addr, end, |v| v.name = name.clone());
        Ok(())
    }

    /// Maps the main stack: `size` bytes of private anonymous read-write GROWSDOWN memory ending at
    /// `layout.stack_top`, named "[stack]". Returns its start.
    pub fn map_stack(&mut self, size: u64) -> Result<u64, Errno> {
        let g = self.granule;
        let size = g.align_up(size.max(1)).ok_or(Errno::ENOMEM)?;
        let top = g.align_down(self.layout.stack_top);
        let start = top.checked_sub(size).ok_or(Errno::ENOMEM)?;
        self.mmap(
            start,
            size,
            Prot::READ | Prot::WRITE,
            MapFlags::PRIVATE | MapFlags::ANONYMOUS | MapFlags::FIXED | MapFlags::GROWSDOWN,
            Backing::Anon,
        )?;
        self.set_name(start, size, Some("[stack]".to_string()))?;
        Ok(start)
    }

    /// Grows the GROWSDOWN vma above `addr` down to cover it (mm/mmap.c `expand_downwards`):
    /// within RLIMIT_STACK, above mmap_min_addr, and not into the guard gap of an accessible
    /// non-stack vma below.
    fn grow_stack(&mut self, addr: u64) -> Result<Vma, SegvCode> {
        let (&key, next) = self.vmas.range(addr..).next().ok_or(SegvCode::MapErr)?;
        if !next.grows_down() || !matches!(next.backing, Backing::Anon) {
            return Err(SegvCode::MapErr);
        }
        let new_start = self.granule.align_down(addr);
        if new_start < self.layout.min_addr || next.end - new_start > self.layout.stack_limit {
            return Err(SegvCode::MapErr);
        }
        if let Some((_, prev)) = self.vmas.range(..addr).next_back()
            && (prev.end > new_start
                || (!prev.grows_down()
                    && accessible(prev.prot)
                    && new_start - prev.end < self.guard_gap()))
        {
            return Err(SegvCode::MapErr);
        }
        // acct_stack_growth: the stack's new pages are charged like any accounted vma's.
        if next.accounted {
            let pages = self.granule.pages(next.start - new_start);
            self.frames
                .commit()
                .charge(pages, || self.total_vm())
                .map_err(|_| SegvCode::MapErr)?;
            self.committed += pages;
        }
        let mut v = self.vmas.remove(&key).expect("key found");
        v.start = new_start;
        self.vmas.insert(new_start, v.clone());
        Ok(v)
    }

    /// A fresh PTE for `va` in `vma` (mm/memory.c `do_anonymous_page`, `do_read_fault`,
    /// `do_shared_fault`), holding one frame reference.
    fn new_pte(&self, vma: &Vma, va: u64) -> Result<Pte, SegvCode> {
        let shift = self.granule.shift();
        let oom = |_| SegvCode::Oom;
        Ok(match &vma.backing {
            Backing::Anon => Pte {
                frame: self.frames.alloc_zeroed().map_err(oom)?,
                flags: PteFlags::ANON,
            },
            Backing::File { file, offset } => {
                let pgoff = (offset + (va - vma.start)) >> shift;
                // A page wholly past the end of the file is SIGBUS (mm/filemap.c
                // filemap_fault: VM_FAULT_SIGBUS beyond i_size); a partial last page reads
                // zeros past EOF.
                if pgoff << shift >= file.size() {
                    return Err(SegvCode::Bus);
                }
                let frame = self.cache.get_page(file, pgoff).map_err(|e| {
                    if e == Errno::ENOMEM {
                        SegvCode::Oom
                    } else {
                        SegvCode::Bus
                    }
                })?;
                let kind = if vma.is_shared() {
                    PteFlags::SHARED
                } else {
                    PteFlags::COW
                };
                Pte {
                    frame,
                    flags: PteFlags::FILE | kind,
                }
            }
            Backing::Shmem { shm, offset } => Pte {
                frame: shm
                    .get_page((offset + (va - vma.start)) >> shift)
                    .map_err(oom)?,
                flags: PteFlags::ANON | PteFlags::SHARED,
            },
        })
    }

    /// Breaks copy-on-write (mm/memory.c `do_wp_page`): the last reference to an anonymous frame
    /// is simply reused, anything else is copied into a new anonymous frame. The old frame's
    /// reference is dropped only on success.
    fn break_cow(&mut self, pte: Pte) -> Result<Pte, SegvCode> {
        let f = pte.flags;
        if f.contains(PteFlags::ANON)
            && !f.contains(PteFlags::SHARED)
            && self.frames.refcount(pte.frame) == 1
        {
            return Ok(Pte {
                frame: pte.frame,
                flags: f - PteFlags::COW,
            });
        }
        let new = self.frames.alloc().map_err(|_| SegvCode::Oom)?;
        self.frames.copy_frame(pte.frame, new);
        // The host may map the old frame here until the Map of the copy replaces it.
        self.put_pte_frame(pte.frame);
        Ok(Pte {
            frame: new,
            flags: (f - PteFlags::COW - PteFlags::FILE - PteFlags::SHARED)
                | PteFlags::ANON
                | PteFlags::DIRTY,
        })
    }

    /// Resolves an access to `addr` and queues the host mapping of its page; returns the PTE.
    /// `force` is FOLL_FORCE (ptrace, the ELF loader): writes to private mappings are allowed
    /// whatever their protection (COW-broken, the host mapping keeps the vma's protection), reads
    /// of PROT_NONE are allowed; shared mappings still need real permission (mm/gup.c
    /// `check_vma_flags`).
    fn fault_page(&mut self, addr: u64, access: Access, force: bool) -> Result<Pte, SegvCode> {
        if addr >= self.layout.task_size {
            return Err(SegvCode::MapErr);
        }
        let va = self.granule.align_down(addr);
        let vma = match self.vma_at(addr) {
            Some(v) => v.clone(),
            None => self.grow_stack(addr)?,
        };
        let write = access == Access::Write;
        // arch/x86/mm/fault.c `access_error`: a read needs any access right (there is no
        // write-only or exec-only page in hardware); write needs WRITE; exec needs EXEC.
        let allowed = match access {
            Access::Read => accessible(vma.prot) || force,
            Access::Write => vma.prot.contains(Prot::WRITE) || (force && !vma.is_shared()),
            Access::Exec => vma.prot.contains(Prot::EXEC),
        };
        if !allowed {
            return Err(SegvCode::AccErr);
        }
        let (mut pte, fresh) = match self.pt.get(va) {
            Some(p) => (p, false),
            // A poison marker (MADV_HWPOISON's hwpoison entry, UFFDIO_POISON's PTE marker:
            // mm/memory.c do_swap_page / do_pte_missing -> VM_FAULT_HWPOISON).
            None if self.poisoned.contains(&va) => return Err(SegvCode::HwPoison),
            None => (self.new_pte(&vma, va)?, true),
        };
        // A userfaultfd write-protected page whose write no monitor claimed (unregistered,
        // descriptor closed, or the kernel's own copy): the protection lapses, as
        // userfaultfd_clear_vma clears it.
        if write {
            pte.flags.remove(PteFlags::UFFD_WP);
        }
        if write && !write_ok(pte.flags) {
            if pte.flags.contains(PteFlags::COW) {
                match self.break_cow(pte) {
                    Ok(p) => pte = p,
                    Err(e) => {
                        if fresh {
                            self.frames.put(pte.frame);
                        }
                        return Err(e);
                    }
                }
            } else {
                // A clean shared file page: the write makes it dirty (wp_page_shared).
                pte.flags |= PteFlags::DIRTY;
            }
        }
        if write {
            pte.flags |= PteFlags::DIRTY;
        }
        let prot = effective_prot(&vma, pte.flags);
        pte.flags = with_prot(pte.flags, prot);
        self.pt.set(va, pte);
        self.ops.push(HostOp::Map {
            addr: va,
            len: self.granule.size(),
            prot,
            phys_offset: self.frames.offset(pte.frame),
        });
        Ok(pte)
    }

    /// Resolves a guest page fault at `addr` and queues the host mapping of the page (even if the
    /// page was already present with enough rights: the host may have lost it).
    ///
    /// When the engine cannot tell the access type it passes [`Access::Read`] for a page with no
    /// PTE and [`Access::Write`] when the host faulted on a page present read-only; a read fault
    /// on a writable private anonymous page maps it writable at once, so that costs no second
    /// fault in the common case.
    pub fn handle_fault(&mut self, addr: u64, access: Access) -> Result<(), SegvCode> {
        self.fault_page(addr, access, false).map(|_| ())
    }

    // userfaultfd, the vma side (mm/userfaultfd.c; the descriptor is fs/src/userfaultfd.rs).

    /// Whether the guest fault at `addr` goes to a userfaultfd monitor instead of being
    /// resolved (mm/memory.c `do_anonymous_page` -> `handle_userfault` for a `VM_UFFD_MISSING`
    /// vma): the page has no PTE, its vma is registered for missing faults with a context
    /// that is still open, and the access is allowed (an access error is SIGSEGV first, as in
    /// Linux). Returns the context and the message's `UFFD_PAGEFAULT_FLAG_*`. Only guest faults
    /// ask: the kernel's own copies ([`Mm::read_bytes`] ...) and prefaulting fill such pages
    /// with zeros, where Linux would block them on the monitor too.
    /// A write to a present page write-protected by `UFFDIO_WRITEPROTECT` in a range
    /// registered in WP mode goes to the monitor too (mm/memory.c `do_wp_page` ->
    /// `handle_userfault(VM_UFFD_WP)`, flags WP | WRITE).
    pub fn userfault(&self, addr: u64, access: Access) -> Option<(Arc<dyn Userfault>, u64)> {
        let vma = self.vma_at(addr)?;
        let reg = vma.uffd.as_ref()?;
        let allowed = match access {
            Access::Read => accessible(vma.prot),
            Access::Write => vma.prot.contains(Prot::WRITE),
            Access::Exec => vma.prot.contains(Prot::EXEC),
        };
        if !allowed || reg.ctx.released() {
            return None;
        }
        let write = if access == Access::Write {
            UFFD_PAGEFAULT_FLAG_WRITE
        } else {
            0
        };
        let va = self.granule.align_down(addr);
        let flags = match self.pt.get(va) {
            None if self.poisoned.contains(&va) => return None,
            None if reg.mode & UFFDIO_REGISTER_MODE_MISSING != 0 => write,
            Some(p)
                if write != 0
                    && p.flags.contains(PteFlags::UFFD_WP)
                    && reg.mode & UFFDIO_REGISTER_MODE_WP != 0 =>
            {
                UFFD_PAGEFAULT_FLAG_WP | write
            }
            _ => return None,
        };
        Some((reg.ctx.clone(), flags))
    }

    /// Whether `vma` can be registered (fs/userfaultfd.c `vma_can_userfault` for
    /// `VM_UFFD_MISSING`): private anonymous memory only here (Linux also takes shmem and
    /// hugetlbfs).
    fn uffd_capable(vma: &Vma) -> bool {
        matches!(vma.backing, Backing::Anon) && !vma.is_shared()
    }

    /// `UFFDIO_REGISTER`'s vma part (fs/userfaultfd.c `userfaultfd_register`) for a validated
    /// page-aligned `[start, end)`: at least one vma must lie in it (`EINVAL`), each one must
    /// be able to take it (`EINVAL`) and not be registered with another open context
    /// (`EBUSY`). The vmas are split at the ends and marked.
    pub fn uffd_register(&mut self, start: u64, end: u64, reg: UffdReg) -> Result<(), Errno> {
        let keys = self.keys_in(start, end);
        if keys.is_empty() {
            return Err(Errno::EINVAL);
        }
        for v in keys.iter().map(|k| &self.vmas[k]) {
            if !Self::uffd_capable(v) {
                return Err(Errno::EINVAL);
            }
            if let Some(r) = &v.uffd
                && !r.is(&reg.ctx)
                && !r.ctx.released()
            {
                return Err(Errno::EBUSY);
            }
        }
        self.update_range(start, end, |v| v.uffd = Some(reg.clone()));
        Ok(())
    }

    /// `UFFDIO_UNREGISTER`'s vma part (`userfaultfd_unregister`): clears `ctx`'s registration
    /// in `[start, end)`; `EINVAL` when no vma lies there or one could never be registered.
    pub fn uffd_unregister(
        &mut self,
        start: u64,
        end: u64,
        ctx: &Arc<dyn Userfault>,
    ) -> Result<(), Errno> {
        let keys = self.keys_in(start, end);
        if keys.is_empty() || keys.iter().any(|k| !Self::uffd_capable(&self.vmas[k])) {
            return Err(Errno::EINVAL);
        }
        // userfaultfd_clear_vma: the write-protect bits go with the registration.
        for k in self.keys_in(start, end) {
            let v = &self.vmas[&k];
            if v.uffd.as_ref().is_some_and(|r| r.is(ctx)) {
                let (s, e) = (v.start.max(start), v.end.min(end));
                self.uffd_wp_range(s, e, false);
            }
        }
        self.update_range(start, end, |v| {
            if v.uffd.as_ref().is_some_and(|r| r.is(ctx)) {
                v.uffd = None;
            }
        });
        Ok(())
    }

    /// `UFFDIO_WRITEPROTECT`'s vma part (mm/userfaultfd.c `mwriteprotect_range`): sets or
    /// clears the write-protect bit of the present pages of `[start, end)`; every vma there
    /// must be registered in WP mode with `ctx` (`ENOENT` otherwise, or when there is none).
    /// Pages not present are not marked (no `UFFD_FEATURE_WP_UNPOPULATED`).
    pub fn uffd_writeprotect(
        &mut self,
        start: u64,
        end: u64,
        wp: bool,
        ctx: &Arc<dyn Userfault>,
    ) -> Result<(), Errno> {
        let keys = self.keys_in(start, end);
        let registered = |v: &Vma| {
            v.uffd
                .as_ref()
                .is_some_and(|r| r.is(ctx) && r.mode & UFFDIO_REGISTER_MODE_WP != 0)
        };
        if keys.is_empty() || keys.iter().any(|k| !registered(&self.vmas[k])) {
            return Err(Errno::ENOENT);
        }
        self.uffd_wp_range(start, end, wp);
        Ok(())
    }

    /// Sets or clears `UFFD_WP` on the present pages of `[start, end)` and queues the host
    /// protection that follows (`uffd_wp_range`).
    fn uffd_wp_range(&mut self, start: u64, end: u64, wp: bool) {
        for k in self.keys_in(start, end) {
            let v = self.vmas[&k].clone();
            let (s, e) = (v.start.max(start), v.end.min(end));
            let size = self.granule.size();
            let ops = &mut self.ops;
            self.pt.update_in(s, e, |va, pte| {
                let flags = if wp {
                    pte.flags | PteFlags::UFFD_WP
                } else {
                    pte.flags - PteFlags::UFFD_WP
                };
                if flags == pte.flags {
                    return;
                }
                let prot = effective_prot(&v, flags);
                pte.flags = with_prot(flags, prot);
                ops.push(HostOp::Protect {
                    addr: va,
                    len: size,
                    prot,
                });
            });
        }
    }

    /// Whether `[start, end)` lies in one vma registered with `ctx` (mm/userfaultfd.c
    /// `find_dst_vma`; `ENOENT` otherwise), the destination check of `UFFDIO_COPY` and
    /// `UFFDIO_ZEROPAGE`.
    pub fn uffd_dst_ok(&self, start: u64, end: u64, ctx: &Arc<dyn Userfault>) -> Result<(), Errno> {
        match self.vma_at(start) {
            Some(v) if end <= v.end && v.uffd.as_ref().is_some_and(|r| r.is(ctx)) => Ok(()),
            _ => Err(Errno::ENOENT),
        }
    }

    /// `UFFDIO_POISON` (mm/userfaultfd.c `mfill_atomic_pte_poison`): marks the missing page
    /// `va` so that an access raises SIGBUS; `ENOENT` unless `va` lies in a vma registered
    /// with `ctx`, `EEXIST` if it is present or marked.
    pub fn uffd_poison(&mut self, va: u64, ctx: &Arc<dyn Userfault>) -> Result<(), Errno> {
        self.uffd_dst_ok(va, va + self.granule.size(), ctx)?;
        if self.pt.get(va).is_some() || !self.poisoned.insert(va) {
            return Err(Errno::EEXIST);
        }
        Ok(())
    }

    /// Installs a new private anonymous page at the page `va` holding `data` (`UFFDIO_COPY`,
    /// mm/userfaultfd.c `mfill_atomic_pte_copy`) or zeros (`UFFDIO_ZEROPAGE`), mapped with the
    /// vma's protection: `ENOENT` unless `va` lies in a vma registered with `ctx`, `EEXIST` if
    /// the page is present, `ENOMEM` without a frame.
    /// `wp` (`UFFDIO_COPY_MODE_WP`) maps it write-protected, which needs a WP registration
    /// (`EINVAL`).
    pub fn uffd_fill(
        &mut self,
        va: u64,
        data: Option<&[u8]>,
        wp: bool,
        ctx: &Arc<dyn Userfault>,
    ) -> Result<(), Errno> {
        let size = self.granule.size();
        self.uffd_dst_ok(va, va + size, ctx)?;
        let vma = self.vma_at(va).cloned().ok_or(Errno::ENOENT)?;
        if wp
            && vma
                .uffd
                .as_ref()
                .is_none_or(|r| r.mode & UFFDIO_REGISTER_MODE_WP == 0)
        {
            return Err(Errno::EINVAL);
        }
        if self.pt.get(va).is_some() || self.poisoned.contains(&va) {
            return Err(Errno::EEXIST);
        }
        let frame = self.frames.alloc_zeroed().map_err(|_| Errno::ENOMEM)?;
        if let Some(d) = data {
            self.frames
                .write(frame, 0, &d[..d.len().min(size as usize)]);
        }
        let mut flags = PteFlags::ANON | PteFlags::DIRTY;
        if wp {
            flags |= PteFlags::UFFD_WP;
        }
        let prot = effective_prot(&vma, flags);
        self.pt.set(
            va,
            Pte {
                frame,
                flags: with_prot(flags, prot),
            },
        );
        self.ops.push(HostOp::Map {
            addr: va,
            len: size,
            prot,
            phys_offset: self.frames.offset(frame),
        });
        Ok(())
    }

    /// Fault-around for sequential anonymous faults: after a fault at `addr`, maps up to
    /// `pages` more pages right after it, as a write fault would (zero-filled, writable), while
    /// they lie in the same private anonymous writable vma and have no PTE yet. Returns how
    /// many it mapped. (Linux `do_fault_around` does this for file pages; for anonymous memory
    /// the effect is what THP would give a sequential writer: one fault per window.)
    pub fn fault_around(&mut self, addr: u64, pages: usize) -> usize {
        let page = self.granule.size();
        let Some(vma) = self.vma_at(addr).cloned() else {
            return 0;
        };
        // A userfaultfd-registered range: its missing pages belong to the monitor.
        if !matches!(vma.backing, crate::Backing::Anon)
            || vma.is_shared()
            || !vma.prot.contains(Prot::WRITE)
            || vma.uffd.is_some()
        {
            return 0;
        }
        let mut va = self.granule.align_down(addr);
        let mut done = 0;
        while done < pages {
            va += page;
            if va >= vma.end || self.pt.get(va).is_some() {
                break;
            }
            if self.fault_page(va, Access::Write, false).is_err() {
                break;
            }
            done += 1;
        }
        done
    }

    /// Maps in the host the pages of the `pages`-page aligned window around `addr` that have a
    /// PTE already, as read faults on them would (same rights: copy-on-write pages stay
    /// read-only), in every accessible vma the window holds, not only `addr`'s: a program's
    /// data lies in several small vmas next to each other (a library's data and bss, its
    /// thread block, the heap), and a fork child touches them one after another (measured on
    /// busybox fork+exec: a fault each otherwise). Returns how many it mapped.
    ///
    /// For a not-present host fault on a page that has a PTE: that happens when the host lost
    /// or never had pages our table holds, which is the state of a fork child (its stub
    /// starts empty while its table is a copy of the parent's, [`Mm::fork`]) and of pages
    /// mremap moved. Linux's child inherits the parent's present PTEs (`copy_page_range`), so
    /// it takes no fault on them; ours would take one per page touched, each a round trip to
    /// the kernel. The neighbours of a touched page are likely touched too (the stack, libc's
    /// data, program text), and mapping one costs a host mmap in the stub's batch instead.
    /// Nothing changes in our table, so this is safe for every kind of vma (a page of a
    /// shared mapping is the frame its PTE names, as a fault would map it).
    pub fn map_present_around(&mut self, addr: u64, pages: usize) -> usize {
        let page = self.granule.size();
        if pages < 2 || self.vma_at(addr).is_none() {
            return 0;
        }
        let span = page * pages as u64;
        let start = addr / span * span;
        let end = start.saturating_add(span);
        let here = self.granule.align_down(addr);
        let mut done = 0;
        let mut va = start;
        while va < end {
            // A page with a PTE is in a vma; one whose vma the guest made inaccessible
            // (PROT_NONE) stays unmapped, as a read fault would refuse it.
            if va != here
                && self.pt.get(va).is_some()
                && self.vma_at(va).is_some_and(|v| accessible(v.prot))
                && self.fault_page(va, Access::Read, false).is_ok()
            {
                done += 1;
            }
            va += page;
        }
        done
    }

    /// Fault-around for file pages (mm/memory.c `do_fault_around`, `fault_around_bytes` = 64
    /// KiB): after a read fault at `addr` in a read-only private file mapping, maps the other
    /// pages of the
    /// `pages`-page aligned window around it that lie in the vma, within the file and have no
    /// PTE yet, read-only as a read fault would (private pages stay copy-on-write). Linux maps
    /// only pages already in the page cache; this one reads them in (read-ahead). Returns how
    /// many it mapped.
    pub fn fault_around_file(&mut self, addr: u64, pages: usize) -> usize {
        let page = self.granule.size();
        let Some(vma) = self.vma_at(addr).cloned() else {
            return 0;
        };
        // Only read-only private mappings (program text and rodata, where the benefit is):
        // pages mapped ahead of use in a shared or writable mapping would need every later
        // change of their page-cache page to reach them, which this cache does not promise.
        if !matches!(vma.backing, crate::Backing::File { .. })
            || vma.is_shared()
            || vma.prot.contains(Prot::WRITE)
            || vma.uffd.is_some()
            || pages < 2
        {
            return 0;
        }
        let span = page * pages as u64;
        let start = (addr / span * span).max(vma.start);
        let end = (addr / span * span + span).min(vma.end);
        let here = self.granule.align_down(addr);
        let mut done = 0;
        let mut va = start;
        while va < end {
            if va != here && self.pt.get(va).is_none() {
                match self.fault_page(va, Access::Read, false) {
                    Ok(_) => done += 1,
                    // Past the end of the file: nothing further maps either.
                    Err(_) if va > here => break,
                    Err(_) => {}
                }
            }
            va += page;
        }
        done
    }

    /// The PTE for `addr`, for callers that need to know without faulting (e.g. the engine
    /// deciding whether a fault was a write to a read-only page).
    pub fn pte(&self, addr: u64) -> Option<Pte> {
        self.pt.get(addr)
    }

    /// The PTE of `addr`'s page with the rights `access` needs, faulting it in if necessary.
    fn user_page(&mut self, addr: u64, access: Access, force: bool) -> Result<Pte, Errno> {
        let va = self.granule.align_down(addr);
        if let (Some(v), Some(p)) = (self.vma_at(addr), self.pt.get(va)) {
            let ok = match access {
                Access::Read => accessible(v.prot) || force,
                Access::Write => {
                    (v.prot.contains(Prot::WRITE) || (force && !v.is_shared())) && write_ok(p.flags)
                }
                Access::Exec => v.prot.contains(Prot::EXEC),
            };
            if ok {
                return Ok(p);
            }
        }
        self.fault_page(addr, access, force)
            .map_err(|_| Errno::EFAULT)
    }

    fn copy_in(&mut self, addr: u64, buf: &mut [u8], force: bool) -> Result<(), Errno> {
        let size = self.granule.size();
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr.checked_add(done as u64).ok_or(Errno::EFAULT)?;
            let off = self.granule.offset_in_page(a);
            let n = ((size - off) as usize).min(buf.len() - done);
            let pte = self.user_page(a, Access::Read, force)?;
            self.frames
                .read(pte.frame, off as usize, &mut buf[done..done + n]);
            done += n;
        }
        Ok(())
    }

    fn copy_out(&mut self, addr: u64, data: &[u8], force: bool) -> Result<(), Errno> {
        let size = self.granule.size();
        let mut done = 0usize;
        while done < data.len() {
            let a = addr.checked_add(done as u64).ok_or(Errno::EFAULT)?;
            let off = self.granule.offset_in_page(a);
            let n = ((size - off) as usize).min(data.len() - done);
            let pte = self.user_page(a, Access::Write, force)?;
            self.frames
                .write(pte.frame, off as usize, &data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    /// copy_from_user: faults pages in as needed; EFAULT on an unmapped or inaccessible address.
    /// On EFAULT part of `buf` may have been filled.
    pub fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.copy_in(addr, buf, false)
    }

    /// Like [`Mm::read_bytes`] but also reads PROT_NONE mappings (ptrace PEEK, FOLL_FORCE).
    pub fn read_bytes_force(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.copy_in(addr, buf, true)
    }

    /// copy_to_user: performs write faults (COW) as needed; EFAULT if not writable. On EFAULT a
    /// prefix may have been written.
    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        self.copy_out(addr, data, false)
    }

    /// Like [`Mm::write_bytes`] but ignores the protection of private mappings (the ELF loader,
    /// ptrace POKE): the page is COW-broken into a private copy and the host mapping keeps the
    /// vma's protection. Shared mappings still need PROT_WRITE (EFAULT otherwise), as in Linux.
    pub fn write_bytes_force(&mut self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        self.copy_out(addr, data, true)
    }

    /// Atomic compare-and-exchange of the u32 at `addr` (futex_atomic_cmpxchg_inatomic): faults
    /// the page in writable (COW break, shared-file dirtying) like [`Mm::write_bytes`], then
    /// replaces the word with `new` if it equals `old`. Returns the value found. `EINVAL` if
    /// `addr` is not 4-byte aligned, `EFAULT` if the word is not writable.
    pub fn cmpxchg_u32(&mut self, addr: u64, old: u32, new: u32) -> Result<u32, Errno> {
        if addr % 4 != 0 {
            return Err(Errno::EINVAL);
        }
        let pte = self.user_page(addr, Access::Write, false)?;
        let off = self.granule.offset_in_page(addr) as usize;
        Ok(self.frames.cmpxchg_u32(pte.frame, off, old, new))
    }

    /// Reads a NUL-terminated string of at most `max` bytes (NUL excluded from the result):
    /// ENAMETOOLONG if no NUL within `max` bytes, EFAULT if unreadable before the NUL.
    pub fn read_cstr(&mut self, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
        let size = self.granule.size();
        let mut out = Vec::new();
        let mut chunk = vec![0u8; size as usize];
        while out.len() < max {
            let a = addr.checked_add(out.len() as u64).ok_or(Errno::EFAULT)?;
            let off = self.granule.offset_in_page(a);
            let n = ((size - off) as usize).min(max - out.len());
            self.read_bytes(a, &mut chunk[..n])?;
            if let Some(i) = chunk[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..i]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
        Err(Errno::ENAMETOOLONG)
    }

    /// fork (kernel/fork.c `dup_mmap`, mm/memory.c `copy_page_range`): a copy with the same vmas.
    /// Shared pages are shared; private pages become COW in both address spaces (the parent's
    /// writable host mappings are queued to lose WRITE). The child's host process starts empty
    /// and faults its pages in, so the child's op queue is empty.
    pub fn fork(&mut self) -> Result<Mm, Errno> {
        // dup_mmap: each accounted vma is charged again for the child; the first refusal
        // fails the fork with ENOMEM.
        let commit = self.frames.commit();
        let total_vm = std::cell::OnceCell::new();
        let mut charged = 0;
        for v in self.vmas.values().filter(|v| v.accounted) {
            let pages = self.granule.pages(v.len());
            if let Err(e) = commit.charge(pages, || *total_vm.get_or_init(|| self.total_vm())) {
                commit.uncharge(charged);
                return Err(e);
            }
            charged += pages;
        }
        let mut child = Mm {
            frames: self.frames.clone(),
            cache: self.cache.clone(),
            layout: self.layout,
            granule: self.granule,
            // Memory locks are not inherited (mm/mmap.c dup_mmap clears VM_LOCKED and
            // VM_LOCKONFAULT; mm_init keeps no VM_LOCKED in def_flags). Nor are userfaultfd
            // registrations without UFFD_FEATURE_EVENT_FORK, which is not offered
            // (fs/userfaultfd.c dup_userfaultfd).
            vmas: self
                .vmas
                .iter()
                .map(|(&k, v)| {
                    (
                        k,
                        Vma {
                            lock: VmLock::None,
                            uffd: None,
                            ..v.clone()
                        },
                    )
                })
                .collect(),
            pt: PageTable::new(self.granule, va_bits(self.layout, self.granule)),
            ops: Vec::new(),
            start_brk: self.start_brk,
            brk: self.brk,
            vdso: self.vdso,
            def_lock: VmLock::None,
            committed: charged,
            // copy_pte_marker: poison markers are copied to the child.
            poisoned: self.poisoned.clone(),
            // Registered in the reverse map by into_shared.
            me: Weak::new(),
            shared: false,
            rmapped: HashSet::new(),
            ops_taken: 0,
            gathered: Vec::new(),
        };
        let size = self.granule.size();
        let mut copies = Vec::with_capacity(self.pt.len());
        for v in self.vmas.values() {
            // VM_WIPEONFORK: the child's range starts empty (dup_mmap copies no pages).
            if v.wipe_on_fork {
                continue;
            }
            let shared = v.is_shared();
            let ops = &mut self.ops;
            self.pt.update_in(v.start, v.end, |va, pte| {
                if !shared {
                    pte.flags |= PteFlags::COW;
                    if pte.flags.contains(PteFlags::WRITE) {
                        pte.flags.remove(PteFlags::WRITE);
                        ops.push(HostOp::Protect {
                            addr: va,
                            len: size,
                            prot: prot_of(pte.flags),
                        });
                    }
                }
                copies.push((va, *pte));
            });
        }
        for (va, mut pte) in copies {
            self.frames.get(pte.frame);
            // The child has no userfaultfd registration (above): no write-protect either
            // (mm/memory.c copy_present_pte clears the uffd-wp bit).
            pte.flags.remove(PteFlags::UFFD_WP);
            child.pt.set(va, pte);
        }
        Ok(child)
    }

    /// Drains the queued host changes, in order, merging neighbours: consecutive Maps of
    /// contiguous addresses and physical offsets with one protection, consecutive adjacent
    /// Unmaps, consecutive adjacent Protects with one protection.
    pub fn take_host_ops(&mut self) -> Vec<HostOp> {
        self.ops_taken += 1;
        let mut out: Vec<HostOp> = Vec::with_capacity(self.ops.len());
        for op in self.ops.drain(..) {
            if let Some(last) = out.last_mut() {
                match (last, &op) {
                    (
                        HostOp::Map {
                            addr,
                            len,
                            prot,
                            phys_offset,
                        },
                        HostOp::Map {
                            addr: a2,
                            len: l2,
                            prot: p2,
                            phys_offset: o2,
                        },
                    ) if *addr + *len == *a2 && *phys_offset + *len == *o2 && prot == p2 => {
                        *len += l2;
                        continue;
                    }
                    (HostOp::Unmap { addr, len }, HostOp::Unmap { addr: a2, len: l2 })
                        if *addr + *len == *a2 =>
                    {
                        *len += l2;
                        continue;
                    }
                    (
                        HostOp::Protect { addr, len, prot },
                        HostOp::Protect {
                            addr: a2,
                            len: l2,
                            prot: p2,
                        },
                    ) if *addr + *len == *a2 && prot == p2 => {
                        *len += l2;
                        continue;
                    }
                    _ => {}
                }
            }
            out.push(op);
        }
        out
    }

    /// Queues a Map for every present page, with its current protection: for a host process that
    /// starts with nothing mapped but should not fault everything in (an eagerly populated fork
    /// child, a restarted stub). Adjacent pages coalesce in [`Mm::take_host_ops`].
    pub fn remap_all(&mut self) {
        let size = self.granule.size();
        let frames = &self.frames;
        let ops = &mut self.ops;
        self.pt.for_each_in(0, u64::MAX, |va, pte| {
            ops.push(HostOp::Map {
                addr: va,
                len: size,
                prot: prot_of(pte.flags),
                phys_offset: frames.offset(pte.frame),
            });
        });
    }

    /// mlock, mlock2 and munlock of `[addr, addr + len)` (mm/mlock.c `do_mlock`,
    /// `apply_vma_lock_flags`, `mlock_fixup`): the range is widened to whole pages, must be
    /// mapped throughout (ENOMEM before any change otherwise), and every vma in it gets `lock`
    /// (split at the ends). Locking with [`VmLock::Locked`] then faults the range in
    /// (`__mm_populate`, which stops quietly at a page it cannot fault, as Linux's
    /// ignore_errors does for PROT_NONE).
    pub fn mlock(&mut self, addr: u64, len: u64, lock: VmLock) -> Result<(), Errno> {
        let g = self.granule;
        let start = g.align_down(addr);
        let end = addr
            .checked_add(len)
            .and_then(|e| g.align_up(e))
            .ok_or(Errno::ENOMEM)?;
        if end == start {
            return Ok(());
        }
        if !self.covered(start, end) {
            return Err(Errno::ENOMEM);
        }
        self.update_range(start, end, |v| v.lock = lock);
        if lock == VmLock::Locked {
            self.populate_locked(start, end);
        }
        Ok(())
    }

    /// mlockall and munlockall (mm/mlock.c `apply_mlockall_flags`): `current` is the lock
    /// every existing vma gets (`MCL_CURRENT`, or [`VmLock::None`] to unlock them), if any;
    /// `future` the lock of mappings made from now on (`MCL_FUTURE`).
    pub fn mlockall(&mut self, current: Option<VmLock>, future: VmLock) {
        self.def_lock = future;
        if let Some(lock) = current {
            for v in self.vmas.values_mut() {
                v.lock = lock;
            }
            let (lo, hi) = (
                self.vmas.keys().next().copied().unwrap_or(0),
                self.vmas.values().last().map_or(0, |v| v.end),
            );
            self.merge_around(lo, hi);
            if lock == VmLock::Locked {
                self.populate_locked(lo, hi);
            }
        }
    }

    /// Faults in the locked vmas of `[start, end)`, skipping PROT_NONE ones (mm/gup.c
    /// `populate_vma_page_range` is not called for them).
    fn populate_locked(&mut self, start: u64, end: u64) {
        let ranges: Vec<(u64, u64)> = self
            .keys_in(start, end)
            .iter()
            .map(|k| &self.vmas[k])
            .filter(|v| !v.prot.is_empty() && v.lock == VmLock::Locked)
            .map(|v| (v.start.max(start), v.end.min(end)))
            .collect();
        for (s, e) in ranges {
            self.populate(s, e);
        }
    }

    /// Calls `f` with every present PTE of `[start, end)`, in address order (smaps, pagemap).
    pub fn for_each_pte(&self, start: u64, end: u64, f: impl FnMut(u64, Pte)) {
        self.pt.for_each_in(start, end, f);
    }

    /// Pages in locked vmas (Linux `mm->locked_vm`; `VmLck` is this times the page size).
    pub fn locked_pages(&self) -> u64 {
        self.vmas
            .values()
            .filter(|v| v.lock != VmLock::None)
            .map(|v| self.granule.pages(v.len()))
            .sum()
    }

    /// mincore's vector for the whole pages of `[start, end)` (mm/mincore.c): 1 for a page that
    /// is mapped here, or, for a file or shared-memory mapping, that is in the object's cache
    /// (another process may have brought it in); 0 otherwise. ENOMEM if the range is not
    /// mapped throughout.
    pub fn mincore(&self, start: u64, end: u64) -> Result<Vec<u8>, Errno> {
        if !self.covered(start, end) {
            return Err(Errno::ENOMEM);
        }
        let size = self.granule.size();
        let mut out = Vec::with_capacity(((end - start) / size) as usize);
        let mut va = start;
        while va < end {
            let v = self.vma_at(va).ok_or(Errno::ENOMEM)?;
            let resident = self.pt.get(va).is_some()
                || match &v.backing {
                    Backing::Anon => false,
                    Backing::File { file, offset } => self
                        .cache
                        .contains(file.id(), (offset + (va - v.start)) / size),
                    Backing::Shmem { shm, offset } => {
                        shm.contains((offset + (va - v.start)) / size)
                    }
                };
            out.push(u8::from(resident));
            va += size;
        }
        Ok(out)
    }

    /// Snapshot of the vmas in address order (/proc/PID/maps).
    pub fn vmas(&self) -> Vec<Vma> {
        self.vmas.values().cloned().collect()
    }

    /// The vma containing `addr` (unlike Linux's `find_vma`, not the next one above).
    pub fn find_vma(&self, addr: u64) -> Option<Vma> {
        self.vma_at(addr).cloned()
    }

    /// Resident pages (PTEs present).
    pub fn rss_pages(&self) -> usize {
        self.pt.len()
    }

    /// The most pages resident at once (Linux `mm->hiwater_rss`; a forked copy starts at what
    /// it inherited, as dup_mm sets it).
    pub fn hiwater_pages(&self) -> usize {
        self.pt.peak()
    }

    /// Whether a shared mapping that may write (Linux `is_shared_maywrite`: `VM_SHARED` and
    /// `VM_MAYWRITE`, whatever its protection now) maps the file with page-cache id `file_id`;
    /// Linux counts these in `mapping->i_mmap_writable`.
    pub fn maps_shared_writable(&self, file_id: u64) -> bool {
        self.vmas.values().any(|v| {
            v.is_shared()
                && v.may_write
                && matches!(&v.backing, Backing::File { file, .. } if file.id() == file_id)
        })
    }

    /// Mapped size in pages (Linux's `mm->total_vm`; VmSize is this times the page size).
    pub fn total_vm(&self) -> u64 {
        self.vmas
            .values()
            .map(|v| self.granule.pages(v.len()))
            .sum()
    }
}

impl Drop for Mm {
    fn drop(&mut self) {
        for o in std::mem::take(&mut self.rmapped) {
            self.cache.rmap.remove(o, &self.me);
        }
        self.frames.commit().uncharge(self.committed);
        let vmas = std::mem::take(&mut self.vmas);
        for v in vmas.values() {
            self.zap(v, v.start, v.end);
        }
        // No PTE should lie outside a vma; release any all the same rather than leak.
        for (_, pte) in self.pt.drain_range(0, u64::MAX) {
            self.frames.put(pte.frame);
        }
        // The address space is gone: no thread runs guest code in it any more (its stub
        // process is killed as its last thread leaves), so nothing waits for an unmap.
        for f in std::mem::take(&mut self.gathered) {
            self.frames.put(f);
        }
    }
}

#[cfg(test)]
mod rmap_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod uffd_tests;
