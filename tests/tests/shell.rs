//! Gate: a busybox `sh` script as init exercises the shell and the everyday tools (issue 3).
//!
//! tests/scripts/shell-gate.sh is copied into the rootfs as /opt/um/shell-gate.sh and run as
//! `init=/bin/busybox -- sh /opt/um/shell-gate.sh`. It mounts proc, sysfs, tmpfs and devtmpfs,
//! then runs pipelines, redirections, command substitution, background jobs and `wait`, `trap`,
//! SIGSTOP/SIGCONT of a background job checked through /proc/PID/stat, ps, top, free, df, mount,
//! find, sort, awk, sed, grep -r, dd, a tar.gz round trip, FIFO hand-overs and a line sent over TCP
//! on 127.0.0.1 between two busybox `nc`s. Each step prints `STEP <name> ok` or
//! `STEP <name> FAIL <detail>`, and the script ends with `UM-SHELL-OK` only if all passed. This gate
//! asserts the marker and, when it is missing, lists the failed steps and the steps that never ran.

use std::time::Duration;
use um_tests::{Boot, Outcome, for_each_engine, rootfs, workspace_root};

const MARKER: &str = "UM-SHELL-OK";

/// The script, checked in beside the gates.
fn script() -> String {
    let p = workspace_root().join("tests/scripts/shell-gate.sh");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn install_script() -> String {
    let dir = rootfs().join("opt/um");
    std::fs::create_dir_all(&dir).expect("create rootfs/opt/um");
    let path = dir.join("shell-gate.sh");
    std::fs::write(&path, script()).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    "/opt/um/shell-gate.sh".to_string()
}

/// `STEP name ok|FAIL ...` lines of the console, with '\r' dropped.
fn step_lines(out: &Outcome) -> Vec<String> {
    out.stdout
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.starts_with("STEP "))
        .map(str::to_string)
        .collect()
}

fn verdict(out: &Outcome, expected: &[String]) {
    let steps = step_lines(out);
    let failed: Vec<&String> = steps.iter().filter(|l| l.contains(" FAIL")).collect();
    let seen: Vec<&str> = steps
        .iter()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let missing: Vec<&String> = expected
        .iter()
        .filter(|s| !seen.contains(&s.as_str()))
        .collect();
    if !out.stdout.contains(MARKER) || !failed.is_empty() || !missing.is_empty() {
        panic!(
            "shell gate: `{MARKER}` {}; {} of {} steps failed, {} never ran\n\
             failed steps:\n  {}\nsteps that never ran (the script died or hung before them):\n  {}\n{}",
            if out.stdout.contains(MARKER) {
                "printed"
            } else {
                "missing"
            },
            failed.len(),
            expected.len(),
            missing.len(),
            if failed.is_empty() {
                "(none)".to_string()
            } else {
                failed
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n  ")
            },
            if missing.is_empty() {
                "(none)".to_string()
            } else {
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            },
            out.report()
        );
    }
}

#[test]
fn shell_script() {
    let expected = um_tests::script_steps(&script());
    assert!(
        expected.len() >= 20,
        "could not parse the step list of tests/scripts/shell-gate.sh (found {expected:?})"
    );
    let path = install_script();
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init("/bin/busybox")
            .args(&["sh", path.as_str()])
            .timeout(Duration::from_secs(120))
            .run();
        verdict(&out, &expected);
        out.assert_ok(MARKER);
        out.assert_exit_code(0);
    });
}

#[test]
fn step_list_parses() {
    let s = "mstep a m_a\nmstep b m_b\nfor s in c d e; do\n    step \"$s\"\ndone\n";
    assert_eq!(um_tests::script_steps(s), ["a", "b", "c", "d", "e"]);
}
