//! The block layer (Linux `block/`): disks, their partitions, the request queue, the block
//! device files and ioctls, and the disk views in sysfs and procfs. Drivers ([`ubd`]) supply
//! a [`Backend`] (the host I/O of one disk); [`add_disk`] makes it `/dev/<name>` plus a node
//! per partition.
//!
//! Key types: [`Disk`] (Linux `struct gendisk`: name, numbers, partitions, the queue, the
//! read-only and read-ahead settings, I/O counters), [`Queue`] (requests in submission order:
//! writes, flushes and discards are dispatched one submission at a time under the queue lock,
//! so a flush is issued only after every write submitted before it completed, and no write
//! submitted after it is started before it; runs of contiguous writes of one submission go to
//! the host as one `pwritev`, never merged across a flush), [`BlockFile`] (an open
//! `/dev/ubda` or `/dev/ubda1`: byte-granular reads and writes bounded by the partition, the
//! `BLK*` ioctls of `block/ioctl.c`, `fsync` = the disk's flush, `O_EXCL` claims, `O_DIRECT`
//! alignment). There is no block cache: every read and write of the device file is host I/O,
//! so what the guest wrote is in the host file when the call returns, and `fsync` makes it
//! durable.
//!
//! Partitions ([`part`]: MBR with logical partitions, GPT) are scanned when a disk is added
//! and on `BLKRRPART`. sysfs gets `/sys/block/<disk>` (with `dev`, `size`, `ro`, `queue/`,
//! one directory per partition) and `/sys/dev/block/M:m` links; procfs gets
//! `/proc/partitions` and `/proc/diskstats`, all generated when read.
//!
//! Neighbours: `um_kernel::vfs` (the block-device registry, `FileOps`), `um_fs::devfs`
//! (nodes), `um_fs::procfs` (the sysfs/procfs inodes), `um_os_linux::blockio` (host calls).

pub mod cow;
pub mod loop_dev;
pub mod part;
mod sysfs;
pub mod ubd;

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use um_fs::devfs::devtmpfs;
use um_kernel::arch::native::abi::O_DIRECT;
use um_kernel::task::lock;
use um_kernel::vfs::{self, FileOps, GuestMem, Kstat, Owner, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::blkdev::*;
use um_uapi::abi::capability::CAP_SYS_ADMIN;
use um_uapi::abi::fcntl::{O_ACCMODE, O_EXCL};
use um_uapi::{Errno, SysResult};

/// Bytes per sector of the block layer's units (`SECTOR_SIZE`).
pub const SECTOR: u64 = 512;

/// The host side of one disk.
pub trait Backend: Send + Sync {
    /// Size in bytes (whole sectors).
    fn size(&self) -> u64;
    /// Fills `bufs` in order from byte `off` (inside the disk).
    fn read(&self, bufs: &mut [&mut [u8]], off: u64) -> io::Result<()>;
    /// Writes `bufs` in order from byte `off` (inside the disk).
    fn write(&self, bufs: &[&[u8]], off: u64) -> io::Result<()>;
    /// Makes every completed write durable (`REQ_OP_FLUSH`).
    fn flush(&self) -> io::Result<()>;
    /// Forgets the range (`REQ_OP_DISCARD`); `EOPNOTSUPP` when the disk has no discard.
    fn discard(&self, off: u64, len: u64) -> io::Result<()>;
    /// Zeroes the range (`REQ_OP_WRITE_ZEROES`).
    fn write_zeroes(&self, off: u64, len: u64) -> io::Result<()>;
    /// Whether [`Backend::discard`] works (`discard_max_bytes` > 0).
    fn can_discard(&self) -> bool;
    /// What the kernel log and sysfs call the host file.
    fn describe(&self) -> String;
}

/// One request of a submission.
pub enum Request<'a> {
    Write { off: u64, data: &'a [u8] },
    Flush,
    Discard { off: u64, len: u64 },
    WriteZeroes { off: u64, len: u64 },
}

/// What [`plan`] makes of a submission: the host operations in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Op {
    /// One vectored write: the request indexes whose data goes out together, and the offset.
    Write {
        off: u64,
        reqs: Vec<usize>,
    },
    Flush,
    Discard {
        off: u64,
        len: u64,
    },
    WriteZeroes {
        off: u64,
        len: u64,
    },
}

