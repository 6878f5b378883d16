//! Guest test `packetsock`: AF_PACKET sockets on the loopback device (needs CAP_NET_RAW, so
//! the native run needs root).
//!
//! * Two `SOCK_RAW` `ETH_P_ALL` sockets bound to lo: one sends a frame with a private
//!   ethertype, the other receives it twice, first as `PACKET_OUTGOING`, then as
//!   `PACKET_HOST`; the sender sees only the incoming copy; a socket bound to that ethertype
//!   sees it once, a `SOCK_DGRAM` one gets the payload without the Ethernet header; the
//!   `sockaddr_ll` each receive reports; `getsockname`.
//! * Refusals: a frame shorter than the Ethernet header (EINVAL), sending unbound (ENXIO),
//!   binding an unknown ifindex (ENODEV), a stream packet socket (ESOCKTNOSUPPORT).
//! * A TPACKET_V2 receive ring: a bad request (EINVAL), mmap of the wrong length (EINVAL),
//!   then a frame arrives in slot 0 through mmap and poll, with its header and address; a
//!   version change while the ring exists is EBUSY; the statistics.
//! * A TPACKET_V3 ring whose private area does not fit its block is EINVAL (CVE-2017-7308,
//!   LTP setsockopt02); a V3 ring packs three frames into block 0 and closes it when the
//!   fourth does not fit; once the guest hands block 0 back, the retire timer closes block 1
//!   (`TP_STATUS_BLK_TMO`) and poll reports it.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-PACKETSOCK-OK. Usage: packetsock WORKDIR. On the host, lo carries other traffic: every
//! receive skips frames of other ethertypes.

use std::mem::size_of;
use umt::{check, check_eq, errno, expect_err, ok, say};

const ETH_P_ALL: u16 = 0x0003;
/// IEEE 802 "local experimental" ethertypes: nobody else sends them.
const ET_A: u16 = 0x88b5;
const ET_B: u16 = 0x88b6;
const SOL_PACKET: i32 = 263;
const PACKET_RX_RING: i32 = 5;
const PACKET_STATISTICS: i32 = 6;
const PACKET_VERSION: i32 = 10;
const TPACKET_V2: i32 = 1;
const TPACKET_V3: i32 = 2;
const PACKET_HOST: u8 = 0;
const PACKET_OUTGOING: u8 = 4;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct SockaddrLl {
    family: u16,
    protocol: u16,
    ifindex: i32,
    hatype: u16,
    pkttype: u8,
    halen: u8,
    addr: [u8; 8],
}

#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

#[repr(C)]
struct TpacketReq3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Tpacket2Hdr {
    status: u32,
    len: u32,
    snaplen: u32,
    mac: u16,
    net: u16,
    sec: u32,
    nsec: u32,
    vlan_tci: u16,
    vlan_tpid: u16,
    padding: [u8; 4],
}

fn packet_socket(ty: i32, proto: u16) -> i32 {
    // SAFETY: plain integers.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            ty | libc::SOCK_CLOEXEC,
            i32::from(proto.to_be()),
        )
    };
    if fd < 0 && errno() == libc::EPERM {
        umt::fail("socket(AF_PACKET): EPERM (run as root: packet sockets need CAP_NET_RAW)");
    }
    ok(fd as i64, "socket(AF_PACKET)") as i32
}

fn lo_addr(proto: u16, ifindex: i32) -> SockaddrLl {
    SockaddrLl {
        family: libc::AF_PACKET as u16,
        protocol: proto.to_be(),
        ifindex,
        ..Default::default()
    }
}

fn bind_ll(fd: i32, a: &SockaddrLl, len: usize) -> i64 {
    // SAFETY: a is a valid sockaddr_ll; at most its size is read.
    unsafe {
        libc::bind(
            fd,
            (a as *const SockaddrLl).cast(),
            len.min(size_of::<SockaddrLl>()) as u32,
        ) as i64
    }
}

fn bound(ty: i32, proto: u16) -> i32 {
    let fd = packet_socket(ty, proto);
    ok(
        bind_ll(fd, &lo_addr(proto, 1), size_of::<SockaddrLl>()),
        "bind lo",
    );
    fd
}

