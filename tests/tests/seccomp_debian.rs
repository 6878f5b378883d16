//! Gate: real Debian 12 programs that use guest seccomp filters and scheduling policies
//! (issue 20; kernel/src/seccomp, kernel/src/sys/sched.rs).
//!
//! Boots the Debian tree (`UM_DEBIAN_ROOTFS`, else `build/debian-<arch>` from
//! `tools/mkrootfs-debian`) with `init=/bin/bash -c SCRIPT`, in every engine of [`ENGINES`],
//! read-only (the script writes nothing to the tree). Checked:
//! * `strace -f --seccomp-bpf`: strace's own filter (SECCOMP_RET_TRACE for the traced calls,
//!   PTRACE_O_TRACESECCOMP) works, so strace does not fall back (no "--seccomp-bpf is not
//!   enabled" warning), and the trace shows the child's execve, both exit_groups and the exit
//!   status.
//! * python3 with ctypes and Debian's libseccomp.so.2 (libseccomp's real filter generator:
//!   arch checks, its x32 handling, its syscall tree): SCMP_ACT_ERRNO(EPERM) on getcwd gives
//!   Python a PermissionError; SCMP_ACT_KILL_PROCESS and SCMP_ACT_TRAP kill the child with
//!   SIGSYS (return code -31); a filtered child's /proc/self/status says NoNewPrivs 1,
//!   Seccomp 2, Seccomp_filters 1. The expected lines are what Linux 6.x gives natively.
//! * `chrt -f 10 sh -c 'chrt -p $$'` reports SCHED_FIFO priority 10; `chrt -r 5 true` works;
//!   `chrt -m` lists Linux's priority ranges.
//!
//! [`ENGINES`]: um_tests::ENGINES

use std::path::PathBuf;
use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const MARKER: &str = "UM-SECCOMP-DEBIAN-OK";
const TIMEOUT: Duration = Duration::from_secs(180);

const SCRIPT: &str = r#"mount -t proc proc /proc || exit 1
strace -f -q --seccomp-bpf -e trace=execve,exit_group /bin/sh -c '/bin/true; exit 3' 2>&1
echo "strace-rc=$?"
PYCODE=$(cat <<'PYEOF'
import ctypes, os, subprocess, sys
ls = ctypes.CDLL("libseccomp.so.2", use_errno=True)
ls.seccomp_init.restype = ctypes.c_void_p
ls.seccomp_init.argtypes = [ctypes.c_uint32]
ls.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
ls.seccomp_load.argtypes = [ctypes.c_void_p]
ls.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
ALLOW, KILL_PROCESS, TRAP = 0x7fff0000, 0x80000000, 0x00030000
ERRNO_EPERM = 0x00050000 | 1
def load(action, name):
    ctx = ls.seccomp_init(ALLOW)
    nr = ls.seccomp_syscall_resolve_name(name.encode())
    r = ls.seccomp_rule_add(ctx, action, nr, 0)
    assert r == 0, ("seccomp_rule_add", r)
    r = ls.seccomp_load(ctx)
    assert r == 0, ("seccomp_load", r)
mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "status":
    load(ERRNO_EPERM, "getcwd")
    print("py: filtered child:", " ".join(l.strip().replace("\t", "") for l in open("/proc/self/status") if l.startswith(("NoNewPrivs", "Seccomp"))))
elif mode:
    load({"errno": ERRNO_EPERM, "kill": KILL_PROCESS, "trap": TRAP}[mode], "getcwd")
    try:
        os.getcwd()
        print("py:", mode, "getcwd ran")
    except OSError as e:
        print("py:", mode, type(e).__name__, e.errno)
else:
    for m in ["errno", "kill", "trap", "status"]:
        p = subprocess.run(["/usr/bin/python3", "-c", os.environ["PYCODE"], m], capture_output=True, text=True)
        print("py:", m, "->", p.stdout.strip() or "(no output)", "rc", p.returncode)
        if p.stderr.strip():
            print("py-stderr:", p.stderr.strip())
PYEOF
)
export PYCODE PYTHONDONTWRITEBYTECODE=1
python3 -c "$PYCODE" 2>&1
chrt -f 10 sh -c 'chrt -p $$' 2>&1
chrt -r 5 true; echo "chrt-rc=$?"
chrt -m 2>&1
echo UM-SECCOMP-DEBIAN-OK"#;

fn debian_tree() -> PathBuf {
    um_tests::debian_rootfs(&["usr/bin/strace", "usr/bin/python3", "usr/bin/chrt"])
}

#[test]
fn strace_seccomp_bpf_libseccomp_and_chrt() {
    let tree = debian_tree();
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .rootflags(&tree.display().to_string())
            .init("/bin/bash")
            .args(&["-c", SCRIPT])
            .timeout(TIMEOUT)
            .run();
        let lines: Vec<&str> = out.stdout.lines().map(|l| l.trim_end()).collect();
        let want = |pred: &dyn Fn(&str) -> bool, what: &str| {
            if !lines.iter().any(|l| pred(l)) {
                panic!(
                    "seccomp_debian ({}): no line with {what}\n{}",
                    engine.join(" "),
                    out.report()
                );
            }
        };
        if let Some(l) = lines
            .iter()
            .find(|l| l.contains("seccomp-bpf is not enabled"))
        {
            panic!(
                "seccomp_debian ({}): strace refused --seccomp-bpf: {l}\n{}",
                engine.join(" "),
                out.report()
            );
        }
        want(
            &|l| l.contains("execve(\"/bin/true\"") && l.ends_with("= 0"),
            "the child's execve of /bin/true",
        );
        want(
            &|l| l.contains("exit_group(0)"),
            "the child's exit_group(0)",
        );
        want(&|l| l.starts_with("exit_group(3)"), "sh's exit_group(3)");
        want(&|l| l == "+++ exited with 3 +++", "+++ exited with 3 +++");
        want(&|l| l == "strace-rc=3", "strace's exit status 3");
        for line in [
            "py: errno -> py: errno PermissionError 1 rc 0",
            "py: kill -> (no output) rc -31",
            "py: trap -> (no output) rc -31",
            "py: status -> py: filtered child: NoNewPrivs:1 Seccomp:2 Seccomp_filters:1 rc 0",
            "chrt-rc=0",
            "SCHED_FIFO min/max priority\t: 1/99",
            "SCHED_RR min/max priority\t: 1/99",
            "SCHED_OTHER min/max priority\t: 0/0",
        ] {
            want(&|l| l == line, line);
        }
        want(
            &|l| l.ends_with("current scheduling policy: SCHED_FIFO"),
            "chrt -p: SCHED_FIFO",
        );
        want(
            &|l| l.ends_with("current scheduling priority: 10"),
            "chrt -p: priority 10",
        );
        out.assert_ok(MARKER);
    });
}
