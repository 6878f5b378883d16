//! The N_TTY line discipline as pure state (Linux `drivers/tty/n_tty.c`): input processing
//! (ISTRIP, IGNCR/ICRNL/INLCR, IUCLC), the signal characters (ISIG), flow-control characters
//! (IXON), canonical line editing (ERASE, KILL, WERASE, LNEXT, REPRINT, EOF, EOL, EOL2), echo
//! (ECHO, ECHOE, ECHOK, ECHOKE, ECHONL, ECHOCTL, ECHOPRT) and the read side for both canonical
//! and non-canonical mode.
//!
//! Key types: [`NTty`] (the input buffer with its line delimiters), [`Receive`] (what one
//! batch of input asks the tty to do: signals, flow changes), [`EchoOp`] (echo output that still
//! needs the output column, like Linux's echo buffer op codes), and [`OutState`], the output
//! side (`do_output_char`: OPOST, ONLCR, OCRNL, ONOCR, ONLRET, XTABS, column tracking) that
//! turns echo ops and written bytes into what the device gets.
//!
//! Nothing here blocks, locks or sends signals: [`super::Tty`] holds this state under its lock
//! and acts on the results.

use std::collections::VecDeque;
use um_kernel::signal::{SIGINT, SIGQUIT, SIGTSTP};
use um_uapi::abi::tty::*;

/// Size of the input buffer (Linux `N_TTY_BUF_SIZE`).
pub const N_TTY_BUF_SIZE: usize = 4096;

/// How a byte in the input buffer ends a line (Linux keeps this in `read_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// An ordinary byte.
    Data,
    /// The last byte of a line: newline, EOL, EOL2, or the last byte when the tty switched to
    /// canonical mode with data pending (Linux's `push`).
    Delim,
    /// An EOF (^D) delimiter: ends the line but is never copied to the reader.
    Eof,
}

/// Echo output waiting for the output stage (Linux's echo buffer, with its op codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EchoOp {
    /// A byte that goes through output processing (OPOST) like written data.
    Char(u8),
    /// A control character shown as `^X` (ECHOCTL); the column advances by two.
    Ctl(u8),
    /// Back up over a tab: `num_chars` columns of text since the line start (or, with
    /// `after_tab`, since the previous tab).
    EraseTab { num_chars: u8, after_tab: bool },
    /// Remember the current column as the column of the first byte of the line.
    SetCanonCol,
    /// The column moves back by one (the second byte of a multi-byte echo).
    MoveBackCol,
}

/// What processing some input asks of the tty besides buffering it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Receive {
    /// Bytes of the input that were taken (the rest waits for room).
    pub consumed: usize,
    /// Signals for the foreground process group, in order.
    pub signals: Vec<u32>,
    /// Output was stopped (STOP) or started (START, IXANY, or a signal character).
    pub flow: Option<bool>,
    /// The input queue was flushed (a signal character without NOFLSH).
    pub flushed: bool,
}

/// The line discipline's input state.
#[derive(Clone, Debug)]
pub struct NTty {
    /// Input in order; the front is what a reader gets next.
    buf: VecDeque<(u8, Mark)>,
    /// In canonical mode, how many bytes at the front are complete lines.
    canon_head: usize,
    /// The next byte is literal (after LNEXT).
    lnext: bool,
    /// Printer-style erase (ECHOPRT) is in progress: a `\` has been echoed.
    erasing: bool,
    /// Whether canonical mode is on (follows `ICANON`).
    icanon: bool,
    /// Echo ops not yet taken by the output stage.
    echoes: Vec<EchoOp>,
}

impl Default for NTty {
    fn default() -> Self {
        NTty::new(&Termios::linux_default())
    }
}

fn iscntrl(c: u8) -> bool {
    c < 0x20 || c == 0x7f
}

fn isalnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

impl NTty {
    /// A line discipline with empty buffers for `t`.
    pub fn new(t: &Termios) -> NTty {
        NTty {
            buf: VecDeque::new(),
            canon_head: 0,
            lnext: false,
            erasing: false,
            icanon: t.c_lflag & ICANON != 0,
            echoes: Vec::new(),
        }
    }

    /// Takes the pending echo ops.
    pub fn take_echoes(&mut self) -> Vec<EchoOp> {
        std::mem::take(&mut self.echoes)
    }

