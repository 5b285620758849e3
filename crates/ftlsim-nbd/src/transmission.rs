//! The transmission phase: requests in, simple replies out.
//!
//! Each request is checked before it reaches the drive: unknown commands
//! and flags, misaligned or out-of-range requests and reads over the
//! maximum block size get the protocol's error reply and the connection
//! goes on. A WRITE's payload is always consumed first, so the byte stream
//! stays in step; a WRITE longer than the maximum block size, a bad request
//! magic or a client vanishing mid-request ends the connection, and a
//! request that was not read completely is never executed. Replies to
//! requests that were executed are always sent, in order of completion.
//!
//! With `--pace none` replies are buffered and flushed whenever the next
//! request is not already waiting in the input buffer, so a pipelining
//! client costs few system calls. With `--pace realtime` a writer thread
//! holds each reply until its simulated completion time.

use crate::drive::{Command, Drive, Pace};
use crate::proto::*;
use crate::stream::Stream;
use std::collections::BinaryHeap;
use std::io::{self, BufReader, BufWriter, ErrorKind, Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SECTOR: u64 = 512;

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

enum Replies {
    Direct(BufWriter<Stream>),
    Paced { tx: Sender<(Instant, Vec<u8>)>, writer: std::thread::JoinHandle<io::Result<()>> },
}

/// Serves requests until the client disconnects or the connection must
/// close; returns why it ended.
pub fn serve(stream: Stream, drive: &Arc<Mutex<Drive>>, size: u64, max_block: u32) -> io::Result<String> {
    let (pace, origin) = {
        let d = drive.lock().expect("drive lock");
        (d.pace(), d.clock_origin())
    };
    // Smaller than a typical WRITE payload, so large payloads bypass the
    // buffer (one copy less) while small requests are still batched.
    let mut reader = BufReader::with_capacity(64 * 1024, stream.try_clone()?);
    let mut replies = match pace {
        Pace::None => Replies::Direct(BufWriter::with_capacity(256 * 1024, stream)),
        Pace::Realtime => {
            let (tx, rx) = std::sync::mpsc::channel();
            Replies::Paced { tx, writer: std::thread::spawn(move || paced_writer(stream, rx)) }
        }
    };
    let mut buf: Vec<u8> = Vec::new();
    let result = loop {
        if let Replies::Direct(w) = &mut replies {
            if reader.buffer().len() < REQUEST_BYTES {
                w.flush()?;
            }
        }
        let mut head = [0u8; REQUEST_BYTES];
        match read_full(&mut reader, &mut head) {
            Ok(0) => break Ok("client closed the connection".to_string()),
            Ok(n) if n < REQUEST_BYTES => break Ok(format!("client vanished after {n} bytes of a request")),
            Ok(_) => {}
            Err(e) => break Err(e),
        }
        let req = Request::parse(&head);
        let verdict = validate(&req, size, max_block);
        if let Verdict::Close(why) = verdict {
            break Ok(why);
        }
        if req.kind == CMD_WRITE {
            buf.resize(req.length as usize, 0);
            let n = read_full(&mut reader, &mut buf)?;
            if n < buf.len() {
                break Ok(format!("client vanished after {n} of {} payload bytes", buf.len()));
            }
        }
        let (error, done, data_len) = match verdict {
            Verdict::Disconnect => break Ok("client disconnected".to_string()),
            Verdict::Close(_) => unreachable!("handled above"),
            Verdict::Nothing => (0, None, 0),
            Verdict::Error(e) => (e, None, 0),
            Verdict::Run { cmd, start, sectors } => {
                let bytes = (sectors * SECTOR) as usize;
                let mut d = drive.lock().expect("drive lock");
                let r = match cmd {
                    Command::Read => {
                        buf.resize(bytes, 0);
                        d.execute(cmd, start, sectors, None, Some(&mut buf))
                    }
                    Command::Write { .. } => d.execute(cmd, start, sectors, Some(&buf), None),
                    _ => d.execute(cmd, start, sectors, None, None),
                };
                drop(d);
                match r {
                    Ok(done) => (0, Some(done), if cmd == Command::Read { bytes } else { 0 }),
                    Err(e) => {
                        eprintln!("ftlsim serve: {:?} at sector {start} (+{sectors}) failed: {e}", cmd);
                        (if matches!(e, ftlsim::Error::DeviceFull(_)) { ENOSPC } else { EIO }, None, 0)
                    }
                }
            }
        };
        let header = simple_reply(error, req.cookie);
        match &mut replies {
            Replies::Direct(w) => {
                w.write_all(&header)?;
                w.write_all(&buf[..data_len])?;
            }
            Replies::Paced { tx, .. } => {
                let due = done.map_or_else(Instant::now, |t| origin + Duration::from_nanos(t.0));
                let mut msg = header.to_vec();
                msg.extend_from_slice(&buf[..data_len]);
                if tx.send((due, msg)).is_err() {
                    break Ok("reply writer stopped (client gone)".to_string());
                }
            }
        }
    };
    match replies {
        Replies::Direct(mut w) => {
            // The client may be gone; what could be sent has been.
            let _ = w.flush();
        }
        Replies::Paced { tx, writer } => {
            drop(tx);
            let _ = writer.join();
        }
    }
    result
}

/// Reads until `buf` is full or the peer closes; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => break,
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
