//! Loop block devices (Linux `drivers/block/loop.c`): `/dev/loopN` (block 7:N) reads and
//! writes a backing file, and `/dev/loop-control` (misc 10:237) finds, adds and removes them.
//!
//! Key types: [`Loop`] (one device: its number, the [`Binding`] to a backing file while
//! bound, how many opens it has), [`LoopFile`] (an open `/dev/loopN`: the block I/O and the
//! `LOOP_*` and `BLK*` ioctls), [`ControlFile`] (an open `/dev/loop-control`). As in Linux, eight
//! devices exist from the start (`CONFIG_BLK_DEV_LOOP_MIN_COUNT`) and `LOOP_CTL_GET_FREE` adds
//! more on demand; each gets its node in devtmpfs ([`um_fs::devfs::devtmpfs`]), root's, mode
//! 0600 (devtmpfs's default: no udev rules run here).
//!
//! What a loop device holds is the backing [`OpenFile`] itself, so the I/O goes through that
//! file's own operations (tmpfs, hostfs, ...) at `lo_offset`, and the size is recomputed from
//! the file on every call (what `LOOP_SET_CAPACITY` asks Linux to do). A bound device is also
//! a block device file systems mount ([`vfs::register_bdev`]: `mount -o loop IMAGE DIR`,
//! `mount /dev/loop0 DIR`): the mount holds an [`LoopClaim`], an exclusive opener, so
//! `LOOP_CLR_FD` while mounted only marks the device to detach at the last close (as
//! Linux's `loop_clr_fd` with other openers), and a second claim is `EBUSY`. Its reads go
//! and writes go through the backing file in the context of the task being served (the one
//! whose syscall or fault needs the data); a flush is the backing file's fsync. The devices also serve tools (`losetup`, `mkfs`, `dd`) and
//! programs that set one up (LTP's `tst_device`). Direct I/O is refused (`LOOP_SET_DIRECT_IO` 1 is
//! EINVAL, as Linux answers when the backing file cannot do it); partitions are never
//! scanned. It lives with the block drivers (Linux keeps it in `drivers/block/`); `um-bin` calls
//! [`register`] at boot. Neighbours: `um_fs::devfs` (the nodes), `um_kernel::vfs` (the block-device registry:
//! [`vfs::register_blkdev`], [`vfs::open_blkdev`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use um_fs::devfs::devtmpfs;
use um_kernel::arch::native::abi::LoopInfo;
use um_kernel::task::lock;
use um_kernel::vfs::{self, FileOps, GuestMem, Kstat, OpenFile, Owner, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::loopdev::*;
use um_uapi::abi::pod::Pod;
use um_uapi::{Errno, SysResult};

/// `CONFIG_BLK_DEV_LOOP_MIN_COUNT`: devices made at start.
const MIN_COUNT: u32 = 8;
/// `MINORBITS`: the largest device number `LOOP_CTL_ADD` takes is below `1 << 20`.
const MINOR_LIMIT: u64 = 1 << 20;
/// Sector size of the block layer's size units.
const SECTOR: u64 = 512;
use um_uapi::abi::capability::CAP_SYS_ADMIN;
use um_uapi::abi::fcntl::O_ACCMODE;
/// `LLONG_MAX`: offsets and size limits above it are `EOVERFLOW` (`loop_set_status_from_info`).
const LLONG_MAX: u64 = i64::MAX as u64;

/// A bound device's state (Linux `struct loop_device` while `Lo_bound`).
struct Binding {
    file: Arc<OpenFile>,
    offset: u64,
    sizelimit: u64,
    flags: u32,
    block_size: u32,
    file_name: [u8; LO_NAME_SIZE],
    crypt_name: [u8; LO_NAME_SIZE],
}

impl Binding {
    /// Size in bytes (`get_size`: the file's size past the offset, at most the size limit,
    /// whole sectors).
    fn capacity(&self) -> u64 {
        let size = self.file.ops.size().unwrap_or(0);
        let mut n = size.saturating_sub(self.offset);
        if self.sizelimit > 0 && self.sizelimit < n {
            n = self.sizelimit;
        }
        n / SECTOR * SECTOR
    }
}

/// One loop device.
pub struct Loop {
    number: u32,
    state: Mutex<LoopState>,
}

impl Loop {
    /// The backing file, its offset, the device's size and whether it is read-only, for one
    /// I/O call of an open device or a file system's claim; `None` while unbound.
    fn io_target(&self) -> Option<(Arc<OpenFile>, u64, u64, bool)> {
        let st = lock(&self.state);
        st.binding.as_ref().map(|b| {
            (
                b.file.clone(),
                b.offset,
                b.capacity(),
                b.flags & LO_FLAGS_READ_ONLY != 0,
            )
        })
    }
}

#[derive(Default)]
struct LoopState {
    binding: Option<Binding>,
    /// Open `/dev/loopN` files (`disk_openers`), a file system's claim included.
    openers: usize,
    /// A file system holds the device ([`LoopClaim`]).
    claimed: bool,
}

fn devices() -> &'static Mutex<BTreeMap<u32, Arc<Loop>>> {
    static DEVICES: OnceLock<Mutex<BTreeMap<u32, Arc<Loop>>>> = OnceLock::new();
    DEVICES.get_or_init(Default::default)
}

