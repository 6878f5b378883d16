//! `um-arch-x86`: the x86_64 guest architecture.
//!
//! Register sets ([`regs::Regs`], the layout of `struct user_regs_struct` that `PTRACE_GETREGS`
//! and `NT_PRSTATUS` use), the syscall calling convention and generated number table
//! ([`syscalls`]), the ABI structures that differ from arm64 ([`abi`]), and the stub: the few
//! hundred bytes of position-independent code that run in every stub process ([`stub`]).
//!
//! The pure parts (tables, layouts) compile and are unit-tested on every host; the parts that
//! execute x86 code or make x86 ptrace requests exist only when the host is x86_64, behind
//! `cfg(target_arch)` in this crate only. The kernel reaches the native arch through one facade
//! (`um_kernel::arch`).
//!
//! Neighbours: `um-os-linux` (ptrace, stub spawning) and `um-uapi` below; `um-kernel` above.

pub mod abi;
#[cfg(target_arch = "x86_64")]
pub mod host;
pub mod hwcap;
pub mod module;
pub mod regs;
pub mod signal;
pub mod stub;
pub mod syscalls;
pub mod ucontext;
pub mod vdso;

/// ELF `e_machine` of x86_64 executables (`EM_X86_64`).
pub const ELF_MACHINE: u16 = 62;
