//! Gate: loadable modules (issue 6), with busybox's insmod/rmmod/lsmod/modprobe/modinfo.
//!
//! The harness builds the example modules with `tools/modules/build --arch <host arch>` (gcc),
//! installs them in the rootfs the way `modprobe` expects (`/lib/modules/<release>/extra/*.ko`
//! and `modules.dep`) with the firmware (`/lib/firmware/umfw.bin`), and makes two bad modules:
//! `/opt/um/mod-badver.ko` (umbase with another kernel's vermagic, patched in place) and
//! `/opt/um/mod-foreign.ko` (the loader's checked-in fixture of umchar for the other
//! architecture). tests/scripts/modules-gate.sh then runs as init in every engine: `modprobe
//! umdep` (umbase first), `/proc/modules`, `lsmod`, `/sys/module`, the devices from the shell and
//! from the guest program `modtest` (ioctl, poll), `rmmod umbase` refused while umdep uses it,
//! `modinfo`, firmware through umfw, bad modules refused, `rmmod` of everything. The verdict is
//! `UM-MODULES-OK` with every step passed; separately the kernel log must be clean and must carry
//! the vermagic refusal naming both versions.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use um_tests::{Boot, Outcome, for_each_engine, guest_program, rootfs, workspace_root};

const MARKER: &str = "UM-MODULES-OK";
/// A release no module is built for: same length as the kernel's, so the patch keeps offsets.
const OTHER_RELEASE_CHAR: u8 = b'9';

fn arch() -> &'static str {
    std::env::consts::ARCH
}

fn other_arch() -> &'static str {
    if arch() == "x86_64" {
        "aarch64"
    } else {
        "x86_64"
    }
}

/// The kernel release (`uname -r`), from arch/um/src/boot.rs as tools/modules/build reads it.
fn release() -> String {
    let p = workspace_root().join("arch/um/src/boot.rs");
    let src = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    src.lines()
        .find_map(|l| {
            l.strip_prefix("const RELEASE: &str = \"")
                .and_then(|r| r.split('"').next())
        })
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no `const RELEASE` in {}", p.display()))
}

/// Builds the example modules for the host arch; returns the output directory.
fn build_modules() -> PathBuf {
    let out = workspace_root().join("build/modules");
    let script = workspace_root().join("tools/modules/build");
    let r = Command::new(&script)
        .args(["--arch", arch(), "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    if !r.status.success() {
        panic!(
            "{} --arch {} failed ({}); it needs gcc and binutils.\n{}{}",
            script.display(),
            arch(),
            r.status,
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr)
        );
    }
    out.join(arch())
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display())) {
        let e = e.expect("dir entry");
        let dst = to.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap_or_else(|err| {
                panic!("copy {} to {}: {err}", e.path().display(), dst.display())
            });
        }
    }
}

/// `bytes` with the first occurrence of `from` replaced by `to` (same length).
fn patch(bytes: &[u8], from: &[u8], to: &[u8]) -> Option<Vec<u8>> {
    assert_eq!(from.len(), to.len());
    let at = bytes.windows(from.len()).position(|w| w == from)?;
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    Some(out)
}

/// CRC-32 (IEEE, as zlib), for the firmware's expected checksum.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// Installs modules, firmware, the bad modules and the script; returns (script path, crc).
fn install() -> (String, String) {
    let built = build_modules();
    let rel = release();
    let root = rootfs();
    let mdir = root.join("lib/modules").join(&rel);
    let _ = std::fs::remove_dir_all(&mdir);
    copy_tree(&built.join("lib/modules").join(&rel), &mdir);
    copy_tree(&built.join("lib/firmware"), &root.join("lib/firmware"));
    let fw = std::fs::read(built.join("lib/firmware/umfw.bin")).expect("read umfw.bin");

    let opt = root.join("opt/um");
    std::fs::create_dir_all(&opt).expect("mkdir rootfs/opt/um");
    let base = std::fs::read(built.join("umbase.ko")).expect("read umbase.ko");
    let want = format!("vermagic={rel} {}", arch());
    let mut other = rel.clone().into_bytes();
    other[0] = OTHER_RELEASE_CHAR;
    let other = format!("vermagic={} {}", String::from_utf8_lossy(&other), arch());
    let bad = patch(&base, want.as_bytes(), other.as_bytes())
        .unwrap_or_else(|| panic!("umbase.ko has no `{want}` in its .modinfo"));
    std::fs::write(opt.join("mod-badver.ko"), bad).expect("write mod-badver.ko");
    let foreign = workspace_root()
        .join("module/tests/fixtures")
        .join(other_arch())
        .join("umchar.ko");
    std::fs::copy(&foreign, opt.join("mod-foreign.ko"))
        .unwrap_or_else(|e| panic!("copy {}: {e}", foreign.display()));

    let script = workspace_root().join("tests/scripts/modules-gate.sh");
    std::fs::copy(&script, opt.join("modules-gate.sh"))
        .unwrap_or_else(|e| panic!("copy {}: {e}", script.display()));
    (
        "/opt/um/modules-gate.sh".to_string(),
        format!("{:08x}", crc32(&fw)),
    )
}

fn verdict(out: &Outcome, expected: &[String]) {
    let steps: Vec<&str> = out
        .stdout
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.starts_with("STEP "))
        .collect();
    let failed: Vec<&&str> = steps.iter().filter(|l| l.contains(" FAIL")).collect();
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
            "modules gate: {} of {} steps failed, {} never ran\nfailed:\n  {}\nnever ran: {}\n{}",
            failed.len(),
            expected.len(),
            missing.len(),
            failed
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join("\n  "),
            missing
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            out.report()
        );
    }
}

#[test]
fn modules() {
    let script = std::fs::read_to_string(workspace_root().join("tests/scripts/modules-gate.sh"))
        .expect("read tests/scripts/modules-gate.sh");
    let expected = um_tests::script_steps(&script);
    assert!(
        expected.len() >= 20,
        "could not parse the step list of modules-gate.sh ({expected:?})"
    );
    guest_program("modtest");
    let (path, crc) = install();
    let rel = release();
    let refusal = format!(
        "version magic '{}{} {}' should be '{rel} {}'",
        OTHER_RELEASE_CHAR as char,
        &rel[1..],
        arch(),
        arch()
    );
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init("/bin/busybox")
            .args(&["sh", path.as_str(), crc.as_str()])
            .timeout(Duration::from_secs(180))
            .run();
        verdict(&out, &expected);
        out.assert_ok(MARKER);
        out.assert_exit_code(0);
        if !out.stderr.contains(&refusal) {
            panic!(
                "the kernel log does not name both versions (`{refusal}`)\n{}",
                out.report()
            );
        }
        if !out
            .stderr
            .contains("Direct firmware load for missing.bin failed with error -2")
        {
            panic!(
                "the kernel log lacks the failed firmware load line\n{}",
                out.report()
            );
        }
    });
}

#[test]
fn helpers() {
    assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    assert_eq!(
        patch(b"xxvermagic=6.1 yy", b"6.1", b"9.1").unwrap(),
        b"xxvermagic=9.1 yy"
    );
    let s = "mstep a m_a\nfor s in b c; do\n    step \"$s\"\ndone\n";
    assert_eq!(um_tests::script_steps(s), ["a", "b", "c"]);
}