fn node_name(n: u32) -> Vec<u8> {
    format!("loop{n}").into_bytes()
}

/// Adds device `n` (`loop_add`): registry, driver, devtmpfs node. `EEXIST` if it exists.
fn add(n: u32) -> SysResult<Arc<Loop>> {
    let lo = {
        let mut devs = lock(devices());
        if devs.contains_key(&n) {
            return Err(Errno::EEXIST);
        }
        let lo = Arc::new(Loop {
            number: n,
            state: Mutex::new(LoopState::default()),
        });
        devs.insert(n, lo.clone());
        lo
    };
    let weak = Arc::downgrade(&lo);
    vfs::register_blkdev(
        LOOP_MAJOR,
        n,
        Arc::new(move |_io: &IoCtx<'_>, flags: u32| {
            let lo = weak.upgrade().ok_or(Errno::ENXIO)?;
            lock(&lo.state).openers += 1;
            Ok(Box::new(LoopFile {
                lo,
                write: flags & O_ACCMODE != 0,
            }) as Box<dyn FileOps>)
        }),
    );
    let weak = Arc::downgrade(&lo);
    vfs::register_bdev(
        LOOP_MAJOR,
        n,
        String::from_utf8_lossy(&node_name(n)).into_owned(),
        Arc::new(move |write: bool| {
            let lo = weak.upgrade().ok_or(Errno::ENXIO)?;
            LoopClaim::new(lo, write).map(|c| Arc::new(c) as Arc<dyn vfs::BlockDevice>)
        }),
    );
    let made = devtmpfs().mknod(
        &node_name(n),
        mode::S_IFBLK | 0o600,
        vfs::encode_dev(LOOP_MAJOR, n),
        Owner::default(),
    );
    if let Err(e) = made
        && e != Errno::EEXIST
    {
        log::warn!("loop: cannot make /dev/loop{n}: {e}");
    }
    Ok(lo)
}

/// Removes idle device `n` (`loop_control_remove`).
fn remove(n: u32) -> SysResult<()> {
    {
        let mut devs = lock(devices());
        let lo = devs.get(&n).ok_or(Errno::ENODEV)?;
        let st = lock(&lo.state);
        if st.binding.is_some() || st.openers > 0 {
            return Err(Errno::EBUSY);
        }
        drop(st);
        devs.remove(&n);
    }
    vfs::unregister_blkdev(LOOP_MAJOR, n);
    vfs::unregister_bdev(LOOP_MAJOR, n);
    let _ = devtmpfs().unlink(&node_name(n));
    Ok(())
}

