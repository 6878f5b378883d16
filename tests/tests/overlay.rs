//! Gate: overlayfs (issue 23 item 3; Documentation/filesystems/overlayfs.rst,
//! fs/overlayfs/*.c), in every engine of [`um_tests::ENGINES`].
//!
//! The guest is busybox in a private tree (copied from the Alpine rootfs: busybox, musl's
//! loader and the `ovlprobe` guest program) under `$TMPDIR/um-overlay-gate-PID`; the script
//! `tests/scripts/overlay-gate.sh` makes a lower layer on the tree's hostfs and one on a
//! tmpfs, an upper layer on the tmpfs, and checks: reads through the layers (the top one
//! wins), a write that copies up while the lower file stays as it was, unlink and rmdir of
//! lower entries leaving whiteouts (0:0 character devices in the upper layer), an opaque
//! directory after rmdir + mkdir (`trusted.overlay.opaque` = `y`, hidden through the overlay,
//! where the name is the guest's own, escaped), the merged listing, rename(2) of a lower directory `EXDEV` and busybox `mv`'s
//! copy instead, a file and a pure upper directory renamed, chmod/chown copy-up with the
//! mtime kept, a shared writable mapping (copy-up on open for writing; the lower file
//! unchanged), st_dev/st_ino as Linux reports them with xino off, statfs's magic,
//! mountinfo, `/sys/module/overlay/parameters`, `/proc/filesystems`, a second (read-only)
//! overlay over the first one's upper layer (whiteouts and opaque directory obeyed, `EROFS`),
//! a hostfs upper layer, the refusals (read-only upper, one lower without upper, no workdir)
//! and umount.
//!
//! [`ext4_upper`] (`tests/scripts/overlay-ext4.sh`) puts the upper layer on a fresh ext4
//! image (`ubd1=`, `mke2fs -O ^has_journal`) under a tmpfs and an ext4 lower layer: whiteouts,
//! an opaque directory and a copy-up there, the same view after unmounting both and mounting
//! again, a read-only ext4 refused as upper (`EINVAL`); then the host checks the image with
//! `e2fsck -fn` and `debugfs` (the whiteout is a 0:0 character device, the opaque attribute
//! `trusted.overlay.opaque` = `y`).
//!
//! [`debian_coreutils`] (`tests/scripts/overlay-debian.sh`) runs on the Debian 12 tree
//! (booted `ro`; the layers are on a tmpfs): coreutils `mv` of a lower directory (the copy
//! after `EXDEV`, which python3's `os.rename` shows raw), `userxattr` (`user.overlay.opaque`),
//! `cp -a`, chmod copy-up and the mountinfo line (`redirect_dir=nofollow` implied by
//! `userxattr`, as Linux shows it), and through python3 `O_TMPFILE`, link, utime, truncate,
//! flock, fallocate, xattrs, rename over a file, symlink and mkfifo; natively too where the
//! host allows, compared.
//!
//! [`guest_lines_are_linuxs`] asserts every line's value; [`same_as_the_host`] runs the same
//! script natively (`unshare -m` + `chroot` into the same tree, as root) and compares line
//! by line. That second test needs root and a host that allows overlay mounts; where it does
//! not it says so and checks the guest alone, so it never passes by skipping.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const SCRIPT: &str = include_str!("../scripts/overlay-gate.sh");
const MARKER: &str = "OVERLAY-GATE-DONE";

