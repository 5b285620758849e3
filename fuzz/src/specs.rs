//! The `specs` target: `[kind, text...]`.
//!
//! `kind % 5` picks the parser: 0 a config TOML file, 1 a preset (chosen by
//! `kind / 5`) with one `key=value` override per line, 2 a workload spec
//! whose generator then issues commands on a device of a capacity chosen
//! by `kind / 5` (every command must lie on the device), 3 a precondition
//! spec, 4 a power-cut spec. A config that validates is not built into a
//! simulation (that allocates the drive's tables: the `nbd` target builds
//! small ones).

use ftlsim::config::{PowerCutAt, preset_names};
use ftlsim::workload::{self, WorkloadSpec};
use ftlsim::{Config, Precondition};

/// Commands drawn from one workload at most.
const MAX_COMMANDS: usize = 4096;
/// Device capacities (sectors) a workload is generated on: a 1 GiB drive,
/// tiny ones, and one of 512 TiB.
const CAPACITIES: &[u64] = &[1 << 21, 1, 8, 1 << 40];

pub fn specs(data: &[u8]) {
    let [kind, body @ ..] = data else { return };
    let text = String::from_utf8_lossy(body);
    let variant = (*kind / 5) as usize;
    let refused = |e: ftlsim::Error| super::check_message(&e.to_string(), &text);
    match kind % 5 {
        0 => {
            if let Err(e) = Config::from_toml_str(&text, "fuzz.toml", &[]) {
                refused(e)
            }
        }
        1 => {
            let presets = preset_names();
            let preset = presets[variant % presets.len()];
            let overrides: Vec<String> = text.lines().map(str::to_string).collect();
            if let Err(e) = Config::load(preset, &overrides) {
                refused(e)
            }
        }
        2 => {
            let capacity = CAPACITIES[variant % CAPACITIES.len()];
            // The spec alone parses (and prints back) the same way.
            if let Ok(spec) = text.parse::<WorkloadSpec>() {
                let again = spec.to_string().parse::<WorkloadSpec>();
                assert!(again.is_ok(), "{text:?} printed as {spec} does not parse: {again:?}");
            }
            let mut source = match workload::open(&text, 1, capacity) {
                Ok((s, _)) => s,
                Err(e) => return refused(e),
            };
            for _ in 0..MAX_COMMANDS {
                match source.next_cmd() {
                    Ok(Some(cmd)) => {
                        assert!(cmd.end().0 <= capacity, "{text:?} on {capacity} sectors issued {cmd:?}")
                    }
                    Ok(None) => return,
                    Err(e) => return refused(e),
                }
            }
        }
        3 => {
            if let Err(e) = text.parse::<Precondition>() {
                refused(e)
            }
        }
        _ => {
            if let Err(e) = text.parse::<PowerCutAt>() {
                refused(e)
            }
        }
    }
}
