//! Tests of JBD2 ([`crate::jbd2`]) against e2fsprogs:
//! - replay: an image `A` and a copy `B` changed by `debugfs -w` (files written, a
//!   directory made, a file removed); every block that differs is written into `A`'s
//!   journal with debugfs's `jo`/`jw`/`jc` (one block starting with the journal magic, so
//!   escaped; one block revoked by a later transaction; one transaction left uncommitted).
//!   Our replay must give `B`'s blocks, the escaped block restored, the revoked and
//!   uncommitted ones untouched, the same image as `e2fsck -E journal_only`'s replay, and
//!   `e2fsck -fn` clean. At 1K and 4K blocks, 32- and 64-bit, with v3, v2 and no checksums.
//! - crashes: a workload (files, a big file, unlink, rename, truncate, xattrs, 150
//!   fsyncs, so the log wraps) runs on a device that models a volatile write cache (writes
//!   since the last flush are each lost or kept at a crash); at many crash points the
//!   image must be `e2fsck -fn` clean after `e2fsck -E journal_only`'s replay and after
//!   ours, and every file fsynced before the crash must read back.
//! - refusals and hostile input: async-commit, fast-commit and unknown journal features
//!   refuse the mount; single-byte mutations of the journal give errors, never panics.

use crate::fs::Ext4;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use um_kernel::vfs::BlockDevice;
use um_uapi::{Errno, SysResult};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("um-jbd2-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run e2fsprogs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

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
        self.0.write_all_at(data, off).map_err(|_| Errno::EIO)
    }
    fn flush(&self) -> SysResult<()> {
        Ok(())
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

fn file_dev(img: &Path) -> Arc<FileDev> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap();
    let len = f.metadata().unwrap().len();
    Arc::new(FileDev(f, len))
}

fn fsck_clean(img: &Path) {
    run(Command::new("e2fsck").arg("-fn").arg(img));
}

/// e2fsprogs' replay, and nothing else.
fn e2fsck_replay(img: &Path) {
    let out = Command::new("e2fsck")
        .args(["-E", "journal_only", "-y"])
        .arg(img)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "e2fsck -E journal_only: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn block_size(img: &[u8]) -> usize {
    1024 << crate::disk::le32(&img[1024..], 0x18)
}

/// The journal inode's blocks (`debugfs -R "blocks <8>"`).
fn journal_blocks(img: &Path) -> Vec<usize> {
    run(Command::new("debugfs").arg("-R").arg("blocks <8>").arg(img))
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect()
}

