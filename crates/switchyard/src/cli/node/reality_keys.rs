//! `switchyard node reality-keys`: prints a new REALITY key pair and a short id.

use clap::Args;

/// Print a new REALITY key pair and short id (Xray's forms).
#[derive(Debug, Args)]
pub(crate) struct RealityKeysArgs {}

impl RealityKeysArgs {
    /// Prints the private key (the inbound's `security.private_key`), its public key
    /// (the clients' `publicKey`, `pbk`) and a random short id, one per line as
    /// `xray x25519` prints its keys.
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let keys = switchyard_node::reality::generate().map_err(anyhow::Error::msg)?;
        println!("Private key: {}", keys.private_key);
        println!("Public key: {}", keys.public_key);
        println!("Short id: {}", keys.short_id);
        Ok(())
    }
}
