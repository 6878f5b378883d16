//! One mounted ext2/ext3/ext4 file system, read side (Linux `fs/ext4/super.c`, `inode.c`,
//! `extents.c`, `indirect.c`, `dir.c`, `namei.c`, `inline.c`, `xattr.c`): the superblock and
//! group descriptors read at mount, inodes by number, the map from file blocks to disk blocks
//! (extent trees of any depth with unwritten extents, and ext2/ext3 indirect blocks), file
//! data, directory entries (linear and htree directories, both read as linear: every leaf
//! block holds ordinary entries), inline data and extended attributes in the inode and in a
//! block.
//!
//! Every on-disk number is checked before it is followed: a block number past the end, a
//! loop in a tree, a bad checksum or an entry that overruns its block makes the operation
//! `EUCLEAN` (Linux's `EFSCORRUPTED`) with one log line naming the inode, never a panic or
//! a hang. Metadata blocks go through a small cache; file data is read straight from the
//! device, in runs as long as the extent allows.
//!
//! Key type: [`Ext4`] (its write side is in [`crate::write`]). Neighbours: [`crate::disk`] (decoding), [`crate::vfs`] (the kernel's
//! inode and file objects over this), `um_kernel::vfs::BlockDevice` (the device).

use crate::disk::{self, GroupDesc, RawInode, Super, iflags, incompat, le16, le32};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use um_kernel::vfs::BlockDevice;
use um_uapi::{Errno, SysResult};

/// `EXT4_EXT_MAGIC`.
const EXT_MAGIC: u16 = 0xF30A;
/// `EXT4_MAX_EXTENT_DEPTH`.
const MAX_EXTENT_DEPTH: u16 = 5;
/// `EXT_INIT_MAX_LEN`: an `ee_len` above this is an unwritten extent.
const EXT_INIT_MAX_LEN: u16 = 1 << 15;
/// `EXT4_XATTR_MAGIC`.
const XATTR_MAGIC: u32 = 0xEA02_0000;
/// Bytes of metadata blocks the cache keeps before it starts over.
const CACHE_BYTES: usize = 8 << 20;
/// Log lines about corruption per mount (Linux rate-limits `ext4_error` the same way).
const MAX_ERROR_LINES: u32 = 20;

/// Where a file block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// `len` blocks from disk block `pblk`; `unwritten` ones read as zeros.
    Mapped {
        pblk: u64,
        len: u32,
        unwritten: bool,
    },
    /// `len` blocks of hole.
    Hole { len: u32 },
}

/// One directory entry as stored (`struct ext4_dir_entry_2`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawDirent {
    pub ino: u32,
    /// `EXT4_FT_*` (0 without the `filetype` feature).
    pub file_type: u8,
    pub name: Vec<u8>,
}

/// A mounted file system.
pub struct Ext4 {
    pub(crate) dev: Arc<dyn BlockDevice>,
    pub sb: Super,
    pub(crate) groups: Vec<GroupDesc>,
    pub(crate) cache: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    errors: AtomicU32,
    /// The allocator's state on a read-write mount ([`crate::write`]); `None` read-only.
    pub(crate) w: Option<Mutex<crate::write::WState>>,
    /// The journal of a read-write mount with one ([`crate::jbd2`]); taken after `w`.
    pub(crate) j: Option<Mutex<crate::jbd2::Journal>>,
    /// `noload`: the journal is neither replayed nor used.
    pub(crate) noload: bool,
    /// `commit=`: how long a transaction may stay open (default 5 s, `JBD2_DEFAULT_MAX_COMMIT_AGE`).
    pub commit_interval: std::time::Duration,
}

impl fmt::Debug for Ext4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ext4({})", self.dev.name())
    }
}

impl Ext4 {
    /// Reads and checks the superblock and group descriptors (`ext4_fill_super`). `Err` is
    /// the one line that says why the mount is refused.
    pub fn open(dev: Arc<dyn BlockDevice>, noload: bool) -> Result<Ext4, String> {
        Self::open_errno(dev, noload).map_err(|(_, m)| m)
    }

