//! The mount API's attribute words: include/uapi/linux/mount.h (`struct mount_attr` and its
//! `MOUNT_ATTR_*` bits, for mount_setattr(2)). The same on every arch. The classic `MS_*`
//! flags of mount(2) live with the mount table (`um_fs::mount`).

/// `MOUNT_ATTR_RDONLY`.
pub const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
/// `MOUNT_ATTR_NOSUID`.
pub const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
/// `MOUNT_ATTR_NODEV`.
pub const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;
/// `MOUNT_ATTR_NOEXEC`.
pub const MOUNT_ATTR_NOEXEC: u64 = 0x0000_0008;
/// `MOUNT_ATTR__ATIME`: the mask of the atime mode.
pub const MOUNT_ATTR__ATIME: u64 = 0x0000_0070;
/// `MOUNT_ATTR_RELATIME` (an atime mode: 0).
pub const MOUNT_ATTR_RELATIME: u64 = 0x0000_0000;
/// `MOUNT_ATTR_NOATIME`.
pub const MOUNT_ATTR_NOATIME: u64 = 0x0000_0010;
/// `MOUNT_ATTR_STRICTATIME`.
pub const MOUNT_ATTR_STRICTATIME: u64 = 0x0000_0020;
/// `MOUNT_ATTR_NODIRATIME`.
pub const MOUNT_ATTR_NODIRATIME: u64 = 0x0000_0080;
/// `MOUNT_ATTR_IDMAP`: an idmapped mount (needs a user namespace).
pub const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
/// `MOUNT_ATTR_NOSYMFOLLOW`.
pub const MOUNT_ATTR_NOSYMFOLLOW: u64 = 0x0020_0000;
/// `MOUNT_ATTR_SIZE_VER0`: `sizeof(struct mount_attr)` of its first version.
pub const MOUNT_ATTR_SIZE_VER0: usize = 32;

/// The bits mount_setattr(2) knows (fs/namespace.c `MOUNT_SETATTR_VALID_FLAGS`).
pub const MOUNT_SETATTR_VALID_FLAGS: u64 = MOUNT_ATTR_RDONLY
    | MOUNT_ATTR_NOSUID
    | MOUNT_ATTR_NODEV
    | MOUNT_ATTR_NOEXEC
    | MOUNT_ATTR__ATIME
    | MOUNT_ATTR_NODIRATIME
    | MOUNT_ATTR_IDMAP
    | MOUNT_ATTR_NOSYMFOLLOW;

/// `struct mount_attr` (version 0): what to set, what to clear, a propagation type
/// (`MS_SHARED` ...), a user namespace descriptor for `MOUNT_ATTR_IDMAP`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MountAttr {
    pub attr_set: u64,
    pub attr_clr: u64,
    pub propagation: u64,
    pub userns_fd: u64,
}

impl MountAttr {
    /// Decodes the first [`MOUNT_ATTR_SIZE_VER0`] bytes (native endianness).
    pub fn from_bytes(b: &[u8; MOUNT_ATTR_SIZE_VER0]) -> MountAttr {
        let w = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(x)
        };
        MountAttr {
            attr_set: w(0),
            attr_clr: w(1),
            propagation: w(2),
            userns_fd: w(3),
        }
    }
}