/// Merges runs of contiguous writes into one host write each; every other request (a flush
/// above all) ends a run, so nothing moves across it.
pub fn plan(reqs: &[Request<'_>]) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::new();
    let mut end = None;
    for (i, r) in reqs.iter().enumerate() {
        match *r {
            Request::Write { off, data } => {
                if let (Some(e), Some(Op::Write { reqs, .. })) = (end, out.last_mut())
                    && e == off
                {
                    reqs.push(i);
                } else {
                    out.push(Op::Write { off, reqs: vec![i] });
                }
                end = Some(off + data.len() as u64);
            }
            Request::Flush => {
                out.push(Op::Flush);
                end = None;
            }
            Request::Discard { off, len } => {
                out.push(Op::Discard { off, len });
                end = None;
            }
            Request::WriteZeroes { off, len } => {
                out.push(Op::WriteZeroes { off, len });
                end = None;
            }
        }
    }
    out
}

/// The request queue of a disk.
pub struct Queue {
    backend: Arc<dyn Backend>,
    /// Held while a submission is dispatched (see the module docs).
    order: Mutex<()>,
}

impl Queue {
    /// Dispatches `reqs` in order; stops at the first error.
    pub fn submit(&self, reqs: &[Request<'_>]) -> io::Result<()> {
        let _g = lock(&self.order);
        for op in plan(reqs) {
            match op {
                Op::Write { off, reqs: ix } => {
                    let bufs: Vec<&[u8]> = ix
                        .iter()
                        .map(|&i| match reqs[i] {
                            Request::Write { data, .. } => data,
                            _ => &[],
                        })
                        .collect();
                    self.backend.write(&bufs, off)?;
                }
                Op::Flush => self.backend.flush()?,
                Op::Discard { off, len } => self.backend.discard(off, len)?,
                Op::WriteZeroes { off, len } => self.backend.write_zeroes(off, len)?,
            }
        }
        Ok(())
    }

    /// Reads need no ordering against each other; a read after a completed write sees it
    /// (the backend's own locking covers COW bitmaps).
    pub fn read(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        self.backend.read(&mut [buf], off)
    }
}

/// I/O counters (`/proc/diskstats`, `/sys/block/*/stat`).
#[derive(Default)]
pub struct Stats {
    pub reads: AtomicU64,
    pub read_sectors: AtomicU64,
    pub writes: AtomicU64,
    pub write_sectors: AtomicU64,
    pub flushes: AtomicU64,
    pub discards: AtomicU64,
    pub discard_sectors: AtomicU64,
}

/// Who holds a partition (or the whole disk, number 0) open.
#[derive(Default)]
struct Opens {
    count: BTreeMap<u32, usize>,
    exclusive: BTreeMap<u32, usize>,
}

/// A disk (`struct gendisk`).
pub struct Disk {
    pub name: String,
    pub major: u32,
    pub first_minor: u32,
    /// Minors, the whole disk's included (`disk->minors`): partition numbers are below it.
    pub minors: u32,
    queue: Queue,
    backend: Arc<dyn Backend>,
    /// Read-only by the driver (`set_disk_ro`: ubd's `r`, or a file the host will not let us
    /// write).
    hw_ro: bool,
    /// `BLKROSET` of the whole disk.
    soft_ro: AtomicBool,
    /// `BLKRASET`, in guest pages (`bdi->ra_pages`).
    ra_pages: AtomicU64,
    /// `BLKBSZSET` (`bdev->bd_inode->i_blkbits`).
    block_size: AtomicU64,
    parts: Mutex<Vec<part::Part>>,
    opens: Mutex<Opens>,
    pub stats: Stats,
    /// `diskseq`.
    seq: u64,
}

fn disks() -> &'static Mutex<Vec<Arc<Disk>>> {
    static DISKS: OnceLock<Mutex<Vec<Arc<Disk>>>> = OnceLock::new();
    DISKS.get_or_init(Default::default)
}

/// The disks, in the order they were added.
pub fn all_disks() -> Vec<Arc<Disk>> {
    lock(disks()).clone()
}

fn host_errno(e: io::Error) -> Errno {
    e.raw_os_error().and_then(Errno::new).unwrap_or(Errno::EIO)
}

fn page() -> u64 {
    um_mm::page_size() as u64
}

impl Disk {
    /// Size of the whole disk in bytes.
    pub fn size(&self) -> u64 {
        self.backend.size() / SECTOR * SECTOR
    }

    pub fn read_only(&self) -> bool {
        self.hw_ro || self.soft_ro.load(Ordering::Relaxed)
    }

    /// The partitions now.
    pub fn partitions(&self) -> Vec<part::Part> {
        lock(&self.parts).clone()
    }

    /// The byte range of partition `n` (0: the whole disk); `None` if it is gone.
    fn range(&self, n: u32) -> Option<(u64, u64)> {
        if n == 0 {
            return Some((0, self.size()));
        }
        lock(&self.parts)
            .iter()
            .find(|p| p.number == n)
            .map(|p| (p.start * SECTOR, p.sectors * SECTOR))
    }

    /// Name of partition `n` (`ubda1`; a disk whose name ends in a digit gets `p1`).
    pub fn part_name(&self, n: u32) -> String {
        if n == 0 {
            self.name.clone()
        } else if self.name.ends_with(|c: char| c.is_ascii_digit()) {
            format!("{}p{n}", self.name)
        } else {
            format!("{}{n}", self.name)
        }
    }

    /// Flushes the disk's host file.
    pub fn flush(&self) -> SysResult<()> {
        self.stats.flushes.fetch_add(1, Ordering::Relaxed);
        self.queue.submit(&[Request::Flush]).map_err(host_errno)
    }

    /// Reads sector `lba` for the partition scan.
    fn read_sector(&self, lba: u64, buf: &mut [u8]) -> bool {
        let off = lba * SECTOR;
        off + SECTOR <= self.size() && self.queue.read(&mut buf[..512], off).is_ok()
    }

    /// (Re)reads the partition table and makes the partitions' devices and nodes match it.
    fn rescan(self: &Arc<Disk>) {
        let found = part::scan(
            &|lba, buf| self.read_sector(lba, buf),
            self.size() / SECTOR,
            self.minors,
        );
        let old = std::mem::replace(&mut *lock(&self.parts), found.clone());
        for p in &old {
            vfs::unregister_blkdev(self.major, self.first_minor + p.number);
            vfs::unregister_bdev(self.major, self.first_minor + p.number);
            let _ = devtmpfs().unlink(self.part_name(p.number).as_bytes());
        }
        for p in &found {
            self.register_minor(p.number);
        }
        if !found.is_empty() {
            let names: Vec<String> = found.iter().map(|p| self.part_name(p.number)).collect();
            log::info!(" {}: {}", self.name, names.join(" "));
        }
    }

    fn register_minor(self: &Arc<Disk>, n: u32) {
        let weak = Arc::downgrade(self);
        let minor = self.first_minor + n;
        vfs::register_blkdev(
            self.major,
            minor,
            Arc::new(move |_io: &IoCtx<'_>, flags: u32| {
                let disk = weak.upgrade().ok_or(Errno::ENXIO)?;
                BlockFile::open(disk, n, flags).map(|f| Box::new(f) as Box<dyn FileOps>)
            }),
        );
        let weak = Arc::downgrade(self);
        vfs::register_bdev(
            self.major,
            minor,
            self.part_name(n),
            Arc::new(move |write: bool| {
                let disk = weak.upgrade().ok_or(Errno::ENXIO)?;
                let flags = O_EXCL | if write { 2 } else { 0 };
                let file = BlockFile::open(disk, n, flags)?;
                Ok(Arc::new(Claimed { file }) as Arc<dyn vfs::BlockDevice>)
            }),
        );
        let made = devtmpfs().mknod(
            self.part_name(n).as_bytes(),
            mode::S_IFBLK | 0o660,
            vfs::encode_dev(self.major, minor),
            Owner::default(),
        );
        if let Err(e) = made
            && e != Errno::EEXIST
        {
            log::warn!("block: cannot make /dev/{}: {e}", self.part_name(n));
        }
    }
}

