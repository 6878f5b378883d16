//! `hello`: the first guest program. It checks a handful of things the kernel's exec path must get
//! right (argv, the auxiliary vector, getpid, both output fds, the heap) and prints
//! `UM-HELLO-OK argc=N` followed by one `argv[i]=...` line per argument, only if every check passed.
//! On a failed check it prints `UM-HELLO-FAIL: <what>` and exits 1.
//!
//! Built twice by tools/build-guest: as a static-pie (`hello`, ET_DYN without interpreter) and as a
//! static non-PIE executable (`hello-static-nopie`, ET_EXEC), so both loader paths are exercised.
//! It runs natively on the host too, which makes its output a differential baseline.

use std::io::Write;
use std::process::ExitCode;

/// Collects failed checks so that one run reports all of them.
struct Checks {
    failed: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, what: impl Into<String>) {
        if !ok {
            self.failed.push(what.into());
        }
    }
}

fn auxval(key: libc::c_ulong) -> libc::c_ulong {
    // SAFETY: getauxval only reads the auxiliary vector that the C runtime saved at startup.
    unsafe { libc::getauxval(key) }
}

fn main() -> ExitCode {
    let mut c = Checks { failed: Vec::new() };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();

    // argv, through std (which got it from the C runtime's argc/argv).
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let argc = args.len();
    c.check(argc >= 1, "argc >= 1 (argv[0] present)");
    c.check(
        args.first().is_some_and(|a| !a.is_empty()),
        "argv[0] is non-empty",
    );
    c.check(
        std::env::args_os().count() == argc,
        "std::env::args is stable across calls",
    );

    // The auxiliary vector the ELF loader built.
    let pagesz = auxval(libc::AT_PAGESZ);
    let random = auxval(libc::AT_RANDOM);
    let phdr = auxval(libc::AT_PHDR);
    let entry = auxval(libc::AT_ENTRY);
    let _ = writeln!(out, "hello: AT_PAGESZ={pagesz}");
    let _ = writeln!(
        out,
        "hello: AT_RANDOM={}",
        if random != 0 { "non-null" } else { "null" }
    );
    c.check(
        pagesz >= 4096 && pagesz.is_power_of_two(),
        format!("AT_PAGESZ is a power of two >= 4096 (got {pagesz})"),
    );
    c.check(random != 0, "AT_RANDOM is non-null");
    if random != 0 {
        // SAFETY: AT_RANDOM points at 16 bytes the kernel placed on the initial stack; the pointer
        // is only dereferenced when non-null, and read without creating a Rust reference to it.
        let bytes: [u8; 16] = unsafe { std::ptr::read_unaligned(random as *const [u8; 16]) };
        let _ = bytes; // Readable is what matters; the content is random (it may even be zero).
    }
    c.check(phdr != 0, "AT_PHDR is non-null");
    c.check(entry != 0, "AT_ENTRY is non-null");
    let main_addr = main as fn() -> ExitCode as usize as libc::c_ulong;
    let _ = writeln!(
        out,
        "hello: AT_ENTRY={}",
        if entry != 0 && entry.abs_diff(main_addr) < (64 << 20) {
            "near main"
        } else {
            "far from main"
        }
    );
    c.check(
        entry.abs_diff(main_addr) < (64 << 20),
        "AT_ENTRY lies in this executable (within 64 MiB of main)",
    );

    // getpid.
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    c.check(pid > 0, format!("getpid() > 0 (got {pid})"));
    let _ = writeln!(out, "hello: getpid>0 {}", pid > 0);

    // The heap: a large allocation (musl's malloc uses mmap for it) and many small ones (brk or
    // mmap), written and read back.
    let big: Vec<u8> = (0..(1usize << 20)).map(|i| (i % 251) as u8).collect();
    let sum: u64 = big.iter().map(|&b| u64::from(b)).sum();
    let want: u64 = (0..(1u64 << 20)).map(|i| i % 251).sum();
    c.check(sum == want, "1 MiB heap buffer reads back what was written");
    drop(big);
    let small: Vec<Box<u64>> = (0..1000u64).map(Box::new).collect();
    c.check(
        small.iter().map(|b| **b).sum::<u64>() == 999 * 1000 / 2,
        "1000 small heap boxes read back",
    );

    // stderr is a separate fd (2) and must work too.
    let err_ok = writeln!(std::io::stderr(), "hello: stderr ok").is_ok();
    c.check(err_ok, "write to stderr succeeds");

    if c.failed.is_empty() {
        let _ = writeln!(out, "UM-HELLO-OK argc={argc}");
        for (i, a) in args.iter().enumerate() {
            let _ = writeln!(out, "argv[{i}]={a}");
        }
        if out.flush().is_err() {
            return ExitCode::from(1);
        }
        ExitCode::SUCCESS
    } else {
        for f in &c.failed {
            let _ = writeln!(out, "UM-HELLO-FAIL: {f}");
            let _ = writeln!(std::io::stderr(), "UM-HELLO-FAIL: {f}");
        }
        let _ = out.flush();
        ExitCode::from(1)
    }
}
