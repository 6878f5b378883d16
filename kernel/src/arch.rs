//! The one place that picks the native architecture. Everything else in the kernel names
//! `arch::native` (and the re-exports below) and never writes `cfg(target_arch)`.
//!
//! Where the two arches need different code behind one kernel call (syscall restart, leaving
//! a syscall stop), this file gives the arch-neutral function; the x86_64 bodies live here
//! until `um-arch-x86` grows the same names as `um-arch-arm64`.

#[cfg(target_arch = "aarch64")]
pub use um_arch_arm64 as native;
#[cfg(target_arch = "x86_64")]
pub use um_arch_x86 as native;

pub use native::regs::Regs;
pub use native::syscalls;

/// ELF machine of native guest programs.
pub const ELF_MACHINE: u16 = native::ELF_MACHINE;

/// Whether prctl(PR_GET_TSC/PR_SET_TSC) exists: x86 only (arch/x86/kernel/process.c
/// `get_tsc_mode`/`set_tsc_mode`; elsewhere kernel/sys.c answers EINVAL).
pub const HAS_TSC_CTL: bool = cfg!(target_arch = "x86_64");

/// `struct stat` of the native arch for `st` (fstat, newfstatat).
pub fn stat_bytes(st: &crate::vfs::Kstat) -> Vec<u8> {
    use um_uapi::Pod;
    native::abi::Stat::from_statx(&st.to_statx()).as_bytes()
}

/// Rewinds a syscall that returned a restart code so it runs again: pc back over the syscall
/// instruction and the register the result overwrote back to its entry value (x86_64: rax =
/// orig_rax, the number; arm64: x0 = orig_x0, the first argument).
pub fn restart_syscall(regs: &mut Regs) {
    #[cfg(target_arch = "x86_64")]
    {
        regs.set_return(regs.syscall_nr());
        regs.set_pc(regs.pc() - Regs::SYSCALL_INSN_LEN);
    }
    #[cfg(target_arch = "aarch64")]
    regs.restart_syscall();
}

/// The host call that gives a stub thread the guest's TLS value `v` (seccomp engine: the
/// host frame does not carry it). x86_64: `arch_prctl(ARCH_SET_FS, v)`. arm64: tpidr_el0 is
/// set by the stub with `msr` (not a syscall), so none.
pub fn set_tls_call(v: u64) -> Option<(u64, [u64; 6])> {
    #[cfg(target_arch = "x86_64")]
    {
        const ARCH_SET_FS: u64 = 0x1002;
        syscalls::number("arch_prctl").map(|n| (u64::from(n), [ARCH_SET_FS, v, 0, 0, 0, 0]))
    }
    #[cfg(target_arch = "aarch64")]
    {
        let _ = v;
        None
    }
}

/// The host call that makes `rdtsc` fault (`off`) or work again in the calling stub thread:
/// `prctl(PR_SET_TSC, PR_TSC_SIGSEGV or PR_TSC_ENABLE)`, the host's own TIF_NOTSC
/// (arch/x86/kernel/process.c `set_tsc_mode`). None where the host has no such control.
pub fn tsc_call(off: bool) -> Option<(u64, [u64; 6])> {
    if !HAS_TSC_CTL {
        return None;
    }
    // include/uapi/linux/prctl.h: PR_SET_TSC 26, PR_TSC_ENABLE 1, PR_TSC_SIGSEGV 2.
    let mode = if off { 2 } else { 1 };
    syscalls::number("prctl").map(|n| (u64::from(n), [26, mode, 0, 0, 0, 0]))
}

/// Leaves a syscall-entry stop `s` for the stop at which the kernel answers the call, and
/// returns that stop with the guest's registers as they were at entry. `neutral`: `None` under
/// `PTRACE_SYSEMU` (the host skips the call); `Some(nr)` under `PTRACE_SYSCALL`: the call's
/// number is replaced by `nr` (-1 cancels it, getppid substitutes it) and the host runs that.
///
/// x86_64: SYSEMU answers at the entry stop itself; the fallbacks run to the exit stop.
/// arm64: always a pseudo-step to a SIGTRAP stop, where x7 (hidden at syscall stops) is real
/// (`um_arch_arm64::host::syscall_stop`).
pub fn syscall_stop(
    s: um_os_linux::ptrace::Stopped,
    neutral: Option<u64>,
) -> std::io::Result<(um_os_linux::ptrace::Stopped, Regs)> {
    #[cfg(target_arch = "aarch64")]
    {
        native::host::syscall_stop(s, neutral)
    }
    #[cfg(target_arch = "x86_64")]
    {
        use um_os_linux::ptrace::{Event, Resume, Stop};
        let regs = native::host::get_regs(&s)?;
        let Some(nr) = neutral else {
            return Ok((s, regs));
        };
        let mut n = regs;
        n.set_syscall_nr(nr);
        native::host::set_regs(&s, &n)?;
        match s.resume(Resume::Syscall, 0)?.wait()? {
            Event::Stopped(e) if e.stop() == Stop::Syscall => Ok((e, regs)),
            Event::Stopped(e) => Err(std::io::Error::other(format!(
                "no syscall-exit stop: {:?}",
                e.stop()
            ))),
            Event::Exited(c) => Err(std::io::Error::other(format!("stub exited ({c})"))),
            Event::Killed(sig) => Err(std::io::Error::other(format!(
                "stub killed by signal {sig}"
            ))),
        }
    }
}

/// A `struct epoll_event` of the native arch (packed, 12 bytes, on x86_64; naturally aligned,
/// 16 bytes with explicit padding, on arm64).
pub fn epoll_event(events: u32, data: u64) -> native::abi::EpollEvent {
    #[cfg(target_arch = "x86_64")]
    {
        native::abi::EpollEvent { events, data }
    }
    #[cfg(target_arch = "aarch64")]
    {
        native::abi::EpollEvent {
            events,
            pad: 0,
            data,
        }
    }
}
