//! A file-deletion workload: files written, then deleted, each deletion
//! issuing one TRIM per extent, as ext4 mounted with `discard` does (Son et
//! al.'s Filebench experiment), optionally with whole-file reads and new
//! files written in between (Filebench's delete personality keeps its
//! fileset populated).
//!
//! Spec: `rw=delete,files=1000,filesize=16k-1m,bs=1m,frag=25,iodepth=32`.
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `files` | files created first | 1000 |
//! | `filesize` | size, `16k` or uniform `16k-1m` (multiples of the minimum) | `16k-1m` |
//! | `bs` | largest write or read command | `1m` |
//! | `frag` | percent chance an extent ends early and the allocator goes on elsewhere (a fragmented file system) | 25 |
//! | `recreate` | `1`: every deletion is followed by a new file (a steady fileset) | 0 |
//! | `rwmixread` | percent of operations after creation that read a whole file | 0 |
//! | `ios` | stop after this many commands (required with `recreate=1` or `rwmixread`) | all files deleted |
//! | `iodepth` / `rate` | closed loop (default, depth 1) / open loop at commands per second | `iodepth=1` |
//! | `seed` | PRNG seed | 1 |
//!
//! Model: the logical space is cut into 4 KiB file-system blocks; free
//! space is a set of free extents. A file takes blocks first-fit from the
//! allocator's goal (where the last allocation ended, wrapping at the end),
//! one extent per free run it uses; with `frag` percent chance an extent
//! ends at a random point and the goal jumps to a random block, so files
//! get several scattered extents. A file is written one `bs` command at a time per
//! extent; a deletion picks a live file uniformly and TRIMs each extent (one
//! single-range command per extent, ext4's behaviour); its blocks return to
//! free space, merged with free neighbours. Deterministic for a seed and
//! device capacity.

use super::generate::bounded;
use super::spec::{Arrival, ArrivalProcess, BlockSize, parse_bs, parse_percent_int, parse_rate};
use crate::error::{Error, Result};
use crate::trace::{CmdSource, HostCmd, Op, Progress};
use crate::units::{SECTOR_BYTES, Sector, SimTime};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

/// Sectors of one file-system block (4 KiB, ext4's default).
const FS_BLOCK: u64 = 8;

fn err(key: &str, reason: impl Into<String>) -> Error {
    Error::Workload { key: key.to_string(), reason: reason.into() }
}

/// A parsed file-deletion workload; `Display` is its canonical spec.
#[derive(Clone, Debug, PartialEq)]
pub struct DeleteSpec {
    pub files: u64,
    pub filesize: BlockSize,
    pub bs: u64,
    pub frag: u32,
    pub recreate: bool,
    pub rwmixread: u32,
    pub ios: Option<u64>,
    pub arrival: Arrival,
    pub seed: u64,
}

/// True when `spec` names the file-deletion workload (`rw=delete`).
pub fn is_delete(spec: &str) -> bool {
    spec.split(',').any(|t| t.split_once('=').is_some_and(|(k, v)| k.trim() == "rw" && v.trim() == "delete"))
}