/// Adds a disk (`add_disk`): its device, node and partitions. `hw_ro`: writes are refused.
pub fn add_disk(
    name: String,
    major: u32,
    first_minor: u32,
    minors: u32,
    backend: Arc<dyn Backend>,
    hw_ro: bool,
) -> Arc<Disk> {
    static SEQ: AtomicU64 = AtomicU64::new(1);
    let disk = Arc::new(Disk {
        name,
        major,
        first_minor,
        minors,
        queue: Queue {
            backend: backend.clone(),
            order: Mutex::new(()),
        },
        backend,
        hw_ro,
        soft_ro: AtomicBool::new(false),
        ra_pages: AtomicU64::new((128 << 10) / page()),
        block_size: AtomicU64::new(if page() >= 4096 { 4096 } else { SECTOR }),
        parts: Mutex::new(Vec::new()),
        opens: Mutex::new(Opens::default()),
        stats: Stats::default(),
        seq: SEQ.fetch_add(1, Ordering::Relaxed),
    });
    lock(disks()).push(disk.clone());
    disk.register_minor(0);
    log::info!(
        "{}: {} sectors ({} MB){} on {}",
        disk.name,
        disk.size() / SECTOR,
        disk.size() >> 20,
        if hw_ro { ", read-only" } else { "" },
        disk.backend.describe()
    );
    disk.rescan();
    disk
}

