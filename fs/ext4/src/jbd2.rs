//! JBD2, the journal of ext3/ext4, in safe Rust (Linux `fs/jbd2/recovery.c`, `commit.c`,
//! `journal.c`, `checkpoint.c`, `revoke.c`, `include/linux/jbd2.h`,
//! `Documentation/filesystems/ext4/journal.rst`).
//!
//! Two halves over one on-disk format (big-endian, in the journal inode's blocks; log block
//! 0 is the journal superblock):
//! - **Recovery** ([`recover`]): the three passes of `jbd2_journal_recover`. `PASS_SCAN`
//!   walks the log from `s_start`/`s_sequence` to the last transaction with a valid commit
//!   block (descriptor, commit and revoke block checksums with `CSUM_V2`/`CSUM_V3`, crc32c
//!   seeded by the journal UUID); `PASS_REVOKE` collects revoke records (block -> the
//!   newest transaction that revoked it); `PASS_REPLAY` writes every logged block home
//!   unless a revoke of the same or a later transaction covers it, restoring escaped
//!   blocks' magic and skipping (with a log line) a block whose tag checksum is wrong. The
//!   journal superblock is then marked empty (`s_start = 0`, `s_sequence` past the end),
//!   as `jbd2_journal_recover` + `jbd2_mark_journal_empty` leave it.
//! - **Journaling** ([`Journal`]): the metadata blocks an operation writes go into the
//!   running transaction (kept in memory, not written home); a commit
//!   (`jbd2_journal_commit_transaction`) writes revoke blocks, descriptor blocks with their
//!   tags and the blocks themselves at the log head (wrapping from the end of the log to
//!   `s_first`), flushes, writes the commit block and flushes again; the blocks are then
//!   "dirty" (committed, not yet home). A checkpoint (`jbd2_log_do_checkpoint`) writes the
//!   dirty blocks home, flushes and marks the log empty; it runs when the log has no room
//!   for the next commit and at unmount. File data is written to its blocks before the
//!   commit that points at it (`data=ordered`: the commit's first flush covers it). A block
//!   freed by the running transaction is not handed out again until that transaction has
//!   committed (as `ext4_free_blocks` defers reuse), and a freed block that is still in the
//!   log gets a revoke record, so a replay never writes old metadata over new data.
//!
//! Key types: [`JSuper`] (the decoded journal superblock), [`Journal`] (the writer's state),
//! [`Recovery`] (what a replay did). Neighbours: [`crate::fs`] (mount calls [`recover`]),
//! [`crate::write`] (routes metadata writes into [`Journal::add`], commits on
//! fsync/sync/timer/unmount).

use crate::crc::crc32c;
use crate::fs::{Ext4, Mapping};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;
use um_kernel::vfs::BlockDevice;
use um_uapi::{Errno, SysResult};

/// `JBD2_MAGIC_NUMBER`: the first word of every journal metadata block.
pub const MAGIC: u32 = 0xC03B_3998;

/// `h_blocktype` values (include/linux/jbd2.h).
pub mod blocktype {
    pub const DESCRIPTOR: u32 = 1;
    pub const COMMIT: u32 = 2;
    pub const SUPERBLOCK_V1: u32 = 3;
    pub const SUPERBLOCK_V2: u32 = 4;
    pub const REVOKE: u32 = 5;
}

/// Journal feature bits (`JBD2_FEATURE_*`).
pub mod feature {
    /// `JBD2_FEATURE_COMPAT_CHECKSUM`: a crc32 of the transaction in the commit block.
    pub const COMPAT_CHECKSUM: u32 = 0x1;
    pub const INCOMPAT_REVOKE: u32 = 0x1;
    pub const INCOMPAT_64BIT: u32 = 0x2;
    pub const INCOMPAT_ASYNC_COMMIT: u32 = 0x4;
    pub const INCOMPAT_CSUM_V2: u32 = 0x8;
    pub const INCOMPAT_CSUM_V3: u32 = 0x10;
    pub const INCOMPAT_FAST_COMMIT: u32 = 0x20;
    /// What this module replays and writes.
    pub const INCOMPAT_SUPPORTED: u32 =
        INCOMPAT_REVOKE | INCOMPAT_64BIT | INCOMPAT_CSUM_V2 | INCOMPAT_CSUM_V3;
}

/// Tag flags (`JBD2_FLAG_*`).
pub mod tagflag {
    /// The block began with [`super::MAGIC`], which the log copy has zeroed.
    pub const ESCAPE: u32 = 1;
    /// No UUID follows this tag.
    pub const SAME_UUID: u32 = 2;
    pub const DELETED: u32 = 4;
    pub const LAST_TAG: u32 = 8;
}