impl DeleteSpec {
    pub fn parse(s: &str) -> Result<DeleteSpec> {
        let mut d = DeleteSpec {
            files: 1000,
            filesize: BlockSize::Range { min: 16 << 10, max: 1 << 20 },
            bs: 1 << 20,
            frag: 25,
            recreate: false,
            rwmixread: 0,
            ios: None,
            arrival: Arrival::Closed { queue_depth: 1 },
            seed: 1,
        };
        let (mut iodepth, mut rate, mut process) = (None, None, None);
        let mut seen = Vec::new();
        for token in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (key, v) = token.split_once('=').ok_or_else(|| err(token, "expected key=value"))?;
            let (key, v) = (key.trim(), v.trim());
            if seen.contains(&key) {
                return Err(err(key, "given twice"));
            }
            seen.push(key);
            let count = |what: &str| -> Result<u64> {
                v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| err(key, format!("'{v}' is not {what}")))
            };
            match key {
                "rw" if v == "delete" => {}
                "rw" => return Err(err(key, format!("'{v}': this parser takes rw=delete only"))),
                "files" => d.files = count("a positive number of files")?,
                "filesize" => d.filesize = parse_bs(key, v)?,
                "bs" => match parse_bs(key, v)? {
                    BlockSize::Fixed(b) => d.bs = b,
                    _ => return Err(err(key, "one size: the largest write or read command")),
                },
                "frag" => d.frag = parse_percent_int(key, v)?,
                "recreate" => {
                    d.recreate = match v {
                        "0" => false,
                        "1" => true,
                        _ => return Err(err(key, format!("'{v}' is not 0 or 1"))),
                    }
                }
                "rwmixread" => d.rwmixread = parse_percent_int(key, v)?,
                "ios" => d.ios = Some(count("a positive command count")?),
                "iodepth" => iodepth = Some(count("a queue depth")?.min(u32::MAX as u64) as u32),
                "rate" => rate = Some(parse_rate(key, v)?),
                "arrival" => {
                    process = Some(match v {
                        "constant" => ArrivalProcess::Constant,
                        "poisson" => ArrivalProcess::Poisson,
                        _ => return Err(err(key, format!("'{v}' is not constant or poisson"))),
                    })
                }
                "seed" => d.seed = v.parse().map_err(|_| err(key, format!("'{v}' is not an unsigned 64-bit seed")))?,
                _ => {
                    return Err(err(
                        key,
                        "unknown key for rw=delete (known: files, filesize, bs, frag, recreate, rwmixread, ios, \
                         iodepth, rate, arrival, seed)",
                    ));
                }
            }
        }
        d.arrival = match (iodepth, rate) {
            (Some(_), Some(_)) => return Err(err("rate", "rate (open loop) and iodepth (closed loop) are exclusive")),
            (_, Some(iops)) => Arrival::Open { iops, process: process.unwrap_or(ArrivalProcess::Constant) },
            (q, None) if process.is_none() => Arrival::Closed { queue_depth: q.unwrap_or(1) },
            _ => return Err(err("arrival", "only applies with rate= (open loop)")),
        };
        if (d.recreate || d.rwmixread > 0) && d.ios.is_none() {
            return Err(err("ios", "required with recreate=1 or rwmixread (the run would not end)"));
        }
        Ok(d)
    }
}

impl fmt::Display for DeleteSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = super::spec::Bytes;
        write!(f, "rw=delete,files={}", self.files)?;
        match &self.filesize {
            BlockSize::Fixed(s) => write!(f, ",filesize={}", b(*s))?,
            BlockSize::Range { min, max } => write!(f, ",filesize={}-{}", b(*min), b(*max))?,
            BlockSize::Split(_) => unreachable!("parse_bs never splits"),
        }
        write!(f, ",bs={},frag={},recreate={}", b(self.bs), self.frag, self.recreate as u8)?;
        if self.rwmixread > 0 {
            write!(f, ",rwmixread={}", self.rwmixread)?;
        }
        if let Some(n) = self.ios {
            write!(f, ",ios={n}")?;
        }
        write!(f, ",{},seed={}", self.arrival, self.seed)
    }
}

/// Sectors `start..end` still to issue as `op` commands of at most `chunk`
/// sectors each.
struct Run {
    op: Op,
    start: u64,
    end: u64,
    chunk: u64,
}

/// The command stream of a [`DeleteSpec`] on a device.
pub struct DeleteWorkload {
    name: String,
    spec: DeleteSpec,
    rng: Xoshiro256PlusPlus,
    /// Free extents of file-system blocks: start → length.
    free: BTreeMap<u64, u64>,
    blocks: u64,
    goal: u64,
    /// Each file's extents (start block, blocks); empty once deleted.
    files: Vec<Vec<(u64, u64)>>,
    live: Vec<usize>,
    created: u64,
    /// Commands still to issue, as runs: a file of terabytes is one run,
    /// not billions of queued commands.
    queue: VecDeque<Run>,
    issued: u64,
    period_ns: f64,
    poisson_next: Option<f64>,
}

