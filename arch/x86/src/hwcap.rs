//! x86_64 hardware capabilities as a guest sees them: `AT_HWCAP`/`AT_HWCAP2` and the `flags`
//! line of `/proc/cpuinfo`.
//!
//! On x86_64 `AT_HWCAP` is `CPUID.1:EDX` (Linux `ELF_HWCAP` = `boot_cpu_data.x86_capability
//! [CPUID_1_EDX]`): plain instruction-set bits a guest running natively on the host CPU can use,
//! so it is passed through. `AT_HWCAP2` (`arch/x86/include/uapi/asm/hwcap2.h`) has two bits:
//! `HWCAP2_RING3MWAIT` (passed through) and `HWCAP2_FSGSBASE`, which is masked: the seccomp
//! engine sets a stub thread's FS base with `arch_prctl` and the kernel keeps its own copy of
//! the guest's FS, so a guest that wrote FS with `wrfsbase` would desync the two. Unknown bits
//! are masked too.
//!
//! `/proc/cpuinfo`'s `flags` line lists far more than `AT_HWCAP`; it is the host's line with the
//! names of masked capabilities removed (`fsgsbase`). Pure functions, tested on every host.

/// An `AT_HWCAP`/`AT_HWCAP2` pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hwcaps {
    /// `AT_HWCAP`.
    pub hwcap: u64,
    /// `AT_HWCAP2`.
    pub hwcap2: u64,
}

/// The `/proc/cpuinfo` key whose value lists the features.
pub const CPUINFO_KEY: &str = "flags";

/// `HWCAP2_RING3MWAIT`: MONITOR/MWAIT enabled in ring 3 (Xeon Phi).
pub const HWCAP2_RING3MWAIT: u64 = 1 << 0;
/// `HWCAP2_FSGSBASE`: the kernel allows `rd/wr{fs,gs}base` in user mode.
pub const HWCAP2_FSGSBASE: u64 = 1 << 1;

/// `/proc/cpuinfo` names of the `CPUID.1:EDX` bits (`arch/x86/include/asm/cpufeatures.h`, word
/// 0); "" for reserved bits.
pub const HWCAP_NAMES: [&str; 32] = [
    "fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce", "cx8", "apic", "", "sep", "mtrr", "pge",
    "mca", "cmov", "pat", "pse36", "pn", "clflush", "", "dts", "acpi", "mmx", "fxsr", "sse",
    "sse2", "ss", "ht", "tm", "ia64", "pbe",
];

/// `/proc/cpuinfo` names of the `AT_HWCAP2` bits.
pub const HWCAP2_NAMES: [&str; 2] = ["ring3mwait", "fsgsbase"];

/// `AT_HWCAP` bits a guest may use: all of `CPUID.1:EDX`.
pub const HWCAP_GUEST: u64 = 0xffff_ffff;
/// `AT_HWCAP2` bits a guest may use.
pub const HWCAP2_GUEST: u64 = HWCAP2_RING3MWAIT;

/// The host's capabilities masked to what a guest can use under this kernel.
pub fn guest_hwcaps(host: Hwcaps) -> Hwcaps {
    Hwcaps {
        hwcap: host.hwcap & HWCAP_GUEST,
        hwcap2: host.hwcap2 & HWCAP2_GUEST,
    }
}

/// The arch-specific `PROT_*` bits `mmap`/`mprotect` accept: none on x86_64.
pub fn extra_prot_bits(_guest: Hwcaps) -> u32 {
    0
}

/// The value of the `flags` line for a guest: the host's flags, less those naming a
/// capability bit the guest does not have.
pub fn cpuinfo_features(host_value: &str, guest: Hwcaps) -> String {
    let hidden = |name: &str| {
        let off = |names: &[&str], word: u64| {
            names
                .iter()
                .position(|n| !n.is_empty() && *n == name)
                .is_some_and(|i| word & (1 << i) == 0)
        };
        off(&HWCAP_NAMES, guest.hwcap) || off(&HWCAP2_NAMES, guest.hwcap2)
    };
    host_value
        .split_whitespace()
        .filter(|f| !hidden(f))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This repository's CI host (AMD EPYC), trimmed.
    const HOST_FLAGS: &str = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat \
        pse36 clflush mmx fxsr sse sse2 ht syscall nx lm constant_tsc pni ssse3 fma cx16 sse4_1 \
        sse4_2 movbe popcnt aes xsave avx f16c rdrand hypervisor fsgsbase bmi1 avx2 bmi2 erms";

    #[test]
    fn fsgsbase_is_masked_hwcap_passes() {
        let host = Hwcaps {
            hwcap: 0x178b_fbff,
            hwcap2: HWCAP2_FSGSBASE,
        };
        let g = guest_hwcaps(host);
        assert_eq!(g.hwcap, 0x178b_fbff);
        assert_eq!(g.hwcap2, 0);
        let both = Hwcaps {
            hwcap: 0,
            hwcap2: HWCAP2_FSGSBASE | HWCAP2_RING3MWAIT | 1 << 5,
        };
        assert_eq!(guest_hwcaps(both).hwcap2, HWCAP2_RING3MWAIT);
    }

    #[test]
    fn flags_line_follows_the_mask() {
        let g = guest_hwcaps(Hwcaps {
            hwcap: 0x178b_fbff,
            hwcap2: HWCAP2_FSGSBASE,
        });
        let f = cpuinfo_features(HOST_FLAGS, g);
        assert!(!f.contains("fsgsbase"), "{f}");
        assert!(f.starts_with("fpu vme de pse tsc"), "{f}");
        assert!(f.contains(" hypervisor bmi1 avx2 bmi2 erms"), "{f}");
        assert_eq!(
            f.split(' ').count(),
            HOST_FLAGS.split_whitespace().count() - 1
        );
        // A CPUID.1:EDX bit the guest lacks goes too (sse2 is bit 26); unknown names stay.
        let g2 = Hwcaps {
            hwcap: 0x178b_fbff & !(1 << 26),
            hwcap2: 0,
        };
        let f2 = cpuinfo_features(HOST_FLAGS, g2);
        assert!(
            !f2.split(' ').any(|x| x == "sse2") && f2.contains(" sse "),
            "{f2}"
        );
        assert!(f2.contains("avx2"));
        assert_eq!(HWCAP_NAMES[26], "sse2");
        assert_eq!(HWCAP_NAMES[19], "clflush");
    }
}
