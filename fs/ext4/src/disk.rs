//! The on-disk structures of ext2/ext3/ext4 (Linux `fs/ext4/ext4.h`): the superblock, group
//! descriptors and inodes, decoded from little-endian bytes with every number checked before
//! it is used. Nothing here reads the device: [`crate::fs`] hands in the bytes.
//!
//! Key types: [`Super`] (the superblock with the derived geometry and the feature gate of
//! `ext4_feature_set_ok`), [`GroupDesc`] (32- and 64-byte descriptors), [`RawInode`] (128-byte
//! and larger inodes with `i_extra_isize`, nanosecond and epoch-extended timestamps).
//! Neighbours: [`crate::crc`] (checksums), [`crate::fs`] (everything that follows pointers).

use crate::crc::{crc16, crc32c};

/// Little-endian field readers over a byte slice; out-of-range reads give 0 (callers check
/// lengths first, so this only keeps a hostile length from panicking).
pub(crate) fn le16(b: &[u8], off: usize) -> u16 {
    b.get(off..off + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .unwrap_or(0)
}

pub(crate) fn le32(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .unwrap_or(0)
}

/// `EXT4_SUPER_MAGIC`.
pub const MAGIC: u16 = 0xEF53;
/// Byte offset of the primary superblock.
pub const SB_OFFSET: u64 = 1024;
/// `EXT4_GOOD_OLD_INODE_SIZE`.
pub const GOOD_OLD_INODE_SIZE: usize = 128;
/// `EXT4_ROOT_INO`.
pub const ROOT_INO: u32 = 2;

/// `s_feature_compat` bits (ext4.h `EXT4_FEATURE_COMPAT_*`).
pub mod compat {
    pub const HAS_JOURNAL: u32 = 0x4;
    pub const EXT_ATTR: u32 = 0x8;
    pub const DIR_INDEX: u32 = 0x20;
    pub const SPARSE_SUPER2: u32 = 0x200;
}

/// `s_feature_incompat` bits.
pub mod incompat {
    pub const COMPRESSION: u32 = 0x1;
    pub const FILETYPE: u32 = 0x2;
    pub const RECOVER: u32 = 0x4;
    pub const JOURNAL_DEV: u32 = 0x8;
    pub const META_BG: u32 = 0x10;
    pub const EXTENTS: u32 = 0x40;
    pub const BIT64: u32 = 0x80;
    pub const MMP: u32 = 0x100;
    pub const FLEX_BG: u32 = 0x200;
    pub const EA_INODE: u32 = 0x400;
    pub const DIRDATA: u32 = 0x1000;
    pub const CSUM_SEED: u32 = 0x2000;
    pub const LARGEDIR: u32 = 0x4000;
    pub const INLINE_DATA: u32 = 0x8000;
    pub const ENCRYPT: u32 = 0x10000;
    pub const CASEFOLD: u32 = 0x20000;
    /// What this driver reads. Linux's `EXT4_FEATURE_INCOMPAT_SUPP` also has EA_INODE,
    /// ENCRYPT and CASEFOLD, which this driver does not implement, so such images are
    /// refused as Linux refuses an unknown feature (`ext4_feature_set_ok`). RECOVER is
    /// handled separately (a journal to replay).
    pub const SUPPORTED: u32 = FILETYPE
        | RECOVER
        | META_BG
        | EXTENTS
        | BIT64
        | MMP
        | FLEX_BG
        | CSUM_SEED
        | LARGEDIR
        | INLINE_DATA;
}

/// `s_feature_ro_compat` bits.
pub mod ro_compat {
    pub const SPARSE_SUPER: u32 = 0x1;
    pub const LARGE_FILE: u32 = 0x2;
    pub const BTREE_DIR: u32 = 0x4;
    pub const HUGE_FILE: u32 = 0x8;
    pub const GDT_CSUM: u32 = 0x10;
    pub const DIR_NLINK: u32 = 0x20;
    pub const EXTRA_ISIZE: u32 = 0x40;
    pub const QUOTA: u32 = 0x100;
    pub const BIGALLOC: u32 = 0x200;
    pub const METADATA_CSUM: u32 = 0x400;
    pub const READONLY: u32 = 0x1000;
    pub const PROJECT: u32 = 0x2000;
    pub const VERITY: u32 = 0x8000;
    pub const ORPHAN_PRESENT: u32 = 0x10000;
    /// Linux's `EXT4_FEATURE_RO_COMPAT_SUPP`; anything else makes the mount read-only.
    pub const KNOWN: u32 = SPARSE_SUPER
        | LARGE_FILE
        | BTREE_DIR
        | HUGE_FILE
        | GDT_CSUM
        | DIR_NLINK
        | EXTRA_ISIZE
        | QUOTA
        | BIGALLOC
        | METADATA_CSUM
        | READONLY
        | PROJECT
        | VERITY
        | ORPHAN_PRESENT;
}

/// The superblock, decoded and checked (`ext4_fill_super`'s geometry checks).
#[derive(Clone, Debug)]
pub struct Super {
    pub inodes_count: u32,
    pub blocks_count: u64,
    pub r_blocks_count: u64,
    pub free_blocks: u64,
    pub free_inodes: u32,
    pub first_data_block: u32,
    /// Bytes per block: 1024 << `s_log_block_size` (1K to 64K).
    pub block_size: u32,
    pub blocks_per_group: u32,
    pub inodes_per_group: u32,
    pub inode_size: u32,
    pub first_ino: u32,
    pub rev_level: u32,
    pub compat: u32,
    pub incompat: u32,
    pub ro_compat: u32,
    pub uuid: [u8; 16],
    pub desc_size: u32,
    pub first_meta_bg: u32,
    /// `s_reserved_gdt_blocks`: blocks after the descriptors kept for online resize.
    pub reserved_gdt_blocks: u32,
    pub backup_bgs: [u32; 2],
    pub groups_count: u32,
    /// `sbi->s_csum_seed`: crc32c of the UUID, or `s_checksum_seed` with `csum_seed`.
    pub csum_seed: u32,
    pub journal_inum: u32,
    /// `s_flags` (`EXT2_FLAGS_UNSIGNED_HASH` 0x2: the htree hashes use unsigned chars).
    pub flags: u32,
    /// `s_hash_seed`: the seed of the directory-index hashes.
    pub hash_seed: [u32; 4],
}

impl Super {
    /// Decodes the 1024 superblock bytes; `Err` names the first thing that is wrong, as
    /// Linux's one log line for a mount it refuses.
    pub fn parse(b: &[u8], device_size: u64) -> Result<Super, String> {
        if b.len() < 1024 {
            return Err("short superblock".into());
        }
        if le16(b, 0x38) != MAGIC {
            return Err("VFS: Can't find ext4 filesystem (bad magic)".into());
        }
        let log_bs = le32(b, 0x18);
        if log_bs > 6 {
            return Err(format!("Invalid log block size: {log_bs}"));
        }
        let block_size = 1024u32 << log_bs;
        let rev_level = le32(b, 0x4C);
        let (inode_size, first_ino) = if rev_level == 0 {
            (128, 11)
        } else {
            (le16(b, 0x58) as u32, le32(b, 0x54))
        };
        if inode_size < 128 || !inode_size.is_power_of_two() || inode_size > block_size {
            return Err(format!("unsupported inode size: {inode_size}"));
        }
        let compat = le32(b, 0x5C);
        let incompat = if rev_level == 0 { 0 } else { le32(b, 0x60) };
        let ro_compat = if rev_level == 0 { 0 } else { le32(b, 0x64) };
        let blocks_lo = le32(b, 0x4) as u64;
        let bit64 = incompat & incompat::BIT64 != 0;
        let hi = |off| {
            if bit64 {
                (le32(b, off) as u64) << 32
            } else {
                0
            }
        };
        let blocks_count = blocks_lo | hi(0x150);
        let r_blocks_count = le32(b, 0x8) as u64 | hi(0x154);
        let free_blocks = le32(b, 0xC) as u64 | hi(0x158);
        let first_data_block = le32(b, 0x14);
        let blocks_per_group = le32(b, 0x20);
        let inodes_per_group = le32(b, 0x28);
        let inodes_count = le32(b, 0x0);
        if blocks_per_group == 0 || blocks_per_group > block_size * 8 {
            return Err(format!("#blocks per group too big: {blocks_per_group}"));
        }
        if inodes_per_group == 0 || inodes_per_group > block_size * 8 {
            return Err(format!("invalid inodes per group: {inodes_per_group}"));
        }
        if first_ino < 11 || first_ino > inodes_count {
            return Err(format!("invalid first ino: {first_ino}"));
        }
        if blocks_count == 0 || first_data_block as u64 >= blocks_count {
            return Err(format!(
                "bad geometry: first data block {first_data_block} is beyond end of filesystem ({blocks_count})"
            ));
        }
        if blocks_count
            .checked_mul(block_size as u64)
            .is_none_or(|n| n > device_size)
        {
            return Err(format!(
                "bad geometry: block count {blocks_count} exceeds size of device ({} blocks)",
                device_size / block_size as u64
            ));
        }
        let groups = (blocks_count - first_data_block as u64).div_ceil(blocks_per_group as u64);
        if groups * inodes_per_group as u64 != inodes_count as u64 {
            return Err(format!(
                "inodes count not valid: {inodes_count} vs {}",
                groups * inodes_per_group as u64
            ));
        }
        let desc_size = if bit64 {
            let d = le16(b, 0xFE) as u32;
            if !(64..=1024).contains(&d) || !d.is_power_of_two() {
                return Err(format!("unsupported descriptor size {d}"));
            }
            d
        } else {
            32
        };
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[0x68..0x78]);
        let sb = Super {
            inodes_count,
            blocks_count,
            r_blocks_count,
            free_blocks,
            free_inodes: le32(b, 0x10),
            first_data_block,
            block_size,
            blocks_per_group,
            inodes_per_group,
            inode_size,
            first_ino,
            rev_level,
            compat,
            incompat,
            ro_compat,
            uuid,
            desc_size,
            first_meta_bg: le32(b, 0x104),
            reserved_gdt_blocks: le16(b, 0xCE) as u32,
            backup_bgs: [le32(b, 0x24C), le32(b, 0x250)],
            groups_count: groups as u32,
            csum_seed: if incompat & incompat::CSUM_SEED != 0 {
                le32(b, 0x270)
            } else {
                crc32c(!0, &uuid)
            },
            journal_inum: le32(b, 0xE0),
            flags: le32(b, 0x160),
            hash_seed: [le32(b, 0xEC), le32(b, 0xF0), le32(b, 0xF4), le32(b, 0xF8)],
        };
        if sb.metadata_csum() {
            if b[0x175] != 1 {
                return Err(format!("unknown checksum algorithm {}", b[0x175]));
            }
            let want = le32(b, 0x3FC);
            let got = crc32c(!0, &b[..0x3FC]);
            if want != got {
                return Err(format!(
                    "Invalid superblock checksum (stored {want:#x}, computed {got:#x})"
                ));
            }
        }
        Ok(sb)
    }

    pub fn metadata_csum(&self) -> bool {
        self.ro_compat & ro_compat::METADATA_CSUM != 0
    }

    /// `ext4_has_group_desc_csum` without metadata_csum: the crc16 `gdt_csum`.
    pub fn gdt_csum(&self) -> bool {
        !self.metadata_csum() && self.ro_compat & ro_compat::GDT_CSUM != 0
    }

    pub fn has(&self, incompat_bit: u32) -> bool {
        self.incompat & incompat_bit != 0
    }

    /// Incompatible features this driver does not know (a mount must be refused).
    pub fn unknown_incompat(&self) -> u32 {
        self.incompat & !incompat::SUPPORTED
    }

    /// Read-only-compatible features this driver does not know (a mount must be read-only).
    pub fn unknown_ro_compat(&self) -> u32 {
        self.ro_compat & !ro_compat::KNOWN
    }

    /// Descriptors per block.
    pub fn descs_per_block(&self) -> u32 {
        self.block_size / self.desc_size
    }

    /// `ext4_bg_has_super`: whether group `g` holds a superblock backup (and so the GDT).
    pub fn bg_has_super(&self, g: u32) -> bool {
        if g == 0 {
            return true;
        }
        if self.compat & compat::SPARSE_SUPER2 != 0 {
            return g == self.backup_bgs[0] || g == self.backup_bgs[1];
        }
        if g <= 1 || self.ro_compat & ro_compat::SPARSE_SUPER == 0 {
            return true;
        }
        if g & 1 == 0 {
            return false;
        }
        let power_of = |mut n: u32, b: u32| {
            while n % b == 0 {
                n /= b;
            }
            n == 1
        };
        power_of(g, 3) || power_of(g, 5) || power_of(g, 7)
    }

    /// `descriptor_loc`: the block holding descriptor block `nr` of the table.
    pub fn descriptor_loc(&self, nr: u32) -> u64 {
        let sb_block = self.first_data_block as u64;
        if !self.has(incompat::META_BG) || nr < self.first_meta_bg {
            return sb_block + nr as u64 + 1;
        }
        let bg = self.descs_per_block() as u64 * nr as u64;
        let mut has_super = self.bg_has_super(bg.min(u32::MAX as u64) as u32) as u64;
        // A meta_bg file system with 1K blocks has group 0's descriptors at block 2.
        if self.first_data_block == 0 && self.block_size == 1024 && nr == 0 {
            has_super += 1;
        }
        self.first_data_block as u64 + bg * self.blocks_per_group as u64 + has_super
    }
}

