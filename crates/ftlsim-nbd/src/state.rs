//! `ftlsim serve --state DIR`: a durable drive. Everything a client
//! flushed survives the server being killed, and a restart serves the
//! drive exactly as it was (same data, same FTL and flash state).
//!
//! The FTL and flash state is not serialized structure by structure. The
//! simulation is deterministic, so the state is the drive's configuration,
//! its preconditioning and every host command it was given, with the
//! simulated time each was issued at: replaying them rebuilds the same
//! mapping, blocks, wear, caches and TRIM lists, for every FTL alike. Data
//! needs no history: replaying each checkpointed write with the contents
//! its sectors hold at the checkpoint gives every sector its contents then
//! (a later write rewrites the sectors it covers, a later TRIM zeroes
//! them), so a checkpoint keeps one image of the logical space.
//!
//! `DIR` holds:
//! - `state.toml`: format, configuration, preconditioning, the checkpoint
//!   number and the count and CRC-32 of the checkpointed commands;
//! - `commands.bin`: one 25-byte head per checkpointed command
//!   ([`crate::journal::encode_head`]), in order, appended at each
//!   checkpoint;
//! - `image.bin` and `image.sums`: the contents at the checkpoint of every
//!   page a client changed (the rest hold zeros: preconditioning rebuilds
//!   their contents) and a checksum per page ([`crate::image`]);
//! - `journal.bin`: the commands since, with their data
//!   ([`crate::journal`]), synced on every FLUSH and FUA;
//! - `drive-N.snap`: the drive's whole state (flash, controller, FTL;
//!   [`Simulation::save_state`]) after the first N checkpointed commands,
//!   in the format of [`ftlsim::snapshot`], keyed by this build, the drive
//!   and the CRC-32 of those commands;
//! - `lock`: held (`flock`) by the server using the directory, holding its
//!   pid, so two servers cannot share it.
//!
//! A checkpoint (every `--checkpoint-mib` of journal, and at shutdown)
//! appends the journal's heads to `commands.bin`, writes the changed pages
//! into the image, replaces `state.toml` atomically (the commit), then
//! starts an empty journal. A kill at any step leaves the previous
//! checkpoint and its journal, which load as before.
//!
//! Loading starts from the newest saved state and replays only the
//! checkpointed commands after it, then the journal; the data come from the
//! image (every page's contents at the checkpoint put where the saved state
//! maps it: the replayed writes bring each sector they cover to its
//! checkpointed contents anyway). A checkpoint saves the state when the
//! commands since the last save reach [`SAVE_EVERY_COMMANDS`] or the last
//! state's size over [`SAVE_BYTES_PER_COMMAND`] (so saving costs at most
//! that many bytes a command and replay is bounded), and always at
//! shutdown and at a new drive's first checkpoint (its preconditioning is
//! then never recomputed). Without a usable state (none saved yet, another
//! build of ftlsim, a damaged file, an FTL whose state cannot be saved)
//! loading replays the whole history from the configuration, some 25 bytes
//! a command, and says why.

use crate::image::Image;
use crate::journal::{self, Entry, FAILED, HEAD_BYTES, Journal, Tail};
use ftlsim::trace::{HostCmd, Op};
use ftlsim::units::SECTOR_BYTES;
use ftlsim::{Error, Precondition, Result, Simulation};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

const FORMAT: &str = "ftlsim-state-2";
const MANIFEST: &str = "state.toml";
const COMMANDS: &str = "commands.bin";
const JOURNAL: &str = "journal.bin";
const LOCK: &str = "lock";

/// Commands replayed on load at most, before a checkpoint saves the drive's state...
pub const SAVE_EVERY_COMMANDS: u64 = 1 << 16;
/// ...or more, for a drive whose state is large: its size over this.
pub const SAVE_BYTES_PER_COMMAND: u64 = 64;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    /// Checkpoints taken; the journal follows the last one.
    checkpoint: u64,
    /// Heads in `commands.bin`, and the CRC-32 of those bytes.
    commands: u64,
    commands_crc: u32,
    /// `Precondition`'s text form, when the drive was conditioned.
    precondition: Option<String>,
    /// The drive's full configuration (`ftlsim config show` form).
    config: String,
    /// The newest saved state (`drive-N.snap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    saved: Option<SavedAt>,
}

