//! PasarGuard's users mapped to ours (a pure function of what [`super::pasarguard`]
//! read), and the import's entry point.
//!
//! PasarGuard keeps Marzban's user, so the mapping is Marzban's ([`super::plan`]):
//! name, VLESS UUID, Trojan password, usage and lifetime usage, limit and reset
//! period, expiry, status (on hold in whole days), note and creation time; and
//! from 4.0 the device limit and known devices. The user is kept under their name
//! and linked by their id, which PasarGuard's subscription tokens name: the old
//! `/sub/TOKEN` links keep working, checked with PasarGuard's imported secret.

use std::collections::HashMap;

use super::pasarguard::{Layout, Source, SourceUser};
use super::remnawave::SourceDevice;
use super::remnawave_plan::devices_of;
use super::report::{NotCarried, Report};
use super::{ImportError, PASARGUARD, marzban, write};
use crate::store::{Carries, ImportMode, ImportedUser, Store};

/// Maps PasarGuard's users to ours: what to write, and what could not be carried.
pub fn plan(source: &Source, report: &mut Report) -> Vec<ImportedUser> {
    let shaped = marzban::Source {
        schema: source.schema.clone(),
        users: source.users.iter().map(as_marzban).collect(),
        ..marzban::Source::default()
    };
    let mut out = super::plan(&shaped, report);
    let by_name: HashMap<&str, &SourceUser> = source
        .users
        .iter()
        .map(|u| (u.username.as_str(), u))
        .collect();
    let devices: Vec<SourceDevice> = source
        .devices
        .iter()
        .map(|d| SourceDevice {
            user: d.user,
            hwid: d.hwid.clone(),
            os: d.os.clone().unwrap_or_default(),
            model: d.model.clone().unwrap_or_default(),
            user_agent: String::new(),
            created_ms: d.created_ms,
            updated_ms: d.last_used_ms,
        })
        .collect();
    for user in &mut out {
        let Some(u) = by_name.get(user.source_key.as_str()) else {
            continue;
        };
        user.link = Some(u.id.to_string());
        if user.input.on_hold_days.is_none() {
            user.input.expires_ms = u.expire_ms;
        }
        if source.layout == Layout::Devices {
            user.carries = Carries {
                address_limit: false,
                device_limit: true,
            };
            user.input.device_limit = u
                .hwid_limit
                .filter(|n| *n > 0)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
            let mut skip = |reason: String| {
                report.not_carried.push(NotCarried {
                    what: format!("user {}", u.username),
                    reason,
                })
            };
            user.devices = devices_of(u.id, &devices, &mut skip);
        }
    }
    if source.layout == Layout::Devices {
        report.not_carried.push(NotCarried {
            what: "device limits".into(),
            reason: "only each user's own device limit is carried; PasarGuard's \
                     fallback limits (by admin role or in its settings) for users \
                     without one are not: set a limit here for those users"
                .into(),
        });
    }
    let others: Vec<&str> = ["vmess", "shadowsocks", "wireguard", "hysteria"]
        .into_iter()
        .filter(|kind| {
            source
                .users
                .iter()
                .any(|u| u.proxy_settings.get(kind).is_some())
        })
        .collect();
    if !others.is_empty() {
        report.not_carried.push(NotCarried {
            what: "every user".into(),
            reason: format!(
                "PasarGuard's {} credentials are not served here (Shadowsocks only as \
                 2022, with a key made here per user): each user's VLESS UUID and Trojan \
                 password are kept",
                others.join(", ")
            ),
        });
    }
    out
}

/// `u` as Marzban would hold it: its VLESS and Trojan credentials as proxies (the
/// rest are reported once for every user, not per user).
fn as_marzban(u: &SourceUser) -> marzban::SourceUser {
    let mut proxies = Vec::new();
    if let Some(vless) = u.proxy_settings.get("vless") {
        proxies.push(("VLESS".to_owned(), vless.clone()));
    }
    if let Some(trojan) = u.proxy_settings.get("trojan") {
        proxies.push(("Trojan".to_owned(), trojan.clone()));
    }
    marzban::SourceUser {
        username: u.username.clone(),
        status: u.status.clone(),
        used_traffic: u.used_traffic,
        reset_traffic: u.reset_traffic,
        data_limit: u.data_limit,
        reset_strategy: u.reset_strategy.clone(),
        expire: u.expire_ms.map(|ms| ms.div_euclid(1000)),
        created_ms: u.created_ms,
        sub_revoked_ms: u.sub_revoked_ms,
        note: u.note.clone(),
        on_hold_expire_duration: u.on_hold_expire_duration,
        on_hold_timeout_ms: u.on_hold_timeout_ms,
        admin: u.admin.clone(),
        proxies,
    }
}