/// One block group descriptor (`struct ext4_group_desc`).
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupDesc {
    pub block_bitmap: u64,
    pub inode_bitmap: u64,
    pub inode_table: u64,
    pub free_blocks: u32,
    pub free_inodes: u32,
    pub used_dirs: u32,
    pub flags: u16,
    pub itable_unused: u32,
}

/// `EXT4_BG_INODE_UNINIT`.
pub const BG_INODE_UNINIT: u16 = 0x1;

impl GroupDesc {
    /// Decodes descriptor `g` from its `desc_size` bytes and checks its checksum
    /// (`ext4_group_desc_csum_verify`). `Err` is the log line.
    pub fn parse(sb: &Super, g: u32, b: &[u8]) -> Result<GroupDesc, String> {
        let wide = sb.desc_size >= 64;
        let hi32 = |off| if wide { (le32(b, off) as u64) << 32 } else { 0 };
        let hi16 = |off| if wide { (le16(b, off) as u32) << 16 } else { 0 };
        let stored = le16(b, 0x1E);
        if sb.metadata_csum() || sb.gdt_csum() {
            let want = group_desc_csum(sb, g, b);
            if want != stored {
                return Err(format!(
                    "ext4_check_descriptors: Checksum for group {g} failed ({stored:#x}!={want:#x})"
                ));
            }
        }
        let d = GroupDesc {
            block_bitmap: le32(b, 0x0) as u64 | hi32(0x20),
            inode_bitmap: le32(b, 0x4) as u64 | hi32(0x24),
            inode_table: le32(b, 0x8) as u64 | hi32(0x28),
            free_blocks: le16(b, 0xC) as u32 | hi16(0x2C),
            free_inodes: le16(b, 0xE) as u32 | hi16(0x2E),
            used_dirs: le16(b, 0x10) as u32 | hi16(0x30),
            flags: le16(b, 0x12),
            itable_unused: le16(b, 0x1C) as u32 | hi16(0x32),
        };
        // ext4_check_descriptors: the inode table must lie inside the file system.
        let itb =
            (sb.inodes_per_group as u64 * sb.inode_size as u64).div_ceil(sb.block_size as u64);
        if d.inode_table < sb.first_data_block as u64
            || d.inode_table.saturating_add(itb) > sb.blocks_count
        {
            return Err(format!(
                "ext4_check_descriptors: Inode table for group {g} not in group (block {})",
                d.inode_table
            ));
        }
        Ok(d)
    }
}

