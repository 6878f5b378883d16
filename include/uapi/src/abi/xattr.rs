//! Extended attributes: `include/uapi/linux/xattr.h` (flags, namespace prefixes, limits) and
//! `include/uapi/linux/capability.h` (the `security.capability` value, `struct
//! vfs_ns_cap_data`). The same on every arch.

/// `XATTR_CREATE`: fail with `EEXIST` if the attribute exists.
pub const XATTR_CREATE: u32 = 0x1;
/// `XATTR_REPLACE`: fail with `ENODATA` if it does not.
pub const XATTR_REPLACE: u32 = 0x2;

/// `XATTR_NAME_MAX`: the longest name, without its NUL (include/uapi/linux/limits.h).
pub const XATTR_NAME_MAX: usize = 255;
/// `XATTR_SIZE_MAX`: the largest value.
pub const XATTR_SIZE_MAX: usize = 65536;
/// `XATTR_LIST_MAX`: the largest name list.
pub const XATTR_LIST_MAX: usize = 65536;

/// `XATTR_USER_PREFIX`.
pub const XATTR_USER_PREFIX: &[u8] = b"user.";
/// `XATTR_TRUSTED_PREFIX`.
pub const XATTR_TRUSTED_PREFIX: &[u8] = b"trusted.";
/// `XATTR_SECURITY_PREFIX`.
pub const XATTR_SECURITY_PREFIX: &[u8] = b"security.";
/// `XATTR_SYSTEM_PREFIX`.
pub const XATTR_SYSTEM_PREFIX: &[u8] = b"system.";
/// `XATTR_NAME_CAPS`: file capabilities.
pub const XATTR_NAME_CAPS: &[u8] = b"security.capability";

/// `VFS_CAP_REVISION_MASK`: the revision part of `magic_etc`.
pub const VFS_CAP_REVISION_MASK: u32 = 0xFF00_0000;
/// `VFS_CAP_REVISION_2` (64-bit capability sets).
pub const VFS_CAP_REVISION_2: u32 = 0x0200_0000;
/// `VFS_CAP_REVISION_3` (with the namespace root id).
pub const VFS_CAP_REVISION_3: u32 = 0x0300_0000;
/// `XATTR_CAPS_SZ_2`: `sizeof(struct vfs_cap_data)`.
pub const XATTR_CAPS_SZ_2: usize = 4 + 2 * 8;
/// `XATTR_CAPS_SZ_3`: `sizeof(struct vfs_ns_cap_data)`.
pub const XATTR_CAPS_SZ_3: usize = XATTR_CAPS_SZ_2 + 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(XATTR_CAPS_SZ_2, 20);
        assert_eq!(XATTR_CAPS_SZ_3, 24);
        assert_eq!(XATTR_CREATE | XATTR_REPLACE, 3);
    }
}