/// The lowest unbound device, made if every device is bound (`loop_control_get_free`).
fn get_free() -> SysResult<u32> {
    let (free, next) = {
        let devs = lock(devices());
        let free = devs
            .values()
            .find(|lo| lock(&lo.state).binding.is_none())
            .map(|lo| lo.number);
        // The lowest number not in use (`idr_alloc` from 0).
        let next = (0..).find(|n| !devs.contains_key(n)).unwrap_or(0);
        (free, next)
    };
    match free {
        Some(n) => Ok(n),
        None => add(next).map(|lo| lo.number),
    }
}

/// Registers `/dev/loop-control` and makes the first devices; at boot, with the other drivers.
pub fn register() {
    vfs::register_chrdev(
        MISC_MAJOR,
        LOOP_CTRL_MINOR,
        Arc::new(|_io: &IoCtx<'_>, _flags: u32| Ok(Box::new(ControlFile) as Box<dyn FileOps>)),
    );
    let made = devtmpfs().mknod(
        b"loop-control",
        mode::S_IFCHR | 0o600,
        vfs::encode_dev(MISC_MAJOR, LOOP_CTRL_MINOR),
        Owner::default(),
    );
    if let Err(e) = made
        && e != Errno::EEXIST
    {
        log::warn!("loop: cannot make /dev/loop-control: {e}");
    }
    for n in 0..MIN_COUNT {
        let _ = add(n);
    }
}

/// An open `/dev/loop-control`.
struct ControlFile;

impl FileOps for ControlFile {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(Kstat {
            mode: mode::S_IFCHR | 0o600,
            nlink: 1,
            rdev: vfs::encode_dev(MISC_MAJOR, LOOP_CTRL_MINOR),
            blksize: 4096,
            ..Default::default()
        })
    }

    fn can_poll(&self) -> bool {
        false
    }

    /// `loop_control_ioctl`: the argument is a device number, not a pointer.
    fn ioctl(
        &self,
        _io: &IoCtx<'_>,
        cmd: u32,
        arg: u64,
        _mem: &mut dyn GuestMem,
    ) -> SysResult<u64> {
        match cmd {
            LOOP_CTL_ADD => {
                // A negative index asks for any number (`loop_add(-1)`).
                let n = if (arg as i64) < 0 {
                    let devs = lock(devices());
                    (0..).find(|n| !devs.contains_key(n)).unwrap_or(0)
                } else if arg >= MINOR_LIMIT {
                    return Err(Errno::EINVAL);
                } else {
                    arg as u32
                };
                add(n).map(|lo| u64::from(lo.number))
            }
            LOOP_CTL_REMOVE => {
                if (arg as i64) < 0 || arg >= MINOR_LIMIT {
                    // "deleting an unspecified loop device is not supported"
                    return Err(Errno::EINVAL);
                }
                remove(arg as u32).map(|()| 0)
            }
            LOOP_CTL_GET_FREE => get_free().map(u64::from),
            _ => Err(Errno::ENOTTY),
        }
    }
}

/// A loop device held by a mounted file system (`bdev_file_open_by_dev` with a holder).
pub struct LoopClaim {
    lo: Arc<Loop>,
    /// Claimed for writing (a read-write mount).
    write: bool,
}

impl LoopClaim {
    /// Claims `lo`: `ENXIO` while it is unbound (nothing to read: Linux's mount fails on the
    /// empty device), `EBUSY` while another file system holds it, `EACCES` for write access
    /// to a read-only binding (`bdev_permission`: `FMODE_WRITE` on a read-only disk).
    fn new(lo: Arc<Loop>, write: bool) -> SysResult<LoopClaim> {
        let mut st = lock(&lo.state);
        let b = st.binding.as_ref().ok_or(Errno::ENXIO)?;
        if write && b.flags & LO_FLAGS_READ_ONLY != 0 {
            return Err(Errno::EACCES);
        }
        if st.claimed {
            return Err(Errno::EBUSY);
        }
        st.claimed = true;
        st.openers += 1;
        drop(st);
        Ok(LoopClaim { lo, write })
    }