/// `JBD2_CRC32C_CHKSUM`: `s_checksum_type` of a v2/v3 journal.
const CRC32C_CHKSUM: u8 = 4;
/// `sizeof(journal_header_t)`.
const HEADER: usize = 12;
/// `sizeof(jbd2_journal_revoke_header_t)`.
const REVOKE_HEADER: usize = 16;
/// `sizeof(struct jbd2_journal_block_tail)`.
const TAIL: usize = 4;
/// `JBD2_DEFAULT_FAST_COMMIT_BLOCKS`.
const DEFAULT_FC_BLOCKS: u32 = 256;

pub(crate) fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn be64(b: &[u8], o: usize) -> u64 {
    (be32(b, o) as u64) << 32 | be32(b, o + 4) as u64
}

pub(crate) fn put_be32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_be_bytes());
}

fn put_be64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_be_bytes());
}

fn put_header(b: &mut [u8], kind: u32, seq: u32) {
    put_be32(b, 0, MAGIC);
    put_be32(b, 4, kind);
    put_be32(b, 8, seq);
}

/// `tid_gt`: transaction ids compare modulo 2^32.
fn tid_gt(x: u32, y: u32) -> bool {
    (x.wrapping_sub(y) as i32) > 0
}

/// The journal superblock (`journal_superblock_t`), decoded.
#[derive(Clone, Debug)]
pub struct JSuper {
    /// The whole first log block, as read.
    pub raw: Vec<u8>,
    pub blocktype: u32,
    pub maxlen: u32,
    pub first: u32,
    pub sequence: u32,
    pub start: u32,
    pub errno: i32,
    pub compat: u32,
    pub incompat: u32,
    pub ro_compat: u32,
    pub uuid: [u8; 16],
    pub num_fc_blocks: u32,
}

impl JSuper {
    /// Decodes and checks log block 0 (`journal_load_superblock`): magic, type, block size,
    /// bounds, the checksum of a v2/v3 journal.
    pub fn parse(b: &[u8], bs: u32, blocks: u64) -> Result<JSuper, String> {
        if be32(b, 0) != MAGIC {
            return Err("JBD2: journal superblock has a bad magic".into());
        }
        let blocktype = be32(b, 4);
        if blocktype != blocktype::SUPERBLOCK_V1 && blocktype != blocktype::SUPERBLOCK_V2 {
            return Err(format!(
                "JBD2: unrecognised superblock format ID {blocktype}"
            ));
        }
        if be32(b, 0xC) != bs {
            return Err("JBD2: journal block size differs from the file system's".into());
        }
        let v2 = blocktype == blocktype::SUPERBLOCK_V2;
        let f = |o| if v2 { be32(b, o) } else { 0 };
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[0x30..0x40]);
        let j = JSuper {
            raw: b.to_vec(),
            blocktype,
            maxlen: be32(b, 0x10),
            first: be32(b, 0x14),
            sequence: be32(b, 0x18),
            start: be32(b, 0x1C),
            errno: be32(b, 0x20) as i32,
            compat: f(0x24),
            incompat: f(0x28),
            ro_compat: f(0x2C),
            uuid,
            num_fc_blocks: f(0x54),
        };
        if (j.maxlen as u64) > blocks || j.maxlen < 2 {
            return Err(format!(
                "JBD2: journal file too short ({} blocks, {} claimed)",
                blocks, j.maxlen
            ));
        }
        if j.first == 0 || j.first >= j.maxlen {
            return Err(format!("JBD2: invalid start of log {}", j.first));
        }
        if j.start != 0 && (j.start < j.first || j.start >= j.last()) {
            return Err(format!("JBD2: log start {} outside the log", j.start));
        }
        if j.incompat & feature::INCOMPAT_CSUM_V2 != 0
            && j.incompat & feature::INCOMPAT_CSUM_V3 != 0
        {
            return Err("JBD2: Can't enable checksumming v2 and v3 at the same time".into());
        }
        if j.csum() {
            if b[0x50] != CRC32C_CHKSUM {
                return Err("JBD2: Unknown checksum type".into());
            }
            if sb_csum(b) != be32(b, 0xFC) {
                return Err("JBD2: journal checksum error".into());
            }
        }
        Ok(j)
    }

    /// `jbd2_journal_has_csum_v2or3`.
    pub fn csum(&self) -> bool {
        self.incompat & (feature::INCOMPAT_CSUM_V2 | feature::INCOMPAT_CSUM_V3) != 0
    }

    /// The end of the ordinary log (`j_last`): fast-commit blocks come after it.
    pub fn last(&self) -> u32 {
        if self.incompat & feature::INCOMPAT_FAST_COMMIT != 0 {
            let fc = if self.num_fc_blocks == 0 {
                DEFAULT_FC_BLOCKS
            } else {
                self.num_fc_blocks
            };
            self.maxlen.saturating_sub(fc).max(self.first + 1)
        } else {
            self.maxlen
        }
    }

    /// `j_csum_seed`: crc32c of the UUID.
    pub fn seed(&self) -> u32 {
        crc32c(!0, &self.uuid)
    }

    /// `journal_tag_bytes`.
    pub fn tag_bytes(&self) -> usize {
        if self.incompat & feature::INCOMPAT_CSUM_V3 != 0 {
            return 16;
        }
        let mut sz = 12;
        if self.incompat & feature::INCOMPAT_CSUM_V2 != 0 {
            sz += 2;
        }
        if self.incompat & feature::INCOMPAT_64BIT != 0 {
            sz
        } else {
            sz - 4
        }
    }
}

