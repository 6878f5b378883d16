//! ext4 in safe Rust (Linux `fs/ext4`), read side: mounts ext2, ext3 and ext4 images from a
//! block device (`mount -t ext4 -o ro /dev/ubdb /mnt`, `root=/dev/ubda ro rootfstype=ext4`).
//!
//! What it reads: 1K to 64K blocks, 32- and 64-bit group descriptors (`64bit`, `meta_bg`,
//! `flex_bg`), 128-byte and larger inodes with `i_extra_isize`, nanosecond and extended
//! timestamps, extent trees of any depth with unwritten extents, ext2/ext3 indirect blocks,
//! linear and htree directories, inline data, fast and slow symlinks, extended attributes in
//! the inode and in a block, and `metadata_csum` (with `csum_seed`) or `gdt_csum` checksums,
//! all verified. Features are gated as Linux's `ext4_feature_set_ok` does: an incompatible
//! feature this driver does not know refuses the mount with one log line, an unknown
//! read-only-compatible one would force read-only. Writing ([`write`]): read-write mounts
//! of ext4 with extents (other images are `EROFS` for `rw` with a log line), journaled
//! with JBD2 ([`jbd2`]) when the image has a journal; a journal that needs recovery is
//! replayed at mount (unless `-o noload`). Not yet: EA inodes, encryption, casefolding.
//!
//! Modules: [`crc`] (crc32c, crc16), [`disk`] (on-disk structures), [`fs`] (the mounted file
//! system: maps, data, directories, xattrs), [`hash`] (the htree name hashes), [`vfs`] (the kernel's inode and file objects),
//! [`write`] (allocation, extents, directories, xattrs on a read-write mount), [`jbd2`]
//! (journal replay and the journal of a read-write mount; its commit thread and `sync(2)`
//! hook are here).
//! [`register`] adds the `ext4`, `ext3` and `ext2` types to `um_fs::mount` (which also mounts
//! the boot's `root=/dev/...` through them).

#![forbid(unsafe_code)]

pub mod crc;
pub mod disk;
pub mod fs;
pub mod hash;
pub mod jbd2;
pub mod vfs;
pub mod write;

#[cfg(test)]
mod jtests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wtests;

use std::sync::{Arc, Mutex, Once, OnceLock, Weak};
use um_kernel::vfs::{BlockDevice, Inode};
use um_uapi::{Errno, SysResult};

/// `MS_RDONLY`.
const MS_RDONLY: u64 = 1;

/// Mount options this driver acts on.
struct Opts {
    /// `noload`/`norecovery`: the journal is neither replayed nor used.
    noload: bool,
    /// `commit=N` seconds (0: the default, 5).
    commit: u64,
}

/// Mount options (fs/ext4/super.c `ext4_param_specs`): the ones that change nothing here
/// are accepted; `noload`/`norecovery` skip the journal, `commit=` sets the commit interval.
fn parse_options(dev: &str, data: &[u8]) -> SysResult<Opts> {
    let mut o = Opts {
        noload: false,
        commit: 0,
    };
    for opt in data.split(|&c| c == b',').filter(|o| !o.is_empty()) {
        let mut kv = opt.splitn(2, |&c| c == b'=');
        let key = kv.next().unwrap_or(opt);
        match key {
            b"noload" | b"norecovery" => o.noload = true,
            b"commit" => {
                let v = kv.next().and_then(|v| std::str::from_utf8(v).ok());
                match v.map(|v| v.parse::<u64>()) {
                    None => o.commit = 0,
                    Some(Ok(n)) if n <= i32::MAX as u64 / 1000 => o.commit = n,
                    _ => {
                        log::error!("EXT4-fs ({dev}): bad value for commit");
                        return Err(Errno::EINVAL);
                    }
                }
            }
            b"ro" | b"rw" | b"errors" | b"data" | b"barrier" | b"nobarrier" | b"user_xattr"
            | b"nouser_xattr" | b"acl" | b"noacl" | b"discard" | b"nodiscard"
            | b"journal_checksum" | b"auto_da_alloc" | b"noauto_da_alloc" | b"delalloc"
            | b"nodelalloc" | b"dioread_nolock" | b"dioread_lock" | b"lazytime" | b"nolazytime"
            | b"block_validity" | b"noblock_validity" | b"i_version" | b"init_itable"
            | b"noinit_itable" | b"quota" | b"noquota" | b"usrquota" | b"grpquota"
            | b"prjquota" | b"resuid" | b"resgid" | b"sb" => {}
            _ => {
                log::error!(
                    "EXT4-fs ({dev}): Unrecognized mount option \"{}\" or missing value",
                    String::from_utf8_lossy(opt)
                );
                return Err(Errno::EINVAL);
            }
        }
    }
    Ok(o)
}

/// Whether an image may be mounted as `fstype` (fs/ext4/super.c `ext2_feature_set_ok`,
/// `ext3_feature_set_ok`): `ext2` takes only `filetype` and `meta_bg` of the incompatible
/// features, `ext3` also `recover` and needs a journal; `ext4` takes all this driver reads.
fn type_ok(fstype: &str, sb: &disk::Super) -> bool {
    use disk::incompat::*;
    match fstype {
        "ext2" => sb.incompat & !(FILETYPE | META_BG) == 0,
        "ext3" => {
            sb.incompat & !(FILETYPE | RECOVER | META_BG) == 0
                && sb.compat & disk::compat::HAS_JOURNAL != 0
        }
        _ => true,
    }
}