/// Where a saved state stands in the command history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct SavedAt {
    /// Checkpointed commands it follows, and their CRC-32.
    commands: u64,
    commands_crc: u32,
    /// Its file's size, for pacing the next save.
    bytes: u64,
}

impl SavedAt {
    fn path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("drive-{}.snap", self.commands))
    }

    fn key(&self, sim: &Simulation, m: &Manifest) -> String {
        ftlsim::snapshot::build_key(
            sim.config(),
            &format!(
                "serve --state: after {} commands of CRC-32 {:08x}, preconditioned {:?}",
                self.commands, self.commands_crc, m.precondition
            ),
        )
    }
}

/// A state directory, locked for this process.
pub struct StateDir {
    dir: PathBuf,
    lock: File,
    saved: Option<Manifest>,
}

/// How to attach a drive to its state directory.
#[derive(Clone, Copy, Debug)]
pub struct Attach {
    /// Cut a damaged journal at the damage instead of refusing to load.
    pub recover: bool,
    /// Journal bytes between checkpoints.
    pub checkpoint_bytes: u64,
    /// Checkpointed commands between saves of the drive's state (at a
    /// checkpoint); `None`: the rule in the module's doc.
    pub save_every: Option<u64>,
}

impl Default for Attach {
    fn default() -> Attach {
        Attach { recover: false, checkpoint_bytes: 256 << 20, save_every: None }
    }
}

fn bad(file: &Path, reason: impl std::fmt::Display) -> Error {
    Error::config("--state", format!("{}: {reason}", file.display()))
}

