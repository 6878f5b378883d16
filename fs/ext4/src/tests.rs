//! Tests on images made at test time by the host's e2fsprogs (`mke2fs -d`, `debugfs -w`,
//! `e2fsck -fyD`): ext2, ext3 and ext4 at 1K and 4K blocks, htree directories, extent trees
//! of depth 2, unwritten extents, inline data, xattrs in the inode and in a block,
//! nanosecond times, the feature gate, checksum failures, and mutated images (which must
//! give errors, never a panic or a hang).

use crate::disk::{self, iflags};
use crate::fs::{Ext4, Mapping};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use um_kernel::vfs::BlockDevice;
use um_uapi::{Errno, SysResult};

/// An image in memory.
struct MemDev(Vec<u8>);

impl BlockDevice for MemDev {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()> {
        let end = off.checked_add(buf.len() as u64).ok_or(Errno::EIO)?;
        if end > self.0.len() as u64 {
            return Err(Errno::EIO);
        }
        buf.copy_from_slice(&self.0[off as usize..end as usize]);
        Ok(())
    }
    fn read_only(&self) -> bool {
        true
    }
    fn name(&self) -> String {
        "mem".into()
    }
    fn rdev(&self) -> u64 {
        0
    }
}

/// A scratch directory, removed when the test ends.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("um-ext4-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .expect("e2fsprogs (mke2fs, debugfs, e2fsck) must be installed");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Deterministic bytes (xorshift), so a failure reproduces.
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

/// The tree every image is made of.
fn make_tree(dir: &Path) {
    let t = dir.join("tree");
    std::fs::create_dir_all(t.join("sub/deep")).unwrap();
    std::fs::write(t.join("a.txt"), b"hello\n").unwrap();
    std::fs::write(t.join("big.bin"), bytes(7, 300_000)).unwrap();
    std::fs::write(t.join("sub/deep/f"), b"deep\n").unwrap();
    std::os::unix::fs::symlink("a.txt", t.join("fast")).unwrap();
    std::os::unix::fs::symlink("x".repeat(100), t.join("slow")).unwrap();
    // A sparse file: 10 MiB of hole, then data.
    let f = std::fs::File::create(t.join("sparse")).unwrap();
    f.set_len(10 << 20).unwrap();
    drop(f);
    let mut v = std::fs::read(t.join("sparse")).unwrap();
    v.extend_from_slice(b"tail\n");
    std::fs::write(t.join("sparse"), &v).unwrap();
}

/// Makes an image of `dir/tree` with `mke2fs -t TYPE -b BS EXTRA`, returns its path.
fn mkfs(dir: &Path, name: &str, args: &[&str], size: &str) -> PathBuf {
    let img = dir.join(name);
    run(Command::new("mke2fs")
        .args(["-q", "-F"])
        .args(args)
        .arg("-d")
        .arg(dir.join("tree"))
        .arg(&img)
        .arg(size));
    img
}

fn debugfs_w(img: &Path, req: &str) {
    run(Command::new("debugfs")
        .arg("-w")
        .arg("-R")
        .arg(req)
        .arg(img));
}

fn open(img: &Path) -> Ext4 {
    let data = std::fs::read(img).unwrap();
    Ext4::open(Arc::new(MemDev(data)), false).unwrap()
}

fn lookup_path(fs: &Ext4, path: &str) -> SysResult<disk::RawInode> {
    let mut cur = fs.inode(disk::ROOT_INO)?;
    for c in path.split('/').filter(|c| !c.is_empty()) {
        let ino = fs.lookup(&cur, c.as_bytes())?.ok_or(Errno::ENOENT)?;
        cur = fs.inode(ino)?;
    }
    Ok(cur)
}

fn read_all(fs: &Ext4, ino: &disk::RawInode) -> Vec<u8> {
    let mut v = vec![0u8; ino.size as usize];
    // Odd-sized reads at odd offsets: no assumption that reads are block or page sized.
    let mut off = 0;
    while off < v.len() {
        let n = (v.len() - off).min(12_345);
        let got = fs.read(ino, off as u64, &mut v[off..off + n]).unwrap();
        assert_eq!(got, n);
        off += n;
    }
    v
}