    /// [`Ext4::open`] with the errno of a refusal: `EROFS` for a journal that needs
    /// recovery on a read-only device (fs/ext4/super.c `ext4_load_journal`: "write access
    /// unavailable, cannot proceed (try mounting with noload)"), `EINVAL` otherwise. A
    /// journal that needs recovery is replayed onto the device first, whether the mount is
    /// read-only or not, as Linux does ("write access will be enabled during recovery").
    pub fn open_errno(dev: Arc<dyn BlockDevice>, noload: bool) -> Result<Ext4, (Errno, String)> {
        let einval = |m: String| (Errno::EINVAL, m);
        let fs = Self::open_raw(dev.clone(), noload).map_err(einval)?;
        if !fs.sb.has(incompat::RECOVER) || noload {
            return fs.check_root().map_err(einval);
        }
        if fs.sb.compat & disk::compat::HAS_JOURNAL == 0 {
            return Err(einval("needs recovery but has no journal".into()));
        }
        if dev.read_only() {
            return Err((
                Errno::EROFS,
                "INFO: recovery required on readonly filesystem; write access unavailable, \
                 cannot proceed (try mounting with noload)"
                    .into(),
            ));
        }
        let r = crate::jbd2::recover(&fs).map_err(|e| {
            if e.contains("EROFS") {
                (
                    Errno::EROFS,
                    format!(
                        "write access unavailable, cannot proceed (try mounting with noload): {e}"
                    ),
                )
            } else {
                einval(format!("error loading journal: {e}"))
            }
        })?;
        log::info!(
            "EXT4-fs ({}): recovery complete: transactions {}..{}, {} blocks replayed, {} revoked \
             ({} revoke records)",
            dev.name(),
            r.start_transaction,
            r.end_transaction,
            r.replayed,
            r.revoke_hits,
            r.revokes
        );
        drop(fs);
        // ext4_mark_recovery_complete: the superblock (as the replay left it) without
        // RECOVER, and with the free counts of the replayed group descriptors, which
        // Linux does not journal but recounts at every mount (`__ext4_fill_super`:
        // `ext4_count_free_clusters`, `ext4_count_free_inodes`).
        let fs = Self::open_raw(dev.clone(), noload).map_err(einval)?;
        let free_blocks: u64 = fs.groups.iter().map(|g| g.free_blocks as u64).sum();
        let free_inodes: u64 = fs.groups.iter().map(|g| g.free_inodes as u64).sum();
        let bit64 = fs.sb.has(incompat::BIT64);
        drop(fs);
        let mut sb = vec![0u8; 1024];
        dev.read_at(disk::SB_OFFSET, &mut sb)
            .map_err(|e| einval(format!("unable to read superblock: {e}")))?;
        let v = disk::le32(&sb, 0x60) & !incompat::RECOVER;
        disk::put32(&mut sb, 0x60, v);
        disk::put32(&mut sb, 0x0C, free_blocks as u32);
        if bit64 {
            disk::put32(&mut sb, 0x158, (free_blocks >> 32) as u32);
        }
        disk::put32(&mut sb, 0x10, free_inodes.min(u32::MAX as u64) as u32);
        if disk::le32(&sb, 0x64) & disk::ro_compat::METADATA_CSUM != 0 {
            let c = crate::crc::crc32c(!0, &sb[..0x3FC]);
            disk::put32(&mut sb, 0x3FC, c);
        }
        dev.write_at(disk::SB_OFFSET, &sb)
            .and_then(|_| dev.flush())
            .map_err(|e| einval(format!("unable to write superblock: {e}")))?;
        let fs = Self::open_raw(dev, noload).map_err(einval)?;
        fs.check_root().map_err(einval)
    }

    fn check_root(self) -> Result<Ext4, String> {
        let root = self
            .inode(disk::ROOT_INO)
            .map_err(|e| format!("get root inode failed: {e}"))?;
        if root.fmt() != 0o040000 || root.links == 0 {
            return Err("root inode is not a directory".into());
        }
        Ok(self)
    }

    fn open_raw(dev: Arc<dyn BlockDevice>, noload: bool) -> Result<Ext4, String> {
        let mut b = vec![0u8; 1024];
        dev.read_at(disk::SB_OFFSET, &mut b)
            .map_err(|e| format!("unable to read superblock: {e}"))?;
        let sb = Super::parse(&b, dev.size())?;
        let unknown = sb.unknown_incompat();
        if unknown != 0 {
            return Err(format!(
                "Couldn't mount because of unsupported optional features ({unknown:x})"
            ));
        }
        let bs = sb.block_size as usize;
        let dpb = sb.descs_per_block();
        let desc_blocks = sb.groups_count.div_ceil(dpb);
        let mut groups = Vec::with_capacity(sb.groups_count as usize);
        let mut blk = vec![0u8; bs];
        for nr in 0..desc_blocks {
            let loc = sb.descriptor_loc(nr);
            if loc >= sb.blocks_count {
                return Err(format!(
                    "group descriptor block {nr} at {loc} is beyond the end"
                ));
            }
            dev.read_at(loc * bs as u64, &mut blk)
                .map_err(|e| format!("can't read group descriptor {nr}: {e}"))?;
            for i in 0..dpb {
                let g = nr * dpb + i;
                if g >= sb.groups_count {
                    break;
                }
                let off = (i * sb.desc_size) as usize;
                groups.push(GroupDesc::parse(
                    &sb,
                    g,
                    &blk[off..off + sb.desc_size as usize],
                )?);
            }
        }
        Ok(Ext4 {
            dev,
            sb,
            groups,
            cache: Mutex::new(HashMap::new()),
            errors: AtomicU32::new(0),
            w: None,
            j: None,
            noload,
            commit_interval: std::time::Duration::from_secs(5),
        })
    }

    /// The device's name.
    pub fn dev_name(&self) -> String {
        self.dev.name()
    }

    /// The device's number.
    pub fn rdev(&self) -> u64 {
        self.dev.rdev()
    }

    /// Logs corruption (`ext4_error_inode`) and gives `EUCLEAN`.
    pub fn corrupt(&self, ino: u32, what: fmt::Arguments<'_>) -> Errno {
        if self.errors.fetch_add(1, Ordering::Relaxed) < MAX_ERROR_LINES {
            log::error!(
                "EXT4-fs error (device {}): inode #{ino}: {what}",
                self.dev.name()
            );
        }
        Errno::EUCLEAN
    }

