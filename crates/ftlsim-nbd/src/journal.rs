//! The journal of a durable drive (`--state`): every host command since
//! the last checkpoint, appended as it is submitted, with the data of
//! every write, so the drive can be rebuilt after the server was killed.
//!
//! File layout: a 16-byte header (`FTLSIMJ2`, then the checkpoint the
//! journal follows as a little-endian u64), then records of
//! `[length u32][crc32 u32][body]`, little-endian, the CRC over the body.
//! The body is a command's 25-byte head ([`encode_head`]), followed by the
//! payload for a write unless the payload was all zeros ([`ZEROS`]).
//!
//! Durability: records are buffered and reach the file when the buffer
//! fills or at [`Journal::sync`], which the drive calls on every FLUSH
//! (FUA is a FLUSH after the write), so everything acknowledged before a
//! FLUSH's reply is on disk. Whatever was written after the last sync may
//! be lost with the process: a kill leaves at worst an incomplete last
//! record, a *torn tail*, which loading drops. Anything else that does not
//! check out is damage, which [`scan`] reports with the record number and
//! byte offset, and never skips over silently.

use ftlsim::trace::{HostCmd, Op};
use ftlsim::units::{SECTOR_BYTES, Sector, SimTime};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes of a command's head, in the journal and in `commands.bin`.
pub const HEAD_BYTES: usize = 25;
/// Bytes of the journal's header.
pub const HEADER_BYTES: u64 = 16;
const MAGIC: &[u8; 8] = b"FTLSIMJ2";
/// Head flag: the command failed when it was served.
pub const FAILED: u8 = 0x80;
/// Head flag: a write whose payload was all zeros (none is stored).
pub const ZEROS: u8 = 0x40;
/// Op code of the mark a new serving session leaves (its clock restarts).
const SESSION: u8 = 4;
/// Largest body a record may have: a head and the largest write the drive
/// submits (the NBD maximum block, 32 MiB), with room to spare. Checked
/// before a body is read, so a damaged length cannot allocate wildly.
const MAX_BODY_BYTES: u32 = HEAD_BYTES as u32 + (64 << 20);

/// One journalled event.
#[derive(Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    /// A new serving session began: the simulation restarted its clock.
    Session,
    /// A host command; `data` is a write's payload (`None`: all zeros).
    Command { cmd: HostCmd, failed: bool, data: Option<&'a [u8]> },
}

fn op_code(op: Op) -> u8 {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Trim => 2,
        Op::Flush => 3,
    }
}

/// The 25-byte head: op code and flags, then issue time (ns), first sector
/// and sector count as little-endian u64.
pub fn encode_head(cmd: &HostCmd, flags: u8) -> [u8; HEAD_BYTES] {
    let mut r = [0u8; HEAD_BYTES];
    r[0] = op_code(cmd.op) | flags;
    r[1..9].copy_from_slice(&cmd.time.0.to_le_bytes());
    r[9..17].copy_from_slice(&cmd.start.0.to_le_bytes());
    r[17..25].copy_from_slice(&cmd.sectors.to_le_bytes());
    r
}

/// The session mark's head.
pub fn session_head() -> [u8; HEAD_BYTES] {
    let mut r = [0u8; HEAD_BYTES];
    r[0] = SESSION;
    r
}

/// A decoded head: `None` for a session mark, else the command and its
/// flags; `Err` names an unknown op code.
pub fn decode_head(r: &[u8; HEAD_BYTES]) -> Result<Option<(HostCmd, u8)>, String> {
    let flags = r[0] & (FAILED | ZEROS);
    if r[0] == SESSION {
        return Ok(None);
    }
    let op = [Op::Read, Op::Write, Op::Trim, Op::Flush]
        .into_iter()
        .find(|&op| op_code(op) == r[0] & !(FAILED | ZEROS))
        .ok_or_else(|| format!("unknown operation code {:#x}", r[0]))?;
    let u = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8 bytes"));
    Ok(Some((HostCmd { time: SimTime(u(1)), op, start: Sector(u(9)), sectors: u(17), continued: false }, flags)))
}

