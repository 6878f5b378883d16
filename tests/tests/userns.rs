//! Gate: user namespaces (issue 23 item 2, and test 3: bubblewrap), in every engine of
//! [`um_tests::ENGINES`], on the Debian 12 tree (util-linux's `unshare`, `nsenter`,
//! `setpriv`; python3 for raw errnos; iproute2; bubblewrap). The guest script is
//! `tests/scripts/userns-gate.sh`; the unprivileged cases run as uid/gid 1000 and nothing is
//! written outside tmpfs and procfs.
//!
//! What is checked, against user_namespaces(7), capabilities(7) and kernel/user_namespace.c:
//! - `unshare -U -r id` is root inside; `unshare -U` without a map shows 65534 and has no
//!   capabilities after exec, with a map the full set; `/proc/self/status` and the maps read
//!   from inside show the parent's ids; a new namespace has its own `user:[N]`.
//! - `unshare -Urm`: a tmpfs mounted inside, a new file owned by 0:0 through the map, a file
//!   of an unmapped owner as 65534:65534, chown to an unmapped uid `EINVAL`; mount without a
//!   mount namespace of its own and sethostname without a UTS namespace of its own are
//!   refused (they belong to the initial user namespace); with `-u` sethostname works and
//!   the initial name is unchanged; `-n` gives a new namespace whose lo is down.
//! - setns(2) into a user namespace (`nsenter -U`) as its owner: uid 0 there.
//! - The nsfs ioctls (NS_GET_NSTYPE, NS_GET_OWNER_UID, NS_GET_PARENT, NS_GET_USERNS) from
//!   outside and inside a namespace, and `/proc/self/fd/N` of the descriptor they return.
//! - The map rules with raw errnos: junk and zero counts `EINVAL`; another uid or a range
//!   `EPERM` unprivileged; one write only (`EPERM`); gid_map before setgroups "deny" `EPERM`;
//!   "allow" after "deny" and "deny" after a gid map `EPERM`; setgroups(2) then `EPERM`,
//!   setuid to an unmapped uid `EINVAL`; unshare with a second thread `EINVAL`; 33 nested
//!   namespaces, the next `ENOSPC`.
//! - `/proc/sys/user/max_user_namespaces`: root only, and 0 makes unshare `ENOSPC`.
//! - cgroup namespaces (cgroup_namespaces(7)): `/proc/PID/cgroup` relative to the reader's
//!   namespace root (`/` inside, a group outside as `/..`), a move to a group outside it
//!   `ENOENT`, a cgroup2 mount inside rooted at the namespace's group, `unshare -UrmC` with
//!   a cgroup2 mount unprivileged, `unshare -C` without a user namespace `EPERM`, `nsenter -C`.
//! - `bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp true` as the
//!   unprivileged user, and a command inside it seeing its own uid, an empty /tmp and a map.
//!
//! The kernel log must be clean and show no unimplemented syscall.

use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const SCRIPT: &str = include_str!("../scripts/userns-gate.sh");
const MARKER: &str = "UM-USERNS-DONE";

fn debian_tree() -> std::path::PathBuf {
    um_tests::debian_rootfs(&[
        "usr/bin/unshare",
        "usr/bin/nsenter",
        "usr/bin/setpriv",
        "usr/bin/python3",
        "usr/bin/bwrap",
        "usr/bin/ip",
    ])
}

