//! Tests of the reverse map and `unmap_mapping_range` ([`crate::rmap`]): pages a file or shmem
//! object drops leave every address space that maps them, private copies stay unless
//! `even_cows`, and registrations go with their address spaces.

use super::*;
use crate::HeapMemory;
use crate::VmFile;
use crate::pagecache::tests::FakeFile;

const RW: Prot = Prot::READ.union(Prot::WRITE);

fn env(g: Granule) -> (Arc<FrameAllocator>, Arc<PageCache>) {
    let fa = Arc::new(FrameAllocator::new(Arc::new(HeapMemory::new(4 << 20)), g));
    let cache = Arc::new(PageCache::new(fa.clone()));
    (fa, cache)
}

fn layout() -> Layout {
    Layout {
        task_size: 0x7fff_ffff_0000,
        mmap_base: 0x7f00_0000_0000,
        stack_top: 0x7ffe_0000_0000,
        stack_limit: 8 << 20,
        min_addr: 0x10000,
    }
}

fn lk(m: &Arc<Mutex<Mm>>) -> std::sync::MutexGuard<'_, Mm> {
    m.lock().unwrap()
}

fn unmaps(ops: &[HostOp]) -> Vec<(u64, u64)> {
    ops.iter()
        .filter_map(|o| match o {
            HostOp::Unmap { addr, len } => Some((*addr, *len)),
            _ => None,
        })
        .collect()
}

fn both(f: impl Fn(Granule)) {
    f(Granule::K4);
    f(Granule::K16);
}

/// A shared file mapping in two address spaces (one a fork child): a hole punched in the file
/// (cache pages dropped, unmap_mapping_range) leaves both; the next access reads the file.
#[test]
fn punch_unmaps_shared_file_pages_everywhere() {
    both(|g| {
        let (fa, cache) = env(g);
        let start = fa.free_frames();
        let ps = g.size();
        let ff = FakeFile::new(9, vec![7u8; 3 * ps as usize]);
        let file: Arc<dyn VmFile> = ff.clone();
        let a = Mm::new(fa.clone(), cache.clone(), layout()).into_shared();
        let base = lk(&a)
            .mmap(
                0,
                3 * ps,
                RW,
                MapFlags::SHARED,
                Backing::File {
                    file: file.clone(),
                    offset: 0,
                },
            )
            .unwrap();
        lk(&a).write_bytes(base + ps, b"dirty").unwrap();
        lk(&a).write_bytes(base, b"keep").unwrap();
        let b = lk(&a).fork().unwrap().into_shared();
        let mut v = [0u8; 5];
        lk(&b).read_bytes(base + ps, &mut v).unwrap();
        assert_eq!(&v, b"dirty");
        lk(&a).take_host_ops();
        lk(&b).take_host_ops();
        assert_eq!(cache.rmap.mappers(Obj::File(9)).len(), 2);

        // The file system punches page 1: its store, its cached page, every mapping.
        cache.unmap_mapping_range(9, 1, 1, false);
        ff.data.lock().unwrap()[ps as usize..2 * ps as usize].fill(0);
        cache.drop_range(9, 1, 1);
        for m in [&a, &b] {
            let mut m = lk(m);
            assert!(m.pte(base + ps).is_none(), "{g:?}");
            assert!(m.pte(base).is_some(), "page 0 stays");
            assert_eq!(unmaps(&m.take_host_ops()), vec![(base + ps, ps)]);
            m.read_bytes(base + ps, &mut v).unwrap();
            assert_eq!(v, [0; 5], "the hole reads as the file now does");
            let mut k = [0u8; 4];
            m.read_bytes(base, &mut k).unwrap();
            assert_eq!(&k, b"keep");
        }
        // No write-back of the dropped dirty page: the hole stays a hole in the file.
        drop(a);
        drop(b);
        assert!(
            ff.bytes()[ps as usize..2 * ps as usize]
                .iter()
                .all(|&x| x == 0)
        );
        assert_eq!(&ff.bytes()[..4], b"keep");
        assert_eq!(
            cache.rmap.len(),
            0,
            "address spaces leave the map when dropped"
        );
        cache.clear();
        assert_eq!(fa.free_frames(), start, "frames leaked");
    });
}

/// A private file mapping: a page still shared with the file goes at a punch, a copy made on
/// write stays; truncate (even_cows) takes both.
#[test]
fn private_copies_stay_unless_even_cows() {
    both(|g| {
        let (fa, cache) = env(g);
        let start = fa.free_frames();
        let ps = g.size();
        let ff = FakeFile::new(4, vec![1u8; 2 * ps as usize]);
        let file: Arc<dyn VmFile> = ff.clone();
        let m = Mm::new(fa.clone(), cache.clone(), layout()).into_shared();
        let base = lk(&m)
            .mmap(
                0,
                2 * ps,
                RW,
                MapFlags::PRIVATE,
                Backing::File { file, offset: 0 },
            )
            .unwrap();
        let mut v = [0u8; 1];
        lk(&m).read_bytes(base, &mut v).unwrap();
        lk(&m).write_bytes(base + ps, b"C").unwrap();
        lk(&m).take_host_ops();
        cache.unmap_mapping_range(4, 0, 1, false);
        {
            let mut g = lk(&m);
            assert!(g.pte(base).is_none(), "the file's page goes");
            assert!(g.pte(base + ps).is_some(), "the private copy stays");
            assert_eq!(unmaps(&g.take_host_ops()), vec![(base, ps)]);
            g.read_bytes(base + ps, &mut v).unwrap();
            assert_eq!(&v, b"C");
        }
        cache.unmap_mapping_range(4, 1, u64::MAX, true);
        assert!(
            lk(&m).pte(base + ps).is_none(),
            "truncate takes the copy too"
        );
        // Another object's range, or one past the mapping: nothing.
        lk(&m).read_bytes(base, &mut v).unwrap();
        lk(&m).take_host_ops();
        cache.unmap_mapping_range(5, 0, u64::MAX, true);
        cache.unmap_mapping_range(4, 2, u64::MAX, true);
        assert!(lk(&m).pte(base).is_some());
        assert!(!lk(&m).host_ops_pending());
        drop(m);
        cache.clear();
        assert_eq!(fa.free_frames(), start, "frames leaked");
    });
}

