//! The workload specification: a fio-like `key=value,...` string, parsed into
//! [`WorkloadSpec`] and printed back in one canonical form.
//!
//! The spec is capacity-independent: percentages are resolved and checked
//! against the device only when a generator is built (see
//! [`generator`](super::generator)). Size suffixes are binary, as with fio's
//! default `kb_base=1024` (`4k` = `4KiB` = `4KB` = 4096 bytes). Only the
//! subset of fio's options that shapes the command stream is understood;
//! anything else is an error rather than silently ignored, so a typo cannot
//! quietly change an experiment.

use crate::error::{Error, Result};
use crate::units::SECTOR_BYTES;
use std::fmt;
use std::str::FromStr;

/// Which commands are issued and whether offsets are sequential or random.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RwMode {
    /// Sequential reads (`rw=read`).
    Read,
    /// Sequential writes (`rw=write`).
    Write,
    /// Sequential mixed reads and writes (`rw=rw` / `readwrite`).
    ReadWrite,
    /// Sequential trims (`rw=trim`).
    Trim,
    RandRead,
    RandWrite,
    /// Random mixed reads and writes (`rw=randrw`).
    RandRw,
    RandTrim,
}

impl RwMode {
    const ALL: [(&'static str, RwMode); 8] = [
        ("read", RwMode::Read),
        ("write", RwMode::Write),
        ("rw", RwMode::ReadWrite),
        ("trim", RwMode::Trim),
        ("randread", RwMode::RandRead),
        ("randwrite", RwMode::RandWrite),
        ("randrw", RwMode::RandRw),
        ("randtrim", RwMode::RandTrim),
    ];

    pub fn is_random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw | RwMode::RandTrim)
    }

    /// Reads and writes mixed according to `rwmixread`.
    pub fn is_mixed(self) -> bool {
        matches!(self, RwMode::ReadWrite | RwMode::RandRw)
    }

    pub fn is_trim(self) -> bool {
        matches!(self, RwMode::Trim | RwMode::RandTrim)
    }

    pub fn as_str(self) -> &'static str {
        RwMode::ALL.iter().find(|(_, m)| *m == self).map_or("?", |(s, _)| s)
    }
}

/// How command sizes are chosen. All sizes are in bytes, multiples of 512.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BlockSize {
    /// Every command has this size (`bs=4k`).
    Fixed(u64),
    /// Uniform over `min, 2*min, ..., max` (`bs=4k-64k`), fio's `bsrange`
    /// rule that sizes are multiples of the minimum.
    Range { min: u64, max: u64 },
    /// Weighted sizes in percent summing to 100 (`bssplit=4k/80:64k/20`).
    Split(Vec<(u64, u32)>),
}

impl BlockSize {
    pub fn min_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { min, .. } => *min,
            BlockSize::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(SECTOR_BYTES),
        }
    }

    pub fn max_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { max, .. } => *max,
            BlockSize::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(SECTOR_BYTES),
        }
    }
}

/// How much work the workload does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Amount {
    /// This many commands (`ios=`).
    Ios(u64),
    /// This many bytes in total (`size=`); the last command is shortened to
    /// land exactly on it.
    Bytes(u64),
}

/// A position or length on the device: a share of its capacity or bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// Percent of the device capacity, in (0, 100].
    Percent(f64),
    Bytes(u64),
}

/// Which blocks of the range random commands address.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AccessDist {
    Uniform,
    /// Zipf with exponent θ over the range's blocks: the rank-k block is hit
    /// with probability ∝ 1/k^θ. Ranks are scattered over the range by an
    /// affine permutation so that popular blocks are not adjacent.
    Zipf {
        theta: f64,
    },
    /// `hot_access` percent of commands go to the hot `hot_space` percent
    /// of the range, the rest uniformly to the remainder; uniform within
    /// each part. The hot set is the range's first slots (a contiguous
    /// prefix), or with `scatter_bytes` the same number of slots cut into
    /// pieces of that many bytes which an affine permutation spreads over
    /// the whole range (`hotcold:A/S:scatter=SIZE`).
    HotCold {
        hot_access: f64,
        hot_space: f64,
        /// Size of the scattered pieces (a page, to keep the number of
        /// distinct hot pages); `None` = one contiguous prefix.
        scatter_bytes: Option<u64>,
    },
}

/// Inter-arrival process of an open-loop workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArrivalProcess {
    /// Exactly `1/iops` between commands.
    Constant,
    /// Exponential inter-arrivals with mean `1/iops`.
    Poisson,
}