/// `jbd2_superblock_csum`: crc32c(~0) of the 1024-byte superblock with `s_checksum` zero.
fn sb_csum(b: &[u8]) -> u32 {
    let mut c = b[..1024].to_vec();
    c[0xFC..0x100].fill(0);
    crc32c(!0, &c)
}

/// `jbd2_descriptor_block_csum_verify` (descriptor and revoke blocks): the tail holds
/// crc32c(seed, block with the tail zero).
fn tail_csum(seed: u32, b: &[u8]) -> u32 {
    let n = b.len();
    let mut c = b.to_vec();
    c[n - TAIL..].fill(0);
    crc32c(seed, &c)
}

/// `jbd2_commit_block_csum_verify`: crc32c(seed, block with `h_chksum[0]` zero).
fn commit_csum(seed: u32, b: &[u8]) -> u32 {
    let mut c = b.to_vec();
    c[0x10..0x14].fill(0);
    crc32c(seed, &c)
}

/// `jbd2_block_tag_csum_verify`: crc32c(crc32c(seed, be32 sequence), block).
fn tag_csum(seed: u32, seq: u32, b: &[u8]) -> u32 {
    crc32c(crc32c(seed, &seq.to_be_bytes()), b)
}

/// One tag of a descriptor block.
struct Tag {
    blocknr: u64,
    flags: u32,
    csum: u32,
}

/// The tags of a descriptor block (`count_tags`, the tag walk of `do_one_pass`).
fn tags(j: &JSuper, b: &[u8]) -> Vec<Tag> {
    let tb = j.tag_bytes();
    let tail = if j.csum() { TAIL } else { 0 };
    let v3 = j.incompat & feature::INCOMPAT_CSUM_V3 != 0;
    let bit64 = j.incompat & feature::INCOMPAT_64BIT != 0;
    let mut out = Vec::new();
    let mut p = HEADER;
    while p + tb <= b.len() - tail {
        let mut blocknr = be32(b, p) as u64;
        let flags = u16::from_be_bytes([b[p + 6], b[p + 7]]) as u32;
        if bit64 {
            blocknr |= (be32(b, p + 8) as u64) << 32;
        }
        let csum = if v3 {
            be32(b, p + 12)
        } else {
            u16::from_be_bytes([b[p + 4], b[p + 5]]) as u32
        };
        out.push(Tag {
            blocknr,
            flags,
            csum,
        });
        p += tb;
        if flags & tagflag::SAME_UUID == 0 {
            p += 16;
        }
        if flags & tagflag::LAST_TAG != 0 {
            break;
        }
    }
    out
}

/// The journal inode's blocks and superblock.
struct Log {
    /// Log block -> file system block.
    map: Vec<u64>,
    jsb: JSuper,
    bs: usize,
}

impl Log {
    /// Maps the journal inode (`jbd2_journal_bmap`) and reads its superblock.
    fn open(fs: &Ext4) -> Result<Log, String> {
        let inum = fs.sb.journal_inum;
        if inum == 0 {
            return Err("external journals are not supported".into());
        }
        let ino = fs
            .inode(inum)
            .map_err(|e| format!("no journal found (inode {inum}: {e})"))?;
        let bs = fs.sb.block_size as u64;
        let nblocks = ino.size / bs;
        if nblocks < 2 || nblocks > fs.sb.blocks_count {
            return Err(format!("journal inode {inum} has a bad size {}", ino.size));
        }
        let mut map = Vec::with_capacity(nblocks as usize);
        while (map.len() as u64) < nblocks {
            let l = map.len() as u32;
            match fs.map(&ino, l).map_err(|e| format!("journal inode: {e}"))? {
                Mapping::Mapped {
                    pblk,
                    len,
                    unwritten: false,
                } => {
                    let n = (len as u64).min(nblocks - l as u64);
                    if n == 0 {
                        return Err(format!("journal inode: empty extent at block {l}"));
                    }
                    map.extend((0..n).map(|k| pblk + k));
                }
                _ => return Err(format!("journal inode has a hole at block {l}")),
            }
        }
        let mut b = vec![0u8; bs as usize];
        fs.dev
            .read_at(map[0] * bs, &mut b)
            .map_err(|e| format!("can't read journal superblock: {e}"))?;
        let jsb = JSuper::parse(&b, bs as u32, nblocks)?;
        Ok(Log {
            map,
            jsb,
            bs: bs as usize,
        })
    }

