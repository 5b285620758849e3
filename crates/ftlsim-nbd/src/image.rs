//! The checkpointed image of a durable drive's logical space: `image.bin`,
//! a sparse file updated in place (only the pages changed since the last
//! checkpoint are written; pages of zeros are holes), and `image.sums`,
//! one little-endian CRC-32 per page, so a damaged image is refused when
//! loading instead of being served.
//!
//! Updating in place is safe against a kill because the journal being
//! checkpointed holds every change: before any page is written,
//! `checkpoint.pending` lists each page about to change with its old and
//! new checksum. Until the checkpoint commits (its manifest is renamed into
//! place), either content is acceptable for those pages: loading replays
//! that same journal over them.

use crate::journal::sync_dir;
use ftlsim::{Error, Result};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub const IMAGE: &str = "image.bin";
pub const SUMS: &str = "image.sums";
const PENDING: &str = "checkpoint.pending";

pub struct Image {
    path: PathBuf,
    file: File,
    sums_path: PathBuf,
    sums_file: File,
    sums: Vec<u32>,
    page_bytes: u64,
    zero_crc: u32,
}

fn bad(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::config("--state", format!("{}: {reason}", path.display()))
}

impl Image {
    /// A new image of `bytes` bytes, all zeros, in `dir`.
    pub fn create(dir: &Path, bytes: u64, page_bytes: u64) -> Result<Image> {
        let path = dir.join(IMAGE);
        whole_pages(&path, bytes, page_bytes)?;
        let file = File::create(&path).and_then(|f| f.set_len(bytes).map(|_| f)).map_err(|e| Error::io(&path, e))?;
        let zero_crc = crc32fast::hash(&vec![0; page_bytes as usize]);
        let sums = vec![zero_crc; bytes.div_ceil(page_bytes) as usize];
        let sums_path = dir.join(SUMS);
        std::fs::write(&sums_path, sums_bytes(&sums)).map_err(|e| Error::io(&sums_path, e))?;
        let sums_file = File::options().write(true).open(&sums_path).map_err(|e| Error::io(&sums_path, e))?;
        for f in [&file, &sums_file] {
            f.sync_all().map_err(|e| Error::io(&path, e))?;
        }
        let _ = std::fs::remove_file(dir.join(PENDING));
        Ok(Image { path, file, sums_path, sums_file, sums, page_bytes, zero_crc })
    }

    /// Opens the image of checkpoint `checkpoint` and checks every page
    /// against its checksum (pages in holes cost no reads).
    pub fn open(dir: &Path, bytes: u64, page_bytes: u64, checkpoint: u64) -> Result<Image> {
        let path = dir.join(IMAGE);
        let sums_path = dir.join(SUMS);
        whole_pages(&path, bytes, page_bytes)?;
        let file = File::options().read(true).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        if len != bytes {
            return Err(bad(&path, format!("holds {len} bytes; the drive has {bytes}")));
        }
        let raw = std::fs::read(&sums_path).map_err(|e| Error::io(&sums_path, e))?;
        let pages = bytes.div_ceil(page_bytes);
        if raw.len() as u64 != pages * 4 {
            return Err(bad(&sums_path, format!("holds {} bytes; {pages} pages need {}", raw.len(), pages * 4)));
        }
        let sums: Vec<u32> = raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        let sums_file = File::options().write(true).open(&sums_path).map_err(|e| Error::io(&sums_path, e))?;
        let zero_crc = crc32fast::hash(&vec![0; page_bytes as usize]);
        let image = Image { path, file, sums_path, sums_file, sums, page_bytes, zero_crc };
        let in_flight = read_pending(&dir.join(PENDING), checkpoint + 1);
        image.verify(&in_flight)?;
        Ok(image)
    }