fn frame(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn send(fd: i32, data: &[u8]) -> i64 {
    // SAFETY: data is a valid buffer.
    unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), 0) as i64 }
}

fn poll_in(fd: i32, ms: i32) -> i16 {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: p is one valid pollfd.
    let n = ok(unsafe { libc::poll(&mut p, 1, ms) } as i64, "poll");
    if n == 0 { 0 } else { p.revents }
}

/// The next frame of `ethertype` (the `sll_protocol` of the receive), skipping others; None
/// when nothing arrives within a second.
fn recv_frame(fd: i32, ethertype: u16) -> Option<(Vec<u8>, SockaddrLl, u32)> {
    loop {
        if poll_in(fd, 1000) & libc::POLLIN == 0 {
            return None;
        }
        let mut buf = vec![0u8; 2048];
        let mut from = SockaddrLl::default();
        let mut len = size_of::<SockaddrLl>() as u32;
        // SAFETY: buf and from are valid for their lengths.
        let n = unsafe {
            libc::recvfrom(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
                (&mut from as *mut SockaddrLl).cast(),
                &mut len,
            )
        };
        let n = ok(n as i64, "recvfrom") as usize;
        if u16::from_be(from.protocol) == ethertype {
            buf.truncate(n);
            return Some((buf, from, len));
        }
    }
}

/// Nothing more of `ethertype` arrives within 200 ms.
fn nothing_more(fd: i32, ethertype: u16, what: &str) {
    loop {
        if poll_in(fd, 200) & libc::POLLIN == 0 {
            return;
        }
        let mut buf = [0u8; 2048];
        let mut from = SockaddrLl::default();
        let mut len = size_of::<SockaddrLl>() as u32;
        // SAFETY: buf and from are valid for their lengths.
        let n = unsafe {
            libc::recvfrom(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
                (&mut from as *mut SockaddrLl).cast(),
                &mut len,
            )
        };
        if n >= 0 && u16::from_be(from.protocol) == ethertype {
            umt::fail(format!("{what}: an extra frame (pkttype {})", from.pkttype));
        }
    }
}

fn pkttype_name(t: u8) -> &'static str {
    match t {
        PACKET_HOST => "HOST",
        PACKET_OUTGOING => "OUTGOING",
        _ => "other",
    }
}

fn taps() {
    let a = bound(libc::SOCK_RAW, ETH_P_ALL);
    let b = bound(libc::SOCK_RAW, ETH_P_ALL);
    let p = bound(libc::SOCK_RAW, ET_A);
    let d = bound(libc::SOCK_DGRAM, ET_A);

    let mut name = SockaddrLl::default();
    let mut len = size_of::<SockaddrLl>() as u32;
    // SAFETY: name is valid for len bytes.
    ok(
        unsafe { libc::getsockname(a, (&mut name as *mut SockaddrLl).cast(), &mut len) } as i64,
        "getsockname",
    );
    say(format!(
        "getsockname: len {len} family {} protocol {:#x} ifindex {} hatype {} halen {}",
        name.family,
        u16::from_be(name.protocol),
        name.ifindex,
        name.hatype,
        name.halen
    ));

    let f = frame(ET_A, b"umpacket-hello");
    check_eq(ok(send(a, &f), "send frame"), f.len() as i64, "send frame");
    for (fd, who) in [(b, "other ETH_P_ALL socket"), (a, "sender")] {
        while let Some((data, from, alen)) = recv_frame(fd, ET_A) {
            check_eq(data, f.clone(), "the frame as sent");
            say(format!(
                "{who}: {} (addrlen {alen} ifindex {} hatype {} halen {})",
                pkttype_name(from.pkttype),
                from.ifindex,
                from.hatype,
                from.halen
            ));
            if from.pkttype == PACKET_HOST {
                break;
            }
        }
    }
    nothing_more(a, ET_A, "sender");
    nothing_more(b, ET_A, "other ETH_P_ALL socket");
    let (data, from, _) =
        recv_frame(p, ET_A).unwrap_or_else(|| umt::fail("protocol socket: no frame"));
    check_eq(data.len(), f.len(), "protocol socket length");
    say(format!(
        "protocol socket: {} once",
        pkttype_name(from.pkttype)
    ));
    nothing_more(p, ET_A, "protocol socket");
    let (data, from, _) =
        recv_frame(d, ET_A).unwrap_or_else(|| umt::fail("datagram socket: no frame"));
    check_eq(&data[..], &b"umpacket-hello"[..], "datagram payload");
    say(format!(
        "datagram socket: payload only, {}",
        pkttype_name(from.pkttype)
    ));

    expect_err(
        send(a, &f[..13]),
        libc::EINVAL,
        "a frame shorter than its header",
    );
    let u = packet_socket(libc::SOCK_RAW, 0);
    expect_err(send(u, &f), libc::ENXIO, "send on an unbound socket");
    expect_err(
        bind_ll(u, &lo_addr(0, 7), size_of::<SockaddrLl>()),
        libc::ENODEV,
        "bind ifindex 7",
    );
    expect_err(
        bind_ll(u, &lo_addr(0, 1), 19),
        libc::EINVAL,
        "bind short address",
    );
    // SAFETY: plain integers.
    expect_err(
        unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_STREAM, 0) } as i64,
        libc::ESOCKTNOSUPPORT,
        "stream packet socket",
    );
    say("refusals: EINVAL, ENXIO, ENODEV, EINVAL, ESOCKTNOSUPPORT");
    for fd in [a, b, p, d, u] {
        umt::close(fd);
    }
}

