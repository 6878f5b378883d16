//! Gate: Debian 12 (glibc) boots and works (issue 7).
//!
//! Boots the Debian tree made by `tools/mkrootfs-debian` (`build/debian-amd64` on x86_64,
//! `build/debian-arm64` on arm64 hosts; `UM_DEBIAN_ROOTFS` overrides) with `init=/bin/bash`
//! running `tests/scripts/debian-gate.sh`, in every engine of [`ENGINES`]. Each boot gets a fresh
//! copy of the tree (`build/debian-gate-<arch>/root`, removed after a passing run; `usr/` is
//! hardlinked, the rest copied), so runs are repeatable and the tree is not written: the host
//! script checks the packaged files against their md5sums before the boots.
//!
//! `tests/scripts/debian-gate-host.sh` first computes on the host, from the tree, what the guest
//! must find: the installed packages (`dpkg -l`), `find`'s listing of /usr and /etc, the
//! sha256 of every regular file under /usr and /etc, and the output of
//! `tests/scripts/debian-gate.c` compiled with the host's cc and run natively. The guest script's
//! steps, each a `STEP <name> ok` marker: bash is pid 1 on Debian 12 with glibc; `dpkg -l`
//! and `dpkg --verify`; `find`; `sha256sum -c`; coreutils with guest owners (`chown` to
//! nobody:nogroup, 1234:2345, daemon:adm shown by `ls -l`, setuid/setgid modes); `tar` keeping
//! owners; `sort -S` through temporary files; `python3 -c` with threads and subprocess; `gcc`
//! compiling the C program, its output equal to the host's; `apt-get install` of a `.deb` built
//! in the guest with `dpkg-deb`, then `apt-get purge`. The verdict needs every step, the
//! `UM-DEBIAN-OK` marker and exit status 0; separately the kernel log must be clean and show no
//! unimplemented syscall.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use um_tests::{Boot, Outcome, for_each_engine, workspace_root};

const MARKER: &str = "UM-DEBIAN-OK";
const SCRIPT: &str = "tests/scripts/debian-gate.sh";
const HOST_SCRIPT: &str = "tests/scripts/debian-gate-host.sh";
/// Where the expected results go inside the guest (the script finds them next to itself).
const GUEST_DIR: &str = "opt/um/debian-gate";
/// A boot takes 10-30 s here; this leaves room for a loaded CI machine.
const TIMEOUT: Duration = Duration::from_secs(240);

fn debian_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => panic!("no Debian tree for host arch {other}"),
    }
}

/// The Debian tree: `$UM_DEBIAN_ROOTFS`, or `build/debian-<debian arch>`.
fn debian_tree() -> PathBuf {
    let (path, from_env) = match std::env::var_os("UM_DEBIAN_ROOTFS") {
        Some(p) if !p.is_empty() => (PathBuf::from(p), true),
        _ => (
            workspace_root().join(format!("build/debian-{}", debian_arch())),
            false,
        ),
    };
    if !path.join("bin/bash").exists() || !path.join("var/lib/dpkg/status").is_file() {
        panic!(
            "the Debian tree {} is missing or has no /bin/bash{}.\n\
             Make it with `tools/mkrootfs-debian --arch {}` (tools/test does this), \
             or point UM_DEBIAN_ROOTFS at one.",
            path.display(),
            if from_env {
                " (from UM_DEBIAN_ROOTFS)"
            } else {
                ""
            },
            debian_arch()
        );
    }
    path.canonicalize().unwrap_or(path)
}

/// A progress line on the test's stderr, shown as it happens (not captured like `eprintln!`).
fn progress(line: &str) {
    let _ = writeln!(std::io::stderr(), "um-tests: debian: {line}");
}

/// Runs a host command, failing the gate with its output if it does not succeed.
fn run(cmd: &mut Command, what: &str) {
    let r = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    if !r.status.success() {
        panic!(
            "{what} failed ({})\n{}{}",
            r.status,
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr)
        );
    }
    for l in String::from_utf8_lossy(&r.stdout).lines() {
        progress(l);
    }
}

fn remove(path: &Path) {
    if path.exists() {
        std::fs::remove_dir_all(path)
            .unwrap_or_else(|e| panic!("cannot remove {}: {e}", path.display()));
    }
}