impl StateDir {
    /// Opens `dir` (created if missing) and locks it; a directory without
    /// a saved state is a new drive's.
    pub fn open(dir: &Path) -> Result<StateDir> {
        if dir.exists() && !dir.is_dir() {
            return Err(bad(dir, "is not a directory"));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let lock = lock(dir)?;
        let path = dir.join(MANIFEST);
        let saved = match std::fs::read_to_string(&path) {
            Ok(text) => {
                // The format first: another version's fields would only confuse.
                let table: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(&path, e.message()))?;
                match table.get("format").and_then(toml::Value::as_str) {
                    Some(FORMAT) => {}
                    Some(other) => {
                        return Err(bad(
                            &path,
                            format!(
                                "format '{other}' is not {FORMAT}; serve it with the ftlsim that wrote it, or use a \
                                 new --state directory"
                            ),
                        ));
                    }
                    None => return Err(bad(&path, format!("no format = \"{FORMAT}\": not an ftlsim state"))),
                }
                Some(toml::from_str::<Manifest>(&text).map_err(|e| bad(&path, e.message()))?)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(path, e)),
        };
        Ok(StateDir { dir: dir.to_path_buf(), lock, saved })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn is_saved(&self) -> bool {
        self.saved.is_some()
    }

    /// Makes `sim` the directory's drive: a saved drive is rebuilt in it
    /// (a fresh simulation of the same configuration, refused naming the
    /// first difference if not); a new drive's first checkpoint is `sim`
    /// as it is. Starts a serving session: time and counters at zero.
    pub fn attach(self, sim: &mut Simulation, how: Attach, progress: &mut dyn FnMut(u64, u64)) -> Result<Durable> {
        let page_bytes = sim.config().geometry.page_size as u64;
        let bytes = sim.logical_sectors() * SECTOR_BYTES;
        let pages = bytes.div_ceil(page_bytes);
        let journal_path = self.dir.join(JOURNAL);
        let mut d = match self.saved.clone() {
            Some(m) => self.load(sim, m, how, progress)?,
            None => {
                let image = Image::create(&self.dir, bytes, page_bytes)?;
                let commands = self.dir.join(COMMANDS);
                File::create(&commands).and_then(|f| f.sync_all()).map_err(|e| Error::io(&commands, e))?;
                let journal = Journal::create(&journal_path, 0).map_err(|e| Error::io(&journal_path, e))?;
                let mut manifest = Manifest {
                    format: FORMAT.into(),
                    checkpoint: 0,
                    commands: 0,
                    commands_crc: 0,
                    precondition: sim.preconditioned().map(|p| p.to_string()),
                    config: sim.config().to_toml(),
                    saved: None,
                };
                if manifest.precondition.is_some() {
                    // Loading then never preconditions again.
                    manifest.saved = save_state(&self.dir, sim, &manifest, 0, 0);
                }
                write_manifest(&self.dir, &manifest)?;
                self.durable(manifest, image, journal, vec![0; pages.div_ceil(64) as usize], page_bytes)
            }
        };
        d.next_checkpoint = d.journal.bytes() + how.checkpoint_bytes;
        d.checkpoint_bytes = how.checkpoint_bytes;
        d.save_every = how.save_every;
        sim.restart_measurement()?;
        d.journal.session();
        Ok(d)
    }

    fn durable(self, manifest: Manifest, image: Image, journal: Journal, dirty: Vec<u64>, page_bytes: u64) -> Durable {
        Durable {
            dir: self.dir,
            _lock: self.lock,
            manifest,
            image,
            journal,
            dirty,
            page_bytes,
            checkpoint_bytes: 0,
            save_every: None,
            next_checkpoint: 0,
            broken: None,
            notices: Vec::new(),
        }
    }

    fn load(
        self,
        sim: &mut Simulation,
        mut m: Manifest,
        how: Attach,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Durable> {
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
        // `ftlsim-state-2` names the mode (`mode=fast|timed|functional`) the drive was conditioned in.
        let precondition =
            m.precondition.as_deref().map(str::parse::<Precondition>).transpose().map_err(|e| bad(&manifest, e))?;
        let page_bytes = sim.config().geometry.page_size as u64;
        let bytes = sim.logical_sectors() * SECTOR_BYTES;
        let image = Image::open(&self.dir, bytes, page_bytes, m.checkpoint)?;
        let mut notices = Vec::new();
        let from = match self.load_state(sim, &m, precondition, &image)? {
            Ok(at) => at,
            Err(why) => {
                notices.push(format!("{why}; replaying all {} checkpointed commands", m.commands));
                // So the next checkpoint saves a state this build can use.
                m.saved = None;
                if let Some(p) = precondition {
                    sim.precondition(p)?;
                }
                SavedAt { commands: 0, commands_crc: 0, bytes: 0 }
            }
        };
        let mut replay = Replay { data: Vec::new(), out: Vec::new(), done: 0 };
        let commands = self.dir.join(COMMANDS);
        replay.commands(sim, &commands, &m, from, &image, progress)?;
        let journal_path = self.dir.join(JOURNAL);
        let mut dirty = vec![0u64; bytes.div_ceil(page_bytes).div_ceil(64) as usize];
        let journal = match journal_state(&journal_path, m.checkpoint, how.recover)? {
            JournalState::Replay => {
                let (scan, notice) = replay.journal(sim, &journal_path, &mut dirty, page_bytes, how.recover)?;
                notices.extend(notice);
                Journal::append(&journal_path, scan.valid_bytes).map_err(|e| Error::io(&journal_path, e))?
            }
            JournalState::Fresh(notice) => {
                notices.push(notice);
                Journal::create(&journal_path, m.checkpoint).map_err(|e| Error::io(&journal_path, e))?
            }
        };
        let mut d = self.durable(m, image, journal, dirty, page_bytes);
        d.notices = notices;
        Ok(d)
    }

    /// The newest saved state loaded into `sim` with the image's data, and
    /// where it stands; else (`sim` as newly built) why not.
    fn load_state(
        &self,
        sim: &mut Simulation,
        m: &Manifest,
        precondition: Option<Precondition>,
        image: &Image,
    ) -> Result<std::result::Result<SavedAt, String>> {
        let Some(at) = m.saved else {
            return Ok(Err("no saved state yet".into()));
        };
        let path = at.path(&self.dir);
        match sim.load_state(&path, &at.key(sim, m), precondition) {
            Ok(true) => {}
            Ok(false) => return Ok(Err(format!("{} is missing", path.display()))),
            Err(why) => return Ok(Err(format!("{}: not used ({why})", path.display()))),
        }
        let mut page = vec![0u8; image.page_bytes() as usize];
        for lpn in image.data_pages() {
            image.read_at(&mut page, lpn * image.page_bytes())?;
            sim.restore_page(lpn as u32, &page)?;
        }
        Ok(Ok(at))
    }
}

/// Saves `sim`'s whole state as the state after the first `commands`
/// checkpointed commands (CRC-32 `crc`); `None`, with a line on stderr,
/// when it cannot (the drive then loads by replaying more).
fn save_state(dir: &Path, sim: &mut Simulation, m: &Manifest, commands: u64, crc: u32) -> Option<SavedAt> {
    if sim.state_unsaveable().is_some() {
        return None;
    }
    let mut at = SavedAt { commands, commands_crc: crc, bytes: 0 };
    let path = at.path(dir);
    let key = at.key(sim, m);
    let saved = sim.save_state(&path, &key).and_then(|()| {
        at.bytes = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
        Ok(at)
    });
    match saved {
        Ok(at) => Some(at),
        Err(e) => {
            eprintln!("ftlsim serve: saving the drive's state failed (loading will replay more): {e}");
            None
        }
    }
}

/// Removes the saved states other than `keep`'s (after a commit names it).
fn remove_old_states(dir: &Path, keep: Option<SavedAt>) {
    let keep = keep.map(|at| at.path(dir));
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("drive-") && name.ends_with(".snap") && Some(e.path()) != keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Takes `DIR/lock`, or says which process holds it.
fn lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK);
    let mut f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    // SAFETY: flock on an open descriptor has no memory effects.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::WouldBlock {
            return Err(Error::io(&path, e));
        }
        let mut holder = String::new();
        let _ = f.read_to_string(&mut holder);
        let holder = match holder.trim() {
            "" => "a process that has not written its pid yet".to_string(),
            pid => format!("pid {pid}"),
        };
        return Err(bad(
            dir,
            format!(
                "is in use by another ftlsim serve ({holder}, holding {}); stop it or use another --state",
                path.display()
            ),
        ));
    }
    f.set_len(0)
        .and_then(|_| f.write_all(std::process::id().to_string().as_bytes()))
        .map_err(|e| Error::io(&path, e))?;
    Ok(f)
}

