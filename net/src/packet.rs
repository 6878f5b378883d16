//! AF_PACKET sockets (Linux `net/packet/af_packet.c`, packet(7)) on every network device of
//! their namespace: `SOCK_RAW` (whole Ethernet frames) and `SOCK_DGRAM` (payloads, the kernel
//! builds and strips the 14-byte header), with the memory-mapped receive rings of TPACKET_V1,
//! V2 and V3.
//!
//! **lo** (ifindex 1, `ARPHRD_LOOPBACK`, address 00:00:00:00:00:00, mtu 65536, always up): the
//! only frames on it are the ones packet sockets send: **the loopback carries no frames for
//! internet sockets** (TCP and UDP data is queued directly at the receiving socket, see
//! [`super::inet`]), so a packet socket never sees IP traffic on lo, and a frame a packet
//! socket sends there never reaches an internet socket. A frame sent on `lo` takes Linux's two
//! passes past the taps: first `dev_queue_xmit_nit` hands a `PACKET_OUTGOING` copy to every
//! `ETH_P_ALL` socket of the namespace except the sender (`skb_loop_sk`) and those with
//! `PACKET_IGNORE_OUTGOING`; then `loopback_xmit` receives it (`eth_type_trans`: protocol from
//! the ethertype, packet type from the destination address), and every socket whose protocol
//! is `ETH_P_ALL` or that ethertype gets it, the sender too.
//!
//! **Devices with a driver** (`eth0`, [`super::dev`]): a send goes out through
//! `dev::dev_queue_xmit` (`ENETDOWN` while the device is down, `ENOBUFS` when the driver
//! dropped it), whose tap ([`device_tap`], registered once with `dev::register_tap`) hands
//! `PACKET_OUTGOING` copies to the other `ETH_P_ALL` sockets; a frame the driver receives
//! reaches the same tap from `dev::netif_rx`, classified by the device's address
//! (`PACKET_HOST`, `PACKET_BROADCAST`, `PACKET_MULTICAST`, `PACKET_OTHERHOST`). The
//! `sockaddr_ll` of a frame and of `getsockname` carries the device's index, hardware type
//! (`ARPHRD_ETHER`) and address. A `SOCK_DGRAM` send on an Ethernet device needs a destination
//! address (`EINVAL` without one: `eth_header` has nothing to put there).
//!
//! Which sockets take a frame: those bound to ifindex 0 (any device) or the frame's device;
//! protocol 0 is not receiving (`po->running`) until bound with a protocol. Then the socket's
//! classic BPF filter (`SO_ATTACH_FILTER`, [`bpf`]) runs on the data as the socket sees it
//! (from the link header for `SOCK_RAW`, the network header for `SOCK_DGRAM`): 0 drops the
//! frame, a smaller number truncates it (`run_filter`). `SO_BINDTODEVICE` is accepted (with
//! `CAP_NET_RAW`, `ENODEV` for no such device) and reported, and changes nothing, as on Linux:
//! `packet_rcv` and `packet_snd` go by the `bind` device, never `sk_bound_dev_if`.
//!
//! Receiving: without a ring, frames queue at the socket (charged against `SO_RCVBUF`; a full
//! buffer drops and counts, as `packet_rcv`). With `PACKET_RX_RING`, `tpacket_rcv` writes them
//! into the ring: the ring is kernel memory (page-cache frames of a [`RingVm`], pinned while the
//! ring exists) that `mmap` of the socket maps shared, so the guest and the kernel see the same
//! bytes. V1/V2: one frame per slot, the slot must be `TP_STATUS_KERNEL` (else the frame is
//! dropped and counted), `TP_STATUS_USER` marks it filled. V3: frames are packed into the
//! current block, which is closed (`TP_STATUS_USER`) when full or when its retire timeout has
//! passed; a block the guest still owns freezes the queue (`tp_freeze_q_cnt`).
//!
//! Key types: [`PacketSocket`] (the `packet_sock`), [`PacketFile`] (its `FileOps`, with `mmap`
//! of the ring), [`RingVm`] (the ring memory), [`Geometry`] and [`check_ring`] (the
//! `packet_set_ring` validation), [`parse_bind_addr`]/[`parse_send_addr`] (`sockaddr_ll`).
//! The syscalls in [`crate::sys`] copy guest memory and call in here; struct layouts are in
//! `um_uapi::abi::packet`.
//!
//! Options at `SOL_PACKET`: `PACKET_VERSION`, `PACKET_HDRLEN`, `PACKET_RESERVE`,
//! `PACKET_RX_RING`/`PACKET_TX_RING` (with `packet_set_ring`'s exact checks, [`check_ring`]),
//! `PACKET_STATISTICS` (reset on read), `PACKET_ADD_MEMBERSHIP`/`PACKET_DROP_MEMBERSHIP`
//! (recorded with their counts; promiscuous or multicast mode changes nothing: every device
//! here passes every frame up),
//! `PACKET_AUXDATA` (the `tpacket_auxdata` control message), `PACKET_IGNORE_OUTGOING`,
//! `PACKET_LOSS`, `PACKET_COPY_THRESH`, `PACKET_ORIGDEV`, `PACKET_TIMESTAMP`,
//! `PACKET_TX_HAS_OFF`, `PACKET_QDISC_BYPASS` (stored); others are `ENOPROTOOPT`. At
//! `SOL_SOCKET` (in `crate::sys`): `SO_ATTACH_FILTER`/`SO_DETACH_FILTER`/`SO_LOCK_FILTER`,
//! `SO_GET_FILTER`, `SO_BINDTODEVICE`, the buffer sizes.
//!
//! Not here (differences from Linux): `SOCK_PACKET` sockets (`ESOCKTNOSUPPORT`), fanout
//! (`PACKET_FANOUT` is `ENOPROTOOPT`), eBPF filters (`SO_ATTACH_BPF`), `PACKET_VNET_HDR`
//! (`ENOPROTOOPT`), timestamping options (ring frames always carry the software receive
//! time), VLAN information, `TP_FT_REQ_FILL_RXHASH` (the hash is 0), `SO_RCVTIMEO` and
//! `SO_SNDTIMEO` (accepted, a blocking receive waits until a frame or a signal),
//! (The interface ioctls, `SIOCGIFINDEX` ..., are [`super::devioctl`]'s.) The receive buffer
//! charge of a frame is the unix datagram estimate ([`super::unix::dgram_charge`]), not the
//! exact `skb->truesize`, so the frame count at which `SO_RCVBUF` starts dropping differs a
//! little from Linux's.
//!
//! The V3 retire timer (`tp_retire_blk_tov`, 8 ms when 0, as lo has no link speed) runs on one
//! kernel thread for all sockets and is armed only while the open block has frames or the
//! queue is frozen (Linux keeps it ticking always); it fires on the ticks Linux's would.
//! A `MAP_PRIVATE` mapping of a ring copies a page the guest writes (Linux maps the ring pages
//! themselves either way), and so the kernel no longer sees that page's status words.
//! The TX ring (`PACKET_TX_RING`) sends V1/V2 frames marked `TP_STATUS_SEND_REQUEST` on
//! `send` (with `tpacket_snd`'s checks and `TP_STATUS_WRONG_FORMAT`), without waiting for
//! frames still being filled (as with `MSG_DONTWAIT`); V3 TX rings are accepted but `send`
//! transmits nothing from them and returns 0 (Linux sends V3 TX frames too).

pub mod bpf;

pub use bpf::Filter;

use super::dev::{self, NetDevice};
use super::inet::opt::{Cmsg, RMEM_MAX, SOCK_MIN_RCVBUF, SOCK_MIN_SNDBUF, WMEM_MAX, buf_value};
use super::{MSG_DONTWAIT, MSG_PEEK, MSG_TRUNC, SOCK_DGRAM, SOCK_RAW};
use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use um_fs::pipe::{FIONREAD, next_ino};
use um_kernel::netns::{self, NetNs, PerNet};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, GuestMem, Kstat};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue};
use um_mm::{Frame, FrameAllocator, PageCache, VmFile};
use um_uapi::abi::packet::opt::*;
use um_uapi::abi::packet::*;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::poll::{POLLERR, POLLIN, POLLOUT, POLLRDNORM, POLLWRBAND, POLLWRNORM};
use um_uapi::{Errno, SysResult};

pub use um_uapi::abi::capability::CAP_NET_RAW;
/// The loopback device's interface index.
pub const LO_IFINDEX: i32 = 1;
/// The loopback device's mtu.
pub const LO_MTU: usize = 65_536;
/// `VLAN_HLEN`: `packet_snd` allows this much over mtu + header for a tagged frame.
const VLAN_HLEN: usize = 4;
/// `ETH_P_8021Q`.
const ETH_P_8021Q: u16 = 0x8100;
/// `SIOCOUTQ`.
const SIOCOUTQ: u32 = 0x5411;
/// `MSG_ERRQUEUE`.
const MSG_ERRQUEUE: u32 = 0x2000;
/// `MSG_CMSG_COMPAT`.
const MSG_CMSG_COMPAT: u32 = 0x8000_0000;
/// `net.core.rmem_default` / `wmem_default`: a new socket's buffers.
const RMEM_DEFAULT: i32 = 212_992;
/// `V3_ALIGNMENT`: frames in a V3 block are aligned to this.
const V3_ALIGNMENT: u32 = 8;
/// `BLK_HDR_LEN`: the block descriptor, aligned.
const BLK_HDR_LEN: u64 = 48;
/// `DEFAULT_PRB_RETIRE_TOV` (ms): lo reports no link speed, so a zero `tp_retire_blk_tov`
/// becomes this (`prb_calc_retire_blk_tmo`).
const DEFAULT_PRB_RETIRE_TOV: u32 = 8;
/// `sizeof(struct packet_mreq_max)`: the most membership bytes read.
pub const MREQ_MAX: usize = 8 + 32;
/// Largest ring (all blocks) we allocate: a bigger request is `ENOMEM`, as an allocation
/// failure in `alloc_pg_vec` would be.
const RING_MAX_BYTES: u64 = 1 << 30;