fn setsockopt_raw<T>(fd: i32, name: i32, v: &T) -> i64 {
    // SAFETY: v is valid for size_of::<T>() bytes.
    unsafe {
        libc::setsockopt(
            fd,
            SOL_PACKET,
            name,
            (v as *const T).cast(),
            size_of::<T>() as u32,
        ) as i64
    }
}

/// The page size: ring blocks are whole pages (`packet_set_ring`), 4K natively here, 16K in
/// the arm64 lane's `pagesize=16K` runs.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn ring_v2() {
    let ps = page_size();
    let q = bound(libc::SOCK_RAW, ET_B);
    ok(
        setsockopt_raw(q, PACKET_VERSION, &TPACKET_V2),
        "PACKET_VERSION V2",
    );
    let bad = TpacketReq {
        block_size: ps as u32,
        block_nr: 2,
        frame_size: 100,
        frame_nr: 2 * (ps / 100) as u32,
    };
    expect_err(
        setsockopt_raw(q, PACKET_RX_RING, &bad),
        libc::EINVAL,
        "an unaligned frame size",
    );
    let req = TpacketReq {
        block_size: ps as u32,
        block_nr: 2,
        frame_size: 2048,
        frame_nr: 2 * (ps / 2048) as u32,
    };
    ok(setsockopt_raw(q, PACKET_RX_RING, &req), "PACKET_RX_RING");
    expect_err(
        setsockopt_raw(q, PACKET_VERSION, &TPACKET_V3),
        libc::EBUSY,
        "PACKET_VERSION with a ring",
    );
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a new mapping; nothing is overwritten.
    let m = unsafe { libc::mmap(std::ptr::null_mut(), ps, prot, libc::MAP_SHARED, q, 0) };
    check(
        m == libc::MAP_FAILED && errno() == libc::EINVAL,
        "mmap of half the ring: EINVAL",
    );
    // SAFETY: as above.
    let m = unsafe { libc::mmap(std::ptr::null_mut(), 2 * ps, prot, libc::MAP_SHARED, q, 0) };
    check(m != libc::MAP_FAILED, "mmap of the ring");
    let ring = m.cast::<u8>();
    // SAFETY: the ring is two pages, frame 0 at its start.
    let status0 = unsafe { std::ptr::read_volatile(ring.cast::<u32>()) };
    check_eq(status0, TP_STATUS_KERNEL, "slot 0 before");
    check_eq(poll_in(q, 0) & libc::POLLIN, 0, "poll before a frame");

    let a = packet_socket(libc::SOCK_RAW, 0);
    let mut to = lo_addr(ET_B, 1);
    to.halen = 6;
    let f = frame(ET_B, b"into-the-ring");
    // SAFETY: f and to are valid.
    let n = unsafe {
        libc::sendto(
            a,
            f.as_ptr().cast(),
            f.len(),
            0,
            (&to as *const SockaddrLl).cast(),
            size_of::<SockaddrLl>() as u32,
        )
    };
    check_eq(
        ok(n as i64, "sendto with sockaddr_ll"),
        f.len() as i64,
        "sendto",
    );
    check(
        poll_in(q, 1000) & libc::POLLIN != 0,
        "poll: POLLIN once the frame is in the ring",
    );
    // SAFETY: the header is at the start of frame 0, inside the mapping.
    let h: Tpacket2Hdr = unsafe { std::ptr::read_volatile(ring.cast::<Tpacket2Hdr>()) };
    // SAFETY: the address follows the 32-byte header, inside frame 0.
    let sll: SockaddrLl = unsafe { std::ptr::read_volatile(ring.add(32).cast::<SockaddrLl>()) };
    check_eq(h.status & TP_STATUS_USER, TP_STATUS_USER, "slot 0 status");
    check(
        usize::from(h.mac) + f.len() <= 2048,
        "frame inside its slot",
    );
    // SAFETY: tp_mac + snaplen is inside frame 0 (checked just above).
    let data =
        unsafe { std::slice::from_raw_parts(ring.add(usize::from(h.mac)), h.snaplen as usize) };
    check_eq(data, &f[..], "the frame in the ring");
    say(format!(
        "ring slot 0: len {} snaplen {} mac {} net {}; sll protocol {:#x} pkttype {} ifindex {}",
        h.len,
        h.snaplen,
        h.mac,
        h.net,
        u16::from_be(sll.protocol),
        pkttype_name(sll.pkttype),
        sll.ifindex
    ));
    // SAFETY: handing the slot back, as a capture loop does.
    unsafe { std::ptr::write_volatile(ring.cast::<u32>(), TP_STATUS_KERNEL) };
    let mut st = [0u32; 2];
    let mut len = 8u32;
    // SAFETY: st is 8 bytes.
    ok(
        unsafe {
            libc::getsockopt(
                q,
                SOL_PACKET,
                PACKET_STATISTICS,
                st.as_mut_ptr().cast(),
                &mut len,
            )
        } as i64,
        "PACKET_STATISTICS",
    );
    say(format!("statistics: packets {} drops {}", st[0], st[1]));
    // SAFETY: the mapping made above.
    ok(unsafe { libc::munmap(m, 2 * ps) } as i64, "munmap");
    umt::close(a);
    umt::close(q);
}

