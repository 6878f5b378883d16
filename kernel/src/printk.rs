//! The kernel log: printk-style lines with a timestamp since boot, on the host's stderr.
//!
//! `log` macros anywhere in the kernel end up here. Levels follow Linux `loglevel=`: messages
//! with a level number below the console loglevel are printed (0 emerg .. 7 debug); `quiet`
//! sets it to 4 (errors and worse), as in Linux `init/main.c`.
//!
//! Every message of level info or worse (debug ones too when the console prints them; never the
//! per-syscall trace lines) also goes into the log buffer ([`Ring`], as
//! kernel/printk/printk.c's `log_buf`, [`LOG_BUF_LEN`] bytes, oldest records dropped first),
//! whatever the console level: `syslog(2)` (`sys/syslog.rs`, busybox `dmesg`) reads it.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static BOOT: OnceLock<Instant> = OnceLock::new();
static CONSOLE_LOGLEVEL: AtomicU32 = AtomicU32::new(7);
/// `saved_console_loglevel` of SYSLOG_ACTION_CONSOLE_OFF/ON (-1: none saved).
static SAVED_CONSOLE_LOGLEVEL: AtomicI32 = AtomicI32::new(-1);

/// The log buffer's size (Linux's default `CONFIG_LOG_BUF_SHIFT` of 17).
pub const LOG_BUF_LEN: usize = 1 << 17;

/// `CONSOLE_LOGLEVEL_MIN`: the quietest console level syslog(2) may set.
pub const CONSOLE_LOGLEVEL_MIN: u32 = 1;

/// One message in the log buffer.
#[derive(Clone, Debug)]
pub struct Record {
    /// Sequence number (0 for the first message of the boot).
    pub seq: u64,
    /// Linux level, 0 emerg .. 7 debug.
    pub level: u32,
    /// Microseconds since boot.
    pub usec: u64,
    pub text: String,
}

impl Record {
    /// The record as syslog(2) and /dev/kmsg's readers of the text format see it:
    /// `<level>[seconds.micros] text\n` (printk.c `info_print_prefix` with the syslog prefix
    /// and the time, facility 0).
    pub fn syslog_text(&self) -> String {
        format!(
            "<{}>[{:5}.{:06}] {}\n",
            self.level,
            self.usec / 1_000_000,
            self.usec % 1_000_000,
            self.text
        )
    }
}

/// The log buffer and its readers' positions.
#[derive(Default)]
pub struct Ring {
    pub records: VecDeque<Record>,
    /// Bytes the records take (their syslog text).
    bytes: usize,
    /// The next record's sequence number.
    pub next_seq: u64,
    /// SYSLOG_ACTION_CLEAR: READ_ALL starts here.
    pub clear_seq: u64,
    /// SYSLOG_ACTION_READ's position.
    pub syslog_seq: u64,
}

impl Ring {
    fn push(&mut self, level: u32, usec: u64, text: &str) {
        let r = Record {
            seq: self.next_seq,
            level,
            usec,
            text: text.to_string(),
        };
        self.next_seq += 1;
        self.bytes += r.syslog_text().len();
        self.records.push_back(r);
        while self.bytes > LOG_BUF_LEN {
            let Some(old) = self.records.pop_front() else {
                break;
            };
            self.bytes -= old.syslog_text().len();
        }
    }

    /// The sequence number of the oldest record still held.
    pub fn first_seq(&self) -> u64 {
        self.records.front().map_or(self.next_seq, |r| r.seq)
    }

    /// Records from sequence number `from` on.
    pub fn since(&self, from: u64) -> impl DoubleEndedIterator<Item = &Record> {
        self.records.iter().filter(move |r| r.seq >= from)
    }
}

/// The log buffer.
pub fn ring() -> std::sync::MutexGuard<'static, Ring> {
    static RING: OnceLock<Mutex<Ring>> = OnceLock::new();
    RING.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Readers of the log buffer wait here for new records (SYSLOG_ACTION_READ).
pub fn log_wait() -> &'static crate::wait::WaitQueue {
    static Q: crate::wait::WaitQueue = crate::wait::WaitQueue::new();
    &Q
}

/// The console loglevel now.
pub fn console_loglevel() -> u32 {
    CONSOLE_LOGLEVEL.load(Ordering::Relaxed)
}

/// SYSLOG_ACTION_CONSOLE_LEVEL: sets the console level (at least [`CONSOLE_LOGLEVEL_MIN`]),
/// forgetting a level CONSOLE_OFF saved.
pub fn set_console_loglevel(level: u32) {
    CONSOLE_LOGLEVEL.store(level.max(CONSOLE_LOGLEVEL_MIN), Ordering::Relaxed);
    SAVED_CONSOLE_LOGLEVEL.store(-1, Ordering::Relaxed);
}

