//! Socket syscalls (Linux `net/socket.c`, `net/core/scm.c`, `net/core/sock.c` for options):
//! socket, socketpair, bind, listen, accept, accept4, connect, getsockname, getpeername,
//! sendto, recvfrom, sendmsg, recvmsg, shutdown, getsockopt, setsockopt.
//!
//! Only AF_UNIX exists ([`crate::socket::unix`]); every other family is `EAFNOSUPPORT`. This
//! file copies guest memory, resolves addresses (path walk, `mknod` of the socket inode on
//! bind), and installs passed descriptors at `recvmsg`.

use super::{AT_FDCWD, lookup, start_dir};
use crate::namei::{self, Last};
use crate::socket::unix::{SocketFile, UnixAddr, UnixSocket, task_peercred, task_ucred};
use crate::socket::*;
use std::sync::Arc;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{OpenFile, Owner, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::uio::{Iovec, UIO_MAXIOV};
use um_uapi::{Errno, SysResult};

/// `O_NONBLOCK`.
const O_NONBLOCK: u32 = 0o4000;
/// Largest receive buffer one call allocates.
const MAX_RECV: usize = 4 << 20;
/// Largest control buffer (`net.core.optmem_max`).
const MAX_CONTROL: u64 = 131_072;

/// The socket behind `fd`, or `ENOTSOCK` (`EBADF` for an `O_PATH` descriptor, as
/// net/socket.c `sockfd_lookup_light` gets it with `fdget`).
pub fn socket_of(c: &SyscallCtx<'_>, fd: u64) -> SysResult<(Arc<OpenFile>, Arc<UnixSocket>)> {
    let f = lock(&c.task.process.files()).get_nopath(fd)?;
    let s = f
        .ops
        .as_any()
        .and_then(|a| a.downcast_ref::<SocketFile>())
        .map(|s| s.sock.clone())
        .ok_or(Errno::ENOTSOCK)?;
    Ok((f, s))
}

fn io_ctx<'a>(c: &'a SyscallCtx<'_>, f: &OpenFile, flags: u32) -> IoCtx<'a> {
    IoCtx {
        task: c.task,
        nonblock: f.flags() & O_NONBLOCK != 0 || flags & MSG_DONTWAIT != 0,
    }
}

fn install(c: &SyscallCtx<'_>, s: Arc<UnixSocket>, flags: u32) -> SysResult<u32> {
    let file = OpenFile::new(
        Box::new(SocketFile::new(s)),
        2 | (flags & SOCK_NONBLOCK),
        None,
    );
    lock(&c.task.process.files()).install(file, flags & SOCK_CLOEXEC != 0, 0)
}

fn owner(c: &SyscallCtx<'_>) -> (u32, u32) {
    let cr = lock(&c.task.process.creds);
    (cr.fsuid, cr.fsgid)
}

/// Checks `socket`'s domain, type and protocol; returns (type, flags).
fn check_socket_args(domain: u64, ty: u64, protocol: u64) -> SysResult<(u32, u32)> {
    let ty = ty as u32;
    let flags = ty & (SOCK_NONBLOCK | SOCK_CLOEXEC);
    let ty = ty & !flags;
    if ty & !0xf != 0 {
        return Err(Errno::EINVAL);
    }
    let domain = domain as u32;
    if domain != AF_UNIX {
        // AF_INET, AF_INET6, AF_NETLINK and the rest: no such protocol family here.
        return Err(Errno::EAFNOSUPPORT);
    }
    if protocol != 0 && protocol != u64::from(AF_UNIX) {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let ty = match ty {
        SOCK_STREAM | SOCK_DGRAM | SOCK_SEQPACKET => ty,
        // unix_create: SOCK_RAW is quietly a datagram socket.
        SOCK_RAW => SOCK_DGRAM,
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    Ok((ty, flags))
}

fn socket(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (ty, flags) = check_socket_args(a[0], a[1], a[2])?;
    let s = UnixSocket::new(ty, owner(c));
    Ok(install(c, s, flags)? as u64)
}

fn socketpair(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (ty, flags) = check_socket_args(a[0], a[1], a[2])?;
    let (x, y) = UnixSocket::pair(ty, owner(c), task_peercred(c.task));
    let fx = install(c, x, flags)?;
    let fy = match install(c, y, flags) {
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

/// Reads a socket address argument (`move_addr_to_kernel`, then `unix_validate_addr`).
fn read_addr(c: &SyscallCtx<'_>, addr: u64, len: u64) -> SysResult<UnixAddr> {
    let len = len as u32 as i32;
    if !(0..=128).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let b = c.read_bytes(addr, len as usize)?;
    UnixAddr::parse(&b)
}

/// Writes an address back (`move_addr_to_user`): at most `*len_ptr` bytes, then the real
/// length into `*len_ptr`.
fn write_addr(c: &SyscallCtx<'_>, addr: u64, len_ptr: u64, bytes: &[u8]) -> SysResult<()> {
    if addr == 0 || len_ptr == 0 {
        return Ok(());
    }
    let b = c.read_bytes(len_ptr, 4)?;
    let len = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let n = (len as usize).min(bytes.len());
    c.write_bytes(addr, &bytes[..n])?;
    c.write_u32(len_ptr, bytes.len() as u32)
}

/// Finds the socket an address names (`unix_find_other`).
fn resolve(c: &SyscallCtx<'_>, addr: &UnixAddr) -> SysResult<Arc<UnixSocket>> {
    match addr {
        UnixAddr::Unnamed => Err(Errno::EINVAL),
        UnixAddr::Abstract(n) => UnixSocket::find_abstract(n).ok_or(Errno::ECONNREFUSED),
        UnixAddr::Path(p) => {
            let d = lookup(c, AT_FDCWD as u64, p, Last::Follow)?;
            let st = d.inode.stat()?;
            if st.mode & mode::S_IFMT != mode::S_IFSOCK {
                return Err(Errno::ECONNREFUSED);
            }
            // unix_find_bsd: connecting (or sending) to a socket file needs write permission.
            let creds = *lock(&c.task.process.creds);
            namei::permission(&st, &creds, namei::MAY_WRITE)?;
            UnixSocket::find_path(crate::mount::inode_key(&*d.inode)).ok_or(Errno::ECONNREFUSED)
        }
    }
}

fn bind(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (_, s) = socket_of(c, a[0])?;
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
            let key = crate::mount::inode_key(&*inode);
            if let Err(e) = s.bind_path(key, p) {
                let _ = parent.inode.unlink(&name);
                return Err(e);
            }
            crate::inotify::create(&*parent.inode, &name, false);
        }
    }
    Ok(0)
}

fn listen(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (_, s) = socket_of(c, a[0])?;
    s.listen(a[1] as i32, task_peercred(c.task))?;
    Ok(0)
}

fn do_accept(c: &SyscallCtx<'_>, a: [u64; 6], flags: u32) -> SysResult {
    if flags & !(SOCK_CLOEXEC | SOCK_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let (f, s) = socket_of(c, a[0])?;
    let new = s.accept(&io_ctx(c, &f, 0))?;
    let peer = new.peer_addr().unwrap_or_default().to_bytes();
    let fd = install(c, new, flags)?;
    if let Err(e) = write_addr(c, a[1], a[2], &peer) {
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
    let (f, s) = socket_of(c, a[0])?;
    let len = a[2] as u32 as i32;
    if s.ty() == SOCK_DGRAM && len >= 2 {
        let fam = c.read_bytes(a[1], 2)?;
        if u16::from_le_bytes([fam[0], fam[1]]) as u32 == AF_UNSPEC {
            s.connect_dgram(None)?;
            return Ok(0);
        }
    }
    let addr = read_addr(c, a[1], a[2])?;
    let target = resolve(c, &addr)?;
    s.connect(&io_ctx(c, &f, 0), &target)?;
    Ok(0)
}

fn getsockname(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (_, s) = socket_of(c, a[0])?;
    write_addr(c, a[1], a[2], &s.local_addr().to_bytes())?;
    Ok(0)
}

fn getpeername(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (_, s) = socket_of(c, a[0])?;
    let p = s.peer_addr()?;
    write_addr(c, a[1], a[2], &p.to_bytes())?;
    Ok(0)
}

/// `scm_check_creds`: a sender may claim its own pid and any of its own ids (root: any).
fn check_creds(c: &SyscallCtx<'_>, u: &Ucred) -> SysResult<()> {
    let cr = *lock(&c.task.process.creds);
    let root = cr.euid == 0;
    let pid_ok = u.pid == c.task.process.pid as i32 || root;
    let uid_ok = [cr.uid, cr.euid, cr.suid].contains(&u.uid) || root;
    let gid_ok = [cr.gid, cr.egid, cr.sgid].contains(&u.gid) || root;
    if pid_ok && uid_ok && gid_ok {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// The common part of sendto and sendmsg.
fn do_send(
    c: &SyscallCtx<'_>,
    fd: u64,
    data: &[u8],
    to: Option<UnixAddr>,
    control: &[u8],
    flags: u32,
) -> SysResult {
    let (f, s) = socket_of(c, fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let ctl = parse_control(control)?;
    let mut creds = task_ucred(c.task);
    if let Some(u) = ctl.creds {
        check_creds(c, &u)?;
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
        (Some(addr), _) => Some(resolve(c, &addr)?),
    };
    let io = io_ctx(c, &f, flags);
    Ok(s.send(&io, data, files, creds, target, flags & MSG_NOSIGNAL != 0)? as u64)
}

fn sendto(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let len = (a[2] as usize).min(SOCK_BUF_MAX);
    let data = c.read_bytes(a[1], len)?;
    let to = if a[4] != 0 && a[5] as u32 != 0 {
        Some(read_addr(c, a[4], a[5])?)
    } else {
        None
    };
    do_send(c, a[0], &data, to, &[], a[3] as u32)
}

/// Largest stream write handed over in one piece (bigger writes return short, as a stream
/// may).
const SOCK_BUF_MAX: usize = 16 << 20;

fn read_iovecs(c: &SyscallCtx<'_>, addr: u64, n: u64) -> SysResult<Vec<Iovec>> {
    if n > UIO_MAXIOV as u64 {
        return Err(Errno::EMSGSIZE);
    }
    let b = c.read_bytes(addr, n as usize * Iovec::SIZE)?;
    let v: Vec<Iovec> = b.chunks_exact(Iovec::SIZE).map(Iovec::read_le).collect();
    let mut total: u64 = 0;
    for io in &v {
        if (io.len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        total = total.checked_add(io.len).ok_or(Errno::EINVAL)?;
    }
    if total > i64::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    Ok(v)
}

fn read_msghdr(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Msghdr> {
    Ok(Msghdr::read_le(&c.read_bytes(addr, Msghdr::SIZE)?))
}

fn sendmsg(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let mh = read_msghdr(c, a[1])?;
    let iovs = read_iovecs(c, mh.msg_iov, mh.msg_iovlen)?;
    let mut data = Vec::new();
    for io in iovs {
        if io.len == 0 {
            continue;
        }
        let n = (io.len as usize).min(SOCK_BUF_MAX.saturating_sub(data.len()));
        data.extend_from_slice(&c.read_bytes(io.base, n)?);
    }
    let to = if mh.msg_name != 0 && mh.msg_namelen != 0 {
        Some(read_addr(c, mh.msg_name, u64::from(mh.msg_namelen))?)
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
    do_send(c, a[0], &data, to, &control, a[2] as u32)
}

fn do_recv(
    c: &SyscallCtx<'_>,
    fd: u64,
    len: usize,
    flags: u32,
) -> SysResult<(Arc<UnixSocket>, crate::socket::unix::Recv, Vec<u8>)> {
    let (f, s) = socket_of(c, fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut buf = vec![0u8; len.min(MAX_RECV)];
    let r = s.recv(&io_ctx(c, &f, flags), &mut buf, flags)?;
    buf.truncate(r.n);
    Ok((s, r, buf))
}

/// The return value of a receive: with `MSG_TRUNC`, a datagram's real length.
fn recv_ret(s: &UnixSocket, r: &crate::socket::unix::Recv, flags: u32) -> u64 {
    if flags & MSG_TRUNC != 0 && s.ty() != SOCK_STREAM {
        r.full_len as u64
    } else {
        r.n as u64
    }
}

fn recvfrom(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = a[3] as u32;
    let (s, r, data) = do_recv(c, a[0], a[2] as usize, flags)?;
    c.write_bytes(a[1], &data)?;
    let name = if r.creds.is_some() {
        r.from.to_bytes()
    } else {
        Vec::new()
    };
    write_addr(c, a[4], a[5], &name)?;
    Ok(recv_ret(&s, &r, flags))
}

fn recvmsg(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = a[2] as u32;
    let mut mh = read_msghdr(c, a[1])?;
    let iovs = read_iovecs(c, mh.msg_iov, mh.msg_iovlen)?;
    let total: u64 = iovs.iter().map(|i| i.len).sum();
    let (s, mut r, data) = do_recv(c, a[0], total as usize, flags)?;
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
    if mh.msg_name != 0 && r.creds.is_some() {
        let b = r.from.to_bytes();
        let n = (mh.msg_namelen as usize).min(b.len());
        c.write_bytes(mh.msg_name, &b[..n])?;
        namelen = b.len() as u32;
    }
    // Control: credentials first, then descriptors (scm_recv).
    let limit = if mh.msg_control == 0 {
        0
    } else {
        mh.msg_controllen as usize
    };
    let mut out = Vec::new();
    let mut mflags = r.flags;
    if s.passcred()
        && let Some(cr) = r.creds
        && !put_cmsg(&mut out, limit, SOL_SOCKET, SCM_CREDENTIALS, &cr.as_bytes())
    {
        mflags |= MSG_CTRUNC;
    }
    let files = std::mem::take(&mut r.files);
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
    if !out.is_empty() {
        c.write_bytes(mh.msg_control, &out)?;
    }
    mh.msg_namelen = namelen;
    mh.msg_controllen = out.len() as u64;
    mh.msg_flags = mflags;
    c.write_bytes(a[1], &mh.as_bytes())?;
    Ok(recv_ret(&s, &r, flags))
}

fn shutdown(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (_, s) = socket_of(c, a[0])?;
    s.shutdown(a[1] as u32)?;
    Ok(0)
}

fn getsockopt(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use so::*;
    let (_, s) = socket_of(c, a[0])?;
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
    let (_, s) = socket_of(c, a[0])?;
    if a[1] as i32 != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let optlen = a[4] as u32 as i32;
    if optlen < 0 {
        return Err(Errno::EINVAL);
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

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("socket", socket);
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
    t.register("shutdown", shutdown);
    t.register("getsockopt", getsockopt);
    t.register("setsockopt", setsockopt);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_args() {
        assert_eq!(
            check_socket_args(1, u64::from(SOCK_STREAM | SOCK_CLOEXEC), 0),
            Ok((SOCK_STREAM, SOCK_CLOEXEC))
        );
        assert_eq!(check_socket_args(1, 3, 0), Ok((SOCK_DGRAM, 0)));
        assert_eq!(check_socket_args(2, 1, 0), Err(Errno::EAFNOSUPPORT));
        assert_eq!(check_socket_args(10, 1, 0), Err(Errno::EAFNOSUPPORT));
        assert_eq!(check_socket_args(16, 3, 0), Err(Errno::EAFNOSUPPORT));
        assert_eq!(check_socket_args(1, 4, 0), Err(Errno::ESOCKTNOSUPPORT));
        assert_eq!(check_socket_args(1, 1, 6), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(check_socket_args(1, 0x10001, 0), Err(Errno::EINVAL));
    }
}
