//! Gate: `linux` inside a host sandbox like an Android app's (`linux-sandbox`, built next to
//! `linux`): a syscall numbered -1 kills the process, and with `--no-execveat` exec of a memfd
//! is refused. There the ptrace engine's cancel path cannot work (the boot probe finds it
//! unusable and `nosysemu` is refused with one clear line and exit status 2), which is why the
//! substitute path exists: `nocancel` works, as do `PTRACE_SYSEMU` and the seccomp engine; and
//! when exec of the memfd stub is refused, `stub_exe=PATH` starts stubs from a file.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use um_tests::{linux_binary, rootfs};

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `linux-sandbox [sandbox_args] linux <boot args> <extra> -- echo MARK`, with a timeout.
fn run(sandbox_args: &[&str], extra: &[&str]) -> Run {
    let linux = linux_binary();
    let sandbox = linux.with_file_name("linux-sandbox");
    assert!(
        sandbox.is_file(),
        "{} is missing: `cargo build --release -p um-bin` builds it next to linux",
        sandbox.display()
    );
    let root = rootfs();
    let mut cmd = Command::new(&sandbox);
    cmd.args(sandbox_args)
        .arg(&linux)
        .args([
            "mem=256M",
            "rootfstype=hostfs",
            &format!("rootflags={}", root.display()),
            "rw",
            "init=/bin/busybox",
            "con0=fd:0,fd:1",
        ])
        .args(extra)
        .args(["--", "echo", "sandbox-gate-ok"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    eprintln!("um-tests: running: {cmd:?}");
    let mut child = cmd.spawn().expect("start linux-sandbox");
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("linux-sandbox {sandbox_args:?} {extra:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code(),
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

fn assert_boots(r: &Run, what: &str) {
    assert!(
        r.code == Some(0) && r.stdout.contains("sandbox-gate-ok"),
        "{what}: expected the guest to run inside the sandbox (exit {:?})\n--- stdout\n{}\n--- stderr\n{}",
        r.code,
        r.stdout,
        r.stderr
    );
    let bad = um_tests::bad_log_lines(&r.stderr);
    assert!(bad.is_empty(), "{what}: kernel log: {bad:?}");
}

#[test]
fn cancel_dies_and_substitute_works_in_an_app_sandbox() {
    let r = run(&[], &["seccomp=off", "nosysemu"]);
    assert_eq!(r.code, Some(2), "nosysemu in the sandbox:\n{}", r.stderr);
    assert!(
        r.stderr
            .contains("nosysemu: this host cannot cancel syscalls under ptrace; try nocancel"),
        "no clear error line:\n{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("PTRACE_SYSCALL with cancellation (-1) unavailable"),
        "the boot probe did not find cancellation unusable:\n{}",
        r.stderr
    );
    assert_boots(&run(&[], &["seccomp=off", "nocancel"]), "nocancel");
    assert_boots(&run(&[], &["seccomp=off"]), "PTRACE_SYSEMU");
    assert_boots(&run(&[], &["seccomp=on"]), "seccomp");
}

#[test]
fn stub_exe_starts_stubs_where_memfd_exec_is_refused() {
    let dir = std::env::temp_dir().join(format!("um-sandbox-gate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let stub: PathBuf = dir.join("stub");
    let stub_opt = format!("stub_exe={}", stub.display());
    // Refused: the memfd stub cannot start (a clear line, a non-zero exit, no hang).
    let r = run(&["--no-execveat"], &["seccomp=on"]);
    assert_ne!(
        r.code,
        Some(0),
        "memfd exec should have failed:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("try stub_exe=PATH"),
        "no hint at stub_exe:\n{}",
        r.stderr
    );
    for engine in [["seccomp=on"], ["seccomp=off"]] {
        let mut extra = engine.to_vec();
        extra.push(&stub_opt);
        assert_boots(
            &run(&["--no-execveat"], &extra),
            &format!("{engine:?} with stub_exe"),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
