//! The guest's CPUs: how many are online (UML's `ncpus=`, default one per host CPU, at most
//! [`MAX`]). Everything that reports CPUs asks here: `sched_getaffinity`, `getcpu`,
//! `/proc/cpuinfo` and `/proc/stat`, `/sys/devices/system/cpu`, `sysinfo`'s load, so `nproc`
//! (musl and glibc: the affinity mask), `getconf _NPROCESSORS_ONLN` (glibc: the sysfs `online`
//! list) and `/proc/cpuinfo` agree. The guest's threads still run on whatever host CPUs the
//! host gives them: the count is what the guest is told, not a placement.

use std::sync::OnceLock;

/// The most CPUs a guest can have (the affinity mask is one 64-bit word here).
pub const MAX: u32 = 64;

static ONLINE: OnceLock<u32> = OnceLock::new();

/// The host's CPU count (`/proc/cpuinfo`'s processor lines, else the threads std may use).
pub fn host() -> u32 {
    let n = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count() as u32)
        .unwrap_or(0);
    if n > 0 {
        n
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    }
}

/// Boot: `ncpus=` (clamped to 1..=[`MAX`]); before this the host's count is used.
pub fn set_online(n: u32) {
    let _ = ONLINE.set(n.clamp(1, MAX));
}

/// CPUs online in the guest: `0..online()`.
pub fn online() -> u32 {
    *ONLINE.get_or_init(|| host().clamp(1, MAX))
}

/// The mask of the online CPUs.
pub fn mask() -> u64 {
    let n = online();
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_matches_count() {
        assert!(host() >= 1);
        assert_eq!(mask().count_ones(), online());
    }
}