/// `ext4_group_desc_csum`: crc32c (low 16 bits) with metadata_csum, else crc16.
pub(crate) fn group_desc_csum(sb: &Super, g: u32, b: &[u8]) -> u16 {
    let size = (sb.desc_size as usize).min(b.len());
    let le_group = g.to_le_bytes();
    if sb.metadata_csum() {
        let mut c = crc32c(sb.csum_seed, &le_group);
        c = crc32c(c, &b[..0x1E]);
        c = crc32c(c, &[0, 0]);
        if size > 0x20 {
            c = crc32c(c, &b[0x20..size]);
        }
        return (c & 0xFFFF) as u16;
    }
    let mut c = crc16(!0, &sb.uuid);
    c = crc16(c, &le_group);
    c = crc16(c, &b[..0x1E]);
    if sb.has(incompat::BIT64) && size > 0x20 {
        c = crc16(c, &b[0x20..size]);
    }
    c
}

/// The checksum an inode should carry (`ext4_inode_csum`): crc32c over the inode with the
/// checksum fields as zeros, seeded by the inode number and generation; only the low 16
/// bits when `i_extra_isize` does not cover `i_checksum_hi`.
pub(crate) fn inode_csum(sb: &Super, ino: u32, b: &[u8]) -> u32 {
    let isz = (sb.inode_size as usize).min(b.len());
    let extra_isize = if isz > GOOD_OLD_INODE_SIZE {
        le16(b, 0x80) as u32
    } else {
        0
    };
    let generation = le32(b, 0x64);
    let seed = crc32c(
        crc32c(sb.csum_seed, &ino.to_le_bytes()),
        &generation.to_le_bytes(),
    );
    let fits_hi = extra_isize >= 4;
    let mut c = crc32c(seed, &b[..0x7C]);
    c = crc32c(c, &[0, 0]);
    c = crc32c(c, &b[0x7E..GOOD_OLD_INODE_SIZE]);
    if isz > GOOD_OLD_INODE_SIZE {
        c = crc32c(c, &b[GOOD_OLD_INODE_SIZE..0x82]);
        let mut off = 0x82;
        if fits_hi {
            c = crc32c(c, &[0, 0]);
            off += 2;
        }
        c = crc32c(c, &b[off..isz]);
    }
    if !fits_hi {
        c &= 0xFFFF;
    }
    c
}