    /// Group descriptors (for statfs and the tests).
    pub fn groups(&self) -> &[GroupDesc] {
        &self.groups
    }

    pub(crate) fn bs(&self) -> u64 {
        self.sb.block_size as u64
    }

    /// Whether `[pblk, pblk + len)` lies inside the file system (`ext4_inode_block_valid`
    /// reduced to the bounds: the superblock's block and anything past the end are refused).
    fn valid_range(&self, pblk: u64) -> bool {
        pblk > self.sb.first_data_block as u64
    }

    pub(crate) fn check_range(&self, ino: u32, pblk: u64, len: u64) -> SysResult<()> {
        let end = pblk.checked_add(len);
        if !self.valid_range(pblk) || end.is_none_or(|e| e > self.sb.blocks_count) {
            return Err(self.corrupt(ino, format_args!("invalid block {pblk} (+{len})")));
        }
        Ok(())
    }

    /// A metadata block, through the cache.
    pub fn block(&self, ino: u32, pblk: u64) -> SysResult<Arc<Vec<u8>>> {
        self.check_range(ino, pblk, 1)?;
        if let Some(b) = um_kernel::task::lock(&self.cache).get(&pblk) {
            return Ok(b.clone());
        }
        // A block the journal holds is newer than its home copy.
        if let Some(j) = &self.j
            && let Some(b) = um_kernel::task::lock(j).get(pblk)
        {
            return Ok(b);
        }
        let mut b = vec![0u8; self.sb.block_size as usize];
        self.dev.read_at(pblk * self.bs(), &mut b).map_err(|e| {
            log::error!(
                "EXT4-fs error (device {}): unable to read block {pblk}: {e}",
                self.dev.name()
            );
            Errno::EIO
        })?;
        let b = Arc::new(b);
        let mut c = um_kernel::task::lock(&self.cache);
        if c.len() * self.sb.block_size as usize >= CACHE_BYTES {
            c.clear();
        }
        c.insert(pblk, b.clone());
        Ok(b)
    }

    /// Reads inode `ino` (`__ext4_iget`): bounds, checksum, `i_extra_isize`.
    pub fn inode(&self, ino: u32) -> SysResult<RawInode> {
        if ino == 0 || ino > self.sb.inodes_count {
            return Err(self.corrupt(ino, format_args!("inode number out of range")));
        }
        let ipg = self.sb.inodes_per_group;
        let g = ((ino - 1) / ipg) as usize;
        let idx = ((ino - 1) % ipg) as u64;
        let gd = self.groups.get(g).ok_or(Errno::EUCLEAN)?;
        let off = idx * self.sb.inode_size as u64;
        let pblk = gd.inode_table + off / self.bs();
        let within = (off % self.bs()) as usize;
        let blk = self.block(ino, pblk)?;
        let bytes = &blk[within..within + self.sb.inode_size as usize];
        let raw = RawInode::parse(&self.sb, ino, bytes)
            .map_err(|e| self.corrupt(ino, format_args!("{e}")))?;
        if raw.links == 0 && raw.mode == 0 {
            // A directory entry naming a free inode (Linux: "deleted inode referenced").
            return Err(self.corrupt(ino, format_args!("deleted inode referenced")));
        }
        if raw.has_flag(iflags::EA_INODE) {
            return Err(self.corrupt(ino, format_args!("EA inode used as a file")));
        }
        Ok(raw)
    }

    /// Where file block `lblk` of `ino` is (`ext4_map_blocks` for reading).
    pub fn map(&self, ino: &RawInode, lblk: u32) -> SysResult<Mapping> {
        if ino.has_flag(iflags::INLINE_DATA) {
            return Err(self.corrupt(ino.ino, format_args!("block map of inline data")));
        }
        if ino.has_flag(iflags::EXTENTS) {
            self.map_extent(ino, lblk)
        } else {
            self.map_indirect(ino, lblk)
        }
    }

