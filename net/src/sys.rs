//! Socket syscalls (Linux `net/socket.c`, `net/core/scm.c`, `net/core/sock.c` for options):
//! socket, socketpair, bind, listen, accept, accept4, connect, getsockname, getpeername,
//! sendto, recvfrom, sendmsg, recvmsg, sendmmsg, recvmmsg, shutdown, getsockopt, setsockopt.
//!
//! Four families exist: AF_UNIX ([`crate::unix`]), AF_INET/AF_INET6 ([`crate::inet`]),
//! AF_PACKET ([`crate::packet`], `CAP_NET_RAW` only) and AF_NETLINK ([`crate::netlink`]);
//! every other family is `EAFNOSUPPORT`, as for a family the kernel was built without. Raw
//! internet sockets exist for ICMP only, with `CAP_NET_RAW` (`EPERM` without it, and for other
//! protocols as if it were missing; `EPROTONOSUPPORT` with protocol 0, as on Linux whoever
//! asks); ICMP "ping" datagram sockets are for the groups in `net.ipv4.ping_group_range`
//! (`EACCES` otherwise, as for everyone with its default). This file copies guest memory, resolves unix addresses (path
//! walk, `mknod` of the socket inode on bind), installs passed descriptors at `recvmsg`, and
//! hands internet sockets their raw address and option bytes.

use crate::inet::opt::{CAP_NET_ADMIN, Proto};
use crate::inet::{CAP_NET_BIND_SERVICE, InetFile, InetSocket};
use crate::netlink::{NetlinkFile, NetlinkSocket};
use crate::packet::{CAP_NET_RAW, PacketFile, PacketSocket, RingCtx};
use crate::unix::{SocketFile, UnixAddr, UnixSocket, task_peercred, task_ucred};
use crate::*;
use std::sync::Arc;
use um_fs::namei::{self, Last};
use um_fs::sys::{AT_FDCWD, lookup, start_dir};
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::uaccess::import_iovec;
use um_kernel::vfs::{OpenFile, Owner, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::inet::{
    IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP, SOCKADDR_STORAGE,
};
use um_uapi::abi::netdevice::IFNAMSIZ;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::uio::{Iovec, UIO_MAXIOV};
use um_uapi::{Errno, SysResult};

use um_uapi::abi::fcntl::O_NONBLOCK;
/// Largest receive buffer one call allocates.
const MAX_RECV: usize = 4 << 20;
/// Largest control buffer (`net.core.optmem_max`).
const MAX_CONTROL: u64 = 131_072;

/// A socket of either family.
pub enum Sock {
    Unix(Arc<UnixSocket>),
    Inet(Arc<InetSocket>),
    Packet(Arc<PacketSocket>),
    Netlink(Arc<NetlinkSocket>),
}

/// The socket behind `fd`, or `ENOTSOCK` (`EBADF` for an `O_PATH` descriptor, as
/// net/socket.c `sockfd_lookup_light` gets it with `fdget`).
pub fn sock_of(c: &SyscallCtx<'_>, fd: u64) -> SysResult<(Arc<OpenFile>, Sock)> {
    let f = lock(&c.task.process.files()).get_nopath(fd)?;
    let any = f.ops.as_any().ok_or(Errno::ENOTSOCK)?;
    let s = if let Some(u) = any.downcast_ref::<SocketFile>() {
        Sock::Unix(u.sock.clone())
    } else if let Some(i) = any.downcast_ref::<InetFile>() {
        Sock::Inet(i.sock.clone())
    } else if let Some(p) = any.downcast_ref::<PacketFile>() {
        Sock::Packet(p.sock.clone())
    } else if let Some(n) = any.downcast_ref::<NetlinkFile>() {
        Sock::Netlink(n.sock.clone())
    } else {
        return Err(Errno::ENOTSOCK);
    };
    Ok((f, s))
}

fn io_ctx<'a>(c: &'a SyscallCtx<'_>, f: &OpenFile, flags: u32) -> IoCtx<'a> {
    IoCtx {
        task: c.task,
        nonblock: f.flags() & O_NONBLOCK != 0 || flags & MSG_DONTWAIT != 0,
        flags: f.flags(),
    }
}

fn install(c: &SyscallCtx<'_>, s: Sock, flags: u32) -> SysResult<u32> {
    let ops: Box<dyn um_kernel::vfs::FileOps> = match s {
        Sock::Unix(s) => Box::new(SocketFile::new(s)),
        Sock::Inet(sock) => Box::new(InetFile { sock }),
        Sock::Packet(sock) => Box::new(PacketFile { sock }),
        Sock::Netlink(sock) => Box::new(NetlinkFile { sock }),
    };
    let file = OpenFile::new(ops, 2 | (flags & SOCK_NONBLOCK), None);
    lock(&c.task.process.files()).install(file, flags & SOCK_CLOEXEC != 0, 0)
}

fn owner(c: &SyscallCtx<'_>) -> (u32, u32) {
    let cr = lock(&c.task.process.creds);
    (cr.fsuid, cr.fsgid)
}

/// What `socket` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// AF_UNIX of this type.
    Unix(u32),
    /// AF_INET / AF_INET6 with this transport.
    Inet(u32, Proto),
    /// AF_PACKET of this type (not yet checked: `packet_create` asks for `CAP_NET_RAW`
    /// first) and protocol (network byte order).
    Packet(u32, u32),
    /// AF_NETLINK of this type and protocol (checked).
    Netlink(u32, u32),
}

/// `SOCK_MAX`: types at or above it are `EINVAL` in any family (`__sock_create`).
const SOCK_MAX: u32 = 11;

/// Checks `socket`'s domain, type and protocol (`__sock_create`, `unix_create`,
/// `inet_create`, `inet6_create`); returns what to make and the flags.
fn check_socket_args(domain: u64, ty: u64, protocol: u64) -> SysResult<(Kind, u32)> {
    let ty = ty as u32;
    let flags = ty & (SOCK_NONBLOCK | SOCK_CLOEXEC);
    let ty = ty & !flags;
    if ty & !0xf != 0 || ty >= SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    let domain = domain as u32;
    let protocol = protocol as u32 as i32;
    match domain {
        AF_UNIX => {
            if protocol != 0 && protocol != AF_UNIX as i32 {
                return Err(Errno::EPROTONOSUPPORT);
            }
            let ty = match ty {
                SOCK_STREAM | SOCK_DGRAM | SOCK_SEQPACKET => ty,
                // unix_create: SOCK_RAW is quietly a datagram socket.
                SOCK_RAW => SOCK_DGRAM,
                _ => return Err(Errno::ESOCKTNOSUPPORT),
            };
            Ok((Kind::Unix(ty), flags))
        }
        AF_INET | AF_INET6 => {
            let icmp = if domain == AF_INET {
                IPPROTO_ICMP
            } else {
                IPPROTO_ICMPV6
            };
            let proto = match (ty, protocol) {
                (SOCK_STREAM, 0 | IPPROTO_TCP) => Proto::Tcp,
                (SOCK_DGRAM, 0 | IPPROTO_UDP) => Proto::Udp,
                // Ping sockets (ping_init_sock checks net.ipv4.ping_group_range).
                (SOCK_DGRAM, p) if p == icmp => Proto::Ping,
                // inet_create finds no raw protocol 0 before it asks for CAP_NET_RAW.
                (SOCK_RAW, 0) => return Err(Errno::EPROTONOSUPPORT),
                // Raw sockets, for CAP_NET_RAW (checked in inet_create): ICMP carries
                // traffic; other protocols (udhcpc's IPPROTO_RAW, for its ioctls) only
                // exist (`InetSocket::set_raw_protocol`).
                (SOCK_RAW, p) if (1..=255).contains(&p) => Proto::Raw,
                (SOCK_RAW, _) => return Err(Errno::EPROTONOSUPPORT),
                (SOCK_STREAM | SOCK_DGRAM, _) => return Err(Errno::EPROTONOSUPPORT),
                _ => return Err(Errno::ESOCKTNOSUPPORT),
            };
            Ok((Kind::Inet(domain, proto), flags))
        }
        // The protocol is a __be16: packet_create keeps its low 16 bits.
        AF_PACKET => Ok((Kind::Packet(ty, protocol as u32 & 0xffff), flags)),
        AF_NETLINK => {
            crate::netlink::check_create(ty, protocol)?;
            Ok((Kind::Netlink(ty, protocol as u32), flags))
        }
        // The rest: no such protocol family here.
        _ => Err(Errno::EAFNOSUPPORT),
    }
}

