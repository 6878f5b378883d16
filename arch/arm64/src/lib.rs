//! `um-arch-arm64`: the arm64 guest architecture.
//!
//! Register sets ([`regs::Regs`], `struct user_pt_regs` as `NT_PRSTATUS` gives it), the
//! asm-generic syscall number table ([`syscalls`], generated), and the ABI structures that
//! differ from x86_64 ([`abi`]). Everything here compiles and is unit-tested on every host; the
//! code that runs only on an arm64 host (stub code, ptrace glue) comes with the arm64 subarch
//! work.
//!
//! Neighbours: `um-os-linux` and `um-uapi` below; `um-kernel` above (through its `arch` facade).

#![forbid(unsafe_code)]

pub mod abi;
pub mod regs;
pub mod syscalls;

/// ELF `e_machine` of arm64 executables (`EM_AARCH64`).
pub const ELF_MACHINE: u16 = 183;
