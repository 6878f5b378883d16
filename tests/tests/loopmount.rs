//! Gate: file systems on loop devices (issue 19: `mount -o loop` of host-made ext2, ext3 and
//! ext4 images, contents equal to the host's).
//!
//! A small tree made here (sizes from 0 bytes to 300 KiB, nested directories, a symlink)
//! becomes an ext2 (1K blocks), an ext3 and an ext4 image with the host's `mke2fs -d`. The
//! Alpine rootfs boots in every engine with the images' directory bound read-only at
//! `/mnt`; busybox `mount -o loop,ro` mounts each through `/dev/loop-control`, and the
//! guest's `sha256sum` of every file must equal the host's. Then the loop rules of Linux's
//! `drivers/block/loop.c`: the autoclear device busybox set up is gone after `umount`
//! (`losetup -a` empty); `losetup -d` of a mounted device only marks it (the files stay
//! readable) and it detaches at the unmount; an unbound device cannot be mounted.

use std::path::PathBuf;
use std::process::Command;
use um_tests::{Boot, for_each_engine};

const MARKER: &str = "UM-LOOPMOUNT-OK";

fn sums(dir: &std::path::Path) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg("find . -path ./lost+found -prune -o -type f -print | LC_ALL=C sort | xargs sha256sum")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn loop_mounts_match_host() {
    let work = PathBuf::from(format!("/tmp/um-loopmount-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let tree = work.join("tree");
    std::fs::create_dir_all(tree.join("a/b/c")).unwrap();
    let mut x: u32 = 12345;
    for (i, size) in [0usize, 1, 1023, 4096, 70_000, 300_000].iter().enumerate() {
        let data: Vec<u8> = (0..*size)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let dir = ["", "a", "a/b", "a/b/c"][i % 4];
        std::fs::write(tree.join(dir).join(format!("f{i}")), data).unwrap();
    }
    std::os::unix::fs::symlink("a/b/c/f3", tree.join("link")).unwrap();
    let want = sums(&tree);
    assert!(want.lines().count() == 6, "{want}");
    let images = work.join("images");
    std::fs::create_dir_all(&images).unwrap();
    for (name, args) in [
        ("e2.img", &["-t", "ext2", "-b", "1024"][..]),
        ("e3.img", &["-t", "ext3"][..]),
        ("e4.img", &["-t", "ext4"][..]),
    ] {
        let img = images.join(name);
        std::fs::File::create(&img)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let st = Command::new("mke2fs")
            .args(["-q", "-F"])
            .args(args)
            .arg("-d")
            .arg(&tree)
            .arg(&img)
            .status()
            .expect("mke2fs (e2fsprogs)");
        assert!(st.success(), "mke2fs {name}");
    }
    let script = "set -u; mkdir -p /tmp/m; \
        for i in e2 e3 e4; do \
          mount -o loop,ro /mnt/$i.img /tmp/m || echo \"mount $i failed\"; \
          grep -q '^/dev/loop[0-9]* /tmp/m ext[234] ro' /proc/mounts && echo \"mounted:$i\"; \
          (cd /tmp/m && find . -path ./lost+found -prune -o -type f -print | sort | xargs sha256sum) > /tmp/$i.sum; \
          umount /tmp/m; \
          echo \"sum:$i:$(sha256sum < /tmp/$i.sum | cut -c1-64)\"; \
        done; \
        [ -z \"$(losetup -a)\" ] && echo autoclear-ok; \
        losetup /dev/loop5 /mnt/e4.img && mount -r /dev/loop5 /tmp/m && losetup -d /dev/loop5 && \
          cat /tmp/m/a/b/f2 | wc -c | sed 's/^ */clr-readable:/' && umount /tmp/m && \
          { losetup /dev/loop5 >/dev/null 2>&1 || echo clr-detached; }; \
        mount -r /dev/loop6 /tmp/m 2>/dev/null || echo unbound-refused; \
        echo UM-LOOPMOUNT-OK";
    let want_sum = {
        use std::io::Write;
        let mut c = Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(want.as_bytes()).unwrap();
        let o = c.wait_with_output().unwrap();
        String::from_utf8_lossy(&o.stdout)[..64].to_string()
    };
    let bind = format!("bind={}:/mnt:ro", images.display());
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .extra(&bind)
            .args(&["sh", "-c", &format!("mount -t proc proc /proc; {script}")])
            .run();
        out.assert_ok(MARKER);
        for i in ["e2", "e3", "e4"] {
            um_tests::assert_marker(&out, &format!("mounted:{i}"));
            um_tests::assert_marker(&out, &format!("sum:{i}:{want_sum}"));
        }
        for m in [
            "autoclear-ok",
            "clr-readable:1023",
            "clr-detached",
            "unbound-refused",
        ] {
            um_tests::assert_marker(&out, m);
        }
    });
    let _ = std::fs::remove_dir_all(&work);
}