/// Everything a guest could ask of the tree: names, data, links, attributes.
fn check_tree(fs: &Ext4, host: &Path) {
    let t = host.join("tree");
    let a = lookup_path(fs, "a.txt").unwrap();
    assert_eq!(read_all(fs, &a), b"hello\n");
    let big = lookup_path(fs, "big.bin").unwrap();
    assert_eq!(
        read_all(fs, &big),
        std::fs::read(t.join("big.bin")).unwrap()
    );
    let sp = lookup_path(fs, "sparse").unwrap();
    assert_eq!(read_all(fs, &sp), std::fs::read(t.join("sparse")).unwrap());
    assert!(
        sp.blocks < 64,
        "the hole takes no blocks ({} sectors)",
        sp.blocks
    );
    assert_eq!(
        read_all(fs, &lookup_path(fs, "sub/deep/f").unwrap()),
        b"deep\n"
    );
    assert_eq!(
        fs.readlink(&lookup_path(fs, "fast").unwrap()).unwrap(),
        b"a.txt"
    );
    assert_eq!(
        fs.readlink(&lookup_path(fs, "slow").unwrap()).unwrap(),
        "x".repeat(100).as_bytes()
    );
    let root = fs.inode(disk::ROOT_INO).unwrap();
    let mut names: Vec<Vec<u8>> = fs
        .dir_entries(&root)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    let want: Vec<&[u8]> = vec![
        b".",
        b"..",
        b"a.txt",
        b"big.bin",
        b"fast",
        b"lost+found",
        b"slow",
        b"sparse",
        b"sub",
    ];
    assert_eq!(names, want);
    assert_eq!(lookup_path(fs, "nope").unwrap_err(), Errno::ENOENT);
    let sub = lookup_path(fs, "sub").unwrap();
    assert_eq!(sub.fmt(), 0o040000);
    let dotdot = fs
        .dir_entries(&sub)
        .unwrap()
        .into_iter()
        .find(|e| e.name == b"..")
        .unwrap();
    assert_eq!(dotdot.ino, disk::ROOT_INO);
}

#[test]
fn ext2_ext3_ext4_at_1k_and_4k() {
    let dir = scratch("kinds");
    make_tree(&dir);
    for (i, args) in [
        &["-t", "ext4", "-b", "1024"][..],
        &["-t", "ext4", "-b", "4096"],
        &[
            "-t",
            "ext4",
            "-b",
            "4096",
            "-O",
            "64bit,^metadata_csum,uninit_bg",
        ],
        &[
            "-t",
            "ext4",
            "-b",
            "1024",
            "-O",
            "^extent,^64bit,^flex_bg,meta_bg,^resize_inode",
        ],
        &["-t", "ext3", "-b", "1024"],
        &["-t", "ext3", "-b", "4096"],
        &["-t", "ext2", "-b", "1024", "-I", "128"],
        &["-t", "ext2", "-b", "4096"],
        &["-t", "ext4", "-b", "2048", "-O", "^64bit"],
    ]
    .iter()
    .enumerate()
    {
        let img = mkfs(&dir, &format!("img{i}"), args, "32M");
        // In-inode and block attributes (a 700-byte value does not fit in the inode).
        debugfs_w(&img, "ea_set /a.txt user.color blue");
        debugfs_w(&img, "ea_set /a.txt trusted.t tt");
        debugfs_w(&img, &format!("ea_set /sub user.big {}", "v".repeat(700)));
        let fs = open(&img);
        check_tree(&fs, &dir);
        let a = lookup_path(&fs, "a.txt").unwrap();
        let mut x = fs.xattrs(&a).unwrap();
        x.sort();
        assert_eq!(
            x,
            vec![
                (b"trusted.t".to_vec(), b"tt".to_vec()),
                (b"user.color".to_vec(), b"blue".to_vec())
            ],
            "{args:?}"
        );
        let sub = lookup_path(&fs, "sub").unwrap();
        assert_ne!(sub.file_acl, 0, "the big value went to a block");
        assert_eq!(
            fs.xattrs(&sub).unwrap(),
            vec![(b"user.big".to_vec(), vec![b'v'; 700])]
        );
        let extents = a.has_flag(iflags::EXTENTS);
        assert_eq!(extents, args.contains(&"ext4") && i != 3, "{args:?}");
    }
}