/// The journal being appended to.
pub struct Journal {
    path: PathBuf,
    out: BufWriter<File>,
    /// Bytes in the file once the buffer is written, header included.
    bytes: u64,
    /// The first write error; every later sync reports it.
    error: Option<io::Error>,
}

impl Journal {
    /// Creates an empty journal following checkpoint `checkpoint`,
    /// atomically: a kill leaves either the old file or the new one.
    pub fn create(path: &Path, checkpoint: u64) -> io::Result<Journal> {
        let tmp = path.with_extension("bin.partial");
        let mut f = File::create(&tmp)?;
        f.write_all(MAGIC)?;
        f.write_all(&checkpoint.to_le_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(path)?;
        Journal::append(path, HEADER_BYTES)
    }

    /// Opens a journal to append after its first `valid` bytes (what
    /// [`scan`] accepted); anything after them is cut off.
    pub fn append(path: &Path, valid: u64) -> io::Result<Journal> {
        let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
        f.set_len(valid)?;
        f.seek(SeekFrom::End(0))?;
        Ok(Journal { path: path.to_path_buf(), out: BufWriter::with_capacity(1 << 20, f), bytes: valid, error: None })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the journal, header included.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends a command; `data` is a write's payload.
    pub fn command(&mut self, cmd: &HostCmd, failed: bool, data: Option<&[u8]>) {
        let data = data.filter(|d| d.iter().any(|&b| b != 0));
        let mut flags = if failed { FAILED } else { 0 };
        if cmd.op == Op::Write && data.is_none() {
            flags |= ZEROS;
        }
        let payload = if cmd.op == Op::Write { data.unwrap_or_default() } else { &[] };
        self.record(&encode_head(cmd, flags), payload);
    }

    /// Marks the start of a serving session.
    pub fn session(&mut self) {
        self.record(&session_head(), &[]);
    }

    fn record(&mut self, head: &[u8; HEAD_BYTES], payload: &[u8]) {
        let mut crc = crc32fast::Hasher::new();
        crc.update(head);
        crc.update(payload);
        let len = (HEAD_BYTES + payload.len()) as u32;
        let mut frame = [0u8; 8 + HEAD_BYTES];
        frame[0..4].copy_from_slice(&len.to_le_bytes());
        frame[4..8].copy_from_slice(&crc.finalize().to_le_bytes());
        frame[8..].copy_from_slice(head);
        let r = self.out.write_all(&frame).and_then(|_| self.out.write_all(payload));
        match r {
            Ok(()) => self.bytes += 8 + len as u64,
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Writes out the buffer and waits until the file is on disk.
    pub fn sync(&mut self) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), format!("an earlier write failed: {e}")));
        }
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

/// fsyncs the directory holding `path`, so a rename in it is durable.
pub fn sync_dir(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => File::open(if dir.as_os_str().is_empty() { Path::new(".") } else { dir })?.sync_all(),
        None => Ok(()),
    }
}

/// Where a scan stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Tail {
    /// The file ends after a whole record.
    Clean,
    /// The last record is incomplete (the process was killed while
    /// writing it): its `bytes` from `offset` are dropped.
    Torn { offset: u64, bytes: u64 },
    /// Record `record` (from 0), at byte `offset`, does not check out.
    /// `later` records (by their lengths) and `bytes` bytes from `offset`
    /// on would be lost by cutting the journal there.
    Damaged { record: u64, offset: u64, reason: String, later: u64, bytes: u64 },
}

/// What a scan found.
#[derive(Debug)]
pub struct Scan {
    /// The checkpoint the journal follows (from its header).
    pub checkpoint: u64,
    /// Whole, intact records.
    pub records: u64,
    /// Bytes up to the end of the last intact record.
    pub valid_bytes: u64,
    pub tail: Tail,
}