    fn verify(&self, in_flight: &BTreeMap<u64, (u32, u32)>) -> Result<()> {
        let extents = data_extents(&self.file, self.len()).map_err(|e| Error::io(&self.path, e))?;
        let mut page = vec![0u8; self.page_bytes as usize];
        let mut ext = extents.iter().peekable();
        for lpn in 0..self.sums.len() as u64 {
            let (from, to) = (lpn * self.page_bytes, ((lpn + 1) * self.page_bytes).min(self.len()));
            while ext.peek().is_some_and(|&&(_, end)| end <= from) {
                ext.next();
            }
            let crc = if ext.peek().is_some_and(|&&(start, _)| start < to) {
                page.fill(0);
                self.file
                    .read_exact_at(&mut page[..(to - from) as usize], from)
                    .map_err(|e| Error::io(&self.path, e))?;
                crc32fast::hash(&page)
            } else {
                self.zero_crc
            };
            let ok = crc == self.sums[lpn as usize]
                || in_flight.get(&lpn).is_some_and(|&(old, new)| crc == old || crc == new);
            if !ok {
                return Err(bad(
                    &self.path,
                    format!(
                        "page {lpn} (bytes {from}..{to}) does not match its checksum in {}: the image is damaged and \
                         will not be served; serve a copy from a backup, or start a new --state directory",
                        self.sums_path.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.sums.len() as u64 * self.page_bytes
    }

    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    /// The pages whose checksum is not that of zeros, in order (the pages
    /// an interrupted checkpoint may have left either way included).
    pub fn data_pages(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.sums.len() as u64).filter(|&p| self.sums[p as usize] != self.zero_crc)
    }

    /// The image's bytes at `offset` (for replaying checkpointed writes).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| Error::io(&self.path, e))
    }

    /// Writes the pages `lpns` of checkpoint `checkpoint`, whose contents
    /// are `contents(lpn)` (`None`: zeros), recording the intent first.
    /// Contents are asked for twice (checksums, then writes) rather than
    /// held: a checkpoint may change hundreds of MiB.
    pub fn update<'a>(
        &mut self,
        dir: &Path,
        checkpoint: u64,
        lpns: &[u64],
        contents: &dyn Fn(u64) -> Option<Cow<'a, [u8]>>,
    ) -> Result<()> {
        let crc = |lpn: u64| contents(lpn).as_deref().map_or(self.zero_crc, crc32fast::hash);
        let crcs: Vec<u32> = lpns.iter().map(|&lpn| crc(lpn)).collect();
        let pending = dir.join(PENDING);
        let mut intent = checkpoint.to_le_bytes().to_vec();
        for (&lpn, &new) in lpns.iter().zip(&crcs) {
            intent.extend_from_slice(&lpn.to_le_bytes());
            intent.extend_from_slice(&self.sums[lpn as usize].to_le_bytes());
            intent.extend_from_slice(&new.to_le_bytes());
        }
        intent.extend_from_slice(&crc32fast::hash(&intent).to_le_bytes());
        write_synced(&pending, &intent).map_err(|e| Error::io(&pending, e))?;
        let zeros = vec![0u8; self.page_bytes as usize];
        for (&lpn, &crc) in lpns.iter().zip(&crcs) {
            let at = lpn * self.page_bytes;
            match contents(lpn) {
                Some(d) => self.file.write_all_at(&d, at),
                None if punch_hole(&self.file, at, self.page_bytes).is_ok() => Ok(()),
                None => self.file.write_all_at(&zeros, at),
            }
            .map_err(|e| Error::io(&self.path, e))?;
            self.sums[lpn as usize] = crc;
            self.sums_file.write_all_at(&crc.to_le_bytes(), lpn * 4).map_err(|e| Error::io(&self.sums_path, e))?;
        }
        self.file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        self.sums_file.sync_all().map_err(|e| Error::io(&self.sums_path, e))
    }

    /// Forgets the intent once checkpoint has committed.
    pub fn committed(&self, dir: &Path) {
        let _ = std::fs::remove_file(dir.join(PENDING));
    }
}

fn whole_pages(path: &Path, bytes: u64, page_bytes: u64) -> Result<()> {
    if page_bytes == 0 || bytes % page_bytes != 0 {
        return Err(bad(path, format!("a drive of {bytes} bytes is not whole pages of {page_bytes} bytes")));
    }
    Ok(())
}

fn sums_bytes(sums: &[u32]) -> Vec<u8> {
    sums.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = File::create(path)?;
    io::Write::write_all(&mut f, bytes)?;
    f.sync_all()?;
    sync_dir(path)
}

/// The pages of an interrupted checkpoint `expect`: page → (old, new)
/// checksum. A missing, torn or older intent lists none (nothing of it
/// was written: the intent is synced before any page).
fn read_pending(path: &Path, expect: u64) -> BTreeMap<u64, (u32, u32)> {
    let mut raw = Vec::new();
    if File::open(path).and_then(|mut f| f.read_to_end(&mut raw)).is_err() || raw.len() < 12 {
        return BTreeMap::new();
    }
    let (body, crc) = raw.split_at(raw.len() - 4);
    let u64_at = |i: usize| u64::from_le_bytes(body[i..i + 8].try_into().expect("8 bytes"));
    let u32_at = |i: usize| u32::from_le_bytes(body[i..i + 4].try_into().expect("4 bytes"));
    if crc32fast::hash(body).to_le_bytes() != crc || (body.len() - 8) % 16 != 0 || u64_at(0) != expect {
        return BTreeMap::new();
    }
    (8..body.len()).step_by(16).map(|i| (u64_at(i), (u32_at(i + 8), u32_at(i + 12)))).collect()
}

/// The `[start, end)` byte ranges of `file` that hold data (not holes).
fn data_extents(file: &File, len: u64) -> io::Result<Vec<(u64, u64)>> {
    let fd = file.as_raw_fd();
    let mut out = Vec::new();
    let mut at = 0i64;
    while (at as u64) < len {
        // SAFETY: lseek on an open descriptor has no memory effects.
        let start = unsafe { libc::lseek(fd, at, libc::SEEK_DATA) };
        if start < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENXIO) {
                break;
            }
            // No SEEK_DATA here: treat the whole file as data.
            return Ok(vec![(0, len)]);
        }
        // SAFETY: as above.
        let end = unsafe { libc::lseek(fd, start, libc::SEEK_HOLE) };
        let end = if end < 0 { len as i64 } else { end };
        out.push((start as u64, end as u64));
        at = end;
    }
    Ok(out)
}