    fn read(&self, dev: &dyn BlockDevice, lb: u32) -> SysResult<Vec<u8>> {
        let p = *self.map.get(lb as usize).ok_or(Errno::EIO)?;
        let mut b = vec![0u8; self.bs];
        dev.read_at(p * self.bs as u64, &mut b)?;
        Ok(b)
    }

    fn write(&self, dev: &dyn BlockDevice, lb: u32, b: &[u8]) -> SysResult<()> {
        let p = *self.map.get(lb as usize).ok_or(Errno::EIO)?;
        dev.write_at(p * self.bs as u64, b)
    }

    /// `wrap()`: the log block after `lb`.
    fn next(&self, lb: u32) -> u32 {
        let n = lb + 1;
        if n >= self.jsb.last() {
            n - (self.jsb.last() - self.jsb.first)
        } else {
            n
        }
    }

    /// Writes the journal superblock back with its checksum.
    fn write_sb(&mut self, dev: &dyn BlockDevice) -> SysResult<()> {
        let csum = self.jsb.csum();
        let b = &mut self.jsb.raw;
        put_be32(b, 0x18, self.jsb.sequence);
        put_be32(b, 0x1C, self.jsb.start);
        if self.jsb.blocktype == blocktype::SUPERBLOCK_V2 {
            put_be32(b, 0x24, self.jsb.compat);
            put_be32(b, 0x28, self.jsb.incompat);
        }
        if csum {
            b[0x50] = CRC32C_CHKSUM;
            let c = sb_csum(b);
            put_be32(b, 0xFC, c);
        }
        let raw = self.jsb.raw.clone();
        self.write(dev, 0, &raw)
    }
}

/// What a replay did (`struct recovery_info`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub start_transaction: u32,
    pub end_transaction: u32,
    pub replayed: u32,
    pub revokes: u32,
    pub revoke_hits: u32,
    /// Blocks skipped because their tag checksum was wrong.
    pub bad_blocks: u32,
}

/// Whether the journal's features allow a replay by this module (`Err` is the reason).
fn replay_features_ok(j: &JSuper) -> Result<(), String> {
    if j.incompat & feature::INCOMPAT_ASYNC_COMMIT != 0 {
        return Err("journal uses async_commit, which this driver does not replay".into());
    }
    if j.incompat & feature::INCOMPAT_FAST_COMMIT != 0 {
        return Err("journal uses fast commits, which this driver does not replay".into());
    }
    let unknown = j.incompat & !feature::INCOMPAT_SUPPORTED;
    if unknown != 0 {
        return Err(format!(
            "JBD2: Unrecognised features on journal ({unknown:x})"
        ));
    }
    Ok(())
}

/// `do_one_pass(PASS_SCAN)`: the transaction after the last one with a valid commit
/// block, walking from `s_start`.
fn scan(log: &Log, dev: &dyn BlockDevice) -> Result<u32, String> {
    let j = &log.jsb;
    let seed = j.seed();
    let mut next_id = j.sequence;
    let mut lb = j.start;
    let mut last_commit_time = 0u64;
    let mut bad_descriptor = false;
    // A log can hold at most `last - first` blocks: a bound on the walk even if the log
    // were crafted to loop.
    let mut budget = (j.last() - j.first) as u64 + 1;
    loop {
        if budget == 0 {
            break;
        }
        let b = log
            .read(dev, lb)
            .map_err(|e| format!("JBD2: IO error {e} recovering block {lb} in log"))?;
        budget -= 1;
        lb = log.next(lb);
        if be32(&b, 0) != MAGIC || be32(&b, 8) != next_id {
            break;
        }
        match be32(&b, 4) {
            blocktype::DESCRIPTOR => {
                if j.csum() && tail_csum(seed, &b) != be32(&b, b.len() - TAIL) {
                    // Possibly a stale block from an older use of the log: the commit
                    // time decides (below).
                    bad_descriptor = true;
                }
                let n = tags(j, &b).len() as u64;
                if n > budget {
                    break;
                }
                budget -= n;
                for _ in 0..n {
                    lb = log.next(lb);
                }
            }
            blocktype::COMMIT => {
                let t = be64(&b, 0x30);
                if bad_descriptor {
                    if t >= last_commit_time {
                        return Err(format!(
                            "JBD2: Invalid checksum found in transaction {next_id}"
                        ));
                    }
                    // A stale transaction: the log ends before it.
                    break;
                }
                if j.csum() && commit_csum(seed, &b) != be32(&b, 0x10) {
                    // An interrupted commit: the log ends here (sync commit).
                    break;
                }
                last_commit_time = t;
                next_id = next_id.wrapping_add(1);
            }
            blocktype::REVOKE => {
                if j.csum() && tail_csum(seed, &b) != be32(&b, b.len() - TAIL) {
                    bad_descriptor = true;
                }
            }
            _ => break,
        }
    }
    Ok(next_id)
}

