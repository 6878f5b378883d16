//! Module memory: the host pages a loaded module's sections live in (Linux `module_alloc`,
//! `kernel/module/main.c` `module_memory_alloc`, `set_memory_ro/x`).
//!
//! At the first load, an **arena** is reserved (`PROT_NONE`, `MAP_NORESERVE`) right below the
//! kernel's own image, so module code reaches the kernel's API functions and other modules with
//! direct branches and 32-bit PC-relative references: x86_64 `PLT32`/`PC32` reach +-2 GiB,
//! arm64 `CALL26` +-128 MiB (the loader adds veneers when a target is further). Where the host
//! leaves no room there, regions are mapped wherever the host puts them and the loader's
//! veneers and GOT do the reaching.
//!
//! A [`ModuleMem`] is one module's regions (text, rodata, data, init text, init data), each on
//! its own host pages: allocated read-write and zeroed ([`ModuleMem::alloc`]), filled with the
//! linked bytes and given their final protection, RX, R or RW, with the instruction cache made
//! coherent on arm64 ([`ModuleMem::install`]). Init regions are freed after init
//! ([`ModuleMem::free_init`]); everything is freed when the last reference goes (unload). Every
//! live `ModuleMem` is listed, so an address that module code hands the kernel (a function
//! pointer in a `struct um_file_operations`) can be checked against live module text before the
//! kernel calls it ([`is_live_text`]).
//!
//! Neighbours: [`crate::call`] (calls into the code placed here), `um-module` (the loader that
//! produces the bytes; it never touches host memory).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use um_uapi::Errno;

/// Protection of an installed region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prot {
    /// Text: read and execute.
    ReadExec,
    /// Read-only data.
    Read,
    /// Data and bss.
    ReadWrite,
}

impl Prot {
    fn host(self) -> libc::c_int {
        match self {
            Prot::ReadExec => libc::PROT_READ | libc::PROT_EXEC,
            Prot::Read => libc::PROT_READ,
            Prot::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
        }
    }
}

/// One region a module needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionReq {
    /// Bytes (sizes include veneers, GOT and bss).
    pub size: u64,
    /// Alignment of the region's start (at least the host page is always given).
    pub align: u64,
    /// Freed after init (`.init.text`, `.init.data`).
    pub init: bool,
}

/// One allocated region.
#[derive(Clone, Copy, Debug)]
struct Region {
    addr: u64,
    /// Size in whole host pages.
    len: u64,
    init: bool,
    /// The final protection, once installed.
    prot: Option<Prot>,
    /// Still mapped (init regions stop being live after init).
    live: bool,
}

/// The memory of one loaded module.
pub struct ModuleMem {
    regions: Mutex<Vec<Region>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The host page size.
pub fn host_page() -> u64 {
    static P: OnceLock<u64> = OnceLock::new();
    *P.get_or_init(|| {
        // SAFETY: sysconf has no memory effects.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 { p as u64 } else { 4096 }
    })
}

fn round_up(x: u64, a: u64) -> Option<u64> {
    x.checked_add(a - 1).map(|v| v & !(a - 1))
}

/// Every live module's memory, for [`is_live_text`] and [`readable`].
fn all() -> &'static Mutex<Vec<Weak<ModuleMem>>> {
    static ALL: OnceLock<Mutex<Vec<Weak<ModuleMem>>>> = OnceLock::new();
    ALL.get_or_init(Default::default)
}

/// The arena near the kernel's text, or None when the host gave no room there.
struct Arena {
    base: u64,
    len: u64,
    /// Free ranges: start -> length.
    free: BTreeMap<u64, u64>,
}

/// Arena size: x86_64 code reaches +-2 GiB with 32-bit displacements; arm64 direct branches
/// +-128 MiB, so its arena is smaller and the kernel image must fit in the rest of that reach.
#[cfg(target_arch = "aarch64")]
const ARENA_SIZE: u64 = 64 << 20;
#[cfg(not(target_arch = "aarch64"))]
const ARENA_SIZE: u64 = 256 << 20;
/// Step of the search for a free arena below (then above) the kernel image.
const ARENA_STEP: u64 = 2 << 20;
/// How far from the kernel's text the arena may start: the reach, less the arena and room for
/// the kernel image itself.
#[cfg(target_arch = "aarch64")]
const ARENA_REACH: u64 = 32 << 20;
#[cfg(not(target_arch = "aarch64"))]
const ARENA_REACH: u64 = 1 << 30;