    /// One block transfer of `len` bytes at device offset `off` through the backing file, as
    /// the task being served (a `BlockDevice` call has none of its own): `step(file, io, done,
    /// file offset)` moves what it can from byte `done` on, until all `len` moved; `EIO` past
    /// the end, with no task, on an error or a zero-length step; `EROFS` for a write to a
    /// read-only claim or binding.
    fn transfer(
        &self,
        off: u64,
        len: usize,
        write: bool,
        mut step: impl FnMut(&OpenFile, &IoCtx<'_>, usize, u64) -> SysResult<usize>,
    ) -> SysResult<()> {
        let (file, base, cap, ro) = self.target().ok_or(Errno::EIO)?;
        if write && (ro || !self.write) {
            return Err(Errno::EROFS);
        }
        let end = off.checked_add(len as u64).ok_or(Errno::EIO)?;
        if end > cap {
            return Err(Errno::EIO);
        }
        let task = um_kernel::current::current().ok_or(Errno::EIO)?;
        let io = IoCtx {
            task: &task,
            nonblock: false,
            flags: 0,
        };
        let mut done = 0;
        while done < len {
            match step(&file, &io, done, base + off + done as u64) {
                Ok(0) => return Err(Errno::EIO),
                Ok(n) => done += n,
                Err(Errno::EINTR) => {}
                Err(_) => return Err(Errno::EIO),
            }
        }
        Ok(())
    }

    fn target(&self) -> Option<(Arc<OpenFile>, u64, u64, bool)> {
        self.lo.io_target()
    }
}

impl Drop for LoopClaim {
    /// The unmount's release: as [`LoopFile`]'s last close, it detaches an autoclear device.
    fn drop(&mut self) {
        let mut st = lock(&self.lo.state);
        st.claimed = false;
        st.openers = st.openers.saturating_sub(1);
        if st.openers == 0
            && st
                .binding
                .as_ref()
                .is_some_and(|b| b.flags & LO_FLAGS_AUTOCLEAR != 0)
        {
            st.binding = None;
        }
    }
}

impl vfs::BlockDevice for LoopClaim {
    fn size(&self) -> u64 {
        self.target().map_or(0, |(_, _, cap, _)| cap)
    }

    /// Reads the backing file at `lo_offset + off` as the task being served (its syscall or
    /// fault needs the data); `EIO` past the end, with no task, or on a short read.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<()> {
        let len = buf.len();
        self.transfer(off, len, false, |file, io, done, at| {
            file.ops.read(io, &mut buf[done..], at)
        })
    }

    fn read_only(&self) -> bool {
        self.target().is_none_or(|(_, _, _, ro)| ro)
    }

    /// Writes the backing file at `lo_offset + off` as the task being served; `EROFS` on a
    /// read-only claim or binding, `EIO` past the end, with no task, or on a short write.
    fn write_at(&self, off: u64, data: &[u8]) -> SysResult<()> {
        self.transfer(off, data.len(), true, |file, io, done, at| {
            file.ops.write(io, &data[done..], at)
        })
    }

    /// `blkdev_issue_flush` on a loop device: the backing file's fsync (`lo_req_flush`,
    /// `vfs_fsync`), through its driver's or its inode's.
    fn flush(&self) -> SysResult<()> {
        let Some((file, ..)) = self.target() else {
            return Ok(());
        };
        if let Some(r) = file.ops.fsync(false) {
            return r;
        }
        match &file.dentry {
            Some(d) => d.inode.fsync(false),
            None => Ok(()),
        }
    }

    fn name(&self) -> String {
        String::from_utf8_lossy(&node_name(self.lo.number)).into_owned()
    }

    fn rdev(&self) -> u64 {
        vfs::encode_dev(LOOP_MAJOR, self.lo.number)
    }
}

/// An open `/dev/loopN`.
pub struct LoopFile {
    lo: Arc<Loop>,
    /// Opened for writing (`FMODE_WRITE`).
    write: bool,
}

