//! Gate: however `linux` ends (SIGTERM, SIGKILL, or init exiting), no host process it started
//! (a stub) outlives it.

use std::time::{Duration, Instant};
use um_tests::{Boot, HostProc, children_of, for_each_engine, in_group, kill_group};

/// Kills leftovers when the test ends, pass or fail, so a failing run does not leak processes.
struct Cleanup {
    pgid: i32,
    procs: Vec<HostProc>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        kill_group(self.pgid, libc::SIGKILL);
        for p in &self.procs {
            p.kill();
        }
    }
}

/// Processes that should be gone: in linux's group, children of linux, or stubs seen earlier.
fn leftovers(pid: i32, seen: &[HostProc]) -> Vec<HostProc> {
    let mut v = in_group(pid);
    for p in children_of(pid).into_iter().chain(seen.iter().cloned()) {
        if p.is_alive() && !v.iter().any(|q| q.pid == p.pid) {
            v.push(p);
        }
    }
    v.retain(|p| p.is_alive());
    v
}

fn describe(procs: &[HostProc]) -> String {
    procs
        .iter()
        .map(|p| {
            format!(
                "pid {} ({}) state {} ppid {} pgrp {}",
                p.pid, p.comm, p.state, p.ppid, p.pgrp
            )
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

enum End {
    Signal(i32),
    InitExits,
}

fn no_orphans(engine: &[&str], how: End, what: &str) {
    let args: &[&str] = match how {
        End::Signal(_) => &["sleep", "30"],
        // Not `true`: init must live long enough for the test to see its stub.
        End::InitExits => &["sleep", "1"],
    };
    let mut running = Boot::new()
        .engine(engine)
        .init("/bin/busybox")
        .args(args)
        .timeout(Duration::from_secs(60))
        .spawn();
    let pid = running.pid();
    let mut cleanup = Cleanup {
        pgid: pid,
        procs: Vec::new(),
    };

    // Wait for a stub: a child of linux.
    let deadline = Instant::now() + Duration::from_secs(10);
    let stubs = loop {
        let c = children_of(pid);
        if !c.is_empty() {
            break c;
        }
        if running.has_exited() || Instant::now() >= deadline {
            let out = running.wait();
            panic!(
                "{what}: never saw a stub (a child process of linux pid {pid}) within 10 s\n{}",
                out.report()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("um-tests: {what}: stubs seen: {}", describe(&stubs));
    cleanup.procs = stubs.clone();

    if let End::Signal(sig) = how {
        // Let the guest get going (sleep is running) before ending linux.
        std::thread::sleep(Duration::from_millis(300));
        running.signal(sig);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !running.has_exited() {
            if Instant::now() >= deadline {
                kill_group(pid, libc::SIGKILL);
                let out = running.wait();
                panic!(
                    "{what}: linux (pid {pid}) did not exit within 10 s of signal {sig}\n{}",
                    out.report()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let out = running.wait();
    if out.pipes_held_open {
        eprintln!("um-tests: {what}: stdout/stderr still open 5 s after linux exited");
    }

    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = leftovers(pid, &stubs);
        if left.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            cleanup.procs.extend(left.iter().cloned());
            panic!(
                "{what}: 5 s after linux (pid {pid}) ended these processes remain:\n  {}\n{}",
                describe(&left),
                out.report()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if let End::InitExits = how {
        out.assert_exit_code(0);
        out.assert_init_exit_logged();
    }
    out.scan_log();
}

#[test]
fn sigterm_leaves_no_stub() {
    for_each_engine(|engine| no_orphans(engine, End::Signal(libc::SIGTERM), "SIGTERM"));
}

#[test]
fn sigkill_leaves_no_stub() {
    for_each_engine(|engine| no_orphans(engine, End::Signal(libc::SIGKILL), "SIGKILL"));
}

#[test]
fn init_exit_leaves_no_stub() {
    for_each_engine(|engine| no_orphans(engine, End::InitExits, "normal exit"));
}
