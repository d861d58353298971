//! Where the journal's bytes go: [`FileStore`] (`journal.jsonl` in the state
//! directory) or, in tests, any [`Store`] that fails like a full disk.

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use crate::state;

/// The journal's medium. Every method blocks and returns only once the bytes are on
/// disk (synced), or fails.
pub trait Store: Send + std::fmt::Debug {
    /// The whole content (at open).
    fn load(&mut self) -> io::Result<Vec<u8>>;
    /// Appends `bytes` and syncs them. On error some of them may have been written.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the content back to its first `len` bytes (a torn or failed append).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// Replaces the whole content atomically.
    fn replace(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// What to name in errors.
    fn path(&self) -> &Path;
}

/// `journal.jsonl` in a directory, `0600`; the directory is synced after the file is
/// created or replaced.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    dir: PathBuf,
    file: Option<File>,
}

impl FileStore {
    /// The journal file in `dir` (not opened yet).
    pub fn new(dir: &Path) -> Self {
        Self {
            path: dir.join(super::FILE),
            dir: dir.to_owned(),
            file: None,
        }
    }

    fn file(&mut self) -> io::Result<&mut File> {
        let f = match self.file.take() {
            Some(f) => f,
            None => {
                let (f, created) = state::open_append(&self.path)?;
                if created {
                    state::sync_dir(&self.dir)?;
                }
                f
            }
        };
        Ok(self.file.insert(f))
    }
}

impl Store for FileStore {
    fn load(&mut self) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        state::tighten(&self.path).map_err(io::Error::other)?;
        Ok(bytes)
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let f = self.file()?;
        let r = f.write_all(bytes).and_then(|()| f.sync_data());
        if r.is_err() {
            // Reopen next time: the handle's state after a failed write is unknown.
            self.file = None;
        }
        r
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        let f = self.file()?;
        f.set_len(len)?;
        f.sync_all()
    }

    fn replace(&mut self, bytes: &[u8]) -> io::Result<()> {
        // The open handle points at the file being replaced.
        self.file = None;
        state::write_atomic(&self.path, bytes).map_err(io::Error::other)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// The medium while [`super::Journal::wrap_store`] swaps it: never written.
#[derive(Debug)]
pub(super) struct Detached;

impl Store for Detached {
    fn load(&mut self) -> std::io::Result<Vec<u8>> {
        Ok(Vec::new())
    }
    fn append(&mut self, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("detached"))
    }
    fn truncate(&mut self, _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("detached"))
    }
    fn replace(&mut self, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("detached"))
    }
    fn path(&self) -> &Path {
        Path::new("")
    }
}
