//! Summary statistics of a command stream (`ftlsim trace stats`).

use super::{CmdSource, Op};
use crate::error::Result;
use crate::units::SECTOR_BYTES;
use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceStats {
    pub name: String,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
    /// Lowest start sector of any data command (not flushes).
    pub min_sector: Option<u64>,
    /// Highest end sector (exclusive) of any data command.
    pub max_end_sector: Option<u64>,
    /// Latest arrival time (times start at zero, so this is the span).
    pub span_ns: u64,
    /// Commands arriving earlier than their predecessor.
    pub backwards_timestamps: u64,
    /// Mean size of reads, writes and trims, in bytes (0 if none).
    pub mean_request_bytes: f64,
    pub skipped_lines: u64,
    pub zero_length: u64,
}

/// Reads `src` to the end and summarises it.
pub fn stats(src: &mut dyn CmdSource) -> Result<TraceStats> {
    let mut s = TraceStats { name: src.name().to_string(), ..TraceStats::default() };
    let mut prev = 0u64;
    while let Some(c) = src.next_cmd()? {
        s.requests += 1;
        let bytes = c.sectors.saturating_mul(SECTOR_BYTES);
        match c.op {
            Op::Read => (s.reads, s.read_bytes) = (s.reads + 1, s.read_bytes.saturating_add(bytes)),
            Op::Write => (s.writes, s.write_bytes) = (s.writes + 1, s.write_bytes.saturating_add(bytes)),
            Op::Trim => (s.trims, s.trim_bytes) = (s.trims + 1, s.trim_bytes.saturating_add(bytes)),
            Op::Flush => s.flushes += 1,
        }
        if c.op != Op::Flush {
            s.min_sector = Some(s.min_sector.map_or(c.start.0, |m| m.min(c.start.0)));
            // Saturating: a synthetic source is not bound by the readers' checks.
            let end = c.start.0.saturating_add(c.sectors);
            s.max_end_sector = Some(s.max_end_sector.map_or(end, |m| m.max(end)));
        }
        if c.time.0 < prev {
            s.backwards_timestamps += 1;
        }
        prev = c.time.0;
        s.span_ns = s.span_ns.max(c.time.0);
    }
    let data = s.reads + s.writes + s.trims;
    if data > 0 {
        s.mean_request_bytes = (s.read_bytes as f64 + s.write_bytes as f64 + s.trim_bytes as f64) / data as f64;
    }
    s.skipped_lines = src.skipped_lines();
    s.zero_length = src.zero_length();
    s.backwards_timestamps += src.clamped_timestamps();
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::super::input::testutil::write_file;
    use super::super::{OpenOptions, open};
    use super::*;

    #[test]
    fn summarises() {
        let t = write_file(
            "t.csv",
            b"time_ns,op,sector,sectors\n1000,W,2048,8\n2000,T,64,64\n1900,R,0,1\n2500,F,0,0\n3000,W,0,0\n",
        );
        let mut o = open(&t.path, &OpenOptions::default()).unwrap();
        let s = stats(&mut *o.source).unwrap();
        assert_eq!((s.requests, s.reads, s.writes, s.trims, s.flushes), (4, 1, 1, 1, 1));
        assert_eq!((s.read_bytes, s.write_bytes, s.trim_bytes), (512, 4096, 32768));
        assert_eq!((s.min_sector, s.max_end_sector), (Some(0), Some(2056)));
        assert_eq!((s.span_ns, s.backwards_timestamps, s.zero_length), (1500, 1, 1));
        assert!((s.mean_request_bytes - 37376.0 / 3.0).abs() < 1e-9);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"requests\":4"), "{json}");
    }
}
