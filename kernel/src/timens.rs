//! Time namespaces (Linux `kernel/time/namespace.c`, `fs/proc/base.c` `timens_offsets`,
//! time_namespaces(7)).
//!
//! A [`TimeNs`] holds two offsets: one added to `CLOCK_MONOTONIC` (and its `_RAW` and
//! `_COARSE` variants), one to `CLOCK_BOOTTIME` (and `_ALARM`), for the processes inside.
//! Every process has a [`TimeNsPair`] (Linux `nsproxy->time_ns` and
//! `nsproxy->time_ns_for_children`): `unshare(CLONE_NEWTIME)` only changes the second, so the
//! caller stays where it is and its *future children* enter the new namespace: a child made
//! without `CLONE_VM` ([`on_fork`]) or the caller's next exec ([`on_exec`]). `setns(2)` on a
//! `/proc/PID/ns/time*` descriptor moves the caller itself ([`setns`]). Offsets can be
//! written (`/proc/PID/timens_offsets`, [`TimeNs::set_offsets`]) only until the first process
//! enters the namespace: entering freezes them ([`TimeNs::freeze`]), later writes get `EACCES`.
//!
//! Everything that shows a namespaced clock to the guest converts here: clock reads add
//! [`Offsets::to_ns`], absolute timer and sleep deadlines subtract ([`Offsets::to_host`],
//! Linux `timens_ktime_to_host`), uptimes add the boottime offset ([`uptime`]). The vDSO's
//! time functions jump straight into the host's vDSO, which knows nothing of these offsets;
//! Linux gives a process in a time namespace a special vvar page, here the process's
//! `[vdso]` gets code that makes the syscall instead (same layout, so addresses a libc has
//! already looked up stay right): `crate::arch::vdso` registers the rewrite with
//! [`set_vdso_switch`], and [`commit`] runs it when a running process changes namespace.
//!
//! The namespace files (`/proc/PID/ns/time`, `time_for_children`) lead to an nsfs inode
//! ([`ns_dentry`]); opening one gives an [`NsFile`], which `setns` takes.
//!
//! Simplification: Linux keeps namespaces per thread; here they are per process (threads made
//! later share them, as they share everything else), and setns demands a single thread as
//! Linux does.

use crate::task::{Process, lock};
use crate::vfs::Dentry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use um_mm::Mm;
use um_uapi::{Errno, SysResult};

/// Clock ids (include/uapi/linux/time.h) a time namespace shifts.
pub const CLOCK_MONOTONIC: i32 = 1;
pub const CLOCK_MONOTONIC_RAW: i32 = 4;
pub const CLOCK_MONOTONIC_COARSE: i32 = 6;
pub const CLOCK_BOOTTIME: i32 = 7;
pub const CLOCK_BOOTTIME_ALARM: i32 = 9;

pub use um_uapi::abi::capability::CAP_SYS_ADMIN;
pub use um_uapi::abi::capability::CAP_SYS_TIME;

/// The initial time namespace's inode number (include/linux/proc_ns.h `PROC_TIME_INIT_INO`).
pub const INIT_INO: u64 = 0xEFFF_FFFA;

const NSEC: i128 = 1_000_000_000;
/// `KTIME_SEC_MAX` (include/linux/time64.h): the seconds of `KTIME_MAX`.
const KTIME_SEC_MAX: i64 = i64::MAX / 1_000_000_000;

/// One offset: seconds (any sign) and nanoseconds (`0..1e9`), Linux `struct timespec64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offset {
    pub sec: i64,
    pub nsec: i64,
}

impl Offset {
    /// The offset in nanoseconds.
    pub fn as_nanos(self) -> i128 {
        i128::from(self.sec) * NSEC + i128::from(self.nsec)
    }
}

/// A namespace's offsets (Linux `struct timens_offsets`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offsets {
    pub monotonic: Offset,
    pub boottime: Offset,
}

