//! Bringing users from another panel: `switchyard panel import marzban …`.
//!
//! A source is read ([`marzban::read`]), mapped to our users by a pure function
//! ([`plan`]), and written in one transaction by the store
//! ([`crate::store::ImportStore`]); with `--dry-run` the same transaction is rolled
//! back, so the report says exactly what a real run would do. The source's own
//! subscription links keep working ([`marzban_token`], answered by `/sub/{token}`).
//! A second import updates the users the first one brought (never duplicating
//! them) and disables those the source no longer has. `docs/migration.md` says
//! what maps to what.

mod admins;
mod cells;
mod inbound_plan;
mod make_inbounds;
pub mod marzban;
pub mod marzban_token;
pub mod marzneshin;
mod marzneshin_plan;
pub mod pasarguard;
mod pasarguard_plan;
pub mod pasarguard_token;
pub mod remnawave;
mod remnawave_plan;
pub mod remnawave_schema;
mod report;
mod source_admin;
pub mod source_db;
pub mod xui;
mod xui_plan;

use std::path::PathBuf;

pub use inbound_plan::{PlannedInbound, XrayInbound, plan as plan_inbound};
pub use make_inbounds::{make_inbounds, server_named};
pub use marzneshin_plan::{marzneshin, marzneshin_url, plan as plan_marzneshin};
pub use pasarguard_plan::{pasarguard, pasarguard_url, plan as plan_pasarguard};
pub use remnawave_plan::{plan as plan_remnawave, remnawave};
pub use report::{AdminSeen, InboundSeen, NodeSeen, NotCarried, Report};
pub use source_admin::{SourceAdmin, role_of};
pub use xui_plan::{plan as plan_xui, xui};

use crate::model::{self, Credentials, ResetStrategy};
use crate::service::{new_credentials, new_subscription_token};
use crate::store::{Carries, ImportMode, ImportedLink, ImportedUser, Store, StoreError, UserInput};

/// The key under which Marzban's users and secret are kept.
pub const MARZBAN: &str = "marzban";
/// The key under which Marzneshin's users are kept (by name; linked by key).
pub const MARZNESHIN: &str = "marzneshin";
/// The key under which PasarGuard's users and secret are kept (by name; linked by id).
pub const PASARGUARD: &str = "pasarguard";
/// The key under which 3x-ui's users are kept (by subscription id).
pub const XUI: &str = "3x-ui";
/// The key under which Remnawave's users are kept (by id; linked by short id).
pub const REMNAWAVE: &str = "remnawave";

/// Why an import could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The source database could not be opened or read.
    #[error("{}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: sqlx::Error,
    },
    /// The source database (a server, by URL) could not be reached or read.
    #[error("{database}: {source}")]
    Database {
        /// Where it is, without its password.
        database: String,
        /// The cause.
        source: sqlx::Error,
    },
    /// The file is a database, but not the source panel's.
    #[error("{}: {why}: not a {source_panel} database", path.display())]
    NotTheSource {
        /// The file.
        path: PathBuf,
        /// Which panel it should be.
        source_panel: &'static str,
        /// What gave it away.
        why: &'static str,
    },
    /// The database lacks what the source panel's always has (said by the reader,
    /// which names the file or the database).
    #[error("{why}")]
    Missing {
        /// What is missing.
        why: &'static str,
    },
    /// The source's schema is one this import does not know.
    #[error(
        "{source_panel} schema {found} is not one this import knows (known: {known}); \
         upgrade {source_panel} to a known release first, or tell us"
    )]
    UnknownSchema {
        /// Which panel.
        source_panel: &'static str,
        /// Its schema version.
        found: String,
        /// Those we know.
        known: String,
    },
    /// A value in the source does not fit.
    #[error("{table} row {row}, {field}: {message}")]
    Field {
        /// The table.
        table: &'static str,
        /// The row's id.
        row: i64,
        /// The column.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The source's Xray config could not be read.
    #[error("{}: {message}", path.display())]
    XrayConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The server named to make the source's inbounds on is not one here.
    #[error("no server named {0:?} here: add it first, or name one of yours")]
    NoServer(String),
    /// Our store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A bug.
    #[error("internal error in the import")]
    Internal,
}

