//! ELF auxiliary vector keys (`include/uapi/linux/auxvec.h`; `AT_SYSINFO_EHDR` from
//! `arch/{x86,arm64}/include/uapi/asm/auxvec.h`, where both use 33). These share the `AT_` prefix
//! with the `*at()` flags in [`super::fcntl`], hence their own module.

/// End of the vector.
pub const AT_NULL: u64 = 0;
/// Entry to ignore.
pub const AT_IGNORE: u64 = 1;
/// File descriptor of the program.
pub const AT_EXECFD: u64 = 2;
/// Address of the program headers.
pub const AT_PHDR: u64 = 3;
/// Size of one program header.
pub const AT_PHENT: u64 = 4;
/// Number of program headers.
pub const AT_PHNUM: u64 = 5;
/// System page size.
pub const AT_PAGESZ: u64 = 6;
/// Base address of the interpreter.
pub const AT_BASE: u64 = 7;
/// Flags (unused, 0).
pub const AT_FLAGS: u64 = 8;
/// Entry point of the program.
pub const AT_ENTRY: u64 = 9;
/// Program is not ELF.
pub const AT_NOTELF: u64 = 10;
/// Real uid.
pub const AT_UID: u64 = 11;
/// Effective uid.
pub const AT_EUID: u64 = 12;
/// Real gid.
pub const AT_GID: u64 = 13;
/// Effective gid.
pub const AT_EGID: u64 = 14;
/// Address of the platform string ("x86_64", "aarch64").
pub const AT_PLATFORM: u64 = 15;
/// Arch-dependent CPU capability bits.
pub const AT_HWCAP: u64 = 16;
/// Frequency of `times()` (USER_HZ, 100).
pub const AT_CLKTCK: u64 = 17;
/// Secure mode (setuid) boolean.
pub const AT_SECURE: u64 = 23;
/// Address of the real platform string.
pub const AT_BASE_PLATFORM: u64 = 24;
/// Address of 16 random bytes.
pub const AT_RANDOM: u64 = 25;
/// Extension of `AT_HWCAP`.
pub const AT_HWCAP2: u64 = 26;
/// rseq supported feature size (Linux 6.3+).
pub const AT_RSEQ_FEATURE_SIZE: u64 = 27;
/// rseq allocation alignment (Linux 6.3+).
pub const AT_RSEQ_ALIGN: u64 = 28;
/// Extension of `AT_HWCAP` (Linux 6.13+).
pub const AT_HWCAP3: u64 = 29;
/// Extension of `AT_HWCAP` (Linux 6.13+).
pub const AT_HWCAP4: u64 = 30;
/// Address of the file name of the program.
pub const AT_EXECFN: u64 = 31;
/// Address of the vDSO ELF header (x86_64 and arm64 both use 33).
pub const AT_SYSINFO_EHDR: u64 = 33;
/// Minimal stack size for signal delivery.
pub const AT_MINSIGSTKSZ: u64 = 51;
