//! Tests of the address-space operations, at both 4K and 16K granules where geometry matters.
//! Each test builds a small physical memory and checks, at the end, that every frame came back.

use super::*;
use crate::HeapMemory;
use crate::VmFile;
use crate::commit::{OVERCOMMIT_ALWAYS, OVERCOMMIT_GUESS, OVERCOMMIT_NEVER};
use crate::pagecache::tests::FakeFile;

const RW: Prot = Prot::READ.union(Prot::WRITE);
const ANON_PRIV: MapFlags = MapFlags::PRIVATE.union(MapFlags::ANONYMOUS);
const ANON_SHARED: MapFlags = MapFlags::SHARED.union(MapFlags::ANONYMOUS);
const MMAP_BASE: u64 = 0x7f00_0000_0000;
const STACK_TOP: u64 = 0x7ffe_0000_0000;

struct Env {
    fa: Arc<FrameAllocator>,
    cache: Arc<PageCache>,
    start_free: usize,
}

impl Env {
    fn new(g: Granule) -> Env {
        let fa = Arc::new(FrameAllocator::new(Arc::new(HeapMemory::new(4 << 20)), g));
        let cache = Arc::new(PageCache::new(fa.clone()));
        let start_free = fa.free_frames();
        Env {
            fa,
            cache,
            start_free,
        }
    }

    fn layout() -> Layout {
        Layout {
            task_size: 0x7fff_ffff_f000 & !0xffff,
            mmap_base: MMAP_BASE,
            stack_top: STACK_TOP,
            stack_limit: 8 << 20,
            min_addr: 0x10000,
        }
    }

    fn mm(&self) -> Mm {
        Mm::new(self.fa.clone(), self.cache.clone(), Env::layout())
    }

    /// Every frame is back once address spaces and the cache are gone.
    fn assert_no_leak(&self) {
        self.cache.clear();
        assert_eq!(self.fa.free_frames(), self.start_free, "frames leaked");
    }
}

fn both(f: impl Fn(Granule)) {
    f(Granule::K4);
    f(Granule::K16);
}

fn file(id: u64, len: usize) -> (Arc<FakeFile>, Arc<dyn VmFile>) {
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let ff = FakeFile::new(id, data);
    let f: Arc<dyn VmFile> = ff.clone();
    (ff, f)
}

fn read_vec(mm: &mut Mm, addr: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    mm.read_bytes(addr, &mut v).unwrap();
    v
}

#[test]
fn mm_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Mm>();
    check::<FrameAllocator>();
    check::<PageCache>();
}

#[test]
fn fault_around_maps_the_following_anonymous_pages_only() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = mm.mmap(0, 8 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        mm.handle_fault(a, Access::Write).unwrap();
        // Page 3 is already present: the window stops before it.
        mm.handle_fault(a + 3 * ps, Access::Write).unwrap();
        let _ = mm.take_host_ops();
        assert_eq!(mm.fault_around(a, 4), 2);
        // (Maps of contiguous frames may be merged into one op.)
        let mapped: u64 = mm
            .take_host_ops()
            .iter()
            .map(|op| match op {
                HostOp::Map { len, .. } => len / ps,
                _ => 0,
            })
            .sum();
        assert_eq!(mapped, 2);
        assert!(mm.pte(a + ps).unwrap().flags.contains(PteFlags::WRITE));
        assert!(mm.pte(a + 2 * ps).is_some());
        // Bounded by the window and by the vma's end.
        assert_eq!(mm.fault_around(a + 3 * ps, 2), 2);
        assert!(mm.pte(a + 6 * ps).is_none());
        assert_eq!(mm.fault_around(a + 5 * ps, 100), 2);
        assert_eq!(mm.rss_pages(), 8);
        // Not for read-only or file-backed memory.
        let r = mm
            .mmap(0, 4 * ps, Prot::READ, ANON_PRIV, Backing::Anon)
            .unwrap();
        mm.handle_fault(r, Access::Read).unwrap();
        assert_eq!(mm.fault_around(r, 4), 0);
        let (_ff, f) = file(9, 4 * ps as usize);
        let m = mm
            .mmap(
                0,
                4 * ps,
                RW,
                MapFlags::PRIVATE,
                Backing::File { file: f, offset: 0 },
            )
            .unwrap();
        mm.handle_fault(m, Access::Read).unwrap();
        assert_eq!(mm.fault_around(m, 4), 0);
    });
}

#[test]
fn file_fault_around_maps_the_aligned_window_within_vma_and_file() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        // 6 pages of file, mapped 8 pages long: the last 2 are past EOF.
        let (_ff, f) = file(11, 6 * ps as usize);
        let m = mm
            .mmap(
                0,
                8 * ps,
                Prot::READ,
                MapFlags::PRIVATE,
                Backing::File { file: f, offset: 0 },
            )
            .unwrap();
        mm.handle_fault(m + 2 * ps, Access::Read).unwrap();
        let n = mm.fault_around_file(m + 2 * ps, 16);
        // Pages 0..6 of the vma except the faulting one, nothing past EOF.
        assert_eq!(n, 5);
        assert_eq!(mm.rss_pages(), 6);
        assert!(mm.pte(m + 6 * ps).is_none());
        assert!(mm.pte(m).unwrap().flags.contains(PteFlags::COW));
        assert!(!mm.pte(m).unwrap().flags.contains(PteFlags::WRITE));
        // Not for shared or writable file mappings.
        let (_ff2, f2) = file(12, 4 * ps as usize);
        let w = mm
            .mmap(
                0,
                4 * ps,
                RW,
                MapFlags::PRIVATE,
                Backing::File {
                    file: f2.clone(),
                    offset: 0,
                },
            )
            .unwrap();
        mm.handle_fault(w, Access::Read).unwrap();
        assert_eq!(mm.fault_around_file(w, 16), 0);
        let sh = mm
            .mmap(
                0,
                4 * ps,
                Prot::READ,
                MapFlags::SHARED,
                Backing::File {
                    file: f2,
                    offset: 0,
                },
            )
            .unwrap();
        mm.handle_fault(sh, Access::Read).unwrap();
        assert_eq!(mm.fault_around_file(sh, 16), 0);
        // Anonymous memory is not file fault-around's business.
        let a = mm.mmap(0, 4 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        mm.handle_fault(a, Access::Read).unwrap();
        assert_eq!(mm.fault_around_file(a, 16), 0);
    });
}

#[test]
fn anon_fault_zero_fill_and_host_ops() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = mm.mmap(0, 3 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        assert_eq!(a, MMAP_BASE - 3 * ps, "top-down below mmap_base");
        assert!(mm.take_host_ops().is_empty(), "mmap itself maps nothing");
        // A read fault on a writable private page maps it writable at once.
        mm.handle_fault(a + ps + 5, Access::Read).unwrap();
        let pte = mm.pte(a + ps).unwrap();
        assert!(pte.flags.contains(PteFlags::WRITE | PteFlags::ANON));
        assert_eq!(
            mm.take_host_ops(),
            vec![HostOp::Map {
                addr: a + ps,
                len: ps,
                prot: RW,
                phys_offset: env.fa.offset(pte.frame),
            }]
        );
        assert_eq!(read_vec(&mut mm, a + ps, ps as usize), vec![0; ps as usize]);
        assert_eq!(mm.rss_pages(), 1);
        // Faulting a present page re-queues its Map.
        mm.handle_fault(a + ps, Access::Write).unwrap();
        assert_eq!(mm.take_host_ops().len(), 1);
        assert_eq!(mm.total_vm(), 3);

        // munmap queues an Unmap and returns the frame.
        let free = env.fa.free_frames();
        mm.munmap(a, 3 * ps).unwrap();
        assert_eq!(
            mm.take_host_ops(),
            vec![HostOp::Unmap {
                addr: a,
                len: 3 * ps
            }]
        );
        assert_eq!(env.fa.free_frames(), free + 1);
        assert!(mm.vmas().is_empty());
        drop(mm);
        env.assert_no_leak();
    });
}

