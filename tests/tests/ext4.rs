//! Gate: our ext4 (fs/ext4, issue 19 item 3, read side) end to end.
//!
//! 1. `ext4_tree_matches_host`: a small tree made here (files of several sizes, a sparse
//!    file, a hard link, fast and slow symlinks, a FIFO, nested directories, a directory of
//!    300 files, user and trusted xattrs in the inode and in a block) becomes three images
//!    with the host's `mke2fs -d`: ext4 with 1K blocks passed through `e2fsck -fyD` (so its
//!    big directory is an htree), ext4 with 4K blocks, ext3 with 4K blocks. The Debian tree
//!    boots read-only with them as `ubdb`..`ubdd` in every engine, mounts each read-only (the
//!    ext3 one without `-o ro`: the kernel refuses to write an image without extents with one
//!    line and util-linux's mount retries read-only), and prints `sha256sum` of every file, `stat -c` of every entry, `ls -lnR`
//!    and every xattr (python3); each must equal the same commands run on the host tree.
//!    A zeroed disk (`ubde`) must be refused with one log line.
//! 2. `ext4_root_boots`: an ext4 image of the Alpine rootfs (`mke2fs -d`, in /tmp/ext4/)
//!    boots as `ubd0=IMG root=/dev/ubda ro rootfstype=ext4` in every engine: `/proc/mounts`
//!    shows it, a program from it runs, a write is `EROFS`, then the marker.
//!
//! 3. `ext4_write_fsck_clean`: two empty images, ext4 without a journal (1K blocks) and the
//!    default ext4 with a clean journal (4K blocks), are mounted read-write in the Debian
//!    tree in every engine: 500 files in one directory, a 16 MiB random file, sparse writes,
//!    truncate, fallocate (allocate, keep size, punch), renames, a hard link, a running
//!    binary and a mapped file unlinked, fast and slow symlinks, xattrs, an unlinked-while-open
//!    file, `rm -r` of a tree, sync, umount; then on the host `e2fsck -fn` exits 0 and the
//!    files `debugfs -R dump` gives have the sha256 the guest printed.
//!
//! Needs e2fsprogs and python3 on the host (and in the Debian tree, python3).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const MARKER: &str = "UM-EXT4-OK";

/// Prints the view of the current directory that is compared: contents, metadata, listing,
/// attributes. The same text runs in the guest (Debian: GNU coreutils, python3) and on the
/// host. Directory sizes differ between file systems by nature and are left out; so are
/// lost+found, which only the image has, and the top directory (whose link count and mtime
/// lost+found changes).
const DUMP: &str = r#"
find . -path ./lost+found -prune -o -type f -print0 | sort -z | xargs -0 sha256sum
find . -path ./lost+found -prune -o ! -type d -print | sort | xargs stat -c '%n %s %a %u %g %h %F %Y'
find . -mindepth 1 -path ./lost+found -prune -o -type d -print | sort | xargs stat -c '%n %a %u %g %h %F %Y'
ls -lnR --time-style=+%s --ignore=lost+found . | grep -v '^total' | awk '{ if ($1 ~ /^d/) $5 = "-"; $1 = $1; print }'
python3 -c '
import os
for top, dirs, files in os.walk("."):
    dirs[:] = sorted(d for d in dirs if d != "lost+found" or top != ".")
    for n in [top] + [os.path.join(top, f) for f in sorted(files)]:
        if os.path.islink(n) or not (os.path.isfile(n) or os.path.isdir(n)):
            continue
        for a in sorted(os.listxattr(n, follow_symlinks=False)):
            print(n, a, os.getxattr(n, a, follow_symlinks=False).hex())
'
"#;

fn run_ok(cmd: &mut Command, what: &str) -> String {
    let r = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e} (install e2fsprogs and python3)"));
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        r.status.success(),
        "{what} failed ({}):\n{out}{}",
        r.status,
        String::from_utf8_lossy(&r.stderr)
    );
    out
}

