//! The write side of a mounted ext4 (Linux `fs/ext4/balloc.c`,
//! `ialloc.c`, `extents.c`, `namei.c`, `inode.c`, `xattr.c`, `orphan.c`, `super.c`): block
//! and inode allocation from the bitmaps (flex_bg aware: any group's bitmap is searched),
//! with the bitmap checksums, group descriptor checksums and free counts and the
//! superblock's free counts kept right; file data through extent trees (rebuilt compactly
//! after each change: depth 0 in the inode while four extents fit, else index blocks),
//! fallocate (unwritten extents, punch); directories (linear; an htree directory takes an
//! insert into the leaf its index names, split when full while the root has room, else it
//! is turned into a valid linear one); inodes with checksums and extended timestamps; extended attributes
//! in the inode or in one block; the orphan list for files unlinked while open.
//!
//! Metadata goes through the block cache (so reads see it) and, with a journal, into the
//! running JBD2 transaction ([`crate::jbd2`]: committed on fsync/sync/timer/unmount, so a
//! crash at any point replays to a consistent image); without one (or with `noload`) it is
//! written through at once and `fsync`/`sync` flush the device. File data goes straight to
//! its blocks (before the commit that points at it: `data=ordered`). Blocks an operation
//! frees go back to the bitmaps only when it ends, after the inodes that pointed at them
//! are written, so even without a journal a crash can leak blocks but never leave one both
//! free and in use. The mount allows writing only on images whose features this module
//! keeps right ([`write_refusal`]).
//!
//! Key types: [`WState`] (the allocator's counters, behind one lock that serializes every
//! change), [`Ext`] (one extent). Neighbours: [`crate::fs`] (reading), [`crate::vfs`] (the
//! kernel's objects, which call these).

use crate::disk::{self, GroupDesc, RawInode, Super, iflags, incompat, le16, le32, put16, put32};
use crate::fs::{Ext4, Xattr};
use std::sync::{Arc, MutexGuard};
use um_uapi::{Errno, SysResult};

/// `EXT4_BG_INODE_UNINIT`, `EXT4_BG_BLOCK_UNINIT`.
const BG_INODE_UNINIT: u16 = 0x1;
const BG_BLOCK_UNINIT: u16 = 0x2;
/// `EXT4_EXT_MAGIC`.
const EXT_MAGIC: u16 = 0xF30A;
/// `EXT_INIT_MAX_LEN`, `EXT_UNWRITTEN_MAX_LEN`.
const EXT_INIT_MAX_LEN: u32 = 1 << 15;
const EXT_UNWRITTEN_MAX_LEN: u32 = (1 << 15) - 1;
/// `EXT4_LINK_MAX`.
const LINK_MAX: u16 = 65000;
/// `EXT4_XATTR_MAGIC`.
const XATTR_MAGIC: u32 = 0xEA02_0000;
/// Extent tree blocks one file may have before the tree is called corrupt (a loop guard).
const MAX_TREE_BLOCKS: usize = 1 << 20;

/// Incompatible features this module keeps right (everything else refuses `rw`).
const W_INCOMPAT: u32 = incompat::FILETYPE
    | incompat::EXTENTS
    | incompat::BIT64
    | incompat::FLEX_BG
    | incompat::CSUM_SEED
    | incompat::LARGEDIR;
/// Read-only-compatible features this module keeps right.
const W_RO_COMPAT: u32 = disk::ro_compat::SPARSE_SUPER
    | disk::ro_compat::LARGE_FILE
    | disk::ro_compat::BTREE_DIR
    | disk::ro_compat::HUGE_FILE
    | disk::ro_compat::GDT_CSUM
    | disk::ro_compat::DIR_NLINK
    | disk::ro_compat::EXTRA_ISIZE
    | disk::ro_compat::METADATA_CSUM;

/// Why an image may not be mounted read-write by this driver (`ext4_feature_set_ok` with
/// `readonly == 0`, narrowed to what is implemented), or `None`.
pub fn write_refusal(sb: &Super) -> Option<String> {
    if sb.has(incompat::RECOVER) {
        return Some("needs journal recovery; can't mount read-write".into());
    }
    if sb.incompat & incompat::EXTENTS == 0 {
        return Some("writing is implemented for ext4 with extents only".into());
    }
    let bad_in = sb.incompat & !W_INCOMPAT;
    let bad_ro = sb.ro_compat & !W_RO_COMPAT;
    if bad_in != 0 || bad_ro != 0 {
        return Some(format!(
            "features this driver cannot write (incompat {bad_in:x}, ro_compat {bad_ro:x}); mount it read-only"
        ));
    }
    None
}

/// The allocator's state: the group descriptors and superblock as last written.
pub struct WState {
    /// Blocks freed by the operation under way, given back to the bitmaps when it ends
    /// (when its inodes no longer point at them), so that a crash in between can leak
    /// blocks but never leave one free and in use.
    pending: Vec<(u64, u64)>,
    sb_raw: Vec<u8>,
    gds: Vec<GroupDesc>,
    free_blocks: u64,
    free_inodes: u32,
    generation: u32,
    /// The whole block that holds the superblock (block 0 with the boot sector and padding
    /// on 2K+ blocks, block 1 on 1K blocks), journaled as Linux journals `s_sbh`.
    sb_block: Vec<u8>,
}

/// One extent of a file: `len` blocks from file block `lblk` at disk block `pblk`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ext {
    pub lblk: u32,
    pub len: u32,
    pub pblk: u64,
    pub unwritten: bool,
}

/// `EXT4_FT_*` of a mode.
pub fn file_type(mode: u32) -> u8 {
    match mode & 0o170000 {
        0o100000 => 1,
        0o040000 => 2,
        0o020000 => 3,
        0o060000 => 4,
        0o010000 => 5,
        0o140000 => 6,
        0o120000 => 7,
        _ => 0,
    }
}

/// The current time (CLOCK_REALTIME).
pub fn now() -> (i64, i64) {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64, d.subsec_nanos() as i64)
}

/// Offsets of the inode fields this module writes (`struct ext4_inode`).
mod off {
    pub const MODE: usize = 0x0;
    pub const UID: usize = 0x2;
    pub const SIZE: usize = 0x4;
    pub const ATIME: usize = 0x8;
    pub const CTIME: usize = 0xC;
    pub const MTIME: usize = 0x10;
    pub const DTIME: usize = 0x14;
    pub const GID: usize = 0x18;
    pub const LINKS: usize = 0x1A;
    pub const BLOCKS: usize = 0x1C;
    pub const FLAGS: usize = 0x20;
    pub const BLOCK: usize = 0x28;
    pub const GENERATION: usize = 0x64;
    pub const FILE_ACL: usize = 0x68;
    pub const SIZE_HI: usize = 0x6C;
    pub const BLOCKS_HI: usize = 0x74;
    pub const FILE_ACL_HI: usize = 0x76;
    pub const UID_HI: usize = 0x78;
    pub const GID_HI: usize = 0x7A;
    pub const EXTRA_ISIZE: usize = 0x80;
    pub const CTIME_EXTRA: usize = 0x84;
    pub const MTIME_EXTRA: usize = 0x88;
    pub const ATIME_EXTRA: usize = 0x8C;
    pub const CRTIME: usize = 0x90;
    pub const CRTIME_EXTRA: usize = 0x94;
}

/// Which timestamp.
#[derive(Clone, Copy)]
pub enum Time {
    A,
    C,
    M,
}

/// An inode being changed: its bytes as on disk.
pub struct InodeBuf {
    pub ino: u32,
    pub b: Vec<u8>,
}

impl InodeBuf {
    pub fn mode(&self) -> u32 {
        le16(&self.b, off::MODE) as u32
    }
    pub fn links(&self) -> u16 {
        le16(&self.b, off::LINKS)
    }
    pub fn set_links(&mut self, n: u16) {
        put16(&mut self.b, off::LINKS, n);
    }
    pub fn size(&self) -> u64 {
        le32(&self.b, off::SIZE) as u64 | (le32(&self.b, off::SIZE_HI) as u64) << 32
    }
    pub fn set_size(&mut self, s: u64) {
        put32(&mut self.b, off::SIZE, s as u32);
        put32(&mut self.b, off::SIZE_HI, (s >> 32) as u32);
    }
    pub fn flags(&self) -> u32 {
        le32(&self.b, off::FLAGS)
    }
    pub fn set_flags(&mut self, f: u32) {
        put32(&mut self.b, off::FLAGS, f);
    }
    pub fn file_acl(&self) -> u64 {
        le32(&self.b, off::FILE_ACL) as u64 | (le16(&self.b, off::FILE_ACL_HI) as u64) << 32
    }
    pub fn set_file_acl(&mut self, b: u64) {
        put32(&mut self.b, off::FILE_ACL, b as u32);
        put16(&mut self.b, off::FILE_ACL_HI, (b >> 32) as u16);
    }
    /// `i_blocks` in 512-byte units (this module never sets `EXT4_HUGE_FILE_FL`).
    pub fn blocks512(&self) -> u64 {
        le32(&self.b, off::BLOCKS) as u64 | (le16(&self.b, off::BLOCKS_HI) as u64) << 32
    }
    pub fn set_blocks512(&mut self, n: u64) {
        put32(&mut self.b, off::BLOCKS, n as u32);
        put16(&mut self.b, off::BLOCKS_HI, (n >> 32) as u16);
    }
    pub fn set_mode(&mut self, m: u32) {
        put16(&mut self.b, off::MODE, m as u16);
    }
    pub fn set_uid(&mut self, u: u32) {
        put16(&mut self.b, off::UID, u as u16);
        put16(&mut self.b, off::UID_HI, (u >> 16) as u16);
    }
    pub fn set_gid(&mut self, g: u32) {
        put16(&mut self.b, off::GID, g as u16);
        put16(&mut self.b, off::GID_HI, (g >> 16) as u16);
    }
    fn extra_isize(&self) -> usize {
        if self.b.len() > disk::GOOD_OLD_INODE_SIZE {
            le16(&self.b, off::EXTRA_ISIZE) as usize
        } else {
            0
        }
    }
    /// `ext4_encode_extra_time`: the low 32 bits of the seconds in the base field, two
    /// epoch bits and the nanoseconds in the extra one when `i_extra_isize` covers it.
    fn put_time(&mut self, base: usize, extra: usize, t: (i64, i64)) {
        put32(&mut self.b, base, t.0 as u32);
        if extra + 4 <= disk::GOOD_OLD_INODE_SIZE + self.extra_isize() {
            let epoch = ((t.0 - (t.0 as i32 as i64)) >> 32) as u32 & 3;
            put32(&mut self.b, extra, epoch | ((t.1 as u32) << 2));
        }
    }
    pub fn set_time(&mut self, which: Time, t: (i64, i64)) {
        match which {
            Time::A => self.put_time(off::ATIME, off::ATIME_EXTRA, t),
            Time::C => self.put_time(off::CTIME, off::CTIME_EXTRA, t),
            Time::M => self.put_time(off::MTIME, off::MTIME_EXTRA, t),
        }
    }
    fn touch_cm(&mut self) {
        let t = now();
        self.set_time(Time::C, t);
        self.set_time(Time::M, t);
    }
    fn iblock(&self) -> &[u8] {
        &self.b[off::BLOCK..off::BLOCK + 60]
    }
    fn has_flag(&self, f: u32) -> bool {
        self.flags() & f != 0
    }
    fn is_dir(&self) -> bool {
        self.mode() & 0o170000 == 0o040000
    }
}

/// A directory entry found: its block, its offset, the offset of the entry before it in
/// the block, its inode.
type Found = (u64, usize, Option<usize>, u32);

/// The lock that serializes changes; when an operation lets it go, the blocks it freed
/// go back to the bitmaps.
pub struct WGuard<'a> {
    g: MutexGuard<'a, WState>,
    fs: &'a Ext4,
}

impl std::ops::Deref for WGuard<'_> {
    type Target = WState;
    fn deref(&self) -> &WState {
        &self.g
    }
}

impl std::ops::DerefMut for WGuard<'_> {
    fn deref_mut(&mut self) -> &mut WState {
        &mut self.g
    }
}