/// With deferred freeing (the kernel's setting), a frame whose PTE goes stays allocated until
/// the engine drops the gather it takes with the ops that unmap it (mmu_gather): munmap, a
/// copy-on-write break that drops the last other reference, and address-space teardown.
#[test]
fn deferred_free_holds_frames_until_the_gather_is_dropped() {
    both(|g| {
        let env = Env::new(g);
        env.fa.set_deferred_free(true);
        let mut mm = env.mm();
        let ps = g.size();
        let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        mm.handle_fault(a, Access::Write).unwrap();
        mm.handle_fault(a + ps, Access::Write).unwrap();
        let _ = mm.take_host_ops();
        assert!(mm.take_gathered().is_empty(), "faults free nothing");
        let free = env.fa.free_frames();
        mm.munmap(a, ps).unwrap();
        assert_eq!(mm.take_host_ops().len(), 1);
        assert_eq!(
            env.fa.free_frames(),
            free,
            "not free before the host unmapped it"
        );
        let gather = mm.take_gathered();
        assert_eq!(gather.len(), 1);
        assert!(mm.take_gathered().is_empty(), "taken once");
        drop(gather);
        assert_eq!(env.fa.free_frames(), free + 1);

        // A copy-on-write break in the child: its reference to the shared frame waits with
        // the Map of its copy (the parent still maps the frame; the child's host still does
        // until that Map lands).
        let mut child = mm.fork().unwrap();
        let _ = mm.take_host_ops();
        assert!(mm.take_gathered().is_empty(), "fork frees nothing");
        child.handle_fault(a + ps, Access::Write).unwrap();
        let _ = child.take_host_ops();
        let g2 = child.take_gathered();
        assert_eq!(g2.len(), 1, "the old frame of the copy-on-write break");
        let f = mm.pte(a + ps).unwrap().frame;
        assert_eq!(
            env.fa.refcount(f),
            2,
            "the parent's and the gathered reference"
        );
        drop(g2);
        assert_eq!(env.fa.refcount(f), 1);

        // Frames not taken by the engine go with the address space.
        child.munmap(a + ps, ps).unwrap();
        drop(child);
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn mmap_argument_errors() {
    let env = Env::new(Granule::K4);
    let mut mm = env.mm();
    let fixed = ANON_PRIV | MapFlags::FIXED;
    assert_eq!(
        mm.mmap(0, 0, RW, ANON_PRIV, Backing::Anon),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        mm.mmap(0x100_0001, 4096, RW, fixed, Backing::Anon),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        mm.mmap(0, 4096, RW, MapFlags::ANONYMOUS, Backing::Anon),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        mm.mmap(0x1000, 4096, RW, fixed, Backing::Anon),
        Err(Errno::EPERM)
    );
    let ts = Env::layout().task_size;
    assert_eq!(
        mm.mmap(ts, 4096, RW, fixed, Backing::Anon),
        Err(Errno::ENOMEM)
    );
    assert_eq!(
        mm.mmap(0, u64::MAX - 10, RW, ANON_PRIV, Backing::Anon),
        Err(Errno::ENOMEM)
    );
    let (_ff, f) = file(1, 100);
    assert_eq!(
        mm.mmap(
            0,
            4096,
            Prot::READ,
            MapFlags::PRIVATE,
            Backing::File {
                file: f,
                offset: 100
            }
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        mm.mmap(0, 4096, Prot::from_bits_retain(8), ANON_PRIV, Backing::Anon),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        mm.mmap(
            0,
            4096,
            RW,
            MapFlags::SHARED_VALIDATE | MapFlags::ANONYMOUS | MapFlags::from_bits_retain(1 << 30),
            Backing::Anon
        ),
        Err(Errno::EOPNOTSUPP)
    );
    // MAP_HUGETLB needs a hugetlbfs file (the syscall makes one for anonymous mappings;
    // crate::hugetlb), so over plain anonymous memory (/dev/zero) it is EINVAL.
    assert_eq!(
        mm.mmap(0, 4096, RW, ANON_PRIV | MapFlags::HUGETLB, Backing::Anon),
        Err(Errno::EINVAL)
    );
    assert!(mm.vmas().is_empty());
    // SHARED_VALIDATE with known flags is a shared mapping.
    let a = mm
        .mmap(
            0,
            4096,
            RW,
            MapFlags::SHARED_VALIDATE | MapFlags::ANONYMOUS,
            Backing::Anon,
        )
        .unwrap();
    assert!(mm.find_vma(a).unwrap().is_shared());
}

#[test]
fn munmap_and_mprotect_split_and_merge() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = 0x1000_0000;
        mm.mmap(a, 6 * ps, RW, ANON_PRIV | MapFlags::FIXED, Backing::Anon)
            .unwrap();
        mm.write_bytes(a, &vec![7u8; (6 * ps) as usize]).unwrap();
        mm.take_host_ops();

        // mprotect the middle: three vmas, the middle read-only, its present pages Protected.
        mm.mprotect(a + 2 * ps, 2 * ps, Prot::READ).unwrap();
        let v = mm.vmas();
        assert_eq!(v.len(), 3);
        assert_eq!(
            (v[1].start, v[1].end, v[1].prot),
            (a + 2 * ps, a + 4 * ps, Prot::READ)
        );
        assert_eq!(v[0].prot, RW);
        assert_eq!(
            mm.take_host_ops(),
            vec![HostOp::Protect {
                addr: a + 2 * ps,
                len: 2 * ps,
                prot: Prot::READ
            }]
        );
        assert!(!mm.pte(a + 2 * ps).unwrap().flags.contains(PteFlags::WRITE));
        assert_eq!(mm.write_bytes(a + 2 * ps, b"x"), Err(Errno::EFAULT));
        // Back to RW: the vmas merge into one again and the exclusive pages regain WRITE.
        mm.mprotect(a + 2 * ps, 2 * ps, RW).unwrap();
        assert_eq!(mm.vmas().len(), 1);
        assert!(mm.pte(a + 2 * ps).unwrap().flags.contains(PteFlags::WRITE));
        mm.take_host_ops();
        // A range with a hole is ENOMEM and changes nothing.
        assert_eq!(
            mm.mprotect(a + 5 * ps, 2 * ps, Prot::READ),
            Err(Errno::ENOMEM)
        );
        assert_eq!(mm.vmas().len(), 1);
        assert_eq!(mm.mprotect(a + 1, ps, Prot::READ), Err(Errno::EINVAL));

        // munmap the middle: two vmas, frames of the middle released, data around intact.
        let free = env.fa.free_frames();
        mm.munmap(a + 2 * ps, 2 * ps).unwrap();
        let v = mm.vmas();
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].start, v[0].end), (a, a + 2 * ps));
        assert_eq!((v[1].start, v[1].end), (a + 4 * ps, a + 6 * ps));
        assert_eq!(env.fa.free_frames(), free + 2);
        assert_eq!(mm.rss_pages(), 4);
        assert_eq!(read_vec(&mut mm, a + 4 * ps, 4), vec![7; 4]);
        assert_eq!(
            mm.handle_fault(a + 2 * ps, Access::Read),
            Err(SegvCode::MapErr)
        );
        assert_eq!(mm.munmap(a + 1, ps), Err(Errno::EINVAL));
        assert_eq!(mm.munmap(a, 0), Err(Errno::EINVAL));
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn map_fixed_replaces_and_noreplace_refuses() {
    let g = Granule::K4;
    let env = Env::new(g);
    let mut mm = env.mm();
    let ps = g.size();
    let a = 0x2000_0000;
    mm.mmap(a, 4 * ps, RW, ANON_PRIV | MapFlags::FIXED, Backing::Anon)
        .unwrap();
    mm.write_bytes(a, &vec![9u8; (4 * ps) as usize]).unwrap();
    mm.take_host_ops();
    let free = env.fa.free_frames();

    assert_eq!(
        mm.mmap(
            a + ps,
            ps,
            Prot::READ,
            ANON_PRIV | MapFlags::FIXED_NOREPLACE,
            Backing::Anon
        ),
        Err(Errno::EEXIST)
    );
    assert_eq!(mm.vmas().len(), 1);
    assert!(mm.take_host_ops().is_empty());

    let r = mm
        .mmap(
            a + ps,
            2 * ps,
            Prot::READ,
            ANON_PRIV | MapFlags::FIXED,
            Backing::Anon,
        )
        .unwrap();
    assert_eq!(r, a + ps);
    assert_eq!(env.fa.free_frames(), free + 2, "replaced pages released");
    assert_eq!(
        mm.take_host_ops(),
        vec![HostOp::Unmap {
            addr: a + ps,
            len: 2 * ps
        }]
    );
    let v = mm.vmas();
    assert_eq!(v.len(), 3);
    assert_eq!(v[1].prot, Prot::READ);
    assert_eq!(read_vec(&mut mm, a + ps, 2), vec![0, 0]);
    assert_eq!(read_vec(&mut mm, a + 3 * ps, 2), vec![9, 9]);
    // NOREPLACE into a free range works like FIXED.
    assert_eq!(
        mm.mmap(
            a + 8 * ps,
            ps,
            RW,
            ANON_PRIV | MapFlags::FIXED_NOREPLACE,
            Backing::Anon
        ),
        Ok(a + 8 * ps)
    );
    drop(mm);
    env.assert_no_leak();
}

#[test]
fn top_down_placement_hint_and_guard_gap() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let gap = 256 * ps;
        // A stack right below mmap_base: new mappings must stay a guard gap below it.
        let stack = MMAP_BASE - 16 * ps;
        mm.mmap(
            stack,
            16 * ps,
            RW,
            ANON_PRIV | MapFlags::FIXED | MapFlags::GROWSDOWN,
            Backing::Anon,
        )
        .unwrap();
        let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        assert_eq!(a, stack - gap - 2 * ps);
        // The next one goes right below and merges with it.
        let b = mm.mmap(0, ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        assert_eq!(b, a - ps);
        assert_eq!(mm.vmas().len(), 2);
        // Different protection: adjacent but not merged.
        let c = mm
            .mmap(0, ps, Prot::READ, ANON_PRIV, Backing::Anon)
            .unwrap();
        assert_eq!(c, b - ps);
        assert_eq!(mm.vmas().len(), 3);
        // A free hint is used (rounded down); one inside the guard gap is not.
        let h = mm
            .mmap(0x3000_0000 + 5, ps, RW, ANON_PRIV, Backing::Anon)
            .unwrap();
        assert_eq!(h, 0x3000_0000);
        let in_gap = stack - ps;
        let d = mm.mmap(in_gap, ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        assert_ne!(d, in_gap);
        assert!(d + ps <= stack - gap);
        // A hole above the lowest mapping that is big enough is reused.
        mm.munmap(b, ps).unwrap();
        let e = mm
            .mmap(0, ps, Prot::READ, ANON_PRIV, Backing::Anon)
            .unwrap();
        assert_eq!(e, b);
    });
}