/// `BLK_PLUS_PRIV(sz)`: where the first frame of a V3 block starts.
fn blk_plus_priv(sizeof_priv: u64) -> u64 {
    BLK_HDR_LEN + sizeof_priv.next_multiple_of(u64::from(V3_ALIGNMENT))
}

/// The validated shape of a ring request (`packet_set_ring`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub block_size: u32,
    pub block_nr: u32,
    pub frame_size: u32,
    pub frame_nr: u32,
    pub frames_per_block: u32,
    pub retire_blk_tov: u32,
    pub sizeof_priv: u32,
    pub feature_req_word: u32,
}

impl Geometry {
    /// Bytes of the whole ring.
    pub fn bytes(&self) -> u64 {
        u64::from(self.block_size) * u64::from(self.block_nr)
    }
}

/// The ring request of `PACKET_RX_RING`/`PACKET_TX_RING`: how many bytes `setsockopt` reads for
/// `version` (`tpacket_req` for V1/V2, `tpacket_req3` for V3), `EINVAL` when `optlen` is
/// shorter; decodes them (a V1/V2 request has no V3 fields).
pub fn parse_ring_req(version: i32, val: &[u8], optlen: usize) -> SysResult<TpacketReq3> {
    let len = if version == TPACKET_V3 {
        TpacketReq3::SIZE
    } else {
        TpacketReq::SIZE
    };
    if optlen < len || val.len() < len {
        return Err(Errno::EINVAL);
    }
    let mut b = val[..len].to_vec();
    b.resize(TpacketReq3::SIZE, 0);
    Ok(TpacketReq3::read_le(&b))
}

/// `packet_set_ring`'s checks of a request with blocks, in Linux's order: block size positive
/// and page aligned; V3: the block must hold its descriptor, the private area and one minimal
/// frame (computed in 64 bits: CVE-2017-7308's overflow); the frame at least `tp_hdrlen` plus
/// `PACKET_RESERVE` and `TPACKET_ALIGNMENT`-aligned; at least one frame per block, no overflow,
/// and `tp_frame_nr` exactly frames per block times blocks; a V3 TX ring without the RX-only
/// fields. `Ok(None)` for a zero-block request (free the ring: `tp_frame_nr` must be 0).
pub fn check_ring(
    version: i32,
    reserve: u32,
    req: &TpacketReq3,
    tx: bool,
    page: u64,
) -> SysResult<Option<Geometry>> {
    if req.tp_block_nr == 0 {
        if req.tp_frame_nr != 0 {
            return Err(Errno::EINVAL);
        }
        return Ok(None);
    }
    let hdrlen = tpacket_hdrlen(version);
    if req.tp_block_size as i32 <= 0 || u64::from(req.tp_block_size) % page != 0 {
        return Err(Errno::EINVAL);
    }
    let min_frame = hdrlen.wrapping_add(reserve);
    if version >= TPACKET_V3
        && u64::from(req.tp_block_size)
            < blk_plus_priv(u64::from(req.tp_sizeof_priv)) + u64::from(min_frame)
    {
        return Err(Errno::EINVAL);
    }
    // The CVE-2017-7308 check of older kernels, implied by the one above.
    if version >= TPACKET_V3 && req.tp_sizeof_priv >= req.tp_block_size {
        return Err(Errno::EINVAL);
    }
    if req.tp_frame_size < min_frame || req.tp_frame_size & (TPACKET_ALIGNMENT - 1) != 0 {
        return Err(Errno::EINVAL);
    }
    let fpb = req.tp_block_size / req.tp_frame_size;
    if fpb == 0 || fpb > u32::MAX / req.tp_block_nr || fpb * req.tp_block_nr != req.tp_frame_nr {
        return Err(Errno::EINVAL);
    }
    let geo = Geometry {
        block_size: req.tp_block_size,
        block_nr: req.tp_block_nr,
        frame_size: req.tp_frame_size,
        frame_nr: req.tp_frame_nr,
        frames_per_block: fpb,
        retire_blk_tov: req.tp_retire_blk_tov,
        sizeof_priv: req.tp_sizeof_priv,
        feature_req_word: req.tp_feature_req_word,
    };
    if geo.bytes() > RING_MAX_BYTES {
        return Err(Errno::ENOMEM);
    }
    // Block transmit is not supported (by Linux either): no V3 receive fields on a TX ring.
    if version == TPACKET_V3
        && tx
        && (req.tp_retire_blk_tov != 0 || req.tp_sizeof_priv != 0 || req.tp_feature_req_word != 0)
    {
        return Err(Errno::EINVAL);
    }
    Ok(Some(geo))
}

/// `packet_bind`'s address: at least a whole `sockaddr_ll` of family `AF_PACKET`, else
/// `EINVAL`.
pub fn parse_bind_addr(b: &[u8]) -> SysResult<SockaddrLl> {
    if b.len() < SockaddrLl::SIZE {
        return Err(Errno::EINVAL);
    }
    let sll = SockaddrLl::read_le(b);
    if u32::from(sll.sll_family) != AF_PACKET {
        return Err(Errno::EINVAL);
    }
    Ok(sll)
}

/// `packet_snd`'s destination: at least a whole `sockaddr_ll` and room for `sll_halen`
/// address bytes, else `EINVAL` (the family is not checked, as on Linux).
pub fn parse_send_addr(b: &[u8]) -> SysResult<SockaddrLl> {
    if b.len() < SockaddrLl::SIZE {
        return Err(Errno::EINVAL);
    }
    let sll = SockaddrLl::read_le(b);
    if b.len() < usize::from(sll.sll_halen) + 12 {
        return Err(Errno::EINVAL);
    }
    Ok(sll)
}

/// `eth_type_trans` on lo: the protocol and packet type of a received frame (at least
/// `ETH_HLEN` long).
pub fn eth_type_trans(frame: &[u8]) -> (u16, u8) {
    eth_type_trans_on(frame, &[0; 6])
}

/// `eth_type_trans` on a device with address `mac`: `PACKET_HOST` for a frame to it,
/// `PACKET_BROADCAST`, `PACKET_MULTICAST`, else `PACKET_OTHERHOST`.
pub fn eth_type_trans_on(frame: &[u8], mac: &[u8; 6]) -> (u16, u8) {
    let dest = &frame[0..6];
    let pkttype = if dest == mac {
        PACKET_HOST
    } else if dest[0] & 1 != 0 {
        if dest == [0xff; 6] {
            PACKET_BROADCAST
        } else {
            PACKET_MULTICAST
        }
    } else {
        PACKET_OTHERHOST
    };
    let ty = u16::from_be_bytes([frame[12], frame[13]]);
    let proto = if ty >= ETH_P_802_3_MIN {
        ty
    } else if frame.len() >= 16 && frame[14] == 0xff && frame[15] == 0xff {
        ETH_P_802_3
    } else {
        ETH_P_802_2
    };
    (proto, pkttype)
}

/// The ring memory: page-cache frames under an id of its own, held (one reference each) while
/// this lives, so a mapping and the kernel write the same frames. The socket holds one `Arc`,
/// each mapping another: more than one means mapped (`po->mapped`).
pub struct RingVm {
    id: u64,
    len: u64,
    page: u64,
    pages: Mutex<Vec<Frame>>,
    frames: Arc<FrameAllocator>,
    cache: Arc<PageCache>,
}

/// What making ring memory needs from the kernel.
#[derive(Clone)]
pub struct RingCtx {
    pub frames: Arc<FrameAllocator>,
    pub cache: Arc<PageCache>,
}