/// Adds the source's listings (nodes, admins, inbounds) to `report`.
fn describe(source: &Source, report: &mut Report) {
    let owners: Vec<Option<&str>> = source.users.iter().map(|u| u.admin.as_deref()).collect();
    report.list(&owners, &source.admins, &source.nodes);
    report.inbounds = source.inbounds.clone();
    report.vision = source.users.iter().any(|u| {
        u.proxy_settings
            .get("vless")
            .is_some_and(super::report::is_vision)
    });
}

/// Imports the PasarGuard database at `db` into `store`; with `dry_run` nothing is
/// kept. With `disable_missing`, users an earlier import brought that PasarGuard no
/// longer has are disabled.
pub async fn pasarguard(
    store: &dyn Store,
    db: &std::path::Path,
    flags: (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = super::pasarguard::read(db).await?;
    pasarguard_from(store, source, flags, now_ms).await
}

/// [`pasarguard`], from PasarGuard's database on a server at `url` (PostgreSQL,
/// MySQL or MariaDB), read in one read-only transaction.
pub async fn pasarguard_url(
    store: &dyn Store,
    url: &str,
    flags: (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = super::pasarguard::read_url(url).await?;
    pasarguard_from(store, source, flags, now_ms).await
}

async fn pasarguard_from(
    store: &dyn Store,
    source: Source,
    (dry_run, disable_missing): (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let mut report = Report::new(PASARGUARD, &source.schema, dry_run);
    describe(&source, &mut report);
    let users = plan(&source, &mut report);
    let mode = ImportMode {
        disable_missing,
        dry_run,
    };
    write(
        store,
        (PASARGUARD, &source.secret),
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
    super::admins::carry(
        store,
        PASARGUARD,
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
    use crate::import::pasarguard::SourceDevice as Device;
    use crate::model::ResetStrategy;

    fn user(id: i64, name: &str) -> SourceUser {
        SourceUser {
            id,
            username: name.into(),
            status: "active".into(),
            used_traffic: 7,
            reset_traffic: 5,
            data_limit: Some(100),
            reset_strategy: "week".into(),
            expire_ms: Some(1_800_000_000_123),
            created_ms: 1_700_000_000_000,
            sub_revoked_ms: None,
            note: Some("paid".into()),
            on_hold_expire_duration: None,
            on_hold_timeout_ms: None,
            admin: Some("owner".into()),
            hwid_limit: Some(2),
            proxy_settings: serde_json::json!({
                "vless": {"id": "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11", "flow": "xtls-rprx-vision"},
                "trojan": {"password": "tr-pw"},
                "vmess": {"id": "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a12"},
                "shadowsocks": {"password": "ss-password-of-22-chars", "method": "aes-128-gcm"},
            }),
        }
    }

    fn source(layout: Layout, users: Vec<SourceUser>, devices: Vec<Device>) -> Source {
        Source {
            schema: "fb32155473c1".into(),
            layout,
            secret: "s".into(),
            users,
            devices,
            admins: vec![crate::import::SourceAdmin {
                name: "owner".into(),
                sudo: true,
                password_hash: None,
            }],
            nodes: Vec::new(),
            inbounds: Vec::new(),
        }
    }

    fn device(user: i64, hwid: &str, last_used_ms: i64) -> Device {
        Device {
            user,
            hwid: hwid.into(),
            os: Some("Android 15".into()),
            model: None,
            created_ms: 1_000,
            last_used_ms,
        }
    }

    #[test]
    fn a_pasarguard_user_keeps_credentials_usage_limits_expiry_and_devices() {
        let s = source(
            Layout::Devices,
            vec![user(7, "alice"), user(8, "bob")],
            vec![
                device(7, "old", 2_000),
                device(8, "bobs", 2_000),
                device(7, "new", 3_000),
            ],
        );
        let mut report = Report::new(PASARGUARD, &s.schema, false);
        let users = plan(&s, &mut report);
        let a = &users[0];
        assert_eq!(
            (a.source_key.as_str(), a.link.as_deref()),
            ("alice", Some("7"))
        );
        assert_eq!(
            a.credentials.vless_uuid,
            "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11"
        );
        assert_eq!(a.credentials.trojan_password, "tr-pw");
        assert_eq!((a.used, a.lifetime), (7, 12));
        assert_eq!(a.input.traffic_limit, Some(100));
        assert_eq!(a.input.reset_strategy, ResetStrategy::Week);
        assert_eq!(a.input.expires_ms, Some(1_800_000_000_123));
        assert_eq!(a.input.device_limit, Some(2));
        assert_eq!(a.input.note, "paid");
        assert!(a.carries.device_limit && !a.carries.address_limit);
        let hwids: Vec<&str> = a.devices.iter().map(|d| d.hwid.as_str()).collect();
        assert_eq!(hwids, ["new", "old"]);
        assert_eq!(a.devices[0].os.as_deref(), Some("Android 15"));
        assert_eq!(users[1].devices.len(), 1);
        // The kinds not served here are said once, not once per user.
        assert_eq!(report.not_carried.len(), 2, "{:#?}", report.not_carried);
        assert_eq!(report.not_carried[0].what, "device limits");
        assert_eq!(
            report.not_carried[1..],
            vec![NotCarried {
                what: "every user".into(),
                reason: "PasarGuard's vmess, shadowsocks credentials are not served here \
                         (Shadowsocks only as 2022, with a key made here per user): each \
                         user's VLESS UUID and Trojan password are kept"
                    .into()
            }]
        );
    }

    #[test]
    fn before_4_0_no_device_limit_is_carried_and_on_hold_keeps_no_expiry() {
        let mut carol = user(3, "carol");
        carol.status = "on_hold".into();
        carol.on_hold_expire_duration = Some(3 * 86_400);
        carol.expire_ms = None;
        carol.proxy_settings = serde_json::json!({"vless": {"id": "not-a-uuid"}});
        let s = source(Layout::Groups, vec![carol], Vec::new());
        let mut report = Report::new(PASARGUARD, &s.schema, false);
        let users = plan(&s, &mut report);
        let c = &users[0];
        assert_eq!(c.carries, Carries::default());
        assert_eq!(c.input.device_limit, None);
        assert_eq!(c.input.on_hold_days, Some(3));
        assert_eq!(c.input.expires_ms, None);
        assert_ne!(c.credentials.vless_uuid, "not-a-uuid");
        let reasons: Vec<&str> = report
            .not_carried
            .iter()
            .map(|n| n.reason.as_str())
            .collect();
        assert_eq!(reasons, ["its VLESS id is not a UUID: a new one was made"]);
    }

    proptest::proptest! {
        #[test]
        fn any_source_plans_only_what_this_panel_takes(
            name in "\\PC{0,40}",
            vless in "\\PC{0,40}",
            trojan in "\\PC{0,200}",
            status in "\\PC{0,10}",
            hwid_limit in proptest::option::of(proptest::prelude::any::<i64>()),
            hwids in proptest::collection::vec("\\PC{0,300}", 0..80),
            used in proptest::prelude::any::<u64>(),
            reset in proptest::prelude::any::<u64>(),
        ) {
            let u = SourceUser {
                username: name,
                status,
                hwid_limit,
                used_traffic: used,
                reset_traffic: reset,
                proxy_settings: serde_json::json!({"vless": {"id": vless}, "trojan": {"password": trojan}}),
                ..user(7, "x")
            };
            let devices = hwids.iter().map(|h| device(7, h, 5)).collect();
            let s = source(Layout::Devices, vec![u], devices);
            let mut report = Report::new(PASARGUARD, &s.schema, false);
            for u in &plan(&s, &mut report) {
                proptest::prop_assert!(crate::model::check_username("username", &u.input.username).is_ok());
                proptest::prop_assert!(super::super::is_uuid(&u.credentials.vless_uuid));
                proptest::prop_assert!(!u.credentials.trojan_password.is_empty());
                proptest::prop_assert!(u.credentials.trojan_password.len() <= 128);
                proptest::prop_assert!(u.lifetime >= u.used);
                proptest::prop_assert!(u.input.device_limit.is_none_or(|n| n > 0));
                proptest::prop_assert!(u.devices.len() <= crate::store::MAX_DEVICES as usize);
                for d in &u.devices {
                    proptest::prop_assert!(!d.hwid.is_empty());
                    proptest::prop_assert!(d.hwid.bytes().all(|b| b.is_ascii_graphic() || b == b' '));
                }
            }
        }
    }
}
