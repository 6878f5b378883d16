//! `um-kernel`: the core of the kernel.
//!
//! Tasks and processes ([`task`]), the syscall table and dispatcher ([`syscall`]), the engines
//! that run guest code ([`engine`]), the per-thread run loop ([`run`]), the object traits that
//! file systems and drivers implement ([`vfs`]), the kernel log ([`printk`]), guest seccomp filters ([`seccomp`]), and the
//! process, memory, time and signal syscalls ([`sys`]), with guest CPU-time accounting in
//! [`cputime`]. The native architecture is reached only through [`arch`].
//!
//! Neighbours: `um-mm`, the arch crates, `um-os-linux` and `um-uapi` below; `um-fs`,
//! `um-drivers` and `um-bin` above.
#![forbid(unsafe_code)]

pub mod arch;
pub mod cgroupns;
pub mod cpus;
pub mod cputime;
pub mod current;
pub mod devcgroup;
pub mod engine;
pub mod ipcns;
pub mod kernel;
pub mod mntns;
pub mod netns;
pub mod nsfs;
pub mod pidfd;
pub mod pidns;
pub mod printk;
pub mod ptrace;
pub mod run;
pub mod seccomp;
pub mod shootdown;
pub mod signal;
pub mod sys;
pub mod sysarg;
pub mod syscall;
pub mod task;
pub mod timens;
pub mod uaccess;
pub mod userns;
pub mod utsns;
pub mod vfs;
pub mod wait;

pub use um_uapi as uapi;