/// Boot-time wiring of the block layer: the procfs and sysfs views and the `sync(2)` hook.
/// Runs before init, whether or not any disk is configured.
pub fn register() {
    sysfs::register();
    vfs::register_sync(Arc::new(|| {
        for d in all_disks() {
            if let Err(e) = d.flush() {
                log::warn!("{}: flush failed: {e}", d.name);
            }
        }
    }));
}

/// An open block device: a disk (`part` 0) or one of its partitions.
pub struct BlockFile {
    disk: Arc<Disk>,
    part: u32,
    write: bool,
    excl: bool,
    direct: bool,
}

impl BlockFile {
    /// `blkdev_open`: `O_EXCL` claims the device (`bd_prepare_to_claim`): `EBUSY` while
    /// another exclusive open holds it, the whole disk or, for the whole disk, a partition.
    fn open(disk: Arc<Disk>, part: u32, flags: u32) -> SysResult<BlockFile> {
        disk.range(part).ok_or(Errno::ENXIO)?;
        let write = flags & O_ACCMODE != 0;
        if write && disk.hw_ro {
            return Err(Errno::EROFS);
        }
        let excl = flags & O_EXCL != 0;
        let mut o = lock(&disk.opens);
        if excl {
            let busy = if part == 0 {
                o.exclusive.values().any(|&n| n > 0)
            } else {
                o.exclusive.get(&part).is_some_and(|&n| n > 0)
                    || o.exclusive.get(&0).is_some_and(|&n| n > 0)
            };
            if busy {
                return Err(Errno::EBUSY);
            }
            *o.exclusive.entry(part).or_default() += 1;
        }
        *o.count.entry(part).or_default() += 1;
        drop(o);
        Ok(BlockFile {
            disk,
            part,
            write,
            excl,
            direct: flags & O_DIRECT != 0,
        })
    }

    fn range(&self) -> SysResult<(u64, u64)> {
        self.disk.range(self.part).ok_or(Errno::ENXIO)
    }