/// An address in the kernel's text (this crate is linked into the `linux` executable).
fn kernel_text() -> u64 {
    crate::api::kernel_symbols as *const () as usize as u64
}

/// Maps `len` bytes of inaccessible, unreserved memory exactly at `addr`; false if the range is
/// taken (or the host put the mapping elsewhere, on hosts without `MAP_FIXED_NOREPLACE`).
fn reserve_at(addr: u64, len: u64) -> bool {
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; a new anonymous PROT_NONE
    // mapping changes no memory that Rust code uses.
    let p = unsafe {
        libc::mmap(
            addr as usize as *mut libc::c_void,
            len as usize,
            libc::PROT_NONE,
            libc::MAP_PRIVATE
                | libc::MAP_ANONYMOUS
                | libc::MAP_NORESERVE
                | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return false;
    }
    if p as usize as u64 != addr {
        // SAFETY: `p` is the mapping just made, used by nothing.
        unsafe { libc::munmap(p, len as usize) };
        return false;
    }
    true
}

/// Reserves the arena: the first free `ARENA_SIZE` range going down from the kernel's text,
/// then going up, within `ARENA_REACH`.
fn reserve_arena() -> Option<Arena> {
    let text = kernel_text() & !(ARENA_STEP - 1);
    let steps = ARENA_REACH / ARENA_STEP;
    let below = (1..=steps).filter_map(|i| text.checked_sub(ARENA_SIZE + (i - 1) * ARENA_STEP));
    let above = (1..=steps).map(|i| text + i * ARENA_STEP);
    for base in below.chain(above) {
        if base >= 1 << 20 && reserve_at(base, ARENA_SIZE) {
            let mut free = BTreeMap::new();
            free.insert(base, ARENA_SIZE);
            log::info!(
                "modules: {} MiB of module space at {base:#x}, near the kernel text at {:#x}",
                ARENA_SIZE >> 20,
                kernel_text()
            );
            return Some(Arena {
                base,
                len: ARENA_SIZE,
                free,
            });
        }
    }
    log::info!("modules: no room near the kernel text; module regions go where the host puts them");
    None
}

fn arena() -> &'static Mutex<Option<Arena>> {
    static A: OnceLock<Mutex<Option<Arena>>> = OnceLock::new();
    A.get_or_init(|| Mutex::new(reserve_arena()))
}

impl Arena {
    /// First fit of `len` bytes aligned to `align`.
    fn take(&mut self, len: u64, align: u64) -> Option<u64> {
        let (start, flen, at) = self.free.iter().find_map(|(&s, &l)| {
            let at = round_up(s, align)?;
            (at.checked_add(len)? <= s + l).then_some((s, l, at))
        })?;
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        if at + len < start + flen {
            self.free.insert(at + len, start + flen - (at + len));
        }
        Some(at)
    }

    /// Returns a range, merging it with its free neighbours.
    fn give(&mut self, mut addr: u64, mut len: u64) {
        if let Some((&s, &l)) = self.free.range(..addr).next_back() {
            if s + l == addr {
                self.free.remove(&s);
                addr = s;
                len += l;
            }
        }
        if let Some(&l) = self.free.get(&(addr + len)) {
            self.free.remove(&(addr + len));
            len += l;
        }
        self.free.insert(addr, len);
    }

    fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr < self.base + self.len
    }
}

