//! Directory-index hashes (Linux `fs/ext4/hash.c`): the legacy `dx_hack_hash`, half MD4 and
//! TEA, each in the signed and unsigned `char` variants (`s_flags` says which one made the
//! image), seeded from `s_hash_seed`. The htree lookup in [`crate::fs`] uses them to go from
//! a name to the one leaf block that can hold it.

/// `DX_HASH_*`.
pub const LEGACY: u8 = 0;
pub const HALF_MD4: u8 = 1;
pub const TEA: u8 = 2;
pub const LEGACY_UNSIGNED: u8 = 3;
pub const HALF_MD4_UNSIGNED: u8 = 4;
pub const TEA_UNSIGNED: u8 = 5;

/// `EXT4_HTREE_EOF_32BIT`.
const EOF_32BIT: u32 = 0x7fff_ffff;

fn byte(c: u8, unsigned: bool) -> u32 {
    if unsigned {
        c as u32
    } else {
        c as i8 as i32 as u32
    }
}

fn dx_hack_hash(name: &[u8], unsigned: bool) -> u32 {
    let (mut h0, mut h1) = (0x12a3_fe2du32, 0x37ab_e8f9u32);
    for &c in name {
        let mut h = h1.wrapping_add(h0 ^ byte(c, unsigned).wrapping_mul(7_152_373));
        if h & 0x8000_0000 != 0 {
            h = h.wrapping_sub(0x7fff_ffff);
        }
        h1 = h0;
        h0 = h;
    }
    h0 << 1
}

/// `str2hashbuf_signed` / `_unsigned`: `num` words from up to `4 * num` bytes of `msg`,
/// padded with the length.
fn str2hashbuf(msg: &[u8], len: usize, out: &mut [u32], unsigned: bool) {
    let num = out.len();
    let mut pad = len as u32 | ((len as u32) << 8);
    pad |= pad << 16;
    let mut val = pad;
    let n = len.min(num * 4);
    let mut k = 0;
    for (i, &c) in msg[..n].iter().enumerate() {
        val = byte(c, unsigned).wrapping_add(val << 8);
        if i % 4 == 3 {
            out[k] = val;
            k += 1;
            val = pad;
        }
    }
    if k < num {
        out[k] = val;
        k += 1;
    }
    for w in &mut out[k..] {
        *w = pad;
    }
}

fn half_md4_transform(buf: &mut [u32; 4], inp: &[u32; 8]) {
    let f = |x: u32, y: u32, z: u32| z ^ (x & (y ^ z));
    let g = |x: u32, y: u32, z: u32| (x & y).wrapping_add((x ^ y) & z);
    let h = |x: u32, y: u32, z: u32| x ^ y ^ z;
    const K2: u32 = 0o13240474631;
    const K3: u32 = 0o15666365641;
    let [mut a, mut b, mut c, mut d] = *buf;
    macro_rules! round {
        ($f:expr, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $s:expr) => {
            $a = $a.wrapping_add($f($b, $c, $d)).wrapping_add($x);
            $a = $a.rotate_left($s);
        };
    }
    round!(f, a, b, c, d, inp[0], 3);
    round!(f, d, a, b, c, inp[1], 7);
    round!(f, c, d, a, b, inp[2], 11);
    round!(f, b, c, d, a, inp[3], 19);
    round!(f, a, b, c, d, inp[4], 3);
    round!(f, d, a, b, c, inp[5], 7);
    round!(f, c, d, a, b, inp[6], 11);
    round!(f, b, c, d, a, inp[7], 19);
    round!(g, a, b, c, d, inp[1].wrapping_add(K2), 3);
    round!(g, d, a, b, c, inp[3].wrapping_add(K2), 5);
    round!(g, c, d, a, b, inp[5].wrapping_add(K2), 9);
    round!(g, b, c, d, a, inp[7].wrapping_add(K2), 13);
    round!(g, a, b, c, d, inp[0].wrapping_add(K2), 3);
    round!(g, d, a, b, c, inp[2].wrapping_add(K2), 5);
    round!(g, c, d, a, b, inp[4].wrapping_add(K2), 9);
    round!(g, b, c, d, a, inp[6].wrapping_add(K2), 13);
    round!(h, a, b, c, d, inp[3].wrapping_add(K3), 3);
    round!(h, d, a, b, c, inp[7].wrapping_add(K3), 9);
    round!(h, c, d, a, b, inp[2].wrapping_add(K3), 11);
    round!(h, b, c, d, a, inp[6].wrapping_add(K3), 15);
    round!(h, a, b, c, d, inp[1].wrapping_add(K3), 3);
    round!(h, d, a, b, c, inp[5].wrapping_add(K3), 9);
    round!(h, c, d, a, b, inp[0].wrapping_add(K3), 11);
    round!(h, b, c, d, a, inp[4].wrapping_add(K3), 15);
    buf[0] = buf[0].wrapping_add(a);
    buf[1] = buf[1].wrapping_add(b);
    buf[2] = buf[2].wrapping_add(c);
    buf[3] = buf[3].wrapping_add(d);
}

fn tea_transform(buf: &mut [u32; 4], inp: &[u32; 4]) {
    let (mut sum, mut b0, mut b1) = (0u32, buf[0], buf[1]);
    let [a, b, c, d] = *inp;
    for _ in 0..16 {
        sum = sum.wrapping_add(0x9E37_79B9);
        b0 = b0.wrapping_add(
            (b1 << 4).wrapping_add(a) ^ b1.wrapping_add(sum) ^ (b1 >> 5).wrapping_add(b),
        );
        b1 = b1.wrapping_add(
            (b0 << 4).wrapping_add(c) ^ b0.wrapping_add(sum) ^ (b0 >> 5).wrapping_add(d),
        );
    }
    buf[0] = buf[0].wrapping_add(b0);
    buf[1] = buf[1].wrapping_add(b1);
}

/// `ext4fs_dirhash`'s major hash of `name` (low bit clear), or `None` for a version this
/// driver does not know (siphash is for casefolded directories, which it does not read).
pub fn dirhash(name: &[u8], version: u8, seed: &[u32; 4]) -> Option<u32> {
    let mut buf = [0x6745_2301u32, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    if seed.iter().any(|&w| w != 0) {
        buf = *seed;
    }
    let hash = match version {
        LEGACY | LEGACY_UNSIGNED => dx_hack_hash(name, version == LEGACY_UNSIGNED),
        HALF_MD4 | HALF_MD4_UNSIGNED => {
            let unsigned = version == HALF_MD4_UNSIGNED;
            let mut p = 0;
            loop {
                let mut inp = [0u32; 8];
                str2hashbuf(&name[p..], name.len() - p, &mut inp, unsigned);
                half_md4_transform(&mut buf, &inp);
                p += 32;
                if p >= name.len() {
                    break;
                }
            }
            buf[1]
        }
        TEA | TEA_UNSIGNED => {
            let unsigned = version == TEA_UNSIGNED;
            let mut p = 0;
            loop {
                let mut inp = [0u32; 4];
                str2hashbuf(&name[p..], name.len() - p, &mut inp, unsigned);
                tea_transform(&mut buf, &inp);
                p += 16;
                if p >= name.len() {
                    break;
                }
            }
            buf[0]
        }
        _ => return None,
    };
    let hash = hash & !1;
    Some(if hash == EOF_32BIT << 1 {
        (EOF_32BIT - 1) << 1
    } else {
        hash
    })
}