/// Splits nanoseconds into seconds and non-negative nanoseconds (a normalised timespec).
pub fn split(ns: i128) -> (i64, i64) {
    let s = ns
        .div_euclid(NSEC)
        .clamp(i128::from(i64::MIN), i128::from(i64::MAX));
    (s as i64, ns.rem_euclid(NSEC) as i64)
}

impl Offsets {
    /// The offset clock `id` gets (`timens_add_monotonic` / `timens_add_boottime`), if any.
    pub fn for_clock(&self, id: i32) -> Option<Offset> {
        match id {
            CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE => Some(self.monotonic),
            CLOCK_BOOTTIME | CLOCK_BOOTTIME_ALARM => Some(self.boottime),
            _ => None,
        }
    }

    /// A host reading `(sec, nsec)` of clock `id` as the namespace sees it.
    pub fn to_ns(&self, id: i32, (sec, nsec): (i64, i64)) -> (i64, i64) {
        match self.for_clock(id) {
            Some(o) if o != Offset::default() => {
                split(i128::from(sec) * NSEC + i128::from(nsec) + o.as_nanos())
            }
            _ => (sec, nsec),
        }
    }

    /// An absolute time `ns` of clock `id` in the namespace, as the host clock's nanoseconds
    /// (kernel/time/namespace.c `do_timens_ktime_to_host`): only the clocks timers run on
    /// (MONOTONIC, BOOTTIME, BOOTTIME_ALARM) shift; a time before the offset has already
    /// passed (0).
    pub fn to_host(&self, id: i32, ns: u128) -> u128 {
        let off = match id {
            CLOCK_MONOTONIC => self.monotonic,
            CLOCK_BOOTTIME | CLOCK_BOOTTIME_ALARM => self.boottime,
            _ => return ns,
        };
        let t = ns as i128 - off.as_nanos();
        t.max(0) as u128
    }
}

/// A time namespace (Linux `struct time_namespace`).
pub struct TimeNs {
    inum: u64,
    offsets: Mutex<Offsets>,
    /// Set once a process entered: the offsets can no longer change.
    frozen: AtomicBool,
    /// The user namespace that owns it (`ns.user_ns`): its capability checks are made there.
    owner: Arc<crate::userns::UserNs>,
}

/// The initial namespace (`init_time_ns`): zero offsets, frozen from the start.
pub fn root() -> &'static Arc<TimeNs> {
    static ROOT: OnceLock<Arc<TimeNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(TimeNs {
            inum: INIT_INO,
            offsets: Mutex::new(Offsets::default()),
            frozen: AtomicBool::new(true),
            owner: crate::userns::root().clone(),
        })
    })
}

impl TimeNs {
    /// A new namespace with `old`'s offsets, not yet frozen (`clone_time_ns`). Its inode
    /// number comes from [`crate::nsfs::alloc_inum`].
    pub fn clone_of(old: &TimeNs) -> Arc<TimeNs> {
        Self::clone_owned(old, crate::userns::current())
    }

    /// [`TimeNs::clone_of`] owned by user namespace `owner`.
    pub fn clone_owned(old: &TimeNs, owner: Arc<crate::userns::UserNs>) -> Arc<TimeNs> {
        Arc::new(TimeNs {
            inum: crate::nsfs::alloc_inum(),
            offsets: Mutex::new(old.offsets()),
            frozen: AtomicBool::new(false),
            owner,
        })
    }

    /// The namespace's inode number (`ns.inum`), shown in `time:[N]`.
    pub fn inum(&self) -> u64 {
        self.inum
    }

    /// Whether this is the initial namespace.
    pub fn is_root(&self) -> bool {
        self.inum == INIT_INO
    }

    /// The offsets.
    pub fn offsets(&self) -> Offsets {
        *lock(&self.offsets)
    }