fn stored_inode_csum(b: &[u8], extra_isize: u32) -> u32 {
    let mut stored = le16(b, 0x7C) as u32;
    if b.len() > GOOD_OLD_INODE_SIZE && extra_isize >= 4 {
        stored |= (le16(b, 0x82) as u32) << 16;
    }
    stored
}

/// Stores [`inode_csum`] into the inode bytes (`ext4_inode_csum_set`).
pub(crate) fn set_inode_csum(sb: &Super, ino: u32, b: &mut [u8]) {
    let c = inode_csum(sb, ino, b);
    put16(b, 0x7C, c as u16);
    if b.len() > GOOD_OLD_INODE_SIZE && le16(b, 0x80) >= 4 {
        put16(b, 0x82, (c >> 16) as u16);
    }
}

/// Little-endian field writers (callers pass offsets inside the slice).
pub(crate) fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

pub(crate) fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// `i_flags` bits this driver acts on.
pub mod iflags {
    pub const IMMUTABLE: u32 = 0x10;
    pub const APPEND: u32 = 0x20;
    pub const NODUMP: u32 = 0x40;
    pub const NOATIME: u32 = 0x80;
    pub const INDEX: u32 = 0x1000;
    pub const HUGE_FILE: u32 = 0x40000;
    pub const EXTENTS: u32 = 0x80000;
    pub const EA_INODE: u32 = 0x200000;
    pub const INLINE_DATA: u32 = 0x1000_0000;
}