/// Mounts the file system on `dev` as `fstype` (`ext4_fill_super`) and gives its root.
pub fn mount(
    fstype: &str,
    dev: Arc<dyn BlockDevice>,
    flags: u64,
    data: &[u8],
) -> SysResult<Arc<dyn Inode>> {
    let name = dev.name();
    let opts = parse_options(&name, data)?;
    let noload = opts.noload;
    let rw = flags & MS_RDONLY == 0;
    if rw && dev.read_only() {
        log::error!("EXT4-fs ({name}): write access unavailable, the device is read-only");
        return Err(Errno::EROFS);
    }
    let mut fs = fs::Ext4::open_errno(dev, noload).map_err(|(errno, e)| {
        log::error!("EXT4-fs ({name}): {e}");
        errno
    })?;
    if opts.commit > 0 {
        fs.commit_interval = std::time::Duration::from_secs(opts.commit);
    }
    if !type_ok(fstype, &fs.sb) {
        log::error!(
            "EXT4-fs ({name}): couldn't mount as {fstype} due to feature incompatibilities"
        );
        return Err(Errno::EINVAL);
    }
    let unknown_ro = fs.sb.unknown_ro_compat();
    if unknown_ro != 0 && !rw {
        log::warn!("EXT4-fs ({name}): unknown read-only features ({unknown_ro:x}), read-only");
    }
    if rw {
        if let Some(why) = write::write_refusal(&fs.sb) {
            log::error!("EXT4-fs ({name}): {why}");
            return Err(Errno::EROFS);
        }
        let has_journal = fs.sb.compat & disk::compat::HAS_JOURNAL != 0;
        if has_journal && noload {
            log::warn!("EXT4-fs ({name}): journal not loaded (noload): metadata not journaled");
        }
        fs.enable_write().map_err(|e| {
            log::error!("EXT4-fs ({name}): {e}");
            Errno::EROFS
        })?;
        match fs.orphan_cleanup() {
            Ok(0) => {}
            Ok(n) => log::info!("EXT4-fs ({name}): {n} orphan inodes deleted"),
            Err(e) => log::warn!("EXT4-fs ({name}): orphan cleanup failed: {e:?}"),
        }
    }
    let mode = match (rw, fs.j.is_some()) {
        (true, true) => "r/w with ordered data mode",
        (true, false) => "r/w without journal",
        (false, _) => "ro",
    };
    log::info!(
        "EXT4-fs ({name}): mounted filesystem {} {} with {} blocks of {} bytes",
        fmt_uuid(&fs.sb.uuid),
        mode,
        fs.sb.blocks_count,
        fs.sb.block_size
    );
    let journaled = fs.j.is_some();
    let m = Arc::new(vfs::Mounted {
        fs,
        fs_id: um_kernel::vfs::new_fs_id(),
        vms: Default::default(),
    });
    if journaled {
        journaled_mount(&m);
    }
    Ok(vfs::Ext4Inode::root(m)?)
}

/// Journaled mounts, for the commit timer and `sync(2)`.
fn journaled() -> &'static Mutex<Vec<Weak<vfs::Mounted>>> {
    static M: OnceLock<Mutex<Vec<Weak<vfs::Mounted>>>> = OnceLock::new();
    M.get_or_init(Default::default)
}

/// The live journaled mounts (the dead ones leave the list).
fn live_journaled() -> Vec<Arc<vfs::Mounted>> {
    let mut l = um_kernel::task::lock(journaled());
    l.retain(|w| w.strong_count() > 0);
    l.iter().filter_map(Weak::upgrade).collect()
}

/// Adds a journaled mount to the list and starts the commit thread (kjournald2, one for
/// all mounts: it wakes every second and commits transactions open for `commit=`).
fn journaled_mount(m: &Arc<vfs::Mounted>) {
    um_kernel::task::lock(journaled()).push(Arc::downgrade(m));
    static THREAD: Once = Once::new();
    THREAD.call_once(|| {
        let r = std::thread::Builder::new().name("jbd2".into()).spawn(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
                for m in live_journaled() {
                    m.fs.journal_tick();
                }
            }
        });
        if let Err(e) = r {
            log::error!("JBD2: cannot start the commit thread: {e}");
        }
    });
}

fn fmt_uuid(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The kernel's shutdown hook: every journaled mount is committed, checkpointed and left
/// clean (see [`fs::Ext4::shutdown_journal`]).
pub fn shutdown() {
    for m in live_journaled() {
        m.fs.shutdown_journal();
    }
}

/// Adds `ext4`, `ext3` and `ext2` (one driver for all three, as Linux with
/// `CONFIG_EXT4_USE_FOR_EXT2`) to the mount table's block-device file systems.
pub fn register() {
    // sync(2)/syncfs(2): every journaled mount commits (ext4_sync_fs).
    um_kernel::vfs::register_sync(Arc::new(|| {
        for m in live_journaled() {
            if let Err(e) = m.fs.sync() {
                log::warn!("EXT4-fs ({}): sync failed: {e}", m.fs.dev_name());
            }
        }
    }));
    for name in ["ext4", "ext3", "ext2"] {
        um_fs::mount::register_bdev_fs(
            name,
            Arc::new(move |dev, flags, data| mount(name, dev, flags, data)),
        );
    }
}
