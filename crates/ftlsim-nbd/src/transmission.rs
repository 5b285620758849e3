//! The transmission phase: requests in, simple replies out.
//!
//! Each request is checked before it reaches the drive: unknown commands
//! and flags, misaligned or out-of-range requests and reads over the
//! maximum block size get the protocol's error reply and the connection
//! goes on. A WRITE's payload is always consumed first, so the byte stream
//! stays in step; a WRITE longer than the maximum block size, a bad request
//! magic or a client vanishing mid-request ends the connection, and a
//! request that was not read completely is never executed. Replies to
//! requests that were executed are always sent, in order of completion;
//! requests run one after another, so a write is in the simulated device
//! before its reply is sent and a FLUSH follows every write read before it.
//!
//! With `--pace none` one thread serves a connection, in batches: each
//! read from the socket takes in every request that has arrived, all of
//! them run, and the replies gathered meanwhile go out with one system call
//! when the thread must wait for input again. READ data is read by the
//! drive straight into the reply buffer. Before sleeping on the socket the
//! thread polls it for `--poll-us` (50 µs by default): under load the next
//! request is microseconds away, and a sleeping server makes each of the
//! client's sends pay for a wake-up (4 KiB random reads over a Unix socket
//! went from 105–113k to 129–135k per second). Two alternatives measured
//! worse with fio's libnbd engine, which sends one request per system call:
//! a reader and a writer thread per connection (a thread wake-up per
//! request to hand replies over) and a single non-blocking look for more
//! requests before sending (it mostly finds none). With
//! `--pace realtime` a writer thread holds each reply until its simulated
//! completion time.

use crate::drive::{Command, Drive, Pace};
use crate::proto::*;
use crate::stream::Stream;
use std::collections::BinaryHeap;
use std::io::{self, ErrorKind, IoSlice, Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SECTOR: u64 = 512;
/// Input buffer: room for hundreds of request headers per system call,
/// yet small, so that little of a large WRITE's payload is copied through
/// it rather than read straight into place.
const INPUT_BYTES: usize = 16 * 1024;
/// Output buffer: replies (READ data included) gathered before a send.
const OUTPUT_BYTES: usize = 512 * 1024;

/// What to do with one request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Run {
        cmd: Command,
        start: u64,
        sectors: u64,
    },
    /// Reply success at once (zero-length requests touch nothing).
    Nothing,
    Error(u32),
    Disconnect,
    Close(String),
}

/// Checks a request against the export's size and maximum block size.
pub fn validate(req: &Request, size: u64, max_block: u32) -> Verdict {
    if req.magic != REQUEST_MAGIC {
        return Verdict::Close(format!("bad request magic {:#x}", req.magic));
    }
    if req.kind == CMD_WRITE && req.length > max_block {
        return Verdict::Close(format!("WRITE of {} bytes over the {max_block}-byte maximum", req.length));
    }
    if req.flags & !(CMD_FLAG_FUA | CMD_FLAG_NO_HOLE) != 0 {
        return Verdict::Error(EINVAL);
    }
    let fua = req.flags & CMD_FLAG_FUA != 0;
    let cmd = match req.kind {
        CMD_READ => Command::Read,
        CMD_WRITE => Command::Write { fua },
        CMD_TRIM => Command::Trim { fua },
        CMD_WRITE_ZEROES => Command::WriteZeroes { fua, no_hole: req.flags & CMD_FLAG_NO_HOLE != 0 },
        CMD_FLUSH => return Verdict::Run { cmd: Command::Flush, start: 0, sectors: 0 },
        CMD_DISC => return Verdict::Disconnect,
        _ => return Verdict::Error(EINVAL),
    };
    let len = req.length as u64;
    if req.offset % SECTOR != 0 || len % SECTOR != 0 || (cmd == Command::Read && req.length > max_block) {
        return Verdict::Error(EINVAL);
    }
    if req.offset.checked_add(len).is_none_or(|end| end > size) {
        return Verdict::Error(match cmd {
            Command::Write { .. } | Command::WriteZeroes { .. } => ENOSPC,
            _ => EINVAL,
        });
    }
    if len == 0 {
        return Verdict::Nothing;
    }
    Verdict::Run { cmd, start: req.offset / SECTOR, sectors: len / SECTOR }
}

