//! `um-net`: networking (Linux `net/`): the socket families, the socket syscalls and the
//! per-namespace network sysctls.
//!
//! The families: AF_UNIX ([`unix`]), AF_INET/AF_INET6 ([`inet`]: on the guest's own loopback
//! network directly, over devices through the smoltcp-based IP stack [`stack`], whose failed ARP and NDP
//! resolutions [`neigh`] turns into host-unreachable errors), AF_PACKET
//! on every network device ([`packet`], with classic BPF filters) and AF_NETLINK ([`netlink`]:
//! rtnetlink and sock_diag). [`dev`] is the per-namespace registry of devices, addresses and
//! routes that rtnetlink, the interface ioctls ([`devioctl`]), `/proc/net` and
//! `/sys/class/net` ([`procnet`]) and the IP stacks read and change. [`sys`] holds the socket
//! syscalls (Linux `net/socket.c`): they copy guest memory and call into
//! [`unix::UnixSocket`], [`inet::InetSocket`] or [`packet::PacketSocket`]. [`sysctl`] is
//! `/proc/sys/net` and the values behind it (`somaxconn` and the `ipv4/conf` tables), kept per
//! network namespace as `um_kernel::netns` state.
//!
//! This file: the socket ABI the families share (Linux `include/linux/socket.h`,
//! `include/uapi/linux/un.h`, `net/core/scm.c`). Key types: [`SockaddrUn`], [`Msghdr`],
//! [`Cmsghdr`], [`Ucred`] (pinned C layouts), the control-message codec ([`cmsgs`],
//! [`parse_control`], [`put_cmsg`], [`rights_fit`]). The internet address and option
//! structures are in `um_uapi::abi::inet`.
//!
//! Neighbours, all below (dependencies point down only): `um-fs` (the path walk that finds a
//! unix socket's inode, `mknod` of it at bind, inotify, the sockfs `stat`, procfs's registry
//! that [`init`] adds `/proc/sys/net` to), `um-kernel` (files, wait queues, network
//! namespaces, the syscall table), `um-mm` (the AF_PACKET ring frames), `um-os-linux` (host
//! random numbers), `um-uapi`. Nothing in `um-fs` names a socket: sockets reach the VFS as
//! `FileOps` (read, write, poll, splice, `/proc/PID/fd`'s `socket:[N]` from the `stat` mode).
//! `um-bin` calls [`init`] at boot and [`register`] when it builds the syscall table.
#![forbid(unsafe_code)]

pub mod addrconf;
pub mod dev;
pub mod devioctl;
pub mod icmperr;
pub mod inet;
pub mod neigh;
pub mod netlink;
pub mod packet;
pub mod procnet;
pub mod stack;
pub mod sys;
pub mod sysctl;
pub mod unix;

pub use sys::register;

use um_uapi::abi::pod::Pod;
use um_uapi::{Errno, SysResult};

/// `AF_UNSPEC`.
pub const AF_UNSPEC: u32 = 0;
/// `AF_UNIX` / `AF_LOCAL`.
pub const AF_UNIX: u32 = 1;
/// `AF_INET`.
pub const AF_INET: u32 = 2;
/// `AF_INET6`.
pub const AF_INET6: u32 = 10;
/// `AF_NETLINK`.
pub const AF_NETLINK: u32 = 16;
/// `AF_PACKET`.
pub const AF_PACKET: u32 = um_uapi::abi::packet::AF_PACKET;
/// `AF_MAX`.
pub const AF_MAX: u32 = 46;

/// `SOCK_STREAM`.
pub const SOCK_STREAM: u32 = 1;
/// `SOCK_DGRAM`.
pub const SOCK_DGRAM: u32 = 2;
/// `SOCK_RAW`.
pub const SOCK_RAW: u32 = 3;
/// `SOCK_SEQPACKET`.
pub const SOCK_SEQPACKET: u32 = 5;
/// `SOCK_NONBLOCK` (= `O_NONBLOCK`).
pub const SOCK_NONBLOCK: u32 = 0o4000;
/// `SOCK_CLOEXEC` (= `O_CLOEXEC`).
pub const SOCK_CLOEXEC: u32 = 0o2000000;

