//! Gate: ubd block devices end to end with real userspace (issue 19, items 1 and 2).
//!
//! Boots the Debian tree (`UM_DEBIAN_ROOTFS` or `build/debian-<arch>`, read-only: nothing is
//! written to it) with four disks, in every engine of [`um_tests::ENGINES`]:
//! `ubda` a 64 MiB image with an MBR made here (two partitions), `ubdb` a blank 32 MiB
//! image, `ubdc` a COW file that `linux` creates over a 4 MiB backing file, `ubdd` a COW file
//! made by Debian's `uml_mkcow` (uml-utilities) over the same backing file. In the guest:
//! `blockdev --getsize64` of the disk and its partitions, the sector sizes, `/proc/partitions`,
//! `/sys/block/ubda/ubda1/start`, `lsblk`, `blockdev --rereadpt` (BLKRRPART), e2fsprogs'
//! `mkfs.ext4` on `/dev/ubdb` and on `/dev/ubda1`, `blkid`, writes through both COW disks with
//! `dd conv=fsync`, `O_DIRECT` reads (512-aligned work, unaligned are `EINVAL`). On the host afterwards: `e2fsck -fn` of the image and of the partition
//! (both must be clean), the backing file unchanged byte for byte, our COW file's header and
//! bitmap parsed here (UML's cow_user.c layout) with exactly the written sector in it, the
//! `uml_mkcow` file merged by `uml_moo` equal to the backing file with the guest's write.
//! Then a second `linux` on an image the first still has open must stop with one
//! `linux: error:` line naming the lock, and bad input (a missing file, a COW header with a
//! hostile size) is one line and exit status 2. Needs e2fsprogs and uml-utilities on the host.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use um_tests::{Boot, Outcome, for_each_engine, workspace_root};

const MARKER: &str = "UM-UBD-OK";
const MIB: u64 = 1 << 20;

fn debian_tree() -> PathBuf {
    um_tests::debian_rootfs(&["usr/sbin/mkfs.ext4"])
}

fn host_tool(name: &str, pkg: &str) -> String {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p.display().to_string();
        }
    }
    panic!("the host has no {name}: apt-get install {pkg}");
}

fn run_ok(cmd: &mut Command, what: &str) -> String {
    let r = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(r.status.success(), "{what} failed ({}):\n{text}", r.status);
    text
}

/// A sparse file of `size` bytes.
fn sparse(path: &Path, size: u64) {
    let f = std::fs::File::create(path).expect("create image");
    f.set_len(size).expect("size image");
}

/// An MBR with two primary Linux partitions: 2048+40960 and 43008 to the end.
fn write_mbr(path: &Path, sectors: u64) {
    use std::os::unix::fs::FileExt;
    let mut mbr = [0u8; 512];
    for (i, (start, len)) in [(2048u32, 40960u32), (43008, (sectors - 43008) as u32)]
        .into_iter()
        .enumerate()
    {
        let e = &mut mbr[446 + 16 * i..462 + 16 * i];
        e[4] = 0x83;
        e[8..12].copy_from_slice(&start.to_le_bytes());
        e[12..16].copy_from_slice(&len.to_le_bytes());
    }
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open image");
    f.write_all_at(&mbr, 0).expect("write MBR");
}

/// The v3 header fields of a COW file (cow_user.c, packed, big-endian).
struct Cow {
    size: u64,
    sectorsize: u32,
    align: u32,
    backing: String,
    bitmap_offset: u64,
    data_offset: u64,
}