impl RingVm {
    fn new(ctx: &RingCtx, len: u64) -> SysResult<Arc<RingVm>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // Page-cache ids: tmpfs uses bit 63 with its instance number from bit 40, hostfs the
        // inode number and device; this range is neither's.
        let id = (1 << 63) | (0x3fff << 48) | NEXT.fetch_add(1, Ordering::Relaxed);
        let page = ctx.frames.granule().size();
        let vm = Arc::new(RingVm {
            id,
            len,
            page,
            pages: Mutex::new(Vec::new()),
            frames: ctx.frames.clone(),
            cache: ctx.cache.clone(),
        });
        let dynvm: Arc<dyn VmFile> = vm.clone();
        for pg in 0..len.div_ceil(page) {
            let f = ctx.cache.get_page(&dynvm, pg)?;
            lock(&vm.pages).push(f);
        }
        Ok(vm)
    }

    fn read(&self, off: u64, buf: &mut [u8]) {
        let pages = lock(&self.pages);
        let mut done = 0usize;
        while done < buf.len() {
            let a = off + done as u64;
            let (pg, o) = ((a / self.page) as usize, (a % self.page) as usize);
            let n = (buf.len() - done).min(self.page as usize - o);
            match pages.get(pg) {
                Some(&f) => self.frames.read(f, o, &mut buf[done..done + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
    }

    fn write(&self, off: u64, data: &[u8]) {
        let pages = lock(&self.pages);
        let mut done = 0usize;
        while done < data.len() {
            let a = off + done as u64;
            let (pg, o) = ((a / self.page) as usize, (a % self.page) as usize);
            let n = (data.len() - done).min(self.page as usize - o);
            if let Some(&f) = pages.get(pg) {
                self.frames.write(f, o, &data[done..done + n]);
            }
            done += n;
        }
    }

    fn read_u32(&self, off: u64) -> u32 {
        let mut b = [0u8; 4];
        self.read(off, &mut b);
        u32::from_le_bytes(b)
    }

    fn write_u32(&self, off: u64, v: u32) {
        self.write(off, &v.to_le_bytes());
    }
}

impl VmFile for RingVm {
    fn id(&self) -> u64 {
        self.id
    }

    fn size(&self) -> u64 {
        self.len
    }

    fn read_page(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        // Only reached if the cache lost a page: refill it from the frame we hold.
        let n = buf.len().min(self.len.saturating_sub(offset) as usize);
        self.read(offset, &mut buf[..n]);
        Ok(n)
    }

    fn write_page(&self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        self.write(offset, data);
        Ok(())
    }

    fn name(&self) -> String {
        "socket:[packet-ring]".to_string()
    }
}

impl Drop for RingVm {
    fn drop(&mut self) {
        self.cache.invalidate(self.id);
        for f in std::mem::take(&mut *lock(&self.pages)) {
            self.frames.put(f);
        }
    }
}

/// The V3 block state (`struct tpacket_kbdq_core`).
#[derive(Clone, Copy, Debug)]
struct Kbdq {
    kactive: u32,
    knxt_seq: u64,
    /// Offset in the current block where the next frame goes, and of the last frame.
    nxt_offset: u32,
    prev: u32,
    frozen: bool,
    blk_len: u32,
    num_pkts: u32,
    last_ts: (u32, u32),
    opened: Instant,
    tov: Duration,
    /// A retire timer entry is pending.
    armed: bool,
    max_frame_len: u32,
}

/// One ring inside the socket's [`RingVm`].
struct Ring {
    geo: Geometry,
    /// Byte offset of the ring in the mapping (RX first, then TX).
    base: u64,
    /// Next frame (V1/V2).
    head: u32,
    v3: Option<Kbdq>,
}

impl Ring {
    fn frame_off(&self, i: u32) -> u64 {
        let g = &self.geo;
        self.base
            + u64::from(i / g.frames_per_block) * u64::from(g.block_size)
            + u64::from(i % g.frames_per_block) * u64::from(g.frame_size)
    }

    fn block_off(&self, b: u32) -> u64 {
        self.base + u64::from(b) * u64::from(self.geo.block_size)
    }
}

/// A frame queued at a socket, as that socket sees it.
struct Pkt {
    /// The bytes the socket reads: the whole frame (`SOCK_RAW`) or the payload.
    data: Vec<u8>,
    proto: u16,
    pkttype: u8,
    src: [u8; 6],
    /// Where the network header starts in `data` (`tp_net` of `PACKET_AUXDATA`).
    net_off: u16,
    charge: usize,
    /// The device it came in or went out on, and its hardware type.
    ifindex: i32,
    hatype: u16,
}

/// A multicast/promiscuous membership (`struct packet_mclist`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mc {
    ifindex: i32,
    ty: u16,
    addr: Vec<u8>,
    count: u32,
}

struct Inner {
    /// The protocol (host byte order; `po->num`), 0: none.
    num: u16,
    /// Bound device, 0: any.
    ifindex: i32,
    /// Receiving (`po->running`): has a protocol.
    running: bool,
    queue: VecDeque<Pkt>,
    rmem: usize,
    rcvbuf: i32,
    sndbuf: i32,
    version: i32,
    reserve: u32,
    auxdata: bool,
    origdev: bool,
    ignore_outgoing: bool,
    loss: bool,
    tstamp: i32,
    copy_thresh: i32,
    tx_has_off: bool,
    qdisc_bypass: bool,
    packets: u32,
    drops: u32,
    freeze_q_cnt: u32,
    rx: Option<Ring>,
    tx: Option<Ring>,
    vm: Option<Arc<RingVm>>,
    mclist: Vec<Mc>,
    err: Option<Errno>,
    /// `SO_ATTACH_FILTER`'s program, and `SO_LOCK_FILTER`.
    filter: Option<Arc<Filter>>,
    filter_locked: bool,
    /// `SO_BINDTODEVICE` (`sk_bound_dev_if`): kept and reported; AF_PACKET itself goes by the
    /// device of `bind`, as Linux's `packet_rcv`/`packet_snd` never read `sk_bound_dev_if`.
    bound_dev_if: i32,
}

/// The packet sockets of one network namespace (`net->packet.sklist`).
#[derive(Default)]
struct PacketNet {
    socks: Mutex<Vec<Weak<PacketSocket>>>,
}

impl PerNet for PacketNet {}

/// A packet socket.
pub struct PacketSocket {
    ty: u32,
    inner: Mutex<Inner>,
    wq: WaitQueue,
    ino: u64,
    owner: (u32, u32),
    net: Arc<NetNs>,
    me: Weak<PacketSocket>,
}

/// What a receive got.
pub struct PacketRecv {
    pub data: Vec<u8>,
    /// The return value (the frame's length with `MSG_TRUNC`).
    pub ret: usize,
    pub flags: u32,
    /// The `sockaddr_ll` of the frame.
    pub name: Vec<u8>,
    pub control: Vec<Cmsg>,
}

fn now_ts() -> (u32, u32) {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as u32, d.subsec_nanos())
}

fn int_of(val: &[u8], optlen: usize, exact: bool) -> SysResult<i32> {
    if (exact && optlen != 4) || optlen < 4 || val.len() < 4 {
        return Err(Errno::EINVAL);
    }
    Ok(i32::from_le_bytes([val[0], val[1], val[2], val[3]]))
}

impl PacketSocket {
    /// `packet_create` after the capability and type checks: a socket of type `ty` in the
    /// caller's namespace; a non-zero `protocol` (network byte order, as passed) starts it
    /// receiving on every device.
    pub fn new(ty: u32, protocol: u32, owner: (u32, u32)) -> Arc<PacketSocket> {
        let num = u16::from_be(protocol as u16);
        let net = netns::current();
        let s = Arc::new_cyclic(|me| PacketSocket {
            ty,
            inner: Mutex::new(Inner {
                num,
                ifindex: 0,
                running: num != 0,
                queue: VecDeque::new(),
                rmem: 0,
                rcvbuf: RMEM_DEFAULT,
                sndbuf: RMEM_DEFAULT,
                version: TPACKET_V1,
                reserve: 0,
                auxdata: false,
                origdev: false,
                ignore_outgoing: false,
                loss: false,
                tstamp: 0,
                copy_thresh: 0,
                tx_has_off: false,
                qdisc_bypass: false,
                packets: 0,
                drops: 0,
                freeze_q_cnt: 0,
                rx: None,
                tx: None,
                vm: None,
                mclist: Vec::new(),
                err: None,
                filter: None,
                filter_locked: false,
                bound_dev_if: 0,
            }),
            wq: WaitQueue::new(),
            ino: next_ino(),
            owner,
            net: net.clone(),
            me: me.clone(),
        });
        static TAP: std::sync::Once = std::sync::Once::new();
        TAP.call_once(|| dev::register_tap(device_tap));
        let pn = net.generic::<PacketNet>();
        let mut l = lock(&pn.socks);
        l.retain(|w| w.strong_count() > 0);
        l.push(Arc::downgrade(&s));
        s
    }

    /// `SOCK_RAW` or `SOCK_DGRAM`.
    pub fn ty(&self) -> u32 {
        self.ty
    }

    /// `SO_PROTOCOL`: 0, as `packet_create` never sets `sk_protocol`.
    pub fn protocol(&self) -> u32 {
        0
    }

    /// `packet_release`: stop receiving, drop the queue and the rings (a mapping keeps the
    /// ring memory until it is unmapped).
    fn release(&self) {
        let mut i = lock(&self.inner);
        i.running = false;
        i.queue.clear();
        i.rmem = 0;
        i.rx = None;
        i.tx = None;
        i.vm = None;
        i.mclist.clear();
    }

    /// `packet_bind`: `ifindex` 0 (any) or a device of the namespace, else `ENODEV`; a zero
    /// protocol keeps the current one.
    pub fn bind(&self, b: &[u8]) -> SysResult<()> {
        let sll = parse_bind_addr(b)?;
        if sll.sll_ifindex != 0 && self.device(sll.sll_ifindex).is_none() {
            return Err(Errno::ENODEV);
        }
        let mut i = lock(&self.inner);
        let proto = u16::from_be_bytes(sll.sll_protocol);
        let proto = if proto == 0 { i.num } else { proto };
        i.num = proto;
        i.ifindex = sll.sll_ifindex;
        i.running = proto != 0;
        Ok(())
    }

    /// The device `ifindex` of the socket's namespace.
    fn device(&self, ifindex: i32) -> Option<Arc<NetDevice>> {
        dev::devices(&self.net).by_index(ifindex)
    }

    /// `packet_getname`: the bound device and protocol; the device's type and address, or no
    /// device for ifindex 0. Its length is `sll_addr`'s offset plus `sll_halen`.
    pub fn local_addr(&self) -> Vec<u8> {
        let (num, ifindex) = {
            let i = lock(&self.inner);
            (i.num, i.ifindex)
        };
        let d = (ifindex != 0).then(|| self.device(ifindex)).flatten();
        let mut addr = [0u8; 8];
        if let Some(d) = &d {
            addr[..6].copy_from_slice(&d.mac);
        }
        let sll = SockaddrLl {
            sll_family: AF_PACKET as u16,
            sll_protocol: num.to_be_bytes(),
            sll_ifindex: ifindex,
            sll_hatype: d.as_ref().map_or(0, |d| d.kind),
            sll_pkttype: 0,
            sll_halen: if d.is_some() { ETH_ALEN as u8 } else { 0 },
            sll_addr: addr,
        };
        let mut b = sll.as_bytes();
        b.truncate(12 + usize::from(sll.sll_halen));
        b
    }

    /// `packet_sendmsg` (`packet_snd`, or `tpacket_snd` with a TX ring): checks the
    /// destination and the frame, then sends it on lo. Returns the bytes sent.
    pub fn send(&self, data: &[u8], to: Option<&[u8]>) -> SysResult<usize> {
        if lock(&self.inner).tx.is_some() {
            return self.tpacket_snd(to);
        }
        self.snd(data, to)
    }

    fn snd(&self, data: &[u8], to: Option<&[u8]>) -> SysResult<usize> {
        let (ifindex, proto, addr) = match to {
            None => {
                let i = lock(&self.inner);
                (i.ifindex, i.num, None)
            }
            Some(b) => {
                let sll = parse_send_addr(b)?;
                let addr = (sll.sll_halen != 0).then_some(sll);
                (sll.sll_ifindex, u16::from_be_bytes(sll.sll_protocol), addr)
            }
        };
        // packet_snd: the device (ENXIO without one), up (ENETDOWN).
        let d = if ifindex == 0 {
            None
        } else {
            self.device(ifindex)
        }
        .ok_or(Errno::ENXIO)?;
        let lo = d.is_loopback();
        if !lo && !d.is_up() {
            return Err(Errno::ENETDOWN);
        }
        let mtu = if lo { LO_MTU } else { d.mtu() as usize };
        let reserve = if self.ty == SOCK_RAW { ETH_HLEN } else { 0 };
        if data.len() > mtu + reserve + VLAN_HLEN {
            return Err(Errno::EMSGSIZE);
        }
        let frame = if self.ty == SOCK_DGRAM {
            // dev_hard_header (eth_header): the given destination (always ETH_ALEN bytes of
            // sll_addr, whatever sll_halen says), else on lo (IFF_LOOPBACK) the zero address;
            // an Ethernet device without a destination has no header to build (EINVAL).
            // The source is the device's address.
            let dest = match addr {
                Some(a) => a.sll_addr[..ETH_ALEN].try_into().expect("six bytes"),
                None if lo => [0u8; ETH_ALEN],
                None => return Err(Errno::EINVAL),
            };
            let mut f = Vec::with_capacity(ETH_HLEN + data.len());
            f.extend_from_slice(&dest);
            f.extend_from_slice(&d.mac);
            let ty = if proto == ETH_P_802_3 || proto == ETH_P_802_2 {
                data.len() as u16
            } else {
                proto
            };
            f.extend_from_slice(&ty.to_be_bytes());
            f.extend_from_slice(data);
            f
        } else {
            // dev_validate_header: lo's hard and minimum header are both ETH_HLEN.
            if data.len() < ETH_HLEN {
                return Err(Errno::EINVAL);
            }
            data.to_vec()
        };
        if data.len() > mtu + reserve {
            // packet_extra_vlan_len_allowed: only a VLAN-tagged frame may be longer.
            if u16::from_be_bytes([frame[12], frame[13]]) != ETH_P_8021Q {
                return Err(Errno::EMSGSIZE);
            }
        }
        // packet_parse_headers: a raw frame sent as protocol 0 or ETH_P_ALL carries its own.
        let out_proto = if self.ty == SOCK_RAW && (proto == 0 || proto == ETH_P_ALL) {
            u16::from_be_bytes([frame[12], frame[13]])
        } else {
            proto
        };
        if lo {
            self.xmit(&frame, out_proto);
        } else {
            // dev_queue_xmit: the taps (but not this socket: skb_loop_sk), then the driver.
            SENDER.with(|c| c.set(self as *const PacketSocket as usize));
            let r = dev::dev_queue_xmit(&d, &frame);
            SENDER.with(|c| c.set(0));
            r?;
        }
        Ok(data.len())
    }

    /// `dev_queue_xmit` on lo: the outgoing taps, then `loopback_xmit`'s receive.
    fn xmit(&self, frame: &[u8], out_proto: u16) {
        let socks: Vec<Arc<PacketSocket>> = {
            let pn = self.net.generic::<PacketNet>();
            let l = lock(&pn.socks);
            l.iter().filter_map(Weak::upgrade).collect()
        };
        let src: [u8; 6] = frame[6..12].try_into().expect("six bytes");
        for s in &socks {
            if std::ptr::eq(Arc::as_ptr(s), self) {
                continue;
            }
            s.tap(
                frame,
                out_proto,
                PACKET_OUTGOING,
                src,
                true,
                LO_IFINDEX,
                ARPHRD_LOOPBACK,
            );
        }
        let (proto, pkttype) = eth_type_trans(frame);
        for s in &socks {
            s.tap(
                frame,
                proto,
                pkttype,
                src,
                false,
                LO_IFINDEX,
                ARPHRD_LOOPBACK,
            );
        }
    }

    /// One socket's hook: whether it takes this frame, then `packet_rcv` or `tpacket_rcv`.
    fn tap(
        &self,
        frame: &[u8],
        proto: u16,
        pkttype: u8,
        src: [u8; 6],
        outgoing: bool,
        ifindex: i32,
        hatype: u16,
    ) {
        let mut i = lock(&self.inner);
        if !i.running || !(i.ifindex == 0 || i.ifindex == ifindex) {
            return;
        }
        if outgoing {
            if i.num != ETH_P_ALL || i.ignore_outgoing {
                return;
            }
        } else if i.num != ETH_P_ALL && i.num != proto {
            return;
        }
        // What this socket sees: SOCK_DGRAM sockets get the payload.
        let (data, net_off) = if self.ty == SOCK_DGRAM {
            (&frame[ETH_HLEN..], 0u16)
        } else {
            (frame, ETH_HLEN as u16)
        };
        // run_filter: 0 drops (not counted), less than the length truncates.
        let data = match &i.filter {
            Some(f) => {
                let meta = bpf::Meta {
                    protocol: proto,
                    pkttype,
                    ifindex,
                    hatype,
                };
                let off = if self.ty == SOCK_DGRAM { ETH_HLEN } else { 0 };
                let keep = f.run(frame, off, ETH_HLEN, &meta) as usize;
                if keep == 0 {
                    return;
                }
                &data[..data.len().min(keep)]
            }
            None => data,
        };
        if i.rx.is_some() {
            self.tpacket_rcv(&mut i, data, proto, pkttype, src, ifindex, hatype);
            self.v3_arm(&mut i);
            drop(i);
            self.wq.wake_all();
            return;
        }
        // packet_rcv: a full receive buffer drops and counts.
        if i.rmem >= i.rcvbuf.max(0) as usize {
            i.drops = i.drops.wrapping_add(1);
            return;
        }
        let charge = super::unix::dgram_charge(data.len());
        i.rmem += charge;
        i.packets = i.packets.wrapping_add(1);
        i.queue.push_back(Pkt {
            data: data.to_vec(),
            proto,
            pkttype,
            src,
            net_off,
            charge,
            ifindex,
            hatype,
        });
        drop(i);
        self.wq.wake_all();
    }

    /// `tpacket_rcv`: writes the frame into the RX ring.
    fn tpacket_rcv(
        &self,
        i: &mut Inner,
        data: &[u8],
        proto: u16,
        pkttype: u8,
        src: [u8; 6],
        ifindex: i32,
        hatype: u16,
    ) {
        let version = i.version;
        let hdrlen = tpacket_hdrlen(version);
        let (macoff, netoff) = if self.ty == SOCK_DGRAM {
            let n = tpacket_align(hdrlen + 16) + i.reserve;
            (n, n)
        } else {
            let maclen = ETH_HLEN as u32;
            let n = tpacket_align(hdrlen + maclen.max(16)) + i.reserve;
            (n - maclen, n)
        };
        let mut macoff = macoff;
        let mut snaplen = data.len() as u32;
        let Some(vm) = i.vm.clone() else { return };
        let losing = i.drops != 0;
        let mut status = TP_STATUS_USER;
        if losing {
            status |= TP_STATUS_LOSING;
        }
        let ts = now_ts();
        let frame_off;
        if version <= TPACKET_V2 {
            if netoff > u32::from(u16::MAX) {
                i.drops = i.drops.wrapping_add(1);
                return;
            }
            let rx = i.rx.as_mut().expect("ring");
            if macoff + snaplen > rx.geo.frame_size {
                snaplen = rx.geo.frame_size.saturating_sub(macoff);
            }
            let off = rx.frame_off(rx.head);
            if vm.read_u32(off) != TP_STATUS_KERNEL {
                i.drops = i.drops.wrapping_add(1);
                return;
            }
            rx.head = if rx.head + 1 >= rx.geo.frame_nr {
                0
            } else {
                rx.head + 1
            };
            frame_off = off;
        } else {
            let max =
                i.rx.as_ref()
                    .and_then(|r| r.v3)
                    .map_or(0, |k| k.max_frame_len);
            if macoff + snaplen > max {
                match max.checked_sub(macoff) {
                    Some(n) => snaplen = n,
                    None => {
                        snaplen = 0;
                        macoff = max;
                    }
                }
            }
            let Some(off) = Self::v3_lookup(i, &vm, macoff + snaplen) else {
                i.drops = i.drops.wrapping_add(1);
                return;
            };
            frame_off = off;
        }
        i.packets = i.packets.wrapping_add(1);
        vm.write(frame_off + u64::from(macoff), &data[..snaplen as usize]);
        let mut hdr = Vec::new();
        match version {
            TPACKET_V1 => TpacketHdr {
                tp_status: 0,
                tp_len: data.len() as u32,
                tp_snaplen: snaplen,
                tp_mac: macoff as u16,
                tp_net: netoff as u16,
                tp_sec: ts.0,
                tp_usec: ts.1 / 1000,
                pad: 0,
            }
            .write_le(&mut hdr),
            TPACKET_V2 => Tpacket2Hdr {
                tp_status: 0,
                tp_len: data.len() as u32,
                tp_snaplen: snaplen,
                tp_mac: macoff as u16,
                tp_net: netoff as u16,
                tp_sec: ts.0,
                tp_nsec: ts.1,
                ..Default::default()
            }
            .write_le(&mut hdr),
            _ => {
                let next = vm.read_u32(frame_off);
                Tpacket3Hdr {
                    tp_next_offset: next,
                    tp_sec: ts.0,
                    tp_nsec: ts.1,
                    tp_snaplen: snaplen,
                    tp_len: data.len() as u32,
                    tp_status: status,
                    tp_mac: macoff as u16,
                    tp_net: netoff as u16,
                    ..Default::default()
                }
                .write_le(&mut hdr);
                if let Some(k) = i.rx.as_mut().and_then(|r| r.v3.as_mut()) {
                    k.last_ts = ts;
                }
            }
        }
        vm.write(frame_off, &hdr);
        let hsize = match version {
            TPACKET_V1 => TpacketHdr::SIZE,
            TPACKET_V2 => Tpacket2Hdr::SIZE,
            _ => Tpacket3Hdr::SIZE,
        } as u32;
        let mut addr = [0u8; 8];
        addr[..6].copy_from_slice(&src);
        let sll = SockaddrLl {
            sll_family: AF_PACKET as u16,
            sll_protocol: proto.to_be_bytes(),
            sll_ifindex: ifindex,
            sll_hatype: hatype,
            sll_pkttype: pkttype,
            sll_halen: ETH_ALEN as u8,
            sll_addr: addr,
        };
        vm.write(frame_off + u64::from(tpacket_align(hsize)), &sll.as_bytes());
        // The status last: the guest may take the frame once it sees TP_STATUS_USER.
        if version <= TPACKET_V2 {
            vm.write_u32(frame_off, status);
        }
    }

    /// `__packet_lookup_frame_in_block`: room for `len` bytes in the current V3 block, closing
    /// it and opening the next when it is full; `None` when the guest still holds the next
    /// block (the queue freezes).
    fn v3_lookup(i: &mut Inner, vm: &RingVm, len: u32) -> Option<u64> {
        let drops = i.drops;
        let rx = i.rx.as_mut()?;
        let mut k = rx.v3?;
        let bs = rx.geo.block_size;
        if k.frozen {
            if vm.read_u32(rx.block_off(k.kactive) + 8) & TP_STATUS_USER != 0 {
                return None;
            }
            open_block(rx, &mut k, vm);
        }
        let total = len.next_multiple_of(V3_ALIGNMENT);
        if u64::from(k.nxt_offset) + u64::from(total) < u64::from(bs) {
            let off = fill_curr_block(rx, &mut k, vm, total);
            rx.v3 = Some(k);
            return Some(off);
        }
        retire_current_block(rx, &mut k, vm, 0, drops);
        let r = if dispatch_next_block(rx, &mut k, vm, &mut i.freeze_q_cnt) {
            let off = fill_curr_block(rx, &mut k, vm, total);
            Some(off)
        } else {
            None
        };
        rx.v3 = Some(k);
        r
    }

    /// The retire timer's work (`prb_retire_rx_blk_timer_expired`): an open block with frames
    /// whose timeout has passed is closed with `TP_STATUS_BLK_TMO`, and a frozen queue whose
    /// block the guest released reopens. True when a block was closed (the caller wakes the
    /// readers once it dropped the lock).
    fn v3_retire_if_due(i: &mut Inner, vm: &RingVm) -> bool {
        let drops = i.drops;
        let Some(rx) = i.rx.as_mut() else {
            return false;
        };
        let Some(mut k) = rx.v3 else { return false };
        if k.opened.elapsed() < k.tov {
            return false;
        }
        let mut closed = false;
        let status = vm.read_u32(rx.block_off(k.kactive) + 8);
        if !k.frozen {
            if k.num_pkts == 0 {
                k.opened = Instant::now();
            } else {
                retire_current_block(rx, &mut k, vm, TP_STATUS_BLK_TMO, drops);
                dispatch_next_block(rx, &mut k, vm, &mut i.freeze_q_cnt);
                closed = true;
            }
        } else if status & TP_STATUS_USER == 0 {
            open_block(rx, &mut k, vm);
        } else {
            k.opened = Instant::now();
        }
        rx.v3 = Some(k);
        closed
    }

    /// Arms the retire timer of a V3 ring that has frames in its open block (or a frozen
    /// queue) for its next tick: Linux's timer runs every `tov` from the block's opening.
    fn v3_arm(&self, i: &mut Inner) {
        let Some(k) = i.rx.as_mut().and_then(|r| r.v3.as_mut()) else {
            return;
        };
        if k.armed || (k.num_pkts == 0 && !k.frozen) {
            return;
        }
        let tov = k.tov.max(Duration::from_millis(1));
        let ticks = (k.opened.elapsed().as_nanos() / tov.as_nanos()) as u32 + 1;
        k.armed = true;
        retire_timer_schedule(k.opened + tov * ticks, self.me.clone());
    }

    /// The retire timer fired.
    fn v3_expired(&self) {
        let mut i = lock(&self.inner);
        let Some(vm) = i.vm.clone() else { return };
        if let Some(k) = i.rx.as_mut().and_then(|r| r.v3.as_mut()) {
            k.armed = false;
        }
        let closed = Self::v3_retire_if_due(&mut i, &vm);
        self.v3_arm(&mut i);
        drop(i);
        if closed {
            self.wq.wake_all();
        }
    }

    /// `tpacket_snd` for V1/V2: sends every frame from the TX head that is marked
    /// `TP_STATUS_SEND_REQUEST`, marking it `TP_STATUS_AVAILABLE` again.
    fn tpacket_snd(&self, to: Option<&[u8]>) -> SysResult<usize> {
        // The destination first (tpacket_snd looks the device up before any frame).
        let ifindex = match to {
            Some(b) => parse_send_addr(b)?.sll_ifindex,
            None => lock(&self.inner).ifindex,
        };
        if ifindex == 0 || self.device(ifindex).is_none() {
            return Err(Errno::ENXIO);
        }
        let mut total = 0usize;
        loop {
            let (vm, off, version, hdr_off, frame_size, tx_has_off, loss) = {
                let i = lock(&self.inner);
                let Some(tx) = i.tx.as_ref() else { break };
                let Some(vm) = i.vm.clone() else { break };
                if i.version > TPACKET_V2 {
                    break;
                }
                let off = tx.frame_off(tx.head);
                let hdr_off = tpacket_hdrlen(i.version) - SockaddrLl::SIZE as u32;
                (
                    vm,
                    off,
                    i.version,
                    hdr_off,
                    tx.geo.frame_size,
                    i.tx_has_off,
                    i.loss,
                )
            };
            let (status, len, mac) = if version == TPACKET_V1 {
                let mut b = vec![0u8; TpacketHdr::SIZE];
                vm.read(off, &mut b);
                let h = TpacketHdr::read_le(&b);
                (h.tp_status as u32, h.tp_len, h.tp_mac)
            } else {
                let mut b = vec![0u8; Tpacket2Hdr::SIZE];
                vm.read(off, &mut b);
                let h = Tpacket2Hdr::read_le(&b);
                (h.tp_status, h.tp_len, h.tp_mac)
            };
            if status != TP_STATUS_SEND_REQUEST {
                break;
            }
            // tpacket_parse_header: the data after the header, or at tp_mac with
            // PACKET_TX_HAS_OFF (not inside the header, not past the frame).
            let size_max = frame_size - hdr_off;
            let data_off = if tx_has_off { u32::from(mac) } else { hdr_off };
            let r = if len > size_max {
                Err(Errno::EMSGSIZE)
            } else if data_off < hdr_off || data_off >= frame_size || data_off + len > frame_size {
                Err(Errno::EINVAL)
            } else {
                let mut data = vec![0u8; len as usize];
                vm.read(off + u64::from(data_off), &mut data);
                vm.write_u32(off, TP_STATUS_SENDING);
                self.snd(&data, to)
            };
            match r {
                Ok(n) => {
                    total += n;
                    vm.write_u32(off, TP_STATUS_AVAILABLE);
                }
                // A bad frame: skipped with PACKET_LOSS, else marked and reported.
                Err(_) if loss => vm.write_u32(off, TP_STATUS_AVAILABLE),
                Err(e) => {
                    vm.write_u32(off, TP_STATUS_WRONG_FORMAT);
                    return Err(e);
                }
            }
            let mut i = lock(&self.inner);
            if let Some(tx) = i.tx.as_mut() {
                tx.head = if tx.head + 1 >= tx.geo.frame_nr {
                    0
                } else {
                    tx.head + 1
                };
            }
        }
        Ok(total)
    }

    /// `packet_recvmsg`.
    pub fn recv(&self, io: &IoCtx<'_>, len: usize, flags: u32) -> SysResult<PacketRecv> {
        if flags & !(MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_COMPAT | MSG_ERRQUEUE) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & MSG_ERRQUEUE != 0 {
            return Err(Errno::EAGAIN);
        }
        io.wait(&[&self.wq], || {
            let mut i = lock(&self.inner);
            if let Some(e) = i.err.take() {
                return Some(Err(e));
            }
            let p = if flags & MSG_PEEK != 0 {
                let p = i.queue.front()?;
                Pkt {
                    data: p.data.clone(),
                    proto: p.proto,
                    pkttype: p.pkttype,
                    src: p.src,
                    net_off: p.net_off,
                    charge: 0,
                    ifindex: p.ifindex,
                    hatype: p.hatype,
                }
            } else {
                let p = i.queue.pop_front()?;
                i.rmem -= p.charge;
                p
            };
            let aux = i.auxdata;
            Some(Ok(Self::received(p, len, flags, aux)))
        })?
    }

    fn received(p: Pkt, len: usize, flags: u32, auxdata: bool) -> PacketRecv {
        let full = p.data.len();
        let n = full.min(len);
        let mut out_flags = 0;
        if n < full {
            out_flags |= MSG_TRUNC;
        }
        let mut addr = [0u8; 8];
        addr[..6].copy_from_slice(&p.src);
        let name = SockaddrLl {
            sll_family: AF_PACKET as u16,
            sll_protocol: p.proto.to_be_bytes(),
            sll_ifindex: p.ifindex,
            sll_hatype: p.hatype,
            sll_pkttype: p.pkttype,
            sll_halen: ETH_ALEN as u8,
            sll_addr: addr,
        }
        .as_bytes();
        let mut control = Vec::new();
        if auxdata {
            let aux = TpacketAuxdata {
                tp_status: TP_STATUS_USER,
                tp_len: full as u32,
                tp_snaplen: full as u32,
                tp_mac: 0,
                tp_net: p.net_off,
                tp_vlan_tci: 0,
                tp_vlan_tpid: 0,
            };
            control.push((SOL_PACKET, PACKET_AUXDATA, aux.as_bytes()));
        }
        let mut data = p.data;
        data.truncate(n);
        PacketRecv {
            data,
            ret: if flags & MSG_TRUNC != 0 { full } else { n },
            flags: out_flags,
            name,
            control,
        }
    }

    /// Bytes of the first queued frame (`SIOCINQ`).
    pub fn inq(&self) -> usize {
        lock(&self.inner).queue.front().map_or(0, |p| p.data.len())
    }

    /// `packet_poll`: `datagram_poll` plus the rings' readiness.
    pub fn poll_mask(&self, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.wq);
        }
        let i = lock(&self.inner);
        let mut m = POLLOUT | POLLWRNORM | POLLWRBAND;
        if i.err.is_some() {
            m |= POLLERR;
        }
        if !i.queue.is_empty() {
            m |= POLLIN | POLLRDNORM;
        }
        let Some(vm) = i.vm.clone() else { return m };
        if let Some(rx) = i.rx.as_ref() {
            // packet_previous_rx_frame: the frame (block) before the head is not the kernel's.
            let off = match rx.v3 {
                None => rx.frame_off(if rx.head == 0 {
                    rx.geo.frame_nr - 1
                } else {
                    rx.head - 1
                }),
                Some(k) => {
                    let prev = if k.kactive == 0 {
                        rx.geo.block_nr - 1
                    } else {
                        k.kactive - 1
                    };
                    rx.block_off(prev) + 8
                }
            };
            if vm.read_u32(off) != TP_STATUS_KERNEL {
                m |= POLLIN | POLLRDNORM;
            }
        }
        m
    }

    /// The ring memory a `mmap` maps: both rings, exactly their length, from offset 0
    /// (`packet_mmap`); `EINVAL` otherwise.
    pub fn mmap_check(&self, off: u64, len: u64) -> SysResult<()> {
        let i = lock(&self.inner);
        let Some(vm) = i.vm.as_ref() else {
            return Err(Errno::EINVAL);
        };
        if off != 0 || len.next_multiple_of(vm.page) != vm.len {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        lock(&self.inner).vm.clone().map(|v| v as Arc<dyn VmFile>)
    }

    /// `packet_setsockopt` at `SOL_PACKET`; `val` holds the first bytes of the option (as many
    /// as [`set_len`] asks for, fewer if `optlen` is shorter).
    pub fn setsockopt(
        &self,
        name: i32,
        val: &[u8],
        optlen: usize,
        ring: Option<&RingCtx>,
    ) -> SysResult<()> {
        match name {
            PACKET_ADD_MEMBERSHIP | PACKET_DROP_MEMBERSHIP => {
                if optlen < PacketMreq::SIZE || val.len() < PacketMreq::SIZE {
                    return Err(Errno::EINVAL);
                }
                let len = optlen.min(MREQ_MAX).min(val.len());
                let ifindex = i32::read_le(val);
                let ty = u16::read_le(&val[4..]);
                let alen = usize::from(u16::read_le(&val[6..]));
                if len < alen + 8 {
                    return Err(Errno::EINVAL);
                }
                let addr = val[8..8 + alen].to_vec();
                let mut i = lock(&self.inner);
                if name == PACKET_ADD_MEMBERSHIP {
                    // packet_mc_add: the device, the address length, then packet_dev_mc.
                    if self.device(ifindex).is_none() {
                        return Err(Errno::ENODEV);
                    }
                    if alen > ETH_ALEN {
                        return Err(Errno::EINVAL);
                    }
                    if let Some(m) = i
                        .mclist
                        .iter_mut()
                        .find(|m| m.ifindex == ifindex && m.ty == ty && m.addr == addr)
                    {
                        m.count += 1;
                        return Ok(());
                    }
                    if (ty == PACKET_MR_MULTICAST || ty == PACKET_MR_UNICAST) && alen != ETH_ALEN {
                        return Err(Errno::EINVAL);
                    }
                    i.mclist.push(Mc {
                        ifindex,
                        ty,
                        addr,
                        count: 1,
                    });
                } else if let Some(p) = i
                    .mclist
                    .iter()
                    .position(|m| m.ifindex == ifindex && m.ty == ty && m.addr == addr)
                {
                    i.mclist[p].count -= 1;
                    if i.mclist[p].count == 0 {
                        i.mclist.remove(p);
                    }
                }
                Ok(())
            }
            PACKET_RX_RING | PACKET_TX_RING => {
                let version = lock(&self.inner).version;
                let req = parse_ring_req(version, val, optlen)?;
                let ctx = ring.ok_or(Errno::ENOMEM)?;
                self.set_ring(&req, name == PACKET_TX_RING, ctx)
            }
            PACKET_COPY_THRESH => {
                lock(&self.inner).copy_thresh = int_of(val, optlen, true)?;
                Ok(())
            }
            PACKET_VERSION => {
                let v = int_of(val, optlen, true)?;
                if !matches!(v, TPACKET_V1 | TPACKET_V2 | TPACKET_V3) {
                    return Err(Errno::EINVAL);
                }
                let mut i = lock(&self.inner);
                if i.rx.is_some() || i.tx.is_some() {
                    return Err(Errno::EBUSY);
                }
                i.version = v;
                Ok(())
            }
            PACKET_RESERVE | PACKET_LOSS => {
                let v = int_of(val, optlen, true)? as u32;
                if name == PACKET_RESERVE && v > i32::MAX as u32 {
                    return Err(Errno::EINVAL);
                }
                let mut i = lock(&self.inner);
                if i.rx.is_some() || i.tx.is_some() {
                    return Err(Errno::EBUSY);
                }
                if name == PACKET_RESERVE {
                    i.reserve = v;
                } else {
                    i.loss = v != 0;
                }
                Ok(())
            }
            PACKET_AUXDATA | PACKET_ORIGDEV => {
                let v = int_of(val, optlen, false)? != 0;
                let mut i = lock(&self.inner);
                if name == PACKET_AUXDATA {
                    i.auxdata = v;
                } else {
                    i.origdev = v;
                }
                Ok(())
            }
            PACKET_TIMESTAMP => {
                lock(&self.inner).tstamp = int_of(val, optlen, true)?;
                Ok(())
            }
            PACKET_IGNORE_OUTGOING => {
                let v = int_of(val, optlen, true)?;
                if !(0..=1).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                lock(&self.inner).ignore_outgoing = v != 0;
                Ok(())
            }
            PACKET_TX_HAS_OFF => {
                let v = int_of(val, optlen, true)?;
                let mut i = lock(&self.inner);
                if i.rx.is_none() && i.tx.is_none() {
                    i.tx_has_off = v != 0;
                }
                Ok(())
            }
            PACKET_QDISC_BYPASS => {
                lock(&self.inner).qdisc_bypass = int_of(val, optlen, true)? != 0;
                Ok(())
            }
            _ => Err(Errno::ENOPROTOOPT),
        }
    }

    /// `packet_set_ring`.
    fn set_ring(&self, req: &TpacketReq3, tx: bool, ctx: &RingCtx) -> SysResult<()> {
        let mut i = lock(&self.inner);
        let mapped = i.vm.as_ref().is_some_and(|v| Arc::strong_count(v) > 1);
        if mapped {
            return Err(Errno::EBUSY);
        }
        let exists = if tx { i.tx.is_some() } else { i.rx.is_some() };
        if req.tp_block_nr != 0 && exists {
            return Err(Errno::EBUSY);
        }
        let page = ctx.frames.granule().size();
        let geo = check_ring(i.version, i.reserve, req, tx, page)?;
        // New memory for both rings (RX first): the other ring's contents move over.
        let (rx_geo, tx_geo) = if tx {
            (i.rx.as_ref().map(|r| r.geo), geo)
        } else {
            (geo, i.tx.as_ref().map(|r| r.geo))
        };
        let rx_len = rx_geo.map_or(0, |g| g.bytes());
        let total = rx_len + tx_geo.map_or(0, |g| g.bytes());
        let vm = if total == 0 {
            None
        } else {
            Some(RingVm::new(ctx, total)?)
        };
        if let (Some(old), Some(new)) = (i.vm.as_ref(), vm.as_ref()) {
            let keep = if tx { i.rx.as_ref() } else { i.tx.as_ref() };
            if let Some(r) = keep {
                let mut b = vec![0u8; r.geo.bytes() as usize];
                old.read(r.base, &mut b);
                new.write(if tx { 0 } else { rx_len }, &b);
            }
        }
        let version = i.version;
        let ring = geo.map(|g| Ring {
            geo: g,
            base: if tx { rx_len } else { 0 },
            head: 0,
            v3: (version == TPACKET_V3 && !tx).then(|| Kbdq {
                kactive: 0,
                knxt_seq: 1,
                nxt_offset: 0,
                prev: 0,
                frozen: false,
                blk_len: 0,
                num_pkts: 0,
                last_ts: (0, 0),
                opened: Instant::now(),
                armed: false,
                tov: Duration::from_millis(u64::from(if g.retire_blk_tov != 0 {
                    g.retire_blk_tov
                } else {
                    DEFAULT_PRB_RETIRE_TOV
                })),
                max_frame_len: (u64::from(g.block_size) - blk_plus_priv(u64::from(g.sizeof_priv)))
                    as u32,
            }),
        });
        if tx {
            i.tx = ring;
            if let Some(r) = i.rx.as_mut() {
                r.base = 0;
            }
        } else {
            i.rx = ring;
            let base = rx_len;
            if let Some(r) = i.tx.as_mut() {
                r.base = base;
            }
            // skb_queue_purge: frames queued before the ring are gone.
            i.queue.clear();
            i.rmem = 0;
            if i.version == TPACKET_V3 {
                i.freeze_q_cnt = 0;
            }
        }
        i.vm = vm;
        if let (Some(vm), Some(rx)) = (i.vm.clone(), i.rx.as_mut())
            && !tx
            && let Some(mut k) = rx.v3
        {
            open_block(rx, &mut k, &vm);
            rx.v3 = Some(k);
        }
        Ok(())
    }

    /// `packet_getsockopt` at `SOL_PACKET`: the value bytes before truncation to `len`.
    /// `hdrlen_arg` is the int the caller passed in for `PACKET_HDRLEN`.
    pub fn getsockopt(&self, name: i32, len: i32, hdrlen_arg: Option<i32>) -> SysResult<Vec<u8>> {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let mut i = lock(&self.inner);
        let int = |v: i32| v.to_le_bytes().to_vec();
        Ok(match name {
            PACKET_STATISTICS => {
                let (p, d, f) = (i.packets, i.drops, i.freeze_q_cnt);
                i.packets = 0;
                i.drops = 0;
                i.freeze_q_cnt = 0;
                if i.version == TPACKET_V3 {
                    TpacketStatsV3 {
                        tp_packets: p.wrapping_add(d),
                        tp_drops: d,
                        tp_freeze_q_cnt: f,
                    }
                    .as_bytes()
                } else {
                    TpacketStats {
                        tp_packets: p.wrapping_add(d),
                        tp_drops: d,
                    }
                    .as_bytes()
                }
            }
            PACKET_AUXDATA => int(i.auxdata as i32),
            PACKET_ORIGDEV => int(i.origdev as i32),
            PACKET_VNET_HDR => int(0),
            PACKET_VERSION => int(i.version),
            PACKET_HDRLEN => {
                if len < 4 {
                    return Err(Errno::EINVAL);
                }
                let v = hdrlen_arg.ok_or(Errno::EFAULT)?;
                let h = match v {
                    TPACKET_V1 => TpacketHdr::SIZE,
                    TPACKET_V2 => Tpacket2Hdr::SIZE,
                    TPACKET_V3 => Tpacket3Hdr::SIZE,
                    _ => return Err(Errno::EINVAL),
                };
                int(h as i32)
            }
            PACKET_RESERVE => int(i.reserve as i32),
            PACKET_LOSS => int(i.loss as i32),
            PACKET_TIMESTAMP => int(i.tstamp),
            PACKET_FANOUT => int(0),
            PACKET_IGNORE_OUTGOING => int(i.ignore_outgoing as i32),
            PACKET_ROLLOVER_STATS => return Err(Errno::EINVAL),
            PACKET_TX_HAS_OFF => int(i.tx_has_off as i32),
            PACKET_QDISC_BYPASS => int(i.qdisc_bypass as i32),
            _ => return Err(Errno::ENOPROTOOPT),
        })
    }

    /// `SO_SNDBUF`/`SO_RCVBUF` now.
    pub fn bufs(&self) -> (i32, i32) {
        let i = lock(&self.inner);
        (i.sndbuf, i.rcvbuf)
    }

    /// `sock_setsockopt`'s buffer sizes: doubled, clamped to `[wr]mem_max` unless forced.
    pub fn set_buf(&self, snd: bool, v: i32, force: bool) {
        let mut i = lock(&self.inner);
        if snd {
            let v = if force { v.max(0) } else { v.min(WMEM_MAX) };
            i.sndbuf = buf_value(v, SOCK_MIN_SNDBUF);
        } else {
            let v = if force { v.max(0) } else { v.min(RMEM_MAX) };
            i.rcvbuf = buf_value(v, SOCK_MIN_RCVBUF);
        }
    }

    /// `SO_ERROR`.
    pub fn take_error(&self) -> i32 {
        lock(&self.inner).err.take().map_or(0, |e| e.get())
    }
}