fn ring_v3_cve() {
    let q = packet_socket(libc::SOCK_RAW, ETH_P_ALL);
    ok(
        setsockopt_raw(q, PACKET_VERSION, &TPACKET_V3),
        "PACKET_VERSION V3",
    );
    let ps = page_size() as u32;
    let mut req = TpacketReq3 {
        block_size: ps,
        block_nr: 2,
        frame_size: ps,
        frame_nr: 2,
        retire_blk_tov: 100,
        sizeof_priv: 3 << 30,
        feature_req_word: 0,
    };
    expect_err(
        setsockopt_raw(q, PACKET_RX_RING, &req),
        libc::EINVAL,
        "tp_sizeof_priv past the block",
    );
    req.sizeof_priv = 512;
    ok(
        setsockopt_raw(q, PACKET_RX_RING, &req),
        "a V3 ring with a 512-byte private area",
    );
    say("V3 ring: private area 3<<30 EINVAL, 512 accepted");
    umt::close(q);
}

/// `struct tpacket_block_desc` with `tpacket_hdr_v1`, flattened.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct BlockDesc {
    version: u32,
    offset_to_priv: u32,
    block_status: u32,
    num_pkts: u32,
    offset_to_first_pkt: u32,
    blk_len: u32,
    seq_num: u64,
    ts_first: [u32; 2],
    ts_last: [u32; 2],
}

/// The start of `struct tpacket3_hdr`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Tpacket3Hdr {
    next_offset: u32,
    sec: u32,
    nsec: u32,
    snaplen: u32,
    len: u32,
    status: u32,
    mac: u16,
    net: u16,
}

