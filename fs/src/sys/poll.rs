//! poll and ppoll (Linux fs/select.c). Readiness comes from each file's `poll`; a caller with
//! nothing ready sleeps in short steps until something is or the timeout passes.

use std::time::{Duration, Instant};
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_uapi::{Errno, SysResult};

const POLLNVAL: u16 = 0x20;
/// How long a waiting poll sleeps between looks.
const STEP: Duration = Duration::from_millis(5);

fn do_poll(c: &mut SyscallCtx<'_>, fds: u64, nfds: u64, timeout: Option<Duration>) -> SysResult {
    if nfds > lock(&c.task.process.rlimits)[7].0 {
        return Err(Errno::EINVAL);
    }
    let mut buf = c.read_bytes(fds, nfds as usize * 8)?;
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let mut ready = 0u64;
        {
            let table = c.task.process.files();
            let files = lock(&table);
            for i in 0..nfds as usize {
                let e = &mut buf[i * 8..i * 8 + 8];
                let fd = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                let events = u16::from_le_bytes([e[4], e[5]]);
                let rev = if fd < 0 {
                    0
                } else {
                    match files.get(fd as u64) {
                        Ok(f) => f.ops.poll(events | 0x8 | 0x10, None),
                        Err(_) => POLLNVAL,
                    }
                };
                e[6..8].copy_from_slice(&rev.to_le_bytes());
                if rev != 0 {
                    ready += 1;
                }
            }
        }
        let expired = deadline.is_some_and(|d| Instant::now() >= d);
        if ready > 0 || expired {
            c.write_bytes(fds, &buf)?;
            return Ok(ready);
        }
        let step = deadline
            .map(|d| d.saturating_duration_since(Instant::now()).min(STEP))
            .unwrap_or(STEP);
        std::thread::sleep(step);
    }
}

fn poll(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let ms = a[2] as i32;
    let timeout = if ms < 0 {
        None
    } else {
        Some(Duration::from_millis(ms as u64))
    };
    do_poll(c, a[0], a[1], timeout)
}

fn ppoll(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let timeout = if a[2] == 0 {
        None
    } else {
        let b = c.read_bytes(a[2], 16)?;
        let s = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
        let ns = i64::from_le_bytes(b[8..].try_into().map_err(|_| Errno::EFAULT)?);
        if s < 0 || !(0..1_000_000_000).contains(&ns) {
            return Err(Errno::EINVAL);
        }
        Some(Duration::new(s as u64, ns as u32))
    };
    do_poll(c, a[0], a[1], timeout)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("poll", poll);
    t.register("ppoll", ppoll);
}