enum JournalState {
    Replay,
    /// Start an empty journal, for this reason.
    Fresh(String),
}

fn journal_state(path: &Path, checkpoint: u64, recover: bool) -> Result<JournalState> {
    if !path.exists() {
        if !recover {
            return Err(bad(
                path,
                "is missing: the commands since the last checkpoint are lost; `ftlsim serve --recover` serves the \
                 drive as of that checkpoint",
            ));
        }
        return Ok(JournalState::Fresh(format!(
            "--recover: {} was missing; serving the last checkpoint",
            path.display()
        )));
    }
    match journal::header(path) {
        Ok(c) if c == checkpoint => Ok(JournalState::Replay),
        // The server was killed after committing a checkpoint, before starting its new journal.
        Ok(c) if c < checkpoint => Ok(JournalState::Fresh(format!(
            "{} (after checkpoint {c}) is already in checkpoint {checkpoint}; starting a new journal",
            path.display()
        ))),
        Ok(c) => Err(bad(path, format!("follows checkpoint {c}, but state.toml is at checkpoint {checkpoint}"))),
        Err(e) if recover => Ok(JournalState::Fresh(format!("--recover: {e}; serving the last checkpoint"))),
        Err(e) => Err(Error::config(
            "--state",
            format!("{e}; `ftlsim serve --recover` drops the journal and serves the last checkpoint"),
        )),
    }
}

/// Replays recorded commands into a simulation.
struct Replay {
    data: Vec<u8>,
    out: Vec<u8>,
    /// Commands replayed so far.
    done: u64,
}