impl Drop for WGuard<'_> {
    fn drop(&mut self) {
        let pending = std::mem::take(&mut self.g.pending);
        for (p, n) in pending {
            if let Err(e) = self.fs.free_blocks_now(&mut self.g, p, n) {
                log::error!(
                    "EXT4-fs ({}): freeing blocks {p}+{n} failed: {e:?}",
                    self.fs.dev.name()
                );
            }
        }
        // Between operations: commit a transaction that has grown to a quarter of the log
        // or stayed open for the commit interval (kjournald2's two reasons).
        if let Some(j) = &self.fs.j {
            let mut j = um_kernel::task::lock(j);
            if j.full() || j.age().is_some_and(|a| a >= self.fs.commit_interval) {
                self.fs.commit_locked(&mut j);
            }
        }
    }
}

impl Ext4 {
    /// Makes the mount writable: the allocator starts from the descriptors read at mount.
    pub fn enable_write(&mut self) -> Result<(), String> {
        let mut sb_raw = vec![0u8; 1024];
        self.dev
            .read_at(disk::SB_OFFSET, &mut sb_raw)
            .map_err(|e| format!("unable to read superblock: {e}"))?;
        // A device that does not take writes (a driver without `write_at`) is found here,
        // before anything changes: the superblock is written back as it is.
        self.dev
            .write_at(disk::SB_OFFSET, &sb_raw)
            .map_err(|e| format!("write access unavailable ({e:?}), mount it read-only"))?;
        let bs = self.bs() as usize;
        let mut sb_block = vec![0u8; bs];
        self.dev
            .read_at(disk::SB_OFFSET / bs as u64 * bs as u64, &mut sb_block)
            .map_err(|e| format!("unable to read superblock: {e}"))?;
        if self.sb.compat & disk::compat::HAS_JOURNAL != 0 && !self.noload {
            let j = crate::jbd2::Journal::open(self)
                .map_err(|e| format!("error loading journal: {e}"))?;
            self.j = Some(std::sync::Mutex::new(j));
            // A live journal: needs_recovery is on until a clean unmount (ext4_setup_super
            // and jbd2 leave it set while the file system is mounted read-write).
            let v = le32(&sb_raw, 0x60) | incompat::RECOVER;
            put32(&mut sb_raw, 0x60, v);
            if self.sb.metadata_csum() {
                let c = crate::crc::crc32c(!0, &sb_raw[..0x3FC]);
                put32(&mut sb_raw, 0x3FC, c);
            }
            self.dev
                .write_at(disk::SB_OFFSET, &sb_raw)
                .and_then(|_| self.dev.flush())
                .map_err(|e| format!("unable to write superblock: {e}"))?;
        }
        let total_free: u64 = self.groups.iter().map(|g| g.free_blocks as u64).sum();
        let total_ifree: u64 = self.groups.iter().map(|g| g.free_inodes as u64).sum();
        self.w = Some(std::sync::Mutex::new(WState {
            pending: Vec::new(),
            sb_raw,
            sb_block,
            gds: self.groups.clone(),
            free_blocks: total_free,
            free_inodes: total_ifree.min(u32::MAX as u64) as u32,
            generation: now().1 as u32 ^ (now().0 as u32).rotate_left(16),
        }));
        Ok(())
    }

    /// Whether the mount is writable.
    pub fn writable(&self) -> bool {
        self.w.is_some()
    }