/// How commands arrive at the drive; the host layer picks its mode from this.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// `queue_depth` commands outstanding at all times; a new one is issued
    /// when one completes. Generated commands carry time 0.
    Closed { queue_depth: u32 },
    /// Commands arrive at generated times regardless of completions.
    Open { iops: f64, process: ArrivalProcess },
}

/// A parsed synthetic workload. Build one with [`WorkloadSpec::parse`] (or
/// `str::parse`); `Display` prints the canonical spec string, which parses
/// back to an equal spec.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    pub rw: RwMode,
    /// Percent of reads among reads+writes (mixed modes only; else 0/100 by
    /// mode), to 0.01%: the paper traces' 99.9% must leave writes.
    pub rwmixread: f64,
    /// Percent of all commands that are trims (read/write modes only).
    pub trimmix: u32,
    pub bs: BlockSize,
    pub amount: Amount,
    /// Start of the addressed range; `None` = 0.
    pub offset: Option<Extent>,
    /// Length of the addressed range; `None` = the rest of the device after
    /// `offset`.
    pub range: Option<Extent>,
    /// Alignment of every command's start relative to the range start, in
    /// bytes; `None` = the smallest block size.
    pub align: Option<u64>,
    pub dist: AccessDist,
    pub arrival: Arrival,
    pub seed: u64,
}

fn err(key: &str, reason: impl Into<String>) -> Error {
    Error::Workload { key: key.to_string(), reason: reason.into() }
}

/// Parses `4096`, `4k`, `4K`, `4KiB`, `4kb`, `1m`, `8g`, `1t`, `512b` into
/// bytes (binary multiples).
pub(crate) fn parse_bytes(key: &str, v: &str) -> Result<u64> {
    let v = v.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, suffix) = v.split_at(digits);
    if num.is_empty() {
        return Err(err(key, format!("'{v}' is not a size (expected e.g. 4k, 512, 1m)")));
    }
    let n: u64 = num.parse().map_err(|_| err(key, format!("'{num}' is too large")))?;
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        _ => {
            return Err(err(key, format!("unknown size suffix '{suffix}' in '{v}' (use k, m, g, t)")));
        }
    };
    n.checked_mul(mult).ok_or_else(|| err(key, format!("'{v}' overflows 64 bits")))
}

/// A size that commands can have: nonzero and a whole number of sectors.
pub(crate) fn parse_block(key: &str, v: &str) -> Result<u64> {
    let b = parse_bytes(key, v)?;
    if b == 0 {
        return Err(err(key, "block size must be nonzero"));
    }
    if b % SECTOR_BYTES != 0 {
        return Err(err(key, format!("{b} bytes is not a multiple of the {SECTOR_BYTES}-byte sector")));
    }
    Ok(b)
}

fn parse_f64(key: &str, v: &str) -> Result<f64> {
    let x: f64 = v.trim().parse().map_err(|_| err(key, format!("'{v}' is not a number")))?;
    if !x.is_finite() {
        return Err(err(key, format!("'{v}' is not finite")));
    }
    Ok(x)
}

/// A percentage in 0..=100 with at most two decimals (the generator draws
/// operations in hundredths of a percent).
fn parse_percent_hundredths(key: &str, v: &str) -> Result<f64> {
    let x = parse_f64(key, v)?;
    if !(0.0..=100.0).contains(&x) {
        return Err(err(key, format!("{x} is not a percentage in 0..100")));
    }
    if ((x * 100.0).round() - x * 100.0).abs() > 1e-6 {
        return Err(err(key, format!("{x}: at most two decimals (0.01%)")));
    }
    Ok((x * 100.0).round() / 100.0)
}

pub(crate) fn parse_percent_int(key: &str, v: &str) -> Result<u32> {
    let n: u32 = v.trim().parse().map_err(|_| err(key, format!("'{v}' is not an integer percentage")))?;
    if n > 100 {
        return Err(err(key, format!("{n} is more than 100 percent")));
    }
    Ok(n)
}

fn parse_extent(key: &str, v: &str) -> Result<Extent> {
    match v.trim().strip_suffix('%') {
        Some(p) => Ok(Extent::Percent(parse_f64(key, p)?)),
        None => {
            let b = parse_bytes(key, v)?;
            if b % SECTOR_BYTES != 0 {
                return Err(err(key, format!("{b} bytes is not a multiple of the {SECTOR_BYTES}-byte sector")));
            }
            Ok(Extent::Bytes(b))
        }
    }
}

