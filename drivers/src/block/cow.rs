//! UML's COW file format, byte for byte (`arch/um/drivers/cow_user.c`): a header, a bitmap
//! with one bit per sector (set: the sector's data is in the COW file, else in the backing
//! file), then the data area, where sector `s` lives at `data_offset + s * sectorsize`.
//!
//! The version 3 header is packed and big-endian: magic `MOOO` (0x4f4f4f4d) at 0, version 3
//! at 4, the backing file's mtime (32-bit seconds) at 8, its size (64-bit) at 12, the sector
//! size at 20, the alignment at 24, the format (0: bitmap) at 28, the backing file's absolute
//! path (NUL-terminated, 4096 bytes) at 32: 4128 bytes. The bitmap starts at the header size
//! rounded up to the alignment, is `ceil(ceil(size / sectorsize) / 8)` bytes, and the data
//! starts at its end rounded up to the alignment (`cow_sizes`). Bit `s` is bit `s % 8` of
//! byte `s / 8` (`ubd_test_bit`). The "broken" v3 layout that 64-bit builds wrote before
//! 2005 (no packing: mtime 64-bit at 8, size at 16, ..., path at 36) is read too, recognised
//! as `cow_user.c` does by a zero first word where the packed path would start. Versions 1
//! and 2 (host-endian, pre-2003) are refused with a clear error.

/// `COW_MAGIC`.
pub const COW_MAGIC: u32 = 0x4f4f_4f4d;
/// `PATH_LEN_V3`.
pub const PATH_LEN_V3: usize = 4096;
/// `sizeof(struct cow_header_v3)` (packed).
pub const HEADER_V3: usize = 32 + PATH_LEN_V3;
/// `sizeof(struct cow_header_v3_broken)` (natural alignment: 4132 rounded up to 8).
const HEADER_V3_BROKEN: usize = 4136;
/// Largest bitmap accepted (a 1 TiB disk at 512-byte sectors): a hostile size in a header
/// is an error, not an allocation of that size.
pub const MAX_BITMAP: u64 = 256 << 20;

/// A parsed COW header and the layout it implies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CowHeader {
    pub backing_file: Vec<u8>,
    pub mtime: u32,
    pub size: u64,
    pub sectorsize: u32,
    pub alignment: u32,
    pub bitmap_offset: u64,
    pub bitmap_len: u64,
    pub data_offset: u64,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from(be32(b, at)) << 32 | u64::from(be32(b, at + 4))
}

fn round_up(x: u64, align: u64) -> Option<u64> {
    x.div_ceil(align).checked_mul(align)
}

/// Whether the file starts with the COW magic (either byte order, as `read_cow_header`).
pub fn is_cow(head: &[u8]) -> bool {
    head.len() >= 4
        && (be32(head, 0) == COW_MAGIC
            || u32::from_le_bytes([head[0], head[1], head[2], head[3]]) == COW_MAGIC)
}

impl CowHeader {
    /// The layout of a v3 file for a backing file of `size` bytes (`cow_sizes`).
    pub fn layout(
        backing_file: Vec<u8>,
        mtime: u32,
        size: u64,
        sectorsize: u32,
        alignment: u32,
        header_len: usize,
    ) -> Result<CowHeader, String> {
        if !sectorsize.is_power_of_two() || !(512..=65536).contains(&sectorsize) {
            return Err(format!("bad sector size {sectorsize} in the COW header"));
        }
        if alignment == 0 || alignment > 1 << 20 {
            return Err(format!("bad alignment {alignment} in the COW header"));
        }
        let bitmap_len = size.div_ceil(u64::from(sectorsize)).div_ceil(8);
        if bitmap_len > MAX_BITMAP {
            return Err(format!("disk size {size} in the COW header is too large"));
        }
        let a = u64::from(alignment);
        let bitmap_offset = round_up(header_len as u64, a).ok_or("bad COW layout")?;
        let data_offset = round_up(bitmap_offset + bitmap_len, a).ok_or("bad COW layout")?;
        Ok(CowHeader {
            backing_file,
            mtime,
            size,
            sectorsize,
            alignment,
            bitmap_offset,
            bitmap_len,
            data_offset,
        })
    }

    /// Parses the first [`HEADER_V3_BROKEN`] (or fewer) bytes of a file that [`is_cow`].
    pub fn parse(b: &[u8]) -> Result<CowHeader, String> {
        if b.len() < 8 {
            return Err("short COW header".into());
        }
        let version = if be32(b, 0) == COW_MAGIC {
            be32(b, 4)
        } else {
            u32::from_le_bytes([b[4], b[5], b[6], b[7]])
        };
        if version != 3 {
            return Err(format!("COW version {version} is not supported (only 3)"));
        }
        if b.len() < HEADER_V3 {
            return Err("short COW header".into());
        }
        let path = |from: usize| {
            let p = &b[from..(from + PATH_LEN_V3).min(b.len())];
            p[..p.iter().position(|&c| c == 0).unwrap_or(p.len())].to_vec()
        };
        // cow_user.c: a zero word where the packed path begins is the broken layout's
        // cow_format (a path cannot start with four NULs).
        if be32(b, 32) != 0 {
            if be32(b, 28) != 0 {
                return Err(format!("unknown COW format {}", be32(b, 28)));
            }
            CowHeader::layout(
                path(32),
                be32(b, 8),
                be64(b, 12),
                be32(b, 20),
                be32(b, 24),
                HEADER_V3,
            )
        } else {
            if b.len() < HEADER_V3_BROKEN {
                return Err("short COW header".into());
            }
            CowHeader::layout(
                path(36),
                be64(b, 8) as u32,
                be64(b, 16),
                be32(b, 24),
                be32(b, 28),
                HEADER_V3_BROKEN,
            )
        }
    }

