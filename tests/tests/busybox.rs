//! Gate: Alpine's busybox (a dynamic PIE linked against musl's ld-musl) as init, running a few
//! applets; and `linux` exits with init's exit status.

use um_tests::{Boot, Outcome, for_each_engine};

fn busybox(engine: &[&str], args: &[&str]) -> Outcome {
    Boot::new()
        .engine(engine)
        .init("/bin/busybox")
        .args(args)
        .run()
}

#[test]
fn echo() {
    for_each_engine(|engine| {
        let out = busybox(engine, &["echo", "UM-ECHO-OK"]);
        out.assert_ok("UM-ECHO-OK");
        out.assert_exit_code(0);
        out.assert_init_exit_logged();
    });
}

#[test]
fn cat_os_release() {
    for_each_engine(|engine| {
        let out = busybox(engine, &["cat", "/etc/os-release"]);
        out.assert_ok("Alpine Linux");
        um_tests::assert_marker(&out, "VERSION_ID=3.20.3");
        out.assert_exit_code(0);
    });
}

#[test]
fn ls_root() {
    for_each_engine(|engine| {
        let out = busybox(engine, &["ls", "/"]);
        out.scan_log();
        // The console is a terminal, so busybox colours its output: drop the SGR sequences.
        let plain = strip_sgr(&out.stdout);
        let names: Vec<&str> = plain.split_whitespace().collect();
        for want in [
            "bin", "dev", "etc", "lib", "proc", "sbin", "tmp", "usr", "var",
        ] {
            if !names.contains(&want) {
                panic!("`ls /` does not list `{want}`\n{}", out.report());
            }
        }
        out.assert_exit_code(0);
    });
}

#[test]
fn uname() {
    for_each_engine(|engine| {
        let out = busybox(engine, &["uname", "-a"]);
        out.assert_ok("Linux");
        um_tests::assert_marker(&out, std::env::consts::ARCH);
        out.assert_exit_code(0);
    });
}

/// `unshare -u` and `unshare -i` (UTS and IPC namespaces, issue 23): the inner shell's host
/// name is its own, the outer one is unchanged; the namespace links differ inside.
#[test]
fn unshare_uts_ipc() {
    let script = r#"mount -t proc proc /proc
export h=$(hostname) o=$(readlink /proc/self/ns/uts) i=$(readlink /proc/self/ns/ipc)
unshare -u -i sh -c 'hostname inner; echo in=$(hostname)
[ "$(readlink /proc/self/ns/uts)" != "$o" ] && echo uts-differs
[ "$(readlink /proc/self/ns/ipc)" != "$i" ] && echo ipc-differs'
[ "$(hostname)" = "$h" ] && [ "$h" != inner ] && echo outer-name-kept
[ "$(readlink /proc/self/ns/uts)" = "$o" ] && echo UM-UNSHARE-OK"#;
    for_each_engine(|engine| {
        let out = busybox(engine, &["sh", "-c", script]);
        out.assert_ok("UM-UNSHARE-OK");
        for want in ["in=inner", "uts-differs", "ipc-differs", "outer-name-kept"] {
            um_tests::assert_marker(&out, want);
        }
        out.assert_exit_code(0);
    });
}

#[test]
fn exit_status_is_inits() {
    for_each_engine(|engine| {
        let out = busybox(engine, &["false"]);
        out.scan_log();
        out.assert_exit_code(1);
        out.assert_init_exit_logged();

        let out = busybox(engine, &["sh", "-c", "exit 7"]);
        out.scan_log();
        out.assert_exit_code(7);
        out.assert_init_exit_logged();
    });
}

/// Removes ANSI SGR sequences (`ESC [ ... m`).
fn strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' && it.peek() == Some(&'[') {
            for d in it.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `/proc/PID/syscall` (fs/proc/base.c proc_pid_syscall): a child asleep in busybox `sleep`
/// shows nanosleep's (or clock_nanosleep's) number, six arguments, sp and pc in hex; the file
/// is 0400, so another user cannot open it.
#[test]
fn proc_pid_syscall() {
    let script = "mount -t proc proc /proc; sleep 3 & sleep 0.3; \
                  echo \"SYS $(cat /proc/$!/syscall)\"; \
                  echo \"TSYS $(cat /proc/$!/task/$!/syscall)\"; \
                  su nobody -s /bin/sh -c 'cat /proc/1/syscall' 2>/dev/null || echo NOBODY-DENIED; \
                  kill $!; echo UM-PROCSYS-OK";
    // (nanosleep, clock_nanosleep) of the native arch: arch/x86/entry/syscalls/syscall_64.tbl,
    // include/uapi/asm-generic/unistd.h.
    let sleeps: [u64; 2] = if cfg!(target_arch = "x86_64") {
        [35, 230]
    } else {
        [101, 115]
    };
    for_each_engine(|engine| {
        let out = busybox(engine, &["sh", "-c", script]);
        out.assert_ok("UM-PROCSYS-OK");
        let console = out.stdout.replace('\r', "");
        assert!(console.contains("NOBODY-DENIED\n"), "{}", out.report());
        let sys = console
            .lines()
            .find_map(|l| l.strip_prefix("SYS "))
            .unwrap_or_else(|| panic!("no SYS line\n{}", out.report()));
        let f: Vec<&str> = sys.split(' ').collect();
        assert_eq!(f.len(), 9, "{sys}");
        let nr: u64 = f[0].parse().unwrap_or(u64::MAX);
        assert!(sleeps.contains(&nr), "not asleep in nanosleep: {sys}");
        for w in &f[1..] {
            assert!(
                w.starts_with("0x") && u64::from_str_radix(&w[2..], 16).is_ok(),
                "{sys}"
            );
        }
        assert!(f[7] != "0x0" && f[8] != "0x0", "sp and pc: {sys}");
        assert!(
            console.contains(&format!("TSYS {sys}\n")),
            "the thread's file differs\n{}",
            out.report()
        );
    });
}
