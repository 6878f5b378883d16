//! The two checksums of ext4's metadata: CRC32C (Castagnoli, reflected polynomial
//! `0x82F63B78`, `metadata_csum`) and CRC16 (ANSI, reflected `0xA001`, the older `gdt_csum`
//! of group descriptors).
//!
//! Written here rather than taken from a crate: each is a 256-entry table built at compile
//! time and a byte loop (a dozen lines), metadata blocks are few and small, and the kernel
//! keeps its dependency list short. Both follow Linux's conventions exactly: [`crc32c`] is
//! `crc32c_le(seed, data)` (lib/crc32.c) with *no* pre- or post-inversion, which is how
//! `ext4_chksum` chains a seed through several pieces; [`crc16`] is lib/crc16.c's `crc16`.

const fn crc32c_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

const fn crc16_table() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u16;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xA001
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32C: [u32; 256] = crc32c_table();
static CRC16: [u16; 256] = crc16_table();

/// `crc32c_le(crc, data)`: continues `crc` over `data` (no inversions).
pub fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = CRC32C[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// lib/crc16.c `crc16(crc, data)`.
pub fn crc16(mut crc: u16, data: &[u8]) -> u16 {
    for &b in data {
        crc = (crc >> 8) ^ CRC16[((crc ^ b as u16) & 0xff) as usize];
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // The standard check value of CRC-32C ("123456789" -> 0xE3069283) is with the
        // usual ~0 start and final inversion.
        assert_eq!(!crc32c(!0, b"123456789"), 0xE306_9283);
        // CRC-16/ARC of "123456789" is 0xBB3D (start 0, no inversion).
        assert_eq!(crc16(0, b"123456789"), 0xBB3D);
        // Chaining equals one pass.
        assert_eq!(
            crc32c(crc32c(7, b"1234"), b"56789"),
            crc32c(7, b"123456789")
        );
    }
}
