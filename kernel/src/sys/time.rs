//! Time syscalls (Linux kernel/time/): the guest's clocks are the host's.

use crate::syscall::{SyscallCtx, SyscallTable};
use um_uapi::{Errno, SysResult};

/// Clock ids Linux accepts (CLOCK_REALTIME .. CLOCK_TAI), mapped to host clocks.
fn host_clock(id: u64) -> SysResult<libc::clockid_t> {
    match id as i32 {
        0 => Ok(libc::CLOCK_REALTIME),
        1 => Ok(libc::CLOCK_MONOTONIC),
        2 => Ok(libc::CLOCK_PROCESS_CPUTIME_ID),
        3 => Ok(libc::CLOCK_THREAD_CPUTIME_ID),
        4 => Ok(libc::CLOCK_MONOTONIC_RAW),
        5 => Ok(libc::CLOCK_REALTIME_COARSE),
        6 => Ok(libc::CLOCK_MONOTONIC_COARSE),
        7 => Ok(libc::CLOCK_BOOTTIME),
        8 => Ok(libc::CLOCK_REALTIME_ALARM),
        9 => Ok(libc::CLOCK_BOOTTIME_ALARM),
        11 => Ok(libc::CLOCK_TAI),
        _ => Err(Errno::EINVAL),
    }
}

fn timespec_bytes(s: i64, ns: i64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&s.to_le_bytes());
    b[8..].copy_from_slice(&ns.to_le_bytes());
    b
}

fn clock_gettime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let clk = host_clock(a[0])?;
    let (s, ns) = um_os_linux::host::clock_gettime(clk).map_err(|_| Errno::EINVAL)?;
    c.write_bytes(a[1], &timespec_bytes(s, ns))?;
    Ok(0)
}

fn clock_getres(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    host_clock(a[0])?;
    if a[1] != 0 {
        let coarse = matches!(a[0], 5 | 6);
        c.write_bytes(a[1], &timespec_bytes(0, if coarse { 4_000_000 } else { 1 }))?;
    }
    Ok(0)
}

fn gettimeofday(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (s, ns) =
        um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).map_err(|_| Errno::EINVAL)?;
    if a[0] != 0 {
        c.write_bytes(a[0], &timespec_bytes(s, ns / 1000))?;
    }
    if a[1] != 0 {
        c.write_bytes(a[1], &[0u8; 8])?;
    }
    Ok(0)
}

fn time(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (s, _) =
        um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).map_err(|_| Errno::EINVAL)?;
    if a[0] != 0 {
        c.write_bytes(a[0], &s.to_le_bytes())?;
    }
    Ok(s as u64)
}

fn read_timespec(c: &SyscallCtx<'_>, addr: u64) -> SysResult<std::time::Duration> {
    let b = c.read_bytes(addr, 16)?;
    let s = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
    let ns = i64::from_le_bytes(b[8..].try_into().map_err(|_| Errno::EFAULT)?);
    if s < 0 || !(0..1_000_000_000).contains(&ns) {
        return Err(Errno::EINVAL);
    }
    Ok(std::time::Duration::new(s as u64, ns as u32))
}

fn nanosleep(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let d = read_timespec(c, a[0])?;
    std::thread::sleep(d);
    Ok(0)
}

fn clock_nanosleep(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let clk = host_clock(a[0])?;
    let d = read_timespec(c, a[2])?;
    if a[1] & 1 != 0 {
        // TIMER_ABSTIME
        let (s, ns) = um_os_linux::host::clock_gettime(clk).map_err(|_| Errno::EINVAL)?;
        let now = std::time::Duration::new(s.max(0) as u64, ns as u32);
        if d > now {
            std::thread::sleep(d - now);
        }
    } else {
        std::thread::sleep(d);
    }
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("clock_gettime", clock_gettime);
    t.register("clock_getres", clock_getres);
    t.register("gettimeofday", gettimeofday);
    t.register("time", time);
    t.register("nanosleep", nanosleep);
    t.register("clock_nanosleep", clock_nanosleep);
}