/// Replays the journal of `fs` onto its device (`jbd2_journal_recover`) and marks the
/// journal empty. The caller reopens the file system afterwards (every block may have
/// changed, the superblock and descriptors too).
pub fn recover(fs: &Ext4) -> Result<Recovery, String> {
    let mut log = Log::open(fs)?;
    let dev = &*fs.dev;
    let j = log.jsb.clone();
    let mut info = Recovery {
        start_transaction: j.sequence,
        end_transaction: j.sequence,
        ..Default::default()
    };
    if j.start == 0 {
        // "no recovery required": the log is empty.
        return Ok(info);
    }
    replay_features_ok(&j)?;
    let end = scan(&log, dev)?;
    info.end_transaction = end;
    let seed = j.seed();
    let rec_len = if j.incompat & feature::INCOMPAT_64BIT != 0 {
        8
    } else {
        4
    };
    // PASS_REVOKE: block -> the newest transaction that revoked it.
    let mut revoked: HashMap<u64, u32> = HashMap::new();
    let bs = log.bs as u64;
    for pass in [1, 2] {
        let mut id = j.sequence;
        let mut lb = j.start;
        let mut budget = j.last() - j.first + 1;
        while tid_gt(end, id) {
            if budget == 0 {
                return Err(format!("JBD2: recovery pass {pass} ran past the log"));
            }
            budget -= 1;
            let b = log
                .read(dev, lb)
                .map_err(|e| format!("JBD2: IO error {e} recovering block {lb} in log"))?;
            lb = log.next(lb);
            if be32(&b, 0) != MAGIC || be32(&b, 8) != id {
                return Err(format!(
                    "JBD2: recovery pass {pass} ended at transaction {id}, expected {end}"
                ));
            }
            match be32(&b, 4) {
                blocktype::DESCRIPTOR => {
                    if j.csum() && tail_csum(seed, &b) != be32(&b, b.len() - TAIL) {
                        return Err(format!(
                            "JBD2: Invalid checksum recovering block {lb} in log"
                        ));
                    }
                    for t in tags(&j, &b) {
                        let at = lb;
                        lb = log.next(lb);
                        if pass != 2 {
                            continue;
                        }
                        if revoked.get(&t.blocknr).is_some_and(|&r| !tid_gt(id, r)) {
                            info.revoke_hits += 1;
                            continue;
                        }
                        let mut data = log.read(dev, at).map_err(|e| {
                            format!("JBD2: IO error {e} recovering block {at} in log")
                        })?;
                        if j.csum() {
                            let c = tag_csum(seed, id, &data);
                            let ok = if j.incompat & feature::INCOMPAT_CSUM_V3 != 0 {
                                c == t.csum
                            } else {
                                c & 0xFFFF == t.csum
                            };
                            if !ok {
                                log::error!(
                                    "JBD2: Invalid checksum recovering data block {} in log",
                                    t.blocknr
                                );
                                info.bad_blocks += 1;
                                continue;
                            }
                        }
                        if t.blocknr >= fs.sb.blocks_count {
                            log::error!(
                                "JBD2: block {} in transaction {id} is outside the file system",
                                t.blocknr
                            );
                            info.bad_blocks += 1;
                            continue;
                        }
                        if t.flags & tagflag::ESCAPE != 0 {
                            put_be32(&mut data, 0, MAGIC);
                        }
                        // Later copies of a block come later in the log and win.
                        dev.write_at(t.blocknr * bs, &data).map_err(|e| {
                            format!("JBD2: IO error {e} writing block {}", t.blocknr)
                        })?;
                        info.replayed += 1;
                    }
                }
                blocktype::COMMIT => id = id.wrapping_add(1),
                blocktype::REVOKE => {
                    if pass != 1 {
                        continue;
                    }
                    // scan_revoke_records
                    let tail = if j.csum() { TAIL } else { 0 };
                    let count = be32(&b, 12) as usize;
                    if count > b.len() - tail {
                        return Err("JBD2: revoke block count past its end".into());
                    }
                    let mut o = REVOKE_HEADER;
                    while o + rec_len <= count {
                        let blk = if rec_len == 8 {
                            be64(&b, o)
                        } else {
                            be32(&b, o) as u64
                        };
                        let e = revoked.entry(blk).or_insert(id);
                        if tid_gt(id, *e) {
                            *e = id;
                        }
                        info.revokes += 1;
                        o += rec_len;
                    }
                }
                other => return Err(format!("JBD2: unexpected block type {other} in log")),
            }
        }
    }
    dev.flush()
        .map_err(|e| format!("JBD2: flush after recovery failed: {e}"))?;
    // jbd2_mark_journal_empty: the next transaction is the one after the end.
    log.jsb.sequence = end;
    log.jsb.start = 0;
    log.write_sb(dev)
        .and_then(|_| dev.flush())
        .map_err(|e| format!("JBD2: can't write the journal superblock: {e}"))?;
    Ok(info)
}

