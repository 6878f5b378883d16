//! syslog(2) (kernel/printk/printk.c `do_syslog`, man 2 syslog): the kernel log buffer
//! ([`crate::printk::ring`]) for `dmesg` and klogd, and the console loglevel.
//!
//! READ_ALL and SIZE_BUFFER are open to everyone (`dmesg_restrict` 0); every other action needs
//! CAP_SYSLOG (or CAP_SYS_ADMIN, as `check_syslog_permissions` still accepts). Records come out
//! as `<level>[seconds.micros] text\n`.

use crate::printk::{self, LOG_BUF_LEN, Record};
use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::wait::{WaitError, wait_event};
use um_uapi::abi::capability::{CAP_SYS_ADMIN, CAP_SYSLOG};
use um_uapi::{Errno, SysResult};

const SYSLOG_ACTION_CLOSE: i32 = 0;
const SYSLOG_ACTION_OPEN: i32 = 1;
const SYSLOG_ACTION_READ: i32 = 2;
const SYSLOG_ACTION_READ_ALL: i32 = 3;
const SYSLOG_ACTION_READ_CLEAR: i32 = 4;
const SYSLOG_ACTION_CLEAR: i32 = 5;
const SYSLOG_ACTION_CONSOLE_OFF: i32 = 6;
const SYSLOG_ACTION_CONSOLE_ON: i32 = 7;
const SYSLOG_ACTION_CONSOLE_LEVEL: i32 = 8;
const SYSLOG_ACTION_SIZE_UNREAD: i32 = 9;
const SYSLOG_ACTION_SIZE_BUFFER: i32 = 10;

/// The newest records from `from` on whose text fits in `size` bytes, oldest first
/// (`syslog_print_all`: "find first record that fits, including all following records").
fn newest_fitting<'a>(recs: impl DoubleEndedIterator<Item = &'a Record>, size: usize) -> Vec<u8> {
    let mut parts: Vec<String> = Vec::new();
    let mut len = 0;
    for r in recs.rev() {
        let t = r.syslog_text();
        if len + t.len() > size {
            break;
        }
        len += t.len();
        parts.push(t);
    }
    parts.reverse();
    parts.concat().into_bytes()
}

fn syslog(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (kind, buf, len): (i32, u64, i32) = args(&a)?;
    let open = matches!(kind, SYSLOG_ACTION_READ_ALL | SYSLOG_ACTION_SIZE_BUFFER);
    let p = &c.task.process;
    if !open && !p.capable(CAP_SYSLOG) && !p.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    match kind {
        SYSLOG_ACTION_CLOSE | SYSLOG_ACTION_OPEN => Ok(0),
        SYSLOG_ACTION_READ => {
            if buf == 0 || len < 0 {
                return Err(Errno::EINVAL);
            }
            if len == 0 {
                return Ok(0);
            }
            let cond = || {
                let ring = printk::ring();
                (ring.syslog_seq.max(ring.first_seq()) < ring.next_seq).then_some(())
            };
            match wait_event(c.task, &[printk::log_wait()], None, cond) {
                Ok(()) => {}
                Err(WaitError::Interrupted) => return Err(Errno::ERESTARTSYS),
                Err(WaitError::TimedOut) => return Err(Errno::EAGAIN),
            }
            // Whole records while they fit; a first record longer than the buffer is cut.
            let mut ring = printk::ring();
            let from = ring.syslog_seq.max(ring.first_seq());
            let mut out = Vec::new();
            let mut next = from;
            for r in ring.since(from) {
                let t = r.syslog_text();
                if out.len() + t.len() > len as usize {
                    if out.is_empty() {
                        out.extend_from_slice(&t.as_bytes()[..len as usize]);
                        next = r.seq + 1;
                    }
                    break;
                }
                out.extend_from_slice(t.as_bytes());
                next = r.seq + 1;
            }
            ring.syslog_seq = next;
            drop(ring);
            c.write_bytes(buf, &out)?;
            Ok(out.len() as u64)
        }
        SYSLOG_ACTION_READ_ALL | SYSLOG_ACTION_READ_CLEAR => {
            if buf == 0 || len < 0 {
                return Err(Errno::EINVAL);
            }
            if len == 0 {
                return Ok(0);
            }
            let mut ring = printk::ring();
            let from = ring.clear_seq.max(ring.first_seq());
            let out = newest_fitting(ring.since(from), len as usize);
            if kind == SYSLOG_ACTION_READ_CLEAR {
                ring.clear_seq = ring.next_seq;
            }
            drop(ring);
            c.write_bytes(buf, &out)?;
            Ok(out.len() as u64)
        }
        SYSLOG_ACTION_CLEAR => {
            let mut ring = printk::ring();
            ring.clear_seq = ring.next_seq;
            Ok(0)
        }
        SYSLOG_ACTION_CONSOLE_OFF => {
            printk::console_switch(false);
            Ok(0)
        }
        SYSLOG_ACTION_CONSOLE_ON => {
            printk::console_switch(true);
            Ok(0)
        }
        SYSLOG_ACTION_CONSOLE_LEVEL => {
            if !(1..=8).contains(&len) {
                return Err(Errno::EINVAL);
            }
            printk::set_console_loglevel(len as u32);
            Ok(0)
        }
        SYSLOG_ACTION_SIZE_UNREAD => {
            let ring = printk::ring();
            let from = ring.syslog_seq.max(ring.first_seq());
            let n: usize = ring.since(from).map(|r| r.syslog_text().len()).sum();
            Ok(n as u64)
        }
        SYSLOG_ACTION_SIZE_BUFFER => Ok(LOG_BUF_LEN as u64),
        _ => Err(Errno::EINVAL),
    }
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("syslog", syslog);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_all_takes_the_newest_records_that_fit() {
        let recs: Vec<Record> = (0..3)
            .map(|i| Record {
                seq: i,
                level: 6,
                usec: i * 1000,
                text: format!("m{i}"),
            })
            .collect();
        let one = recs[0].syslog_text().len();
        assert_eq!(recs[2].syslog_text(), "<6>[    0.002000] m2\n");
        let out = String::from_utf8(newest_fitting(recs.iter(), 2 * one + 1)).unwrap();
        assert_eq!(
            out,
            format!("{}{}", recs[1].syslog_text(), recs[2].syslog_text())
        );
        assert!(newest_fitting(recs.iter(), one - 1).is_empty());
    }
}