/// open_tree(2): make a detached copy of the mount (include/uapi/linux/mount.h).
pub const OPEN_TREE_CLONE: u64 = 1;
/// open_tree(2): close-on-exec (`O_CLOEXEC`).
pub const OPEN_TREE_CLOEXEC: u64 = 0o2000000;
/// move_mount(2) flags: follow symlinks / automounts on the source, an empty source path
/// names the descriptor; the same for the target (`MOVE_MOUNT_T_*`).
pub const MOVE_MOUNT_F_SYMLINKS: u64 = 0x01;
pub const MOVE_MOUNT_F_AUTOMOUNTS: u64 = 0x02;
pub const MOVE_MOUNT_F_EMPTY_PATH: u64 = 0x04;
pub const MOVE_MOUNT_T_SYMLINKS: u64 = 0x10;
pub const MOVE_MOUNT_T_AUTOMOUNTS: u64 = 0x20;
pub const MOVE_MOUNT_T_EMPTY_PATH: u64 = 0x40;
/// fsopen(2): close-on-exec.
pub const FSOPEN_CLOEXEC: u64 = 1;
/// fsmount(2): close-on-exec.
pub const FSMOUNT_CLOEXEC: u64 = 1;
/// fsconfig(2) commands (`enum fsconfig_command`).
pub const FSCONFIG_SET_FLAG: u64 = 0;
pub const FSCONFIG_SET_STRING: u64 = 1;
pub const FSCONFIG_SET_BINARY: u64 = 2;
pub const FSCONFIG_SET_PATH: u64 = 3;
pub const FSCONFIG_SET_PATH_EMPTY: u64 = 4;
pub const FSCONFIG_SET_FD: u64 = 5;
pub const FSCONFIG_CMD_CREATE: u64 = 6;
pub const FSCONFIG_CMD_RECONFIGURE: u64 = 7;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_mount_api_values_match_linux() {
        // include/uapi/linux/mount.h.
        assert_eq!((OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC), (1, 0o2000000));
        assert_eq!(
            [
                MOVE_MOUNT_F_SYMLINKS,
                MOVE_MOUNT_F_AUTOMOUNTS,
                MOVE_MOUNT_F_EMPTY_PATH,
                MOVE_MOUNT_T_SYMLINKS,
                MOVE_MOUNT_T_AUTOMOUNTS,
                MOVE_MOUNT_T_EMPTY_PATH,
            ],
            [1, 2, 4, 0x10, 0x20, 0x40]
        );
        assert_eq!((FSOPEN_CLOEXEC, FSMOUNT_CLOEXEC), (1, 1));
        assert_eq!(
            [
                FSCONFIG_SET_FLAG,
                FSCONFIG_SET_STRING,
                FSCONFIG_SET_BINARY,
                FSCONFIG_SET_PATH,
                FSCONFIG_SET_PATH_EMPTY,
                FSCONFIG_SET_FD,
                FSCONFIG_CMD_CREATE,
                FSCONFIG_CMD_RECONFIGURE,
            ],
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
    }

    #[test]
    fn values_match_linux() {
        // include/uapi/linux/mount.h.
        assert_eq!(
            [
                MOUNT_ATTR_RDONLY,
                MOUNT_ATTR_NOSUID,
                MOUNT_ATTR_NODEV,
                MOUNT_ATTR_NOEXEC,
                MOUNT_ATTR__ATIME,
                MOUNT_ATTR_NOATIME,
                MOUNT_ATTR_STRICTATIME,
                MOUNT_ATTR_NODIRATIME,
                MOUNT_ATTR_IDMAP,
                MOUNT_ATTR_NOSYMFOLLOW,
            ],
            [1, 2, 4, 8, 0x70, 0x10, 0x20, 0x80, 0x10_0000, 0x20_0000]
        );
        assert_eq!(MOUNT_ATTR_RELATIME, 0);
        assert_eq!(MOUNT_ATTR_SIZE_VER0, 32);
        assert_eq!(MOUNT_SETATTR_VALID_FLAGS, 0x0030_00ff);
    }

    #[test]
    fn decodes_the_struct() {
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&1u64.to_ne_bytes());
        b[8..16].copy_from_slice(&0x70u64.to_ne_bytes());
        b[16..24].copy_from_slice(&(1u64 << 20).to_ne_bytes());
        let a = MountAttr::from_bytes(&b);
        assert_eq!(
            a,
            MountAttr {
                attr_set: 1,
                attr_clr: 0x70,
                propagation: 1 << 20,
                userns_fd: 0
            }
        );
    }
}