/// `MSG_OOB`.
pub const MSG_OOB: u32 = 0x1;
/// `MSG_PEEK`.
pub const MSG_PEEK: u32 = 0x2;
/// `MSG_CTRUNC`.
pub const MSG_CTRUNC: u32 = 0x8;
/// `MSG_TRUNC`.
pub const MSG_TRUNC: u32 = 0x20;
/// `MSG_DONTWAIT`.
pub const MSG_DONTWAIT: u32 = 0x40;
/// `MSG_EOR`.
pub const MSG_EOR: u32 = 0x80;
/// `MSG_WAITALL`.
pub const MSG_WAITALL: u32 = 0x100;
/// `MSG_NOSIGNAL`.
pub const MSG_NOSIGNAL: u32 = 0x4000;
/// `MSG_CMSG_CLOEXEC`.
pub const MSG_CMSG_CLOEXEC: u32 = 0x4000_0000;

/// `SOL_SOCKET`.
pub const SOL_SOCKET: i32 = 1;
/// `SCM_RIGHTS`.
pub const SCM_RIGHTS: i32 = 1;
/// `SCM_CREDENTIALS`.
pub const SCM_CREDENTIALS: i32 = 2;
/// Most descriptors one `SCM_RIGHTS` message may carry (`SCM_MAX_FD`).
pub const SCM_MAX_FD: usize = 253;

/// `SHUT_RD`, `SHUT_WR`, `SHUT_RDWR`.
pub const SHUT_RD: u32 = 0;
pub const SHUT_WR: u32 = 1;
pub const SHUT_RDWR: u32 = 2;

/// Socket options at `SOL_SOCKET` (`include/uapi/asm-generic/socket.h`).
pub mod so {
    pub const SO_DEBUG: i32 = 1;
    pub const SO_REUSEADDR: i32 = 2;
    pub const SO_TYPE: i32 = 3;
    pub const SO_ERROR: i32 = 4;
    pub const SO_DONTROUTE: i32 = 5;
    pub const SO_BROADCAST: i32 = 6;
    pub const SO_SNDBUF: i32 = 7;
    pub const SO_RCVBUF: i32 = 8;
    pub const SO_KEEPALIVE: i32 = 9;
    pub const SO_OOBINLINE: i32 = 10;
    pub const SO_LINGER: i32 = 13;
    pub const SO_REUSEPORT: i32 = 15;
    pub const SO_PASSCRED: i32 = 16;
    pub const SO_PEERCRED: i32 = 17;
    pub const SO_RCVLOWAT: i32 = 18;
    pub const SO_SNDLOWAT: i32 = 19;
    pub const SO_RCVTIMEO: i32 = 20;
    pub const SO_SNDTIMEO: i32 = 21;
    pub const SO_BINDTODEVICE: i32 = 25;
    /// Also `SO_GET_FILTER` for getsockopt.
    pub const SO_ATTACH_FILTER: i32 = 26;
    pub const SO_DETACH_FILTER: i32 = 27;
    pub const SO_LOCK_FILTER: i32 = 44;
    pub const SO_ACCEPTCONN: i32 = 30;
    pub const SO_SNDBUFFORCE: i32 = 32;
    pub const SO_RCVBUFFORCE: i32 = 33;
    pub const SO_PROTOCOL: i32 = 38;
    pub const SO_DOMAIN: i32 = 39;
}

um_uapi::pod_struct! {
    /// `struct sockaddr_un`: 110 bytes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct SockaddrUn {
        /// `AF_UNIX`.
        pub sun_family: u16,
        /// Path (NUL-terminated unless it fills the array), or an abstract name after a NUL.
        pub sun_path: [u8; 108],
    }
}
const _: () = assert!(core::mem::size_of::<SockaddrUn>() == 110);

um_uapi::pod_struct! {
    /// `struct user_msghdr` (64-bit): 56 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Msghdr {
        pub msg_name: u64,
        pub msg_namelen: u32,
        pub pad0: u32,
        pub msg_iov: u64,
        pub msg_iovlen: u64,
        pub msg_control: u64,
        pub msg_controllen: u64,
        pub msg_flags: u32,
        pub pad1: u32,
    }
}
const _: () = assert!(core::mem::size_of::<Msghdr>() == 56);
const _: () = assert!(core::mem::offset_of!(Msghdr, msg_controllen) == 40);
const _: () = assert!(core::mem::offset_of!(Msghdr, msg_flags) == 48);

