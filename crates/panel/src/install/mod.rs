//! What the panel hands out to install a node on a fresh server: a POSIX shell script
//! (`GET /install.sh`) and its own binary (`GET /install/switchyard-linux-<arch>`),
//! the same program that runs the panel, the node and the client.
//!
//! The script is [`script`], rendered with the panel's public URL and the binary's
//! architecture. Join tokens pin the binary's sha256 ([`Installer::sha256`]), so the
//! script refuses a download that differs by one byte before running anything.
//! The binary is read from its file on each download (it is large) and hashed on
//! first need, off the async workers, then again whenever the file changed (another
//! file renamed over it, another size or modification time), so a panel handing out
//! a new build pins and offers it without a restart; downloads at once are bounded
//! ([`crate::config::InstallSettings::max_downloads`]).

use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The script, with `@PANEL@`, `@PANEL_QUOTED@` and `@ARCH_QUOTED@` to fill in.
const TEMPLATE: &str = include_str!("install.sh");

/// Why the binary cannot be handed out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the binary to hand out, {path}, cannot be read: {reason}")]
pub struct BinaryUnreadable {
    /// The file.
    pub path: String,
    /// What reading it said.
    pub reason: String,
}

/// What tells one version of a file from another without reading it: its inode,
/// size, and modification and change times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// The binary the panel hands out, its hash, and the bound on downloads at once.
#[derive(Debug)]
pub struct Installer {
    binary: PathBuf,
    arch: &'static str,
    /// The hash of the file as it was at its stamp; one hashing at a time.
    sha256: tokio::sync::Mutex<Option<(Stamp, [u8; 32])>>,
    downloads: Arc<Semaphore>,
}

impl Installer {
    /// Hands out `binary` (built for this machine's architecture), at most
    /// `max_downloads` at once.
    pub fn new(binary: PathBuf, max_downloads: usize) -> Self {
        Self {
            binary,
            arch: std::env::consts::ARCH,
            sha256: tokio::sync::Mutex::new(None),
            downloads: Arc::new(Semaphore::new(max_downloads.max(1))),
        }
    }

    /// The file handed out.
    pub fn binary(&self) -> &std::path::Path {
        &self.binary
    }

    /// The architecture it is built for, as `uname -m` names it (`x86_64`, `aarch64`).
    pub fn arch(&self) -> &'static str {
        self.arch
    }

    fn unreadable(&self, reason: impl ToString) -> BinaryUnreadable {
        BinaryUnreadable {
            path: self.binary.display().to_string(),
            reason: reason.to_string(),
        }
    }

    /// The binary's sha256: hashed at the first call, again when the file changed
    /// (a file that could not be read is tried again next time). A change made
    /// while it is hashed is seen at the next call.
    pub async fn sha256(&self) -> Result<[u8; 32], BinaryUnreadable> {
        let mut kept = self.sha256.lock().await;
        let stamp = tokio::fs::metadata(&self.binary)
            .await
            .map(|m| Stamp::of(&m))
            .map_err(|e| self.unreadable(e))?;
        if let Some((at, hash)) = *kept
            && at == stamp
        {
            return Ok(hash);
        }
        let p = self.binary.clone();
        let hash = tokio::task::spawn_blocking(move || hash_file(&p))
            .await
            .map_err(|e| self.unreadable(e))?
            .map_err(|e| self.unreadable(e))?;
        *kept = Some((stamp, hash));
        Ok(hash)
    }

    /// The binary's bytes (at most `limit`) and their sha256, read off the async
    /// workers: what an upgrade hands to a node.
    pub async fn read(&self, limit: u64) -> Result<(Vec<u8>, [u8; 32]), BinaryUnreadable> {
        let p = self.binary.clone();
        let read = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
            let file = std::fs::File::open(&p)?;
            let len = file.metadata()?.len();
            if len > limit {
                return Err(std::io::Error::other(format!(
                    "{len} bytes, more than a node takes ({limit})"
                )));
            }
            let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)?;
            if bytes.len() as u64 > limit {
                return Err(std::io::Error::other(format!(
                    "it grew past what a node takes ({limit} bytes) while read"
                )));
            }
            let hash: [u8; 32] = Sha256::digest(&bytes).into();
            Ok((bytes, hash))
        });
        read.await
            .map_err(|e| self.unreadable(e))?
            .map_err(|e| self.unreadable(e))
    }

    /// A download slot, if one is free.
    pub fn download_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.downloads.clone().try_acquire_owned().ok()
    }
}

