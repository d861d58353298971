//! Binaries handed over to the node (by its panel): `PUT /v1/binary` keeps one in the
//! state directory, `<state_dir>/bin/switchyard-<sha256>`, and `POST /v1/upgrade`
//! with `"binary": "<sha256>"` starts it ([`crate::handover`]); `bin/current` then
//! names it, so a restart runs it again (`switchyard node` execs it at start).
//!
//! The node's service cannot write the system's binary (`ProtectSystem=strict`): a
//! handed-over binary lives in the node's own directory and is only ever run by the
//! node's own user. An upload is hostile input: it is streamed to a `.part` file
//! (never whole in memory), hashed as it comes, bounded in size ([`MAX_BYTES`]) and
//! time ([`UPLOAD_DEADLINE`]), one at a time per state directory; only a file whose
//! sha256 is the one announced is renamed into place (`0755`).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

/// The directory of handed-over binaries, in the state directory.
pub const BIN_DIR: &str = "bin";
/// The file in [`BIN_DIR`] naming (by sha256) the binary a restart runs.
pub const CURRENT_FILE: &str = "current";
/// What every handed-over binary's file name starts with (the sha256 follows).
pub const PREFIX: &str = "switchyard-";
/// The header announcing an upload's sha256 (64 hex digits); `?sha256=` works too.
pub const SHA256_HEADER: &str = "x-switchyard-sha256";
/// The largest binary taken: 256 MiB. A release build is about 200 MB with its line
/// tables, the `dist` build a fifth of that; anything larger is refused (413) before
/// it fills the state directory's disk.
pub const MAX_BYTES: u64 = 256 << 20;
/// An upload must be over within this: 10 minutes carry 256 MiB at under 4 Mbit/s.
pub const UPLOAD_DEADLINE: Duration = Duration::from_secs(600);
/// Chunks in flight between the request and the file writer (on the blocking pool).
const CHUNKS_IN_FLIGHT: usize = 8;

/// Why an upload was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// Another upload into this state directory runs.
    #[error("another binary is being uploaded to this node; try again when it ends")]
    Busy,
    /// The sha256 is missing or not 64 hex digits.
    #[error("sha256: {0}")]
    BadSha256(&'static str),
    /// The body is larger than the limit.
    #[error("the binary is larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The body's sha256 is not the one announced.
    #[error("sha256: the body's is {got}, not {expected}; nothing was kept")]
    Mismatch {
        /// The announced hash.
        expected: String,
        /// The body's.
        got: String,
    },
    /// The body did not arrive within the deadline.
    #[error("the upload took longer than {secs} s; nothing was kept")]
    Timeout {
        /// The deadline.
        secs: u64,
    },
    /// The body broke off.
    #[error("the body broke off: {0}")]
    Body(String),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// What `PUT /v1/binary` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Received {
    /// The binary's sha256 (64 lowercase hex digits).
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// The directory of handed-over binaries of the node whose state is in `state_dir`.
pub fn bin_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(BIN_DIR)
}

/// The file a binary with `sha256` (as [`parse_sha256`] returns it) is kept in.
pub fn binary_path(state_dir: &Path, sha256: &str) -> PathBuf {
    bin_dir(state_dir).join(format!("{PREFIX}{sha256}"))
}

/// `text` as a sha256: 64 hex digits, returned lowercase.
pub fn parse_sha256(text: &str) -> Result<String, UploadError> {
    let text = text.trim();
    if text.len() != 64 {
        return Err(UploadError::BadSha256("must be 64 hex digits"));
    }
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(UploadError::BadSha256("must be hex digits only"));
    }
    Ok(text.to_ascii_lowercase())
}

/// The sha256 `bin/current` names, when it names one well. Blocks.
pub fn current(state_dir: &Path) -> Option<String> {
    let path = bin_dir(state_dir).join(CURRENT_FILE);
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(std::fs::File::open(path).ok()?, 128),
        &mut text,
    )
    .ok()?;
    parse_sha256(&text).ok()
}

/// Makes `bin/current` name `sha256` (atomically: a restart sees the old name or the
/// new one). Blocks.
pub fn set_current(state_dir: &Path, sha256: &str) -> std::io::Result<()> {
    switchyard_channel::fs::write_atomic(
        &bin_dir(state_dir).join(CURRENT_FILE),
        format!("{sha256}\n").as_bytes(),
    )
}