um_uapi::pod_struct! {
    /// `struct cmsghdr` header: 16 bytes, data follows (aligned to 8).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Cmsghdr {
        pub cmsg_len: u64,
        pub cmsg_level: i32,
        pub cmsg_type: i32,
    }
}
const _: () = assert!(core::mem::size_of::<Cmsghdr>() == 16);

um_uapi::pod_struct! {
    /// `struct ucred`: 12 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Ucred {
        pub pid: i32,
        pub uid: u32,
        pub gid: u32,
    }
}
const _: () = assert!(core::mem::size_of::<Ucred>() == 12);

/// `CMSG_ALIGN`.
pub const fn cmsg_align(n: usize) -> usize {
    (n + 7) & !7
}
/// `CMSG_LEN`.
pub const fn cmsg_len(data: usize) -> usize {
    Cmsghdr::SIZE + data
}
/// `CMSG_SPACE`.
pub const fn cmsg_space(data: usize) -> usize {
    Cmsghdr::SIZE + cmsg_align(data)
}

/// The control messages a sender attached (Linux `__scm_send`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Control {
    /// Descriptors of `SCM_RIGHTS` messages, in order.
    pub fds: Vec<i32>,
    /// An explicit `SCM_CREDENTIALS`.
    pub creds: Option<Ucred>,
}

/// The `stat` of a socket (a sockfs inode: `S_IFSOCK | 0777` on the anonymous device 0:8),
/// numbered `ino`, owned by its creator's `(uid, gid)`.
pub fn sock_kstat(ino: u64, (uid, gid): (u32, u32)) -> um_kernel::vfs::Kstat {
    um_fs::pipe::anon_kstat(um_kernel::vfs::mode::S_IFSOCK | 0o777, ino, 0x08, uid, gid)
}

/// The control messages of a `msg_control` buffer, each header with its data (Linux
/// `for_each_cmsghdr` with `__scm_send`'s check): a length shorter than the header or past the
/// end of the buffer is `EINVAL` and ends the walk; a tail too short for a header ends it
/// quietly.
pub fn cmsgs(buf: &[u8]) -> impl Iterator<Item = SysResult<(Cmsghdr, &[u8])>> + '_ {
    let mut off = 0usize;
    std::iter::from_fn(move || {
        if off + Cmsghdr::SIZE > buf.len() {
            return None;
        }
        let h = Cmsghdr::read_le(&buf[off..]);
        match usize::try_from(h.cmsg_len) {
            Ok(len) if len >= Cmsghdr::SIZE && len <= buf.len() - off => {
                let data = &buf[off + Cmsghdr::SIZE..off + len];
                off += cmsg_align(len);
                Some(Ok((h, data)))
            }
            _ => {
                off = buf.len();
                Some(Err(Errno::EINVAL))
            }
        }
    })
}

/// Parses a `msg_control` buffer. Malformed headers and unknown `SOL_SOCKET` types are
/// `EINVAL`; other levels are skipped, as `__scm_send` does.
pub fn parse_control(buf: &[u8]) -> SysResult<Control> {
    let mut out = Control::default();
    for m in cmsgs(buf) {
        let (h, data) = m?;
        if h.cmsg_level == SOL_SOCKET {
            match h.cmsg_type {
                SCM_RIGHTS => {
                    let n = data.len() / 4;
                    if out.fds.len() + n > SCM_MAX_FD {
                        return Err(Errno::EINVAL);
                    }
                    for i in 0..n {
                        out.fds.push(i32::read_le(&data[i * 4..]));
                    }
                }
                SCM_CREDENTIALS => {
                    if data.len() != Ucred::SIZE {
                        return Err(Errno::EINVAL);
                    }
                    out.creds = Some(Ucred::read_le(data));
                }
                _ => return Err(Errno::EINVAL),
            }
        }
    }
    Ok(out)
}