#[test]
fn htree_directory_reads_as_linear() {
    let dir = scratch("htree");
    std::fs::create_dir_all(dir.join("tree/many")).unwrap();
    for i in 0..2000 {
        std::fs::write(dir.join(format!("tree/many/file-{i:04}")), format!("{i}\n")).unwrap();
    }
    for bs in ["1024", "4096"] {
        let img = mkfs(&dir, &format!("h{bs}"), &["-t", "ext4", "-b", bs], "64M");
        // e2fsck -fyD rebuilds (indexes) every directory; exit 1 = "corrected".
        let st = Command::new("e2fsck")
            .arg("-fyD")
            .arg(&img)
            .output()
            .unwrap();
        assert!(st.status.code().is_some_and(|c| c <= 1), "{st:?}");
        let fs = open(&img);
        let many = lookup_path(&fs, "many").unwrap();
        assert!(many.has_flag(iflags::INDEX), "e2fsck -D made it an htree");
        let e = fs.dir_entries(&many).unwrap();
        assert_eq!(e.len(), 2002);
        let mut names: Vec<_> = e.iter().map(|e| e.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 2002);
        for i in [0, 1, 999, 1999] {
            let f = lookup_path(&fs, &format!("many/file-{i:04}")).unwrap();
            assert_eq!(read_all(&fs, &f), format!("{i}\n").as_bytes());
        }
    }
}

#[test]
fn htree_lookups_through_the_index_for_each_hash() {
    // Long and non-ASCII names too: half MD4 takes 32 bytes a round, TEA 16, and bytes above
    // 0x7f are where the signed and unsigned variants differ.
    let dir = scratch("dxhash");
    std::fs::create_dir_all(dir.join("tree/many")).unwrap();
    let names: Vec<String> = (0..1500)
        .map(|i| match i % 3 {
            0 => format!("f{i}"),
            1 => format!("a-rather-long-name-to-need-several-hash-rounds-{i:05}"),
            _ => format!("\u{e9}t\u{e9}-{i}"),
        })
        .collect();
    for n in &names {
        std::fs::write(dir.join("tree/many").join(n), b"").unwrap();
    }
    for (alg, bs) in [
        ("half_md4", "1024"),
        ("tea", "4096"),
        ("legacy", "1024"),
        ("half_md4", "4096"),
    ] {
        let img = mkfs(
            &dir,
            &format!("x-{alg}-{bs}"),
            &["-t", "ext4", "-b", bs],
            "64M",
        );
        run(Command::new("tune2fs")
            .arg("-E")
            .arg(format!("hash_alg={alg}"))
            .arg(&img));
        let st = Command::new("e2fsck")
            .arg("-fyD")
            .arg(&img)
            .output()
            .unwrap();
        assert!(st.status.code().is_some_and(|c| c <= 1), "{st:?}");
        let fs = open(&img);
        let many = lookup_path(&fs, "many").unwrap();
        assert!(many.has_flag(iflags::INDEX));
        let Mapping::Mapped { pblk, .. } = fs.map(&many, 0).unwrap() else {
            panic!("no dx root")
        };
        let version = fs.block(many.ino, pblk).unwrap()[28];
        let code = match alg {
            "legacy" => crate::hash::LEGACY,
            "half_md4" => crate::hash::HALF_MD4,
            _ => crate::hash::TEA,
        };
        assert_eq!(version, code, "the index uses {alg}");
        let all = fs.dir_entries(&many).unwrap();
        for n in &names {
            let want = all.iter().find(|e| e.name == n.as_bytes()).unwrap().ino;
            // The index alone must answer, and right.
            assert_eq!(
                fs.dx_lookup_for_test(&many, n.as_bytes()).unwrap(),
                Some(Some(want)),
                "{alg} {bs}: {n}"
            );
        }
        for missing in ["nope", "f1x", "\u{e9}t\u{e9}-99999"] {
            assert_eq!(fs.lookup(&many, missing.as_bytes()).unwrap(), None);
        }
    }
}

