//! Servers and subscriptions as Auto knows them.
//!
//! A server is identified across subscription updates by a [`ServerId`], a stable key
//! derived from its connection parameters, never by its display name or position.

use core::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The stable identity of a server; history and marks follow it across updates.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ServerId(String);

impl ServerId {
    /// An identity given as is (the simulator uses server names, which it requires to
    /// be unique).
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The identity of a server reached with `protocol` at `host:port` with credential
    /// identifier `credential` (a UUID, a password, a user name). The credential is
    /// hashed so a persisted state file never holds it in clear; host and protocol are
    /// compared case-insensitively.
    pub fn derive(protocol: &str, host: &str, port: u16, credential: &str) -> Self {
        let mut hash = Sha256::new();
        for part in [
            protocol.to_ascii_lowercase().as_bytes(),
            host.to_ascii_lowercase().as_bytes(),
            &port.to_be_bytes(),
            credential.as_bytes(),
        ] {
            hash.update((part.len() as u32).to_be_bytes());
            hash.update(part);
        }
        let digest = hash.finalize();
        let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        Self(format!("{}:{hex}", protocol.to_ascii_lowercase()))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ServerId {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

/// One server entry of a subscription.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    /// Stable identity.
    pub id: ServerId,
    /// What the user sees in the app.
    pub name: String,
}

impl Server {
    /// A server whose display name is its identity (as in the simulator).
    pub fn named(name: &str) -> Self {
        Self {
            id: ServerId::new(name),
            name: name.to_owned(),
        }
    }
}

/// A subscription: a named, ordered list of servers. The order is the subscription
/// order, which breaks ties in the queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// Unique name of the subscription in the app.
    pub name: String,
    /// Servers in subscription order.
    pub servers: Vec<Server>,
}

impl Subscription {
    /// A subscription of servers named by their identities.
    pub fn of_names(name: &str, servers: &[&str]) -> Self {
        Self {
            name: name.to_owned(),
            servers: servers.iter().map(|s| Server::named(s)).collect(),
        }
    }

    /// Whether the subscription holds the server.
    pub fn contains(&self, id: &ServerId) -> bool {
        self.servers.iter().any(|s| &s.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_identity_is_stable_and_ignores_case_of_host() {
        let a = ServerId::derive("vless", "Fi.Example.org", 443, "uuid-1");
        let b = ServerId::derive("VLESS", "fi.example.org", 443, "uuid-1");
        assert_eq!(a, b);
        assert!(a.as_str().starts_with("vless:"));
        assert!(!a.as_str().contains("uuid-1"));
        assert_ne!(
            a,
            ServerId::derive("vless", "fi.example.org", 8443, "uuid-1")
        );
        assert_ne!(
            a,
            ServerId::derive("vless", "fi.example.org", 443, "uuid-2")
        );
        assert_ne!(
            a,
            ServerId::derive("trojan", "fi.example.org", 443, "uuid-1")
        );
    }

    #[test]
    fn derived_identity_has_no_ambiguous_concatenation() {
        assert_ne!(
            ServerId::derive("vless", "ab", 1, "c"),
            ServerId::derive("vless", "a", 1, "bc")
        );
    }
}
