//! Typed syscall arguments: a handler names what each argument register holds instead of
//! indexing the raw words (`a[2] as u32`).
//!
//! A handler keeps the table's [`crate::syscall::Handler`] signature (`[u64; 6]` in) and
//! opens with one line, `let (fd, buf, len): (u32, UserPtr<u8>, usize) = args(&a)?;`, which
//! converts the leading registers by [`FromSyscallArg`], in order. Everything is
//! monomorphised and inlined: no boxing, no table change, the cost of the `as` casts it
//! replaces.
//!
//! The conversions are Linux's `SYSCALL_DEFINE` ones (include/linux/syscalls.h
//! `__SC_CAST`/`__MAP`, on x86_64 and arm64 alike): an `int` or `unsigned int` argument is the
//! low 32 bits of its register, the upper half ignored; `long`, `size_t` and pointers are the
//! whole 64-bit register. A conversion can refuse (`SysResult`) so flag types can answer
//! `EINVAL` where Linux checks the bits.
//!
//! Neighbours: [`crate::syscall`] (the table), [`crate::uaccess`] (the typed user pointers
//! this hands out).

use crate::uaccess::{UserCStr, UserPtr};
use um_uapi::Pod;
use um_uapi::SysResult;

/// A value one argument register converts to.
pub trait FromSyscallArg: Sized {
    /// `raw` is the whole 64-bit register.
    fn from_arg(raw: u64) -> SysResult<Self>;
}

macro_rules! whole {
    ($($t:ty),*) => {$(
        impl FromSyscallArg for $t {
            /// `long`, `unsigned long`, `size_t`, `loff_t`: the whole register.
            #[inline(always)]
            fn from_arg(raw: u64) -> SysResult<Self> {
                Ok(raw as $t)
            }
        }
    )*};
}
whole!(u64, i64, usize, isize);

macro_rules! low32 {
    ($($t:ty),*) => {$(
        impl FromSyscallArg for $t {
            /// `int`, `unsigned int`: the low 32 bits, as `SYSCALL_DEFINE`'s cast takes them.
            #[inline(always)]
            fn from_arg(raw: u64) -> SysResult<Self> {
                Ok(raw as u32 as $t)
            }
        }
    )*};
}
low32!(u32, i32);

impl<T: Pod> FromSyscallArg for UserPtr<T> {
    /// A `T __user *`: the whole register.
    #[inline(always)]
    fn from_arg(raw: u64) -> SysResult<Self> {
        Ok(UserPtr::new(raw))
    }
}

impl FromSyscallArg for UserCStr {
    /// A `const char __user *`: the whole register.
    #[inline(always)]
    fn from_arg(raw: u64) -> SysResult<Self> {
        Ok(UserCStr::new(raw))
    }
}

/// The leading argument registers as a tuple of [`FromSyscallArg`] types.
pub trait FromSyscallArgs: Sized {
    /// Converts `a[0]`, `a[1]`, … in order; the first refusal is the answer.
    fn from_args(a: &[u64; 6]) -> SysResult<Self>;
}

macro_rules! tuple {
    ($($t:ident $i:tt),*) => {
        impl<$($t: FromSyscallArg),*> FromSyscallArgs for ($($t,)*) {
            #[inline(always)]
            fn from_args(a: &[u64; 6]) -> SysResult<Self> {
                Ok(($($t::from_arg(a[$i])?,)*))
            }
        }
    };
}
tuple!(A 0);
tuple!(A 0, B 1);
tuple!(A 0, B 1, C 2);
tuple!(A 0, B 1, C 2, D 3);
tuple!(A 0, B 1, C 2, D 3, E 4);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5);

/// The handler's arguments, typed: `let (fd, len): (u32, usize) = args(&a)?;`.
#[inline(always)]
pub fn args<T: FromSyscallArgs>(a: &[u64; 6]) -> SysResult<T> {
    T::from_args(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_arguments_are_the_low_32_bits() {
        let a = [0xffff_ffff_0000_0007, 0x1_ffff_ffff, 0, 0, 0, 0];
        let (x, y): (u32, i32) = args(&a).unwrap();
        assert_eq!(x, 7);
        assert_eq!(y, -1);
    }

    #[test]
    fn long_and_pointer_arguments_are_the_whole_register() {
        let a = [
            0xffff_ffff_0000_0007,
            u64::MAX,
            0x7fff_0000_1000,
            0x1234,
            0,
            0,
        ];
        let (l, s, p, q): (u64, i64, UserPtr<u32>, UserCStr) = args(&a).unwrap();
        assert_eq!(l, 0xffff_ffff_0000_0007);
        assert_eq!(s, -1);
        assert_eq!(p.addr(), 0x7fff_0000_1000);
        assert_eq!(q.addr(), 0x1234);
    }
}
