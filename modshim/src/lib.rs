//! `um-modshim`: the module-call shim, the one crate besides `um-os-linux` and the arch crates
//! that may use `unsafe` (DESIGN.md): everything that touches loadable-module code or memory
//! directly is here, so the kernel crates stay `#![forbid(unsafe_code)]`.
//!
//! - [`mem`]: module memory in the kernel's host process (an arena near the kernel's text,
//!   per-region protections, init regions freed after init, the arm64 instruction cache).
//! - [`call`]: calls into module code through function pointers (`init_module`,
//!   `cleanup_module`, a character device's file operations, a `/proc` entry's `show`), each
//!   with a thread-local frame saying which module runs and where its user copies go.
//! - [`api`]: the kernel API modules call (`#[no_mangle] extern "C"`, the functions of
//!   `include/module/um_module.h`) and the table of exported kernel symbols.
//!
//! The kernel side (`um-fs`'s `module`) implements [`KernelApi`] in safe Rust and installs it
//! once with [`install`]; the API functions convert raw pointers to safe values and call it.
//!
//! Neighbours: `um-uapi` below; `um-fs` (the module registry, the syscalls, the files modules
//! make) above; `um-module` (the loader, which produces the bytes placed here) beside.

pub mod api;
pub mod call;
pub mod mem;

pub use api::{alloc_cstring, kernel_symbol, kernel_symbols, outstanding, read_kernel_cstr};
pub use call::{Fops, Opaque, Owner, ProcShow, UserMem, call_exit, call_init, current_owner};
pub use mem::{ModuleMem, Prot, RegionReq};

use std::sync::OnceLock;
use um_uapi::Errno;

/// What module code may ask of the kernel, in safe terms. `owner` is the module whose code
/// made the call.
pub trait KernelApi: Send + Sync {
    /// `printk`: one log line at Linux level `level` (0..7; anything else: the default).
    fn printk(&self, owner: Option<Owner>, level: i32, msg: &[u8]);
    /// `copy_to_user` to a guest address of the current task; false on a fault.
    fn copy_to_user(&self, to: u64, data: &[u8]) -> bool;
    /// `copy_from_user` from a guest address of the current task; false on a fault.
    fn copy_from_user(&self, from: u64, buf: &mut [u8]) -> bool;
    /// Registers a character device `/dev/<name>`: a handle (>= 0).
    fn register_chrdev(
        &self,
        owner: Owner,
        name: &[u8],
        fops: Fops,
        data: Opaque,
    ) -> Result<i32, Errno>;
    /// Removes a character device registered by `owner`.
    fn unregister_chrdev(&self, owner: Owner, handle: i32);
    /// Creates `/proc/<name>`: a handle (>= 0).
    fn proc_create(
        &self,
        owner: Owner,
        name: &[u8],
        show: ProcShow,
        data: Opaque,
    ) -> Result<i32, Errno>;
    /// Removes a `/proc` entry created by `owner`.
    fn proc_remove(&self, owner: Owner, handle: i32);
    /// The contents of `/lib/firmware/<name>` in the guest root.
    fn request_firmware(&self, owner: Owner, name: &[u8]) -> Result<Vec<u8>, Errno>;
}

static API: OnceLock<Box<dyn KernelApi>> = OnceLock::new();

/// Installs the kernel's side of the API (once; later calls are ignored and return false).
pub fn install(api: Box<dyn KernelApi>) -> bool {
    API.set(api).is_ok()
}

/// The installed kernel API.
pub(crate) fn api() -> Option<&'static dyn KernelApi> {
    API.get().map(|b| &**b)
}