    /// A process enters: the offsets are final (`timens_set_vvar_page`'s `frozen_offsets`).
    pub fn freeze(&self) {
        let _g = lock(&self.offsets);
        self.frozen.store(true, Ordering::Release);
    }

    /// Whether a process has entered.
    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::Acquire)
    }

    /// `proc_timens_set_offset`, once the writer's CAP_SYS_TIME is checked: each new offset
    /// must keep the clock (host reading `now(clock)`) within `0..=KTIME_SEC_MAX/2` seconds
    /// (`ERANGE`), only MONOTONIC and BOOTTIME have one (`EINVAL`), and a namespace a
    /// process has entered cannot change (`EACCES`).
    pub fn set_offsets(
        &self,
        new: &[(i32, Offset)],
        now: impl Fn(i32) -> (i64, i64),
    ) -> SysResult<()> {
        for &(clock, off) in new {
            if clock != CLOCK_MONOTONIC && clock != CLOCK_BOOTTIME {
                return Err(Errno::EINVAL);
            }
            if off.sec > KTIME_SEC_MAX || off.sec < -KTIME_SEC_MAX {
                return Err(Errno::ERANGE);
            }
            let (s, ns) = now(clock);
            let (sec, _) = split(i128::from(s) * NSEC + i128::from(ns) + off.as_nanos());
            if !(0..=KTIME_SEC_MAX / 2).contains(&sec) {
                return Err(Errno::ERANGE);
            }
        }
        let mut o = lock(&self.offsets);
        if self.frozen.load(Ordering::Acquire) {
            return Err(Errno::EACCES);
        }
        for &(clock, off) in new {
            if clock == CLOCK_MONOTONIC {
                o.monotonic = off;
            } else {
                o.boottime = off;
            }
        }
        Ok(())
    }
}

/// A process's namespaces of time (Linux `nsproxy->time_ns`, `->time_ns_for_children`).
#[derive(Clone)]
pub struct TimeNsPair {
    /// Where the process's clocks come from.
    pub active: Arc<TimeNs>,
    /// Where its children (and its next exec) go.
    pub for_children: Arc<TimeNs>,
}

impl Default for TimeNsPair {
    fn default() -> TimeNsPair {
        TimeNsPair {
            active: root().clone(),
            for_children: root().clone(),
        }
    }
}

/// Parses what is written to `/proc/PID/timens_offsets` (fs/proc/base.c
/// `timens_offsets_write`): up to two lines of "CLOCK SECS NSECS", CLOCK being `monotonic`,
/// `boottime` or their numbers (1, 7); NSECS below one second. `EINVAL` otherwise. Returns
/// the offsets and how many bytes the write consumed (the rest, after two lines, is left).
pub fn parse_offsets(buf: &[u8]) -> SysResult<(Vec<(i32, Offset)>, usize)> {
    let text = std::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    // memdup_user_nul: the text ends at a NUL.
    let text = text.split('\0').next().unwrap_or("");
    let mut out = Vec::new();
    let mut pos = 0;
    let mut consumed = buf.len();
    while pos < text.len() || out.is_empty() {
        let rest = &text[pos..];
        let (line, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], Some(pos + i + 1)),
            None => (rest, None),
        };
        // sscanf("%9s %lld %lu"): three fields, whitespace-separated, trailing text ignored.
        let mut f = line.split_ascii_whitespace();
        let (Some(clock), Some(sec), Some(nsec)) = (f.next(), f.next(), f.next()) else {
            return Err(Errno::EINVAL);
        };
        // "%9s": a longer word would leave its tail for "%lld", which then fails.
        if clock.len() > 9 {
            return Err(Errno::EINVAL);
        }
        let sec: i64 = scan_i64(sec).ok_or(Errno::EINVAL)?;
        let nsec: u64 = scan_u64(nsec).ok_or(Errno::EINVAL)?;
        if nsec >= 1_000_000_000 {
            return Err(Errno::EINVAL);
        }
        let id = match clock {
            "monotonic" | "1" => CLOCK_MONOTONIC,
            "boottime" | "7" => CLOCK_BOOTTIME,
            _ => return Err(Errno::EINVAL),
        };
        out.push((
            id,
            Offset {
                sec,
                nsec: nsec as i64,
            },
        ));
        match next {
            Some(n) if n < text.len() => {
                if out.len() == 2 {
                    consumed = n;
                    break;
                }
                pos = n;
            }
            _ => break,
        }
    }
    Ok((out, consumed))
}