/// Every line the script prints, and its value under Linux (a host run gives the same).
const EXPECTED: &[(&str, &str)] = &[
    ("MOUNT", "ok"),
    ("READ-A", "hl-a"),
    ("READ-T", "tl"),
    ("LS-ROOT", "a dir gone mapme mvdir op owned rmd tfile"),
    ("LS-DIR", "b sub x"),
    ("LS-UPPER0", "[]"),
    ("WORK", "work 0 directory"),
    ("WRITE-A", "hl-a more"),
    ("LOWER-A", "hl-a"),
    ("UPPER-A", "hl-a more"),
    ("UNLINK", "gone character special file 0:0 0 0"),
    ("RMDIR", "gone character special file 0:0"),
    ("OPAQUE", "[] y ENODATA"),
    ("SET-PRIVATE", "ok"),
    ("LS-MERGED", "a dir mapme mvdir op owned tfile"),
    ("LS-UPPER", "a gone op rmd"),
    ("RENAME-LOWERDIR", "EXDEV"),
    ("MV-DIR", "m moved character special file 0:0"),
    ("RENAME-FILE", "ok tl moved character special file 0:0"),
    ("RENAME-UPPERDIR", "ok /t/m/newdir2"),
    (
        "CHOWN",
        "600 12 34 978307200 lower 644 0 0 978307200 upper own",
    ),
    ("MMAP-RO", "mapped-text"),
    ("MMAP-RW", "MAPPED-text"),
    ("MAP-LOWER", "mapped-text MAP-MERGED MAPPED-text"),
    (
        "DEV",
        "dir-is-overlay=y upper-file= lower-own=y layers-differ=y",
    ),
    ("INO", "upper= stable=y"),
    ("STATFS", "794c7630"),
    (
        "MOUNTINFO",
        "overlay overlay rw,lowerdir=/ovl/hl:/t/l2,upperdir=/t/u,workdir=/t/w",
    ),
    ("PARAMS", "N N N N N 256"),
    ("FILESYSTEMS", "1"),
    ("MOUNT2", "ok"),
    ("OVL2-LS", "a dir mapme mvdir3 newdir2 op owned tfile2"),
    ("OVL2-OPAQUE", "[] hl-a more 600 12 34"),
    ("OVL2-RO", "EROFS"),
    ("UMOUNT2", "ok"),
    ("MOUNT-HOSTFS-UPPER", "ok"),
    (
        "HOSTFS-UPPER",
        "dir n tfile [] character special file 0:0 new y",
    ),
    ("RO-UPPER", "Invalid argument"),
    ("ONE-LOWER", "Invalid argument"),
    ("NO-WORKDIR", "Invalid argument"),
    ("UMOUNT", "ok"),
    (
        "AFTER",
        "[] a gone mapme mvdir mvdir3 newdir2 op owned rmd tfile tfile2",
    ),
];

