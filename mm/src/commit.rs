//! Overcommit accounting (Linux mm/util.c `__vm_enough_memory`, `vm_commit_limit`;
//! Documentation/mm/overcommit-accounting.rst).
//!
//! Every private writable mapping (not `MAP_NORESERVE`), the heap and the stacks are
//! *accounted* (Linux `VM_ACCOUNT`): their size counts in [`Commit::committed_pages`]
//! (`Committed_AS`) from the moment they are made until they are unmapped, whether or not their
//! pages were ever touched, and a fork charges each of them again for the child. Each charge is
//! judged by `vm.overcommit_memory`:
//! - 0 (`OVERCOMMIT_GUESS`, the default): refused only when the one request is larger than all
//!   of memory (there is no swap here), so a process cannot map more than the machine in one go
//!   but may overcommit in many;
//! - 1 (`OVERCOMMIT_ALWAYS`): never refused;
//! - 2 (`OVERCOMMIT_NEVER`): refused when the total would pass the commit limit
//!   (`overcommit_kbytes`, or `overcommit_ratio` percent of memory), less the admin reserve and
//!   a 1/32 share of the process's size up to the user reserve.
//!
//! One [`Commit`] belongs to a kernel's [`crate::FrameAllocator`] (its memory is "all of
//! memory"), so every address space of one kernel shares it. Unlike Linux, the charge cannot see
//! the caller's `CAP_SYS_ADMIN` (this crate knows no credentials): the admin reserve is always
//! held back, as for an unprivileged caller. Neighbours: [`crate::Mm`] charges and releases;
//! procfs shows and sets the knobs (`/proc/sys/vm/overcommit_*`, `/proc/meminfo`).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use um_uapi::Errno;

/// `OVERCOMMIT_GUESS`.
pub const OVERCOMMIT_GUESS: u32 = 0;
/// `OVERCOMMIT_ALWAYS`.
pub const OVERCOMMIT_ALWAYS: u32 = 1;
/// `OVERCOMMIT_NEVER`.
pub const OVERCOMMIT_NEVER: u32 = 2;

/// A kernel's committed memory and its overcommit policy.
pub struct Commit {
    /// All of memory, in pages (`totalram_pages()`; no swap).
    total_pages: u64,
    /// Page size in KiB, to turn the `*_kbytes` knobs into pages.
    page_kb: u64,
    /// `vm_committed_as`, in pages.
    committed: AtomicU64,
    /// `vm.overcommit_memory`.
    mode: AtomicU32,
    /// `vm.overcommit_ratio` (percent).
    ratio: AtomicU64,
    /// `vm.overcommit_kbytes` (0: use the ratio).
    kbytes: AtomicU64,
    /// `vm.admin_reserve_kbytes`.
    admin_reserve_kb: AtomicU64,
    /// `vm.user_reserve_kbytes`.
    user_reserve_kb: AtomicU64,
}

impl Commit {
    /// The accounting of a machine with `total_pages` pages of `page_size` bytes, with Linux's
    /// defaults: guess mode, ratio 50, and the reserves `init_admin_reserve` and
    /// `init_user_reserve` (mm/util.c) set at boot: 1/32 of memory, at most 8 MiB and
    /// 128 MiB.
    pub fn new(total_pages: u64, page_size: u64) -> Commit {
        let page_kb = (page_size / 1024).max(1);
        let total_kb = total_pages * page_kb;
        Commit {
            total_pages,
            page_kb,
            committed: AtomicU64::new(0),
            mode: AtomicU32::new(OVERCOMMIT_GUESS),
            ratio: AtomicU64::new(50),
            kbytes: AtomicU64::new(0),
            admin_reserve_kb: AtomicU64::new((total_kb / 32).min(8 << 10)),
            user_reserve_kb: AtomicU64::new((total_kb / 32).min(128 << 10)),
        }
    }