/// `%lld`: an optional sign, then decimal digits (the longest prefix that parses).
fn scan_i64(s: &str) -> Option<i64> {
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(s.len(), |(i, _)| i);
    s[..end].parse().ok()
}

/// `%lu`: like `strtoul`, a leading minus wraps (so "-1" is huge and fails the NSECS check).
fn scan_u64(s: &str) -> Option<u64> {
    match s.strip_prefix('-') {
        Some(r) => scan_u64(r).map(|v| v.wrapping_neg()),
        None => {
            let s = s.strip_prefix('+').unwrap_or(s);
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            s[..end].parse().ok()
        }
    }
}

/// What `/proc/PID/timens_offsets` shows (`proc_timens_show_offsets`, "%-10s %10lld %9ld").
pub fn format_offsets(o: &Offsets) -> String {
    format!(
        "{:<10} {:>10} {:>9}\n{:<10} {:>10} {:>9}\n",
        "monotonic", o.monotonic.sec, o.monotonic.nsec, "boottime", o.boottime.sec, o.boottime.nsec
    )
}

/// The namespace `p`'s clocks come from.
pub fn active(p: &Process) -> Arc<TimeNs> {
    lock(&p.timens).active.clone()
}

/// The offsets of `p`'s namespace.
pub fn offsets_of(p: &Process) -> Offsets {
    let ns = active(p);
    if ns.is_root() {
        Offsets::default()
    } else {
        ns.offsets()
    }
}

/// The offsets of the namespace of the task this host thread serves (zero if none).
pub fn current_offsets() -> Offsets {
    crate::current::current().map_or(Offsets::default(), |t| offsets_of(&t.process))
}

/// The guest's uptime (time since this kernel booted, the figure `sysinfo` and `/proc/uptime`
/// show) as the namespace of the task this host thread serves sees it (`timens_add_boottime`),
/// normalised: seconds (possibly negative) and nanoseconds `0..1e9`.
pub fn uptime() -> (i64, i64) {
    uptime_with(&current_offsets())
}

/// The guest's uptime as process `p` sees it (see [`uptime`]).
pub fn uptime_of(p: &Process) -> (i64, i64) {
    uptime_with(&offsets_of(p))
}

fn uptime_with(o: &Offsets) -> (i64, i64) {
    let up = crate::printk::uptime().as_nanos() as i128;
    split(up + o.boottime.as_nanos())
}

/// Rewrites an address space's `[vdso]` for a process that is (`root`) or is not in the
/// initial namespace (registered by `crate::arch::vdso`).
pub type VdsoSwitch = fn(&mut Mm, bool);

static VDSO_SWITCH: OnceLock<VdsoSwitch> = OnceLock::new();

/// Registers the vDSO rewrite (once, at boot).
pub fn set_vdso_switch(f: VdsoSwitch) {
    let _ = VDSO_SWITCH.set(f);
}

/// Makes `ns` `p`'s namespace in effect (`timens_commit`): its offsets freeze and the
/// process's vDSO follows.
pub fn commit(p: &Process, ns: &Arc<TimeNs>) {
    ns.freeze();
    if let Some(f) = VDSO_SWITCH.get() {
        let mm = lock(&p.mm).clone();
        f(&mut crate::syscall::lock_mm(&mm), ns.is_root());
    }
}