impl Drop for LoopFile {
    /// `lo_release`: the last close of a device marked `LO_FLAGS_AUTOCLEAR` detaches it.
    fn drop(&mut self) {
        let mut st = lock(&self.lo.state);
        st.openers = st.openers.saturating_sub(1);
        if st.openers == 0
            && st
                .binding
                .as_ref()
                .is_some_and(|b| b.flags & LO_FLAGS_AUTOCLEAR != 0)
        {
            st.binding = None;
        }
    }
}

/// Whether `file` is loop device `target` or is backed, through loop devices, by it
/// (`loop_validate_file`: a loop device may not end up backing itself).
fn backs_itself(file: &OpenFile, target: &Arc<Loop>) -> bool {
    let mut cur = file
        .ops
        .as_any()
        .and_then(|a| a.downcast_ref::<LoopFile>())
        .map(|f| f.lo.clone());
    // The chain is finite (each link was validated when it was made); bound it anyway.
    for _ in 0..64 {
        let Some(lo) = cur else { return false };
        if Arc::ptr_eq(&lo, target) {
            return true;
        }
        cur = lock(&lo.state).binding.as_ref().and_then(|b| {
            b.file
                .ops
                .as_any()
                .and_then(|a| a.downcast_ref::<LoopFile>())
                .map(|f| f.lo.clone())
        });
    }
    true
}

/// `blk_validate_block_size`: a power of two from 512 to the page size.
fn valid_block_size(bs: u64) -> bool {
    (512..=um_mm::page_size() as u64).contains(&bs) && bs.is_power_of_two()
}

/// The status fields `LOOP_SET_STATUS*` and `LOOP_CONFIGURE` take (`loop_set_status_from_info`).
fn apply_info(b: &mut Binding, info: &LoopInfo64) -> SysResult<()> {
    if info.lo_encrypt_key_size as usize > LO_KEY_SIZE {
        return Err(Errno::EINVAL);
    }
    if info.lo_offset > LLONG_MAX || info.lo_sizelimit > LLONG_MAX {
        return Err(Errno::EOVERFLOW);
    }
    b.offset = info.lo_offset;
    b.sizelimit = info.lo_sizelimit;
    b.file_name = info.lo_file_name;
    b.file_name[LO_NAME_SIZE - 1] = 0;
    b.crypt_name = info.lo_crypt_name;
    b.crypt_name[LO_NAME_SIZE - 1] = 0;
    Ok(())
}

/// The old `struct loop_info` as a `loop_info64` (`loop_info64_from_old`).
fn info64_from_old(o: &OldLoopInfo) -> LoopInfo64 {
    let mut i = LoopInfo64 {
        lo_device: o.lo_device,
        lo_inode: o.lo_inode,
        lo_rdevice: o.lo_rdevice,
        // An int, sign-extended as C converts it.
        lo_offset: i64::from(o.lo_offset) as u64,
        lo_number: o.lo_number as u32,
        lo_encrypt_type: o.lo_encrypt_type as u32,
        lo_encrypt_key_size: o.lo_encrypt_key_size as u32,
        lo_flags: o.lo_flags as u32,
        ..Default::default()
    };
    i.lo_file_name = o.lo_name;
    i
}

/// A `loop_info64` as the old `struct loop_info` (`loop_info64_to_old`): `EOVERFLOW` when a
/// value does not fit.
fn info64_to_old(i: &LoopInfo64, dev_bits: u32) -> SysResult<OldLoopInfo> {
    let fits = |v: u64| dev_bits >= 64 || v >> dev_bits == 0;
    if i.lo_offset > i32::MAX as u64 || !fits(i.lo_device) || !fits(i.lo_rdevice) {
        return Err(Errno::EOVERFLOW);
    }
    Ok(OldLoopInfo {
        lo_number: i.lo_number as i32,
        lo_device: i.lo_device,
        lo_inode: i.lo_inode,
        lo_rdevice: i.lo_rdevice,
        lo_offset: i.lo_offset as i32,
        lo_encrypt_type: i.lo_encrypt_type as i32,
        lo_encrypt_key_size: i.lo_encrypt_key_size as i32,
        lo_flags: i.lo_flags as i32,
        lo_name: i.lo_file_name,
    })
}