fn parse_cow(b: &[u8]) -> Cow {
    let be32 = |at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(be32(0), 0x4f4f_4f4d, "COW magic");
    assert_eq!(be32(4), 3, "COW version");
    let size = u64::from_be_bytes(b[12..20].try_into().unwrap());
    let (sectorsize, align) = (be32(20), be32(24));
    assert_eq!(be32(28), 0, "COW format");
    let path = &b[32..32 + 4096];
    let backing =
        String::from_utf8_lossy(&path[..path.iter().position(|&c| c == 0).unwrap()]).into_owned();
    let a = u64::from(align);
    let bitmap_offset = 4128u64.div_ceil(a) * a;
    let bitmap_len = size.div_ceil(u64::from(sectorsize)).div_ceil(8);
    let data_offset = (bitmap_offset + bitmap_len).div_ceil(a) * a;
    Cow {
        size,
        sectorsize,
        align,
        backing,
        bitmap_offset,
        data_offset,
    }
}

const SCRIPT: &str = r#"set -e
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo "SIZES $(blockdev --getsize64 /dev/ubda) $(blockdev --getsize64 /dev/ubda1) $(blockdev --getsize64 /dev/ubda2)"
echo "SECTOR $(blockdev --getss /dev/ubda) $(blockdev --getpbsz /dev/ubda) $(blockdev --getro /dev/ubda) $(blockdev --getsz /dev/ubdc)"
grep -q ' ubda2$' /proc/partitions
test "$(cat /sys/block/ubda/ubda1/start)" = 2048
echo "LSBLK $(lsblk -rno NAME,MAJ:MIN /dev/ubda | tr '\n' ' ')"
blockdev --rereadpt /dev/ubda
test -b /dev/ubda2
mkfs.ext4 -q -F /dev/ubdb
mkfs.ext4 -q /dev/ubda1
echo "BLKID $(blkid -o value -s TYPE /dev/ubdb) $(blkid -o value -s TYPE /dev/ubda1)"
yes UMDATA | head -c 1048576 | dd of=/dev/ubda2 bs=64k conv=fsync status=none
blkdiscard -o 0 -l 262144 /dev/ubda2
blkdiscard -z -o 524288 -l 262144 /dev/ubda2
dd if=/dev/ubdb of=/dev/null bs=4096 count=4 iflag=direct status=none
if dd if=/dev/ubdb of=/dev/null bs=100 count=1 iflag=direct status=none 2>/dev/null; then echo UNALIGNED-DIRECT; fi
blockdev --setro /dev/ubdb
echo "RO $(blockdev --getro /dev/ubdb)"
if dd if=/dev/zero of=/dev/ubdb count=1 status=none 2>/dev/null; then echo WROTE-READ-ONLY; fi
blockdev --setrw /dev/ubdb
blockdev --setra 512 /dev/ubdb
echo "RA $(blockdev --getra /dev/ubdb)"
printf 'HELLO-COW' | dd of=/dev/ubdc bs=512 seek=3 conv=fsync,notrunc status=none
dd if=/dev/zero of=/dev/ubdd bs=4096 seek=1 count=2 conv=fsync,notrunc status=none
blockdev --flushbufs /dev/ubdc
sync
echo UM-UBD-OK
"#;

fn one_error_line(out: &Outcome, what: &str, needle: &str) {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(
        out.code() == Some(2)
            && lines.len() == 1
            && lines[0].starts_with("linux: error:")
            && lines[0].contains(needle),
        "{what}: expected exit 2 and one `linux: error:` line containing {needle:?}\n{}",
        out.report()
    );
    eprintln!("um-tests: {what}: {}", lines[0]);
}