/// Removes `bin/current`: a restart runs the installed binary again. Whether there
/// was one. Blocks.
pub fn clear_current(state_dir: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(bin_dir(state_dir).join(CURRENT_FILE)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The sha256 of the file at `path`, as hex. Blocks.
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(switchyard_config::hex::encode(&hasher.finalize()))
}

static THIS_EXECUTABLE: OnceLock<String> = OnceLock::new();
static HASHING: std::sync::Once = std::sync::Once::new();

/// This executable's sha256, once known: the first call starts hashing it on a
/// thread of its own (never an async worker), and answers `None` until it is done.
pub fn this_executable_sha256() -> Option<&'static str> {
    HASHING.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("hash-self".into())
            .spawn(|| {
                // /proc/self/exe opens the file this process runs even once it has
                // been replaced at its path.
                match hash_file(Path::new("/proc/self/exe")) {
                    Ok(h) => {
                        let _ = THIS_EXECUTABLE.set(h);
                    }
                    Err(e) => tracing::warn!("hashing this executable: {e}"),
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("hashing this executable: {e}");
        }
    });
    THIS_EXECUTABLE.get().map(String::as_str)
}

/// State directories with an upload under way (one at a time in each).
static UPLOADING: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// The right to upload into one state directory, given back when dropped.
#[derive(Debug)]
pub struct UploadSlot(PathBuf);

impl UploadSlot {
    /// The slot of `state_dir`, unless an upload holds it.
    pub fn take(state_dir: &Path) -> Result<Self, UploadError> {
        let mut all = UPLOADING.lock().unwrap_or_else(|p| p.into_inner());
        if !all.insert(state_dir.to_owned()) {
            return Err(UploadError::Busy);
        }
        Ok(Self(state_dir.to_owned()))
    }
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        UPLOADING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.0);
    }
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> UploadError + '_ {
    move |source| UploadError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Takes `body` into `<state_dir>/bin/switchyard-<sha256>` (with the slot held):
/// streamed into a `.part` file and hashed as it comes, at most `limit` bytes, within
/// `deadline`; kept (synced, `0755`, renamed) only when its sha256 is `sha256`,
/// otherwise the part file is removed. Other `switchyard-*` files of the directory,
/// but the running executable's, are removed then.
pub async fn receive<S, E>(
    _slot: &UploadSlot,
    state_dir: &Path,
    sha256: &str,
    body: S,
    limit: u64,
    deadline: Duration,
) -> Result<Received, UploadError>
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: std::fmt::Display,
{
    let dir = bin_dir(state_dir);
    let part = dir.join(format!("{PREFIX}{sha256}.part"));
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(CHUNKS_IN_FLIGHT);
    let (d, p) = (dir.clone(), part.clone());
    let writer = tokio::task::spawn_blocking(move || write_part(&d, &p, rx));
    let reading = async {
        let mut body = std::pin::pin!(body);
        let mut total: u64 = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| UploadError::Body(e.to_string()))?;
            total = total
                .checked_add(chunk.len() as u64)
                .filter(|t| *t <= limit)
                .ok_or(UploadError::TooLarge { limit })?;
            if tx.send(chunk).await.is_err() {
                // The writer stopped: its error says why.
                break;
            }
        }
        Ok::<u64, UploadError>(total)
    };
    let read = match tokio::time::timeout(deadline, reading).await {
        Ok(r) => r,
        Err(_) => Err(UploadError::Timeout {
            secs: deadline.as_secs(),
        }),
    };
    drop(tx);
    let written = writer
        .await
        .map_err(|e| UploadError::Body(format!("the writer failed: {e}")));
    let outcome = match (read, written) {
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(e),
        (Ok(_), Ok(Err(e))) => Err(e),
        (Ok(n), Ok(Ok((got, written)))) if written == n => {
            if got == sha256 {
                Ok(n)
            } else {
                Err(UploadError::Mismatch {
                    expected: sha256.to_owned(),
                    got,
                })
            }
        }
        (Ok(n), Ok(Ok((_, written)))) => Err(UploadError::Body(format!(
            "{n} bytes came, {written} were written"
        ))),
    };
    let bytes = match outcome {
        Ok(n) => n,
        Err(e) => {
            let p = part.clone();
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(p)).await;
            return Err(e);
        }
    };
    let (d, name) = (dir.clone(), sha256.to_owned());
    tokio::task::spawn_blocking(move || keep(&d, &part, &name))
        .await
        .map_err(|e| UploadError::Body(format!("keeping the binary failed: {e}")))??;
    Ok(Received {
        sha256: sha256.to_owned(),
        bytes,
    })
}