fn punch_hole(file: &File, at: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate on an open descriptor has no memory effects.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            at as libc::off_t,
            len as libc::off_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_of_an_interrupted_checkpoint_may_hold_either_contents() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut image = Image::create(d, 8 * 512, 512).unwrap();
        let page = |b: u8| Some(Cow::Owned(vec![b; 512]));
        image.update(d, 1, &[1, 5], &|lpn| page(lpn as u8 + 1)).unwrap();
        image.committed(d);
        let sums = std::fs::read(d.join(SUMS)).unwrap();
        Image::open(d, 8 * 512, 512, 1).unwrap();
        // Checkpoint 2 wrote its pages, then was killed before its sums.
        image.update(d, 2, &[1, 2], &|lpn| if lpn == 1 { None } else { page(9) }).unwrap();
        std::fs::write(d.join(SUMS), &sums).unwrap();
        Image::open(d, 8 * 512, 512, 1).unwrap();
        // Without the intent, or with one of another checkpoint, they are damage.
        let intent = std::fs::read(d.join(PENDING)).unwrap();
        std::fs::remove_file(d.join(PENDING)).unwrap();
        let e = Image::open(d, 8 * 512, 512, 1).err().unwrap().to_string();
        assert!(e.contains("page 1 (bytes 512..1024) does not match its checksum"), "{e}");
        std::fs::write(d.join(PENDING), &intent).unwrap();
        assert!(Image::open(d, 8 * 512, 512, 2).is_err());
        // A page that is neither is damage even so.
        std::fs::OpenOptions::new().write(true).open(d.join(IMAGE)).unwrap().write_all_at(&[3; 512], 5 * 512).unwrap();
        let e = Image::open(d, 8 * 512, 512, 1).err().unwrap().to_string();
        assert!(e.contains("page 5 "), "{e}");
    }
}