fn parse_bssplit(key: &str, v: &str) -> Result<BlockSize> {
    // fio semantics: entries without a percentage share what the others leave.
    let mut given: Vec<(u64, Option<u32>)> = Vec::new();
    for part in v.split(':') {
        let (size, pct) = match part.split_once('/') {
            Some((s, p)) if p.trim().is_empty() => (s, None),
            Some((s, p)) => (s, Some(parse_percent_int(key, p)?)),
            None => (part, None),
        };
        given.push((parse_block(key, size)?, pct));
    }
    let sum: u32 = given.iter().filter_map(|e| e.1).sum();
    if sum > 100 {
        return Err(err(key, format!("percentages sum to {sum}, more than 100")));
    }
    let open = given.iter().filter(|e| e.1.is_none()).count() as u32;
    let left = 100 - sum;
    if open == 0 && left != 0 {
        return Err(err(key, format!("percentages sum to {sum}, not 100")));
    }
    if open > 0 && left % open != 0 {
        return Err(err(key, format!("the remaining {left}% does not split evenly over {open} sizes")));
    }
    let mut out: Vec<(u64, u32)> = Vec::new();
    for (size, pct) in given {
        let pct = pct.unwrap_or(left.checked_div(open).unwrap_or(0));
        if pct == 0 {
            continue;
        }
        // Merge repeats so the canonical form is unique.
        match out.iter_mut().find(|e| e.0 == size) {
            Some(e) => e.1 += pct,
            None => out.push((size, pct)),
        }
    }
    out.sort_unstable();
    if out.is_empty() {
        return Err(err(key, "no size has a nonzero percentage"));
    }
    if out.len() == 1 {
        return Ok(BlockSize::Fixed(out[0].0));
    }
    Ok(BlockSize::Split(out))
}

pub(crate) fn parse_bs(key: &str, v: &str) -> Result<BlockSize> {
    match v.split_once('-') {
        None => Ok(BlockSize::Fixed(parse_block(key, v)?)),
        Some((lo, hi)) => {
            let (min, max) = (parse_block(key, lo)?, parse_block(key, hi)?);
            if min > max {
                return Err(err(key, format!("range {v} has its minimum above its maximum")));
            }
            if max % min != 0 {
                return Err(err(key, format!("maximum of {v} must be a multiple of its minimum")));
            }
            if min == max {
                return Ok(BlockSize::Fixed(min));
            }
            Ok(BlockSize::Range { min, max })
        }
    }
}

fn parse_dist(key: &str, v: &str) -> Result<AccessDist> {
    let v = v.trim();
    let (name, arg) = match v.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (v, None),
    };
    match (name, arg) {
        ("uniform" | "random", None) => Ok(AccessDist::Uniform),
        ("zipf", Some(a)) => {
            let theta = parse_f64(key, a)?;
            if theta <= 0.0 {
                return Err(err(key, format!("zipf exponent {theta} must be positive")));
            }
            Ok(AccessDist::Zipf { theta })
        }
        ("hotcold", Some(a)) => {
            let (shares, option) = match a.split_once(':') {
                Some((s, o)) => (s, Some(o)),
                None => (a, None),
            };
            let (h, c) = shares.split_once('/').ok_or_else(|| {
                err(key, format!("'{v}' should be hotcold:ACCESS%/SPACE%[:scatter=SIZE], e.g. hotcold:90/10"))
            })?;
            let (hot_access, hot_space) = (parse_f64(key, h)?, parse_f64(key, c)?);
            if !(0.0..=100.0).contains(&hot_access) {
                return Err(err(key, format!("hot access share {hot_access} is not in 0..100 percent")));
            }
            if !(hot_space > 0.0 && hot_space < 100.0) {
                return Err(err(key, format!("hot space share {hot_space} is not strictly between 0 and 100 percent")));
            }
            let scatter_bytes = option.map(|o| parse_scatter(key, v, o)).transpose()?;
            Ok(AccessDist::HotCold { hot_access, hot_space, scatter_bytes })
        }
        _ => Err(err(key, format!("'{v}' is not uniform, zipf:THETA or hotcold:ACCESS/SPACE[:scatter=SIZE]"))),
    }
}

/// A size to scatter a hot set in (`SIZE` of `hotcold:A/S:scatter=SIZE`):
/// nonzero, whole sectors. The error is the reason alone.
pub fn parse_piece_bytes(v: &str) -> std::result::Result<u64, String> {
    parse_block("scatter", v).map_err(|e| reason(&e))
}