    /// Bytes in the input queue (what `FIONREAD` reports: Linux `inq_canon` counts complete
    /// lines in canonical mode, everything otherwise).
    pub fn inq(&self) -> usize {
        if self.icanon {
            self.buf
                .iter()
                .take(self.canon_head)
                .filter(|(_, m)| *m != Mark::Eof)
                .count()
        } else {
            self.buf.len()
        }
    }

    /// Whether a read would find something (a complete line, or any byte in raw mode).
    pub fn readable(&self) -> bool {
        if self.icanon {
            self.canon_head > 0
        } else {
            !self.buf.is_empty()
        }
    }

    /// Whether more input can be taken now (for the producer that waits for room).
    pub fn has_room(&self) -> bool {
        self.buf.len() < N_TTY_BUF_SIZE - 1 || (self.icanon && self.canon_head == 0)
    }

    /// Discards all input (TCIFLUSH, or a signal character; Linux `reset_buffer_flags`).
    pub fn flush(&mut self) {
        self.buf.clear();
        self.canon_head = 0;
        self.lnext = false;
        self.erasing = false;
    }

    /// The termios changed from `old` to `new` (Linux `n_tty_set_termios`): switching to
    /// canonical mode makes pending input one complete line, switching away makes it all
    /// readable.
    pub fn set_termios(&mut self, old: &Termios, new: &Termios) {
        if (old.c_lflag ^ new.c_lflag) & (ICANON | EXTPROC) != 0 {
            for e in self.buf.iter_mut() {
                if e.1 == Mark::Delim {
                    e.1 = Mark::Data;
                }
            }
            if new.c_lflag & ICANON == 0 || self.buf.is_empty() {
                self.canon_head = 0;
                // Pending EOF marks stay out of the data a raw reader gets.
                self.buf.retain(|e| e.1 != Mark::Eof);
            } else {
                if let Some(last) = self.buf.back_mut()
                    && last.1 == Mark::Data
                {
                    last.1 = Mark::Delim;
                }
                self.canon_head = self.buf.len();
            }
            self.erasing = false;
            self.lnext = false;
        }
        self.icanon = new.c_lflag & ICANON != 0;
    }

    fn echo_raw(&mut self, c: u8) {
        self.echoes.push(EchoOp::Char(c));
    }

    /// Linux `echo_char`: control characters as `^X` with ECHOCTL (except tab).
    fn echo_char(&mut self, t: &Termios, c: u8) {
        if t.c_lflag & ECHOCTL != 0 && iscntrl(c) && c != b'\t' {
            self.echoes.push(EchoOp::Ctl(c));
        } else {
            self.echoes.push(EchoOp::Char(c));
        }
    }

    fn finish_erasing(&mut self) {
        if self.erasing {
            self.echo_raw(b'/');
            self.erasing = false;
        }
    }

    fn set_canon_col_if_line_start(&mut self) {
        if self.buf.len() == self.canon_head {
            self.echoes.push(EchoOp::SetCanonCol);
        }
    }

    fn put(&mut self, c: u8, m: Mark) {
        self.buf.push_back((c, m));
    }

    /// A delimiter ends the current line (Linux `n_tty_receive_handle_newline`).
    fn handle_newline(&mut self, c: u8, m: Mark) {
        self.put(c, m);
        self.canon_head = self.buf.len();
    }

    /// Processes input bytes as they arrive from the device (the keyboard, the host, a pty
    /// master). Returns how many were taken: when the buffer is full, the producer must wait
    /// for a reader (Linux `n_tty_receive_buf_common` gives no room; in canonical mode with no
    /// complete line the last byte is overwritten so editing can go on).
    pub fn receive(&mut self, t: &Termios, input: &[u8], stopped: bool) -> Receive {
        let mut r = Receive::default();
        let mut stopped = stopped;
        for &c0 in input {
            let full = self.buf.len() >= N_TTY_BUF_SIZE - 1;
            if full {
                if self.icanon && self.canon_head == 0 {
                    // Overflow of an unfinished line: the newest byte replaces the last one.
                    if self.buf.len() >= N_TTY_BUF_SIZE {
                        self.buf.pop_back();
                    }
                } else {
                    break;
                }
            }
            r.consumed += 1;
            self.receive_char(t, c0, &mut r, &mut stopped);
        }
        r
    }