/// The writer: every chunk from `rx` into `part`, hashed; the hash and the count.
fn write_part(
    dir: &Path,
    part: &Path,
    mut rx: tokio::sync::mpsc::Receiver<Bytes>,
) -> Result<(String, u64), UploadError> {
    std::fs::create_dir_all(dir).map_err(io_at(dir))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io_at(dir))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(part)
        .map_err(io_at(part))?;
    let mut hasher = Sha256::new();
    let mut n: u64 = 0;
    while let Some(chunk) = rx.blocking_recv() {
        hasher.update(&chunk);
        file.write_all(&chunk).map_err(io_at(part))?;
        n = n.saturating_add(chunk.len() as u64);
    }
    file.sync_all().map_err(io_at(part))?;
    Ok((switchyard_config::hex::encode(&hasher.finalize()), n))
}

/// Makes `part` the binary `switchyard-<sha256>` (`0755`, renamed, the directory
/// synced), then removes the directory's other `switchyard-*` files but the running
/// executable's.
fn keep(dir: &Path, part: &Path, sha256: &str) -> Result<(), UploadError> {
    let name = format!("{PREFIX}{sha256}");
    let to = dir.join(&name);
    std::fs::set_permissions(part, std::fs::Permissions::from_mode(0o755)).map_err(io_at(part))?;
    std::fs::rename(part, &to).map_err(io_at(&to))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(dir))?;
    let running = running_name(dir);
    let entries = std::fs::read_dir(dir).map_err(io_at(dir))?;
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        if !file.starts_with(PREFIX) || file == name || Some(file) == running.as_deref() {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!("removed the old binary {}", path.display()),
            Err(e) => tracing::warn!("removing the old binary {}: {e}", path.display()),
        }
    }
    Ok(())
}

/// The file name of the running executable when it is in `dir`.
fn running_name(dir: &Path) -> Option<String> {
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    let exe = exe.to_str()?;
    let exe = Path::new(exe.strip_suffix(" (deleted)").unwrap_or(exe));
    let in_dir = exe.parent().is_some_and(|p| {
        p == dir || std::fs::canonicalize(p).ok() == std::fs::canonicalize(dir).ok()
    });
    in_dir.then(|| exe.file_name()?.to_str().map(str::to_owned))?
}

/// `PUT /v1/binary?sha256=…` (or the [`SHA256_HEADER`] header): the body into the
/// state directory ([`receive`]); `{sha256, bytes}`, or `400` (no or a bad hash),
/// `409` (an upload runs), `413` (past [`MAX_BYTES`]), `422` (another hash), `408`
/// (past the deadline).
pub(super) async fn put(
    axum::extract::State(node): axum::extract::State<std::sync::Arc<crate::node::Node>>,
    axum::extract::Query(query): axum::extract::Query<ShaQuery>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse as _;
    let announced = headers
        .get(SHA256_HEADER)
        .map(|v| v.to_str().unwrap_or(""))
        .or(query.sha256.as_deref());
    let outcome = async {
        let sha256 = parse_sha256(announced.ok_or(UploadError::BadSha256(
            "send the body's sha256 (the X-Switchyard-Sha256 header or ?sha256=)",
        ))?)?;
        let claimed = headers
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if claimed.is_some_and(|n| n > MAX_BYTES) {
            return Err(UploadError::TooLarge { limit: MAX_BYTES });
        }
        let slot = UploadSlot::take(node.state_dir())?;
        receive(
            &slot,
            node.state_dir(),
            &sha256,
            body.into_data_stream(),
            MAX_BYTES,
            UPLOAD_DEADLINE,
        )
        .await
    }
    .await;
    match outcome {
        Ok(received) => {
            tracing::info!(sha256 = %received.sha256, bytes = received.bytes, "a binary was handed over");
            axum::Json(received).into_response()
        }
        Err(e) => {
            let status = match &e {
                UploadError::Busy => StatusCode::CONFLICT,
                UploadError::BadSha256(_) | UploadError::Body(_) => StatusCode::BAD_REQUEST,
                UploadError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                UploadError::Mismatch { .. } => StatusCode::UNPROCESSABLE_ENTITY,
                UploadError::Timeout { .. } => StatusCode::REQUEST_TIMEOUT,
                UploadError::Io { .. } => {
                    tracing::error!("keeping a handed-over binary: {e}");
                    StatusCode::INTERNAL_SERVER_ERROR
                }
            };
            if status == StatusCode::INTERNAL_SERVER_ERROR {
                return super::error(status, "the binary could not be kept; see the node's log");
            }
            tracing::warn!("a binary handed over was refused: {e}");
            super::error(status, e.to_string())
        }
    }
}