/// How many option bytes `setsockopt` at `SOL_PACKET` reads for `name`.
pub fn set_len(name: i32) -> usize {
    match name {
        PACKET_ADD_MEMBERSHIP | PACKET_DROP_MEMBERSHIP => MREQ_MAX,
        PACKET_RX_RING | PACKET_TX_RING => TpacketReq3::SIZE,
        _ => 4,
    }
}

/// `prb_open_block`: a fresh descriptor for the current block.
fn open_block(rx: &Ring, k: &mut Kbdq, vm: &RingVm) {
    let off = rx.block_off(k.kactive);
    let first = blk_plus_priv(u64::from(rx.geo.sizeof_priv)) as u32;
    let ts = now_ts();
    let status = vm.read_u32(off + 8);
    let d = TpacketBlockDesc {
        version: TPACKET_V3 as u32,
        offset_to_priv: BLK_HDR_LEN as u32,
        block_status: status,
        num_pkts: 0,
        offset_to_first_pkt: first,
        blk_len: first,
        seq_num: k.knxt_seq,
        ts_first_sec: ts.0,
        ts_first_nsec: ts.1,
        ts_last_sec: 0,
        ts_last_nsec: 0,
    };
    k.knxt_seq += 1;
    // The status word stays the guest's; the rest of the descriptor is ours.
    let b = d.as_bytes();
    vm.write(off, &b[..8]);
    vm.write(off + 12, &b[12..40]);
    k.nxt_offset = first;
    k.prev = first;
    k.blk_len = first;
    k.num_pkts = 0;
    k.frozen = false;
    k.opened = Instant::now();
}

