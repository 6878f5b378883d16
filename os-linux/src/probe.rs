//! Host feature probing: what this host can do, found out once at boot.
//!
//! Each probe returns a plain value that boot logs as one line. Probes that need the
//! architecture's registers (`PTRACE_SYSEMU`, syscall cancellation) live in the arch crates and
//! use [`crate::ptrace`].

use std::io;

/// The host page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let r = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if r > 0 { r as usize } else { 4096 }
}

/// The number of bits of user virtual address space on this host, derived from where the host
/// put our stack (the top of user VA): 47 on x86_64 with 4-level paging, 39 or 48 on arm64.
/// Android tags the top byte of some pointers; a stack address is untagged, but mask it anyway.
pub fn user_va_bits() -> u32 {
    let probe = 0u8;
    let addr = (&probe as *const u8 as u64) & 0x00ff_ffff_ffff_ffff;
    64 - addr.leading_zeros()
}

/// Total host RAM plus swap, in bytes: the most `mem=` can ever be backed by.
pub fn host_memory() -> u64 {
    // SAFETY: sysinfo fills the struct we pass.
    unsafe {
        let mut si: libc::sysinfo = std::mem::zeroed();
        if libc::sysinfo(&mut si) == 0 {
            (si.totalram as u64 + si.totalswap as u64) * si.mem_unit as u64
        } else {
            u64::MAX
        }
    }
}

/// Whether seccomp filters with `SECCOMP_RET_TRAP` can be installed here.
pub fn seccomp_trap_available() -> io::Result<bool> {
    const SECCOMP_GET_ACTION_AVAIL: libc::c_ulong = 2;
    let action: u32 = 0x0003_0000; // SECCOMP_RET_TRAP
    // SAFETY: seccomp(GET_ACTION_AVAIL) reads one u32 through the pointer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => Ok(false),
        _ => Err(e),
    }
}

/// The host kernel release (`uname -r`).
pub fn host_release() -> String {
    // SAFETY: uname fills the struct.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::from("unknown");
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn va_bits_are_plausible() {
        let b = super::user_va_bits();
        assert!((39..=57).contains(&b), "{b}");
        assert!(super::page_size() >= 4096);
    }
}
