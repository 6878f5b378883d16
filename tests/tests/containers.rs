//! Gate: an OCI container runtime inside the guest (issue 23): Debian's crun runs a container
//! whose root is the Alpine tree, with every namespace `crun spec` asks for (pid, network,
//! ipc, uts, cgroup, mount), in every engine of [`um_tests::ENGINES`]. The guest script is
//! `tests/scripts/containers-gate.sh`; crun runs as root, first with
//! `--cgroup-manager=disabled`, then a second container with cgroups on (the default), whose
//! device rules are a BPF program attached to its cgroup (`um-bpf`).
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
//! With cgroups on: `/proc/self/cgroup` is still `0::/`, `/dev/zero` reads, a disk node
//! (block 8:0) can be made (`b *:* m`) but opening it is `EPERM`, and the cgroup is gone
//! after the run. Before the containers, a Python script calls bpf(2) itself (ctypes): load
//! errors (bad type, non-zero tail, the verifier's log), attach rules (the same program twice
//! in a multi list, a mode change), query (`ENOSPC` for a short array), a program found by id,
//! closing a descriptor does not detach, and a denying program attached to a group makes
//! `/dev/zero` unopenable for a process in it until it is detached.
//!
//! Then runc 1.1.5 (Go; its device program made by cilium/ebpf) runs the cgroups-on bundle with
//! the same checks. It used to hang in the seccomp engine: it waits in epoll for the writer of
//! its exec FIFO to go, and a FIFO reader opened while a writer was there never got POLLHUP.
//! It still dies of SIGSEGV without a Go traceback in about one run of six in the seccomp
//! engine (not understood yet): the script then runs it once more under another prefix, and
//! the gate accepts that second run and says so on stderr.
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
    let tree = um_tests::debian_rootfs(&[
        "usr/bin/crun",
        "usr/bin/python3",
        "usr/bin/readlink",
        "usr/bin/prlimit",
        "usr/bin/setpriv",
    ]);
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
        let ctx = || format!("engine {}\n{}", engine.join(" "), out.report());
        let value = |key: &str| out.line_value(key);
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
            // Cgroups on: crun's device program lets /dev/zero be read and a disk node be
            // made (`b *:* m`) but not opened.
            ("CRUN-CG-CGROUP", "0::/"),
            ("CRUN-CG-ZERO", "1"),
            ("CRUN-CG-MKNOD", "made"),
            ("CRUN-CG-OPEN", "Operation not permitted"),
            ("CRUN-CG-RC", "0"),
            ("CRUN-CG-LEFT", "0"),
            // runc: see below.
            ("RUNC-RC", "0"),
            ("RUNC-LEFT", "0 0"),
            // bpf(2) by hand: errnos are Linux's (-22 EINVAL, -7 E2BIG, -1 EPERM, -28 ENOSPC,
            // -2 ENOENT); query's attach_flags (2: ALLOW_MULTI) and prog_cnt follow them.
            ("BPF-LOAD", "ok"),
            ("BPF-FDNAME", "anon_inode:bpf-prog"),
            ("BPF-BADTYPE", "-22"),
            ("BPF-TAIL", "-7"),
            ("BPF-VERIFIER", "-22 jump out of range"),
            ("BPF-ATTACH", "0 0 -22 -1"),
            ("BPF-QUERY-SMALL", "-28 2 2"),
            ("BPF-QUERY", "0 2 2"),
            ("BPF-BYID", "anon_inode:bpf-prog"),
            ("BPF-ALLOWED", "1"),
            ("BPF-ATTACH-DENY", "0"),
            ("BPF-DENIED", "0 Operation not permitted"),
            ("BPF-DETACH", "0 -2"),
            ("BPF-UNDENIED", "1"),
            ("PRLIMIT-OTHER", "100 200"),
            ("PRLIMIT-UNPRIV", "Operation not permitted"),
        ] {
            assert_eq!(value(key), want, "`{key}`: {}", ctx());
        }
        // runc, the same bundle and checks; nothing left in `runc list` or the cgroup tree.
        // One retry is allowed for its intermittent SIGSEGV (reported, as LTP's flaky tests).
        let runc = if out.stdout.lines().any(|l| l.starts_with("RUNC-RETRY ")) {
            eprintln!(
                "um-tests: containers ({}): runc failed once ({}), passed on retry",
                engine.join(" "),
                value("RUNC-RETRY")
            );
            "RUNC2"
        } else {
            "RUNC"
        };
        for (key, want) in [
            ("CGROUP", "0::/"),
            ("ZERO", "1"),
            ("MKNOD", "made"),
            ("OPEN", "Operation not permitted"),
        ] {
            assert_eq!(
                value(&format!("{runc}-{key}")),
                want,
                "`{runc}-{key}`: {}",
                ctx()
            );
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