#[test]
fn deep_extent_tree_unwritten_extents_and_nanoseconds() {
    let dir = scratch("extents");
    std::fs::create_dir_all(dir.join("tree")).unwrap();
    // 1200 one-block runs with holes between: more extents than one 1K leaf holds four
    // times over, so the tree has depth 2.
    let mut want = vec![0u8; 1200 * 2048];
    for i in 0..1200 {
        want[i * 2048..i * 2048 + 1024].fill((i % 251) as u8);
    }
    want.truncate(1199 * 2048 + 1024);
    std::fs::write(dir.join("tree/frag"), &want).unwrap();
    std::fs::write(dir.join("tree/small"), b"0123456789").unwrap();
    let img = mkfs(&dir, "e", &["-t", "ext4", "-b", "1024"], "16M");
    debugfs_w(&img, "fallocate /small 10 20");
    debugfs_w(&img, "sif /small mtime_extra 0x1235");
    debugfs_w(&img, "sif /small size 20000");
    let fs = open(&img);
    let frag = lookup_path(&fs, "frag").unwrap();
    assert_eq!(disk::le16(&frag.block, 6), 2, "extent tree depth");
    assert_eq!(read_all(&fs, &frag), want);
    assert!(matches!(
        fs.map(&frag, 1).unwrap(),
        Mapping::Hole { len: 1 }
    ));
    let small = lookup_path(&fs, "small").unwrap();
    assert!(matches!(
        fs.map(&small, 12).unwrap(),
        Mapping::Mapped {
            unwritten: true,
            len: 9,
            ..
        }
    ));
    let data = read_all(&fs, &small);
    assert_eq!(&data[..10], b"0123456789");
    assert!(
        data[10..].iter().all(|&b| b == 0),
        "unwritten extents read as zeros"
    );
    // mtime_extra 0x1235: epoch bits 1 (seconds + 2^32), nanoseconds 0x48d.
    let sec = std::fs::metadata(dir.join("tree/small")).unwrap();
    let host_sec = std::os::unix::fs::MetadataExt::mtime(&sec);
    assert_eq!(small.mtime, (host_sec + (1 << 32), 0x1235 >> 2));
}

#[test]
fn inline_data_files_and_directories() {
    let dir = scratch("inline");
    std::fs::create_dir_all(dir.join("tree/d")).unwrap();
    std::fs::write(dir.join("tree/tiny"), b"tiny file\n").unwrap();
    let mid: Vec<u8> = (0..100u8).collect();
    std::fs::write(dir.join("tree/mid"), &mid).unwrap();
    std::fs::write(dir.join("tree/d/x"), b"x").unwrap();
    let img = mkfs(
        &dir,
        "i",
        &["-t", "ext4", "-O", "inline_data", "-I", "256"],
        "16M",
    );
    let fs = open(&img);
    let tiny = lookup_path(&fs, "tiny").unwrap();
    assert!(tiny.has_flag(iflags::INLINE_DATA));
    assert_eq!(read_all(&fs, &tiny), b"tiny file\n");
    let m = lookup_path(&fs, "mid").unwrap();
    assert!(
        m.has_flag(iflags::INLINE_DATA),
        "100 bytes: i_block plus system.data"
    );
    assert_eq!(read_all(&fs, &m), mid);
    assert!(
        fs.xattrs(&m).unwrap().is_empty(),
        "system.data is not listed"
    );
    let d = lookup_path(&fs, "d").unwrap();
    assert!(d.has_flag(iflags::INLINE_DATA));
    assert_eq!(read_all(&fs, &lookup_path(&fs, "d/x").unwrap()), b"x");
    let names: Vec<_> = fs
        .dir_entries(&d)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, [&b"."[..], b"..", b"x"]);
}

/// Patches the superblock (and its checksum when the image has one).
fn patch_sb(img: &mut [u8], f: impl Fn(&mut [u8])) {
    let sb = &mut img[1024..2048];
    f(sb);
    if disk::le32(sb, 0x64) & disk::ro_compat::METADATA_CSUM != 0 {
        let c = crate::crc::crc32c(!0, &sb[..0x3FC]);
        sb[0x3FC..0x400].copy_from_slice(&c.to_le_bytes());
    }
}

fn open_bytes(img: Vec<u8>, noload: bool) -> Result<Ext4, String> {
    Ext4::open(Arc::new(MemDev(img)), noload)
}

#[test]
fn feature_gate_as_linux() {
    let dir = scratch("gate");
    make_tree(&dir);
    let img = std::fs::read(mkfs(&dir, "g", &["-t", "ext4"], "16M")).unwrap();
    // An incompatible feature nobody knows: refused.
    let mut x = img.clone();
    patch_sb(&mut x, |sb| sb[0x60 + 3] |= 0x80);
    assert!(
        open_bytes(x, false)
            .unwrap_err()
            .contains("unsupported optional features")
    );
    // One Linux knows but this driver does not read (encryption): refused too.
    let mut x = img.clone();
    patch_sb(&mut x, |sb| sb[0x62] |= 0x01);
    assert!(open_bytes(x, false).is_err());
    // A journal to replay on a read-only device: refused (EROFS, as Linux), unless noload.
    let mut x = img.clone();
    patch_sb(&mut x, |sb| sb[0x60] |= 0x04);
    assert!(
        open_bytes(x.clone(), false)
            .unwrap_err()
            .contains("recovery")
    );
    check_tree(&open_bytes(x, true).unwrap(), &dir);
    // An unknown read-only-compatible feature: mounts (read-only).
    let mut x = img.clone();
    patch_sb(&mut x, |sb| sb[0x64 + 3] |= 0x40);
    let fs = open_bytes(x, false).unwrap();
    assert_ne!(fs.sb.unknown_ro_compat(), 0);
    // The superblock checksum is checked.
    let mut x = img.clone();
    x[1024 + 0x78] ^= 1; // the volume name
    assert!(
        open_bytes(x, false)
            .unwrap_err()
            .contains("superblock checksum")
    );
    // csum_seed: the seed moves into the superblock and everything still verifies.
    let p = dir.join("seed");
    std::fs::write(&p, &img).unwrap();
    run(Command::new("tune2fs")
        .args(["-O", "metadata_csum_seed", "-U", "random"])
        .arg(&p));
    let fs = open(&p);
    assert!(fs.sb.has(disk::incompat::CSUM_SEED));
    check_tree(&fs, &dir);
}

