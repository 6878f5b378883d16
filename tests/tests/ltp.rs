//! Gate: the LTP syscall tests that pass under `linux` today keep passing.
//!
//! The list is `tools/ltp/must-pass-<arch>.txt` (`name command args` lines, made by
//! `tools/ltp/run`; see docs/ltp.md), or `$UM_LTP_LIST`. The binaries come from `$UM_LTP_DIR`, else
//! `build/ltp-<arch>/bin` (`tools/ltp/build <arch>` makes them; tools/test does this). They are
//! hard-linked (or copied) into the rootfs at `/opt/ltp/`. Each test is one boot, in the
//! seccomp engine and again in the ptrace engine (two gates), run like `tools/ltp/run` does:
//! /proc, a tmpfs on /tmp and devtmpfs mounted, a scratch directory, `TMPDIR=/tmp`, the guest's
//! `timeout`, and the exit status printed as a marker; unlike the runner, with
//! `LTP_TIMEOUT_MUL=2` (see [`LTP_TIMEOUT_MUL`]). A test passes when it exits 0 and the kernel log is clean; a
//! failing test is run once more and counts as a regression only if it fails again (one that
//! passes on the retry is reported as flaky). Two boots run at a time; every regression is
//! collected and the gate fails listing them all.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use um_tests::{Boot, ENGINES, bad_log_lines, rootfs, workspace_root};

/// Parallel boots (the CI machine has 2 cores).
const JOBS: usize = 2;
/// The guest-side timeout of one test; the boot gets 30 s more.
const TEST_TIMEOUT_SECS: u64 = 120;

/// `LTP_TIMEOUT_MUL` for the gate. LTP's own per-test limits are set for a native machine
/// (fcntl14's 5000 fork+lock rounds get 38 s: 1 s natively, 35-56 s here in the ptrace
/// engine on a loaded 2-core host). The gate judges correctness, not speed (the benchmarks
/// measure that), so it gives every test twice LTP's time, as LTP advises for slow machines;
/// a hang still ends at the guest's `timeout`.
const LTP_TIMEOUT_MUL: u32 = 2;
const MARKER: &str = "LTP-EXIT=";

/// One test of the list: its name and its command line (command first).
#[derive(Clone, Debug, PartialEq, Eq)]
struct LtpTest {
    name: String,
    argv: Vec<String>,
}

/// Parses `name command args` lines; `#` starts a comment, blank lines are skipped.
fn parse_list(text: &str) -> Result<Vec<LtpTest>, String> {
    let mut tests = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if words.len() < 2 {
            return Err(format!(
                "line {}: expected `name command [args]`: {raw}",
                i + 1
            ));
        }
        tests.push(LtpTest {
            name: words[0].clone(),
            argv: words[1..].to_vec(),
        });
    }
    Ok(tests)
}

/// The exit status the guest printed (`LTP-EXIT=N`, the last one), if any.
fn exit_marker(console: &str) -> Option<i32> {
    console
        .rsplit(MARKER)
        .next()
        .filter(|_| console.contains(MARKER))
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
}

/// The first line with TFAIL or TBROK, else the last non-empty line before the marker.
fn first_failing_line(console: &str) -> String {
    let lines: Vec<&str> = console
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.contains(MARKER))
        .collect();
    lines
        .iter()
        .find(|l| l.contains("TFAIL") || l.contains("TBROK"))
        .or(lines.last())
        .map(|l| l.to_string())
        .unwrap_or_default()
}

/// The shell line init runs for `argv`.
fn guest_script(argv: &[String]) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut cmd = quote(&format!("/opt/ltp/{}", argv[0]));
    for a in &argv[1..] {
        cmd.push(' ');
        cmd.push_str(&quote(a));
    }
    format!(
        "mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t tmpfs tmp /tmp; \
         mount -t devtmpfs dev /dev 2>/dev/null; \
         export PATH=/opt/ltp:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp LTPROOT=/opt/ltp \
         LTP_COLORIZE_OUTPUT=0 LTP_TIMEOUT_MUL={LTP_TIMEOUT_MUL}; \
         d=$(mktemp -d) && cd \"$d\" && timeout {TEST_TIMEOUT_SECS} {cmd}; rc=$?; \
         cd /; rm -rf \"$d\"; echo {MARKER}$rc"
    )
}