/// The journal of a read-write mount (`journal_t` with its running transaction).
pub struct Journal {
    log: Log,
    /// The running transaction's id.
    tid: u32,
    /// Where the next log block goes.
    head: u32,
    /// The first block of the oldest transaction not yet checkpointed (`None`: log empty).
    tail: Option<u32>,
    /// Blocks changed by the running transaction, newest contents.
    tx: BTreeMap<u64, Arc<Vec<u8>>>,
    /// Blocks the running transaction revokes.
    revoke: BTreeSet<u64>,
    /// Ranges the running transaction freed: not to be allocated before it commits.
    tx_freed: BTreeMap<u64, u64>,
    /// Dirty blocks the running transaction freed: dropped from `dirty` when it commits.
    freed_dirty: Vec<u64>,
    /// Committed blocks not yet written home.
    dirty: HashMap<u64, Arc<Vec<u8>>>,
    /// Blocks in some transaction of the live log (the ones a freeing must revoke).
    logged: HashSet<u64>,
    /// When the running transaction got its first block.
    started: Option<Instant>,
    /// Transactions committed by this mount.
    pub commits: u64,
    /// Times the log head went from the end of the log back to `s_first`.
    pub wraps: u64,
    /// Checkpoints done (the log emptied).
    pub checkpoints: u64,
    /// Whether an oversized transaction was written home without the log (logged once).
    warned: bool,
}

impl Journal {
    /// Opens the journal of a read-write mount (after any replay: the log must be empty),
    /// setting the features this writer uses: revoke records, 64-bit block numbers on a
    /// 64-bit file system, v3 checksums with `metadata_csum` (none otherwise), as ext4's
    /// `set_journal_csum_feature_set` does.
    pub fn open(fs: &Ext4) -> Result<Journal, String> {
        let mut log = Log::open(fs)?;
        let j = &mut log.jsb;
        if j.blocktype != blocktype::SUPERBLOCK_V2 {
            return Err("journal superblock v1 is not supported for writing".into());
        }
        if j.incompat & !feature::INCOMPAT_SUPPORTED != 0 {
            return Err(format!(
                "journal features {:x} are not supported for writing",
                j.incompat & !feature::INCOMPAT_SUPPORTED
            ));
        }
        if j.start != 0 {
            return Err("journal not empty".into());
        }
        j.incompat |= feature::INCOMPAT_REVOKE;
        if fs.sb.has(crate::disk::incompat::BIT64) {
            j.incompat |= feature::INCOMPAT_64BIT;
        }
        j.incompat &= !(feature::INCOMPAT_CSUM_V2 | feature::INCOMPAT_CSUM_V3);
        j.compat &= !feature::COMPAT_CHECKSUM;
        if fs.sb.metadata_csum() {
            j.incompat |= feature::INCOMPAT_CSUM_V3;
        }
        // "No recovery required": the next transaction follows s_sequence.
        let tid = j.sequence.wrapping_add(1);
        j.sequence = tid;
        let first = j.first;
        log.write_sb(&*fs.dev)
            .map_err(|e| format!("can't write the journal superblock: {e}"))?;
        Ok(Journal {
            log,
            tid,
            head: first,
            tail: None,
            tx: BTreeMap::new(),
            revoke: BTreeSet::new(),
            tx_freed: BTreeMap::new(),
            freed_dirty: Vec::new(),
            dirty: HashMap::new(),
            logged: HashSet::new(),
            started: None,
            commits: 0,
            wraps: 0,
            checkpoints: 0,
            warned: false,
        })
    }

    /// Log blocks for transactions (`j_last - j_first`).
    fn len(&self) -> u32 {
        self.log.jsb.last() - self.log.jsb.first
    }

    /// Log blocks the live transactions take.
    fn used(&self) -> u32 {
        match self.tail {
            None => 0,
            Some(t) => {
                let len = self.len();
                (self.head + len - t) % len
            }
        }
    }

    /// Blocks in the running transaction.
    pub fn running(&self) -> usize {
        self.tx.len() + self.revoke.len()
    }

    /// How long the running transaction has been open.
    pub fn age(&self) -> Option<std::time::Duration> {
        self.started.map(|s| s.elapsed())
    }

    /// Whether the running transaction should commit now to stay well inside the log
    /// (Linux's `j_max_transaction_buffers`, a quarter of the log).
    pub fn full(&self) -> bool {
        self.running() as u32 >= self.len() / 4
    }

    /// Puts a changed metadata block in the running transaction (`jbd2_journal_dirty_metadata`);
    /// a revoke of it by this transaction is cancelled (`jbd2_journal_cancel_revoke`).
    pub fn add(&mut self, pblk: u64, data: Arc<Vec<u8>>) {
        self.revoke.remove(&pblk);
        self.tx.insert(pblk, data);
        self.started.get_or_insert_with(Instant::now);
    }