/// The option of `hotcold:A/S:OPTION`: `scatter=SIZE`, the size of the
/// pieces the hot set is scattered in.
fn parse_scatter(key: &str, v: &str, option: &str) -> Result<u64> {
    let example = "e.g. hotcold:90/10:scatter=4k scatters the hot set in 4 KiB pieces";
    match option.trim().split_once('=') {
        Some(("scatter", size)) => {
            parse_block(key, size).map_err(|e| err(key, format!("scatter piece in '{v}': {}", reason(&e))))
        }
        None if option.trim() == "scatter" => Err(err(key, format!("'{v}': scatter needs a piece size ({example})"))),
        _ => Err(err(key, format!("'{option}' in '{v}' is not an option of hotcold (scatter=SIZE; {example})"))),
    }
}

/// The reason of a workload error, without its key (to wrap it in context).
fn reason(e: &Error) -> String {
    match e {
        Error::Workload { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

/// Parses `1000`, `1.5k`, `2m` as a rate in commands per second (decimal multiples).
pub(crate) fn parse_rate(key: &str, v: &str) -> Result<f64> {
    let v = v.trim();
    let (num, mult) = match v.char_indices().last() {
        Some((i, 'k' | 'K')) => (&v[..i], 1e3),
        Some((i, 'm' | 'M')) => (&v[..i], 1e6),
        _ => (v, 1.0),
    };
    let r = parse_f64(key, num)? * mult;
    if r <= 0.0 || !r.is_finite() {
        return Err(err(key, format!("rate '{v}' must be a positive number of commands per second")));
    }
    Ok(r)
}

/// The trimmed comma-separated fields of a `key=value,...` list; an empty
/// list or an empty field is refused (one trailing comma, as a list
/// written out by hand often has, is tolerated).
pub(crate) fn split_fields(s: &str) -> std::result::Result<Vec<&str>, &'static str> {
    let body = s.trim_end();
    let fields: Vec<&str> = body.strip_suffix(',').unwrap_or(body).split(',').map(str::trim).collect();
    if s.trim().is_empty() {
        Err("is empty")
    } else if fields.iter().any(|f| f.is_empty()) {
        Err("has an empty field (two commas in a row, or one at the start)")
    } else {
        Ok(fields)
    }
}

impl WorkloadSpec {
    /// Parses a fio-like spec such as
    /// `rw=randwrite,bs=4k,ios=1000000,range=100%,iodepth=32,seed=7`.
    pub fn parse(s: &str) -> Result<WorkloadSpec> {
        let mut rw = None;
        let mut rwmixread = None;
        let mut trimmix = None;
        let mut bs = None;
        let mut ios = None;
        let mut size = None;
        let mut offset = None;
        let mut range = None;
        let mut align = None;
        let mut dist = None;
        let mut iodepth = None;
        let mut rate = None;
        let mut process = None;
        let mut seed = None;
        let mut seen: Vec<&'static str> = Vec::new();

        for token in split_fields(s).map_err(|why| err(&format!("'{s}'"), why))? {
            let (key, v) = token.split_once('=').ok_or_else(|| err(token, "expected key=value"))?;
            let (key, v) = (key.trim(), v.trim());
            // Aliases map onto one canonical key so duplicates are caught
            // across spellings (`dist` and `random_distribution`).
            let canon: &'static str = match key {
                "rw" | "readwrite" => "rw",
                "rwmixread" | "rwmixwrite" => "rwmixread",
                "trimmix" => "trimmix",
                "bs" | "bsrange" | "bssplit" | "blocksize" => "bs",
                "ios" | "number_ios" => "ios",
                "size" | "io_size" => "size",
                "offset" => "offset",
                "range" => "range",
                "align" | "blockalign" => "align",
                "dist" | "random_distribution" => "dist",
                "iodepth" => "iodepth",
                "rate" | "rate_iops" => "rate",
                "arrival" => "arrival",
                "seed" | "randseed" => "seed",
                _ => {
                    return Err(err(
                        key,
                        "unknown key (known: rw, rwmixread, rwmixwrite, trimmix, bs, bssplit, ios, size, \
                         offset, range, align, dist, random_distribution, iodepth, rate, arrival, seed)",
                    ));
                }
            };
            if seen.contains(&canon) {
                return Err(err(key, "given twice"));
            }
            seen.push(canon);
            match canon {
                "rw" => {
                    let m = RwMode::ALL
                        .iter()
                        .find(|(n, _)| *n == v || (v == "readwrite" && *n == "rw"))
                        .map(|e| e.1)
                        .ok_or_else(|| {
                            err(
                                key,
                                format!("'{v}' is not read, write, rw, trim, randread, randwrite, randrw or randtrim"),
                            )
                        })?;
                    rw = Some(m);
                }
                "rwmixread" => {
                    let p = parse_percent_hundredths(key, v)?;
                    rwmixread = Some(if key == "rwmixwrite" { 100.0 - p } else { p });
                }
                "trimmix" => trimmix = Some(parse_percent_int(key, v)?),
                "bs" => bs = Some(if key == "bssplit" { parse_bssplit(key, v)? } else { parse_bs(key, v)? }),
                "ios" => {
                    let n: u64 = v.parse().map_err(|_| err(key, format!("'{v}' is not a command count")))?;
                    if n == 0 {
                        return Err(err(key, "must be at least 1"));
                    }
                    ios = Some(n);
                }
                "size" => {
                    let b = parse_bytes(key, v)?;
                    if b == 0 {
                        return Err(err(key, "must be nonzero"));
                    }
                    if b % SECTOR_BYTES != 0 {
                        return Err(err(key, format!("{b} bytes is not a multiple of the {SECTOR_BYTES}-byte sector")));
                    }
                    size = Some(b);
                }
                "offset" => {
                    let e = parse_extent(key, v)?;
                    match e {
                        Extent::Percent(p) if !(0.0..100.0).contains(&p) => {
                            return Err(err(key, format!("{p}% is not in 0..100")));
                        }
                        _ => {}
                    }
                    offset = Some(e);
                }
                "range" => {
                    let e = parse_extent(key, v)?;
                    match e {
                        Extent::Percent(p) if !(p > 0.0 && p <= 100.0) => {
                            return Err(err(key, format!("{p}% is not in (0, 100]")));
                        }
                        Extent::Bytes(0) => return Err(err(key, "must be nonzero")),
                        _ => {}
                    }
                    range = Some(e);
                }
                "align" => align = Some(parse_block(key, v)?),
                "dist" => dist = Some(parse_dist(key, v)?),
                "iodepth" => {
                    let n: u32 = v.parse().map_err(|_| err(key, format!("'{v}' is not a queue depth")))?;
                    if !(1..=crate::limits::MAX_QUEUE_DEPTH).contains(&n) {
                        return Err(err(key, format!("{n} must be in 1..={}", crate::limits::MAX_QUEUE_DEPTH)));
                    }
                    iodepth = Some(n);
                }
                "rate" => rate = Some(parse_rate(key, v)?),
                "arrival" => {
                    process = Some(match v {
                        "constant" | "uniform" => ArrivalProcess::Constant,
                        "poisson" | "exponential" => ArrivalProcess::Poisson,
                        _ => return Err(err(key, format!("'{v}' is not constant or poisson"))),
                    })
                }
                "seed" => {
                    seed = Some(v.parse().map_err(|_| err(key, format!("'{v}' is not an unsigned 64-bit seed")))?)
                }
                _ => {}
            }
        }

        let rw =
            rw.ok_or_else(|| err("rw", "required (read, write, rw, trim, randread, randwrite, randrw, randtrim)"))?;
        let rwmixread = match (rw, rwmixread) {
            (m, Some(p)) if m.is_mixed() => p,
            (m, None) if m.is_mixed() => 50.0,
            (_, Some(_)) => return Err(err("rwmixread", "only applies to rw=rw and rw=randrw")),
            (RwMode::Read | RwMode::RandRead, None) => 100.0,
            (_, None) => 0.0,
        };
        let trimmix = match trimmix {
            Some(_) if rw.is_trim() => {
                return Err(err("trimmix", "does not apply to rw=trim or rw=randtrim"));
            }
            t => t.unwrap_or(0),
        };
        let bs = bs.unwrap_or(BlockSize::Fixed(4096));
        let amount = match (ios, size) {
            (Some(n), None) => Amount::Ios(n),
            (None, Some(b)) => Amount::Bytes(b),
            (Some(_), Some(_)) => return Err(err("size", "give ios or size, not both")),
            (None, None) => {
                return Err(err("ios", "required (the number of commands), or size= in bytes"));
            }
        };
        let offset = match offset {
            Some(Extent::Percent(0.0) | Extent::Bytes(0)) => None,
            o => o,
        };
        let range = match range {
            // The full device from zero is the default: one canonical form.
            Some(Extent::Percent(p)) if p == 100.0 && offset.is_none() => None,
            r => r,
        };
        let align = match align {
            Some(a) if a == bs.min_bytes() => None,
            a => a,
        };
        if dist.is_some() && !rw.is_random() {
            return Err(err("dist", format!("only applies to random modes, not rw={}", rw.as_str())));
        }
        let dist = dist.unwrap_or(AccessDist::Uniform);
        let arrival = match (iodepth, rate) {
            (Some(_), Some(_)) => {
                return Err(err("rate", "rate (open loop) and iodepth (closed loop) are exclusive"));
            }
            (_, Some(iops)) => Arrival::Open { iops, process: process.unwrap_or(ArrivalProcess::Constant) },
            (d, None) => {
                if process.is_some() {
                    return Err(err("arrival", "only applies with rate= (open loop)"));
                }
                Arrival::Closed { queue_depth: d.unwrap_or(1) }
            }
        };
        Ok(WorkloadSpec {
            rw,
            rwmixread,
            trimmix,
            bs,
            amount,
            offset,
            range,
            align,
            dist,
            arrival,
            seed: seed.unwrap_or(1),
        })
    }

    /// The start alignment in bytes actually used.
    pub fn align_bytes(&self) -> u64 {
        self.align.unwrap_or_else(|| self.bs.min_bytes())
    }
}

impl FromStr for WorkloadSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<WorkloadSpec> {
        WorkloadSpec::parse(s)
    }
}

