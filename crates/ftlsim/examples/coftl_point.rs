//! One point of `ftlsim repro coftl`: its JSON report to $JSON (default /tmp/coftl_point.json)
//! and each stream's latency (Little's law) on stdout:
//! `[QD=8] coftl_point FTL K CACHE_MIB CHANNELS BLOCKS REQUESTS [KEY=VALUE...]`
//! (FTL "coftl", "bl" or any scheme; the repro's settings, then overrides),
//! e.g. `cargo run --release -p ftlsim --example coftl_point coftl 4 16 16 128 20000`.
use ftlsim::config::HostMode;
use ftlsim::repro::coftl;
use ftlsim::rng::SimRng;
use ftlsim::sim::{RunOptions, Simulation};
use ftlsim::trace::list::CmdList;
use ftlsim::trace::{CmdSource, Op};
use ftlsim::workload::{WorkloadSpec, generator};

fn main() -> ftlsim::error::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let n = |i: usize| a[i].parse::<u64>().expect("a number");
    let mut cfg = coftl::config(&a[0], n(1) as u32, n(2), n(3) as u32, n(4) as u32, 1, &a[6..])?;
    cfg.host.mode = HostMode::Closed;
    cfg.host.queue_depth = std::env::var("QD").map_or(coftl::QUEUE_DEPTH, |q| q.parse().unwrap());
    let (capacity, seed, requests) = (cfg.logical_sectors(), cfg.seed, n(5));
    let mut sim = Simulation::new(cfg)?;
    sim.precondition(coftl::FILL)?;
    sim.keep_latencies();
    let opts = RunOptions::from_config(sim.config());
    // The repro's desktop mix, with each command's stream.
    let mut streams = Vec::new();
    for (i, (_, _, spec)) in coftl::STREAMS.iter().enumerate() {
        let spec = WorkloadSpec::parse(&format!("{spec},ios={requests},seed={}", seed + i as u64))?;
        streams.push(generator(&spec, capacity)?);
    }
    let mut rng = SimRng::derived(seed, 0x6465736b);
    let (mut cmds, mut label) = (Vec::new(), Vec::new());
    while (cmds.len() as u64) < requests {
        let mut draw = rng.below(100);
        let i = coftl::STREAMS
            .iter()
            .position(|&(share, _, _)| {
                draw < share || {
                    draw -= share;
                    false
                }
            })
            .unwrap();
        let mut cmd = streams[i].next_cmd()?.unwrap();
        cmd.time = ftlsim::units::SimTime::ZERO;
        cmds.push(cmd);
        label.push(i);
    }
    assert_eq!(cmds, coftl::desktop(capacity, requests, seed)?);
    let ops: Vec<Op> = cmds.iter().map(|c| c.op).collect();
    let sizes: Vec<u64> = cmds.iter().map(|c| c.sectors).collect();
    let r = sim.run(&mut CmdList::new("desktop", cmds), &opts, &mut |_, _| true)?;
    std::fs::write(
        std::env::var("JSON").unwrap_or("/tmp/coftl_point.json".into()),
        serde_json::to_string_pretty(&r).unwrap(),
    )
    .unwrap();
    let lat = sim.take_latencies().unwrap();
    let (mut ri, mut wi) = (0, 0);
    let mut sum = [0f64; 4];
    let mut cnt = [0u64; 4];
    let mut pages = [0u64; 4];
    let mut all: Vec<Vec<f64>> = vec![Vec::new(); 4];
    for (j, op) in ops.iter().enumerate() {
        let l = match op {
            Op::Read => {
                ri += 1;
                lat.read[ri - 1]
            }
            _ => {
                wi += 1;
                lat.write[wi - 1]
            }
        } as f64
            / 1e3;
        sum[label[j]] += l;
        cnt[label[j]] += 1;
        pages[label[j]] += sizes[j] / 8;
        all[label[j]].push(l);
    }
    let total: f64 = sum.iter().sum();
    println!(
        "iops {:.0} sim {:.2} s units {:.2}% channels {:.2}% WA {:?}",
        r.iops,
        r.sim_time_s,
        r.utilization.units * 100.0,
        r.utilization.channels * 100.0,
        r.write_amplification
    );
    for i in 0..4 {
        all[i].sort_by(|a, b| a.partial_cmp(b).unwrap());
        let q = |p: f64| all[i][((all[i].len() - 1) as f64 * p) as usize];
        println!(
            "{:16} n {:5} pages/req {:5.1} mean {:8.0} us p50 {:8.0} p90 {:8.0} p99 {:8.0} share of latency-sum {:.1}%",
            coftl::STREAMS[i].1,
            cnt[i],
            pages[i] as f64 / cnt[i] as f64,
            sum[i] / cnt[i] as f64,
            q(0.5),
            q(0.9),
            q(0.99),
            100.0 * sum[i] / total
        );
    }
    Ok(())
}