    /// The extent tree (`ext4_find_extent`): from the root in `i_block` down `eh_depth`
    /// levels; each level's header and order are checked, each tree block's tail checksum too.
    fn map_extent(&self, ino: &RawInode, lblk: u32) -> SysResult<Mapping> {
        let n = ino.ino;
        let mut node: Arc<Vec<u8>> = Arc::new(ino.block.to_vec());
        let mut want_depth: Option<u16> = None;
        let mut is_root = true;
        for _ in 0..=MAX_EXTENT_DEPTH {
            let b = &node[..];
            let (magic, entries, max, depth) = (le16(b, 0), le16(b, 2), le16(b, 4), le16(b, 6));
            let cap = ((b.len() - 12) / 12) as u16;
            if magic != EXT_MAGIC
                || entries > max
                || max > cap
                || (!is_root && max == 0)
                || depth > MAX_EXTENT_DEPTH
                || want_depth.is_some_and(|d| d != depth)
            {
                return Err(self.corrupt(
                    n,
                    format_args!(
                        "pblk 0 bad header/extent: magic {magic:x}, entries {entries}, max {max}, depth {depth}"
                    ),
                ));
            }
            // The last entry that starts at or before lblk; entries must be in order.
            let mut found: Option<usize> = None;
            let mut next_start: Option<u32> = None;
            let mut prev: Option<u32> = None;
            for i in 0..entries as usize {
                let start = le32(b, 12 + i * 12);
                if prev.is_some_and(|p| start <= p) {
                    return Err(self.corrupt(n, format_args!("extent entries out of order")));
                }
                prev = Some(start);
                if start <= lblk {
                    found = Some(i);
                } else {
                    next_start = Some(start);
                    break;
                }
            }
            if depth == 0 {
                let hole_to = |to: Option<u32>| Mapping::Hole {
                    len: to.map(|s| s - lblk).unwrap_or(1).max(1),
                };
                let Some(i) = found else {
                    return Ok(hole_to(next_start));
                };
                let e = 12 + i * 12;
                let start = le32(b, e);
                let raw_len = le16(b, e + 4);
                let (len, unwritten) = if raw_len > EXT_INIT_MAX_LEN {
                    (raw_len - EXT_INIT_MAX_LEN, true)
                } else {
                    (raw_len, false)
                };
                let pstart = (le16(b, e + 6) as u64) << 32 | le32(b, e + 8) as u64;
                if len == 0 || start.checked_add(len as u32).is_none() {
                    return Err(self.corrupt(n, format_args!("bad extent length at {start}")));
                }
                self.check_range(n, pstart, len as u64)?;
                let end = start + len as u32;
                if lblk >= end {
                    return Ok(hole_to(next_start));
                }
                let skip = (lblk - start) as u64;
                return Ok(Mapping::Mapped {
                    pblk: pstart + skip,
                    len: end - lblk,
                    unwritten,
                });
            }
            let Some(i) = found else {
                return Ok(Mapping::Hole {
                    len: next_start.map(|s| s - lblk).unwrap_or(1).max(1),
                });
            };
            let e = 12 + i * 12;
            let leaf = le32(b, e + 4) as u64 | (le16(b, e + 8) as u64) << 32;
            let child = self.block(n, leaf)?;
            self.verify_extent_block(ino, &child, leaf)?;
            node = child;
            want_depth = Some(depth - 1);
            is_root = false;
        }
        Err(self.corrupt(
            n,
            format_args!("extent tree deeper than {MAX_EXTENT_DEPTH}"),
        ))
    }

    /// `ext4_extent_block_csum_verify`: the tail after `eh_max` entries holds
    /// crc32c(inode seed, block up to the tail).
    pub(crate) fn verify_extent_block(&self, ino: &RawInode, b: &[u8], pblk: u64) -> SysResult<()> {
        if !self.sb.metadata_csum() {
            return Ok(());
        }
        let max = le16(b, 4) as usize;
        let tail = 12 + 12 * max;
        if tail + 4 > b.len() {
            return Err(self.corrupt(ino.ino, format_args!("extent block {pblk}: bad eh_max")));
        }
        let want = crate::crc::crc32c(ino.csum_seed, &b[..tail]);
        if want != le32(b, tail) {
            return Err(self.corrupt(
                ino.ino,
                format_args!("extent tree block {pblk}: checksum invalid"),
            ));
        }
        Ok(())
    }

    /// ext2/ext3 block pointers (`ext4_ind_map_blocks`): 12 direct, then single, double and
    /// triple indirect blocks; a zero pointer is a hole.
    fn map_indirect(&self, ino: &RawInode, lblk: u32) -> SysResult<Mapping> {
        let n = ino.ino;
        let apb = self.bs() / 4;
        let l = lblk as u64;
        let ptr = |i: usize| le32(&ino.block, i * 4) as u64;
        let (mut cur, digits): (u64, Vec<u64>) = if l < 12 {
            (ptr(l as usize), vec![])
        } else if l - 12 < apb {
            (ptr(12), vec![l - 12])
        } else if l - 12 - apb < apb * apb {
            let r = l - 12 - apb;
            (ptr(13), vec![r / apb, r % apb])
        } else {
            let r = l - 12 - apb - apb * apb;
            if r >= apb * apb * apb {
                return Ok(Mapping::Hole { len: 1 });
            }
            (ptr(14), vec![r / (apb * apb), (r / apb) % apb, r % apb])
        };
        let levels = digits.len() as u32;
        for (k, d) in digits.iter().enumerate() {
            if cur == 0 {
                // The whole subtree under this pointer is a hole: skip to its end.
                let span = apb.pow(levels - k as u32);
                let within = digits[k..].iter().fold(0u64, |acc, &x| acc * apb + x);
                let len = (span - within).min(u32::MAX as u64) as u32;
                return Ok(Mapping::Hole { len });
            }
            let b = self.block(n, cur)?;
            cur = le32(&b, (*d * 4) as usize) as u64;
        }
        if cur == 0 {
            return Ok(Mapping::Hole { len: 1 });
        }
        self.check_range(n, cur, 1)?;
        Ok(Mapping::Mapped {
            pblk: cur,
            len: 1,
            unwritten: false,
        })
    }