#[test]
fn ubd_disks() {
    let tree = debian_tree().display().to_string();
    let e2fsck = host_tool("e2fsck", "e2fsprogs");
    let mkcow = host_tool("uml_mkcow", "uml-utilities");
    let moo = host_tool("uml_moo", "uml-utilities");
    let work = workspace_root().join("build/ubd-gate");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("gate dir");
    let work = work.canonicalize().expect("gate dir");
    let mut idx = 0;
    for_each_engine(|engine| {
        idx += 1;
        let d = work.join(format!("e{idx}"));
        std::fs::create_dir_all(&d).expect("dir");
        let (disk, blank, base) = (d.join("disk.img"), d.join("blank.img"), d.join("base.img"));
        let (our, mk) = (d.join("our.cow"), d.join("mk.cow"));
        sparse(&disk, 64 * MIB);
        write_mbr(&disk, 64 * MIB / 512);
        sparse(&blank, 32 * MIB);
        let base_bytes: Vec<u8> = (0..4 * MIB).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&base, &base_bytes).expect("base");
        run_ok(Command::new(&mkcow).arg(&mk).arg(&base), "uml_mkcow");
        let s = |p: &Path| p.display().to_string();
        let out = Boot::new()
            .engine(engine)
            .rootflags(&tree)
            .extra("ro")
            .extra(&format!("ubd0={}", s(&disk)))
            .extra(&format!("ubd1={}", s(&blank)))
            .extra(&format!("ubd2={},{}", s(&our), s(&base)))
            .extra(&format!("ubd3={}", s(&mk)))
            .init("/bin/bash")
            .args(&["-c", SCRIPT])
            .timeout(Duration::from_secs(120))
            .run();
        um_tests::assert_marker(&out, MARKER);
        um_tests::scan_kernel_log(&out.stderr);
        let line = |tag: &str| {
            out.stdout
                .lines()
                .find_map(|l| l.strip_prefix(tag))
                .unwrap_or_else(|| panic!("no {tag} line\n{}", out.report()))
                .trim()
                .to_string()
        };
        assert_eq!(
            line("SIZES "),
            format!("{} {} {}", 64 * MIB, 40960 * 512, (131072 - 43008) * 512)
        );
        assert_eq!(line("SECTOR "), format!("512 512 0 {}", 4 * MIB / 512));
        assert_eq!(line("LSBLK "), "ubda 98:0 ubda1 98:1 ubda2 98:2");
        assert_eq!(line("BLKID "), "ext4 ext4");
        assert_eq!(line("RO "), "1");
        assert_eq!(line("RA "), "512");
        assert!(
            !out.stdout.contains("WROTE-READ-ONLY"),
            "a write to a read-only device worked"
        );
        assert!(
            !out.stdout.contains("UNALIGNED-DIRECT"),
            "an unaligned O_DIRECT read worked"
        );
        // The host's e2fsck finds both file systems clean.
        run_ok(
            Command::new(&e2fsck).arg("-fn").arg(&blank),
            "e2fsck -fn blank.img",
        );
        let p1 = d.join("p1.img");
        let img = std::fs::read(&disk).expect("read disk");
        std::fs::write(&p1, &img[2048 * 512..(2048 + 40960) * 512]).expect("p1");
        run_ok(
            Command::new(&e2fsck).arg("-fn").arg(&p1),
            "e2fsck -fn ubda1",
        );
        // BLKDISCARD punched [0, 256K) of ubda2 and BLKZEROOUT zeroed [512K, 768K); the rest
        // of the first MiB keeps the guest's data.
        let p2 = &img[43008 * 512..43008 * 512 + MIB as usize];
        let data: Vec<u8> = b"UMDATA\n"
            .iter()
            .copied()
            .cycle()
            .take(MIB as usize)
            .collect();
        for (from, to, zero) in [
            (0, 256, true),
            (256, 512, false),
            (512, 768, true),
            (768, 1024, false),
        ] {
            let (a, b) = (from << 10, to << 10);
            if zero {
                assert!(
                    p2[a..b].iter().all(|&x| x == 0),
                    "ubda2 [{from}K, {to}K) not zero"
                );
            } else {
                assert!(
                    p2[a..b] == data[a..b],
                    "ubda2 [{from}K, {to}K) lost its data"
                );
            }
        }
        // The backing file is untouched.
        assert!(
            std::fs::read(&base).expect("base") == base_bytes,
            "backing file changed"
        );
        // Our COW file: UML's header, bit 3 alone in the bitmap, sector 3 = base + the write.
        let cow = std::fs::read(&our).expect("our.cow");
        let h = parse_cow(&cow);
        assert_eq!((h.size, h.sectorsize, h.align), (4 * MIB, 512, 4096));
        assert_eq!(h.backing, s(&base));
        let bm = &cow[h.bitmap_offset as usize..h.data_offset as usize];
        assert_eq!(bm[0], 0b1000, "bitmap byte 0");
        assert!(
            bm[1..].iter().all(|&b| b == 0),
            "only sector 3 in the COW file"
        );
        let sec = &cow[(h.data_offset + 3 * 512) as usize..(h.data_offset + 4 * 512) as usize];
        let mut want = base_bytes[3 * 512..4 * 512].to_vec();
        want[..9].copy_from_slice(b"HELLO-COW");
        assert!(sec == want.as_slice(), "COW data of sector 3");
        // uml_mkcow's file: sectors 8..24 written; uml_moo merges it into the expected image.
        let cow = std::fs::read(&mk).expect("mk.cow");
        let h = parse_cow(&cow);
        let bm = &cow[h.bitmap_offset as usize..];
        assert_eq!(&bm[..4], &[0, 0xff, 0xff, 0], "uml_mkcow bitmap");
        let merged = d.join("merged.img");
        run_ok(Command::new(&moo).arg(&mk).arg(&merged), "uml_moo");
        let mut want = base_bytes.clone();
        want[4096..3 * 4096].fill(0);
        assert!(
            std::fs::read(&merged).expect("merged") == want,
            "uml_moo merge differs"
        );
        let _ = std::fs::remove_dir_all(&d);
    });
}

