//! Remnawave's users mapped to ours (a pure function of what [`super::remnawave`]
//! read), and the import's entry point.
//!
//! A user keeps their name, VLESS UUID, Trojan password and Shadowsocks 2022 key,
//! usage and lifetime usage, limit and reset period, expiry, status, note, device
//! limit and known devices, and creation time. Their subscription short id stays a
//! way in: `/sub/SHORTID` (or under an old path the operator lists in
//! `subscription.old_paths`, such as Remnawave's `api/sub`) answers with their
//! subscription here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::remnawave::{DeviceSettings, Source, SourceDevice, SourceUser};
use super::report::{NodeSeen, NotCarried, Report};
use super::{ImportError, REMNAWAVE, is_uuid, write};
use crate::model::{self, Credentials, ResetStrategy};
use crate::service::{new_credentials, new_subscription_token};
use crate::store::{
    Carries, ImportMode, ImportedDevice, ImportedUser, MAX_DEVICES, Store, UserInput,
};

/// The longest device text taken (as the subscription endpoint takes `x-hwid`).
const MAX_DEVICE_TEXT: usize = 256;
/// The longest subscription short id answered.
pub(super) const MAX_SHORT_ID: usize = 64;

/// Whether `token` could be a Remnawave short id (letters, digits, `-`, `_`).
pub(super) fn is_short_id(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= MAX_SHORT_ID
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The key a Remnawave user is kept under: their id, which a revocation there does
/// not change (their short id does).
fn key(u: &SourceUser) -> String {
    format!("id:{}", u.id)
}

/// The device limit Remnawave enforces for `u`: none when it enforces none.
fn device_limit(u: &SourceUser, settings: DeviceSettings) -> Option<u32> {
    if !settings.enabled {
        return None;
    }
    match u.device_limit.or(settings.fallback) {
        Some(n) if n > 0 => Some(u32::try_from(n).unwrap_or(u32::MAX)),
        _ => None,
    }
}

/// `text` as a device field here: visible ASCII, at most [`MAX_DEVICE_TEXT`] bytes.
fn device_text(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(MAX_DEVICE_TEXT)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// [`device_text`], none when empty.
fn device_field(text: &str) -> Option<String> {
    Some(device_text(text)).filter(|t| !t.is_empty())
}

/// Maps Remnawave's users to ours: what to write, and what could not be carried.
pub fn plan(source: &Source, report: &mut Report) -> Vec<ImportedUser> {
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
        let mut note = u.description.clone();
        if let Err(e) = model::names::check_note("note", &note) {
            skip(format!("its note was left out: {e}"));
            note.clear();
        }
        let reset_strategy = match u.strategy.to_ascii_uppercase().as_str() {
            "NO_RESET" | "" => ResetStrategy::None,
            "DAY" => ResetStrategy::Day,
            "WEEK" => ResetStrategy::Week,
            "MONTH" => ResetStrategy::Month,
            "MONTH_ROLLING" => ResetStrategy::MonthFromStart,
            other => {
                skip(format!(
                    "reset strategy {other:?} is unknown: the limit never resets here"
                ));
                ResetStrategy::None
            }
        };
        let mut credentials: Credentials = new_credentials();
        if is_uuid(&u.vless_uuid) {
            credentials.vless_uuid = u.vless_uuid.clone();
        } else {
            skip("its VLESS UUID is not a UUID: a new one was made".into());
        }
        if !u.trojan_password.is_empty() && u.trojan_password.len() <= 128 {
            credentials.trojan_password = u.trojan_password.clone();
        } else {
            skip("its Trojan password is empty or too long: a new one was made".into());
        }
        // Remnawave's 2022 key is the password's bytes; 32 of them are an AES-256
        // key, which is the seed every method's key is cut from here.
        if u.ss_password.len() == 32 {
            credentials.ss_seed = STANDARD.encode(u.ss_password.as_bytes());
        } else {
            skip(format!(
                "its Shadowsocks password is {} bytes, not the 32 of a 2022 key: a new key was made",
                u.ss_password.len()
            ));
        }
        let status = u.status.to_ascii_uppercase();
        if !matches!(
            status.as_str(),
            "ACTIVE" | "DISABLED" | "LIMITED" | "EXPIRED"
        ) {
            skip(format!("status {:?} is unknown: taken as active", u.status));
        }
        let devices = devices_of(u.id, &source.devices, &mut skip);
        out.push(ImportedUser {
            source_key: key(u),
            input: UserInput {
                enabled: status != "DISABLED",
                note,
                traffic_limit: (u.traffic_limit > 0).then_some(u.traffic_limit),
                reset_strategy,
                expires_ms: Some(u.expire_ms),
                device_limit: device_limit(u, source.device_settings),
                ..UserInput::new(u.username.clone())
            },
            credentials,
            token: new_subscription_token(),
            used: u.used,
            lifetime: u.lifetime.max(u.used),
            created_ms: u.created_ms,
            // Remnawave's own revocation gave the user a new short id (the one
            // below); a revocation here ends that one too.
            sub_revoked_ms: None,
            link: is_short_id(&u.short_uuid).then(|| u.short_uuid.clone()),
            devices,
            carries: Carries {
                address_limit: false,
                device_limit: true,
            },
        });
        if !is_short_id(&u.short_uuid) {
            report.not_carried.push(NotCarried {
                what: format!("user {}", u.username),
                reason: format!(
                    "its short id {:?} is not one a link here can carry: their old link ends",
                    u.short_uuid
                ),
            });
        }
    }
    out
}

/// The known devices of user `user` here: the most recently seen [`MAX_DEVICES`] of them.
pub(super) fn devices_of(
    user: i64,
    all: &[SourceDevice],
    skip: &mut impl FnMut(String),
) -> Vec<ImportedDevice> {
    let mut mine: Vec<&SourceDevice> = all.iter().filter(|d| d.user == user).collect();
    mine.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then(a.hwid.cmp(&b.hwid)));
    let mut out = Vec::new();
    for d in mine {
        let hwid = device_text(&d.hwid);
        if hwid.is_empty() || hwid != d.hwid {
            skip(format!(
                "a device id that is not visible ASCII of at most {MAX_DEVICE_TEXT} bytes was left out"
            ));
            continue;
        }
        if out.len() >= MAX_DEVICES as usize {
            skip(format!(
                "only the {MAX_DEVICES} devices seen last are kept: the others were left out"
            ));
            break;
        }
        out.push(ImportedDevice {
            hwid,
            os: device_field(&d.os),
            model: device_field(&d.model),
            user_agent: device_field(&d.user_agent),
            first_seen_ms: d.created_ms,
            last_seen_ms: d.updated_ms.max(d.created_ms),
        });
    }
    out
}

