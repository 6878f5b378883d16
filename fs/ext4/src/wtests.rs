//! Tests of the write side on images made by the host's `mke2fs` (1K blocks without a
//! journal, 4K blocks with a clean one): files, sparse writes, extent trees grown to depth
//! 2 and cut back, truncate, directories past one block, unlink, rmdir, rename, links,
//! symlinks, xattrs in the inode and in a block; each image is then mounted again and
//! read back, and `e2fsck -fn` must find it clean.

use crate::fs::{Ext4, Mapping};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use um_kernel::vfs::BlockDevice;
use um_uapi::{Errno, SysResult};

/// An image file, read and written in place.
struct FileDev(std::fs::File, u64);

impl BlockDevice for FileDev {
    fn size(&self) -> u64 {
        self.1
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()> {
        self.0.read_exact_at(buf, off).map_err(|_| Errno::EIO)
    }
    fn write_at(&self, off: u64, data: &[u8]) -> SysResult<()> {
        if off + data.len() as u64 > self.1 {
            return Err(Errno::EIO);
        }
        self.0.write_all_at(data, off).map_err(|_| Errno::EIO)
    }
    fn flush(&self) -> SysResult<()> {
        self.0.sync_all().map_err(|_| Errno::EIO)
    }
    fn read_only(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "file".into()
    }
    fn rdev(&self) -> u64 {
        0
    }
}

fn image(name: &str, args: &[&str], size: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("um-ext4w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let img = dir.join(name);
    let out = Command::new("mke2fs")
        .args(["-q", "-F", "-t", "ext4"])
        .args(args)
        .arg(&img)
        .arg(size)
        .output()
        .expect("mke2fs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    img
}

fn open(img: &Path, rw: bool) -> Ext4 {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap();
    let len = f.metadata().unwrap().len();
    let mut fs = Ext4::open(Arc::new(FileDev(f, len)), false).unwrap();
    if rw {
        assert_eq!(crate::write::write_refusal(&fs.sb), None);
        fs.enable_write().unwrap();
    }
    fs
}

fn fsck(img: &Path) {
    let out = Command::new("e2fsck").arg("-fn").arg(img).output().unwrap();
    assert!(
        out.status.success(),
        "e2fsck -fn {img:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn lookup(fs: &Ext4, path: &str) -> Option<u32> {
    let mut ino = crate::disk::ROOT_INO;
    for c in path.split('/').filter(|c| !c.is_empty()) {
        let d = fs.inode(ino).unwrap();
        ino = fs.lookup(&d, c.as_bytes()).unwrap()?;
    }
    Some(ino)
}

fn read_all(fs: &Ext4, ino: u32) -> Vec<u8> {
    let r = fs.inode(ino).unwrap();
    let mut v = vec![0u8; r.size as usize];
    assert_eq!(fs.read(&r, 0, &mut v).unwrap(), v.len());
    v
}

const REG: u32 = 0o100644;
const DIR: u32 = 0o040755;

fn exercise(img: &Path) {
    let fs = open(img, true);
    let bs = fs.sb.block_size as u64;
    let (free0, ifree0) = fs.free_counts();
    let root = crate::disk::ROOT_INO;
    // Many files in one directory: the directory grows past one block.
    let d = fs.create(root, b"many", DIR, 0, 0, (0, 0), None).unwrap();
    for i in 0..300 {
        let name = format!("file-with-a-longish-name-{i:04}");
        let f = fs
            .create(d, name.as_bytes(), REG, 1000, 1000, (0, 0), None)
            .unwrap();
        fs.write_file(f, 0, format!("{i}\n").as_bytes()).unwrap();
    }
    assert!(fs.inode(d).unwrap().size > bs);
    // A big file written in pieces, then overwritten in the middle.
    let big = fs.create(root, b"big", REG, 0, 0, (0, 0), None).unwrap();
    let data = bytes(3, 3 << 20);
    for (k, c) in data.chunks(100_000).enumerate() {
        fs.write_file(big, k as u64 * 100_000, c).unwrap();
    }
    let mut want = data.clone();
    let patch = bytes(4, 5000);
    fs.write_file(big, 777_777, &patch).unwrap();
    want[777_777..777_777 + 5000].copy_from_slice(&patch);
    assert_eq!(read_all(&fs, big), want);
    // A sparse file of many extents: the tree grows to depth 2 (1K) or 1 (4K).
    let sp = fs.create(root, b"sparse", REG, 0, 0, (0, 0), None).unwrap();
    for k in 0..1200u64 {
        fs.write_file(sp, k * 2 * bs + 3, b"xy").unwrap();
    }
    let r = fs.inode(sp).unwrap();
    assert!(crate::disk::le16(&r.block, 6) >= 1, "extent tree depth");
    let mut b = vec![0u8; 4];
    fs.read(&r, 2 * bs + 2, &mut b).unwrap();
    assert_eq!(&b, b"\0xy\0");
    assert_eq!(fs.map(&r, 1).unwrap(), Mapping::Hole { len: 1 });
    // Truncate: shrink to inside a block, then extend (the tail reads zeros).
    fs.truncate(sp, 6 * bs + 4).unwrap();
    fs.truncate(sp, 100 * bs).unwrap();
    let r = fs.inode(sp).unwrap();
    let mut b = vec![0u8; 8];
    fs.read(&r, 6 * bs, &mut b).unwrap();
    assert_eq!(&b, b"\0\0\0x\0\0\0\0");
    assert_eq!(crate::disk::le16(&r.block, 6), 0, "tree back to depth 0");
    // fallocate: unwritten extents (zeros, then written into), and a punched hole.
    let fa = fs.create(root, b"falloc", REG, 0, 0, (0, 0), None).unwrap();
    fs.fallocate(fa, 0, 0, 40 * bs).unwrap();
    assert_eq!(fs.inode(fa).unwrap().size, 40 * bs);
    fs.fallocate(fa, 1, 40 * bs, 10 * bs).unwrap();
    assert_eq!(fs.inode(fa).unwrap().size, 40 * bs);
    assert_eq!(read_all(&fs, fa), vec![0u8; 40 * bs as usize]);
    fs.write_file(fa, 5 * bs + 7, b"abc").unwrap();
    let filled = bytes(11, 20 * bs as usize);
    fs.write_file(fa, 10 * bs, &filled).unwrap();
    fs.fallocate(fa, 3, 12 * bs + 100, 5 * bs).unwrap();
    let mut want_fa = vec![0u8; 40 * bs as usize];
    want_fa[5 * bs as usize + 7..5 * bs as usize + 10].copy_from_slice(b"abc");
    want_fa[10 * bs as usize..30 * bs as usize].copy_from_slice(&filled);
    want_fa[12 * bs as usize + 100..17 * bs as usize + 100].fill(0);
    assert_eq!(read_all(&fs, fa), want_fa);
    assert!(matches!(
        fs.map(&fs.inode(fa).unwrap(), 14).unwrap(),
        Mapping::Hole { .. }
    ));
    assert_eq!(fs.fallocate(fa, 8, 0, 1), Err(Errno::EOPNOTSUPP));
    // Names: unlink, rmdir, rename (over a file, into another directory), links, symlinks.
    for i in (0..300).step_by(3) {
        let name = format!("file-with-a-longish-name-{i:04}");
        let (ino, gone) = fs.unlink(d, name.as_bytes(), false).unwrap();
        assert!(gone);
        fs.evict_if_unlinked(ino).unwrap();
        let ino = lookup(&fs, &format!("many/{name}"));
        assert_eq!(ino, None);
    }
    let sub = fs.create(root, b"sub", DIR, 0, 0, (0, 0), None).unwrap();
    let deep = fs.create(sub, b"deep", DIR, 0, 0, (0, 0), None).unwrap();
    assert_eq!(fs.unlink(root, b"sub", true), Err(Errno::ENOTEMPTY));
    fs.rename(d, b"file-with-a-longish-name-0001", sub, b"moved", 0)
        .unwrap();
    let gone = fs
        .rename(d, b"file-with-a-longish-name-0002", sub, b"moved", 0)
        .unwrap();
    fs.evict_if_unlinked(gone.unwrap()).unwrap();
    assert_eq!(read_all(&fs, lookup(&fs, "sub/moved").unwrap()), b"2\n");
    fs.rename(sub, b"deep", root, b"deep2", 0).unwrap();
    assert_eq!(lookup(&fs, "deep2/.."), Some(root));
    assert_eq!(fs.rename(root, b"deep2", deep, b"x", 0), Err(Errno::EINVAL));
    fs.link(sub, b"hard", big).unwrap();
    assert_eq!(fs.inode(big).unwrap().links, 2);
    fs.create(sub, b"fast", 0o120777, 0, 0, (0, 0), Some(b"../big"))
        .unwrap();
    let long = "y".repeat(200);
    let slow = fs
        .create(sub, b"slow", 0o120777, 0, 0, (0, 0), Some(long.as_bytes()))
        .unwrap();
    assert_eq!(
        fs.readlink(&fs.inode(slow).unwrap()).unwrap(),
        long.as_bytes()
    );
    fs.create(sub, b"null", 0o020666, 0, 0, (1, 3), None)
        .unwrap();
    // Xattrs: small ones in the inode, a large one moves them to a block; then removed.
    fs.set_xattr(big, b"user.a", Some(b"1"), 0).unwrap();
    fs.set_xattr(big, b"user.b", Some(&[7u8; 600]), 0).unwrap();
    assert_eq!(
        fs.set_xattr(big, b"user.a", Some(b"2"), 1),
        Err(Errno::EEXIST)
    );
    let x = fs.xattrs(&fs.inode(big).unwrap()).unwrap();
    assert_eq!(x.len(), 2);
    assert!(fs.inode(big).unwrap().file_acl != 0);
    fs.set_attr(big, Some(0o600), Some(5), Some(6), None, Some((1234, 5678)))
        .unwrap();
    // rm -r of a tree.
    let t = fs.create(root, b"tree", DIR, 0, 0, (0, 0), None).unwrap();
    let t2 = fs.create(t, b"a", DIR, 0, 0, (0, 0), None).unwrap();
    let f = fs.create(t2, b"f", REG, 0, 0, (0, 0), None).unwrap();
    fs.write_file(f, 0, &bytes(9, 50_000)).unwrap();
    fs.set_xattr(f, b"user.big", Some(&[1u8; 700]), 0).unwrap();
    fs.unlink(t2, b"f", false).unwrap();
    fs.evict_if_unlinked(f).unwrap();
    fs.unlink(t, b"a", true).unwrap();
    fs.evict_if_unlinked(t2).unwrap();
    fs.unlink(root, b"tree", true).unwrap();
    fs.evict_if_unlinked(t).unwrap();
    let (free1, ifree1) = fs.free_counts();
    assert!(free1 < free0 && ifree1 < ifree0);
    fs.sync().unwrap();
    drop(fs);
    fsck(img);
    // Mounted again: everything reads back, and the counts are the ones written.
    let fs = open(img, false);
    assert_eq!(fs.free_counts(), (free1, ifree1));
    assert_eq!(read_all(&fs, lookup(&fs, "big").unwrap()), want);
    assert_eq!(read_all(&fs, lookup(&fs, "sub/hard").unwrap()), want);
    let fast = fs.inode(lookup(&fs, "sub/fast").unwrap()).unwrap();
    assert_eq!(fs.readlink(&fast).unwrap(), b"../big");
    let bi = fs.inode(lookup(&fs, "big").unwrap()).unwrap();
    assert_eq!(bi.mode & 0o7777, 0o600);
    assert_eq!((bi.uid, bi.gid, bi.mtime), (5, 6, (1234, 5678)));
    let x = fs.xattrs(&bi).unwrap();
    assert!(x.iter().any(|(n, v)| n == b"user.b" && v == &[7u8; 600]));
    assert_eq!(lookup(&fs, "tree"), None);
    assert_eq!(read_all(&fs, lookup(&fs, "falloc").unwrap()), want_fa);
    for i in 0..300 {
        let name = format!("many/file-with-a-longish-name-{i:04}");
        let got = lookup(&fs, &name);
        assert_eq!(got.is_some(), i % 3 != 0 && i != 1 && i != 2, "{name}");
    }
    // Removing everything gives back every block and inode.
    drop(fs);
    let fs = open(img, true);
    for i in 0..300 {
        let name = format!("file-with-a-longish-name-{i:04}");
        if let Ok((ino, _)) = fs.unlink(d, name.as_bytes(), false) {
            fs.evict_if_unlinked(ino).unwrap();
        }
    }
    for n in ["moved", "hard", "fast", "slow", "null"] {
        let (ino, _) = fs.unlink(sub, n.as_bytes(), false).unwrap();
        fs.evict_if_unlinked(ino).unwrap();
    }
    for n in ["big", "sparse", "falloc"] {
        let (ino, _) = fs.unlink(root, n.as_bytes(), false).unwrap();
        fs.evict_if_unlinked(ino).unwrap();
    }
    for (p, n) in [(root, "many"), (root, "sub"), (root, "deep2")] {
        let (ino, _) = fs.unlink(p, n.as_bytes(), true).unwrap();
        fs.evict_if_unlinked(ino).unwrap();
    }
    // The directory blocks the root grew into stay, as on Linux.
    let (free2, ifree2) = fs.free_counts();
    assert_eq!(ifree2, ifree0);
    assert!(free2 <= free0 && free2 + 2 >= free0, "{free2} vs {free0}");
    drop(fs);
    fsck(img);
}

#[test]
fn write_1k_no_journal() {
    let img = image("w1k.img", &["-b", "1024", "-O", "^has_journal"], "32M");
    exercise(&img);
    let _ = std::fs::remove_file(&img);
}

#[test]
fn write_4k_clean_journal() {
    let img = image("w4k.img", &["-b", "4096"], "64M");
    exercise(&img);
    let _ = std::fs::remove_file(&img);
}

#[test]
fn htree_dir_insert_stays_clean() {
    // A directory indexed by `e2fsck -fyD`, then written: it becomes linear and stays valid.
    let img = image(
        "wdx.img",
        &["-b", "1024", "-O", "^has_journal", "-N", "8192"],
        "32M",
    );
    {
        let fs = open(&img, true);
        let d = fs
            .create(crate::disk::ROOT_INO, b"d", DIR, 0, 0, (0, 0), None)
            .unwrap();
        for i in 0..200 {
            fs.create(d, format!("n{i:03}").as_bytes(), REG, 0, 0, (0, 0), None)
                .unwrap();
        }
    }
    let out = Command::new("e2fsck")
        .arg("-fyD")
        .arg(&img)
        .output()
        .unwrap();
    assert!(out.status.code().unwrap_or(8) <= 1);
    let fs = open(&img, true);
    let d = lookup(&fs, "d").unwrap();
    assert!(fs.inode(d).unwrap().has_flag(crate::disk::iflags::INDEX));
    // Inserts go into the leaf the index names while it has room (e2fsck -D packs the
    // leaves: removals make room); the index stays.
    for i in (0..200).step_by(2) {
        let (ino, _) = fs.unlink(d, format!("n{i:03}").as_bytes(), false).unwrap();
        fs.evict_if_unlinked(ino).unwrap();
    }
    fs.create(d, b"new", REG, 0, 0, (0, 0), None).unwrap();
    assert!(fs.inode(d).unwrap().has_flag(crate::disk::iflags::INDEX));
    let raw = fs.inode(d).unwrap();
    assert!(
        fs.dx_lookup_for_test(&raw, b"new")
            .unwrap()
            .is_some_and(|x| x.is_some())
    );
    assert!(lookup(&fs, "d/new").is_some() && lookup(&fs, "d/n199").is_some());
    drop(fs);
    fsck(&img);
    // Many more: leaves fill and split, the index stays right (lookups go through it).
    let fs = open(&img, true);
    let mk = |fs: &Ext4, name: String| {
        fs.create(d, name.as_bytes(), REG, 0, 0, (0, 0), None)
            .unwrap()
    };
    for i in 0..1500 {
        mk(&fs, format!("more-{i:04}"));
    }
    let raw = fs.inode(d).unwrap();
    assert!(raw.has_flag(crate::disk::iflags::INDEX));
    for i in (0..1500).step_by(37) {
        let name = format!("more-{i:04}");
        assert!(
            fs.dx_lookup_for_test(&raw, name.as_bytes())
                .unwrap()
                .is_some_and(|x| x.is_some()),
            "{name} through the index"
        );
    }
    drop(fs);
    fsck(&img);
    // Past what one index level holds (1K blocks: 123 leaves): the directory becomes
    // linear, still clean and complete.
    let fs = open(&img, true);
    for i in 0..4000 {
        mk(&fs, format!("most-{i:04}"));
    }
    assert!(!fs.inode(d).unwrap().has_flag(crate::disk::iflags::INDEX));
    for i in (0..4000).step_by(37) {
        assert!(lookup(&fs, &format!("d/most-{i:04}")).is_some());
    }
    assert!(lookup(&fs, "d/more-0777").is_some());
    assert!(lookup(&fs, "d/n001").is_some() && lookup(&fs, "d/n100").is_none());
    drop(fs);
    fsck(&img);
    let _ = std::fs::remove_file(&img);
}

#[test]
fn mutated_images_never_panic_on_writes() {
    // A small written image, then bytes of its metadata changed at random: every write
    // operation must give a result (often EUCLEAN), never a panic or a hang.
    let img = image("wfz.img", &["-b", "1024", "-O", "^has_journal"], "4M");
    {
        let fs = open(&img, true);
        let root = crate::disk::ROOT_INO;
        let d = fs.create(root, b"d", DIR, 0, 0, (0, 0), None).unwrap();
        for i in 0..40 {
            let f = fs
                .create(d, format!("f{i}").as_bytes(), REG, 0, 0, (0, 0), None)
                .unwrap();
            fs.write_file(f, i * 3000, &bytes(i, 2000)).unwrap();
        }
        for i in 0..60 {
            let name = format!("padding-entry-name-{i}");
            fs.create(d, name.as_bytes(), REG, 0, 0, (0, 0), None)
                .unwrap();
        }
        fs.set_xattr(d, b"user.x", Some(&[3u8; 300]), 0).unwrap();
    }
    // `d` indexed, so that inserts take the htree paths (leaf insert, split).
    let out = Command::new("e2fsck")
        .arg("-fyD")
        .arg(&img)
        .output()
        .unwrap();
    assert!(out.status.code().unwrap_or(8) <= 1);
    assert!(
        open(&img, false)
            .inode(lookup(&open(&img, false), "d").unwrap())
            .unwrap()
            .has_flag(crate::disk::iflags::INDEX)
    );
    let clean = std::fs::read(&img).unwrap();
    let meta_end = 600 * 1024;
    let mut reached = 0;
    for seed in 0..200u64 {
        let mut v = clean.clone();
        let r = bytes(seed + 100, 64);
        for k in 0..16 {
            let at =
                (u32::from_le_bytes([r[4 * k], r[4 * k + 1], r[4 * k + 2], 0]) as usize) % meta_end;
            // Leave the superblock alone half the time, so that mounts get further.
            if seed % 2 == 0 && (1024..2048).contains(&at) {
                continue;
            }
            v[at] ^= r[(k + 1) % 64] | 1;
        }
        std::fs::write(&img, &v).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&img)
            .unwrap();
        let len = f.metadata().unwrap().len();
        let Ok(mut fs) = Ext4::open(Arc::new(FileDev(f, len)), false) else {
            continue;
        };
        if crate::write::write_refusal(&fs.sb).is_some() || fs.enable_write().is_err() {
            continue;
        }
        reached += 1;
        let root = crate::disk::ROOT_INO;
        let _ = fs.create(root, b"new", REG, 0, 0, (0, 0), None);
        if let Some(d) = lookup_quiet(&fs, "d") {
            for i in 0..40u64 {
                let name = format!("f{i}");
                if let Ok(Some(f)) = fs.inode(d).and_then(|r| fs.lookup(&r, name.as_bytes())) {
                    let _ = fs.write_file(f, i * 1000, &bytes(i, 5000));
                    let _ = fs.truncate(f, 100);
                    let _ = fs.set_xattr(f, b"user.y", Some(b"v"), 0);
                }
                if i % 3 == 0
                    && let Ok((ino, _)) = fs.unlink(d, name.as_bytes(), false)
                {
                    let _ = fs.evict_if_unlinked(ino);
                }
            }
            for i in 0..60 {
                let _ = fs.create(d, format!("new-{i}").as_bytes(), REG, 0, 0, (0, 0), None);
            }
            let _ = fs.rename(d, b"f1", root, b"moved", 0);
            let _ = fs.create(d, b"sub", DIR, 0, 0, (0, 0), None);
            let _ = fs.unlink(root, b"d", true);
        }
    }
    assert!(
        reached >= 60,
        "only {reached} mutated images mounted read-write"
    );
    let _ = std::fs::remove_file(&img);
}

fn lookup_quiet(fs: &Ext4, path: &str) -> Option<u32> {
    let mut ino = crate::disk::ROOT_INO;
    for c in path.split('/').filter(|c| !c.is_empty()) {
        let d = fs.inode(ino).ok()?;
        ino = fs.lookup(&d, c.as_bytes()).ok()??;
    }
    Some(ino)
}

#[test]
fn orphans_of_a_crash_are_freed_at_the_next_mount() {
    // Two files unlinked while "open" (on the orphan list), then the mount goes away
    // without the last close, as in a crash: the next read-write mount frees them.
    let img = image("worph.img", &["-b", "4096", "-O", "^has_journal"], "16M");
    let before = open(&img, true).free_counts();
    {
        let fs = open(&img, true);
        let root = crate::disk::ROOT_INO;
        for n in [&b"o1"[..], b"o2", b"kept"] {
            let f = fs.create(root, n, REG, 0, 0, (0, 0), None).unwrap();
            fs.write_file(f, 0, &bytes(5, 200_000)).unwrap();
        }
        for n in [&b"o1"[..], b"o2"] {
            let (ino, gone) = fs.unlink(root, n, false).unwrap();
            assert!(gone);
            fs.orphan_add(ino).unwrap();
        }
        let (ino, _) = fs.unlink(root, b"kept", false).unwrap();
        // A closed one on the list too, taken off at its last close.
        fs.orphan_add(ino).unwrap();
        fs.evict_if_unlinked(ino).unwrap();
    }
    let fs = open(&img, true);
    assert_eq!(fs.orphan_cleanup(), Ok(2));
    assert_eq!(fs.free_counts(), before);
    drop(fs);
    fsck(&img);
    let _ = std::fs::remove_file(&img);
}

/// A device without writes (the trait's default `write_at`).
struct RoDev(FileDev);

impl BlockDevice for RoDev {
    fn size(&self) -> u64 {
        self.0.size()
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()> {
        self.0.read_at(off, buf)
    }
    fn read_only(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "ro".into()
    }
    fn rdev(&self) -> u64 {
        0
    }
}

#[test]
fn a_device_without_writes_refuses_rw() {
    let img = image("wro.img", &["-b", "1024"], "4M");
    let f = std::fs::File::open(&img).unwrap();
    let len = f.metadata().unwrap().len();
    let mut fs = Ext4::open(Arc::new(RoDev(FileDev(f, len))), false).unwrap();
    assert!(
        fs.enable_write()
            .unwrap_err()
            .contains("write access unavailable")
    );
    assert!(!fs.writable());
    let _ = std::fs::remove_file(&img);
}
