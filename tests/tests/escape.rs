//! Gate: nothing outside the hostfs root is reachable from the guest (issue 3).
//!
//! A marker file with a secret is created on the host OUTSIDE the rootfs (in its parent
//! directory). A guest shell then tries to reach it: `..` past the root (absolute and relative,
//! `cd /; cd ..`), relative and absolute symlinks created inside the guest on hostfs that point
//! out of the rootfs when resolved by the HOST (`../../../../marker`, a symlinked directory, the
//! host's absolute path), `/proc/self/root/..` and `/proc/self/cwd/..`, writes through those
//! paths, and renames "across the root" (`mv /x /../x`). The gate asserts the secret never appears
//! on the console, the marker is unchanged on the host, and nothing was created outside the rootfs.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use um_tests::{Boot, for_each_engine, rootfs};

struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

fn random_tag() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}", t, std::process::id())
}

/// The guest script: every attempt prints `ATTEMPT <name>: <what the guest saw>`.
fn script(marker: &str, host_marker: &Path, out_name: &str) -> String {
    let host_marker = host_marker.display();
    format!(
        r#"
M={marker}
D=/opt/um/escape-dir
mount -t proc proc /proc 2>/dev/null
rm -rf $D; mkdir -p $D/deep/er
try() {{ n=$1; shift; echo "ATTEMPT $n: $( "$@" 2>&1 | head -c 300 | tr '\n' ' ')"; }}
try dotdot-abs cat /../$M
try dotdot-abs2 cat /../../../../../$M
try dotdot-rel sh -c "cd /opt/um && cat ../../../../../../$M"
try cd-up sh -c "cd /; cd ..; cd ..; pwd; ls; cat $M"
try ls-parent-of-root sh -c "ls -a /.. | tr '\n' ' '"
ln -s ../../../../$M $D/rel-link && echo "LINK rel-link ok"
try rel-link cat $D/rel-link
ln -s ../../../../../$M $D/deep/er/rel-link2 && echo "LINK rel-link2 ok"
try rel-link2 cat $D/deep/er/rel-link2
ln -s ../../../.. $D/up && echo "LINK up ok"
try dir-link cat $D/up/$M
try dir-link-ls sh -c "ls $D/up/ | tr '\n' ' '"
try dir-link-cd sh -c "cd $D/up && cd .. && pwd && cat $M"
ln -s /../$M $D/abs-link && echo "LINK abs-link ok"
try abs-link cat $D/abs-link
ln -s {host_marker} $D/host-abs-link && echo "LINK host-abs-link ok"
try host-abs-link cat $D/host-abs-link
try host-abs-path cat {host_marker}
try proc-root cat /proc/self/root/../$M
try proc-root-ls sh -c "ls /proc/self/root/.. | tr '\n' ' '"
try proc-cwd sh -c "cd / && cat /proc/self/cwd/../../$M"
try realpath realpath /../..
try write-dotdot sh -c "echo pwned > /../$M"
try write-rel-link sh -c "echo pwned > $D/rel-link"
try append-dir-link sh -c "echo pwned >> $D/up/$M"
echo moved > $D/mv-src
try mv-abs mv $D/mv-src /../{out_name}
echo moved > $D/mv-src2
try mv-rel sh -c "cd $D && mv mv-src2 ../../../../{out_name}-2"
echo moved > $D/mv-src3
try mv-link sh -c "mv $D/mv-src3 $D/up/{out_name}-3"
try mkdir-up mkdir /../{out_name}-dir
try cat-back sh -c "cat /../$M /{out_name} 2>&1"
rm -rf $D /{out_name} /{out_name}-2 /{out_name}-3 /{out_name}-dir /$M
echo "UM-ESCAPE-DONE"
"#
    )
}

#[test]
fn nothing_outside_the_root() {
    let root = rootfs();
    let outside = root
        .parent()
        .expect("the rootfs has a parent directory")
        .to_path_buf();
    let tag = random_tag();
    let marker_name = format!("um-escape-marker-{tag}");
    let secret = format!("UM-SECRET-{tag}-{}", random_tag());
    let marker = outside.join(&marker_name);
    let out_name = format!("um-escape-out-{tag}");
    let mut guard = Cleanup(vec![
        marker.clone(),
        root.join(&marker_name),
        root.join("opt/um/escape-dir"),
    ]);
    for suffix in ["", "-2", "-3", "-dir"] {
        guard.0.push(outside.join(format!("{out_name}{suffix}")));
        guard.0.push(root.join(format!("{out_name}{suffix}")));
    }
    std::fs::write(&marker, format!("{secret}\n")).expect("write the marker outside the rootfs");
    let before = std::fs::metadata(&marker).expect("stat marker");
    let script = script(&marker_name, &marker, &out_name);

    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init("/bin/busybox")
            .args(&["sh", "-c", script.as_str()])
            .run();
        let report = out.report();
        if out.stdout.contains(&secret) {
            panic!(
                "ESCAPE: the guest read the secret of {} (outside the rootfs)\n{report}",
                marker.display()
            );
        }
        let now = std::fs::read_to_string(&marker).unwrap_or_default();
        assert_eq!(
            now,
            format!("{secret}\n"),
            "ESCAPE: the marker outside the rootfs was modified or removed\n{report}"
        );
        let after = std::fs::metadata(&marker).expect("stat marker");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            (after.mtime(), after.mtime_nsec(), after.size()),
            (before.mtime(), before.mtime_nsec(), before.size()),
            "ESCAPE: the marker's mtime or size changed\n{report}"
        );
        for suffix in ["", "-2", "-3", "-dir"] {
            let p = outside.join(format!("{out_name}{suffix}"));
            assert!(
                !p.exists(),
                "ESCAPE: the guest created {} outside the rootfs\n{report}",
                p.display()
            );
        }
        um_tests::assert_marker(&out, "UM-ESCAPE-DONE");
        // The attempts must actually have been made: the symlinks were created.
        for l in ["rel-link", "rel-link2", "up", "abs-link", "host-abs-link"] {
            if !out.stdout.contains(&format!("LINK {l} ok")) {
                panic!(
                    "the guest could not create symlink {l} (symlink(2) on hostfs), so the \
                     symlink escape attempts were not exercised\n{report}"
                );
            }
        }
        // `cd /; cd ..` stays at /.
        if !out.stdout.contains("ATTEMPT cd-up: / ") {
            panic!("`cd /; cd ..; cd ..; pwd` in the guest did not print /\n{report}");
        }
        if !out
            .stdout
            .lines()
            .any(|l| l.starts_with("ATTEMPT proc-root-ls:") && l.contains(" bin "))
        {
            panic!(
                "`ls /proc/self/root/..` did not list the root directory (needs procfs with \
                 /proc/self/root), so the /proc/self/root escape attempts were not exercised\n{report}"
            );
        }
        if !out.stdout.contains("ATTEMPT realpath: / ") {
            panic!("`realpath /../..` in the guest did not print /\n{report}");
        }
        out.scan_log();
    });
}