    fn ro(&self) -> bool {
        self.disk.read_only()
    }

    /// `O_DIRECT`: offset and length aligned to the logical block size, else `EINVAL`.
    fn check_direct(&self, off: u64, len: usize) -> SysResult<()> {
        if self.direct && (off % SECTOR != 0 || len as u64 % SECTOR != 0) {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// BLKDISCARD / BLKZEROOUT argument checks (`blk_ioctl_discard`, `blk_ioctl_zeroout`).
    fn range_arg(&self, mem: &mut dyn GuestMem, arg: u64) -> SysResult<(u64, u64)> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let mut b = [0u8; 16];
        mem.read(arg, &mut b)?;
        let start = u64::from_le_bytes(b[0..8].try_into().unwrap_or_default());
        let len = u64::from_le_bytes(b[8..16].try_into().unwrap_or_default());
        if start % SECTOR != 0 || len % SECTOR != 0 {
            return Err(Errno::EINVAL);
        }
        let (base, size) = self.range()?;
        let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
        if end > size {
            return Err(Errno::EINVAL);
        }
        Ok((base + start, len))
    }
}

/// A device claimed by a file system (`bdev_file_open_by_dev` with a holder): an exclusive
/// open, so `O_EXCL` opens of it, of its disk or of its partitions are `EBUSY` while it is
/// mounted; reads are bounded by the partition.
struct Claimed {
    file: BlockFile,
}

impl vfs::BlockDevice for Claimed {
    fn size(&self) -> u64 {
        self.file.range().map(|(_, n)| n).unwrap_or(0)
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()> {
        let (base, size) = self.file.range()?;
        let end = off.checked_add(buf.len() as u64).ok_or(Errno::EIO)?;
        if end > size {
            return Err(Errno::EIO);
        }
        let d = &self.file.disk;
        d.stats.reads.fetch_add(1, Ordering::Relaxed);
        d.stats
            .read_sectors
            .fetch_add(buf.len() as u64 / SECTOR, Ordering::Relaxed);
        d.queue.read(buf, base + off).map_err(host_errno)
    }

    fn read_only(&self) -> bool {
        self.file.ro()
    }

    /// Writes from the file system itself. A device claimed for a read-only mount takes
    /// them too unless the disk is read-only, as Linux's buffer cache writes to a bdev
    /// opened without `FMODE_WRITE` and only `bdev_read_only` stops them: ext4 replays a
    /// journal at a read-only mount this way (fs/ext4/super.c `ext4_load_journal`: "write
    /// access will be enabled during recovery"); it writes nothing else on such a mount.
    fn write_at(&self, off: u64, data: &[u8]) -> SysResult<()> {
        if self.file.ro() {
            return Err(Errno::EROFS);
        }
        let (base, size) = self.file.range()?;
        let end = off.checked_add(data.len() as u64).ok_or(Errno::EIO)?;
        if end > size {
            return Err(Errno::EIO);
        }
        let d = &self.file.disk;
        d.stats.writes.fetch_add(1, Ordering::Relaxed);
        d.stats
            .write_sectors
            .fetch_add((data.len() as u64).div_ceil(SECTOR), Ordering::Relaxed);
        d.queue
            .submit(&[Request::Write {
                off: base + off,
                data,
            }])
            .map_err(host_errno)
    }

    fn flush(&self) -> SysResult<()> {
        self.file.disk.flush()
    }

    fn name(&self) -> String {
        self.file.disk.part_name(self.file.part)
    }

    fn rdev(&self) -> u64 {
        vfs::encode_dev(
            self.file.disk.major,
            self.file.disk.first_minor + self.file.part,
        )
    }
}

impl Drop for BlockFile {
    fn drop(&mut self) {
        let mut o = lock(&self.disk.opens);
        if let Some(n) = o.count.get_mut(&self.part) {
            *n = n.saturating_sub(1);
        }
        if self.excl
            && let Some(n) = o.exclusive.get_mut(&self.part)
        {
            *n = n.saturating_sub(1);
        }
    }
}

fn put(mem: &mut dyn GuestMem, arg: u64, b: &[u8]) -> SysResult<u64> {
    mem.write(arg, b)?;
    Ok(0)
}

fn get_int(mem: &mut dyn GuestMem, arg: u64) -> SysResult<i32> {
    let mut b = [0u8; 4];
    mem.read(arg, &mut b)?;
    Ok(i32::from_le_bytes(b))
}

impl FileOps for BlockFile {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.check_direct(off, buf.len())?;
        let (base, size) = self.range()?;
        if off >= size {
            return Ok(0);
        }
        let n = buf.len().min((size - off) as usize);
        self.disk
            .queue
            .read(&mut buf[..n], base + off)
            .map_err(host_errno)?;
        let s = &self.disk.stats;
        s.reads.fetch_add(1, Ordering::Relaxed);
        s.read_sectors
            .fetch_add((n as u64).div_ceil(SECTOR), Ordering::Relaxed);
        Ok(n)
    }

