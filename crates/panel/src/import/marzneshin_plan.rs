//! Marzneshin's users mapped to ours (a pure function of what [`super::marzneshin`]
//! read), and the import's entry point.
//!
//! Marzneshin keeps Marzban's user in another shape, so the mapping is Marzban's
//! ([`super::plan`]) after reshaping: name, usage and lifetime usage, limit and reset
//! period, note and creation time; a fixed date is the expiry, "start on first use"
//! is on hold, a disabled user is disabled. The VLESS UUID and Trojan password are
//! those Marzneshin's nodes derive from the user's key ([`credentials`]), so apps
//! that kept their old configs keep working. The user is kept under their name and
//! linked by their key: the old `/sub/NAME/KEY` link keeps working.

use super::marzneshin::{Auth, Source, SourceUser, credentials};
use super::report::{NotCarried, Report};
use super::{ImportError, MARZNESHIN, marzban, write};
use crate::store::{ImportMode, ImportedUser, Store};

/// Whether `key` could be a Marzneshin user's key (hex digits, at most 64).
pub(super) fn is_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 64 && key.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Maps Marzneshin's users to ours: what to write, and what could not be carried.
pub fn plan(source: &Source, auth: Auth, report: &mut Report) -> Vec<ImportedUser> {
    let mut shaped = Vec::with_capacity(source.users.len());
    for u in &source.users {
        match credentials(&u.key, auth) {
            Some(c) => shaped.push(as_marzban(u, c)),
            None => report.not_carried.push(NotCarried {
                what: format!("user {}", u.username),
                reason: "its key is not one the plain algorithm takes (32 hex digits): \
                         was Marzneshin's AUTH_GENERATION_ALGORITHM xxh128?"
                    .into(),
            }),
        }
    }
    let shaped = marzban::Source {
        schema: source.schema.clone(),
        users: shaped,
        ..marzban::Source::default()
    };
    let mut out = super::plan(&shaped, report);
    for user in &mut out {
        let Some(u) = source.users.iter().find(|u| u.username == user.source_key) else {
            continue;
        };
        user.link = Some(u.key.clone());
        if user.input.on_hold_days.is_none() {
            user.input.expires_ms = u.expire_ms.filter(|_| u.expire_strategy == "fixed_date");
        }
    }
    out
}

/// `u` as Marzban would hold it, with the credentials `(uuid, password)` its key
/// gives.
fn as_marzban(u: &SourceUser, (uuid, password): (String, String)) -> marzban::SourceUser {
    let on_hold = u.expire_strategy == "start_on_first_use";
    let status = if !u.enabled {
        "disabled"
    } else if on_hold {
        "on_hold"
    } else {
        "active"
    };
    marzban::SourceUser {
        username: u.username.clone(),
        status: status.into(),
        used_traffic: u.used_traffic,
        reset_traffic: u.lifetime_used_traffic.saturating_sub(u.used_traffic),
        data_limit: u.data_limit,
        reset_strategy: u.reset_strategy.clone(),
        expire: u
            .expire_ms
            .filter(|_| u.expire_strategy == "fixed_date")
            .map(|ms| ms.div_euclid(1000)),
        created_ms: u.created_ms,
        sub_revoked_ms: None,
        note: u.note.clone(),
        on_hold_expire_duration: on_hold.then_some(u.usage_duration).flatten(),
        on_hold_timeout_ms: u.activation_deadline_ms.filter(|_| on_hold),
        admin: u.admin.clone(),
        proxies: vec![
            ("VLESS".into(), serde_json::json!({ "id": uuid })),
            ("Trojan".into(), serde_json::json!({ "password": password })),
        ],
    }
}

/// Adds the source's listings (nodes, admins, services, inbounds) to `report`.
fn describe(source: &Source, report: &mut Report) {
    let owners: Vec<Option<&str>> = source.users.iter().map(|u| u.admin.as_deref()).collect();
    report.list(&owners, &source.admins, &source.nodes);
    report.inbounds = source.inbounds.clone();
    for (name, members) in &source.services {
        report.not_carried.push(NotCarried {
            what: format!("service {name}"),
            reason: format!(
                "services are not carried: its {members} members get the routes of their \
                 clusters here"
            ),
        });
    }
    if source.removed > 0 {
        report.not_carried.push(NotCarried {
            what: format!("{} removed users", source.removed),
            reason: "Marzneshin keeps removed users without a name: they are not brought".into(),
        });
    }
}

