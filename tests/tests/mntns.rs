//! Gate: mount namespaces and pivot_root (issue 23, test 1), in every engine of
//! [`um_tests::ENGINES`], on the Debian 12 tree (util-linux's `unshare`, `nsenter`,
//! `pivot_root`, `findmnt`, `mount`; python3 for raw errnos) with the Alpine rootfs bound
//! read-only on `/srv` (`bind=`). The guest script is `tests/scripts/mntns-gate.sh`; nothing
//! is written outside tmpfs, so the shared trees stay as they are.
//!
//! What is checked, against mount_namespaces(7), pivot_root(2), umount2(2) and proc(5):
//! - `unshare -m --propagation private` + tmpfs + an Alpine tree + `pivot_root . old` +
//!   `umount -l /old`: `ls /` shows the tree, the child's `/proc/self/mountinfo` has exactly
//!   the tmpfs root (its parent id not listed, as Linux shows a namespace root) and `/proc`
//!   below it, `getcwd` is `/`, `/proc/self/cwd` and `root` links are paths in the new root; the child has its own `mnt:[N]`; the parent's mountinfo is
//!   byte-for-byte unchanged afterwards.
//! - `pivot_root . .` + `umount -l .` (pivot_root(2)'s NOTES): `/` is the new tree.
//! - Propagation: a mount made in a peer namespace under a shared mount appears in the parent;
//!   a slave (made by `nsenter`, i.e. setns(2) on `/proc/PID/ns/mnt`) receives a mount from
//!   its master but its own mount does not go back; a bind of a shared mount is its peer
//!   (same `shared:N`, receives mounts); `findmnt` reports shared and unbindable; binding an
//!   unbindable mount is `EINVAL` (with and without `MS_REC`).
//! - A bind remount `ro` refuses writes there only; `--rbind` brings the mounts below; `--move`
//!   moves a mount; the same directory bound twice is two mounts with their own ids and the
//!   root `/twice` in mountinfo.
//! - Errnos: pivot_root `EBUSY` (new root or put_old on the current root mount), `EINVAL`
//!   (new root not a mount root; put_old outside new root), `ENOTDIR`; umount2 `EBUSY` (a
//!   mount below), `EINVAL` (not a mount), `MNT_EXPIRE` `EAGAIN` then success; unshare
//!   `CLONE_NEWNS` as nobody `EPERM` (raw and through util-linux); mount_setattr(2) makes a
//!   mount read-only (`EROFS` after) and shared, refuses an atime mode without clearing
//!   `MOUNT_ATTR__ATIME`, a short struct and a path that is not a mount root (`EINVAL`).
//! - The new mount API with raw errnos: open_tree(OPEN_TREE_CLONE | AT_RECURSIVE) of a tree
//!   with a submount, attached by move_mount (the submount comes along, the file system is
//!   shared) and moved again through the same descriptor; fsopen/fsconfig/fsmount of a tmpfs
//!   (`mode=0700`, nodev) made read-only by mount_setattr on the detached descriptor before
//!   move_mount; the refusals (`EINVAL`, `EBUSY`, `ENODEV`, `EPERM` for nobody).
//!
//! The kernel log must be clean and show no unimplemented syscall.

use std::collections::HashSet;
use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const SCRIPT: &str = include_str!("../scripts/mntns-gate.sh");
const MARKER: &str = "UM-MNTNS-DONE";

fn debian_tree() -> std::path::PathBuf {
    um_tests::debian_rootfs(&[
        "usr/bin/unshare",
        "usr/bin/nsenter",
        "usr/sbin/pivot_root",
        "usr/bin/findmnt",
        "usr/bin/setpriv",
        "usr/bin/python3",
        "srv",
    ])
}

/// Fields of a mountinfo line: (id, parent, root, mount point, optional fields, fstype).
fn fields(line: &str) -> (u64, u64, String, String, Vec<String>, String) {
    let f: Vec<&str> = line.split_whitespace().collect();
    let dash = f
        .iter()
        .position(|x| *x == "-")
        .unwrap_or_else(|| panic!("no `-` in mountinfo line {line:?}"));
    assert!(dash >= 6, "short mountinfo line {line:?}");
    (
        f[0].parse().expect("mount id"),
        f[1].parse().expect("parent id"),
        f[3].to_string(),
        f[4].to_string(),
        f[6..dash].iter().map(|s| s.to_string()).collect(),
        f[dash + 1].to_string(),
    )
}

