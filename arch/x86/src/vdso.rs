//! What the x86_64 vDSO holds (arch/x86/entry/vdso/vdso.lds.S): the symbols, their version and
//! their machine code. `um_kernel::arch::vdso` wraps this in an ELF shared object that exec maps into
//! every guest (AT_SYSINFO_EHDR).
//!
//! Each function is either a jump to the same function of the *host's* vDSO ([`forward`]:
//! stubs keep the host's vDSO and vvar pages, above the guest's TASK_SIZE, and guest time is
//! host time, so the host's code answers at native speed), or, where that is not available,
//! `syscall`, which is what Linux's own vDSO does when the clocksource is not readable from user
//! mode (`clock_gettime_fallback` in arch/x86/include/asm/vdso/gettimeofday.h); either way a
//! call the host's vDSO makes itself traps to this kernel like any guest syscall. `getcpu`
//! always makes the syscall (the guest's CPU numbering is this kernel's). x86_64 has no
//! sigreturn trampoline in its vDSO
//! (64-bit handlers always come with `SA_RESTORER`). As in Linux, each `__vdso_*` symbol also
//! has its plain name as a weak alias.

use crate::syscalls::nr;

/// The version node of every symbol (`VERSION { LINUX_2.6 { global: ... } }`).
pub const VERSION: &str = "LINUX_2.6";
/// `DT_SONAME`.
pub const SONAME: &str = "linux-vdso.so.1";
/// No sigreturn trampoline on x86_64.
pub const SIGRETURN: Option<&str> = None;

/// One exported function: its names, its code (the syscall version) and where in the code it
/// is entered, and the host vDSO symbol it may forward to instead.
pub struct Function {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub code: Vec<u8>,
    pub entry: usize,
    pub host: Option<&'static str>,
}

/// A function body that jumps to `target` (a host vDSO function): `movabs rax, target; jmp rax`
/// (rax is the return-value register, free at a call).
pub fn forward(target: u64) -> Vec<u8> {
    let mut v = vec![0x48, 0xb8];
    v.extend_from_slice(&target.to_le_bytes());
    v.extend_from_slice(&[0xff, 0xe0]);
    v
}

/// `mov eax, n; syscall; ret`.
fn syscall_code(n: u32) -> Vec<u8> {
    let mut v = vec![0xb8];
    v.extend_from_slice(&n.to_le_bytes());
    v.extend_from_slice(&[0x0f, 0x05, 0xc3]);
    v
}

fn syscall_fn(
    name: &'static str,
    aliases: &'static [&'static str],
    n: u32,
    host: Option<&'static str>,
) -> Function {
    Function {
        name,
        aliases,
        code: syscall_code(n),
        entry: 0,
        host,
    }
}

/// The functions in the order they are laid out.
pub fn functions() -> Vec<Function> {
    vec![
        syscall_fn(
            "__vdso_clock_gettime",
            &["clock_gettime"],
            nr::CLOCK_GETTIME,
            Some("__vdso_clock_gettime"),
        ),
        syscall_fn(
            "__vdso_gettimeofday",
            &["gettimeofday"],
            nr::GETTIMEOFDAY,
            Some("__vdso_gettimeofday"),
        ),
        syscall_fn("__vdso_time", &["time"], nr::TIME, Some("__vdso_time")),
        syscall_fn("__vdso_getcpu", &["getcpu"], nr::GETCPU, None),
        syscall_fn(
            "__vdso_clock_getres",
            &["clock_getres"],
            nr::CLOCK_GETRES,
            Some("__vdso_clock_getres"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_the_assembler() {
        // `mov $228, %eax; syscall; ret` as GNU as emits it.
        assert_eq!(
            syscall_code(228),
            [0xb8, 0xe4, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3]
        );
        assert_eq!((nr::TIME, nr::GETCPU, nr::CLOCK_GETRES), (201, 309, 229));
        // `movabs $0x1122334455667788, %rax; jmp *%rax`
        assert_eq!(
            forward(0x1122_3344_5566_7788),
            [
                0x48, 0xb8, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xff, 0xe0
            ]
        );
    }
}
