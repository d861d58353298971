//! Users brought from another panel (`crate::import`): the part of the
//! [`Store`](super::Store) that writes a source's users in one transaction, remembers
//! which of ours each became (so a second import updates, never duplicates) and
//! finds the user behind a source's subscription link.

use async_trait::async_trait;

use super::{StoreError, UserInput};
use crate::model::{Credentials, Id};

/// One user as the source had them, ready to write.
#[derive(Clone, Debug)]
pub struct ImportedUser {
    /// The source's key for the user (its user name).
    pub source_key: String,
    /// Name, limits, expiry, note... as ours.
    pub input: UserInput,
    /// The source's credentials where it had them; the rest made anew. On a second
    /// import only the VLESS UUID and the Trojan password are taken again.
    pub credentials: Credentials,
    /// The subscription token a new user gets (unused for one already imported).
    pub token: String,
    /// Bytes the source counted in the current period.
    pub used: u64,
    /// Bytes the source counted over the user's life.
    pub lifetime: u64,
    /// When the source created the user (Unix ms).
    pub created_ms: i64,
    /// When the source last revoked the user's subscription link (Unix ms).
    pub sub_revoked_ms: Option<i64>,
    /// The source's link id for the user where it is not their key (Remnawave's
    /// short id, which changes when the link is revoked there): kept up to date by
    /// each import, and found by [`ImportStore::imported_link_by`].
    pub link: Option<String>,
    /// Devices the source saw fetch the user's subscription: added to ours (a
    /// device we know already stays as it is).
    pub devices: Vec<ImportedDevice>,
    /// Which limits the source has: a re-import updates only those, and leaves one
    /// the source does not have as the operator set it here.
    pub carries: Carries,
}

/// The limits a source keeps per user.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Carries {
    /// An address (IP) limit (3x-ui's `limitIp`).
    pub address_limit: bool,
    /// A device limit (Remnawave's HWID limit).
    pub device_limit: bool,
}

/// A device the source knew for a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedDevice {
    /// The app's `x-hwid`.
    pub hwid: String,
    /// Operating system, as the app named it.
    pub os: Option<String>,
    /// Device model.
    pub model: Option<String>,
    /// The app's User-Agent.
    pub user_agent: Option<String>,
    /// First seen (Unix ms).
    pub first_seen_ms: i64,
    /// Last seen (Unix ms).
    pub last_seen_ms: i64,
}

/// What one import did, by our users' names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportWritten {
    /// New users.
    pub added: Vec<String>,
    /// Users an earlier import brought, brought up to date.
    pub updated: Vec<String>,
    /// Users an earlier import brought that the source no longer has: disabled.
    pub disabled: Vec<String>,
    /// Users not written, with why (a user of ours with the same name...).
    pub conflicts: Vec<(String, String)>,
}

/// How an import writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportMode {
    /// Disable the users an earlier import brought that are no longer in the source.
    pub disable_missing: bool,
    /// Roll everything back at the end: the outcome says what a real run would do.
    pub dry_run: bool,
}

/// The user an imported subscription link belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedLink {
    /// Our user.
    pub user_id: Id,
    /// Their subscription token with us.
    pub token: String,
    /// When the source created them (Unix ms).
    pub source_created_ms: i64,
    /// When the source last revoked their link (Unix ms).
    pub sub_revoked_ms: Option<i64>,
}

/// Users brought from other panels.
#[async_trait]
pub trait ImportStore: Send + Sync {
    /// Writes `users` of `source` in one transaction and keeps `secret` (what checks
    /// the source's subscription tokens). A user an earlier import of `source` brought
    /// is updated: its usage grows by what the source counted since that import, so
    /// what our nodes counted meanwhile stays. A new one is added, unless a user of
    /// ours has its name. See [`ImportMode`] for disabling the missing and dry runs.
    async fn import_users(
        &self,
        source: &str,
        secret: &str,
        users: &[ImportedUser],
        mode: ImportMode,
        now_ms: i64,
    ) -> Result<ImportWritten, StoreError>;

    /// The user `source` knew as `key`, if an import brought them.
    async fn imported_link(
        &self,
        source: &str,
        key: &str,
    ) -> Result<Option<ImportedLink>, StoreError>;

    /// The user whose link id with `source` is `link` ([`ImportedUser::link`]), if
    /// an import brought them.
    async fn imported_link_by(
        &self,
        source: &str,
        link: &str,
    ) -> Result<Option<ImportedLink>, StoreError>;

    /// Every source imported so far, with what checks its tokens: one read, so that
    /// a token nothing was imported for costs no more.
    async fn import_sources(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// What checks `source`'s subscription tokens, if it was imported.
    async fn import_secret(&self, source: &str) -> Result<Option<String>, StoreError>;
}
