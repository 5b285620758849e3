//! A floor for the foundation benchmark (issue 16: "say what bounds it"):
//! the least work a page-mapped drive with greedy GC does per host write,
//! written as plainly and tightly as it goes, with no timing model at all.
//! Not the simulator and not a model of it: no timelines, latencies,
//! histograms, write buffer, dynamic allocation, TRIM, power cuts or
//! checks; host writes go round-robin over the planes, and a plane whose
//! free blocks fall to the GC reserve copies its block of fewest valid
//! pages to its GC block and erases it. What is left is what any page
//! FTL must do per write: the forward map, the old page made invalid, a
//! page allocated; and per GC copy the victim's OOB, the map entry of each
//! live page, the valid counts. Its time per request is what the
//! simulator's FTL work could cost at best on this machine; the gap to
//! `bench/foundation.sh`'s figure is the timing model and the rest.
//!
//! ```text
//! cargo run --release -p ftlsim --example gc_floor -- bench/page-8ch-16g.toml bench-out/randwrite-1m.csv
//! ```
//! (`bash bench/floor.sh` runs it on the foundation benchmark's drive and trace.)
use ftlsim::mem::BigVec;
use std::time::Instant;

const NONE: u32 = u32::MAX;

/// One plane's blocks: free, being written (block, next page), and full.
struct Plane {
    free: Vec<u32>,
    host: (u32, u32),
    gc: (u32, u32),
    /// Full blocks by valid count: a doubly linked list per count.
    heads: Vec<u32>,
    min: usize,
}

impl Plane {
    /// The block GC (or the host) writes, and its next page.
    fn open(&mut self, for_gc: bool) -> &mut (u32, u32) {
        if for_gc { &mut self.gc } else { &mut self.host }
    }
}

struct Drive {
    pages_per_block: u32,
    blocks_per_plane: u32,
    map: BigVec<u32>,
    oob: BigVec<u32>,
    valid: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    planes: Vec<Plane>,
    reserve: usize,
    cursor: usize,
    programs: u64,
    copies: u64,
    erases: u64,
}

impl Drive {
    fn new(planes: u32, blocks: u32, pages_per_block: u32, logical: u32, reserve: usize) -> Drive {
        let total = planes * blocks;
        let planes = (0..planes)
            .map(|p| {
                let mut free: Vec<u32> = (p * blocks..(p + 1) * blocks).rev().collect();
                let host = (free.pop().unwrap(), 0);
                let gc = (free.pop().unwrap(), 0);
                Plane { free, host, gc, heads: vec![NONE; pages_per_block as usize + 1], min: 0 }
            })
            .collect();
        Drive {
            pages_per_block,
            blocks_per_plane: blocks,
            map: ftlsim::mem::big_vec(logical as usize, NONE),
            oob: ftlsim::mem::big_vec((total * pages_per_block) as usize, NONE),
            valid: vec![0; total as usize],
            next: vec![NONE; total as usize],
            prev: vec![NONE; total as usize],
            planes,
            reserve,
            cursor: 0,
            programs: 0,
            copies: 0,
            erases: 0,
        }
    }

    fn link(&mut self, p: usize, b: u32) {
        let v = self.valid[b as usize] as usize;
        let plane = &mut self.planes[p];
        let head = plane.heads[v];
        self.next[b as usize] = head;
        self.prev[b as usize] = NONE;
        if head != NONE {
            self.prev[head as usize] = b;
        }
        plane.heads[v] = b;
        plane.min = plane.min.min(v);
    }