#[test]
fn brk_grow_shrink_refuse() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let start = 0x60_0000;
        mm.set_brk_start(start - 100);
        assert_eq!(mm.brk_range(), (start, start));
        assert_eq!(mm.brk(0), start, "query");
        assert_eq!(mm.brk(start + 3 * ps + 10), start + 3 * ps + 10);
        let v = mm.find_vma(start).unwrap();
        assert_eq!((v.start, v.end), (start, start + 4 * ps));
        assert_eq!(v.name.as_deref(), Some("[heap]"));
        mm.write_bytes(start + 3 * ps, b"heap").unwrap();
        // Growing again extends the same vma.
        assert_eq!(mm.brk(start + 6 * ps), start + 6 * ps);
        assert_eq!(mm.vmas().len(), 1);
        assert_eq!(mm.find_vma(start).unwrap().end, start + 6 * ps);
        // Below start_brk: refused.
        assert_eq!(mm.brk(start - ps), start + 6 * ps);
        // Shrink releases the pages.
        let free = env.fa.free_frames();
        assert_eq!(mm.brk(start + ps), start + ps);
        assert_eq!(env.fa.free_frames(), free + 1);
        assert_eq!(mm.find_vma(start).unwrap().end, start + ps);
        assert!(mm.find_vma(start + 3 * ps).is_none());
        assert!(mm.take_host_ops().contains(&HostOp::Unmap {
            addr: start + ps,
            len: 5 * ps
        }));
        // Growing into another mapping is refused.
        mm.mmap(
            start + 8 * ps,
            ps,
            RW,
            ANON_PRIV | MapFlags::FIXED,
            Backing::Anon,
        )
        .unwrap();
        assert_eq!(mm.brk(start + 10 * ps), start + ps);
        assert_eq!(
            mm.brk(start + 7 * ps - 1),
            start + 7 * ps - 1,
            "a page short is fine"
        );
        assert_eq!(mm.brk(start + 7 * ps + 1), start + 7 * ps - 1);
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn mremap_grow_in_place_move_and_shrink() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = 0x4000_0000;
        mm.mmap(a, 2 * ps, RW, ANON_PRIV | MapFlags::FIXED, Backing::Anon)
            .unwrap();
        mm.write_bytes(a, b"first").unwrap();
        mm.write_bytes(a + ps, b"second").unwrap();
        // Grow in place.
        assert_eq!(mm.mremap(a, 2 * ps, 4 * ps, 0, 0), Ok(a));
        assert_eq!(mm.find_vma(a).unwrap().end, a + 4 * ps);
        // Block the space after it; growing now needs a move.
        mm.mmap(
            a + 4 * ps,
            ps,
            Prot::READ,
            ANON_PRIV | MapFlags::FIXED,
            Backing::Anon,
        )
        .unwrap();
        assert_eq!(mm.mremap(a, 4 * ps, 8 * ps, 0, 0), Err(Errno::ENOMEM));
        mm.take_host_ops();
        let rss = mm.rss_pages();
        let n = mm.mremap(a, 4 * ps, 8 * ps, MREMAP_MAYMOVE, 0).unwrap();
        assert_ne!(n, a);
        assert!(mm.find_vma(a).is_none());
        assert_eq!(mm.find_vma(n).unwrap().end, n + 8 * ps);
        assert_eq!(mm.rss_pages(), rss, "PTEs moved, not copied");
        let ops = mm.take_host_ops();
        assert_eq!(
            ops[0],
            HostOp::Unmap {
                addr: a,
                len: 4 * ps
            }
        );
        assert!(matches!(ops[1], HostOp::Map { addr, prot: RW, .. } if addr == n));
        assert_eq!(read_vec(&mut mm, n, 5), b"first");
        assert_eq!(read_vec(&mut mm, n + ps, 6), b"second");
        assert_eq!(read_vec(&mut mm, n + 5 * ps, 3), vec![0; 3]);
        // Shrink.
        let free = env.fa.free_frames();
        assert_eq!(mm.mremap(n, 8 * ps, ps, 0, 0), Ok(n));
        assert_eq!(mm.find_vma(n).unwrap().end, n + ps);
        assert!(env.fa.free_frames() > free);
        // Fixed move.
        let f = 0x5000_0000;
        assert_eq!(
            mm.mremap(n, ps, 2 * ps, MREMAP_MAYMOVE | MREMAP_FIXED, f),
            Ok(f)
        );
        assert_eq!(read_vec(&mut mm, f, 5), b"first");
        // Errors.
        assert_eq!(
            mm.mremap(0x6000_0000, ps, 2 * ps, MREMAP_MAYMOVE, 0),
            Err(Errno::EFAULT)
        );
        assert_eq!(
            mm.mremap(f, 4 * ps, 8 * ps, MREMAP_MAYMOVE, 0),
            Err(Errno::EFAULT)
        );
        assert_eq!(mm.mremap(f, ps, 0, 0, 0), Err(Errno::EINVAL));
        assert_eq!(
            mm.mremap(f, ps, 2 * ps, MREMAP_FIXED, 0x7000_0000),
            Err(Errno::EINVAL)
        );
        assert_eq!(mm.mremap(f + 1, ps, 2 * ps, 0, 0), Err(Errno::EINVAL));
        assert_eq!(mm.mremap(f, ps, 2 * ps, 64, 0), Err(Errno::EINVAL));
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn file_private_read_then_cow_write_leaves_cache_frame() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let (ff, f) = file(3, 3 * ps as usize);
        let a = mm
            .mmap(
                0,
                2 * ps,
                RW,
                MapFlags::PRIVATE,
                Backing::File {
                    file: f.clone(),
                    offset: ps,
                },
            )
            .unwrap();
        mm.handle_fault(a, Access::Read).unwrap();
        let cached = env.cache.get_page(&f, 1).unwrap();
        let pte = mm.pte(a).unwrap();
        assert_eq!(pte.frame, cached, "mapped straight from the page cache");
        assert!(pte.flags.contains(PteFlags::COW | PteFlags::FILE));
        assert!(!pte.flags.contains(PteFlags::WRITE));
        let ops = mm.take_host_ops();
        assert_eq!(
            ops,
            vec![HostOp::Map {
                addr: a,
                len: ps,
                prot: Prot::READ,
                phys_offset: env.fa.offset(cached)
            }]
        );
        let expect: Vec<u8> = (ps as usize..ps as usize + 8)
            .map(|i| (i % 251) as u8)
            .collect();
        assert_eq!(read_vec(&mut mm, a, 8), expect);

        // Write: a private copy, the cache frame untouched.
        mm.handle_fault(a, Access::Write).unwrap();
        let pte2 = mm.pte(a).unwrap();
        assert_ne!(pte2.frame, cached);
        assert!(pte2.flags.contains(PteFlags::WRITE | PteFlags::ANON));
        assert!(!pte2.flags.contains(PteFlags::COW));
        assert_eq!(read_vec(&mut mm, a, 8), expect, "copy has the file data");
        mm.write_bytes(a, b"PRIVATE").unwrap();
        let mut buf = [0u8; 8];
        env.fa.read(cached, 0, &mut buf);
        assert_eq!(buf.to_vec(), expect, "page cache frame unchanged");
        assert_eq!(&ff.bytes()[ps as usize..ps as usize + 8], &expect[..]);
        // A write fault straight onto an absent page copies at once.
        mm.handle_fault(a + ps, Access::Write).unwrap();
        let p3 = mm.pte(a + ps).unwrap();
        assert!(!p3.flags.contains(PteFlags::FILE));
        assert_eq!(read_vec(&mut mm, a + ps, 1), vec![((2 * ps) % 251) as u8]);
        env.fa.put(cached);
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn shared_file_dirty_tracking_and_msync() {
    let g = Granule::K4;
    let env = Env::new(g);
    let mut mm = env.mm();
    let ps = g.size();
    let (ff, f) = file(4, 2 * ps as usize);
    let a = mm
        .mmap(
            0,
            2 * ps,
            RW,
            MapFlags::SHARED,
            Backing::File { file: f, offset: 0 },
        )
        .unwrap();
    mm.handle_fault(a, Access::Read).unwrap();
    assert!(matches!(
        mm.take_host_ops()[..],
        [HostOp::Map {
            prot: Prot::READ,
            ..
        }]
    ));
    mm.handle_fault(a, Access::Write).unwrap();
    let pte = mm.pte(a).unwrap();
    assert!(
        pte.flags
            .contains(PteFlags::DIRTY | PteFlags::WRITE | PteFlags::SHARED)
    );
    assert!(matches!(
        mm.take_host_ops()[..],
        [HostOp::Map { prot: RW, .. }]
    ));
    mm.write_bytes(a + 10, b"shared!").unwrap();
    assert_ne!(&ff.bytes()[10..17], b"shared!");
    mm.msync(a, ps, MS_SYNC).unwrap();
    assert_eq!(&ff.bytes()[10..17], b"shared!");
    assert_eq!(
        mm.take_host_ops(),
        vec![HostOp::Protect {
            addr: a,
            len: ps,
            prot: Prot::READ
        }]
    );
    assert!(!mm.pte(a).unwrap().flags.contains(PteFlags::DIRTY));
    assert_eq!(mm.msync(a, ps, MS_SYNC | MS_ASYNC), Err(Errno::EINVAL));
    assert_eq!(mm.msync(a + 1, ps, MS_SYNC), Err(Errno::EINVAL));
    assert_eq!(mm.msync(a, 4 * ps, MS_SYNC), Err(Errno::ENOMEM));
    // Unmapping a dirty page writes it back.
    mm.write_bytes(a + ps, b"tail").unwrap();
    mm.munmap(a, 2 * ps).unwrap();
    assert_eq!(&ff.bytes()[ps as usize..ps as usize + 4], b"tail");
    drop(mm);
    env.assert_no_leak();
}