/// clone's part (kernel/nsproxy.c `copy_namespaces`, `timens_on_fork`), for a new process
/// `child` whose pair was copied from its parent: `CLONE_NEWTIME` gives it a new namespace for
/// children (a copy of the parent's); without `CLONE_VM` it then enters that one. The caller
/// has checked CAP_SYS_ADMIN.
pub fn on_fork(child: &Process, new_time: bool, vm: bool) {
    let enter = {
        let mut pair = lock(&child.timens);
        if new_time {
            pair.for_children = TimeNs::clone_owned(&pair.for_children, crate::userns::of(child));
        }
        if !vm && !Arc::ptr_eq(&pair.active, &pair.for_children) {
            pair.active = pair.for_children.clone();
            Some(pair.active.clone())
        } else {
            None
        }
    };
    if let Some(ns) = enter {
        commit(child, &ns);
    }
}

/// Whether `p`'s next exec will run in the initial namespace (its namespace for children),
/// so that exec maps the vDSO that fits.
pub fn exec_in_root(p: &Process) -> bool {
    lock(&p.timens).for_children.is_root()
}

/// exec's part, after its point of no return (kernel/nsproxy.c `exec_task_namespaces`): the
/// process enters its namespace for children. Exec has mapped the fitting vDSO already.
pub fn on_exec(p: &Process) {
    let mut pair = lock(&p.timens);
    if !Arc::ptr_eq(&pair.active, &pair.for_children) {
        pair.active = pair.for_children.clone();
    }
    pair.active.freeze();
}

/// unshare(CLONE_NEWTIME): a new namespace for `p`'s children, a copy of the current one
/// (`copy_time_ns`); `p` itself stays.
pub fn unshare(p: &Process) {
    let mut pair = lock(&p.timens);
    pair.for_children = TimeNs::clone_owned(&pair.for_children, crate::userns::of(p));
}

/// setns into `ns` (`timens_install` + `timens_commit`): both of `p`'s namespaces become
/// `ns`. `EUSERS` if `p` has other threads, `EPERM` without CAP_SYS_ADMIN.
pub fn setns(p: &Process, ns: &Arc<TimeNs>, threads: usize) -> SysResult<()> {
    if threads > 1 {
        return Err(Errno::EUSERS);
    }
    if !crate::userns::may_install(p, &ns.owner) {
        return Err(Errno::EPERM);
    }
    {
        let mut pair = lock(&p.timens);
        pair.active = ns.clone();
        pair.for_children = ns.clone();
    }
    commit(p, ns);
    Ok(())
}

impl crate::nsfs::Namespace for TimeNs {
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>> {
        Some(self.owner.clone())
    }
    const KIND: &'static str = "time";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWTIME.bits();
    fn inum(&self) -> u64 {
        self.inum
    }
}

/// An open time namespace file: setns(2) takes it.
pub type NsFile = crate::nsfs::NsFile<TimeNs>;