#[test]
fn unshare_pivot_root_propagation() {
    let tree = debian_tree();
    let alpine = um_tests::rootfs();
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .mem("512M")
            .rootflags(&tree.display().to_string())
            .extra(&format!("bind={}:/srv:ro", alpine.display()))
            .init("/bin/bash")
            .args(&["-c", SCRIPT])
            .timeout(Duration::from_secs(45))
            .run();
        out.assert_ok(MARKER);
        let lines: Vec<&str> = out.stdout.lines().map(str::trim_end).collect();
        let has = |m: &str| lines.contains(&m);
        let with = |p: &str| -> Vec<String> {
            lines
                .iter()
                .filter_map(|l| l.strip_prefix(p))
                .map(str::to_string)
                .collect()
        };
        let ctx = || format!("engine {}\n{}", engine.join(" "), out.report());
        for m in [
            "PIVOTED",
            "UMOUNTED",
            "UM-PIVOT-OK",
            "PARENT-UNCHANGED",
            "PEER-OK",
            "SLAVE-RECEIVES-OK",
            "SLAVE-HAS-OWN",
            "SLAVE-DOES-NOT-SEND-OK",
            "BIND-PEER-OK",
            "CWD /",
            "LINKS /etc/d /",
            "LS bin etc lib old proc sbin usr",
            "DOTLS bin lib",
            "BIND-RO-EROFS",
            "BIND-RO-OTHER-RW",
            "RBIND-OK",
            "MOVE-OK",
        ] {
            assert!(has(m), "no line `{m}`: {}", ctx());
        }
        // Namespaces: the child's differs from the initial one.
        let init = with("NS-INIT ");
        let child = with("NS-CHILD ");
        assert!(
            init.len() == 1 && child.len() == 1 && init[0] != child[0],
            "namespace links {init:?} {child:?}: {}",
            ctx()
        );
        assert!(init[0].starts_with("mnt:["), "{}", ctx());
        // The child's mountinfo after the pivot: the tmpfs root and /proc, nothing of the old
        // root.
        let a = lines.iter().position(|l| *l == "BEGIN-CHILD-MI");
        let b = lines.iter().position(|l| *l == "END-CHILD-MI");
        let (Some(a), Some(b)) = (a, b) else {
            panic!("no child mountinfo: {}", ctx());
        };
        let mi: Vec<_> = lines[a + 1..b].iter().map(|l| fields(l)).collect();
        assert_eq!(
            mi.len(),
            2,
            "child mountinfo: {:?}\n{}",
            &lines[a..b],
            ctx()
        );
        let ids: HashSet<u64> = mi.iter().map(|m| m.0).collect();
        assert_eq!(
            (&mi[0].2[..], &mi[0].3[..], &mi[0].5[..]),
            ("/", "/", "tmpfs"),
            "{}",
            ctx()
        );
        assert!(
            !ids.contains(&mi[0].1),
            "root's parent is listed: {}",
            ctx()
        );
        assert_eq!(
            (&mi[1].3[..], &mi[1].5[..], mi[1].1),
            ("/proc", "proc", mi[0].0),
            "{}",
            ctx()
        );
        assert!(mi.iter().all(|m| m.4.is_empty()), "private: {}", ctx());
        // The slave's view of /tmp/Y.
        let slave = with("SLAVE-MI ");
        assert_eq!(slave.len(), 1, "{}", ctx());
        let sf = fields(&slave[0]).4;
        assert!(
            sf.iter().any(|f| f.starts_with("master:"))
                && !sf.iter().any(|f| f.starts_with("shared:")),
            "slave fields {sf:?}: {}",
            ctx()
        );
        // /tmp/S and its bind /tmp/B are peers; /tmp/U is unbindable.
        let mis = with("MI ");
        let opt = |point: &str| -> Vec<String> {
            mis.iter()
                .map(|l| fields(l))
                .find(|f| f.3 == point)
                .map(|f| f.4)
                .unwrap_or_else(|| panic!("no mountinfo line for {point}: {}", ctx()))
        };
        let s = opt("/tmp/S");
        assert!(
            s.len() == 1 && s[0].starts_with("shared:"),
            "{s:?}: {}",
            ctx()
        );
        assert_eq!(opt("/tmp/B"), s, "{}", ctx());
        assert_eq!(opt("/tmp/U"), vec!["unbindable".to_string()], "{}", ctx());
        // One directory bound twice: two mounts, two ids, root `/twice` inside the file system.
        let twice: Vec<_> = with("TWICE ").iter().map(|l| fields(l)).collect();
        assert!(
            twice.len() == 2 && twice[0].0 != twice[1].0 && twice.iter().all(|f| f.2 == "/twice"),
            "{twice:?}: {}",
            ctx()
        );
        let fm = with("FINDMNT ");
        let fm: Vec<Vec<&str>> = fm.iter().map(|l| l.split_whitespace().collect()).collect();
        assert!(
            fm.contains(&vec!["/tmp/S", "tmpfs", "shared"])
                && fm.contains(&vec!["/tmp/U", "private,unbindable"]),
            "findmnt {fm:?}: {}",
            ctx()
        );
        for (name, want) in [
            ("bind-unbindable", "Invalid argument"),
            ("rbind-unbindable", "Invalid argument"),
            ("pivot-new-on-root-mount", "Device or resource busy"),
            ("pivot-new-not-mount-root", "Invalid argument"),
            ("pivot-old-on-root", "Device or resource busy"),
            ("pivot-notdir", "Not a directory"),
            ("pivot-old-outside", "Invalid argument"),
            ("mount-e", "ok"),
            ("mount-sub", "ok"),
            ("umount-busy", "Device or resource busy"),
            ("umount-not-mount", "Invalid argument"),
            ("expire-1", "Resource temporarily unavailable"),
            ("expire-2", "ok"),
            ("umount-now", "ok"),
            ("unshare-newns-nobody", "Operation not permitted"),
            ("mount-e2", "ok"),
            ("setattr-ro-shared", "ok"),
            ("setattr-write", "Read-only file system"),
            ("setattr-atime-without-clr", "Invalid argument"),
            ("setattr-small", "Invalid argument"),
            ("setattr-not-mount-root", "Invalid argument"),
        ] {
            let line = format!("ERRNO {name} {want}");
            assert!(has(&line), "no line `{line}`: {}", ctx());
        }
        let sa = with("SETATTR-MI ");
        assert!(
            sa.len() == 1
                && sa[0].starts_with("ro,")
                && sa[0]
                    .split_whitespace()
                    .nth(1)
                    .is_some_and(|f| f.starts_with("shared:")),
            "mount_setattr's mount: {sa:?}: {}",
            ctx()
        );
        // The new mount API.
        for (name, want) in [
            ("clone", "0"),
            ("clone-fd-link", "/tmp/N/src"),
            ("clone-unattached", "none"),
            ("move-clone", "0"),
            ("attached", "True in-sub"),
            ("same-fs", "shared"),
            ("move-again", "0"),
            ("moved", "none True"),
            ("fsopen", "0"),
            ("fsopen-link", "anon_inode:[fscontext]"),
            ("fsmount-early", "Invalid argument"),
            ("fsconfig-mode", "0"),
            ("fsconfig-flag-value", "Invalid argument"),
            ("fsconfig-create", "0"),
            ("fsconfig-create-again", "Device or resource busy"),
            ("fsmount", "0"),
            ("fsmount-again", "Device or resource busy"),
            ("setattr-detached", "0"),
            ("move-fsmount", "0"),
            ("fsmount-mode", "0o700 / ro,nodev"),
            ("fsmount-write", "Read-only file system"),
            ("recursive-without-clone", "Invalid argument"),
            ("open-tree-bad-flag", "Invalid argument"),
            ("fsopen-unknown", "No such device"),
            ("fsconfig-not-context", "Invalid argument"),
            ("move-bad-flag", "Invalid argument"),
            ("plain-is-path", "/tmp/N/b"),
            ("clone-nobody", "Operation not permitted"),
            ("fsopen-nobody", "Operation not permitted"),
        ] {
            let line = format!("NEWAPI {name} {want}");
            assert!(has(&line), "no line `{line}`: {}", ctx());
        }
        assert!(
            has("UNPRIV unshare: unshare failed: Operation not permitted"),
            "{}",
            ctx()
        );
    });
}