    fn unlink(&mut self, p: usize, b: u32) {
        let (n, pr) = (self.next[b as usize], self.prev[b as usize]);
        if pr == NONE {
            self.planes[p].heads[self.valid[b as usize] as usize] = n;
        } else {
            self.next[pr as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = pr;
        }
    }

    /// The page `ppn` no longer holds live data.
    fn invalidate(&mut self, ppn: u32) {
        let b = ppn / self.pages_per_block;
        let p = (b / self.blocks_per_plane) as usize;
        let listed = self.is_listed(p, b);
        if listed {
            self.unlink(p, b);
        }
        self.valid[b as usize] -= 1;
        if listed {
            self.link(p, b);
        }
    }

    /// Whether full block `b` is in its plane's lists (a block holding live
    /// data is, unless it is being written).
    fn is_listed(&self, p: usize, b: u32) -> bool {
        let plane = &self.planes[p];
        b != plane.host.0 && b != plane.gc.0
    }

    fn write(&mut self, lpn: u32) {
        let old = self.map[lpn as usize];
        if old != NONE {
            self.invalidate(old);
        }
        let p = self.cursor;
        self.cursor = (self.cursor + 1) % self.planes.len();
        let ppn = self.take_page(p, false);
        self.map[lpn as usize] = ppn;
        self.oob[ppn as usize] = lpn;
        self.valid[(ppn / self.pages_per_block) as usize] += 1;
        self.programs += 1;
    }

    /// The next page of plane `p`'s host (or GC) block, opening a new block
    /// when it is full, after GC if the plane is down to its reserve.
    fn take_page(&mut self, p: usize, for_gc: bool) -> u32 {
        let ppb = self.pages_per_block;
        let (b, next) = *self.planes[p].open(for_gc);
        if next < ppb {
            self.planes[p].open(for_gc).1 += 1;
            return b * ppb + next;
        }
        // Full: listed by its valid count from now on.
        self.link(p, b);
        if !for_gc {
            while self.planes[p].free.len() <= self.reserve {
                self.collect(p);
            }
        }
        let nb = self.planes[p].free.pop().expect("GC keeps a reserve");
        *self.planes[p].open(for_gc) = (nb, 1);
        nb * ppb
    }

    /// Greedy GC of plane `p`: its full block of fewest valid pages.
    fn collect(&mut self, p: usize) {
        let victim = loop {
            let plane = &mut self.planes[p];
            let b = plane.heads[plane.min];
            if b != NONE {
                break b;
            }
            plane.min += 1;
        };
        self.unlink(p, victim);
        let ppb = self.pages_per_block;
        for ppn in victim * ppb..(victim + 1) * ppb {
            let lpn = self.oob[ppn as usize];
            if lpn == NONE || self.map[lpn as usize] != ppn {
                continue;
            }
            let dst = self.take_page(p, true);
            self.map[lpn as usize] = dst;
            self.oob[dst as usize] = lpn;
            self.valid[(dst / ppb) as usize] += 1;
            self.copies += 1;
            self.programs += 1;
        }
        self.oob[(victim * ppb) as usize..((victim + 1) * ppb) as usize].fill(NONE);
        self.valid[victim as usize] = 0;
        self.planes[p].free.push(victim);
        self.erases += 1;
    }
}

/// xorshift64*.
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [config, trace] = &args[..] else {
        eprintln!("usage: gc_floor CONFIG.toml TRACE.csv (4 KiB writes: time_ns,op,sector,sectors)");
        std::process::exit(2);
    };
    let cfg = ftlsim::Config::load(config, &[]).unwrap_or_else(|e| panic!("{config}: {e}"));
    let g = &cfg.geometry;
    let planes = g.channels * g.chips_per_channel * g.dies_per_chip * g.planes_per_die;
    let logical = cfg.logical_pages() as u32;
    let spp = g.page_size as u64 / 512;
    let text = std::fs::read_to_string(trace).unwrap_or_else(|e| panic!("{trace}: {e}"));
    let lpns: Vec<u32> = text
        .lines()
        .skip(1)
        .map(|l| (l.split(',').nth(2).unwrap().parse::<u64>().unwrap() / spp) as u32 % logical)
        .collect();
    let mut d = Drive::new(planes, g.blocks_per_plane, g.pages_per_block, logical, 4);

    let t = Instant::now();
    for lpn in 0..logical {
        d.write(lpn);
    }
    let fill = t.elapsed().as_secs_f64();
    let mut s = 0x5EED_u64;
    let mut ahead = [0u32; 8];
    for a in &mut ahead {
        *a = (next(&mut s) % logical as u64) as u32;
    }
    let t = Instant::now();
    for i in 0..logical as usize {
        let lpn = ahead[i % 8];
        ahead[i % 8] = (next(&mut s) % logical as u64) as u32;
        ftlsim::mem::prefetch(&d.map, ahead[i % 8] as usize);
        d.write(lpn);
    }
    let overwrite = t.elapsed().as_secs_f64();
    let (p0, c0) = (d.programs, d.copies);
    let t = Instant::now();
    // As the simulator does: the map entries of writes a few ahead are
    // fetched while this one is done.
    for (i, &lpn) in lpns.iter().enumerate() {
        if let Some(&ahead) = lpns.get(i + 8) {
            ftlsim::mem::prefetch(&d.map, ahead as usize);
        }
        d.write(lpn);
    }
    let measured = t.elapsed().as_secs_f64();
    let n = lpns.len() as f64;
    println!(
        "fill {:.3} s ({:.0} ns a page), overwrite {:.3} s ({:.0} ns a write), measured {:.3} s: {:.0} ns a request, \
         {:.2} M requests/s, WA {:.3} ({} copies), {} erases in all",
        fill,
        fill * 1e9 / logical as f64,
        overwrite,
        overwrite * 1e9 / logical as f64,
        measured,
        measured * 1e9 / n,
        n / measured / 1e6,
        (d.programs - p0) as f64 / n,
        d.copies - c0,
        d.erases,
    );
}