/// `packet_create`: `CAP_NET_RAW` (`EPERM`), then the type: `SOCK_RAW` and `SOCK_DGRAM`
/// (`SOCK_PACKET` is not supported here), else `ESOCKTNOSUPPORT`.
fn packet_create(c: &SyscallCtx<'_>, ty: u32) -> SysResult<()> {
    if !c.task.process.net_capable(CAP_NET_RAW) {
        return Err(Errno::EPERM);
    }
    if ty != SOCK_RAW && ty != SOCK_DGRAM {
        return Err(Errno::ESOCKTNOSUPPORT);
    }
    Ok(())
}

/// `inet_create`'s checks of the caller: `CAP_NET_RAW` for a raw socket (`EPERM`), a group in
/// `net.ipv4.ping_group_range` for a ping socket (`ping_init_sock`: the effective group or a
/// supplementary one; `EACCES`).
fn inet_create(c: &SyscallCtx<'_>, proto: Proto) -> SysResult<()> {
    match proto {
        Proto::Raw if !c.task.process.net_capable(CAP_NET_RAW) => Err(Errno::EPERM),
        Proto::Ping => {
            let (low, high) =
                crate::sysctl::ping_group_range(&um_kernel::netns::of(&c.task.process));
            let egid = lock(&c.task.process.creds).egid;
            let groups = lock(&c.task.process.groups).clone();
            let ok = std::iter::once(egid)
                .chain(groups)
                .any(|g| low <= g && g <= high);
            if ok { Ok(()) } else { Err(Errno::EACCES) }
        }
        _ => Ok(()),
    }
}

fn socket(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (kind, flags) = check_socket_args(a[0], a[1], a[2])?;
    let s = match kind {
        Kind::Unix(ty) => Sock::Unix(UnixSocket::new(ty, owner(c))),
        Kind::Inet(family, proto) => {
            inet_create(c, proto)?;
            let s = InetSocket::new(proto, family, owner(c));
            let icmp = if family == AF_INET {
                IPPROTO_ICMP
            } else {
                IPPROTO_ICMPV6
            };
            if proto == Proto::Raw && a[2] as i32 != icmp {
                s.set_raw_protocol(a[2] as u32);
            }
            Sock::Inet(s)
        }
        Kind::Packet(ty, proto) => {
            packet_create(c, ty)?;
            Sock::Packet(PacketSocket::new(ty, proto, owner(c)))
        }
        Kind::Netlink(ty, proto) => Sock::Netlink(NetlinkSocket::new(ty, proto, owner(c))),
    };
    Ok(install(c, s, flags)? as u64)
}

fn socketpair(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (kind, flags) = check_socket_args(a[0], a[1], a[2])?;
    let ty = match kind {
        Kind::Unix(ty) => ty,
        // inet_stream_ops and inet_dgram_ops have sock_no_socketpair.
        Kind::Inet(_, proto) => {
            inet_create(c, proto)?;
            return Err(Errno::EOPNOTSUPP);
        }
        // So has packet_ops, after packet_create's checks.
        Kind::Packet(ty, _) => {
            packet_create(c, ty)?;
            return Err(Errno::EOPNOTSUPP);
        }
        // netlink_ops: sock_no_socketpair.
        Kind::Netlink(..) => return Err(Errno::EOPNOTSUPP),
    };
    let (x, y) = UnixSocket::pair(ty, owner(c), task_peercred(c.task));
    let fx = install(c, Sock::Unix(x), flags)?;
    let fy = match install(c, Sock::Unix(y), flags) {
        Ok(f) => f,
        Err(e) => {
            let _ = lock(&c.task.process.files()).remove(fx as u64);
            return Err(e);
        }
    };
    let mut b = (fx as i32).to_le_bytes().to_vec();
    b.extend_from_slice(&(fy as i32).to_le_bytes());
    if let Err(e) = c.write_bytes(a[3], &b) {
        let table = c.task.process.files();
        let mut t = lock(&table);
        let _ = t.remove(fx as u64);
        let _ = t.remove(fy as u64);
        return Err(e);
    }
    Ok(0)
}

/// Copies a socket address argument in (`move_addr_to_kernel`): at most a
/// `sockaddr_storage`, `EINVAL` for a negative or longer length.
fn read_addr_bytes(c: &SyscallCtx<'_>, addr: u64, len: u64) -> SysResult<Vec<u8>> {
    let len = len as u32 as i32;
    if !(0..=SOCKADDR_STORAGE as i32).contains(&len) {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(Vec::new());
    }
    c.read_bytes(addr, len as usize)
}

/// Reads a unix socket address argument (`move_addr_to_kernel`, then `unix_validate_addr`).
fn read_addr(c: &SyscallCtx<'_>, addr: u64, len: u64) -> SysResult<UnixAddr> {
    UnixAddr::parse(&read_addr_bytes(c, addr, len)?)
}

/// Writes an address back (`move_addr_to_user`): at most `*len_ptr` bytes, then the real
/// length into `*len_ptr`. Callers for which the address is optional (accept, recvfrom) skip
/// it when `addr` is NULL; getsockname and getpeername do not.
fn write_addr(c: &SyscallCtx<'_>, addr: u64, len_ptr: u64, bytes: &[u8]) -> SysResult<()> {
    let b = c.read_bytes(len_ptr, 4)?;
    let len = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let len = len.min(bytes.len() as i32);
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    if len > 0 {
        c.write_bytes(addr, &bytes[..len as usize])?;
    }
    c.write_u32(len_ptr, bytes.len() as u32)
}

/// Finds the socket an address names for socket `s` (`unix_find_other`; abstract names in
/// `s`'s network namespace).
fn resolve(c: &SyscallCtx<'_>, s: &UnixSocket, addr: &UnixAddr) -> SysResult<Arc<UnixSocket>> {
    match addr {
        UnixAddr::Unnamed => Err(Errno::EINVAL),
        UnixAddr::Abstract(n) => s.find_abstract(n).ok_or(Errno::ECONNREFUSED),
        UnixAddr::Path(p) => {
            let d = lookup(c, AT_FDCWD as u64, p, Last::Follow)?;
            let st = d.inode.stat()?;
            if st.mode & mode::S_IFMT != mode::S_IFSOCK {
                return Err(Errno::ECONNREFUSED);
            }
            // unix_find_bsd: connecting (or sending) to a socket file needs write permission.
            let creds = *lock(&c.task.process.creds);
            namei::permission(&st, &creds, namei::MAY_WRITE)?;
            UnixSocket::find_path(um_fs::mount::inode_key(&*d.inode)).ok_or(Errno::ECONNREFUSED)
        }
    }
}