fn hash_file(path: &std::path::Path) -> std::io::Result<[u8; 32]> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher.finalize().into())
}

/// `text` as one single-quoted shell word.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The install script for a panel at `panel_url` (no trailing `/`) handing out a
/// binary for `arch`.
pub fn script(panel_url: &str, arch: &str) -> String {
    let panel = panel_url.trim_end_matches('/');
    // Comments show the URL; anything that could end a comment line is dropped there.
    let shown: String = panel.chars().filter(|c| !c.is_control()).collect();
    TEMPLATE
        .replace("@PANEL_QUOTED@", &sh_quote(panel))
        .replace("@ARCH_QUOTED@", &sh_quote(arch))
        .replace("@PANEL@", &shown)
}

/// The one line an operator pastes as root on a fresh server.
pub fn command(panel_url: &str, token: &str) -> String {
    let panel = panel_url.trim_end_matches('/');
    format!(
        "curl -fsSL {} | sh -s -- {token}",
        sh_quote(&format!("{panel}/install.sh"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_carries_the_panel_and_arch_as_quoted_words() {
        let s = script("https://panel.example.org:8443/", "x86_64");
        assert!(s.starts_with("#!/bin/sh\n"));
        assert!(
            s.contains("\nPANEL='https://panel.example.org:8443'\n"),
            "{s}"
        );
        assert!(s.contains("\nARCH='x86_64'\n"));
        assert!(s.contains(
            "#     curl -fsSL https://panel.example.org:8443/install.sh | sh -s -- TOKEN\n"
        ));
        assert!(
            !s.contains("@PANEL") && !s.contains("@ARCH"),
            "every placeholder is filled"
        );
    }

    #[test]
    fn a_quote_or_a_newline_in_the_url_cannot_break_out_of_the_script() {
        let s = script("http://x/'; rm -rf / #\nid", "x86_64");
        assert!(
            s.contains("\nPANEL='http://x/'\\''; rm -rf / #\nid'\n"),
            "{s}"
        );
        assert!(s.contains("#     curl -fsSL http://x/'; rm -rf / #id/install.sh"));
    }

    #[test]
    fn the_command_is_one_line_of_curl_into_sh() {
        assert_eq!(
            command("http://10.0.0.1:2053/", "syj2.ab.cd"),
            "curl -fsSL 'http://10.0.0.1:2053/install.sh' | sh -s -- syj2.ab.cd"
        );
    }

    #[tokio::test]
    async fn the_hash_is_the_file_s_sha256_and_follows_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        std::fs::write(&path, b"abc").unwrap();
        let i = Installer::new(path.clone(), 1);
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(
            switchyard_config::hex::encode(&i.sha256().await.unwrap()),
            abc
        );
        // A new build renamed over it, as installs do: the hash follows.
        let next = dir.path().join("next");
        std::fs::write(&next, b"abcd").unwrap();
        std::fs::rename(&next, &path).unwrap();
        let abcd = "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589";
        assert_eq!(
            switchyard_config::hex::encode(&i.sha256().await.unwrap()),
            abcd
        );
        let (bytes, hash) = i.read(4).await.unwrap();
        assert_eq!(
            (
                bytes.as_slice(),
                switchyard_config::hex::encode(&hash).as_str()
            ),
            (&b"abcd"[..], abcd)
        );
        assert!(
            i.read(3)
                .await
                .unwrap_err()
                .to_string()
                .contains("more than a node takes")
        );
        let gone = Installer::new(dir.path().join("nope"), 1);
        assert!(
            gone.sha256()
                .await
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
        let slot = i.download_slot().unwrap();
        assert!(i.download_slot().is_none(), "one download at once");
        drop(slot);
        assert!(i.download_slot().is_some());
    }
}
