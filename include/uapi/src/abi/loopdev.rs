//! The loop block device's ioctl ABI, the generic block-device ioctls it answers, and the
//! device numbers.
//!
//! Sources: `include/uapi/linux/loop.h` (`struct loop_info`, `struct loop_info64`,
//! `struct loop_config`, `LO_FLAGS_*`, `LOOP_*` ioctls, `LO_NAME_SIZE`, `LO_KEY_SIZE`),
//! `include/uapi/linux/fs.h` (`BLKGETSIZE`, `BLKSSZGET`, `BLKGETSIZE64` ...),
//! `include/uapi/linux/major.h` (`LOOP_MAJOR`), `include/linux/miscdevice.h`
//! (`LOOP_CTRL_MINOR`). `struct loop_info64` and `struct loop_config` are the same on every
//! arch; the old `struct loop_info` holds `__kernel_old_dev_t`, which is `unsigned long` on
//! x86_64 (`arch/x86/include/uapi/asm/posix_types_64.h`) and `unsigned int` on arm64
//! (`include/uapi/asm-generic/posix_types.h`): both layouts are here, and each arch crate's
//! `abi::LoopInfo` names its own.

use static_assertions::const_assert_eq;

use super::tty::{io, ior};

/// `LOOP_MAJOR`: block major of the loop devices (minor N = `/dev/loopN`, no partitions).
pub const LOOP_MAJOR: u32 = 7;
/// `MISC_MAJOR`.
pub const MISC_MAJOR: u32 = 10;
/// `LOOP_CTRL_MINOR`: `/dev/loop-control` is misc 10:237.
pub const LOOP_CTRL_MINOR: u32 = 237;

/// `LO_NAME_SIZE`.
pub const LO_NAME_SIZE: usize = 64;
/// `LO_KEY_SIZE`.
pub const LO_KEY_SIZE: usize = 32;

/// `LO_FLAGS_READ_ONLY`.
pub const LO_FLAGS_READ_ONLY: u32 = 1;
/// `LO_FLAGS_AUTOCLEAR`: detach at the last close.
pub const LO_FLAGS_AUTOCLEAR: u32 = 4;
/// `LO_FLAGS_PARTSCAN`: scan for partitions.
pub const LO_FLAGS_PARTSCAN: u32 = 8;
/// `LO_FLAGS_DIRECT_IO`.
pub const LO_FLAGS_DIRECT_IO: u32 = 16;
/// `LOOP_SET_STATUS_SETTABLE_FLAGS`.
pub const LOOP_SET_STATUS_SETTABLE_FLAGS: u32 = LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
/// `LOOP_SET_STATUS_CLEARABLE_FLAGS`.
pub const LOOP_SET_STATUS_CLEARABLE_FLAGS: u32 = LO_FLAGS_AUTOCLEAR;
/// `LOOP_CONFIGURE_SETTABLE_FLAGS`.
pub const LOOP_CONFIGURE_SETTABLE_FLAGS: u32 =
    LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN | LO_FLAGS_DIRECT_IO;

/// `LOOP_SET_FD` (arg: the backing file's descriptor).
pub const LOOP_SET_FD: u32 = 0x4C00;
/// `LOOP_CLR_FD`.
pub const LOOP_CLR_FD: u32 = 0x4C01;
/// `LOOP_SET_STATUS` (`struct loop_info`).
pub const LOOP_SET_STATUS: u32 = 0x4C02;
/// `LOOP_GET_STATUS` (`struct loop_info`).
pub const LOOP_GET_STATUS: u32 = 0x4C03;
/// `LOOP_SET_STATUS64` (`struct loop_info64`).
pub const LOOP_SET_STATUS64: u32 = 0x4C04;
/// `LOOP_GET_STATUS64`.
pub const LOOP_GET_STATUS64: u32 = 0x4C05;
/// `LOOP_CHANGE_FD`.
pub const LOOP_CHANGE_FD: u32 = 0x4C06;
/// `LOOP_SET_CAPACITY`.
pub const LOOP_SET_CAPACITY: u32 = 0x4C07;
/// `LOOP_SET_DIRECT_IO`.
pub const LOOP_SET_DIRECT_IO: u32 = 0x4C08;
/// `LOOP_SET_BLOCK_SIZE`.
pub const LOOP_SET_BLOCK_SIZE: u32 = 0x4C09;
/// `LOOP_CONFIGURE` (`struct loop_config`).
pub const LOOP_CONFIGURE: u32 = 0x4C0A;
/// `LOOP_CTL_ADD` (on `/dev/loop-control`; arg: the device number).
pub const LOOP_CTL_ADD: u32 = 0x4C80;
/// `LOOP_CTL_REMOVE`.
pub const LOOP_CTL_REMOVE: u32 = 0x4C81;
/// `LOOP_CTL_GET_FREE`.
pub const LOOP_CTL_GET_FREE: u32 = 0x4C82;