fn bind(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (_, s) = sock_of(c, a[0])?;
    let s = match s {
        Sock::Unix(s) => s,
        Sock::Inet(s) => {
            let b = read_addr_bytes(c, a[1], a[2])?;
            s.bind(&b, c.task.process.net_capable(CAP_NET_BIND_SERVICE))?;
            return Ok(0);
        }
        Sock::Packet(s) => {
            s.bind(&read_addr_bytes(c, a[1], a[2])?)?;
            return Ok(0);
        }
        Sock::Netlink(s) => {
            s.bind(&read_addr_bytes(c, a[1], a[2])?, tgid(c))?;
            return Ok(0);
        }
    };
    match read_addr(c, a[1], a[2])? {
        UnixAddr::Unnamed => s.autobind()?,
        UnixAddr::Abstract(n) => s.bind_abstract(n)?,
        UnixAddr::Path(p) => {
            if s.is_bound() {
                return Err(Errno::EINVAL);
            }
            // unix_bind_bsd: make the socket inode, then publish the socket under it.
            let fs = lock(&c.task.process.fs).clone();
            let start = if p.first() == Some(&b'/') {
                fs.root.clone()
            } else {
                start_dir(c, AT_FDCWD as u64)?
            };
            let (parent, name) = namei::walk_parent(&fs, &start, &p)?;
            let (uid, gid) = owner(c);
            let mode = mode::S_IFSOCK | (0o777 & !fs.umask);
            let inode = parent
                .inode
                .mknod(&name, mode, 0, Owner { uid, gid })
                .map_err(|e| {
                    if e == Errno::EEXIST {
                        Errno::EADDRINUSE
                    } else {
                        e
                    }
                })?;
            let key = um_fs::mount::inode_key(&*inode);
            if let Err(e) = s.bind_path(key, p) {
                let _ = parent.inode.unlink(&name);
                return Err(e);
            }
            um_fs::inotify::create(&*parent.inode, &name, false);
        }
    }
    Ok(0)
}

fn listen(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match sock_of(c, a[0])?.1 {
        Sock::Unix(s) => s.listen(a[1] as i32, task_peercred(c.task))?,
        Sock::Inet(s) => s.listen(a[1] as i32)?,
        Sock::Packet(_) | Sock::Netlink(_) => return Err(Errno::EOPNOTSUPP),
    }
    Ok(0)
}

