//! A private tmux server with one pane running `linux` on a real terminal, for the gates that
//! type at the guest as a user would (`interactive`, `firstboot`).
//!
//! [`Session::start`] writes a wrapper script that records `stty -g` of the pane's terminal,
//! runs the given `linux` command line with the kernel log in `kernel.log`, prints
//! `EXIT=<status>`, records `stty -g` again and prints `WRAPPER-DONE`; the gate then types with
//! [`Session::send`] and polls the pane with [`Session::wait_for`]. Dropping the session kills
//! `linux` (the pane's children) and the server, whatever happened.

use crate::{Boot, linux_binary, workspace_root};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Numbers the sessions of one test process, so that two sessions never share a server socket:
/// `kill-server` returns before the old server has exited, and a new client that reaches the
/// dying server's socket fails with "server exited unexpectedly" (seen in CI when the
/// `firstboot` gate started its second engine's session).
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

/// One tmux server (`tmux -L <tag>`) with the session `um`.
pub struct Session {
    socket: String,
    dir: PathBuf,
    what: String,
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Session {
    /// Starts `linux` with `boot`'s arguments in a `cols`x`rows` pane; `what` names the gate
    /// in failure messages. The scratch directory is `build/um-tests-<what>-<pid>-<n>`.
    pub fn start(what: &str, boot: &Boot, cols: u32, rows: u32) -> Session {
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let tag = format!("um-tests-{what}-{}-{n}", std::process::id());
        let dir = workspace_root().join("build").join(&tag);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir the gate's scratch dir");
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
        let s = Session {
            socket: tag,
            dir,
            what: what.to_string(),
        };
        let o = s.cmd(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "um",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            &format!("sh {}", script.display()),
        ]);
        assert!(
            o.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let _ = s.cmd(&["set-option", "-g", "history-limit", "5000"]);
        s
    }

    /// Runs a tmux command against this server.
    pub fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux ({e}); install it (apt-get install tmux)"))
    }

    /// Types `keys` (tmux send-keys words: text, `Enter`, `C-c`...).
    pub fn send(&self, keys: &[&str]) {
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
    pub fn capture(&self) -> String {
        let o = self.cmd(&["capture-pane", "-p", "-J", "-S", "-", "-t", "um"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The kernel log so far.
    pub fn kernel_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("kernel.log")).unwrap_or_default()
    }

    /// Polls the pane until `pred` holds on its text, or fails with `what` after `secs`.
    pub fn wait_for(&self, what: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.capture();
            if pred(&text) {
                return text;
            }
            if Instant::now() > deadline {
                panic!(
                    "{}: {what} (waited {secs} s)\n---- pane:\n{text}\n---- kernel log \
                     (tail):\n{}",
                    self.what,
                    crate::tail(&self.kernel_log(), 30)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Lines of `text` that are exactly `s` (trailing spaces ignored).
    pub fn count_lines(text: &str, s: &str) -> usize {
        text.lines().filter(|l| l.trim_end() == s).count()
    }

    /// After `linux` ended: its exit status line is `EXIT=<code>` and the host terminal's
    /// settings are as before it started; the kernel log is scanned.
    pub fn assert_ended(&self, code: i32, why: &str) {
        let text = self.wait_for(&format!("linux did not end after {why}"), 30, |s| {
            s.contains("WRAPPER-DONE")
        });
        assert!(
            text.lines().any(|l| l.trim_end() == format!("EXIT={code}")),
            "{}: linux did not exit with status {code} after {why}\n---- pane:\n{text}",
            self.what
        );
        let before = std::fs::read_to_string(self.dir.join("before")).unwrap_or_default();
        let after = std::fs::read_to_string(self.dir.join("after")).unwrap_or_default();
        assert!(
            !before.trim().is_empty(),
            "stty -g before linux recorded nothing"
        );
        assert_eq!(
            after, before,
            "the host terminal settings (stty -g) differ after linux exited: it did not restore \
             them"
        );
        crate::scan_kernel_log(&self.kernel_log());
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Kill linux (the pane's child) first, then the server and its pane.
        let o = self.cmd(&["display-message", "-p", "-t", "um", "#{pane_pid}"]);
        if let Ok(pid) = String::from_utf8_lossy(&o.stdout).trim().parse::<i32>() {
            for p in crate::children_of(pid) {
                p.kill();
            }
        }
        let _ = self.cmd(&["kill-server"]);
        // Wait (briefly) until the server is gone, so that it does not outlive the test.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && self.cmd(&["has-session"]).status.success() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
