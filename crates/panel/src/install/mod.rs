//! What the panel hands out to install a node on a fresh server: a POSIX shell script
//! (`GET /install.sh`) and its own binary (`GET /install/switchyard-linux-<arch>`),
//! the same program that runs the panel, the node and the client.
//!
//! The script is [`script`], rendered with the panel's public URL and the binary's
//! architecture. Join tokens pin the binary's sha256 ([`Installer::sha256`]), so the
//! script refuses a download that differs by one byte before running anything.
//! The binary is read from its file on each download (it is large) and hashed once,
//! on first need, off the async workers; downloads at once are bounded
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

/// The binary the panel hands out, its hash, and the bound on downloads at once.
#[derive(Debug)]
pub struct Installer {
    binary: PathBuf,
    arch: &'static str,
    sha256: tokio::sync::OnceCell<[u8; 32]>,
    downloads: Arc<Semaphore>,
}

impl Installer {
    /// Hands out `binary` (built for this machine's architecture), at most
    /// `max_downloads` at once.
    pub fn new(binary: PathBuf, max_downloads: usize) -> Self {
        Self {
            binary,
            arch: std::env::consts::ARCH,
            sha256: tokio::sync::OnceCell::new(),
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

    /// The binary's sha256, read once it can be (later changes to the file are not
    /// seen: a download that differs from it is refused by the script).
    pub async fn sha256(&self) -> Result<[u8; 32], BinaryUnreadable> {
        // Only a hash is kept: a file that could not be read is tried again next time.
        self.sha256
            .get_or_try_init(|| async {
                let path = self.binary.clone();
                let unreadable = |reason: String| BinaryUnreadable {
                    path: path.display().to_string(),
                    reason,
                };
                let p = path.clone();
                tokio::task::spawn_blocking(move || hash_file(&p))
                    .await
                    .map_err(|e| unreadable(e.to_string()))?
                    .map_err(|e| unreadable(e.to_string()))
            })
            .await
            .copied()
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
    async fn the_hash_is_the_file_s_sha256_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        std::fs::write(&path, b"abc").unwrap();
        let i = Installer::new(path.clone(), 1);
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(
            switchyard_config::hex::encode(&i.sha256().await.unwrap()),
            abc
        );
        std::fs::write(&path, b"abd").unwrap();
        assert_eq!(
            switchyard_config::hex::encode(&i.sha256().await.unwrap()),
            abc
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