/// `BLKROGET` (`int`: read-only?).
pub const BLKROGET: u32 = io(0x12, 94);
/// `BLKGETSIZE` (`unsigned long`: size in 512-byte sectors).
pub const BLKGETSIZE: u32 = io(0x12, 96);
/// `BLKFLSBUF`.
pub const BLKFLSBUF: u32 = io(0x12, 97);
/// `BLKSSZGET` (`int`: logical block size).
pub const BLKSSZGET: u32 = io(0x12, 104);
/// `BLKBSZGET` (`size_t`, encoded with `sizeof(size_t)` = 8 on both arches).
pub const BLKBSZGET: u32 = ior(0x12, 112, 8);
/// `BLKGETSIZE64` (`u64`: size in bytes; encoded with `sizeof(size_t)`).
pub const BLKGETSIZE64: u32 = ior(0x12, 114, 8);
/// `BLKIOMIN` (`unsigned int`).
pub const BLKIOMIN: u32 = io(0x12, 120);
/// `BLKIOOPT` (`unsigned int`).
pub const BLKIOOPT: u32 = io(0x12, 121);
/// `BLKPBSZGET` (`unsigned int`: physical block size).
pub const BLKPBSZGET: u32 = io(0x12, 123);

crate::pod_struct! {
    /// `struct loop_info64`: 232 bytes on every arch.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct LoopInfo64 {
        /// Device of the backing file (`new_encode_dev`), read-only.
        pub lo_device: u64,
        /// Inode of the backing file, read-only.
        pub lo_inode: u64,
        /// Device number of the backing file if it is a device, read-only.
        pub lo_rdevice: u64,
        /// Byte offset into the backing file.
        pub lo_offset: u64,
        /// Size limit in bytes, 0 = the rest of the file.
        pub lo_sizelimit: u64,
        /// The loop device's number, read-only.
        pub lo_number: u32,
        /// Obsolete, ignored.
        pub lo_encrypt_type: u32,
        /// Write-only.
        pub lo_encrypt_key_size: u32,
        /// `LO_FLAGS_*`.
        pub lo_flags: u32,
        /// The backing file's name, as user space set it.
        pub lo_file_name: [u8; LO_NAME_SIZE],
        /// Obsolete.
        pub lo_crypt_name: [u8; LO_NAME_SIZE],
        /// Write-only.
        pub lo_encrypt_key: [u8; LO_KEY_SIZE],
        /// Unused.
        pub lo_init: [u64; 2],
    }
}

impl Default for LoopInfo64 {
    fn default() -> Self {
        Self {
            lo_device: 0,
            lo_inode: 0,
            lo_rdevice: 0,
            lo_offset: 0,
            lo_sizelimit: 0,
            lo_number: 0,
            lo_encrypt_type: 0,
            lo_encrypt_key_size: 0,
            lo_flags: 0,
            lo_file_name: [0; LO_NAME_SIZE],
            lo_crypt_name: [0; LO_NAME_SIZE],
            lo_encrypt_key: [0; LO_KEY_SIZE],
            lo_init: [0; 2],
        }
    }
}

const_assert_eq!(core::mem::size_of::<LoopInfo64>(), 232);
const_assert_eq!(core::mem::offset_of!(LoopInfo64, lo_number), 40);
const_assert_eq!(core::mem::offset_of!(LoopInfo64, lo_flags), 52);
const_assert_eq!(core::mem::offset_of!(LoopInfo64, lo_file_name), 56);
const_assert_eq!(core::mem::offset_of!(LoopInfo64, lo_init), 216);

crate::pod_struct! {
    /// `struct loop_config` (`LOOP_CONFIGURE`): 304 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct LoopConfig {
        /// The backing file's descriptor.
        pub fd: u32,
        /// Logical block size, 0 = 512.
        pub block_size: u32,
        /// Status to set.
        pub info: LoopInfo64,
        /// Must be zero.
        pub reserved: [u64; 8],
    }
}

const_assert_eq!(core::mem::size_of::<LoopConfig>(), 304);
const_assert_eq!(core::mem::offset_of!(LoopConfig, info), 8);

