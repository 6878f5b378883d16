//! The kernel log: printk-style lines with a timestamp since boot, on the host's stderr.
//!
//! `log` macros anywhere in the kernel end up here. Levels follow Linux `loglevel=`: messages
//! with a level number below the console loglevel are printed (0 emerg .. 7 debug); `quiet`
//! sets it to 4 (warnings and worse), as in Linux `init/main.c`.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

static BOOT: OnceLock<Instant> = OnceLock::new();
static CONSOLE_LOGLEVEL: AtomicU32 = AtomicU32::new(7);

struct Printk;

/// Linux level number of a `log` level.
fn level_number(l: log::Level) -> u32 {
    match l {
        log::Level::Error => 3,
        log::Level::Warn => 4,
        log::Level::Info => 6,
        log::Level::Debug | log::Level::Trace => 7,
    }
}

impl log::Log for Printk {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        level_number(m.level()) < CONSOLE_LOGLEVEL.load(Ordering::Relaxed)
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            line(&r.args().to_string());
        }
    }

    fn flush(&self) {}
}

/// Writes one log line unconditionally (boot banners, the init-exit panic).
pub fn line(msg: &str) {
    let t = BOOT.get_or_init(Instant::now).elapsed();
    // A host terminal in raw mode (the console) does not turn \n into \r\n.
    let nl = if um_os_linux::term::raw_active() {
        "\r\n"
    } else {
        "\n"
    };
    let s = format!("[{:5}.{:06}] {}{nl}", t.as_secs(), t.subsec_micros(), msg);
    let _ = std::io::stderr().lock().write_all(s.as_bytes());
}

/// Installs the logger; `loglevel` as on the Linux command line.
pub fn init(loglevel: u32) {
    BOOT.get_or_init(Instant::now);
    CONSOLE_LOGLEVEL.store(loglevel, Ordering::Relaxed);
    let _ = log::set_logger(&Printk);
    log::set_max_level(log::LevelFilter::Trace);
}

/// Seconds since boot, for `/proc/uptime` and `sysinfo`.
pub fn uptime() -> std::time::Duration {
    BOOT.get_or_init(Instant::now).elapsed()
}
