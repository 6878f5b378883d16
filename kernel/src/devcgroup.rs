//! The device access check of cgroup v2 (Linux `security/device_cgroup.c`
//! `devcgroup_check_permission`, `devcgroup_inode_permission`, `devcgroup_inode_mknod`).
//!
//! Opening a character or block device node, and mknod of one, ask whether the caller's
//! cgroup lets it use that device. The answer comes from the BPF device programs attached to
//! the cgroup (`um-bpf`, above this crate and the VFS), which registers [`set_check`] at boot;
//! the file layer calls [`check`] and stays ignorant of BPF. Without a registered check (a
//! kernel without `CONFIG_CGROUP_BPF`) every access is allowed.

use std::sync::OnceLock;
use um_uapi::abi::bpf::{
    BPF_DEVCG_ACC_MKNOD, BPF_DEVCG_ACC_READ, BPF_DEVCG_ACC_WRITE, BPF_DEVCG_DEV_BLOCK,
    BPF_DEVCG_DEV_CHAR,
};
use um_uapi::{Errno, SysResult};

/// A device access (`access` bits `BPF_DEVCG_ACC_*`) of a block or character device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevAccess {
    /// `BPF_DEVCG_DEV_BLOCK` or `BPF_DEVCG_DEV_CHAR`.
    pub kind: u32,
    pub major: u32,
    pub minor: u32,
    pub access: u32,
}

/// The check: whether the process (global pid) may make the access.
pub type CheckFn = fn(pid: u32, access: DevAccess) -> bool;

static CHECK: OnceLock<CheckFn> = OnceLock::new();

/// Installs the check (`um_bpf::init`); the first call wins.
pub fn set_check(f: CheckFn) {
    let _ = CHECK.set(f);
}

/// `devcgroup_check_permission`: `EPERM` if the caller's cgroup forbids the access.
pub fn check(pid: u32, access: DevAccess) -> SysResult<()> {
    match CHECK.get() {
        Some(f) if !f(pid, access) => Err(Errno::EPERM),
        _ => Ok(()),
    }
}

/// `devcgroup_inode_permission`: opening device `rdev` (major, minor) of file type `block`
/// or character with `may_read`/`may_write`; nothing to ask for neither.
pub fn check_open(
    pid: u32,
    block: bool,
    major: u32,
    minor: u32,
    read: bool,
    write: bool,
) -> SysResult<()> {
    let access =
        if read { BPF_DEVCG_ACC_READ } else { 0 } | if write { BPF_DEVCG_ACC_WRITE } else { 0 };
    if access == 0 {
        return Ok(());
    }
    check(
        pid,
        DevAccess {
            kind: kind(block),
            major,
            minor,
            access,
        },
    )
}

/// `devcgroup_inode_mknod`: making a device node; the whiteout (character 0:0) is exempt.
pub fn check_mknod(pid: u32, block: bool, major: u32, minor: u32) -> SysResult<()> {
    if !block && major == 0 && minor == 0 {
        return Ok(());
    }
    check(
        pid,
        DevAccess {
            kind: kind(block),
            major,
            minor,
            access: BPF_DEVCG_ACC_MKNOD,
        },
    )
}

fn kind(block: bool) -> u32 {
    if block {
        BPF_DEVCG_DEV_BLOCK
    } else {
        BPF_DEVCG_DEV_CHAR
    }
}
