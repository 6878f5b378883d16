//! The one place that picks the native architecture. Everything else in the kernel names
//! `arch::native` (and the re-exports below) and never writes `cfg(target_arch)`.

#[cfg(target_arch = "aarch64")]
pub use um_arch_arm64 as native;
#[cfg(target_arch = "x86_64")]
pub use um_arch_x86 as native;

pub use native::regs::Regs;
pub use native::syscalls;

/// ELF machine of native guest programs.
pub const ELF_MACHINE: u16 = native::ELF_MACHINE;

/// `struct stat` of the native arch for `st` (fstat, newfstatat).
pub fn stat_bytes(st: &crate::vfs::Kstat) -> Vec<u8> {
    use um_uapi::Pod;
    native::abi::Stat::from_statx(&st.to_statx()).as_bytes()
}