    fn receive_char(&mut self, t: &Termios, c0: u8, r: &mut Receive, stopped: &mut bool) {
        let (i, l) = (t.c_iflag, t.c_lflag);
        let mut c = c0;
        if i & ISTRIP != 0 {
            c &= 0x7f;
        }
        if i & IUCLC != 0 && l & IEXTEN != 0 {
            c = c.to_ascii_lowercase();
        }
        if self.lnext {
            self.lnext = false;
            self.receive_plain(t, c, r, stopped);
            return;
        }
        if !self.is_special(t, c) {
            self.receive_plain(t, c, r, stopped);
            return;
        }
        let cc = |v: usize| t.c_cc[v];
        // Flow control (n_tty_receive_char_flow_ctrl).
        if i & IXON != 0 {
            if c == cc(VSTART) && c != 0 {
                *stopped = false;
                r.flow = Some(false);
                return;
            }
            if c == cc(VSTOP) && c != 0 {
                *stopped = true;
                r.flow = Some(true);
                return;
            }
        }
        if l & ISIG != 0 {
            let sig = if c == cc(VINTR) {
                Some(SIGINT)
            } else if c == cc(VQUIT) {
                Some(SIGQUIT)
            } else if c == cc(VSUSP) {
                Some(SIGTSTP)
            } else {
                None
            };
            if let Some(sig) = sig {
                // n_tty_receive_signal_char: isig (flush unless NOFLSH), restart output,
                // echo the character.
                r.signals.push(sig);
                if l & NOFLSH == 0 {
                    self.echoes.clear();
                    self.flush();
                    r.flushed = true;
                }
                if i & IXON != 0 && *stopped {
                    *stopped = false;
                    r.flow = Some(false);
                }
                if l & ECHO != 0 {
                    self.echo_char(t, c);
                }
                return;
            }
        }
        if *stopped && i & IXON != 0 && i & IXANY != 0 {
            *stopped = false;
            r.flow = Some(false);
        }
        if c == b'\r' {
            if i & IGNCR != 0 {
                return;
            }
            if i & ICRNL != 0 {
                c = b'\n';
            }
        } else if c == b'\n' && i & INLCR != 0 {
            c = b'\r';
        }
        if self.icanon && self.receive_canon(t, c) {
            return;
        }
        if l & ECHO != 0 {
            self.finish_erasing();
            if c == b'\n' {
                self.echo_raw(b'\n');
            } else {
                self.set_canon_col_if_line_start();
                self.echo_char(t, c);
            }
        }
        if c == 0xff && i & PARMRK != 0 {
            self.put(c, Mark::Data);
        }
        self.put(c, Mark::Data);
    }

    /// Whether `c` needs the special path (Linux builds `char_map` in `n_tty_set_termios`;
    /// `_POSIX_VDISABLE` (0) is never special).
    fn is_special(&self, t: &Termios, c: u8) -> bool {
        let (i, l) = (t.c_iflag, t.c_lflag);
        if c == b'\r' && i & (IGNCR | ICRNL) != 0 {
            return true;
        }
        if c == b'\n' && (i & INLCR != 0 || self.icanon) {
            return true;
        }
        if c == 0 {
            return false;
        }
        let cc = |v: usize| t.c_cc[v];
        if self.icanon {
            if c == cc(VERASE) || c == cc(VKILL) || c == cc(VEOF) || c == cc(VEOL) {
                return true;
            }
            if l & IEXTEN != 0 {
                if c == cc(VWERASE) || c == cc(VLNEXT) || c == cc(VEOL2) {
                    return true;
                }
                if l & ECHO != 0 && c == cc(VREPRINT) {
                    return true;
                }
            }
        }
        if i & IXON != 0 && (c == cc(VSTART) || c == cc(VSTOP)) {
            return true;
        }
        if l & ISIG != 0 && (c == cc(VINTR) || c == cc(VQUIT) || c == cc(VSUSP)) {
            return true;
        }
        false
    }

