//! arm64 hardware capabilities as a guest sees them: `AT_HWCAP`/`AT_HWCAP2` and the `Features`
//! line of `/proc/cpuinfo`.
//!
//! Guest code runs natively on the host CPU, so what it can execute is what the host kernel
//! enabled for the stub at EL0; what it may be *told* about is less: a feature that needs kernel
//! support this kernel lacks is masked ([`guest_hwcaps`]). The rule is an allow-list of named
//! bits, so a bit a newer host kernel defines (possibly needing new kernel support) stays hidden
//! until someone looks at it. What is masked and why:
//!
//! - **SVE, SVE2 and every SVE-only extension; SME, SME2 and every SME-only extension**: our
//!   guest signal frames carry only `fpsimd_context` (no `sve_context`/`za_context`), so the
//!   upper bits of the Z registers, the predicates and ZA would not survive a guest signal
//!   handler, and `prctl(PR_SVE_SET_VL)`/`PR_SME_SET_VL` are not implemented.
//! - **MTE, MTE3**: tag checking needs `PROT_MTE` host mappings, `PR_SET_TAGGED_ADDR_CTRL` and tag
//!   fault reporting.
//! - **PACA, PACG**: every stub disables its pointer-authentication keys
//!   (`PR_PAC_SET_ENABLED_KEYS`, see `host.rs`: an exec'd stub would otherwise have fresh keys
//!   after a guest `fork`), so `PAC*`/`AUT*` are NOPs; telling guests they may use
//!   `PACGA`/`pac*` as a real MAC would be a lie.
//! - **GCS** (guarded control stacks) and **POE** (permission overlays): need `prctl`s, `mmap`
//!   flags, signal-frame records (`gcs_context`, `poe_context`) we do not have.
//! - **FPMR and the FP8 instructions** that depend on it: FPMR needs an `fpmr_context` record in
//!   the signal frame.
//!
//! Usable as is: everything else the CPU offers at EL0 (AdvSIMD, crypto, atomics, RCpc, the
//! `CPUID` MRS emulation (done by the host kernel), `SSBS`/`DIT` PSTATE bits, `MOPS`, `BTI`
//! landing pads (mprotect accepts `PROT_BTI`; it is not enforced, since host mappings are made
//! without it), ...).
//!
//! The names and their order are Linux's (`arch/arm64/kernel/cpuinfo.c` `hwcap_str`, indexed by
//! the `KERNEL_HWCAP_*` number: the `AT_HWCAP` bits, then 64 + the `AT_HWCAP2` bits); the bits are
//! `arch/arm64/include/uapi/asm/hwcap.h`. Pure functions, tested on every host.

/// An `AT_HWCAP`/`AT_HWCAP2` pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hwcaps {
    /// `AT_HWCAP`.
    pub hwcap: u64,
    /// `AT_HWCAP2`.
    pub hwcap2: u64,
}

/// The `/proc/cpuinfo` key whose value lists the features.
pub const CPUINFO_KEY: &str = "Features";

/// `AT_HWCAP` bit names, bit 0 first (`hwcap_str[KERNEL_HWCAP_*]` for bits 0..63).
pub const HWCAP_NAMES: [&str; 48] = [
    "fp",
    "asimd",
    "evtstrm",
    "aes",
    "pmull",
    "sha1",
    "sha2",
    "crc32",
    "atomics",
    "fphp",
    "asimdhp",
    "cpuid",
    "asimdrdm",
    "jscvt",
    "fcma",
    "lrcpc",
    "dcpop",
    "sha3",
    "sm3",
    "sm4",
    "asimddp",
    "sha512",
    "sve",
    "asimdfhm",
    "dit",
    "uscat",
    "ilrcpc",
    "flagm",
    "ssbs",
    "sb",
    "paca",
    "pacg",
    "gcs",
    "cmpbr",
    "fprcvt",
    "f8mm8",
    "f8mm4",
    "svef16mm",
    "sveeltperm",
    "sveaes2",
    "svebfscale",
    "sve2p2",
    "sme2p2",
    "smesbitperm",
    "smeaes",
    "smesfexpa",
    "smestmop",
    "smesmop4",
];