/// Maps `len` bytes read-write (zeroed) aligned to `align`: in the arena if there is one and
/// `near` is asked for, else where the host chooses.
fn map_region(len: u64, align: u64, near: bool) -> Result<u64, Errno> {
    let mut a = lock(arena());
    if let Some(ar) = a.as_mut().filter(|_| near) {
        if let Some(addr) = ar.take(len, align) {
            // SAFETY: the range is part of the arena this crate reserved and handed to no one
            // else (just taken from the free list).
            let r = unsafe {
                libc::mprotect(
                    addr as usize as *mut libc::c_void,
                    len as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if r != 0 {
                ar.give(addr, len);
                return Err(Errno::ENOMEM);
            }
            return Ok(addr);
        }
    }
    drop(a);
    // Outside the arena: over-allocate to align, trim the rest.
    let total = len + align.saturating_sub(host_page());
    // SAFETY: a new anonymous mapping where the host chooses; nothing else uses it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(Errno::ENOMEM);
    }
    let start = p as usize as u64;
    let at = round_up(start, align).ok_or(Errno::ENOMEM)?;
    // SAFETY: both trimmed pieces are parts of the mapping just made, outside [at, at+len).
    unsafe {
        if at > start {
            libc::munmap(p, (at - start) as usize);
        }
        let end = start + total;
        if at + len < end {
            libc::munmap(
                (at + len) as usize as *mut libc::c_void,
                (end - at - len) as usize,
            );
        }
    }
    Ok(at)
}

/// Unmaps a region: back to the arena (made inaccessible and its pages dropped), or to the host.
fn unmap_region(addr: u64, len: u64) {
    let mut a = lock(arena());
    match a.as_mut() {
        Some(ar) if ar.contains(addr) => {
            // SAFETY: the range is a region of the arena that its module no longer uses (the
            // caller owns it); a fresh PROT_NONE mapping over it drops its pages.
            let p = unsafe {
                libc::mmap(
                    addr as usize as *mut libc::c_void,
                    len as usize,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                log::error!("modules: cannot release module memory at {addr:#x}; leaking it");
                return;
            }
            ar.give(addr, len);
        }
        _ => {
            // SAFETY: the range is a region mapped by `map_region` outside the arena, owned by
            // the caller, which no longer uses it.
            unsafe { libc::munmap(addr as usize as *mut libc::c_void, len as usize) };
        }
    }
}

/// Makes the instruction cache coherent with data just written at `[addr, addr+len)` (arm64:
/// clean the data cache to the point of unification, invalidate the instruction cache, as
/// Linux `caches_clean_inval_pou`; x86 keeps them coherent).
#[cfg(target_arch = "aarch64")]
fn flush_icache(addr: u64, len: u64) {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 is allowed at EL0 on Linux (SCTLR_EL1.UCT) and has no effects.
    unsafe { std::arch::asm!("mrs {0}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
    let dline = 4u64 << ((ctr >> 16) & 0xf);
    let iline = 4u64 << (ctr & 0xf);
    let end = addr + len;
    let mut a = addr & !(dline - 1);
    while a < end {
        // SAFETY: cache maintenance by address on memory this crate mapped (readable); it
        // changes no data.
        unsafe { std::arch::asm!("dc cvau, {0}", in(reg) a, options(nostack)) };
        a += dline;
    }
    // SAFETY: a barrier.
    unsafe { std::arch::asm!("dsb ish", options(nostack)) };
    let mut a = addr & !(iline - 1);
    while a < end {
        // SAFETY: as above, instruction cache invalidation by address (SCTLR_EL1.UCI).
        unsafe { std::arch::asm!("ic ivau, {0}", in(reg) a, options(nostack)) };
        a += iline;
    }
    // SAFETY: barriers.
    unsafe { std::arch::asm!("dsb ish", "isb", options(nostack)) };
}

#[cfg(not(target_arch = "aarch64"))]
fn flush_icache(_addr: u64, _len: u64) {}

impl ModuleMem {
    /// Allocates one region per request, read-write and zeroed, each on its own pages, near
    /// the kernel's text. Returns the memory and the regions' addresses in request order.
    pub fn alloc(reqs: &[RegionReq]) -> Result<(Arc<ModuleMem>, Vec<u64>), Errno> {
        Self::alloc_placed(reqs, true)
    }

    /// As [`ModuleMem::alloc`], but wherever the host maps new memory, typically out of
    /// direct-branch range of the kernel: for tests that the loader's veneers work.
    pub fn alloc_far(reqs: &[RegionReq]) -> Result<(Arc<ModuleMem>, Vec<u64>), Errno> {
        Self::alloc_placed(reqs, false)
    }

    fn alloc_placed(reqs: &[RegionReq], near: bool) -> Result<(Arc<ModuleMem>, Vec<u64>), Errno> {
        let page = host_page();
        let mem = ModuleMem {
            regions: Mutex::new(Vec::new()),
        };
        let mut addrs = Vec::with_capacity(reqs.len());
        for r in reqs {
            let align = r.align.max(page);
            if !align.is_power_of_two() || align > ARENA_SIZE {
                return Err(Errno::ENOEXEC);
            }
            let len = round_up(r.size.max(1), page).ok_or(Errno::ENOMEM)?;
            if len > ARENA_SIZE {
                return Err(Errno::ENOMEM);
            }
            // On failure, `mem` drops and frees what was allocated so far.
            let addr = map_region(len, align, near)?;
            lock(&mem.regions).push(Region {
                addr,
                len,
                init: r.init,
                prot: None,
                live: true,
            });
            addrs.push(addr);
        }
        let mem = Arc::new(mem);
        let mut all = lock(all());
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&mem));
        Ok((mem, addrs))
    }

    /// Copies `bytes` to the start of region `index` and gives it its final protection
    /// (making the instruction cache coherent first for text). Once per region.
    pub fn install(&self, index: usize, bytes: &[u8], prot: Prot) -> Result<(), Errno> {
        let mut regions = lock(&self.regions);
        let r = regions.get_mut(index).ok_or(Errno::EINVAL)?;
        if r.prot.is_some() || !r.live || bytes.len() as u64 > r.len {
            return Err(Errno::EINVAL);
        }
        // SAFETY: [addr, addr+len) is this region, mapped read-write by `alloc` and not yet
        // installed, so no module code runs in it and nothing else refers to it; `bytes` fits.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), r.addr as usize as *mut u8, bytes.len());
        }
        if prot == Prot::ReadExec {
            flush_icache(r.addr, r.len);
        }
        // SAFETY: changes the protection of this region only.
        let rc = unsafe {
            libc::mprotect(
                r.addr as usize as *mut libc::c_void,
                r.len as usize,
                prot.host(),
            )
        };
        if rc != 0 {
            return Err(Errno::ENOMEM);
        }
        r.prot = Some(prot);
        Ok(())
    }

    /// Frees the init regions (after init ran, or failed).
    pub fn free_init(&self) {
        for r in lock(&self.regions).iter_mut().filter(|r| r.init && r.live) {
            unmap_region(r.addr, r.len);
            r.live = false;
        }
    }

    /// Bytes of the regions that stay after init (`/proc/modules` size), and of the init ones.
    pub fn sizes(&self) -> (u64, u64) {
        let regions = lock(&self.regions);
        let sum = |init: bool| {
            regions
                .iter()
                .filter(|r| r.init == init)
                .map(|r| r.len)
                .sum()
        };
        (sum(false), sum(true))
    }

    /// The start of the first (text) region, for logs.
    pub fn base(&self) -> u64 {
        lock(&self.regions).first().map_or(0, |r| r.addr)
    }

    /// The live installed region holding `[addr, addr+len)`, if any.
    fn region_of(&self, addr: u64, len: u64) -> Option<Region> {
        let end = addr.checked_add(len)?;
        lock(&self.regions)
            .iter()
            .find(|r| r.live && r.prot.is_some() && addr >= r.addr && end <= r.addr + r.len)
            .copied()
    }

    /// Whether `addr` is in live text of this module.
    pub fn is_text(&self, addr: u64) -> bool {
        self.region_of(addr, 1)
            .is_some_and(|r| r.prot == Some(Prot::ReadExec))
    }

    /// Copies `buf.len()` bytes of this module's memory at `addr` (module parameters); false if
    /// the range is not inside one live region.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        if self.region_of(addr, buf.len() as u64).is_none() {
            return false;
        }
        // SAFETY: the range lies inside a live, installed (hence readable) region of this
        // module; module code may write it concurrently, so this is a plain byte copy into
        // `buf`, like the kernel reading a parameter.
        unsafe {
            std::ptr::copy_nonoverlapping(addr as usize as *const u8, buf.as_mut_ptr(), buf.len())
        };
        true
    }

    /// Writes `data` into this module's read-write memory at `addr` (setting a parameter);
    /// false if the range is not inside one live read-write region.
    pub fn write(&self, addr: u64, data: &[u8]) -> bool {
        match self.region_of(addr, data.len() as u64) {
            Some(r) if r.prot == Some(Prot::ReadWrite) => {
                // SAFETY: the range lies inside a live read-write region of this module.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        data.as_ptr(),
                        addr as usize as *mut u8,
                        data.len(),
                    )
                };
                true
            }
            _ => false,
        }
    }

    /// A NUL-terminated string in this module's memory at `addr` (a `charp` parameter), at
    /// most `max` bytes; None if it does not start inside a live region.
    pub fn read_cstr(&self, addr: u64, max: usize) -> Option<Vec<u8>> {
        let r = self.region_of(addr, 1)?;
        let avail = (r.addr + r.len - addr).min(max as u64) as usize;
        let mut buf = vec![0u8; avail];
        if !self.read(addr, &mut buf) {
            return None;
        }
        let n = buf.iter().position(|&b| b == 0).unwrap_or(avail);
        buf.truncate(n);
        Some(buf)
    }
}

