//! Preconditioned snapshots: a drive's whole state after preconditioning,
//! saved once and loaded by later runs of the same drive instead of
//! preconditioning it again (`--snapshot-dir`; on by default in `sweep`).
//!
//! A snapshot is keyed by everything that decides the preconditioned state:
//! this build (the crate's version and a fingerprint of its source, made by
//! `build.rs`: a changed simulator may precondition differently, whatever
//! the version says), [`FORMAT_VERSION`], the FTL, the seed, the
//! preconditioning spec and the whole resolved config (as TOML). The file is
//! `DIR/<ftl>-<FNV-1a 64 of the key>.snap`; the key itself is stored in it
//! and compared on load, so a hash collision is a refused snapshot, never a
//! wrong drive.
//!
//! Layout, little-endian: [`MAGIC`]; format version (u32); key (u32 length,
//! UTF-8); the drive's state (u64 length, bincode of the device — NAND array
//! with OOB and erase counts, timelines, counters — the controller and the
//! TRIM model); the FTL's state (u64 length, bincode of the FTL: maps, block
//! pool with its RNG, GC jobs); a CRC-32 of everything before it. The large
//! tables in them ([`crate::mem::BigVec`]) are byte strings of up to 1 MiB,
//! copied over the table on load, not decoded element by element.
//!
//! Both ways the state streams between the file and the drive through a
//! 1 MiB buffer, and a load decodes in place over the tables of the drive
//! just built (`serde`'s `deserialize_in_place`; [`crate::mem::BigVec`]
//! keeps its huge-page memory), so saving or loading a drive never holds
//! its state twice: on a 1 TiB raw drive, peak RSS 2.12 GB saving and
//! loading, as preconditioning without a snapshot (it was 5.30 GB saving and
//! 7.08 GB loading while the file was read whole and decoded beside the
//! drive). The checksum is known only at the end of the file, so a load
//! that fails part way rebuilds the drive as new.
//!
//! A stale snapshot (another key or format version) or a damaged one (bad
//! checksum, truncated, undecodable) is refused with one line on stderr
//! naming the file and the reason; the drive is then preconditioned and the
//! snapshot rewritten. Files are written to a temporary name and renamed, so
//! a reader never sees half a snapshot, and runs sharing a key hold an
//! exclusive lock on `<file>.lock` while they load or make it: of parallel
//! runs (a sweep's threads or processes) the first preconditions and the
//! others wait for it and load.
//!
//! Not available, with a one-line notice and normal preconditioning: an
//! FTL without saved state ([`crate::ftl::Ftl::saved_state`]; every FTL
//! built has it), drives storing payloads, and runs with power cuts.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::sim::Precondition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Bumped whenever the saved state's shape changes (a field added to any
/// saved struct): older files are then refused as stale, not misread.
pub const FORMAT_VERSION: u32 = 7;
/// First bytes of every snapshot file.
pub const MAGIC: &[u8; 8] = b"FTLSNAP\n";

/// What a run did about its snapshot (the report's `input.snapshot`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotUse {
    /// Loaded; not preconditioned.
    Loaded,
    /// Preconditioned, and saved for the next run.
    Saved,
    /// A snapshot was refused (the reason); preconditioned and saved again.
    Recomputed(String),
    /// Preconditioned; this run cannot be saved (the reason).
    Unavailable(String),
    /// Preconditioned; writing the snapshot failed (the reason).
    NotSaved(String),
}

impl std::fmt::Display for SnapshotUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotUse::Loaded => f.write_str("loaded"),
            SnapshotUse::Saved => f.write_str("saved"),
            SnapshotUse::Recomputed(why) => write!(f, "recomputed: {why}"),
            SnapshotUse::Unavailable(why) => write!(f, "unavailable: {why}"),
            SnapshotUse::NotSaved(why) => write!(f, "not saved: {why}"),
        }
    }
}

/// Everything that decides a preconditioned drive's state, as text.
pub fn key(cfg: &Config, p: Precondition) -> String {
    build_key(cfg, &format!("precondition = {p}"))
}

/// A key for a drive's saved state: this build, the snapshot format, the
/// drive (FTL, seed, whole config) and `what` the caller adds (how the
/// state came about).
pub fn build_key(cfg: &Config, what: &str) -> String {
    format!(
        "ftlsim {} (source {}) snapshot format {FORMAT_VERSION}\nftl = {}\nseed = {}\n{what}\n{}",
        env!("CARGO_PKG_VERSION"),
        env!("FTLSIM_SOURCE_FNV"),
        cfg.ftl.name,
        cfg.seed,
        cfg.to_toml()
    )
}