    /// An ordinary byte (Linux `n_tty_receive_char`).
    fn receive_plain(&mut self, t: &Termios, c: u8, r: &mut Receive, stopped: &mut bool) {
        if *stopped && t.c_iflag & IXON != 0 && t.c_iflag & IXANY != 0 {
            *stopped = false;
            r.flow = Some(false);
        }
        if t.c_lflag & ECHO != 0 {
            self.finish_erasing();
            self.set_canon_col_if_line_start();
            self.echo_char(t, c);
        }
        if c == 0xff && t.c_iflag & PARMRK != 0 {
            self.put(c, Mark::Data);
        }
        self.put(c, Mark::Data);
    }

    /// The canonical-mode specials (Linux `n_tty_receive_char_canon`); false if `c` is not one.
    fn receive_canon(&mut self, t: &Termios, c: u8) -> bool {
        let l = t.c_lflag;
        let cc = |v: usize| t.c_cc[v];
        let iexten = l & IEXTEN != 0;
        let is = |v: usize| c != 0 && c == cc(v);
        if is(VERASE) || is(VKILL) || (is(VWERASE) && iexten) {
            self.eraser(t, c);
            return true;
        }
        if is(VLNEXT) && iexten {
            self.lnext = true;
            if l & ECHO != 0 {
                self.finish_erasing();
                if l & ECHOCTL != 0 {
                    self.echo_raw(b'^');
                    self.echo_raw(b'\x08');
                }
            }
            return true;
        }
        if is(VREPRINT) && l & ECHO != 0 && iexten {
            self.finish_erasing();
            self.echo_char(t, c);
            self.echo_raw(b'\n');
            let line: Vec<u8> = self.buf.iter().skip(self.canon_head).map(|e| e.0).collect();
            for b in line {
                self.echo_char(t, b);
            }
            return true;
        }
        if c == b'\n' {
            if l & (ECHO | ECHONL) != 0 {
                self.echo_raw(b'\n');
            }
            self.handle_newline(c, Mark::Delim);
            return true;
        }
        if is(VEOF) {
            self.handle_newline(0, Mark::Eof);
            return true;
        }
        if is(VEOL) || (is(VEOL2) && iexten) {
            if l & ECHO != 0 {
                self.set_canon_col_if_line_start();
                self.echo_char(t, c);
            }
            if c == 0xff && t.c_iflag & PARMRK != 0 {
                self.put(c, Mark::Data);
            }
            self.handle_newline(c, Mark::Delim);
            return true;
        }
        false
    }

    fn is_continuation(t: &Termios, c: u8) -> bool {
        t.c_iflag & IUTF8 != 0 && c & 0xc0 == 0x80
    }

    /// ERASE, WERASE and KILL (Linux `eraser`).
    fn eraser(&mut self, t: &Termios, c: u8) {
        #[derive(PartialEq)]
        enum Kind {
            Erase,
            Werase,
            Kill,
        }
        let l = t.c_lflag;
        let echo = l & ECHO != 0;
        if self.buf.len() == self.canon_head {
            return;
        }
        let kind = if c == t.c_cc[VERASE] {
            Kind::Erase
        } else if c == t.c_cc[VWERASE] {
            Kind::Werase
        } else {
            if !echo {
                self.buf.truncate(self.canon_head);
                return;
            }
            if l & ECHOK == 0 || l & ECHOKE == 0 || l & ECHOE == 0 {
                self.buf.truncate(self.canon_head);
                self.finish_erasing();
                self.echo_char(t, t.c_cc[VKILL]);
                if l & ECHOK != 0 {
                    self.echo_raw(b'\n');
                }
                return;
            }
            Kind::Kill
        };
        let mut seen_alnums = 0;
        while self.buf.len() > self.canon_head {
            // Erase one possibly multi-byte character.
            let mut head = self.buf.len();
            let mut ch;
            loop {
                head -= 1;
                ch = self.buf[head].0;
                if !(Self::is_continuation(t, ch) && head != self.canon_head) {
                    break;
                }
            }
            if Self::is_continuation(t, ch) {
                break; // do not partially erase
            }
            if kind == Kind::Werase {
                // BSD's ALTWERASE.
                if isalnum(ch) || ch == b'_' {
                    seen_alnums += 1;
                } else if seen_alnums > 0 {
                    break;
                }
            }
            let erased: Vec<u8> = self.buf.iter().skip(head).map(|e| e.0).collect();
            self.buf.truncate(head);
            if echo {
                if l & ECHOPRT != 0 {
                    if !self.erasing {
                        self.echo_raw(b'\\');
                        self.erasing = true;
                    }
                    self.echo_char(t, ch);
                    for &b in &erased[1..] {
                        self.echo_raw(b);
                        self.echoes.push(EchoOp::MoveBackCol);
                    }
                } else if kind == Kind::Erase && l & ECHOE == 0 {
                    self.echo_char(t, t.c_cc[VERASE]);
                } else if ch == b'\t' {
                    let mut num_chars: u32 = 0;
                    let mut after_tab = false;
                    for &(b, _) in self.buf.iter().skip(self.canon_head).rev() {
                        if b == b'\t' {
                            after_tab = true;
                            break;
                        } else if iscntrl(b) {
                            if l & ECHOCTL != 0 {
                                num_chars += 2;
                            }
                        } else if !Self::is_continuation(t, b) {
                            num_chars += 1;
                        }
                    }
                    self.echoes.push(EchoOp::EraseTab {
                        num_chars: (num_chars & 7) as u8,
                        after_tab,
                    });
                } else {
                    if iscntrl(ch) && l & ECHOCTL != 0 {
                        self.echoes
                            .extend([b'\x08', b' ', b'\x08'].iter().map(|&b| EchoOp::Char(b)));
                    }
                    if !iscntrl(ch) || l & ECHOCTL != 0 {
                        self.echoes
                            .extend([b'\x08', b' ', b'\x08'].iter().map(|&b| EchoOp::Char(b)));
                    }
                }
            }
            if kind == Kind::Erase {
                break;
            }
        }
        if self.buf.len() == self.canon_head && echo {
            self.finish_erasing();
        }
    }