/// SYSLOG_ACTION_CONSOLE_OFF (`on` false) and CONSOLE_ON (`on` true).
pub fn console_switch(on: bool) {
    if on {
        let saved = SAVED_CONSOLE_LOGLEVEL.swap(-1, Ordering::Relaxed);
        if saved >= 0 {
            CONSOLE_LOGLEVEL.store(saved as u32, Ordering::Relaxed);
        }
    } else if SAVED_CONSOLE_LOGLEVEL.load(Ordering::Relaxed) == -1 {
        SAVED_CONSOLE_LOGLEVEL.store(console_loglevel() as i32, Ordering::Relaxed);
        CONSOLE_LOGLEVEL.store(CONSOLE_LOGLEVEL_MIN, Ordering::Relaxed);
    }
}

fn now_usec() -> u64 {
    BOOT.get_or_init(Instant::now).elapsed().as_micros() as u64
}

/// `log=PATH`: a host file that gets every message the log buffer gets, whatever the console
/// level (the host-side record of a boot, as a serial console's log is for a VM).
static LOG_FILE: OnceLock<Mutex<std::fs::File>> = OnceLock::new();

/// Boot: sends the log buffer's messages to `f` too (`log=PATH`).
pub fn set_log_file(f: std::fs::File) {
    let _ = LOG_FILE.set(Mutex::new(f));
}

/// Appends a message to the log buffer (and the `log=` file) and wakes its readers.
fn store(level: u32, msg: &str) {
    let usec = now_usec();
    if let Some(f) = LOG_FILE.get() {
        let line = format!(
            "<{level}>[{:5}.{:06}] {msg}\n",
            usec / 1_000_000,
            usec % 1_000_000
        );
        // A full disk or a closed file loses the host copy only; the ring still has it.
        let _ = f.lock().map(|mut f| f.write_all(line.as_bytes()));
    }
    ring().push(level, usec, msg);
    log_wait().wake_all();
}

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

/// Whether a message of this level is printed on the console (stderr).
fn on_console(l: log::Level) -> bool {
    level_number(l) < CONSOLE_LOGLEVEL.load(Ordering::Relaxed)
}

impl log::Log for Printk {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        // Info and worse always go to the log buffer; debug and trace lines (per fault, per
        // syscall) only when the console prints them, so they cost nothing otherwise.
        m.level() <= log::Level::Info || on_console(m.level())
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let msg = r.args().to_string();
        if r.level() != log::Level::Trace {
            store(level_number(r.level()), &msg);
        }
        if on_console(r.level()) {
            print_line(&msg);
        }
    }

    fn flush(&self) {}
}

/// Writes one log line at KERN_EMERG (boot banners, the init-exit panic, power-off), kept in
/// the log buffer as Linux's panic and `kernel_power_off` lines are: on the console at every
/// loglevel but `loglevel=0` (Linux prints a level below the console level; syslog(2) cannot
/// go below [`CONSOLE_LOGLEVEL_MIN`], only the boot option can; `linux run` uses it).
pub fn line(msg: &str) {
    store(0, msg);
    if CONSOLE_LOGLEVEL.load(Ordering::Relaxed) > 0 {
        print_line(msg);
    }
}

/// One timestamped line on the console (stderr).
fn print_line(msg: &str) {
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
    SAVED_CONSOLE_LOGLEVEL.store(-1, Ordering::Relaxed);
    let _ = log::set_logger(&Printk);
    log::set_max_level(log::LevelFilter::Trace);
}

/// Seconds since boot, for `/proc/uptime` and `sysinfo`.
pub fn uptime() -> std::time::Duration {
    BOOT.get_or_init(Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_newest_records_within_its_size() {
        let mut r = Ring::default();
        let text = "x".repeat(1000);
        for _ in 0..200 {
            r.push(6, 1_500_000, &text);
        }
        assert_eq!(r.next_seq, 200);
        assert!(r.bytes <= LOG_BUF_LEN);
        assert!(r.first_seq() > 0);
        assert_eq!(r.records.back().map(|x| x.seq), Some(199));
        assert_eq!(r.since(198).count(), 2);
        let rec = r.records.back().unwrap();
        assert!(rec.syslog_text().starts_with("<6>[    1.500000] xxx"));
        assert!(rec.syslog_text().ends_with("x\n"));
    }
}
