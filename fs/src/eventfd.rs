//! eventfd (Linux `fs/eventfd.c`): a 64-bit counter as a file. Reads take the count (or one,
//! in `EFD_SEMAPHORE` mode) and wait while it is zero; writes add and wait while the sum would
//! pass `0xffff_ffff_ffff_fffe`. Readable while the count is non-zero, writable while one
//! more can be added. The syscalls are in `sys/eventfd.rs`.

use crate::pipe::{anon_kstat, next_ino};
use std::any::Any;
use std::sync::Mutex;
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, Kstat};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue};
use um_uapi::abi::poll::{POLLERR, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use um_uapi::{Errno, SysResult};

/// `EFD_SEMAPHORE`.
pub const EFD_SEMAPHORE: u32 = 1;
/// The largest count (`ULLONG_MAX - 1`).
pub const EVENTFD_MAX: u64 = u64::MAX - 1;

/// An eventfd.
pub struct EventFd {
    count: Mutex<u64>,
    semaphore: bool,
    wq: WaitQueue,
    ino: u64,
}

impl EventFd {
    /// A new eventfd with `init` as its count.
    pub fn new(init: u64, semaphore: bool) -> EventFd {
        EventFd {
            count: Mutex::new(init),
            semaphore,
            wq: WaitQueue::new(),
            ino: next_ino(),
        }
    }

    /// Takes what a read returns, if the count is non-zero.
    fn take(&self) -> Option<u64> {
        let mut c = lock(&self.count);
        if *c == 0 {
            return None;
        }
        let v = if self.semaphore { 1 } else { *c };
        *c -= v;
        Some(v)
    }

    /// The eventfd behind an open file, if it is one (`eventfd_ctx_fileget`).
    pub fn of(f: &um_kernel::vfs::OpenFile) -> Option<&EventFd> {
        f.ops.as_any().and_then(|a| a.downcast_ref::<EventFd>())
    }

    /// `eventfd_signal`: adds `n` (up to `ULLONG_MAX`, never blocking) and wakes readers and
    /// pollers; native AIO's `IOCB_FLAG_RESFD` completions ([`crate::aio`]).
    pub fn signal(&self, n: u64) {
        {
            let mut c = lock(&self.count);
            *c += n.min(u64::MAX - *c);
        }
        self.wq.wake_all();
    }

    /// Adds `v` if the count stays at most [`EVENTFD_MAX`].
    fn add(&self, v: u64) -> bool {
        let mut c = lock(&self.count);
        if EVENTFD_MAX - *c < v {
            return false;
        }
        *c += v;
        true
    }
}

impl FileOps for EventFd {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let v = io.wait(&[&self.wq], || self.take())?;
        buf[..8].copy_from_slice(&v.to_le_bytes());
        self.wq.wake_all();
        Ok(8)
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        if data.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let v = u64::from_le_bytes(data[..8].try_into().map_err(|_| Errno::EINVAL)?);
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        io.wait(&[&self.wq], || self.add(v).then_some(()))?;
        if v != 0 {
            self.wq.wake_all();
        }
        Ok(8)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }

    /// eventfd_poll.
    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.wq);
        }
        let c = *lock(&self.count);
        let mut m = 0;
        if c > 0 {
            m |= POLLIN | POLLRDNORM;
        }
        if c == u64::MAX {
            m |= POLLERR;
        }
        if c < EVENTFD_MAX {
            m |= POLLOUT | POLLWRNORM;
        }
        m & (events | POLLERR)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_and_semaphore() {
        let e = EventFd::new(3, false);
        assert_eq!(e.take(), Some(3));
        assert_eq!(e.take(), None);
        assert!(e.add(EVENTFD_MAX));
        assert!(!e.add(1));
        assert_eq!(e.poll(POLLIN | POLLOUT, None), POLLIN);
        let s = EventFd::new(2, true);
        assert_eq!(s.take(), Some(1));
        assert_eq!(s.take(), Some(1));
        assert_eq!(s.take(), None);
        assert_eq!(s.poll(POLLIN | POLLOUT, None), POLLOUT);
    }
}
