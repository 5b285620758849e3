//! The simulated SSD behind the export: NBD commands turned into the
//! library's host commands, simulated time, metrics and the recorded trace.
//!
//! Time. With [`Pace::None`] the server answers as fast as it can and the
//! command stream is simulated as a closed loop at `host.queue_depth`
//! (as `ftlsim run --mode closed` replays a trace): a command is issued
//! when the earliest of the outstanding ones completes. With
//! [`Pace::Realtime`] a command is issued at the wall-clock time it
//! arrived (nanoseconds since the server started), and its reply is held
//! until its simulated completion time has come on the wall clock.
//!
//! What reaches the FTL. READ, WRITE, TRIM and FLUSH map one to one.
//! WRITE_ZEROES writes zeros when NO_HOLE is set (or the FTL ignores
//! TRIM); otherwise it trims the whole pages it covers (trimmed pages read
//! as zeros, the FTL contract) and writes zeros only to partial pages at
//! its ends. Zeros are written in bounded chunks, so a 4 GiB request needs
//! no 4 GiB buffer. FUA is a FLUSH issued when the write completes. Every
//! host command submitted is recorded in the metrics and, with `--record`,
//! in the trace, so replaying the trace gives the FTL the same input.

use crate::state::Durable;
use ftlsim::config::HostMode;
use ftlsim::engine::host::Arrivals;
use ftlsim::report::Metrics;
use ftlsim::trace::{HostCmd, NATIVE_HEADER, Op, write_native_line};
use ftlsim::units::{SECTOR_BYTES, Sector, SimTime};
use ftlsim::{Report, Simulation};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// Bytes of zeros written per host command by WRITE_ZEROES.
const ZERO_CHUNK_BYTES: u64 = 1 << 20;

/// Payload memory kept faulted in ahead of the blocks being programmed:
/// some 60 ms of writes at 1 GB/s, so the helper thread's latency does not
/// matter.
const PREFAULT_AHEAD_BYTES: usize = 64 << 20;

/// When replies are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    None,
    Realtime,
}

/// An NBD command the transmission phase has validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Read,
    Write { fua: bool },
    Trim { fua: bool },
    WriteZeroes { fua: bool, no_hole: bool },
    Flush,
}

/// Counts of NBD commands as received (the report counts host commands).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NbdCounts {
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub write_zeroes: u64,
    pub flushes: u64,
    pub fua: u64,
    pub errors: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
    pub zero_bytes: u64,
    pub connections: u64,
}

pub struct Drive {
    sim: Simulation,
    metrics: Metrics,
    pace: Pace,
    arrivals: Arrivals,
    clock: Instant,
    last_issue: SimTime,
    record: Option<BufWriter<std::fs::File>>,
    record_error: Option<std::io::Error>,
    zeros: Vec<u8>,
    /// The journal and checkpoints of `--state`.
    durable: Option<Durable>,
    pub counts: NbdCounts,
}

impl Drive {
    /// `sim` must store payloads (`nand.store_payloads = true`).
    pub fn new(mut sim: Simulation, pace: Pace, record: Option<&Path>) -> ftlsim::Result<Drive> {
        if !sim.device().array.stores_payloads() {
            return Err(ftlsim::Error::config("nand.store_payloads", "must be true to serve data over NBD"));
        }
        sim.prefault_payloads(PREFAULT_AHEAD_BYTES);
        let record = match record {
            Some(path) => {
                let file = std::fs::File::create(path).map_err(|e| ftlsim::Error::io(path, e))?;
                let mut w = BufWriter::with_capacity(1 << 16, file);
                writeln!(w, "{NATIVE_HEADER}").map_err(|e| ftlsim::Error::io(path, e))?;
                Some(w)
            }
            None => None,
        };
        let qd = sim.config().host.queue_depth;
        Ok(Drive {
            sim,
            metrics: Metrics::default(),
            pace,
            arrivals: Arrivals::new(HostMode::Closed, qd, 1.0),
            clock: Instant::now(),
            last_issue: SimTime::ZERO,
            record,
            record_error: None,
            zeros: vec![0; ZERO_CHUNK_BYTES as usize],
            durable: None,
            counts: NbdCounts::default(),
        })
    }

    pub fn size_bytes(&self) -> u64 {
        self.sim.logical_sectors() * SECTOR_BYTES
    }

