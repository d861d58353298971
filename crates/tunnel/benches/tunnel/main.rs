//! End-to-end benchmark of the tunnel against rathole 0.5.0, with direct TCP as the
//! ceiling, side by side in one run on 127.0.0.1.
//!
//! Every way carries the same requests to the same local TCP target ([`target`]):
//! - **direct**: the client connects to the target;
//! - **ours**: a relay half and one origin half (TLS profile, [`ours::LINKS`] links),
//!   each on its own tokio runtime; the client opens streams with `RelayHalf::open`
//!   and the origin's handler connects to the target;
//! - **rathole**: `rathole --server` and `rathole --client` as their own processes
//!   with the `tls` transport; the client connects to the server's forwarded port.
//!
//! Measured: bulk download over 1 and over [`BULK_WIDE`] parallel streams
//! (connections) with the tunnel's CPU time over it, the time from opening a stream
//! (connection) to its first byte back, and resident memory per idle stream.
//!
//! On two or more cores the tunnel under test (both our halves' threads; rathole's
//! server and client) runs pinned to core 0 and everything else (the client, the
//! target) to the last core ([`switchyard_testkit::pin`]), so both tunnels get the
//! same one core; `SWITCHYARD_BENCH_PIN=0` turns it off. The table with the ratio ours / rathole
//! is printed and, when [`REPORT_ENV`] names a file, written there as Markdown
//! (`cargo xtask bench tunnel` puts it into `docs/benchmarks.md`). Every process
//! started here is killed when its owner is dropped.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod hello;
mod load;
mod ours;
mod rathole;
mod report;
mod target;

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::hello::Sniffer;
use crate::load::Way;
use crate::ours::Tunnel;
use crate::rathole::{Certs, Rathole};
use crate::report::Report;
use crate::target::Target;
use switchyard_testkit::pin::Cores;

/// Bytes per bulk case, split evenly over its streams.
const BULK_BYTES: u64 = 512 << 20;
/// Parallel streams of the wide bulk case.
const BULK_WIDE: u64 = 16;
/// Repetitions of each bulk case; the median is reported.
const REPS: usize = 3;
/// Sequential opens whose median time to the first byte is reported.
const FIRST_BYTE_ROUNDS: usize = 500;
/// Idle streams held open for the memory measurement.
const IDLE_STREAMS: usize = 10_000;
/// Where to write the Markdown report.
const REPORT_ENV: &str = "SWITCHYARD_TUNNEL_BENCH_REPORT";

fn main() -> Result<()> {
    if let Ok(target) = std::env::var(ours::ROLE_ENV) {
        return ours::idle_child(&target);
    }
    let idle = raise_fd_limit()?;
    // Pinned before any runtime starts: the client's threads and rathole's
    // processes begin on the rest's core; the tunnel's are moved to the server's.
    let cores = Cores::from_env()?;
    if let Some(cores) = cores {
        cores.pin_self()?;
    }
    let rt = ours::runtime("client", 2)?;
    let report = rt.block_on(run(idle, cores))?;
    rt.shutdown_background();
    let text = report.markdown();
    println!("\n{text}");
    if let Some(path) = std::env::var_os(REPORT_ENV) {
        std::fs::write(&path, text).with_context(|| format!("writing {path:?}"))?;
    }
    Ok(())
}

