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
//! 4. `ext4_replays_linux_journal`: Debian's C UML (`linux.uml`, package user-mode-linux)
//!    boots an ext4 image (busybox and init script inside, no network), writes files, syncs,
//!    prints their sha256 and is SIGKILLed: the image needs recovery, with transactions
//!    Linux's jbd2 wrote. In every engine our kernel (Debian tree) then: refuses a read-only
//!    device (`ubdNr`) with `EROFS` as Linux does, mounts it with `-o ro,noload`, then
//!    mounts a writable copy `-o ro` (which replays onto the device); the files must have
//!    UML's sha256 and the image must be `e2fsck -fn` clean afterwards.
//! 5. `ext4_sigkill_fsck_clean`: our kernel writes on a journaled image (files, a
//!    directory churn, a file made durable with `sync FILE`), and is SIGKILLed at several
//!    points; each image needs recovery, `e2fsck -E journal_only` then `e2fsck -fn` is
//!    clean and the synced file has its sha256; a copy replayed by our kernel (a `rw`
//!    mount) is `e2fsck -fn` clean too and shows the same file.
//! 6. `ext4_exit_without_umount_keeps_data`: init exits with a journaled mount still
//!    mounted; the kernel's shutdown hook closes the journal: clean, no recovery needed,
//!    the file there.
//!
//! Needs e2fsprogs and python3 on the host (and in the Debian tree, python3), and
//! `/usr/bin/linux.uml` for gate 4.

use std::os::unix::process::CommandExt;
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
         mount -o remount,ro /mnt/$d\n\
         if touch /mnt/$d/ro-probe 2>/dev/null; then echo \"REMOUNT-RO-WRITABLE $d\"; else echo \"REMOUNT-RO-EROFS $d\"; fi\n\
         mount -o remount,rw,noatime /mnt/$d\n\
         echo again > /mnt/$d/after-remount\n\
         echo \"REMOUNT-RW-OK $d\"\n\
         sync\n\
         umount /mnt/$d\n\
         done\n\
         mount -t ext4 -o ro /dev/ubdb /mnt/b\n\
         if mount -o remount,rw /mnt/b 2>/dev/null; then echo RO-INSTANCE-REMOUNTED; else echo RO-INSTANCE-REFUSED; fi\n\
         umount /mnt/b\n\
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
            out.stderr.contains("EXT4-fs (ubdc): mounted filesystem")
                && out.stderr.contains("r/w with ordered data mode"),
            "{}",
            out.report()
        );
        // Remount: rw -> ro refuses writes, ro -> rw of a read-write instance writes again;
        // an instance mounted read-only stays so (fs/src/mount.rs do_mount_in).
        assert!(console.contains("RO-INSTANCE-REFUSED"), "{}", out.report());
        for (d, (name, _)) in ["b", "c"].iter().zip(&images) {
            assert!(
                console.contains(&format!("REMOUNT-RO-EROFS {d}\n"))
                    && console.contains(&format!("REMOUNT-RW-OK {d}\n")),
                "{}",
                out.report()
            );
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

/// `sha256sum` lines as a sorted list of (hash, file name without directories).
fn sums(text: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| {
            let (h, f) = l.trim().split_once("  ")?;
            if h.len() != 64 || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            Some((h.to_string(), f.rsplit('/').next()?.to_string()))
        })
        .collect();
    v.sort();
    v
}