#[test]
fn unprivileged_user_namespaces_and_bwrap() {
    let tree = debian_tree();
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .mem("512M")
            .rootflags(&tree.display().to_string())
            .init("/bin/bash")
            .args(&["-c", SCRIPT])
            .timeout(Duration::from_secs(60))
            .run();
        out.assert_ok(MARKER);
        let lines: Vec<&str> = out.stdout.lines().map(str::trim_end).collect();
        let ctx = || format!("engine {}\n{}", engine.join(" "), out.report());
        let value = |key: &str| out.line_value(key);
        for (key, want) in [
            ("INIT-MAP", "0 0 4294967295"),
            ("ROOT-ID", "uid=0(root) gid=0(root) groups=0(root)"),
            ("NOMAP-ID", "65534 65534"),
            ("NOMAP-CAPEFF", "0000000000000000"),
            ("MAPPED-CAPEFF", "000001ffffffffff"),
            ("MAPPED-STATUS-UID", "Uid: 0 0 0 0"),
            ("INSIDE-MAP", "0 1000 1"),
            ("INSIDE-GMAP", "0 1000 1"),
            ("INSIDE-SETGROUPS", "deny"),
            ("LSMNT", "0 0 x"),
            ("UNMAPPED-FILE", "65534 65534"),
            ("CHOWN-UNMAPPED", "Invalid argument"),
            ("NOMNTNS", "permission denied."),
            ("UTS-OWN", "inner"),
            ("UTS-INIT", "you must be root to change the host name"),
            ("HOSTNAME-AFTER", "debian"),
            ("NET", "1: lo: <LOOPBACK> DOWN"),
            ("SETNS-ID", "0"),
            // ioctl_ns(2): type, owner uid, parent, owning namespace; from inside, the
            // initial namespace is out of view (EPERM), and it has no parent or owner.
            ("NSIOCTL-OUT", "0x10000000 1000 user:[4026531837] fd"),
            ("NSIOCTL-IN", "0x10000000 0 EPERM EPERM"),
            ("NSIOCTL-INIT", "0x10000000 0 EPERM EPERM"),
            ("THREADED", "EINVAL"),
            ("UNSHARE", "ok"),
            ("UID-BEFORE", "65534"),
            ("BAD-ZERO", "EINVAL"),
            ("BAD-TWO-FIELDS", "EINVAL"),
            ("OTHER-ID", "EPERM"),
            ("RANGE", "EPERM"),
            ("UID-MAP", "ok"),
            ("UID-MAP-AGAIN", "EPERM"),
            ("GID-MAP-NODENY", "EPERM"),
            ("SETGROUPS-BAD", "EINVAL"),
            ("DENY", "ok"),
            ("GID-MAP", "ok"),
            ("ALLOW-AFTER", "EPERM"),
            ("DENY-AFTER-MAP", "EPERM"),
            ("IDS", "0 0 0 0"),
            ("SETUID-UNMAPPED", "EINVAL"),
            ("SETGROUPS-DENIED", "EPERM"),
            ("MAP-READ", "0 1000 1"),
            ("NEST", "33 ENOSPC"),
            ("LIMIT-USER", "Permission denied"),
            ("LIMIT-ZERO", "No space left on device"),
            ("OVERFLOWUID", "65534"),
            // cgroup namespaces.
            ("CG-OUTSIDE", "0::/a"),
            ("CG-INITNS", "cgroup:[4026531835]"),
            ("CG-INSIDE", "0::/"),
            ("CG-ROOTPROC", "0::/.."),
            ("CG-MOVE-OUT", "No such file or directory"),
            ("CG-MOVED", "0::/b"),
            ("CG-MNT", "/mnt/b 1 /"),
            ("CG-UNPRIV", "0::/ mounted"),
            ("CG-NOPRIV", "Operation not permitted"),
            ("CG-SETNS", "0::/"),
        ] {
            assert_eq!(value(key), want, "`{key}`: {}", ctx());
        }
        assert!(lines.contains(&"BWRAP-TRUE-OK"), "bwrap true: {}", ctx());
        // Namespaces: the initial one has Linux's fixed number, the children others.
        let init = value("INIT-NS");
        assert_eq!(init, "user:[4026531837]", "{}", ctx());
        let cgns = value("CG-NEWNS");
        assert!(
            cgns.starts_with("cgroup:[") && cgns != "cgroup:[4026531835]",
            "{}",
            ctx()
        );
        let child = value("CHILD-NS");
        assert!(child.starts_with("user:[") && child != init, "{}", ctx());
        let limit: u64 = value("LIMIT").parse().expect("max_user_namespaces");
        assert!(limit > 0, "{}", ctx());
        // Inside bwrap: its own uid, an empty tmpfs /tmp, a new user namespace and the map
        // of bwrap's second namespace (it maps 0 first to mount devpts, then nests one mapping
        // the uid back: 1000 inside is 0 of the parent).
        let b: Vec<String> = value("BWRAP-IN")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        assert_eq!(b.len(), 6, "bwrap output {b:?}: {}", ctx());
        assert_eq!((b[0].as_str(), b[1].as_str()), ("1000", "0"), "{}", ctx());
        assert!(b[2].starts_with("user:[") && b[2] != init, "{}", ctx());
        assert_eq!(&b[3..], ["1000", "0", "1"], "{}", ctx());
    });
}
