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

/// The host's own `AT_HWCAP` and `AT_HWCAP2`: what the host kernel tells its programs about the
/// CPU. Boot masks them per arch to what a guest may use. Read from `/proc/self/auxv`, because
/// glibc's `getauxval(AT_HWCAP)` on x86_64 returns its own `HWCAP_X86_64` instead of the
/// kernel's value; `getauxval` is the fallback when `/proc` is not mounted.
pub fn hwcaps() -> (u64, u64) {
    if let Ok(b) = std::fs::read("/proc/self/auxv")
        && let Some(caps) = hwcaps_from_auxv(&b)
    {
        return caps;
    }
    // SAFETY: getauxval has no preconditions; it returns 0 for a missing entry.
    unsafe {
        (
            libc::getauxval(libc::AT_HWCAP) as u64,
            libc::getauxval(libc::AT_HWCAP2) as u64,
        )
    }
}

/// `AT_HWCAP` and `AT_HWCAP2` from the bytes of an auxiliary vector (native-endian `u64` pairs,
/// `AT_NULL` last); `None` if it has no `AT_HWCAP`.
fn hwcaps_from_auxv(b: &[u8]) -> Option<(u64, u64)> {
    const AT_HWCAP: u64 = 16;
    const AT_HWCAP2: u64 = 26;
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
    let (mut hwcap, mut hwcap2) = (None, 0);
    for pair in b.chunks_exact(16) {
        match word(&pair[..8]) {
            0 => break,
            AT_HWCAP => hwcap = Some(word(&pair[8..])),
            AT_HWCAP2 => hwcap2 = word(&pair[8..]),
            _ => {}
        }
    }
    hwcap.map(|h| (h, hwcap2))
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

/// The host kernel's special mappings in process `pid` (`[vvar]`, `[vvar_vclock]`, `[vdso]`, ...
/// from `/proc/PID/maps`): (start, end, name) in address order.
pub fn special_mappings(pid: libc::pid_t) -> io::Result<Vec<(u64, u64, String)>> {
    let path = if pid == 0 {
        "/proc/self/maps".to_string()
    } else {
        format!("/proc/{pid}/maps")
    };
    let maps = std::fs::read_to_string(path)?;
    let mut v = Vec::new();
    for line in maps.lines() {
        let name = line.split_whitespace().nth(5).unwrap_or("");
        if !(name.starts_with('[') && name.ends_with(']')) || name == "[stack]" || name == "[heap]"
        {
            continue;
        }
        let range = line.split_whitespace().next().unwrap_or("");
        let (a, b) = range.split_once('-').unwrap_or(("", ""));
        if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
            v.push((a, b, name.to_string()));
        }
    }
    Ok(v)
}

/// A copy of this process's vDSO image (the host kernel maps the same image into every
/// process, so its symbol offsets hold in the stubs too), if it has one.
pub fn own_vdso() -> Option<Vec<u8>> {
    let (start, end, _) = special_mappings(0)
        .ok()?
        .into_iter()
        .find(|(_, _, n)| n == "[vdso]")?;
    let len = usize::try_from(end - start).ok()?;
    // SAFETY: /proc/self/maps says [start, end) is this process's vDSO mapping, which the host
    // kernel maps readable and never unmaps; the bytes are copied out at once.
    let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, len) }.to_vec();
    Some(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn own_vdso_is_an_elf_image() {
        let v = super::own_vdso().expect("a host vDSO");
        assert_eq!(&v[..4], b"\x7fELF");
        let m = super::special_mappings(0).unwrap();
        assert!(m.iter().any(|(_, _, n)| n == "[vdso]"), "{m:?}");
    }

    #[test]
    fn va_bits_are_plausible() {
        let b = super::user_va_bits();
        assert!((39..=57).contains(&b), "{b}");
        assert!(super::page_size() >= 4096);
    }

    #[test]
    fn auxv_parsing() {
        let mut b = Vec::new();
        for (k, v) in [(6u64, 4096u64), (16, 0x178b_fbff), (26, 2), (0, 0), (16, 1)] {
            b.extend_from_slice(&k.to_ne_bytes());
            b.extend_from_slice(&v.to_ne_bytes());
        }
        assert_eq!(super::hwcaps_from_auxv(&b), Some((0x178b_fbff, 2)));
        assert_eq!(super::hwcaps_from_auxv(&b[..16]), None);
        assert_eq!(super::hwcaps_from_auxv(&b[..32]), Some((0x178b_fbff, 0)));
    }

    #[test]
    fn hwcaps_are_the_hosts() {
        let (h, _h2) = super::hwcaps();
        // x86_64: CPUID.1:EDX always has fpu (bit 0); arm64: HWCAP_FP (bit 0).
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_ne!(h & 1, 0, "{h:#x}");
        }
    }
}
