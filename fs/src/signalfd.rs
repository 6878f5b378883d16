//! signalfd (Linux `fs/signalfd.c`): reading dequeues the reader's pending signals that are
//! in the descriptor's mask, as 128-byte `struct signalfd_siginfo` records.
//!
//! As in Linux, "the reader" is the calling thread: its own queue first, then its process's
//! shared queue (`dequeue_signal`). Readiness is asked for the current task
//! (`um_kernel::current`), or the creator when there is none. A signal does not wake a wait
//! queue, it kicks the target thread's waker, which is what a thread polling or reading
//! sleeps on. The syscalls are in `sys/eventfd.rs`.

use crate::pipe::{anon_kstat, next_ino};
use std::any::Any;
use std::sync::{Arc, Mutex, Weak};
use um_kernel::signal::{
    SIGBUS, SIGCHLD, SIGFPE, SIGILL, SIGIO, SIGSEGV, SIGSYS, SIGTRAP, UNBLOCKABLE,
};
use um_kernel::task::{Task, lock};
use um_kernel::vfs::{FileOps, Kstat};
use um_kernel::wait::{IoCtx, PollTable};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::poll::{POLLIN, POLLRDNORM};
use um_uapi::abi::signal::Siginfo;
use um_uapi::{Errno, SysResult};

um_uapi::pod_struct! {
    /// `struct signalfd_siginfo`: 128 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SignalfdSiginfo {
        pub ssi_signo: u32,
        pub ssi_errno: i32,
        pub ssi_code: i32,
        pub ssi_pid: u32,
        pub ssi_uid: u32,
        pub ssi_fd: i32,
        pub ssi_tid: u32,
        pub ssi_band: u32,
        pub ssi_overrun: u32,
        pub ssi_trapno: u32,
        pub ssi_status: i32,
        pub ssi_int: i32,
        pub ssi_ptr: u64,
        pub ssi_utime: u64,
        pub ssi_stime: u64,
        pub ssi_addr: u64,
        pub ssi_addr_lsb: u16,
        pub pad2: u16,
        pub ssi_syscall: i32,
        pub ssi_call_addr: u64,
        pub ssi_arch: u32,
        pub pad: [u8; 28],
    }
}
const _: () = assert!(core::mem::size_of::<SignalfdSiginfo>() == 128);
const _: () = assert!(core::mem::offset_of!(SignalfdSiginfo, ssi_ptr) == 48);
const _: () = assert!(core::mem::offset_of!(SignalfdSiginfo, ssi_addr_lsb) == 80);
const _: () = assert!(core::mem::offset_of!(SignalfdSiginfo, ssi_call_addr) == 88);

impl SignalfdSiginfo {
    /// `signalfd_copyinfo`: the union members of `info` that its layout
    /// (`siginfo_layout`) has.
    pub fn from_siginfo(info: &Siginfo) -> SignalfdSiginfo {
        let f = &info.fields;
        let w64 = |i: usize| u64::from(f[i]) | (u64::from(f[i + 1]) << 32);
        let sig = info.si_signo as u32;
        let code = info.si_code;
        let mut s = SignalfdSiginfo {
            ssi_signo: sig,
            ssi_errno: info.si_errno,
            ssi_code: code,
            ..Default::default()
        };
        let kernel_specific = code > 0 && code < 0x80;
        match code {
            // SI_TIMER
            -2 => {
                s.ssi_tid = f[0];
                s.ssi_overrun = f[1];
                s.ssi_ptr = w64(2);
                s.ssi_int = f[2] as i32;
            }
            // SI_SIGIO
            -5 => {
                s.ssi_band = f[0];
                s.ssi_fd = f[2] as i32;
            }
            // SI_QUEUE, SI_MESGQ, SI_ASYNCIO, ...: _rt
            c if c < 0 && c != -6 => {
                s.ssi_pid = f[0];
                s.ssi_uid = f[1];
                s.ssi_ptr = w64(2);
                s.ssi_int = f[2] as i32;
            }
            _ if kernel_specific && sig == SIGCHLD => {
                s.ssi_pid = f[0];
                s.ssi_uid = f[1];
                s.ssi_status = f[2] as i32;
                s.ssi_utime = w64(4);
                s.ssi_stime = w64(6);
            }
            _ if kernel_specific && [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP].contains(&sig) => {
                s.ssi_addr = w64(0);
                if sig == SIGBUS && (code == 4 || code == 5) {
                    s.ssi_addr_lsb = f[2] as u16;
                }
            }
            _ if kernel_specific && sig == SIGIO => {
                s.ssi_band = f[0];
                s.ssi_fd = f[2] as i32;
            }
            _ if kernel_specific && sig == SIGSYS => {
                s.ssi_call_addr = w64(0);
                s.ssi_syscall = f[2] as i32;
                s.ssi_arch = f[3];
            }
            // SI_USER, SI_TKILL, SI_KERNEL: _kill
            _ => {
                s.ssi_pid = f[0];
                s.ssi_uid = f[1];
            }
        }
        s
    }
}

