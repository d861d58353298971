//! `loadgen`: keep-alive HTTP/1.1 load against one server, one JSON line of results.
//!
//! ```text
//! loadgen --url http://127.0.0.1:PORT/path [--url-file FILE] [--connections 64]
//!         [--duration 10s] [--warmup 0s] [--timeout 10s] [--threads N]
//!         [-H 'Name: value']...
//! ```
//!
//! Prints `{"requests":N,"seconds":S,"rps":R,"p50_ms":..,"p90_ms":..,"p99_ms":..,
//! "max_ms":..,"errors":E,"non_2xx":K}` on standard output; see
//! `switchyard_testkit::load` for what each figure means. `cargo xtask bench panel`
//! runs it in release against the panel.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use switchyard_testkit::load::{self, Options, Target};

/// Keep-alive HTTP/1.1 load against one server; prints one JSON line of results.
#[derive(Parser)]
#[command(name = "loadgen")]
struct Cli {
    /// `http://IP:PORT/PATH`: the server, and the path requested unless --url-file
    /// gives the paths.
    #[arg(long)]
    url: String,
    /// A file of paths (`/sub/TOKEN`) or URLs on the same server, one per line;
    /// requests go through them in turn.
    #[arg(long)]
    url_file: Option<PathBuf>,
    /// Connections open at once, each with one request in flight.
    #[arg(long, default_value_t = load::DEFAULT_CONNECTIONS)]
    connections: usize,
    /// The measured window (10s, 500ms, 2m).
    #[arg(long, default_value = "10s", value_parser = load::parse_duration)]
    duration: Duration,
    /// Load before the measured window, not counted.
    #[arg(long, default_value = "0s", value_parser = load::parse_duration)]
    warmup: Duration,
    /// The most one request may take before it counts as an error.
    #[arg(long, default_value = "10s", value_parser = load::parse_duration)]
    timeout: Duration,
    /// Runtime worker threads (default: the number of cores).
    #[arg(long)]
    threads: Option<usize>,
    /// An extra request header, `Name: value`; repeatable.
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let target = Target::parse(&cli.url)?;
    let mut options = Options::new(target);
    if let Some(file) = &cli.url_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading the URL file {}", file.display()))?;
        options.paths = Options::paths_from_file(&options.target, &text)
            .with_context(|| format!("the URL file {}", file.display()))?;
    }
    for header in &cli.headers {
        let (name, value) = header
            .split_once(':')
            .with_context(|| format!("header {header:?}: say `Name: value`"))?;
        options
            .headers
            .push((name.trim().to_owned(), value.trim().to_owned()));
    }
    options.connections = cli.connections;
    options.duration = cli.duration;
    options.warmup = cli.warmup;
    options.timeout = cli.timeout;

    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = cli.threads {
        runtime.worker_threads(threads);
    }
    let report = runtime
        .enable_all()
        .build()
        .context("starting the tokio runtime")?
        .block_on(load::run(options))?;
    println!("{}", report.to_json());
    Ok(())
}