    /// Copies input for a reader into `out` (Linux `canon_copy_from_read_buf` and
    /// `copy_from_read_buf`). Canonical mode gives at most one line (its delimiter included,
    /// except EOF); the return is (bytes copied, whether a line end or EOF was consumed).
    pub fn read(&mut self, out: &mut [u8]) -> (usize, bool) {
        if self.icanon {
            let mut n = 0;
            let mut ended = false;
            while n < out.len() && self.canon_head > 0 {
                let (c, m) = self.buf[0];
                if m == Mark::Eof {
                    self.buf.pop_front();
                    self.canon_head -= 1;
                    ended = true;
                    break;
                }
                out[n] = c;
                n += 1;
                self.buf.pop_front();
                self.canon_head -= 1;
                if m == Mark::Delim {
                    ended = true;
                    break;
                }
            }
            // A line that exactly fills the buffer leaves its delimiter (or EOF mark) for the
            // next read, as Linux does.
            (n, ended)
        } else {
            let n = out.len().min(self.buf.len());
            for (i, slot) in out.iter_mut().enumerate().take(n) {
                *slot = self.buf[i].0;
            }
            self.buf.drain(..n);
            self.canon_head = self.canon_head.saturating_sub(n);
            (n, false)
        }
    }

    /// Ends an unfinished canonical line with an EOF mark, as ^D would (the input side is gone
    /// for good, so the reader gets what was typed, then end of file).
    pub fn end_partial_line(&mut self) {
        if self.icanon && self.buf.len() > self.canon_head {
            self.handle_newline(0, Mark::Eof);
        }
    }

    /// Puts a byte straight into the input queue as if typed (TIOCSTI).
    pub fn push_input(&mut self, t: &Termios, c: u8, stopped: bool) -> Receive {
        self.receive(t, &[c], stopped)
    }
}

/// The output stage's state (Linux `ldata->column`, `canon_column`, under `output_lock`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutState {
    pub column: usize,
    pub canon_column: usize,
}

