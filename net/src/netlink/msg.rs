//! The netlink message codec (Linux `include/net/netlink.h`, `lib/nlattr.c`): building
//! messages with their family header and attributes ([`Msg`]), walking the messages of a
//! datagram as `netlink_rcv_skb` does ([`messages`]), parsing attributes ([`attrs`]) and
//! packing replies into datagrams ([`pack`]). Pure: no sockets, no guest memory.

use um_uapi::abi::netlink::{NLA_TYPE_MASK, NLMSG_HDRLEN, Nlmsghdr, Rtattr};
use um_uapi::abi::pod::Pod;

/// `NLMSG_ALIGN` / `NLA_ALIGN`.
pub const fn align(n: usize) -> usize {
    (n + 3) & !3
}

/// `NLMSG_GOODSIZE`: the payload of one page-sized buffer (`SKB_WITH_OVERHEAD(PAGE_SIZE)` on
/// 64-bit), the size of each datagram of a dump.
pub const GOODSIZE: usize = 3776;

/// One message being built.
#[derive(Clone, Debug)]
pub struct Msg {
    b: Vec<u8>,
}

impl Msg {
    /// A message of `ty` with its header (the length is set by [`Msg::finish`]).
    pub fn new(ty: u16, flags: u16, seq: u32, pid: u32) -> Msg {
        let h = Nlmsghdr {
            nlmsg_len: 0,
            nlmsg_type: ty,
            nlmsg_flags: flags,
            nlmsg_seq: seq,
            nlmsg_pid: pid,
        };
        Msg { b: h.as_bytes() }
    }

    fn pad(&mut self) {
        let n = align(self.b.len());
        self.b.resize(n, 0);
    }

    /// Appends a fixed header (`ifinfomsg`, `nlmsgerr`...), padded to 4.
    pub fn put<T: Pod>(&mut self, v: &T) -> &mut Self {
        v.write_le(&mut self.b);
        self.pad();
        self
    }

    /// Appends raw bytes, padded to 4.
    pub fn raw(&mut self, data: &[u8]) -> &mut Self {
        self.b.extend_from_slice(data);
        self.pad();
        self
    }

    /// Appends one attribute (`nla_put`).
    pub fn attr(&mut self, ty: u16, data: &[u8]) -> &mut Self {
        Rtattr {
            rta_len: (4 + data.len()) as u16,
            rta_type: ty,
        }
        .write_le(&mut self.b);
        self.b.extend_from_slice(data);
        self.pad();
        self
    }

    pub fn u8(&mut self, ty: u16, v: u8) -> &mut Self {
        self.attr(ty, &[v])
    }

    pub fn u32(&mut self, ty: u16, v: u32) -> &mut Self {
        self.attr(ty, &v.to_le_bytes())
    }

    /// A NUL-terminated string (`nla_put_string`).
    pub fn str(&mut self, ty: u16, s: &str) -> &mut Self {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.attr(ty, &v)
    }

    /// Opens a nested attribute; close it with [`Msg::end_nest`].
    pub fn nest(&mut self, ty: u16) -> usize {
        let at = self.b.len();
        self.attr(ty, &[]);
        at
    }

    /// Closes the nested attribute opened at `at`.
    pub fn end_nest(&mut self, at: usize) {
        let len = (self.b.len() - at) as u16;
        self.b[at..at + 2].copy_from_slice(&len.to_le_bytes());
    }

    /// The finished message, its length set.
    pub fn finish(mut self) -> Vec<u8> {
        let len = self.b.len() as u32;
        self.b[..4].copy_from_slice(&len.to_le_bytes());
        self.b
    }
}

/// The messages of a datagram as `netlink_rcv_skb` walks them: each header and its payload
/// (after the 16-byte header, `nlmsg_len - 16` bytes). The walk ends quietly at a header
/// shorter than `NLMSG_HDRLEN` or longer than what is left.
pub fn messages(b: &[u8]) -> impl Iterator<Item = (Nlmsghdr, &[u8])> + '_ {
    let mut off = 0usize;
    std::iter::from_fn(move || {
        let rest = b.get(off..)?;
        let (h, _) = Nlmsghdr::from_prefix(rest)?;
        let len = h.nlmsg_len as usize;
        if len < NLMSG_HDRLEN || len > rest.len() {
            return None;
        }
        let payload = &rest[NLMSG_HDRLEN..len];
        off += align(len).min(rest.len());
        Some((h, payload))
    })
}

/// The attributes in `b` (type without the nested/byte-order flags, payload), as
/// `nla_for_each_attr`: the walk stops at a malformed one; [`attrs_ok`] says whether all of
/// `b` was well formed.
pub fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> + '_ {
    let mut off = 0usize;
    std::iter::from_fn(move || {
        let rest = b.get(off..)?;
        let (a, _) = Rtattr::from_prefix(rest)?;
        let len = a.rta_len as usize;
        if len < 4 || len > rest.len() {
            return None;
        }
        off += align(len);
        Some((a.rta_type & NLA_TYPE_MASK, &rest[4..len]))
    })
}

