//! Certificates from an ACME server for TLS inbounds (`security.acme`): one keeper
//! ([`switchyard_acme::Keeper`]) per ACME server and set of identifiers, shared by
//! every inbound that names them, keeping its files in
//! `<state_dir>/acme/<16 hex digits>/` (0700; the certificate, its key and the ACME
//! account, 0600). The inbounds answer the TLS-ALPN-01 challenge on their own ports
//! ([`switchyard_acme::accept`]); a Hysteria 2 inbound serves the certificate a TCP
//! inbound with the same settings obtains.
//!
//! A keeper runs while the config in force names its settings, and stops with the
//! node (or at an upgrade, where the new process serves the kept certificate from
//! the files at once).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use switchyard_acme::{Keeper, Served};
use switchyard_config::{AcmeSettings, NodeConfig, Security};
use tokio_util::sync::CancellationToken;

/// Where the files of one certificate live, under the state directory: what tells
/// certificates apart is the ACME server and the identifiers (a new email or renewal
/// margin keeps the certificate).
fn dir_of(state_dir: &std::path::Path, settings: &AcmeSettings) -> PathBuf {
    let mut ids: Vec<String> = settings
        .identifiers
        .iter()
        .map(|i| i.to_ascii_lowercase())
        .collect();
    ids.sort();
    let mut h = Sha256::new();
    h.update(settings.directory.as_bytes());
    for id in &ids {
        h.update(b"\n");
        h.update(id.as_bytes());
    }
    let digest = h.finalize();
    state_dir
        .join("acme")
        .join(switchyard_config::hex::encode(&digest[..8]))
}

struct Kept {
    keeper: Arc<Keeper>,
    stop: CancellationToken,
}

/// The keepers running, by the directory their certificate is kept in (one per ACME
/// server and set of names: inbounds that differ only in the email or renewal margin
/// share the first one's keeper, never two keepers writing one directory).
pub(crate) struct Keepers {
    state_dir: PathBuf,
    /// The node's stop: keepers end with it.
    stop: CancellationToken,
    restarts: Arc<std::sync::atomic::AtomicU64>,
    running: Mutex<HashMap<PathBuf, Kept>>,
}

impl Keepers {
    pub(crate) fn new(
        state_dir: PathBuf,
        stop: CancellationToken,
        restarts: Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        Self {
            state_dir,
            stop,
            restarts,
            running: Mutex::default(),
        }
    }

    /// What an inbound with `settings` serves: the running keeper's, or a new one's.
    pub(crate) fn served(&self, settings: &AcmeSettings) -> Arc<Served> {
        let dir = dir_of(&self.state_dir, settings);
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = running.get(&dir) {
            return kept.keeper.served().clone();
        }
        let keeper = Keeper::new(settings.clone(), dir.clone());
        let stop = self.stop.child_token();
        let (k, s) = (keeper.clone(), stop.clone());
        crate::supervise::supervise(
            format!("acme: certificate for {}", settings.identifiers.join(", ")),
            stop.clone(),
            self.restarts.clone(),
            move || k.clone().run(s.clone()),
        );
        let served = keeper.served().clone();
        running.insert(dir, Kept { keeper, stop });
        served
    }

    /// Stops the keepers `config` no longer names.
    pub(crate) fn retain(&self, config: &NodeConfig) {
        let named: Vec<PathBuf> = config
            .inbounds
            .iter()
            .filter_map(|ib| match &ib.security {
                Security::Tls { acme: Some(a), .. } => Some(dir_of(&self.state_dir, a)),
                _ => None,
            })
            .collect();
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.retain(|dir, kept| {
            let keep = named.contains(dir);
            if !keep {
                kept.stop.cancel();
            }
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_s_directory_follows_its_server_and_names_only() {
        let a = AcmeSettings {
            identifiers: vec!["b.example".into(), "A.example".into()],
            ..AcmeSettings::default()
        };
        let same = AcmeSettings {
            identifiers: vec!["a.example".into(), "b.example".into()],
            email: Some("ops@example.com".into()),
            renew_days: 10,
            ..AcmeSettings::default()
        };
        let other = AcmeSettings {
            directory: "https://acme.test/dir".into(),
            ..same.clone()
        };
        let root = std::path::Path::new("/var/lib/switchyard");
        assert_eq!(dir_of(root, &a), dir_of(root, &same));
        assert_ne!(dir_of(root, &a), dir_of(root, &other));
        let d = dir_of(root, &a);
        assert_eq!(d.parent(), Some(root.join("acme").as_path()));
        assert_eq!(d.file_name().unwrap().len(), 16);
    }

    #[tokio::test]
    async fn inbounds_naming_one_certificate_share_a_keeper_until_none_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let stop = CancellationToken::new();
        let keepers = Keepers::new(dir.path().to_owned(), stop.clone(), Arc::default());
        // A directory on a closed port of this machine: the keeper's orders fail here.
        let one = AcmeSettings {
            identifiers: vec!["a.example".into()],
            directory: "https://127.0.0.1:1/dir".into(),
            ..AcmeSettings::default()
        };
        let same = AcmeSettings {
            email: Some("ops@example.com".into()),
            ..one.clone()
        };
        let other = AcmeSettings {
            identifiers: vec!["b.example".into()],
            ..one.clone()
        };
        let a = keepers.served(&one);
        assert!(
            Arc::ptr_eq(&a, &keepers.served(&same)),
            "one keeper per directory"
        );
        assert!(!Arc::ptr_eq(&a, &keepers.served(&other)));
        let count = || keepers.running.lock().unwrap().len();
        assert_eq!(count(), 2);
        let mut config = NodeConfig::default();
        config.inbounds.push(switchyard_config::InboundConfig {
            security: Security::tls_acme(same),
            ..serde_json::from_value(serde_json::json!({
                "tag": "t", "port": 443, "protocol": "vless"
            }))
            .unwrap()
        });
        keepers.retain(&config);
        assert_eq!(count(), 1, "the keeper no inbound names stopped");
        assert!(Arc::ptr_eq(&a, &keepers.served(&one)), "the named one kept");
        stop.cancel();
    }
}