impl OutState {
    /// Output processing of one byte (Linux `do_output_char`), appended to `out`.
    pub fn output_char(&mut self, t: &Termios, c: u8, out: &mut Vec<u8>) {
        let o = t.c_oflag;
        let mut c = c;
        match c {
            b'\n' => {
                if o & ONLRET != 0 {
                    self.column = 0;
                }
                if o & ONLCR != 0 {
                    self.column = 0;
                    self.canon_column = 0;
                    out.extend_from_slice(b"\r\n");
                    return;
                }
                self.canon_column = self.column;
            }
            b'\r' => {
                if o & ONOCR != 0 && self.column == 0 {
                    return;
                }
                if o & OCRNL != 0 {
                    c = b'\n';
                    if o & ONLRET != 0 {
                        self.column = 0;
                        self.canon_column = 0;
                    }
                } else {
                    self.column = 0;
                    self.canon_column = 0;
                }
            }
            b'\t' => {
                let spaces = 8 - (self.column & 7);
                self.column += spaces;
                if o & TABDLY == XTABS {
                    out.extend(std::iter::repeat_n(b' ', spaces));
                    return;
                }
            }
            0x08 => {
                self.column = self.column.saturating_sub(1);
            }
            _ => {
                if !iscntrl(c) {
                    if o & OLCUC != 0 {
                        c = c.to_ascii_uppercase();
                    }
                    if !(t.c_iflag & IUTF8 != 0 && c & 0xc0 == 0x80) {
                        self.column += 1;
                    }
                }
            }
        }
        out.push(c);
    }

    /// Output processing of written data (Linux `process_output_block`): with OPOST every byte
    /// goes through [`OutState::output_char`], without it the bytes pass unchanged.
    pub fn output(&mut self, t: &Termios, data: &[u8], out: &mut Vec<u8>) {
        if t.c_oflag & OPOST == 0 {
            out.extend_from_slice(data);
            return;
        }
        for &c in data {
            self.output_char(t, c, out);
        }
    }

    /// Turns echo ops into output bytes (Linux `__process_echoes`).
    pub fn echo(&mut self, t: &Termios, ops: &[EchoOp], out: &mut Vec<u8>) {
        for op in ops {
            match *op {
                EchoOp::Char(c) => {
                    if t.c_oflag & OPOST != 0 {
                        self.output_char(t, c, out);
                    } else {
                        out.push(c);
                    }
                }
                EchoOp::Ctl(c) => {
                    out.push(b'^');
                    out.push(c ^ 0o100);
                    self.column += 2;
                }
                EchoOp::EraseTab {
                    num_chars,
                    after_tab,
                } => {
                    let mut n = num_chars as usize;
                    if !after_tab {
                        n += self.canon_column;
                    }
                    let num_bs = 8 - (n & 7);
                    for _ in 0..num_bs {
                        out.push(0x08);
                        self.column = self.column.saturating_sub(1);
                    }
                }
                EchoOp::SetCanonCol => self.canon_column = self.column,
                EchoOp::MoveBackCol => self.column = self.column.saturating_sub(1),
            }
        }
    }
}