fn arch() -> &'static str {
    std::env::consts::ARCH
}

/// The LTP binaries: `$UM_LTP_DIR` or `build/ltp-<arch>/bin`. Panics with instructions if absent.
fn ltp_dir() -> PathBuf {
    let (dir, from_env) = match std::env::var_os("UM_LTP_DIR") {
        Some(p) if !p.is_empty() => (PathBuf::from(p), true),
        _ => (
            workspace_root().join(format!("build/ltp-{}/bin", arch())),
            false,
        ),
    };
    if !dir.join("accept01").is_file() {
        panic!(
            "no LTP binaries in {}{}.\nBuild them with `tools/ltp/build {}` (tools/test does \
             this), or point UM_LTP_DIR at them.",
            dir.display(),
            if from_env { " (from UM_LTP_DIR)" } else { "" },
            arch()
        );
    }
    dir
}

/// Makes `root/opt/ltp` hold every file of `src` (hard links, else copies); files already there
/// with the same size and modification time are kept. LTP copies a test's resource files
/// (helper binaries) from `$LTPROOT/testcases/bin` (lib/tst_resource.c), so with
/// `LTPROOT=/opt/ltp` the link `/opt/ltp/testcases/bin -> ..` leads back to the binaries.
fn install(src: &Path, root: &Path) {
    let dst = root.join("opt/ltp");
    let link_dir = dst.join("testcases");
    std::fs::create_dir_all(&link_dir)
        .unwrap_or_else(|e| panic!("mkdir {}: {e}", link_dir.display()));
    let link = link_dir.join("bin");
    if std::fs::read_link(&link).ok() != Some(PathBuf::from("..")) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("..", &link)
            .unwrap_or_else(|e| panic!("symlink {}: {e}", link.display()));
    }
    let entries =
        std::fs::read_dir(src).unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let to = dst.join(entry.file_name());
        if let Ok(have) = std::fs::metadata(&to) {
            if have.len() == meta.len() && have.modified().ok() == meta.modified().ok() {
                continue;
            }
            let _ = std::fs::remove_file(&to);
        }
        match std::fs::hard_link(entry.path(), &to) {
            Ok(()) => {}
            // Another gate installing into the same root at the same time (the engines' tests
            // of one binary run in parallel without --test-threads=1) linked it first. Never
            // copy onto it: the destination may be a link to the source, and copy's O_TRUNC
            // would empty the LTP binary itself (seen: ten binaries truncated to 0 bytes).
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => {
                // Another file system: copy beside it, then rename over, so a reader never
                // sees a partial file and nothing is truncated in place.
                let tmp = dst.join(format!(
                    ".{}.tmp{}",
                    entry.file_name().to_string_lossy(),
                    std::process::id()
                ));
                std::fs::copy(entry.path(), &tmp)
                    .and_then(|_| std::fs::rename(&tmp, &to))
                    .unwrap_or_else(|e| {
                        panic!("copy {} to {}: {e}", entry.path().display(), to.display())
                    });
            }
        }
    }
}

/// Removes the regular files that appeared in the root's (normally empty) `dev/` since `since`:
/// a test that opened /dev/null for writing while no devtmpfs was mounted created one there.
/// Returns their names.
fn remove_dev_junk(dev: &Path, since: std::time::SystemTime) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dev) else {
        return removed;
    };
    for e in entries.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_file() && meta.modified().is_ok_and(|m| m >= since) {
            let _ = std::fs::remove_file(e.path());
            removed.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    removed
}

/// The guest's memory for a test: 1G (getrusage03 wants 512 MB available), more for the
/// tests in tools/ltp/run's `TEST_MEM` (fallocate06's 1 GB tmpfs needs 2 GB MemAvailable;
/// sendfile09 needs 5 GB free on a tmpfs, which holds at most half of RAM).
fn test_mem(name: &str) -> &'static str {
    match name {
        "fallocate06" => "3G",
        "sendfile09" => "12G",
        _ => "1G",
    }
}