impl DeleteWorkload {
    pub fn new(spec: &DeleteSpec, capacity_sectors: u64) -> Result<DeleteWorkload> {
        let blocks = capacity_sectors / FS_BLOCK;
        if blocks == 0 {
            return Err(err("files", "the device holds no 4 KiB block"));
        }
        let (period_ns, poisson_next) = match spec.arrival {
            Arrival::Closed { .. } => (0.0, None),
            Arrival::Open { iops, process } => (1e9 / iops, (process == ArrivalProcess::Poisson).then_some(0.0)),
        };
        Ok(DeleteWorkload {
            name: spec.to_string(),
            spec: spec.clone(),
            rng: Xoshiro256PlusPlus::seed_from_u64(spec.seed),
            free: BTreeMap::from([(0, blocks)]),
            blocks,
            goal: 0,
            files: Vec::new(),
            live: Vec::new(),
            created: 0,
            queue: VecDeque::new(),
            issued: 0,
            period_ns,
            poisson_next,
        })
    }

    /// Commands of the creation phase that opens the stream (the files'
    /// writes), once the first deletion has been generated; for a caller
    /// that wants to run creation unmeasured.
    pub fn is_creating(&self) -> bool {
        self.created < self.spec.files
    }

    fn file_blocks(&mut self) -> u64 {
        let bytes = match self.spec.filesize {
            BlockSize::Fixed(b) => b,
            BlockSize::Range { min, max } => min * (1 + bounded(&mut self.rng, max / min)),
            BlockSize::Split(_) => unreachable!("parse_bs never splits"),
        };
        bytes.div_ceil(FS_BLOCK * SECTOR_BYTES).max(1)
    }

    /// Allocates `need` blocks first-fit from the goal; the file's extents.
    fn allocate(&mut self, mut need: u64) -> Result<Vec<(u64, u64)>> {
        let mut extents = Vec::new();
        while need > 0 {
            self.split_at_goal();
            let found = self.free.range(self.goal..).next().or_else(|| self.free.iter().next());
            let Some((&start, &len)) = found else {
                return Err(err(
                    "files",
                    format!(
                        "the file system is full after {} files ({} blocks of 4 KiB); fewer or smaller files",
                        self.created, self.blocks
                    ),
                ));
            };
            let mut take = len.min(need);
            // A fragmented file system: the extent ends early and the next
            // one is looked for elsewhere.
            let jump = bounded(&mut self.rng, 100) < self.spec.frag as u64;
            if jump && take > 1 {
                take = 1 + bounded(&mut self.rng, take);
            }
            self.free.remove(&start);
            if take < len {
                self.free.insert(start + take, len - take);
            }
            match extents.last_mut() {
                Some((s, n)) if *s + *n == start => *n += take,
                _ => extents.push((start, take)),
            }
            need -= take;
            self.goal = if jump { bounded(&mut self.rng, self.blocks) } else { start + take };
        }
        Ok(extents)
    }

    /// When the goal lies inside a free extent, splits it there so the
    /// allocation starts at the goal.
    fn split_at_goal(&mut self) {
        let g = self.goal;
        if let Some((&s, &len)) = self.free.range(..g).next_back() {
            if s + len > g {
                self.free.insert(s, g - s);
                self.free.insert(g, s + len - g);
            }
        }
    }

