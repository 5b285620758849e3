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
//! pool with its RNG, GC jobs); a CRC-32 of everything before it.
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
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bumped whenever the saved state's shape changes (a field added to any
/// saved struct): older files are then refused as stale, not misread.
pub const FORMAT_VERSION: u32 = 6;
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

/// `value`'s bincode appended to `out`.
pub(crate) fn encode_into<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<()> {
    bincode::serialize_into(out, value).map_err(|e| Error::invariant("snapshot", format!("cannot encode: {e}")))
}

/// A value from bincode `bytes`, all of them used; else why not.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> std::result::Result<T, String> {
    use bincode::Options;
    bincode::options()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .deserialize(bytes)
        .map_err(|e| format!("undecodable: {e}"))
}

/// A snapshot's two state sections, as read and checked.
pub struct Sections {
    bytes: Vec<u8>,
    drive: std::ops::Range<usize>,
    ftl: std::ops::Range<usize>,
}

impl Sections {
    pub fn drive(&self) -> &[u8] {
        &self.bytes[self.drive.clone()]
    }
    pub fn ftl(&self) -> &[u8] {
        &self.bytes[self.ftl.clone()]
    }
}

/// Reads and checks the snapshot at `path` made for `key`: `Ok(None)` when
/// there is none, `Err(reason)` when it is stale or damaged.
pub fn read(path: &Path, key: &str) -> std::result::Result<Option<Sections>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("unreadable: {e}")),
    };
    let mut r = Cursor { bytes: &bytes, at: 0 };
    if r.take(MAGIC.len())? != MAGIC {
        return Err("not a snapshot file (bad magic)".into());
    }
    let version = u32::from_le_bytes(r.array()?);
    if version != FORMAT_VERSION {
        return Err(format!("stale: format version {version}, this build reads {FORMAT_VERSION}"));
    }
    let key_len = u32::from_le_bytes(r.array()?) as usize;
    if r.take(key_len)? != key.as_bytes() {
        return Err("stale: made for another config, FTL, seed, preconditioning or ftlsim build".into());
    }
    let drive = r.section()?;
    let ftl = r.section()?;
    let body_end = r.at;
    let crc = u32::from_le_bytes(r.array()?);
    if r.at != bytes.len() {
        return Err(format!("damaged: {} unexpected bytes after the checksum", bytes.len() - r.at));
    }
    if crc32fast::hash(&bytes[..body_end]) != crc {
        return Err("damaged: checksum mismatch".into());
    }
    Ok(Some(Sections { bytes, drive, ftl }))
}

/// Bounds-checked reading of a snapshot's fields: running out is truncation.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| {
            format!("damaged: truncated ({} bytes, {} more needed at byte {})", self.bytes.len(), n, self.at)
        })?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn section(&mut self) -> std::result::Result<std::ops::Range<usize>, String> {
        let len = u64::from_le_bytes(self.array()?);
        let len = usize::try_from(len).map_err(|_| format!("damaged: section of {len} bytes"))?;
        let start = self.at;
        self.take(len)?;
        Ok(start..self.at)
    }
}

/// Writes a snapshot atomically: a temporary file in the same directory,
/// synced, then renamed over `path`.
pub fn write(path: &Path, key: &str, drive: &[u8], ftl: &[u8]) -> Result<()> {
    let mut head = Vec::with_capacity(32 + key.len());
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    head.extend_from_slice(&(key.len() as u32).to_le_bytes());
    head.extend_from_slice(key.as_bytes());
    let mut crc = crc32fast::Hasher::new();
    let tmp = path.with_extension(format!("snap.tmp-{}", std::process::id()));
    let io = |e| Error::io(&tmp, e);
    let mut f = std::io::BufWriter::new(File::create(&tmp).map_err(io)?);
    let mut put = |bytes: &[u8]| -> Result<()> {
        crc.update(bytes);
        f.write_all(bytes).map_err(io)
    };
    put(&head)?;
    for section in [drive, ftl] {
        put(&(section.len() as u64).to_le_bytes())?;
        put(section)?;
    }
    f.write_all(&crc.finalize().to_le_bytes()).map_err(io)?;
    let f = f.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
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

    #[test]
    fn a_written_snapshot_reads_back_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.snap");
        write(&p, "k", b"drive", b"ftl state").unwrap();
        let s = read(&p, "k").unwrap().unwrap();
        assert_eq!((s.drive(), s.ftl()), (&b"drive"[..], &b"ftl state"[..]));
        assert!(read(&p, "other").err().unwrap().starts_with("stale"));
        assert_eq!(read(&dir.path().join("none.snap"), "k").unwrap().map(|_| ()), None);

        let good = std::fs::read(&p).unwrap();
        let mut flipped = good.clone();
        let n = flipped.len();
        flipped[n - 8] ^= 1;
        std::fs::write(&p, &flipped).unwrap();
        assert_eq!(read(&p, "k").err().unwrap(), "damaged: checksum mismatch");
        std::fs::write(&p, &good[..n - 3]).unwrap();
        assert!(read(&p, "k").err().unwrap().starts_with("damaged: truncated"));
        let mut old = good.clone();
        old[8] = 0;
        std::fs::write(&p, &old).unwrap();
        assert!(read(&p, "k").err().unwrap().contains("format version 0"));
    }
}
