//! Gate harness: boot the real `linux` binary on a real root filesystem and judge it by markers.
//!
//! * [`Boot`] builds a command line (UML conventions), runs `linux` in its own process group with a
//!   timeout (on timeout the whole group is killed and the gate fails), and returns an [`Outcome`]
//!   with the exit status, stdout (the guest console) and stderr (the kernel log).
//! * [`assert_marker`] and [`scan_kernel_log`] are the verdicts: a gate passes on a marker in the
//!   console output, never on an exit status alone, and independently the kernel log must be free of
//!   `BUG:`, `WARNING:`, `Oops`, Rust panics and kernel panics (other than the expected one when
//!   init exits).
//! * [`ENGINES`] is the matrix of engine options every gate runs in.
//!
//! Paths come from the environment: `UM_LINUX` (default `<workspace>/target/release/linux`) and
//! `UM_ROOTFS` (default `<workspace>/build/rootfs-<host arch>`); `UM_TIMEOUT_SECS` overrides the
//! default per-boot timeout. A missing binary or rootfs fails the gate with instructions; gates are
//! never skipped.
#![forbid(unsafe_code)]

pub mod hostsvc;
pub mod tmux;

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The engine matrix: each gate runs once per entry, with these options on the command line.
///
/// The seccomp engine (`&["seccomp=on"]`) joins when it lands.
pub const ENGINES: &[&[&str]] = &[
    // seccomp filter in the stub, futex handoff
    &["seccomp=on"],
    // ptrace with PTRACE_SYSEMU
    &["seccomp=off"],
    // ptrace with PTRACE_SYSCALL, the call cancelled with -1
    &["seccomp=off", "nosysemu"],
    // ptrace with PTRACE_SYSCALL, getppid substituted for the call
    &["seccomp=off", "nocancel"],
];

/// The network option of every boot that names no `eth0=` of its own (the network rule: host
/// sockets may reach only 127.0.0.0/8 and ::1).
pub const NET_DEFAULT: &str = "eth0=user,restrict=loopback";

/// The Debian tree the gates boot: `$UM_DEBIAN_ROOTFS`, or `build/debian-<Debian arch>`
/// (tools/mkrootfs-debian makes it). Fails the gate, naming the tool, unless every path of
/// `needs` (relative to the tree) exists.
pub fn debian_rootfs(needs: &[&str]) -> PathBuf {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => panic!("no Debian tree for host arch {other}"),
    };
    let path = match std::env::var_os("UM_DEBIAN_ROOTFS") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => workspace_root().join(format!("build/debian-{arch}")),
    };
    for n in needs {
        assert!(
            path.join(n).exists(),
            "the Debian tree {} has no /{n}: make it with `tools/mkrootfs-debian --arch {arch}` \
             (its default packages), or point UM_DEBIAN_ROOTFS at one that has it",
            path.display()
        );
    }
    path.canonicalize().unwrap_or(path)
}

/// The line the kernel logs when init exits; the only kernel panic a gate accepts.
pub const INIT_EXIT_PANIC: &str = "Kernel panic - not syncing: Attempted to kill init! exitcode=";

/// Kernel-log substrings that fail any gate (except [`INIT_EXIT_PANIC`] lines).
pub const BAD_LOG_PATTERNS: &[&str] = &["BUG:", "WARNING:", "Oops", "panicked at", "Kernel panic"];

/// Default time a boot may take before its process group is killed and the gate fails.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long stdout/stderr may stay open after `linux` exited. Longer means something `linux`
/// started (a stub) outlived it and still holds the pipes.
const PIPE_GRACE: Duration = Duration::from_secs(5);

/// The kernel workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = here.parent().unwrap_or(here);
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}

