//! Safe conversion of ABI structures to and from guest bytes, without `unsafe`.
//!
//! Both guest architectures (x86_64, arm64) are little-endian, so every [`Pod`] type is written
//! field by field in little-endian order, in declaration order. The structures declared with
//! [`pod_struct!`](crate::pod_struct) carry their padding as explicit, named fields (the Linux
//! headers' `__pad`/`__unused` members, or ones we name `pad*`), and the macro checks at compile
//! time that the fields add up to `size_of::<T>()`, so the byte image has the C layout exactly,
//! padding included (as zeroes when built with `Default`).

/// A plain-old-data ABI value that converts to and from its exact little-endian byte image.
pub trait Pod: Copy + 'static {
    /// The size of the byte image; equals `core::mem::size_of::<Self>()` for every impl here.
    const SIZE: usize;

    /// Appends exactly [`Self::SIZE`] bytes to `out`.
    fn write_le(&self, out: &mut Vec<u8>);

    /// Reads a value from the first [`Self::SIZE`] bytes of `b`.
    ///
    /// # Panics
    /// If `b` is shorter than [`Self::SIZE`]; use [`Pod::from_bytes`] or [`Pod::from_prefix`] for
    /// untrusted lengths.
    fn read_le(b: &[u8]) -> Self;

    /// The byte image, `Self::SIZE` bytes long.
    fn as_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        self.write_le(&mut v);
        v
    }

    /// Parses a value from exactly `Self::SIZE` bytes; `None` for any other length.
    fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() == Self::SIZE {
            Some(Self::read_le(b))
        } else {
            None
        }
    }

    /// Parses a value from the start of `b`, returning it and the rest; `None` if `b` is short.
    fn from_prefix(b: &[u8]) -> Option<(Self, &[u8])> {
        if b.len() >= Self::SIZE {
            Some((Self::read_le(b), &b[Self::SIZE..]))
        } else {
            None
        }
    }
}

macro_rules! pod_int {
    ($($t:ty),*) => {$(
        impl Pod for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn write_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..core::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}

pod_int!(u8, i8, u16, i16, u32, i32, u64, i64);

impl<T: Pod, const N: usize> Pod for [T; N] {
    const SIZE: usize = T::SIZE * N;
    fn write_le(&self, out: &mut Vec<u8>) {
        for x in self {
            x.write_le(out);
        }
    }
    fn read_le(b: &[u8]) -> Self {
        core::array::from_fn(|i| T::read_le(&b[i * T::SIZE..]))
    }
}

/// Declares a `#[repr(C)]` ABI structure and implements [`Pod`] for it.
///
/// Write the struct as usual, with its derives and docs; the macro adds `#[repr(C)]` (add
/// `#[repr(packed)]` yourself where the C type is packed), serializes the fields in order, and
/// fails to compile if the fields leave implicit padding (declare it as a named field instead).
/// Every field type must itself be [`Pod`].
///
/// ```
/// um_uapi::pod_struct! {
///     #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
///     pub struct Pair { pub a: u32, pub pad: u32, pub b: u64 }
/// }
/// use um_uapi::Pod;
/// assert_eq!(Pair { a: 1, pad: 0, b: 2 }.as_bytes().len(), 16);
/// ```
#[macro_export]
macro_rules! pod_struct {
    (
        $(#[$m:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fm:meta])* $fvis:vis $f:ident : $ft:ty ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[repr(C)]
        $vis struct $name {
            $( $(#[$fm])* $fvis $f : $ft ),*
        }

        impl $crate::abi::pod::Pod for $name {
            const SIZE: usize = core::mem::size_of::<$name>();
            fn write_le(&self, out: &mut Vec<u8>) {
                $( { let v: $ft = self.$f; $crate::abi::pod::Pod::write_le(&v, out); } )*
            }
            fn read_le(b: &[u8]) -> Self {
                let mut off = 0usize;
                $(
                    let $f = <$ft as $crate::abi::pod::Pod>::read_le(&b[off..]);
                    off += <$ft as $crate::abi::pod::Pod>::SIZE;
                )*
                let _ = off;
                Self { $($f),* }
            }
        }

        const _: () = assert!(
            0 $(+ <$ft as $crate::abi::pod::Pod>::SIZE)* == core::mem::size_of::<$name>(),
            concat!("implicit padding in ", stringify!($name), ": declare it as a field"),
        );
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::pod_struct! {
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        struct Mixed {
            a: u8,
            pad: [u8; 3],
            b: i32,
            c: u64,
        }
    }

    #[test]
    fn ints_are_little_endian() {
        assert_eq!(0x0102_0304u32.as_bytes(), vec![4, 3, 2, 1]);
        assert_eq!((-2i16).as_bytes(), vec![0xfe, 0xff]);
        assert_eq!(u64::from_bytes(&[1, 0, 0, 0, 0, 0, 0, 0]), Some(1));
        assert_eq!(u64::from_bytes(&[1, 0, 0]), None);
    }

    #[test]
    fn struct_round_trip_and_layout() {
        let m = Mixed {
            a: 7,
            pad: [0; 3],
            b: -1,
            c: 0x1122_3344_5566_7788,
        };
        let b = m.as_bytes();
        assert_eq!(b.len(), core::mem::size_of::<Mixed>());
        assert_eq!(&b[..8], &[7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(b[8], 0x88);
        assert_eq!(Mixed::from_bytes(&b), Some(m));
        let mut longer = b.clone();
        longer.push(9);
        assert_eq!(Mixed::from_bytes(&longer), None);
        let (m2, rest) = Mixed::from_prefix(&longer).unwrap();
        assert_eq!((m2, rest), (m, &[9u8][..]));
        assert!(Mixed::from_prefix(&b[..15]).is_none());
    }

    #[test]
    fn arrays() {
        let a = [1u16, 2, 3];
        assert_eq!(a.as_bytes(), vec![1, 0, 2, 0, 3, 0]);
        assert_eq!(<[u16; 3]>::from_bytes(&a.as_bytes()), Some(a));
    }
}