    /// The newest contents of a block the journal holds (running or committed, not home).
    pub fn get(&self, pblk: u64) -> Option<Arc<Vec<u8>>> {
        self.tx
            .get(&pblk)
            .or_else(|| self.dirty.get(&pblk))
            .cloned()
    }

    /// `n` blocks from `pblk` were freed by the running transaction (`ext4_free_blocks`
    /// with `EXT4_FREE_BLOCKS_FORGET`): their pending contents are dropped, logged ones are
    /// revoked, and none is reused before the commit.
    pub fn freed(&mut self, pblk: u64, n: u64) {
        let end = pblk + n;
        let hit: Vec<u64> = if n as usize > self.logged.len() + self.tx.len() {
            let mut v: Vec<u64> = self
                .logged
                .iter()
                .copied()
                .chain(self.tx.keys().copied())
                .filter(|b| (pblk..end).contains(b))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        } else {
            (pblk..end)
                .filter(|b| self.logged.contains(b) || self.tx.contains_key(b))
                .collect()
        };
        for b in hit {
            self.tx.remove(&b);
            if self.logged.contains(&b) {
                self.revoke.insert(b);
                self.started.get_or_insert_with(Instant::now);
            }
            if self.dirty.contains_key(&b) {
                self.freed_dirty.push(b);
            }
        }
        self.tx_freed
            .insert(pblk, n.max(self.tx_freed.get(&pblk).copied().unwrap_or(0)));
    }

    /// The parts of `[from, to)` the running transaction freed (not to be allocated yet),
    /// as ranges clipped to it.
    pub fn busy(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for (&s, &n) in self.tx_freed.range(..to) {
            let (a, b) = (s.max(from), (s + n).min(to));
            if a < b {
                out.push((a, b));
            }
        }
        out
    }

    /// The log blocks of the running transaction: revoke blocks, then descriptor blocks
    /// each followed by the blocks its tags name (`jbd2_journal_commit_transaction`).
    fn build(&self) -> Vec<Vec<u8>> {
        let j = &self.log.jsb;
        let bs = self.log.bs;
        let seed = j.seed();
        let csum = j.csum();
        let tail = if csum { TAIL } else { 0 };
        let bit64 = j.incompat & feature::INCOMPAT_64BIT != 0;
        let v3 = j.incompat & feature::INCOMPAT_CSUM_V3 != 0;
        let mut out = Vec::new();
        // Revoke blocks (jbd2_journal_write_revoke_records).
        let rec = if bit64 { 8 } else { 4 };
        let revs: Vec<u64> = self.revoke.iter().copied().collect();
        for chunk in revs.chunks(((bs - REVOKE_HEADER - tail) / rec).max(1)) {
            let mut b = vec![0u8; bs];
            put_header(&mut b, blocktype::REVOKE, self.tid);
            let mut o = REVOKE_HEADER;
            for &r in chunk {
                if bit64 {
                    put_be64(&mut b, o, r);
                } else {
                    put_be32(&mut b, o, r as u32);
                }
                o += rec;
            }
            put_be32(&mut b, 12, o as u32);
            if csum {
                let c = tail_csum(seed, &b);
                put_be32(&mut b, bs - TAIL, c);
            }
            out.push(b);
        }
        // Descriptor blocks and the blocks they describe.
        let tb = j.tag_bytes();
        let blocks: Vec<(&u64, &Arc<Vec<u8>>)> = self.tx.iter().collect();
        let mut i = 0;
        while i < blocks.len() {
            let mut d = vec![0u8; bs];
            put_header(&mut d, blocktype::DESCRIPTOR, self.tid);
            let at = out.len();
            out.push(Vec::new());
            let mut p = HEADER;
            let mut firsttag = true;
            loop {
                let (&blk, data) = blocks[i];
                let mut logged = (**data).clone();
                let mut flags = 0;
                if be32(&logged, 0) == MAGIC {
                    logged[..4].fill(0);
                    flags |= tagflag::ESCAPE;
                }
                if !firsttag {
                    flags |= tagflag::SAME_UUID;
                }
                let c = tag_csum(seed, self.tid, &logged);
                put_be32(&mut d, p, blk as u32);
                if v3 {
                    put_be32(&mut d, p + 4, flags);
                    put_be32(&mut d, p + 8, (blk >> 32) as u32);
                    put_be32(&mut d, p + 12, c);
                } else {
                    let c16 = if csum { c as u16 } else { 0 };
                    d[p + 4..p + 6].copy_from_slice(&c16.to_be_bytes());
                    d[p + 6..p + 8].copy_from_slice(&(flags as u16).to_be_bytes());
                    if bit64 {
                        put_be32(&mut d, p + 8, (blk >> 32) as u32);
                    }
                }
                let tag_at = p;
                p += tb;
                if firsttag {
                    d[p..p + 16].copy_from_slice(&j.uuid);
                    p += 16;
                    firsttag = false;
                }
                out.push(logged);
                i += 1;
                if i == blocks.len() || p + tb > bs - tail {
                    // The last tag of this descriptor.
                    let fo = if v3 { tag_at + 4 } else { tag_at + 6 };
                    if v3 {
                        let f = be32(&d, fo) | tagflag::LAST_TAG;
                        put_be32(&mut d, fo, f);
                    } else {
                        let f = u16::from_be_bytes([d[fo], d[fo + 1]]) | tagflag::LAST_TAG as u16;
                        d[fo..fo + 2].copy_from_slice(&f.to_be_bytes());
                    }
                    break;
                }
            }
            if csum {
                let c = tail_csum(seed, &d);
                put_be32(&mut d, bs - TAIL, c);
            }
            out[at] = d;
        }
        out
    }

