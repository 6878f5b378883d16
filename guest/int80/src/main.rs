//! Guest test `int80` (x86_64): a 64-bit program makes an i386 system call with `int $0x80`
//! (eax 20, i386 getpid). This kernel has no IA32 emulation, so, as Linux built without
//! CONFIG_IA32_EMULATION (or booted with `ia32_emulation=0`), the instruction takes a #GP:
//! SIGSEGV with si_code SI_KERNEL (128), si_addr 0, the saved instruction pointer at the
//! `int` and rax still 20 (arch/x86/kernel/traps.c `exc_general_protection`). Before, the
//! ptrace engines ran it as the 64-bit call with the same number (issue 24 item 6: trinity's
//! main process died of it). A child makes the call; its handler prints what it saw; the
//! parent prints how the child ended and that the kernel carries on:
//! `int80: SIGSEGV code 128 addr 0 at the instruction, rax 20`, `int80: child exited 0`,
//! UM-INT80-OK. Natively on a host with IA32 emulation the call runs instead
//! (`int80: ran as i386 getpid`), so the gate checks the guest's lines, not a diff.
//! On arm64 (no such instruction) it prints `int80: not x86_64` and the marker.

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The address of the `int $0x80` instruction, for the handler.
    pub static INSN: AtomicU64 = AtomicU64::new(0);

    fn out(s: &str) {
        // SAFETY: write(2) of a valid buffer; async-signal-safe.
        unsafe { libc::write(1, s.as_ptr().cast(), s.len()) };
    }

    extern "C" fn on_segv(_sig: i32, si: *mut libc::siginfo_t, uc: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo and ucontext to an SA_SIGINFO handler.
        let (code, addr, rip, rax) = unsafe {
            let uc = &*(uc as *const libc::ucontext_t);
            (
                (*si).si_code,
                (*si).si_addr() as u64,
                uc.uc_mcontext.gregs[libc::REG_RIP as usize] as u64,
                uc.uc_mcontext.gregs[libc::REG_RAX as usize] as u64,
            )
        };
        let at = if rip == INSN.load(Ordering::Relaxed) {
            "at the instruction".to_string()
        } else {
            format!("at {rip:#x}, not the instruction")
        };
        out(&format!(
            "int80: SIGSEGV code {code} addr {addr} {at}, rax {rax}\n"
        ));
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(0) };
    }

    pub fn child() -> ! {
        // SAFETY: installs an SA_SIGINFO handler with a zeroed, then filled, sigaction.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_segv as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut());
        }
        let mut addr: u64 = 0;
        // SAFETY: publish the address of the `int` first, then run it; i386 getpid (20) has
        // no arguments and changes nothing, natively or here.
        let ret: u64;
        unsafe {
            core::arch::asm!("lea {a}, [rip + 3f]", a = out(reg) addr);
            INSN.store(addr, Ordering::Relaxed);
            core::arch::asm!("3:", "int 0x80", inout("rax") 20u64 => ret, out("rcx") _, out("r11") _);
        }
        let _ = addr;
        // SAFETY: plain getpid.
        let pid = unsafe { libc::getpid() } as u64;
        if ret == pid {
            out("int80: ran as i386 getpid\n");
        } else {
            out(&format!("int80: returned {ret:#x}\n"));
        }
        // SAFETY: _exit.
        unsafe { libc::_exit(0) }
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: fork in a single-threaded program; the child only runs x86::child.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            x86::child();
        }
        let mut st = 0;
        // SAFETY: waitpid on our child with a valid status pointer.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        if libc::WIFEXITED(st) {
            println!("int80: child exited {}", libc::WEXITSTATUS(st));
        } else if libc::WIFSIGNALED(st) {
            println!("int80: child killed by signal {}", libc::WTERMSIG(st));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    println!("int80: not x86_64");
    println!("UM-INT80-OK");
}
