//! Gate: an OCI container runtime inside the guest (issue 23): Debian's crun runs a container
//! whose root is the Alpine tree, with every namespace `crun spec` asks for (pid, network,
//! ipc, uts, cgroup, mount), in every engine of [`um_tests::ENGINES`]. The guest script is
//! `tests/scripts/containers-gate.sh`; crun runs as root with `--cgroup-manager=disabled`
//! (its cgroup v2 device controller is a BPF program, and `bpf(2)` is not implemented).
//!
//! What is checked, from inside the container: it is pid 1; its hostname is the spec's; each
//! of the six namespaces is a new one (its `/proc/self/ns` link differs from the host's, and
//! no two namespaces share an inode number); `/proc/self/cgroup` is `0::/` (the cgroup
//! namespace's root); the root is read-only and so is `/proc/sys` (crun's readonly paths);
//! the network namespace has only `lo`; `/dev/null` and `/dev/pts/ptmx` are there; the
//! capability set is the spec's three (AUDIT_WRITE, KILL, NET_BIND_SERVICE); its own tmpfs
//! is writable. Outside: crun's exit status is the container's, and no container is left.
//! Then rootless: uid 1000 runs `crun spec --rootless`'s container (a user namespace besides
//! the six), which is pid 1 and root inside, with its uid map `0 1000 1` (crun falls back from
//! the missing setuid `newuidmap` to writing the map itself) and its own hostname.
//!
//! Before the kernel carried a file's mount with it (`Dentry::mnt`), crun re-executed itself
//! forever here: its self-clone check binds /proc/self/exe read-only, opens it, detaches the
//! mount and execs the descriptor, then wants `fstatfs` to report `ST_RDONLY`.

use std::collections::BTreeSet;
use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const SCRIPT: &str = include_str!("../scripts/containers-gate.sh");
const MARKER: &str = "UM-CONTAINERS-DONE";
const KINDS: [&str; 6] = ["pid", "net", "ipc", "uts", "cgroup", "mnt"];

#[test]
fn crun_runs_a_container_with_every_namespace() {
    let tree = um_tests::debian_rootfs(&["usr/bin/crun", "usr/bin/python3", "usr/bin/readlink"]);
    let alpine = um_tests::rootfs();
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .mem("512M")
            .rootflags(&tree.display().to_string())
            .extra(&format!("bind={}:/mnt", alpine.display()))
            .init("/bin/bash")
            .args(&["-c", SCRIPT])
            .timeout(Duration::from_secs(90))
            .run();
        out.assert_ok(MARKER);
        let lines: Vec<&str> = out.stdout.lines().map(str::trim_end).collect();
        let ctx = || format!("engine {}\n{}", engine.join(" "), out.report());
        let value = |key: &str| -> String {
            let p = format!("{key} ");
            let v: Vec<&str> = lines.iter().filter_map(|l| l.strip_prefix(&p)).collect();
            assert_eq!(v.len(), 1, "line `{key} ...` {v:?}: {}", ctx());
            v[0].trim().to_string()
        };
        for (key, want) in [
            ("NAMESPACES", "cgroup ipc mount network pid uts"),
            ("CT-PID", "1"),
            ("CT-HOST", "box"),
            ("CT-CGROUP", "0::/"),
            ("CT-ROOT-RO", "Read-only file system"),
            ("CT-PROCSYS-RO", "Read-only file system"),
            ("CT-LINKS", "lo"),
            ("CT-DEVNULL", "char"),
            ("CT-PTS", "ptmx"),
            ("CT-CAPEFF", "0000000020000420"),
            ("CT-TMP", "writable"),
            ("CRUN-RC", "0"),
            ("CRUN-LEFT", "0"),
            ("RL-NAMESPACES", "cgroup ipc mount network pid user uts"),
            ("RL-PID", "1"),
            ("RL-ID", "0 0"),
            ("RL-MAP", "0 1000 1"),
            ("RL-HOST", "rbox"),
            ("ROOTLESS-RC", "0"),
        ] {
            assert_eq!(value(key), want, "`{key}`: {}", ctx());
        }
        let (host_user, rl_user) = (value("HOST-USERNS"), value("RL-USERNS"));
        assert!(
            rl_user.starts_with("user:[") && rl_user != host_user,
            "{}",
            ctx()
        );
        let mut seen = BTreeSet::new();
        for kind in KINDS {
            let host = value(&format!("HOST-NS {kind}"));
            let inside = value(&format!("CT-NS {kind}"));
            assert!(host.starts_with(&format!("{kind}:[")), "{host}: {}", ctx());
            assert!(
                inside.starts_with(&format!("{kind}:[")),
                "{inside}: {}",
                ctx()
            );
            assert_ne!(
                host,
                inside,
                "the container shares the {kind} namespace: {}",
                ctx()
            );
            let number = inside[kind.len()..].to_string();
            assert!(
                seen.insert(number),
                "{kind}: an inode number shared: {}",
                ctx()
            );
        }
    });
}