/// Whether the attributes fill `b` exactly (trailing bytes shorter than a header allowed),
/// as `nla_validate`'s "attribute has bad length" check.
pub fn attrs_ok(b: &[u8]) -> bool {
    let mut off = 0usize;
    while b.len() - off >= 4 {
        let Some((a, _)) = Rtattr::from_prefix(&b[off..]) else {
            return false;
        };
        let len = a.rta_len as usize;
        if len < 4 || len > b.len() - off {
            return false;
        }
        off += align(len).min(b.len() - off);
    }
    true
}

/// The attribute `ty` of `b`, the first one.
pub fn find(b: &[u8], ty: u16) -> Option<&[u8]> {
    attrs(b).find(|(t, _)| *t == ty).map(|(_, d)| d)
}

/// A u32 attribute (shorter payloads are not one).
pub fn find_u32(b: &[u8], ty: u16) -> Option<u32> {
    find(b, ty)
        .filter(|d| d.len() >= 4)
        .map(|d| u32::from_le_bytes([d[0], d[1], d[2], d[3]]))
}

/// A string attribute, up to its NUL.
pub fn find_str(b: &[u8], ty: u16) -> Option<String> {
    let d = find(b, ty)?;
    let end = d.iter().position(|&c| c == 0).unwrap_or(d.len());
    Some(String::from_utf8_lossy(&d[..end]).into_owned())
}

/// Packs finished messages into datagrams of at most `limit` bytes each (one message per
/// datagram if a message alone is bigger), as a dump fills successive buffers.
pub fn pack(msgs: Vec<Vec<u8>>, limit: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    for m in msgs {
        if !cur.is_empty() && cur.len() + m.len() > limit {
            out.push(std::mem::take(&mut cur));
        }
        cur.extend_from_slice(&m);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use um_uapi::abi::netlink::{Ifaddrmsg, NLM_F_MULTI, NLMSG_DONE};

    #[test]
    fn build_and_walk() {
        let mut m = Msg::new(20, NLM_F_MULTI, 5, 77);
        m.put(&Ifaddrmsg {
            ifa_family: 2,
            ifa_prefixlen: 8,
            ifa_flags: 0x80,
            ifa_scope: 254,
            ifa_index: 1,
        })
        .attr(2, &[127, 0, 0, 1])
        .str(3, "lo")
        .u8(9, 7);
        let at = m.nest(18);
        m.end_nest(at);
        let b = m.finish();
        assert_eq!(b.len() % 4, 0);
        assert_eq!(
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
            b.len()
        );
        let mut two = b.clone();
        two.extend(
            Msg::new(NLMSG_DONE, NLM_F_MULTI, 5, 77)
                .raw(&[0; 4])
                .clone()
                .finish(),
        );
        let ms: Vec<_> = messages(&two).collect();
        assert_eq!(ms.len(), 2);
        assert_eq!((ms[0].0.nlmsg_type, ms[0].0.nlmsg_seq), (20, 5));
        assert_eq!(ms[1].0.nlmsg_type, NLMSG_DONE);
        let a = &ms[0].1[8..];
        assert!(attrs_ok(a));
        assert_eq!(find(a, 2), Some(&[127, 0, 0, 1][..]));
        assert_eq!(find_str(a, 3).as_deref(), Some("lo"));
        assert_eq!(find(a, 9), Some(&[7][..]));
        assert_eq!(find(a, 18), Some(&[][..]));
        assert_eq!(find_u32(a, 9), None);
    }

    #[test]
    fn malformed_input_stops_the_walk() {
        // A header claiming more than there is: nothing.
        let mut b = Msg::new(18, 1, 1, 0).finish();
        b[0] = 200;
        assert_eq!(messages(&b).count(), 0);
        // Shorter than a header: nothing.
        assert_eq!(messages(&[1, 2, 3]).count(), 0);
        // A bad attribute length.
        assert!(!attrs_ok(&[9, 0, 1, 0, 0, 0, 0, 0]));
        assert!(!attrs_ok(&[2, 0, 1, 0]));
        assert!(attrs_ok(&[8, 0, 1, 0, 1, 2, 3, 4, 0, 0]));
        assert_eq!(attrs(&[9, 0, 1, 0]).count(), 0);
    }

    #[test]
    fn packing() {
        let m = |n: usize| vec![0u8; n];
        let p = pack(vec![m(1000), m(1000), m(1000), m(1000), m(5000)], GOODSIZE);
        assert_eq!(
            p.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3000, 1000, 5000]
        );
        assert!(pack(vec![], GOODSIZE).is_empty());
    }
}
