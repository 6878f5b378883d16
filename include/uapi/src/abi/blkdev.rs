//! The generic block-device ABI: the `BLK*` ioctls of `include/uapi/linux/fs.h`, `HDIO_GETGEO`
//! and `struct hd_geometry` of `include/uapi/linux/hdreg.h`, `BLKPG` of
//! `include/uapi/linux/blkpg.h`, and the block majors of `include/uapi/linux/major.h` that the
//! drivers here use. The ioctls the loop driver already answered live in [`super::loopdev`] and
//! are re-exported, so every block ioctl number is named once.

pub use super::loopdev::{
    BLKBSZGET, BLKFLSBUF, BLKGETSIZE, BLKGETSIZE64, BLKIOMIN, BLKIOOPT, BLKPBSZGET, BLKROGET,
    BLKSSZGET,
};
use super::tty::{io, ior, iow};

/// `UBD_MAJOR`: User Mode Linux's block devices (16 minors per disk).
pub const UBD_MAJOR: u32 = 98;
/// `UBD_SHIFT` in `arch/um/drivers/ubd_kern.c`: minors per disk, as a shift.
pub const UBD_SHIFT: u32 = 4;
/// `MAX_DEV` in `ubd_kern.c`: disks `ubda` .. `ubdp`.
pub const UBD_MAX_DEV: u32 = 16;

/// `BLKROSET` (`int *`: set read-only).
pub const BLKROSET: u32 = io(0x12, 93);
/// `BLKRRPART`: re-read the partition table.
pub const BLKRRPART: u32 = io(0x12, 95);
/// `BLKRASET` (the value itself: read-ahead in 512-byte sectors).
pub const BLKRASET: u32 = io(0x12, 98);
/// `BLKRAGET` (`long *`).
pub const BLKRAGET: u32 = io(0x12, 99);
/// `BLKFRASET` (as `BLKRASET`, the file system read-ahead).
pub const BLKFRASET: u32 = io(0x12, 100);
/// `BLKFRAGET` (`long *`).
pub const BLKFRAGET: u32 = io(0x12, 101);
/// `BLKPG` (`struct blkpg_ioctl_arg *`).
pub const BLKPG: u32 = io(0x12, 105);
/// `BLKBSZSET` (`int *`, encoded with `sizeof(size_t)`).
pub const BLKBSZSET: u32 = iow(0x12, 113, 8);
/// `BLKDISCARD` (`uint64_t range[2]`: start and length in bytes).
pub const BLKDISCARD: u32 = io(0x12, 119);
/// `BLKALIGNOFF` (`int *`).
pub const BLKALIGNOFF: u32 = io(0x12, 122);
/// `BLKDISCARDZEROES` (`unsigned int *`).
pub const BLKDISCARDZEROES: u32 = io(0x12, 124);
/// `BLKROTATIONAL` (`unsigned short *`).
pub const BLKROTATIONAL: u32 = io(0x12, 126);
/// `BLKZEROOUT` (`uint64_t range[2]`).
pub const BLKZEROOUT: u32 = io(0x12, 127);
/// `BLKGETDISKSEQ` (`__u64 *`).
pub const BLKGETDISKSEQ: u32 = ior(0x12, 128, 8);

/// `HDIO_GETGEO` (`struct hd_geometry *`).
pub const HDIO_GETGEO: u32 = 0x0301;

/// `struct hd_geometry` on 64-bit arches: `heads`, `sectors` (u8), `cylinders` (u16), pad,
/// `start` (`unsigned long`), 16 bytes in all.
pub fn hd_geometry(heads: u8, sectors: u8, cylinders: u16, start: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0] = heads;
    b[1] = sectors;
    b[2..4].copy_from_slice(&cylinders.to_le_bytes());
    b[8..16].copy_from_slice(&start.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_headers() {
        // <linux/fs.h>, <linux/hdreg.h>, <linux/blkpg.h> as the C preprocessor expands them.
        assert_eq!(BLKROSET, 0x125d);
        assert_eq!(BLKROGET, 0x125e);
        assert_eq!(BLKRRPART, 0x125f);
        assert_eq!(BLKRASET, 0x1262);
        assert_eq!(BLKRAGET, 0x1263);
        assert_eq!(BLKFRASET, 0x1264);
        assert_eq!(BLKFRAGET, 0x1265);
        assert_eq!(BLKPG, 0x1269);
        assert_eq!(BLKBSZSET, 0x4008_1271);
        assert_eq!(BLKDISCARD, 0x1277);
        assert_eq!(BLKIOMIN, 0x1278);
        assert_eq!(BLKIOOPT, 0x1279);
        assert_eq!(BLKALIGNOFF, 0x127a);
        assert_eq!(BLKDISCARDZEROES, 0x127c);
        assert_eq!(BLKROTATIONAL, 0x127e);
        assert_eq!(BLKZEROOUT, 0x127f);
        assert_eq!(BLKGETDISKSEQ, 0x8008_1280);
        assert_eq!(HDIO_GETGEO, 0x301);
        assert_eq!(UBD_MAJOR, 98);
    }

    #[test]
    fn geometry_layout() {
        let g = hd_geometry(255, 63, 0x1234, 2048);
        assert_eq!(g[0], 255);
        assert_eq!(g[1], 63);
        assert_eq!(u16::from_le_bytes([g[2], g[3]]), 0x1234);
        assert_eq!(u64::from_le_bytes(g[8..16].try_into().unwrap()), 2048);
    }
}
