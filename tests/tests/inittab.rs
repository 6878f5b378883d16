//! Gate: busybox init with the /etc/inittab that tools/mkrootfs writes (issues 3 and 25).
//!
//! Boots `init=/sbin/init`; init runs the sysinit mounts and a root shell on the console, whose
//! stdin (a pipe) types `echo INIT-$((40+2))-OK; poweroff -f` (the arithmetic keeps the marker
//! out of the echoed input). `poweroff -f` calls reboot(2) with RB_POWER_OFF, which must end
//! `linux` with exit status 0.
//!
//! `booted_system`: the shell lists what is mounted and the hostname, then its input ends (as
//! ^D would); init's next action powers off through busybox init's own shutdown (SIGUSR2 to
//! init, which init blocks and takes with sigtimedwait), which must end `linux` with status 0.
//! `reboot_without_force`: `reboot` (SIGTERM to init) likewise.

use std::time::{Duration, Instant};
use um_tests::{Boot, for_each_engine, rootfs};

const MARKER: &str = "INIT-42-OK";

#[test]
fn busybox_init_and_poweroff() {
    let inittab = rootfs().join("etc/inittab");
    let text = std::fs::read_to_string(&inittab).unwrap_or_default();
    assert!(
        text.contains("# um: written by tools/mkrootfs") && text.contains("::once:-/bin/sh"),
        "{} is not the inittab tools/mkrootfs writes; run `tools/mkrootfs {}`",
        inittab.display(),
        rootfs().display()
    );
    for_each_engine(|engine| {
        let mut run = Boot::new()
            .engine(engine)
            .init("/sbin/init")
            .stdin("echo INIT-$((40+2))-OK; mount; poweroff -f\n")
            .timeout(Duration::from_secs(60))
            .spawn();
        let start = Instant::now();
        while !run.stdout_so_far().contains(MARKER) {
            if run.has_exited() || start.elapsed() > Duration::from_secs(30) {
                let exited = run.has_exited();
                let out = run.wait_briefly();
                panic!(
                    "busybox init's console shell never printed {MARKER} ({})\n{}",
                    if exited {
                        "linux exited"
                    } else {
                        "30 s passed; linux killed"
                    },
                    out
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let seen = Instant::now();
        while !run.has_exited() {
            if seen.elapsed() > Duration::from_secs(15) {
                let out = run.wait_briefly();
                panic!(
                    "linux did not end within 15 s of `poweroff -f`: reboot(2) with \
                     LINUX_REBOOT_CMD_POWER_OFF is not implemented or does not end linux \
                     (it must exit with status 0)\n{out}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = run.wait();
        out.assert_ok(MARKER);
        out.assert_exit_code(0);
    });
}

/// Mount points the inittab sets up, each with its file system type.
const MOUNTS: &[(&str, &str)] = &[
    ("/proc", "proc"),
    ("/sys", "sysfs"),
    ("/dev", "devtmpfs"),
    ("/dev/pts", "devpts"),
    ("/dev/shm", "tmpfs"),
    ("/run", "tmpfs"),
    ("/tmp", "tmpfs"),
];

#[test]
fn booted_system() {
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init("/sbin/init")
            .extra("hostname=um-gate")
            .stdin(
                "while read d m t r; do echo MNT $m $t; done < /proc/mounts; \
                 echo HOST=$(hostname) UNAME=$(uname -n); echo BOOTED-$((40+2))\n",
            )
            .timeout(Duration::from_secs(40))
            .run();
        out.assert_ok("BOOTED-42");
        out.assert_exit_code(0);
        for (m, t) in MOUNTS {
            let line = format!("MNT {m} {t}");
            assert!(
                out.stdout.lines().any(|l| l.trim_end() == line),
                "{m} is not mounted as {t}\n{}",
                out.report()
            );
        }
        assert!(
            out.stdout.contains("HOST=um-gate UNAME=um-gate"),
            "hostname= was not applied\n{}",
            out.report()
        );
        assert!(
            out.stderr.contains("reboot: Power down"),
            "the end of the console shell did not power off\n{}",
            out.report()
        );
    });
}

#[test]
fn reboot_without_force() {
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init("/sbin/init")
            .stdin("echo REBOOT-$((40+2)); reboot; sleep 30\n")
            .timeout(Duration::from_secs(40))
            .run();
        out.assert_ok("REBOOT-42");
        out.assert_exit_code(0);
        assert!(
            out.stderr.contains("reboot: Restarting system"),
            "reboot did not go through init's shutdown to reboot(2)\n{}",
            out.report()
        );
    });
}

/// Kill a still-running `linux` (its group) and describe what it printed.
trait WaitBriefly {
    fn wait_briefly(self) -> String;
}

impl WaitBriefly for um_tests::Running {
    fn wait_briefly(mut self) -> String {
        let so_far = self.stdout_so_far();
        if !self.has_exited() {
            um_tests::kill_group(self.pid(), libc::SIGKILL);
        }
        let cmd = self.cmdline().to_string();
        let out = self.wait();
        format!(
            "---- command: {cmd}\n---- console so far:\n{}\n{}",
            um_tests::tail(&so_far, 40),
            out.report()
        )
    }
}