/// Prints bytes with the largest binary suffix that divides them exactly.
pub(crate) struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, s) in [(50, "p"), (40, "t"), (30, "g"), (20, "m"), (10, "k")] {
            if b != 0 && b % (1u64 << shift) == 0 {
                return write!(f, "{}{s}", b >> shift);
            }
        }
        write!(f, "{b}")
    }
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Extent::Percent(p) => write!(f, "{p}%"),
            Extent::Bytes(b) => write!(f, "{}", Bytes(*b)),
        }
    }
}

impl fmt::Display for AccessDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessDist::Uniform => write!(f, "uniform"),
            AccessDist::Zipf { theta } => write!(f, "zipf:{theta}"),
            AccessDist::HotCold { hot_access, hot_space, scatter_bytes } => {
                write!(f, "hotcold:{hot_access}/{hot_space}")?;
                match scatter_bytes {
                    Some(b) => write!(f, ":scatter={}", Bytes(*b)),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The canonical spec: fixed key order, defaults that shape the stream spelt
/// out, sizes with their largest exact binary suffix.
impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rw={}", self.rw.as_str())?;
        if self.rw.is_mixed() {
            write!(f, ",rwmixread={}", self.rwmixread)?;
        }
        if self.trimmix != 0 {
            write!(f, ",trimmix={}", self.trimmix)?;
        }
        match &self.bs {
            BlockSize::Fixed(b) => write!(f, ",bs={}", Bytes(*b))?,
            BlockSize::Range { min, max } => write!(f, ",bs={}-{}", Bytes(*min), Bytes(*max))?,
            BlockSize::Split(v) => {
                write!(f, ",bssplit=")?;
                for (i, (b, p)) in v.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ":" };
                    write!(f, "{sep}{}/{p}", Bytes(*b))?;
                }
            }
        }
        match self.amount {
            Amount::Ios(n) => write!(f, ",ios={n}")?,
            Amount::Bytes(b) => write!(f, ",size={}", Bytes(b))?,
        }
        if let Some(o) = self.offset {
            write!(f, ",offset={o}")?;
        }
        match self.range {
            Some(r) => write!(f, ",range={r}")?,
            None if self.offset.is_none() => write!(f, ",range=100%")?,
            None => {}
        }
        if let Some(a) = self.align {
            write!(f, ",align={}", Bytes(a))?;
        }
        if self.rw.is_random() {
            write!(f, ",dist={}", self.dist)?;
        }
        write!(f, ",{},seed={}", self.arrival, self.seed)
    }
}

/// `iodepth=N`, or `rate=R` with `,arrival=poisson` when it is.
impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Arrival::Closed { queue_depth } => write!(f, "iodepth={queue_depth}"),
            Arrival::Open { iops, process } => {
                write!(f, "rate={iops}")?;
                if process == ArrivalProcess::Poisson {
                    write!(f, ",arrival=poisson")?;
                }
                Ok(())
            }
        }
    }
}