/// Runs one test; `Err` says why it failed.
fn run_one(engine: &[&str], t: &LtpTest) -> Result<(), String> {
    let boot = Boot::new()
        .quiet()
        .engine(engine)
        .mem(test_mem(&t.name))
        .args(&["sh".to_string(), "-c".to_string(), guest_script(&t.argv)])
        .timeout(Duration::from_secs(TEST_TIMEOUT_SECS + 30));
    let out = catch_unwind(AssertUnwindSafe(|| boot.run()))
        .map_err(|_| "the boot timed out or left a process behind (see the panic above)")?;
    let bad = bad_log_lines(&out.stderr);
    if !bad.is_empty() {
        return Err(format!("kernel log: {}", bad.join(" | ")));
    }
    match exit_marker(&out.stdout) {
        Some(0) => Ok(()),
        Some(32) => Err("TCONF (exit 32)".into()),
        Some(rc) => Err(format!("exit {rc}: {}", first_failing_line(&out.stdout))),
        None => Err(format!(
            "no {MARKER} marker (linux {:?}): {}",
            out.status,
            first_failing_line(&out.stdout)
        )),
    }
}

/// The must-pass list in the seccomp engine (`ENGINES[0]`).
#[test]
fn ltp_must_pass_seccomp() {
    must_pass(ENGINES[0]);
}

/// The must-pass list in the ptrace engine with PTRACE_SYSEMU (`ENGINES[1]`). (The ptrace
/// fallbacks differ from it only in how a syscall stop is left, which the other gates cover.)
#[test]
fn ltp_must_pass_ptrace() {
    must_pass(ENGINES[1]);
}

fn must_pass(engine: &[&str]) {
    let list_path = match std::env::var_os("UM_LTP_LIST") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => workspace_root().join(format!("tools/ltp/must-pass-{}.txt", arch())),
    };
    let text = std::fs::read_to_string(&list_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", list_path.display()));
    let tests = parse_list(&text).unwrap_or_else(|e| panic!("{}: {e}", list_path.display()));
    assert!(!tests.is_empty(), "{} lists no test", list_path.display());
    let src = ltp_dir();
    for t in &tests {
        assert!(
            src.join(&t.argv[0]).is_file(),
            "{}: no binary {} in {}",
            t.name,
            t.argv[0],
            src.display()
        );
    }
    install(&src, &rootfs());
    let gate_start = std::time::SystemTime::now();

    let started = Instant::now();
    let queue = Arc::new(Mutex::new(tests.iter().cloned().collect::<VecDeque<_>>()));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let flaky = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..JOBS {
            let queue = Arc::clone(&queue);
            let failures = Arc::clone(&failures);
            let flaky = Arc::clone(&flaky);
            s.spawn(move || {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some(t) = next else { break };
                    // A failure is retried once, so a load-sensitive test does not fail CI
                    // alone; one that passes on the retry is reported as flaky.
                    let Err(why) = run_one(engine, &t) else {
                        continue;
                    };
                    match run_one(engine, &t) {
                        Ok(()) => {
                            eprintln!("um-tests: LTP {}: flaky (passed on retry): {why}", t.name);
                            flaky.lock().unwrap_or_else(|e| e.into_inner()).push(t.name);
                        }
                        Err(again) => {
                            eprintln!("um-tests: LTP {}: FAILED twice: {why}", t.name);
                            failures
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(format!("{}: {why} (retry: {again})", t.name));
                        }
                    }
                }
            });
        }
    });
    let junk = remove_dev_junk(&rootfs().join("dev"), gate_start);
    let mut failures = failures.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if !junk.is_empty() {
        failures.push(format!(
            "(all) files written into the hostfs /dev (no devtmpfs on /dev?), removed: {}",
            junk.join(" ")
        ));
    }
    failures.sort();
    let flaky = flaky.lock().unwrap_or_else(|e| e.into_inner()).clone();
    eprintln!(
        "um-tests: LTP must-pass ({}): {} of {} passed in {:.0?}; flaky (passed on retry): {}",
        engine.join(" "),
        tests.len() - failures.len(),
        tests.len(),
        started.elapsed(),
        if flaky.is_empty() {
            "none".to_string()
        } else {
            flaky.join(" ")
        }
    );
    if !failures.is_empty() {
        panic!(
            "{} of the {} LTP tests of {} regressed under linux {}:\n  {}\n\
             (per-test logs: tools/ltp/run --engine '{}' --list {} --only 'NAME')",
            failures.len(),
            tests.len(),
            list_path.display(),
            engine.join(" "),
            failures.join("\n  "),
            engine.join(" "),
            list_path.display()
        );
    }
}