/// A signalfd.
pub struct SignalFd {
    mask: Mutex<u64>,
    creator: Weak<Task>,
    ino: u64,
}

/// Takes a pending signal of `task` in `mask`: the thread's own first, then the process's.
fn dequeue(task: &Task, mask: u64) -> Option<Siginfo> {
    let info = lock(&task.pending).take(!mask);
    info.or_else(|| lock(&task.process.shared_pending).take(!mask))
}

impl SignalFd {
    /// A signalfd for `mask`, made by `creator`.
    pub fn new(mask: u64, creator: &Arc<Task>) -> SignalFd {
        SignalFd {
            mask: Mutex::new(mask & !UNBLOCKABLE),
            creator: Arc::downgrade(creator),
            ino: next_ino(),
        }
    }

    /// Replaces the mask (signalfd on an existing descriptor).
    pub fn set_mask(&self, mask: u64) {
        *lock(&self.mask) = mask & !UNBLOCKABLE;
    }
}

impl FileOps for SignalFd {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        let count = buf.len() / SignalfdSiginfo::SIZE;
        if count == 0 {
            return Err(Errno::EINVAL);
        }
        let mask = *lock(&self.mask);
        let first = io.wait(&[], || dequeue(io.task, mask))?;
        let mut n = 0;
        let mut next = Some(first);
        while let Some(info) = next {
            let b = SignalfdSiginfo::from_siginfo(&info).as_bytes();
            buf[n..n + b.len()].copy_from_slice(&b);
            n += b.len();
            if n / SignalfdSiginfo::SIZE == count {
                break;
            }
            next = dequeue(io.task, mask);
        }
        Ok(n)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }

    fn poll(&self, events: u16, _pt: Option<&PollTable<'_>>) -> u16 {
        let mask = *lock(&self.mask);
        let Some(task) = um_kernel::current::current().or_else(|| self.creator.upgrade()) else {
            return 0;
        };
        let pending = lock(&task.pending).bits() | lock(&task.process.shared_pending).bits();
        if pending & mask != 0 {
            (POLLIN | POLLRDNORM) & events
        } else {
            0
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copyinfo_layouts() {
        let k = Siginfo::kill(10, 0, 42, 1000);
        let s = SignalfdSiginfo::from_siginfo(&k);
        assert_eq!(
            (s.ssi_signo, s.ssi_code, s.ssi_pid, s.ssi_uid),
            (10, 0, 42, 1000)
        );
        assert_eq!(s.as_bytes().len(), 128);
        let q = Siginfo::rt(34, -1, 7, 0, 0x1_0000_0005);
        let s = SignalfdSiginfo::from_siginfo(&q);
        assert_eq!((s.ssi_pid, s.ssi_ptr, s.ssi_int), (7, 0x1_0000_0005, 5));
        let c = Siginfo::chld(1, 9, 0, 3, 11, 12);
        let s = SignalfdSiginfo::from_siginfo(&c);
        assert_eq!(
            (s.ssi_pid, s.ssi_status, s.ssi_utime, s.ssi_stime),
            (9, 3, 11, 12)
        );
        let f = Siginfo::fault(11, 1, 0xdead_beef_0000);
        let s = SignalfdSiginfo::from_siginfo(&f);
        assert_eq!((s.ssi_addr, s.ssi_pid), (0xdead_beef_0000, 0));
        let b = s.as_bytes();
        assert_eq!(u64::read_le(&b[72..]), 0xdead_beef_0000);
    }
}