/// Maps Marzban's users to ours: what to write, and what could not be carried.
pub fn plan(source: &marzban::Source, report: &mut Report) -> Vec<ImportedUser> {
    let mut out = Vec::with_capacity(source.users.len());
    for u in &source.users {
        let mut skip = |reason: String| {
            report.not_carried.push(NotCarried {
                what: format!("user {}", u.username),
                reason,
            })
        };
        if let Err(e) = model::check_username("username", &u.username) {
            skip(format!("its name is not one this panel takes: {e}"));
            continue;
        }
        let mut note = u.note.clone().unwrap_or_default();
        if let Err(e) = model::names::check_note("note", &note) {
            skip(format!("its note was left out: {e}"));
            note.clear();
        }
        let reset_strategy = match u.reset_strategy.as_str() {
            "no_reset" | "" => ResetStrategy::None,
            "day" => ResetStrategy::Day,
            "week" => ResetStrategy::Week,
            "month" => ResetStrategy::MonthFromStart,
            "year" => ResetStrategy::Year,
            other => {
                skip(format!(
                    "reset strategy {other:?} is unknown: the limit never resets here"
                ));
                ResetStrategy::None
            }
        };
        let on_hold = u.status == "on_hold";
        let on_hold_days = if on_hold {
            let seconds = u
                .on_hold_expire_duration
                .unwrap_or(0)
                .clamp(1, i64::MAX / 2);
            let days = u32::try_from((seconds + 86_399) / 86_400)
                .unwrap_or(36_500)
                .clamp(1, 36_500);
            if seconds % 86_400 != 0 {
                skip(format!(
                    "on hold for {seconds} s: rounded up to {days} whole days, the unit here"
                ));
            }
            if u.on_hold_timeout_ms.is_some() {
                skip("its on-hold timeout (start the clock by a date) is not kept: the clock starts at the first connection".into());
            }
            Some(days)
        } else {
            None
        };
        let mut credentials: Credentials = new_credentials();
        for (kind, settings) in &u.proxies {
            let text = |key: &str| {
                settings
                    .get(key)
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            };
            match kind.as_str() {
                "VLESS" => match text("id") {
                    Some(id) if is_uuid(&id) => credentials.vless_uuid = id,
                    _ => skip("its VLESS id is not a UUID: a new one was made".into()),
                },
                "Trojan" => match text("password") {
                    Some(p) if !p.is_empty() && p.len() <= 128 => credentials.trojan_password = p,
                    _ => {
                        skip("its Trojan password is empty or too long: a new one was made".into())
                    }
                },
                "VMess" => {
                    skip("VMess is not served here: its VMess credential was left out".into())
                }
                "Shadowsocks" => skip(format!(
                    "Shadowsocks {} is not served here (only Shadowsocks 2022): a 2022 key was made",
                    text("method").unwrap_or_default()
                )),
                other => skip(format!("proxy type {other:?} is unknown: left out")),
            }
        }
        out.push(ImportedUser {
            source_key: u.username.clone(),
            input: UserInput {
                enabled: u.status != "disabled",
                note,
                traffic_limit: u.data_limit,
                reset_strategy,
                expires_ms: if on_hold {
                    None
                } else {
                    u.expire.map(|s| s.saturating_mul(1000))
                },
                on_hold_days,
                ..UserInput::new(u.username.clone())
            },
            credentials,
            token: new_subscription_token(),
            used: u.used_traffic,
            lifetime: u.used_traffic.saturating_add(u.reset_traffic),
            created_ms: u.created_ms,
            sub_revoked_ms: u.sub_revoked_ms,
            link: None,
            devices: Vec::new(),
            carries: Carries::default(),
        });
    }
    out
}

/// Whether `s` is a UUID in its usual text form.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Our subscription token for an imported panel's link token: the user an import
/// brought, if the source would still answer the token. Marzban's are signed and
/// checked with its secret; 3x-ui's are the clients' subscription ids, Remnawave's
/// its users' short ids. A link a revocation here ended is refused. `None` for
/// anything else (most requests: a token of ours that does not exist), at the cost
/// of one read when nothing was ever imported and one more per source the token
/// could belong to.
pub async fn resolve(store: &dyn Store, token: &str) -> Result<Option<String>, StoreError> {
    let sources = store.import_sources().await?;
    let secret = |name: &str| {
        sources
            .iter()
            .find(|(s, _)| s == name)
            .map(|(_, secret)| secret.as_str())
    };
    if let Some(secret) = secret(MARZBAN)
        && let Some(ours) = resolve_marzban(store, token, secret).await?
    {
        return Ok(Some(ours));
    }
    if let Some(secret) = secret(PASARGUARD)
        && let Some(ours) = resolve_pasarguard(store, token, secret).await?
    {
        return Ok(Some(ours));
    }
    let live =
        |link: Option<ImportedLink>| link.filter(|l| l.sub_revoked_ms.is_none()).map(|l| l.token);
    if let Some((name, key)) = token.split_once('/') {
        return Ok(match secret(MARZNESHIN) {
            Some(_) => resolve_marzneshin(store, name, key).await?,
            None => None,
        });
    }
    if secret(XUI).is_some() && xui_plan::is_sub_id(token) {
        let ours = live(store.imported_link(XUI, &xui_plan::sub_key(token)).await?);
        if ours.is_some() {
            return Ok(ours);
        }
    }
    if secret(REMNAWAVE).is_some() && remnawave_plan::is_short_id(token) {
        return Ok(live(store.imported_link_by(REMNAWAVE, token).await?));
    }
    Ok(None)
}