#[test]
fn checksums_catch_corruption() {
    let dir = scratch("csum");
    make_tree(&dir);
    let path = mkfs(&dir, "c", &["-t", "ext4", "-b", "1024"], "16M");
    let img = std::fs::read(&path).unwrap();
    let fs = open(&path);
    let bs = fs.sb.block_size as usize;
    let a = lookup_path(&fs, "a.txt").unwrap();
    let itab = fs.groups()[0].inode_table as usize * bs;
    let a_off = itab + (a.ino as usize - 1) * fs.sb.inode_size as usize;
    let root = fs.inode(disk::ROOT_INO).unwrap();
    let Mapping::Mapped { pblk, .. } = fs.map(&root, 0).unwrap() else {
        panic!("root has a block")
    };
    drop(fs);
    // An inode's size changes under its checksum.
    let mut x = img.clone();
    x[a_off + 4] ^= 0x40;
    let fs = open_bytes(x, false).unwrap();
    assert_eq!(lookup_path(&fs, "a.txt").unwrap_err(), Errno::EUCLEAN);
    assert!(
        lookup_path(&fs, "big.bin").is_ok(),
        "other inodes still read"
    );
    // A name in the root directory's block.
    let mut x = img.clone();
    x[pblk as usize * bs + 30] ^= 1;
    let fs = open_bytes(x, false).unwrap();
    assert_eq!(lookup_path(&fs, "a.txt").unwrap_err(), Errno::EUCLEAN);
    // A group descriptor.
    let mut x = img.clone();
    x[2 * bs + 8] ^= 1;
    assert!(
        open_bytes(x, false)
            .unwrap_err()
            .contains("Checksum for group 0")
    );
}

/// Walks everything reachable, reading all of it; errors are fine, panics and hangs not.
fn walk(fs: &Ext4, ino: u32, depth: u32, budget: &mut u32) -> SysResult<()> {
    if depth > 8 || *budget == 0 {
        return Ok(());
    }
    *budget -= 1;
    let i = fs.inode(ino)?;
    let _ = fs.xattrs(&i);
    match i.fmt() {
        0o040000 => {
            for e in fs.dir_entries(&i)? {
                if e.name != b"." && e.name != b".." {
                    let _ = walk(fs, e.ino, depth + 1, budget);
                }
            }
        }
        0o120000 => {
            fs.readlink(&i)?;
        }
        0o100000 => {
            let mut buf = vec![0u8; 1 << 16];
            let mut off = 0u64;
            while off < i.size.min(1 << 22) {
                fs.read(&i, off, &mut buf)?;
                off += buf.len() as u64;
            }
            let _ = fs.read(&i, i.size.saturating_sub(5), &mut buf);
        }
        _ => {}
    }
    Ok(())
}

