//! Gate: an interactive busybox shell on a real terminal, driven through tmux (issue 3).
//!
//! A private tmux server (`tmux -L <unique>`) runs a wrapper script in a 100x30 pane: it records
//! `stty -g` of the pane's terminal, runs `linux ... init=/bin/busybox -- sh` on that terminal (the
//! kernel puts the host terminal in raw mode and runs its own line discipline), prints
//! `EXIT=<status>` and records `stty -g` again. Through `send-keys` the gate checks: `echo hi`;
//! C-c interrupts a foreground `sleep 100`; C-z stops one (the shell reports `Stopped`) and `fg`
//! then C-c ends it; resizing the window reaches the guest (`stty size` says `20 80`); `exit 7` ends
//! linux with status 7; and the host terminal settings are restored exactly.
//!
//! The tmux server (and with it linux) is killed whatever happens.

use std::time::Duration;
use um_tests::Boot;
use um_tests::tmux::Session;

#[test]
fn tmux_session() {
    let boot = Boot::new().init("/bin/busybox").args(&["sh"]);
    let t = Session::start("interactive", &boot, 100, 30);

    // The guest shell's prompt (busybox ash: "/ # " for root).
    t.wait_for("no shell prompt `# ` appeared", 20, |s| {
        s.lines().any(|l| l.trim_end().ends_with('#'))
    });

    t.send(&["echo hi", "Enter"]);
    t.wait_for("`echo hi` did not print a line `hi`", 10, |s| {
        Session::count_lines(s, "hi") >= 1
    });

    // C-c interrupts a foreground sleep; the shell answers at once.
    t.send(&["sleep 100", "Enter"]);
    std::thread::sleep(Duration::from_millis(700));
    t.send(&["C-c"]);
    t.send(&["echo A$((1+1))B", "Enter"]);
    t.wait_for(
        "after C-c the shell did not run the next command (`sleep 100` not interrupted?)",
        10,
        |s| Session::count_lines(s, "A2B") >= 1,
    );

    // C-z stops it; fg resumes it; C-c ends it.
    t.send(&["sleep 100", "Enter"]);
    std::thread::sleep(Duration::from_millis(700));
    t.send(&["C-z"]);
    t.wait_for(
        "after C-z the shell did not report the job `Stopped`",
        10,
        |s| s.contains("Stopped"),
    );
    t.send(&["fg", "Enter"]);
    std::thread::sleep(Duration::from_millis(700));
    t.send(&["C-c"]);
    t.send(&["echo A$((2+3))B", "Enter"]);
    t.wait_for(
        "after fg and C-c the shell did not run the next command",
        10,
        |s| Session::count_lines(s, "A5B") >= 1,
    );

    // Resizing the terminal reaches the guest (SIGWINCH, TIOCGWINSZ).
    let o = t.cmd(&["resize-window", "-t", "um", "-x", "80", "-y", "20"]);
    assert!(
        o.status.success(),
        "tmux resize-window failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::thread::sleep(Duration::from_millis(500));
    t.send(&["stty size", "Enter"]);
    t.wait_for(
        "`stty size` after resizing the window to 80x20 did not print `20 80`",
        10,
        |s| Session::count_lines(s, "20 80") >= 1,
    );

    t.send(&["exit 7", "Enter"]);
    t.assert_ended(7, "`exit 7` in its init shell");
}