fn replay_case(name: &str, mkfs: &[&str], jo: &str) {
    let dir = scratch(name);
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    std::fs::write(tree.join("a"), bytes(1, 5000)).unwrap();
    std::fs::write(tree.join("b"), bytes(2, 100)).unwrap();
    std::fs::write(tree.join("d/e"), bytes(3, 30000)).unwrap();
    let a = dir.join("a.img");
    let fstype: &[&str] = if mkfs.contains(&"-t") {
        &[]
    } else {
        &["-t", "ext4"]
    };
    run(Command::new("mke2fs")
        .args(["-q", "-F"])
        .args(fstype)
        .args(mkfs)
        .arg("-d")
        .arg(&tree)
        .arg(&a)
        .arg("8M"));
    // B: A changed by debugfs.
    let b = dir.join("b.img");
    std::fs::copy(&a, &b).unwrap();
    let big = dir.join("big");
    std::fs::write(&big, bytes(4, 70000)).unwrap();
    let small = dir.join("small");
    std::fs::write(&small, bytes(5, 700)).unwrap();
    let cmds = dir.join("cmds");
    std::fs::write(
        &cmds,
        format!(
            "write {} /new\nmkdir /nd\nwrite {} /nd/s\nsymlink /nd/l /a\nrm /b\n",
            big.display(),
            small.display()
        ),
    )
    .unwrap();
    run(Command::new("debugfs")
        .arg("-w")
        .arg("-f")
        .arg(&cmds)
        .arg(&b));
    let ai = std::fs::read(&a).unwrap();
    let bi = std::fs::read(&b).unwrap();
    let bs = block_size(&ai);
    let nblocks = ai.len() / bs;
    let diff: Vec<usize> = (0..nblocks)
        .filter(|&i| ai[i * bs..(i + 1) * bs] != bi[i * bs..(i + 1) * bs])
        .collect();
    assert!(diff.contains(&(1024 / bs)), "the superblock changed");
    assert!(diff.len() > 20, "{diff:?}");
    // Three blocks free in B: escaped, revoked, uncommitted.
    let ffb = run(Command::new("debugfs").arg("-R").arg("ffb 3 3000").arg(&b));
    let free: Vec<usize> = ffb
        .split(':')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let (x, y, z) = (free[0], free[1], free[2]);
    let mut xdata = bytes(6, bs);
    xdata[..4].copy_from_slice(&crate::jbd2::MAGIC.to_be_bytes());
    let put = |name: &str, blocks: &[usize], src: &dyn Fn(usize) -> Vec<u8>| {
        let p = dir.join(name);
        let v: Vec<u8> = blocks.iter().flat_map(|&k| src(k)).collect();
        std::fs::write(&p, v).unwrap();
        p
    };
    let list = |blocks: &[usize]| {
        blocks
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let (d1, d2) = diff.split_at(diff.len() / 2);
    let from_b = |k: usize| bi[k * bs..(k + 1) * bs].to_vec();
    let f1 = put("d1", d1, &from_b);
    let f2 = put("d2", d2, &from_b);
    let fx = put("x", &[x, y], &|k| {
        if k == x {
            xdata.clone()
        } else {
            vec![0x55; bs]
        }
    });
    let fz = put("z", &[z], &|_| vec![0x77; bs]);
    let j = dir.join("j.img");
    std::fs::copy(&a, &j).unwrap();
    std::fs::write(
        &cmds,
        format!(
            "jo {jo}\njw -b {} {}\njw -b {} {}\njw -b {},{} {}\njw -r {y} /dev/null\njw -b {z} -c {}\njc\n",
            list(d1),
            f1.display(),
            list(d2),
            f2.display(),
            x,
            y,
            fx.display(),
            fz.display()
        ),
    )
    .unwrap();
    run(Command::new("debugfs")
        .arg("-w")
        .arg("-f")
        .arg(&cmds)
        .arg(&j));
    let logdump = run(Command::new("debugfs").arg("-R").arg("logdump").arg(&j));
    assert!(logdump.contains("revoke table"), "{logdump}");
    // The journal has the checksum version the case is about.
    let dump = run(Command::new("dumpe2fs").arg("-h").arg(&j));
    let want = match jo {
        "-c" => Some("journal_checksum_v3"),
        "-c -v 2" => Some("journal_checksum_v2"),
        _ => None,
    };
    match want {
        Some(f) => assert!(dump.contains(f), "{name}: {dump}"),
        None => assert!(!dump.contains("journal_checksum"), "{name}: {dump}"),
    }
    // e2fsprogs' replay.
    let e = dir.join("e.img");
    std::fs::copy(&j, &e).unwrap();
    e2fsck_replay(&e);
    // Ours: a read-only open on a writable device replays.
    let o = dir.join("o.img");
    std::fs::copy(&j, &o).unwrap();
    {
        let fs = Ext4::open(file_dev(&o), false).unwrap();
        assert!(!fs.sb.has(crate::disk::incompat::RECOVER));
        let ino = fs.lookup(&fs.inode(2).unwrap(), b"new").unwrap().unwrap();
        let r = fs.inode(ino).unwrap();
        let mut v = vec![0u8; r.size as usize];
        fs.read(&r, 0, &mut v).unwrap();
        assert_eq!(v, bytes(4, 70000));
        assert!(fs.lookup(&fs.inode(2).unwrap(), b"b").unwrap().is_none());
    }
    fsck_clean(&o);
    let oi = std::fs::read(&o).unwrap();
    let ei = std::fs::read(&e).unwrap();
    let blk = |img: &[u8], k: usize| img[k * bs..(k + 1) * bs].to_vec();
    for &k in &diff {
        if k == 1024 / bs {
            continue;
        }
        assert_eq!(
            blk(&oi, k),
            blk(&bi, k),
            "{name}: block {k} after our replay"
        );
    }
    assert_eq!(blk(&oi, x), xdata, "{name}: the escaped block");
    assert_eq!(blk(&oi, y), blk(&ai, y), "{name}: the revoked block");
    assert_eq!(blk(&oi, z), blk(&ai, z), "{name}: the uncommitted block");
    let jb = journal_blocks(&o);
    let sbb = 1024 / bs;
    for k in 0..nblocks {
        if jb.contains(&k) || k == sbb {
            continue;
        }
        assert_eq!(
            blk(&oi, k),
            blk(&ei, k),
            "{name}: block {k}: ours vs e2fsck's"
        );
    }
    // The superblock: B's (replayed; e2fsck also recounts the free blocks, so only its
    // features are compared).
    let sb = |img: &[u8], o: usize, n: usize| img[1024 + o..1024 + o + n].to_vec();
    assert_eq!(sb(&oi, 0, 1024), sb(&bi, 0, 1024), "{name}: superblock");
    assert_eq!(sb(&oi, 0x5C, 12), sb(&ei, 0x5C, 12), "{name}: features");
    // The journal is empty: mounting again replays nothing and writes work.
    let mut fs = Ext4::open(file_dev(&o), false).unwrap();
    if crate::write::write_refusal(&fs.sb).is_none() {
        fs.enable_write().unwrap();
        fs.create(2, b"after", 0o100644, 0, 0, (0, 0), None)
            .unwrap();
    }
    drop(fs);
    fsck_clean(&o);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replay_as_e2fsprogs_4k_v3() {
    replay_case("4k-v3", &["-b", "4096"], "-c");
}

#[test]
fn replay_as_e2fsprogs_1k_32bit_no_checksums() {
    replay_case(
        "1k-plain",
        &["-b", "1024", "-O", "^64bit,^metadata_csum"],
        "",
    );
}

#[test]
fn replay_as_e2fsprogs_ext3_indirect_journal_inode() {
    replay_case("ext3", &["-t", "ext3", "-b", "2048"], "");
}

#[test]
fn replay_as_e2fsprogs_1k_v2() {
    replay_case("1k-v2", &["-b", "1024"], "-c -v 2");
}

/// A disk with a volatile write cache: writes since the last flush are held; at the crash
/// (the write or flush after `limit` of them) each of them is lost or kept (a fixed
/// pseudo-random choice) and later writes are dropped.
struct CrashDev {
    file: std::fs::File,
    size: u64,
    st: Mutex<CState>,
}

struct CState {
    pending: Vec<(u64, Vec<u8>)>,
    writes: u64,
    limit: u64,
    crashed: bool,
    seed: u64,
}

impl CrashDev {
    fn new(img: &Path, limit: u64, seed: u64) -> Arc<CrashDev> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(img)
            .unwrap();
        let size = file.metadata().unwrap().len();
        Arc::new(CrashDev {
            file,
            size,
            st: Mutex::new(CState {
                pending: Vec::new(),
                writes: 0,
                limit,
                crashed: false,
                seed,
            }),
        })
    }

    /// Counts a write or flush; `true` if the device is dead (the power failed at this
    /// one or before): the cache then keeps a pseudo-random part of what it held.
    fn event(&self, st: &mut CState) -> bool {
        if st.crashed {
            return true;
        }
        st.writes += 1;
        if st.writes <= st.limit {
            return false;
        }
        st.crashed = true;
        let mut x = st.seed | 1;
        for (o, d) in std::mem::take(&mut st.pending) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x & 1 == 0 {
                self.file.write_all_at(&d, o).unwrap();
            }
        }
        true
    }

    /// Writes and flushes so far.
    fn writes(&self) -> u64 {
        self.st.lock().unwrap().writes
    }

    fn crashed(&self) -> bool {
        self.st.lock().unwrap().crashed
    }
}