async fn run(idle: usize, cores: Option<Cores>) -> Result<Report> {
    let bin = rathole::binary()?;
    let certs = Certs::make()?;
    let target = Target::start().await?;
    let mut report = Report::new(idle);
    report.pinning = cores.map_or_else(
        || "none, every process and thread on every core".to_owned(),
        |c| {
            format!(
                "the tunnel under test (our two halves' threads; rathole's server and \
                 client) pinned to core {}, the client and the target to core {}",
                c.server, c.rest
            )
        },
    );
    println!("pinning: {}", report.pinning);

    // TLS as negotiated, each through a one-off sniffing relay.
    {
        let listen = load::free_addr()?;
        let mut sniffer = Sniffer::start(listen).await?;
        let tunnel = Tunnel::start(1, listen, sniffer.addr(), None).await?;
        report.tls_ours = sniffer.negotiated().await?;
        drop(tunnel);
        let control = load::free_addr()?;
        let mut sniffer = Sniffer::start(control).await?;
        let rathole = Rathole::start(&bin, &certs, target.addr(), control, sniffer.addr()).await?;
        report.tls_rathole = sniffer.negotiated().await?;
        drop(rathole);
    }
    println!(
        "TLS: ours {}; rathole {}",
        report.tls_ours, report.tls_rathole
    );

    let listen = load::free_addr()?;
    let tunnel = Tunnel::start(ours::LINKS, listen, listen, cores.map(|c| c.server)).await?;
    let control = load::free_addr()?;
    let rathole = Rathole::start(&bin, &certs, target.addr(), control, control).await?;
    if let Some(cores) = cores {
        rathole.pin(cores)?;
    }
    // The CPU time so far of what carries a way: nothing of its own for direct.
    let cpu = |i: usize| -> Result<Option<f64>> {
        Ok(match i {
            1 => tunnel.cpu_seconds(),
            2 if cores.is_some() => Some(rathole.cpu_seconds()?),
            _ => None,
        })
    };
    let ways = [
        ("direct", Way::Tcp(target.addr())),
        ("ours", tunnel.way(target.addr())),
        ("rathole", rathole.way()),
    ];
    for (name, way) in &ways {
        load::first_byte(way, 20)
            .await
            .with_context(|| format!("{name}: warm-up"))?;
    }

    for (case, streams) in [(0, 1), (1, BULK_WIDE)] {
        for rep in 0..REPS {
            // Ours and rathole take turns going first.
            let order: [usize; 3] = if rep % 2 == 0 { [0, 1, 2] } else { [0, 2, 1] };
            for i in order {
                let (name, way) = &ways[i];
                let before = cpu(i)?;
                let d = load::bulk(way, streams, BULK_BYTES)
                    .await
                    .with_context(|| format!("{name}: bulk over {streams} stream(s)"))?;
                let mbps = BULK_BYTES as f64 / d.as_secs_f64() / 1e6;
                report.bulk[case][i].push(mbps);
                match (before, cpu(i)?) {
                    (Some(before), Some(after)) => {
                        let carries = BULK_BYTES as f64 / (after - before).max(1e-6) / 1e6;
                        println!(
                            "bulk x{streams:<2} {name:<8} {mbps:>8.0} MB/s, its core carries \
                             {carries:>6.0} MB/s"
                        );
                        report.carries[case][i].push(carries);
                    }
                    _ => println!("bulk x{streams:<2} {name:<8} {mbps:>8.0} MB/s"),
                }
            }
        }
    }
    for (i, (name, way)) in ways.iter().enumerate() {
        let d = load::first_byte(way, FIRST_BYTE_ROUNDS)
            .await
            .with_context(|| format!("{name}: first byte"))?;
        println!("first byte {name:<8} {:>8.1} µs", d.as_secs_f64() * 1e6);
        report.first_byte[i] = d;
    }
    drop(rathole);
    drop(tunnel);

    report.mem_ours = idle_ours(&target, idle)
        .await
        .context("ours: idle streams")?;
    println!("idle ours    {:.1} KiB per stream", report.mem_ours);
    report.mem_rathole = idle_rathole(&bin, &certs, &target, idle)
        .await
        .context("rathole: idle connections")?;
    println!("idle rathole {:.1} KiB per connection", report.mem_rathole);
    Ok(report)
}