/// The flags after `LOOP_SET_STATUS*` (loop.c `loop_set_status`): only AUTOCLEAR and
/// PARTSCAN change, and of those only AUTOCLEAR can be cleared.
fn status_flags(prev: u32, asked: u32) -> u32 {
    (asked & LOOP_SET_STATUS_SETTABLE_FLAGS)
        | (prev & !LOOP_SET_STATUS_SETTABLE_FLAGS)
        | (prev & !LOOP_SET_STATUS_CLEARABLE_FLAGS)
}

impl LoopFile {
    fn get_status(&self) -> SysResult<LoopInfo64> {
        let st = lock(&self.lo.state);
        let b = st.binding.as_ref().ok_or(Errno::ENXIO)?;
        let s = b.file.ops.stat()?;
        let is_blk = s.mode & mode::S_IFMT == mode::S_IFBLK;
        Ok(LoopInfo64 {
            lo_device: s.dev,
            lo_inode: s.ino,
            lo_rdevice: if is_blk { s.rdev } else { 0 },
            lo_offset: b.offset,
            lo_sizelimit: b.sizelimit,
            lo_number: self.lo.number,
            lo_flags: b.flags,
            lo_file_name: b.file_name,
            lo_crypt_name: b.crypt_name,
            ..Default::default()
        })
    }

    fn set_status(&self, io: &IoCtx<'_>, info: &LoopInfo64) -> SysResult<u64> {
        if !self.write && !io.task.process.capable(CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        let mut st = lock(&self.lo.state);
        let b = st.binding.as_mut().ok_or(Errno::ENXIO)?;
        let prev = b.flags;
        apply_info(b, info)?;
        b.flags = status_flags(prev, info.lo_flags);
        Ok(0)
    }

    /// `LOOP_SET_FD` and `LOOP_CONFIGURE` (`loop_configure`).
    fn configure(&self, io: &IoCtx<'_>, fd: u64, cfg: Option<&LoopConfig>) -> SysResult<u64> {
        let file = lock(&io.task.process.files()).get(fd)?;
        let s = file.ops.stat()?;
        let fmt = s.mode & mode::S_IFMT;
        if fmt != mode::S_IFREG && fmt != mode::S_IFBLK {
            return Err(Errno::EINVAL);
        }
        if backs_itself(&file, &self.lo) {
            return Err(Errno::EINVAL);
        }
        let mut flags = 0;
        let mut block_size = SECTOR as u32;
        if let Some(c) = cfg {
            if c.info.lo_flags & !LOOP_CONFIGURE_SETTABLE_FLAGS != 0 {
                return Err(Errno::EINVAL);
            }
            if c.block_size != 0 {
                if !valid_block_size(u64::from(c.block_size)) {
                    return Err(Errno::EINVAL);
                }
                block_size = c.block_size;
            }
            // Direct I/O is not offered (see the module docs).
            flags = c.info.lo_flags & !LO_FLAGS_DIRECT_IO;
        }
        if file.flags() & O_ACCMODE == 0 || !self.write {
            flags |= LO_FLAGS_READ_ONLY;
        }
        let mut st = lock(&self.lo.state);
        if st.binding.is_some() {
            return Err(Errno::EBUSY);
        }
        let mut b = Binding {
            file,
            offset: 0,
            sizelimit: 0,
            flags,
            block_size,
            file_name: [0; LO_NAME_SIZE],
            crypt_name: [0; LO_NAME_SIZE],
        };
        if let Some(c) = cfg {
            apply_info(&mut b, &c.info)?;
        }
        st.binding = Some(b);
        Ok(0)
    }

    /// `LOOP_CLR_FD` (`loop_clr_fd`): detach now, or at the last close when others have the
    /// device open.
    fn clear(&self) -> SysResult<u64> {
        let mut st = lock(&self.lo.state);
        let openers = st.openers;
        let b = st.binding.as_mut().ok_or(Errno::ENXIO)?;
        if openers > 1 {
            b.flags |= LO_FLAGS_AUTOCLEAR;
        } else {
            st.binding = None;
        }
        Ok(0)
    }

    /// `LOOP_CHANGE_FD` (`loop_change_fd`): a read-only device may swap its backing file for
    /// one of the same size.
    fn change_fd(&self, io: &IoCtx<'_>, fd: u64) -> SysResult<u64> {
        let file = lock(&io.task.process.files()).get(fd)?;
        let fmt = file.ops.stat()?.mode & mode::S_IFMT;
        if fmt != mode::S_IFREG && fmt != mode::S_IFBLK || backs_itself(&file, &self.lo) {
            return Err(Errno::EINVAL);
        }
        let mut st = lock(&self.lo.state);
        let b = st.binding.as_mut().ok_or(Errno::ENXIO)?;
        if b.flags & LO_FLAGS_READ_ONLY == 0 {
            return Err(Errno::EINVAL);
        }
        if file.ops.size()? != b.file.ops.size()? {
            return Err(Errno::EINVAL);
        }
        b.file = file;
        Ok(0)
    }

    fn capacity(&self) -> u64 {
        lock(&self.lo.state)
            .binding
            .as_ref()
            .map_or(0, Binding::capacity)
    }

    /// The backing file, its offset and the device's size, for one I/O call.
    fn io_target(&self) -> Option<(Arc<OpenFile>, u64, u64, bool)> {
        self.lo.io_target()
    }
}

fn put<T: Pod>(mem: &mut dyn GuestMem, arg: u64, v: T) -> SysResult<u64> {
    mem.write(arg, &v.as_bytes())?;
    Ok(0)
}

fn get<T: Pod>(mem: &mut dyn GuestMem, arg: u64) -> SysResult<T> {
    let mut b = vec![0u8; T::SIZE];
    mem.read(arg, &mut b)?;
    Ok(T::read_le(&b))
}

impl FileOps for LoopFile {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let Some((file, base, cap, _)) = self.io_target() else {
            return Ok(0);
        };
        if off >= cap {
            return Ok(0);
        }
        let n = buf.len().min((cap - off) as usize);
        file.ops.read(io, &mut buf[..n], base + off)
    }