/// Reads the journal at `path`, handing each intact entry to `f` in
/// order, until its end or the first record that is torn or damaged.
/// A damaged header is an `Err` (nothing in the file can be trusted).
pub fn scan(path: &Path, f: &mut dyn FnMut(Entry) -> ftlsim::Result<()>) -> ftlsim::Result<Scan> {
    let io_err = |e| ftlsim::Error::io(path, e);
    let checkpoint = header(path)?;
    let file = File::open(path).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    let mut r = BufReader::with_capacity(1 << 20, file);
    r.seek(SeekFrom::Start(HEADER_BYTES)).map_err(io_err)?;
    let (mut offset, mut records) = (HEADER_BYTES, 0u64);
    let mut body = Vec::new();
    let tail = loop {
        let left = len - offset;
        if left == 0 {
            break Tail::Clean;
        }
        let mut frame = [0u8; 8];
        if left < 8 {
            break Tail::Torn { offset, bytes: left };
        }
        r.read_exact(&mut frame).map_err(io_err)?;
        let body_len = u32::from_le_bytes(frame[0..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(frame[4..8].try_into().expect("4 bytes"));
        let damaged = |reason: String| Tail::Damaged { record: records, offset, reason, later: 0, bytes: left };
        if body_len == 0 && crc == 0 && rest_is_zero(&mut r).map_err(io_err)? {
            // A file extended but never written (power lost before the data).
            break Tail::Torn { offset, bytes: left };
        }
        if !(HEAD_BYTES as u32..=MAX_BODY_BYTES).contains(&body_len) {
            break damaged(format!("record length {body_len} is impossible"));
        }
        if left - 8 < body_len as u64 {
            break Tail::Torn { offset, bytes: left };
        }
        body.resize(body_len as usize, 0);
        r.read_exact(&mut body).map_err(io_err)?;
        if crc32fast::hash(&body) != crc {
            break damaged("checksum mismatch".into());
        }
        let head: &[u8; HEAD_BYTES] = body[..HEAD_BYTES].try_into().expect("head");
        let entry = match decode_head(head) {
            Err(why) => break damaged(why),
            Ok(None) if body_len as usize == HEAD_BYTES => Entry::Session,
            Ok(Some((cmd, flags))) => {
                let payload = &body[HEAD_BYTES..];
                let want = match cmd.op {
                    Op::Write if flags & ZEROS == 0 => cmd.sectors.checked_mul(SECTOR_BYTES),
                    _ => Some(0),
                };
                if want != Some(payload.len() as u64) {
                    break damaged(format!(
                        "{} payload bytes for a {:?} of {} sectors",
                        payload.len(),
                        cmd.op,
                        cmd.sectors
                    ));
                }
                let data = (cmd.op == Op::Write && flags & ZEROS == 0).then_some(payload);
                Entry::Command { cmd, failed: flags & FAILED != 0, data }
            }
            Ok(None) => break damaged("a session mark with a payload".into()),
        };
        f(entry)?;
        records += 1;
        offset += 8 + body_len as u64;
    };
    let tail = match tail {
        Tail::Damaged { record, offset, reason, .. } => {
            let later = count_later(path, offset, len).map_err(io_err)?;
            Tail::Damaged { record, offset, reason, later, bytes: len - offset }
        }
        t => t,
    };
    Ok(Scan { checkpoint, records, valid_bytes: offset, tail })
}

/// The checkpoint the journal at `path` follows, from its header.
pub fn header(path: &Path) -> ftlsim::Result<u64> {
    let mut header = [0u8; HEADER_BYTES as usize];
    File::open(path).and_then(|mut f| f.read_exact(&mut header)).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => bad_header(path),
        _ => ftlsim::Error::io(path, e),
    })?;
    if &header[..8] != MAGIC {
        return Err(bad_header(path));
    }
    Ok(u64::from_le_bytes(header[8..].try_into().expect("8 bytes")))
}

fn bad_header(path: &Path) -> ftlsim::Error {
    ftlsim::Error::config("--state", format!("{}: not a journal of ftlsim-state-2 (bad header)", path.display()))
}

fn rest_is_zero(r: &mut impl Read) -> io::Result<bool> {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match r.read(&mut buf)? {
            0 => return Ok(true),
            n if buf[..n].iter().any(|&b| b != 0) => return Ok(false),
            _ => {}
        }
    }
}