async fn resolve_marzban(
    store: &dyn Store,
    token: &str,
    secret: &str,
) -> Result<Option<String>, StoreError> {
    if token.len() < 15 || token.len() > marzban_token::MAX_TOKEN {
        return Ok(None);
    }
    let Some(t) = marzban_token::verify(token, secret) else {
        return Ok(None);
    };
    let Some(link) = store.imported_link(MARZBAN, &t.username).await? else {
        return Ok(None);
    };
    Ok(
        marzban_token::accepted(t.issued_s, link.source_created_ms, link.sub_revoked_ms)
            .then_some(link.token),
    )
}

async fn resolve_pasarguard(
    store: &dyn Store,
    token: &str,
    secret: &str,
) -> Result<Option<String>, StoreError> {
    use pasarguard_token::Subject;
    let Some(t) = pasarguard_token::verify(token, secret) else {
        return Ok(None);
    };
    let link = match &t.subject {
        Subject::Id(id) => store.imported_link_by(PASARGUARD, &id.to_string()).await?,
        Subject::Name(name) => store.imported_link(PASARGUARD, name).await?,
    };
    let Some(link) = link else {
        return Ok(None);
    };
    Ok(
        marzban_token::accepted(t.issued_s, link.source_created_ms, link.sub_revoked_ms)
            .then_some(link.token),
    )
}

/// Whether `key` could be the key of a Marzneshin link (`/sub/NAME/KEY`).
pub fn is_marzneshin_key(key: &str) -> bool {
    marzneshin_plan::is_key(key)
}

/// Our token for Marzneshin's `/sub/NAME/KEY`: the user an import brought with that
/// name and key, unless a revocation here ended the link.
async fn resolve_marzneshin(
    store: &dyn Store,
    name: &str,
    key: &str,
) -> Result<Option<String>, StoreError> {
    if !marzneshin_plan::is_key(key) || name.is_empty() || name.len() > 64 {
        return Ok(None);
    }
    let Some(by_key) = store.imported_link_by(MARZNESHIN, key).await? else {
        return Ok(None);
    };
    let by_name = store.imported_link(MARZNESHIN, name).await?;
    Ok(by_name
        .filter(|l| l.user_id == by_key.user_id && by_key.sub_revoked_ms.is_none())
        .map(|_| by_key.token))
}

/// Where a bad value is.
pub(super) struct Field {
    pub(super) table: &'static str,
    pub(super) row: i64,
    pub(super) field: &'static str,
}

impl Field {
    pub(super) fn error(&self, message: String) -> ImportError {
        ImportError::Field {
            table: self.table,
            row: self.row,
            field: self.field,
            message,
        }
    }
}

/// Opens the SQLite file at `path` read-only: a source is never written.
async fn open_read_only(path: &std::path::Path) -> Result<sqlx::SqliteConnection, ImportError> {
    use sqlx::Connection;
    let open = |source| ImportError::Open {
        path: path.to_owned(),
        source,
    };
    if !path.is_file() {
        return Err(open(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        ))));
    }
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true);
    sqlx::SqliteConnection::connect_with(&options)
        .await
        .map_err(open)
}

/// Writes `users` of `source` (the one write path of every source) and puts
/// what was written in `report`.
async fn write(
    store: &dyn Store,
    (source, secret): (&str, &str),
    users: &[ImportedUser],
    mode: ImportMode,
    now_ms: i64,
    report: &mut Report,
) -> Result<(), ImportError> {
    let written = store
        .import_users(source, secret, users, mode, now_ms)
        .await?;
    report.written(users.len(), written);
    Ok(())
}