/// KiB of `VmRSS` per idle stream in a fresh process holding both halves.
async fn idle_ours(target: &Target, n: usize) -> Result<f64> {
    let exe = std::env::current_exe()?;
    let mut child = tokio::process::Command::new(exe)
        .env(ours::ROLE_ENV, target.addr().to_string())
        .env(ours::STREAMS_ENV, n.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the idle child")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
    let mut next = async || -> Result<String> {
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .context("the idle child said nothing for 120 s")??;
        line.context("the idle child ended early")
    };
    let kib = |line: String, key: &str| -> Result<f64> {
        match line.strip_prefix(key).map(|v| v.trim().parse::<f64>()) {
            Some(Ok(v)) => Ok(v),
            _ => bail!("the idle child said {line:?}, expected `{key} KIB`"),
        }
    };
    let before = kib(next().await?, "before")?;
    let opened = next().await?;
    if opened != "opened" {
        bail!("the idle child said {opened:?}, expected `opened`");
    }
    load::wait_for(
        "the target holding every stream",
        Duration::from_secs(60),
        || target.idle() >= n,
    )
    .await?;
    stdin.write_all(b"measure\n").await?;
    let after = kib(next().await?, "after")?;
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let _ = child.kill().await;
    load::wait_for(
        "the target seeing the streams close",
        Duration::from_secs(30),
        || target.idle() == 0,
    )
    .await?;
    Ok((after - before) / n as f64)
}

/// KiB of `VmRSS` (server plus client) per idle forwarded connection, with fresh
/// rathole processes.
async fn idle_rathole(
    bin: &std::path::Path,
    certs: &Certs,
    target: &Target,
    n: usize,
) -> Result<f64> {
    let control = load::free_addr()?;
    let rathole = Rathole::start(bin, certs, target.addr(), control, control).await?;
    let way = rathole.way();
    load::first_byte(&way, 20).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss = || -> Result<f64> {
        let mut sum = 0;
        for pid in rathole.pids() {
            sum += load::rss_kib(pid)?;
        }
        Ok(sum as f64)
    };
    let before = rss()?;
    // In steps, each through to the target before the next: rathole's server takes
    // one data channel per visitor, one visitor at a time.
    let mut held = Vec::with_capacity(n);
    while held.len() < n {
        held.extend(load::hold(&way, (n - held.len()).min(500)).await?);
        let want = held.len();
        load::wait_for(
            &format!("the target holding {want} connections"),
            Duration::from_secs(60),
            || target.idle() >= want,
        )
        .await
        .with_context(|| format!("the target holds {}", target.idle()))?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss()?;
    drop(held);
    drop(rathole);
    Ok((after - before) / n as f64)
}

/// Raises the open-files limit so 10,000 idle connections fit in every process
/// (rathole's server holds two descriptors per connection, as does this process);
/// returns how many idle streams to measure: [`IDLE_STREAMS`], or the most whole
/// thousands that fit when the hard limit can't be raised (it takes
/// `CAP_SYS_RESOURCE`).
#[allow(unsafe_code)] // getrlimit/setrlimit: plain values in, a status out.
fn raise_fd_limit() -> Result<usize> {
    let per_conn: libc::rlim_t = 2;
    let spare: libc::rlim_t = 1024;
    let want = per_conn * IDLE_STREAMS as libc::rlim_t + spare;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the call to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        bail!(
            "getrlimit(RLIMIT_NOFILE): {}",
            std::io::Error::last_os_error()
        );
    }
    let raised = libc::rlimit {
        rlim_cur: want.max(lim.rlim_cur),
        rlim_max: want.max(lim.rlim_max),
    };
    // SAFETY: `raised` is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        return Ok(IDLE_STREAMS);
    }
    let all = libc::rlimit {
        rlim_cur: lim.rlim_max,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: `all` is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &all) } != 0 {
        bail!(
            "setrlimit(RLIMIT_NOFILE): {}",
            std::io::Error::last_os_error()
        );
    }
    let fit = lim.rlim_max.saturating_sub(spare) / per_conn / 1000 * 1000;
    let n = usize::try_from(fit)
        .unwrap_or(IDLE_STREAMS)
        .min(IDLE_STREAMS);
    if n < IDLE_STREAMS {
        println!(
            "the open-files hard limit is {} and can't be raised: measuring {n} idle streams",
            lim.rlim_max
        );
    }
    if n == 0 {
        bail!("the open-files hard limit {} is too low", lim.rlim_max);
    }
    Ok(n)
}
