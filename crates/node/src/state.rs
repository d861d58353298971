//! The state directory: the node's own files (the last good config, the traffic
//! journal, the control token), private to the node's user.
//!
//! The directory is `0700` and every file in it `0600`, tightened on start when an
//! older node left them wider. Whole files are replaced atomically (a temporary file,
//! synced, renamed over the old one, then the directory synced), so a crash leaves the
//! old file or the new one, never half of either. Everything here blocks: async
//! callers run it on the blocking pool.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::config::Secret;

/// Mode of the state directory: only the node's user may list or enter it.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file in it: only the node's user may read it.
pub const FILE_MODE: u32 = 0o600;
/// The control API's bearer token, in the state directory.
pub const TOKEN_FILE: &str = "control.token";
/// Random bytes in a token (shown as twice as many hex digits).
const TOKEN_BYTES: usize = 32;

/// A state file that can't be read or written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StateError {
    /// The file or directory can't be read or written.
    #[error("state file {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The token file holds something that is not a token.
    #[error(
        "{path}: not a control token ({TOKEN_BYTES} random bytes as hex); delete it and a new one is made"
    )]
    BadToken {
        /// The file.
        path: PathBuf,
    },
    /// No randomness for a new token.
    #[error("no system randomness for a control token")]
    Random,
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> StateError + '_ {
    move |source| StateError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Creates `dir` (and its parents) and makes it `0700`.
pub fn create_dir(dir: &Path) -> Result<(), StateError> {
    fs::create_dir_all(dir).map_err(at(dir))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE)).map_err(at(dir))
}

/// Makes an existing file `0600` (one an older node wrote wider).
pub fn tighten(path: &Path) -> Result<(), StateError> {
    match fs::metadata(path) {
        Ok(m) if m.permissions().mode() & 0o777 != FILE_MODE => {
            fs::set_permissions(path, fs::Permissions::from_mode(FILE_MODE)).map_err(at(path))
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(at(path)(e)),
    }
}

/// Syncs a directory, so a file created or renamed in it survives a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Opens `path` for appending, creating it `0600`; `true` when it was created (the
/// caller syncs the directory).
pub fn open_append(path: &Path) -> io::Result<(File, bool)> {
    let existed = path.exists();
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)?;
    Ok((f, !existed))
}

/// Replaces `path` with `bytes` atomically; the file is `0600`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let tmp = dir.join(name);
    write_synced(&tmp, bytes)?;
    fs::rename(&tmp, path).map_err(at(path))?;
    sync_dir(dir).map_err(at(dir))
}

/// Writes `bytes` to `path` (`0600`) and syncs it; removes it on failure.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    let write = || -> io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(FILE_MODE)
            .open(path)?;
        f.write_all(bytes)?;
        f.sync_all()
    };
    write().map_err(|e| {
        let _ = fs::remove_file(path);
        at(path)(e)
    })
}

/// The control token in `dir`: read, or made on first use (32 random bytes, hex,
/// written `0600`). Two processes making it at once (the node and `switchyard node
/// token`) end up with the same one: only the first is linked into place.
pub fn load_or_create_token(dir: &Path) -> Result<Secret, StateError> {
    let path = dir.join(TOKEN_FILE);
    let mut text = String::new();
    match File::open(&path) {
        Ok(mut f) => {
            f.read_to_string(&mut text).map_err(at(&path))?;
            tighten(&path)?;
            let token = text.trim();
            if token.len() != 2 * TOKEN_BYTES || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(StateError::BadToken { path });
            }
            Ok(Secret::new(token))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_dir(dir)?;
            let mut bytes = [0u8; TOKEN_BYTES];
            rustls::crypto::ring::default_provider()
                .secure_random
                .fill(&mut bytes)
                .map_err(|_| StateError::Random)?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let tmp = dir.join(format!("{TOKEN_FILE}.{}.tmp", std::process::id()));
            write_synced(&tmp, format!("{hex}\n").as_bytes())?;
            let linked = fs::hard_link(&tmp, &path);
            let _ = fs::remove_file(&tmp);
            match linked {
                Ok(()) => {
                    sync_dir(dir).map_err(at(dir))?;
                    Ok(Secret::new(hex))
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => load_or_create_token(dir),
                Err(e) => Err(at(&path)(e)),
            }
        }
        Err(e) => Err(at(&path)(e)),
    }
}

/// Runs blocking file I/O on the blocking pool, off the async workers. A panic in `f`
/// is the caller's panic; a runtime shutting down before `f` ran is an error.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, io::Error> {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => Ok(v),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(io::Error::other("the node is shutting down")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_token_is_made_once_private_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let a = load_or_create_token(&dir).unwrap();
        assert_eq!(a.expose().len(), 64);
        assert_eq!(mode(&dir.join(TOKEN_FILE)), 0o600);
        assert_eq!(mode(&dir), 0o700);
        let b = load_or_create_token(&dir).unwrap();
        assert_eq!(a, b, "the same token on the next start");
        fs::write(dir.join(TOKEN_FILE), "short").unwrap();
        assert!(matches!(
            load_or_create_token(&dir),
            Err(StateError::BadToken { .. })
        ));
    }

    #[test]
    fn atomic_writes_are_private_and_wide_files_are_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(mode(&p), 0o600);
        assert!(!tmp.path().join("f.json.tmp").exists());
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        tighten(&p).unwrap();
        assert_eq!(mode(&p), 0o600);
    }
}