/// An inode as read from the inode table.
#[derive(Clone, Debug)]
pub struct RawInode {
    pub ino: u32,
    pub mode: u16,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub links: u16,
    /// `i_blocks` in 512-byte units (converted from block units for huge files).
    pub blocks: u64,
    pub flags: u32,
    /// `i_block`: extent root, block pointers, inline data or a fast symlink.
    pub block: [u8; 60],
    pub generation: u32,
    pub file_acl: u64,
    pub extra_isize: u32,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    /// The whole on-disk inode (for the in-inode xattrs after `i_extra_isize`).
    pub raw: Vec<u8>,
    /// `ei->i_csum_seed`: crc32c of the inode number and generation, for the checksums of
    /// the inode's own blocks (extent tree, directory leaves).
    pub csum_seed: u32,
}

/// `ext4_decode_extra_time`: seconds are a signed 32-bit value extended by the two epoch
/// bits of the extra field; the other 30 bits are nanoseconds.
fn decode_time(sec: u32, extra: Option<u32>) -> (i64, i64) {
    let mut s = sec as i32 as i64;
    match extra {
        Some(x) => {
            s += ((x & 3) as i64) << 32;
            (s, ((x >> 2) as i64).min(999_999_999))
        }
        None => (s, 0),
    }
}

