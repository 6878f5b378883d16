//! Tests of the userfaultfd vma side ([`Mm::userfault`], `uffd_register`, `uffd_fill`,
//! `uffd_writeprotect`, `uffd_unregister`) and how registrations travel through mremap, fork
//! and fault-around. The context is a stand-in: these tests never sleep in it.

use super::*;
use crate::HeapMemory;
use std::sync::atomic::{AtomicBool, Ordering};

const RW: Prot = Prot::READ.union(Prot::WRITE);
const ANON_PRIV: MapFlags = MapFlags::PRIVATE.union(MapFlags::ANONYMOUS);
const ANON_SHARED: MapFlags = MapFlags::SHARED.union(MapFlags::ANONYMOUS);
const MISSING: u64 = UFFDIO_REGISTER_MODE_MISSING;
const WP: u64 = UFFDIO_REGISTER_MODE_WP;

#[derive(Default)]
struct Ctx(AtomicBool);

impl Userfault for Ctx {
    fn released(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    fn handle_fault(&self, _addr: u64, _flags: u64) -> Result<(), SegvCode> {
        unreachable!("the tests do not sleep")
    }
}

fn setup() -> (Arc<FrameAllocator>, Mm) {
    let g = Granule::K4;
    let fa = Arc::new(FrameAllocator::new(Arc::new(HeapMemory::new(4 << 20)), g));
    let cache = Arc::new(PageCache::new(fa.clone()));
    let layout = Layout {
        task_size: 0x7fff_ffff_0000,
        mmap_base: 0x7f00_0000_0000,
        stack_top: 0x7ffe_0000_0000,
        stack_limit: 8 << 20,
        min_addr: 0x10000,
    };
    (fa.clone(), Mm::new(fa, cache, layout))
}

fn ctx() -> Arc<dyn Userfault> {
    Arc::new(Ctx::default())
}

fn reg(ctx: &Arc<dyn Userfault>, mode: u64) -> UffdReg {
    UffdReg {
        ctx: ctx.clone(),
        mode,
    }
}

#[test]
fn missing_pages_go_to_the_monitor_until_filled() {
    let (fa, mut mm) = setup();
    let ps = mm.granule().size();
    let a = mm.mmap(0, 4 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    let cc = Arc::new(Ctx::default());
    let c: Arc<dyn Userfault> = cc.clone();
    // Page 0 is present before registering: it stays the guest's.
    mm.handle_fault(a, Access::Write).unwrap();
    mm.uffd_register(a + ps, a + 3 * ps, reg(&c, MISSING))
        .unwrap();
    // Split at the ends: three vmas.
    assert_eq!(mm.vmas().len(), 3);
    assert!(mm.userfault(a, Access::Read).is_none());
    assert!(mm.userfault(a + 3 * ps, Access::Read).is_none());
    let (got, flags) = mm.userfault(a + ps + 5, Access::Write).unwrap();
    assert!(std::ptr::addr_eq(Arc::as_ptr(&got), Arc::as_ptr(&c)));
    assert_eq!(flags, UFFD_PAGEFAULT_FLAG_WRITE);
    assert_eq!(mm.userfault(a + ps, Access::Read).unwrap().1, 0);
    // Fault-around after the fault on page 0 leaves the registered pages alone.
    assert_eq!(mm.fault_around(a + ps, 4), 0);
    // UFFDIO_COPY: the page arrives with its bytes, writable as the vma.
    let _ = mm.take_host_ops();
    let data = vec![0x5au8; ps as usize];
    mm.uffd_fill(a + ps, Some(&data), false, &c).unwrap();
    assert!(mm.userfault(a + ps, Access::Read).is_none());
    assert_eq!(
        mm.take_host_ops(),
        vec![HostOp::Map {
            addr: a + ps,
            len: ps,
            prot: RW,
            phys_offset: fa.offset(mm.pte(a + ps).unwrap().frame),
        }]
    );
    let mut b = [0u8; 4];
    mm.read_bytes(a + ps + 100, &mut b).unwrap();
    assert_eq!(b, [0x5a; 4]);
    assert_eq!(mm.uffd_fill(a + ps, None, false, &c), Err(Errno::EEXIST));
    // Outside the registered range, or with another context: ENOENT.
    assert_eq!(
        mm.uffd_fill(a + 3 * ps, None, false, &c),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        mm.uffd_fill(a + 2 * ps, None, false, &ctx()),
        Err(Errno::ENOENT)
    );
    assert_eq!(mm.uffd_dst_ok(a + ps, a + 4 * ps, &c), Err(Errno::ENOENT));
    // UFFDIO_COPY_MODE_WP needs a WP registration.
    assert_eq!(mm.uffd_fill(a + 2 * ps, None, true, &c), Err(Errno::EINVAL));
    // UFFDIO_ZEROPAGE.
    mm.uffd_fill(a + 2 * ps, None, false, &c).unwrap();
    mm.read_bytes(a + 2 * ps, &mut b).unwrap();
    assert_eq!(b, [0; 4]);
    // A closed descriptor: the range faults normally.
    mm.madvise(a + ps, 2 * ps, MADV_DONTNEED).unwrap();
    assert!(mm.userfault(a + ps, Access::Read).is_some());
    cc.0.store(true, Ordering::Relaxed);
    assert!(mm.userfault(a + ps, Access::Read).is_none());
    // Every frame comes back.
    let free_before = {
        let (f2, _) = setup();
        f2.free_frames()
    };
    drop(mm);
    assert_eq!(fa.free_frames(), free_before);
}

#[test]
fn register_checks_the_vmas_and_the_owner() {
    let (_fa, mut mm) = setup();
    let ps = mm.granule().size();
    let c = ctx();
    // No vma in the range.
    assert_eq!(
        mm.uffd_register(0x100000, 0x100000 + ps, reg(&c, MISSING)),
        Err(Errno::EINVAL)
    );
    // Shared anonymous memory is not taken here.
    let s = mm.mmap(0, ps, RW, ANON_SHARED, Backing::Anon).unwrap();
    assert_eq!(
        mm.uffd_register(s, s + ps, reg(&c, MISSING)),
        Err(Errno::EINVAL)
    );
    let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    mm.uffd_register(a, a + 2 * ps, reg(&c, MISSING)).unwrap();
    // Again with the same context: fine; with another open one: EBUSY.
    mm.uffd_register(a, a + ps, reg(&c, MISSING)).unwrap();
    let other = Arc::new(Ctx::default());
    let o: Arc<dyn Userfault> = other.clone();
    assert_eq!(
        mm.uffd_register(a, a + ps, reg(&o, MISSING)),
        Err(Errno::EBUSY)
    );
    // Once the first context is closed, another may take the range.
    let closed = Arc::new(Ctx::default());
    let cl: Arc<dyn Userfault> = closed.clone();
    let b = mm.mmap(0, ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    mm.uffd_register(b, b + ps, reg(&cl, MISSING)).unwrap();
    closed.0.store(true, Ordering::Relaxed);
    mm.uffd_register(b, b + ps, reg(&o, MISSING)).unwrap();
    assert!(mm.userfault(b, Access::Read).is_some());
    // Unregister clears only this context's registration, and merges the vmas back.
    mm.uffd_unregister(a, a + 2 * ps, &c).unwrap();
    assert!(mm.userfault(a, Access::Read).is_none());
    assert!(mm.find_vma(a).unwrap().uffd.is_none());
    assert_eq!(mm.uffd_unregister(s, s + ps, &c), Err(Errno::EINVAL));
}

#[test]
fn mremap_dontunmap_keeps_the_registration_on_the_old_range_only() {
    let (_fa, mut mm) = setup();
    let ps = mm.granule().size();
    let a = mm.mmap(0, ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    mm.write_bytes(a, b"ABCD").unwrap();
    let c = ctx();
    mm.uffd_register(a, a + ps, reg(&c, MISSING)).unwrap();
    let n = mm
        .mremap(a, ps, ps, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0)
        .unwrap();
    assert_ne!(n, a);
    // The old page is missing now and belongs to the monitor; the new one has the data.
    assert!(mm.userfault(a, Access::Read).is_some());
    assert!(mm.find_vma(n).unwrap().uffd.is_none());
    let mut b = [0u8; 4];
    mm.read_bytes(n, &mut b).unwrap();
    assert_eq!(&b, b"ABCD");
    // A fork's child has no registration either.
    let child = mm.fork().unwrap();
    assert!(child.find_vma(a).unwrap().uffd.is_none());
    assert!(child.userfault(a, Access::Read).is_none());
}

#[test]
fn write_protect_sends_writes_to_the_monitor() {
    let (_fa, mut mm) = setup();
    let ps = mm.granule().size();
    let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    mm.write_bytes(a, &[0; 16]).unwrap();
    let c = ctx();
    // WRITEPROTECT needs a WP registration.
    mm.uffd_register(a, a + 2 * ps, reg(&c, MISSING)).unwrap();
    assert_eq!(
        mm.uffd_writeprotect(a, a + ps, true, &c),
        Err(Errno::ENOENT)
    );
    mm.uffd_register(a, a + 2 * ps, reg(&c, WP)).unwrap();
    let _ = mm.take_host_ops();
    mm.uffd_writeprotect(a, a + 2 * ps, true, &c).unwrap();
    // Only the present page is marked, and its host mapping loses WRITE.
    assert_eq!(
        mm.take_host_ops(),
        vec![HostOp::Protect {
            addr: a,
            len: ps,
            prot: Prot::READ,
        }]
    );
    assert!(mm.pte(a).unwrap().flags.contains(PteFlags::UFFD_WP));
    assert!(mm.pte(a + ps).is_none());
    // Reads go on; a write is the monitor's, with WP | WRITE.
    assert!(mm.userfault(a, Access::Read).is_none());
    assert_eq!(
        mm.userfault(a + 3, Access::Write).unwrap().1,
        UFFD_PAGEFAULT_FLAG_WP | UFFD_PAGEFAULT_FLAG_WRITE
    );
    // WP mode alone: a missing page faults normally.
    assert!(mm.userfault(a + ps, Access::Read).is_none());
    // Clearing gives the write back.
    mm.uffd_writeprotect(a, a + ps, false, &c).unwrap();
    assert!(mm.userfault(a, Access::Write).is_none());
    assert!(mm.pte(a).unwrap().flags.contains(PteFlags::WRITE));
    // Unregistering clears the bits too; a write nobody claims goes through.
    mm.uffd_writeprotect(a, a + ps, true, &c).unwrap();
    mm.uffd_unregister(a, a + 2 * ps, &c).unwrap();
    assert!(!mm.pte(a).unwrap().flags.contains(PteFlags::UFFD_WP));
    mm.handle_fault(a, Access::Write).unwrap();
    assert!(mm.pte(a).unwrap().flags.contains(PteFlags::WRITE));
}

#[test]
fn poison_markers_raise_sigbus_until_zapped_and_move_with_mremap() {
    let (_fa, mut mm) = setup();
    let ps = mm.granule().size();
    let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    let c = ctx();
    mm.uffd_register(a, a + 2 * ps, reg(&c, MISSING)).unwrap();
    mm.uffd_poison(a, &c).unwrap();
    assert_eq!(mm.uffd_poison(a, &c), Err(Errno::EEXIST));
    assert_eq!(mm.uffd_fill(a, None, false, &c), Err(Errno::EEXIST));
    // Not the monitor's any more: the access is SIGBUS, the kernel's copies EFAULT.
    assert!(mm.userfault(a, Access::Read).is_none());
    assert_eq!(mm.handle_fault(a, Access::Read), Err(SegvCode::HwPoison));
    assert_eq!(mm.read_bytes(a, &mut [0u8; 1]), Err(Errno::EFAULT));
    // A present page cannot be poisoned.
    mm.uffd_fill(a + ps, None, false, &c).unwrap();
    assert_eq!(mm.uffd_poison(a + ps, &c), Err(Errno::EEXIST));
    // mremap moves the marker; MADV_DONTNEED removes it.
    let n = mm
        .mremap(
            a,
            2 * ps,
            2 * ps,
            MREMAP_MAYMOVE | MREMAP_FIXED,
            a + 16 * ps,
        )
        .unwrap();
    assert_eq!(mm.handle_fault(n, Access::Read), Err(SegvCode::HwPoison));
    mm.madvise(n, ps, MADV_DONTNEED).unwrap();
    mm.handle_fault(n, Access::Read).unwrap();
}