impl Drop for ModuleMem {
    fn drop(&mut self) {
        for r in lock(&self.regions).iter_mut().filter(|r| r.live) {
            unmap_region(r.addr, r.len);
            r.live = false;
        }
    }
}

/// The live module memory whose text holds `addr`.
pub fn live_text_owner(addr: u64) -> Option<Arc<ModuleMem>> {
    lock(all())
        .iter()
        .filter_map(Weak::upgrade)
        .find(|m| m.is_text(addr))
}

/// Whether `addr` is in the live text of some module.
pub fn is_live_text(addr: u64) -> bool {
    live_text_owner(addr).is_some()
}

/// A NUL-terminated string at `addr` in some live module region, at most `max` bytes.
pub fn read_cstr_any(addr: u64, max: usize) -> Option<Vec<u8>> {
    lock(all())
        .iter()
        .filter_map(Weak::upgrade)
        .find_map(|m| m.read_cstr(addr, max))
}

/// Whether `[addr, addr+len)` lies in one live region of some module.
pub fn readable(addr: u64, len: u64) -> bool {
    lock(all())
        .iter()
        .filter_map(Weak::upgrade)
        .any(|m| m.region_of(addr, len).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_first_fit_and_merge() {
        let mut a = Arena {
            base: 0x10000,
            len: 0x10000,
            free: BTreeMap::from([(0x10000, 0x10000)]),
        };
        let x = a.take(0x1000, 0x1000).unwrap();
        let y = a.take(0x1000, 0x4000).unwrap();
        assert_eq!(x, 0x10000);
        assert_eq!(y, 0x14000);
        assert_eq!(a.take(0x20000, 0x1000), None);
        a.give(x, 0x1000);
        a.give(y, 0x1000);
        assert_eq!(a.free, BTreeMap::from([(0x10000, 0x10000)]));
    }

    #[test]
    fn regions_install_protect_and_free() {
        let page = host_page();
        let reqs = [
            RegionReq {
                size: 10,
                align: 16,
                init: false,
            },
            RegionReq {
                size: page + 1,
                align: 8,
                init: false,
            },
            RegionReq {
                size: 100,
                align: 8,
                init: true,
            },
        ];
        let (mem, addrs) = ModuleMem::alloc(&reqs).unwrap();
        assert_eq!(addrs.len(), 3);
        assert!(addrs.iter().all(|a| a % page == 0));
        assert_eq!(mem.sizes(), (3 * page, page));
        mem.install(0, &[0xc3; 10], Prot::ReadExec).unwrap();
        mem.install(1, b"hello\0world", Prot::ReadWrite).unwrap();
        mem.install(2, b"init", Prot::Read).unwrap();
        assert_eq!(mem.install(2, b"x", Prot::Read), Err(Errno::EINVAL));
        assert!(mem.is_text(addrs[0] + 3));
        assert!(is_live_text(addrs[0]));
        assert!(!mem.is_text(addrs[1]));
        assert_eq!(mem.read_cstr(addrs[1], 64).unwrap(), b"hello");
        assert!(mem.write(addrs[1] + 6, b"W"));
        assert!(!mem.write(addrs[2], b"W"), "read-only region");
        let mut b = [0u8; 5];
        assert!(mem.read(addrs[1] + 6, &mut b));
        assert_eq!(&b, b"World");
        assert!(readable(addrs[2], 4));
        mem.free_init();
        assert!(!readable(addrs[2], 4));
        assert!(!mem.read(addrs[2], &mut b));
        drop(mem);
        assert!(!is_live_text(addrs[0]));
    }
}