/// Imports the Marzneshin database at `db` into `store`, the credentials derived by
/// `auth`; with `dry_run` nothing is kept. With `disable_missing`, users an earlier
/// import brought that Marzneshin no longer has are disabled.
pub async fn marzneshin(
    store: &dyn Store,
    db: &std::path::Path,
    auth: Auth,
    flags: (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = super::marzneshin::read(db).await?;
    marzneshin_from(store, source, auth, flags, now_ms).await
}

/// [`marzneshin`], from Marzneshin's database on a server at `url` (PostgreSQL,
/// MySQL or MariaDB), read in one read-only transaction.
pub async fn marzneshin_url(
    store: &dyn Store,
    url: &str,
    auth: Auth,
    flags: (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = super::marzneshin::read_url(url).await?;
    marzneshin_from(store, source, auth, flags, now_ms).await
}

async fn marzneshin_from(
    store: &dyn Store,
    source: Source,
    auth: Auth,
    (dry_run, disable_missing): (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let mut report = Report::new(MARZNESHIN, &source.schema, dry_run);
    describe(&source, &mut report);
    let users = plan(&source, auth, &mut report);
    let mode = ImportMode {
        disable_missing,
        dry_run,
    };
    write(store, (MARZNESHIN, ""), &users, mode, now_ms, &mut report).await?;
    let owners: Vec<_> = source
        .users
        .iter()
        .map(|u| (u.username.as_str(), u.admin.as_deref()))
        .collect();
    super::admins::carry(
        store,
        MARZNESHIN,
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
    use crate::model::ResetStrategy;

    fn user(name: &str, key: &str) -> SourceUser {
        SourceUser {
            id: 1,
            username: name.into(),
            key: key.into(),
            enabled: true,
            used_traffic: 7,
            lifetime_used_traffic: 12,
            data_limit: Some(100),
            reset_strategy: "month".into(),
            expire_strategy: "fixed_date".into(),
            expire_ms: Some(1_800_000_000_123),
            usage_duration: None,
            activation_deadline_ms: None,
            created_ms: 1_700_000_000_000,
            note: Some("paid".into()),
            admin: Some("owner".into()),
        }
    }

    fn planned(users: Vec<SourceUser>, auth: Auth) -> (Vec<ImportedUser>, Report) {
        let source = Source {
            schema: "57eba0a293f2".into(),
            users,
            ..Source::default()
        };
        let mut report = Report::new(MARZNESHIN, &source.schema, false);
        (plan(&source, auth, &mut report), report)
    }

    #[test]
    fn a_marzneshin_user_keeps_usage_limits_expiry_and_the_credentials_of_its_key() {
        let key = "0123456789abcdef0123456789abcdef";
        let (users, report) = planned(vec![user("alice", key)], Auth::Xxh128);
        assert!(report.not_carried.is_empty(), "{:?}", report.not_carried);
        let a = &users[0];
        let (uuid, password) = credentials(key, Auth::Xxh128).unwrap();
        assert_eq!(a.credentials.vless_uuid, uuid);
        assert_eq!(a.credentials.trojan_password, password);
        assert_eq!(a.link.as_deref(), Some(key));
        assert_eq!((a.used, a.lifetime), (7, 12));
        assert_eq!(a.input.traffic_limit, Some(100));
        assert_eq!(a.input.reset_strategy, ResetStrategy::MonthFromStart);
        assert_eq!(a.input.expires_ms, Some(1_800_000_000_123));
        assert!(a.input.enabled);
        let (users, _) = planned(vec![user("alice", key)], Auth::Plain);
        assert_eq!(users[0].credentials.trojan_password, key);
    }

    #[test]
    fn strategies_and_statuses_map_to_ours() {
        let mut never = user("never", "aa");
        never.expire_strategy = "never".into();
        let mut first = user("first", "bb");
        first.expire_strategy = "start_on_first_use".into();
        first.usage_duration = Some(14 * 86_400);
        first.activation_deadline_ms = Some(1_800_000_000_000);
        let mut off = user("off", "cc");
        off.enabled = false;
        let (users, report) = planned(vec![never, first, off], Auth::Xxh128);
        assert_eq!(users[0].input.expires_ms, None);
        assert_eq!(users[1].input.on_hold_days, Some(14));
        assert_eq!(users[1].input.expires_ms, None);
        assert!(!users[2].input.enabled);
        let reasons: Vec<&str> = report
            .not_carried
            .iter()
            .map(|n| n.reason.as_str())
            .collect();
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].starts_with("its on-hold timeout"), "{reasons:?}");
        // A key the plain algorithm cannot take is said, and the user left out.
        let (users, report) = planned(vec![user("short", "abc")], Auth::Plain);
        assert!(users.is_empty());
        assert_eq!(report.not_carried.len(), 1);
        assert!(is_key("0f") && !is_key("xyz") && !is_key(""));
    }

    proptest::proptest! {
        #[test]
        fn any_source_plans_only_what_this_panel_takes(
            name in "\\PC{0,40}",
            key in "[0-9a-fA-F]{1,64}",
            strategy in "(never|fixed_date|start_on_first_use|\\PC{0,12})",
            reset in "\\PC{0,12}",
            enabled in proptest::prelude::any::<bool>(),
            plain in proptest::prelude::any::<bool>(),
            duration in proptest::option::of(proptest::prelude::any::<i64>()),
            expire in proptest::option::of(proptest::prelude::any::<i64>()),
            used in proptest::prelude::any::<u64>(),
            lifetime in proptest::prelude::any::<u64>(),
        ) {
            let u = SourceUser {
                username: name,
                key,
                enabled,
                expire_strategy: strategy,
                reset_strategy: reset,
                usage_duration: duration,
                expire_ms: expire,
                used_traffic: used,
                lifetime_used_traffic: lifetime,
                ..user("x", "00")
            };
            let auth = if plain { Auth::Plain } else { Auth::Xxh128 };
            let (users, _) = planned(vec![u], auth);
            for u in &users {
                proptest::prop_assert!(crate::model::check_username("username", &u.input.username).is_ok());
                proptest::prop_assert!(super::super::is_uuid(&u.credentials.vless_uuid));
                proptest::prop_assert!(!u.credentials.trojan_password.is_empty());
                proptest::prop_assert!(u.credentials.trojan_password.len() <= 128);
                proptest::prop_assert!(u.link.as_deref().is_some_and(is_key));
                proptest::prop_assert!(u.lifetime >= u.used);
                proptest::prop_assert!(u.input.on_hold_days.is_none_or(|d| (1..=36_500).contains(&d)));
            }
        }
    }
}
