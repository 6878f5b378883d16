//! Gate: Debian 12's real `strace` traces guest programs (issue 20, kernel/src/ptrace.rs).
//!
//! Boots the Debian tree (`UM_DEBIAN_ROOTFS`, else `build/debian-<arch>` from
//! `tools/mkrootfs-debian`, which installs strace) with `init=/bin/bash -c SCRIPT`, in every
//! engine of [`ENGINES`]. The script only mounts /proc and runs strace, writing nothing to the
//! tree. Checked: `strace -f` of `sh -c '/bin/true; exit 3'` shows sh's `execve(...) = 0`, the
//! forked child's execve of /bin/true and its `exit_group(0)`, sh's `exit_group(3)` and
//! `+++ exited with 3 +++`, and strace's own exit status 3; `strace -e inject=getppid:retval=4242`
//! changes what bash sees as `$PPID` (the tracer rewrites a return value at the exit stop).

use std::path::PathBuf;
use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const MARKER: &str = "UM-STRACE-OK";
const TIMEOUT: Duration = Duration::from_secs(120);

const SCRIPT: &str = "mount -t proc proc /proc || exit 1
strace -f -q /bin/sh -c '/bin/true; exit 3' 2>&1
echo \"strace-rc=$?\"
strace -qq -e trace=getppid -e inject=getppid:retval=4242 /bin/bash -c 'echo ppid=$PPID' 2>&1
echo UM-STRACE-OK";

fn debian_tree() -> PathBuf {
    um_tests::debian_rootfs(&["usr/bin/strace"])
}

#[test]
fn strace_traces_fork_exec_exit_and_injects() {
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
        let has = |pred: &dyn Fn(&str) -> bool, what: &str| {
            if !lines.iter().any(|l| pred(l)) {
                panic!(
                    "strace ({}): no line with {what}\n{}",
                    engine.join(" "),
                    out.report()
                );
            }
        };
        has(
            &|l| {
                l.starts_with("execve(\"/bin/sh\", [\"/bin/sh\", \"-c\", \"/bin/true; exit 3\"]")
                    && l.ends_with("= 0")
            },
            "sh's execve(...) = 0",
        );
        has(
            &|l| l.starts_with("[pid ") && l.contains("execve(\"/bin/true\", [\"/bin/true\"]"),
            "the child's execve of /bin/true",
        );
        has(
            &|l| l.starts_with("[pid ") && l.contains("exit_group(0)"),
            "the child's exit_group(0)",
        );
        has(&|l| l.starts_with("exit_group(3)"), "sh's exit_group(3)");
        has(&|l| l == "+++ exited with 3 +++", "+++ exited with 3 +++");
        has(&|l| l == "strace-rc=3", "strace's exit status 3");
        has(
            &|l| l.starts_with("getppid()") && l.ends_with("= 4242 (INJECTED)"),
            "getppid() = 4242 (INJECTED)",
        );
        has(&|l| l == "ppid=4242", "bash seeing the injected $PPID");
        out.assert_ok(MARKER);
    });
}
