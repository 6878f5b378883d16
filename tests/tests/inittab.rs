//! Gate: busybox init with the /etc/inittab that tools/mkrootfs writes (issue 3).
//!
//! Boots `init=/sbin/init`; init runs the sysinit mounts and a respawned root shell on the console,
//! whose stdin (a pipe) types `echo INIT-$((40+2))-OK; poweroff -f` (the arithmetic keeps the
//! marker out of the echoed input). `poweroff -f` calls reboot(2) with RB_POWER_OFF, which must end
//! `linux` with exit status 0.

use std::time::{Duration, Instant};
use um_tests::{Boot, for_each_engine, rootfs};

const MARKER: &str = "INIT-42-OK";

#[test]
fn busybox_init_and_poweroff() {
    let inittab = rootfs().join("etc/inittab");
    let text = std::fs::read_to_string(&inittab).unwrap_or_default();
    assert!(
        text.contains("# um: written by tools/mkrootfs") && text.contains("::respawn:-/bin/sh"),
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
