//! Where PostgreSQL's binaries are: the distribution's server, not a pinned release
//! (the panel needs no newer feature, and a distribution's server is what users run).
//!
//! `cargo xtask peers` looks with [`find_bin_dir`] before installing Debian's
//! `postgresql`; testkit looks with it to run a private cluster. Both take
//! [`BIN_ENV`], when set, as it is, and say what to do when it is wrong.

use std::fs;
use std::path::{Path, PathBuf};

/// The variable naming the directory holding [`PROGRAMS`]; `cargo xtask test` sets it.
pub const BIN_ENV: &str = "SWITCHYARD_PG_BIN";

/// The programs the tests run, all from one directory.
pub const PROGRAMS: [&str; 5] = ["initdb", "postgres", "pg_ctl", "pg_isready", "psql"];

/// Where Debian installs each version's binaries: `<DEBIAN_ROOT>/<version>/bin`.
pub const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The directory holding every one of [`PROGRAMS`]: the highest version under
/// `/usr/lib/postgresql/*/bin` (Debian's layout), else the directory `initdb` on
/// `PATH` resolves to. [`BIN_ENV`] is not read here: callers take it first.
pub fn find_bin_dir() -> Option<PathBuf> {
    debian_bin_dirs(Path::new(DEBIAN_ROOT))
        .into_iter()
        .chain(on_path("initdb"))
        .find(|d| has_programs(d))
}

/// Whether `dir` holds every one of [`PROGRAMS`].
pub fn has_programs(dir: &Path) -> bool {
    PROGRAMS.iter().all(|p| dir.join(p).is_file())
}

/// `root/<version>/bin` for every version directory, highest version first.
fn debian_bin_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(Vec<u64>, PathBuf)> = entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?;
            let version = name
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u64>, _>>()
                .ok()?;
            Some((version, path.join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

/// The real directory of `program` on `PATH` (symlinks resolved, since
/// `/usr/local/bin/initdb` may point into the version's own directory).
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .and_then(|p| fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_version_first() {
        let root = tempfile::tempdir().unwrap();
        for v in ["9.6", "15", "16", "notaversion"] {
            fs::create_dir_all(root.path().join(v).join("bin")).unwrap();
        }
        let dirs = debian_bin_dirs(root.path());
        let names: Vec<_> = dirs
            .iter()
            .map(|d| d.parent().unwrap().file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["16", "15", "9.6"]);
    }
}
