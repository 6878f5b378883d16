//! Guest benchmark `perfbench`: times a few kernel-bound operations and one kernel-free control,
//! and prints one machine-readable line per row. Run natively (in a chroot), under proot, under
//! Debian's C User Mode Linux and under this project's kernel by the host runner `tools/perfbench`
//! (see docs/perfbench.md), which interleaves the conditions and takes medians.
//!
//! Rows (each timed with clock_gettime(CLOCK_MONOTONIC) around the whole loop):
//! * `compute`  — a pure arithmetic loop (xorshift + multiply, one dependency chain), no syscalls:
//!   the validator. Its time must not depend on the kernel; the runner refuses to print a table
//!   when it does. One op = one loop iteration.
//! * `syscall`  — raw `syscall(SYS_getppid)` (not cached by libc). One op = one call.
//! * `clock`    — libc's clock_gettime(CLOCK_MONOTONIC), which musl makes through the vDSO when
//!   the kernel maps one (and as a syscall otherwise). One op = one call.
//! * `openat`   — openat(AT_FDCWD, file, O_RDONLY) + close of a small file created first in the
//!   current directory (or /tmp if the cwd is not writable) and removed afterwards. One op = both.
//! * `fault`    — mmap fresh private anonymous memory (up to 4 MiB at a time, MADV_NOHUGEPAGE so
//!   every page is its own fault even where THP is `always`), write one byte to each page once,
//!   munmap. ITERS counts pages (rounded up to whole regions); the line adds `per_page_ns`,
//!   `per_mib_us` and `mb_s` (10^6 bytes per second).
//! * `forkexec` — fork, execve("/bin/true") in the child, waitpid for exit status 0. One op = all.
//!
//! Output: `perfbench row=NAME iters=N total_ns=T per_op_ns=P[ extra=...]`, or on a failure
//! `perfbench row=NAME error=WHAT errno=E` (the other rows still run).
//!
//! Usage: `perfbench ROW [ITERS]`, `perfbench all`, or any list of `ROW`, `ROW=ITERS` and `all`
//! (the runner uses `perfbench compute=N syscall=N ...` to run every row in one guest process).

use std::ffi::CString;
use std::hint::black_box;
use std::io::Write;

/// Pages mapped, touched and unmapped per `fault` cycle at most (4 MiB with 4 KiB pages).
const FAULT_REGION_PAGES: u64 = 1024;

/// The rows in the order `all` runs them, with default iteration counts chosen so that each row
/// takes roughly 0.2-1 s natively on a current x86_64 machine.
const ROWS: [(&str, u64); 6] = [
    ("compute", 100_000_000),
    ("syscall", 2_000_000),
    ("clock", 20_000_000),
    ("openat", 200_000),
    ("fault", 250_000),
    ("forkexec", 500),
];