/// A mapping at a file offset: the object's page numbers, not the vma's, select what goes.
#[test]
fn ranges_follow_the_file_offset() {
    let g = Granule::K4;
    let (fa, cache) = env(g);
    let ps = g.size();
    let ff = FakeFile::new(6, vec![2u8; 8 * ps as usize]);
    let file: Arc<dyn VmFile> = ff.clone();
    let m = Mm::new(fa.clone(), cache.clone(), layout()).into_shared();
    let base = lk(&m)
        .mmap(
            0,
            3 * ps,
            Prot::READ,
            MapFlags::SHARED,
            Backing::File {
                file,
                offset: 4 * ps,
            },
        )
        .unwrap();
    let mut v = [0u8; 1];
    for i in 0..3 {
        lk(&m).read_bytes(base + i * ps, &mut v).unwrap();
    }
    lk(&m).take_host_ops();
    cache.unmap_mapping_range(6, 0, 4, false);
    let mut g2 = lk(&m);
    assert!(g2.pte(base).is_none(), "file page 4 is the vma's first");
    assert!(g2.pte(base + ps).is_some());
    assert_eq!(unmaps(&g2.take_host_ops()), vec![(base, ps)]);
}

/// MADV_REMOVE of shared anonymous memory: the pages go from the object and from every
/// address space (parent and fork child); the next access reads zeros.
#[test]
fn shmem_punch_reaches_every_mapper() {
    both(|g| {
        let (fa, cache) = env(g);
        let start = fa.free_frames();
        let ps = g.size();
        let a = Mm::new(fa.clone(), cache.clone(), layout()).into_shared();
        let base = lk(&a)
            .mmap(
                0,
                2 * ps,
                RW,
                MapFlags::SHARED | MapFlags::ANONYMOUS,
                Backing::Anon,
            )
            .unwrap();
        lk(&a).write_bytes(base, b"zero").unwrap();
        lk(&a).write_bytes(base + ps, b"one").unwrap();
        let b = lk(&a).fork().unwrap().into_shared();
        let mut v = [0u8; 4];
        lk(&b).read_bytes(base, &mut v).unwrap();
        assert_eq!(&v, b"zero");
        let (targets, hole) = lk(&a).remove_targets(base, ps).unwrap();
        assert!(!hole);
        assert_eq!(targets.len(), 1);
        for (bk, off, len) in &targets {
            punch_backing(bk, *off, *len, &cache).unwrap();
        }
        for m in [&a, &b] {
            let mut m = lk(m);
            assert!(m.pte(base).is_none());
            m.read_bytes(base, &mut v).unwrap();
            assert_eq!(v, [0; 4]);
            let mut w = [0u8; 3];
            m.read_bytes(base + ps, &mut w).unwrap();
            assert_eq!(&w, b"one");
        }
        drop(targets);
        drop(a);
        drop(b);
        assert_eq!(cache.rmap.len(), 0);
        assert_eq!(fa.free_frames(), start, "frames leaked");
    });
}

/// MADV_REMOVE's checks (mm/madvise.c `madvise_remove`): private anonymous memory EINVAL, a
/// private file mapping or a shared one that may not be written EACCES, a hole ENOMEM after
/// the mapped parts.
#[test]
fn remove_targets_checks() {
    let g = Granule::K4;
    let (fa, cache) = env(g);
    let ps = g.size();
    let (_ff, file) = {
        let ff = FakeFile::new(3, vec![0u8; 2 * ps as usize]);
        let f: Arc<dyn VmFile> = ff.clone();
        (ff, f)
    };
    let mut m = Mm::new(fa, cache, layout());
    let anon = m
        .mmap(
            0,
            ps,
            RW,
            MapFlags::PRIVATE | MapFlags::ANONYMOUS,
            Backing::Anon,
        )
        .unwrap();
    assert_eq!(m.remove_targets(anon, ps).err(), Some(Errno::EINVAL));
    assert_eq!(m.madvise(anon, ps, MADV_REMOVE).err(), Some(Errno::EINVAL));
    let priv_ = m
        .mmap(
            0,
            ps,
            RW,
            MapFlags::PRIVATE,
            Backing::File {
                file: file.clone(),
                offset: 0,
            },
        )
        .unwrap();
    assert_eq!(m.remove_targets(priv_, ps).err(), Some(Errno::EACCES));
    let ro = m
        .mmap_may_write(
            0,
            ps,
            Prot::READ,
            MapFlags::SHARED,
            Backing::File {
                file: file.clone(),
                offset: 0,
            },
            false,
        )
        .unwrap();
    assert_eq!(m.remove_targets(ro, ps).err(), Some(Errno::EACCES));
    let sh = m
        .mmap(
            0x4000_0000,
            ps,
            RW,
            MapFlags::SHARED | MapFlags::FIXED,
            Backing::File { file, offset: ps },
        )
        .unwrap();
    let (t, hole) = m.remove_targets(sh, 2 * ps).unwrap();
    assert!(hole, "the page after it is unmapped");
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].1, t[0].2), (ps, ps));
    assert_eq!(m.remove_targets(sh + 1, ps).err(), Some(Errno::EINVAL));
}
