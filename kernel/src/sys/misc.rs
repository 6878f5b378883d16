//! Small syscalls without a better home: getrandom, arch_prctl (x86_64 TLS), robust lists
//! and rseq registration.

use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use um_uapi::{Errno, SysResult};

fn getrandom(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (buf, len, flags): (u64, u64, u64) = args(&a)?;
    let len = len.min(33_554_431);
    // GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE
    if flags & !0x7 != 0 {
        return Err(Errno::EINVAL);
    }
    let mut b = vec![0u8; len as usize];
    um_os_linux::host::getrandom(&mut b).map_err(|_| Errno::EIO)?;
    c.write_bytes(buf, &b)?;
    Ok(len)
}

const ARCH_SET_GS: u64 = 0x1001;
const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const ARCH_GET_GS: u64 = 0x1004;

/// x86_64 only (arm64 has no such syscall, so the name does not register there).
fn arch_prctl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (code, addr): (u64, u64) = args(&a)?;
    match code {
        ARCH_SET_FS => {
            c.regs().set_tls(addr);
            Ok(0)
        }
        ARCH_GET_FS => {
            let v = c.regs().tls();
            c.write_u64(addr, v)?;
            Ok(0)
        }
        ARCH_SET_GS | ARCH_GET_GS => Err(Errno::EPERM),
        _ => Err(Errno::EINVAL),
    }
}

/// sysinfo(2) (kernel/sys.c `do_sysinfo`): uptime, memory from the frame allocator, and the
/// number of threads.
fn sysinfo(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use um_uapi::abi::pod::Pod;
    let k = c.kernel;
    let page = k.frames.granule().size();
    let info = um_uapi::Sysinfo {
        // ktime_get_boottime_ts64 + timens_add_boottime, rounded up as do_sysinfo does.
        uptime: {
            let (s, ns) = crate::timens::uptime_of(&c.task.process);
            s + i64::from(ns != 0)
        },
        totalram: k.frames.total_frames() as u64 * page,
        freeram: k.frames.free_frames() as u64 * page,
        procs: k.tasks.all().len().min(u16::MAX as usize) as u16,
        mem_unit: 1,
        ..Default::default()
    };
    let (uinfo,): (u64,) = args(&a)?;
    c.write_bytes(uinfo, &info.as_bytes())?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("getrandom", getrandom);
    t.register("arch_prctl", arch_prctl);
    t.register("sysinfo", sysinfo);
}