#[test]
fn shared_anon_after_fork_visible_in_both() {
    both(|g| {
        let env = Env::new(g);
        let mut parent = env.mm();
        let ps = g.size();
        let a = parent
            .mmap(0, 2 * ps, RW, ANON_SHARED, Backing::Anon)
            .unwrap();
        parent.write_bytes(a, b"before").unwrap();
        let mut child = parent.fork().unwrap();
        assert!(child.take_host_ops().is_empty());
        assert!(
            !parent
                .take_host_ops()
                .iter()
                .any(|o| matches!(o, HostOp::Protect { .. })),
            "shared pages keep WRITE"
        );
        assert_eq!(read_vec(&mut child, a, 6), b"before");
        // The second page is first touched after the fork, by the parent.
        parent.write_bytes(a + ps, b"from parent").unwrap();
        assert_eq!(read_vec(&mut child, a + ps, 11), b"from parent");
        child.write_bytes(a, b"CHILD!").unwrap();
        assert_eq!(read_vec(&mut parent, a, 6), b"CHILD!");
        assert_eq!(
            parent.pte(a + ps).unwrap().frame,
            child.pte(a + ps).unwrap().frame
        );
        drop(parent);
        assert_eq!(read_vec(&mut child, a + ps, 11), b"from parent");
        drop(child);
        env.assert_no_leak();
    });
}