    /// Reads file bytes at `off` into `buf` (short at the end of the file): holes and
    /// unwritten extents are zeros; inline data comes from the inode.
    pub fn read(&self, ino: &RawInode, off: u64, buf: &mut [u8]) -> SysResult<usize> {
        if off >= ino.size {
            return Ok(0);
        }
        let want = ((ino.size - off).min(buf.len() as u64)) as usize;
        let buf = &mut buf[..want];
        if ino.has_flag(iflags::INLINE_DATA) {
            let data = self.inline_data(ino)?;
            let o = off as usize;
            for (i, x) in buf.iter_mut().enumerate() {
                *x = data.get(o + i).copied().unwrap_or(0);
            }
            return Ok(want);
        }
        let bs = self.bs();
        let mut done = 0usize;
        while done < want {
            let pos = off + done as u64;
            let lblk = pos / bs;
            if lblk > u32::MAX as u64 {
                buf[done..].fill(0);
                break;
            }
            let within = pos % bs;
            let m = self.map(ino, lblk as u32)?;
            let (len, pblk) = match m {
                Mapping::Mapped {
                    pblk,
                    len,
                    unwritten,
                } => (len, (!unwritten).then_some(pblk)),
                Mapping::Hole { len } => (len, None),
            };
            let run = (len as u64 * bs - within).min((want - done) as u64) as usize;
            let dst = &mut buf[done..done + run];
            match pblk {
                Some(p) => self.dev.read_at(p * bs + within, dst).map_err(|e| {
                    log::error!(
                        "EXT4-fs error (device {}): inode #{}: read error at block {p}: {e}",
                        self.dev.name(),
                        ino.ino
                    );
                    Errno::EIO
                })?,
                None => dst.fill(0),
            }
            done += run;
        }
        Ok(want)
    }

    /// Inline data (`ext4_read_inline_data`): the 60 bytes of `i_block` then the value of
    /// the in-inode attribute `system.data`, cut to the file size.
    pub fn inline_data(&self, ino: &RawInode) -> SysResult<Vec<u8>> {
        let mut d = ino.block.to_vec();
        if let Some(v) = self
            .ibody_xattrs(ino)?
            .into_iter()
            .find(|x| x.index == 7 && x.name == b"data")
        {
            d.extend_from_slice(&v.value);
        }
        d.truncate(ino.size.min(d.len() as u64) as usize);
        Ok(d)
    }

    /// The target of a symlink: in `i_block` for a fast one (`ext4_inode_is_fast_symlink`:
    /// no data blocks besides an xattr block), inline data, else the file's first block.
    pub fn readlink(&self, ino: &RawInode) -> SysResult<Vec<u8>> {
        let ea_blocks = if ino.file_acl != 0 {
            self.bs() / 512
        } else {
            0
        };
        if ino.size > 4096 || ino.size == 0 {
            return Err(self.corrupt(ino.ino, format_args!("bad symlink size {}", ino.size)));
        }
        if !ino.has_flag(iflags::INLINE_DATA) && ino.blocks.saturating_sub(ea_blocks) == 0 {
            if ino.size >= 60 {
                return Err(self.corrupt(ino.ino, format_args!("fast symlink too long")));
            }
            return Ok(ino.block[..ino.size as usize].to_vec());
        }
        let mut v = vec![0u8; ino.size as usize];
        let n = self.read(ino, 0, &mut v)?;
        v.truncate(n);
        if let Some(z) = v.iter().position(|&c| c == 0) {
            v.truncate(z);
        }
        Ok(v)
    }

    /// Parses the entries of one directory region (`ext4_check_dir_entry` on each):
    /// `base` is the region's offset for the log line.
    pub(crate) fn parse_dirents(
        &self,
        dir: u32,
        b: &[u8],
        base: u64,
        out: &mut Vec<RawDirent>,
    ) -> SysResult<()> {
        let mut off = 0usize;
        while off + 8 <= b.len() {
            let ino = le32(b, off);
            let mut rec_len = le16(b, off + 4) as usize;
            if self.sb.block_size == 65536 && (rec_len == 65535 || rec_len == 0) {
                rec_len = 65536;
            }
            let name_len = b[off + 6] as usize;
            let min = (name_len + 8 + 3) & !3;
            let bad = if rec_len < 12 {
                Some("rec_len is smaller than minimal")
            } else if rec_len % 4 != 0 {
                Some("rec_len % 4 != 0")
            } else if rec_len < min {
                Some("rec_len is too small for name_len")
            } else if off + rec_len > b.len() {
                Some("directory entry overrun")
            } else if ino > self.sb.inodes_count {
                Some("inode out of bounds")
            } else {
                None
            };
            if let Some(why) = bad {
                return Err(self.corrupt(
                    dir,
                    format_args!(
                        "bad entry in directory: {why} - offset={}, inode={ino}, rec_len={rec_len}, name_len={name_len}",
                        base + off as u64
                    ),
                ));
            }
            if ino != 0 && name_len > 0 {
                let name = b[off + 8..off + 8 + name_len].to_vec();
                let file_type = if self.sb.has(incompat::FILETYPE) {
                    b[off + 7]
                } else {
                    0
                };
                out.push(RawDirent {
                    ino,
                    file_type,
                    name,
                });
            }
            off += rec_len;
        }
        Ok(())
    }

