//! `ftlsim serve --state DIR`: a served drive saved at clean shutdown and
//! loaded at the next start, so an aged drive can be reused.
//!
//! The FTL and flash state is not serialized structure by structure. The
//! simulation is deterministic, so the state is the drive's configuration,
//! its preconditioning and every host command it was given, with the
//! simulated time each was issued at: replaying them rebuilds the same
//! mapping, blocks, wear, caches and TRIM lists, for every FTL alike. Data
//! needs no history: replaying each write with the contents its sectors
//! hold at the end gives every sector its final contents (a later write
//! rewrites the sectors it covers, a later TRIM zeroes them), so the state
//! keeps one image of the logical space, a sparse file holding only
//! non-zero pages. Loading costs a replay of the whole history (millions
//! of commands per second without GC, less with it).
//!
//! `DIR` holds:
//! - `state.toml`: format, configuration, preconditioning, commands per
//!   session and the current generation `G`;
//! - `commands-G.bin`: one 25-byte record per host command: the op (bit 7
//!   set if the command failed), then issue time (ns), first sector and
//!   sector count as little-endian u64;
//! - `image-G.bin`: the logical contents.
//!
//! A save writes generation `G+1` beside `G`, then replaces `state.toml`
//! atomically, then removes generation `G`: an interrupted save leaves the
//! previous state whole.

use ftlsim::trace::{HostCmd, Op};
use ftlsim::units::{SECTOR_BYTES, Sector, SimTime};
use ftlsim::{Error, Precondition, PreconditionMode, Result, Simulation};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const FORMAT: &str = "ftlsim-state-1";
const MANIFEST: &str = "state.toml";
const RECORD_BYTES: usize = 25;
const FAILED: u8 = 0x80;

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    generation: u64,
    /// `Precondition`'s text form, when the drive was conditioned.
    precondition: Option<String>,
    /// Host commands of each serving session, in order.
    sessions: Vec<u64>,
    /// The drive's full configuration (`ftlsim config show` form).
    config: String,
}

/// A state directory: where a drive is loaded from and saved to.
pub struct StateDir {
    dir: PathBuf,
    saved: Option<Manifest>,
}

fn bad(file: &Path, reason: impl std::fmt::Display) -> Error {
    Error::config("--state", format!("{}: {reason}", file.display()))
}

impl StateDir {
    /// Opens `dir`; a directory without a saved state (or none at all) is
    /// a new drive's, created at the first save.
    pub fn open(dir: &Path) -> Result<StateDir> {
        let path = dir.join(MANIFEST);
        if dir.exists() && !dir.is_dir() {
            return Err(bad(dir, "is not a directory"));
        }
        let saved = match std::fs::read_to_string(&path) {
            Ok(text) => {
                // The format first: another version's fields would only confuse.
                let table: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(&path, e.message()))?;
                match table.get("format").and_then(toml::Value::as_str) {
                    Some(FORMAT) => {}
                    Some(other) => return Err(bad(&path, format!("format '{other}' is not {FORMAT}"))),
                    None => return Err(bad(&path, format!("no format = \"{FORMAT}\": not an ftlsim state"))),
                }
                let m: Manifest = toml::from_str(&text).map_err(|e| bad(&path, e.message()))?;
                Some(m)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(path, e)),
        };
        Ok(StateDir { dir: dir.to_path_buf(), saved })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn is_saved(&self) -> bool {
        self.saved.is_some()
    }