    pub fn page_size(&self) -> u32 {
        self.sim.config().geometry.page_size
    }

    pub fn ftl_name(&self) -> &str {
        &self.sim.config().ftl.name
    }

    pub fn config_name(&self) -> &str {
        &self.sim.config().name
    }

    pub fn pace(&self) -> Pace {
        self.pace
    }

    /// The wall-clock instant simulated time zero corresponds to (realtime pacing).
    pub fn clock_origin(&self) -> Instant {
        self.clock
    }

    /// Serves one validated command on `sectors` sectors from `start`;
    /// `data` is a WRITE's payload, `out` a READ's buffer. Returns the
    /// simulated completion time.
    pub fn execute(
        &mut self,
        cmd: Command,
        start: u64,
        sectors: u64,
        data: Option<&[u8]>,
        out: Option<&mut [u8]>,
    ) -> ftlsim::Result<SimTime> {
        let issue = self.issue_time();
        let result = self.dispatch(cmd, issue, Sector(start), sectors, data, out);
        let done = *result.as_ref().unwrap_or(&issue);
        if self.pace == Pace::None {
            self.arrivals.complete(done);
        }
        if result.is_err() {
            self.counts.errors += 1;
        }
        if let Some(d) = self.durable.as_mut().filter(|d| d.checkpoint_due()) {
            // The journal holds everything still: a failed checkpoint loses nothing.
            if let Err(e) = d.checkpoint(&mut self.sim, false) {
                eprintln!("ftlsim serve: checkpoint failed (the journal goes on): {e}");
            }
        }
        result
    }

    fn issue_time(&mut self) -> SimTime {
        let t = match self.pace {
            Pace::None => self.arrivals.issue(&HostCmd {
                time: SimTime::ZERO,
                op: Op::Flush,
                start: Sector(0),
                sectors: 0,
                continued: false,
            }),
            Pace::Realtime => SimTime(self.clock.elapsed().as_nanos() as u64),
        };
        // Several connections share the drive: time never runs backwards.
        self.last_issue = self.last_issue.max(t);
        self.last_issue
    }

    fn dispatch(
        &mut self,
        cmd: Command,
        issue: SimTime,
        start: Sector,
        sectors: u64,
        data: Option<&[u8]>,
        out: Option<&mut [u8]>,
    ) -> ftlsim::Result<SimTime> {
        let bytes = sectors * SECTOR_BYTES;
        let c = &mut self.counts;
        let (done, fua) = match cmd {
            Command::Read => {
                (c.reads, c.read_bytes) = (c.reads + 1, c.read_bytes + bytes);
                (self.submit(Op::Read, issue, start, sectors, None, out)?, false)
            }
            Command::Write { fua } => {
                (c.writes, c.write_bytes) = (c.writes + 1, c.write_bytes + bytes);
                (self.submit(Op::Write, issue, start, sectors, data, None)?, fua)
            }
            Command::Trim { fua } => {
                (c.trims, c.trim_bytes) = (c.trims + 1, c.trim_bytes + bytes);
                (self.submit(Op::Trim, issue, start, sectors, None, None)?, fua)
            }
            Command::WriteZeroes { fua, no_hole } => {
                (c.write_zeroes, c.zero_bytes) = (c.write_zeroes + 1, c.zero_bytes + bytes);
                (self.write_zeroes(issue, start, sectors, no_hole)?, fua)
            }
            Command::Flush => {
                c.flushes += 1;
                (self.submit(Op::Flush, issue, start, 0, None, None)?, false)
            }
        };
        if fua {
            self.counts.fua += 1;
            return self.submit(Op::Flush, done, start, 0, None, None);
        }
        Ok(done)
    }

    fn write_zeroes(&mut self, issue: SimTime, start: Sector, sectors: u64, no_hole: bool) -> ftlsim::Result<SimTime> {
        let spp = self.page_size() as u64 / SECTOR_BYTES;
        let end = start.0 + sectors;
        let (mut zero_from, mut zero_to) = (start.0, end);
        let mut done = issue;
        if !no_hole && self.sim.config().ftl.trim {
            let first = start.0.div_ceil(spp) * spp;
            let last = end / spp * spp;
            if first < last {
                done = self.submit(Op::Trim, issue, Sector(first), last - first, None, None)?;
                done = done.max(self.zero_fill(issue, start.0, first)?);
                (zero_from, zero_to) = (last, end);
            }
        }
        Ok(done.max(self.zero_fill(issue, zero_from, zero_to)?))
    }

