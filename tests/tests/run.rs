//! Gate: `linux run ROOTFS [CMD...]` (issue 25): a booted guest's mounts before CMD, CMD's exit
//! status as linux's, `--bind` of a host directory (read-write and read-only), a rootfs tarball
//! unpacked once into the cache, and bad input as one `linux: error:` line with status 2.

use std::path::PathBuf;
use um_tests::{Boot, Outcome, for_each_engine, rootfs, workspace_root};

/// `linux run` with `words` after the engine options (which are kernel words, so they go
/// before ROOTFS) and `loglevel=7`, so the kernel log can be scanned.
fn run(engine: &[&str], words: &[&str]) -> Outcome {
    let mut argv: Vec<String> = vec!["run".into()];
    argv.extend(engine.iter().map(|s| s.to_string()));
    argv.push(um_tests::NET_DEFAULT.into());
    argv.push("loglevel=7".into());
    argv.extend(words.iter().map(|s| s.to_string()));
    Boot::raw(&argv).run()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("um-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn mounts_and_exit_status() {
    let root = rootfs().display().to_string();
    for_each_engine(|engine| {
        let out = run(
            engine,
            &[
                &root,
                "/bin/sh",
                "-c",
                "for d in /proc /sys /dev /dev/pts /dev/shm /run; do \
                 grep -q \" $d \" /proc/mounts && echo \"mounted:$d;\"; done; \
                 [ \"$(cat /proc/1/cmdline | tr '\\0' ' ')\" != '' ] && echo init-ok; \
                 echo pwd:$(pwd); exit 7",
            ],
        );
        out.assert_exit_code(7);
        for d in ["/proc", "/sys", "/dev", "/dev/pts", "/dev/shm", "/run"] {
            um_tests::assert_marker(&out, &format!("mounted:{d};"));
        }
        um_tests::assert_marker(&out, "init-ok");
        um_tests::assert_marker(&out, "pwd:/root");
        out.scan_log();
    });
}

#[test]
fn bind_host_directory() {
    let host = scratch("bind");
    std::fs::write(host.join("from-host"), "hello from the host\n").unwrap();
    let h = host.display().to_string();
    let root = rootfs().display().to_string();
    for_each_engine(|engine| {
        let _ = std::fs::remove_file(host.join("from-guest"));
        let out = run(
            engine,
            &[
                "--bind",
                &h,
                &root,
                "--",
                "/bin/sh",
                "-c",
                "cat /host/from-host && echo written >/host/from-guest && echo bind-ok",
            ],
        );
        out.assert_ok("hello from the host");
        out.assert_ok("bind-ok");
        out.assert_exit_code(0);
        assert_eq!(
            std::fs::read_to_string(host.join("from-guest")).unwrap(),
            "written\n",
            "the guest's write reached the host directory"
        );
        // Read-only: the write fails in the guest (EROFS) and nothing appears on the host.
        let _ = std::fs::remove_file(host.join("from-guest"));
        let spec = format!("{h}:/mnt/ro:ro");
        let out = run(
            engine,
            &[
                "--bind",
                &spec,
                &root,
                "/bin/sh",
                "-c",
                "cat /mnt/ro/from-host; echo x >/mnt/ro/from-guest || echo refused",
            ],
        );
        out.assert_ok("hello from the host");
        out.assert_ok("refused");
        assert!(
            !host.join("from-guest").exists(),
            "a read-only bind was written"
        );
    });
    let _ = std::fs::remove_dir_all(&host);
}

#[test]
fn tarball_unpacked_once() {
    let arch = std::env::consts::ARCH;
    let tarball = workspace_root()
        .join("..")
        .join("shared/rootfs")
        .join(format!("alpine-minirootfs-3.20.3-{arch}.tar.gz"));
    assert!(
        tarball.is_file(),
        "no Alpine tarball at {} (the gate needs it)",
        tarball.display()
    );
    let cache = scratch("cache");
    let t = tarball.display().to_string();
    for (i, engine) in um_tests::ENGINES.iter().enumerate() {
        let mut argv: Vec<String> = vec!["run".into()];
        argv.extend(engine.iter().map(|s| s.to_string()));
        argv.push(um_tests::NET_DEFAULT.into());
        argv.extend([t.clone(), "cat".into(), "/etc/alpine-release".into()]);
        let mut cmd = std::process::Command::new(um_tests::linux_binary());
        cmd.args(&argv).env("XDG_CACHE_HOME", &cache);
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("3.20.3"),
            "linux run {t} cat /etc/alpine-release: {:?}\n{stdout}\n{stderr}",
            out.status
        );
        // The kernel log stays off the terminal (loglevel=0): only linux run's own lines.
        assert!(
            stderr.lines().all(|l| l.starts_with("linux run: ")),
            "run {i}: kernel lines on the terminal:\n{stderr}"
        );
        // Unpacked by the first run only; later runs find the cache.
        assert_eq!(
            stderr.contains("unpacking"),
            i == 0,
            "run {i}: unpacking said {} times\n{stderr}",
            stderr.matches("unpacking").count()
        );
    }
    let trees: Vec<_> = std::fs::read_dir(cache.join("um-linux/rootfs"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(trees.len(), 1, "one cached tree, no leftovers: {trees:?}");
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn bad_input() {
    let file = scratch("bad").join("disk.img");
    std::fs::write(&file, b"not a rootfs").unwrap();
    let f = file.display().to_string();
    let root = rootfs().display().to_string();
    for (words, what) in [
        (vec![], "no ROOTFS"),
        (vec!["--frob", root.as_str()], "unknown option"),
        (vec!["/nonexistent-um-rootfs"], "nonexistent-um-rootfs"),
        (vec![f.as_str()], "not a directory, a rootfs tarball"),
        (vec!["--bind"], "--bind needs"),
        (
            vec!["--bind", "/nonexistent-um-host", root.as_str()],
            "nonexistent-um-host",
        ),
        (vec!["frobnicate=1", root.as_str()], "unknown option"),
    ] {
        let mut argv = vec!["run"];
        argv.extend(words.iter().copied());
        let out = Boot::raw(&argv).run();
        let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.is_empty()).collect();
        assert!(
            out.code() == Some(2)
                && lines.len() == 1
                && lines[0].starts_with("linux: error:")
                && lines[0].contains(what),
            "linux {argv:?}: want one `linux: error:` line naming {what:?} and status 2\n{}",
            out.report()
        );
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

fn debian_tree() -> PathBuf {
    um_tests::debian_rootfs(&["bin/bash"])
}

/// What tools/run-debian runs: bash as a login shell's stand-in in Debian, its status back.
#[test]
fn debian_command() {
    let root = debian_tree().display().to_string();
    for_each_engine(|engine| {
        let out = run(
            engine,
            &[
                &root,
                "--",
                "/bin/bash",
                "-c",
                "echo \"debian-$(cat /etc/debian_version | cut -d. -f1)\"; \
                 [ -r /proc/self/stat ] && [ -d /dev/pts ] && echo mounts-ok; exit 5",
            ],
        );
        out.assert_exit_code(5);
        out.assert_ok("debian-12");
        out.assert_ok("mounts-ok");
    });
}

/// `ncpus=` (issue 25): nproc (the affinity mask), /proc/cpuinfo, /proc/stat, the sysfs online
/// list, getconf (musl; glibc reads the sysfs list) and Python's os.cpu_count agree.
#[test]
fn ncpus_agree() {
    let root = rootfs().display().to_string();
    let deb = debian_tree().display().to_string();
    for_each_engine(|engine| {
        let mut e: Vec<&str> = engine.to_vec();
        e.push("ncpus=3");
        let out = run(
            &e,
            &[
                &root,
                "/bin/sh",
                "-c",
                "echo \"cpus: $(nproc) $(grep -c ^processor /proc/cpuinfo) \
                 $(grep -c '^cpu[0-9]' /proc/stat) $(cat /sys/devices/system/cpu/online) \
                 $(getconf _NPROCESSORS_ONLN);\"",
            ],
        );
        out.assert_ok("cpus: 3 3 3 0-2 3;");
        let out = run(
            &e,
            &[
                &deb,
                "/bin/bash",
                "-c",
                "echo \"cpus: $(nproc) $(getconf _NPROCESSORS_ONLN) \
                 $(python3 -c 'import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))');\"",
            ],
        );
        out.assert_ok("cpus: 3 3 3 3;");
    });
}

/// `tools/mkimage` + `linux run IMAGE` (issues 19 item 4 and 25): an ext4 image of the Alpine
/// tarball (owners from the archive's members) and of a small hostfs tree whose guest owners,
/// device node and xattr live in hostfs's `user.um.*` host xattrs; both boot from `/dev/ubda`
/// through the kernel's ext4 and pass CMD's status back: with `ro` read-only with a writable
/// /tmp, by default read-write (the file written is in the image, `e2fsck -fn` clean).
#[test]
fn ext4_image_root() {
    let arch = std::env::consts::ARCH;
    let tarball = workspace_root()
        .join("..")
        .join("shared/rootfs")
        .join(format!("alpine-minirootfs-3.20.3-{arch}.tar.gz"));
    let dir = scratch("image");
    let mkimage = workspace_root().join("tools/mkimage");
    let make = |src: &std::path::Path, out: &std::path::Path| {
        let o = std::process::Command::new(&mkimage)
            .arg(src)
            .arg(out)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tools/mkimage {}: {:?}\n{}",
            src.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let alpine = dir.join("alpine.ext4");
    make(&tarball, &alpine);
    // A hostfs tree with the guest's metadata in host xattrs (hostfs_meta.rs, hostfs_xattr.rs).
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("etc")).unwrap();
    let unpack = std::process::Command::new("tar")
        .args([
            "-xzf",
            tarball.to_str().unwrap(),
            "-C",
            tree.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(unpack.success());
    std::fs::write(tree.join("etc/owned"), "owned\n").unwrap();
    std::fs::write(tree.join("etc/zero-node"), "").unwrap();
    let setx = |p: &str, name: &str, v: &str| {
        let st = std::process::Command::new("python3")
            .args([
                "-c",
                "import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())",
                tree.join(p).to_str().unwrap(),
                name,
                v,
            ])
            .status()
            .unwrap();
        assert!(st.success(), "setxattr {p} {name}");
    };
    setx("etc/owned", "user.um.stat", "1234:5678:0640:file");
    setx("etc/owned", "user.um.user.colour", "blue");
    setx("etc/zero-node", "user.um.stat", "0:0:0666:char-1-5");
    let hosty = dir.join("tree.ext4");
    make(&tree, &hosty);
    let fsck = std::process::Command::new("e2fsck")
        .args(["-fn", hosty.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(fsck.status.success(), "e2fsck -fn of the image failed");
    let attrs = std::process::Command::new("debugfs")
        .args(["-R", "ea_list /etc/owned", hosty.to_str().unwrap()])
        .output()
        .unwrap();
    let attrs = String::from_utf8_lossy(&attrs.stdout);
    assert!(
        attrs.contains("user.colour") && attrs.contains("blue") && !attrs.contains("um."),
        "the guest's xattr under its own name, ours gone:\n{attrs}"
    );
    let (a, h) = (alpine.display().to_string(), hosty.display().to_string());
    for_each_engine(|engine| {
        let out = run(
            engine,
            &[
                "ro",
                &a,
                "/bin/sh",
                "-c",
                "echo \"release:$(cat /etc/alpine-release);\"; \
                 echo \"shadow:$(stat -c %U:%G:%a /etc/shadow);\"; \
                 echo \"root:$(grep ' / ' /proc/mounts | cut -d' ' -f1-4);\"; \
                 echo t >/tmp/t && echo tmp-writable; \
                 echo x >/etc/x 2>/dev/null || echo root-readonly; exit 9",
            ],
        );
        out.assert_exit_code(9);
        um_tests::assert_marker(&out, "release:3.20.3;");
        um_tests::assert_marker(&out, "shadow:root:shadow:640;");
        um_tests::assert_marker(&out, "root:/dev/ubda / ext4 ro;");
        um_tests::assert_marker(&out, "tmp-writable");
        um_tests::assert_marker(&out, "root-readonly");
        out.scan_log();
        // Read-write by default: what the guest wrote is in the image, which stays clean.
        let out = run(
            engine,
            &[
                &a,
                "/bin/sh",
                "-c",
                "grep ' / ' /proc/mounts | cut -d' ' -f4 | cut -d, -f1 | sed 's/^/rootmode:/'; \
                 mkdir -p /root/made && echo written-in-guest >/root/made/f && sync && echo wrote",
            ],
        );
        out.assert_exit_code(0);
        um_tests::assert_marker(&out, "rootmode:rw");
        um_tests::assert_marker(&out, "wrote");
        out.scan_log();
        let fsck = std::process::Command::new("e2fsck")
            .args(["-fn", &a])
            .output()
            .unwrap();
        assert!(
            fsck.status.success(),
            "e2fsck -fn after a rw run: {}",
            String::from_utf8_lossy(&fsck.stdout)
        );
        let cat = std::process::Command::new("debugfs")
            .args(["-R", "cat /root/made/f", &a])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&cat.stdout), "written-in-guest\n");
        let rm = std::process::Command::new("debugfs")
            .args(["-w", "-R", "rm /root/made/f", &a])
            .output()
            .unwrap();
        assert!(rm.status.success());
        let out = run(
            engine,
            &[
                &h,
                "/bin/sh",
                "-c",
                "echo \"owned:$(stat -c %u:%g:%a /etc/owned);\"; \
                 echo \"node:$(stat -c %F:%t:%T /etc/zero-node);\"; \
                 head -c 4 /etc/zero-node | od -An -tx1 | tr -d ' \\n'; echo ';'",
            ],
        );
        out.assert_exit_code(0);
        um_tests::assert_marker(&out, "owned:1234:5678:640;");
        um_tests::assert_marker(&out, "node:character special file:1:5;");
        um_tests::assert_marker(&out, "00000000;");
        out.scan_log();
    });
    let _ = std::fs::remove_dir_all(&dir);
}