/// The private tree: busybox, musl's loader, `ovlprobe`.
fn make_tree(name: &str) -> PathBuf {
    let root = um_tests::rootfs();
    let tree = std::env::temp_dir().join(format!("um-overlay-gate-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tree);
    for d in ["bin", "lib", "opt/um", "proc", "sys", "dev", "t", "tmp"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    std::fs::copy(root.join("bin/busybox"), tree.join("bin/busybox")).unwrap();
    for lib in std::fs::read_dir(root.join("lib")).unwrap() {
        let lib = lib.unwrap();
        let n = lib.file_name().to_string_lossy().into_owned();
        if n.starts_with("ld-musl") {
            std::fs::copy(lib.path(), tree.join("lib").join(&n)).unwrap();
            let arch = n.trim_start_matches("ld-musl-").trim_end_matches(".so.1");
            std::os::unix::fs::symlink(&n, tree.join(format!("lib/libc.musl-{arch}.so.1")))
                .unwrap();
        }
    }
    let probe = [
        root.join("opt/um/ovlprobe"),
        um_tests::workspace_root().join(format!("build/guest/{}/ovlprobe", std::env::consts::ARCH)),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .expect("ovlprobe is not built: tools/build-guest, then install it in the rootfs's /opt/um");
    std::fs::copy(probe, tree.join("opt/um/ovlprobe")).unwrap();
    // The applet links are made by the script itself (`busybox --install`, inside the tree).
    tree
}

fn values(out: &str) -> Vec<(String, String)> {
    out.lines()
        .map(str::trim_end)
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            EXPECTED
                .iter()
                .any(|(e, _)| *e == k)
                .then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

fn check_expected(got: &[(String, String)], ctx: &dyn Fn() -> String) {
    for (key, want) in EXPECTED {
        let v: Vec<&String> = got
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v)
            .collect();
        assert_eq!(v.len(), 1, "line `{key} ...` {v:?}: {}", ctx());
        assert_eq!(v[0], want, "`{key}`: {}", ctx());
    }
}

fn run_guest(tree: &Path, engine: &[&str]) -> (um_tests::Outcome, Vec<(String, String)>) {
    let out = Boot::new()
        .engine(engine)
        .rootflags(&tree.display().to_string())
        .init("/bin/busybox")
        .args(&["sh", "-c", SCRIPT])
        .timeout(Duration::from_secs(60))
        .run();
    out.assert_ok(MARKER);
    let v = values(&out.stdout);
    (out, v)
}

#[test]
fn guest_lines_are_linuxs() {
    let tree = make_tree("guest");
    for_each_engine(|engine| {
        let (out, got) = run_guest(&tree, engine);
        check_expected(&got, &|| {
            format!("engine {}\n{}", engine.join(" "), out.report())
        });
    });
    let _ = std::fs::remove_dir_all(&tree);
}

/// The same script natively: `None` where the host cannot (not root, no mount namespaces,
/// no overlayfs).
fn run_host(tree: &Path) -> Option<String> {
    run_host_with(tree, &["/bin/busybox", "sh", "-c", SCRIPT], MARKER)
}

fn run_host_with(tree: &Path, argv: &[&str], marker: &str) -> Option<String> {
    let probe = Command::new("unshare").args(["-m", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        return None;
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems.lines().any(|l| l.ends_with("\toverlay")) {
        return None;
    }
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "chroot"])
        .arg(tree)
        .args(argv)
        .env_clear()
        // unshare and chroot are looked up in this PATH on the host; the tree has /bin only.
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.contains(marker).then_some(s)
}

#[test]
fn same_as_the_host() {
    let tree = make_tree("diff");
    let host = run_host(&tree);
    if host.is_none() {
        eprintln!(
            "overlay gate: the host cannot run the script (needs root, unshare -m, overlayfs); guest lines checked alone"
        );
    }
    for_each_engine(|engine| {
        let (out, got) = run_guest(&tree, engine);
        let ctx = || format!("engine {}\n{}", engine.join(" "), out.report());
        check_expected(&got, &ctx);
        if let Some(h) = &host {
            let want = values(h);
            assert_eq!(
                got,
                want,
                "guest vs host lines: {}\nhost output:\n{h}",
                ctx()
            );
        }
    });
    let _ = std::fs::remove_dir_all(&tree);
}

const EXT4_SCRIPT: &str = include_str!("../scripts/overlay-ext4.sh");

fn host_tool(cmd: &mut Command, what: &str) -> String {
    let r = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e} (install e2fsprogs)"));
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        r.status.success(),
        "{what} failed ({}):\n{out}{}",
        r.status,
        String::from_utf8_lossy(&r.stderr)
    );
    out
}

#[test]
fn ext4_upper() {
    let tree = make_tree("ext4");
    let img = tree.with_extension("ext4");
    for_each_engine(|engine| {
        let _ = std::fs::remove_file(&img);
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(64 << 20))
            .unwrap();
        host_tool(
            Command::new("mke2fs")
                .args(["-q", "-F", "-t", "ext4", "-O", "^has_journal", "-b", "4096"])
                .arg(&img),
            "mke2fs",
        );
        let out = Boot::new()
            .engine(engine)
            .rootflags(&tree.display().to_string())
            .extra(&format!("ubd1={}", img.display()))
            .init("/bin/busybox")
            .args(&["sh", "-c", EXT4_SCRIPT])
            .timeout(Duration::from_secs(60))
            .run();
        out.assert_ok("OVERLAY-EXT4-DONE");
        let ctx = || format!("engine {}\n{}", engine.join(" "), out.report());
        let lines: Vec<&str> = out.stdout.lines().map(str::trim_end).collect();
        for want in [
            "EXT4 mounted",
            "OVL mounted",
            "EXT4-UPPER d f n [] character special file 0:0 y lower more lower",
            "EXT4-AGAIN d f n []",
            "EXT4-RO Invalid argument",
        ] {
            assert!(lines.contains(&want), "`{want}`: {}", ctx());
        }
        host_tool(Command::new("e2fsck").arg("-fn").arg(&img), "e2fsck -fn");
        let st = host_tool(
            Command::new("debugfs").args(["-R", "stat /u/a"]).arg(&img),
            "debugfs stat",
        );
        assert!(st.contains("Type: character special"), "whiteout: {st}");
        let ea = host_tool(
            Command::new("debugfs")
                .args(["-R", "ea_list /u/d"])
                .arg(&img),
            "debugfs ea_list",
        );
        assert!(
            ea.contains("trusted.overlay.opaque (1) = \"y\""),
            "opaque: {ea}"
        );
    });
    let _ = std::fs::remove_file(&img);
    let _ = std::fs::remove_dir_all(&tree);
}

const DEBIAN_SCRIPT: &str = include_str!("../scripts/overlay-debian.sh");

#[test]
fn debian_coreutils() {
    let tree = um_tests::debian_rootfs(&["usr/bin/python3", "usr/bin/mv", "usr/bin/cp"]);
    let want = [
        "DEB-MOUNT ok",
        "DEB-RENAME Invalid cross-device link",
        "DEB-MV d2 f ld x character special file 0:0",
        "DEB-OPAQUE y []",
        "DEB-CHMOD 700 644",
        "DEB-MOUNTINFO overlay overlay rw,lowerdir=/mnt/l,upperdir=/mnt/u,workdir=/mnt/w,redirect_dir=nofollow,userxattr",
        "DEB-UMOUNT ok",
        // Linux gives EXDEV for linking an O_TMPFILE file of an overlay back in through
        // /proc/self/fd (the link's target is the upper file's own mount).
        "DEB-PY-TMPFILE-LINK EXDEV",
        "DEB-PY-HARDLINK (2, 'data')",
        "DEB-PY-UTIME (1000000000.0, True)",
        "DEB-PY-TRUNC (0, 2)",
        "DEB-PY-FLOCK ok",
        "DEB-PY-FALLOC 8192",
        "DEB-PY-XATTR (b'v', ['user.k'], [])",
        "DEB-PY-RMXATTR-LOWER ENODATA",
        "DEB-PY-RENAME-OVER ['d', 'f', 'g']",
        "DEB-PY-EXCHANGE-DIRS EXDEV",
        "DEB-PY-SYMLINK f",
        "DEB-PY-MKNOD 0o10644",
        "DEB-PY-UPPER ['d', 'f', 'g', 'p', 's']",
        "DEB-PY-STATFS True",
    ];
    const DONE: &str = "OVERLAY-DEBIAN-DONE";
    let host = run_host_with(&tree, &["/bin/bash", "-c", DEBIAN_SCRIPT], DONE);
    let deb_lines = |s: &str| -> Vec<String> {
        s.lines()
            .map(str::trim_end)
            .filter(|l| l.starts_with("DEB-"))
            .map(str::to_string)
            .collect()
    };
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .mem("512M")
            .rootflags(&tree.display().to_string())
            .extra("ro")
            .init("/bin/bash")
            .args(&["-c", DEBIAN_SCRIPT])
            .timeout(Duration::from_secs(60))
            .run();
        out.assert_ok(DONE);
        let got = deb_lines(&out.stdout);
        let ctx = || format!("engine {}\n{}", engine.join(" "), out.report());
        assert_eq!(got, want, "{}", ctx());
        if let Some(h) = &host {
            assert_eq!(got, deb_lines(h), "guest vs host: {}", ctx());
        }
    });
}