    /// Rebuilds the saved drive in `sim`, a fresh simulation built from the
    /// same configuration (refused, naming the first difference, if not).
    /// Leaves it as a new session starts: time and counters at zero.
    pub fn restore(&self, sim: &mut Simulation, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let Some(m) = &self.saved else { return Ok(()) };
        let manifest = self.dir.join(MANIFEST);
        let here = sim.config().to_toml();
        if here != m.config {
            return Err(bad(
                &manifest,
                format!(
                    "was saved from a different drive ({}); serve it with the same --config/--set/--ftl, or use a \
                     new --state directory",
                    config_difference(&m.config, &here)
                ),
            ));
        }
        if let Some(p) = &m.precondition {
            let mut pre = p.parse::<Precondition>().map_err(|e| bad(&manifest, e))?;
            if !p.contains("mode=") {
                // Saved before preconditioning had modes, when it was timed.
                pre.mode = PreconditionMode::Timed;
            }
            sim.precondition(pre)?;
        }
        let commands_path = self.file("commands", m.generation);
        let image_path = self.file("image", m.generation);
        let image = File::open(&image_path).map_err(|e| Error::io(&image_path, e))?;
        let commands = File::open(&commands_path).map_err(|e| Error::io(&commands_path, e))?;
        let total: u64 = m.sessions.iter().sum();
        let len = commands.metadata().map_err(|e| Error::io(&commands_path, e))?.len();
        if len != total * RECORD_BYTES as u64 {
            return Err(bad(
                &commands_path,
                format!("holds {len} bytes; {MANIFEST} lists {total} commands of {RECORD_BYTES} bytes"),
            ));
        }
        let mut reader = BufReader::with_capacity(1 << 20, commands);
        let (mut data, mut out) = (Vec::new(), Vec::new());
        let mut index = 0u64;
        for &count in &m.sessions {
            sim.restart_measurement()?;
            for _ in 0..count {
                let mut rec = [0u8; RECORD_BYTES];
                reader.read_exact(&mut rec).map_err(|e| Error::io(&commands_path, e))?;
                let (cmd, failed) = decode(&rec).ok_or_else(|| {
                    bad(&commands_path, format!("record {index}: unknown operation code {:#x}", rec[0]))
                })?;
                // Checked before any buffer is sized by it: a damaged record must not allocate wildly.
                if cmd.start.0.checked_add(cmd.sectors).is_none_or(|end| end > sim.logical_sectors()) {
                    return Err(bad(
                        &commands_path,
                        format!(
                            "record {index}: sectors {}+{} lie beyond the drive's {}",
                            cmd.start.0,
                            cmd.sectors,
                            sim.logical_sectors()
                        ),
                    ));
                }
                let bytes = (cmd.sectors * SECTOR_BYTES) as usize;
                let result = match cmd.op {
                    Op::Write => {
                        data.resize(bytes, 0);
                        image
                            .read_exact_at(&mut data, cmd.start.0 * SECTOR_BYTES)
                            .map_err(|e| Error::io(&image_path, e))?;
                        sim.submit(&cmd, cmd.time, Some(&data), None)
                    }
                    Op::Read => {
                        out.resize(bytes, 0);
                        sim.submit(&cmd, cmd.time, None, Some(&mut out))
                    }
                    Op::Trim | Op::Flush => sim.submit(&cmd, cmd.time, None, None),
                };
                if result.is_err() != failed {
                    let what = result.err().map_or("succeeded".to_string(), |e| format!("failed: {e}"));
                    return Err(bad(
                        &commands_path,
                        format!(
                            "replay diverged at command {index} ({:?} of sector {}): it {what}",
                            cmd.op, cmd.start.0
                        ),
                    ));
                }
                index += 1;
                if index % (1 << 16) == 0 {
                    progress(index, total);
                }
            }
        }
        progress(index, total);
        sim.restart_measurement()?;
        Ok(())
    }

    /// Starts logging this session's commands (beside the saved state).
    pub fn session_log(&self) -> Result<SessionLog> {
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let path = self.dir.join("session.bin.partial");
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        Ok(SessionLog { path, out: Some(BufWriter::with_capacity(1 << 20, file)), commands: 0, error: None })
    }

    /// Saves `sim` as the state after this session (`log`), as a new
    /// generation.
    pub fn save(&self, sim: &Simulation, mut log: SessionLog) -> Result<()> {
        if let Some(e) = log.error.take() {
            return Err(Error::io(&log.path, e));
        }
        let mut out = log.out.take().expect("session log open");
        out.flush().map_err(|e| Error::io(&log.path, e))?;
        drop(out);
        // Re-read: a second server on the same directory must not be overwritten unnoticed.
        let current = StateDir::open(&self.dir)?;
        let previous_generation = self.saved.as_ref().map(|m| m.generation);
        if current.saved.as_ref().map(|m| m.generation) != previous_generation {
            return Err(bad(&self.dir.join(MANIFEST), "was saved by another server meanwhile; not overwritten"));
        }
        let generation = previous_generation.map_or(0, |g| g + 1);
        let commands = self.file("commands", generation);
        match previous_generation {
            Some(g) => {
                std::fs::copy(self.file("commands", g), &commands).map_err(|e| Error::io(&commands, e))?;
            }
            None => {
                File::create(&commands).map_err(|e| Error::io(&commands, e))?;
            }
        }
        let mut w = std::fs::OpenOptions::new().append(true).open(&commands).map_err(|e| Error::io(&commands, e))?;
        std::io::copy(&mut File::open(&log.path).map_err(|e| Error::io(&log.path, e))?, &mut w)
            .map_err(|e| Error::io(&commands, e))?;
        w.sync_all().map_err(|e| Error::io(&commands, e))?;
        let image = self.file("image", generation);
        write_image(sim, &image)?;
        let mut sessions = self.saved.as_ref().map_or_else(Vec::new, |m| m.sessions.clone());
        sessions.push(log.commands);
        let manifest = Manifest {
            format: FORMAT.into(),
            generation,
            precondition: sim.preconditioned().map(|p| p.to_string()),
            sessions,
            config: sim.config().to_toml(),
        };
        let text = toml::to_string(&manifest).expect("manifest serializes");
        let tmp = self.dir.join("state.toml.partial");
        std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
        File::open(&tmp).and_then(|f| f.sync_all()).map_err(|e| Error::io(&tmp, e))?;
        let path = self.dir.join(MANIFEST);
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        if let Some(g) = previous_generation {
            let _ = std::fs::remove_file(self.file("commands", g));
            let _ = std::fs::remove_file(self.file("image", g));
        }
        let _ = std::fs::remove_file(&log.path);
        Ok(())
    }