#[test]
fn private_after_fork_isolated_both_ways() {
    both(|g| {
        let env = Env::new(g);
        let mut parent = env.mm();
        let ps = g.size();
        let a = parent
            .mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon)
            .unwrap();
        parent.write_bytes(a, b"A").unwrap();
        parent.write_bytes(a + ps, b"Z").unwrap();
        let frame = parent.pte(a).unwrap().frame;
        parent.take_host_ops();
        let mut child = parent.fork().unwrap();
        // The parent loses WRITE in the host on both pages.
        assert_eq!(
            parent.take_host_ops(),
            vec![HostOp::Protect {
                addr: a,
                len: 2 * ps,
                prot: Prot::READ
            }]
        );
        assert_eq!(env.fa.refcount(frame), 2);
        assert!(child.pte(a).unwrap().flags.contains(PteFlags::COW));

        child.write_bytes(a, b"B").unwrap();
        assert_eq!(read_vec(&mut parent, a, 1), b"A");
        assert_eq!(read_vec(&mut child, a, 1), b"B");
        assert_ne!(child.pte(a).unwrap().frame, frame, "child copied");
        // Parent is now the sole owner: the write reuses the frame without a copy.
        assert_eq!(env.fa.refcount(frame), 1);
        parent.write_bytes(a, b"C").unwrap();
        assert_eq!(parent.pte(a).unwrap().frame, frame);
        assert_eq!(read_vec(&mut child, a, 1), b"B");
        // Parent writes first on the other page.
        parent.write_bytes(a + ps, b"P").unwrap();
        assert_eq!(read_vec(&mut child, a + ps, 1), b"Z");
        // Engine-style: a Read fault on a present COW page keeps it read-only.
        child.take_host_ops();
        child.handle_fault(a + ps, Access::Read).unwrap();
        assert!(matches!(
            child.take_host_ops()[..],
            [HostOp::Map {
                prot: Prot::READ,
                ..
            }]
        ));
        drop(parent);
        drop(child);
        env.assert_no_leak();
    });
}

#[test]
fn stack_growth_limits_and_guard() {
    both(|g| {
        let env = Env::new(g);
        // The 8 MiB stack limit is more than this machine's 4 MiB: let it overcommit.
        env.fa.commit().set_mode(OVERCOMMIT_ALWAYS).unwrap();
        let mut mm = env.mm();
        let ps = g.size();
        let s = mm.map_stack(4 * ps).unwrap();
        assert_eq!(s, STACK_TOP - 4 * ps);
        assert_eq!(mm.find_vma(s).unwrap().name.as_deref(), Some("[stack]"));
        mm.handle_fault(s - 10 * ps + 3, Access::Write).unwrap();
        let v = mm.find_vma(s - 10 * ps).unwrap();
        assert_eq!((v.start, v.end), (s - 10 * ps, STACK_TOP));
        assert_eq!(mm.vmas().len(), 1);
        // Copies below the stack grow it too.
        mm.write_bytes(s - 11 * ps, b"x").unwrap();
        // Beyond RLIMIT_STACK: MapErr.
        let limit = Env::layout().stack_limit;
        assert_eq!(
            mm.handle_fault(STACK_TOP - limit - ps, Access::Read),
            Err(SegvCode::MapErr)
        );
        assert_eq!(
            mm.handle_fault(STACK_TOP - limit, Access::Read),
            Ok(()),
            "exactly at the limit"
        );
        // A mapping below within the guard gap stops growth into the gap.
        let low = STACK_TOP - limit;
        let below = low - 300 * ps;
        mm.mmap(below, ps, RW, ANON_PRIV | MapFlags::FIXED, Backing::Anon)
            .unwrap();
        let mut mm2 = env.mm();
        let s2 = mm2.map_stack(ps).unwrap();
        mm2.mmap(
            s2 - 300 * ps,
            ps,
            RW,
            ANON_PRIV | MapFlags::FIXED,
            Backing::Anon,
        )
        .unwrap();
        assert_eq!(mm2.handle_fault(s2 - 40 * ps, Access::Write), Ok(()));
        assert_eq!(
            mm2.handle_fault(s2 - 299 * ps + ps, Access::Write),
            Err(SegvCode::MapErr),
            "within 256 pages of the mapping below"
        );
        assert_eq!(mm.write_bytes(low - ps, b"x"), Err(Errno::EFAULT));
        drop(mm);
        drop(mm2);
        env.assert_no_leak();
    });
}

#[test]
fn maperr_vs_accerr() {
    let g = Granule::K4;
    let env = Env::new(g);
    let mut mm = env.mm();
    let ps = g.size();
    let ro = mm
        .mmap(0, ps, Prot::READ, ANON_PRIV, Backing::Anon)
        .unwrap();
    let none = mm
        .mmap(0, ps, Prot::empty(), ANON_PRIV, Backing::Anon)
        .unwrap();
    let x = mm
        .mmap(0, ps, Prot::EXEC, ANON_PRIV, Backing::Anon)
        .unwrap();
    assert_eq!(
        mm.handle_fault(0x20_0000, Access::Read),
        Err(SegvCode::MapErr)
    );
    assert_eq!(
        mm.handle_fault(u64::MAX, Access::Read),
        Err(SegvCode::MapErr)
    );
    assert_eq!(mm.handle_fault(ro, Access::Write), Err(SegvCode::AccErr));
    assert_eq!(mm.handle_fault(ro, Access::Exec), Err(SegvCode::AccErr));
    assert_eq!(mm.handle_fault(none, Access::Read), Err(SegvCode::AccErr));
    assert_eq!(mm.handle_fault(ro, Access::Read), Ok(()));
    // Exec-only is readable (x86 access_error), and executable.
    assert_eq!(mm.handle_fault(x, Access::Read), Ok(()));
    assert_eq!(mm.handle_fault(x, Access::Exec), Ok(()));
    assert_eq!(SegvCode::MapErr.si_code(), 1);
    assert_eq!(SegvCode::AccErr.si_code(), 2);
    let mut b = [0u8; 1];
    assert_eq!(mm.read_bytes(none, &mut b), Err(Errno::EFAULT));
    assert_eq!(mm.read_bytes_force(none, &mut b), Ok(()));
}

#[test]
fn copy_to_read_only_efault_but_force_works() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let ro = mm
            .mmap(0, 2 * ps, Prot::READ, ANON_PRIV, Backing::Anon)
            .unwrap();
        assert_eq!(mm.write_bytes(ro, b"nope"), Err(Errno::EFAULT));
        // Crossing the page boundary.
        let data: Vec<u8> = (0..100).collect();
        mm.write_bytes_force(ro + ps - 50, &data).unwrap();
        assert_eq!(read_vec(&mut mm, ro + ps - 50, 100), data);
        assert!(!mm.pte(ro).unwrap().flags.contains(PteFlags::WRITE));
        assert_eq!(mm.write_bytes(ro, b"still no"), Err(Errno::EFAULT));

        // Forced write to a private file mapping does not touch the page cache.
        let (ff, f) = file(5, ps as usize);
        let fa = mm
            .mmap(
                0,
                ps,
                Prot::READ | Prot::EXEC,
                MapFlags::PRIVATE,
                Backing::File {
                    file: f.clone(),
                    offset: 0,
                },
            )
            .unwrap();
        mm.write_bytes_force(fa + 1, b"\xcc").unwrap();
        assert_eq!(read_vec(&mut mm, fa + 1, 1), vec![0xcc]);
        let cached = env.cache.get_page(&f, 0).unwrap();
        let mut b = [0u8; 1];
        env.fa.read(cached, 1, &mut b);
        assert_eq!(b[0], 1);
        assert_eq!(ff.bytes()[1], 1);
        env.fa.put(cached);

        // Forced write to a read-only shared mapping is refused (not a COW mapping).
        let sh = mm
            .mmap(0, ps, Prot::READ, ANON_SHARED, Backing::Anon)
            .unwrap();
        assert_eq!(mm.write_bytes_force(sh, b"x"), Err(Errno::EFAULT));
        assert_eq!(mm.write_bytes(0x20_0000, b"x"), Err(Errno::EFAULT));
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn host_ops_coalesce_and_populate() {
    let g = Granule::K4;
    let env = Env::new(g);
    let mut mm = env.mm();
    let ps = g.size();
    let a = mm
        .mmap(0, 4 * ps, RW, ANON_PRIV | MapFlags::POPULATE, Backing::Anon)
        .unwrap();
    assert_eq!(mm.rss_pages(), 4);
    let ops = mm.take_host_ops();
    // Fresh allocator: frames 0..4 in order, so one Map covers all.
    assert_eq!(
        ops,
        vec![HostOp::Map {
            addr: a,
            len: 4 * ps,
            prot: RW,
            phys_offset: 0
        }]
    );
    assert!(mm.take_host_ops().is_empty(), "drained");
    mm.munmap(a + ps, ps).unwrap();
    mm.munmap(a + 2 * ps, ps).unwrap();
    assert_eq!(
        mm.take_host_ops(),
        vec![HostOp::Unmap {
            addr: a + ps,
            len: 2 * ps
        }]
    );
    drop(mm);
    env.assert_no_leak();
}