/// Imports the Marzban database at `db` (and its Xray config, when given) into
/// `store`; with `dry_run` nothing is kept. With `disable_missing`, users an earlier
/// import brought that Marzban no longer has are disabled.
pub async fn marzban(
    store: &dyn Store,
    db: &std::path::Path,
    xray_config: Option<&std::path::Path>,
    (dry_run, disable_missing): (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = marzban::read(db).await?;
    marzban_from(
        store,
        source,
        xray_config,
        (dry_run, disable_missing),
        now_ms,
    )
    .await
}

/// [`marzban`], from Marzban's MySQL (or MariaDB) database at `url`
/// (`mysql://USER:PASSWORD@HOST:PORT/DB`), read in one read-only transaction.
pub async fn marzban_url(
    store: &dyn Store,
    url: &str,
    xray_config: Option<&std::path::Path>,
    flags: (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = marzban::read_url(url).await?;
    marzban_from(store, source, xray_config, flags, now_ms).await
}

async fn marzban_from(
    store: &dyn Store,
    source: marzban::Source,
    xray_config: Option<&std::path::Path>,
    (dry_run, disable_missing): (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let mut report = Report::new(MARZBAN, &source.schema, dry_run);
    report.describe(&source);
    if let Some(path) = xray_config {
        report.inbounds = report::inbounds(path)?;
    }
    let users = plan(&source, &mut report);
    let mode = ImportMode {
        disable_missing,
        dry_run,
    };
    write(
        store,
        (MARZBAN, &source.secret),
        &users,
        mode,
        now_ms,
        &mut report,
    )
    .await?;
    let owners: Vec<_> = source
        .users
        .iter()
        .map(|u| (u.username.as_str(), u.admin.as_deref()))
        .collect();
    admins::carry(
        store,
        MARZBAN,
        &source.admins,
        &owners,
        (dry_run, now_ms),
        &mut report,
    )
    .await?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(status: &str) -> marzban::SourceUser {
        marzban::SourceUser {
            username: "alice".into(),
            status: status.into(),
            used_traffic: 7,
            reset_traffic: 5,
            data_limit: Some(100),
            reset_strategy: "month".into(),
            expire: Some(1_800_000_000),
            created_ms: 1_700_000_000_123,
            sub_revoked_ms: None,
            note: Some("paid".into()),
            on_hold_expire_duration: Some(3 * 86_400 + 1),
            on_hold_timeout_ms: None,
            admin: Some("owner".into()),
            proxies: vec![
                (
                    "VLESS".into(),
                    serde_json::json!({"id": "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11", "flow": ""}),
                ),
                ("Trojan".into(), serde_json::json!({"password": "tr-pw"})),
                (
                    "VMess".into(),
                    serde_json::json!({"id": "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a12"}),
                ),
            ],
        }
    }

    fn planned(users: Vec<marzban::SourceUser>) -> (Vec<ImportedUser>, Report) {
        let source = marzban::Source {
            schema: "2b231de97dc3".into(),
            users,
            ..Default::default()
        };
        let mut report = Report::new(MARZBAN, &source.schema, false);
        (plan(&source, &mut report), report)
    }

    #[test]
    fn a_marzban_user_keeps_credentials_usage_limits_and_expiry() {
        let (users, report) = planned(vec![user("active")]);
        let u = &users[0];
        assert_eq!(u.source_key, "alice");
        assert_eq!(
            u.credentials.vless_uuid,
            "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11"
        );
        assert_eq!(u.credentials.trojan_password, "tr-pw");
        assert_eq!((u.used, u.lifetime), (7, 12));
        assert_eq!(u.input.traffic_limit, Some(100));
        assert_eq!(u.input.reset_strategy, ResetStrategy::MonthFromStart);
        assert_eq!(u.input.expires_ms, Some(1_800_000_000_000));
        assert_eq!(u.input.on_hold_days, None);
        assert!(u.input.enabled);
        assert_eq!(u.input.note, "paid");
        assert_eq!(u.created_ms, 1_700_000_000_123);
        assert_eq!(
            report.not_carried,
            vec![NotCarried {
                what: "user alice".into(),
                reason: "VMess is not served here: its VMess credential was left out".into()
            }]
        );
    }

    #[test]
    fn statuses_map_to_ours_and_on_hold_rounds_up_to_whole_days() {
        let (users, report) = planned(vec![user("disabled")]);
        assert!(!users[0].input.enabled);
        assert_eq!(report.not_carried.len(), 1);
        let (users, report) = planned(vec![user("on_hold")]);
        assert_eq!(users[0].input.on_hold_days, Some(4));
        assert_eq!(users[0].input.expires_ms, None);
        assert!(
            report
                .not_carried
                .iter()
                .any(|n| n.reason.contains("rounded up to 4 whole days"))
        );
        // Limited and expired follow from the usage and the expiry here.
        let (users, _) = planned(vec![user("limited"), user("expired")]);
        assert!(users.iter().all(|u| u.input.enabled));
    }

    #[test]
    fn bad_source_values_are_replaced_and_reported_not_taken() {
        let mut u = user("active");
        u.proxies = vec![("VLESS".into(), serde_json::json!({"id": "not-a-uuid"}))];
        u.reset_strategy = "fortnight".into();
        let mut bad_name = user("active");
        bad_name.username = "no spaces allowed".into();
        let (users, report) = planned(vec![u, bad_name]);
        assert_eq!(users.len(), 1);
        assert!(is_uuid(&users[0].credentials.vless_uuid));
        assert_ne!(users[0].credentials.vless_uuid, "not-a-uuid");
        assert_eq!(users[0].input.reset_strategy, ResetStrategy::None);
        let reasons: Vec<&str> = report
            .not_carried
            .iter()
            .map(|n| n.reason.as_str())
            .collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[2].starts_with("its name is not one this panel takes"));
    }
}