/// What a non-canonical read waits for, from `VMIN`/`VTIME` (termios(3), Linux `n_tty_read`):
/// (minimum bytes, inter-byte or overall timeout in deciseconds, whether the timeout only
/// starts after the first byte).
pub fn noncanon_params(t: &Termios) -> (usize, Option<u8>, bool) {
    let min = t.c_cc[VMIN] as usize;
    let time = t.c_cc[VTIME];
    match (min, time) {
        // Blocking read of at least MIN bytes.
        (m, 0) if m > 0 => (m, None, false),
        // Inter-byte timer, started by the first byte.
        (m, t) if m > 0 => (m, Some(t), true),
        // Polling read: whatever is there, at once.
        (_, 0) => (0, Some(0), false),
        // Overall timer for one byte.
        (_, t) => (1, Some(t), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(ld: &mut NTty, t: &Termios, s: &[u8]) -> Receive {
        ld.receive(t, s, false)
    }

    fn echoed(ld: &mut NTty, t: &Termios, out: &mut OutState) -> Vec<u8> {
        let ops = ld.take_echoes();
        let mut v = Vec::new();
        out.echo(t, &ops, &mut v);
        v
    }

    fn read_all(ld: &mut NTty, cap: usize) -> Vec<u8> {
        let mut b = vec![0u8; cap];
        let (n, _) = ld.read(&mut b);
        b.truncate(n);
        b
    }

    #[test]
    fn canonical_line_and_erase() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        feed(&mut ld, &t, b"helo\x7fp");
        assert!(!ld.readable());
        feed(&mut ld, &t, b"\r");
        assert!(ld.readable());
        assert_eq!(ld.inq(), 5);
        assert_eq!(read_all(&mut ld, 100), b"help\n");
        assert!(!ld.readable());
    }

    #[test]
    fn kill_and_werase() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        feed(&mut ld, &t, b"junk\x15foo bar_1 \x17baz\n");
        assert_eq!(read_all(&mut ld, 100), b"foo baz\n");
    }

    #[test]
    fn eof_handling() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        feed(&mut ld, &t, b"abc\x04\x04");
        assert_eq!(ld.read(&mut [0u8; 10]), (3, true));
        let mut b = [0u8; 10];
        assert_eq!(ld.read(&mut b), (0, true));
        assert!(!ld.readable());
    }

    #[test]
    fn partial_line_reads() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        feed(&mut ld, &t, b"abcdef\nxy\n");
        assert_eq!(read_all(&mut ld, 4), b"abcd");
        assert_eq!(read_all(&mut ld, 100), b"ef\n");
        assert_eq!(read_all(&mut ld, 100), b"xy\n");
    }

    #[test]
    fn intr_signals_flushes_and_echoes() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        let mut o = OutState::default();
        feed(&mut ld, &t, b"partial");
        let _ = echoed(&mut ld, &t, &mut o);
        let r = feed(&mut ld, &t, b"\x03");
        assert_eq!(r.signals, vec![SIGINT]);
        assert!(r.flushed);
        assert_eq!(echoed(&mut ld, &t, &mut o), b"^C");
        assert_eq!(ld.inq(), 0);
        let r = feed(&mut ld, &t, b"\x1c\x1a");
        assert_eq!(r.signals, vec![SIGQUIT, SIGTSTP]);
        // NOFLSH keeps the input, no ISIG makes ^C data.
        let mut t2 = t;
        t2.c_lflag |= NOFLSH;
        feed(&mut ld, &t2, b"ab\x03");
        assert_eq!(ld.buf.len(), 2);
        t2.c_lflag &= !ISIG;
        let r = feed(&mut ld, &t2, b"\x03\n");
        assert!(r.signals.is_empty());
        assert_eq!(read_all(&mut ld, 10), b"ab\x03\n");
    }

    #[test]
    fn echo_output() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        let mut o = OutState::default();
        feed(&mut ld, &t, b"ab\x7f\x01\x7f\r");
        // ECHOE erases with BS SP BS; ^A echoed as two columns and erased as two.
        assert_eq!(
            echoed(&mut ld, &t, &mut o),
            b"ab\x08 \x08^A\x08 \x08\x08 \x08\r\n"
        );
        // ECHOK without ECHOKE: the kill character then a newline.
        let mut t2 = t;
        t2.c_lflag &= !ECHOKE;
        feed(&mut ld, &t2, b"xy\x15");
        assert_eq!(echoed(&mut ld, &t2, &mut o), b"xy^U\r\n");
        // ECHONL without ECHO.
        let mut t3 = t;
        t3.c_lflag &= !ECHO;
        t3.c_lflag |= ECHONL;
        feed(&mut ld, &t3, b"secret\n");
        assert_eq!(echoed(&mut ld, &t3, &mut o), b"\r\n");
    }

    #[test]
    fn tab_erase_uses_canon_column() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        let mut o = OutState::default();
        // A prompt of 2 columns was written before the line started.
        let mut v = Vec::new();
        o.output(&t, b"$ ", &mut v);
        feed(&mut ld, &t, b"a\t");
        let e = echoed(&mut ld, &t, &mut o);
        assert_eq!(e, b"a\t");
        assert_eq!(o.column, 8);
        feed(&mut ld, &t, b"\x7f");
        // The tab covered columns 3..8: five backspaces.
        assert_eq!(echoed(&mut ld, &t, &mut o), b"\x08\x08\x08\x08\x08");
        assert_eq!(o.column, 3);
    }

    #[test]
    fn input_translation() {
        let mut t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        t.c_iflag |= IGNCR;
        feed(&mut ld, &t, b"a\rb\n");
        assert_eq!(read_all(&mut ld, 10), b"ab\n");
        t.c_iflag &= !(IGNCR | ICRNL);
        t.c_iflag |= INLCR;
        let old = t;
        t.c_lflag &= !ICANON;
        ld.set_termios(&old, &t);
        feed(&mut ld, &t, b"x\ny");
        assert_eq!(read_all(&mut ld, 10), b"x\ry");
    }

    #[test]
    fn lnext_and_reprint() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        let mut o = OutState::default();
        feed(&mut ld, &t, b"\x16\x03z\x12");
        assert_eq!(echoed(&mut ld, &t, &mut o), b"^\x08^Cz^R\r\n^Cz");
        feed(&mut ld, &t, b"\n");
        assert_eq!(read_all(&mut ld, 10), b"\x03z\n");
    }

    #[test]
    fn mode_switches() {
        let canon = Termios::linux_default();
        let mut raw = canon;
        raw.c_lflag &= !(ICANON | ECHO);
        let mut ld = NTty::new(&canon);
        feed(&mut ld, &canon, b"pending");
        assert!(!ld.readable());
        ld.set_termios(&canon, &raw);
        assert!(ld.readable());
        assert_eq!(read_all(&mut ld, 3), b"pen");
        ld.set_termios(&raw, &canon);
        // What is left becomes one complete line.
        assert!(ld.readable());
        assert_eq!(read_all(&mut ld, 100), b"ding");
    }

    #[test]
    fn raw_mode_passes_everything() {
        let mut t = Termios::linux_default();
        let old = t;
        t.c_lflag &= !(ICANON | ECHO | ISIG);
        t.c_iflag &= !(ICRNL | IXON);
        let mut ld = NTty::new(&old);
        ld.set_termios(&old, &t);
        let r = feed(&mut ld, &t, b"\x03\x7f\r\x13");
        assert!(r.signals.is_empty());
        assert_eq!(r.flow, None);
        assert_eq!(read_all(&mut ld, 10), b"\x03\x7f\r\x13");
    }

    #[test]
    fn flow_control() {
        let t = Termios::linux_default();
        let mut ld = NTty::new(&t);
        let r = feed(&mut ld, &t, b"\x13");
        assert_eq!(r.flow, Some(true));
        let r = ld.receive(&t, b"\x11", true);
        assert_eq!(r.flow, Some(false));
        assert_eq!(ld.buf.len(), 0);
    }

    #[test]
    fn full_buffer_backpressure() {
        let mut t = Termios::linux_default();
        let old = t;
        t.c_lflag &= !(ICANON | ECHO);
        let mut ld = NTty::new(&old);
        ld.set_termios(&old, &t);
        let big = vec![b'x'; N_TTY_BUF_SIZE + 10];
        let r = feed(&mut ld, &t, &big);
        assert_eq!(r.consumed, N_TTY_BUF_SIZE - 1);
        assert!(!ld.has_room());
        // Canonical mode with no complete line keeps accepting (overwriting the last byte).
        let c = Termios::linux_default();
        let mut ld = NTty::new(&c);
        let r = feed(&mut ld, &c, &big);
        assert_eq!(r.consumed, big.len());
        feed(&mut ld, &c, b"\n");
        assert!(ld.readable());
    }

    #[test]
    fn onlcr_and_opost() {
        let mut t = Termios::linux_default();
        let mut o = OutState::default();
        let mut v = Vec::new();
        o.output(&t, b"a\nb\tc", &mut v);
        assert_eq!(v, b"a\r\nb\tc");
        assert_eq!(o.column, 9);
        t.c_oflag &= !OPOST;
        let mut v = Vec::new();
        o.output(&t, b"a\n", &mut v);
        assert_eq!(v, b"a\n");
        t.c_oflag = OPOST | OCRNL | XTABS;
        let mut o = OutState::default();
        let mut v = Vec::new();
        o.output(&t, b"\r\tx", &mut v);
        assert_eq!(v, b"\n        x");
        t.c_oflag = OPOST | ONOCR;
        let mut o = OutState::default();
        let mut v = Vec::new();
        o.output(&t, b"\rz\r", &mut v);
        assert_eq!(v, b"z\r");
    }

    #[test]
    fn vmin_vtime_decisions() {
        let mut t = Termios::linux_default();
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        assert_eq!(noncanon_params(&t), (1, None, false));
        t.c_cc[VMIN] = 4;
        t.c_cc[VTIME] = 5;
        assert_eq!(noncanon_params(&t), (4, Some(5), true));
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        assert_eq!(noncanon_params(&t), (0, Some(0), false));
        t.c_cc[VTIME] = 3;
        assert_eq!(noncanon_params(&t), (1, Some(3), false));
    }
}
