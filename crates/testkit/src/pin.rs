//! Pinning for the benchmarks: the server under test on one core, everything else
//! (the bench itself, its targets, the client programs) on another, so that a
//! server's figures are what one core carries and not what the client left it.
//!
//! Pinning goes through `taskset -a -p` (util-linux, on every Debian), which sets
//! the affinity of every thread of a process; threads started later inherit it.

use std::process::Command;

use anyhow::{Context, Result, bail};

/// Set to `0` to run a benchmark without pinning (every process on every core).
pub const PIN_ENV: &str = "SWITCHYARD_BENCH_PIN";

/// Where a benchmark's processes run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cores {
    /// The one core of the server under test (ours and the peer alike).
    pub server: usize,
    /// The core of everything else: the bench, its targets, the clients.
    pub rest: usize,
}

impl Cores {
    /// The pinning this machine and [`PIN_ENV`] allow: core 0 for the server and the
    /// last core for the rest when there are two or more and pinning is not turned
    /// off; `None` otherwise.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(PIN_ENV).as_deref().map(str::trim) {
            Ok("0") => return Ok(None),
            Err(_) | Ok("" | "1") => {}
            Ok(other) => bail!("{PIN_ENV}={other:?}: set it to 0 (no pinning) or unset it"),
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Ok((cores >= 2).then_some(Self {
            server: 0,
            rest: cores - 1,
        }))
    }

    /// Pins this process (every thread it has; later ones inherit) to the rest's
    /// core. Child processes started afterwards start there too.
    pub fn pin_self(self) -> Result<()> {
        pin(std::process::id(), self.rest)
    }

    /// Pins process `pid`, every thread, to the server's core.
    pub fn pin_server(self, pid: u32) -> Result<()> {
        pin(pid, self.server)
    }

    /// "server on core 0, the rest on core 1", for reports.
    pub fn describe(self) -> String {
        format!(
            "the server under test pinned to core {}, the bench, its targets and the \
             client programs to core {}",
            self.server, self.rest
        )
    }
}

/// How many times [`pin`] walks a process's threads before it gives up: a thread
/// started while taskset walks them may keep the old affinity.
const PIN_ATTEMPTS: usize = 5;

/// Pins the calling thread alone to `core`; returns its thread id (for reading its
/// CPU time from `/proc/self/task/TID/stat`).
pub fn pin_this_thread(core: usize) -> Result<u32> {
    let link = std::fs::read_link("/proc/thread-self").context("reading /proc/thread-self")?;
    let tid: u32 = link
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("/proc/thread-self is {}", link.display()))?;
    let out = Command::new("taskset")
        .args(["-p", "-c", &core.to_string(), &tid.to_string()])
        .output()
        .context("running taskset (util-linux) to pin a thread to a core")?;
    if !out.status.success() {
        bail!(
            "taskset could not pin thread {tid} to core {core}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(tid)
}

/// A process's CPU time at one moment: each thread's time on a CPU, to the
/// nanosecond (`/proc/PID/task/*/schedstat`), and the process's total in the 10 ms
/// ticks of its `stat` file, which keeps the time of threads that have ended. A
/// download of a tenth of a second is ten ticks, so a ratio of two tick counts
/// moves by a tenth with one tick; the threads' nanoseconds do not.
#[derive(Clone, Debug)]
pub struct CpuTime {
    ticks: f64,
    threads: std::collections::BTreeMap<u32, f64>,
}

impl CpuTime {
    /// Process `pid`'s CPU time now.
    pub fn of(pid: u32) -> Result<Self> {
        let ticks = cpu_seconds(&format!("/proc/{pid}/stat"))?;
        let dir = format!("/proc/{pid}/task");
        let mut threads = std::collections::BTreeMap::new();
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
            let entry = entry.with_context(|| format!("reading {dir}"))?;
            let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            // A thread that ends between the listing and the read is skipped.
            let path = entry.path().join("schedstat");
            if let Ok(s) = thread_cpu_seconds(&path.to_string_lossy()) {
                threads.insert(tid, s);
            }
        }
        Ok(Self { ticks, threads })
    }

    /// Seconds of CPU time used between `earlier` and this moment: each thread's time
    /// since then (all of it for a thread that started since). A thread that ended
    /// in between took its time with it; where the ticks say more than two ticks
    /// beyond that, the ticks' difference is the answer.
    pub fn since(&self, earlier: &Self) -> f64 {
        let exact: f64 = self
            .threads
            .iter()
            .map(|(tid, now)| now - earlier.threads.get(tid).copied().unwrap_or(0.0))
            .sum();
        let ticks = self.ticks - earlier.ticks;
        if exact + 0.02 < ticks { ticks } else { exact }
    }
}

/// CPU time of one thread, in seconds, to the nanosecond, from its `schedstat` file
/// (`/proc/PID/task/TID/schedstat`: time on a CPU in nanoseconds first).
pub fn thread_cpu_seconds(path: &str) -> Result<f64> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let ns: u64 = text
        .split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .with_context(|| format!("{path}: no time on a CPU"))?;
    Ok(ns as f64 / 1e9)
}