#[test]
fn madvise_dontneed() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        mm.write_bytes(a, b"gone").unwrap();
        let (_ff, f) = file(6, ps as usize);
        let fm = mm
            .mmap(
                0,
                ps,
                RW,
                MapFlags::PRIVATE,
                Backing::File { file: f, offset: 0 },
            )
            .unwrap();
        mm.write_bytes(fm, b"mine").unwrap();
        let sh = mm.mmap(0, ps, RW, ANON_SHARED, Backing::Anon).unwrap();
        mm.write_bytes(sh, b"kept").unwrap();
        mm.take_host_ops();
        mm.madvise(a, 2 * ps, MADV_DONTNEED).unwrap();
        assert_eq!(
            mm.take_host_ops(),
            vec![HostOp::Unmap {
                addr: a,
                len: 2 * ps
            }]
        );
        assert_eq!(read_vec(&mut mm, a, 4), vec![0; 4]);
        mm.madvise(fm, ps, MADV_DONTNEED).unwrap();
        assert_eq!(
            read_vec(&mut mm, fm, 4),
            vec![0, 1, 2, 3],
            "file data again"
        );
        mm.madvise(sh, ps, MADV_DONTNEED).unwrap();
        assert_eq!(read_vec(&mut mm, sh, 4), b"kept");
        assert_eq!(mm.madvise(a, ps, 7), Err(Errno::EINVAL));
        assert_eq!(mm.madvise(a + 1, ps, 0), Err(Errno::EINVAL));
        assert_eq!(mm.madvise(a, ps, 1), Ok(()));
        assert_eq!(mm.madvise(0x20_0000, ps, 0), Err(Errno::ENOMEM));
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn read_cstr_across_pages() {
    let g = Granule::K4;
    let env = Env::new(g);
    let mut mm = env.mm();
    let ps = g.size();
    let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    mm.write_bytes(a + ps - 3, b"hello\0world").unwrap();
    assert_eq!(mm.read_cstr(a + ps - 3, 100).unwrap(), b"hello");
    assert_eq!(mm.read_cstr(a + ps - 3, 5), Err(Errno::ENAMETOOLONG));
    assert_eq!(mm.read_cstr(a + ps - 3, 6).unwrap(), b"hello");
    assert_eq!(mm.read_cstr(a + ps + 3, 10).unwrap(), b"world");
    // Runs off the end of the mapping before any NUL.
    mm.write_bytes(a + 2 * ps - 4, b"abcd").unwrap();
    assert_eq!(mm.read_cstr(a + 2 * ps - 4, 100), Err(Errno::EFAULT));
    assert_eq!(mm.read_cstr(0x20_0000, 10), Err(Errno::EFAULT));
}

#[test]
fn drop_returns_every_frame() {
    both(|g| {
        let env = Env::new(g);
        let ps = g.size();
        let mut mm = env.mm();
        mm.set_brk_start(0x80_0000);
        mm.brk(0x80_0000 + 3 * ps);
        mm.write_bytes(0x80_0000, &vec![1; 3 * ps as usize])
            .unwrap();
        let (_ff, f) = file(8, 4 * ps as usize);
        let fm = mm
            .mmap(
                0,
                4 * ps,
                RW,
                MapFlags::PRIVATE,
                Backing::File {
                    file: f.clone(),
                    offset: 0,
                },
            )
            .unwrap();
        mm.read_bytes(fm, &mut vec![0; 2 * ps as usize]).unwrap();
        mm.write_bytes(fm + 3 * ps, b"cow").unwrap();
        let sm = mm
            .mmap(
                0,
                2 * ps,
                RW,
                MapFlags::SHARED,
                Backing::File { file: f, offset: 0 },
            )
            .unwrap();
        mm.write_bytes(sm, b"dirty").unwrap();
        let sh = mm.mmap(0, 2 * ps, RW, ANON_SHARED, Backing::Anon).unwrap();
        mm.write_bytes(sh, b"s").unwrap();
        let st = mm.map_stack(ps).unwrap();
        mm.write_bytes(st - 5 * ps, b"deep").unwrap();
        let mut child = mm.fork().unwrap();
        child.write_bytes(0x80_0000, b"c").unwrap();
        let mut grandchild = child.fork().unwrap();
        grandchild.write_bytes(sh + ps, b"g").unwrap();
        assert!(env.fa.free_frames() < env.start_free);
        drop(mm);
        drop(grandchild);
        assert_eq!(read_vec(&mut child, sh + ps, 1), b"g");
        drop(child);
        env.assert_no_leak();
    });
}

#[test]
fn out_of_memory_is_oom_not_panic() {
    let g = Granule::K4;
    let fa = Arc::new(FrameAllocator::new(Arc::new(HeapMemory::new(4 * 4096)), g));
    let cache = Arc::new(PageCache::new(fa.clone()));
    // Overcommitting, so that the mapping larger than memory is allowed and its faults run out.
    fa.commit().set_mode(OVERCOMMIT_ALWAYS).unwrap();
    let mut mm = Mm::new(fa.clone(), cache, Env::layout());
    let a = mm.mmap(0, 8 * 4096, RW, ANON_PRIV, Backing::Anon).unwrap();
    for i in 0..4 {
        mm.handle_fault(a + i * 4096, Access::Write).unwrap();
    }
    assert_eq!(
        mm.handle_fault(a + 4 * 4096, Access::Read),
        Err(SegvCode::Oom)
    );
    assert_eq!(mm.write_bytes(a + 5 * 4096, b"x"), Err(Errno::EFAULT));
    // COW break with no memory left fails cleanly and keeps the old page.
    let mut child = mm.fork().unwrap();
    assert_eq!(child.handle_fault(a, Access::Write), Err(SegvCode::Oom));
    assert!(child.pte(a).unwrap().flags.contains(PteFlags::COW));
    drop(child);
    drop(mm);
    assert_eq!(fa.free_frames(), 4);
}