    /// All entries of directory `dir`, `.` and `..` included as stored (inline directories
    /// get them made from the parent number they keep).
    pub fn dir_entries(&self, dir: &RawInode) -> SysResult<Vec<RawDirent>> {
        let n = dir.ino;
        let mut out = Vec::new();
        if dir.has_flag(iflags::INLINE_DATA) {
            // ext4_read_inline_dir: the parent's number, then entries in the rest of i_block
            // and in the value of system.data.
            out.push(RawDirent {
                ino: n,
                file_type: 2,
                name: b".".to_vec(),
            });
            out.push(RawDirent {
                ino: le32(&dir.block, 0),
                file_type: 2,
                name: b"..".to_vec(),
            });
            self.parse_dirents(n, &dir.block[4..], 4, &mut out)?;
            if let Some(v) = self
                .ibody_xattrs(dir)?
                .into_iter()
                .find(|x| x.index == 7 && x.name == b"data")
                && !v.value.is_empty()
            {
                self.parse_dirents(n, &v.value, 60, &mut out)?;
            }
            return Ok(out);
        }
        let bs = self.bs();
        let nblocks = dir.size.div_ceil(bs);
        if nblocks > u32::MAX as u64 || dir.size > (1u64 << 32) {
            return Err(self.corrupt(n, format_args!("directory too large: {}", dir.size)));
        }
        let htree = dir.has_flag(iflags::INDEX);
        let mut lblk = 0u64;
        while lblk < nblocks {
            let m = self.map(dir, lblk as u32)?;
            let (pblk, len) = match m {
                Mapping::Mapped {
                    pblk,
                    len,
                    unwritten: false,
                } => (pblk, len),
                // A hole (or unwritten block) in a directory holds no entries.
                Mapping::Mapped { len, .. } | Mapping::Hole { len } => {
                    lblk += len.max(1) as u64;
                    continue;
                }
            };
            for k in 0..(len as u64).min(nblocks - lblk) {
                let b = self.block(n, pblk + k)?;
                self.dir_block(dir, &b, lblk + k, htree, &mut out)?;
            }
            lblk += len.max(1) as u64;
        }
        Ok(out)
    }

    /// One directory block: an htree index node is skipped (the entries are all in the
    /// leaves), a leaf's checksum tail is checked (`ext4_dirblock_csum_verify`).
    pub(crate) fn dir_block(
        &self,
        dir: &RawInode,
        b: &[u8],
        lblk: u64,
        htree: bool,
        out: &mut Vec<RawDirent>,
    ) -> SysResult<()> {
        let bs = b.len();
        let n = dir.ino;
        // dx nodes: a fake entry of inode 0 spanning the block; the dx root is block 0,
        // whose `..` spans the rest of the block.
        let first_rec = le16(b, 4) as usize;
        let is_dx_node = htree && lblk > 0 && le32(b, 0) == 0 && first_rec == bs;
        if is_dx_node {
            return Ok(());
        }
        let is_dx_root = htree && lblk == 0;
        let mut body = b;
        if self.sb.metadata_csum() {
            let t = bs - 12;
            let has_tail =
                le32(b, t) == 0 && le16(b, t + 4) == 12 && b[t + 6] == 0 && b[t + 7] == 0xDE;
            if has_tail {
                let want = crate::crc::crc32c(dir.csum_seed, &b[..t]);
                if want != le32(b, t + 8) {
                    return Err(
                        self.corrupt(n, format_args!("directory block {lblk}: checksum invalid"))
                    );
                }
                body = &b[..t];
            } else if !is_dx_root {
                return Err(self.corrupt(
                    n,
                    format_args!("directory block {lblk}: no space for directory leaf checksum"),
                ));
            }
        }
        if is_dx_root {
            // `.` (12 bytes) and `..` are real entries; the index after them is not.
            let dot_len = le16(b, 4) as usize;
            if dot_len != 12 || le16(b, 16) as usize != bs - 12 {
                return Err(self.corrupt(n, format_args!("bad htree root block")));
            }
            return self.parse_dirents(n, &b[..12], 0, out).and_then(|_| {
                let mut dd = b[12..24].to_vec();
                dd[4..6].copy_from_slice(&12u16.to_le_bytes());
                self.parse_dirents(n, &dd, 12, out)
            });
        }
        self.parse_dirents(n, body, lblk * bs as u64, out)
    }

    /// Looks `name` up in directory `dir`: through the htree index when the directory has one
    /// (`ext4_dx_find_entry`), else (or when the index is one this driver does not follow) by
    /// a scan of every block.
    pub fn lookup(&self, dir: &RawInode, name: &[u8]) -> SysResult<Option<u32>> {
        if dir.has_flag(iflags::INDEX)
            && !dir.has_flag(iflags::INLINE_DATA)
            && self.sb.compat & disk::compat::DIR_INDEX != 0
            && let Some(found) = self.dx_lookup(dir, name)?
        {
            return Ok(found);
        }
        Ok(self
            .dir_entries(dir)?
            .into_iter()
            .find(|e| e.name == name)
            .map(|e| e.ino))
    }