impl Replay {
    /// `commands.bin`: each write with the image's contents.
    fn commands(
        &mut self,
        sim: &mut Simulation,
        path: &Path,
        m: &Manifest,
        from: SavedAt,
        image: &Image,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let want = m.commands * HEAD_BYTES as u64;
        // Longer: an interrupted checkpoint appended to it; the rest is ignored.
        if len < want {
            return Err(bad(
                path,
                format!("holds {len} bytes; {MANIFEST} lists {} commands of {HEAD_BYTES} bytes", m.commands),
            ));
        }
        let start = from.commands * HEAD_BYTES as u64;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        reader.seek(SeekFrom::Start(start)).map_err(|e| Error::io(path, e))?;
        // The saved state's key holds the CRC of the commands before it.
        let mut crc = crc32fast::Hasher::new_with_initial(from.commands_crc);
        let mut rec = [0u8; HEAD_BYTES];
        for _ in from.commands..m.commands {
            reader.read_exact(&mut rec).map_err(|e| Error::io(path, e))?;
            crc.update(&rec);
        }
        if crc.finalize() != m.commands_crc {
            return Err(bad(
                path,
                format!(
                    "its commands {}..{} do not match their checksum in {MANIFEST}: the file is damaged; the \
                     drive cannot be rebuilt without it (restore the directory from a backup, or use a new --state)",
                    from.commands, m.commands
                ),
            ));
        }
        reader.seek(SeekFrom::Start(start)).map_err(|e| Error::io(path, e))?;
        for index in from.commands..m.commands {
            reader.read_exact(&mut rec).map_err(|e| Error::io(path, e))?;
            let entry = match journal::decode_head(&rec) {
                Err(why) => return Err(bad(path, format!("record {index}: {why}"))),
                Ok(None) => Entry::Session,
                Ok(Some((cmd, flags))) => Entry::Command { cmd, failed: flags & FAILED != 0, data: None },
            };
            self.apply(sim, path, index, entry, Some(image))?;
            if index % (1 << 16) == 0 {
                progress(index - from.commands, m.commands - from.commands);
            }
        }
        progress(m.commands - from.commands, m.commands - from.commands);
        Ok(())
    }

    /// The journal, up to its end or its first bad record (dropped with a
    /// notice when torn, or when damaged and `recover`; else an error).
    fn journal(
        &mut self,
        sim: &mut Simulation,
        path: &Path,
        dirty: &mut [u64],
        page_bytes: u64,
        recover: bool,
    ) -> Result<(journal::Scan, Option<String>)> {
        let mut index = 0u64;
        let scan = journal::scan(path, &mut |entry| {
            if let Entry::Command { cmd, .. } = &entry {
                if matches!(cmd.op, Op::Write | Op::Trim) {
                    mark(dirty, page_bytes, cmd);
                }
            }
            self.apply(sim, path, index, entry, None)?;
            index += 1;
            Ok(())
        })?;
        let notice = match &scan.tail {
            Tail::Clean => None,
            Tail::Torn { offset, bytes } => Some(format!(
                "{}: dropped an incomplete last record ({bytes} bytes at byte {offset}): the server was stopped while \
                 writing it, before any FLUSH acknowledged it",
                path.display()
            )),
            Tail::Damaged { record, offset, reason, later, bytes } if recover => Some(format!(
                "--recover: {}: record {record} at byte {offset} is damaged ({reason}); dropped it and the {later} \
                 command(s) after it ({bytes} bytes); the drive is as it was after the {record} command(s) before it",
                path.display()
            )),
            Tail::Damaged { record, offset, reason, later, .. } => {
                return Err(bad(
                    path,
                    format!(
                        "record {record} at byte {offset} is damaged ({reason}); `ftlsim serve --recover` cuts the \
                         journal there, dropping it and the {later} command(s) after it"
                    ),
                ));
            }
        };
        Ok((scan, notice))
    }

