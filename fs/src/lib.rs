//! `um-fs`: files and programs.
//!
//! The path walk ([`namei`]), hostfs ([`hostfs`]), exec and the ELF loader ([`exec`],
//! [`binfmt_elf`], [`exec_stack`]), and the file syscalls ([`sys`]). The object traits these
//! implement ([`um_kernel::vfs`]) live in the kernel crate.
//!
//! Neighbours: `um-kernel`, `um-mm`, `um-os-linux` and `um-uapi` below; `um-drivers`, `um-ipc`,
//! `um-net` and `um-bin` above (subsystems above add their procfs files through
//! [`procfs::registry`]; sockets are `um-net`'s, and reach the VFS only as `FileOps` and
//! sockfs inodes, so nothing here names them).
#![forbid(unsafe_code)]

pub mod aio;
pub mod binfmt_elf;
pub mod coredump;
pub mod devfs;
pub mod dnotify;
pub mod epoll;
pub mod eventfd;
pub mod exec;
pub mod exec_stack;
pub mod fasync;
pub mod hostfs;
pub mod hostfs_cache;
pub mod hostfs_meta;
pub mod hostfs_xattr;
pub mod hugetlbfs;
pub mod inotify;
pub mod locks;
pub mod memfd;
pub mod mount;
pub mod namei;
pub mod pipe;
pub mod procfs;
pub mod signalfd;
pub mod sys;
pub mod sysfs;
pub mod timerfd;
pub mod tmpfs;
pub mod userfaultfd;