/// The `linux` binary under test: `$UM_LINUX`, or `<workspace>/target/release/linux`.
/// Panics with instructions if it does not exist.
pub fn linux_binary() -> PathBuf {
    let (path, from_env) = match std::env::var_os("UM_LINUX") {
        Some(p) if !p.is_empty() => (PathBuf::from(p), true),
        _ => (workspace_root().join("target/release/linux"), false),
    };
    if !path.is_file() {
        panic!(
            "the linux binary {} does not exist{}.\n\
             Build it with `cargo build --release -p um-bin` (tools/test does this), \
             or point UM_LINUX at it.",
            path.display(),
            if from_env { " (from UM_LINUX)" } else { "" }
        );
    }
    path
}

/// The root filesystem: `$UM_ROOTFS`, or `<workspace>/build/rootfs-<host arch>`.
/// Panics with instructions if it is not a directory with `/bin/busybox`.
pub fn rootfs() -> PathBuf {
    let (path, from_env) = match std::env::var_os("UM_ROOTFS") {
        Some(p) if !p.is_empty() => (PathBuf::from(p), true),
        _ => (
            workspace_root().join(format!("build/rootfs-{}", std::env::consts::ARCH)),
            false,
        ),
    };
    if !path.join("bin/busybox").exists() {
        panic!(
            "the root filesystem {} is missing or has no /bin/busybox{}.\n\
             Make it with `tools/mkrootfs {}` (tools/test does this), or point UM_ROOTFS at one.",
            path.display(),
            if from_env { " (from UM_ROOTFS)" } else { "" },
            path.display()
        );
    }
    path.canonicalize().unwrap_or(path)
}

/// A guest test program installed in the rootfs under /opt/um (built by tools/build-guest).
/// Returns its guest path; panics with instructions if it is not installed.
pub fn guest_program(name: &str) -> String {
    let host = rootfs().join("opt/um").join(name);
    if !host.is_file() {
        let arch = std::env::consts::ARCH;
        panic!(
            "guest program {} is not installed.\n\
             Build and install it with `tools/build-guest {arch} && \
             cp build/guest/{arch}/* {}/opt/um/` (tools/test does this).",
            host.display(),
            rootfs().display()
        );
    }
    format!("/opt/um/{name}")
}