    /// The packed v3 header bytes (`write_cow_header`).
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        if self.backing_file.len() >= PATH_LEN_V3 || self.backing_file.contains(&0) {
            return Err("backing file name too long for a COW header".into());
        }
        let mut h = vec![0u8; HEADER_V3];
        h[0..4].copy_from_slice(&COW_MAGIC.to_be_bytes());
        h[4..8].copy_from_slice(&3u32.to_be_bytes());
        h[8..12].copy_from_slice(&self.mtime.to_be_bytes());
        h[12..20].copy_from_slice(&self.size.to_be_bytes());
        h[20..24].copy_from_slice(&self.sectorsize.to_be_bytes());
        h[24..28].copy_from_slice(&self.alignment.to_be_bytes());
        h[32..32 + self.backing_file.len()].copy_from_slice(&self.backing_file);
        Ok(h)
    }
}

/// Whether bit `s` is set (`ubd_test_bit`).
pub fn test_bit(bitmap: &[u8], s: u64) -> bool {
    bitmap[(s / 8) as usize] & (1 << (s % 8)) != 0
}

/// Sets bit `s` (`ubd_set_bit`).
pub fn set_bit(bitmap: &mut [u8], s: u64) {
    bitmap[(s / 8) as usize] |= 1 << (s % 8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_layout_matches_cow_sizes() {
        // A 10 MiB backing file, 512-byte sectors, 4096 alignment (what ubd creates):
        // 20480 sectors -> 2560 bitmap bytes at 8192, data at 12288.
        let h = CowHeader::layout(b"/img".to_vec(), 7, 10 << 20, 512, 4096, HEADER_V3).unwrap();
        assert_eq!(
            (h.bitmap_offset, h.bitmap_len, h.data_offset),
            (8192, 2560, 12288)
        );
        let bytes = h.encode().unwrap();
        assert_eq!(bytes.len(), 4128);
        // 0x4f4f4f4d big-endian.
        assert_eq!(&bytes[0..4], b"OOOM");
        assert_eq!(&bytes[12..20], &(10u64 << 20).to_be_bytes());
        assert_eq!(&bytes[32..36], b"/img");
        assert!(is_cow(&bytes));
        assert_eq!(CowHeader::parse(&bytes).unwrap(), h);
    }

    #[test]
    fn broken_layout_is_recognised() {
        let mut b = vec![0u8; HEADER_V3_BROKEN];
        b[0..4].copy_from_slice(&COW_MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&3u32.to_be_bytes());
        b[8..16].copy_from_slice(&99u64.to_be_bytes());
        b[16..24].copy_from_slice(&(1u64 << 20).to_be_bytes());
        b[24..28].copy_from_slice(&512u32.to_be_bytes());
        b[28..32].copy_from_slice(&512u32.to_be_bytes());
        b[36..40].copy_from_slice(b"/bk\0");
        let h = CowHeader::parse(&b).unwrap();
        assert_eq!(h.backing_file, b"/bk");
        assert_eq!((h.mtime, h.size, h.bitmap_offset), (99, 1 << 20, 4608));
    }

    #[test]
    fn hostile_headers_are_errors() {
        let good = CowHeader::layout(b"/x".to_vec(), 1, 4096, 512, 512, HEADER_V3)
            .unwrap()
            .encode()
            .unwrap();
        let mut b = good.clone();
        b[12..20].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(CowHeader::parse(&b).is_err());
        let mut b = good.clone();
        b[20..24].copy_from_slice(&0u32.to_be_bytes());
        assert!(CowHeader::parse(&b).is_err());
        let mut b = good.clone();
        b[24..28].copy_from_slice(&0u32.to_be_bytes());
        assert!(CowHeader::parse(&b).is_err());
        let mut b = good.clone();
        b[4..8].copy_from_slice(&2u32.to_be_bytes());
        assert!(CowHeader::parse(&b).is_err());
        assert!(CowHeader::parse(&good[..100]).is_err());
    }

    #[test]
    fn bits() {
        let mut m = vec![0u8; 2];
        set_bit(&mut m, 9);
        assert_eq!(m, [0, 2]);
        assert!(test_bit(&m, 9) && !test_bit(&m, 8));
    }
}