impl RawInode {
    /// Decodes inode `ino` from its `inode_size` bytes and checks its checksum
    /// (`ext4_inode_csum_verify`) and `i_extra_isize` (`ext4_iget_extra_inode`).
    pub fn parse(sb: &Super, ino: u32, b: &[u8]) -> Result<RawInode, String> {
        let isz = sb.inode_size as usize;
        if b.len() < isz {
            return Err(format!("inode #{ino}: short read"));
        }
        let b = &b[..isz];
        let extra_isize = if isz > GOOD_OLD_INODE_SIZE {
            let e = le16(b, 0x80) as u32;
            if GOOD_OLD_INODE_SIZE + e as usize > isz || e & 3 != 0 {
                return Err(format!(
                    "inode #{ino}: bad extra_isize {e} (inode size {isz})"
                ));
            }
            e
        } else {
            0
        };
        let generation = le32(b, 0x64);
        let seed = crc32c(
            crc32c(sb.csum_seed, &ino.to_le_bytes()),
            &generation.to_le_bytes(),
        );
        if sb.metadata_csum() {
            let (c, stored) = (inode_csum(sb, ino, b), stored_inode_csum(b, extra_isize));
            if c != stored {
                return Err(format!(
                    "inode #{ino}: checksum invalid (stored {stored:#x}, computed {c:#x})"
                ));
            }
        }
        // An extra field exists when i_extra_isize covers it (EXT4_FITS_IN_INODE).
        let field = |off: usize| {
            (off + 4 <= GOOD_OLD_INODE_SIZE + extra_isize as usize).then(|| le32(b, off))
        };
        let flags = le32(b, 0x20);
        let blocks_lo = le32(b, 0x1C) as u64;
        let huge = sb.ro_compat & ro_compat::HUGE_FILE != 0;
        let mut blocks = blocks_lo
            | if huge {
                (le16(b, 0x74) as u64) << 32
            } else {
                0
            };
        if huge && flags & iflags::HUGE_FILE != 0 {
            blocks = blocks.saturating_mul(sb.block_size as u64 / 512);
        }
        let mut block = [0u8; 60];
        block.copy_from_slice(&b[0x28..0x64]);
        let file_acl = le32(b, 0x68) as u64
            | if sb.has(incompat::BIT64) {
                (le16(b, 0x76) as u64) << 32
            } else {
                0
            };
        Ok(RawInode {
            ino,
            mode: le16(b, 0x0),
            uid: le16(b, 0x2) as u32 | (le16(b, 0x78) as u32) << 16,
            gid: le16(b, 0x18) as u32 | (le16(b, 0x7A) as u32) << 16,
            size: le32(b, 0x4) as u64 | (le32(b, 0x6C) as u64) << 32,
            links: le16(b, 0x1A),
            blocks,
            flags,
            block,
            generation,
            file_acl,
            extra_isize,
            atime: decode_time(le32(b, 0x8), field(0x8C)),
            mtime: decode_time(le32(b, 0x10), field(0x88)),
            ctime: decode_time(le32(b, 0xC), field(0x84)),
            raw: b.to_vec(),
            csum_seed: seed,
        })
    }