/// The byte offsets of the metadata of the test tree (superblock, descriptors, the inodes in
/// use, directory, extent and xattr blocks), where mutations find something to break.
fn metadata_bytes(fs: &Ext4) -> Vec<usize> {
    let bs = fs.sb.block_size as usize;
    let isz = fs.sb.inode_size as usize;
    let mut v: Vec<usize> = (1024..2048).collect();
    let gdt = (fs.sb.first_data_block as usize + 1) * bs;
    v.extend(gdt..gdt + 64);
    let itab = fs.groups()[0].inode_table as usize * bs;
    v.extend(itab..itab + isz * (fs.sb.first_ino as usize + 12));
    for p in [
        "",
        "sub",
        "sub/deep",
        "lost+found",
        "slow",
        "sparse",
        "big.bin",
    ] {
        let i = lookup_path(fs, p).unwrap();
        if i.file_acl != 0 {
            let b = i.file_acl as usize * bs;
            v.extend(b..b + bs);
        }
        if i.fmt() == 0o040000 || p == "slow" {
            if let Ok(Mapping::Mapped { pblk, .. }) = fs.map(&i, 0) {
                let b = pblk as usize * bs;
                v.extend(b..b + bs);
            }
        }
        if !i.has_flag(iflags::EXTENTS) && i.fmt() == 0o100000 && p == "big.bin" {
            // The single indirect block of an ext2 file.
            let b = disk::le32(&i.block, 48) as usize * bs;
            v.extend(b..b + bs);
        }
    }
    v
}

#[test]
fn mutated_images_give_errors_not_panics() {
    let dir = scratch("fuzz");
    make_tree(&dir);
    for (n, args) in [
        &["-t", "ext4", "-b", "1024"][..],
        &["-t", "ext4", "-b", "1024", "-O", "^metadata_csum"],
        &["-t", "ext2", "-b", "1024"],
        &["-t", "ext4", "-b", "1024", "-O", "inline_data"],
    ]
    .iter()
    .enumerate()
    {
        let path = mkfs(&dir, &format!("f{n}"), args, "8M");
        debugfs_w(&path, &format!("ea_set /sub user.big {}", "v".repeat(700)));
        let img = std::fs::read(&path).unwrap();
        let targets = metadata_bytes(&open(&path));
        let (mut opened, mut errors) = (0, 0);
        for round in 0..300u64 {
            let mut x = img.clone();
            let r = bytes(round * 7919 + n as u64, 64);
            let flips = 1 + r[0] as usize % 8;
            for k in 0..flips {
                let pick =
                    u32::from_le_bytes([r[1 + k * 4], r[2 + k * 4], r[3 + k * 4], r[4 + k * 4]])
                        as usize
                        % targets.len();
                x[targets[pick]] ^= r[40 + k] | 1;
            }
            // A third of the rounds also mangle the superblock itself (checksum fixed up, so
            // the geometry checks see the bad values).
            if round % 3 == 0 {
                let f = r[50] as usize % 0x100;
                patch_sb(&mut x, |sb| sb[f] ^= r[51] | 1);
            }
            let Ok(fs) = open_bytes(x, true) else {
                continue;
            };
            opened += 1;
            let mut budget = 200;
            if walk(&fs, disk::ROOT_INO, 0, &mut budget).is_err() {
                errors += 1;
            }
        }
        // The mutations must have reached both the mount checks and the walk.
        assert!(opened > 10 && opened < 300, "{args:?}: opened {opened}");
        assert!(errors > 0, "{args:?}: no walk failed");
    }
}

#[test]
fn truncated_image_is_refused() {
    let dir = scratch("trunc");
    make_tree(&dir);
    let img = std::fs::read(mkfs(&dir, "t", &["-t", "ext4"], "16M")).unwrap();
    assert!(open_bytes(img[..img.len() / 2].to_vec(), false).is_err());
    assert!(open_bytes(img[..1500].to_vec(), false).is_err());
    assert!(open_bytes(Vec::new(), false).is_err());
}

#[test]
fn page_cache_reads_at_4k_and_16k_pages_over_every_block_size() {
    // What the page cache asks (`VmFile::read_page`): one guest page at a page-aligned offset,
    // the bytes past the end left for the caller to zero. The arm64 lane runs 16K pages.
    let dir = scratch("pages");
    make_tree(&dir);
    let want = std::fs::read(dir.join("tree/big.bin")).unwrap();
    for bs in ["1024", "2048", "4096"] {
        let fs = open(&mkfs(
            &dir,
            &format!("p{bs}"),
            &["-t", "ext4", "-b", bs],
            "16M",
        ));
        let big = lookup_path(&fs, "big.bin").unwrap();
        for page in [4096usize, 16384] {
            let mut got = Vec::new();
            let mut off = 0u64;
            loop {
                let mut buf = vec![0xAAu8; page];
                let n = fs.read(&big, off, &mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
                if n < page {
                    assert!(
                        buf[n..].iter().all(|&b| b == 0xAA),
                        "nothing written past the end"
                    );
                    break;
                }
                off += page as u64;
            }
            assert_eq!(got, want, "{bs}-byte blocks, {page}-byte pages");
        }
    }
}