#[test]
fn mremap_dontunmap_and_remap_all() {
    let g = Granule::K4;
    let env = Env::new(g);
    let mut mm = env.mm();
    let ps = g.size();
    let a = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
    mm.write_bytes(a, b"moved").unwrap();
    assert_eq!(
        mm.mremap(a, 2 * ps, 3 * ps, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0),
        Err(Errno::EINVAL),
        "DONTUNMAP needs equal lengths"
    );
    let n = mm
        .mremap(a, 2 * ps, 2 * ps, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0)
        .unwrap();
    assert_ne!(n, a);
    assert_eq!(read_vec(&mut mm, n, 5), b"moved");
    assert!(mm.find_vma(a).is_some(), "old range stays mapped");
    assert_eq!(read_vec(&mut mm, a, 5), vec![0; 5], "but empty");

    let mut child = mm.fork().unwrap();
    child.remap_all();
    let ops = child.take_host_ops();
    assert_eq!(ops.len(), 2, "one Map per present page here: {ops:?}");
    assert!(ops.iter().all(|o| matches!(
        o,
        HostOp::Map {
            prot: Prot::READ,
            ..
        }
    )));
    drop(child);
    drop(mm);
    env.assert_no_leak();
}

#[test]
fn mlock_splits_populates_counts_and_is_not_inherited() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = 0x1000_0000;
        mm.mmap(a, 8 * ps, RW, ANON_PRIV | MapFlags::FIXED, Backing::Anon)
            .unwrap();
        // mlock of a little more than two pages from the second: pages 1..=3 are locked and
        // faulted in (mm/mlock.c widens the range to whole pages), the rest untouched.
        mm.mlock(a + ps, 2 * ps + 1, VmLock::Locked).unwrap();
        assert_eq!(mm.locked_pages(), 3);
        assert_eq!(mm.vmas().len(), 3);
        assert_eq!(mm.rss_pages(), 3);
        assert_eq!(
            mm.mincore(a, a + 8 * ps).unwrap(),
            vec![0, 1, 1, 1, 0, 0, 0, 0]
        );
        // MLOCK_ONFAULT counts the range but faults nothing in.
        mm.mlock(a + 5 * ps, ps, VmLock::OnFault).unwrap();
        assert_eq!(mm.locked_pages(), 4);
        assert_eq!(mm.rss_pages(), 3);
        // A hole is ENOMEM before any change.
        assert_eq!(
            mm.mlock(a + 7 * ps, 2 * ps, VmLock::Locked),
            Err(Errno::ENOMEM)
        );
        assert_eq!(mm.locked_pages(), 4);
        // A child does not inherit the locks (dup_mmap clears VM_LOCKED).
        let child = mm.fork().unwrap();
        assert_eq!(child.locked_pages(), 0);
        drop(child);
        // munlock joins the vmas again.
        mm.mlock(a, 8 * ps, VmLock::None).unwrap();
        assert_eq!(mm.locked_pages(), 0);
        assert_eq!(mm.vmas().len(), 1);
        // mlockall(MCL_CURRENT | MCL_FUTURE): everything locked and populated, and so is a
        // later mapping; munlockall undoes both.
        mm.mlockall(Some(VmLock::Locked), VmLock::Locked);
        assert_eq!(mm.locked_pages(), 8);
        assert_eq!(mm.rss_pages(), 8);
        let b = mm.mmap(0, 2 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        assert_eq!(mm.locked_pages(), 10);
        assert_eq!(mm.mincore(b, b + 2 * ps).unwrap(), vec![1, 1]);
        mm.mlockall(Some(VmLock::None), VmLock::None);
        assert_eq!(mm.locked_pages(), 0);
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn mincore_reports_file_pages_cached_by_another_mapper() {
    both(|g| {
        let env = Env::new(g);
        let ps = g.size();
        let (_ff, f) = file(9, (4 * ps) as usize);
        let mut a = env.mm();
        let mut b = env.mm();
        let flags = MapFlags::PRIVATE;
        let x = a
            .mmap(
                0,
                4 * ps,
                Prot::READ,
                flags,
                Backing::File {
                    file: f.clone(),
                    offset: 0,
                },
            )
            .unwrap();
        let y = b
            .mmap(
                0,
                4 * ps,
                Prot::READ,
                flags,
                Backing::File { file: f, offset: 0 },
            )
            .unwrap();
        assert_eq!(a.mincore(x, x + 4 * ps).unwrap(), vec![0, 0, 0, 0]);
        // b faults pages 1 and 2 into the page cache: a sees them resident without a PTE.
        read_vec(&mut b, y + ps, (2 * ps) as usize);
        assert_eq!(a.mincore(x, x + 4 * ps).unwrap(), vec![0, 1, 1, 0]);
        assert_eq!(a.mincore(x, x + 5 * ps), Err(Errno::ENOMEM));
        drop((a, b));
        env.assert_no_leak();
    });
}

#[test]
fn wipe_on_fork_gives_the_child_zeroes_and_is_checked() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = 0x1000_0000;
        mm.mmap(a, 2 * ps, RW, ANON_PRIV | MapFlags::FIXED, Backing::Anon)
            .unwrap();
        mm.write_bytes(a, &vec![5u8; (2 * ps) as usize]).unwrap();
        mm.madvise(a + ps, ps, MADV_WIPEONFORK).unwrap();
        let mut child = mm.fork().unwrap();
        assert_eq!(read_vec(&mut child, a, 4), vec![5; 4]);
        assert_eq!(read_vec(&mut child, a + ps, 4), vec![0; 4]);
        assert_eq!(read_vec(&mut mm, a + ps, 4), vec![5; 4]);
        // KEEPONFORK undoes it; shared memory cannot be wiped.
        mm.madvise(a + ps, ps, MADV_KEEPONFORK).unwrap();
        assert_eq!(mm.vmas().len(), 1);
        let s = mm.mmap(0, ps, RW, ANON_SHARED, Backing::Anon).unwrap();
        assert_eq!(mm.madvise(s, ps, MADV_WIPEONFORK), Err(Errno::EINVAL));
        // madvise of locked memory: MADV_DONTNEED is EINVAL.
        mm.mlock(a, ps, VmLock::Locked).unwrap();
        assert_eq!(mm.madvise(a, ps, MADV_DONTNEED), Err(Errno::EINVAL));
        drop((mm, child));
        env.assert_no_leak();
    });
}

#[test]
fn hiwater_keeps_the_largest_resident_size() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = mm.mmap(0, 4 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        mm.write_bytes(a, &vec![1u8; (3 * ps) as usize]).unwrap();
        assert_eq!((mm.rss_pages(), mm.hiwater_pages()), (3, 3));
        mm.munmap(a, 4 * ps).unwrap();
        assert_eq!((mm.rss_pages(), mm.hiwater_pages()), (0, 3));
        // A forked copy starts at what it inherits (dup_mm's hiwater_rss).
        let b = mm.mmap(0, ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        mm.write_bytes(b, b"x").unwrap();
        let child = mm.fork().unwrap();
        assert_eq!(child.hiwater_pages(), 1);
        drop((mm, child));
        env.assert_no_leak();
    });
}