/// The snapshot file for `key` in `dir`.
pub fn path(dir: &Path, cfg: &Config, key: &str) -> PathBuf {
    dir.join(format!("{}-{:016x}.snap", cfg.ftl.name, fnv1a64(key.as_bytes())))
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The bincode encoding every snapshot section uses (fixed-width integers,
/// as `bincode::serialize`).
fn encoding() -> impl bincode::Options {
    use bincode::Options;
    bincode::options().with_fixint_encoding()
}

/// Bytes buffered between the file and the encoder or decoder: large, so the
/// checksum runs over long slices and a 4-byte table entry costs a copy.
const CHUNK: usize = 1 << 20;

/// A snapshot being written, streamed to a temporary file beside `path`
/// (never the whole drive in memory a second time): [`Writer::create`], one
/// [`Writer::section`] per part of the state, [`Writer::finish`] renames it
/// over `path`. Dropped unfinished, the temporary file is removed.
pub struct Writer {
    file: File,
    buf: Vec<u8>,
    crc: crc32fast::Hasher,
    /// Bytes passed to the file, `buf`'s not yet.
    written: u64,
    tmp: PathBuf,
    path: PathBuf,
}

impl Writer {
    /// Starts the snapshot of `key` at `path`: its header written.
    pub fn create(path: &Path, key: &str) -> Result<Writer> {
        let tmp = path.with_extension(format!("snap.tmp-{}", std::process::id()));
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut w = Writer {
            file,
            buf: Vec::with_capacity(CHUNK),
            crc: crc32fast::Hasher::new(),
            written: 0,
            tmp,
            path: path.to_path_buf(),
        };
        w.put(MAGIC)?;
        w.put(&FORMAT_VERSION.to_le_bytes())?;
        w.put(&(key.len() as u32).to_le_bytes())?;
        w.put(key.as_bytes())?;
        Ok(w)
    }

    /// Appends one section: `value`'s bincode, after its length. The length
    /// comes from bincode's size pass, which costs next to nothing (a save
    /// written with the length patched in afterwards instead took the same
    /// instructions, 152.6 M on the bench drive at `fill=0.2`).
    pub fn section<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        use bincode::Options;
        let cannot = |e| Error::invariant("snapshot", format!("cannot encode: {e}"));
        let len = encoding().serialized_size(value).map_err(cannot)?;
        self.put(&len.to_le_bytes())?;
        let start = self.offset();
        encoding().serialize_into(&mut *self, value).map_err(|e| match *e {
            bincode::ErrorKind::Io(io) => Error::io(&self.tmp, io),
            other => cannot(Box::new(other)),
        })?;
        let wrote = self.offset() - start;
        if wrote != len {
            return Err(Error::invariant("snapshot", format!("a section measured {len} bytes but encoded {wrote}")));
        }
        Ok(())
    }

    /// The checksum appended, the file synced and renamed over the path.
    pub fn finish(mut self) -> Result<()> {
        self.drain().map_err(|e| Error::io(&self.tmp, e))?;
        let crc = std::mem::take(&mut self.crc).finalize();
        let io = |e| Error::io(&self.tmp, e);
        self.file.write_all(&crc.to_le_bytes()).map_err(io)?;
        self.file.sync_all().map_err(io)?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))?;
        self.tmp = PathBuf::new();
        Ok(())
    }

    fn offset(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_all(bytes).map_err(|e| Error::io(&self.tmp, e))
    }

    fn drain(&mut self) -> std::io::Result<()> {
        self.crc.update(&self.buf);
        self.file.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

impl Write for Writer {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.buf.len() + bytes.len() > CHUNK {
            self.drain()?;
        }
        if bytes.len() >= CHUNK {
            // Straight to the file, not through a buffer grown to its size.
            self.crc.update(bytes);
            self.file.write_all(bytes)?;
            self.written += bytes.len() as u64;
            return Ok(());
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.drain()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A snapshot being read, streamed from its file: [`Reader::open`] checks
/// the header, each [`Reader::section`] decodes the next part of the state
/// in place over the caller's values, [`Reader::finish`] checks the
/// checksum. The checksum covers the whole file, so it is known only at the
/// end: a caller whose values a damaged file half-overwrote must rebuild
/// them. Any decoding error is reported as the checksum's mismatch when the
/// checksum does not match (the damage, not its first symptom).
pub struct Reader {
    file: File,
    buf: Box<[u8]>,
    /// `buf[at..filled]` is read from the file but not yet decoded.
    at: usize,
    filled: usize,
    crc: crc32fast::Hasher,
    /// The file's length, and how much of it precedes the checksum.
    len: u64,
    body: u64,
    /// Bytes taken from the file into `buf` so far.
    pulled: u64,
    /// Bytes the section being decoded has left.
    section_left: u64,
}

impl Reader {
    /// Opens the snapshot at `path` made for `key`: `Ok(None)` when there is
    /// none, `Err(reason)` when it is stale or damaged.
    pub fn open(path: &Path, key: &str) -> std::result::Result<Option<Reader>, String> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("unreadable: {e}")),
        };
        let len = file.metadata().map_err(|e| format!("unreadable: {e}"))?.len();
        let mut r = Reader {
            file,
            buf: vec![0; CHUNK].into_boxed_slice(),
            at: 0,
            filled: 0,
            crc: crc32fast::Hasher::new(),
            len,
            body: len.saturating_sub(4),
            pulled: 0,
            section_left: 0,
        };
        if r.header(MAGIC.len())? != MAGIC {
            return Err("not a snapshot file (bad magic)".into());
        }
        let version = u32::from_le_bytes(r.array()?);
        if version != FORMAT_VERSION {
            return Err(format!("stale: format version {version}, this build reads {FORMAT_VERSION}"));
        }
        let key_len = u32::from_le_bytes(r.array()?) as usize;
        if r.header(key_len)? != key.as_bytes() {
            return Err("stale: made for another config, FTL, seed, preconditioning or ftlsim build".into());
        }
        Ok(Some(r))
    }

    /// Decodes the next section into `places`, each in place over the
    /// caller's value ([`serde::Deserialize::deserialize_in_place`]), and
    /// checks nothing of the section is left over.
    pub fn section(&mut self, places: &mut [&mut dyn InPlace]) -> std::result::Result<(), String> {
        let len = u64::from_le_bytes(self.array()?);
        let left = self.body - self.offset();
        if len > left {
            return Err(format!(
                "damaged: truncated ({} bytes, {len} more needed at byte {})",
                self.len,
                self.offset()
            ));
        }
        self.section_left = len;
        for place in places {
            if let Err(e) = place.load(self) {
                return Err(self.damage(format!("damaged: undecodable: {e}")));
            }
        }
        match std::mem::take(&mut self.section_left) {
            0 => Ok(()),
            n => Err(self.damage(format!("damaged: a section has {n} bytes its state did not use"))),
        }
    }

    /// Checks the checksum (the state is then the saved one) and that the
    /// file ends there.
    pub fn finish(mut self) -> std::result::Result<(), String> {
        if self.offset() != self.body {
            return Err(self.damage(format!("damaged: {} unexpected bytes after the state", self.body - self.offset())));
        }
        self.verify()
    }

    /// `why`, unless the checksum does not match: then that.
    fn damage(&mut self, why: String) -> String {
        match self.verify() {
            Err(mismatch) => mismatch,
            Ok(()) => why,
        }
    }

    /// Reads the rest of the body and the checksum, and compares.
    fn verify(&mut self) -> std::result::Result<(), String> {
        let io = |e: std::io::Error| format!("unreadable: {e}");
        while self.pulled < self.body {
            self.at = self.filled;
            self.refill().map_err(io)?;
        }
        let mut stored = [0u8; 4];
        if self.len < 4 || self.file.read_exact(&mut stored).is_err() {
            return Err(format!("damaged: truncated ({} bytes, no checksum)", self.len));
        }
        if self.crc.clone().finalize() != u32::from_le_bytes(stored) {
            return Err("damaged: checksum mismatch".into());
        }
        Ok(())
    }

    /// Bytes of the file consumed so far.
    fn offset(&self) -> u64 {
        self.pulled - (self.filled - self.at) as u64
    }

    /// Moves what is left of `buf` to its front and fills the rest from the
    /// body (never the checksum), hashing what it reads.
    fn refill(&mut self) -> std::io::Result<()> {
        self.buf.copy_within(self.at..self.filled, 0);
        self.filled -= self.at;
        self.at = 0;
        let want = (self.buf.len() - self.filled).min((self.body - self.pulled) as usize);
        let got = self.file.read(&mut self.buf[self.filled..self.filled + want])?;
        if got == 0 && want > 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.crc.update(&self.buf[self.filled..self.filled + got]);
        self.filled += got;
        self.pulled += got as u64;
        Ok(())
    }

    /// The next `n` bytes outside any section (the header, a section's
    /// length); running out is truncation.
    fn header(&mut self, n: usize) -> std::result::Result<Vec<u8>, String> {
        if self.offset() + n as u64 > self.body {
            return Err(format!("damaged: truncated ({} bytes, {n} more needed at byte {})", self.len, self.offset()));
        }
        let mut out = vec![0; n];
        self.read_body(&mut out).map_err(|e| format!("unreadable: {e}"))?;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        Ok(self.header(N)?.try_into().expect("took N bytes"))
    }

    /// `out` filled from the body: inlined into the decoder, so a table
    /// entry's few bytes are a move, not a call.
    #[inline(always)]
    fn read_body(&mut self, out: &mut [u8]) -> std::io::Result<()> {
        let n = out.len();
        if self.filled - self.at >= n {
            out.copy_from_slice(&self.buf[self.at..self.at + n]);
            self.at += n;
            return Ok(());
        }
        self.read_body_across(out)
    }

    /// [`Reader::read_body`] when `out` runs past what `buf` holds.
    #[cold]
    #[inline(never)]
    fn read_body_across(&mut self, out: &mut [u8]) -> std::io::Result<()> {
        let n = out.len();
        let mut done = 0;
        while done < n {
            if self.at == self.filled {
                self.refill()?;
            }
            let k = (self.filled - self.at).min(n - done);
            out[done..done + k].copy_from_slice(&self.buf[self.at..self.at + k]);
            self.at += k;
            done += k;
        }
        Ok(())
    }
}