fn do_accept(c: &SyscallCtx<'_>, a: [u64; 6], flags: u32) -> SysResult {
    if flags & !(SOCK_CLOEXEC | SOCK_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let (f, s) = sock_of(c, a[0])?;
    let (new, peer) = match s {
        Sock::Unix(s) => {
            let new = s.accept(&io_ctx(c, &f, 0))?;
            let peer = new.peer_addr().unwrap_or_default().to_bytes();
            (Sock::Unix(new), peer)
        }
        Sock::Inet(s) => {
            let new = s.accept(&io_ctx(c, &f, 0))?;
            // A connection reset before accept still reports where it came from.
            let peer = match new.peer_addr() {
                Ok(p) => new.encode(&p),
                Err(_) => new.encode(&new.local_addr()),
            };
            (Sock::Inet(new), peer)
        }
        Sock::Packet(_) | Sock::Netlink(_) => return Err(Errno::EOPNOTSUPP),
    };
    let fd = install(c, new, flags)?;
    if a[1] != 0
        && let Err(e) = write_addr(c, a[1], a[2], &peer)
    {
        let _ = lock(&c.task.process.files()).remove(fd as u64);
        return Err(e);
    }
    Ok(fd as u64)
}

fn accept(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_accept(c, a, 0)
}

fn accept4(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_accept(c, a, a[3] as u32)
}

fn connect(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (f, s) = sock_of(c, a[0])?;
    let s = match s {
        Sock::Unix(s) => s,
        Sock::Inet(s) => {
            let b = read_addr_bytes(c, a[1], a[2])?;
            s.connect(&io_ctx(c, &f, 0), &b)?;
            return Ok(0);
        }
        Sock::Packet(_) => return Err(Errno::EOPNOTSUPP),
        Sock::Netlink(s) => {
            let b = read_addr_bytes(c, a[1], a[2])?;
            s.connect(&b, tgid(c), c.task.process.net_capable(CAP_NET_ADMIN))?;
            return Ok(0);
        }
    };
    let len = a[2] as u32 as i32;
    if s.ty() == SOCK_DGRAM && len >= 2 {
        let fam = c.read_bytes(a[1], 2)?;
        if u16::from_le_bytes([fam[0], fam[1]]) as u32 == AF_UNSPEC {
            s.connect_dgram(None)?;
            return Ok(0);
        }
    }
    let addr = read_addr(c, a[1], a[2])?;
    let target = resolve(c, &s, &addr)?;
    s.connect(&io_ctx(c, &f, 0), &target)?;
    Ok(0)
}

fn getsockname(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let b = match sock_of(c, a[0])?.1 {
        Sock::Unix(s) => s.local_addr().to_bytes(),
        Sock::Inet(s) => s.encode(&s.local_addr()),
        Sock::Packet(s) => s.local_addr(),
        Sock::Netlink(s) => s.local_addr(),
    };
    write_addr(c, a[1], a[2], &b)?;
    Ok(0)
}

fn getpeername(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let b = match sock_of(c, a[0])?.1 {
        Sock::Unix(s) => s.peer_addr()?.to_bytes(),
        Sock::Inet(s) => s.encode(&s.peer_addr()?),
        Sock::Packet(_) => return Err(Errno::EOPNOTSUPP),
        Sock::Netlink(s) => s.peer_addr(),
    };
    write_addr(c, a[1], a[2], &b)?;
    Ok(0)
}

/// `scm_check_creds`: a sender may claim its own pid and any of its own ids (root: any).
/// The pid is a number of the sender's pid namespace.
fn check_creds(c: &SyscallCtx<'_>, u: &Ucred) -> SysResult<()> {
    let cr = *lock(&c.task.process.creds);
    let root = cr.euid == 0;
    let pid_ok = u.pid == c.task.process.pids.own() as i32 || root;
    let uid_ok = [cr.uid, cr.euid, cr.suid].contains(&u.uid) || root;
    let gid_ok = [cr.gid, cr.egid, cr.sgid].contains(&u.gid) || root;
    if pid_ok && uid_ok && gid_ok {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// Credentials leaving the kernel (`SO_PEERCRED`, a received `SCM_CREDENTIALS`): the pid as
/// the reader's pid namespace sees it, 0 outside it (`cred_to_ucred`'s `pid_vnr`).
fn ucred_out(c: &SyscallCtx<'_>, mut cr: Ucred) -> Ucred {
    if cr.pid > 0 {
        cr.pid = c.kernel.tasks.vnr(c.task, cr.pid as u32) as i32;
    }
    cr
}

/// The common part of sendto and sendmsg for unix sockets.
fn do_send_unix(
    c: &SyscallCtx<'_>,
    f: &OpenFile,
    s: &UnixSocket,
    data: &[u8],
    to: Option<UnixAddr>,
    control: &[u8],
    flags: u32,
) -> SysResult {
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let ctl = parse_control(control)?;
    let mut creds = task_ucred(c.task);
    if let Some(mut u) = ctl.creds {
        check_creds(c, &u)?;
        // Kept kernel-wide (Linux keeps the struct pid: `find_get_pid`, ESRCH for none).
        u.pid = c
            .kernel
            .tasks
            .global_of(c.task, u.pid as u32)
            .ok_or(Errno::ESRCH)? as i32;
        creds = u;
    }
    let files = {
        let table = c.task.process.files();
        let t = lock(&table);
        ctl.fds
            .iter()
            .map(|&fd| t.get(fd as u32 as u64))
            .collect::<SysResult<Vec<_>>>()?
    };
    let target = match (to, s.ty()) {
        (None, _) => None,
        (Some(_), SOCK_STREAM) => {
            return Err(if s.is_connected() {
                Errno::EISCONN
            } else {
                Errno::EOPNOTSUPP
            });
        }
        (Some(_), SOCK_SEQPACKET) => None,
        (Some(addr), _) => Some(resolve(c, s, &addr)?),
    };
    let io = io_ctx(c, f, flags);
    Ok(s.send(&io, data, files, creds, target, flags & MSG_NOSIGNAL != 0)? as u64)
}

/// Checks the control messages of an internet send (`sock_cmsg_send`): malformed headers and
/// unknown `SOL_SOCKET` types are `EINVAL`; descriptors and credentials mean nothing here and
/// are ignored, as are other levels (their options do nothing on the loopback network).
fn check_inet_control(buf: &[u8]) -> SysResult<()> {
    /// `SO_PRIORITY`, `SO_MARK`, `SO_TIMESTAMPING_OLD`, `SCM_TXTIME`.
    const KNOWN: [i32; 6] = [SCM_RIGHTS, SCM_CREDENTIALS, 12, 36, 37, 61];
    for m in cmsgs(buf) {
        let (h, _) = m?;
        if h.cmsg_level == SOL_SOCKET && !KNOWN.contains(&h.cmsg_type) {
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

/// An internet send: `to` is the raw destination (TCP ignores it, as `tcp_sendmsg` does).
fn do_send_inet(
    c: &SyscallCtx<'_>,
    f: &OpenFile,
    s: &InetSocket,
    data: &[u8],
    to: Option<&[u8]>,
    control: &[u8],
    flags: u32,
) -> SysResult {
    check_inet_control(control)?;
    let io = io_ctx(c, f, flags);
    Ok(s.send(&io, data, to, flags, flags & MSG_NOSIGNAL != 0)? as u64)
}

fn sendto(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (f, s) = sock_of(c, a[0])?;
    let len = (a[2] as usize).min(SOCK_BUF_MAX);
    let data = c.read_bytes(a[1], len)?;
    match s {
        Sock::Unix(s) => {
            let to = if a[4] != 0 && a[5] as u32 != 0 {
                Some(read_addr(c, a[4], a[5])?)
            } else {
                None
            };
            do_send_unix(c, &f, &s, &data, to, &[], a[3] as u32)
        }
        Sock::Inet(s) => {
            let to = if a[4] != 0 {
                Some(read_addr_bytes(c, a[4], a[5])?)
            } else {
                None
            };
            do_send_inet(c, &f, &s, &data, to.as_deref(), &[], a[3] as u32)
        }
        Sock::Packet(s) => {
            let to = if a[4] != 0 {
                Some(read_addr_bytes(c, a[4], a[5])?)
            } else {
                None
            };
            Ok(s.send(&data, to.as_deref())? as u64)
        }
        Sock::Netlink(s) => {
            let to = if a[4] != 0 && a[5] as u32 != 0 {
                Some(read_addr_bytes(c, a[4], a[5])?)
            } else {
                None
            };
            let admin = c.task.process.net_capable(CAP_NET_ADMIN);
            Ok(s.send(&data, to.as_deref(), tgid(c), admin, a[3] as u32)? as u64)
        }
    }
}

/// Largest stream write handed over in one piece (bigger writes return short, as a stream
/// may).
const SOCK_BUF_MAX: usize = 16 << 20;

/// The iovec array of a `msghdr`: more than `UIO_MAXIOV` entries is `EMSGSIZE`
/// (`net/socket.c` `__copy_msghdr`), the rest is `import_iovec`'s.
fn read_iovecs(c: &SyscallCtx<'_>, addr: u64, n: u64) -> SysResult<Vec<Iovec>> {
    if n > UIO_MAXIOV as u64 {
        return Err(Errno::EMSGSIZE);
    }
    Ok(import_iovec(c, addr, n)?.segs)
}

/// Reads a `msghdr` (`copy_msghdr_from_user`): a negative `msg_namelen` is `EINVAL`.
fn read_msghdr(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Msghdr> {
    let mh = Msghdr::read_le(&c.read_bytes(addr, Msghdr::SIZE)?);
    if (mh.msg_namelen as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(mh)
}

fn sendmsg(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_sendmsg(c, a[0], a[1], a[2] as u32).map(|(n, _)| n)
}

/// `___sys_sendmsg`: the bytes sent and whether the message went whole.
fn do_sendmsg(c: &SyscallCtx<'_>, fd: u64, msg: u64, flags: u32) -> SysResult<(u64, bool)> {
    let mh = read_msghdr(c, msg)?;
    let iovs = read_iovecs(c, mh.msg_iov, mh.msg_iovlen)?;
    let want: u64 = iovs.iter().map(|i| i.len).sum();
    let mut data = Vec::new();
    for io in iovs {
        if io.len == 0 {
            continue;
        }
        let n = (io.len as usize).min(SOCK_BUF_MAX.saturating_sub(data.len()));
        data.extend_from_slice(&c.read_bytes(io.base, n)?);
    }
    let name = if mh.msg_name != 0 && mh.msg_namelen != 0 {
        Some(read_addr_bytes(c, mh.msg_name, u64::from(mh.msg_namelen))?)
    } else {
        None
    };
    if mh.msg_controllen > MAX_CONTROL {
        return Err(Errno::ENOBUFS);
    }
    let control = if mh.msg_controllen > 0 {
        c.read_bytes(mh.msg_control, mh.msg_controllen as usize)?
    } else {
        Vec::new()
    };
    let (f, s) = sock_of(c, fd)?;
    let n = match s {
        Sock::Unix(s) => {
            let to = name.map(|b| UnixAddr::parse(&b)).transpose()?;
            do_send_unix(c, &f, &s, &data, to, &control, flags)
        }
        Sock::Inet(s) => do_send_inet(c, &f, &s, &data, name.as_deref(), &control, flags),
        Sock::Packet(s) => {
            check_inet_control(&control)?;
            Ok(s.send(&data, name.as_deref())? as u64)
        }
        Sock::Netlink(s) => {
            check_inet_control(&control)?;
            let admin = c.task.process.net_capable(CAP_NET_ADMIN);
            Ok(s.send(&data, name.as_deref(), tgid(c), admin, flags)? as u64)
        }
    }?;
    Ok((n, n >= want))
}

/// The caller's tgid as its own pid namespace numbers it (a netlink socket's default port
/// id, `task_tgid_vnr`).
fn tgid(c: &SyscallCtx<'_>) -> u32 {
    c.task.process.pids.own()
}

/// What a receive got, from either family.
struct Received {
    /// The bytes, `n` long.
    data: Vec<u8>,
    /// The return value (with `MSG_TRUNC`, a datagram's real length).
    ret: u64,
    /// `msg_flags` out.
    flags: u32,
    /// The sender's address, encoded (empty: none).
    name: Vec<u8>,
    /// Unix: the message's credentials and descriptors.
    unix: Option<(Arc<UnixSocket>, crate::unix::Recv)>,
    /// Internet: control messages (level, type, data).
    control: Vec<crate::inet::opt::Cmsg>,
}

fn do_recv(c: &SyscallCtx<'_>, fd: u64, len: usize, flags: u32) -> SysResult<Received> {
    let (f, s) = sock_of(c, fd)?;
    let mut buf = vec![0u8; len.min(MAX_RECV)];
    match s {
        Sock::Unix(s) => {
            if flags & MSG_OOB != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            let r = s.recv(&io_ctx(c, &f, flags), &mut buf, flags)?;
            buf.truncate(r.n);
            // The return value: with `MSG_TRUNC`, a datagram's real length.
            let ret = if flags & MSG_TRUNC != 0 && s.ty() != SOCK_STREAM {
                r.full_len as u64
            } else {
                r.n as u64
            };
            let name = if r.creds.is_some() {
                r.from.to_bytes()
            } else {
                Vec::new()
            };
            Ok(Received {
                data: buf,
                ret,
                flags: r.flags,
                name,
                unix: Some((s, r)),
                control: Vec::new(),
            })
        }
        Sock::Inet(s) => {
            let r = s.recv(&io_ctx(c, &f, flags), &mut buf, flags)?;
            buf.truncate(r.n);
            let ret = if flags & MSG_TRUNC != 0 {
                r.full_len as u64
            } else {
                r.n as u64
            };
            let name = r.from.map(|a| s.encode(&a)).unwrap_or_default();
            Ok(Received {
                data: buf,
                ret,
                flags: r.flags,
                name,
                unix: None,
                control: r.control,
            })
        }
        Sock::Packet(s) => {
            let r = s.recv(&io_ctx(c, &f, flags), len.min(MAX_RECV), flags)?;
            Ok(Received {
                data: r.data,
                ret: r.ret as u64,
                flags: r.flags,
                name: r.name,
                unix: None,
                control: r.control,
            })
        }
        Sock::Netlink(s) => {
            let r = s.recv(&io_ctx(c, &f, flags), len.min(MAX_RECV), flags)?;
            Ok(Received {
                data: r.data,
                ret: r.ret as u64,
                flags: r.flags,
                name: r.name,
                unix: None,
                control: r.control,
            })
        }
    }
}

fn recvfrom(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = a[3] as u32;
    let r = do_recv(c, a[0], a[2] as usize, flags)?;
    c.write_bytes(a[1], &r.data)?;
    if a[4] != 0 {
        write_addr(c, a[4], a[5], &r.name)?;
    }
    Ok(r.ret)
}

fn recvmsg(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_recvmsg(c, a[0], a[1], a[2] as u32).map(|(n, _)| n)
}

/// `___sys_recvmsg`: the return value and `msg_flags`.
fn do_recvmsg(c: &SyscallCtx<'_>, fd: u64, msg: u64, flags: u32) -> SysResult<(u64, u32)> {
    let mut mh = read_msghdr(c, msg)?;
    let iovs = read_iovecs(c, mh.msg_iov, mh.msg_iovlen)?;
    let total: u64 = iovs.iter().map(|i| i.len).sum();
    let r = do_recv(c, fd, total as usize, flags)?;
    let data = &r.data;
    let mut off = 0usize;
    for io in &iovs {
        if off >= data.len() {
            break;
        }
        let n = (io.len as usize).min(data.len() - off);
        c.write_bytes(io.base, &data[off..off + n])?;
        off += n;
    }
    // Name.
    let mut namelen = 0u32;
    if mh.msg_name != 0 && !r.name.is_empty() {
        let n = (mh.msg_namelen as usize)
            .min(SOCKADDR_STORAGE)
            .min(r.name.len());
        c.write_bytes(mh.msg_name, &r.name[..n])?;
        namelen = r.name.len() as u32;
    }
    // Control: credentials first, then descriptors (scm_recv).
    let limit = if mh.msg_control == 0 {
        0
    } else {
        mh.msg_controllen as usize
    };
    let mut out = Vec::new();
    let mut mflags = r.flags;
    for (level, ty, data) in &r.control {
        if !put_cmsg(&mut out, limit, *level, *ty, data) {
            mflags |= MSG_CTRUNC;
            break;
        }
    }
    if let Some((s, mut ur)) = r.unix {
        if s.passcred()
            && let Some(cr) = ur.creds.map(|cr| ucred_out(c, cr))
            && !put_cmsg(&mut out, limit, SOL_SOCKET, SCM_CREDENTIALS, &cr.as_bytes())
        {
            mflags |= MSG_CTRUNC;
        }
        let files = std::mem::take(&mut ur.files);
        if !files.is_empty() {
            let fit = rights_fit(limit.saturating_sub(out.len())).min(files.len());
            let cloexec = flags & MSG_CMSG_CLOEXEC != 0;
            let mut fds = Vec::new();
            {
                let table = c.task.process.files();
                let mut t = lock(&table);
                for f in files.iter().take(fit) {
                    match t.install(f.clone(), cloexec, 0) {
                        Ok(fd) => fds.push(fd as i32),
                        Err(_) => break,
                    }
                }
            }
            if fds.len() < files.len() {
                mflags |= MSG_CTRUNC;
            }
            if !fds.is_empty() {
                put_cmsg(&mut out, limit, SOL_SOCKET, SCM_RIGHTS, &rights_data(&fds));
            }
        }
        drop(files);
    }
    if !out.is_empty() {
        c.write_bytes(mh.msg_control, &out)?;
    }
    mh.msg_namelen = namelen;
    mh.msg_controllen = out.len() as u64;
    mh.msg_flags = mflags;
    c.write_bytes(msg, &mh.as_bytes())?;
    Ok((r.ret, mflags))
}

/// `sizeof(struct mmsghdr)`: a `msghdr` and the `msg_len` after it, padded to 8.
const MMSGHDR: u64 = 64;
/// `MSG_WAITFORONE`.
const MSG_WAITFORONE: u32 = 0x10000;
/// `MSG_CMSG_COMPAT`: only the kernel's own compat entry points may set it.
const MSG_CMSG_COMPAT: u32 = 0x8000_0000;

/// `sendmmsg` (`__sys_sendmmsg`): up to `UIO_MAXIOV` messages, each one's bytes in its
/// `msg_len`; stops at the first error (returned only if nothing was sent) or at a message
/// that went out short.
fn sendmmsg(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, vec, flags) = (a[0], a[1], a[3] as u32);
    if flags & MSG_CMSG_COMPAT != 0 {
        return Err(Errno::EINVAL);
    }
    let vlen = (a[2] as u32).min(UIO_MAXIOV as u32) as u64;
    sock_of(c, fd)?;
    let mut sent = 0u64;
    let mut err = None;
    while sent < vlen {
        let entry = vec + sent * MMSGHDR;
        match do_sendmsg(c, fd, entry, flags) {
            Ok((n, whole)) => {
                if let Err(e) = c.write_u32(entry + Msghdr::SIZE as u64, n as u32) {
                    err = Some(e);
                    break;
                }
                sent += 1;
                if !whole {
                    break;
                }
            }
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    match err {
        Some(e) if sent == 0 => Err(e),
        _ => Ok(sent),
    }
}

/// `recvmmsg` (`__sys_recvmmsg`): up to `UIO_MAXIOV` messages; `MSG_WAITFORONE` makes the
/// receives after the first non-blocking; the timeout (what is left of it is written back)
/// is checked after each datagram, as Linux does (a receive that blocks is not cut short by
/// it). An error after some datagrams is dropped (Linux keeps it as the socket's error for the
/// next call).
fn recvmmsg(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use std::time::{Duration, Instant};
    let (fd, vec, mut flags, tsp) = (a[0], a[1], a[3] as u32, a[4]);
    if flags & MSG_CMSG_COMPAT != 0 {
        return Err(Errno::EINVAL);
    }
    let deadline = if tsp != 0 {
        let b = c.read_bytes(tsp, 16)?;
        let sec = i64::read_le(&b);
        let nsec = i64::read_le(&b[8..]);
        if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
            return Err(Errno::EINVAL);
        }
        let d = Duration::new(sec as u64, nsec as u32);
        Some(
            Instant::now()
                .checked_add(d)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 40)),
        )
    } else {
        None
    };
    let vlen = (a[2] as u32).min(UIO_MAXIOV as u32) as u64;
    sock_of(c, fd)?;
    let mut got = 0u64;
    let mut err = None;
    while got < vlen {
        let entry = vec + got * MMSGHDR;
        match do_recvmsg(c, fd, entry, flags & !MSG_WAITFORONE) {
            Ok((n, mflags)) => {
                if let Err(e) = c.write_u32(entry + Msghdr::SIZE as u64, n as u32) {
                    err = Some(e);
                    break;
                }
                got += 1;
                if flags & MSG_WAITFORONE != 0 {
                    flags |= MSG_DONTWAIT;
                }
                if let Some(d) = deadline
                    && Instant::now() >= d
                {
                    break;
                }
                if mflags & MSG_OOB != 0 {
                    break;
                }
            }
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    if got == 0
        && let Some(e) = err
    {
        return Err(e);
    }
    if let Some(d) = deadline {
        let left = d.saturating_duration_since(Instant::now());
        let mut b = (left.as_secs() as i64).to_le_bytes().to_vec();
        b.extend_from_slice(&i64::from(left.subsec_nanos()).to_le_bytes());
        c.write_bytes(tsp, &b)?;
    }
    Ok(got)
}

fn shutdown(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match sock_of(c, a[0])?.1 {
        Sock::Unix(s) => s.shutdown(a[1] as u32)?,
        Sock::Inet(s) => s.shutdown(a[1] as u32)?,
        // packet_ops and netlink_ops: sock_no_shutdown.
        Sock::Packet(_) | Sock::Netlink(_) => return Err(Errno::EOPNOTSUPP),
    }
    Ok(0)
}

fn getsockopt(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use so::*;
    let (_, s) = sock_of(c, a[0])?;
    let s = match s {
        Sock::Unix(s) => s,
        Sock::Inet(s) => {
            let lb = c.read_bytes(a[4], 4)?;
            let len = i32::from_le_bytes([lb[0], lb[1], lb[2], lb[3]]);
            let val = s.getsockopt(a[1] as i32, a[2] as i32, len)?;
            if !val.is_empty() {
                c.write_bytes(a[3], &val)?;
            }
            c.write_u32(a[4], val.len() as u32)?;
            return Ok(0);
        }
        Sock::Packet(s) => return getsockopt_packet(c, a, &s),
        Sock::Netlink(s) => return getsockopt_netlink(c, a, &s),
    };
    if a[1] as i32 != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let lb = c.read_bytes(a[4], 4)?;
    let len = i32::from_le_bytes([lb[0], lb[1], lb[2], lb[3]]);
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let int = |v: i32| v.to_le_bytes().to_vec();
    let val: Vec<u8> = match a[2] as i32 {
        SO_TYPE => int(s.ty() as i32),
        SO_ERROR => int(s.take_error()),
        SO_PASSCRED => int(s.passcred() as i32),
        SO_PEERCRED => s
            .peercred()
            .map(|cr| ucred_out(c, cr))
            .unwrap_or(Ucred {
                pid: 0,
                uid: u32::MAX,
                gid: u32::MAX,
            })
            .as_bytes(),
        SO_SNDBUF => int(s.bufs().0 as i32),
        SO_RCVBUF => int(s.bufs().1 as i32),
        SO_ACCEPTCONN => int(s.is_listening() as i32),
        SO_DOMAIN => int(AF_UNIX as i32),
        SO_PROTOCOL => int(0),
        SO_REUSEADDR | SO_KEEPALIVE | SO_BROADCAST | SO_DONTROUTE | SO_OOBINLINE | SO_DEBUG
        | SO_REUSEPORT => int(0),
        SO_RCVLOWAT | SO_SNDLOWAT => int(1),
        SO_RCVTIMEO | SO_SNDTIMEO => vec![0; 16],
        SO_LINGER => vec![0; 8],
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let n = (len as usize).min(val.len());
    c.write_bytes(a[3], &val[..n])?;
    c.write_u32(a[4], n as u32)?;
    Ok(0)
}

fn setsockopt(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use so::*;
    let (_, s) = sock_of(c, a[0])?;
    let optlen = a[4] as u32 as i32;
    if optlen < 0 {
        return Err(Errno::EINVAL);
    }
    let s = match s {
        Sock::Unix(s) => s,
        Sock::Inet(s) => {
            let (level, name) = (a[1] as i32, a[2] as i32);
            // Copy only what the option reads, as Linux does.
            let n = (optlen as usize).min(crate::inet::opt::set_len(level, name));
            let val = if n > 0 {
                c.read_bytes(a[3], n)?
            } else {
                Vec::new()
            };
            let admin = c.task.process.net_capable(CAP_NET_ADMIN);
            s.setsockopt(level, name, &val, optlen as usize, admin)?;
            return Ok(0);
        }
        Sock::Packet(s) => return setsockopt_packet(c, a, &s, optlen as usize),
        Sock::Netlink(s) => return setsockopt_netlink(c, a, &s, optlen as usize),
    };
    if a[1] as i32 != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let opt = a[2] as i32;
    let int = || -> SysResult<i32> {
        if optlen < 4 {
            return Err(Errno::EINVAL);
        }
        let b = c.read_bytes(a[3], 4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    match opt {
        SO_PASSCRED => s.set_passcred(int()? != 0),
        SO_SNDBUF | SO_SNDBUFFORCE => s.set_buf(true, int()?),
        SO_RCVBUF | SO_RCVBUFFORCE => s.set_buf(false, int()?),
        SO_REUSEADDR | SO_KEEPALIVE | SO_BROADCAST | SO_DONTROUTE | SO_OOBINLINE | SO_DEBUG
        | SO_REUSEPORT | SO_RCVLOWAT | SO_SNDLOWAT => {
            int()?;
        }
        // Receive/send timeouts are accepted; blocking calls do not time out yet.
        SO_RCVTIMEO | SO_SNDTIMEO => {
            if optlen < 16 {
                return Err(Errno::EINVAL);
            }
        }
        SO_LINGER => {
            if optlen < 8 {
                return Err(Errno::EINVAL);
            }
        }
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(0)
}

/// getsockopt on a packet socket: `SOL_PACKET` options ([`PacketSocket::getsockopt`]) and
/// the generic `SOL_SOCKET` ones (`sock_getsockopt`); other levels are `ENOPROTOOPT`
/// (`packet_getsockopt`).
fn getsockopt_packet(c: &SyscallCtx<'_>, a: [u64; 6], s: &PacketSocket) -> SysResult {
    use so::*;
    use um_uapi::abi::packet::{SOL_PACKET, opt::PACKET_HDRLEN};
    let lb = c.read_bytes(a[4], 4)?;
    let len = i32::from_le_bytes([lb[0], lb[1], lb[2], lb[3]]);
    let level = a[1] as i32;
    let name = a[2] as i32;
    let val = if level == SOL_PACKET {
        let arg = if name == PACKET_HDRLEN && len >= 4 {
            let b = c.read_bytes(a[3], 4)?;
            Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        } else {
            None
        };
        s.getsockopt(name, len, arg)?
    } else if level == SOL_SOCKET {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let int = |v: i32| v.to_le_bytes().to_vec();
        match name {
            SO_TYPE => int(s.ty() as i32),
            SO_ERROR => int(s.take_error()),
            SO_SNDBUF => int(s.bufs().0),
            SO_RCVBUF => int(s.bufs().1),
            SO_DOMAIN => int(AF_PACKET as i32),
            SO_PROTOCOL => int(s.protocol() as i32),
            SO_ACCEPTCONN | SO_PASSCRED | SO_REUSEADDR | SO_KEEPALIVE | SO_BROADCAST
            | SO_DONTROUTE | SO_OOBINLINE | SO_DEBUG | SO_REUSEPORT => int(0),
            SO_RCVLOWAT | SO_SNDLOWAT => int(1),
            SO_RCVTIMEO | SO_SNDTIMEO => vec![0; 16],
            SO_LINGER => vec![0; 8],
            SO_LOCK_FILTER => int(s.filter().1 as i32),
            // SO_GET_FILTER (sk_get_filter): lengths count instructions, not bytes; 0 asks
            // for the count, a shorter buffer is EINVAL.
            SO_ATTACH_FILTER => {
                let Some(f) = s.filter().0 else {
                    c.write_u32(a[4], 0)?;
                    return Ok(0);
                };
                if len != 0 {
                    if (len as usize) < f.len() {
                        return Err(Errno::EINVAL);
                    }
                    c.write_bytes(a[3], &f.encode())?;
                }
                c.write_u32(a[4], f.len() as u32)?;
                return Ok(0);
            }
            // sock_getbindtodevice: unbound is length 0; a buffer shorter than IFNAMSIZ is
            // EINVAL; else the name with its NUL.
            SO_BINDTODEVICE => match s.bound_device() {
                None => Vec::new(),
                Some(_) if (len as usize) < IFNAMSIZ => return Err(Errno::EINVAL),
                Some(n) => {
                    let mut v = n.into_bytes();
                    v.push(0);
                    v
                }
            },
            _ => return Err(Errno::ENOPROTOOPT),
        }
    } else {
        return Err(Errno::ENOPROTOOPT);
    };
    let n = (len.max(0) as usize).min(val.len());
    c.write_u32(a[4], n as u32)?;
    c.write_bytes(a[3], &val[..n])?;
    Ok(0)
}

/// setsockopt on a packet socket: `SOL_PACKET` ([`PacketSocket::setsockopt`], which makes
/// rings from the kernel's frames and page cache) and the generic `SOL_SOCKET` options.
fn setsockopt_packet(
    c: &SyscallCtx<'_>,
    a: [u64; 6],
    s: &PacketSocket,
    optlen: usize,
) -> SysResult {
    use so::*;
    use um_uapi::abi::packet::SOL_PACKET;
    let (level, name) = (a[1] as i32, a[2] as i32);
    if level == SOL_PACKET {
        let n = optlen.min(crate::packet::set_len(name));
        let val = if n > 0 {
            c.read_bytes(a[3], n)?
        } else {
            Vec::new()
        };
        let ring = RingCtx {
            frames: c.kernel.frames.clone(),
            cache: c.kernel.page_cache.clone(),
        };
        s.setsockopt(name, &val, optlen, Some(&ring))?;
        return Ok(0);
    }
    if level != SOL_SOCKET {
        return Err(Errno::ENOPROTOOPT);
    }
    let int = || -> SysResult<i32> {
        if optlen < 4 {
            return Err(Errno::EINVAL);
        }
        let b = c.read_bytes(a[3], 4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    match name {
        // sk_attach_filter: a sock_fprog (length, then the instructions' address).
        SO_ATTACH_FILTER => {
            if optlen < 16 {
                return Err(Errno::EINVAL);
            }
            let fp = c.read_bytes(a[3], 16)?;
            let n = usize::from(u16::from_le_bytes([fp[0], fp[1]]));
            let addr = u64::from_le_bytes(fp[8..16].try_into().expect("eight bytes"));
            if n == 0 || n > crate::packet::bpf::BPF_MAXINSNS {
                return Err(Errno::EINVAL);
            }
            let prog = c.read_bytes(addr, n * 8)?;
            s.attach_filter(crate::packet::Filter::new(&prog)?)?;
        }
        SO_DETACH_FILTER => s.detach_filter()?,
        SO_LOCK_FILTER => s.lock_filter(int()? != 0)?,
        // sock_setbindtodevice: CAP_NET_RAW; the name is at most IFNAMSIZ - 1 bytes, up to
        // its NUL; an empty one unbinds.
        SO_BINDTODEVICE => {
            if !c.task.process.net_capable(CAP_NET_RAW) {
                return Err(Errno::EPERM);
            }
            let n = optlen.min(IFNAMSIZ - 1);
            let b = if n > 0 {
                c.read_bytes(a[3], n)?
            } else {
                Vec::new()
            };
            let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
            let name = std::str::from_utf8(&b[..end]).map_err(|_| Errno::ENODEV)?;
            s.bind_to_device(name)?;
        }
        SO_SNDBUF => s.set_buf(true, int()?, false),
        SO_RCVBUF => s.set_buf(false, int()?, false),
        SO_SNDBUFFORCE | SO_RCVBUFFORCE => {
            let v = int()?;
            if !c.task.process.net_capable(CAP_NET_ADMIN) {
                return Err(Errno::EPERM);
            }
            s.set_buf(name == SO_SNDBUFFORCE, v, true);
        }
        SO_PASSCRED | SO_REUSEADDR | SO_KEEPALIVE | SO_BROADCAST | SO_DONTROUTE | SO_OOBINLINE
        | SO_DEBUG | SO_REUSEPORT | SO_RCVLOWAT | SO_SNDLOWAT => {
            int()?;
        }
        SO_RCVTIMEO | SO_SNDTIMEO => {
            if optlen < 16 {
                return Err(Errno::EINVAL);
            }
        }
        SO_LINGER => {
            if optlen < 8 {
                return Err(Errno::EINVAL);
            }
        }
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(0)
}

/// getsockopt on a netlink socket: `SOL_NETLINK` ([`NetlinkSocket::getsockopt`]) and the
/// generic `SOL_SOCKET` options; other levels are `ENOPROTOOPT` (`netlink_getsockopt`).
fn getsockopt_netlink(c: &SyscallCtx<'_>, a: [u64; 6], s: &NetlinkSocket) -> SysResult {
    use so::*;
    use um_uapi::abi::netlink::SOL_NETLINK;
    let lb = c.read_bytes(a[4], 4)?;
    let len = i32::from_le_bytes([lb[0], lb[1], lb[2], lb[3]]);
    let (level, name) = (a[1] as i32, a[2] as i32);
    if level == SOL_NETLINK {
        let (val, outlen) = s.getsockopt(name, len)?;
        c.write_u32(a[4], outlen)?;
        if !val.is_empty() {
            c.write_bytes(a[3], &val)?;
        }
        return Ok(0);
    }
    if level != SOL_SOCKET {
        return Err(Errno::ENOPROTOOPT);
    }
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let int = |v: i32| v.to_le_bytes().to_vec();
    let val = match name {
        SO_TYPE => int(s.ty() as i32),
        SO_ERROR => int(s.take_error()),
        SO_SNDBUF => int(s.bufs().0),
        SO_RCVBUF => int(s.bufs().1),
        SO_DOMAIN => int(AF_NETLINK as i32),
        SO_PROTOCOL => int(s.protocol() as i32),
        SO_ACCEPTCONN | SO_PASSCRED | SO_REUSEADDR | SO_KEEPALIVE | SO_BROADCAST | SO_DONTROUTE
        | SO_OOBINLINE | SO_DEBUG | SO_REUSEPORT => int(0),
        SO_RCVLOWAT | SO_SNDLOWAT => int(1),
        SO_RCVTIMEO | SO_SNDTIMEO => vec![0; 16],
        SO_LINGER => vec![0; 8],
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let n = (len as usize).min(val.len());
    c.write_u32(a[4], n as u32)?;
    c.write_bytes(a[3], &val[..n])?;
    Ok(0)
}

/// setsockopt on a netlink socket.
fn setsockopt_netlink(
    c: &SyscallCtx<'_>,
    a: [u64; 6],
    s: &NetlinkSocket,
    optlen: usize,
) -> SysResult {
    use so::*;
    use um_uapi::abi::netlink::SOL_NETLINK;
    let (level, name) = (a[1] as i32, a[2] as i32);
    let admin = c.task.process.net_capable(CAP_NET_ADMIN);
    let val = if optlen >= 4 {
        let b = c.read_bytes(a[3], 4)?;
        Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    } else {
        None
    };
    if level == SOL_NETLINK {
        s.setsockopt(name, val, admin)?;
        return Ok(0);
    }
    if level != SOL_SOCKET {
        return Err(Errno::ENOPROTOOPT);
    }
    let int = || val.ok_or(Errno::EINVAL);
    match name {
        SO_SNDBUF => s.set_buf(true, int()?, false),
        SO_RCVBUF => s.set_buf(false, int()?, false),
        SO_SNDBUFFORCE | SO_RCVBUFFORCE => {
            let v = int()?;
            if !admin {
                return Err(Errno::EPERM);
            }
            s.set_buf(name == SO_SNDBUFFORCE, v, true);
        }
        SO_PASSCRED | SO_REUSEADDR | SO_KEEPALIVE | SO_BROADCAST | SO_DONTROUTE | SO_OOBINLINE
        | SO_DEBUG | SO_REUSEPORT | SO_RCVLOWAT | SO_SNDLOWAT => {
            int()?;
        }
        SO_RCVTIMEO | SO_SNDTIMEO => {
            if optlen < 16 {
                return Err(Errno::EINVAL);
            }
        }
        SO_LINGER => {
            if optlen < 8 {
                return Err(Errno::EINVAL);
            }
        }
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("socket", socket)
        .partial("AF_UNIX, AF_INET/AF_INET6 (loopback and devices), AF_PACKET on every device, AF_NETLINK (NETLINK_ROUTE, NETLINK_SOCK_DIAG); other families are EAFNOSUPPORT");
    t.register("socketpair", socketpair);
    t.register("bind", bind);
    t.register("listen", listen);
    t.register("accept", accept);
    t.register("accept4", accept4);
    t.register("connect", connect);
    t.register("getsockname", getsockname);
    t.register("getpeername", getpeername);
    t.register("sendto", sendto);
    t.register("recvfrom", recvfrom);
    t.register("sendmsg", sendmsg);
    t.register("recvmsg", recvmsg);
    t.register("sendmmsg", sendmmsg);
    t.register("recvmmsg", recvmmsg)
        .partial("the timeout is checked between datagrams, as on Linux; an error after some datagrams is not kept for the next call");
    t.register("shutdown", shutdown);
    t.register("getsockopt", getsockopt);
    t.register("setsockopt", setsockopt);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_args() {
        let unix = |t| Ok((Kind::Unix(t), 0));
        assert_eq!(
            check_socket_args(1, u64::from(SOCK_STREAM | SOCK_CLOEXEC), 0),
            Ok((Kind::Unix(SOCK_STREAM), SOCK_CLOEXEC))
        );
        assert_eq!(check_socket_args(1, 3, 0), unix(SOCK_DGRAM));
        assert_eq!(check_socket_args(16, 3, 0), Ok((Kind::Netlink(3, 0), 0)));
        assert_eq!(check_socket_args(16, 2, 4), Ok((Kind::Netlink(2, 4), 0)));
        assert_eq!(check_socket_args(16, 3, 15), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(check_socket_args(16, 3, 99), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(check_socket_args(16, 1, 0), Err(Errno::ESOCKTNOSUPPORT));
        assert_eq!(check_socket_args(38, 3, 0), Err(Errno::EAFNOSUPPORT));
        assert_eq!(
            check_socket_args(17, 3, 0x300),
            Ok((Kind::Packet(SOCK_RAW, 0x300), 0))
        );
        assert_eq!(check_socket_args(0, 1, 0), Err(Errno::EAFNOSUPPORT));
        assert_eq!(check_socket_args(1, 4, 0), Err(Errno::ESOCKTNOSUPPORT));
        assert_eq!(check_socket_args(1, 1, 6), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(check_socket_args(1, 0x10001, 0), Err(Errno::EINVAL));
        assert_eq!(check_socket_args(1, 11, 0), Err(Errno::EINVAL));
    }

    /// The socket01 and socketpair01 cases of LTP, and inet_create's other refusals.
    #[test]
    fn inet_socket_args() {
        let tcp4 = Ok((Kind::Inet(AF_INET, Proto::Tcp), 0));
        assert_eq!(check_socket_args(2, 1, 0), tcp4);
        assert_eq!(check_socket_args(2, 1, 6), tcp4);
        assert_eq!(
            check_socket_args(10, 2 | u64::from(SOCK_NONBLOCK), 17),
            Ok((Kind::Inet(AF_INET6, Proto::Udp), SOCK_NONBLOCK))
        );
        assert_eq!(check_socket_args(2, 75, 0), Err(Errno::EINVAL));
        assert_eq!(check_socket_args(2, 3, 0), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(
            check_socket_args(2, 3, 1),
            Ok((Kind::Inet(AF_INET, Proto::Raw), 0))
        );
        // Raw sockets of other protocols exist for CAP_NET_RAW (udhcpc's IPPROTO_RAW one).
        assert_eq!(
            check_socket_args(2, 3, 255),
            Ok((Kind::Inet(AF_INET, Proto::Raw), 0))
        );
        assert_eq!(check_socket_args(2, 3, 256), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(check_socket_args(2, 1, 17), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(check_socket_args(2, 2, 6), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(check_socket_args(2, 1, 1), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(
            check_socket_args(2, 2, 1),
            Ok((Kind::Inet(AF_INET, Proto::Ping), 0))
        );
        assert_eq!(
            check_socket_args(10, 2, 58),
            Ok((Kind::Inet(AF_INET6, Proto::Ping), 0))
        );
        assert_eq!(check_socket_args(2, 5, 0), Err(Errno::ESOCKTNOSUPPORT));
    }

    #[test]
    fn inet_control_messages() {
        let mut ok = Vec::new();
        assert!(put_cmsg(&mut ok, 1 << 10, SOL_SOCKET, SCM_RIGHTS, &[0; 4]));
        assert!(put_cmsg(&mut ok, 1 << 10, 0, 2, &[64, 0, 0, 0]));
        assert_eq!(check_inet_control(&ok), Ok(()));
        let mut bad = Vec::new();
        assert!(put_cmsg(&mut bad, 1 << 10, SOL_SOCKET, 99, &[0; 4]));
        assert_eq!(check_inet_control(&bad), Err(Errno::EINVAL));
        bad[0] = 200;
        assert_eq!(check_inet_control(&bad), Err(Errno::EINVAL));
    }
}