    /// `blkdev_write_iter`: `EPERM` on a read-only device, `ENOSPC` at the end.
    fn write(&self, _io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        if self.ro() {
            return Err(Errno::EPERM);
        }
        self.check_direct(off, data.len())?;
        let (base, size) = self.range()?;
        if off >= size {
            return Err(Errno::ENOSPC);
        }
        let n = data.len().min((size - off) as usize);
        self.disk
            .queue
            .submit(&[Request::Write {
                off: base + off,
                data: &data[..n],
            }])
            .map_err(host_errno)?;
        let s = &self.disk.stats;
        s.writes.fetch_add(1, Ordering::Relaxed);
        s.write_sectors
            .fetch_add((n as u64).div_ceil(SECTOR), Ordering::Relaxed);
        Ok(n)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(Kstat {
            mode: mode::S_IFBLK | 0o660,
            nlink: 1,
            rdev: vfs::encode_dev(self.disk.major, self.disk.first_minor + self.part),
            blksize: 4096,
            ..Default::default()
        })
    }

    fn size(&self) -> SysResult<u64> {
        Ok(self.range()?.1)
    }

    fn can_poll(&self) -> bool {
        false
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    /// `blkdev_fsync`: the disk's flush (the host file's fsync).
    fn fsync(&self, _datasync: bool) -> Option<SysResult<()>> {
        Some(self.disk.flush())
    }

    /// `blkdev_ioctl` / `blkdev_common_ioctl` (block/ioctl.c) and ubd's `HDIO_GETGEO`.
    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let admin = || io.task.process.capable(CAP_SYS_ADMIN);
        let d = &self.disk;
        match cmd {
            BLKGETSIZE64 => put(mem, arg, &self.range()?.1.to_le_bytes()),
            BLKGETSIZE => put(mem, arg, &(self.range()?.1 / SECTOR).to_le_bytes()),
            BLKSSZGET => put(mem, arg, &(SECTOR as i32).to_le_bytes()),
            BLKPBSZGET | BLKIOMIN => put(mem, arg, &(SECTOR as u32).to_le_bytes()),
            BLKIOOPT | BLKDISCARDZEROES => put(mem, arg, &0u32.to_le_bytes()),
            BLKALIGNOFF => put(mem, arg, &0i32.to_le_bytes()),
            BLKROTATIONAL => put(mem, arg, &1u16.to_le_bytes()),
            BLKGETDISKSEQ => put(mem, arg, &d.seq.to_le_bytes()),
            BLKBSZGET => {
                let bs = d.block_size.load(Ordering::Relaxed) as i32;
                put(mem, arg, &bs.to_le_bytes())
            }
            BLKBSZSET => {
                if !admin() {
                    return Err(Errno::EACCES);
                }
                let n = get_int(mem, arg)?;
                let n = u64::try_from(n).map_err(|_| Errno::EINVAL)?;
                // blk_validate_block_size: a power of two, 512 .. page size.
                if !(SECTOR..=page()).contains(&n) || !n.is_power_of_two() {
                    return Err(Errno::EINVAL);
                }
                d.block_size.store(n, Ordering::Relaxed);
                Ok(0)
            }
            BLKROGET => put(mem, arg, &i32::from(self.ro()).to_le_bytes()),
            BLKROSET => {
                if !admin() {
                    return Err(Errno::EACCES);
                }
                let n = get_int(mem, arg)?;
                d.soft_ro.store(n != 0, Ordering::Relaxed);
                Ok(0)
            }
            BLKRAGET | BLKFRAGET => {
                let sectors = d.ra_pages.load(Ordering::Relaxed) * page() / SECTOR;
                put(mem, arg, &sectors.to_le_bytes())
            }
            BLKRASET | BLKFRASET => {
                if !admin() {
                    return Err(Errno::EACCES);
                }
                d.ra_pages
                    .store(arg.saturating_mul(SECTOR) / page(), Ordering::Relaxed);
                Ok(0)
            }
            BLKFLSBUF => {
                if !admin() {
                    return Err(Errno::EACCES);
                }
                d.flush().map(|()| 0)
            }
            BLKDISCARD => {
                let (off, len) = self.range_arg(mem, arg)?;
                if !d.backend.can_discard() {
                    return Err(Errno::EOPNOTSUPP);
                }
                if self.ro() {
                    return Err(Errno::EPERM);
                }
                d.stats.discards.fetch_add(1, Ordering::Relaxed);
                d.stats
                    .discard_sectors
                    .fetch_add(len / SECTOR, Ordering::Relaxed);
                d.queue
                    .submit(&[Request::Discard { off, len }])
                    .map_err(host_errno)
                    .map(|()| 0)
            }
            BLKZEROOUT => {
                let (off, len) = self.range_arg(mem, arg)?;
                if self.ro() {
                    return Err(Errno::EPERM);
                }
                d.queue
                    .submit(&[Request::WriteZeroes { off, len }])
                    .map_err(host_errno)
                    .map(|()| 0)
            }
            BLKRRPART => {
                if !admin() {
                    return Err(Errno::EACCES);
                }
                if self.part != 0 {
                    return Err(Errno::EINVAL);
                }
                // disk_scan_partitions: not while a partition is open.
                if lock(&d.opens).count.iter().any(|(&p, &n)| p != 0 && n > 0) {
                    return Err(Errno::EBUSY);
                }
                d.rescan();
                Ok(0)
            }
            HDIO_GETGEO => {
                // ubd_getgeo: 128 heads, 32 sectors per track.
                let (base, _) = self.range()?;
                let cyl = (d.size() / (128 * 32 * SECTOR)).min(u64::from(u16::MAX)) as u16;
                put(mem, arg, &hd_geometry(128, 32, cyl, base / SECTOR))
            }
            _ => Err(Errno::ENOTTY),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_never_merges_across_a_flush() {
        let (a, b, c) = ([1u8; 512], [2u8; 512], [3u8; 512]);
        let reqs = [
            Request::Write { off: 0, data: &a },
            Request::Write { off: 512, data: &b },
            Request::Flush,
            Request::Write {
                off: 1024,
                data: &c,
            },
            Request::Write {
                off: 4096,
                data: &c,
            },
            Request::Discard { off: 0, len: 512 },
            Request::Write {
                off: 4608,
                data: &a,
            },
        ];
        assert_eq!(
            plan(&reqs),
            vec![
                Op::Write {
                    off: 0,
                    reqs: vec![0, 1]
                },
                Op::Flush,
                Op::Write {
                    off: 1024,
                    reqs: vec![3]
                },
                Op::Write {
                    off: 4096,
                    reqs: vec![4]
                },
                Op::Discard { off: 0, len: 512 },
                Op::Write {
                    off: 4608,
                    reqs: vec![6]
                },
            ]
        );
    }
}