/// Buffered input: requests are parsed in place; large payloads bypass it.
struct Input {
    stream: Stream,
    /// How long to poll for input before sleeping.
    poll: Duration,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Input {
    fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Waits for more input; returns the bytes read, 0 at end of stream.
    fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        // Poll briefly before sleeping: under load the next request is
        // microseconds away, and a sleeping server costs the client a
        // wake-up on every request it sends.
        let spin_until = Instant::now() + self.poll;
        loop {
            match self.stream.try_read(&mut self.buf[self.end..]) {
                Ok(Some(n)) => {
                    self.end += n;
                    return Ok(n);
                }
                Ok(None) if Instant::now() < spin_until => std::hint::spin_loop(),
                Ok(None) => break,
                Err(e) if is_gone(&e) => return Ok(0),
                Err(e) => return Err(e),
            }
        }
        let n = read_full(&mut self.stream, &mut self.buf[self.end..], 1)?;
        self.end += n;
        Ok(n)
    }

    /// Takes the next request header from the buffer.
    fn header(&mut self) -> [u8; REQUEST_BYTES] {
        let h = self.buf[self.start..self.start + REQUEST_BYTES].try_into().expect("header buffered");
        self.start += REQUEST_BYTES;
        h
    }

    /// Fills `dst` from the buffer, then straight from the socket; returns
    /// the bytes read (fewer only at end of stream).
    fn read_into(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        let n = self.buffered().min(dst.len());
        dst[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        let rest = &mut dst[n..];
        let want = rest.len();
        Ok(n + read_full(&mut self.stream, rest, want)?)
    }
}

/// Replies gathered for one send. READ data is written into the buffer by
/// the drive, so it is copied once on its way out of the simulated flash.
struct Output {
    stream: Stream,
    buf: Box<[u8]>,
    len: usize,
    /// For READs larger than `buf`; kept, so only its growth is zeroed.
    large: Vec<u8>,
}

impl Output {
    fn flush(&mut self) -> io::Result<()> {
        let r = self.stream.write_all(&self.buf[..self.len]);
        self.len = 0;
        r
    }

