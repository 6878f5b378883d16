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
//! of ext4 with extents, without a journal or with a clean one left unused (other images
//! are `EROFS` for `rw` with a log line). Not yet: JBD2 replay (a journal that needs recovery refuses the mount
//! unless `-o noload`), EA inodes, encryption,
//! casefolding.
//!
//! Modules: [`crc`] (crc32c, crc16), [`disk`] (on-disk structures), [`fs`] (the mounted file
//! system: maps, data, directories, xattrs), [`hash`] (the htree name hashes), [`vfs`] (the kernel's inode and file objects),
//! [`write`] (allocation, extents, directories, xattrs on a read-write mount).
//! [`register`] adds the `ext4`, `ext3` and `ext2` types to `um_fs::mount` (which also mounts
//! the boot's `root=/dev/...` through them).

#![forbid(unsafe_code)]

pub mod crc;
pub mod disk;
pub mod fs;
pub mod hash;
pub mod vfs;
pub mod write;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod wtests;

use std::sync::Arc;
use um_kernel::vfs::{BlockDevice, Inode};
use um_uapi::{Errno, SysResult};

/// `MS_RDONLY`.
const MS_RDONLY: u64 = 1;

/// Mount options (fs/ext4/super.c `ext4_param_specs`): the ones that change nothing for a
/// read-only mount are accepted; `noload`/`norecovery` skip the journal.
fn parse_options(dev: &str, data: &[u8]) -> SysResult<bool> {
    let mut noload = false;
    for opt in data.split(|&c| c == b',').filter(|o| !o.is_empty()) {
        let key = opt.split(|&c| c == b'=').next().unwrap_or(opt);
        match key {
            b"noload" | b"norecovery" => noload = true,
            b"ro" | b"rw" | b"errors" | b"data" | b"barrier" | b"nobarrier" | b"user_xattr"
            | b"nouser_xattr" | b"acl" | b"noacl" | b"commit" | b"discard" | b"nodiscard"
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
    Ok(noload)
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
    let noload = parse_options(&name, data)?;
    let rw = flags & MS_RDONLY == 0;
    if rw && dev.read_only() {
        log::error!("EXT4-fs ({name}): write access unavailable, the device is read-only");
        return Err(Errno::EROFS);
    }
    let mut fs = fs::Ext4::open(dev, noload).map_err(|e| {
        log::error!("EXT4-fs ({name}): {e}");
        Errno::EINVAL
    })?;
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
        if fs.sb.compat & disk::compat::HAS_JOURNAL != 0 {
            log::warn!("EXT4-fs ({name}): journal not used: metadata not journaled");
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
    log::info!(
        "EXT4-fs ({name}): mounted filesystem {} {} with {} blocks of {} bytes",
        fmt_uuid(&fs.sb.uuid),
        if rw { "r/w without journal" } else { "ro" },
        fs.sb.blocks_count,
        fs.sb.block_size
    );
    let m = Arc::new(vfs::Mounted {
        fs,
        fs_id: um_kernel::vfs::new_fs_id(),
        vms: Default::default(),
    });
    Ok(vfs::Ext4Inode::root(m)?)
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

/// Adds `ext4`, `ext3` and `ext2` (one driver for all three, as Linux with
/// `CONFIG_EXT4_USE_FOR_EXT2`) to the mount table's block-device file systems.
pub fn register() {
    for name in ["ext4", "ext3", "ext2"] {
        um_fs::mount::register_bdev_fs(
            name,
            Arc::new(move |dev, flags, data| mount(name, dev, flags, data)),
        );
    }
}