fn work_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(format!("/tmp/ext4/{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("work dir");
    d
}

/// Deterministic bytes.
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

fn make_tree(t: &Path) {
    std::fs::create_dir_all(t.join("etc/deep/er")).unwrap();
    std::fs::create_dir_all(t.join("many")).unwrap();
    std::fs::write(t.join("hello.txt"), b"hello, ext4\n").unwrap();
    std::fs::write(t.join("empty"), b"").unwrap();
    std::fs::write(t.join("one-block"), bytes(1, 4096)).unwrap();
    std::fs::write(t.join("big.bin"), bytes(2, 3 << 20)).unwrap();
    std::fs::write(t.join("etc/deep/er/leaf"), b"leaf\n").unwrap();
    let f = std::fs::File::create(t.join("sparse")).unwrap();
    f.set_len(20 << 20).unwrap();
    drop(f);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(t.join("sparse"))
            .unwrap();
        f.write_all_at(b"middle", 7 << 20).unwrap();
        f.write_all_at(b"end", (20 << 20) - 3).unwrap();
    }
    std::fs::hard_link(t.join("hello.txt"), t.join("etc/hardlink")).unwrap();
    std::os::unix::fs::symlink("../hello.txt", t.join("etc/fast")).unwrap();
    std::os::unix::fs::symlink("deep/".repeat(30), t.join("etc/slow")).unwrap();
    for i in 0..300 {
        std::fs::write(t.join(format!("many/entry-{i:03}")), format!("{i}\n")).unwrap();
    }
    run_ok(Command::new("mkfifo").arg(t.join("fifo")), "mkfifo");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        t.join("etc/deep/er/leaf"),
        std::fs::Permissions::from_mode(0o4751),
    )
    .unwrap();
    // Attributes: small ones (in the inode) and a 700-byte one (in a block); `trusted.` only
    // when the host run is root (it needs CAP_SYS_ADMIN, on the host as in the guest).
    run_ok(
        Command::new("python3").arg("-c").arg(format!(
            "import os\n\
             os.setxattr('{0}/hello.txt', 'user.color', b'blue')\n\
             if os.geteuid() == 0: os.setxattr('{0}/hello.txt', 'trusted.t', b'\\x00\\x01')\n\
             os.setxattr('{0}/etc', 'user.big', b'x' * 700)\n\
             os.setxattr('{0}/many/entry-007', 'user.seven', b'7')\n",
            t.display()
        )),
        "python3 setxattr",
    );
}

fn dump_host(dir: &Path) -> String {
    run_ok(
        Command::new("sh").arg("-c").arg(DUMP).current_dir(dir),
        "the host's dump",
    )
}

#[test]
fn ext4_tree_matches_host() {
    let tree_rootfs = um_tests::debian_rootfs(&["usr/bin/python3", "usr/bin/sha256sum"]);
    let w = work_dir("tree");
    let tree = w.join("tree");
    make_tree(&tree);
    let want = dump_host(&tree);
    assert!(
        want.contains("user.color 626c7565"),
        "the host tree has its xattrs:\n{want}"
    );
    let mkfs = |name: &str, args: &[&str], size: &str| {
        let img = w.join(name);
        run_ok(
            Command::new("mke2fs")
                .args(["-q", "-F"])
                .args(args)
                .arg("-d")
                .arg(&tree)
                .arg(&img)
                .arg(size),
            "mke2fs -d",
        );
        img
    };
    let k1 = mkfs("k1.ext4", &["-t", "ext4", "-b", "1024"], "64M");
    // -D indexes every directory; exit 1 means "changed", which is what -D does.
    let st = Command::new("e2fsck")
        .arg("-fyD")
        .arg(&k1)
        .output()
        .expect("e2fsck");
    assert!(
        st.status.code().is_some_and(|c| c <= 1),
        "e2fsck -fyD: {st:?}"
    );
    let k4 = mkfs("k4.ext4", &["-t", "ext4", "-b", "4096"], "64M");
    let e3 = mkfs("e3.ext3", &["-t", "ext3", "-b", "4096"], "64M");
    let zero = w.join("zero.img");
    std::fs::File::create(&zero)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let script = format!(
        "set -e\n\
         mount -t proc proc /proc\n\
         mount -t tmpfs tmpfs /mnt\n\
         mkdir /mnt/b /mnt/c /mnt/d /mnt/e\n\
         mount -t ext4 -o ro /dev/ubdb /mnt/b\n\
         mount -t ext4 -o ro /dev/ubdc /mnt/c\n\
         mount -t ext3 /dev/ubdd /mnt/d\n\
         if mount -t ext4 -o ro /dev/ubde /mnt/e 2>/dev/null; then echo ZERO-MOUNTED; fi\n\
         grep ubd /proc/mounts\n\
         for d in b c d; do\n\
         echo \"== $d\"\n\
         cd /mnt/$d\n\
         {DUMP}\n\
         cd /\n\
         echo \"== end\"\n\
         done\n\
         echo {MARKER}\n"
    );
    let s = |p: &Path| p.display().to_string();
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .rootflags(&s(&tree_rootfs))
            .extra("ro")
            .extra(&format!("ubd1={}", s(&k1)))
            .extra(&format!("ubd2={}", s(&k4)))
            .extra(&format!("ubd3={}", s(&e3)))
            .extra(&format!("ubd4={}", s(&zero)))
            .init("/bin/sh")
            .args(&["-c", &script])
            .timeout(Duration::from_secs(60))
            .run();
        out.assert_ok(MARKER);
        let console = out.stdout.replace('\r', "");
        assert!(!console.contains("ZERO-MOUNTED"), "{}", out.report());
        for dev in [
            "ubdb /mnt/b ext4 ro",
            "ubdc /mnt/c ext4 ro",
            "ubdd /mnt/d ext3 ro",
        ] {
            assert!(
                console.contains(dev),
                "/proc/mounts has {dev}\n{}",
                out.report()
            );
        }
        assert!(
            out.stderr
                .contains("EXT4-fs (ubdd): writing is implemented for ext4 with extents only"),
            "the rw mount was refused with a log line\n{}",
            out.report()
        );
        let refusals = out
            .stderr
            .lines()
            .filter(|l| l.contains("EXT4-fs (ubde)"))
            .count();
        assert_eq!(
            refusals,
            1,
            "one line for the zeroed disk\n{}",
            out.report()
        );
        for d in ["b", "c", "d"] {
            let start = format!("== {d}\n");
            let got = console
                .split_once(&start)
                .and_then(|(_, rest)| rest.split_once("== end\n"))
                .map(|(body, _)| body)
                .unwrap_or_else(|| panic!("no dump of /mnt/{d}\n{}", out.report()));
            if got != want {
                let diff: Vec<String> = want
                    .lines()
                    .zip(got.lines())
                    .filter(|(a, b)| a != b)
                    .take(10)
                    .map(|(a, b)| format!("host:  {a}\nguest: {b}"))
                    .collect();
                panic!(
                    "/mnt/{d} differs from the host tree ({} vs {} lines):\n{}\n{}",
                    want.lines().count(),
                    got.lines().count(),
                    diff.join("\n"),
                    out.report()
                );
            }
        }
    });
    let _ = std::fs::remove_dir_all(&w);
}