/// The fields of the old `struct loop_info` both layouts share, in arch-neutral form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OldLoopInfo {
    pub lo_number: i32,
    pub lo_device: u64,
    pub lo_inode: u64,
    pub lo_rdevice: u64,
    pub lo_offset: i32,
    pub lo_encrypt_type: i32,
    pub lo_encrypt_key_size: i32,
    pub lo_flags: i32,
    pub lo_name: [u8; LO_NAME_SIZE],
}

impl Default for OldLoopInfo {
    fn default() -> Self {
        Self {
            lo_number: 0,
            lo_device: 0,
            lo_inode: 0,
            lo_rdevice: 0,
            lo_offset: 0,
            lo_encrypt_type: 0,
            lo_encrypt_key_size: 0,
            lo_flags: 0,
            lo_name: [0; LO_NAME_SIZE],
        }
    }
}

crate::pod_struct! {
    /// The old `struct loop_info` where `__kernel_old_dev_t` is `unsigned long` (x86_64):
    /// 168 bytes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct LoopInfoWideDev {
        pub lo_number: i32,
        /// Alignment padding.
        pub pad0: u32,
        pub lo_device: u64,
        pub lo_inode: u64,
        pub lo_rdevice: u64,
        pub lo_offset: i32,
        pub lo_encrypt_type: i32,
        pub lo_encrypt_key_size: i32,
        pub lo_flags: i32,
        pub lo_name: [u8; LO_NAME_SIZE],
        pub lo_encrypt_key: [u8; LO_KEY_SIZE],
        pub lo_init: [u64; 2],
        pub reserved: [u8; 4],
        /// Tail padding to the 8-byte alignment.
        pub pad1: u32,
    }
}

const_assert_eq!(core::mem::size_of::<LoopInfoWideDev>(), 168);
const_assert_eq!(core::mem::offset_of!(LoopInfoWideDev, lo_offset), 32);
const_assert_eq!(core::mem::offset_of!(LoopInfoWideDev, lo_name), 48);
const_assert_eq!(core::mem::offset_of!(LoopInfoWideDev, lo_init), 144);

crate::pod_struct! {
    /// The old `struct loop_info` where `__kernel_old_dev_t` is `unsigned int` (asm-generic:
    /// arm64): 160 bytes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct LoopInfoNarrowDev {
        pub lo_number: i32,
        pub lo_device: u32,
        pub lo_inode: u64,
        pub lo_rdevice: u32,
        pub lo_offset: i32,
        pub lo_encrypt_type: i32,
        pub lo_encrypt_key_size: i32,
        pub lo_flags: i32,
        pub lo_name: [u8; LO_NAME_SIZE],
        pub lo_encrypt_key: [u8; LO_KEY_SIZE],
        /// Alignment padding before `lo_init`.
        pub pad0: u32,
        pub lo_init: [u64; 2],
        pub reserved: [u8; 4],
        /// Tail padding to the 8-byte alignment.
        pub pad1: u32,
    }
}

const_assert_eq!(core::mem::size_of::<LoopInfoNarrowDev>(), 160);
const_assert_eq!(core::mem::offset_of!(LoopInfoNarrowDev, lo_rdevice), 16);
const_assert_eq!(core::mem::offset_of!(LoopInfoNarrowDev, lo_name), 36);
const_assert_eq!(core::mem::offset_of!(LoopInfoNarrowDev, lo_init), 136);

/// An arch's old `struct loop_info`: converts to and from [`OldLoopInfo`]. The device numbers
/// are `old_encode_dev`/`huge_encode_dev` results the caller computes.
pub trait OldLoopInfoAbi: crate::abi::pod::Pod {
    /// Bits of `__kernel_old_dev_t`: a device number wider than that is `EOVERFLOW`.
    const DEV_BITS: u32;
    fn from_info(i: &OldLoopInfo) -> Self;
    fn to_info(&self) -> OldLoopInfo;
}

impl OldLoopInfoAbi for LoopInfoWideDev {
    const DEV_BITS: u32 = 64;
    fn from_info(i: &OldLoopInfo) -> Self {
        Self {
            lo_number: i.lo_number,
            pad0: 0,
            lo_device: i.lo_device,
            lo_inode: i.lo_inode,
            lo_rdevice: i.lo_rdevice,
            lo_offset: i.lo_offset,
            lo_encrypt_type: i.lo_encrypt_type,
            lo_encrypt_key_size: i.lo_encrypt_key_size,
            lo_flags: i.lo_flags,
            lo_name: i.lo_name,
            lo_encrypt_key: [0; LO_KEY_SIZE],
            lo_init: [0; 2],
            reserved: [0; 4],
            pad1: 0,
        }
    }
    fn to_info(&self) -> OldLoopInfo {
        OldLoopInfo {
            lo_number: self.lo_number,
            lo_device: self.lo_device,
            lo_inode: self.lo_inode,
            lo_rdevice: self.lo_rdevice,
            lo_offset: self.lo_offset,
            lo_encrypt_type: self.lo_encrypt_type,
            lo_encrypt_key_size: self.lo_encrypt_key_size,
            lo_flags: self.lo_flags,
            lo_name: self.lo_name,
        }
    }
}

