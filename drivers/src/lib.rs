//! `um-drivers`: devices. For now the console ([`console`]); TTYs with a line discipline,
//! the mem devices and block devices come with later work.
//!
//! Neighbours: `um-kernel` (the `FileOps` trait) and `um-os-linux` (host fds) below; `um-bin`
//! above.
#![forbid(unsafe_code)]

pub mod console;
