//! overlayfs's on-disk names and numbers (Linux `include/uapi/linux/magic.h`,
//! `fs/overlayfs/overlayfs.h`, `include/linux/fs.h`): the magic `statfs` reports, the
//! whiteout's device number, and the private extended attributes of the upper layer.

/// `OVERLAYFS_SUPER_MAGIC` (include/uapi/linux/magic.h).
pub const OVERLAYFS_SUPER_MAGIC: i64 = 0x794c_7630;
/// `WHITEOUT_DEV` (include/linux/fs.h): a whiteout is a character device 0:0.
pub const WHITEOUT_DEV: u64 = 0;
/// `WHITEOUT_MODE`: its permission bits.
pub const WHITEOUT_MODE: u32 = 0;
/// `OVL_XATTR_TRUSTED_PREFIX` (fs/overlayfs/overlayfs.h): overlayfs's own attributes.
pub const OVL_XATTR_TRUSTED_PREFIX: &[u8] = b"trusted.overlay.";
/// `OVL_XATTR_USER_PREFIX`: the same with the `userxattr` mount option.
pub const OVL_XATTR_USER_PREFIX: &[u8] = b"user.overlay.";
/// `OVL_XATTR_OPAQUE` without its prefix: `"y"` on a directory hides the lower layers.
pub const OVL_XATTR_OPAQUE: &[u8] = b"opaque";
/// `OVL_MAX_STACK` (fs/overlayfs/params.h): most lower layers.
pub const OVL_MAX_STACK: usize = 500;
/// `FILESYSTEM_MAX_STACK_DEPTH` (include/linux/fs.h): overlays on overlays, at most.
pub const FILESYSTEM_MAX_STACK_DEPTH: u32 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        // `stat -f -c %t` on an overlay prints 794c7630.
        assert_eq!(format!("{OVERLAYFS_SUPER_MAGIC:x}"), "794c7630");
        assert_eq!(OVL_XATTR_TRUSTED_PREFIX.len(), 16);
        assert_eq!(WHITEOUT_DEV | WHITEOUT_MODE as u64, 0);
    }
}
