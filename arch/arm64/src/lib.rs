//! `um-arch-arm64`: the arm64 guest architecture.
//!
//! Register sets ([`regs::Regs`]: `struct user_pt_regs` as `NT_PRSTATUS` gives it, plus the
//! syscall number, `orig_x0` and tpidr_el0 that arm64 keeps elsewhere), the asm-generic syscall
//! number table ([`syscalls`], generated), the ABI structures that differ from x86_64
//! ([`abi`]), the stub layout ([`stub`]), the `rt_sigframe` and the FP image ([`signal`]).
//! These compile and are unit-tested on every host. The stub's machine code and the ptrace glue
//! ([`host`]) exist only when the host is aarch64, behind `cfg(target_arch)` in this crate only;
//! `unsafe` is allowed there alone. The kernel reaches the native arch through one facade
//! (`um_kernel::arch`), with the same names as `um-arch-x86`.
//!
//! Neighbours: `um-os-linux` and `um-uapi` below; `um-kernel` above.

#![cfg_attr(not(target_arch = "aarch64"), forbid(unsafe_code))]

pub mod abi;
#[cfg(target_arch = "aarch64")]
pub mod host;
pub mod hwcap;
pub mod module;
pub mod regs;
pub mod signal;
pub mod stub;
pub mod syscalls;
pub mod ucontext;
pub mod vdso;

/// ELF `e_machine` of arm64 executables (`EM_AARCH64`).
pub const ELF_MACHINE: u16 = 183;
