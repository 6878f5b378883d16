//! What the arm64 vDSO holds (arch/arm64/kernel/vdso/vdso.lds.S, sigreturn.S): the symbols,
//! their version and their machine code. `um_kernel::arch::vdso` wraps this in an ELF shared object that
//! exec maps into every guest (AT_SYSINFO_EHDR).
//!
//! Each time function is either a jump to the same function of the *host's* vDSO ([`forward`]:
//! stubs keep the host's vDSO and vvar pages, above the guest's TASK_SIZE, and guest time is
//! host time, so the host's code answers at native speed, reading CNTVCT_EL0), or, where that is
//! not available, `svc #0`, which is what Linux's own vDSO does when the counter cannot be read
//! from user mode (`clock_gettime_fallback` in arch/arm64/include/asm/vdso/gettimeofday.h);
//! either way a call the host's vDSO makes itself traps to this kernel like any guest syscall. `__kernel_rt_sigreturn` is the return
//! trampoline for handlers installed without `SA_RESTORER` (glibc installs them that way on
//! arm64); its two instructions are exactly Linux's, because libgcc's unwinder recognises a
//! signal frame by them (`aarch64_fallback_frame_state` in libgcc/config/aarch64/linux-unwind.h),
//! and a `nop` precedes it as in sigreturn.S.

use crate::syscalls::nr;

/// The version node of every symbol (`VERSION { LINUX_2.6.39 { global: ... } }`).
pub const VERSION: &str = "LINUX_2.6.39";
/// `DT_SONAME`.
pub const SONAME: &str = "linux-vdso.so.1";
/// The symbol a handler without `SA_RESTORER` returns to (Linux `VDSO_SYMBOL(vdso, sigtramp)`).
pub const SIGRETURN: Option<&str> = Some("__kernel_rt_sigreturn");

/// `movz x8, #n` (the syscall number register).
const fn movz_x8(n: u32) -> u32 {
    0xd280_0008 | (n << 5)
}
/// `svc #0`.
pub const SVC_0: u32 = 0xd400_0001;
/// `ret`.
pub const RET: u32 = 0xd65f_03c0;
/// `nop`.
pub const NOP: u32 = 0xd503_201f;

/// One exported function: its names, its code (the syscall version) and where in the code it
/// is entered (after a lead-in that belongs to it, like the `nop` before the sigreturn
/// trampoline), and the host vDSO symbol it may forward to instead.
pub struct Function {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub code: Vec<u8>,
    pub entry: usize,
    pub host: Option<&'static str>,
}

/// `ldr x16, #8` (load the 64-bit literal two words ahead).
const LDR_X16_LIT8: u32 = 0x5800_0050;
/// `br x16` (x16 may land on the host function's `bti c`).
const BR_X16: u32 = 0xd61f_0200;

/// A function body that jumps to `target` (a host vDSO function): `ldr x16, 1f; br x16;
/// 1: .quad target` (x16 is the intra-procedure-call scratch register, free at a call).
pub fn forward(target: u64) -> Vec<u8> {
    let mut v = words(&[LDR_X16_LIT8, BR_X16]);
    v.extend_from_slice(&target.to_le_bytes());
    v
}

fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn syscall_fn(name: &'static str, n: u32) -> Function {
    Function {
        name,
        aliases: &[],
        code: words(&[movz_x8(n), SVC_0, RET]),
        entry: 0,
        host: Some(name),
    }
}

/// The functions in the order they are laid out (no aliases on arm64).
pub fn functions() -> Vec<Function> {
    vec![
        Function {
            name: "__kernel_rt_sigreturn",
            aliases: &[],
            // rt_sigreturn does not return: no `ret`.
            code: words(&[NOP, movz_x8(nr::RT_SIGRETURN), SVC_0]),
            entry: 4,
            host: None,
        },
        syscall_fn("__kernel_gettimeofday", nr::GETTIMEOFDAY),
        syscall_fn("__kernel_clock_gettime", nr::CLOCK_GETTIME),
        syscall_fn("__kernel_clock_getres", nr::CLOCK_GETRES),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_the_assembler() {
        // `mov x8, #139` / `svc #0` as GNU as emits them (sigreturn.S).
        assert_eq!(movz_x8(139), 0xd280_1168);
        assert_eq!(SVC_0, 0xd400_0001);
        assert_eq!(movz_x8(113), 0xd280_0e28);
        let fs = functions();
        let sr = &fs[0];
        assert_eq!(Some(sr.name), SIGRETURN);
        assert_eq!(&sr.code[..4], &NOP.to_le_bytes());
        assert_eq!(
            &sr.code[sr.entry..sr.entry + 4],
            &0xd280_1168u32.to_le_bytes()
        );
        assert_eq!(&sr.code[sr.entry + 4..], &SVC_0.to_le_bytes());
        // `ldr x16, #8; br x16` as GNU as emits them.
        let f = forward(0x1122_3344_5566_7788);
        assert_eq!(&f[..8], &[0x50, 0x00, 0x00, 0x58, 0x00, 0x02, 0x1f, 0xd6]);
        assert_eq!(&f[8..], &0x1122_3344_5566_7788u64.to_le_bytes());
    }
}
