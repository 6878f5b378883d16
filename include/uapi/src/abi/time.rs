//! Time types and clock ids shared by x86_64 and arm64.
//!
//! Sources: `include/uapi/linux/time_types.h` (`__kernel_timespec`), `include/uapi/linux/time.h`
//! (`timeval`, `itimerval`, `itimerspec`, `timezone`, `CLOCK_*`, `TIMER_ABSTIME`, `ITIMER_*`),
//! `include/uapi/linux/times.h` (`struct tms`). On both 64-bit arches `time_t`, `suseconds_t`,
//! `long` and `clock_t` are 64 bits.

use static_assertions::const_assert_eq;

/// Wall-clock time.
pub const CLOCK_REALTIME: u32 = 0;
/// Monotonic time, not counting suspend.
pub const CLOCK_MONOTONIC: u32 = 1;
/// CPU time of the process.
pub const CLOCK_PROCESS_CPUTIME_ID: u32 = 2;
/// CPU time of the thread.
pub const CLOCK_THREAD_CPUTIME_ID: u32 = 3;
/// Monotonic, not NTP-adjusted.
pub const CLOCK_MONOTONIC_RAW: u32 = 4;
/// Coarse wall clock.
pub const CLOCK_REALTIME_COARSE: u32 = 5;
/// Coarse monotonic clock.
pub const CLOCK_MONOTONIC_COARSE: u32 = 6;
/// Monotonic including suspend.
pub const CLOCK_BOOTTIME: u32 = 7;
/// Wall clock that wakes from suspend.
pub const CLOCK_REALTIME_ALARM: u32 = 8;
/// Boot time that wakes from suspend.
pub const CLOCK_BOOTTIME_ALARM: u32 = 9;
/// International atomic time.
pub const CLOCK_TAI: u32 = 11;
/// `clock_nanosleep`/`timer_settime`/`timerfd_settime`: the time is absolute.
pub const TIMER_ABSTIME: u32 = 1;
/// `setitimer`: real time, `SIGALRM`.
pub const ITIMER_REAL: u32 = 0;
/// User CPU time, `SIGVTALRM`.
pub const ITIMER_VIRTUAL: u32 = 1;
/// User+system CPU time, `SIGPROF`.
pub const ITIMER_PROF: u32 = 2;
/// `times()` and `clock_t` tick rate seen by user space (`USER_HZ`).
pub const USER_HZ: u64 = 100;
/// Nanoseconds per second.
pub const NSEC_PER_SEC: i64 = 1_000_000_000;

crate::pod_struct! {
    /// `struct __kernel_timespec` / 64-bit `struct timespec`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub struct Timespec {
        /// Seconds.
        pub tv_sec: i64,
        /// Nanoseconds, `0..1_000_000_000` when valid.
        pub tv_nsec: i64,
    }
}

impl Timespec {
    /// `UTIME_NOW` (`include/uapi/linux/stat.h`): `utimensat` sets the current time.
    pub const UTIME_NOW: i64 = (1 << 30) - 1;
    /// `UTIME_OMIT`: `utimensat` leaves the time alone.
    pub const UTIME_OMIT: i64 = (1 << 30) - 2;

    /// Whether `tv_nsec` is in range and `tv_sec` is not negative (what most calls demand).
    pub const fn is_valid(&self) -> bool {
        self.tv_sec >= 0 && self.tv_nsec >= 0 && self.tv_nsec < NSEC_PER_SEC
    }
    /// Builds from nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Timespec {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_nsec: (ns % 1_000_000_000) as i64,
        }
    }
    /// Total nanoseconds, `None` if negative or overflowing.
    pub const fn to_nanos(&self) -> Option<u64> {
        if !self.is_valid() {
            return None;
        }
        match (self.tv_sec as u64).checked_mul(1_000_000_000) {
            Some(s) => s.checked_add(self.tv_nsec as u64),
            None => None,
        }
    }
}

crate::pod_struct! {
    /// `struct timeval` (64-bit `suseconds_t`): 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub struct Timeval {
        /// Seconds.
        pub tv_sec: i64,
        /// Microseconds.
        pub tv_usec: i64,
    }
}

impl Timeval {
    /// Builds from nanoseconds (truncating to microseconds).
    pub const fn from_nanos(ns: u64) -> Self {
        Timeval {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_usec: ((ns % 1_000_000_000) / 1000) as i64,
        }
    }
}

crate::pod_struct! {
    /// `struct timezone` (`gettimeofday`): 8 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Timezone {
        /// Minutes west of Greenwich.
        pub tz_minuteswest: i32,
        /// DST correction type.
        pub tz_dsttime: i32,
    }
}

crate::pod_struct! {
    /// `struct itimerval` (`setitimer`): 32 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Itimerval {
        /// Reload value.
        pub it_interval: Timeval,
        /// Time to the next expiry.
        pub it_value: Timeval,
    }
}

crate::pod_struct! {
    /// `struct itimerspec` (`timer_settime`, `timerfd_settime`): 32 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Itimerspec {
        /// Reload value.
        pub it_interval: Timespec,
        /// Time to the next expiry.
        pub it_value: Timespec,
    }
}

crate::pod_struct! {
    /// `struct tms` (`times`), in `USER_HZ` ticks: 32 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Tms {
        /// User time.
        pub tms_utime: i64,
        /// System time.
        pub tms_stime: i64,
        /// User time of waited-for children.
        pub tms_cutime: i64,
        /// System time of waited-for children.
        pub tms_cstime: i64,
    }
}

const_assert_eq!(core::mem::size_of::<Timespec>(), 16);
const_assert_eq!(core::mem::offset_of!(Timespec, tv_nsec), 8);
const_assert_eq!(core::mem::size_of::<Timeval>(), 16);
const_assert_eq!(core::mem::size_of::<Timezone>(), 8);
const_assert_eq!(core::mem::size_of::<Itimerval>(), 32);
const_assert_eq!(core::mem::offset_of!(Itimerval, it_value), 16);
const_assert_eq!(core::mem::size_of::<Itimerspec>(), 32);
const_assert_eq!(core::mem::offset_of!(Itimerspec, it_value), 16);
const_assert_eq!(core::mem::size_of::<Tms>(), 32);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Pod;

    #[test]
    fn timespec() {
        let t = Timespec::from_nanos(1_500_000_000);
        assert_eq!(
            t,
            Timespec {
                tv_sec: 1,
                tv_nsec: 500_000_000
            }
        );
        assert_eq!(t.to_nanos(), Some(1_500_000_000));
        assert_eq!(
            Timespec {
                tv_sec: 0,
                tv_nsec: NSEC_PER_SEC
            }
            .to_nanos(),
            None
        );
        let b = t.as_bytes();
        assert_eq!(b.len(), 16);
        assert_eq!(b[0], 1);
        assert_eq!(Timespec::from_bytes(&b), Some(t));
        let it = Itimerspec {
            it_interval: t,
            it_value: Timespec::from_nanos(3),
        };
        assert_eq!(Itimerspec::from_bytes(&it.as_bytes()), Some(it));
        assert_eq!(
            Timeval::from_nanos(2_000_003_000),
            Timeval {
                tv_sec: 2,
                tv_usec: 3
            }
        );
        assert_eq!(Tms::default().as_bytes().len(), 32);
    }
}
