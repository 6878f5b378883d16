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

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use um_tests::{Boot, linux_binary, workspace_root};

struct Tmux {
    socket: String,
    dir: PathBuf,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux ({e}); install it (apt-get install tmux)"))
    }

    fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "um"];
        args.extend_from_slice(keys);
        let o = self.cmd(&args);
        assert!(
            o.status.success(),
            "tmux send-keys {keys:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// The pane's contents including its scroll-back history.
    fn capture(&self) -> String {
        let o = self.cmd(&["capture-pane", "-p", "-J", "-S", "-", "-t", "um"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Polls the pane until `pred` holds on its text, or fails with `what` after `secs`.
    fn wait_for(&self, what: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.capture();
            if pred(&text) {
                return text;
            }
            if Instant::now() > deadline {
                panic!(
                    "interactive: {what} (waited {secs} s)\n---- pane:\n{text}\n---- kernel log \
                     (tail):\n{}",
                    um_tests::tail(
                        &std::fs::read_to_string(self.dir.join("kernel.log")).unwrap_or_default(),
                        30
                    )
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Lines of the pane that are exactly `s` (trailing spaces ignored).
    fn count_lines(text: &str, s: &str) -> usize {
        text.lines().filter(|l| l.trim_end() == s).count()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Kill linux (the pane's child) first, then the server and its pane.
        let o = self.cmd(&["display-message", "-p", "-t", "um", "#{pane_pid}"]);
        if let Ok(pid) = String::from_utf8_lossy(&o.stdout).trim().parse::<i32>() {
            for p in um_tests::children_of(pid) {
                p.kill();
            }
        }
        let _ = self.cmd(&["kill-server"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn tmux_session() {
    let tag = format!("um-tests-{}", std::process::id());
    let dir = workspace_root().join("build").join(&tag);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir the gate's scratch dir");
    let boot = Boot::new().init("/bin/busybox").args(&["sh"]);
    let mut line = shell_quote(&linux_binary().display().to_string());
    for a in boot.argv() {
        line.push(' ');
        line.push_str(&shell_quote(&a));
    }
    let d = dir.display();
    let wrapper = format!(
        "#!/bin/sh\nstty -g > {d}/before\n{line} 2> {d}/kernel.log\necho EXIT=$?\n\
         stty -g > {d}/after\necho WRAPPER-DONE\nexec sleep 600\n"
    );
    let script = dir.join("wrapper.sh");
    std::fs::write(&script, wrapper).expect("write the wrapper script");

    let t = Tmux {
        socket: tag.clone(),
        dir: dir.clone(),
    };
    let o = t.cmd(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "um",
        "-x",
        "100",
        "-y",
        "30",
        &format!("sh {}", script.display()),
    ]);
    assert!(
        o.status.success(),
        "tmux new-session failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = t.cmd(&["set-option", "-g", "history-limit", "5000"]);

    // The guest shell's prompt (busybox ash: "/ # " for root).
    t.wait_for("no shell prompt `# ` appeared", 20, |s| {
        s.lines().any(|l| l.trim_end().ends_with('#'))
    });

    t.send(&["echo hi", "Enter"]);
    t.wait_for("`echo hi` did not print a line `hi`", 10, |s| {
        Tmux::count_lines(s, "hi") >= 1
    });

    // C-c interrupts a foreground sleep; the shell answers at once.
    t.send(&["sleep 100", "Enter"]);
    std::thread::sleep(Duration::from_millis(700));
    t.send(&["C-c"]);
    t.send(&["echo A$((1+1))B", "Enter"]);
    t.wait_for(
        "after C-c the shell did not run the next command (`sleep 100` not interrupted?)",
        10,
        |s| Tmux::count_lines(s, "A2B") >= 1,
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
        |s| Tmux::count_lines(s, "A5B") >= 1,
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
        |s| Tmux::count_lines(s, "20 80") >= 1,
    );

    t.send(&["exit 7", "Enter"]);
    let text = t.wait_for("linux did not end after `exit 7`", 20, |s| {
        s.contains("WRAPPER-DONE")
    });
    assert!(
        text.lines().any(|l| l.trim_end() == "EXIT=7"),
        "linux did not exit with status 7 after `exit 7` in its init shell\n---- pane:\n{text}"
    );
    let before = std::fs::read_to_string(dir.join("before")).unwrap_or_default();
    let after = std::fs::read_to_string(dir.join("after")).unwrap_or_default();
    assert!(
        !before.trim().is_empty(),
        "stty -g before linux recorded nothing"
    );
    assert_eq!(
        after, before,
        "the host terminal settings (stty -g) differ after linux exited: it did not restore them"
    );
    let log = std::fs::read_to_string(dir.join("kernel.log")).unwrap_or_default();
    um_tests::scan_kernel_log(&log);
}