/// The decoder's view of a [`Reader`]: the section being decoded, and
/// nothing past it.
impl Read for Reader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.section_left as usize);
        self.read_exact(&mut out[..n])?;
        Ok(n)
    }

    #[inline(always)]
    fn read_exact(&mut self, out: &mut [u8]) -> std::io::Result<()> {
        if out.len() as u64 > self.section_left {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.section_left -= out.len() as u64;
        self.read_body(out)
    }
}

/// A value a snapshot section decodes in place over
/// ([`Reader::section`]); every deserializable value is one.
pub trait InPlace {
    /// Decodes from `r` over `self`: on error `self` is valid but
    /// unspecified.
    fn load(&mut self, r: &mut Reader) -> bincode::Result<()>;
}

impl<T: DeserializeOwned> InPlace for T {
    fn load(&mut self, r: &mut Reader) -> bincode::Result<()> {
        use bincode::Options;
        let options = encoding().with_limit(r.section_left);
        T::deserialize_in_place(&mut bincode::Deserializer::with_reader(r, options), self)
    }
}

/// An exclusive lock on one snapshot key, released when dropped.
pub struct KeyLock {
    _file: File,
}

impl KeyLock {
    /// Waits for and takes the lock of the snapshot at `path`.
    pub fn acquire(path: &Path) -> Result<KeyLock> {
        let lock = path.with_extension("lock");
        let f =
            File::options().create(true).truncate(false).write(true).open(&lock).map_err(|e| Error::io(&lock, e))?;
        flock(&f, &lock)?;
        Ok(KeyLock { _file: f })
    }
}