/// `prb_fill_curr_block`: claims `total` (aligned) bytes at the next offset.
fn fill_curr_block(rx: &Ring, k: &mut Kbdq, vm: &RingVm, total: u32) -> u64 {
    let blk = rx.block_off(k.kactive);
    let curr = k.nxt_offset;
    vm.write_u32(blk + u64::from(curr), total);
    k.prev = curr;
    k.nxt_offset += total;
    k.blk_len += total;
    k.num_pkts += 1;
    vm.write_u32(blk + 12, k.num_pkts);
    vm.write_u32(blk + 20, k.blk_len);
    blk + u64::from(curr)
}

/// `prb_retire_current_block` and `prb_close_block`: hands the current block to the guest.
fn retire_current_block(rx: &Ring, k: &mut Kbdq, vm: &RingVm, stat: u32, drops: u32) {
    let blk = rx.block_off(k.kactive);
    if vm.read_u32(blk + 8) != TP_STATUS_KERNEL {
        return;
    }
    let mut status = TP_STATUS_USER | stat;
    if drops != 0 {
        status |= TP_STATUS_LOSING;
    }
    vm.write_u32(blk + u64::from(k.prev), 0);
    let ts = if k.num_pkts != 0 { k.last_ts } else { now_ts() };
    vm.write_u32(blk + 40, ts.0);
    vm.write_u32(blk + 44, ts.1);
    vm.write_u32(blk + 8, status);
    k.kactive = if k.kactive + 1 < rx.geo.block_nr {
        k.kactive + 1
    } else {
        0
    };
}