#[test]
fn list_parsing() {
    let t = parse_list("# c\n\nmmap21_01 mmap21 -m 1\naccept01 accept01 # x\n").unwrap();
    assert_eq!(
        t,
        vec![
            LtpTest {
                name: "mmap21_01".into(),
                argv: vec!["mmap21".into(), "-m".into(), "1".into()]
            },
            LtpTest {
                name: "accept01".into(),
                argv: vec!["accept01".into()]
            }
        ]
    );
    assert!(parse_list("lonely\n").is_err());
}

#[test]
fn marker_and_failing_line() {
    assert_eq!(exit_marker("a\nLTP-EXIT=0\n"), Some(0));
    assert_eq!(exit_marker("LTP-EXIT=1\nLTP-EXIT=32\r\n"), Some(32));
    assert_eq!(exit_marker("nothing\n"), None);
    let out = "x: TPASS: ok\nx: TFAIL: bad errno\nx: TBROK: y\nLTP-EXIT=1\n";
    assert_eq!(first_failing_line(out), "x: TFAIL: bad errno");
    assert_eq!(first_failing_line("a\nb\nLTP-EXIT=139\n"), "b");
}

#[test]
fn script_quotes() {
    let s = guest_script(&["execve05".into(), "-i".into(), "5".into()]);
    assert!(s.contains("timeout 120 '/opt/ltp/execve05' '-i' '5'; rc=$?;"));
    assert!(s.contains("LTP_TIMEOUT_MUL=2;"));
    assert!(s.ends_with("echo LTP-EXIT=$rc"));
}

/// The checked-in lists agree: every test of the must-pass list and of the known-failures list
/// (`tools/ltp/known-failures-<arch>.txt`, `TEST<TAB>...` lines) is a test of the subset
/// (`../shared/ltp/syscalls-subset.txt`), and no test is in both (a test that passes is taken off
/// the known failures when it joins the must-pass list).
#[test]
fn must_pass_and_known_failures_are_disjoint_tests_of_the_subset() {
    // Both arches' lists, whatever the host: the arm64 lane's come from runs in qemu.
    for arch in ["x86_64", "aarch64"] {
        lists_agree(arch);
    }
}

fn lists_agree(arch: &str) {
    let root = workspace_root();
    let read = |p: PathBuf| {
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    };
    let subset: std::collections::HashSet<String> =
        parse_list(&read(root.join("../shared/ltp/syscalls-subset.txt")))
            .expect("the subset parses")
            .into_iter()
            .map(|t| t.name)
            .collect();
    let must: Vec<String> = parse_list(&read(root.join(format!("tools/ltp/must-pass-{arch}.txt"))))
        .expect("the must-pass list parses")
        .into_iter()
        .map(|t| t.name)
        .collect();
    let known_text = read(root.join(format!("tools/ltp/known-failures-{arch}.txt")));
    let known: Vec<&str> = known_text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').next().unwrap_or(""))
        .collect();
    // The known failures may shrink to nothing (every line's format is checked below); the
    // must-pass list is most of the subset, so a short one was cut off.
    assert!(
        must.len() > subset.len() / 2,
        "{arch}: the must-pass list looks truncated ({} of the subset's {} tests)",
        must.len(),
        subset.len()
    );
    for l in known_text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        assert!(
            l.split('\t').count() >= 4 && !l.split('\t').nth(3).unwrap_or("").is_empty(),
            "{arch}: a known failure needs TEST, ENGINES, VERDICT and a CAUSE: {l}"
        );
    }
    for t in must.iter().map(String::as_str).chain(known.iter().copied()) {
        assert!(
            subset.contains(t),
            "{arch}: {t} is not a test of the subset"
        );
    }
    let both: Vec<&str> = known
        .iter()
        .copied()
        .filter(|t| must.iter().any(|m| m == t))
        .collect();
    assert!(
        both.is_empty(),
        "{arch}: tests both on the must-pass list and known to fail: {both:?}"
    );
}