#[cfg(unix)]
fn flock(f: &File, path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this process owns; the lock goes
        // with the descriptor when the file is closed.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::io(path, e));
        }
    }
}

#[cfg(not(unix))]
fn flock(_f: &File, _path: &Path) -> Result<()> {
    // Without flock, parallel runs sharing a key may both precondition;
    // each still writes a whole file atomically.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Config {
        Config::load("hat-table4", &["geometry.blocks_per_plane=64".into()]).unwrap()
    }

    #[test]
    fn key_names_every_input_and_the_path_follows_it() {
        let p = Precondition::new(1.0, 0.5);
        let k = key(&cfg(), p);
        assert!(k.contains("precondition = fill=1,overwrite=0.5") && k.contains("seed = "), "{k}");
        assert!(k.contains(&format!("(source {})", env!("FTLSIM_SOURCE_FNV"))), "the build is in the key: {k}");
        let mut other = cfg();
        other.seed += 1;
        assert_ne!(k, key(&other, p));
        let dir = Path::new("d");
        assert_ne!(path(dir, &cfg(), &k), path(dir, &other, &key(&other, p)));
        assert!(path(dir, &cfg(), &k).file_name().unwrap().to_str().unwrap().starts_with("page-"));
    }

    /// Writes a snapshot of two sections: a string, and a table with a count.
    fn write_two(p: &Path, key: &str) {
        let mut w = Writer::create(p, key).unwrap();
        w.section("drive").unwrap();
        w.section(&(crate::mem::big_vec(300_000, 7u32), 5u64)).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn a_write_longer_than_the_buffer_goes_straight_through() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.snap");
        let long = "x".repeat(CHUNK + 3);
        let mut w = Writer::create(&p, "k").unwrap();
        w.section(&long).unwrap();
        w.section(&9u8).unwrap();
        w.finish().unwrap();
        let mut r = Reader::open(&p, "k").unwrap().unwrap();
        let (mut a, mut b) = (String::new(), 0u8);
        r.section(&mut [&mut a]).unwrap();
        r.section(&mut [&mut b]).unwrap();
        r.finish().unwrap();
        assert_eq!((a.len(), b), (CHUNK + 3, 9));
    }

    /// What `write_two` saved.
    type Two = (String, (crate::mem::BigVec<u32>, u64));

    /// Reads `write_two`'s snapshot back into fresh values.
    fn read_two(p: &Path, key: &str) -> std::result::Result<Option<Two>, String> {
        let Some(mut r) = Reader::open(p, key)? else { return Ok(None) };
        let (mut a, mut b) = (String::new(), (crate::mem::big_vec(0, 0), 0));
        r.section(&mut [&mut a])?;
        r.section(&mut [&mut b])?;
        r.finish()?;
        Ok(Some((a, b)))
    }

    #[test]
    fn a_written_snapshot_reads_back_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.snap");
        write_two(&p, "k");
        assert_eq!(read_two(&p, "k").unwrap(), Some(("drive".into(), (crate::mem::big_vec(300_000, 7), 5))));
        assert!(read_two(&p, "other").err().unwrap().starts_with("stale"));
        assert_eq!(read_two(&dir.path().join("none.snap"), "k").unwrap(), None);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");

        let good = std::fs::read(&p).unwrap();
        let n = good.len();
        // A flipped byte in the state is the checksum's mismatch, whatever
        // it did to the decoding first: in the table, in the string's
        // length, in the table's chunk count and its first chunk's byte
        // length, low and high (a section's own length reads as truncation).
        let (string_len, table_len) = (8 + 4 + 4 + 1 + 8, 8 + 4 + 4 + 1 + 8 + 8 + 5 + 8);
        for at in [n - 8, n / 2, string_len + 3, table_len + 2, table_len + 8 + 1, table_len + 8 + 5] {
            let mut flipped = good.clone();
            flipped[at] ^= 1;
            std::fs::write(&p, &flipped).unwrap();
            assert_eq!(read_two(&p, "k").err().unwrap(), "damaged: checksum mismatch", "byte {at}");
        }
        for cut in [n - 3, n / 2, 20, 0] {
            std::fs::write(&p, &good[..cut]).unwrap();
            assert!(read_two(&p, "k").err().unwrap().starts_with("damaged: truncated"), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.extend_from_slice(b"more");
        std::fs::write(&p, &longer).unwrap();
        assert!(read_two(&p, "k").err().unwrap().starts_with("damaged:"));
        let mut old = good.clone();
        old[8] = 0;
        std::fs::write(&p, &old).unwrap();
        assert!(read_two(&p, "k").err().unwrap().contains("format version 0"));
    }

    #[test]
    fn a_section_is_decoded_in_place_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.snap");
        write_two(&p, "k");
        let mut r = Reader::open(&p, "k").unwrap().unwrap();
        let mut a = String::new();
        r.section(&mut [&mut a]).unwrap();
        // In place: the table's own allocation is kept.
        let mut table = crate::mem::big_vec(300_000, 0u32);
        let at = table.as_ptr();
        let mut count = 0u64;
        r.section(&mut [&mut table, &mut count]).unwrap();
        assert_eq!((table.as_ptr(), table[299_999], count), (at, 7, 5));
        r.finish().unwrap();

        // A section's values that take less than it holds are refused, and
        // so are values that want more than it holds.
        let mut r = Reader::open(&p, "k").unwrap().unwrap();
        r.section(&mut [&mut a]).unwrap();
        let mut short = Vec::<u32>::new();
        assert!(r.section(&mut [&mut short]).unwrap_err().contains("did not use"));
        let mut r = Reader::open(&p, "k").unwrap().unwrap();
        let mut more = (String::new(), 0u64);
        assert!(r.section(&mut [&mut more]).unwrap_err().starts_with("damaged: undecodable"));
    }
}
