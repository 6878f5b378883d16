//! Classic BPF socket filters (`SO_ATTACH_FILTER`, Linux `net/core/filter.c`:
//! `bpf_check_classic` for the checks at attach, the classic instruction semantics for the
//! run; filter(2) in the BSD sense, Documentation/networking/filter.rst).
//!
//! A packet socket runs its filter on every frame it would queue (`run_filter` in
//! `packet_rcv`): the program sees the frame from the link-layer header for `SOCK_RAW` and
//! from the network header for `SOCK_DGRAM`, as `skb->data` points there; the negative
//! offsets `SKF_LL_OFF` and `SKF_NET_OFF` reach the link and network headers whatever the type.
//! The result is how many bytes to keep: 0 drops the frame.
//!
//! Ancillary loads (`SKF_AD_OFF + ...`): protocol, packet type, ifindex, hardware type, the
//! rest read 0 (no marks, queues, hashes or VLAN tags here); `SKF_AD_RANDOM` is random.
//! Simplification: Linux also refuses a program that may read a scratch word before storing
//! it (`check_load_and_stores`); here scratch memory starts zeroed and such a program runs.
//!
//! The instruction layout (`struct sock_filter`: u16 code, u8 jt, u8 jf, u32 k; 8 bytes) is
//! decoded here from the guest's bytes; the seccomp filters in `um-kernel` have their own
//! interpreter over the same instruction set (different data, different checks).

use um_uapi::{Errno, SysResult};

/// `BPF_MAXINSNS`.
pub const BPF_MAXINSNS: usize = 4096;
/// `BPF_MEMWORDS`.
const BPF_MEMWORDS: u32 = 16;
/// `SKF_AD_OFF`, `SKF_NET_OFF`, `SKF_LL_OFF` (as u32: negative offsets).
const SKF_AD_OFF: u32 = (-0x1000i32) as u32;
const SKF_NET_OFF: u32 = (-0x10_0000i32) as u32;
const SKF_LL_OFF: u32 = (-0x20_0000i32) as u32;
const SKF_AD_PROTOCOL: u32 = 0;
const SKF_AD_PKTTYPE: u32 = 4;
const SKF_AD_IFINDEX: u32 = 8;
const SKF_AD_HATYPE: u32 = 28;
const SKF_AD_RANDOM: u32 = 56;
const SKF_AD_MAX: u32 = 64;

// Opcode fields (include/uapi/linux/bpf_common.h).
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const STX: u16 = 0x03;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;
const W: u16 = 0x00;
const H: u16 = 0x08;
const B: u16 = 0x10;
const IMM: u16 = 0x00;
const ABS: u16 = 0x20;
const IND: u16 = 0x40;
const MEM: u16 = 0x60;
const LEN: u16 = 0x80;
const MSH: u16 = 0xa0;
const X: u16 = 0x08;

/// One instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// A checked program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    prog: Vec<Insn>,
}

/// What a filter knows about a frame besides its bytes.
pub struct Meta {
    /// `skb->protocol` (host order).
    pub protocol: u16,
    pub pkttype: u8,
    pub ifindex: i32,
    pub hatype: u16,
}

