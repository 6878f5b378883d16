//! Gate: the first minutes of a new user (issue 25), on a real terminal through tmux.
//!
//! Boots as `tools/run-alpine` does (`mem=512M ... rw con0=fd:0,fd:1 quiet`, the rootfs's busybox
//! init with the inittab tools/mkrootfs writes) and types what a user tries first: `ps aux` lists
//! init and the shell, `df -h /` shows the root, `free -m` the memory, `hostname` the root's
//! `/etc/hostname`, `dmesg | tail` the kernel log (kept off the terminal by `quiet`), `uname -a`
//! the machine, `ip addr` eth0 with the address the inittab's udhcpc leased, `/etc/resolv.conf`
//! the guest's DNS (10.0.2.3), `nproc` a CPU count equal to /proc/cpuinfo's; then `poweroff`,
//! which must end `linux` with status 0 and the host terminal as it was. In the seccomp and the
//! ptrace engine (with the harness's `eth0=user,restrict=loopback`).

use um_tests::tmux::Session;
use um_tests::{Boot, rootfs};

/// A command typed at the shell, what it shows, and the check of the pane's text.
type Step<'a> = (&'a str, &'a str, &'a dyn Fn(&str) -> bool);

#[test]
fn first_minutes() {
    let hostname = std::fs::read_to_string(rootfs().join("etc/hostname"))
        .unwrap_or_default()
        .trim()
        .to_string();
    assert!(!hostname.is_empty(), "the rootfs has no /etc/hostname");
    for engine in [&["seccomp=on"][..], &["seccomp=off"][..]] {
        eprintln!("um-tests: engine: {}", engine.join(" "));
        let boot = Boot::new()
            .engine(engine)
            .init("/sbin/init")
            .mem("512M")
            .extra("quiet");
        let t = Session::start("firstboot", &boot, 120, 40);
        t.wait_for("no root shell prompt (`# `) after busybox init", 30, |s| {
            s.lines().any(|l| l.trim_end().ends_with('#'))
        });
        // Each answer is checked from a marker line the command itself cannot echo.
        let steps: &[Step] = &[
            (
                "ps aux | awk 'NR > 1 { print \"PS:\" $2 \":\" $4 }'",
                "ps aux lists init and the shell",
                &|s: &str| {
                    Session::count_lines(s, "PS:root:/sbin/init") >= 1
                        && Session::count_lines(s, "PS:root:/bin/sh") >= 1
                },
            ),
            (
                "df -h / | awk 'NR==2 {print \"DF:\" $1 \":\" $NF}'",
                "df -h / shows the root",
                &|s: &str| {
                    s.lines()
                        .any(|l| l.trim_end().ends_with(":/") && l.starts_with("DF:"))
                },
            ),
            (
                "free -m | awk '/^Mem:/ {print \"FREE:\" ($2 > 400 && $2 <= 512)}'",
                "free -m shows about 512 MiB",
                &|s: &str| Session::count_lines(s, "FREE:1") >= 1,
            ),
            ("echo HOST:$(hostname):", "hostname", &|s: &str| {
                s.contains(&format!("HOST:{hostname}:"))
            }),
            (
                "dmesg | grep -c 'Run /sbin/init as init process' | sed 's/^/DMESG:/'",
                "dmesg shows the boot log",
                &|s: &str| Session::count_lines(s, "DMESG:1") >= 1,
            ),
            (
                "uname -a | awk '{print \"UNAME:\" $1 \":\" $2}'",
                "uname -a names Linux and the host",
                &|s: &str| s.contains(&format!("UNAME:Linux:{hostname}")),
            ),
            (
                "ip -4 addr show dev eth0 | grep -o 'inet [0-9./]*' | sed 's/^/IP:/'",
                "ip addr shows eth0 leased by the inittab's udhcpc",
                &|s: &str| Session::count_lines(s, "IP:inet 10.0.2.15/24") >= 1,
            ),
            (
                "sed 's/^/RESOLV:/' /etc/resolv.conf",
                "/etc/resolv.conf names the guest's DNS",
                &|s: &str| Session::count_lines(s, "RESOLV:nameserver 10.0.2.3") >= 1,
            ),
            (
                "[ $(nproc) = $(grep -c ^processor /proc/cpuinfo) ] && echo CPUS:same",
                "nproc and /proc/cpuinfo agree",
                &|s: &str| Session::count_lines(s, "CPUS:same") >= 1,
            ),
        ];
        for (cmd, what, ok) in steps {
            t.send(&[cmd, "Enter"]);
            t.wait_for(what, 15, |s| ok(s));
        }
        // The kernel's own lines stay off the terminal under quiet.
        let text = t.capture();
        assert!(
            !text.lines().any(|l| l.starts_with("[    0.")),
            "kernel log lines on the terminal under quiet\n---- pane:\n{text}"
        );
        t.send(&["poweroff", "Enter"]);
        t.assert_ended(0, "poweroff");
    }
}