/// `AT_HWCAP2` bit names, bit 0 first (`hwcap_str[KERNEL_HWCAP_*]` for 64 + bit).
pub const HWCAP2_NAMES: [&str; 64] = [
    "dcpodp",
    "sve2",
    "sveaes",
    "svepmull",
    "svebitperm",
    "svesha3",
    "svesm4",
    "flagm2",
    "frint",
    "svei8mm",
    "svef32mm",
    "svef64mm",
    "svebf16",
    "i8mm",
    "bf16",
    "dgh",
    "rng",
    "bti",
    "mte",
    "ecv",
    "afp",
    "rpres",
    "mte3",
    "sme",
    "smei16i64",
    "smef64f64",
    "smei8i32",
    "smef16f32",
    "smeb16f32",
    "smef32f32",
    "smefa64",
    "wfxt",
    "ebf16",
    "sveebf16",
    "cssc",
    "rprfm",
    "sve2p1",
    "sme2",
    "sme2p1",
    "smei16i32",
    "smebi32i32",
    "smeb16b16",
    "smef16f16",
    "mops",
    "hbc",
    "sveb16b16",
    "lrcpc3",
    "lse128",
    "fpmr",
    "lut",
    "faminmax",
    "f8cvt",
    "f8fma",
    "f8dp4",
    "f8dp2",
    "f8e4m3",
    "f8e5m2",
    "smelutv2",
    "smef8f16",
    "smef8f32",
    "smesf8fma",
    "smesf8dp4",
    "smesf8dp2",
    "poe",
];

/// `HWCAP_SVE`.
pub const HWCAP_SVE: u64 = 1 << 22;
/// `HWCAP_PACA`.
pub const HWCAP_PACA: u64 = 1 << 30;
/// `HWCAP_PACG`.
pub const HWCAP_PACG: u64 = 1 << 31;
/// `HWCAP_GCS`.
pub const HWCAP_GCS: u64 = 1 << 32;
/// `HWCAP2_SVE2`.
pub const HWCAP2_SVE2: u64 = 1 << 1;
/// `HWCAP2_BTI`.
pub const HWCAP2_BTI: u64 = 1 << 17;
/// `HWCAP2_MTE`.
pub const HWCAP2_MTE: u64 = 1 << 18;
/// `HWCAP2_SME`.
pub const HWCAP2_SME: u64 = 1 << 23;
/// `HWCAP2_FPMR`.
pub const HWCAP2_FPMR: u64 = 1 << 48;
/// `HWCAP2_POE`.
pub const HWCAP2_POE: u64 = 1 << 63;

/// The bits of `names` (bit i is `names[i]`) whose name is in `allowed`.
const fn mask_of(names: &[&str], allowed: &[&str]) -> u64 {
    let mut m = 0u64;
    let mut i = 0;
    while i < names.len() {
        let mut j = 0;
        while j < allowed.len() {
            if str_eq(names[i], allowed[j]) {
                m |= 1 << i;
            }
            j += 1;
        }
        i += 1;
    }
    m
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `AT_HWCAP` features a guest may use (see the module documentation for what is left out).
pub const HWCAP_GUEST: u64 = mask_of(
    &HWCAP_NAMES,
    &[
        "fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32", "atomics", "fphp",
        "asimdhp", "cpuid", "asimdrdm", "jscvt", "fcma", "lrcpc", "dcpop", "sha3", "sm3", "sm4",
        "asimddp", "sha512", "asimdfhm", "dit", "uscat", "ilrcpc", "flagm", "ssbs", "sb", "cmpbr",
        "fprcvt",
    ],
);

/// `AT_HWCAP2` features a guest may use.
pub const HWCAP2_GUEST: u64 = mask_of(
    &HWCAP2_NAMES,
    &[
        "dcpodp", "flagm2", "frint", "i8mm", "bf16", "dgh", "rng", "bti", "ecv", "afp", "rpres",
        "wfxt", "ebf16", "cssc", "rprfm", "mops", "hbc", "lrcpc3", "lse128", "lut", "faminmax",
    ],
);

/// The host's capabilities masked to what a guest can use under this kernel.
pub fn guest_hwcaps(host: Hwcaps) -> Hwcaps {
    Hwcaps {
        hwcap: host.hwcap & HWCAP_GUEST,
        hwcap2: host.hwcap2 & HWCAP2_GUEST,
    }
}

/// The arch-specific `PROT_*` bits `mmap`/`mprotect` accept for a guest with `guest`'s
/// capabilities (Linux `arch_validate_prot`: `PROT_BTI` with BTI, `PROT_MTE` with MTE, which is
/// masked). `PROT_BTI` is accepted but not enforced: host mappings are made without it.
pub fn extra_prot_bits(guest: Hwcaps) -> u32 {
    if guest.hwcap2 & HWCAP2_BTI != 0 {
        crate::abi::PROT_BTI
    } else {
        0
    }
}

/// The feature names of `caps` in Linux's `/proc/cpuinfo` order.
pub fn feature_names(caps: Hwcaps) -> Vec<&'static str> {
    let bits = |word: u64, names: &'static [&'static str]| {
        names
            .iter()
            .enumerate()
            .filter(move |(i, _)| word & (1 << i) != 0)
            .map(|(_, n)| *n)
    };
    bits(caps.hwcap, &HWCAP_NAMES)
        .chain(bits(caps.hwcap2, &HWCAP2_NAMES))
        .collect()
}