/// `prb_dispatch_next_block`: opens the current block if the guest gave it back, else
/// freezes the queue.
fn dispatch_next_block(rx: &Ring, k: &mut Kbdq, vm: &RingVm, freeze_q_cnt: &mut u32) -> bool {
    if vm.read_u32(rx.block_off(k.kactive) + 8) & TP_STATUS_USER != 0 {
        k.frozen = true;
        *freeze_q_cnt = freeze_q_cnt.wrapping_add(1);
        return false;
    }
    open_block(rx, k, vm);
    true
}

/// One pending retire timer.
struct TimerEntry {
    when: Instant,
    seq: u64,
    sock: Weak<PacketSocket>,
}

impl PartialEq for TimerEntry {
    fn eq(&self, o: &Self) -> bool {
        (self.when, self.seq) == (o.when, o.seq)
    }
}
impl Eq for TimerEntry {}
impl PartialOrd for TimerEntry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for TimerEntry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.when, self.seq).cmp(&(o.when, o.seq))
    }
}

type TimerHeap = (BinaryHeap<Reverse<TimerEntry>>, u64);

/// The V3 retire timers of every socket: one kernel thread (as `fs/src/timerfd.rs` runs its
/// timers), started on first use.
fn retire_timers() -> &'static Arc<(Mutex<TimerHeap>, Condvar)> {
    static T: OnceLock<Arc<(Mutex<TimerHeap>, Condvar)>> = OnceLock::new();
    T.get_or_init(|| {
        let t = Arc::new((Mutex::new((BinaryHeap::new(), 0)), Condvar::new()));
        let t2 = t.clone();
        if let Err(e) = std::thread::Builder::new()
            .name("packet-retire".into())
            .spawn(move || retire_thread(&t2))
        {
            log::warn!("af_packet: cannot start the block retire thread: {e}");
        }
        t
    })
}