impl OldLoopInfoAbi for LoopInfoNarrowDev {
    const DEV_BITS: u32 = 32;
    fn from_info(i: &OldLoopInfo) -> Self {
        Self {
            lo_number: i.lo_number,
            lo_device: i.lo_device as u32,
            lo_inode: i.lo_inode,
            lo_rdevice: i.lo_rdevice as u32,
            lo_offset: i.lo_offset,
            lo_encrypt_type: i.lo_encrypt_type,
            lo_encrypt_key_size: i.lo_encrypt_key_size,
            lo_flags: i.lo_flags,
            lo_name: i.lo_name,
            lo_encrypt_key: [0; LO_KEY_SIZE],
            pad0: 0,
            lo_init: [0; 2],
            reserved: [0; 4],
            pad1: 0,
        }
    }
    fn to_info(&self) -> OldLoopInfo {
        OldLoopInfo {
            lo_number: self.lo_number,
            lo_device: u64::from(self.lo_device),
            lo_inode: self.lo_inode,
            lo_rdevice: u64::from(self.lo_rdevice),
            lo_offset: self.lo_offset,
            lo_encrypt_type: self.lo_encrypt_type,
            lo_encrypt_key_size: self.lo_encrypt_key_size,
            lo_flags: self.lo_flags,
            lo_name: self.lo_name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::pod::Pod;

    #[test]
    fn ioctl_numbers_match_the_headers() {
        // Values from <linux/fs.h> as the C preprocessor expands them on both arches.
        assert_eq!(BLKGETSIZE64, 0x8008_1272);
        assert_eq!(BLKBSZGET, 0x8008_1270);
        assert_eq!(BLKSSZGET, 0x1268);
        assert_eq!(BLKGETSIZE, 0x1260);
        assert_eq!(BLKROGET, 0x125e);
        assert_eq!(BLKFLSBUF, 0x1261);
        assert_eq!(BLKPBSZGET, 0x127b);
    }

    #[test]
    fn old_loop_info_layouts_round_trip() {
        let mut i = OldLoopInfo {
            lo_number: 3,
            lo_device: 0x801,
            lo_inode: 12,
            lo_rdevice: 0,
            lo_offset: 512,
            lo_flags: LO_FLAGS_AUTOCLEAR as i32,
            ..Default::default()
        };
        i.lo_name[..4].copy_from_slice(b"img\0");
        let w = LoopInfoWideDev::from_info(&i).as_bytes();
        assert_eq!(w.len(), 168);
        assert_eq!(&w[48..52], b"img\0");
        assert_eq!(i32::from_le_bytes(w[32..36].try_into().unwrap()), 512);
        assert_eq!(LoopInfoWideDev::read_le(&w).to_info(), i);
        let n = LoopInfoNarrowDev::from_info(&i).as_bytes();
        assert_eq!(n.len(), 160);
        assert_eq!(&n[36..40], b"img\0");
        assert_eq!(u32::from_le_bytes(n[4..8].try_into().unwrap()), 0x801);
        assert_eq!(i32::from_le_bytes(n[20..24].try_into().unwrap()), 512);
        assert_eq!(LoopInfoNarrowDev::read_le(&n).to_info(), i);
    }

    #[test]
    fn loop_info64_layout() {
        let mut i = LoopInfo64 {
            lo_offset: 4096,
            lo_number: 2,
            lo_flags: LO_FLAGS_READ_ONLY,
            ..Default::default()
        };
        i.lo_file_name[0] = b'/';
        let b = i.as_bytes();
        assert_eq!(b.len(), 232);
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 4096);
        assert_eq!(u32::from_le_bytes(b[40..44].try_into().unwrap()), 2);
        assert_eq!(u32::from_le_bytes(b[52..56].try_into().unwrap()), 1);
        assert_eq!(b[56], b'/');
        assert_eq!(LoopInfo64::read_le(&b), i);
    }
}
