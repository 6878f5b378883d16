//! Gate: closing the user's terminal ends the guest (issue 25).
//!
//! `linux` runs on a host pseudo-terminal (`openpty`; `setsid --ctty` makes the pty its
//! controlling terminal, as a terminal window's shell job has one). Once the guest's console
//! shell has printed a marker, the terminal goes away:
//! * `busybox init` with the inittab tools/mkrootfs writes: the pty master is closed, as when a
//!   terminal window or tmux pane closes (the host sends SIGHUP and reads fail with EIO);
//! * `busybox init` again, the pty not being linux's controlling terminal: only reads failing
//!   with EIO tell that the terminal is gone;
//! * a shell as init (`init=/bin/sh`, which ignores SIGHUP as pid 1): SIGHUP is sent to
//!   `linux` while the pty stays open.
//!
//! Either way the console hangup must reach the guest and `linux` must end within a bounded
//! time, and every stub process it had must be gone: nothing lingers on the host. The kernel
//! log must be clean.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use um_tests::{Boot, HostProc, children_of, for_each_engine, linux_binary, scan_kernel_log};

/// How long `linux` may take to end after the hangup (busybox init's orderly power-off takes
/// about two seconds; the kernel's watchdog gives up at ten).
const EXIT_BOUND: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug)]
enum How {
    /// Close the pty master (the host sends SIGHUP to linux, its session leader, and reads
    /// fail with EIO).
    CloseMaster,
    /// Close the pty master of a pty that is not linux's controlling terminal: no SIGHUP, only
    /// EIO on reads (a wrapper between the terminal and linux that does not pass SIGHUP on).
    CloseMasterNotCtty,
    /// kill(linux, SIGHUP), the pty left open.
    Sighup,
}

fn run_case(engine: &[&str], init: &str, how: How) {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let master: OwnedFd = pty.master;
    let slave: OwnedFd = pty.slave;
    // openpty's descriptors are inherited across exec: linux must not hold the master, or
    // closing ours would not close the terminal.
    for fd in [&master, &slave] {
        nix::fcntl::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(fd),
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        )
        .expect("FD_CLOEXEC on the pty");
    }
    let tag = format!("um-hangup-{}-{:?}", std::process::id(), how);
    let klog_path = std::env::temp_dir().join(format!("{tag}.log"));
    let klog = File::create(&klog_path).expect("create the kernel log file");

    let boot = Boot::new().engine(engine).init(init);
    let mut cmd = if let How::CloseMasterNotCtty = how {
        let mut c = Command::new(linux_binary());
        c.process_group(0);
        c
    } else {
        let mut c = Command::new("setsid");
        c.arg("--ctty").arg(linux_binary());
        c
    };
    cmd.args(boot.argv())
        .stdin(Stdio::from(slave.try_clone().expect("dup slave")))
        .stdout(Stdio::from(slave.try_clone().expect("dup slave")))
        .stderr(Stdio::from(klog));
    eprintln!("um-tests: running under a pty ({how:?}): {cmd:?}");
    let mut child = cmd.spawn().expect("start setsid --ctty linux");
    drop(slave);
    let pid = child.id() as i32;

    // The pty master's output, read by a thread that closes the master when told to.
    let out = Arc::new(Mutex::new(Vec::<u8>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writer = File::from(master.try_clone().expect("dup master"));
    let mut reader = Some({
        let (out, stop) = (out.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut f = File::from(master);
            let mut buf = [0u8; 4096];
            while !stop.load(Ordering::Acquire) {
                let mut fds = [nix::poll::PollFd::new(
                    f.as_fd(),
                    nix::poll::PollFlags::POLLIN,
                )];
                match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(100u8)) {
                    Ok(0) => continue,
                    Ok(_) => match f.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => out.lock().unwrap().extend_from_slice(&buf[..n]),
                    },
                    Err(_) => break,
                }
            }
            // Dropping f closes this copy of the master.
        })
    });
    let seen = || String::from_utf8_lossy(&out.lock().unwrap()).into_owned();
    let klog_text = || std::fs::read_to_string(&klog_path).unwrap_or_default();
    let fail = |what: &str, child: &mut std::process::Child| -> ! {
        um_tests::kill_group(pid, libc::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "hangup ({how:?}, init={init}, {}): {what}\n---- console:\n{}\n---- kernel log:\n{}",
            engine.join(" "),
            um_tests::tail(&seen(), 30),
            um_tests::tail(&klog_text(), 40)
        );
    };

    // Wait for the shell, then have it print a marker (the arithmetic keeps the marker out of
    // the echoed input).
    let start = Instant::now();
    let mut stubs: Vec<HostProc> = Vec::new();
    let mut asked = false;
    while !seen().contains("HUP-READY-42") {
        if start.elapsed() > Duration::from_secs(30) {
            fail("the guest shell never printed HUP-READY-42", &mut child);
        }
        if let Ok(Some(st)) = child.try_wait() {
            fail(&format!("linux ended before the hangup ({st})"), &mut child);
        }
        if !asked && seen().contains('#') {
            writer
                .write_all(b"echo HUP-READY-$((40+2))\n")
                .expect("type into the pty");
            asked = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for p in children_of(pid) {
        if !stubs.contains(&p) {
            stubs.push(p);
        }
    }
    assert!(
        !stubs.is_empty(),
        "linux (pid {pid}) has no stub child processes while the guest runs"
    );

    match how {
        How::CloseMaster | How::CloseMasterNotCtty => {
            drop(writer);
            stop.store(true, Ordering::Release);
            if let Some(r) = reader.take() {
                let _ = r.join();
            }
        }
        How::Sighup => um_tests::send_signal(pid, libc::SIGHUP),
    }
    let hung_up = Instant::now();
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if hung_up.elapsed() > EXIT_BOUND {
            fail(
                &format!("linux still runs {EXIT_BOUND:?} after the hangup"),
                &mut child,
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = hung_up.elapsed();
    // A power-off (or init's own exit with status 0), not death by the host signal.
    if !status.success() {
        fail(
            &format!("linux ended with {status}, not a power-off with status 0"),
            &mut child,
        );
    }
    // The stubs die with linux (PR_SET_PDEATHSIG, PTRACE_O_EXITKILL): give them a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while stubs.iter().any(HostProc::is_alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<&HostProc> = stubs.iter().filter(|p| p.is_alive()).collect();
    for p in &left {
        p.kill();
    }
    if !left.is_empty() {
        fail(
            &format!("stub processes outlived linux: {left:?}"),
            &mut child,
        );
    }
    stop.store(true, Ordering::Release);
    if let Some(r) = reader.take() {
        let _ = r.join();
    }
    let log = klog_text();
    let _ = std::fs::remove_file(&klog_path);
    let unimpl = scan_kernel_log(&log);
    assert!(
        unimpl.is_empty(),
        "unimplemented syscalls during the hangup: {unimpl:?}"
    );
    assert!(
        log.contains("console: host"),
        "the kernel log does not record the console hangup\n{}",
        um_tests::tail(&log, 30)
    );
    eprintln!("um-tests: linux ended {took:.2?} after the hangup ({status})");
}

#[test]
fn terminal_closed_under_busybox_init() {
    for_each_engine(|engine| run_case(engine, "/sbin/init", How::CloseMaster));
}

#[test]
fn terminal_gone_without_sighup() {
    for_each_engine(|engine| run_case(engine, "/sbin/init", How::CloseMasterNotCtty));
}

#[test]
fn sighup_with_shell_as_init() {
    for_each_engine(|engine| run_case(engine, "/bin/sh", How::Sighup));
}