#[test]
fn ubd_lock_and_bad_input() {
    let work = workspace_root().join("build/ubd-gate-bad");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("gate dir");
    let img = work.join("held.img");
    sparse(&img, MIB);
    let bad = work.join("bad.cow");
    let mut h = vec![0u8; 8192];
    h[0..4].copy_from_slice(&0x4f4f_4f4du32.to_be_bytes());
    h[4..8].copy_from_slice(&3u32.to_be_bytes());
    h[12..20].copy_from_slice(&u64::MAX.to_be_bytes());
    h[20..24].copy_from_slice(&512u32.to_be_bytes());
    h[24..28].copy_from_slice(&4096u32.to_be_bytes());
    h[32..36].copy_from_slice(b"/nx\0");
    std::fs::write(&bad, &h).expect("bad cow");
    for_each_engine(|engine| {
        let held = format!("ubd0={}", img.display());
        let first = Boot::new()
            .engine(engine)
            .extra(&held)
            .args(&["sh", "-c", "echo HOLDING; sleep 20"])
            .spawn();
        let t0 = std::time::Instant::now();
        while !first.stdout_so_far().contains("HOLDING") {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "first boot did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let second = Boot::new()
            .engine(engine)
            .extra(&held)
            .args(&["true"])
            .run();
        one_error_line(&second, "second kernel on a held image", "cannot lock");
        // With 'c' (shared) it boots.
        let shared = Boot::new()
            .engine(engine)
            .extra(&format!("ubd0c={}", img.display()))
            .args(&["sh", "-c", "test -b /dev/ubda && echo SHARED-OK"])
            .run();
        um_tests::assert_marker(&shared, "SHARED-OK");
        first.signal(9);
        let out = Boot::new()
            .engine(engine)
            .extra("ubd0=/nonexistent/disk.img")
            .args(&["true"])
            .run();
        one_error_line(&out, "missing file", "/nonexistent/disk.img");
        let out = Boot::new()
            .engine(engine)
            .extra(&format!("ubd1={}", bad.display()))
            .args(&["true"])
            .run();
        one_error_line(&out, "hostile COW header", "too large");
        let out = Boot::new()
            .engine(engine)
            .extra("ubd0q=x")
            .args(&["true"])
            .run();
        one_error_line(&out, "bad flag", "flag letter");
    });
    let _ = std::fs::remove_dir_all(&work);
}
