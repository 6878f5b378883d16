//! `poll`/`epoll` event bits and `struct pollfd` (`include/uapi/asm-generic/poll.h`,
//! `include/uapi/linux/eventpoll.h`), identical on x86_64 and arm64. `struct epoll_event` is
//! *not*: packed (12 bytes) on x86_64, 16 bytes on arm64; it lives in the arch crates.

use static_assertions::const_assert_eq;

/// Data to read.
pub const POLLIN: u16 = 0x0001;
/// Urgent data.
pub const POLLPRI: u16 = 0x0002;
/// Writable.
pub const POLLOUT: u16 = 0x0004;
/// Error.
pub const POLLERR: u16 = 0x0008;
/// Hang-up.
pub const POLLHUP: u16 = 0x0010;
/// Invalid fd.
pub const POLLNVAL: u16 = 0x0020;
/// Normal data to read.
pub const POLLRDNORM: u16 = 0x0040;
/// Priority band data to read.
pub const POLLRDBAND: u16 = 0x0080;
/// Normal data writable.
pub const POLLWRNORM: u16 = 0x0100;
/// Priority band writable.
pub const POLLWRBAND: u16 = 0x0200;
/// Message (unused).
pub const POLLMSG: u16 = 0x0400;
/// Removed.
pub const POLLREMOVE: u16 = 0x1000;
/// Peer closed its writing half.
pub const POLLRDHUP: u16 = 0x2000;

/// `epoll_create1` flag (= `O_CLOEXEC`).
pub const EPOLL_CLOEXEC: u32 = 0o2000000;
/// `epoll_ctl`: add.
pub const EPOLL_CTL_ADD: u32 = 1;
/// `epoll_ctl`: delete.
pub const EPOLL_CTL_DEL: u32 = 2;
/// `epoll_ctl`: modify.
pub const EPOLL_CTL_MOD: u32 = 3;
/// Epoll event bits (the low ones equal the `POLL*` bits).
pub const EPOLLIN: u32 = 0x1;
/// See `POLLPRI`.
pub const EPOLLPRI: u32 = 0x2;
/// See `POLLOUT`.
pub const EPOLLOUT: u32 = 0x4;
/// See `POLLERR`.
pub const EPOLLERR: u32 = 0x8;
/// See `POLLHUP`.
pub const EPOLLHUP: u32 = 0x10;
/// See `POLLNVAL`.
pub const EPOLLNVAL: u32 = 0x20;
/// See `POLLRDNORM`.
pub const EPOLLRDNORM: u32 = 0x40;
/// See `POLLRDBAND`.
pub const EPOLLRDBAND: u32 = 0x80;
/// See `POLLWRNORM`.
pub const EPOLLWRNORM: u32 = 0x100;
/// See `POLLWRBAND`.
pub const EPOLLWRBAND: u32 = 0x200;
/// See `POLLMSG`.
pub const EPOLLMSG: u32 = 0x400;
/// See `POLLRDHUP`.
pub const EPOLLRDHUP: u32 = 0x2000;
/// Wake only one of several epoll instances.
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
/// Hold a wakeup source.
pub const EPOLLWAKEUP: u32 = 1 << 29;
/// Disarm after one event.
pub const EPOLLONESHOT: u32 = 1 << 30;
/// Edge-triggered.
pub const EPOLLET: u32 = 1 << 31;

crate::pod_struct! {
    /// `struct pollfd`: 8 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Pollfd {
        /// File descriptor (negative: ignored).
        pub fd: i32,
        /// Requested `POLL*` events.
        pub events: i16,
        /// Returned events.
        pub revents: i16,
    }
}

const_assert_eq!(core::mem::size_of::<Pollfd>(), 8);
const_assert_eq!(core::mem::offset_of!(Pollfd, revents), 6);