#[test]
fn ext4_root_boots() {
    let rootfs = um_tests::rootfs();
    let w = work_dir("root");
    let img = w.join("alpine.ext4");
    run_ok(
        Command::new("mke2fs")
            .args(["-q", "-F", "-t", "ext4", "-d"])
            .arg(&rootfs)
            .arg(&img)
            .arg("1G"),
        "mke2fs -d of the rootfs",
    );
    let script = format!(
        "mount -t proc proc /proc; grep ' / ' /proc/mounts; \
         /bin/busybox sha256sum /bin/busybox; \
         if touch /written 2>/dev/null; then echo WRITE-WORKED; fi; \
         echo {MARKER}"
    );
    let want_hash = {
        let out = run_ok(
            Command::new("sha256sum").arg(rootfs.join("bin/busybox")),
            "sha256sum",
        );
        out.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    for_each_engine(|engine| {
        let mut argv = vec![
            "mem=256M".to_string(),
            format!("ubd0={}", img.display()),
            "root=/dev/ubda".into(),
            "ro".into(),
            "rootfstype=ext4".into(),
            "init=/bin/busybox".into(),
            "con0=fd:0,fd:1".into(),
            um_tests::NET_DEFAULT.into(),
        ];
        argv.extend(engine.iter().map(|s| s.to_string()));
        argv.extend(["--".into(), "sh".into(), "-c".into(), script.clone()]);
        let out = Boot::raw(&argv).timeout(Duration::from_secs(60)).run();
        out.assert_ok(MARKER);
        let console = out.stdout.replace('\r', "");
        assert!(console.contains("/dev/ubda / ext4 ro"), "{}", out.report());
        assert!(
            console.contains(&want_hash),
            "busybox read back\n{}",
            out.report()
        );
        assert!(!console.contains("WRITE-WORKED"), "{}", out.report());
        assert!(
            out.stderr
                .contains("VFS: Mounted root (ext4 filesystem) readonly"),
            "{}",
            out.report()
        );
    });
    let _ = std::fs::remove_dir_all(&w);
}

/// What the guest does on each read-write image (in its top directory), printing the
/// sha256 of what the host then dumps.
const WRITE_SCRIPT: &str = r#"
mkdir many
i=0; while [ $i -lt 500 ]; do echo "file $i" > many/f$i; i=$((i+1)); done
head -c 16777216 /dev/urandom > big
truncate -s 20M sparse
printf mid | dd of=sparse bs=1 seek=7000000 conv=notrunc 2>/dev/null
printf tail >> sparse
cp big trunc
truncate -s 5000001 trunc
truncate -s 6M trunc
printf 'x' | dd of=trunc bs=1 seek=5500000 conv=notrunc 2>/dev/null
fallocate -l 3M fa
printf data | dd of=fa bs=1 seek=1000000 conv=notrunc 2>/dev/null
head -c 1500000 big | dd of=fa bs=1M seek=1 conv=notrunc 2>/dev/null
fallocate -p -o 2000000 -l 300000 fa
fallocate -n -l 5M fa
mv many/f1 renamed
mv many/f2 many/f3
ln big big.link
ln -s big fast
ln -s "$(python3 -c 'print("s" * 200)')" slow
python3 -c '
import os
os.setxattr("big", "user.color", b"blue")
os.setxattr("renamed", "user.large", b"z" * 600)
f = open("uwo", "w+b")
f.write(b"u" * 100000)
os.unlink("uwo")
f.seek(0)
assert f.read() == b"u" * 100000
f.close()
import mmap
f = open("mm", "w+b")
f.write(b"m" * 8192)
f.flush()
m = mmap.mmap(f.fileno(), 8192)
f.close()
os.unlink("mm")
assert m[:4] == b"mmmm" and m[8191:] == b"m"
m.close()
print("XATTR", os.getxattr("big", "user.color").decode(), len(os.getxattr("renamed", "user.large")))
'
cp /usr/bin/sleep ./sl
./sl 1 &
sleep 0.3
rm sl
wait
mkdir -p tree/a/b tree/c
echo deep > tree/a/b/f
cp big tree/a/copy
ln -s ../f tree/c/l
rm -r tree
ls many | wc -l
readlink fast
readlink slow | wc -c
sha256sum big big.link sparse trunc renamed many/f3 many/f499 fa
"#;

#[test]
fn ext4_write_fsck_clean() {
    let tree_rootfs =
        um_tests::debian_rootfs(&["usr/bin/python3", "usr/bin/sha256sum", "usr/bin/truncate"]);
    let w = work_dir("write");
    let s = |p: &Path| p.display().to_string();
    let images = [
        ("nj.ext4", vec!["-b", "1024", "-O", "^has_journal"]),
        ("j.ext4", vec!["-b", "4096"]),
    ];
    let script = format!(
        "set -e\n\
         mount -t proc proc /proc\n\
         mount -t tmpfs tmpfs /mnt\n\
         for d in b c; do\n\
         mkdir /mnt/$d\n\
         mount -t ext4 /dev/ubd$d /mnt/$d\n\
         grep ubd$d /proc/mounts\n\
         cd /mnt/$d\n\
         echo \"== $d\"\n\
         {WRITE_SCRIPT}\n\
         echo \"== end\"\n\
         cd /\n\
         sync\n\
         umount /mnt/$d\n\
         done\n\
         echo {MARKER}\n"
    );
    for_each_engine(|engine| {
        let mut boot = Boot::new()
            .engine(engine)
            .rootflags(&s(&tree_rootfs))
            .extra("ro");
        for (k, (name, args)) in images.iter().enumerate() {
            let img = w.join(name);
            run_ok(
                Command::new("mke2fs")
                    .args(["-q", "-F", "-t", "ext4"])
                    .args(args)
                    .arg(&img)
                    .arg("96M"),
                "mke2fs",
            );
            boot = boot.extra(&format!("ubd{}={}", k + 1, s(&img)));
        }
        let out = boot
            .init("/bin/sh")
            .args(&["-c", &script])
            .timeout(Duration::from_secs(100))
            .run();
        out.assert_ok(MARKER);
        let console = out.stdout.replace('\r', "");
        assert!(
            out.stderr
                .contains("EXT4-fs (ubdc): journal not used: metadata not journaled"),
            "{}",
            out.report()
        );
        for (d, (name, _)) in ["b", "c"].iter().zip(&images) {
            assert!(
                console.contains(&format!("/dev/ubd{d} /mnt/{d} ext4 rw")),
                "{}",
                out.report()
            );
            let img = w.join(name);
            run_ok(Command::new("e2fsck").arg("-fn").arg(&img), "e2fsck -fn");
            let start = format!("== {d}\n");
            let got = console
                .split_once(&start)
                .and_then(|(_, rest)| rest.split_once("== end\n"))
                .map(|(body, _)| body.to_string())
                .unwrap_or_else(|| panic!("no output for /mnt/{d}\n{}", out.report()));
            assert!(got.contains("XATTR blue 600\n"), "{got}");
            assert!(got.contains("\n498\nbig\n201\n"), "{got}");
            let mut hashes = 0;
            for line in got.lines() {
                let Some((hash, file)) = line.split_once("  ") else {
                    continue;
                };
                let dumped = w.join("dumped");
                let _ = std::fs::remove_file(&dumped);
                run_ok(
                    Command::new("debugfs")
                        .arg("-R")
                        .arg(format!("dump /{file} {}", s(&dumped)))
                        .arg(&img),
                    "debugfs dump",
                );
                let host = run_ok(Command::new("sha256sum").arg(&dumped), "sha256sum");
                assert_eq!(
                    host.split_whitespace().next(),
                    Some(hash),
                    "/{file} of {name}: the host's dump differs from the guest's view"
                );
                hashes += 1;
            }
            assert_eq!(hashes, 8, "{got}");
        }
    });
    let _ = std::fs::remove_dir_all(&w);
}
