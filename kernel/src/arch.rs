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

/// The vDSO image built from both arch crates' code (Linux `arch/*/kernel/vdso.c`).
pub mod vdso;

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
///
/// The third value says whether the call was one of the native ABI. x86_64: an `int $0x80`
/// (i386 ABI) call of the 64-bit guest is not (`AUDIT_ARCH_I386` from the host's
/// `PTRACE_GET_SYSCALL_INFO`, asked where the registers do not show the `syscall`
/// instruction, and always in the fallbacks, where the host runs the neutral call in the
/// caller's ABI: there it is i386 getppid, 64, since the native number 110 is i386 `iopl`).
/// The caller treats it as this kernel has no IA32 emulation. arm64: a 64-bit process has
/// only `svc #0` of AArch64.
pub fn syscall_stop(
    s: um_os_linux::ptrace::Stopped,
    neutral: Option<u64>,
) -> std::io::Result<(um_os_linux::ptrace::Stopped, Regs, bool)> {
    #[cfg(target_arch = "aarch64")]
    {
        native::host::syscall_stop(s, neutral).map(|(s, r)| (s, r, true))
    }
    #[cfg(target_arch = "x86_64")]
    {
        use um_os_linux::ptrace::{Event, Resume, Stop};
        use um_uapi::abi::ptrace::AUDIT_ARCH_I386;
        let mut regs = native::host::get_regs(&s)?;
        let ask = neutral.is_some() || !native::host::entered_by_syscall(&regs);
        let native_abi = !ask || s.syscall_arch()? != Some(AUDIT_ARCH_I386);
        let neutral = match neutral {
            // arch/x86/entry/syscalls/syscall_32.tbl: 64 getppid.
            Some(n) if !native_abi && n != u64::MAX => Some(64),
            n => n,
        };
        let entry = regs;
        if !native_abi {
            native::host::back_over_int80(&mut regs);
        }
        let Some(nr) = neutral else {
            return Ok((s, regs, native_abi));
        };
        let mut n = entry;
        n.set_syscall_nr(nr);
        native::host::set_regs(&s, &n)?;
        match s.resume(Resume::Syscall, 0)?.wait()? {
            Event::Stopped(e) if e.stop() == Stop::Syscall => Ok((e, regs, native_abi)),
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

/// The registers of a guest call of a foreign ABI (x86_64's `int $0x80`), trapped by the
/// seccomp engine, as the #GP this kernel answers it with leaves them
/// (`um_arch_x86::host::back_over_int80`). arm64 has no such call: nothing to change.
pub fn foreign_syscall_fault(regs: &mut Regs) {
    #[cfg(target_arch = "x86_64")]
    native::host::back_over_int80(regs);
    #[cfg(target_arch = "aarch64")]
    let _ = regs;
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

/// `AUDIT_ARCH_*` of the native arch (`ptrace_syscall_info.arch`).
pub const AUDIT_ARCH: u32 = if cfg!(target_arch = "x86_64") {
    um_uapi::abi::ptrace::AUDIT_ARCH_X86_64
} else {
    um_uapi::abi::ptrace::AUDIT_ARCH_AARCH64
};

/// The registers a tracer sees at a syscall stop (`exit`: the exit stop). x86_64: rax is
/// -ENOSYS at the entry stop (arch/x86/entry/common.c sets it before the trace hook). arm64:
/// x7 says which stop it is, 0 entry and 1 exit (arch/arm64/kernel/ptrace.c `report_syscall`),
/// and gets its own value back afterwards ([`ptrace_syscall_restore`]).
pub fn ptrace_syscall_regs(regs: &mut Regs, exit: bool) {
    #[cfg(target_arch = "x86_64")]
    if !exit {
        regs.set_return(um_uapi::Errno::ENOSYS.to_return());
    }
    #[cfg(target_arch = "aarch64")]
    {
        regs.w[7] = u64::from(exit);
    }
}

/// The registers a tracer sees at a PTRACE_EVENT_SECCOMP stop: x86_64 rax is -ENOSYS, as at
/// any point of syscall entry (the entry code stores it before the hooks run), so a tracer
/// that cancels the call without setting a result leaves ENOSYS; arm64 keeps x0.
pub fn seccomp_stop_regs(regs: &mut Regs) {
    #[cfg(target_arch = "x86_64")]
    regs.set_return(um_uapi::Errno::ENOSYS.to_return());
    #[cfg(target_arch = "aarch64")]
    let _ = regs;
}

/// After a syscall stop: what the stop's view changed that the tracer may not keep (arm64's x7).
pub fn ptrace_syscall_restore(regs: &mut Regs, saved: &Regs) {
    #[cfg(target_arch = "aarch64")]
    {
        regs.w[7] = saved.w[7];
    }
    #[cfg(target_arch = "x86_64")]
    let _ = (regs, saved);
}

/// The `NT_PRSTATUS` regset (x86_64 `user_regs_struct`, arm64 `user_pt_regs`).
pub fn prstatus(regs: &Regs) -> Vec<u8> {
    #[cfg(target_arch = "x86_64")]
    {
        regs.to_bytes().to_vec()
    }
    #[cfg(target_arch = "aarch64")]
    {
        regs.prstatus().to_vec()
    }
}

/// The x86 EFLAGS bits a tracer may change (arch/x86/kernel/ptrace.c `FLAG_MASK`: CF PF AF
/// ZF SF TF DF OF RF AC).
#[cfg(target_arch = "x86_64")]
const PTRACE_FLAG_MASK: u64 =
    0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800 | 0x1_0000 | 0x4_0000;

/// x86 EFLAGS.TF, the trap flag.
#[cfg(target_arch = "x86_64")]
const X86_EFLAGS_TF: u64 = 0x100;

/// Whether PTRACE_SINGLESTEP exists here. x86_64: by the trap flag in the saved context
/// (arch/x86/kernel/step.c `enable_single_step`): the guest runs natively, so the host CPU
/// traps after one instruction and the host's SIGTRAP (si_code TRAP_TRACE) reaches the
/// engine like any fault, in the seccomp engine through the stub's handler, in the ptrace
/// engines as a host signal stop. arm64: not offered (EIO); MDSCR_EL1.SS is not reachable
/// from a host user process without host ptrace of the stub thread.
pub const HAS_SINGLE_STEP: bool = cfg!(target_arch = "x86_64");

/// Sets (`on`) or clears the single-step trap in `regs`; returns whether it was set before
/// (x86_64 TF; elsewhere nothing, false).
pub fn set_single_step(regs: &mut Regs, on: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use native::regs::idx;
        let was = regs.w[idx::EFLAGS] & X86_EFLAGS_TF != 0;
        if on {
            regs.w[idx::EFLAGS] |= X86_EFLAGS_TF;
        } else {
            regs.w[idx::EFLAGS] &= !X86_EFLAGS_TF;
        }
        was
    }
    #[cfg(target_arch = "aarch64")]
    {
        let _ = (regs, on);
        false
    }
}

/// Sets the registers from a tracer's `NT_PRSTATUS` bytes (a prefix of the regset: the rest
/// keeps its value), with Linux's checks: x86_64 `putreg` keeps the segment selectors, lets
/// only [`PTRACE_FLAG_MASK`] of EFLAGS change and refuses an fs/gs base beyond the user
/// address space (EIO); arm64 `valid_user_regs` filters pstate (EINVAL).
pub fn set_prstatus(regs: &mut Regs, b: &[u8]) -> Result<(), um_uapi::Errno> {
    let mut full = prstatus(regs);
    let n = b.len().min(full.len());
    full[..n].copy_from_slice(&b[..n]);
    #[cfg(target_arch = "x86_64")]
    {
        use native::regs::{REGS_SIZE, idx};
        let arr: [u8; REGS_SIZE] = full.try_into().map_err(|_| um_uapi::Errno::EINVAL)?;
        let mut new = Regs::from_bytes(&arr);
        for i in [idx::CS, idx::SS, idx::DS, idx::ES, idx::FS, idx::GS] {
            new.w[i] = regs.w[i];
        }
        new.w[idx::EFLAGS] =
            (regs.w[idx::EFLAGS] & !PTRACE_FLAG_MASK) | (new.w[idx::EFLAGS] & PTRACE_FLAG_MASK);
        const TASK_SIZE_MAX: u64 = (1 << 47) - 4096;
        if new.w[idx::FS_BASE] >= TASK_SIZE_MAX || new.w[idx::GS_BASE] >= TASK_SIZE_MAX {
            return Err(um_uapi::Errno::EIO);
        }
        *regs = new;
    }
    #[cfg(target_arch = "aarch64")]
    {
        use native::regs::{PSTATE, REGS_SIZE};
        let arr: [u8; REGS_SIZE] = full.try_into().map_err(|_| um_uapi::Errno::EINVAL)?;
        let mut new = *regs;
        new.load_prstatus(&arr);
        new.w[PSTATE] =
            native::regs::pstate::filter_user(new.w[PSTATE]).ok_or(um_uapi::Errno::EINVAL)?;
        *regs = new;
    }
    Ok(())
}

/// A tracer's FP regset from the FP image (`GuestThread::get_fpregs`: the XSAVE buffer with a
/// signal frame's `sw_reserved` description, or the 512-byte FXSAVE area). x86_64
/// (arch/x86/kernel/fpu/regset.c): `NT_PRFPREG` is the FXSAVE area (`xfpregs_get`);
/// `NT_X86_XSTATE` the whole XSAVE buffer in ptrace's layout, XCR0 in the first
/// `sw_reserved` word and the rest of it zero (`xstateregs_get`, asm/user.h
/// `USER_XSTATE_XCR0_WORD`), ENODEV without XSAVE (the regset is not active). arm64:
/// `NT_FPREGSET` (= 2) is the image itself (`user_fpsimd_state`).
pub fn fp_regset(img: &[u8], note: u64) -> Result<Vec<u8>, um_uapi::Errno> {
    use um_uapi::Errno;
    use um_uapi::abi::ptrace::{NT_PRFPREG, NT_X86_XSTATE};
    #[cfg(target_arch = "x86_64")]
    {
        const LEGACY: usize = 512;
        match note {
            NT_PRFPREG => img.get(..LEGACY).map(<[u8]>::to_vec).ok_or(Errno::EIO),
            NT_X86_XSTATE if img.len() >= LEGACY + 64 => {
                let mut b = img.to_vec();
                let xcr0 = b[472..480].to_vec();
                b[464..LEGACY].fill(0);
                b[464..472].copy_from_slice(&xcr0);
                Ok(b)
            }
            NT_X86_XSTATE => Err(Errno::ENODEV),
            _ => Err(Errno::EINVAL),
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let _ = NT_X86_XSTATE;
        match note {
            NT_PRFPREG => Ok(img.to_vec()),
            _ => Err(Errno::EINVAL),
        }
    }
}

/// Writes a tracer's FP regset `b` into the FP image, with Linux's checks. x86_64
/// `xfpregs_set`: a reserved MXCSR bit is EINVAL, and an XSAVE image then has x87 and SSE
/// marked in use (`xfeatures |= XFEATURE_MASK_FPSSE`). `xstateregs_set`: only the whole
/// buffer (EFAULT otherwise), a standard-format header whose features are within XCR0
/// (EINVAL otherwise); the image keeps its frame description in `sw_reserved`.
pub fn set_fp_regset(img: &mut [u8], note: u64, b: &[u8]) -> Result<(), um_uapi::Errno> {
    use um_uapi::Errno;
    use um_uapi::abi::ptrace::{NT_PRFPREG, NT_X86_XSTATE};
    #[cfg(target_arch = "x86_64")]
    {
        const LEGACY: usize = 512;
        let q = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        let mxcsr_ok = |b: &[u8]| {
            let mask = match q(img, 24) >> 32 {
                0 => 0xffbf,
                m => m,
            };
            (q(b, 24) & 0xffff_ffff) & !mask == 0
        };
        match note {
            NT_PRFPREG => {
                if img.len() < LEGACY {
                    return Err(Errno::EIO);
                }
                let mut new = img[..LEGACY].to_vec();
                let n = b.len().min(LEGACY);
                new[..n].copy_from_slice(&b[..n]);
                if !mxcsr_ok(&new) {
                    return Err(Errno::EINVAL);
                }
                new[464..LEGACY].copy_from_slice(&img[464..LEGACY]);
                img[..LEGACY].copy_from_slice(&new);
                if img.len() >= LEGACY + 64 {
                    let xf = q(img, LEGACY) | 3;
                    img[LEGACY..LEGACY + 8].copy_from_slice(&xf.to_le_bytes());
                }
                Ok(())
            }
            NT_X86_XSTATE if img.len() >= LEGACY + 64 => {
                if b.len() != img.len() {
                    return Err(Errno::EFAULT);
                }
                let xcr0 = q(img, 472);
                let header_ok = q(b, LEGACY) & !xcr0 == 0
                    && q(b, LEGACY + 8) == 0
                    && b[LEGACY + 16..LEGACY + 64].iter().all(|&x| x == 0);
                if !header_ok || !mxcsr_ok(b) {
                    return Err(Errno::EINVAL);
                }
                let desc = img[464..LEGACY].to_vec();
                img.copy_from_slice(b);
                img[464..LEGACY].copy_from_slice(&desc);
                Ok(())
            }
            NT_X86_XSTATE => Err(Errno::ENODEV),
            _ => Err(Errno::EINVAL),
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let _ = NT_X86_XSTATE;
        match note {
            NT_PRFPREG if b.len() == img.len() => {
                img.copy_from_slice(b);
                Ok(())
            }
            NT_PRFPREG => Err(Errno::EINVAL),
            _ => Err(Errno::EINVAL),
        }
    }
}
