//! Capability numbers (`include/uapi/linux/capability.h`, Linux 6.1: `CAP_CHOWN` 0 to
//! `CAP_CHECKPOINT_RESTORE` 40 = `CAP_LAST_CAP`), the same on every arch. A capability set is a
//! u64 with bit `CAP_X` for capability `CAP_X` ([`cap_bit`]).
//!
//! The test reads the host's copy of the header (`/usr/include/linux/capability.h`, from
//! `linux-libc-dev`, which `tools/gen-syscalls.py` needs too) and checks every number here.

use static_assertions::const_assert_eq;

/// `CAP_CHOWN`.
pub const CAP_CHOWN: u32 = 0;
/// `CAP_DAC_OVERRIDE`.
pub const CAP_DAC_OVERRIDE: u32 = 1;
/// `CAP_DAC_READ_SEARCH`.
pub const CAP_DAC_READ_SEARCH: u32 = 2;
/// `CAP_FOWNER`.
pub const CAP_FOWNER: u32 = 3;
/// `CAP_FSETID`.
pub const CAP_FSETID: u32 = 4;
/// `CAP_KILL`.
pub const CAP_KILL: u32 = 5;
/// `CAP_SETGID`.
pub const CAP_SETGID: u32 = 6;
/// `CAP_SETUID`.
pub const CAP_SETUID: u32 = 7;
/// `CAP_SETPCAP`.
pub const CAP_SETPCAP: u32 = 8;
/// `CAP_LINUX_IMMUTABLE`.
pub const CAP_LINUX_IMMUTABLE: u32 = 9;
/// `CAP_NET_BIND_SERVICE`.
pub const CAP_NET_BIND_SERVICE: u32 = 10;
/// `CAP_NET_BROADCAST`.
pub const CAP_NET_BROADCAST: u32 = 11;
/// `CAP_NET_ADMIN`.
pub const CAP_NET_ADMIN: u32 = 12;
/// `CAP_NET_RAW`.
pub const CAP_NET_RAW: u32 = 13;
/// `CAP_IPC_LOCK`.
pub const CAP_IPC_LOCK: u32 = 14;
/// `CAP_IPC_OWNER`.
pub const CAP_IPC_OWNER: u32 = 15;
/// `CAP_SYS_MODULE`.
pub const CAP_SYS_MODULE: u32 = 16;
/// `CAP_SYS_RAWIO`.
pub const CAP_SYS_RAWIO: u32 = 17;
/// `CAP_SYS_CHROOT`.
pub const CAP_SYS_CHROOT: u32 = 18;
/// `CAP_SYS_PTRACE`.
pub const CAP_SYS_PTRACE: u32 = 19;
/// `CAP_SYS_PACCT`.
pub const CAP_SYS_PACCT: u32 = 20;
/// `CAP_SYS_ADMIN`.
pub const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_SYS_BOOT`.
pub const CAP_SYS_BOOT: u32 = 22;
/// `CAP_SYS_NICE`.
pub const CAP_SYS_NICE: u32 = 23;
/// `CAP_SYS_RESOURCE`.
pub const CAP_SYS_RESOURCE: u32 = 24;
/// `CAP_SYS_TIME`.
pub const CAP_SYS_TIME: u32 = 25;
/// `CAP_SYS_TTY_CONFIG`.
pub const CAP_SYS_TTY_CONFIG: u32 = 26;
/// `CAP_MKNOD`.
pub const CAP_MKNOD: u32 = 27;
/// `CAP_LEASE`.
pub const CAP_LEASE: u32 = 28;
/// `CAP_AUDIT_WRITE`.
pub const CAP_AUDIT_WRITE: u32 = 29;
/// `CAP_AUDIT_CONTROL`.
pub const CAP_AUDIT_CONTROL: u32 = 30;
/// `CAP_SETFCAP`.
pub const CAP_SETFCAP: u32 = 31;
/// `CAP_MAC_OVERRIDE`.
pub const CAP_MAC_OVERRIDE: u32 = 32;
/// `CAP_MAC_ADMIN`.
pub const CAP_MAC_ADMIN: u32 = 33;
/// `CAP_SYSLOG`.
pub const CAP_SYSLOG: u32 = 34;
/// `CAP_WAKE_ALARM`.
pub const CAP_WAKE_ALARM: u32 = 35;
/// `CAP_BLOCK_SUSPEND`.
pub const CAP_BLOCK_SUSPEND: u32 = 36;
/// `CAP_AUDIT_READ`.
pub const CAP_AUDIT_READ: u32 = 37;
/// `CAP_PERFMON`.
pub const CAP_PERFMON: u32 = 38;
/// `CAP_BPF`.
pub const CAP_BPF: u32 = 39;
/// `CAP_CHECKPOINT_RESTORE`.
pub const CAP_CHECKPOINT_RESTORE: u32 = 40;

/// `CAP_LAST_CAP`: the highest capability this ABI knows.
pub const CAP_LAST_CAP: u32 = CAP_CHECKPOINT_RESTORE;
const_assert_eq!(CAP_LAST_CAP, 40);

/// The bit of capability `cap` in a capability set (`CAP_TO_MASK` for the u64 sets here).
pub const fn cap_bit(cap: u32) -> u64 {
    1 << cap
}

/// Every capability number, by name, in order.
pub const ALL: [(&str, u32); 41] = [
    ("CAP_CHOWN", CAP_CHOWN),
    ("CAP_DAC_OVERRIDE", CAP_DAC_OVERRIDE),
    ("CAP_DAC_READ_SEARCH", CAP_DAC_READ_SEARCH),
    ("CAP_FOWNER", CAP_FOWNER),
    ("CAP_FSETID", CAP_FSETID),
    ("CAP_KILL", CAP_KILL),
    ("CAP_SETGID", CAP_SETGID),
    ("CAP_SETUID", CAP_SETUID),
    ("CAP_SETPCAP", CAP_SETPCAP),
    ("CAP_LINUX_IMMUTABLE", CAP_LINUX_IMMUTABLE),
    ("CAP_NET_BIND_SERVICE", CAP_NET_BIND_SERVICE),
    ("CAP_NET_BROADCAST", CAP_NET_BROADCAST),
    ("CAP_NET_ADMIN", CAP_NET_ADMIN),
    ("CAP_NET_RAW", CAP_NET_RAW),
    ("CAP_IPC_LOCK", CAP_IPC_LOCK),
    ("CAP_IPC_OWNER", CAP_IPC_OWNER),
    ("CAP_SYS_MODULE", CAP_SYS_MODULE),
    ("CAP_SYS_RAWIO", CAP_SYS_RAWIO),
    ("CAP_SYS_CHROOT", CAP_SYS_CHROOT),
    ("CAP_SYS_PTRACE", CAP_SYS_PTRACE),
    ("CAP_SYS_PACCT", CAP_SYS_PACCT),
    ("CAP_SYS_ADMIN", CAP_SYS_ADMIN),
    ("CAP_SYS_BOOT", CAP_SYS_BOOT),
    ("CAP_SYS_NICE", CAP_SYS_NICE),
    ("CAP_SYS_RESOURCE", CAP_SYS_RESOURCE),
    ("CAP_SYS_TIME", CAP_SYS_TIME),
    ("CAP_SYS_TTY_CONFIG", CAP_SYS_TTY_CONFIG),
    ("CAP_MKNOD", CAP_MKNOD),
    ("CAP_LEASE", CAP_LEASE),
    ("CAP_AUDIT_WRITE", CAP_AUDIT_WRITE),
    ("CAP_AUDIT_CONTROL", CAP_AUDIT_CONTROL),
    ("CAP_SETFCAP", CAP_SETFCAP),
    ("CAP_MAC_OVERRIDE", CAP_MAC_OVERRIDE),
    ("CAP_MAC_ADMIN", CAP_MAC_ADMIN),
    ("CAP_SYSLOG", CAP_SYSLOG),
    ("CAP_WAKE_ALARM", CAP_WAKE_ALARM),
    ("CAP_BLOCK_SUSPEND", CAP_BLOCK_SUSPEND),
    ("CAP_AUDIT_READ", CAP_AUDIT_READ),
    ("CAP_PERFMON", CAP_PERFMON),
    ("CAP_BPF", CAP_BPF),
    ("CAP_CHECKPOINT_RESTORE", CAP_CHECKPOINT_RESTORE),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_linux_capability_h() {
        let h = std::fs::read_to_string("/usr/include/linux/capability.h")
            .expect("/usr/include/linux/capability.h (Debian package linux-libc-dev)");
        let defined = |name: &str| {
            h.lines().find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some("#define") && w.next() == Some(name))
                    .then(|| w.next().and_then(|v| v.parse::<u32>().ok()))
                    .flatten()
            })
        };
        for (i, &(name, nr)) in ALL.iter().enumerate() {
            assert_eq!(nr as usize, i);
            assert_eq!(defined(name), Some(nr), "{name}");
        }
        // The header's `#define CAP_LAST_CAP CAP_CHECKPOINT_RESTORE`.
        let last = h.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("#define") && w.next() == Some("CAP_LAST_CAP")).then(|| w.next())
        });
        assert_eq!(last, Some(Some("CAP_CHECKPOINT_RESTORE")));
        assert_eq!(cap_bit(CAP_SYS_ADMIN), 1 << 21);
    }
}