/// `PUT /v1/binary`'s query.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct ShaQuery {
    sha256: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(data: &[u8]) -> String {
        switchyard_config::hex::encode(&Sha256::digest(data))
    }

    fn chunks(
        parts: Vec<&'static [u8]>,
    ) -> impl Stream<Item = Result<Bytes, std::convert::Infallible>> {
        futures_util::stream::iter(parts.into_iter().map(|p| Ok(Bytes::from_static(p))))
    }

    #[tokio::test]
    async fn a_binary_is_kept_executable_under_its_hash_and_others_go() {
        let dir = tempfile::tempdir().unwrap();
        let bin = bin_dir(dir.path());
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join(format!("{PREFIX}{}", "0".repeat(64))), b"old").unwrap();
        std::fs::write(bin.join("other"), b"kept").unwrap();
        let want = sha(b"hello world");
        let slot = UploadSlot::take(dir.path()).unwrap();
        let got = receive(
            &slot,
            dir.path(),
            &want,
            chunks(vec![b"hello ", b"world"]),
            MAX_BYTES,
            UPLOAD_DEADLINE,
        )
        .await
        .unwrap();
        assert_eq!(
            got,
            Received {
                sha256: want.clone(),
                bytes: 11
            }
        );
        let path = binary_path(dir.path(), &want);
        assert_eq!(std::fs::read(&path).unwrap(), b"hello world");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let mut names: Vec<String> = std::fs::read_dir(&bin)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, vec!["other".to_owned(), format!("{PREFIX}{want}")]);
    }

    #[tokio::test]
    async fn a_wrong_hash_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let claimed = sha(b"something else");
        let slot = UploadSlot::take(dir.path()).unwrap();
        let e = receive(
            &slot,
            dir.path(),
            &claimed,
            chunks(vec![b"evil"]),
            MAX_BYTES,
            UPLOAD_DEADLINE,
        )
        .await
        .unwrap_err();
        assert!(matches!(e, UploadError::Mismatch { ref got, .. } if *got == sha(b"evil")));
        let left: Vec<_> = std::fs::read_dir(bin_dir(dir.path())).unwrap().collect();
        assert!(left.is_empty(), "the part file is gone: {left:?}");
    }

    #[tokio::test]
    async fn past_the_limit_is_refused_and_the_part_file_removed() {
        let dir = tempfile::tempdir().unwrap();
        let slot = UploadSlot::take(dir.path()).unwrap();
        let e = receive(
            &slot,
            dir.path(),
            &sha(b"0123456789"),
            chunks(vec![b"01234", b"56789", b"!"]),
            10,
            UPLOAD_DEADLINE,
        )
        .await
        .unwrap_err();
        assert!(matches!(e, UploadError::TooLarge { limit: 10 }), "{e}");
        let left: Vec<_> = std::fs::read_dir(bin_dir(dir.path())).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[tokio::test]
    async fn a_body_that_stalls_is_cut_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let slot = UploadSlot::take(dir.path()).unwrap();
        let stalled = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
            Bytes::from_static(b"a"),
        )])
        .chain(futures_util::stream::pending());
        let e = receive(
            &slot,
            dir.path(),
            &sha(b"a"),
            stalled,
            MAX_BYTES,
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, UploadError::Timeout { .. }), "{e}");
        let left: Vec<_> = std::fs::read_dir(bin_dir(dir.path())).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn one_upload_at_a_time_per_state_directory() {
        let a = UploadSlot::take(Path::new("/x/a")).unwrap();
        assert!(matches!(
            UploadSlot::take(Path::new("/x/a")),
            Err(UploadError::Busy)
        ));
        let _b = UploadSlot::take(Path::new("/x/b")).unwrap();
        drop(a);
        assert!(UploadSlot::take(Path::new("/x/a")).is_ok());
    }

    #[test]
    fn hashes_are_64_hex_digits_and_current_round_trips() {
        assert!(parse_sha256("ab").is_err());
        assert!(parse_sha256(&"g".repeat(64)).is_err());
        assert_eq!(parse_sha256(&"AB".repeat(32)).unwrap(), "ab".repeat(32));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(current(dir.path()), None);
        std::fs::create_dir_all(bin_dir(dir.path())).unwrap();
        set_current(dir.path(), &"c".repeat(64)).unwrap();
        assert_eq!(current(dir.path()), Some("c".repeat(64)));
        assert!(clear_current(dir.path()).unwrap());
        assert!(!clear_current(dir.path()).unwrap());
        assert_eq!(current(dir.path()), None);
    }
}

#[cfg(test)]
#[path = "binary_tests.rs"]
mod router_tests;