/// An ext4 image written by Linux (Debian's UML) and left needing recovery: the console
/// text of UML (its sha256 lines) and the image.
fn uml_crashed_image(w: &Path) -> (String, PathBuf) {
    let rootfs = um_tests::rootfs();
    let stage = w.join("stage");
    for d in ["bin", "lib", "dev", "proc", "sys", "tmp"] {
        std::fs::create_dir_all(stage.join(d)).expect("stage");
    }
    std::fs::copy(rootfs.join("bin/busybox"), stage.join("bin/busybox")).expect("busybox");
    let ld = std::fs::read_dir(rootfs.join("lib"))
        .expect("lib")
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("ld-musl"))
        .expect("the musl loader");
    std::fs::copy(
        std::fs::canonicalize(ld.path()).expect("loader"),
        stage.join("lib").join(ld.file_name()),
    )
    .expect("loader");
    // UML joins its argv into one command line: the work is a script in the image.
    let init = "#!/bin/busybox sh\n\
        B=/bin/busybox\n\
        $B mount -t proc proc /proc\n\
        $B mkdir -p /data/sub\n\
        i=0; while [ $i -lt 60 ]; do echo \"uml file $i\" > /data/f$i; i=$((i+1)); done\n\
        $B dd if=/dev/urandom of=/data/big bs=1k count=700 2>/dev/null\n\
        $B dd if=/dev/urandom of=/data/sub/mid bs=1k count=50 2>/dev/null\n\
        $B rm /data/f7 /data/f8\n\
        $B mv /data/f9 /data/sub/moved\n\
        $B sync\n\
        $B sha256sum /data/* /data/sub/* 2>/dev/null\n\
        echo UML-SYNCED\n\
        $B sleep 1000\n";
    std::fs::write(stage.join("init.sh"), init).expect("init");
    run_ok(
        Command::new("chmod").arg("755").arg(stage.join("init.sh")),
        "chmod",
    );
    let img = w.join("uml.ext4");
    run_ok(
        Command::new("mke2fs")
            .args(["-q", "-F", "-t", "ext4", "-d"])
            .arg(&stage)
            .arg(&img)
            .arg("64M"),
        "mke2fs -d",
    );
    let uml_dir = PathBuf::from(format!("/dev/shm/um-ext4-uml-{}", std::process::id()));
    std::fs::create_dir_all(&uml_dir).expect("uml dir");
    let mut child = Command::new("/usr/bin/linux.uml")
        .arg("mem=128M")
        .arg(format!("ubd0={}", img.display()))
        .args([
            "root=/dev/ubda",
            "rw",
            "init=/init.sh",
            "con=null",
            "con0=fd:0,fd:1",
        ])
        .arg(format!("uml_dir={}", uml_dir.display()))
        .env("TMPDIR", &uml_dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("linux.uml (apt-get install user-mode-linux)");
    let pgid = child.id() as i32;
    let mut out = child.stdout.take().expect("stdout");
    let text = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut out, &mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&all).contains("UML-SYNCED") {
                break;
            }
        }
        String::from_utf8_lossy(&all).into_owned()
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !text.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // The crash: every UML process at once (they share the process group).
    um_tests::kill_group(pgid, libc::SIGKILL);
    let _ = child.wait();
    let text = text.join().unwrap_or_default().replace('\r', "");
    let _ = std::fs::remove_dir_all(&uml_dir);
    assert!(
        text.contains("UML-SYNCED"),
        "linux.uml did not finish:\n{text}"
    );
    let dump = run_ok(Command::new("dumpe2fs").arg("-h").arg(&img), "dumpe2fs -h");
    assert!(dump.contains("needs_recovery"), "{dump}");
    let log = run_ok(
        Command::new("debugfs").arg("-R").arg("logdump").arg(&img),
        "debugfs logdump",
    );
    assert!(log.contains("commit block"), "nothing to replay:\n{log}");
    (text, img)
}

#[test]
fn ext4_replays_linux_journal() {
    let tree_rootfs = um_tests::debian_rootfs(&["usr/bin/sha256sum"]);
    let w = work_dir("replay");
    let (uml_text, crashed) = uml_crashed_image(&w);
    let want = sums(&uml_text);
    assert!(want.len() >= 60, "{uml_text}");
    let s = |p: &Path| p.display().to_string();
    let script = "mount -t proc proc /proc\n\
         mount -t tmpfs tmpfs /mnt\n\
         mkdir -p /mnt/a /mnt/b\n\
         if mount -t ext4 -o ro /dev/ubdc /mnt/a 2>/dev/null; then echo RO-DEVICE-MOUNTED; fi\n\
         mount -t ext4 -o ro,noload /dev/ubdc /mnt/a && echo NOLOAD-OK && umount /mnt/a\n\
         mount -t ext4 -o ro /dev/ubdb /mnt/b || echo REPLAY-MOUNT-FAILED\n\
         echo '== sums'\n\
         sha256sum /mnt/b/data/* /mnt/b/data/sub/* 2>/dev/null\n\
         echo '== end'\n\
         umount /mnt/b\n\
         echo UM-EXT4-OK\n";
    for_each_engine(|engine| {
        let img = w.join("copy.ext4");
        let ro = w.join("ro.ext4");
        std::fs::copy(&crashed, &img).expect("copy");
        std::fs::copy(&crashed, &ro).expect("copy");
        let out = Boot::new()
            .engine(engine)
            .rootflags(&s(&tree_rootfs))
            .extra("ro")
            .extra(&format!("ubd1={}", s(&img)))
            .extra(&format!("ubd2r={}", s(&ro)))
            .init("/bin/sh")
            .args(&["-c", script])
            .timeout(Duration::from_secs(60))
            .run();
        out.assert_ok(MARKER);
        let console = out.stdout.replace('\r', "");
        assert!(!console.contains("RO-DEVICE-MOUNTED"), "{}", out.report());
        assert!(!console.contains("REPLAY-MOUNT-FAILED"), "{}", out.report());
        assert!(console.contains("NOLOAD-OK"), "{}", out.report());
        assert!(
            out.stderr
                .contains("write access unavailable, cannot proceed"),
            "{}",
            out.report()
        );
        assert!(
            out.stderr.contains("EXT4-fs (ubdb): recovery complete"),
            "{}",
            out.report()
        );
        let got = console
            .split_once("== sums\n")
            .and_then(|(_, r)| r.split_once("== end"))
            .map(|(b, _)| sums(b))
            .unwrap_or_default();
        assert_eq!(
            got,
            want,
            "replayed files differ from what UML wrote\n{}",
            out.report()
        );
        run_ok(
            Command::new("e2fsck").arg("-fn").arg(&img),
            "e2fsck -fn after our replay",
        );
        // The read-only device was left as it was: still needing recovery.
        let dump = run_ok(Command::new("dumpe2fs").arg("-h").arg(&ro), "dumpe2fs");
        assert!(dump.contains("needs_recovery"), "{dump}");
    });
    let _ = std::fs::remove_dir_all(&w);
}