/// Adds the source's listings (nodes, admins, squads, inbounds) to `report`.
fn describe(source: &Source, report: &mut Report) {
    report.users_read = source.users.len();
    report.inbounds = source.inbounds.clone();
    // Remnawave gives VLESS over TCP with TLS or REALITY XTLS Vision unless the
    // inbound's settings name a flow.
    report.vision = true;
    for (name, address, port) in &source.nodes {
        report.nodes.push(NodeSeen {
            name: name.clone(),
            address: address.clone(),
            port: *port,
        });
    }
    for (name, role) in &source.admins {
        // Remnawave's admins own no users; `API` is a token's role.
        report.admin(name, role == "ADMIN", 0);
    }
    for (name, members) in &source.squads {
        report.not_carried.push(NotCarried {
            what: format!("internal squad {name}"),
            reason: format!(
                "squads are not carried: its {members} members get the routes of their \
                 clusters here (all routes, unless the operator puts them in clusters)"
            ),
        });
    }
}

/// Imports the Remnawave database at `url` into `store`; with `dry_run` nothing is
/// kept. With `disable_missing`, users an earlier import brought that Remnawave no
/// longer has are disabled.
pub async fn remnawave(
    store: &dyn Store,
    url: &str,
    (dry_run, disable_missing): (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = super::remnawave::read(url).await?;
    let schema = format!("{} (Remnawave {})", source.schema, source.releases);
    let mut report = Report::new(REMNAWAVE, &schema, dry_run);
    describe(&source, &mut report);
    let users = plan(&source, &mut report);
    let mode = ImportMode {
        disable_missing,
        dry_run,
    };
    write(store, (REMNAWAVE, ""), &users, mode, now_ms, &mut report).await?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> SourceUser {
        SourceUser {
            id: 7,
            short_uuid: "AbCdEfGh12345678".into(),
            username: "alice".into(),
            status: "ACTIVE".into(),
            traffic_limit: 100,
            strategy: "MONTH".into(),
            expire_ms: 1_800_000_000_000,
            sub_revoked_ms: Some(1_750_000_000_000),
            trojan_password: "tr-pw".into(),
            vless_uuid: "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11".into(),
            ss_password: "0123456789abcdefghjkmnopqrstuvwx".into(),
            description: "paid".into(),
            device_limit: None,
            created_ms: 1_700_000_000_123,
            used: 7,
            lifetime: 12,
            squads: vec!["Default-Squad".into()],
        }
    }

    fn device(user: i64, hwid: &str, seen: i64) -> SourceDevice {
        SourceDevice {
            user,
            hwid: hwid.into(),
            os: "Android 14".into(),
            model: "Pixel 8".into(),
            user_agent: "Happ/3.1".into(),
            created_ms: 1_000,
            updated_ms: seen,
        }
    }

    fn planned(
        users: Vec<SourceUser>,
        devices: Vec<SourceDevice>,
        settings: DeviceSettings,
    ) -> (Vec<ImportedUser>, Report) {
        let source = Source {
            schema: "20260815170000_add_shared_lists".into(),
            releases: "3.0–3.3",
            users,
            devices,
            device_settings: settings,
            ..Default::default()
        };
        let mut report = Report::new(REMNAWAVE, &source.schema, false);
        (plan(&source, &mut report), report)
    }

    #[test]
    fn a_remnawave_user_keeps_credentials_usage_limits_expiry_and_link() {
        let (users, report) = planned(vec![user()], vec![], DeviceSettings::default());
        assert!(report.not_carried.is_empty(), "{:?}", report.not_carried);
        let u = &users[0];
        assert_eq!(u.source_key, "id:7");
        assert_eq!(
            u.credentials.vless_uuid,
            "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11"
        );
        assert_eq!(u.credentials.trojan_password, "tr-pw");
        assert_eq!(
            u.credentials.ss_seed,
            STANDARD.encode("0123456789abcdefghjkmnopqrstuvwx")
        );
        assert_eq!((u.used, u.lifetime), (7, 12));
        assert_eq!(u.input.traffic_limit, Some(100));
        assert_eq!(u.input.reset_strategy, ResetStrategy::Month);
        assert_eq!(u.input.expires_ms, Some(1_800_000_000_000));
        assert_eq!(u.input.note, "paid");
        assert!(u.input.enabled);
        assert_eq!(u.created_ms, 1_700_000_000_123);
        assert_eq!(u.link.as_deref(), Some("AbCdEfGh12345678"));
        assert_eq!(u.sub_revoked_ms, None);
        assert_eq!(u.input.device_limit, None);
    }

    #[test]
    fn statuses_strategies_and_unlimited_map_to_ours() {
        let mut disabled = user();
        disabled.status = "DISABLED".into();
        disabled.traffic_limit = 0;
        disabled.strategy = "MONTH_ROLLING".into();
        let mut limited = user();
        limited.id = 8;
        limited.username = "bob".into();
        limited.status = "LIMITED".into();
        limited.strategy = "fortnight".into();
        let (users, report) = planned(vec![disabled, limited], vec![], DeviceSettings::default());
        assert!(!users[0].input.enabled);
        assert_eq!(users[0].input.traffic_limit, None);
        assert_eq!(users[0].input.reset_strategy, ResetStrategy::MonthFromStart);
        // Limited and expired follow from the usage and the expiry here.
        assert!(users[1].input.enabled);
        assert_eq!(users[1].input.reset_strategy, ResetStrategy::None);
        assert_eq!(report.not_carried.len(), 1, "{:?}", report.not_carried);
    }

    #[test]
    fn device_limits_follow_remnawave_s_setting_and_devices_are_kept_newest_first() {
        let on = DeviceSettings {
            enabled: true,
            fallback: Some(3),
        };
        let mut own = user();
        own.device_limit = Some(5);
        let mut none = user();
        none.id = 8;
        none.username = "bob".into();
        none.device_limit = Some(0);
        let mut fallback = user();
        fallback.id = 9;
        fallback.username = "carol".into();
        let devices = vec![
            device(7, "hwid-old-0001", 10),
            device(7, "hwid-new-0002", 20),
            device(8, "bad\u{7}hwid", 5),
        ];
        let (users, report) = planned(vec![own, none, fallback], devices, on);
        assert_eq!(users[0].input.device_limit, Some(5));
        assert_eq!(users[1].input.device_limit, None);
        assert_eq!(users[2].input.device_limit, Some(3));
        let hwids: Vec<&str> = users[0].devices.iter().map(|d| d.hwid.as_str()).collect();
        assert_eq!(hwids, ["hwid-new-0002", "hwid-old-0001"]);
        assert_eq!(users[0].devices[0].os.as_deref(), Some("Android 14"));
        assert_eq!(users[0].devices[0].first_seen_ms, 1_000);
        assert!(users[1].devices.is_empty());
        assert_eq!(report.not_carried.len(), 1, "{:?}", report.not_carried);
        // Off in Remnawave: no limit here either.
        let (users, _) = planned(
            vec![user()],
            vec![],
            DeviceSettings {
                enabled: false,
                fallback: Some(3),
            },
        );
        assert_eq!(users[0].input.device_limit, None);
    }

    #[test]
    fn bad_source_values_are_replaced_and_reported_not_taken() {
        let mut u = user();
        u.vless_uuid = "not-a-uuid".into();
        u.ss_password = "short".into();
        u.short_uuid = "has/slash".into();
        let mut bad_name = user();
        bad_name.username = "no spaces allowed".into();
        let (users, report) = planned(vec![u, bad_name], vec![], DeviceSettings::default());
        assert_eq!(users.len(), 1);
        assert!(is_uuid(&users[0].credentials.vless_uuid));
        assert_ne!(users[0].credentials.vless_uuid, "not-a-uuid");
        assert_eq!(users[0].link, None);
        assert_eq!(report.not_carried.len(), 4, "{:?}", report.not_carried);
    }

    proptest::proptest! {
        /// Whatever a Remnawave database holds, the plan never panics, and what it
        /// plans to write passes this panel's own checks: a name it takes, a UUID, a
        /// bounded password and key, devices of visible ASCII within the bound.
        #[test]
        fn any_source_plans_only_what_this_panel_takes(
            name in "\\PC{0,40}",
            short in "\\PC{0,70}",
            vless in "\\PC{0,40}",
            trojan in "\\PC{0,200}",
            ss in "\\PC{0,40}",
            strategy in "\\PC{0,12}",
            status in "\\PC{0,10}",
            limit in proptest::prelude::any::<i64>(),
            device_limit in proptest::option::of(proptest::prelude::any::<i64>()),
            hwids in proptest::collection::vec("\\PC{0,300}", 0..80),
            used in proptest::prelude::any::<u64>(),
            lifetime in proptest::prelude::any::<u64>(),
        ) {
            let u = SourceUser {
                id: 1,
                short_uuid: short,
                username: name,
                status,
                traffic_limit: limit.unsigned_abs(),
                strategy,
                vless_uuid: vless,
                trojan_password: trojan,
                ss_password: ss,
                device_limit,
                used,
                lifetime,
                ..user()
            };
            let devices = hwids.iter().map(|h| device(1, h, 5)).collect();
            let settings = DeviceSettings { enabled: true, fallback: Some(3) };
            let (users, _) = planned(vec![u], devices, settings);
            for u in &users {
                proptest::prop_assert!(model::check_username("username", &u.input.username).is_ok());
                proptest::prop_assert!(is_uuid(&u.credentials.vless_uuid));
                proptest::prop_assert!(!u.credentials.trojan_password.is_empty());
                proptest::prop_assert!(u.credentials.trojan_password.len() <= 128);
                proptest::prop_assert!(u.link.as_deref().is_none_or(is_short_id));
                proptest::prop_assert!(u.lifetime >= u.used);
                proptest::prop_assert!(u.devices.len() <= MAX_DEVICES as usize);
                for d in &u.devices {
                    proptest::prop_assert!(!d.hwid.is_empty() && d.hwid.len() <= MAX_DEVICE_TEXT);
                    proptest::prop_assert!(d.hwid.bytes().all(|b| b.is_ascii_graphic() || b == b' '));
                }
            }
        }
    }
}