    /// One recorded entry; a write's data is `entry`'s, else the image's
    /// (checkpointed commands), else zeros.
    fn apply(
        &mut self,
        sim: &mut Simulation,
        path: &Path,
        index: u64,
        entry: Entry,
        image: Option<&Image>,
    ) -> Result<()> {
        let (cmd, failed, data) = match entry {
            Entry::Session => return sim.restart_measurement(),
            Entry::Command { cmd, failed, data } => (cmd, failed, data),
        };
        // Checked before any buffer is sized by it: a damaged record must not allocate wildly.
        if cmd.start.0.checked_add(cmd.sectors).is_none_or(|end| end > sim.logical_sectors()) {
            return Err(bad(
                path,
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
                let data = match (data, image) {
                    (Some(d), _) => d,
                    (None, Some(image)) => {
                        self.data.resize(bytes, 0);
                        image.read_at(&mut self.data, cmd.start.0 * SECTOR_BYTES)?;
                        &self.data
                    }
                    (None, None) => {
                        self.data.clear();
                        self.data.resize(bytes, 0);
                        &self.data
                    }
                };
                sim.submit(&cmd, cmd.time, Some(data), None)
            }
            Op::Read => {
                self.out.resize(bytes, 0);
                sim.submit(&cmd, cmd.time, None, Some(&mut self.out))
            }
            Op::Trim | Op::Flush => sim.submit(&cmd, cmd.time, None, None),
        };
        if result.is_err() != failed {
            let what = result.err().map_or("succeeded".to_string(), |e| format!("failed: {e}"));
            return Err(bad(
                path,
                format!("replay diverged at record {index} ({:?} of sector {}): it {what}", cmd.op, cmd.start.0),
            ));
        }
        self.done += 1;
        Ok(())
    }
}

/// Marks the pages `cmd` changes as changed since the checkpoint.
fn mark(dirty: &mut [u64], page_bytes: u64, cmd: &HostCmd) {
    let spp = page_bytes / SECTOR_BYTES;
    for p in cmd.start.0 / spp..(cmd.start.0 + cmd.sectors).div_ceil(spp) {
        dirty[(p / 64) as usize] |= 1 << (p % 64);
    }
}

fn write_manifest(dir: &Path, m: &Manifest) -> Result<()> {
    let text = toml::to_string(m).expect("manifest serializes");
    let tmp = dir.join("state.toml.partial");
    let path = dir.join(MANIFEST);
    File::create(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|_| f.sync_all()))
        .map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    journal::sync_dir(&path).map_err(|e| Error::io(dir, e))
}

/// A drive attached to its state directory: journals every command,
/// syncs on FLUSH, checkpoints.
pub struct Durable {
    dir: PathBuf,
    /// Held while the drive is served: the directory's lock.
    _lock: File,
    manifest: Manifest,
    image: Image,
    journal: Journal,
    /// One bit per logical page changed since the checkpoint.
    dirty: Vec<u64>,
    page_bytes: u64,
    checkpoint_bytes: u64,
    save_every: Option<u64>,
    /// Journal size at which the next checkpoint is due.
    next_checkpoint: u64,
    /// Why nothing more can be made durable (a checkpoint failed halfway).
    broken: Option<String>,
    notices: Vec<String>,
}

impl Durable {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// What loading dropped or repaired, one line each.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// Journals a command as it was submitted.
    pub fn record(&mut self, cmd: &HostCmd, failed: bool, data: Option<&[u8]>) {
        self.journal.command(cmd, failed, data);
        if matches!(cmd.op, Op::Write | Op::Trim) {
            mark(&mut self.dirty, self.page_bytes, cmd);
        }
    }

    /// Makes everything journalled so far durable (FLUSH, FUA).
    pub fn sync(&mut self) -> Result<()> {
        if let Some(why) = &self.broken {
            return Err(Error::io(self.journal.path(), std::io::Error::other(why.clone())));
        }
        self.journal.sync().map_err(|e| Error::io(self.journal.path(), e))
    }

    /// Whether the journal has grown by `--checkpoint-mib` since the last checkpoint.
    pub fn checkpoint_due(&self) -> bool {
        self.journal.bytes() >= self.next_checkpoint
    }