    /// Takes the change lock (`EROFS` on a read-only mount).
    pub fn wlock(&self) -> SysResult<WGuard<'_>> {
        match &self.w {
            Some(m) => Ok(WGuard {
                g: um_kernel::task::lock(m),
                fs: self,
            }),
            None => Err(Errno::EROFS),
        }
    }

    /// On a read-write mount, the change lock for a reader that follows several blocks (a
    /// file's extent tree, a directory's blocks), so that it never sees a change half made
    /// (tree blocks reused before the inode that points at them is written, a leaf split
    /// before the index names the new block).
    pub fn read_guard(&self) -> Option<WGuard<'_>> {
        self.w.as_ref().map(|m| WGuard {
            g: um_kernel::task::lock(m),
            fs: self,
        })
    }

    /// Free blocks and inodes now (for statfs).
    pub fn free_counts(&self) -> (u64, u64) {
        match &self.w {
            Some(m) => {
                let w = um_kernel::task::lock(m);
                (w.free_blocks, w.free_inodes as u64)
            }
            None => (self.sb.free_blocks, self.sb.free_inodes as u64),
        }
    }

    /// Flushes the device (`ext4_sync_fs`): with a journal, commits the running
    /// transaction (`jbd2_journal_start_commit` and wait; the commit flushes the data
    /// before it), else `blkdev_issue_flush`. fsync does the same (`ext4_sync_file` waits
    /// for the commit of the transaction that holds the inode: here, the running one).
    pub fn sync(&self) -> SysResult<()> {
        if let Some(j) = &self.j {
            let _g = self.wlock()?;
            let mut j = um_kernel::task::lock(j);
            // Nothing to commit: data written in place still has to reach the disk.
            if !j.commit(&*self.dev).map_err(|e| self.dev_err(e))? {
                self.dev.flush()?;
            }
            return Ok(());
        }
        self.dev.flush()
    }

    /// Commits the running transaction (the caller holds the change lock); a failure is
    /// logged (Linux aborts the journal; here the next commit tries again).
    pub(crate) fn commit_locked(&self, j: &mut crate::jbd2::Journal) {
        if let Err(e) = j.commit(&*self.dev) {
            log::error!("JBD2: commit on {} failed: {e}", self.dev.name());
        }
    }

    /// The commit timer (kjournald2): commits a transaction open for `commit=` seconds.
    pub fn journal_tick(&self) {
        let Some(j) = &self.j else { return };
        let due = um_kernel::task::lock(j)
            .age()
            .is_some_and(|a| a >= self.commit_interval);
        if due && let Ok(_g) = self.wlock() {
            self.commit_locked(&mut um_kernel::task::lock(j));
        }
    }

    /// Transactions committed, log wraps and checkpoints of this mount (zeros without a
    /// journal).
    pub fn journal_stats(&self) -> (u64, u64, u64) {
        self.j.as_ref().map_or((0, 0, 0), |j| {
            let j = um_kernel::task::lock(j);
            (j.commits, j.wraps, j.checkpoints)
        })
    }

    /// The kernel is ending (reboot(2), init's exit) with this file system still mounted:
    /// everything is committed and checkpointed and the superblock loses `needs_recovery`,
    /// as if it had been unmounted (Linux would leave it to the next mount's recovery, and
    /// lose what was not committed; here nothing is lost). Nothing writes after this.
    pub fn shutdown_journal(&self) {
        let Some(j) = &self.j else { return };
        let Ok(mut w) = self.wlock() else { return };
        let mut j = um_kernel::task::lock(j);
        let dev = &*self.dev;
        if let Err(e) = j.commit(dev).and_then(|_| j.checkpoint(dev)) {
            log::error!(
                "JBD2: journal of {} not closed at shutdown: {e}",
                dev.name()
            );
            return;
        }
        let v = le32(&w.sb_raw, 0x60) & !incompat::RECOVER;
        put32(&mut w.sb_raw, 0x60, v);
        if self.sb.metadata_csum() {
            let c = crate::crc::crc32c(!0, &w.sb_raw[..0x3FC]);
            put32(&mut w.sb_raw, 0x3FC, c);
        }
        if let Err(e) = dev
            .write_at(disk::SB_OFFSET, &w.sb_raw)
            .and_then(|_| dev.flush())
        {
            log::error!(
                "EXT4-fs ({}): superblock not written at shutdown: {e}",
                dev.name()
            );
        }
    }

    /// A clean unmount of the journal (`jbd2_journal_destroy`, `ext4_put_super`): the
    /// running transaction commits, everything is checkpointed, the log is left empty and
    /// the superblock loses `needs_recovery`.
    fn close_journal(&mut self) {
        let Some(j) = self.j.take() else { return };
        let mut j = j.into_inner().unwrap_or_else(|e| e.into_inner());
        let Some(w) = self.w.take() else { return };
        let mut w = w.into_inner().unwrap_or_else(|e| e.into_inner());
        let w = &mut w;
        let dev = &*self.dev;
        let r = j.commit(dev).and_then(|_| j.checkpoint(dev));
        if let Err(e) = r {
            log::error!("JBD2: journal of {} not closed cleanly: {e}", dev.name());
            return;
        }
        let v = le32(&w.sb_raw, 0x60) & !incompat::RECOVER;
        put32(&mut w.sb_raw, 0x60, v);
        let r = self.write_super(w).and_then(|_| dev.flush());
        if let Err(e) = r {
            log::error!(
                "EXT4-fs ({}): superblock not written at unmount: {e}",
                dev.name()
            );
        }
    }

    fn dev_err(&self, e: Errno) -> Errno {
        log::error!(
            "EXT4-fs error (device {}): write failed: {e}",
            self.dev.name()
        );
        Errno::EIO
    }

    /// Writes a metadata block through the cache: into the running transaction with a
    /// journal, else to the device at once.
    fn write_meta(&self, pblk: u64, data: Vec<u8>) -> SysResult<()> {
        self.check_range(0, pblk, 1)?;
        let data = Arc::new(data);
        if let Some(j) = &self.j {
            um_kernel::task::lock(j).add(pblk, data.clone());
        } else {
            self.dev
                .write_at(pblk * self.bs(), &data)
                .map_err(|e| self.dev_err(e))?;
        }
        um_kernel::task::lock(&self.cache).insert(pblk, data);
        Ok(())
    }

    /// Writes file data at a byte offset of the device.
    fn write_data(&self, at: u64, data: &[u8]) -> SysResult<()> {
        self.dev.write_at(at, data).map_err(|e| self.dev_err(e))
    }

    fn forget(&self, pblk: u64, n: u64) {
        let mut c = um_kernel::task::lock(&self.cache);
        for b in pblk..pblk + n {
            c.remove(&b);
        }
    }

    // ---- superblock and group descriptors ----

    /// Writes the superblock's free counts and checksum (`ext4_commit_super`).
    fn write_super(&self, w: &mut WState) -> SysResult<()> {
        let (fb, fi) = (w.free_blocks, w.free_inodes);
        let b = &mut w.sb_raw;
        put32(b, 0x0C, fb as u32);
        if self.sb.has(incompat::BIT64) {
            put32(b, 0x158, (fb >> 32) as u32);
        }
        put32(b, 0x10, fi);
        put32(b, 0x30, now().0 as u32);
        if self.sb.metadata_csum() {
            let c = crate::crc::crc32c(!0, &b[..0x3FC]);
            put32(b, 0x3FC, c);
        }
        if let Some(j) = &self.j {
            let bs = self.bs();
            let o = (disk::SB_OFFSET % bs) as usize;
            w.sb_block[o..o + 1024].copy_from_slice(&w.sb_raw);
            um_kernel::task::lock(j).add(disk::SB_OFFSET / bs, Arc::new(w.sb_block.clone()));
            return Ok(());
        }
        self.dev
            .write_at(disk::SB_OFFSET, &w.sb_raw)
            .map_err(|e| self.dev_err(e))
    }

    /// Writes descriptor `g` with its counts, flags, bitmap checksums and own checksum
    /// (`ext4_group_desc_csum_set`, `ext4_block_bitmap_csum_set`, `ext4_inode_bitmap_csum_set`).
    fn write_gd(&self, w: &WState, g: u32, bb: Option<&[u8]>, ib: Option<&[u8]>) -> SysResult<()> {
        let sb = &self.sb;
        let dpb = sb.descs_per_block();
        let loc = sb.descriptor_loc(g / dpb);
        let mut blk = (*self.block(0, loc)?).clone();
        let ds = sb.desc_size as usize;
        let o = (g % dpb) as usize * ds;
        let d = &mut blk[o..o + ds];
        let gd = &w.gds[g as usize];
        put16(d, 0x0C, gd.free_blocks as u16);
        put16(d, 0x0E, gd.free_inodes as u16);
        put16(d, 0x10, gd.used_dirs as u16);
        put16(d, 0x12, gd.flags);
        put16(d, 0x1C, gd.itable_unused as u16);
        if ds >= 64 {
            put16(d, 0x2C, (gd.free_blocks >> 16) as u16);
            put16(d, 0x2E, (gd.free_inodes >> 16) as u16);
            put16(d, 0x30, (gd.used_dirs >> 16) as u16);
            put16(d, 0x32, (gd.itable_unused >> 16) as u16);
        }
        if sb.metadata_csum() {
            if let Some(bb) = bb {
                let c = crate::crc::crc32c(sb.csum_seed, &bb[..sb.blocks_per_group as usize / 8]);
                put16(d, 0x18, c as u16);
                if ds >= 64 {
                    put16(d, 0x38, (c >> 16) as u16);
                }
            }
            if let Some(ib) = ib {
                let c = crate::crc::crc32c(sb.csum_seed, &ib[..sb.inodes_per_group as usize / 8]);
                put16(d, 0x1A, c as u16);
                if ds >= 64 {
                    put16(d, 0x3A, (c >> 16) as u16);
                }
            }
        }
        if sb.metadata_csum() || sb.gdt_csum() {
            let c = disk::group_desc_csum(sb, g, d);
            put16(d, 0x1E, c);
        }
        self.write_meta(loc, blk)
    }

    fn group_first(&self, g: u32) -> u64 {
        self.sb.first_data_block as u64 + g as u64 * self.sb.blocks_per_group as u64
    }

    fn group_blocks(&self, g: u32) -> u64 {
        (self.sb.blocks_count - self.group_first(g)).min(self.sb.blocks_per_group as u64)
    }

    /// The block bitmap of group `g`; for a `BLOCK_UNINIT` group the one
    /// `ext4_init_block_bitmap` makes: the superblock backup, descriptors and reserved
    /// descriptor blocks, and every group's bitmaps and inode table that lie in this group.
    fn block_bitmap(&self, w: &WState, g: u32) -> SysResult<Vec<u8>> {
        let gd = &w.gds[g as usize];
        if gd.flags & BG_BLOCK_UNINIT == 0 {
            return Ok((*self.block(0, gd.block_bitmap)?).clone());
        }
        let bs = self.bs() as usize;
        let mut b = vec![0u8; bs];
        let first = self.group_first(g);
        let n = self.group_blocks(g);
        let mut mark = |blk: u64| {
            if blk >= first && blk < first + n {
                let i = (blk - first) as usize;
                b[i / 8] |= 1 << (i % 8);
            }
        };
        if self.sb.bg_has_super(g) {
            let gdt = self.sb.groups_count.div_ceil(self.sb.descs_per_block()) as u64;
            for k in 0..1 + gdt + self.sb.reserved_gdt_blocks as u64 {
                mark(first + k);
            }
        }
        let itb = (self.sb.inodes_per_group as u64 * self.sb.inode_size as u64).div_ceil(self.bs());
        for h in &w.gds {
            mark(h.block_bitmap);
            mark(h.inode_bitmap);
            for k in 0..itb {
                mark(h.inode_table + k);
            }
        }
        for i in n as usize..bs * 8 {
            b[i / 8] |= 1 << (i % 8);
        }
        let free = (0..n as usize)
            .filter(|&i| b[i / 8] & (1 << (i % 8)) == 0)
            .count();
        if free != gd.free_blocks as usize {
            return Err(self.corrupt(
                0,
                format_args!(
                    "uninitialized group {g}: {free} free blocks, descriptor says {}",
                    gd.free_blocks
                ),
            ));
        }
        Ok(b)
    }

    fn inode_bitmap(&self, w: &WState, g: u32) -> SysResult<Vec<u8>> {
        let gd = &w.gds[g as usize];
        if gd.flags & BG_INODE_UNINIT == 0 {
            return Ok((*self.block(0, gd.inode_bitmap)?).clone());
        }
        let bs = self.bs() as usize;
        let mut b = vec![0u8; bs];
        for i in self.sb.inodes_per_group as usize..bs * 8 {
            b[i / 8] |= 1 << (i % 8);
        }
        Ok(b)
    }

    // ---- blocks ----

    /// Allocates up to `want` contiguous blocks, the first at or after `goal` if it can
    /// (`ext4_mb_new_blocks` reduced to a first-fit search of every group's bitmap).
    pub(crate) fn alloc_blocks(
        &self,
        w: &mut WState,
        goal: u64,
        want: u32,
    ) -> SysResult<(u64, u32)> {
        let ngroups = self.sb.groups_count;
        let bpg = self.sb.blocks_per_group as u64;
        let goal = goal.clamp(self.sb.first_data_block as u64, self.sb.blocks_count - 1);
        let g0 = ((goal - self.sb.first_data_block as u64) / bpg) as u32;
        for k in 0..=ngroups {
            let g = (g0 + k) % ngroups;
            if w.gds[g as usize].free_blocks == 0 {
                continue;
            }
            let mut bm = self.block_bitmap(w, g)?;
            let n = self.group_blocks(g) as usize;
            let start = if k == 0 {
                (goal - self.group_first(g)) as usize
            } else {
                0
            };
            // Blocks the running transaction freed are not reused before it commits: the
            // search runs on a copy of the bitmap with them marked.
            let mut search = bm.clone();
            if let Some(j) = &self.j {
                let gf = self.group_first(g);
                for (a, b) in um_kernel::task::lock(j).busy(gf, gf + n as u64) {
                    for i in (a - gf) as usize..(b - gf) as usize {
                        search[i / 8] |= 1 << (i % 8);
                    }
                }
            }
            let used = |bm: &[u8], i: usize| bm[i / 8] & (1 << (i % 8)) != 0;
            let Some(i0) = (start..n).find(|&i| !used(&search, i)) else {
                continue;
            };
            let mut len = 0usize;
            while i0 + len < n && len < want as usize && !used(&search, i0 + len) {
                let i = i0 + len;
                bm[i / 8] |= 1 << (i % 8);
                len += 1;
            }
            let gd = &mut w.gds[g as usize];
            gd.free_blocks = gd.free_blocks.saturating_sub(len as u32);
            gd.flags &= !BG_BLOCK_UNINIT;
            let bb = gd.block_bitmap;
            w.free_blocks = w.free_blocks.saturating_sub(len as u64);
            self.write_meta(bb, bm.clone())?;
            self.write_gd(w, g, Some(&bm), None)?;
            self.write_super(w)?;
            return Ok((self.group_first(g) + i0 as u64, len as u32));
        }
        Err(Errno::ENOSPC)
    }

    /// Frees `n` blocks from `pblk` when the operation ends ([`WGuard`]).
    pub(crate) fn free_blocks(&self, w: &mut WState, pblk: u64, n: u64) -> SysResult<()> {
        self.check_range(0, pblk, n)?;
        w.pending.push((pblk, n));
        Ok(())
    }

    /// Frees `n` blocks from `pblk` now (`ext4_free_blocks`); a block already free is logged.
    fn free_blocks_now(&self, w: &mut WState, pblk: u64, n: u64) -> SysResult<()> {
        self.check_range(0, pblk, n)?;
        self.forget(pblk, n);
        if let Some(j) = &self.j {
            um_kernel::task::lock(j).freed(pblk, n);
        }
        let bpg = self.sb.blocks_per_group as u64;
        let mut b = pblk;
        let end = pblk + n;
        while b < end {
            let g = ((b - self.sb.first_data_block as u64) / bpg) as u32;
            let gend = (self.group_first(g) + self.group_blocks(g)).min(end);
            let mut bm = self.block_bitmap(w, g)?;
            let mut freed = 0u32;
            for x in b..gend {
                let i = (x - self.group_first(g)) as usize;
                if bm[i / 8] & (1 << (i % 8)) == 0 {
                    self.corrupt(0, format_args!("freeing already free block {x}"));
                    continue;
                }
                bm[i / 8] &= !(1 << (i % 8));
                freed += 1;
            }
            let gd = &mut w.gds[g as usize];
            gd.free_blocks = gd.free_blocks.saturating_add(freed);
            gd.flags &= !BG_BLOCK_UNINIT;
            let bb = gd.block_bitmap;
            w.free_blocks += freed as u64;
            self.write_meta(bb, bm.clone())?;
            self.write_gd(w, g, Some(&bm), None)?;
            b = gend;
        }
        self.write_super(w)
    }

    // ---- inodes ----

    /// Allocates an inode, first in `near`'s group (`__ext4_new_inode` without Orlov).
    fn alloc_inode(&self, w: &mut WState, near: u32, dir: bool) -> SysResult<u32> {
        let ipg = self.sb.inodes_per_group;
        let ngroups = self.sb.groups_count;
        let g0 = near.saturating_sub(1) / ipg;
        for k in 0..ngroups {
            let g = (g0 + k) % ngroups;
            if w.gds[g as usize].free_inodes == 0 {
                continue;
            }
            let mut bm = self.inode_bitmap(w, g)?;
            let first = if g == 0 {
                self.sb.first_ino.max(1) - 1
            } else {
                0
            } as usize;
            let Some(i) = (first..ipg as usize).find(|&i| bm[i / 8] & (1 << (i % 8)) == 0) else {
                continue;
            };
            bm[i / 8] |= 1 << (i % 8);
            let gd = &mut w.gds[g as usize];
            gd.free_inodes = gd.free_inodes.saturating_sub(1);
            if dir {
                gd.used_dirs = gd.used_dirs.saturating_add(1);
            }
            gd.flags &= !BG_INODE_UNINIT;
            if (self.sb.metadata_csum() || self.sb.gdt_csum())
                && i as u32 >= ipg - gd.itable_unused.min(ipg)
            {
                gd.itable_unused = ipg - i as u32 - 1;
            }
            let ib = gd.inode_bitmap;
            w.free_inodes = w.free_inodes.saturating_sub(1);
            self.write_meta(ib, bm.clone())?;
            self.write_gd(w, g, None, Some(&bm))?;
            self.write_super(w)?;
            return Ok(g * ipg + i as u32 + 1);
        }
        Err(Errno::ENOSPC)
    }

    fn free_inode_bit(&self, w: &mut WState, ino: u32, dir: bool) -> SysResult<()> {
        let ipg = self.sb.inodes_per_group;
        let g = (ino - 1) / ipg;
        let i = ((ino - 1) % ipg) as usize;
        let mut bm = self.inode_bitmap(w, g)?;
        if bm[i / 8] & (1 << (i % 8)) == 0 {
            return Err(self.corrupt(ino, format_args!("freeing an inode that is already free")));
        }
        bm[i / 8] &= !(1 << (i % 8));
        let gd = &mut w.gds[g as usize];
        gd.free_inodes = gd.free_inodes.saturating_add(1);
        if dir {
            gd.used_dirs = gd.used_dirs.saturating_sub(1);
        }
        let ib = gd.inode_bitmap;
        w.free_inodes = w.free_inodes.saturating_add(1);
        self.write_meta(ib, bm.clone())?;
        self.write_gd(w, g, None, Some(&bm))?;
        self.write_super(w)
    }

    /// The bytes of inode `ino` to change.
    pub fn inode_buf(&self, ino: u32) -> SysResult<InodeBuf> {
        let raw = self.inode(ino)?;
        Ok(InodeBuf { ino, b: raw.raw })
    }

    /// Writes an inode back with its checksum (`ext4_mark_inode_dirty`).
    pub fn store_inode(&self, ib: &mut InodeBuf) -> SysResult<RawInode> {
        let ino = ib.ino;
        if self.sb.metadata_csum() {
            disk::set_inode_csum(&self.sb, ino, &mut ib.b);
        }
        let ipg = self.sb.inodes_per_group;
        let g = ((ino - 1) / ipg) as usize;
        let o = ((ino - 1) % ipg) as u64 * self.sb.inode_size as u64;
        let pblk = self.groups[g].inode_table + o / self.bs();
        let within = (o % self.bs()) as usize;
        let mut blk = (*self.block(ino, pblk)?).clone();
        blk[within..within + ib.b.len()].copy_from_slice(&ib.b);
        self.write_meta(pblk, blk)?;
        RawInode::parse(&self.sb, ino, &ib.b).map_err(|e| self.corrupt(ino, format_args!("{e}")))
    }

    /// A new inode (`__ext4_new_inode`): mode, owner, times, `i_extra_isize`, an empty
    /// extent root for files, directories and symlinks.
    fn new_inode(
        &self,
        w: &mut WState,
        near: u32,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> SysResult<InodeBuf> {
        let dir = mode & 0o170000 == 0o040000;
        let ino = self.alloc_inode(w, near, dir)?;
        let isz = self.sb.inode_size as usize;
        let mut ib = InodeBuf {
            ino,
            b: vec![0u8; isz],
        };
        if isz > disk::GOOD_OLD_INODE_SIZE {
            put16(
                &mut ib.b,
                off::EXTRA_ISIZE,
                32.min(isz - disk::GOOD_OLD_INODE_SIZE) as u16,
            );
        }
        ib.set_mode(mode);
        ib.set_uid(uid);
        ib.set_gid(gid);
        ib.set_links(1);
        w.generation = w.generation.wrapping_mul(1_103_515_245).wrapping_add(12345);
        put32(&mut ib.b, off::GENERATION, w.generation);
        let t = now();
        ib.set_time(Time::A, t);
        ib.set_time(Time::C, t);
        ib.set_time(Time::M, t);
        if ib.extra_isize() >= 24 {
            ib.put_time(off::CRTIME, off::CRTIME_EXTRA, t);
        }
        if matches!(mode & 0o170000, 0o100000 | 0o040000 | 0o120000) {
            ib.set_flags(iflags::EXTENTS);
            let root = empty_root();
            ib.b[off::BLOCK..off::BLOCK + 12].copy_from_slice(&root);
        }
        Ok(ib)
    }

    /// Frees an inode whose last link and last open file are gone (`ext4_evict_inode`):
    /// its blocks, its xattr block, its bit; the inode keeps its mode and gets `i_dtime`.
    pub fn evict(&self, w: &mut WState, ino: u32) -> SysResult<()> {
        let mut ib = self.inode_buf(ino)?;
        let dir = ib.is_dir();
        if ib.has_flag(iflags::EXTENTS) {
            self.truncate_blocks(w, &mut ib, 0)?;
        }
        let acl = ib.file_acl();
        if acl != 0 {
            self.release_xattr_block(w, ino, acl)?;
            ib.set_file_acl(0);
        }
        ib.set_size(0);
        ib.set_blocks512(0);
        ib.set_links(0);
        put32(&mut ib.b, off::DTIME, now().0 as u32);
        self.store_inode(&mut ib)?;
        self.free_inode_bit(w, ino, dir)
    }

    // ---- extents ----

    /// Every extent of the file in order, and the tree blocks that hold them
    /// (`ext4_find_extent` over the whole tree).
    pub(crate) fn extents(&self, ib: &InodeBuf) -> SysResult<(Vec<Ext>, Vec<u64>)> {
        let mut exts = Vec::new();
        let mut tree = Vec::new();
        let root = ib.iblock().to_vec();
        self.walk_node(ib, &root, None, true, &mut exts, &mut tree)?;
        for w2 in exts.windows(2) {
            if w2[0].lblk as u64 + w2[0].len as u64 > w2[1].lblk as u64 {
                return Err(self.corrupt(ib.ino, format_args!("overlapping extents")));
            }
        }
        Ok((exts, tree))
    }

    fn walk_node(
        &self,
        ib: &InodeBuf,
        b: &[u8],
        want_depth: Option<u16>,
        is_root: bool,
        exts: &mut Vec<Ext>,
        tree: &mut Vec<u64>,
    ) -> SysResult<()> {
        let n = ib.ino;
        let (magic, entries, max, depth) = (le16(b, 0), le16(b, 2), le16(b, 4), le16(b, 6));
        let cap = ((b.len() - 12) / 12) as u16;
        if magic != EXT_MAGIC
            || entries > max
            || max > cap
            || (!is_root && max == 0)
            || depth > 5
            || want_depth.is_some_and(|d| d != depth)
        {
            return Err(self.corrupt(n, format_args!("bad extent header")));
        }
        for i in 0..entries as usize {
            let e = 12 + i * 12;
            if depth == 0 {
                let raw_len = le16(b, e + 4) as u32;
                let (len, unwritten) = if raw_len > EXT_INIT_MAX_LEN {
                    (raw_len - EXT_INIT_MAX_LEN, true)
                } else {
                    (raw_len, false)
                };
                let pblk = (le16(b, e + 6) as u64) << 32 | le32(b, e + 8) as u64;
                let lblk = le32(b, e);
                if len == 0 || lblk.checked_add(len).is_none() {
                    return Err(self.corrupt(n, format_args!("bad extent length")));
                }
                self.check_range(n, pblk, len as u64)?;
                exts.push(Ext {
                    lblk,
                    len,
                    pblk,
                    unwritten,
                });
            } else {
                let leaf = le32(b, e + 4) as u64 | (le16(b, e + 8) as u64) << 32;
                if tree.len() >= MAX_TREE_BLOCKS || tree.contains(&leaf) && tree.len() < 64 {
                    return Err(self.corrupt(n, format_args!("extent tree loop")));
                }
                let child = self.block(n, leaf)?;
                let raw = RawInode::parse(&self.sb, n, &ib.b).map_err(|_| Errno::EUCLEAN)?;
                self.verify_extent_block(&raw, &child, leaf)?;
                tree.push(leaf);
                self.walk_node(ib, &child, Some(depth - 1), false, exts, tree)?;
            }
        }
        Ok(())
    }

    /// Writes `exts` as the file's extent tree (merging neighbours), reusing the old tree
    /// blocks `old` where it can, and fixes `i_blocks` for the change in tree blocks.
    pub(crate) fn set_extents(
        &self,
        w: &mut WState,
        ib: &mut InodeBuf,
        exts: &[Ext],
        mut old: Vec<u64>,
    ) -> SysResult<()> {
        let mut m: Vec<Ext> = Vec::with_capacity(exts.len());
        for e in exts {
            if let Some(l) = m.last_mut() {
                let max = if l.unwritten {
                    EXT_UNWRITTEN_MAX_LEN
                } else {
                    EXT_INIT_MAX_LEN
                };
                if l.unwritten == e.unwritten
                    && l.lblk as u64 + l.len as u64 == e.lblk as u64
                    && l.pblk + l.len as u64 == e.pblk
                    && l.len + e.len <= max
                {
                    l.len += e.len;
                    continue;
                }
            }
            m.push(*e);
        }
        let bs = self.bs() as usize;
        let per = (bs - 12) / 12;
        // Tree nodes per level, bottom-up, until four entries fit in the inode.
        let mut counts = Vec::new();
        let mut l = m.len();
        while l > 4 {
            l = l.div_ceil(per);
            counts.push(l);
            if counts.len() > 4 {
                return Err(Errno::EFBIG);
            }
        }
        let nodes_needed: usize = counts.iter().sum();
        // Tree blocks: the old ones first, then new ones near the data.
        let goal = m.first().map(|e| e.pblk).unwrap_or(0);
        let mut blocks = Vec::with_capacity(nodes_needed);
        while blocks.len() < nodes_needed {
            if let Some(b) = old.pop() {
                blocks.push(b);
            } else {
                let (b, _) = self.alloc_blocks(w, goal, 1)?;
                blocks.push(b);
            }
        }
        for b in old.drain(..) {
            self.free_blocks(w, b, 1)?;
        }
        let raw_seed = self.inode_seed(ib);
        let mut next = blocks.into_iter();
        let mut depth = 0u16;
        let mut level: Vec<[u8; 12]> = m.iter().map(ext_entry).collect();
        let mut first_lblks: Vec<u32> = m.iter().map(|e| e.lblk).collect();
        for _ in counts {
            let mut up = Vec::new();
            let mut up_first = Vec::new();
            for (chunk, firsts) in level.chunks(per).zip(first_lblks.chunks(per)) {
                let pblk = next.next().ok_or(Errno::EIO)?;
                let mut blk = vec![0u8; bs];
                put16(&mut blk, 0, EXT_MAGIC);
                put16(&mut blk, 2, chunk.len() as u16);
                put16(&mut blk, 4, per as u16);
                put16(&mut blk, 6, depth);
                for (i, e) in chunk.iter().enumerate() {
                    blk[12 + i * 12..24 + i * 12].copy_from_slice(e);
                }
                if self.sb.metadata_csum() {
                    let t = 12 + 12 * per;
                    let c = crate::crc::crc32c(raw_seed, &blk[..t]);
                    put32(&mut blk, t, c);
                }
                self.write_meta(pblk, blk)?;
                let mut idx = [0u8; 12];
                put32(&mut idx, 0, firsts[0]);
                put32(&mut idx, 4, pblk as u32);
                put16(&mut idx, 8, (pblk >> 32) as u16);
                up.push(idx);
                up_first.push(firsts[0]);
            }
            level = up;
            first_lblks = up_first;
            depth += 1;
        }
        let mut root = [0u8; 60];
        put16(&mut root, 0, EXT_MAGIC);
        put16(&mut root, 2, level.len() as u16);
        put16(&mut root, 4, 4);
        put16(&mut root, 6, depth);
        for (i, e) in level.iter().enumerate() {
            root[12 + i * 12..24 + i * 12].copy_from_slice(e);
        }
        ib.b[off::BLOCK..off::BLOCK + 60].copy_from_slice(&root);
        // i_blocks: data + tree + xattr block, in 512-byte units.
        let data: u64 = m.iter().map(|e| e.len as u64).sum();
        let acl = (ib.file_acl() != 0) as u64;
        ib.set_blocks512((data + nodes_needed as u64 + acl) * (bs as u64 / 512));
        Ok(())
    }

    fn inode_seed(&self, ib: &InodeBuf) -> u32 {
        let generation = le32(&ib.b, off::GENERATION);
        crate::crc::crc32c(
            crate::crc::crc32c(self.sb.csum_seed, &ib.ino.to_le_bytes()),
            &generation.to_le_bytes(),
        )
    }

    /// Frees every block at or past file block `from` (`ext4_ext_remove_space`).
    fn truncate_blocks(&self, w: &mut WState, ib: &mut InodeBuf, from: u64) -> SysResult<()> {
        let (exts, tree) = self.extents(ib)?;
        let mut keep = Vec::with_capacity(exts.len());
        for e in exts {
            let end = e.lblk as u64 + e.len as u64;
            if end <= from {
                keep.push(e);
            } else if (e.lblk as u64) < from {
                let k = (from - e.lblk as u64) as u32;
                self.free_blocks(w, e.pblk + k as u64, (e.len - k) as u64)?;
                keep.push(Ext { len: k, ..e });
            } else {
                self.free_blocks(w, e.pblk, e.len as u64)?;
            }
        }
        self.set_extents(w, ib, &keep, tree)
    }

    // ---- file data ----

    /// Writes `data` at byte `pos` of regular file `ino` (`ext4_buffered_write_iter`
    /// through `ext4_map_blocks` with `EXT4_GET_BLOCKS_CREATE`): holes get blocks, partly
    /// written new blocks get zeros around the data, written-into unwritten extents are
    /// split; `i_size` grows to the end. A full disk ends the write short (`ENOSPC` if
    /// nothing was written).
    pub fn write_file(&self, ino: u32, pos: u64, data: &[u8]) -> SysResult<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let bs = self.bs();
        let end = pos.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        if end.div_ceil(bs) > u32::MAX as u64 {
            return Err(Errno::EFBIG);
        }
        let mut w = self.wlock()?;
        let mut ib = self.inode_buf(ino)?;
        if !ib.has_flag(iflags::EXTENTS) {
            log::warn!(
                "EXT4-fs ({}): inode #{ino}: writing files without extents is not implemented",
                self.dev.name()
            );
            return Err(Errno::EROFS);
        }
        let (mut exts, tree) = self.extents(&ib)?;
        let mut done = 0usize;
        let mut err = None;
        let mut lb = pos / bs;
        while lb * bs < end {
            // Where this block is: an extent that covers it, or the hole up to the next.
            let idx = exts.partition_point(|e| (e.lblk as u64 + e.len as u64) <= lb);
            let covering = exts.get(idx).filter(|e| e.lblk as u64 <= lb).copied();
            let blk_start = lb * bs;
            let (pblk, run, fresh) = match covering {
                Some(e) if !e.unwritten => {
                    let k = lb - e.lblk as u64;
                    (e.pblk + k, e.len as u64 - k, false)
                }
                Some(e) => {
                    // Split the unwritten extent around this one block.
                    let k = (lb - e.lblk as u64) as u32;
                    let mut parts = Vec::new();
                    if k > 0 {
                        parts.push(Ext { len: k, ..e });
                    }
                    parts.push(Ext {
                        lblk: lb as u32,
                        len: 1,
                        pblk: e.pblk + k as u64,
                        unwritten: false,
                    });
                    if k + 1 < e.len {
                        parts.push(Ext {
                            lblk: lb as u32 + 1,
                            len: e.len - k - 1,
                            pblk: e.pblk + k as u64 + 1,
                            unwritten: true,
                        });
                    }
                    exts.splice(idx..idx + 1, parts);
                    (e.pblk + k as u64, 1, true)
                }
                None => {
                    let next = exts.get(idx).map(|e| e.lblk as u64).unwrap_or(u64::MAX);
                    let want =
                        (end.div_ceil(bs).min(next) - lb).min(EXT_INIT_MAX_LEN as u64) as u32;
                    let goal = if idx > 0 {
                        let p = exts[idx - 1];
                        p.pblk + (lb - p.lblk as u64)
                    } else {
                        self.group_first((ino - 1) / self.sb.inodes_per_group)
                    };
                    match self.alloc_blocks(&mut w, goal, want) {
                        Ok((p, n)) => {
                            exts.insert(
                                idx,
                                Ext {
                                    lblk: lb as u32,
                                    len: n,
                                    pblk: p,
                                    unwritten: false,
                                },
                            );
                            (p, n as u64, true)
                        }
                        Err(e) => {
                            err = Some(e);
                            break;
                        }
                    }
                }
            };
            let run_end = ((lb + run) * bs).min(end);
            let from = pos.max(blk_start);
            let chunk = &data[(from - pos) as usize..(run_end - pos) as usize];
            if fresh {
                // Zeros where the new blocks are not written: before the data in the first,
                // after it in the last.
                let head = from - blk_start;
                let tail_end = run_end.div_ceil(bs) * bs;
                if head > 0 {
                    self.write_data(pblk * bs, &vec![0u8; head as usize])?;
                }
                if tail_end > run_end {
                    let at = pblk * bs + (run_end - blk_start);
                    self.write_data(at, &vec![0u8; (tail_end - run_end) as usize])?;
                }
            }
            self.write_data(pblk * bs + (from - blk_start), chunk)?;
            done = (run_end - pos) as usize;
            lb += run;
        }
        if done == 0 {
            // Nothing was written, but the unwritten-extent splits may need undoing: keep
            // the tree as it was.
            return Err(err.unwrap_or(Errno::ENOSPC));
        }
        self.set_extents(&mut w, &mut ib, &exts, tree)?;
        let new_end = pos + done as u64;
        if new_end > ib.size() {
            ib.set_size(new_end);
        }
        ib.touch_cm();
        self.store_inode(&mut ib)?;
        Ok(done)
    }

    /// Sets the size of regular file `ino` (`ext4_setattr` → `ext4_truncate`): a smaller
    /// size frees the blocks past it and zeros the rest of its last block; a larger one is
    /// a hole.
    pub fn truncate(&self, ino: u32, size: u64) -> SysResult<()> {
        let bs = self.bs();
        if size.div_ceil(bs) > u32::MAX as u64 {
            return Err(Errno::EFBIG);
        }
        let mut w = self.wlock()?;
        let mut ib = self.inode_buf(ino)?;
        if !ib.has_flag(iflags::EXTENTS) {
            return Err(Errno::EROFS);
        }
        if size < ib.size() {
            self.truncate_blocks(&mut w, &mut ib, size.div_ceil(bs))?;
            if size % bs != 0 {
                let raw = self.store_inode(&mut ib)?;
                if let crate::fs::Mapping::Mapped {
                    pblk,
                    unwritten: false,
                    ..
                } = self.map(&raw, (size / bs) as u32)?
                {
                    let k = size % bs;
                    self.write_data(pblk * bs + k, &vec![0u8; (bs - k) as usize])?;
                }
            }
        }
        ib.set_size(size);
        ib.touch_cm();
        self.store_inode(&mut ib)?;
        Ok(())
    }

    /// `ext4_fallocate`: mode 0 and `FALLOC_FL_KEEP_SIZE` (1) give the holes in the range
    /// unwritten extents (read as zeros), mode 0 then grows the size; `FALLOC_FL_PUNCH_HOLE
    /// | FALLOC_FL_KEEP_SIZE` (3) frees the whole blocks in the range and zeros the partial
    /// ones. Other modes are `EOPNOTSUPP`. A full disk keeps what was allocated (`ENOSPC`).
    pub fn fallocate(&self, ino: u32, mode: u32, pos: u64, len: u64) -> SysResult<()> {
        let bs = self.bs();
        let end = pos.checked_add(len).ok_or(Errno::EFBIG)?;
        if end.div_ceil(bs) > u32::MAX as u64 {
            return Err(Errno::EFBIG);
        }
        let mut w = self.wlock()?;
        let mut ib = self.inode_buf(ino)?;
        if !ib.has_flag(iflags::EXTENTS) {
            return Err(Errno::EOPNOTSUPP);
        }
        let (mut exts, tree) = self.extents(&ib)?;
        let mut err = None;
        match mode {
            0 | 1 => {
                let mut lb = pos / bs;
                let last = end.div_ceil(bs);
                while lb < last {
                    let idx = exts.partition_point(|e| (e.lblk as u64 + e.len as u64) <= lb);
                    if let Some(e) = exts.get(idx).filter(|e| e.lblk as u64 <= lb) {
                        lb = e.lblk as u64 + e.len as u64;
                        continue;
                    }
                    let next = exts.get(idx).map(|e| e.lblk as u64).unwrap_or(u64::MAX);
                    let want = (last.min(next) - lb).min(EXT_UNWRITTEN_MAX_LEN as u64) as u32;
                    let goal = if idx > 0 {
                        let p = exts[idx - 1];
                        p.pblk + (lb - p.lblk as u64)
                    } else {
                        self.group_first((ino - 1) / self.sb.inodes_per_group)
                    };
                    match self.alloc_blocks(&mut w, goal, want) {
                        Ok((p, n)) => {
                            exts.insert(
                                idx,
                                Ext {
                                    lblk: lb as u32,
                                    len: n,
                                    pblk: p,
                                    unwritten: true,
                                },
                            );
                            lb += n as u64;
                        }
                        Err(e) => {
                            err = Some(e);
                            break;
                        }
                    }
                }
                if mode == 0 && err.is_none() && end > ib.size() {
                    ib.set_size(end);
                }
            }
            3 => {
                let (lo, hi) = (pos.div_ceil(bs), end / bs);
                let mut keep = Vec::with_capacity(exts.len() + 1);
                for e in exts.drain(..) {
                    let (s, t) = (e.lblk as u64, e.lblk as u64 + e.len as u64);
                    if t <= lo || s >= hi || lo >= hi {
                        keep.push(e);
                        continue;
                    }
                    let (a, b) = (s.max(lo), t.min(hi));
                    self.free_blocks(&mut w, e.pblk + (a - s), b - a)?;
                    if s < a {
                        keep.push(Ext {
                            len: (a - s) as u32,
                            ..e
                        });
                    }
                    if b < t {
                        keep.push(Ext {
                            lblk: b as u32,
                            len: (t - b) as u32,
                            pblk: e.pblk + (b - s),
                            unwritten: e.unwritten,
                        });
                    }
                }
                exts = keep;
                // The partial blocks at the edges: zeros where they are written.
                for (a, b) in [
                    (pos, end.min(pos.div_ceil(bs) * bs)),
                    ((end / bs * bs).max(pos), end),
                ] {
                    if a >= b {
                        continue;
                    }
                    let lb = a / bs;
                    if let Some(e) = exts.iter().find(|e| {
                        !e.unwritten && e.lblk as u64 <= lb && lb < e.lblk as u64 + e.len as u64
                    }) {
                        let p = e.pblk + (lb - e.lblk as u64);
                        self.write_data(p * bs + a % bs, &vec![0u8; (b - a) as usize])?;
                    }
                }
            }
            _ => return Err(Errno::EOPNOTSUPP),
        }
        self.set_extents(&mut w, &mut ib, &exts, tree)?;
        ib.set_time(Time::C, now());
        self.store_inode(&mut ib)?;
        err.map_or(Ok(()), Err)
    }

    // ---- directories ----

    fn csum_tail(&self) -> usize {
        if self.sb.metadata_csum() { 12 } else { 0 }
    }

    /// Stores a directory leaf block with its tail (`ext4_dirblock_csum_set`).
    fn write_dir_block(&self, dir: &InodeBuf, pblk: u64, mut b: Vec<u8>) -> SysResult<()> {
        if self.sb.metadata_csum() {
            let t = b.len() - 12;
            put32(&mut b, t, 0);
            put16(&mut b, t + 4, 12);
            b[t + 6] = 0;
            b[t + 7] = 0xDE;
            let c = crate::crc::crc32c(self.inode_seed(dir), &b[..t]);
            put32(&mut b, t + 8, c);
        }
        self.write_meta(pblk, b)
    }

    /// The directory's blocks: (logical, physical).
    fn dir_blocks(&self, dir: &InodeBuf) -> SysResult<Vec<(u32, u64)>> {
        let (exts, _) = self.extents(dir)?;
        let n = dir.size().div_ceil(self.bs());
        let mut out = Vec::new();
        for e in exts.iter().filter(|e| !e.unwritten) {
            for k in 0..e.len {
                if ((e.lblk + k) as u64) < n {
                    out.push((e.lblk + k, e.pblk + k as u64));
                }
            }
        }
        Ok(out)
    }

    /// An htree directory becomes a plain linear one (its index blocks empty leaves, the
    /// root's `..` spanning the block, `EXT4_INDEX_FL` cleared): every entry stays in the
    /// leaf that holds it, which is all a linear directory needs.
    fn drop_index(&self, dir: &mut InodeBuf) -> SysResult<()> {
        let bs = self.bs() as usize;
        let body = bs - self.csum_tail();
        for (lblk, pblk) in self.dir_blocks(dir)? {
            let b = self.block(dir.ino, pblk)?;
            if lblk == 0 {
                let mut nb = vec![0u8; bs];
                nb[..24].copy_from_slice(&b[..24]);
                put16(&mut nb, 4, 12);
                put16(&mut nb, 16, (body - 12) as u16);
                self.write_dir_block(dir, pblk, nb)?;
            } else if le32(&b, 0) == 0 && le16(&b, 4) as usize == bs {
                let mut nb = vec![0u8; bs];
                put16(&mut nb, 4, body as u16);
                self.write_dir_block(dir, pblk, nb)?;
            }
        }
        dir.set_flags(dir.flags() & !iflags::INDEX);
        Ok(())
    }

    /// Finds `name` in `dir`: (block, offset of the entry, offset of the one before).
    fn find_entry(&self, dir: &InodeBuf, name: &[u8]) -> SysResult<Option<Found>> {
        let body = self.bs() as usize - self.csum_tail();
        for (lblk, pblk) in self.dir_blocks(dir)? {
            let b = self.block(dir.ino, pblk)?;
            if dir.has_flag(iflags::INDEX) && lblk == 0 {
                // `.` and `..` only; the index is not entries.
                for (o, prev) in [(0usize, None), (12usize, Some(0usize))] {
                    let nl = b[o + 6] as usize;
                    if &b[o + 8..o + 8 + nl] == name {
                        return Ok(Some((pblk, o, prev, le32(&b, o))));
                    }
                }
                continue;
            }
            let mut o = 0usize;
            let mut prev = None;
            while o + 8 <= body {
                let rl = le16(&b, o + 4) as usize;
                let nl = b[o + 6] as usize;
                if rl < 12 || rl % 4 != 0 || o + rl > body || 8 + nl > rl {
                    // An index node or a damaged block: the read side reports damage.
                    break;
                }
                let ino = le32(&b, o);
                if ino != 0 && &b[o + 8..o + 8 + nl] == name {
                    return Ok(Some((pblk, o, prev, ino)));
                }
                prev = Some(o);
                o += rl;
            }
        }
        Ok(None)
    }

    /// Adds the entry `name` → `ino` (`ext4_add_entry` for a linear directory): into the
    /// first block with room, else into a new block at the end.
    fn add_entry(
        &self,
        w: &mut WState,
        dir: &mut InodeBuf,
        name: &[u8],
        ino: u32,
        ft: u8,
    ) -> SysResult<()> {
        if name.is_empty() || name.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        let bs = self.bs() as usize;
        let body = bs - self.csum_tail();
        let need = (8 + name.len() + 3) & !3;
        let mut blocks = self.dir_blocks(dir)?;
        if dir.has_flag(iflags::INDEX) {
            // The leaf the index names for this hash, if it has room (`ext4_dx_add_entry`
            // without a split); else the directory becomes linear.
            let raw = RawInode::parse(&self.sb, dir.ino, &dir.b).map_err(|_| Errno::EUCLEAN)?;
            let leaf = self.dx_leaf(&raw, name)?;
            let found = leaf.and_then(|l| blocks.iter().find(|b| b.0 == l && l != 0).copied());
            match found {
                Some(b) if self.sb.compat & disk::compat::DIR_INDEX != 0 => blocks = vec![b],
                _ => {
                    self.drop_index(dir)?;
                }
            }
        }
        let indexed = dir.has_flag(iflags::INDEX);
        let ft = if self.sb.has(incompat::FILETYPE) {
            ft
        } else {
            0
        };
        let put = |b: &mut [u8], o: usize, rl: usize| {
            put32(b, o, ino);
            put16(b, o + 4, rl as u16);
            b[o + 6] = name.len() as u8;
            b[o + 7] = ft;
            b[o + 8..o + 8 + name.len()].copy_from_slice(name);
        };
        for (_, pblk) in blocks {
            let b = self.block(dir.ino, pblk)?;
            let mut o = 0usize;
            while o + 8 <= body {
                let rl = le16(&b, o + 4) as usize;
                let nl = b[o + 6] as usize;
                if rl < 12 || rl % 4 != 0 || o + rl > body || 8 + nl > rl {
                    break;
                }
                let used = if le32(&b, o) != 0 {
                    (8 + nl + 3) & !3
                } else {
                    0
                };
                if rl - used >= need {
                    let mut nb = (*b).clone();
                    if used == 0 {
                        put(&mut nb, o, rl);
                    } else {
                        put16(&mut nb, o + 4, used as u16);
                        put(&mut nb, o + used, rl - used);
                    }
                    self.write_dir_block(dir, pblk, nb)?;
                    dir.touch_cm();
                    return Ok(());
                }
                o += rl;
            }
        }
        if indexed {
            // The leaf is full: split it (one index level), else the directory becomes
            // linear and the entry goes wherever there is room.
            if self.dx_split_insert(w, dir, name, ino, ft)? {
                dir.touch_cm();
                return Ok(());
            }
            self.drop_index(dir)?;
            return self.add_entry(w, dir, name, ino, ft);
        }
        // A new block at the end.
        let lblk = dir.size().div_ceil(bs as u64);
        let (mut exts, tree) = self.extents(dir)?;
        let goal = exts.last().map(|e| e.pblk + e.len as u64).unwrap_or(0);
        let (pblk, _) = self.alloc_blocks(w, goal, 1)?;
        let mut nb = vec![0u8; bs];
        put(&mut nb, 0, body);
        self.write_dir_block(dir, pblk, nb)?;
        exts.push(Ext {
            lblk: lblk as u32,
            len: 1,
            pblk,
            unwritten: false,
        });
        self.set_extents(w, dir, &exts, tree)?;
        dir.set_size((lblk + 1) * bs as u64);
        dir.touch_cm();
        Ok(())
    }

    /// `do_split` for an htree of one index level: the full leaf `name` hashes to gives its
    /// upper half (by hash, never splitting one hash value) to a new block at the end of the
    /// directory, the root gets an index entry for it, and the new entry goes into the half
    /// that covers its hash. `false` (nothing changed) where this cannot be done: a deeper
    /// tree, a full root, an unknown hash, a leaf of one hash value.
    fn dx_split_insert(
        &self,
        w: &mut WState,
        dir: &mut InodeBuf,
        name: &[u8],
        ino: u32,
        ft: u8,
    ) -> SysResult<bool> {
        let bs = self.bs() as usize;
        let body = bs - self.csum_tail();
        let blocks = self.dir_blocks(dir)?;
        let Some(&(_, root_pblk)) = blocks.iter().find(|b| b.0 == 0) else {
            return Ok(false);
        };
        let root = self.block(dir.ino, root_pblk)?;
        let (mut version, info_len, levels) = (root[28], root[29] as usize, root[30]);
        if levels != 0 || info_len != 8 || le32(&root, 24) != 0 {
            return Ok(false);
        }
        if version <= crate::hash::TEA && self.sb.flags & 0x2 != 0 {
            version += 3;
        }
        let seed = self.sb.hash_seed;
        let hash_of = |n: &[u8]| crate::hash::dirhash(n, version, &seed);
        let co = 32usize;
        let (limit, count) = (le16(&root, co) as usize, le16(&root, co + 2) as usize);
        let tail = if self.sb.metadata_csum() { 8 } else { 0 };
        if count == 0 || count >= limit || co + limit * 8 + tail > bs {
            return Ok(false);
        }
        let Some(hash) = hash_of(name) else {
            return Ok(false);
        };
        let hash_at = |i: usize| if i == 0 { 0 } else { le32(&root, co + i * 8) };
        let mut i = 0;
        while i + 1 < count && hash_at(i + 1) <= hash {
            i += 1;
        }
        let leaf_l = le32(&root, co + i * 8 + 4) & 0x0FFF_FFFF;
        let Some(&(_, leaf_p)) = blocks.iter().find(|b| b.0 == leaf_l && leaf_l != 0) else {
            return Ok(false);
        };
        // The leaf's entries and the new one, by hash.
        let leaf = self.block(dir.ino, leaf_p)?;
        let mut ents: Vec<(u32, u32, u8, Vec<u8>)> = Vec::new();
        let mut o = 0usize;
        while o + 8 <= body {
            let rl = le16(&leaf, o + 4) as usize;
            let nl = leaf[o + 6] as usize;
            if rl < 12 || rl % 4 != 0 || o + rl > body || 8 + nl > rl {
                return Ok(false);
            }
            if le32(&leaf, o) != 0 {
                let n = leaf[o + 8..o + 8 + nl].to_vec();
                let Some(h) = hash_of(&n) else {
                    return Ok(false);
                };
                ents.push((h, le32(&leaf, o), leaf[o + 7], n));
            }
            o += rl;
        }
        ents.push((hash, ino, ft, name.to_vec()));
        ents.sort_by_key(|e| e.0);
        let len = ents.len();
        let mut m = len / 2;
        while m < len && ents[m].0 == ents[m - 1].0 {
            m += 1;
        }
        if m == len {
            m = len / 2;
            while m > 0 && ents[m].0 == ents[m - 1].0 {
                m -= 1;
            }
        }
        if m == 0 || m == len {
            return Ok(false);
        }
        let pack = |es: &[(u32, u32, u8, Vec<u8>)]| -> Option<Vec<u8>> {
            let mut b = vec![0u8; bs];
            let mut o = 0usize;
            for (k, (_, ino, ft, n)) in es.iter().enumerate() {
                let need = (8 + n.len() + 3) & !3;
                let rl = if k + 1 == es.len() { body - o } else { need };
                if o + need > body {
                    return None;
                }
                put32(&mut b, o, *ino);
                put16(&mut b, o + 4, rl as u16);
                b[o + 6] = n.len() as u8;
                b[o + 7] = *ft;
                b[o + 8..o + 8 + n.len()].copy_from_slice(n);
                o += rl;
            }
            Some(b)
        };
        let (Some(lo), Some(hi)) = (pack(&ents[..m]), pack(&ents[m..])) else {
            return Ok(false);
        };
        let split = ents[m].0;
        // The new leaf at the end of the directory.
        let new_l = dir.size().div_ceil(bs as u64);
        if new_l >= 0x0FFF_FFFF {
            return Ok(false);
        }
        let (mut exts, tree) = self.extents(dir)?;
        let goal = exts.last().map(|e| e.pblk + e.len as u64).unwrap_or(0);
        let (new_p, _) = self.alloc_blocks(w, goal, 1)?;
        self.write_dir_block(dir, new_p, hi)?;
        exts.push(Ext {
            lblk: new_l as u32,
            len: 1,
            pblk: new_p,
            unwritten: false,
        });
        self.set_extents(w, dir, &exts, tree)?;
        dir.set_size((new_l + 1) * bs as u64);
        self.write_dir_block(dir, leaf_p, lo)?;
        // The index entry after the split leaf's.
        let mut nr = (*root).clone();
        let at = co + (i + 1) * 8;
        nr.copy_within(at..co + count * 8, at + 8);
        put32(&mut nr, at, split);
        put32(&mut nr, at + 4, new_l as u32);
        put16(&mut nr, co + 2, (count + 1) as u16);
        if self.sb.metadata_csum() {
            // ext4_dx_csum: the block up to the last entry, the tail's reserved word, a
            // zero checksum.
            let t = co + limit * 8;
            let mut c = crate::crc::crc32c(self.inode_seed(dir), &nr[..co + (count + 1) * 8]);
            c = crate::crc::crc32c(c, &nr[t..t + 4]);
            c = crate::crc::crc32c(c, &[0; 4]);
            put32(&mut nr, t + 4, c);
        }
        self.write_meta(root_pblk, nr)?;
        Ok(true)
    }

    /// Removes the entry `name` (`ext4_delete_entry`): the one before takes its space, or
    /// it becomes an empty entry when it is first in its block. Gives its inode number.
    fn remove_entry(&self, dir: &mut InodeBuf, name: &[u8]) -> SysResult<u32> {
        let (pblk, o, prev, ino) = self.find_entry(dir, name)?.ok_or(Errno::ENOENT)?;
        let mut nb = (*self.block(dir.ino, pblk)?).clone();
        match prev {
            Some(p) => {
                let rl = le16(&nb, p + 4) + le16(&nb, o + 4);
                put16(&mut nb, p + 4, rl);
            }
            None => put32(&mut nb, o, 0),
        }
        self.write_dir_block(dir, pblk, nb)?;
        dir.touch_cm();
        Ok(ino)
    }

    /// Points the existing entry `name` at another inode (rename over a name).
    fn retarget_entry(&self, dir: &mut InodeBuf, name: &[u8], ino: u32, ft: u8) -> SysResult<()> {
        let (pblk, o, _, _) = self.find_entry(dir, name)?.ok_or(Errno::ENOENT)?;
        let mut nb = (*self.block(dir.ino, pblk)?).clone();
        put32(&mut nb, o, ino);
        if self.sb.has(incompat::FILETYPE) {
            nb[o + 7] = ft;
        }
        self.write_dir_block(dir, pblk, nb)?;
        dir.touch_cm();
        Ok(())
    }

    fn dir_is_empty(&self, d: &InodeBuf) -> SysResult<bool> {
        let raw = RawInode::parse(&self.sb, d.ino, &d.b).map_err(|_| Errno::EUCLEAN)?;
        Ok(self
            .dir_entries(&raw)?
            .iter()
            .all(|e| e.name == b"." || e.name == b".."))
    }

    fn inc_links(&self, ib: &mut InodeBuf) {
        let n = ib.links();
        // dir_nlink: a directory past EXT4_LINK_MAX counts 1 ("many").
        if ib.is_dir() && (n >= LINK_MAX - 1 || n == 1) {
            ib.set_links(1);
        } else {
            ib.set_links(n + 1);
        }
    }

    fn dec_links(&self, ib: &mut InodeBuf) {
        let n = ib.links();
        if !(ib.is_dir() && n == 1) {
            ib.set_links(n.saturating_sub(1));
        }
    }

    /// Creates `name` in `dir` (`ext4_create`, `ext4_mknod`, `ext4_mkdir`,
    /// `ext4_symlink`): gives the new inode's number.
    pub fn create(
        &self,
        dir: u32,
        name: &[u8],
        mode: u32,
        uid: u32,
        gid: u32,
        rdev: (u32, u32),
        symlink: Option<&[u8]>,
    ) -> SysResult<u32> {
        let mut w = self.wlock()?;
        let mut d = self.inode_buf(dir)?;
        if !d.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if d.links() == 0 {
            return Err(Errno::ENOENT);
        }
        if self.find_entry(&d, name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        if name.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        let is_dir = mode & 0o170000 == 0o040000;
        if is_dir && d.links() >= LINK_MAX && self.sb.ro_compat & disk::ro_compat::DIR_NLINK == 0 {
            return Err(Errno::EMLINK);
        }
        let mut ib = self.new_inode(&mut w, dir, mode, uid, gid)?;
        let bs = self.bs() as usize;
        let ino = ib.ino;
        match mode & 0o170000 {
            0o040000 => {
                ib.set_links(2);
                let (pblk, _) = self.alloc_blocks(
                    &mut w,
                    self.group_first((ino - 1) / self.sb.inodes_per_group),
                    1,
                )?;
                let body = bs - self.csum_tail();
                let mut nb = vec![0u8; bs];
                let ft = if self.sb.has(incompat::FILETYPE) {
                    2
                } else {
                    0
                };
                put32(&mut nb, 0, ino);
                put16(&mut nb, 4, 12);
                nb[6] = 1;
                nb[7] = ft;
                nb[8] = b'.';
                put32(&mut nb, 12, dir);
                put16(&mut nb, 16, (body - 12) as u16);
                nb[18] = 2;
                nb[19] = ft;
                nb[20] = b'.';
                nb[21] = b'.';
                self.write_dir_block(&ib, pblk, nb)?;
                self.set_extents(
                    &mut w,
                    &mut ib,
                    &[Ext {
                        lblk: 0,
                        len: 1,
                        pblk,
                        unwritten: false,
                    }],
                    Vec::new(),
                )?;
                ib.set_size(bs as u64);
            }
            0o120000 => {
                let t = symlink.unwrap_or_default();
                if t.len() < 60 {
                    // A fast symlink: the target in i_block, no extents (`ext4_symlink`).
                    ib.set_flags(0);
                    ib.b[off::BLOCK..off::BLOCK + 60].fill(0);
                    ib.b[off::BLOCK..off::BLOCK + t.len()].copy_from_slice(t);
                } else {
                    let (pblk, _) = self.alloc_blocks(
                        &mut w,
                        self.group_first((ino - 1) / self.sb.inodes_per_group),
                        1,
                    )?;
                    let mut nb = vec![0u8; bs];
                    nb[..t.len()].copy_from_slice(t);
                    self.write_data(pblk * bs as u64, &nb)?;
                    self.set_extents(
                        &mut w,
                        &mut ib,
                        &[Ext {
                            lblk: 0,
                            len: 1,
                            pblk,
                            unwritten: false,
                        }],
                        Vec::new(),
                    )?;
                }
                ib.set_size(t.len() as u64);
            }
            0o020000 | 0o060000 => {
                // ext4_mknod → init_special_inode; `ext4_do_update_inode` stores the old
                // 16-bit encoding in i_block[0] when it fits, else the new one in i_block[1].
                let (ma, mi) = rdev;
                if ma < 256 && mi < 256 {
                    put32(&mut ib.b, off::BLOCK, ma << 8 | mi);
                } else {
                    put32(
                        &mut ib.b,
                        off::BLOCK + 4,
                        (mi & 0xff) | (ma << 8) | ((mi & !0xff) << 12),
                    );
                }
            }
            _ => {}
        }
        self.store_inode(&mut ib)?;
        self.add_entry(&mut w, &mut d, name, ino, file_type(mode))?;
        if is_dir {
            self.inc_links(&mut d);
        }
        self.store_inode(&mut d)?;
        Ok(ino)
    }

    /// A new hard link `name` in `dir` to `ino` (`ext4_link`).
    pub fn link(&self, dir: u32, name: &[u8], ino: u32) -> SysResult<()> {
        let mut w = self.wlock()?;
        let mut d = self.inode_buf(dir)?;
        let mut ib = self.inode_buf(ino)?;
        if ib.is_dir() {
            return Err(Errno::EPERM);
        }
        if ib.links() >= LINK_MAX {
            return Err(Errno::EMLINK);
        }
        if ib.links() == 0 {
            return Err(Errno::ENOENT);
        }
        if self.find_entry(&d, name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        self.add_entry(&mut w, &mut d, name, ino, file_type(ib.mode()))?;
        self.store_inode(&mut d)?;
        ib.set_links(ib.links() + 1);
        ib.set_time(Time::C, now());
        self.store_inode(&mut ib)?;
        Ok(())
    }

    /// Removes `name` from `dir` (`ext4_unlink`, `ext4_rmdir` with `rmdir`). Gives the
    /// inode and whether its last link went (the caller frees it, now or at last close).
    pub fn unlink(&self, dir: u32, name: &[u8], rmdir: bool) -> SysResult<(u32, bool)> {
        if name == b"." || name == b".." {
            return Err(if rmdir { Errno::EINVAL } else { Errno::EISDIR });
        }
        let mut w = self.wlock()?;
        let mut d = self.inode_buf(dir)?;
        let (_, _, _, ino) = self.find_entry(&d, name)?.ok_or(Errno::ENOENT)?;
        let mut ib = self.inode_buf(ino)?;
        if rmdir {
            if !ib.is_dir() {
                return Err(Errno::ENOTDIR);
            }
            if !self.dir_is_empty(&ib)? {
                return Err(Errno::ENOTEMPTY);
            }
        } else if ib.is_dir() {
            return Err(Errno::EISDIR);
        }
        self.remove_entry(&mut d, name)?;
        if rmdir {
            self.dec_links(&mut d);
            ib.set_links(0);
        } else {
            self.dec_links(&mut ib);
        }
        self.store_inode(&mut d)?;
        ib.set_time(Time::C, now());
        self.store_inode(&mut ib)?;
        if ib.links() == 0 {
            // The inode goes on the orphan list in the same transaction that drops its
            // last link (`__ext4_unlink`, `ext4_rmdir`: `ext4_orphan_add`), so a crash
            // before it is freed leaves it for orphan cleanup, not for e2fsck.
            self.orphan_add_locked(&mut w, ino)?;
        }
        Ok((ino, ib.links() == 0))
    }

    /// Frees inode `ino` if it has no links left and is still in use (the last close of an
    /// unlinked file), first taking it off the orphan list.
    pub fn evict_if_unlinked(&self, ino: u32) -> SysResult<()> {
        let mut w = self.wlock()?;
        let ib = self.inode_buf(ino)?;
        if ib.links() == 0 && self.inode_in_use(&w, ino)? {
            self.orphan_del(&mut w, ino)?;
            self.evict(&mut w, ino)?;
        }
        Ok(())
    }

    fn inode_in_use(&self, w: &WState, ino: u32) -> SysResult<bool> {
        let ipg = self.sb.inodes_per_group;
        let i = ((ino - 1) % ipg) as usize;
        let bm = self.inode_bitmap(w, (ino - 1) / ipg)?;
        Ok(bm[i / 8] & (1 << (i % 8)) != 0)
    }

    fn last_orphan(w: &WState) -> u32 {
        le32(&w.sb_raw, 0xE8)
    }

    /// Puts an inode whose last link went while it is open on the orphan list
    /// (`ext4_orphan_add`: `s_last_orphan` heads a chain through `i_dtime`), so that a
    /// crash before the last close leaves it for the next mount to free.
    pub fn orphan_add(&self, ino: u32) -> SysResult<()> {
        let mut w = self.wlock()?;
        self.orphan_add_locked(&mut w, ino)
    }

    fn orphan_add_locked(&self, w: &mut WState, ino: u32) -> SysResult<()> {
        if self.orphan_chain(w)?.contains(&ino) {
            return Ok(());
        }
        let mut ib = self.inode_buf(ino)?;
        put32(&mut ib.b, off::DTIME, Self::last_orphan(w));
        self.store_inode(&mut ib)?;
        put32(&mut w.sb_raw, 0xE8, ino);
        self.write_super(w)
    }

    /// The orphan list, head first; a number out of range or a loop ends it with a line.
    fn orphan_chain(&self, w: &WState) -> SysResult<Vec<u32>> {
        let mut out = Vec::new();
        let mut ino = Self::last_orphan(w);
        while ino != 0 {
            if ino > self.sb.inodes_count || out.contains(&ino) || out.len() > 100_000 {
                return Err(self.corrupt(ino, format_args!("bad orphan list")));
            }
            out.push(ino);
            ino = le32(&self.inode_buf(ino)?.b, off::DTIME);
        }
        Ok(out)
    }

    /// Takes `ino` off the orphan list (`ext4_orphan_del`), if it is there.
    fn orphan_del(&self, w: &mut WState, ino: u32) -> SysResult<()> {
        let chain = self.orphan_chain(w)?;
        let Some(i) = chain.iter().position(|&x| x == ino) else {
            return Ok(());
        };
        let next = chain.get(i + 1).copied().unwrap_or(0);
        if i == 0 {
            put32(&mut w.sb_raw, 0xE8, next);
            self.write_super(w)?;
        } else {
            let mut p = self.inode_buf(chain[i - 1])?;
            put32(&mut p.b, off::DTIME, next);
            self.store_inode(&mut p)?;
        }
        let mut ib = self.inode_buf(ino)?;
        put32(&mut ib.b, off::DTIME, 0);
        self.store_inode(&mut ib)?;
        Ok(())
    }

    /// At a read-write mount: frees the inodes a crash left on the orphan list
    /// (`ext4_orphan_cleanup`) and empties it. Gives how many were freed.
    pub fn orphan_cleanup(&self) -> SysResult<usize> {
        let mut w = self.wlock()?;
        let chain = match self.orphan_chain(&w) {
            Ok(c) => c,
            Err(e) => {
                // A damaged list is dropped (what it named stays for e2fsck).
                put32(&mut w.sb_raw, 0xE8, 0);
                self.write_super(&mut w)?;
                return Err(e);
            }
        };
        put32(&mut w.sb_raw, 0xE8, 0);
        self.write_super(&mut w)?;
        let mut n = 0;
        for ino in chain {
            let mut ib = self.inode_buf(ino)?;
            put32(&mut ib.b, off::DTIME, 0);
            self.store_inode(&mut ib)?;
            if ib.links() == 0 && self.inode_in_use(&w, ino)? {
                self.evict(&mut w, ino)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Whether `anc` is `ino` or one of its ancestors (walking `..`).
    fn is_ancestor(&self, anc: u32, mut ino: u32) -> SysResult<bool> {
        for _ in 0..4096 {
            if ino == anc {
                return Ok(true);
            }
            if ino == disk::ROOT_INO {
                return Ok(false);
            }
            let raw = self.inode(ino)?;
            let Some(p) = self.lookup(&raw, b"..")? else {
                return Ok(false);
            };
            ino = p;
        }
        Err(self.corrupt(ino, format_args!("directory loop")))
    }

    /// `ext4_rename`: moves `old` in `odir` to `new` in `ndir`, over an existing name if
    /// allowed; `RENAME_NOREPLACE` (1) and `RENAME_EXCHANGE` (2). Gives an inode whose
    /// last link went, for the caller to free.
    pub fn rename(
        &self,
        odir: u32,
        old: &[u8],
        ndir: u32,
        new: &[u8],
        flags: u32,
    ) -> SysResult<Option<u32>> {
        const NOREPLACE: u32 = 1;
        const EXCHANGE: u32 = 2;
        if flags & !(NOREPLACE | EXCHANGE) != 0 || flags == NOREPLACE | EXCHANGE {
            return Err(Errno::EINVAL);
        }
        if matches!(old, b"." | b"..") || matches!(new, b"." | b"..") {
            return Err(Errno::EBUSY);
        }
        let mut w = self.wlock()?;
        let od = self.inode_buf(odir)?;
        let (_, _, _, src) = self.find_entry(&od, old)?.ok_or(Errno::ENOENT)?;
        let nd = self.inode_buf(ndir)?;
        if !nd.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let dst = self.find_entry(&nd, new)?.map(|e| e.3);
        let s = self.inode_buf(src)?;
        if flags & EXCHANGE != 0 {
            let dst = dst.ok_or(Errno::ENOENT)?;
            let t = self.inode_buf(dst)?;
            if s.is_dir() && self.is_ancestor(src, ndir)?
                || t.is_dir() && self.is_ancestor(dst, odir)?
            {
                return Err(Errno::EINVAL);
            }
            let mut od = od;
            self.retarget_entry(&mut od, old, dst, file_type(t.mode()))?;
            self.store_inode(&mut od)?;
            let mut nd = self.inode_buf(ndir)?;
            self.retarget_entry(&mut nd, new, src, file_type(s.mode()))?;
            self.store_inode(&mut nd)?;
            if odir != ndir {
                for (ino, parent, other) in [(src, ndir, odir), (dst, odir, ndir)] {
                    let mut x = self.inode_buf(ino)?;
                    if x.is_dir() {
                        self.set_dotdot(&mut w, &mut x, parent)?;
                        let mut p = self.inode_buf(parent)?;
                        self.inc_links(&mut p);
                        self.store_inode(&mut p)?;
                        let mut q = self.inode_buf(other)?;
                        self.dec_links(&mut q);
                        self.store_inode(&mut q)?;
                    }
                    x.set_time(Time::C, now());
                    self.store_inode(&mut x)?;
                }
            }
            return Ok(None);
        }
        if let Some(t) = dst {
            if flags & NOREPLACE != 0 {
                return Err(Errno::EEXIST);
            }
            if t == src {
                return Ok(None);
            }
            let ti = self.inode_buf(t)?;
            match (s.is_dir(), ti.is_dir()) {
                (true, false) => return Err(Errno::ENOTDIR),
                (false, true) => return Err(Errno::EISDIR),
                (true, true) if !self.dir_is_empty(&ti)? => return Err(Errno::ENOTEMPTY),
                _ => {}
            }
        }
        if s.is_dir() && self.is_ancestor(src, ndir)? {
            return Err(Errno::EINVAL);
        }
        // The new name first (so the inode is never without a name), then the old one goes.
        let mut nd = self.inode_buf(ndir)?;
        let mut gone = None;
        if let Some(t) = dst {
            self.retarget_entry(&mut nd, new, src, file_type(s.mode()))?;
            let mut ti = self.inode_buf(t)?;
            if ti.is_dir() {
                ti.set_links(0);
                self.dec_links(&mut nd);
            } else {
                self.dec_links(&mut ti);
            }
            ti.set_time(Time::C, now());
            self.store_inode(&mut ti)?;
            if ti.links() == 0 {
                gone = Some(t);
                // In the same transaction as the last link (ext4_rename: ext4_orphan_add).
                self.orphan_add_locked(&mut w, t)?;
            }
        } else {
            self.add_entry(&mut w, &mut nd, new, src, file_type(s.mode()))?;
        }
        self.store_inode(&mut nd)?;
        let mut od = self.inode_buf(odir)?;
        self.remove_entry(&mut od, old)?;
        self.store_inode(&mut od)?;
        let mut s = self.inode_buf(src)?;
        if s.is_dir() && odir != ndir {
            self.set_dotdot(&mut w, &mut s, ndir)?;
            let mut od = self.inode_buf(odir)?;
            self.dec_links(&mut od);
            self.store_inode(&mut od)?;
            let mut nd = self.inode_buf(ndir)?;
            self.inc_links(&mut nd);
            self.store_inode(&mut nd)?;
        }
        s.set_time(Time::C, now());
        self.store_inode(&mut s)?;
        Ok(gone)
    }

    fn set_dotdot(&self, _w: &mut WState, d: &mut InodeBuf, parent: u32) -> SysResult<()> {
        if d.has_flag(iflags::INDEX) {
            self.drop_index(d)?;
        }
        let blocks = self.dir_blocks(d)?;
        let &(_, pblk) = blocks.first().ok_or(Errno::EUCLEAN)?;
        let mut nb = (*self.block(d.ino, pblk)?).clone();
        let rl = le16(&nb, 4) as usize;
        if rl < 12 || rl + 12 > nb.len() || nb[rl + 6] != 2 || &nb[rl + 8..rl + 10] != b".." {
            return Err(self.corrupt(d.ino, format_args!("directory has no '..'")));
        }
        put32(&mut nb, rl, parent);
        self.write_dir_block(d, pblk, nb)
    }

    /// `ext4_setattr` for mode, owner and times (the size goes through [`Ext4::truncate`]).
    pub fn set_attr(
        &self,
        ino: u32,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        atime: Option<(i64, i64)>,
        mtime: Option<(i64, i64)>,
    ) -> SysResult<()> {
        let _w = self.wlock()?;
        let mut ib = self.inode_buf(ino)?;
        if let Some(m) = mode {
            ib.set_mode((ib.mode() & 0o170000) | (m & 0o7777));
        }
        if let Some(u) = uid {
            ib.set_uid(u);
        }
        if let Some(g) = gid {
            ib.set_gid(g);
        }
        if let Some(t) = atime {
            ib.set_time(Time::A, t);
        }
        if let Some(t) = mtime {
            ib.set_time(Time::M, t);
        }
        ib.set_time(Time::C, now());
        self.store_inode(&mut ib)?;
        Ok(())
    }

    // ---- extended attributes ----

    /// Sets (`Some`) or removes (`None`) attribute `name` (`ext4_xattr_set`): all of the
    /// inode's attributes are stored again, in the inode body if they fit, else in one
    /// attribute block of this inode's own.
    pub fn set_xattr(
        &self,
        ino: u32,
        name: &[u8],
        value: Option<&[u8]>,
        flags: u32,
    ) -> SysResult<()> {
        const CREATE: u32 = 1;
        const REPLACE: u32 = 2;
        let (index, suffix) = xattr_index(name).ok_or(Errno::EOPNOTSUPP)?;
        if suffix.len() > 255 {
            return Err(Errno::ERANGE);
        }
        let mut w = self.wlock()?;
        let mut ib = self.inode_buf(ino)?;
        let raw = RawInode::parse(&self.sb, ino, &ib.b).map_err(|_| Errno::EUCLEAN)?;
        let mut inbody = self.ibody_xattrs(&raw)?;
        let mut all: Vec<Xattr> = inbody.drain(..).chain(self.block_xattrs(&raw)?).collect();
        let pos = all
            .iter()
            .position(|x| x.index == index && x.name == suffix);
        match (pos, value) {
            (Some(_), Some(_)) if flags & CREATE != 0 => return Err(Errno::EEXIST),
            (None, Some(_)) if flags & REPLACE != 0 => return Err(Errno::ENODATA),
            (None, None) => return Err(Errno::ENODATA),
            (Some(i), None) => {
                all.remove(i);
            }
            (Some(i), Some(v)) => all[i].value = v.to_vec(),
            (None, Some(v)) => all.push(Xattr {
                index,
                name: suffix.to_vec(),
                value: v.to_vec(),
            }),
        }
        // In the body what fits, in order; the rest in the block.
        let start = disk::GOOD_OLD_INODE_SIZE + ib.extra_isize();
        let room = ib.b.len().saturating_sub(start + 4);
        let mut body = Vec::new();
        let mut rest = Vec::new();
        let mut used = 4; // the closing zero word
        for x in all {
            let cost = entry_size(&x) + value_size(&x);
            if rest.is_empty() && used + cost <= room {
                used += cost;
                body.push(x);
            } else {
                rest.push(x);
            }
        }
        let bs = self.bs() as usize;
        let block_need = 32
            + 4
            + rest
                .iter()
                .map(|x| entry_size(x) + value_size(x))
                .sum::<usize>();
        if block_need > bs {
            return Err(Errno::ENOSPC);
        }
        if start + 4 <= ib.b.len() {
            let region = &mut ib.b[start..];
            region.fill(0);
            if !body.is_empty() {
                put32(region, 0, XATTR_MAGIC);
                pack_xattrs(&mut region[4..], &body, 0, true);
            }
        }
        let old = ib.file_acl();
        if rest.is_empty() {
            if old != 0 {
                self.release_xattr_block(&mut w, ino, old)?;
                ib.set_file_acl(0);
                ib.set_blocks512(ib.blocks512().saturating_sub(bs as u64 / 512));
            }
        } else {
            let pblk = if old != 0 && le32(&self.block(ino, old)?, 4) == 1 {
                old
            } else {
                if old != 0 {
                    self.release_xattr_block(&mut w, ino, old)?;
                } else {
                    ib.set_blocks512(ib.blocks512() + bs as u64 / 512);
                }
                let goal = self.group_first((ino - 1) / self.sb.inodes_per_group);
                self.alloc_blocks(&mut w, goal, 1)?.0
            };
            let mut b = vec![0u8; bs];
            put32(&mut b, 0, XATTR_MAGIC);
            put32(&mut b, 4, 1); // h_refcount
            put32(&mut b, 8, 1); // h_blocks
            let hash = pack_xattrs(&mut b[32..], &rest, 32, false);
            put32(&mut b, 0x0C, hash);
            if self.sb.metadata_csum() {
                let mut c = crate::crc::crc32c(self.sb.csum_seed, &pblk.to_le_bytes());
                c = crate::crc::crc32c(c, &b[..0x10]);
                c = crate::crc::crc32c(c, &[0; 4]);
                c = crate::crc::crc32c(c, &b[0x14..]);
                put32(&mut b, 0x10, c);
            }
            self.write_meta(pblk, b)?;
            ib.set_file_acl(pblk);
        }
        ib.set_time(Time::C, now());
        self.store_inode(&mut ib)?;
        Ok(())
    }

    /// Drops this inode's reference to attribute block `pblk` (`ext4_xattr_release_block`).
    fn release_xattr_block(&self, w: &mut WState, ino: u32, pblk: u64) -> SysResult<()> {
        let b = self.block(ino, pblk)?;
        let refs = le32(&b, 4);
        if refs > 1 {
            let mut nb = (*b).clone();
            put32(&mut nb, 4, refs - 1);
            if self.sb.metadata_csum() {
                let mut c = crate::crc::crc32c(self.sb.csum_seed, &pblk.to_le_bytes());
                c = crate::crc::crc32c(c, &nb[..0x10]);
                c = crate::crc::crc32c(c, &[0; 4]);
                c = crate::crc::crc32c(c, &nb[0x14..]);
                put32(&mut nb, 0x10, c);
            }
            return self.write_meta(pblk, nb);
        }
        self.free_blocks(w, pblk, 1)
    }
}

fn empty_root() -> [u8; 12] {
    let mut r = [0u8; 12];
    put16(&mut r, 0, EXT_MAGIC);
    put16(&mut r, 4, 4);
    r
}

fn ext_entry(e: &Ext) -> [u8; 12] {
    let mut b = [0u8; 12];
    put32(&mut b, 0, e.lblk);
    let len = if e.unwritten {
        e.len + EXT_INIT_MAX_LEN
    } else {
        e.len
    };
    put16(&mut b, 4, len as u16);
    put16(&mut b, 6, (e.pblk >> 32) as u16);
    put32(&mut b, 8, e.pblk as u32);
    b
}

/// `EXT4_XATTR_INDEX_*` and the name's suffix (fs/ext4/xattr.c `ext4_xattr_handler_map`).
fn xattr_index(name: &[u8]) -> Option<(u8, &[u8])> {
    for (p, i) in [(&b"user."[..], 1u8), (b"trusted.", 4), (b"security.", 6)] {
        if let Some(s) = name.strip_prefix(p) {
            return (!s.is_empty()).then_some((i, s));
        }
    }
    None
}

fn entry_size(x: &Xattr) -> usize {
    (16 + x.name.len() + 3) & !3
}

fn value_size(x: &Xattr) -> usize {
    (x.value.len() + 3) & !3
}

/// `ext4_xattr_hash_entry`: the name, then the value's 32-bit words.
fn xattr_hash(x: &Xattr) -> u32 {
    let mut h = 0u32;
    for &c in &x.name {
        h = (h << 5) ^ (h >> 27) ^ c as u32;
    }
    let mut v = x.value.clone();
    v.resize(value_size(x), 0);
    for w in v.chunks(4) {
        h = (h << 16) ^ (h >> 16) ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    }
    h
}

/// Lays out entries from the start of `region` and values from its end; value offsets are
/// from the first entry (in the inode) or from the block start (`base` = 32 there). Gives
/// the block hash (`ext4_xattr_rehash`).
fn pack_xattrs(region: &mut [u8], xs: &[Xattr], base: usize, _inbody: bool) -> u32 {
    let mut eo = 0usize;
    let mut vo = region.len();
    let mut bh = 0u32;
    for x in xs {
        vo -= value_size(x);
        region[vo..vo + x.value.len()].copy_from_slice(&x.value);
        region[eo] = x.name.len() as u8;
        region[eo + 1] = x.index;
        put16(
            region,
            eo + 2,
            if x.value.is_empty() {
                0
            } else {
                (vo + base) as u16
            },
        );
        put32(region, eo + 4, 0);
        put32(region, eo + 8, x.value.len() as u32);
        let h = xattr_hash(x);
        put32(region, eo + 12, h);
        region[eo + 16..eo + 16 + x.name.len()].copy_from_slice(&x.name);
        bh = (bh << 16) ^ (bh >> 16) ^ h;
        eo += entry_size(x);
    }
    bh
}

impl Drop for Ext4 {
    /// Unmount (`ext4_put_super`): a journaled mount closes its journal cleanly.
    fn drop(&mut self) {
        self.close_journal();
    }
}
