//! Gate: the kernel log buffer through syslog(2) (busybox `dmesg`), and `quiet` keeping the
//! console (stderr) free of it (issue 25).
//!
//! Boots with `quiet` (console loglevel 4) and runs busybox `dmesg`: the boot banner must be in
//! the buffer (SYSLOG_ACTION_SIZE_BUFFER, READ_ALL) though the console never printed it;
//! `dmesg -c` (READ_CLEAR) empties what READ_ALL returns; `dmesg -n 1` (CONSOLE_LEVEL) works
//! as root. The gate asserts each step's marker and that the banner stayed off stderr.

use um_tests::{Boot, for_each_engine};

const SCRIPT: &str = "\
dmesg | grep -q 'Linux version' && echo HAVE-BANNER; \
dmesg | grep -q '^\\[ *[0-9]*\\.[0-9]*\\] Run /bin/busybox as init process' && echo HAVE-RUN-LINE; \
dmesg -c > /dev/null; echo CLEARED-$(dmesg | grep -c 'Linux version'); \
dmesg -n 1 && echo LEVEL-OK; \
echo SYSLOG-$((40+2))";

#[test]
fn dmesg_reads_the_log_buffer() {
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init("/bin/busybox")
            .extra("quiet")
            .args(&["sh", "-c", SCRIPT])
            .run();
        out.assert_ok("SYSLOG-42");
        for m in ["HAVE-BANNER", "HAVE-RUN-LINE", "CLEARED-0", "LEVEL-OK"] {
            assert!(
                out.stdout.lines().any(|l| l.trim_end() == m),
                "marker {m} missing\n{}",
                out.report()
            );
        }
        assert!(
            !out.stderr.contains("Linux version"),
            "with quiet the boot banner must stay off the console\n{}",
            out.report()
        );
    });
}

/// `log=PATH`: the host file gets the whole kernel log (the banner, init's start and its exit)
/// though `quiet` keeps the console free of it.
#[test]
fn log_file_has_the_log() {
    let path = std::env::temp_dir().join(format!("um-klog-{}.log", std::process::id()));
    for_each_engine(|engine| {
        let _ = std::fs::remove_file(&path);
        let out = Boot::new()
            .engine(engine)
            .extra("quiet")
            .extra(&format!("log={}", path.display()))
            .args(&["sh", "-c", "echo LOGFILE-$((40+2))"])
            .run();
        out.assert_ok("LOGFILE-42");
        let log = std::fs::read_to_string(&path).unwrap_or_default();
        for want in [
            "Linux version",
            "Run /bin/busybox as init process",
            "Attempted to kill init!",
        ] {
            assert!(
                log.lines().any(|l| l.contains(want)),
                "log={}: no line with {want:?}\n---- file:\n{log}\n{}",
                path.display(),
                out.report()
            );
        }
        assert!(
            !out.stderr.contains("Linux version"),
            "quiet printed the banner on the console\n{}",
            out.report()
        );
    });
    let _ = std::fs::remove_file(&path);
}