    fn zero_fill(&mut self, issue: SimTime, from: u64, to: u64) -> ftlsim::Result<SimTime> {
        let chunk = ZERO_CHUNK_BYTES / SECTOR_BYTES;
        let mut done = issue;
        let mut s = from;
        while s < to {
            let n = chunk.min(to - s);
            let zeros = std::mem::take(&mut self.zeros);
            let r = self.submit(Op::Write, issue, Sector(s), n, Some(&zeros[..(n * SECTOR_BYTES) as usize]), None);
            self.zeros = zeros;
            done = done.max(r?);
            s += n;
        }
        Ok(done)
    }

    fn submit(
        &mut self,
        op: Op,
        issue: SimTime,
        start: Sector,
        sectors: u64,
        data: Option<&[u8]>,
        out: Option<&mut [u8]>,
    ) -> ftlsim::Result<SimTime> {
        let cmd = HostCmd { time: issue, op, start, sectors, continued: false };
        let result = self.sim.submit(&cmd, issue, data, out);
        if let Some(d) = &mut self.durable {
            d.record(&cmd, result.is_err(), data);
            if op == Op::Flush {
                // A FLUSH (or FUA) is answered only once its writes are on disk.
                d.sync()?;
            }
        }
        let done = result?;
        let pages = self.sim.pages_touched(&cmd);
        let queued = self.sim.last_queueing();
        self.metrics.record(op, done - issue, queued, pages, sectors * SECTOR_BYTES, done);
        if let Some(w) = &mut self.record {
            if let Err(e) = write_native_line(w, &cmd) {
                self.record_error.get_or_insert(e);
                self.record = None;
            }
        }
        Ok(done)
    }

    /// Journals every host command from now on (`--state`).
    pub fn make_durable(&mut self, d: Durable) {
        self.durable = Some(d);
    }

    /// Takes a last checkpoint and detaches the state directory.
    pub fn checkpoint_and_detach(&mut self) -> ftlsim::Result<Option<Durable>> {
        let Some(mut d) = self.durable.take() else { return Ok(None) };
        d.checkpoint(&mut self.sim, true)?;
        Ok(Some(d))
    }

    pub fn simulation(&self) -> &Simulation {
        &self.sim
    }

    pub fn into_simulation(self) -> Simulation {
        self.sim
    }

    /// The report so far, in `ftlsim run`'s form.
    pub fn report(&self, source: &str) -> Report {
        let mut r = self.sim.report_from(&self.metrics, self.clock.elapsed().as_secs_f64());
        r.input.source = source.to_string();
        r.input.format = Some("nbd".into());
        r.input.out_of_range_policy = "error".into();
        match self.pace {
            Pace::None => {
                r.input.host_mode = "closed".into();
                r.input.queue_depth = Some(self.sim.config().host.queue_depth);
            }
            Pace::Realtime => r.input.host_mode = "open".into(),
        }
        r
    }

    /// One line of live counters.
    pub fn stats_line(&self) -> String {
        let r = self.sim.report_from(&self.metrics, self.clock.elapsed().as_secs_f64());
        let c = &self.counts;
        format!(
            "nbd: reads {} writes {} trims {} write_zeroes {} flushes {} fua {} errors {} | trimmed {} B | \
             TRIM mean {:.1} us, controller {:.3} ms | WAF {} | GC {} invocations, {} pages copied | sim time {:.3} s",
            c.reads,
            c.writes,
            c.trims,
            c.write_zeroes,
            c.flushes,
            c.fua,
            c.errors,
            c.trim_bytes,
            r.latency_us.trim.mean,
            r.trim.controller_ms,
            r.write_amplification.map_or("-".into(), |w| format!("{w:.3}")),
            r.gc_invocations,
            r.gc_pages_copied,
            r.sim_time_s
        )
    }

    /// Flushes the recorded trace; reports a failure to write it.
    pub fn finish_record(&mut self, path: Option<&Path>) -> ftlsim::Result<()> {
        let name = path.unwrap_or(Path::new("<record>"));
        if let Some(e) = self.record_error.take() {
            return Err(ftlsim::Error::io(name, e));
        }
        if let Some(w) = &mut self.record {
            w.flush().map_err(|e| ftlsim::Error::io(name, e))?;
        }
        Ok(())
    }
}
