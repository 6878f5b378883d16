//! `um-os-linux`: every call this kernel makes to its host, behind a small safe API.
//!
//! Like Linux `arch/um/os-Linux`, this is the only place that knows it runs on Linux as a process:
//! physical memory ([`physmem::PhysMem`], a memfd mapped once), the stub processes that hold guest
//! address spaces, ptrace, seccomp, futexes, host signals and host files, and the probes that find
//! out what the host can do. Callers above see safe functions and owned handles; each `unsafe`
//! block here carries a `// SAFETY:` comment.
//!
//! Neighbours: nothing of ours below (only libc); the arch crates, `mm` and `kernel` above.

pub mod blockio;
pub mod helper;
pub mod host;
pub mod hostdir;
pub mod physmem;
pub mod probe;
pub mod ptrace;
pub mod sandbox;
pub mod shared;
pub mod stub;
pub mod stub_layout;
pub mod term;
pub mod xattr;
