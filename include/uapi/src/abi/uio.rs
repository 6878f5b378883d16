//! Scatter/gather I/O vectors (`include/uapi/linux/uio.h`: `struct iovec`, `UIO_MAXIOV`).

use static_assertions::const_assert_eq;

/// The most iovecs one `readv`/`writev` call accepts (`UIO_MAXIOV`).
pub const UIO_MAXIOV: usize = 1024;

crate::pod_struct! {
    /// `struct iovec`: a guest buffer address and length.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Iovec {
        /// `iov_base`: guest address.
        pub base: u64,
        /// `iov_len`.
        pub len: u64,
    }
}

const_assert_eq!(core::mem::size_of::<Iovec>(), 16);
const_assert_eq!(core::mem::offset_of!(Iovec, len), 8);
