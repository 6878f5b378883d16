//! The host-socket calls that reach a destination ([`HostNet`]), behind a trait so the unit
//! tests can prove that a destination the policy forbids never gets one: the engine checks the
//! policy first and calls the trait only for an allowed address, and the tests' recording
//! implementation counts what it was asked for.
//!
//! Every socket is non-blocking and close-on-exec. The real implementation is [`RealHost`]:
//! std sockets, plus nix's safe `socket`/`connect` for the non-blocking TCP connect (std has
//! only a blocking one) and the ICMP datagram socket (ping socket, Linux
//! `net/ipv4/ping.c`), which std does not make.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::socket::{
    self, AddressFamily, SockFlag, SockProtocol, SockType, SockaddrIn, SockaddrIn6,
};

pub trait HostNet: Send {
    /// Starts a non-blocking TCP connect to `to`; the stream completes (or fails, seen by
    /// `take_error`) when epoll reports it writable.
    fn tcp_connect(&mut self, to: SocketAddr) -> io::Result<TcpStream>;
    /// A non-blocking UDP socket connected to `to`.
    fn udp_connect(&mut self, to: SocketAddr) -> io::Result<UdpSocket>;
    /// A non-blocking ICMP (or ICMPv6) echo datagram socket connected to `to`.
    fn icmp_connect(&mut self, to: IpAddr) -> io::Result<UdpSocket>;
}

pub struct RealHost;

fn family(a: IpAddr) -> AddressFamily {
    if a.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

fn nb_socket(
    a: IpAddr,
    ty: SockType,
    proto: Option<SockProtocol>,
) -> io::Result<std::os::fd::OwnedFd> {
    Ok(socket::socket(
        family(a),
        ty,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        proto,
    )?)
}

fn nb_connect(fd: &impl AsRawFd, to: SocketAddr) -> Result<(), Errno> {
    match to {
        SocketAddr::V4(a) => socket::connect(fd.as_raw_fd(), &SockaddrIn::from(a)),
        SocketAddr::V6(a) => socket::connect(fd.as_raw_fd(), &SockaddrIn6::from(a)),
    }
}

impl HostNet for RealHost {
    fn tcp_connect(&mut self, to: SocketAddr) -> io::Result<TcpStream> {
        let fd = nb_socket(to.ip(), SockType::Stream, None)?;
        match nb_connect(&fd, to) {
            Ok(()) | Err(Errno::EINPROGRESS) => {}
            Err(e) => return Err(e.into()),
        }
        let s = TcpStream::from(fd);
        // Segments from the guest are already coalesced by its own TCP; do not delay them again.
        let _ = s.set_nodelay(true);
        Ok(s)
    }

    fn udp_connect(&mut self, to: SocketAddr) -> io::Result<UdpSocket> {
        let any = if to.is_ipv4() {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        };
        let s = UdpSocket::bind((any, 0))?;
        s.set_nonblocking(true)?;
        s.connect(to)?;
        Ok(s)
    }

    fn icmp_connect(&mut self, to: IpAddr) -> io::Result<UdpSocket> {
        let proto = if to.is_ipv4() {
            SockProtocol::Icmp
        } else {
            SockProtocol::IcmpV6
        };
        // EACCES here when the caller's group is outside net.ipv4.ping_group_range.
        let fd = nb_socket(to, SockType::Datagram, Some(proto))?;
        nb_connect(&fd, SocketAddr::new(to, 0))?;
        Ok(UdpSocket::from(fd))
    }
}