#[test]
fn overcommit_accounting_follows_the_mappings() {
    both(|g| {
        let env = Env::new(g);
        let c = env.fa.commit();
        let ps = g.size();
        let total = env.fa.total_frames() as u64;
        let mut mm = env.mm();
        // Guess mode: one private writable mapping larger than memory is refused, with
        // MAP_NORESERVE or read-only or shared it is not charged at all.
        assert_eq!(
            mm.mmap(0, (total + 1) * ps, RW, ANON_PRIV, Backing::Anon),
            Err(Errno::ENOMEM)
        );
        let nores = ANON_PRIV | MapFlags::NORESERVE;
        let big = mm
            .mmap(0, (total + 1) * ps, RW, nores, Backing::Anon)
            .unwrap();
        let ro = mm
            .mmap(0, 4 * ps, Prot::READ, ANON_PRIV, Backing::Anon)
            .unwrap();
        assert_eq!(c.committed_pages(), 0);
        // Accounted: charged at once, released by munmap.
        let a = mm.mmap(0, 10 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        assert_eq!(c.committed_pages(), 10);
        mm.munmap(a + 2 * ps, 3 * ps).unwrap();
        assert_eq!(c.committed_pages(), 7);
        // mprotect making a private mapping writable charges it (and keeps the charge).
        mm.mprotect(ro, 4 * ps, RW).unwrap();
        mm.mprotect(ro, 4 * ps, Prot::READ).unwrap();
        assert_eq!(c.committed_pages(), 11);
        // The heap; mremap growth, in place or moved.
        mm.set_brk_start(0x5000_0000);
        mm.brk(0x5000_0000 + 3 * ps);
        assert_eq!(c.committed_pages(), 14);
        let m = mm
            .mremap(a + 5 * ps, 5 * ps, 8 * ps, MREMAP_MAYMOVE, 0)
            .unwrap();
        assert_eq!(c.committed_pages(), 17);
        // A fork charges every accounted vma again; dropping either releases its share.
        let child = mm.fork().unwrap();
        assert_eq!(c.committed_pages(), 34);
        drop(child);
        assert_eq!(c.committed_pages(), 17);
        // Never mode: a fork beyond the limit fails and charges nothing.
        c.set_mode(OVERCOMMIT_NEVER).unwrap();
        c.set_kbytes(17 * ps / 1024);
        assert_eq!(mm.fork().err(), Some(Errno::ENOMEM));
        assert_eq!(c.committed_pages(), 17);
        c.set_mode(OVERCOMMIT_GUESS).unwrap();
        mm.munmap(m, 8 * ps).unwrap();
        mm.munmap(big, (total + 1) * ps).unwrap();
        drop(mm);
        assert_eq!(c.committed_pages(), 0);
    });
}

#[test]
fn memory_failure_poisons_the_page_and_soft_offline_keeps_it() {
    both(|g| {
        let env = Env::new(g);
        let mut mm = env.mm();
        let ps = g.size();
        let a = mm.mmap(0, 3 * ps, RW, ANON_PRIV, Backing::Anon).unwrap();
        mm.write_bytes(a, &[7u8; 8]).unwrap();
        mm.write_bytes(a + ps, &[9u8; 8]).unwrap();
        // Soft offline: the contents stay.
        assert_eq!(mm.inject_memory_failure(a, a + 1, true), Ok(1));
        let mut b = [0u8; 8];
        mm.read_bytes(a, &mut b).unwrap();
        assert_eq!(b, [7u8; 8]);
        // A hard failure of the second page (and only it): SIGBUS BUS_MCEERR_AR, and the
        // kernel's own copies fail, until the page is zapped.
        assert_eq!(mm.inject_memory_failure(a + ps, a + 2 * ps, false), Ok(1));
        assert_eq!(
            mm.handle_fault(a + ps, Access::Write),
            Err(SegvCode::HwPoison)
        );
        assert_eq!(SegvCode::HwPoison.si_code(), 4);
        assert_eq!(mm.read_bytes(a + ps, &mut b), Err(Errno::EFAULT));
        mm.handle_fault(a, Access::Write).unwrap();
        // The marker is copied to a fork, as hwpoison entries are.
        let mut child = mm.fork().unwrap();
        assert_eq!(
            child.handle_fault(a + ps, Access::Read),
            Err(SegvCode::HwPoison)
        );
        drop(child);
        // Not mapped: EFAULT, as get_user_pages.
        assert_eq!(
            mm.inject_memory_failure(a + 8 * ps, a + 9 * ps, false),
            Err(Errno::EFAULT)
        );
        mm.madvise(a + ps, ps, MADV_DONTNEED).unwrap();
        mm.read_bytes(a + ps, &mut b).unwrap();
        assert_eq!(b, [0u8; 8]);
        drop(mm);
        env.assert_no_leak();
    });
}

#[test]
fn present_around_crosses_into_neighbouring_vmas_but_not_inaccessible_ones() {
    both(|g| {
        let env = Env::new(g);
        let mut parent = env.mm();
        let ps = g.size();
        let span = 16 * ps;
        let a = parent
            .mmap(0, 2 * span, RW, ANON_PRIV, Backing::Anon)
            .unwrap();
        let w = a.next_multiple_of(span);
        for i in 0..16 {
            parent.write_bytes(w + i * ps, b"x").unwrap();
        }
        // Three vmas in one window: pages 0-7 read-write, 8-11 read-only, 12-15 PROT_NONE.
        parent.mprotect(w + 8 * ps, 4 * ps, Prot::READ).unwrap();
        parent.mprotect(w + 12 * ps, 4 * ps, Prot::empty()).unwrap();
        let mut child = parent.fork().unwrap();
        child.take_host_ops();
        child.handle_fault(w + 3 * ps, Access::Read).unwrap();
        child.take_host_ops();
        assert_eq!(child.map_present_around(w + 3 * ps, 16), 11);
        let mut mapped: Vec<(u64, bool)> = child
            .take_host_ops()
            .iter()
            .flat_map(|o| match o {
                HostOp::Map {
                    addr, len, prot, ..
                } => {
                    let write = prot.contains(Prot::WRITE);
                    (0..len / ps).map(move |i| ((addr - w) / ps + i, write))
                }
                other => panic!("unexpected op {other:?}"),
            })
            .collect();
        mapped.sort_unstable();
        // Every page read-only (copy-on-write, or a read-only vma); none of the PROT_NONE vma.
        let want: Vec<(u64, bool)> = (0..12).filter(|&i| i != 3).map(|i| (i, false)).collect();
        assert_eq!(mapped, want);
        drop(child);
        drop(parent);
        env.assert_no_leak();
    });
}

#[test]
fn present_around_maps_a_fork_childs_neighbours_read_only() {
    both(|g| {
        let env = Env::new(g);
        let mut parent = env.mm();
        let ps = g.size();
        // 20 pages: 16 of them (one aligned window) touched by the parent, 4 never.
        let span = 16 * ps;
        let a = parent
            .mmap(0, 2 * span, RW, ANON_PRIV, Backing::Anon)
            .unwrap();
        let w = a.next_multiple_of(span);
        for i in 0..16 {
            if i != 5 {
                parent.write_bytes(w + i * ps, b"x").unwrap();
            }
        }
        let mut child = parent.fork().unwrap();
        child.take_host_ops();
        // The child's first touch of page 3: the fault maps it, then its window's other
        // present pages (not page 5, which has no PTE; nothing outside the window).
        child.handle_fault(w + 3 * ps, Access::Read).unwrap();
        assert_eq!(child.map_present_around(w + 3 * ps, 16), 14);
        let ops = child.take_host_ops();
        // (Ops of adjacent pages with adjacent frames come merged.)
        let mut mapped: Vec<u64> = ops
            .iter()
            .flat_map(|o| match o {
                HostOp::Map {
                    addr, len, prot, ..
                } => {
                    // Copy-on-write pages stay read-only in the host.
                    assert!(!prot.contains(Prot::WRITE), "{o:?}");
                    (0..len / ps).map(move |i| (addr - w) / ps + i)
                }
                other => panic!("unexpected op {other:?}"),
            })
            .collect();
        mapped.sort_unstable();
        let want: Vec<u64> = (0..16).filter(|&i| i != 5).collect();
        assert_eq!(mapped, want);
        assert!(
            child.pte(w + 5 * ps).is_none(),
            "no PTE made for an untouched page"
        );
        // The table is unchanged: a write still breaks copy-on-write.
        child.write_bytes(w + 4 * ps, b"y").unwrap();
        assert_eq!(read_vec(&mut parent, w + 4 * ps, 1), b"x");
        drop(child);
        drop(parent);
        env.assert_no_leak();
    });
}
