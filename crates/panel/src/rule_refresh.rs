//! `switchyard panel rules refresh`: the maintained lists of the rule sets, from the
//! Debian packages that carry them ([`PACKAGES`]), into
//! `DATA_DIR/rule-sets/maintained/` (`country-ru.txt`, `country-ir.txt`,
//! `country-cn.txt`, `ads.txt`, and `SOURCES`: which package, version and sha256 each
//! came from). The panel serves them at once, added to the built-in lists and the
//! operator's own files.
//!
//! The packages are `apt-get download`ed (the host's apt sources decide the version:
//! the one its Debian or Ubuntu release ships, security updates included) or given as
//! `.deb` files, and unpacked with `dpkg-deb`. Each list is written to a temporary
//! file and renamed, so the panel never serves half a list; a failure leaves the
//! previous lists in place.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::rule_data::{adblock_domains, tor_geoip};

/// The packages the lists come from.
pub const PACKAGES: [&str; 2] = ["tor-geoipdb", "webext-ublock-origin-firefox"];

/// The directory under the rule sets' where the maintained lists live.
pub const MAINTAINED: &str = "maintained";

/// The countries whose networks are kept.
const COUNTRIES: [&str; 3] = switchyard_proto::routing::COUNTRIES;

/// Where uBlock Origin's copies of the lists are, inside its package.
const UBLOCK_LISTS: [&str; 2] = [
    "usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/uBlock0@raymondhill.net/assets/thirdparties/easylist/easylist.txt",
    "usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/uBlock0@raymondhill.net/assets/thirdparties/easylist/easyprivacy.txt",
];

/// Why the lists could not be refreshed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RefreshError {
    /// A program (`apt-get`, `dpkg-deb`) could not run or failed.
    #[error("{program} {what}: {detail}")]
    Program {
        /// The program.
        program: &'static str,
        /// What it was asked to do.
        what: String,
        /// Why it failed (its error output).
        detail: String,
    },
    /// A package lacks a file the lists are read from.
    #[error("{package}: {file} is missing from the package")]
    Missing {
        /// The package.
        package: String,
        /// The file.
        file: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RefreshError + '_ {
    move |source| RefreshError::Io {
        path: path.to_owned(),
        source,
    }
}

/// What a refresh wrote: each list's name and how many entries it holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// `(list, entries)`, in order.
    pub lists: Vec<(String, usize)>,
    /// The `SOURCES` text.
    pub sources: String,
}

fn run(program: &'static str, args: &[&str], dir: &Path) -> Result<String, RefreshError> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| RefreshError::Program {
            program,
            what: args.join(" "),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(RefreshError::Program {
            program,
            what: args.join(" "),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Downloads [`PACKAGES`] with `apt-get download` into `dir`; their paths.
pub fn download(dir: &Path) -> Result<Vec<PathBuf>, RefreshError> {
    let mut args = vec!["download"];
    args.extend(PACKAGES);
    run("apt-get", &args, dir)?;
    debs_in(dir)
}

/// The `.deb` files in `dir`, sorted.
pub fn debs_in(dir: &Path) -> Result<Vec<PathBuf>, RefreshError> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io_err(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    out.sort();
    Ok(out)
}

/// Reads the lists out of `debs` and writes them under `rule_sets` (the panel's
/// `DATA_DIR/rule-sets`).
pub fn refresh(rule_sets: &Path, debs: &[PathBuf]) -> Result<Refreshed, RefreshError> {
    let work = tempfile::tempdir().map_err(io_err(Path::new("a temporary directory")))?;
    let mut sources = String::from("# package version sha256\n");
    let mut lists: Vec<(String, Vec<String>)> = Vec::new();
    for deb in debs {
        let deb_text = deb.display().to_string();
        let fields = run(
            "dpkg-deb",
            &["--show", "--showformat=${Package} ${Version}", &deb_text],
            work.path(),
        )?;
        let mut fields = fields.split_whitespace();
        let (package, version) = (
            fields.next().unwrap_or_default().to_owned(),
            fields.next().unwrap_or_default().to_owned(),
        );
        let bytes = fs::read(deb).map_err(io_err(deb))?;
        let sha: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        sources.push_str(&format!("{package} {version} {sha}\n"));
        let root = work.path().join(&package);
        let root_text = root.display().to_string();
        run("dpkg-deb", &["-x", &deb_text, &root_text], work.path())?;
        let read = |file: &str| {
            fs::read_to_string(root.join(file)).map_err(|_| RefreshError::Missing {
                package: package.clone(),
                file: format!("/{file}"),
            })
        };
        match package.as_str() {
            "tor-geoipdb" => {
                let mut nets = tor_geoip(&read("usr/share/tor/geoip")?, false, &COUNTRIES);
                for (cc, v6) in tor_geoip(&read("usr/share/tor/geoip6")?, true, &COUNTRIES) {
                    nets.entry(cc).or_default().extend(v6);
                }
                for cc in COUNTRIES {
                    let list = nets.remove(cc).unwrap_or_default();
                    lists.push((switchyard_proto::routing::country_set(cc), list));
                }
            }
            "webext-ublock-origin-firefox" => {
                let mut text = String::new();
                for file in UBLOCK_LISTS {
                    text.push_str(&read(file)?);
                    text.push('\n');
                }
                lists.push((
                    switchyard_proto::routing::ADS_SET.to_owned(),
                    adblock_domains(&text),
                ));
            }
            _ => {}
        }
    }
    let dir = rule_sets.join(MAINTAINED);
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let mut done = Refreshed {
        lists: Vec::new(),
        sources: sources.clone(),
    };
    for (name, list) in &lists {
        let mut text = String::new();
        for line in list {
            text.push_str(line);
            text.push('\n');
        }
        write_atomically(&dir.join(format!("{name}.txt")), &text)?;
        done.lists.push((name.clone(), list.len()));
    }
    write_atomically(&dir.join("SOURCES"), &sources)?;
    Ok(done)
}

/// Writes `path` whole: a temporary file, flushed to disk, renamed into place, and
/// the directory flushed, so a crash leaves the old list or the new one, never half.
fn write_atomically(path: &Path, text: &str) -> Result<(), RefreshError> {
    use std::io::Write as _;
    let tmp = path.with_extension("tmp");
    let mut file = fs::File::create(&tmp).map_err(io_err(&tmp))?;
    file.write_all(text.as_bytes()).map_err(io_err(&tmp))?;
    file.sync_all().map_err(io_err(&tmp))?;
    fs::rename(&tmp, path).map_err(io_err(path))?;
    if let Some(dir) = path.parent() {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(dir))?;
    }
    Ok(())
}