/// Appends one control message to `out`, whose total may not exceed `limit` (Linux
/// `put_cmsg`). Returns false if it had to be truncated (the caller sets `MSG_CTRUNC`).
pub fn put_cmsg(out: &mut Vec<u8>, limit: usize, level: i32, ty: i32, data: &[u8]) -> bool {
    let room = limit.saturating_sub(out.len());
    if room < Cmsghdr::SIZE {
        return false;
    }
    let full = cmsg_len(data.len());
    let len = full.min(room);
    Cmsghdr {
        cmsg_len: len as u64,
        cmsg_level: level,
        cmsg_type: ty,
    }
    .write_le(out);
    out.extend_from_slice(&data[..len - Cmsghdr::SIZE]);
    let space = cmsg_space(data.len()).min(room);
    out.resize(out.len() + (space - len), 0);
    len == full
}

/// How many descriptors an `SCM_RIGHTS` message can carry in `room` bytes (`scm_detach_fds`).
pub fn rights_fit(room: usize) -> usize {
    room.saturating_sub(Cmsghdr::SIZE) / 4
}

/// Encodes descriptors as `SCM_RIGHTS` data.
pub fn rights_data(fds: &[i32]) -> Vec<u8> {
    fds.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// Boot-time setup: `/proc/sys/net`, `/proc/net` and `/sys/class/net` in procfs's registry
/// (Linux `register_net_sysctl`, `proc_net_mkdir` from the subsystems' init calls), and
/// rtnetlink's notifier on the device registry. Runs before init can mount procfs.
pub fn init() {
    um_fs::procfs::registry::proc_create("sys", "net", sysctl::sys_net_dir);
    stack::init();
    addrconf::init();
    procnet::register();
    netlink::init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmsg(level: i32, ty: i32, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        assert!(put_cmsg(&mut v, 1 << 20, level, ty, data));
        v
    }

    #[test]
    fn rights_round_trip() {
        let mut buf = cmsg(SOL_SOCKET, SCM_RIGHTS, &rights_data(&[3, 7, 9]));
        assert_eq!(buf.len(), cmsg_space(12));
        assert_eq!(u64::read_le(&buf), cmsg_len(12) as u64);
        let cr = Ucred {
            pid: 5,
            uid: 1000,
            gid: 100,
        };
        buf.extend(cmsg(SOL_SOCKET, SCM_CREDENTIALS, &cr.as_bytes()));
        buf.extend(cmsg(6, 1, b"skipped"));
        let c = parse_control(&buf).unwrap();
        assert_eq!(c.fds, vec![3, 7, 9]);
        assert_eq!(c.creds, Some(cr));
    }

    #[test]
    fn bad_control() {
        let mut b = cmsg(SOL_SOCKET, SCM_RIGHTS, &rights_data(&[1]));
        b[0] = 200; // cmsg_len past the end
        assert_eq!(parse_control(&b), Err(Errno::EINVAL));
        let b = cmsg(SOL_SOCKET, 99, &[]);
        assert_eq!(parse_control(&b), Err(Errno::EINVAL));
        let b = cmsg(SOL_SOCKET, SCM_CREDENTIALS, &[0; 8]);
        assert_eq!(parse_control(&b), Err(Errno::EINVAL));
        let many: Vec<i32> = (0..254).collect();
        let b = cmsg(SOL_SOCKET, SCM_RIGHTS, &rights_data(&many));
        assert_eq!(parse_control(&b), Err(Errno::EINVAL));
        // A short tail that cannot hold a header is ignored, as CMSG_NXTHDR does.
        assert_eq!(parse_control(&[0; 8]), Ok(Control::default()));
    }

    #[test]
    fn truncation() {
        let mut v = Vec::new();
        assert!(!put_cmsg(&mut v, 20, SOL_SOCKET, SCM_CREDENTIALS, &[1; 12]));
        assert_eq!(v.len(), 20);
        assert_eq!(u64::read_le(&v), 20);
        let mut v = Vec::new();
        assert!(!put_cmsg(&mut v, 10, SOL_SOCKET, SCM_RIGHTS, &[0; 4]));
        assert!(v.is_empty());
        assert_eq!(rights_fit(16 + 8), 2);
        assert_eq!(rights_fit(10), 0);
        assert_eq!(cmsg_space(12), 32);
        assert_eq!(cmsg_len(12), 28);
    }
}
