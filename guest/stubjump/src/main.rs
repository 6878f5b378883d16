//! Guest test `stubjump`: a hostile program that jumps into the stub's code page (the host
//! mapping just above the guest's address space, at the address given as the first argument)
//! and makes a syscall from there that the stub does not make itself (getpid). In the seccomp
//! engine the stub's filter allows only the stub's own calls from that page, so the host kills
//! the whole stub process and the kernel reports the guest process killed by SIGKILL. The
//! parent prints what happened to the child, then forks and waits once more to show that the
//! kernel carries on: `stubjump: child killed by SIGKILL`, `stubjump: kernel alive`,
//! UM-STUBJUMP-OK.
//!
//! Usage: stubjump STUB_BASE_HEX

use umt::{check_eq, say};

/// Offsets of syscall instructions in `page`: x86_64 `syscall` (0f 05), arm64 `svc #0`
/// (d4000001, little-endian).
fn syscall_sites(page: &[u8]) -> Vec<usize> {
    if cfg!(target_arch = "x86_64") {
        (0..page.len() - 1)
            .filter(|&i| page[i] == 0x0f && page[i + 1] == 0x05)
            .collect()
    } else {
        (0..page.len() - 3)
            .step_by(4)
            .filter(|&i| page[i..i + 4] == [0x01, 0x00, 0x00, 0xd4])
            .collect()
    }
}

/// Makes syscall `nr` by jumping to the instruction at `at`. Does not return if the host
/// kills the process; if the call is let through, what follows the instruction in the stub
/// runs, so the child exits right after from a signal handler or never gets here.
fn jump(at: usize, nr: usize) -> ! {
    // SAFETY: deliberately hostile: transfers control into foreign code. The child process
    // is expected to die; nothing in this process relies on what happens after.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!("jmp {at}", at = in(reg) at, in("rax") nr, options(noreturn));
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!("br {at}", at = in(reg) at, in("x8") nr, options(noreturn));
    }
}

fn main() {
    umt::init("stubjump");
    let arg = std::env::args().nth(1).unwrap_or_default();
    let Ok(base) = usize::from_str_radix(arg.trim_start_matches("0x"), 16) else {
        umt::fail(format!("usage: stubjump STUB_BASE_HEX (got {arg:?})"));
    };
    let pid = umt::fork();
    if pid == 0 {
        // The stub code page is mapped readable in this host process (the guest kernel does
        // not know it): find a syscall instruction in it.
        // SAFETY: hostile read of a host mapping outside the guest's address space; if it is
        // not mapped the child dies of SIGSEGV, which the parent reports.
        let page = unsafe { std::slice::from_raw_parts(base as *const u8, 4096) };
        let sites = syscall_sites(page);
        let Some(&site) = sites.first() else {
            umt::fail("no syscall instruction in the stub page");
        };
        let getpid = libc::SYS_getpid as usize;
        jump(base + site, getpid);
    }
    let st = umt::waitpid(pid, 0);
    say(format!("child {}", umt::describe_status(st)));
    // The kernel carries on: another child, an ordinary exit.
    let pid = umt::fork();
    if pid == 0 {
        umt::exit_now(7);
    }
    let st = umt::waitpid(pid, 0);
    check_eq(
        umt::describe_status(st),
        "exited 7".to_string(),
        "second child",
    );
    say("kernel alive");
    say("UM-STUBJUMP-OK");
}