/// The text of a `/proc/PID/ns/time*` link (`ns_get_name`): "time:[N]".
pub fn link_name(ns: &TimeNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/time*` magic link leads.
pub fn ns_dentry(ns: &Arc<TimeNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off(sec: i64, nsec: i64) -> Offset {
        Offset { sec, nsec }
    }

    #[test]
    fn offsets_shift_the_right_clocks() {
        let o = Offsets {
            monotonic: off(10, 0),
            boottime: off(-10, 500_000_000),
        };
        for id in [1, 4, 6] {
            assert_eq!(o.to_ns(id, (100, 900_000_000)), (110, 900_000_000));
        }
        // -9.5 s: 100.9 -> 91.4
        assert_eq!(o.to_ns(7, (100, 900_000_000)), (91, 400_000_000));
        assert_eq!(o.to_ns(9, (100, 900_000_000)), (91, 400_000_000));
        for id in [0, 2, 3, 5, 8, 11] {
            assert_eq!(o.to_ns(id, (100, 900_000_000)), (100, 900_000_000));
        }
        // Below zero, normalised with non-negative nanoseconds.
        assert_eq!(o.to_ns(7, (1, 0)), (-9, 500_000_000));
    }

    #[test]
    fn absolute_times_go_back_to_the_host() {
        let o = Offsets {
            monotonic: off(10, 0),
            boottime: off(-10, 0),
        };
        let s = 1_000_000_000u128;
        assert_eq!(o.to_host(1, 110 * s), 100 * s);
        // Before the offset: already expired.
        assert_eq!(o.to_host(1, 5 * s), 0);
        assert_eq!(o.to_host(7, 100 * s), 110 * s);
        assert_eq!(o.to_host(9, 100 * s), 110 * s);
        // Raw and coarse have no timers; realtime is never shifted.
        assert_eq!(o.to_host(4, 100 * s), 100 * s);
        assert_eq!(o.to_host(0, 100 * s), 100 * s);
    }

    #[test]
    fn parse_and_format() {
        let (v, n) = parse_offsets(b"monotonic 10 0\nboottime -20 5").unwrap();
        assert_eq!(v, vec![(1, off(10, 0)), (7, off(-20, 5))]);
        assert_eq!(n, 29);
        // Numeric ids, as LTP writes them ("%d %d 0").
        let (v, _) = parse_offsets(b"1 -10 0").unwrap();
        assert_eq!(v, vec![(1, off(-10, 0))]);
        let (v, _) = parse_offsets(b"7 3600 0\n").unwrap();
        assert_eq!(v, vec![(7, off(3600, 0))]);
        // Only two lines are taken; the rest is left unconsumed.
        let (v, n) = parse_offsets(b"1 1 0\n7 2 0\n1 3 0\n").unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(n, 12);
        for bad in [
            &b""[..],
            b"\n",
            b"monotonic 1",
            b"realtime 1 0",
            b"0 1 0",
            b"2 1 0",
            b"monotonic 1 1000000000",
            b"monotonic 1 -1",
            b"monotonic x 0",
            b"monotonic 1 0\nbogus 1 0",
        ] {
            assert_eq!(
                parse_offsets(bad),
                Err(Errno::EINVAL),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let o = Offsets {
            monotonic: off(10, 0),
            boottime: off(-3600, 123),
        };
        assert_eq!(
            format_offsets(&o),
            "monotonic          10         0\nboottime        -3600       123\n"
        );
    }

    #[test]
    fn setting_offsets() {
        let ns = TimeNs::clone_of(root());
        assert!(!ns.is_root() && !ns.is_frozen());
        let now = |_| (100, 0);
        ns.set_offsets(&[(1, off(10, 0)), (7, off(-10, 0))], now)
            .unwrap();
        assert_eq!(ns.offsets().monotonic, off(10, 0));
        assert_eq!(ns.offsets().boottime, off(-10, 0));
        // The clock must not go below zero nor past KTIME_SEC_MAX / 2.
        assert_eq!(
            ns.set_offsets(&[(1, off(-101, 0))], now),
            Err(Errno::ERANGE)
        );
        assert_eq!(
            ns.set_offsets(&[(1, off(KTIME_SEC_MAX, 0))], now),
            Err(Errno::ERANGE)
        );
        assert_eq!(ns.set_offsets(&[(0, off(1, 0))], now), Err(Errno::EINVAL));
        // A copy starts with the same offsets, unfrozen.
        let copy = TimeNs::clone_of(&ns);
        assert_eq!(copy.offsets(), ns.offsets());
        assert_ne!(copy.inum(), ns.inum());
        ns.freeze();
        assert_eq!(ns.set_offsets(&[(1, off(1, 0))], now), Err(Errno::EACCES));
        assert_eq!(
            root().set_offsets(&[(1, off(1, 0))], now),
            Err(Errno::EACCES)
        );
        assert_eq!(link_name(root()), b"time:[4026531834]");
    }
}