/// Records after a damaged one at `offset`, walking by their lengths: the
/// commands a cut at `offset` would drop besides the damaged one (a guess
/// when the damage hit a length).
fn count_later(path: &Path, offset: u64, len: u64) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path)?;
    let (mut at, mut n) = (offset, 0u64);
    let mut frame = [0u8; 4];
    while at + 8 <= len {
        file.read_exact_at(&mut frame, at)?;
        let body = u32::from_le_bytes(frame) as u64;
        if !(HEAD_BYTES as u64..=MAX_BODY_BYTES as u64).contains(&body) || at + 8 + body > len {
            break;
        }
        at += 8 + body;
        n += 1;
    }
    Ok(n.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(op: Op, start: u64, sectors: u64) -> HostCmd {
        HostCmd { time: SimTime(7), op, start: Sector(start), sectors, continued: false }
    }

    #[test]
    fn heads_round_trip() {
        let c =
            HostCmd { time: SimTime(u64::MAX - 3), op: Op::Trim, start: Sector(1 << 40), sectors: 7, continued: false };
        assert_eq!(decode_head(&encode_head(&c, FAILED)), Ok(Some((c, FAILED))));
        assert_eq!(decode_head(&session_head()), Ok(None));
        let mut r = encode_head(&c, 0);
        r[0] = 9;
        assert_eq!(decode_head(&r), Err("unknown operation code 0x9".into()));
    }

    fn entries(path: &Path) -> (Vec<String>, Scan) {
        let mut seen = Vec::new();
        let scan = scan(path, &mut |e| {
            seen.push(format!("{e:?}"));
            Ok(())
        })
        .unwrap();
        (seen, scan)
    }

    #[test]
    fn records_read_back_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.bin");
        let mut j = Journal::create(&path, 3).unwrap();
        j.session();
        j.command(&cmd(Op::Write, 8, 1), false, Some(&[5; 512]));
        j.command(&cmd(Op::Write, 9, 2), false, Some(&[0; 1024]));
        j.command(&cmd(Op::Read, 9, 2), true, None);
        j.sync().unwrap();
        let full = j.bytes();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), full);
        let (seen, s) = entries(&path);
        assert_eq!((s.checkpoint, s.records, s.valid_bytes, &s.tail), (3, 4, full, &Tail::Clean));
        assert_eq!(seen.len(), 4);
        assert!(seen[2].contains("data: None"), "{seen:?}");
        // Killed in the middle of the last record.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 10).unwrap();
        let (seen, s) = entries(&path);
        assert_eq!((s.records, &s.tail), (3, &Tail::Torn { offset: full - 33, bytes: 23 }));
        assert_eq!(seen.len(), 3);
        // Appending goes on after the last whole record.
        let mut j = Journal::append(&path, s.valid_bytes).unwrap();
        j.command(&cmd(Op::Flush, 0, 0), false, None);
        j.sync().unwrap();
        assert_eq!(entries(&path).1.tail, Tail::Clean);
    }

    #[test]
    fn damage_is_reported_with_record_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.bin");
        let mut j = Journal::create(&path, 0).unwrap();
        for i in 0..5 {
            j.command(&cmd(Op::Write, i, 1), false, Some(&[1 + i as u8; 512]));
        }
        j.sync().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let second = HEADER_BYTES as usize + 8 + HEAD_BYTES + 512;
        bytes[second + 100] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let (seen, s) = entries(&path);
        assert_eq!(seen.len(), 1);
        match s.tail {
            Tail::Damaged { record, offset, reason, later, bytes } => {
                assert_eq!((record, offset, later), (1, second as u64, 3));
                assert_eq!(bytes, 4 * (8 + 25 + 512));
                assert_eq!(reason, "checksum mismatch");
            }
            t => panic!("{t:?}"),
        }
        std::fs::write(&path, b"FTLSIMJ1xxxxxxxx").unwrap();
        let e = scan(&path, &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains("journal.bin") && e.contains("bad header"), "{e}");
    }
}