impl Filter {
    /// Decodes `n` instructions from `bytes` and checks them (`bpf_check_classic`): 1 to
    /// `BPF_MAXINSNS` instructions, known opcodes, jumps inside the program, scratch words in
    /// range, no division by a constant 0, a `RET` last. `EINVAL` otherwise.
    pub fn new(bytes: &[u8]) -> SysResult<Filter> {
        let n = bytes.len() / 8;
        if n == 0 || n > BPF_MAXINSNS || bytes.len() % 8 != 0 {
            return Err(Errno::EINVAL);
        }
        let prog: Vec<Insn> = bytes
            .chunks_exact(8)
            .map(|c| Insn {
                code: u16::from_le_bytes([c[0], c[1]]),
                jt: c[2],
                jf: c[3],
                k: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect();
        for (pc, i) in prog.iter().enumerate() {
            if !valid(i, pc, n) {
                return Err(Errno::EINVAL);
            }
        }
        if prog[n - 1].code & 0x07 != RET {
            return Err(Errno::EINVAL);
        }
        Ok(Filter { prog })
    }

    /// The program's instructions, encoded (`SO_GET_FILTER`).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.prog.len() * 8);
        for i in &self.prog {
            v.extend_from_slice(&i.code.to_le_bytes());
            v.push(i.jt);
            v.push(i.jf);
            v.extend_from_slice(&i.k.to_le_bytes());
        }
        v
    }

    /// Instructions in the program.
    pub fn len(&self) -> usize {
        self.prog.len()
    }

    /// Never: a program has at least one instruction.
    pub fn is_empty(&self) -> bool {
        self.prog.is_empty()
    }

    /// Runs the program on `frame` (from its link-layer header), whose data as the socket sees
    /// it starts at `data_off`, and whose network header starts at `net_off`. Returns how many
    /// bytes to keep (0: drop).
    pub fn run(&self, frame: &[u8], data_off: usize, net_off: usize, m: &Meta) -> u32 {
        let data = frame.get(data_off..).unwrap_or(&[]);
        let load = |off: u32, size: usize| -> Option<u32> {
            let (base, o) = if (SKF_LL_OFF..SKF_NET_OFF).contains(&off) {
                (frame, (off - SKF_LL_OFF) as usize)
            } else if (SKF_NET_OFF..SKF_AD_OFF).contains(&off) {
                (frame.get(net_off..)?, (off - SKF_NET_OFF) as usize)
            } else if off < 0x8000_0000 {
                (data, off as usize)
            } else {
                return None;
            };
            let b = base.get(o..o.checked_add(size)?)?;
            Some(b.iter().fold(0u32, |a, &x| (a << 8) | u32::from(x)))
        };
        let size_of = |code: u16| match code & 0x18 {
            W => 4,
            H => 2,
            _ => 1,
        };
        let (mut a, mut x) = (0u32, 0u32);
        let mut mem = [0u32; BPF_MEMWORDS as usize];
        let mut pc = 0usize;
        // Every jump goes forward, so this ends within the program's length.
        while let Some(&i) = self.prog.get(pc) {
            pc += 1;
            let k = i.k;
            match i.code & 0x07 {
                LD => match i.code & 0xe0 {
                    IMM => a = k,
                    ABS if k >= SKF_AD_OFF => {
                        a = match k - SKF_AD_OFF {
                            SKF_AD_PROTOCOL => u32::from(m.protocol),
                            SKF_AD_PKTTYPE => u32::from(m.pkttype),
                            SKF_AD_IFINDEX => m.ifindex as u32,
                            SKF_AD_HATYPE => u32::from(m.hatype),
                            SKF_AD_RANDOM => {
                                let mut r = [0u8; 4];
                                let _ = um_os_linux::host::getrandom(&mut r);
                                u32::from_le_bytes(r)
                            }
                            _ => 0,
                        }
                    }
                    ABS => match load(k, size_of(i.code)) {
                        Some(v) => a = v,
                        None => return 0,
                    },
                    IND => match load(x.wrapping_add(k), size_of(i.code)) {
                        Some(v) => a = v,
                        None => return 0,
                    },
                    MEM => a = mem[k as usize],
                    LEN => a = data.len() as u32,
                    _ => return 0,
                },
                LDX => match i.code & 0xe0 {
                    IMM => x = k,
                    MEM => x = mem[k as usize],
                    LEN => x = data.len() as u32,
                    MSH => match load(k, 1) {
                        Some(v) => x = (v & 0xf) << 2,
                        None => return 0,
                    },
                    _ => return 0,
                },
                ST => mem[k as usize] = a,
                STX => mem[k as usize] = x,
                ALU => {
                    let s = if i.code & X != 0 { x } else { k };
                    a = match i.code & 0xf0 {
                        0x00 => a.wrapping_add(s),
                        0x10 => a.wrapping_sub(s),
                        0x20 => a.wrapping_mul(s),
                        0x30 if s == 0 => return 0,
                        0x30 => a / s,
                        0x40 => a | s,
                        0x50 => a & s,
                        0x60 => a.checked_shl(s).unwrap_or(0),
                        0x70 => a.checked_shr(s).unwrap_or(0),
                        0x80 => a.wrapping_neg(),
                        0x90 if s == 0 => return 0,
                        0x90 => a % s,
                        0xa0 => a ^ s,
                        _ => return 0,
                    };
                }
                JMP => {
                    let s = if i.code & X != 0 { x } else { k };
                    let cond = match i.code & 0xf0 {
                        0x00 => {
                            pc += k as usize;
                            continue;
                        }
                        0x10 => a == s,
                        0x20 => a > s,
                        0x30 => a >= s,
                        0x40 => a & s != 0,
                        _ => return 0,
                    };
                    pc += usize::from(if cond { i.jt } else { i.jf });
                }
                RET => {
                    return match i.code & 0x18 {
                        0x00 => k,
                        0x08 => x,
                        _ => a,
                    };
                }
                MISC => {
                    // TAX / TXA.
                    if i.code & 0xf8 == 0 {
                        x = a;
                    } else {
                        a = x;
                    }
                }
                _ => return 0,
            }
        }
        0
    }
}

/// `bpf_check_classic`'s test of one instruction at `pc` of `n`.
fn valid(i: &Insn, pc: usize, n: usize) -> bool {
    let c = i.code;
    let mode = c & 0xe0;
    let size = c & 0x18;
    let left = n - pc - 1;
    match c & 0x07 {
        LD => {
            size != 0x18
                && match mode {
                    IMM | LEN => size == W,
                    ABS | IND => true,
                    MEM => size == W && i.k < BPF_MEMWORDS,
                    _ => false,
                }
                && (mode != ABS || i.k < SKF_AD_OFF || i.k - SKF_AD_OFF < SKF_AD_MAX)
        }
        LDX => match mode {
            IMM | LEN => size == W,
            MEM => size == W && i.k < BPF_MEMWORDS,
            MSH => size == B,
            _ => false,
        },
        ST | STX => c & 0xf8 == 0 && i.k < BPF_MEMWORDS,
        ALU => {
            let op = c & 0xf0;
            let known = op <= 0xa0 && (op != 0x80 || c & X == 0);
            known && c & 0x07 == ALU && !(c & X == 0 && (op == 0x30 || op == 0x90) && i.k == 0)
        }
        JMP => match c & 0xf0 {
            0x00 => c & X == 0 && (i.k as usize) < left,
            0x10..=0x40 => usize::from(i.jt) < left && usize::from(i.jf) < left,
            _ => false,
        },
        RET => matches!(c & 0x18, 0x00 | 0x08 | 0x10) && c & 0xe0 == 0,
        _ => matches!(c, 0x07 | 0x87),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(p: &[(u16, u8, u8, u32)]) -> Vec<u8> {
        let mut v = vec![];
        for &(c, t, f, k) in p {
            v.extend_from_slice(&c.to_le_bytes());
            v.push(t);
            v.push(f);
            v.extend_from_slice(&k.to_le_bytes());
        }
        v
    }

    /// busybox udhcpc's filter (networking/udhcp/socket.c): UDP to port 68, unfragmented.
    fn udhcpc() -> Vec<u8> {
        enc(&[
            (0x30, 0, 0, 9),
            (0x15, 0, 6, 17),
            (0x28, 0, 0, 6),
            (0x45, 4, 0, 0x1fff),
            (0xb1, 0, 0, 0),
            (0x48, 0, 0, 2),
            (0x15, 0, 1, 68),
            (0x06, 0, 0, 0x7fff_ffff),
            (0x06, 0, 0, 0),
        ])
    }

    fn meta() -> Meta {
        Meta {
            protocol: 0x0800,
            pkttype: 0,
            ifindex: 2,
            hatype: 1,
        }
    }

    fn udp_frame(dport: u16, frag: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8 + 4];
        f[12] = 8;
        f[14] = 0x45;
        f[14 + 6..14 + 8].copy_from_slice(&frag.to_be_bytes());
        f[14 + 9] = 17;
        f[34 + 2..34 + 4].copy_from_slice(&dport.to_be_bytes());
        f
    }

    #[test]
    fn udhcpc_filter() {
        let f = Filter::new(&udhcpc()).unwrap();
        assert_eq!(f.run(&udp_frame(68, 0), 14, 14, &meta()), 0x7fff_ffff);
        assert_eq!(f.run(&udp_frame(67, 0), 14, 14, &meta()), 0);
        assert_eq!(
            f.run(&udp_frame(68, 0x20), 14, 14, &meta()),
            0,
            "a fragment"
        );
        let mut tcp = udp_frame(68, 0);
        tcp[14 + 9] = 6;
        assert_eq!(f.run(&tcp, 14, 14, &meta()), 0);
        assert_eq!(
            f.run(&udp_frame(68, 0)[..30], 14, 14, &meta()),
            0,
            "short: out of bounds"
        );
        assert_eq!(Filter::new(&f.encode()).unwrap(), f);
    }

    #[test]
    fn accept_none_all_and_ancillary() {
        let all = Filter::new(&enc(&[(0x06, 0, 0, u32::MAX)])).unwrap();
        let none = Filter::new(&enc(&[(0x06, 0, 0, 0)])).unwrap();
        let fr = udp_frame(1, 0);
        assert_eq!(all.run(&fr, 0, 14, &meta()), u32::MAX);
        assert_eq!(none.run(&fr, 0, 14, &meta()), 0);
        // ld proto (ancillary); ret a.
        let p = Filter::new(&enc(&[(0x28, 0, 0, SKF_AD_OFF), (0x16, 0, 0, 0)])).unwrap();
        assert_eq!(p.run(&fr, 0, 14, &meta()), 0x0800);
        // ldh [SKF_LL_OFF + 12] on a DGRAM view: the ethertype.
        let p = Filter::new(&enc(&[(0x28, 0, 0, SKF_LL_OFF + 12), (0x16, 0, 0, 0)])).unwrap();
        assert_eq!(p.run(&fr, 14, 14, &meta()), 0x0800);
        // ld len; ret a
        let p = Filter::new(&enc(&[(0x80, 0, 0, 0), (0x16, 0, 0, 0)])).unwrap();
        assert_eq!(p.run(&fr, 14, 14, &meta()), (fr.len() - 14) as u32);
        // Scratch memory and the X register: st M[3]; ldx M[3]; txa; ret a.
        let p = Filter::new(&enc(&[
            (0x00, 0, 0, 42),
            (0x02, 0, 0, 3),
            (0x61, 0, 0, 3),
            (0x87, 0, 0, 0),
            (0x16, 0, 0, 0),
        ]))
        .unwrap();
        assert_eq!(p.run(&fr, 0, 14, &meta()), 42);
        // Division by X = 0 at run time drops.
        let p = Filter::new(&enc(&[(0x00, 0, 0, 7), (0x3c, 0, 0, 0), (0x16, 0, 0, 0)])).unwrap();
        assert_eq!(p.run(&fr, 0, 14, &meta()), 0);
    }

    #[test]
    fn checks() {
        let bad = |p: &[(u16, u8, u8, u32)]| Filter::new(&enc(p)) == Err(Errno::EINVAL);
        assert!(Filter::new(&[]).is_err());
        assert!(bad(&[(0x00, 0, 0, 1)]), "no RET at the end");
        assert!(
            bad(&[(0x15, 5, 0, 1), (0x06, 0, 0, 0)]),
            "a jump past the end"
        );
        assert!(bad(&[(0x05, 0, 0, 1), (0x06, 0, 0, 0)]), "ja past the end");
        assert!(
            bad(&[(0x34, 0, 0, 0), (0x06, 0, 0, 0)]),
            "div by constant 0"
        );
        assert!(bad(&[(0x02, 0, 0, 16), (0x06, 0, 0, 0)]), "scratch word 16");
        assert!(bad(&[(0xff, 0, 0, 0), (0x06, 0, 0, 0)]), "unknown opcode");
        assert!(
            bad(&[(0x20, 0, 0, SKF_AD_OFF + 400), (0x06, 0, 0, 0)]),
            "unknown ancillary"
        );
        assert!(Filter::new(&enc(&vec![(0x06, 0, 0, 0); BPF_MAXINSNS + 1])).is_err());
        assert!(Filter::new(&udhcpc()).is_ok());
    }
}
