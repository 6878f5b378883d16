//! `um-uapi`: the Linux user ABI as Rust types, for both guest architectures.
//!
//! What lives here is exactly what a guest program sees of the kernel: error numbers
//! ([`Errno`]), flag words (as `bitflags`), constants, and `#[repr(C)]` structures whose sizes and
//! field offsets are pinned with `static_assertions` against the C definitions for x86_64 and
//! arm64. Nothing here talks to the host or knows about guest memory; the kernel crates turn these
//! types into bytes with [`AsBytes`]/[`FromBytes`] when copying to and from the guest.
//!
//! Neighbours: every other crate depends on this one; it depends on nothing of ours.
#![forbid(unsafe_code)]

#[rustfmt::skip]
mod errno;
pub mod abi;

pub use abi::*;
pub use errno::Errno;

/// The result type of every syscall handler.
pub type SysResult<T = u64> = Result<T, Errno>;