    /// block/fops.c `blkdev_write_iter`: EPERM on a read-only device, ENOSPC at the end.
    fn write(&self, io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        let Some((file, base, cap, ro)) = self.io_target() else {
            return Err(Errno::ENOSPC);
        };
        if ro {
            return Err(Errno::EPERM);
        }
        if off >= cap {
            return Err(Errno::ENOSPC);
        }
        let n = data.len().min((cap - off) as usize);
        file.ops.write(io, &data[..n], base + off)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(Kstat {
            mode: mode::S_IFBLK | 0o600,
            nlink: 1,
            rdev: vfs::encode_dev(LOOP_MAJOR, self.lo.number),
            blksize: 4096,
            ..Default::default()
        })
    }

    /// A block device's size is its capacity (`SEEK_END`).
    fn size(&self) -> SysResult<u64> {
        Ok(self.capacity())
    }

    /// Block devices have no poll method.
    fn can_poll(&self) -> bool {
        false
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    /// `lo_ioctl`, then the generic block ioctls of block/ioctl.c `blkdev_common_ioctl`.
    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let admin = || io.task.process.capable(CAP_SYS_ADMIN);
        match cmd {
            LOOP_SET_FD => self.configure(io, arg, None),
            LOOP_CONFIGURE => {
                let cfg: LoopConfig = get(mem, arg)?;
                self.configure(io, u64::from(cfg.fd), Some(&cfg))
            }
            LOOP_CHANGE_FD => self.change_fd(io, arg),
            LOOP_CLR_FD => self.clear(),
            LOOP_SET_STATUS => {
                let old: LoopInfo = get(mem, arg)?;
                self.set_status(io, &info64_from_old(&old.to_info()))
            }
            LOOP_SET_STATUS64 => {
                let info: LoopInfo64 = get(mem, arg)?;
                self.set_status(io, &info)
            }
            LOOP_GET_STATUS => {
                let info = self.get_status()?;
                let old = info64_to_old(&info, LoopInfo::DEV_BITS)?;
                put(mem, arg, LoopInfo::from_info(&old))
            }
            LOOP_GET_STATUS64 => {
                let info = self.get_status()?;
                put(mem, arg, info)
            }
            LOOP_SET_CAPACITY | LOOP_SET_DIRECT_IO | LOOP_SET_BLOCK_SIZE => {
                if !self.write && !admin() {
                    return Err(Errno::EPERM);
                }
                let mut st = lock(&self.lo.state);
                let b = st.binding.as_mut().ok_or(Errno::ENXIO)?;
                match cmd {
                    // The size is read from the file on every call already.
                    LOOP_SET_CAPACITY => Ok(0),
                    LOOP_SET_DIRECT_IO if arg == 0 => Ok(0),
                    LOOP_SET_DIRECT_IO => Err(Errno::EINVAL),
                    _ => {
                        if !valid_block_size(arg) {
                            return Err(Errno::EINVAL);
                        }
                        b.block_size = arg as u32;
                        Ok(0)
                    }
                }
            }
            BLKGETSIZE64 => put(mem, arg, self.capacity()),
            BLKGETSIZE => put(mem, arg, self.capacity() / SECTOR),
            BLKSSZGET | BLKBSZGET | BLKPBSZGET | BLKIOMIN => {
                let bs = lock(&self.lo.state)
                    .binding
                    .as_ref()
                    .map_or(SECTOR as u32, |b| b.block_size);
                put(mem, arg, bs)
            }
            BLKIOOPT => put(mem, arg, 0u32),
            BLKROGET => {
                let ro = lock(&self.lo.state)
                    .binding
                    .as_ref()
                    .is_some_and(|b| b.flags & LO_FLAGS_READ_ONLY != 0);
                put(mem, arg, i32::from(ro))
            }
            BLKFLSBUF => {
                if !admin() {
                    return Err(Errno::EACCES);
                }
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_flags_follow_loop_set_status() {
        // AUTOCLEAR and PARTSCAN can be set; READ_ONLY stays as it was.
        assert_eq!(
            status_flags(LO_FLAGS_READ_ONLY, LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN),
            LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN
        );
        // READ_ONLY cannot be set or cleared through it.
        assert_eq!(status_flags(0, LO_FLAGS_READ_ONLY), 0);
        assert_eq!(status_flags(LO_FLAGS_READ_ONLY, 0), LO_FLAGS_READ_ONLY);
        // AUTOCLEAR can be cleared, PARTSCAN cannot.
        assert_eq!(
            status_flags(LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN, 0),
            LO_FLAGS_PARTSCAN
        );
    }

    #[test]
    fn old_info_conversions() {
        let mut o = OldLoopInfo {
            lo_offset: -1,
            lo_flags: 4,
            ..Default::default()
        };
        o.lo_name[0] = b'x';
        let i = info64_from_old(&o);
        // A negative int offset sign-extends to a value set_status refuses with EOVERFLOW.
        assert_eq!(i.lo_offset, u64::MAX);
        assert_eq!(i.lo_file_name[0], b'x');
        let big = LoopInfo64 {
            lo_offset: 1 << 31,
            ..Default::default()
        };
        assert_eq!(info64_to_old(&big, 64), Err(Errno::EOVERFLOW));
        let dev = LoopInfo64 {
            lo_device: 1 << 32,
            ..Default::default()
        };
        assert_eq!(info64_to_old(&dev, 32), Err(Errno::EOVERFLOW));
        assert!(info64_to_old(&dev, 64).is_ok());
    }

    #[test]
    fn block_sizes() {
        assert!(valid_block_size(512));
        assert!(valid_block_size(4096));
        assert!(!valid_block_size(256));
        assert!(!valid_block_size(1536));
        assert!(!valid_block_size(1 << 20));
    }
}
