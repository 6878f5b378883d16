//! `/proc/config.gz` (kernel/configs.c, `CONFIG_IKCONFIG_PROC`): this kernel's configuration,
//! in Kconfig syntax, gzip-compressed. Test suites (LTP's `tst_kconfig`) read it to decide what
//! the kernel supports, so it lists the Linux options whose behaviour this kernel implements.
//!
//! The gzip stream uses stored (uncompressed) deflate blocks (RFC 1951 §3.2.4, RFC 1952), which
//! every gunzip reads; no compressor is needed for a few kilobytes.

/// The options this kernel provides, as a Linux `.config` would say them.
const CONFIG: &str = "\
# Automatically generated file; DO NOT EDIT.
# Linux 6.1.0-um Kernel Configuration (user-mode kernel in Rust)
CONFIG_64BIT=y
CONFIG_MMU=y
CONFIG_SMP=y
CONFIG_MULTIUSER=y
CONFIG_SYSVIPC=y
CONFIG_POSIX_TIMERS=y
CONFIG_HIGH_RES_TIMERS=y
CONFIG_FUTEX=y
CONFIG_FUTEX_PI=n
CONFIG_EPOLL=y
CONFIG_SIGNALFD=y
CONFIG_TIMERFD=y
CONFIG_EVENTFD=y
CONFIG_SHMEM=y
CONFIG_AIO=n
CONFIG_ADVISE_SYSCALLS=y
CONFIG_USERFAULTFD=y
CONFIG_HAVE_ARCH_USERFAULTFD_WP=y
CONFIG_MEMBARRIER=n
CONFIG_RSEQ=n
CONFIG_PROC_FS=y
CONFIG_PROC_SYSCTL=y
CONFIG_IKCONFIG=y
CONFIG_IKCONFIG_PROC=y
CONFIG_SYSFS=y
CONFIG_TMPFS=y
CONFIG_DEVTMPFS=y
CONFIG_DEVTMPFS_MOUNT=y
CONFIG_UNIX=y
CONFIG_UNIX98_PTYS=y
CONFIG_TTY=y
CONFIG_FILE_LOCKING=y
CONFIG_INOTIFY_USER=n
CONFIG_DNOTIFY=y
CONFIG_FANOTIFY=n
CONFIG_NET=y
CONFIG_INET=y
CONFIG_PACKET=y
CONFIG_BLOCK=y
CONFIG_BLK_DEV_LOOP=y
CONFIG_NAMESPACES=y
CONFIG_TIME_NS=y
CONFIG_USER_NS=n
CONFIG_PID_NS=y
CONFIG_NET_NS=y
CONFIG_CGROUPS=y
CONFIG_CGROUP_PIDS=y
CONFIG_MODULES=n
CONFIG_SECCOMP=n
CONFIG_HUGETLBFS=y
CONFIG_HUGETLB_PAGE=y
CONFIG_MEMORY_FAILURE=y
CONFIG_TRANSPARENT_HUGEPAGE=n
CONFIG_KSM=n
CONFIG_QUOTA=n
CONFIG_CHECKPOINT_RESTORE=n
";

/// CRC-32 (IEEE 802.3, reflected, as gzip uses).
fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// `data` as a gzip member made of stored deflate blocks.
pub fn gzip_stored(data: &[u8]) -> Vec<u8> {
    // ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=3 (Unix).
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    let mut chunks = data.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        out.push(u8::from(last)); // BFINAL, BTYPE = 00 (stored)
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// The contents of `/proc/config.gz`.
pub fn config_gz() -> Vec<u8> {
    gzip_stored(CONFIG.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_known_string() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn host_gunzip_reads_it() {
        let gz = config_gz();
        let dir = std::env::temp_dir().join(format!("um-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("config.gz");
        std::fs::write(&f, &gz).unwrap();
        let out = std::process::Command::new("gzip")
            .arg("-cd")
            .arg(&f)
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, CONFIG.as_bytes());
    }
}