#[test]
fn ext4_sigkill_fsck_clean() {
    let tree_rootfs = um_tests::debian_rootfs(&["usr/bin/sha256sum", "usr/bin/sync"]);
    let w = work_dir("kill");
    let s = |p: &Path| p.display().to_string();
    // commit=1: transactions commit while the churn runs, so kills land between and in
    // the middle of commits and checkpoints.
    let script = "set -e\n\
         mount -t proc proc /proc\n\
         mount -t tmpfs tmpfs /mnt\n\
         mkdir /mnt/x\n\
         mount -t ext4 -o commit=1 /dev/ubdb /mnt/x\n\
         cd /mnt/x\n\
         head -c 400000 /dev/urandom > keep\n\
         mkdir -p sub; echo small > sub/s\n\
         sync keep sub/s .\n\
         sha256sum keep\n\
         echo SYNCED\n\
         i=0\n\
         while :; do\n\
         d=d$((i % 7)); mkdir -p $d\n\
         echo \"$i $i $i\" > $d/f$i\n\
         rm -f d$(((i + 3) % 7))/f$((i - 25))\n\
         if [ $((i % 50)) -eq 0 ]; then head -c 200000 /dev/urandom > $d/big$i; rm -f d$(((i + 1) % 7))/big$((i - 100)); fi\n\
         i=$((i + 1))\n\
         done\n";
    let delays = [300u64, 1200, 2500];
    let mut n = 0;
    for_each_engine(|engine| {
        for &delay in &delays {
            n += 1;
            let img = w.join(format!("k{n}.ext4"));
            run_ok(
                Command::new("mke2fs")
                    .args(["-q", "-F", "-t", "ext4", "-b", "1024", "-J", "size=1"])
                    .arg(&img)
                    .arg("32M"),
                "mke2fs",
            );
            let run = Boot::new()
                .engine(engine)
                .rootflags(&s(&tree_rootfs))
                .extra("ro")
                .extra(&format!("ubd1={}", s(&img)))
                .init("/bin/sh")
                .args(&["-c", script])
                .timeout(Duration::from_secs(60))
                .spawn();
            let start = std::time::Instant::now();
            while !run.stdout_so_far().contains("SYNCED") {
                assert!(
                    start.elapsed() < Duration::from_secs(40),
                    "no SYNCED: {}",
                    run.stdout_so_far()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(delay));
            run.signal(libc::SIGKILL);
            um_tests::kill_group(run.pid(), libc::SIGKILL);
            let console = run.stdout_so_far().replace('\r', "");
            drop(run);
            let want = console
                .lines()
                .find_map(|l| l.strip_suffix("  keep"))
                .expect("the sha256 of keep")
                .to_string();
            let dump = run_ok(Command::new("dumpe2fs").arg("-h").arg(&img), "dumpe2fs");
            assert!(
                dump.contains("needs_recovery"),
                "kill after {delay} ms: {dump}"
            );
            // e2fsprogs' replay, then a full check.
            let e = w.join("e.ext4");
            std::fs::copy(&img, &e).expect("copy");
            let st = Command::new("e2fsck")
                .args(["-E", "journal_only", "-y"])
                .arg(&e)
                .output()
                .expect("e2fsck");
            assert!(
                st.status.code().is_some_and(|c| c <= 1),
                "e2fsck journal_only: {st:?}"
            );
            run_ok(
                Command::new("e2fsck").arg("-fn").arg(&e),
                "e2fsck -fn after e2fsck's replay",
            );
            let dumped = w.join("dumped");
            let _ = std::fs::remove_file(&dumped);
            run_ok(
                Command::new("debugfs")
                    .arg("-R")
                    .arg(format!("dump /keep {}", s(&dumped)))
                    .arg(&e),
                "debugfs dump",
            );
            let host = run_ok(Command::new("sha256sum").arg(&dumped), "sha256sum");
            assert_eq!(
                host.split_whitespace().next(),
                Some(want.as_str()),
                "kill after {delay} ms"
            );
            // Our replay: a read-write mount, then umount.
            let out = Boot::new()
                .engine(engine)
                .rootflags(&s(&tree_rootfs))
                .extra("ro")
                .extra(&format!("ubd1={}", s(&img)))
                .init("/bin/sh")
                .args(&[
                    "-c",
                    "set -e; mount -t proc proc /proc; mount -t tmpfs tmpfs /mnt; mkdir /mnt/x; \
                     mount -t ext4 /dev/ubdb /mnt/x; sha256sum /mnt/x/keep; cat /mnt/x/sub/s; \
                     ls /mnt/x | wc -l; umount /mnt/x; echo UM-EXT4-OK",
                ])
                .timeout(Duration::from_secs(60))
                .run();
            out.assert_ok(MARKER);
            assert!(
                out.stderr.contains("EXT4-fs (ubdb): recovery complete"),
                "{}",
                out.report()
            );
            let c = out.stdout.replace('\r', "");
            assert!(
                c.contains(&format!("{want}  /mnt/x/keep")),
                "{}",
                out.report()
            );
            assert!(c.contains("small\n"), "{}", out.report());
            run_ok(
                Command::new("e2fsck").arg("-fn").arg(&img),
                "e2fsck -fn after our replay",
            );
            // The umount closed the journal: nothing left to recover.
            let dump = run_ok(Command::new("dumpe2fs").arg("-h").arg(&img), "dumpe2fs");
            assert!(!dump.contains("needs_recovery"), "after umount: {dump}");
        }
    });
    let _ = std::fs::remove_dir_all(&w);
}

/// A journaled mount still mounted when init exits (no sync, no umount): the kernel's
/// shutdown commits and closes the journal, so the image is clean, needs no recovery and
/// has the file.
#[test]
fn ext4_exit_without_umount_keeps_data() {
    let tree_rootfs = um_tests::debian_rootfs(&["usr/bin/sha256sum"]);
    let w = work_dir("exit");
    let s = |p: &Path| p.display().to_string();
    for_each_engine(|engine| {
        let img = w.join("x.ext4");
        run_ok(
            Command::new("mke2fs")
                .args(["-q", "-F", "-t", "ext4"])
                .arg(&img)
                .arg("32M"),
            "mke2fs",
        );
        let out = Boot::new()
            .engine(engine)
            .rootflags(&s(&tree_rootfs))
            .extra("ro")
            .extra(&format!("ubd1={}", s(&img)))
            .init("/bin/sh")
            .args(&[
                "-c",
                "set -e; mount -t proc proc /proc; mount -t tmpfs tmpfs /mnt; mkdir /mnt/x; \
                 mount -t ext4 /dev/ubdb /mnt/x; head -c 123456 /dev/urandom > /mnt/x/f; \
                 mkdir /mnt/x/d; echo hi > /mnt/x/d/g; sha256sum /mnt/x/f; echo UM-EXT4-OK",
            ])
            .timeout(Duration::from_secs(60))
            .run();
        out.assert_ok(MARKER);
        let console = out.stdout.replace('\r', "");
        let want = console
            .lines()
            .find_map(|l| l.strip_suffix("  /mnt/x/f"))
            .expect("sha256 of f")
            .to_string();
        let dump = run_ok(Command::new("dumpe2fs").arg("-h").arg(&img), "dumpe2fs");
        assert!(!dump.contains("needs_recovery"), "{dump}");
        run_ok(Command::new("e2fsck").arg("-fn").arg(&img), "e2fsck -fn");
        let dumped = w.join("dumped");
        let _ = std::fs::remove_file(&dumped);
        run_ok(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("dump /f {}", s(&dumped)))
                .arg(&img),
            "debugfs dump",
        );
        let host = run_ok(Command::new("sha256sum").arg(&dumped), "sha256sum");
        assert_eq!(host.split_whitespace().next(), Some(want.as_str()));
    });
    let _ = std::fs::remove_dir_all(&w);
}
