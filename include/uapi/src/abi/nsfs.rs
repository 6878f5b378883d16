//! The nsfs ioctls on namespace files (`include/uapi/linux/nsfs.h`, ioctl_ns(2)).

use super::tty::io;

/// `NSIO`: the ioctl type of nsfs.
pub const NSIO: u8 = 0xb7;
/// `NS_GET_USERNS`: a descriptor of the user namespace that owns the namespace.
pub const NS_GET_USERNS: u32 = io(NSIO, 0x1);
/// `NS_GET_PARENT`: a descriptor of the parent namespace (pid and user namespaces).
pub const NS_GET_PARENT: u32 = io(NSIO, 0x2);
/// `NS_GET_NSTYPE`: the namespace's `CLONE_NEW*` flag.
pub const NS_GET_NSTYPE: u32 = io(NSIO, 0x3);
/// `NS_GET_OWNER_UID`: the uid (of the caller's user namespace) that created a user
/// namespace, stored as a `uid_t` at the argument.
pub const NS_GET_OWNER_UID: u32 = io(NSIO, 0x4);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_the_header() {
        // _IO(0xb7, n) expands to 0xb700 | n.
        assert_eq!(NS_GET_USERNS, 0xb701);
        assert_eq!(NS_GET_PARENT, 0xb702);
        assert_eq!(NS_GET_NSTYPE, 0xb703);
        assert_eq!(NS_GET_OWNER_UID, 0xb704);
    }
}