    /// Pages committed now (`Committed_AS`).
    pub fn committed_pages(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// `vm_commit_limit`: `overcommit_kbytes`, else `overcommit_ratio` percent of memory, in
    /// pages (`CommitLimit`).
    pub fn limit_pages(&self) -> u64 {
        match self.kbytes.load(Ordering::Relaxed) {
            0 => self.total_pages * self.ratio.load(Ordering::Relaxed) / 100,
            kb => kb / self.page_kb,
        }
    }

    /// `vm.overcommit_memory`.
    pub fn mode(&self) -> u32 {
        self.mode.load(Ordering::Relaxed)
    }

    /// Sets `vm.overcommit_memory` (0, 1 or 2; else `EINVAL`, as its sysctl's bounds).
    pub fn set_mode(&self, mode: u32) -> Result<(), Errno> {
        if mode > OVERCOMMIT_NEVER {
            return Err(Errno::EINVAL);
        }
        self.mode.store(mode, Ordering::Relaxed);
        Ok(())
    }

    /// `vm.overcommit_ratio`.
    pub fn ratio(&self) -> u64 {
        self.ratio.load(Ordering::Relaxed)
    }

    /// Sets `vm.overcommit_ratio`; as `overcommit_ratio_handler`, this clears
    /// `overcommit_kbytes` (the two are alternatives).
    pub fn set_ratio(&self, ratio: u64) {
        self.ratio.store(ratio, Ordering::Relaxed);
        self.kbytes.store(0, Ordering::Relaxed);
    }

    /// `vm.overcommit_kbytes`.
    pub fn kbytes(&self) -> u64 {
        self.kbytes.load(Ordering::Relaxed)
    }

    /// Sets `vm.overcommit_kbytes` (`overcommit_kbytes_handler`: a non-zero value makes the
    /// ratio read 0).
    pub fn set_kbytes(&self, kb: u64) {
        self.kbytes.store(kb, Ordering::Relaxed);
        if kb != 0 {
            self.ratio.store(0, Ordering::Relaxed);
        }
    }

    /// `vm.admin_reserve_kbytes`.
    pub fn admin_reserve_kb(&self) -> u64 {
        self.admin_reserve_kb.load(Ordering::Relaxed)
    }

    /// Sets `vm.admin_reserve_kbytes`.
    pub fn set_admin_reserve_kb(&self, kb: u64) {
        self.admin_reserve_kb.store(kb, Ordering::Relaxed);
    }

    /// `vm.user_reserve_kbytes`.
    pub fn user_reserve_kb(&self) -> u64 {
        self.user_reserve_kb.load(Ordering::Relaxed)
    }

    /// Sets `vm.user_reserve_kbytes`.
    pub fn set_user_reserve_kb(&self, kb: u64) {
        self.user_reserve_kb.store(kb, Ordering::Relaxed);
    }

    /// `__vm_enough_memory`: charges `pages` for a process whose mappings total `total_vm()`
    /// pages (asked only in never mode: it is a walk of the address space), or refuses
    /// (`ENOMEM`) and charges nothing.
    pub fn charge(&self, pages: u64, total_vm: impl FnOnce() -> u64) -> Result<(), Errno> {
        let now = self.committed.fetch_add(pages, Ordering::Relaxed) + pages;
        let ok = match self.mode() {
            OVERCOMMIT_ALWAYS => true,
            OVERCOMMIT_GUESS => pages <= self.total_pages,
            _ => {
                let admin = self.admin_reserve_kb() / self.page_kb;
                let user = (total_vm() / 32).min(self.user_reserve_kb() / self.page_kb);
                let allowed = self.limit_pages().saturating_sub(admin + user);
                now < allowed
            }
        };
        if ok {
            Ok(())
        } else {
            self.uncharge(pages);
            Err(Errno::ENOMEM)
        }
    }

    /// Charges without asking (`vm_acct_memory`): for memory that only changes hands.
    pub fn charge_anyway(&self, pages: u64) {
        self.committed.fetch_add(pages, Ordering::Relaxed);
    }

    /// Releases a charge (`vm_unacct_memory`).
    pub fn uncharge(&self, pages: u64) {
        let _ = self
            .committed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(c.saturating_sub(pages))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guess_refuses_only_a_single_request_bigger_than_memory() {
        let c = Commit::new(1000, 4096);
        assert!(c.charge(1000, || 0).is_ok());
        assert!(c.charge(1000, || 0).is_ok());
        assert_eq!(c.committed_pages(), 2000);
        assert_eq!(c.charge(1001, || 0), Err(Errno::ENOMEM));
        assert_eq!(c.committed_pages(), 2000);
        c.uncharge(2000);
        assert_eq!(c.committed_pages(), 0);
    }

    #[test]
    fn always_refuses_nothing() {
        let c = Commit::new(10, 4096);
        c.set_mode(OVERCOMMIT_ALWAYS).unwrap();
        assert!(c.charge(1 << 40, || 0).is_ok());
        assert_eq!(c.set_mode(3), Err(Errno::EINVAL));
    }

    #[test]
    fn never_holds_the_total_under_the_limit_less_reserves() {
        // 1 GiB of 4 KiB pages: limit 50% = 131072 pages; admin reserve 8 MiB = 2048 pages.
        let c = Commit::new(262_144, 4096);
        c.set_mode(OVERCOMMIT_NEVER).unwrap();
        assert_eq!(c.limit_pages(), 131_072);
        assert_eq!(c.admin_reserve_kb(), 8192);
        // The total, this request included, must stay below 131072 - 2048 = 129024.
        assert!(c.charge(129_000, || 0).is_ok());
        assert!(c.charge(23, || 0).is_ok());
        assert_eq!(c.charge(1, || 0), Err(Errno::ENOMEM));
        c.uncharge(129_023);
        // A big process also holds back 1/32 of its size, up to the user reserve (set at
        // boot to 1/32 of memory, at most 128 MiB: 32 MiB = 8192 pages here).
        assert_eq!(c.user_reserve_kb(), 32 << 10);
        assert!(c.charge(120_831, || 1 << 30).is_ok());
        assert_eq!(c.charge(1, || 1 << 30), Err(Errno::ENOMEM));
        c.uncharge(120_831);
        // overcommit_kbytes replaces the ratio.
        c.set_kbytes(4096);
        assert_eq!((c.limit_pages(), c.ratio()), (1024, 0));
        c.set_ratio(100);
        assert_eq!((c.limit_pages(), c.kbytes()), (262_144, 0));
    }
}