fn usage() -> ! {
    eprintln!(
        "usage: perfbench ROW [ITERS] | perfbench all | perfbench ROW[=ITERS]...\n\
         rows (default ITERS): {}\n\
         prints `perfbench row=NAME iters=N total_ns=T per_op_ns=P ...` per row",
        ROWS.iter()
            .map(|(n, i)| format!("{n} ({i})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    std::process::exit(2)
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if r != 0 {
        eprintln!("perfbench: clock_gettime(CLOCK_MONOTONIC) failed");
        std::process::exit(1);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A row's result: (ops done, ns taken, extra `key=value` fields) or (what failed, errno).
type RowResult = Result<(u64, u64, String), (String, i32)>;

fn emit(row: &str, res: RowResult) {
    let line = match res {
        Ok((iters, ns, extra)) => {
            let per = ns as f64 / iters.max(1) as f64;
            format!("perfbench row={row} iters={iters} total_ns={ns} per_op_ns={per:.2}{extra}")
        }
        Err((what, e)) => format!("perfbench row={row} error={what} errno={e}"),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// One xorshift64 step followed by a multiply-add: a single serial dependency chain, so the
/// time per iteration is fixed by the CPU, not by the compiler's freedom to vectorise.
fn compute_step(x: u64, i: u64) -> u64 {
    let mut x = x ^ (x << 13);
    x ^= x >> 7;
    x ^= x << 17;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(i)
}

fn row_compute(n: u64) -> RowResult {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15_u64);
    let t0 = now_ns();
    for i in 0..n {
        x = compute_step(x, i);
    }
    black_box(x);
    let ns = now_ns() - t0;
    Ok((n, ns, String::new()))
}

fn row_syscall(n: u64) -> RowResult {
    let t0 = now_ns();
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        black_box(unsafe { libc::syscall(libc::SYS_getppid) });
    }
    Ok((n, now_ns() - t0, String::new()))
}

fn row_clock(n: u64) -> RowResult {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let t0 = now_ns();
    for _ in 0..n {
        // SAFETY: ts is a valid timespec for the call to fill.
        black_box(unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) });
        black_box(&ts);
    }
    Ok((n, now_ns() - t0, String::new()))
}

/// Creates the small file `openat` opens: in the cwd, else in /tmp. Returns its path.
fn make_small_file() -> Result<CString, (String, i32)> {
    // SAFETY: no arguments.
    let pid = unsafe { libc::getpid() };
    let mut last = 0;
    for dir in [".", "/tmp"] {
        let path = CString::new(format!("{dir}/perfbench-{pid}.tmp")).expect("no NUL");
        // SAFETY: path is NUL-terminated; flags and mode are plain integers.
        let fd = unsafe {
            libc::openat(
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        };
        if fd < 0 {
            last = errno();
            continue;
        }
        let data = b"perfbench\n";
        // SAFETY: data is a valid buffer of data.len() bytes; fd is ours.
        let w = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        let e = errno();
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        if w != data.len() as isize {
            return Err(("write".into(), e));
        }
        return Ok(path);
    }
    Err(("create".into(), last))
}

fn row_openat(n: u64) -> RowResult {
    let path = make_small_file()?;
    let t0 = now_ns();
    let mut res = Ok(());
    for _ in 0..n {
        // SAFETY: path is NUL-terminated.
        let fd = unsafe {
            libc::openat(
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            res = Err(("openat".to_string(), errno()));
            break;
        }
        // SAFETY: fd was just opened by us.
        unsafe { libc::close(fd) };
    }
    let ns = now_ns() - t0;
    // SAFETY: path is NUL-terminated.
    unsafe { libc::unlink(path.as_ptr()) };
    res.map(|()| (n, ns, String::new()))
}

/// `(region pages, cycles)` for faulting at least `pages` pages in regions of at most
/// FAULT_REGION_PAGES.
fn fault_plan(pages: u64) -> (u64, u64) {
    let region = pages.clamp(1, FAULT_REGION_PAGES);
    (region, pages.max(1).div_ceil(region))
}

/// The fault row's extra fields for `pages` pages of `page` bytes faulted in `ns`.
fn fault_extra(pages: u64, page: u64, ns: u64) -> String {
    let bytes = (pages * page) as f64;
    let per_page = ns as f64 / pages.max(1) as f64;
    let per_mib_us = ns as f64 / 1e3 / (bytes / (1024.0 * 1024.0));
    let mb_s = bytes / (ns.max(1) as f64 / 1e9) / 1e6;
    format!(" page_size={page} per_page_ns={per_page:.2} per_mib_us={per_mib_us:.2} mb_s={mb_s:.1}")
}

fn row_fault(n: u64) -> RowResult {
    // SAFETY: sysconf has no memory arguments.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = if page > 0 { page as u64 } else { 4096 };
    let (region, cycles) = fault_plan(n);
    let len = (region * page) as usize;
    let t0 = now_ns();
    for _ in 0..cycles {
        // SAFETY: a fresh anonymous private mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(("mmap".into(), errno()));
        }
        // Errors ignored: a kernel without THP (or without madvise) faults 4K pages anyway.
        // SAFETY: p..p+len is our mapping.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        let base = p.cast::<u8>();
        for i in 0..region {
            // SAFETY: i * page < len, inside the writable mapping just made.
            unsafe { std::ptr::write_volatile(base.add((i * page) as usize), 1) };
        }
        // SAFETY: p..p+len is our mapping, nothing refers into it any more.
        if unsafe { libc::munmap(p, len) } != 0 {
            return Err(("munmap".into(), errno()));
        }
    }
    let ns = now_ns() - t0;
    let pages = region * cycles;
    Ok((pages, ns, fault_extra(pages, page, ns)))
}

fn row_forkexec(n: u64) -> RowResult {
    let prog = CString::new("/bin/true").expect("no NUL");
    let arg0 = CString::new("true").expect("no NUL");
    let argv = [arg0.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<libc::c_char>()];
    let t0 = now_ns();
    for _ in 0..n {
        // SAFETY: the child only calls execve and _exit (async-signal-safe).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(("fork".into(), errno()));
        }
        if pid == 0 {
            // SAFETY: prog, argv and envp are NUL-terminated and outlive the call.
            unsafe {
                libc::execve(prog.as_ptr(), argv.as_ptr(), envp.as_ptr());
                libc::_exit(127);
            }
        }
        let mut status = 0;
        // SAFETY: status is a valid int; pid is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r != pid {
            return Err(("waitpid".into(), errno()));
        }
        if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            return Err((format!("child-status-{status:#x}"), 0));
        }
    }
    Ok((n, now_ns() - t0, String::new()))
}

fn run(row: &str, n: u64) {
    let res = match row {
        "compute" => row_compute(n),
        "syscall" => row_syscall(n),
        "clock" => row_clock(n),
        "openat" => row_openat(n),
        "fault" => row_fault(n),
        "forkexec" => row_forkexec(n),
        _ => unreachable!("rows are checked by parse_args"),
    };
    emit(row, res);
}

fn default_iters(row: &str) -> Option<u64> {
    ROWS.iter().find(|(n, _)| *n == row).map(|&(_, i)| i)
}

/// Parses the argument list into (row, iters) pairs in order, or None on a bad argument.
fn parse_args(args: &[String]) -> Option<Vec<(String, u64)>> {
    let mut plan: Vec<(String, u64)> = Vec::new();
    // Whether the last item was a bare ROW that a following number may give ITERS to.
    let mut open = false;
    for a in args {
        if a == "all" {
            plan.extend(ROWS.iter().map(|&(n, i)| (n.to_string(), i)));
            open = false;
        } else if let Ok(n) = a.parse::<u64>() {
            if !open || n == 0 {
                return None;
            }
            plan.last_mut()?.1 = n;
            open = false;
        } else if let Some((row, iters)) = a.split_once('=') {
            let n = iters.parse::<u64>().ok().filter(|&n| n > 0)?;
            default_iters(row)?;
            plan.push((row.to_string(), n));
            open = false;
        } else {
            plan.push((a.clone(), default_iters(a)?));
            open = true;
        }
    }
    (!plan.is_empty()).then_some(plan)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        usage();
    }
    let Some(plan) = parse_args(&args) else {
        usage()
    };
    for (row, n) in plan {
        run(&row, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn args() {
        assert_eq!(
            parse_args(&s(&["syscall", "10"])),
            Some(vec![("syscall".into(), 10)])
        );
        assert_eq!(
            parse_args(&s(&["fault"])),
            Some(vec![("fault".into(), 250_000)])
        );
        assert_eq!(parse_args(&s(&["all"])).map(|p| p.len()), Some(6));
        assert_eq!(
            parse_args(&s(&["compute=5", "openat=7"])),
            Some(vec![("compute".into(), 5), ("openat".into(), 7)])
        );
        assert_eq!(parse_args(&s(&[])), None);
        assert_eq!(parse_args(&s(&["bogus"])), None);
        assert_eq!(parse_args(&s(&["10"])), None);
        assert_eq!(parse_args(&s(&["syscall", "0"])), None);
        assert_eq!(parse_args(&s(&["syscall", "1", "2"])), None);
        assert_eq!(parse_args(&s(&["bogus=3"])), None);
    }

    #[test]
    fn fault_plans() {
        assert_eq!(fault_plan(1), (1, 1));
        assert_eq!(fault_plan(1024), (1024, 1));
        assert_eq!(fault_plan(1025), (1024, 2));
        assert_eq!(fault_plan(0), (1, 1));
        let e = fault_extra(256, 4096, 1_000_000);
        assert!(e.contains("per_page_ns=3906.25"), "{e}");
        assert!(e.contains("per_mib_us=1000.00"), "{e}");
        assert!(e.contains("mb_s=1048.6"), "{e}");
    }

    #[test]
    fn compute_is_deterministic() {
        assert_eq!(compute_step(1, 0), compute_step(1, 0));
        assert_ne!(compute_step(1, 0), compute_step(2, 0));
    }
}
