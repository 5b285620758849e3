//! Energy by component, as in HAT's evaluation: energy = current × voltage
//! × time, per operation, from the run's counters at report time (the hot
//! path only counts).
//!
//! - flash: every timed read, program and erase at `energy.flash_ma` for
//!   the array time (tR, tPROG, tBERS; bus transfers are not charged);
//! - DRAM: each mapping-table access at `energy.dram_access_ma` for
//!   `energy.dram_access_ns`, plus refresh at `energy.dram_refresh_ma` per
//!   `energy.dram_device_bytes` of table held (`mapping_ram_bytes`), over
//!   the simulated run; controller SRAM (DFTL's CMT) is charged alike;
//! - PCM: entry reads and writes at `energy.pcm_read_ma` / `pcm_write_ma`
//!   for `pcm.read_us` / `pcm.write_us`.

use crate::config::Config;
use serde::{Deserialize, Serialize};

/// Joules by component.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyReport {
    pub flash: f64,
    pub dram: f64,
    pub pcm: f64,
    pub total: f64,
}

/// What a run did that costs energy.
#[derive(Clone, Debug, Default)]
pub struct EnergyCounts {
    pub flash_reads: u64,
    pub flash_programs: u64,
    pub flash_erases: u64,
    pub ram_accesses: u64,
    pub ram_bytes: u64,
    pub pcm_reads: u64,
    pub pcm_writes: u64,
    pub sim_time_s: f64,
}

/// Joules of drawing `ma` milliamperes at `volts` for `us` microseconds.
pub fn joules(ma: f64, volts: f64, us: f64) -> f64 {
    ma * 1e-3 * volts * us * 1e-6
}

pub fn energy(cfg: &Config, c: &EnergyCounts) -> EnergyReport {
    let e = &cfg.energy;
    let (t, v) = (&cfg.timing, e.voltage_v);
    let flash = c.flash_reads as f64 * joules(e.flash_ma, v, t.read_us)
        + c.flash_programs as f64 * joules(e.flash_ma, v, t.program_us)
        + c.flash_erases as f64 * joules(e.flash_ma, v, t.erase_us);
    let refresh_devices = c.ram_bytes as f64 / e.dram_device_bytes as f64;
    let dram = c.ram_accesses as f64 * joules(e.dram_access_ma, v, e.dram_access_ns / 1000.0)
        + refresh_devices * joules(e.dram_refresh_ma, v, c.sim_time_s * 1e6);
    let pcm = c.pcm_reads as f64 * joules(e.pcm_read_ma, v, cfg.pcm.read_us)
        + c.pcm_writes as f64 * joules(e.pcm_write_ma, v, cfg.pcm.write_us);
    EnergyReport { flash, dram, pcm, total: flash + dram + pcm }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-18)
    }

    #[test]
    fn per_operation_energies_follow_the_formula() {
        let cfg = Config::load("hat-table4", &[]).unwrap();
        let one = |c: EnergyCounts| energy(&cfg, &c);
        // 1.5 ms erase at 25 mA, 3.3 V.
        assert!(close(one(EnergyCounts { flash_erases: 1, ..Default::default() }).flash, 123.75e-6));
        // 20 us read, 200 us program.
        assert!(close(one(EnergyCounts { flash_reads: 1, ..Default::default() }).flash, 1.65e-6));
        assert!(close(one(EnergyCounts { flash_programs: 1, ..Default::default() }).flash, 16.5e-6));
        // PCM: 0.115 us read at 8 mA, 90 us write at 35 mA.
        assert!(close(one(EnergyCounts { pcm_reads: 1, ..Default::default() }).pcm, 8e-3 * 3.3 * 0.115e-6));
        assert!(close(one(EnergyCounts { pcm_writes: 1, ..Default::default() }).pcm, 10.395e-6));
        // DRAM access: 125 mA for 50 ns; refresh: 3 mA per 64 MiB held, for 1 s.
        assert!(close(one(EnergyCounts { ram_accesses: 1, ..Default::default() }).dram, 20.625e-9));
        let r = one(EnergyCounts { ram_bytes: 32 << 20, sim_time_s: 1.0, ..Default::default() });
        assert!(close(r.dram, 0.5 * 9.9e-3));
        let all = one(EnergyCounts { flash_erases: 2, pcm_writes: 1, ram_accesses: 3, ..Default::default() });
        assert!(close(all.total, all.flash + all.dram + all.pcm));
    }

    #[test]
    fn currents_and_voltage_come_from_the_config() {
        let cfg = Config::load("hat-table4", &["energy.voltage_v=1.8".into(), "energy.flash_ma=10".into()]).unwrap();
        let r = energy(&cfg, &EnergyCounts { flash_erases: 1, ..Default::default() });
        assert!(close(r.flash, 10e-3 * 1.8 * 1.5e-3));
    }
}