/// The value of the `Features` line for a guest (`c_show`: the names of the capabilities it
/// has). The host's own line is not consulted: the guest's capabilities say it all.
pub fn cpuinfo_features(_host_value: &str, guest: Hwcaps) -> String {
    feature_names(guest).join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host like qemu's `-cpu max`: every `AT_HWCAP` bit up to PACG, `AT_HWCAP2` up to SVE_EBF16.
    const QEMU_MAX: Hwcaps = Hwcaps {
        hwcap: 0xffff_ffff,
        hwcap2: 0x0003_ffff_ffff,
    };

    #[test]
    fn names_match_the_uapi_bits() {
        let idx = |n: &str| HWCAP_NAMES.iter().position(|x| *x == n).unwrap();
        let idx2 = |n: &str| HWCAP2_NAMES.iter().position(|x| *x == n).unwrap();
        assert_eq!(1u64 << idx("sve"), HWCAP_SVE);
        assert_eq!(1u64 << idx("paca"), HWCAP_PACA);
        assert_eq!(1u64 << idx("pacg"), HWCAP_PACG);
        assert_eq!(1u64 << idx("gcs"), HWCAP_GCS);
        assert_eq!(idx("smesmop4"), 47);
        assert_eq!(1u64 << idx2("sve2"), HWCAP2_SVE2);
        assert_eq!(1u64 << idx2("bti"), HWCAP2_BTI);
        assert_eq!(1u64 << idx2("mte"), HWCAP2_MTE);
        assert_eq!(1u64 << idx2("sme"), HWCAP2_SME);
        assert_eq!(1u64 << idx2("fpmr"), HWCAP2_FPMR);
        assert_eq!(1u64 << idx2("poe"), HWCAP2_POE);
        assert_eq!(idx2("wfxt"), 31);
        assert_eq!(idx2("mops"), 43);
        // Every allowed name exists (a typo would silently drop a feature).
        assert_eq!(HWCAP_GUEST.count_ones(), 31);
        assert_eq!(HWCAP2_GUEST.count_ones(), 21);
    }

    #[test]
    fn masks_what_needs_kernel_support() {
        let all = Hwcaps {
            hwcap: u64::MAX,
            hwcap2: u64::MAX,
        };
        let g = guest_hwcaps(all);
        for bit in [HWCAP_SVE, HWCAP_PACA, HWCAP_PACG, HWCAP_GCS] {
            assert_eq!(g.hwcap & bit, 0, "{bit:#x}");
        }
        for bit in [HWCAP2_SVE2, HWCAP2_MTE, HWCAP2_SME, HWCAP2_FPMR, HWCAP2_POE] {
            assert_eq!(g.hwcap2 & bit, 0, "{bit:#x}");
        }
        assert_ne!(g.hwcap2 & HWCAP2_BTI, 0, "BTI is usable");
        assert_eq!(extra_prot_bits(g), crate::abi::PROT_BTI);
        assert_eq!(extra_prot_bits(Hwcaps::default()), 0);
        // No SVE- or SME-only extension and no FP8 instruction slips through.
        for n in feature_names(g) {
            assert!(
                !n.starts_with("sve") && !n.starts_with("sme") && !n.starts_with("f8"),
                "{n}"
            );
            assert!(!n.starts_with("mte") && !n.starts_with("pac"), "{n}");
        }
        // Bits no name is known for (a newer host) are hidden too.
        assert_eq!(g.hwcap >> 48, 0);
        // A host without the features keeps the same (sub)set: masking only removes.
        let plain = Hwcaps {
            hwcap: 0xff,
            hwcap2: 0,
        };
        assert_eq!(guest_hwcaps(plain), plain);
        assert_eq!(guest_hwcaps(Hwcaps::default()), Hwcaps::default());
    }

    #[test]
    fn qemu_max_features_line() {
        let g = guest_hwcaps(QEMU_MAX);
        assert_eq!(
            g.hwcap,
            QEMU_MAX.hwcap & !(HWCAP_SVE | HWCAP_PACA | HWCAP_PACG)
        );
        let line = cpuinfo_features("fp asimd sve paca", g);
        assert!(
            line.starts_with("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics"),
            "{line}"
        );
        assert!(
            line.contains("asimdfhm dit uscat ilrcpc flagm ssbs sb dcpodp flagm2"),
            "{line}"
        );
        assert!(!line.contains("sve") && !line.contains("paca"), "{line}");
        assert!(line.contains(" bti ") && !line.contains(" mte"), "{line}");
        // Linux order: AT_HWCAP names first, then AT_HWCAP2 names, each by bit.
        let names = feature_names(g);
        let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert!(pos("sb") < pos("dcpodp") && pos("dcpodp") < pos("bti"));
    }

    #[test]
    fn cortex_a53() {
        // fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid: all usable.
        let a53 = Hwcaps {
            hwcap: 0x8ff,
            hwcap2: 0,
        };
        assert_eq!(guest_hwcaps(a53), a53);
        assert_eq!(
            cpuinfo_features("", a53),
            "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"
        );
    }
}