    fn file(&self, what: &str, generation: u64) -> PathBuf {
        self.dir.join(format!("{what}-{generation}.bin"))
    }
}

/// The host commands of the session being served, as they are submitted.
pub struct SessionLog {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    commands: u64,
    error: Option<std::io::Error>,
}

impl SessionLog {
    pub fn push(&mut self, cmd: &HostCmd, failed: bool) {
        if let Some(out) = &mut self.out {
            if let Err(e) = out.write_all(&encode(cmd, failed)) {
                self.error.get_or_insert(e);
            }
            self.commands += 1;
        }
    }
}

fn op_code(op: Op) -> u8 {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Trim => 2,
        Op::Flush => 3,
    }
}

fn encode(cmd: &HostCmd, failed: bool) -> [u8; RECORD_BYTES] {
    let mut r = [0u8; RECORD_BYTES];
    r[0] = op_code(cmd.op) | if failed { FAILED } else { 0 };
    r[1..9].copy_from_slice(&cmd.time.0.to_le_bytes());
    r[9..17].copy_from_slice(&cmd.start.0.to_le_bytes());
    r[17..25].copy_from_slice(&cmd.sectors.to_le_bytes());
    r
}

fn decode(r: &[u8; RECORD_BYTES]) -> Option<(HostCmd, bool)> {
    let op = [Op::Read, Op::Write, Op::Trim, Op::Flush].into_iter().find(|&op| op_code(op) == r[0] & !FAILED)?;
    let u = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8 bytes"));
    Some((
        HostCmd { time: SimTime(u(1)), op, start: Sector(u(9)), sectors: u(17), continued: false },
        r[0] & FAILED != 0,
    ))
}

/// The logical contents of `sim` as a sparse file: pages that read as
/// zeros are holes.
fn write_image(sim: &Simulation, path: &Path) -> Result<()> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let page = sim.config().geometry.page_size as u64;
    let pages = sim.logical_sectors() * SECTOR_BYTES / page;
    for lpn in 0..pages {
        if let Some(data) = sim.page_contents(lpn as u32).filter(|d| d.iter().any(|&b| b != 0)) {
            file.write_all_at(&data, lpn * page).map_err(|e| Error::io(path, e))?;
        }
    }
    file.set_len(sim.logical_sectors() * SECTOR_BYTES).map_err(|e| Error::io(path, e))?;
    file.sync_all().map_err(|e| Error::io(path, e))
}

/// The first key whose value differs between two configurations' TOML.
fn config_difference(saved: &str, here: &str) -> String {
    fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<(String, String)>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    flatten(&key, v, out);
                }
            }
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let parse = |s: &str| {
        let mut out = Vec::new();
        if let Ok(t) = s.parse::<toml::Table>() {
            flatten("", &toml::Value::Table(t), &mut out);
        }
        out
    };
    let (a, b) = (parse(saved), parse(here));
    for (key, value) in &a {
        match b.iter().find(|(k, _)| k == key) {
            Some((_, v)) if v == value => {}
            Some((_, v)) => return format!("{key} is {value} there, {v} here"),
            None => return format!("{key} is {value} there, absent here"),
        }
    }
    match b.iter().find(|(k, _)| !a.iter().any(|(ka, _)| ka == k)) {
        Some((key, v)) => format!("{key} is {v} here, absent there"),
        None => "the configurations differ".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let cmd =
            HostCmd { time: SimTime(u64::MAX - 3), op: Op::Trim, start: Sector(1 << 40), sectors: 7, continued: false };
        assert_eq!(decode(&encode(&cmd, true)), Some((cmd, true)));
        let mut r = encode(&cmd, false);
        r[0] = 9;
        assert_eq!(decode(&r), None);
    }

    #[test]
    fn names_the_first_differing_key() {
        let a = "name = \"x\"\n[geometry]\nchannels = 4\n";
        let b = "name = \"x\"\n[geometry]\nchannels = 8\n";
        assert_eq!(config_difference(a, b), "geometry.channels is 4 there, 8 here");
    }
}
