//! Trace format names, as given on the command line.

use super::csv::CsvSpec;
use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// A trace format. `Csv` carries its column mapping; the default mapping is
/// ftlsim's native format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Spc,
    Msr,
    Blkparse,
    Blktrace,
    Disksim,
    Ssdsim,
    Mqsim,
    Fiu,
    Systor17,
    Tencent,
    Alibaba,
    Wiscsee,
    Csv(CsvSpec),
}

const NAMES: &[&str] = &[
    "spc", "msr", "blkparse", "blktrace", "disksim", "ssdsim", "mqsim", "fiu", "systor17", "tencent", "alibaba",
    "wiscsee", "csv",
];

/// Every format name `Format::from_str` accepts (`csv` also takes
/// `csv:MAPPING`).
pub fn formats() -> &'static [&'static str] {
    NAMES
}

impl Format {
    /// The format's name without the csv mapping.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Spc => "spc",
            Format::Msr => "msr",
            Format::Blkparse => "blkparse",
            Format::Blktrace => "blktrace",
            Format::Disksim => "disksim",
            Format::Ssdsim => "ssdsim",
            Format::Mqsim => "mqsim",
            Format::Fiu => "fiu",
            Format::Systor17 => "systor17",
            Format::Tencent => "tencent",
            Format::Alibaba => "alibaba",
            Format::Wiscsee => "wiscsee",
            Format::Csv(_) => "csv",
        }
    }

    /// ftlsim's native trace format.
    pub fn native() -> Format {
        Format::Csv(CsvSpec::default())
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Format> {
        let t = s.trim();
        if let Some(spec) = t.strip_prefix("csv:").or_else(|| t.strip_prefix("CSV:")) {
            return Ok(Format::Csv(CsvSpec::parse(spec)?));
        }
        // The sample-trace collection's directory names are accepted too.
        Ok(match t.to_ascii_lowercase().as_str() {
            "spc" | "umass" => Format::Spc,
            "msr" | "msr_csv" => Format::Msr,
            "blkparse" => Format::Blkparse,
            "blktrace" => Format::Blktrace,
            "disksim" | "disksim_ascii" => Format::Disksim,
            "ssdsim" | "ssdsim_ascii" => Format::Ssdsim,
            "mqsim" | "mqsim_ascii" => Format::Mqsim,
            "fiu" => Format::Fiu,
            "systor17" | "systor17_csv" => Format::Systor17,
            "tencent" | "tencent_cbs_csv" => Format::Tencent,
            "alibaba" => Format::Alibaba,
            "wiscsee" | "wiscsee_events" => Format::Wiscsee,
            "csv" | "native" => Format::native(),
            _ => {
                return Err(Error::Unknown {
                    what: "trace format",
                    name: s.to_string(),
                    available: format!("{} (csv also as csv:MAPPING)", NAMES.join(", ")),
                });
            }
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::Csv(spec) if !spec.is_native() => write!(f, "csv:{spec}"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in formats() {
            let f: Format = name.parse().unwrap();
            assert_eq!(f.to_string(), *name);
        }
        assert_eq!("MSR_CSV".parse::<Format>().unwrap(), Format::Msr);
    }

    #[test]
    fn unknown_lists_all() {
        let err = "spcx".parse::<Format>().unwrap_err();
        assert!(matches!(err, Error::Unknown { .. }));
        let msg = err.to_string();
        assert!(msg.contains("'spcx'") && msg.contains("wiscsee") && msg.contains("blktrace"), "{msg}");
    }
}