    /// Takes a checkpoint of `sim`, which must be the drive every journalled
    /// command went to; `closing`: the last before the server stops (the
    /// drive's state is then saved whenever commands came since the last).
    pub fn checkpoint(&mut self, sim: &mut Simulation, closing: bool) -> Result<()> {
        self.sync()?;
        let mut next = self.manifest.clone();
        next.checkpoint += 1;
        let (added, crc) = self.append_commands()?;
        next.commands += added;
        next.commands_crc = crc;
        let lpns: Vec<u64> = (0..self.dirty.len() as u64 * 64)
            .filter(|&p| self.dirty[(p / 64) as usize] & (1 << (p % 64)) != 0)
            .collect();
        let contents = |lpn: u64| sim.page_contents(lpn as u32).filter(|d| d.iter().any(|&b| b != 0));
        self.image.update(&self.dir, next.checkpoint, &lpns, &contents)?;
        let last = self.manifest.saved.map_or((0, 0), |at| (at.commands, at.bytes));
        let since = next.commands - last.0;
        if since > 0
            && (closing || since >= self.save_every.unwrap_or(SAVE_EVERY_COMMANDS.max(last.1 / SAVE_BYTES_PER_COMMAND)))
        {
            next.saved = save_state(&self.dir, sim, &next, next.commands, next.commands_crc).or(next.saved);
        }
        write_manifest(&self.dir, &next)?;
        if next.saved != self.manifest.saved {
            remove_old_states(&self.dir, next.saved);
        }
        self.manifest = next;
        let path = self.dir.join(JOURNAL);
        match Journal::create(&path, self.manifest.checkpoint) {
            Ok(j) => self.journal = j,
            Err(e) => {
                // The old journal is in the checkpoint now: appending to it would be lost.
                let why = format!("starting the journal after checkpoint {} failed: {e}", self.manifest.checkpoint);
                self.broken = Some(why.clone());
                return Err(Error::io(path, std::io::Error::other(why)));
            }
        }
        self.image.committed(&self.dir);
        self.dirty.fill(0);
        self.next_checkpoint = self.journal.bytes() + self.checkpoint_bytes;
        Ok(())
    }

    /// Appends the journal's heads to `commands.bin` (after the
    /// checkpointed ones: whatever an interrupted checkpoint left is cut);
    /// returns how many and the CRC of the whole.
    fn append_commands(&mut self) -> Result<(u64, u32)> {
        let path = self.dir.join(COMMANDS);
        let io = |e| Error::io(&path, e);
        let mut file = File::options().write(true).open(&path).map_err(io)?;
        file.set_len(self.manifest.commands * HEAD_BYTES as u64).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut crc = crc32fast::Hasher::new_with_initial(self.manifest.commands_crc);
        let (mut added, mut write_error) = (0u64, None);
        let scan = journal::scan(self.journal.path(), &mut |entry| {
            let head = match entry {
                Entry::Session => journal::session_head(),
                Entry::Command { cmd, failed, .. } => journal::encode_head(&cmd, if failed { FAILED } else { 0 }),
            };
            if let Err(e) = out.write_all(&head) {
                write_error.get_or_insert(e);
            }
            crc.update(&head);
            added += 1;
            Ok(())
        })?;
        if let Some(e) = write_error {
            return Err(io(e));
        }
        if scan.tail != Tail::Clean {
            return Err(bad(self.journal.path(), format!("changed while being checkpointed: {:?}", scan.tail)));
        }
        out.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)?;
        Ok((added, crc.finalize()))
    }
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
    fn names_the_first_differing_key() {
        let a = "name = \"x\"\n[geometry]\nchannels = 4\n";
        let b = "name = \"x\"\n[geometry]\nchannels = 8\n";
        assert_eq!(config_difference(a, b), "geometry.channels is 4 there, 8 here");
    }

    #[test]
    fn marks_every_page_a_command_touches() {
        let mut dirty = vec![0u64; 2];
        let cmd = |start, sectors| HostCmd {
            time: ftlsim::units::SimTime(0),
            op: Op::Write,
            start: ftlsim::units::Sector(start),
            sectors,
            continued: false,
        };
        mark(&mut dirty, 2048, &cmd(3, 2));
        mark(&mut dirty, 2048, &cmd(250, 12));
        assert_eq!(dirty, vec![0b11 | 1 << 62 | 1 << 63, 0b11]);
    }
}
