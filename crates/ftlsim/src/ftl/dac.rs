//! `dac`: page mapping with Dynamic dAta Clustering, Chiang, Lee and Chang,
//! "Using data clustering to improve cleaning performance for flash memory"
//! (Software: Practice and Experience, 1999), as μ-FTL (Lee et al., EMSOFT
//! 2008) uses it for comparison.
//!
//! The whole page map is in RAM, as `page`'s ([`DramMap`]). Flash is divided
//! into `ftl.dac_regions` regions from cold (0) to hot, each writing into its
//! own active block per plane (a write stream of the shared page-mapped data
//! path, [`PageMapped`]), so pages of like update frequency share blocks and
//! GC finds blocks that are nearly all invalid. A page is promoted one
//! region hotter each time the host updates it, and demoted one region
//! colder each time GC copies it; new data starts in the coldest region.
//!
//! Simplifications: promotion on every update (no age threshold); the
//! region of each logical page is kept in RAM (1 B each, counted).

use super::FtlStats;
use super::page::{DramMap, MapTable, PageCore, PageMapped, is_mapped};
use crate::config::Config;
use crate::engine::Device;
use crate::error::{Error, Result};
use crate::nand::Geometry;
use crate::units::{Lpn, Ppn, SimTime};
use serde::{Deserialize, Serialize};

pub type Dac = PageMapped<DacMap>;

impl Dac {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Dac> {
        let regions = cfg.ftl.dac_regions;
        if !(1..=255).contains(&regions) {
            return Err(Error::config("ftl.dac_regions", format!("{regions} must be between 1 and 255")));
        }
        let logical = cfg.logical_pages() as u32;
        let map = DacMap {
            inner: DramMap::new(logical, dev.geometry().pages as u64),
            region: vec![0; logical as usize],
            regions: regions as u8,
            promotions: 0,
            demotions: 0,
        };
        PageMapped::with_map(cfg, dev, map)
    }
}

#[derive(Serialize, Deserialize)]
pub struct DacMap {
    inner: DramMap,
    region: Vec<u8>,
    regions: u8,
    promotions: u64,
    demotions: u64,
}

impl DacMap {
    pub fn region(&self, lpn: Lpn) -> u8 {
        self.region[lpn.idx()]
    }

    /// Host updates that promoted a page, GC copies that demoted one.
    pub fn moves(&self) -> (u64, u64) {
        (self.promotions, self.demotions)
    }
}

impl MapTable for DacMap {
    const NAME: &'static str = "dac";
    const SERIAL_WRITES: bool = false;
    const TABLE_PAGES: bool = false;

    fn entries(&self) -> u32 {
        self.inner.entries()
    }

    #[inline]
    fn get(&self, x: u32) -> u32 {
        self.inner.get(x)
    }

    #[inline]
    fn is_live(&self, x: u32, ppn: u32) -> bool {
        self.inner.is_live(x, ppn)
    }

    #[inline]
    fn lookup(&mut self, core: &mut PageCore, dev: &mut Device, lpn: Lpn, now: SimTime) -> Result<(u32, SimTime)> {
        self.inner.lookup(core, dev, lpn, now)
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, value: u32) {
        self.inner.set(lpn, value);
    }

    #[inline]
    fn prefetch(&self, lpn: Lpn) {
        self.inner.prefetch(lpn);
        // The region too: a host write promotes, a GC copy demotes the page,
        // and the region table misses the cache as the map does.
        crate::mem::prefetch(&self.region, lpn.idx());
    }

    #[inline]
    fn prefetch_mapped(&self, lpn: Lpn) {
        self.inner.prefetch_mapped(lpn);
    }

    fn moves_in_ram(&self) -> bool {
        self.inner.moves_in_ram()
    }

    fn live_bits(&self) -> Option<&[u64]> {
        self.inner.live_bits()
    }

    #[inline]
    fn moved(&mut self, dev: &mut Device, x: u32, from: u32, dst: Ppn, now: SimTime) {
        self.inner.moved(dev, x, from, dst, now);
    }

    fn placed(&mut self, core: &mut PageCore, dev: &mut Device, lpn: Lpn, ppn: Ppn, now: SimTime) -> Result<()> {
        self.inner.placed(core, dev, lpn, ppn, now)
    }

    fn stats(&self, stats: &mut FtlStats) {
        self.inner.stats(stats);
    }

    fn reset_stats(&mut self) {
        self.inner.reset_stats();
        (self.promotions, self.demotions) = (0, 0);
    }

    fn ram_bytes(&self, geo: &Geometry) -> u64 {
        // `page`'s tables plus a region byte per logical page.
        self.inner.ram_bytes(geo) + self.region.len() as u64
    }

