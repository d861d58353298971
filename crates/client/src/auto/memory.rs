//! What the client keeps in its data directory: Auto's memory (`auto-state.json`) and
//! the subscriptions added with `switchyard client add` (`subscriptions.json`). Both
//! are written crash-safe and read leniently: a damaged file is set aside (`.bad`)
//! with a warning and the client starts without it, never stops because of it.

use std::path::Path;

/// Auto's memory from `path`: empty when there is none or it does not read.
pub(super) fn load_state(path: &Path) -> switchyard_auto::State {
    load(path, "Auto's memory").unwrap_or_default()
}

/// The subscription URLs kept at `path`, in order (none when there is no file).
pub(super) fn load_subscriptions(path: &Path) -> Vec<String> {
    load(path, "the subscription list").unwrap_or_default()
}

/// Keeps the subscription URLs at `path`.
pub(super) fn save_subscriptions(path: &Path, urls: &[String]) {
    let text = serde_json::to_string_pretty(urls).unwrap_or_default();
    write_atomic(path, &text, "the subscription list");
}

/// Keeps Auto's memory at `path`.
pub(super) fn save_state(path: &Path, text: &str) {
    write_atomic(path, text, "Auto's memory");
}

fn load<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(value) => Some(value),
        Err(e) => {
            let aside = path.with_extension("bad");
            tracing::warn!(
                "{what} in {}: {e}; set aside as {} and starting without it",
                path.display(),
                aside.display()
            );
            let _ = std::fs::rename(path, aside);
            None
        }
    }
}

/// Writes `text` to `path` so that a crash leaves the old file or the new one, never
/// a torn one: a synced temporary file (`0600`), a rename, the directory synced (as
/// the node's `state::write_atomic`, which this crate does not depend on).
fn write_atomic(path: &Path, text: &str, what: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let dir = path.parent().unwrap_or(Path::new("."));
    let done = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!("saving {what} to {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subscription_list_survives_and_a_damaged_one_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subscriptions.json");
        assert!(load_subscriptions(&path).is_empty());
        let urls = vec!["http://a/sub/1".to_owned(), "https://b/sub/2".to_owned()];
        save_subscriptions(&path, &urls);
        assert_eq!(load_subscriptions(&path), urls);
        std::fs::write(&path, "{not json").unwrap();
        assert!(load_subscriptions(&path).is_empty());
        assert!(dir.path().join("subscriptions.bad").exists());
        assert!(!path.exists());
    }
}