    /// [`Ext4::dx_lookup`] for the tests (which check that the index answers by itself).
    #[cfg(test)]
    pub(crate) fn dx_lookup_for_test(
        &self,
        dir: &RawInode,
        name: &[u8],
    ) -> SysResult<Option<Option<u32>>> {
        self.dx_lookup(dir, name)
    }

    /// Logical block `lblk` of directory `dir`, if it is mapped and written.
    fn dir_lblock(&self, dir: &RawInode, lblk: u32) -> SysResult<Option<Arc<Vec<u8>>>> {
        if lblk as u64 >= dir.size.div_ceil(self.bs()) {
            return Ok(None);
        }
        match self.map(dir, lblk)? {
            Mapping::Mapped {
                pblk,
                unwritten: false,
                ..
            } => Ok(Some(self.block(dir.ino, pblk)?)),
            _ => Ok(None),
        }
    }

    /// `dx_probe` and the leaf search: `Some(answer)` from the index, `None` where the index
    /// cannot answer (an unknown hash or layout, a hash collision that runs past an index
    /// node), so that the caller scans instead.
    fn dx_lookup(&self, dir: &RawInode, name: &[u8]) -> SysResult<Option<Option<u32>>> {
        let Some(root) = self.dir_lblock(dir, 0)? else {
            return Ok(None);
        };
        let bs = root.len();
        // dx_root: `.` (12 bytes), `..` (12 bytes), then dx_root_info at 24.
        let (version, info_len, levels) = (root[28], root[29] as usize, root[30] as u32);
        let max_levels = if self.sb.has(incompat::LARGEDIR) {
            3
        } else {
            2
        };
        if disk::le32(&root, 24) != 0 || info_len != 8 || levels >= max_levels {
            return Ok(None);
        }
        let mut version = version;
        if version <= crate::hash::TEA && self.sb.flags & 0x2 != 0 {
            version += 3;
        }
        let Some(hash) = crate::hash::dirhash(name, version, &self.sb.hash_seed) else {
            return Ok(None);
        };
        let mut node = root;
        let mut off = 24 + info_len;
        for level in 0..=levels {
            let (limit, count) = (le16(&node, off) as usize, le16(&node, off + 2) as usize);
            if count == 0 || count > limit || off + count * 8 > bs {
                return Ok(None);
            }
            let hash_at = |i: usize| if i == 0 { 0 } else { le32(&node, off + i * 8) };
            let block_at = |i: usize| le32(&node, off + i * 8 + 4) & 0x0FFF_FFFF;
            let mut i = 0;
            while i + 1 < count && hash_at(i + 1) <= hash {
                i += 1;
            }
            if level < levels {
                let Some(next) = self.dir_lblock(dir, block_at(i))? else {
                    return Ok(None);
                };
                // An index node: a fake entry of inode 0 spanning the block.
                if le32(&next, 0) != 0 || le16(&next, 4) as usize != bs {
                    return Ok(None);
                }
                node = next;
                off = 8;
                continue;
            }
            // The leaf, and the ones after it while the next index entry says the same hash
            // continues there (its low bit set).
            loop {
                let Some(leaf) = self.dir_lblock(dir, block_at(i))? else {
                    return Ok(None);
                };
                let mut out = Vec::new();
                self.dir_block(dir, &leaf, block_at(i) as u64, true, &mut out)?;
                if let Some(e) = out.iter().find(|e| e.name == name) {
                    return Ok(Some(Some(e.ino)));
                }
                if i + 1 < count {
                    let h = hash_at(i + 1);
                    if h & 1 != 0 && h & !1 == hash {
                        i += 1;
                        continue;
                    }
                    return Ok(Some(None));
                }
                // The last entry of this node: a collision could go on in the next node.
                return Ok(if levels == 0 { Some(None) } else { None });
            }
        }
        Ok(None)
    }

    /// The leaf block an entry named `name` belongs in by the htree index (`dx_probe`), or
    /// `None` where the index is one this driver does not follow.
    pub(crate) fn dx_leaf(&self, dir: &RawInode, name: &[u8]) -> SysResult<Option<u32>> {
        let Some(root) = self.dir_lblock(dir, 0)? else {
            return Ok(None);
        };
        let bs = root.len();
        let (version, info_len, levels) = (root[28], root[29] as usize, root[30] as u32);
        let max_levels = if self.sb.has(incompat::LARGEDIR) {
            3
        } else {
            2
        };
        if le32(&root, 24) != 0 || info_len != 8 || levels >= max_levels {
            return Ok(None);
        }
        let mut version = version;
        if version <= crate::hash::TEA && self.sb.flags & 0x2 != 0 {
            version += 3;
        }
        let Some(hash) = crate::hash::dirhash(name, version, &self.sb.hash_seed) else {
            return Ok(None);
        };
        let mut node = root;
        let mut off = 24 + info_len;
        for level in 0..=levels {
            let (limit, count) = (le16(&node, off) as usize, le16(&node, off + 2) as usize);
            if count == 0 || count > limit || off + count * 8 > bs {
                return Ok(None);
            }
            let hash_at = |i: usize| if i == 0 { 0 } else { le32(&node, off + i * 8) };
            let block_at = |i: usize| le32(&node, off + i * 8 + 4) & 0x0FFF_FFFF;
            let mut i = 0;
            while i + 1 < count && hash_at(i + 1) <= hash {
                i += 1;
            }
            if level == levels {
                return Ok(Some(block_at(i)));
            }
            let Some(next) = self.dir_lblock(dir, block_at(i))? else {
                return Ok(None);
            };
            if le32(&next, 0) != 0 || le16(&next, 4) as usize != bs {
                return Ok(None);
            }
            node = next;
            off = 8;
        }
        Ok(None)
    }