impl BlockDevice for CrashDev {
    fn size(&self) -> u64 {
        self.size
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()> {
        self.file.read_exact_at(buf, off).map_err(|_| Errno::EIO)?;
        let st = self.st.lock().unwrap();
        let end = off + buf.len() as u64;
        for (o, d) in &st.pending {
            let (a, b) = ((*o).max(off), (o + d.len() as u64).min(end));
            if a < b {
                buf[(a - off) as usize..(b - off) as usize]
                    .copy_from_slice(&d[(a - o) as usize..(b - o) as usize]);
            }
        }
        Ok(())
    }
    fn write_at(&self, off: u64, data: &[u8]) -> SysResult<()> {
        if off + data.len() as u64 > self.size {
            return Err(Errno::EIO);
        }
        let mut st = self.st.lock().unwrap();
        if self.event(&mut st) {
            return Ok(());
        }
        st.pending.push((off, data.to_vec()));
        Ok(())
    }
    fn flush(&self) -> SysResult<()> {
        let mut st = self.st.lock().unwrap();
        if self.event(&mut st) {
            return Ok(());
        }
        for (o, d) in std::mem::take(&mut st.pending) {
            self.file.write_all_at(&d, o).unwrap();
        }
        Ok(())
    }
    fn read_only(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "crash".into()
    }
    fn rdev(&self) -> u64 {
        0
    }
}

const REG: u32 = 0o100644;
const DIR: u32 = 0o040755;

/// Files that must survive a crash after the fsync that covered them: (writes done when
/// the fsync returned, directory, name, contents).
type Synced = Vec<(u64, Vec<u8>, Vec<u8>, Vec<u8>)>;

fn workload(fs: &Ext4, dev: &CrashDev, synced: &mut Synced) -> SysResult<()> {
    let root = crate::disk::ROOT_INO;
    let d = fs.create(root, b"dir", DIR, 0, 0, (0, 0), None)?;
    let mut keep = Vec::new();
    for i in 0..40u64 {
        let name = format!("f{i}").into_bytes();
        let f = fs.create(d, &name, REG, 0, 0, (0, 0), None)?;
        let data = bytes(i, 100 + i as usize * 97);
        fs.write_file(f, 0, &data)?;
        keep.push((b"dir".to_vec(), name, data));
    }
    let big = fs.create(root, b"big", REG, 0, 0, (0, 0), None)?;
    fs.write_file(big, 0, &bytes(99, 200_000))?;
    fs.sync()?;
    let w = dev.writes();
    for (dir, name, data) in keep.drain(20..) {
        synced.push((w, dir, name, data));
    }
    for i in 0..20 {
        let (ino, _) = fs.unlink(d, format!("f{i}").as_bytes(), false)?;
        fs.evict_if_unlinked(ino)?;
    }
    fs.rename(root, b"big", root, b"big2", 0)?;
    fs.truncate(big, 50_000)?;
    fs.write_file(big, 300_000, b"tail")?;
    let x = fs.create(root, b"x", REG, 0, 0, (0, 0), None)?;
    let xd = bytes(7, 70_000);
    fs.write_file(x, 0, &xd)?;
    fs.set_xattr(x, b"user.k", Some(b"v"), 0)?;
    fs.sync()?;
    synced.push((dev.writes(), vec![], b"x".to_vec(), xd));
    // Many small fsynced transactions: the log wraps.
    let d2 = fs.create(root, b"d2", DIR, 0, 0, (0, 0), None)?;
    for i in 0..150u64 {
        let name = format!("g{i}").into_bytes();
        let f = fs.create(d2, &name, REG, 0, 0, (0, 0), None)?;
        let data = bytes(1000 + i, 50 + i as usize * 13);
        fs.write_file(f, 0, &data)?;
        if i % 3 == 0 && i > 0 {
            let (ino, _) = fs.unlink(d2, format!("g{}", i - 1).as_bytes(), false)?;
            fs.evict_if_unlinked(ino)?;
        }
        fs.sync()?;
        if i % 3 != 2 {
            synced.push((dev.writes(), b"d2".to_vec(), name, data));
        }
    }
    let (ino, _) = fs.unlink(root, b"big2", false)?;
    fs.evict_if_unlinked(ino)?;
    Ok(())
}

fn check_synced(img: &Path, limit: u64, synced: &Synced) {
    let fs = Ext4::open(file_dev(img), false).unwrap();
    let root = fs.inode(crate::disk::ROOT_INO).unwrap();
    for (w, dir, name, data) in synced {
        if *w > limit {
            continue;
        }
        let d = if dir.is_empty() {
            root.clone()
        } else {
            let i = fs.lookup(&root, dir).unwrap().expect("synced directory");
            fs.inode(i).unwrap()
        };
        let ino = fs.lookup(&d, name).unwrap().unwrap_or_else(|| {
            panic!(
                "crash after write {limit}: {} fsynced at {w} is missing",
                String::from_utf8_lossy(name)
            )
        });
        let r = fs.inode(ino).unwrap();
        let mut v = vec![0u8; r.size as usize];
        fs.read(&r, 0, &mut v).unwrap();
        assert!(
            v == *data,
            "crash after write {limit}: contents of {name:?}"
        );
    }
}

fn crash_case(name: &str, mkfs: &[&str]) {
    let dir = scratch(name);
    let pristine = dir.join("p.img");
    run(Command::new("mke2fs")
        .args(["-q", "-F", "-t", "ext4"])
        .args(mkfs)
        .arg(&pristine)
        .arg("16M"));
    // A run without a crash: the writes it does, the log wrapped, a clean unmount.
    let img = dir.join("full.img");
    std::fs::copy(&pristine, &img).unwrap();
    let dev = CrashDev::new(&img, u64::MAX, 0);
    let mut synced = Vec::new();
    let total;
    {
        let mut fs = Ext4::open(dev.clone(), false).unwrap();
        fs.enable_write().unwrap();
        workload(&fs, &dev, &mut synced).unwrap();
        let (commits, wraps, _) = fs.journal_stats();
        assert!(commits > 150, "{commits} commits");
        assert!(wraps >= 1, "the log never wrapped");
        total = dev.writes();
    }
    dev.flush().unwrap();
    fsck_clean(&img);
    check_synced(&img, u64::MAX, &synced);
    // Crash points over the whole run, some close together.
    let mut points: Vec<u64> = (1..48).map(|k| total * k / 48).collect();
    points.extend([1, 2, 5, 9, 17, 33, total - 3, total - 1]);
    for (n, &limit) in points.iter().enumerate() {
        let img = dir.join("c.img");
        std::fs::copy(&pristine, &img).unwrap();
        let dev = CrashDev::new(&img, limit, n as u64 * 7919 + 1);
        let mut got = Vec::new();
        {
            let mut fs = Ext4::open(dev.clone(), false).unwrap();
            fs.enable_write().unwrap();
            let _ = workload(&fs, &dev, &mut got);
            assert!(dev.crashed(), "crash point {limit} of {total} not reached");
        }
        let e = dir.join("e.img");
        std::fs::copy(&img, &e).unwrap();
        e2fsck_replay(&e);
        fsck_clean(&e);
        check_synced(&e, limit, &synced);
        // Our replay and orphan cleanup (a read-write mount), then e2fsck.
        {
            let mut fs = Ext4::open(file_dev(&img), false).unwrap();
            fs.enable_write().unwrap();
            fs.orphan_cleanup().unwrap();
        }
        fsck_clean(&img);
        check_synced(&img, limit, &synced);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crashes_leave_clean_images_4k() {
    crash_case("crash-4k", &["-b", "4096", "-J", "size=4"]);
}

#[test]
fn crashes_leave_clean_images_1k_32bit() {
    crash_case(
        "crash-1k",
        &["-b", "1024", "-J", "size=1", "-O", "^64bit,^metadata_csum"],
    );
}

/// An image in memory, writable.
struct MemRw(Mutex<Vec<u8>>);

impl BlockDevice for MemRw {
    fn size(&self) -> u64 {
        self.0.lock().unwrap().len() as u64
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()> {
        let m = self.0.lock().unwrap();
        let end = off.checked_add(buf.len() as u64).ok_or(Errno::EIO)?;
        if end > m.len() as u64 {
            return Err(Errno::EIO);
        }
        buf.copy_from_slice(&m[off as usize..end as usize]);
        Ok(())
    }
    fn write_at(&self, off: u64, data: &[u8]) -> SysResult<()> {
        let mut m = self.0.lock().unwrap();
        let end = off.checked_add(data.len() as u64).ok_or(Errno::EIO)?;
        if end > m.len() as u64 {
            return Err(Errno::EIO);
        }
        m[off as usize..end as usize].copy_from_slice(data);
        Ok(())
    }
    fn read_only(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "memrw".into()
    }
    fn rdev(&self) -> u64 {
        0
    }
}

/// An image whose journal needs recovery (two committed transactions, one with a revoke),
/// and the file system blocks of its journal.
fn needs_recovery_image(dir: &Path) -> (Vec<u8>, Vec<usize>) {
    let img = dir.join("r.img");
    run(Command::new("mke2fs")
        .args(["-q", "-F", "-t", "ext4", "-b", "1024"])
        .arg(&img)
        .arg("8M"));
    let data = dir.join("data");
    std::fs::write(&data, bytes(9, 3 * 1024)).unwrap();
    let cmds = dir.join("cmds");
    std::fs::write(
        &cmds,
        format!(
            "jo -c\njw -b 7000,7001,7002 {}\njw -r 7001 /dev/null\njc\n",
            data.display()
        ),
    )
    .unwrap();
    run(Command::new("debugfs")
        .arg("-w")
        .arg("-f")
        .arg(&cmds)
        .arg(&img));
    let jb = journal_blocks(&img);
    (std::fs::read(&img).unwrap(), jb)
}

#[test]
fn async_commit_and_unknown_journal_features_are_refused() {
    let dir = scratch("features");
    let (img, jb) = needs_recovery_image(&dir);
    let jsb = jb[0] * 1024;
    for (bit, what) in [
        (crate::jbd2::feature::INCOMPAT_ASYNC_COMMIT, "async_commit"),
        (crate::jbd2::feature::INCOMPAT_FAST_COMMIT, "fast commits"),
        (0x100, "Unrecognised features"),
    ] {
        let mut x = img.clone();
        let f = crate::jbd2::be32(&x, jsb + 0x28) | bit;
        crate::jbd2::put_be32(&mut x, jsb + 0x28, f);
        let mut c = x[jsb..jsb + 1024].to_vec();
        c[0xFC..0x100].fill(0);
        let sum = crate::crc::crc32c(!0, &c);
        crate::jbd2::put_be32(&mut x, jsb + 0xFC, sum);
        let e = Ext4::open(Arc::new(MemRw(Mutex::new(x))), false).unwrap_err();
        assert!(e.contains(what), "{what}: {e}");
    }
    // Unpatched, it replays: the revoked block stays as it was.
    let dev = Arc::new(MemRw(Mutex::new(img.clone())));
    Ext4::open(dev.clone(), false).unwrap();
    let m = dev.0.lock().unwrap();
    assert_eq!(&m[7000 * 1024..7001 * 1024], &bytes(9, 3 * 1024)[..1024]);
    assert_eq!(&m[7001 * 1024..7002 * 1024], &img[7001 * 1024..7002 * 1024]);
    assert_eq!(&m[7002 * 1024..7003 * 1024], &bytes(9, 3 * 1024)[2048..]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mutated_journals_give_errors_not_panics() {
    let dir = scratch("mutate");
    let (img, jb) = needs_recovery_image(&dir);
    // The journal superblock and the live log: every byte of them, one at a time, over
    // a pseudo-random walk (and the journal checksums off for half of the runs, so a
    // mutation reaches the parsing instead of stopping at a checksum).
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..600 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut m = img.clone();
        let blk = jb[(x % 8) as usize];
        let off = blk * 1024 + ((x >> 8) % 1024) as usize;
        m[off] ^= ((x >> 20) as u8) | 1;
        if round % 2 == 1 {
            let jsb = jb[0] * 1024;
            let f = crate::jbd2::be32(&m, jsb + 0x28)
                & !(crate::jbd2::feature::INCOMPAT_CSUM_V3
                    | crate::jbd2::feature::INCOMPAT_CSUM_V2);
            crate::jbd2::put_be32(&mut m, jsb + 0x28, f);
        }
        let dev = Arc::new(MemRw(Mutex::new(m)));
        if let Ok(fs) = Ext4::open(dev, false) {
            let root = fs.inode(crate::disk::ROOT_INO).unwrap();
            let _ = fs.lookup(&root, b"lost+found");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