fn timeout_from_env() -> Duration {
    std::env::var("UM_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// A `linux` command line to run. Build with [`Boot::new`] (a normal boot) or [`Boot::raw`]
/// (exactly the given arguments), then [`Boot::run`] or [`Boot::spawn`].
#[derive(Clone, Debug)]
pub struct Boot {
    raw: Option<Vec<String>>,
    engine: Vec<String>,
    init: String,
    init_args: Vec<String>,
    mem: String,
    rootflags: Option<String>,
    extra: Vec<String>,
    stdin: Vec<u8>,
    timeout: Duration,
    quiet: bool,
    /// Another `linux` binary than [`linux_binary`].
    binary: Option<PathBuf>,
    /// A command `linux` is run under (for example `setpriv --reuid=...  --`).
    wrapper: Vec<String>,
}

impl Default for Boot {
    fn default() -> Self {
        Self::new()
    }
}

impl Boot {
    /// `linux mem=256M rootfstype=hostfs rootflags=<rootfs> rw init=/bin/busybox con0=fd:0,fd:1
    /// <engine> <extra> -- <init args>`, with the first engine of [`ENGINES`].
    pub fn new() -> Self {
        Boot {
            raw: None,
            engine: ENGINES[0].iter().map(|s| s.to_string()).collect(),
            init: "/bin/busybox".into(),
            init_args: Vec::new(),
            mem: "256M".into(),
            rootflags: None,
            extra: Vec::new(),
            stdin: Vec::new(),
            timeout: timeout_from_env(),
            quiet: false,
            binary: None,
            wrapper: Vec::new(),
        }
    }

    /// Exactly these arguments (for `--help` and malformed command lines).
    pub fn raw<S: AsRef<str>>(args: &[S]) -> Self {
        Boot {
            raw: Some(args.iter().map(|s| s.as_ref().to_string()).collect()),
            ..Boot::new()
        }
    }

    /// The engine options (one entry of [`ENGINES`]).
    pub fn engine(mut self, engine: &[&str]) -> Self {
        self.engine = engine.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The guest path of init.
    pub fn init(mut self, init: &str) -> Self {
        self.init = init.into();
        self
    }

    /// Arguments passed to init (after `--`).
    pub fn args<S: AsRef<str>>(mut self, args: &[S]) -> Self {
        self.init_args = args.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// `mem=` value (default `256M`).
    pub fn mem(mut self, mem: &str) -> Self {
        self.mem = mem.into();
        self
    }

    /// `rootflags=` value (default: the rootfs from [`rootfs`]).
    pub fn rootflags(mut self, path: &str) -> Self {
        self.rootflags = Some(path.into());
        self
    }

    /// An extra kernel option, placed before `--`.
    pub fn extra(mut self, opt: &str) -> Self {
        self.extra.push(opt.into());
        self
    }

    /// Bytes fed to the guest console (stdin is closed after them). Default: /dev/null.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes.into();
        self
    }

    /// How long the boot may take before its process group is killed and the gate fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Do not print the `um-tests: running:` line (for gates that boot hundreds of times and
    /// name the failing boots themselves).
    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    /// Run this `linux` binary instead of the workspace's.
    pub fn binary(mut self, bin: &Path) -> Self {
        self.binary = Some(bin.to_path_buf());
        self
    }

    /// Run `linux` under this command (its argv up to and including any `--`): for example
    /// `setpriv --reuid=65534 --regid=65534 --clear-groups --`. The timeout, the partial output
    /// on timeout and the process-group cleanup are the same as for a direct boot.
    pub fn wrapper<S: AsRef<str>>(mut self, argv: &[S]) -> Self {
        self.wrapper = argv.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// The argument vector (without the binary).
    pub fn argv(&self) -> Vec<String> {
        if let Some(raw) = &self.raw {
            return raw.clone();
        }
        let root = match &self.rootflags {
            Some(r) => r.clone(),
            None => rootfs().display().to_string(),
        };
        let mut v = vec![
            format!("mem={}", self.mem),
            "rootfstype=hostfs".to_string(),
            format!("rootflags={root}"),
            "rw".to_string(),
            format!("init={}", self.init),
            "con0=fd:0,fd:1".to_string(),
        ];
        v.extend(self.engine.iter().cloned());
        // The network rule of these machines: a guest's host sockets may reach only loopback.
        // eth0 is on by default (eth0=user), so every boot says so unless the gate picks its
        // own eth0= (which must then be restrict=loopback, passt's gateway, or none).
        if !self.extra.iter().any(|e| e.starts_with("eth0=")) {
            v.push(NET_DEFAULT.to_string());
        }
        v.extend(self.extra.iter().cloned());
        if !self.init_args.is_empty() {
            v.push("--".into());
            v.extend(self.init_args.iter().cloned());
        }
        v
    }

    /// Start `linux` in its own process group. The returned handle kills the group when dropped.
    pub fn spawn(&self) -> Running {
        let bin = self.binary.clone().unwrap_or_else(linux_binary);
        let mut argv = self.argv();
        let program = match self.wrapper.split_first() {
            Some((first, rest)) => {
                let mut v: Vec<String> = rest.to_vec();
                v.push(bin.display().to_string());
                v.append(&mut argv);
                argv = v;
                PathBuf::from(first)
            }
            None => bin,
        };
        let cmdline = shell_line(&program, &argv);
        if !self.quiet {
            eprintln!("um-tests: running: {cmdline}");
        }
        let mut cmd = Command::new(&program);
        cmd.args(&argv)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if self.stdin.is_empty() {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .process_group(0);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmdline}: {e}"));
        let pid = child.id() as i32;
        let stdin_thread = child.stdin.take().map(|mut w| {
            let bytes = self.stdin.clone();
            std::thread::spawn(move || {
                // A guest that never reads its console closes the pipe early; that is not an error.
                let _ = w.write_all(&bytes);
            })
        });
        let stdout = Collector::start(child.stdout.take().expect("stdout is piped"));
        let stderr = Collector::start(child.stderr.take().expect("stderr is piped"));
        Running {
            child: Some(child),
            pid,
            cmdline,
            stdout,
            stderr,
            stdin_thread,
            started: Instant::now(),
            timeout: self.timeout,
        }
    }

    /// Run to completion. Fails the gate on timeout, or if stdout/stderr stay open after `linux`
    /// exited (some process it started outlived it).
    pub fn run(&self) -> Outcome {
        let out = self.spawn().wait();
        if out.pipes_held_open {
            kill_group(out.pid, libc::SIGKILL);
            panic!(
                "linux exited but its stdout/stderr stayed open for {PIPE_GRACE:?}: a process it \
                 started outlived it (killed its process group)\n{}",
                out.report()
            );
        }
        out
    }
}

/// Accumulates one output pipe in a thread, so a partial output is available on timeout.
struct Collector {
    buf: Arc<Mutex<Vec<u8>>>,
    thread: Option<JoinHandle<()>>,
}

impl Collector {
    fn start(mut r: impl Read + Send + 'static) -> Self {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let b = Arc::clone(&buf);
        let thread = std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match r.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => b
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        });
        Collector {
            buf,
            thread: Some(thread),
        }
    }

    fn is_done(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Joins the reader if it finished; otherwise leaves it detached.
    fn take(&mut self) -> String {
        if self.is_done() {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        let bytes = self.buf.lock().unwrap_or_else(|e| e.into_inner()).clone();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A running `linux`. Dropping it SIGKILLs its process group if it was not waited for.
pub struct Running {
    child: Option<Child>,
    pid: i32,
    cmdline: String,
    stdout: Collector,
    stderr: Collector,
    stdin_thread: Option<JoinHandle<()>>,
    started: Instant,
    timeout: Duration,
}

impl Running {
    /// The host pid of `linux` (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The command line, shell-quoted, for reports.
    pub fn cmdline(&self) -> &str {
        &self.cmdline
    }

    /// Send a signal to `linux` itself (not its group).
    pub fn signal(&self, sig: i32) {
        send_signal(self.pid, sig);
    }

    /// Whether `linux` has exited (without reaping it).
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => !matches!(c.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// Stdout so far (for polling a marker while it runs).
    pub fn stdout_so_far(&self) -> String {
        let b = self.stdout.buf.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&b).into_owned()
    }

    /// Wait for `linux` to exit, at most the boot's timeout. On timeout the process group is
    /// SIGKILLed and the gate fails with what was seen so far.
    pub fn wait(mut self) -> Outcome {
        let deadline = self.started + self.timeout;
        let mut child = self.child.take().expect("wait called once");
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if Instant::now() >= deadline => {
                    let stubs = children_of(self.pid);
                    kill_group(self.pid, libc::SIGKILL);
                    for p in &stubs {
                        p.kill();
                    }
                    let _ = child.wait();
                    std::thread::sleep(Duration::from_millis(200));
                    let partial = Outcome {
                        cmdline: self.cmdline.clone(),
                        pid: self.pid,
                        status: ExitStatus::from_raw(libc::SIGKILL),
                        stdout: self.stdout.take(),
                        stderr: self.stderr.take(),
                        elapsed: self.started.elapsed(),
                        pipes_held_open: false,
                    };
                    panic!(
                        "TIMEOUT: linux did not exit within {:?}; killed its process group\n{}",
                        self.timeout,
                        partial.report()
                    );
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("waiting for {}: {e}", self.cmdline),
            }
        };
        let elapsed = self.started.elapsed();
        let grace = Instant::now() + PIPE_GRACE;
        while !(self.stdout.is_done() && self.stderr.is_done()) && Instant::now() < grace {
            std::thread::sleep(Duration::from_millis(10));
        }
        let pipes_held_open = !(self.stdout.is_done() && self.stderr.is_done());
        if let Some(t) = self.stdin_thread.take() {
            if t.is_finished() {
                let _ = t.join();
            }
        }
        Outcome {
            cmdline: self.cmdline.clone(),
            pid: self.pid,
            status,
            stdout: self.stdout.take(),
            stderr: self.stderr.take(),
            elapsed,
            pipes_held_open,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            kill_group(self.pid, libc::SIGKILL);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What a finished boot did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The command line, shell-quoted.
    pub cmdline: String,
    /// The host pid `linux` had (also its process group id).
    pub pid: i32,
    pub status: ExitStatus,
    /// The guest console.
    pub stdout: String,
    /// The kernel log.
    pub stderr: String,
    pub elapsed: Duration,
    /// stdout/stderr were still open [`PIPE_GRACE`] after `linux` exited.
    pub pipes_held_open: bool,
}

impl Outcome {
    /// The exit code, or `None` if `linux` was killed by a signal.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The rest of the one console line that starts with `key` and a space, trimmed (gates
    /// whose guest script prints `KEY value` lines). Fails unless exactly one line has it.
    pub fn line_value(&self, key: &str) -> String {
        let p = format!("{key} ");
        let v: Vec<&str> = self
            .stdout
            .lines()
            .map(str::trim_end)
            .filter_map(|l| l.strip_prefix(&p))
            .collect();
        assert_eq!(v.len(), 1, "line `{key} ...` {v:?}: {}", self.report());
        v[0].trim().to_string()
    }

    /// A failure report: the command line, the status, and the tails of stdout and stderr.
    pub fn report(&self) -> String {
        let status = match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => format!("{:?}", self.status),
        };
        format!(
            "---- command: {}\n---- {status} after {:.2?}\n---- stdout (guest console), last 40 lines:\n{}\
             ---- stderr (kernel log), last 60 lines:\n{}---- end",
            self.cmdline,
            self.elapsed,
            tail(&self.stdout, 40),
            tail(&self.stderr, 60),
        )
    }

    /// Scan the kernel log (see [`scan_kernel_log`]), failing with this boot's report.
    /// Returns the `unimplemented syscall` lines.
    pub fn scan_log(&self) -> Vec<String> {
        let bad = bad_log_lines(&self.stderr);
        if !bad.is_empty() {
            panic!(
                "kernel log has {} bad line(s):\n  {}\n{}",
                bad.len(),
                bad.join("\n  "),
                self.report()
            );
        }
        unimplemented_syscalls(&self.stderr)
    }

    /// Fails unless `linux` exited normally with `code`.
    pub fn assert_exit_code(&self, code: i32) {
        if self.code() != Some(code) {
            panic!(
                "expected linux to exit with status {code}\n{}",
                self.report()
            );
        }
    }

    /// Fails unless the kernel log has the init-exit panic line.
    pub fn assert_init_exit_logged(&self) {
        if !self.stderr.lines().any(|l| l.contains(INIT_EXIT_PANIC)) {
            panic!(
                "expected the kernel log to contain `{INIT_EXIT_PANIC}...`\n{}",
                self.report()
            );
        }
    }

    /// The standard verdict of a boot gate: the marker is on the console, the kernel log is clean,
    /// and no syscall was unimplemented. Unimplemented syscalls are reported with the boot.
    pub fn assert_ok(&self, marker: &str) {
        assert_marker(self, marker);
        let unimpl = self.scan_log();
        if !unimpl.is_empty() {
            panic!(
                "the guest hit {} unimplemented syscall(s):\n  {}\n{}",
                unimpl.len(),
                unimpl.join("\n  "),
                self.report()
            );
        }
    }
}

/// Fails unless `marker` appears in the guest console output.
pub fn assert_marker(out: &Outcome, marker: &str) {
    if !out.stdout.contains(marker) {
        panic!(
            "marker `{marker}` not found on the guest console\n{}",
            out.report()
        );
    }
}

/// Kernel-log lines that fail a gate: any line with one of [`BAD_LOG_PATTERNS`], except the
/// expected [`INIT_EXIT_PANIC`] line.
pub fn bad_log_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| !l.contains(INIT_EXIT_PANIC))
        .filter(|l| BAD_LOG_PATTERNS.iter().any(|p| l.contains(p)))
        .map(str::to_string)
        .collect()
}

/// Kernel-log lines naming an unimplemented syscall.
pub fn unimplemented_syscalls(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("unimplemented syscall"))
        .map(str::to_string)
        .collect()
}

/// Scan a kernel log: fails (panics, listing them) on bad lines (see [`bad_log_lines`]); returns
/// the `unimplemented syscall` lines so a gate can assert there are none or print them.
pub fn scan_kernel_log(stderr: &str) -> Vec<String> {
    let bad = bad_log_lines(stderr);
    if !bad.is_empty() {
        panic!(
            "kernel log has {} bad line(s):\n  {}\n---- stderr, last 60 lines:\n{}",
            bad.len(),
            bad.join("\n  "),
            tail(stderr, 60)
        );
    }
    unimplemented_syscalls(stderr)
}

/// Run `f` once per entry of [`ENGINES`], announcing each.
pub fn for_each_engine(mut f: impl FnMut(&[&str])) {
    for engine in ENGINES {
        eprintln!("um-tests: engine: {}", engine.join(" "));
        f(engine);
    }
}

/// Step names in the order a gate's guest script runs them: its `mstep NAME` lines and the
/// `for s in ...; do step "$s"` list (tests/scripts/*-gate.sh), so that a gate can require every
/// step's `STEP NAME ok` line and notice a step that never ran.
pub fn script_steps(script: &str) -> Vec<String> {
    let mut steps = Vec::new();
    for line in script.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("mstep ") {
            if let Some(name) = rest.split_whitespace().next() {
                steps.push(name.to_string());
            }
        } else if let Some(rest) = l.strip_prefix("for s in ") {
            let list = rest.split(';').next().unwrap_or("");
            steps.extend(list.split_whitespace().map(str::to_string));
        }
    }
    steps
}

/// The last `n` lines of `s`, each newline-terminated.
pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = String::new();
    if start > 0 {
        out.push_str(&format!("[... {start} earlier lines]\n"));
    }
    for l in &lines[start..] {
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn shell_line(bin: &Path, argv: &[String]) -> String {
    let quote = |s: &str| {
        if !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=./,:+@%".contains(c))
        {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    std::iter::once(quote(&bin.display().to_string()))
        .chain(argv.iter().map(|a| quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// kill(2). Errors (ESRCH: already gone) are ignored.
pub fn send_signal(pid: i32, sig: i32) {
    if pid <= 0 {
        return; // Never signal "every process" or our own group by accident.
    }
    signal_pid(nix::unistd::Pid::from_raw(pid), sig);
}

/// kill(2) to a whole process group. Errors (ESRCH: group empty) are ignored.
pub fn kill_group(pgid: i32, sig: i32) {
    if pgid <= 1 {
        return;
    }
    signal_pid(nix::unistd::Pid::from_raw(-pgid), sig);
}

/// kill(2) through nix (a negative pid names a process group); errors are ignored.
fn signal_pid(pid: nix::unistd::Pid, sig: i32) {
    let sig = nix::sys::signal::Signal::try_from(sig).ok();
    let _ = nix::sys::signal::kill(pid, sig);
}

/// One host process, identified by pid and start time (so a reused pid is not mistaken for it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostProc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub state: char,
    pub starttime: u64,
    pub comm: String,
}

impl HostProc {
    /// Read /proc/PID/stat; `None` if the process is gone.
    pub fn read(pid: i32) -> Option<HostProc> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(&s)
    }

    /// Still alive (not a zombie) and still the same process.
    pub fn is_alive(&self) -> bool {
        HostProc::read(self.pid).is_some_and(|p| p.starttime == self.starttime && p.state != 'Z')
    }

    /// SIGKILL it if it is still the same process.
    pub fn kill(&self) {
        if self.is_alive() {
            send_signal(self.pid, libc::SIGKILL);
        }
    }
}

/// Parse a /proc/PID/stat line. The comm field may contain spaces and parentheses.
pub fn parse_stat(s: &str) -> Option<HostProc> {
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let pid = s[..open].trim().parse().ok()?;
    let comm = s[open + 1..close].to_string();
    let rest: Vec<&str> = s[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    Some(HostProc {
        pid,
        state: rest.first()?.chars().next()?,
        ppid: rest.get(1)?.parse().ok()?,
        pgrp: rest.get(2)?.parse().ok()?,
        starttime: rest.get(19)?.parse().ok()?,
        comm,
    })
}

/// Every live (non-zombie) host process, from /proc.
pub fn host_processes() -> Vec<HostProc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(HostProc::read)
        .filter(|p| p.state != 'Z')
        .collect()
}

/// Live processes whose parent is `pid` (for `linux`: its stubs).
pub fn children_of(pid: i32) -> Vec<HostProc> {
    host_processes()
        .into_iter()
        .filter(|p| p.ppid == pid)
        .collect()
}

/// Live processes in process group `pgid`.
pub fn in_group(pgid: i32) -> Vec<HostProc> {
    host_processes()
        .into_iter()
        .filter(|p| p.pgrp == pgid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_scan_accepts_init_exit_panic_only() {
        let log = "[    0.000100] Linux version 6.x\n\
                   [    0.100000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000000\n";
        assert!(bad_log_lines(log).is_empty());
        assert!(scan_kernel_log(log).is_empty());
        for bad in [
            "[    0.1] BUG: unable to handle page fault",
            "[    0.1] WARNING: CPU: 0 PID: 1 at mm/mmap.rs:12",
            "[    0.1] Oops: general protection fault",
            "thread 'main' panicked at kernel/src/lib.rs:1:1:",
            "[    0.1] Kernel panic - not syncing: VFS: Unable to mount root fs",
        ] {
            assert_eq!(bad_log_lines(bad), vec![bad.to_string()], "{bad}");
        }
    }

    #[test]
    fn log_scan_collects_unimplemented_syscalls() {
        let log = "[    0.2] unimplemented syscall io_uring_setup (425)\n[    0.3] ok\n";
        assert_eq!(
            scan_kernel_log(log),
            vec!["[    0.2] unimplemented syscall io_uring_setup (425)".to_string()]
        );
    }

    #[test]
    #[should_panic(expected = "bad line")]
    fn log_scan_fails_on_bug() {
        scan_kernel_log("[    0.1] BUG: bad page state\n");
    }

    #[test]
    fn stat_parsing_handles_odd_comm() {
        let s =
            "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10";
        let p = parse_stat(s).expect("parses");
        assert_eq!(p.pid, 1234);
        assert_eq!(p.comm, "a (b) c");
        assert_eq!(p.state, 'S');
        assert_eq!(p.ppid, 1);
        assert_eq!(p.pgrp, 1234);
        assert_eq!(p.starttime, 98765);
    }

    #[test]
    fn own_process_is_visible() {
        let me = HostProc::read(std::process::id() as i32).expect("/proc/self/stat");
        assert!(me.is_alive());
    }

    #[test]
    fn command_line_shape() {
        let b = Boot::new()
            .rootflags("/r")
            .init("/opt/um/hello")
            .mem("512M")
            .extra("loglevel=7")
            .args(&["a", "b c"]);
        assert_eq!(
            b.argv(),
            [
                "mem=512M",
                "rootfstype=hostfs",
                "rootflags=/r",
                "rw",
                "init=/opt/um/hello",
                "con0=fd:0,fd:1",
                "seccomp=on",
                NET_DEFAULT,
                "loglevel=7",
                "--",
                "a",
                "b c"
            ]
        );
        assert_eq!(
            shell_line(Path::new("/x/linux"), &b.argv()[9..]),
            "/x/linux -- a 'b c'"
        );
        // A gate's own eth0= replaces the default.
        let own = Boot::new().extra("eth0=none").argv();
        assert!(own.contains(&"eth0=none".to_string()) && !own.iter().any(|a| a == NET_DEFAULT));
        assert_eq!(Boot::raw(&["--help"]).argv(), ["--help"]);
    }

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "[... 1 earlier lines]\nb\nc\n");
        assert_eq!(tail("a", 5), "a\n");
    }
}