/// A fresh copy of `tree` at `root` with the expected results at `root/GUEST_DIR`.
///
/// `usr/` (350 MB that the gate only reads and adds files to) is hardlinked, everything else
/// copied: `cp -al` of the whole tree, then each top-level entry but `usr` replaced by a real copy.
/// The host script's md5sums check would catch a kernel that wrote into a hardlinked file.
fn fresh_copy(tree: &Path, expected: &Path, root: &Path) {
    remove(root);
    let t = Instant::now();
    run(
        Command::new("cp").arg("-al").arg(tree).arg(root),
        &format!("cp -al {} {}", tree.display(), root.display()),
    );
    let entries =
        std::fs::read_dir(tree).unwrap_or_else(|e| panic!("read {}: {e}", tree.display()));
    for e in entries {
        let name = e.expect("dir entry").file_name();
        if name == "usr" {
            continue;
        }
        let (from, to) = (tree.join(&name), root.join(&name));
        if to.is_dir() && !to.is_symlink() {
            remove(&to);
        } else {
            std::fs::remove_file(&to)
                .unwrap_or_else(|e| panic!("cannot remove {}: {e}", to.display()));
        }
        run(
            Command::new("cp").arg("-a").arg(&from).arg(&to),
            &format!("cp -a {} {}", from.display(), to.display()),
        );
    }
    let dst = root.join(GUEST_DIR);
    remove(&dst);
    run(
        Command::new("cp").arg("-a").arg(expected).arg(&dst),
        &format!("cp -a {} {}", expected.display(), dst.display()),
    );
    progress(&format!(
        "copied {} to {} (usr/ hardlinked) in {:.1?}",
        tree.display(),
        root.display(),
        t.elapsed()
    ));
}

/// The step names of the guest script, from its `STEPS="..."` line.
fn expected_steps(script: &str) -> Vec<String> {
    script
        .lines()
        .find_map(|l| l.strip_prefix("STEPS=\""))
        .and_then(|r| r.split('"').next())
        .map(|r| r.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Boots `root` in `engine`, echoing the guest's `RUN`/`STEP` lines as they appear (a step can
/// take several seconds in the slower engines).
fn boot(engine: &[&str], root: &Path) -> Outcome {
    let guest_script = format!("/{GUEST_DIR}/debian-gate.sh");
    let mut running = Boot::new()
        .engine(engine)
        .rootflags(&root.display().to_string())
        .init("/bin/bash")
        .args(&[guest_script.as_str()])
        .mem("1G")
        .timeout(TIMEOUT)
        .spawn();
    let started = Instant::now();
    let mut shown = 0;
    let tag = engine.join(" ");
    let mut echo = |out: &str, upto_end: bool| {
        let lines: Vec<&str> = out.lines().collect();
        // The last line may still be growing unless linux has exited.
        let complete = if upto_end || out.ends_with('\n') {
            lines.len()
        } else {
            lines.len().saturating_sub(1)
        };
        for l in lines.iter().take(complete).skip(shown) {
            let l = l.trim_end_matches('\r');
            if l.starts_with("STEP ") || l.starts_with("UM-DEBIAN") {
                progress(&format!(
                    "[{tag}] {:5.1}s {l}",
                    started.elapsed().as_secs_f64()
                ));
            }
        }
        shown = shown.max(complete);
    };
    while !running.has_exited() && started.elapsed() < TIMEOUT {
        echo(&running.stdout_so_far(), false);
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = running.wait();
    echo(&out.stdout, true);
    out
}

fn verdict(out: &Outcome, expected: &[String]) {
    let lines: Vec<&str> = out
        .stdout
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .collect();
    let failed: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("STEP ") && l.contains(" FAIL"))
        .collect();
    let passed = |step: &str| {
        lines.iter().any(|l| {
            l.strip_prefix("STEP ")
                .and_then(|r| r.strip_prefix(step))
                .is_some_and(|r| r.starts_with(" ok"))
        })
    };
    let missing: Vec<&str> = expected
        .iter()
        .map(String::as_str)
        .filter(|s| !passed(s))
        .collect();
    if !out.stdout.contains(MARKER) || !failed.is_empty() || !missing.is_empty() {
        panic!(
            "debian gate: {} of {} steps did not pass ({})\nfailed:\n  {}\n{}",
            missing.len(),
            expected.len(),
            missing.join(" "),
            failed.join("\n  "),
            out.report()
        );
    }
}

#[test]
fn debian() {
    let script = std::fs::read_to_string(workspace_root().join(SCRIPT))
        .unwrap_or_else(|e| panic!("read {SCRIPT}: {e}"));
    let expected = expected_steps(&script);
    assert!(
        expected.len() >= 10,
        "could not parse the STEPS line of {SCRIPT} ({expected:?})"
    );
    let tree = debian_tree();
    let work = workspace_root().join(format!("build/debian-gate-{}", debian_arch()));
    let want = work.join("expected");
    let root = work.join("root");
    std::fs::create_dir_all(&work).unwrap_or_else(|e| panic!("mkdir {}: {e}", work.display()));
    run(
        Command::new(workspace_root().join(HOST_SCRIPT))
            .arg(&tree)
            .arg(&want),
        HOST_SCRIPT,
    );
    for_each_engine(|engine| {
        fresh_copy(&tree, &want, &root);
        let out = boot(engine, &root);
        verdict(&out, &expected);
        out.assert_ok(MARKER);
        out.assert_exit_code(0);
        progress(&format!(
            "[{}] passed in {:.1?}",
            engine.join(" "),
            out.elapsed
        ));
    });
    remove(&root);
}

#[test]
fn helpers() {
    let s = "#!/bin/bash\n# STEPS are\nSTEPS=\"boot dpkg find\"\nfor s in $STEPS; do\n";
    assert_eq!(expected_steps(s), ["boot", "dpkg", "find"]);
    assert!(expected_steps("no steps here").is_empty());
}