fn retire_timer_schedule(when: Instant, sock: Weak<PacketSocket>) {
    let t = retire_timers();
    let mut h = lock(&t.0);
    h.1 += 1;
    let seq = h.1;
    h.0.push(Reverse(TimerEntry { when, seq, sock }));
    drop(h);
    t.1.notify_all();
}

fn retire_thread(t: &(Mutex<TimerHeap>, Condvar)) {
    let mut h = lock(&t.0);
    loop {
        let now = Instant::now();
        match h.0.peek() {
            None => {
                h = t.1.wait(h).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            Some(Reverse(e)) if e.when > now => {
                let d = e.when - now;
                h = t.1.wait_timeout(h, d).unwrap_or_else(|e| e.into_inner()).0;
                continue;
            }
            Some(_) => {}
        }
        let Some(Reverse(e)) = h.0.pop() else {
            continue;
        };
        drop(h);
        if let Some(s) = e.sock.upgrade() {
            s.v3_expired();
        }
        h = lock(&t.0);
    }
}

std::thread_local! {
    /// The packet socket sending on this thread, which its own outgoing tap skips
    /// (`skb_loop_sk`); 0: none.
    static SENDER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The tap on every device with a driver (`dev::register_tap`; Linux's `ptype_all` and
/// `dev_queue_xmit_nit`): received frames go to the sockets of the device's namespace as
/// `eth_type_trans` classifies them by the device's address, sent ones as `PACKET_OUTGOING`
/// to every other `ETH_P_ALL` socket.
fn device_tap(d: &Arc<NetDevice>, frame: &[u8], outgoing: bool) {
    if frame.len() < ETH_HLEN {
        return;
    }
    let Some(ns) = d.netns() else { return };
    let socks: Vec<Arc<PacketSocket>> = {
        let pn = ns.generic::<PacketNet>();
        let l = lock(&pn.socks);
        l.iter().filter_map(Weak::upgrade).collect()
    };
    let src: [u8; 6] = frame[6..12].try_into().expect("six bytes");
    let (proto, pkttype) = eth_type_trans_on(frame, &d.mac);
    let sender = SENDER.with(|c| c.get());
    for s in &socks {
        if outgoing {
            if Arc::as_ptr(s) as usize == sender {
                continue;
            }
            s.tap(frame, proto, PACKET_OUTGOING, src, true, d.ifindex, d.kind);
        } else {
            s.tap(frame, proto, pkttype, src, false, d.ifindex, d.kind);
        }
    }
}

impl PacketSocket {
    /// `SO_ATTACH_FILTER` (`sk_attach_filter`): `EPERM` while the filter is locked.
    pub fn attach_filter(&self, f: Filter) -> SysResult<()> {
        let mut i = lock(&self.inner);
        if i.filter_locked {
            return Err(Errno::EPERM);
        }
        i.filter = Some(Arc::new(f));
        Ok(())
    }

    /// `SO_DETACH_FILTER`: `EPERM` while locked, `ENOENT` without a filter.
    pub fn detach_filter(&self) -> SysResult<()> {
        let mut i = lock(&self.inner);
        if i.filter_locked {
            return Err(Errno::EPERM);
        }
        i.filter.take().map(|_| ()).ok_or(Errno::ENOENT)
    }

    /// `SO_LOCK_FILTER`: once locked, only locking again is allowed (`EPERM`).
    pub fn lock_filter(&self, on: bool) -> SysResult<()> {
        let mut i = lock(&self.inner);
        if i.filter_locked && !on {
            return Err(Errno::EPERM);
        }
        i.filter_locked = on;
        Ok(())
    }

    /// The attached filter and the lock (`SO_GET_FILTER`, `SO_LOCK_FILTER`).
    pub fn filter(&self) -> (Option<Arc<Filter>>, bool) {
        let i = lock(&self.inner);
        (i.filter.clone(), i.filter_locked)
    }

    /// `SO_BINDTODEVICE` by name (`sock_setbindtodevice`; empty: unbind): `ENODEV` for no such
    /// device in the socket's namespace.
    pub fn bind_to_device(&self, name: &str) -> SysResult<()> {
        let ifindex = if name.is_empty() {
            0
        } else {
            dev::devices(&self.net)
                .by_name(name)
                .ok_or(Errno::ENODEV)?
                .ifindex
        };
        lock(&self.inner).bound_dev_if = ifindex;
        Ok(())
    }

    /// The name of the `SO_BINDTODEVICE` device, if any.
    pub fn bound_device(&self) -> Option<String> {
        let ifindex = lock(&self.inner).bound_dev_if;
        (ifindex != 0).then(|| self.device(ifindex).map(|d| d.name()))?
    }
}

/// The open file of a packet socket; dropping the last one is `packet_release`.
pub struct PacketFile {
    pub sock: Arc<PacketSocket>,
}

impl Drop for PacketFile {
    fn drop(&mut self) {
        self.sock.release();
    }
}

impl FileOps for PacketFile {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        let r = self.sock.recv(io, buf.len(), 0)?;
        buf[..r.data.len()].copy_from_slice(&r.data);
        Ok(r.ret)
    }

    fn write(&self, _io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        self.sock.send(data, None)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(super::sock_kstat(self.sock.ino, self.sock.owner))
    }

    fn size(&self) -> SysResult<u64> {
        Ok(0)
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let v: i32 = match cmd {
            FIONREAD => self.sock.inq() as i32,
            SIOCOUTQ => 0,
            // Interface ioctls (packet_ioctl hands the address ones to inet_dgram_ops).
            _ => return super::devioctl::dev_ioctl(io, cmd, arg, mem, true),
        };
        mem.write(arg, &v.to_le_bytes())?;
        Ok(0)
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        self.sock.poll_mask(pt) & (events | POLLERR)
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        self.sock.vm_file()
    }

    fn mmap_check(&self, off: u64, len: u64) -> SysResult<()> {
        self.sock.mmap_check(off, len)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// `/proc/net/packet` of `net` (`packet_seq_show`).
pub fn proc_packet(net: &NetNs) -> String {
    let mut out = String::from("sk               RefCnt Type Proto  Iface R Rmem   User   Inode\n");
    let socks: Vec<Arc<PacketSocket>> = lock(&net.generic::<PacketNet>().socks)
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for s in socks {
        let i = lock(&s.inner);
        out.push_str(&format!(
            "{:016x} {:<6} {:<4} {:04x}   {:<5} {} {:<6} {:<6} {:<6}\n",
            0,
            2,
            s.ty,
            i.num,
            i.ifindex,
            u8::from(i.running),
            i.rmem,
            s.owner.0,
            s.ino
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req3(bs: u32, bn: u32, fs: u32, fnr: u32, tov: u32, priv_: u32, fw: u32) -> TpacketReq3 {
        TpacketReq3 {
            tp_block_size: bs,
            tp_block_nr: bn,
            tp_frame_size: fs,
            tp_frame_nr: fnr,
            tp_retire_blk_tov: tov,
            tp_sizeof_priv: priv_,
            tp_feature_req_word: fw,
        }
    }

    /// setsockopt02 (CVE-2017-7308): a private area reaching past the block is refused.
    #[test]
    fn v3_private_area() {
        let ok = req3(4096, 2, 4096, 2, 100, 512, 0);
        assert!(
            check_ring(TPACKET_V3, 0, &ok, false, 4096)
                .unwrap()
                .is_some()
        );
        let bad = req3(4096, 2, 4096, 2, 100, 3 << 30, 0);
        assert_eq!(
            check_ring(TPACKET_V3, 0, &bad, false, 4096),
            Err(Errno::EINVAL)
        );
        // Descriptor (48) + priv aligned to 8 + one minimal frame (68) must fit the block.
        let edge = req3(4096, 1, 4096, 1, 0, 3976, 0);
        assert!(
            check_ring(TPACKET_V3, 0, &edge, false, 4096)
                .unwrap()
                .is_some()
        );
        let over = req3(4096, 1, 4096, 1, 0, 3977, 0);
        assert_eq!(
            check_ring(TPACKET_V3, 0, &over, false, 4096),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn ring_geometry_checks() {
        let v2 = |bs, bn, fs, fnr| {
            check_ring(TPACKET_V2, 0, &req3(bs, bn, fs, fnr, 0, 0, 0), false, 4096)
        };
        assert_eq!(v2(4096, 4, 2048, 8).unwrap().unwrap().frames_per_block, 2);
        // Block size: positive, page aligned.
        assert_eq!(v2(0x8000_0000, 1, 2048, 0x10_0000), Err(Errno::EINVAL));
        assert_eq!(v2(4000, 4, 2000, 8), Err(Errno::EINVAL));
        // Frame: at least the header, 16-aligned.
        assert_eq!(v2(4096, 4, 48, 340), Err(Errno::EINVAL));
        assert_eq!(v2(4096, 4, 2040, 8), Err(Errno::EINVAL));
        // Frame bigger than the block; frame count mismatch.
        assert_eq!(v2(4096, 4, 8192, 0), Err(Errno::EINVAL));
        assert_eq!(v2(4096, 4, 2048, 7), Err(Errno::EINVAL));
        // Zero blocks frees, but only with zero frames.
        assert_eq!(v2(0, 0, 0, 0), Ok(None));
        assert_eq!(v2(4096, 0, 2048, 2), Err(Errno::EINVAL));
        // PACKET_RESERVE counts toward the minimal frame.
        let r = check_ring(
            TPACKET_V2,
            4050,
            &req3(8192, 1, 4096, 2, 0, 0, 0),
            false,
            4096,
        );
        assert_eq!(r, Err(Errno::EINVAL));
        // A V3 TX ring may not carry the receive-only fields.
        let t = check_ring(TPACKET_V3, 0, &req3(4096, 1, 4096, 1, 5, 0, 0), true, 4096);
        assert_eq!(t, Err(Errno::EINVAL));
        // Too much memory.
        assert_eq!(v2(1 << 30, 4, 1 << 30, 4), Err(Errno::ENOMEM));
    }

    #[test]
    fn ring_request_lengths() {
        let b = req3(4096, 1, 2048, 2, 7, 8, 9).as_bytes();
        let v1 = parse_ring_req(TPACKET_V1, &b, 16).unwrap();
        assert_eq!((v1.tp_frame_nr, v1.tp_retire_blk_tov), (2, 0));
        assert_eq!(parse_ring_req(TPACKET_V1, &b, 15), Err(Errno::EINVAL));
        assert_eq!(parse_ring_req(TPACKET_V3, &b, 16), Err(Errno::EINVAL));
        assert_eq!(
            parse_ring_req(TPACKET_V3, &b, 28)
                .unwrap()
                .tp_feature_req_word,
            9
        );
    }

    #[test]
    fn sockaddr_ll_parsing() {
        let sll = SockaddrLl {
            sll_family: AF_PACKET as u16,
            sll_protocol: 0x88b5u16.to_be_bytes(),
            sll_ifindex: 1,
            sll_halen: 6,
            ..Default::default()
        };
        let b = sll.as_bytes();
        assert_eq!(parse_bind_addr(&b), Ok(sll));
        assert_eq!(parse_bind_addr(&b[..19]), Err(Errno::EINVAL));
        let mut wrong = sll;
        wrong.sll_family = 2;
        assert_eq!(parse_bind_addr(&wrong.as_bytes()), Err(Errno::EINVAL));
        // Sending checks the length against sll_halen, not the family.
        assert!(parse_send_addr(&wrong.as_bytes()).is_ok());
        let mut long = sll;
        long.sll_halen = 9;
        assert_eq!(parse_send_addr(&long.as_bytes()), Err(Errno::EINVAL));
        let mut v = long.as_bytes();
        v.push(0);
        assert!(parse_send_addr(&v).is_ok());
    }

    #[test]
    fn frame_types() {
        let mut f = vec![0u8; 20];
        f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
        assert_eq!(eth_type_trans(&f), (0x88b5, PACKET_HOST));
        f[0..6].copy_from_slice(&[0xff; 6]);
        assert_eq!(eth_type_trans(&f).1, PACKET_BROADCAST);
        f[0] = 0x01;
        assert_eq!(eth_type_trans(&f).1, PACKET_MULTICAST);
        f[0] = 0x02;
        assert_eq!(eth_type_trans(&f).1, PACKET_OTHERHOST);
        f[12..14].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(eth_type_trans(&f).0, ETH_P_802_2);
        f[14] = 0xff;
        f[15] = 0xff;
        assert_eq!(eth_type_trans(&f).0, ETH_P_802_3);
    }
}
