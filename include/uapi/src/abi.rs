//! Constants and structures of the Linux ABI that are the same on x86_64 and arm64.
//! (Arch-specific layouts live in the arch crates.)