    /// Returns a file's extent to free space, merged with free neighbours.
    fn release(&mut self, (mut start, mut len): (u64, u64)) {
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            if ps + pl == start {
                self.free.remove(&ps);
                (start, len) = (ps, pl + len);
            }
        }
        if let Some(&nl) = self.free.get(&(start + len)) {
            self.free.remove(&(start + len));
            len += nl;
        }
        self.free.insert(start, len);
    }

    fn push_io(&mut self, op: Op, extents: &[(u64, u64)]) {
        let chunk = (self.spec.bs / SECTOR_BYTES).max(1);
        for &(start, blocks) in extents {
            self.queue.push_back(Run { op, start: start * FS_BLOCK, end: (start + blocks) * FS_BLOCK, chunk });
        }
    }

    fn create(&mut self) -> Result<()> {
        let need = self.file_blocks();
        let extents = self.allocate(need)?;
        self.push_io(Op::Write, &extents);
        self.live.push(self.files.len());
        self.files.push(extents);
        self.created += 1;
        Ok(())
    }

    /// The next file operation's commands into the queue; false at the end.
    fn step(&mut self) -> Result<bool> {
        if self.created < self.spec.files {
            self.create()?;
            return Ok(true);
        }
        if self.live.is_empty() {
            return Ok(false);
        }
        let pick = bounded(&mut self.rng, self.live.len() as u64) as usize;
        if bounded(&mut self.rng, 100) < self.spec.rwmixread as u64 {
            let extents = std::mem::take(&mut self.files[self.live[pick]]);
            self.push_io(Op::Read, &extents);
            self.files[self.live[pick]] = extents;
            return Ok(true);
        }
        let file = self.live.swap_remove(pick);
        let extents = std::mem::take(&mut self.files[file]);
        for &(start, blocks) in &extents {
            let (s, n) = (start * FS_BLOCK, blocks * FS_BLOCK);
            // One TRIM per extent.
            self.queue.push_back(Run { op: Op::Trim, start: s, end: s + n, chunk: n });
            self.release((start, blocks));
        }
        if self.spec.recreate {
            let need = self.file_blocks();
            let extents = self.allocate(need)?;
            self.push_io(Op::Write, &extents);
            self.files[file] = extents;
            self.live.push(file);
        }
        Ok(true)
    }

    fn next_time(&mut self) -> SimTime {
        if self.period_ns == 0.0 {
            return SimTime::ZERO;
        }
        match self.poisson_next.as_mut() {
            None => SimTime((self.issued as f64 * self.period_ns).round() as u64),
            Some(next) => {
                let t = next.round() as u64;
                // Exponential gap by inversion; 1 - u is in (0, 1].
                let u = (rand_core::Rng::next_u64(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64;
                *next += -(1.0 - u).ln() * self.period_ns;
                SimTime(t)
            }
        }
    }
}

impl CmdSource for DeleteWorkload {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        if self.spec.ios.is_some_and(|n| self.issued >= n) {
            return Ok(None);
        }
        while self.queue.is_empty() {
            if !self.step()? {
                return Ok(None);
            }
        }
        let run = self.queue.front_mut().expect("filled above");
        let sectors = run.chunk.min(run.end - run.start);
        let (op, start) = (run.op, run.start);
        run.start += sectors;
        if run.start == run.end {
            self.queue.pop_front();
        }
        let cmd = HostCmd { time: self.next_time(), op, start: Sector(start), sectors, continued: false };
        self.issued += 1;
        Ok(Some(cmd))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn progress(&self) -> Progress {
        match self.spec.ios {
            Some(n) => Progress { done: self.issued, total: Some(n) },
            None => Progress { done: self.created * 2 - self.live.len() as u64, total: Some(self.spec.files * 2) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(spec: &str, cap: u64) -> Vec<HostCmd> {
        let mut w = DeleteWorkload::new(&DeleteSpec::parse(spec).unwrap(), cap).unwrap();
        std::iter::from_fn(|| w.next_cmd().unwrap()).collect()
    }

    /// Found by fuzzing (`fuzz/regressions/specs/delete-huge-file`): a
    /// file's writes were queued as commands all at once, so a 47 TiB file
    /// took 1.5 GB before its first command (and with `bs=4k`, ~400 GB).
    /// They are issued from runs now: a terabyte file in 4 KiB writes
    /// starts at once, its commands in order.
    #[test]
    fn a_huge_file_streams_its_writes() {
        let spec = DeleteSpec::parse("rw=delete,files=10,filesize=47t,bs=4k").unwrap();
        let mut w = DeleteWorkload::new(&spec, 1 << 40).unwrap();
        for i in 0..100_000u64 {
            let c = w.next_cmd().unwrap().unwrap();
            assert_eq!((c.op, c.start.0, c.sectors), (Op::Write, i * 8, 8));
        }
        assert!(w.queue.len() <= 1, "{} runs queued", w.queue.len());
    }

    #[test]
    fn every_written_block_is_trimmed_once_and_extents_do_not_overlap() {
        let cap = 1 << 20; // 512 MiB
        let cmds = all("rw=delete,files=300,filesize=16k-1m,frag=40,seed=3", cap);
        let mut written = vec![0u8; (cap / FS_BLOCK) as usize];
        let mut trims = 0;
        for c in &cmds {
            assert!(c.end().0 <= cap && c.start.0 % FS_BLOCK == 0 && c.sectors % FS_BLOCK == 0);
            for b in c.start.0 / FS_BLOCK..c.end().0 / FS_BLOCK {
                let w = &mut written[b as usize];
                match c.op {
                    Op::Write => {
                        assert_eq!(*w, 0, "block {b} written twice");
                        *w = 1;
                    }
                    Op::Trim => {
                        assert_eq!(*w, 1, "block {b} trimmed but not written");
                        *w = 2;
                    }
                    _ => panic!("no reads asked for"),
                }
            }
            trims += (c.op == Op::Trim) as u64;
        }
        assert!(written.iter().all(|&w| w != 1), "every file deleted");
        // Fragmentation gives files several extents: more TRIMs than files.
        assert!(trims > 300, "{trims} TRIMs for 300 files");
        assert_eq!(all("rw=delete,files=300,filesize=16k-1m,frag=40,seed=3", cap), cmds, "deterministic");
        assert_ne!(all("rw=delete,files=300,filesize=16k-1m,frag=40,seed=4", cap), cmds);
    }

    #[test]
    fn churn_keeps_the_fileset_and_mixes_reads() {
        let cmds = all("rw=delete,files=50,filesize=64k,bs=16k,recreate=1,rwmixread=30,ios=5000", 1 << 18);
        assert_eq!(cmds.len(), 5000);
        let count = |op| cmds.iter().filter(|c| c.op == op).count();
        assert!(count(Op::Read) > 500 && count(Op::Trim) > 100 && count(Op::Write) > 1000);
        assert!(cmds.iter().filter(|c| c.op != Op::Trim).all(|c| c.sectors <= 32));
    }

    #[test]
    fn specs_round_trip_and_bad_keys_are_named() {
        let s = DeleteSpec::parse("rw=delete,files=10,filesize=4k-64k,rate=1k,seed=9").unwrap();
        assert_eq!(DeleteSpec::parse(&s.to_string()).unwrap(), s);
        for (spec, key) in [
            ("rw=delete,files=0", "files"),
            ("rw=delete,frag=101", "frag"),
            ("rw=delete,recreate=1", "ios"),
            ("rw=delete,bogus=1", "bogus"),
            ("rw=delete,iodepth=4,rate=10", "rate"),
        ] {
            let e = DeleteSpec::parse(spec).unwrap_err().to_string();
            assert!(e.starts_with(&format!("workload: {key}:")), "{spec}: {e}");
        }
        let e = DeleteWorkload::new(&DeleteSpec::parse("rw=delete,files=100,filesize=1m").unwrap(), 8 * 1024)
            .and_then(|mut w| std::iter::from_fn(|| w.next_cmd().transpose()).collect::<Result<Vec<_>>>())
            .unwrap_err()
            .to_string();
        assert!(e.contains("file system is full"), "{e}");
    }
}