    /// Appends a reply with `data_len` bytes of READ data, which `run`
    /// writes and answers with the reply's error (no data unless 0).
    fn reply(&mut self, cookie: u64, data_len: usize, run: impl FnOnce(&mut [u8]) -> u32) -> io::Result<()> {
        let need = 16 + data_len;
        if self.len + need > self.buf.len() {
            self.flush()?;
        }
        if need > self.buf.len() {
            self.large.resize(data_len, 0);
            let error = run(&mut self.large);
            let data: &[u8] = if error == 0 { &self.large } else { &[] };
            let header = simple_reply(error, cookie);
            return write_all(&mut self.stream, &mut [IoSlice::new(&header), IoSlice::new(data)]);
        }
        let at = self.len;
        let error = run(&mut self.buf[at + 16..at + need]);
        self.buf[at..at + 16].copy_from_slice(&simple_reply(error, cookie));
        self.len += if error == 0 { need } else { 16 };
        Ok(())
    }
}

enum Replies {
    Direct(Output),
    Paced { tx: Sender<(Instant, Vec<u8>)>, writer: std::thread::JoinHandle<io::Result<()>>, origin: Instant },
}

/// Serves requests until the client disconnects or the connection must
/// close; returns why it ended.
pub fn serve(
    stream: Stream,
    drive: &Arc<Mutex<Drive>>,
    size: u64,
    max_block: u32,
    poll: Duration,
) -> io::Result<String> {
    let (pace, origin) = {
        let d = drive.lock().expect("drive lock");
        (d.pace(), d.clock_origin())
    };
    let mut input = Input { stream: stream.try_clone()?, poll, buf: vec![0; INPUT_BYTES].into(), start: 0, end: 0 };
    let mut replies = match pace {
        Pace::None => Replies::Direct(Output { stream, buf: vec![0; OUTPUT_BYTES].into(), len: 0, large: Vec::new() }),
        Pace::Realtime => {
            let (tx, rx) = std::sync::mpsc::channel();
            Replies::Paced { tx, writer: std::thread::spawn(move || paced_writer(stream, rx)), origin }
        }
    };
    let mut payload: Vec<u8> = Vec::new();
    let result = loop {
        match await_header(&mut input, &mut replies) {
            Ok(0) => break Ok("client closed the connection".to_string()),
            Ok(n) if n < REQUEST_BYTES => break Ok(format!("client vanished after {n} bytes of a request")),
            Ok(_) => {}
            Err(e) => break Err(e),
        }
        let req = Request::parse(&input.header());
        let verdict = validate(&req, size, max_block);
        if req.kind == CMD_WRITE && !matches!(verdict, Verdict::Close(_)) {
            payload.resize(req.length as usize, 0);
            match input.read_into(&mut payload) {
                Ok(n) if n < payload.len() => {
                    break Ok(format!("client vanished after {n} of {} payload bytes", payload.len()));
                }
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        }
        let (refusal, run) = match verdict {
            Verdict::Disconnect => break Ok("client disconnected".to_string()),
            Verdict::Close(why) => break Ok(why),
            Verdict::Nothing => (0, None),
            Verdict::Error(e) => (e, None),
            Verdict::Run { cmd, start, sectors } => (0, Some((cmd, start, sectors))),
        };
        let data_len = match run {
            Some((Command::Read, _, sectors)) => (sectors * SECTOR) as usize,
            _ => 0,
        };
        let execute = |out: &mut [u8]| match run {
            Some((cmd, start, sectors)) => execute(drive, cmd, start, sectors, &payload, out),
            None => (refusal, None),
        };
        let sent = match &mut replies {
            Replies::Direct(o) => o.reply(req.cookie, data_len, |out| execute(out).0).map(|_| true),
            Replies::Paced { tx, origin, .. } => {
                let mut msg = vec![0; 16 + data_len];
                let (error, done) = execute(&mut msg[16..]);
                if error != 0 {
                    msg.truncate(16);
                }
                msg[..16].copy_from_slice(&simple_reply(error, req.cookie));
                let due = done.map_or_else(Instant::now, |t| *origin + Duration::from_nanos(t.0));
                Ok(tx.send((due, msg)).is_ok())
            }
        };
        match sent {
            Ok(true) => {}
            Ok(false) => break Ok("reply writer stopped (client gone)".to_string()),
            Err(e) if is_gone(&e) => break Ok("client gone".to_string()),
            Err(e) => break Err(e),
        }
    };
    match replies {
        // The client may be gone; what could be sent has been.
        Replies::Direct(mut o) => {
            let _ = o.flush();
        }
        Replies::Paced { tx, writer, .. } => {
            drop(tx);
            let _ = writer.join();
        }
    }
    result
}

/// Makes a whole request header available; returns the bytes buffered,
/// fewer than a header only at the end of the stream. Pending replies are
/// sent before waiting for input, not while requests are still buffered.
fn await_header(input: &mut Input, replies: &mut Replies) -> io::Result<usize> {
    while input.buffered() < REQUEST_BYTES {
        if let Replies::Direct(o) = replies {
            if o.len > 0 {
                o.flush()?;
            }
        }
        if input.fill()? == 0 {
            break;
        }
    }
    Ok(input.buffered())
}

/// Runs one command on the drive; READ data goes to `out`. Returns the
/// reply's error and, on success, the simulated completion time.
fn execute(
    drive: &Mutex<Drive>,
    cmd: Command,
    start: u64,
    sectors: u64,
    payload: &[u8],
    out: &mut [u8],
) -> (u32, Option<ftlsim::units::SimTime>) {
    let mut d = drive.lock().expect("drive lock");
    let r = match cmd {
        Command::Read => d.execute(cmd, start, sectors, None, Some(out)),
        Command::Write { .. } => d.execute(cmd, start, sectors, Some(payload), None),
        _ => d.execute(cmd, start, sectors, None, None),
    };
    drop(d);
    match r {
        Ok(done) => (0, Some(done)),
        Err(e) => {
            eprintln!("ftlsim serve: {cmd:?} at sector {start} (+{sectors}) failed: {e}");
            (if matches!(e, ftlsim::Error::DeviceFull(_)) { ENOSPC } else { EIO }, None)
        }
    }
}

fn is_gone(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe)
}

fn write_all(w: &mut impl Write, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    // Empty slices first: left in, a write of them alone would return 0.
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match w.write_vectored(slices) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads until at least `min` bytes (at most `buf.len()`) are in or the
/// peer closes; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8], min: usize) -> io::Result<usize> {
    let mut n = 0;
    while n < min {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if is_gone(&e) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Sends each reply when its due time comes, earliest first; once the
/// sender is gone, drains what is left at its due times.
fn paced_writer(mut stream: Stream, rx: Receiver<(Instant, Vec<u8>)>) -> io::Result<()> {
    let mut heap: BinaryHeap<std::cmp::Reverse<(Instant, u64, Vec<u8>)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut open = true;
    while open || !heap.is_empty() {
        let now = Instant::now();
        while heap.peek().is_some_and(|r| r.0.0 <= now) {
            let std::cmp::Reverse((_, _, msg)) = heap.pop().expect("peeked");
            stream.write_all(&msg)?;
        }
        let wait = heap.peek().map(|r| r.0.0.saturating_duration_since(now));
        let got = match (open, wait) {
            (true, None) => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            (true, Some(w)) => rx.recv_timeout(w),
            (false, Some(w)) => {
                std::thread::sleep(w);
                continue;
            }
            (false, None) => break,
        };
        match got {
            Ok((due, msg)) => {
                heap.push(std::cmp::Reverse((due, seq, msg)));
                seq += 1;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: u16, flags: u16, offset: u64, length: u32) -> Request {
        Request { magic: REQUEST_MAGIC, flags, kind, cookie: 1, offset, length }
    }

    #[test]
    fn validation() {
        let size = 1 << 20;
        let v = |r: Request| validate(&r, size, 65536);
        assert_eq!(v(req(CMD_READ, 0, 512, 1024)), Verdict::Run { cmd: Command::Read, start: 1, sectors: 2 });
        assert_eq!(v(req(CMD_READ, 0, 100, 512)), Verdict::Error(EINVAL));
        assert_eq!(v(req(CMD_READ, 0, 0, 131072)), Verdict::Error(EINVAL));
        assert_eq!(v(req(CMD_READ, 0, size, 512)), Verdict::Error(EINVAL));
        assert_eq!(v(req(CMD_WRITE, 0, size, 512)), Verdict::Error(ENOSPC));
        assert_eq!(v(req(CMD_READ, 0, u64::MAX - 511, 1024)), Verdict::Error(EINVAL));
        assert!(matches!(v(req(CMD_WRITE, 0, 0, 131072)), Verdict::Close(_)));
        assert_eq!(
            v(req(CMD_TRIM, 0, 0, 1 << 20)),
            Verdict::Run { cmd: Command::Trim { fua: false }, start: 0, sectors: 2048 }
        );
        assert_eq!(v(req(99, 0, 0, 0)), Verdict::Error(EINVAL));
        assert_eq!(v(req(CMD_WRITE, 1 << 7, 0, 512)), Verdict::Error(EINVAL));
        assert_eq!(v(req(CMD_WRITE, 0, 0, 0)), Verdict::Nothing);
        assert_eq!(v(req(CMD_DISC, 0, 0, 0)), Verdict::Disconnect);
        let wz = v(req(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 0, 512));
        assert_eq!(wz, Verdict::Run { cmd: Command::WriteZeroes { fua: true, no_hole: true }, start: 0, sectors: 1 });
        let bad = Request { magic: 7, ..req(CMD_READ, 0, 0, 512) };
        assert!(matches!(validate(&bad, size, 65536), Verdict::Close(_)));
    }
}