    /// The file type bits.
    pub fn fmt(&self) -> u32 {
        self.mode as u32 & 0o170000
    }

    pub fn has_flag(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// The device number of a device node (`ext4_iget`: the old 16-bit encoding in
    /// `i_block[0]`, else the new one in `i_block[1]`), as a kernel `dev_t`.
    pub fn rdev(&self) -> (u32, u32) {
        let b0 = le32(&self.block, 0);
        if b0 != 0 {
            ((b0 >> 8) & 0xff, b0 & 0xff)
        } else {
            let d = le32(&self.block, 4);
            ((d & 0xfff00) >> 8, (d & 0xff) | ((d >> 12) & 0xfff00))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_time_epoch_and_nanoseconds() {
        // 1901-12-13 (the most negative 32-bit second) with epoch bits 1: 2038 onwards.
        assert_eq!(
            decode_time(0x8000_0000, Some(1)),
            (-(1i64 << 31) + (1 << 32), 0)
        );
        assert_eq!(decode_time(5, Some(123 << 2)), (5, 123));
        assert_eq!(decode_time(u32::MAX, None), (-1, 0));
    }

    #[test]
    fn sparse_super_groups() {
        let b = {
            let mut b = vec![0u8; 1024];
            b[0x38..0x3A].copy_from_slice(&MAGIC.to_le_bytes());
            b[0x4..0x8].copy_from_slice(&8192u32.to_le_bytes());
            b[0x14..0x18].copy_from_slice(&1u32.to_le_bytes());
            b[0x20..0x24].copy_from_slice(&1024u32.to_le_bytes());
            b[0x28..0x2C].copy_from_slice(&128u32.to_le_bytes());
            b[0x0..0x4].copy_from_slice(&(8 * 128u32).to_le_bytes());
            b[0x64..0x68].copy_from_slice(&ro_compat::SPARSE_SUPER.to_le_bytes());
            b[0x4C] = 1; // rev 1: the feature words count
            b[0x54] = 11;
            b[0x58] = 128;
            b
        };
        let sb = Super::parse(&b, 8 << 20).unwrap();
        let has: Vec<u32> = (0..8).filter(|&g| sb.bg_has_super(g)).collect();
        assert_eq!(has, [0, 1, 3, 5, 7]);
        // The device is smaller than the file system: refused.
        assert!(
            Super::parse(&b, 4 << 20)
                .unwrap_err()
                .contains("exceeds size")
        );
        let mut bad = b.clone();
        bad[0x18] = 9;
        assert!(Super::parse(&bad, 8 << 20).is_err());
    }
}