fn ring_v3_blocks() {
    let ps = page_size();
    // Frames of a quarter block less a little: three fit in a block (with their headers),
    // the fourth closes it and opens the next.
    let flen = ps / 4 - 24;
    let q = bound(libc::SOCK_RAW, ET_B);
    ok(
        setsockopt_raw(q, PACKET_VERSION, &TPACKET_V3),
        "PACKET_VERSION V3",
    );
    let req = TpacketReq3 {
        block_size: ps as u32,
        block_nr: 2,
        frame_size: 2048,
        frame_nr: 2 * (ps / 2048) as u32,
        retire_blk_tov: 20,
        sizeof_priv: 0,
        feature_req_word: 0,
    };
    ok(setsockopt_raw(q, PACKET_RX_RING, &req), "V3 PACKET_RX_RING");
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a new mapping; nothing is overwritten.
    let m = unsafe { libc::mmap(std::ptr::null_mut(), 2 * ps, prot, libc::MAP_SHARED, q, 0) };
    check(m != libc::MAP_FAILED, "mmap of the V3 ring");
    let ring = m.cast::<u8>();
    let a = bound(libc::SOCK_RAW, ET_B);
    for tag in 0..4u8 {
        let mut f = frame(ET_B, &vec![tag; flen]);
        f.truncate(flen);
        check_eq(ok(send(a, &f), "send"), flen as i64, "send a quarter block");
    }
    check(poll_in(q, 1000) & libc::POLLIN != 0, "poll: block 0 closed");
    // SAFETY: the descriptor of block 0 is at the start of the mapping.
    let b0: BlockDesc = unsafe { std::ptr::read_volatile(ring.cast::<BlockDesc>()) };
    say(format!(
        "V3 block 0: status {:#x} packets {} first at {} length {} seq {}",
        b0.block_status, b0.num_pkts, b0.offset_to_first_pkt, b0.blk_len, b0.seq_num
    ));
    let mut off = b0.offset_to_first_pkt as usize;
    for i in 0..b0.num_pkts {
        check(
            off + size_of::<Tpacket3Hdr>() <= ps,
            "frame header inside block 0",
        );
        // SAFETY: off stays inside block 0 (each next_offset is checked against the block).
        let h: Tpacket3Hdr =
            unsafe { std::ptr::read_volatile(ring.add(off).cast::<Tpacket3Hdr>()) };
        check(
            off + usize::from(h.mac) + 14 < ps,
            "frame data inside block 0",
        );
        // SAFETY: checked just above to be inside block 0.
        let tag = unsafe { *ring.add(off + usize::from(h.mac) + 14) };
        say(format!(
            "  frame {i}: next {} snaplen {} len {} status {:#x} mac {} net {} tag {tag}",
            h.next_offset, h.snaplen, h.len, h.status, h.mac, h.net
        ));
        check(
            h.next_offset as usize <= ps - off,
            "next offset inside block 0",
        );
        off += h.next_offset as usize;
    }
    // Hand block 0 back: only the retire timer can make the socket readable again now.
    // SAFETY: block_status is at offset 8 of block 0.
    unsafe { std::ptr::write_volatile(ring.add(8).cast::<u32>(), TP_STATUS_KERNEL) };
    check(
        poll_in(q, 2000) & libc::POLLIN != 0,
        "poll: block 1 retired by its timer",
    );
    // SAFETY: block 1's descriptor starts a page in.
    let b1: BlockDesc = unsafe { std::ptr::read_volatile(ring.add(ps).cast::<BlockDesc>()) };
    say(format!(
        "V3 block 1: status {:#x} packets {} seq {}",
        b1.block_status, b1.num_pkts, b1.seq_num
    ));
    // SAFETY: the mapping made above.
    ok(unsafe { libc::munmap(m, 2 * ps) } as i64, "munmap");
    umt::close(a);
    umt::close(q);
}

fn main() {
    umt::init("packetsock");
    let _ = umt::workdir();
    taps();
    ring_v2();
    ring_v3_cve();
    ring_v3_blocks();
    umt::done("packetsock");
}
