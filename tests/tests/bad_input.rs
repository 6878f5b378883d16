//! Gate: bad command lines are one clear `linux: error:` line and exit status 2, never a panic;
//! `--help` lists the options.

use um_tests::{Boot, Outcome, for_each_engine, rootfs};

fn assert_one_error_line(out: &Outcome, what: &str) {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let ok = out.code() == Some(2) && lines.len() == 1 && lines[0].starts_with("linux: error:");
    if !ok {
        panic!(
            "{what}: expected exit status 2 and exactly one stderr line starting `linux: error:` \
             (got {} non-empty stderr lines)\n{}",
            lines.len(),
            out.report()
        );
    }
    eprintln!("um-tests: {what}: {}", lines[0]);
}

#[test]
fn unknown_option() {
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .extra("frobnicate=1")
            .args(&["true"])
            .run();
        assert_one_error_line(&out, "unknown option frobnicate=1");
    });
}

#[test]
fn missing_root() {
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .rootflags("/nonexistent")
            .args(&["true"])
            .run();
        assert_one_error_line(&out, "rootflags=/nonexistent");
    });
}

#[test]
fn root_is_a_regular_file() {
    let file = rootfs().join("etc/os-release");
    assert!(
        file.is_file(),
        "{} should be a regular file",
        file.display()
    );
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .rootflags(&file.display().to_string())
            .args(&["true"])
            .run();
        assert_one_error_line(&out, "rootflags=<regular file>");
    });
}

#[test]
fn mem_too_big() {
    for_each_engine(|engine| {
        let out = Boot::new().engine(engine).mem("1P").args(&["true"]).run();
        assert_one_error_line(&out, "mem=1P");
    });
}

#[test]
fn mem_bad_suffix() {
    for_each_engine(|engine| {
        let out = Boot::new().engine(engine).mem("12Q").args(&["true"]).run();
        assert_one_error_line(&out, "mem=12Q");
    });
}

#[test]
fn help_lists_options() {
    let out = Boot::raw(&["--help"]).run();
    if out.code() != Some(0) {
        panic!("`linux --help` should exit 0\n{}", out.report());
    }
    for opt in [
        "mem=",
        "rootflags=",
        "init=",
        "seccomp=",
        "nosysemu",
        "nocancel",
        "con0=",
    ] {
        if !out.stdout.contains(opt) {
            panic!("`linux --help` does not mention `{opt}`\n{}", out.report());
        }
    }
    out.scan_log();
}