    /// The in-inode attributes (after `i_extra_isize`, `ext4_xattr_ibody_get`).
    pub(crate) fn ibody_xattrs(&self, ino: &RawInode) -> SysResult<Vec<Xattr>> {
        let start = disk::GOOD_OLD_INODE_SIZE + ino.extra_isize as usize;
        if ino.raw.len() <= disk::GOOD_OLD_INODE_SIZE || start + 4 > ino.raw.len() {
            return Ok(Vec::new());
        }
        if le32(&ino.raw, start) != XATTR_MAGIC {
            return Ok(Vec::new());
        }
        let region = &ino.raw[start + 4..];
        self.parse_xattrs(ino.ino, region, 0, region)
    }

    /// The attributes of the inode's xattr block (`ext4_xattr_block_get`): magic, one
    /// block, checksum.
    pub(crate) fn block_xattrs(&self, ino: &RawInode) -> SysResult<Vec<Xattr>> {
        if ino.file_acl == 0 {
            return Ok(Vec::new());
        }
        let pblk = ino.file_acl;
        let b = self.block(ino.ino, pblk)?;
        if le32(&b, 0) != XATTR_MAGIC || le32(&b, 8) != 1 {
            return Err(self.corrupt(ino.ino, format_args!("bad xattr block {pblk}")));
        }
        if self.sb.metadata_csum() {
            let mut c = crate::crc::crc32c(self.sb.csum_seed, &pblk.to_le_bytes());
            c = crate::crc::crc32c(c, &b[..0x10]);
            c = crate::crc::crc32c(c, &[0; 4]);
            c = crate::crc::crc32c(c, &b[0x14..]);
            if c != le32(&b, 0x10) {
                return Err(self.corrupt(
                    ino.ino,
                    format_args!("xattr block {pblk}: checksum invalid"),
                ));
            }
        }
        self.parse_xattrs(ino.ino, &b[32..], 0, &b)
    }

    /// Entries from `entries` (until the 4 zero bytes that end them); values at
    /// `e_value_offs` within `values` (`check_xattrs`).
    fn parse_xattrs(
        &self,
        n: u32,
        entries: &[u8],
        _base: usize,
        values: &[u8],
    ) -> SysResult<Vec<Xattr>> {
        let mut out = Vec::new();
        let mut off = 0usize;
        loop {
            if off + 4 > entries.len() {
                return Err(self.corrupt(n, format_args!("xattr entries run off the end")));
            }
            if le32(entries, off) == 0 {
                break;
            }
            if off + 16 > entries.len() {
                return Err(self.corrupt(n, format_args!("xattr entry overrun")));
            }
            let name_len = entries[off] as usize;
            let index = entries[off + 1];
            let voff = le16(entries, off + 2) as usize;
            let vinum = le32(entries, off + 4);
            let vsize = le32(entries, off + 8) as usize;
            if off + 16 + name_len > entries.len() {
                return Err(self.corrupt(n, format_args!("xattr name overrun")));
            }
            if vinum != 0 {
                return Err(self.corrupt(n, format_args!("xattr value in an EA inode")));
            }
            if voff.checked_add(vsize).is_none_or(|e| e > values.len()) {
                return Err(self.corrupt(n, format_args!("xattr value overrun")));
            }
            out.push(Xattr {
                index,
                name: entries[off + 16..off + 16 + name_len].to_vec(),
                value: values[voff..voff + vsize].to_vec(),
            });
            off += (name_len + 16 + 3) & !3;
        }
        Ok(out)
    }

    /// Every attribute of the inode, in-inode ones first, as (full name, value); the
    /// `system.data` of inline data is not an attribute the guest sees.
    pub fn xattrs(&self, ino: &RawInode) -> SysResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut all = self.ibody_xattrs(ino)?;
        all.extend(self.block_xattrs(ino)?);
        Ok(all
            .into_iter()
            .filter_map(|x| {
                // fs/ext4/xattr.c ext4_xattr_handler_map.
                let prefix: &[u8] = match x.index {
                    1 => b"user.",
                    2 => b"system.posix_acl_access",
                    3 => b"system.posix_acl_default",
                    4 => b"trusted.",
                    6 => b"security.",
                    _ => return None,
                };
                let mut name = prefix.to_vec();
                name.extend_from_slice(&x.name);
                Some((name, x.value))
            })
            .collect())
    }
}

/// One stored attribute: name index (`EXT4_XATTR_INDEX_*`), name suffix, value.
#[derive(Clone, Debug)]
pub(crate) struct Xattr {
    pub(crate) index: u8,
    pub(crate) name: Vec<u8>,
    pub(crate) value: Vec<u8>,
}