/// CPU time (user and system) a process or thread has used, in seconds, from the
/// `stat` file at `path` (`/proc/PID/stat`, `/proc/self/task/TID/stat`).
pub fn cpu_seconds(path: &str) -> Result<f64> {
    // USER_HZ: 100 on Linux.
    const TICKS: f64 = 100.0;
    let stat = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    // After the command name (in parentheses, may hold spaces): state is field 3,
    // utime 14, stime 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| -> Result<f64> {
        let v: u64 = fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .with_context(|| format!("{path}: no field {}", i + 3))?;
        Ok(v as f64 / TICKS)
    };
    Ok(tick(11)? + tick(12)?)
}

/// Sets the CPU affinity of every thread of `pid` to `core` alone, and checks that
/// every thread it has now runs there.
pub fn pin(pid: u32, core: usize) -> Result<()> {
    let want = core.to_string();
    for _ in 0..PIN_ATTEMPTS {
        let out = Command::new("taskset")
            .args(["-a", "-p", "-c", &want, &pid.to_string()])
            .output()
            .context("running taskset (util-linux) to pin a process to a core")?;
        if !out.status.success() {
            bail!(
                "taskset could not pin process {pid} to core {core}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        if threads(pid)?.into_iter().all(|tid| {
            allowed_of(&format!("/proc/{pid}/task/{tid}/status")).ok() == Some(want.clone())
        }) {
            return Ok(());
        }
    }
    bail!("process {pid} kept starting threads off core {core} after {PIN_ATTEMPTS} attempts")
}

/// The thread ids of process `pid`.
fn threads(pid: u32) -> Result<Vec<u32>> {
    let dir = format!("/proc/{pid}/task");
    let mut tids = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
        if let Some(tid) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            tids.push(tid);
        }
    }
    Ok(tids)
}

/// The cores process `pid`'s main thread may run on, as the kernel lists them
/// (`Cpus_allowed_list` in `/proc/PID/status`: `0`, `0-1`).
pub fn allowed(pid: u32) -> Result<String> {
    allowed_of(&format!("/proc/{pid}/status"))
}

fn allowed_of(path: &str) -> Result<String> {
    let status = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_owned())
        .with_context(|| format!("{path} has no Cpus_allowed_list"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_child_runs_on_that_core_alone() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = child.id();
        let before = allowed(pid).expect("read");
        pin(pid, 0).expect("pin");
        let after = allowed(pid).expect("read");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(after, "0", "was {before}");
    }

    /// This thread's CPU time by the kernel's own clock for it, a reference apart
    /// from the files read here.
    fn this_threads_clock() -> f64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
    }

    /// Keeps this thread busy until its own CPU clock shows `seconds` more, however
    /// long the machine (other tests, other processes) makes that take.
    fn busy_for_cpu(seconds: f64) -> f64 {
        let start = this_threads_clock();
        let mut x = 0u64;
        loop {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            let now = this_threads_clock();
            if now - start >= seconds {
                return now;
            }
        }
    }

    #[test]
    fn a_thread_pins_itself_and_its_cpu_time_is_read() {
        let tid = std::thread::spawn(|| {
            let tid = pin_this_thread(0).expect("pin");
            let status =
                std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).expect("status");
            assert!(status.contains("Cpus_allowed_list:\t0\n"), "{status}");
            // Busy for 200 ms of CPU: its CPU time shows it, the ticks to within a few
            // ticks, schedstat to within the slice the kernel has not yet accounted.
            let clock = busy_for_cpu(0.2);
            let ticks = cpu_seconds(&format!("/proc/self/task/{tid}/stat")).expect("stat");
            assert!(
                (clock - 0.05..=clock + 0.05).contains(&ticks),
                "{ticks} s in ticks, {clock} s by the thread's clock"
            );
            let exact =
                thread_cpu_seconds(&format!("/proc/self/task/{tid}/schedstat")).expect("schedstat");
            assert!(
                (clock - 0.02..=clock + 0.001).contains(&exact),
                "{exact} s in schedstat, {clock} s by the thread's clock"
            );
            tid
        })
        .join()
        .expect("the thread");
        assert!(tid > 0);
    }

    /// A process's CPU time over a stretch, to the nanosecond: a thread busy for
    /// 100 ms of CPU shows at least that much, and the process (this test's threads
    /// alone: nextest runs each test in its own process) not much more.
    #[test]
    fn a_processs_cpu_time_over_a_stretch_is_read_to_the_nanosecond() {
        let before = CpuTime::of(std::process::id()).expect("the process");
        let used = std::thread::spawn(move || {
            busy_for_cpu(0.1);
            CpuTime::of(std::process::id())
                .expect("the process")
                .since(&before)
        })
        .join()
        .expect("the thread");
        assert!((0.08..0.5).contains(&used), "{used} s over 100 ms of CPU");
    }

    #[test]
    fn a_missing_process_is_an_error_naming_it() {
        // Process ids are at most 2^22 on Linux.
        let err = pin(1 << 23, 0).expect_err("no such process").to_string();
        assert!(err.contains(&(1u32 << 23).to_string()), "{err}");
    }
}