    /// The commit block of the running transaction (`journal_submit_commit_record`).
    fn commit_block(&self) -> Vec<u8> {
        let j = &self.log.jsb;
        let mut b = vec![0u8; self.log.bs];
        put_header(&mut b, blocktype::COMMIT, self.tid);
        let (s, ns) = crate::write::now();
        put_be64(&mut b, 0x30, s as u64);
        put_be32(&mut b, 0x38, ns as u32);
        if j.csum() {
            let c = commit_csum(j.seed(), &b);
            put_be32(&mut b, 0x10, c);
        }
        b
    }

    /// Commits the running transaction; `Ok(false)` if it was empty. The caller holds the
    /// file system's change lock, so no operation is half in it.
    pub fn commit(&mut self, dev: &dyn BlockDevice) -> SysResult<bool> {
        if self.tx.is_empty() && self.revoke.is_empty() {
            self.tx_freed.clear();
            self.started = None;
            return Ok(false);
        }
        let blocks = self.build();
        let need = blocks.len() as u32 + 1;
        if self.used() + need >= self.len() {
            self.checkpoint(dev)?;
        }
        if need >= self.len() {
            // Larger than the whole log: written home directly, without atomicity.
            if !self.warned {
                log::warn!(
                    "JBD2: transaction of {need} blocks exceeds the journal ({} blocks); written in place",
                    self.len()
                );
                self.warned = true;
            }
            let bs = self.log.bs as u64;
            for (b, d) in &self.tx {
                dev.write_at(b * bs, d)?;
            }
            dev.flush()?;
        } else {
            let start = self.head;
            let mut lb = start;
            for b in &blocks {
                self.log.write(dev, lb, b)?;
                lb = self.next_counted(lb);
            }
            if self.tail.is_none() {
                // The log was empty: the superblock now names this transaction's start.
                self.log.jsb.start = start;
                self.log.jsb.sequence = self.tid;
                self.log.write_sb(dev)?;
            }
            // data=ordered: file data and the log blocks are on disk before the commit.
            dev.flush()?;
            let c = self.commit_block();
            self.log.write(dev, lb, &c)?;
            dev.flush()?;
            self.head = self.next_counted(lb);
            self.tail.get_or_insert(start);
            for b in self.freed_dirty.drain(..) {
                self.dirty.remove(&b);
            }
            for (b, d) in std::mem::take(&mut self.tx) {
                self.logged.insert(b);
                self.dirty.insert(b, d);
            }
        }
        self.tx.clear();
        self.freed_dirty.clear();
        self.revoke.clear();
        self.tx_freed.clear();
        self.started = None;
        self.tid = self.tid.wrapping_add(1);
        self.commits += 1;
        Ok(true)
    }

    /// Writes every committed block home and marks the log empty (`jbd2_log_do_checkpoint`
    /// then `jbd2_cleanup_journal_tail` / `jbd2_mark_journal_empty`).
    pub fn checkpoint(&mut self, dev: &dyn BlockDevice) -> SysResult<()> {
        if self.tail.is_none() {
            return Ok(());
        }
        let bs = self.log.bs as u64;
        let mut v: Vec<(&u64, &Arc<Vec<u8>>)> = self.dirty.iter().collect();
        v.sort_unstable_by_key(|(b, _)| **b);
        for (b, d) in v {
            dev.write_at(b * bs, d)?;
        }
        dev.flush()?;
        self.log.jsb.start = 0;
        self.log.jsb.sequence = self.tid;
        self.log.write_sb(dev)?;
        dev.flush()?;
        self.dirty.clear();
        self.logged.clear();
        self.tail = None;
        self.checkpoints += 1;
        Ok(())
    }

    fn next_counted(&mut self, lb: u32) -> u32 {
        let n = self.log.next(lb);
        if n < lb {
            self.wraps += 1;
        }
        n
    }

    /// The decoded journal superblock as this writer keeps it.
    pub fn jsb(&self) -> &JSuper {
        &self.log.jsb
    }
}