    /// Regions were RAM: every page starts cold again.
    fn recover(&mut self, core: &mut PageCore, dev: &mut Device, values: &[u32], now: SimTime) -> Result<SimTime> {
        self.region.fill(0);
        self.inner.recover(core, dev, values, now)
    }

    fn streams(&self) -> usize {
        self.regions as usize
    }

    #[inline]
    fn host_stream(&mut self, lpn: Lpn, old: u32) -> usize {
        let r = &mut self.region[lpn.idx()];
        // An update (the page had data) is a sign of heat.
        if is_mapped(old) && *r + 1 < self.regions {
            *r += 1;
            self.promotions += 1;
        }
        *r as usize
    }

    #[inline]
    fn gc_stream(&mut self, x: u32) -> usize {
        let Some(r) = self.region.get_mut(x as usize) else { return 0 };
        if *r > 0 {
            *r -= 1;
            self.demotions += 1;
        }
        *r as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::hybrid::testing::{drive, write};
    use crate::ftl::page::NEVER;

    #[test]
    fn updates_promote_and_gc_copies_demote() {
        let mut m = DacMap { inner: DramMap::new(4, 64), region: vec![0; 4], regions: 3, promotions: 0, demotions: 0 };
        assert_eq!(m.host_stream(Lpn(1), NEVER), 0, "new data starts cold");
        assert_eq!(m.host_stream(Lpn(1), 7), 1);
        assert_eq!(m.host_stream(Lpn(1), 7), 2);
        assert_eq!(m.host_stream(Lpn(1), 7), 2, "the hottest region is the last");
        assert_eq!(m.gc_stream(1), 1);
        assert_eq!(m.gc_stream(2), 0, "the coldest region is the first");
        assert_eq!(m.moves(), (2, 1));
    }

    #[test]
    fn hot_and_cold_pages_go_to_different_blocks_and_gc_runs() {
        let (mut ftl, mut dev) = drive("dac", &["ftl.dac_regions=2"]);
        write(ftl.as_mut(), &mut dev, &[0, 1, 0]);
        let geo = dev.geometry().clone();
        let (hot, cold) = (ftl.physical(Lpn(0)).unwrap(), ftl.physical(Lpn(1)).unwrap());
        assert_ne!(geo.block_of(hot), geo.block_of(cold), "hot and cold pages share a block");
        let lpns: Vec<u32> = (0..600u32).map(|i| if i % 2 == 0 { i % 4 } else { (i * 7) % 32 }).collect();
        write(ftl.as_mut(), &mut dev, &lpns);
        assert!(ftl.stats().gc_invocations > 0);
    }

    /// GC copying pages of mixed regions in runs of one region (its
    /// stream) leaves the drive exactly as copying them one at a time.
    /// Regions are scrambled between writes, so victims mix them.
    #[test]
    fn gc_runs_of_one_region_copy_as_one_page_at_a_time() {
        use crate::ftl::Ftl;
        use crate::ftl::hybrid::testing::tiny;
        use crate::ftl::page::ONE_PAGE_GC_RUNS;
        let run = |one_page: bool| {
            ONE_PAGE_GC_RUNS.set(one_page);
            let (cfg, mut dev) = tiny("dac", &["ftl.dac_regions=3", "geometry.pages_per_block=16"]);
            let mut ftl = Dac::new(&cfg, &dev).unwrap();
            let mut rng = crate::rng::SimRng::new(11);
            for _ in 0..6000 {
                // Hot pages (0..12, written often) and cold ones.
                let lpn = if rng.below(3) == 0 { rng.below(100) } else { rng.below(12) };
                write(&mut ftl, &mut dev, &[lpn as u32]);
                let (scrambled, region) = (rng.below(100) as usize, rng.below(3) as u8);
                ftl.map_mut().region[scrambled] = region;
            }
            ONE_PAGE_GC_RUNS.set(false);
            let placed: Vec<_> = (0..100).map(|l| ftl.physical(Lpn(l))).collect();
            (placed, dev.counters.clone(), ftl.stats().gc_pages_copied, ftl.stats().gc_invocations)
        };
        let (batched, single) = (run(false), run(true));
        assert!(batched.2 > 1000, "GC copied {} pages", batched.2);
        assert_eq!(batched, single);
    }

    #[test]
    fn ram_is_the_page_table_plus_regions() {
        let (page, _) = drive("page", &[]);
        let (dac, _) = drive("dac", &[]);
        assert_eq!(dac.mapping_ram_bytes(), page.mapping_ram_bytes() + 32);
    }
}
