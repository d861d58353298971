//! 3x-ui's clients mapped to our users: `switchyard panel import 3x-ui …`.
//!
//! 3x-ui lists clients per inbound; one person is the clients sharing a
//! subscription id (`subId`), which is also their link, `/sub/{subId}`. So one
//! user here is one subscription id (or one client, when it has none), named by its
//! first client's email. Merging adds up: usage and limits are summed, the latest
//! expiry wins, an unlimited or never-expiring client makes the user so, and the
//! user is on when any of its clients is. `docs/migration.md` says it in full.

use std::collections::HashMap;

use super::report::inbound_seen;
use super::xui::{self, Source, SourceClient, SourceInbound};
use super::{ImportError, NotCarried, Report, XUI, is_uuid};
use crate::model::{self, Credentials};
use crate::service::{new_credentials, new_subscription_token};
use crate::store::{Carries, ImportMode, ImportedUser, Store, UserInput};

/// The longest subscription id taken as one (3x-ui makes 16 characters).
const MAX_SUB_ID: usize = 64;

/// Whether `token` can be a 3x-ui subscription id: 1 to 64 letters, digits, `-`
/// and `_` (what 3x-ui makes and what fits a path segment unescaped).
pub(super) fn is_sub_id(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= MAX_SUB_ID
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The key a user with subscription id `sub_id` is kept under. A client without
/// one is kept under `email:` and its email, which no link can name (a colon is
/// not in a subscription id), so an email is never a way in.
pub(super) fn sub_key(sub_id: &str) -> String {
    format!("sub:{sub_id}")
}

/// One person: the clients that share a subscription id, in the source's order.
struct Group<'a> {
    key: String,
    clients: Vec<(&'a SourceInbound, &'a SourceClient)>,
}

/// Maps 3x-ui's clients to ours: what to write, and what could not be carried.
pub fn plan(source: &Source, report: &mut Report, now_ms: i64) -> Vec<ImportedUser> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for inbound in &source.inbounds {
        for client in &inbound.clients {
            let key = if is_sub_id(&client.sub_id) {
                sub_key(&client.sub_id)
            } else {
                if !client.sub_id.is_empty() {
                    report.not_carried.push(NotCarried {
                        what: format!("client {}", client.email),
                        reason: format!(
                            "its subscription id {:?} is not one a link can carry: its old \
                             link does not work here",
                            client.sub_id
                        ),
                    });
                }
                format!("email:{}", client.email)
            };
            let at = *index.entry(key.clone()).or_insert_with(|| {
                groups.push(Group {
                    key,
                    clients: Vec::new(),
                });
                groups.len() - 1
            });
            groups[at].clients.push((inbound, client));
        }
    }
    report.users_read = groups.len();
    groups
        .iter()
        .filter_map(|g| user(g, source, report, now_ms))
        .collect()
}

/// One group as our user, or `None` (reported) when it cannot be one.
fn user(
    group: &Group<'_>,
    source: &Source,
    report: &mut Report,
    now_ms: i64,
) -> Option<ImportedUser> {
    let (_, first) = group.clients.first()?;
    let name = first.email.clone();
    let mut skip = |reason: String| {
        report.not_carried.push(NotCarried {
            what: format!("user {name}"),
            reason,
        })
    };
    if let Err(e) = model::check_username("email", &name) {
        skip(format!("its email is not a name this panel takes: {e}"));
        return None;
    }
    // 3.x links one client to several inbounds: it is listed once per inbound, but
    // counted, limited and named once.
    let mut emails: Vec<&str> = Vec::new();
    for (_, c) in &group.clients {
        if !emails.contains(&c.email.as_str()) {
            emails.push(&c.email);
        }
    }
    if emails.len() > 1 {
        let others: Vec<&str> = emails[1..].to_vec();
        skip(format!(
            "its clients {} share its subscription: one user here, their usage and \
             limits added up",
            others.join(", ")
        ));
    }
    let mut used = 0u64;
    let mut lifetime = 0u64;
    let mut limit = Some(0u64);
    let mut expires: Option<i64> = Some(0);
    let mut delayed_ms = 0i64;
    let mut address_limit = 0u32;
    let mut enabled = false;
    let mut note = String::new();
    let mut created_ms = i64::MAX;
    let mut credentials: Credentials = new_credentials();
    let (mut vless, mut trojan) = (None::<&str>, None::<&str>);
    let mut counted: Vec<&str> = Vec::new();
    for (inbound, c) in &group.clients {
        if !counted.contains(&c.email.as_str()) {
            counted.push(&c.email);
            let t = source.traffic.get(&c.email).copied().unwrap_or_default();
            used = used.saturating_add(t.used);
            lifetime = lifetime.saturating_add(t.all_time);
            limit = match (limit, c.total) {
                (None, _) | (_, 0) => None,
                (Some(sum), n) => Some(sum.saturating_add(n)),
            };
            expires = match (expires, c.expiry_ms) {
                (None, _) | (_, 0) => None,
                (Some(at), ms) if ms > 0 => Some(at.max(ms)),
                (Some(at), ms) => {
                    delayed_ms = delayed_ms.max(ms.saturating_neg());
                    Some(at)
                }
            };
            address_limit = address_limit.max(c.limit_ip);
            enabled |= c.enable;
            if note.is_empty() {
                note = c.comment.clone();
            }
            if c.created_ms > 0 {
                created_ms = created_ms.min(c.created_ms);
            }
            if c.reset_days > 0 {
                skip(format!(
                    "client {}: renewing every {} days when it expires is not carried: it \
                     expires here as the source set it",
                    c.email, c.reset_days
                ));
            }
        }
        match inbound.protocol.as_str() {
            "vless" if is_uuid(&c.id) => match vless {
                None => {
                    credentials.vless_uuid = c.id.to_ascii_lowercase();
                    vless = Some(&c.id);
                }
                Some(kept) if kept.eq_ignore_ascii_case(&c.id) => {}
                Some(_) => skip(format!(
                    "client {}: a second VLESS id; the user keeps the first, so configs \
                     with this one stop working",
                    c.email
                )),
            },
            "vless" => skip(format!(
                "client {}: its VLESS id is not a UUID: a new one was made",
                c.email
            )),
            "trojan" if !c.password.is_empty() && c.password.len() <= 128 => match trojan {
                None => {
                    credentials.trojan_password = c.password.clone();
                    trojan = Some(&c.password);
                }
                Some(kept) if kept == c.password => {}
                Some(_) => skip(format!(
                    "client {}: a second Trojan password; the user keeps the first",
                    c.email
                )),
            },
            "trojan" => skip(format!(
                "client {}: its Trojan password is empty or too long: a new one was made",
                c.email
            )),
            "shadowsocks" => skip(format!(
                "client {}: Shadowsocks keys are made here per user (Shadowsocks 2022): \
                 its {} password is not carried",
                c.email, inbound.method
            )),
            other => skip(format!(
                "client {}: {other} is not served here: its credential was left out",
                c.email
            )),
        }
    }
    if let Err(e) = model::names::check_note("note", &note) {
        skip(format!("its comment was left out: {e}"));
        note.clear();
    }
    let on_hold_days = match expires {
        Some(0) if delayed_ms > 0 => {
            let days = (delayed_ms.saturating_add(86_399_999) / 86_400_000).clamp(1, 36_500);
            if delayed_ms % 86_400_000 != 0 {
                skip(format!(
                    "starts on first use for {delayed_ms} ms: rounded up to {days} whole \
                     days, the unit here"
                ));
            }
            u32::try_from(days).ok()
        }
        _ => None,
    };
    Some(ImportedUser {
        source_key: group.key.clone(),
        input: UserInput {
            enabled,
            note,
            traffic_limit: limit.filter(|n| *n > 0),
            expires_ms: expires.filter(|at| *at > 0),
            on_hold_days,
            address_limit: (address_limit > 0).then_some(address_limit),
            ..UserInput::new(name.clone())
        },
        credentials,
        token: new_subscription_token(),
        used,
        lifetime: lifetime.max(used),
        created_ms: if created_ms == i64::MAX {
            now_ms
        } else {
            created_ms
        },
        sub_revoked_ms: None,
        link: None,
        devices: Vec::new(),
        carries: Carries {
            address_limit: true,
            device_limit: false,
        },
    })
}

/// Lists 3x-ui's inbounds in `report`, each with what makes it here (not for one
/// switched off), and what of their own limits is not carried.
fn describe_inbounds(source: &Source, report: &mut Report) {
    for i in &source.inbounds {
        let mut seen = inbound_seen(i.tag.clone(), i.protocol.clone(), i.port, Some(&i.stream));
        // Made here under the operator's name for it (what users saw), as Xray would
        // have it.
        let name = if i.remark.trim().is_empty() {
            &i.tag
        } else {
            &i.remark
        };
        let flow = if i.vision { "xtls-rprx-vision" } else { "" };
        // One switched off is not made: that would open a port the operator closed.
        seen.xray = i.enable.then(|| {
            super::inbound_plan::XrayInbound(serde_json::json!({
                "tag": name, "protocol": i.protocol, "port": i.port,
                "settings": {"flow": flow}, "streamSettings": i.stream,
            }))
        });
        if i.total > 0 || i.expiry_ms > 0 {
            report.not_carried.push(NotCarried {
                what: format!("inbound {:?}", i.tag),
                reason: "its own traffic limit and expiry (for all its clients together) \
                         are not carried: each user keeps their own"
                    .into(),
            });
        }
        if !i.enable {
            seen.note = format!("switched off in 3x-ui (not made here); {}", seen.note);
        }
        report.inbounds.push(seen);
    }
}

/// Imports the 3x-ui database at `db` into `store`; with `dry_run` nothing is kept.
/// With `disable_missing`, users an earlier import brought that 3x-ui no longer has
/// are disabled.
pub async fn xui(
    store: &dyn Store,
    db: &std::path::Path,
    (dry_run, disable_missing): (bool, bool),
    now_ms: i64,
) -> Result<Report, ImportError> {
    let source = xui::read(db).await?;
    let mut report = Report::new(XUI, &source.layout, dry_run);
    describe_inbounds(&source, &mut report);
    for path in &source.sub_paths {
        if path != "sub" {
            report.not_carried.push(NotCarried {
                what: format!("subscription path /{path}/"),
                reason: format!(
                    "add \"{path}\" to subscription.old_paths so links under it keep working"
                ),
            });
        }
    }
    let users = plan(&source, &mut report, now_ms);
    for name in &source.admins {
        report.admin(name, true, report.users_read);
    }
    let mode = ImportMode {
        disable_missing,
        dry_run,
    };
    super::write(store, (XUI, ""), &users, mode, now_ms, &mut report).await?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::xui::Traffic;

    const UUID_A: &str = "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11";
    const UUID_B: &str = "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a12";
    const NOW: i64 = 1_800_000_000_000;

    fn client(email: &str, sub_id: &str) -> SourceClient {
        SourceClient {
            email: email.into(),
            sub_id: sub_id.into(),
            id: UUID_A.into(),
            password: "tr-pw".into(),
            enable: true,
            ..SourceClient::default()
        }
    }

    fn inbound(protocol: &str, clients: Vec<SourceClient>) -> SourceInbound {
        SourceInbound {
            protocol: protocol.into(),
            clients,
            ..SourceInbound::default()
        }
    }

    fn planned(
        inbounds: Vec<SourceInbound>,
        traffic: &[(&str, u64, u64)],
    ) -> (Vec<ImportedUser>, Vec<String>) {
        let source = Source {
            layout: "2.x".into(),
            inbounds,
            traffic: traffic
                .iter()
                .map(|(e, used, all)| {
                    (
                        (*e).to_owned(),
                        Traffic {
                            used: *used,
                            all_time: *all,
                            enable: true,
                        },
                    )
                })
                .collect(),
            sub_paths: Vec::new(),
            admins: Vec::new(),
        };
        let mut report = Report::new(XUI, "2.x", false);
        let users = plan(&source, &mut report, NOW);
        let reasons = report
            .not_carried
            .iter()
            .map(|n| format!("{}: {}", n.what, n.reason))
            .collect();
        (users, reasons)
    }

    #[test]
    fn one_subscription_is_one_user_with_its_clients_added_up() {
        let mut a = client("alice-vless", "k3j2h4g5f6d7s8a9");
        a.total = 10;
        a.expiry_ms = NOW + 5;
        a.limit_ip = 2;
        a.comment = "paid".into();
        a.created_ms = 1_700_000_000_500;
        let mut b = client("alice-trojan", "k3j2h4g5f6d7s8a9");
        b.total = 20;
        b.expiry_ms = NOW + 9;
        b.limit_ip = 3;
        b.enable = false;
        b.created_ms = 1_700_000_000_100;
        let (users, reasons) = planned(
            vec![inbound("vless", vec![a]), inbound("trojan", vec![b])],
            &[("alice-vless", 3, 7), ("alice-trojan", 4, 4)],
        );
        assert_eq!(users.len(), 1);
        let u = &users[0];
        assert_eq!(u.source_key, "sub:k3j2h4g5f6d7s8a9");
        assert_eq!(u.input.username, "alice-vless");
        assert_eq!(u.credentials.vless_uuid, UUID_A);
        assert_eq!(u.credentials.trojan_password, "tr-pw");
        assert_eq!((u.used, u.lifetime), (7, 11));
        assert_eq!(u.input.traffic_limit, Some(30));
        assert_eq!(u.input.expires_ms, Some(NOW + 9));
        assert_eq!(u.input.address_limit, Some(3));
        assert_eq!(u.input.note, "paid");
        assert!(u.input.enabled, "one client on is enough");
        assert_eq!(u.created_ms, 1_700_000_000_100);
        assert_eq!(
            reasons,
            [
                "user alice-vless: its clients alice-trojan share its subscription: one user here, their usage and limits added up"
            ]
        );
    }

    #[test]
    fn unlimited_or_never_expiring_wins_and_first_use_becomes_on_hold() {
        let mut a = client("a", "s1");
        a.total = 10;
        a.expiry_ms = -3 * 86_400_000;
        let mut b = client("b", "s1");
        b.total = 0;
        b.expiry_ms = -86_400_000 - 1;
        let (users, reasons) = planned(vec![inbound("vless", vec![a, b])], &[]);
        let u = &users[0];
        assert_eq!(u.input.traffic_limit, None);
        assert_eq!(u.input.expires_ms, None);
        assert_eq!(u.input.on_hold_days, Some(3));
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        let mut c = client("c", "s2");
        c.expiry_ms = -86_400_000 - 1;
        let (users, reasons) = planned(vec![inbound("vless", vec![c])], &[]);
        assert_eq!(users[0].input.on_hold_days, Some(2));
        assert_eq!(
            reasons,
            [
                "user c: starts on first use for 86400001 ms: rounded up to 2 whole days, the unit here"
            ]
        );
        // A started client's date wins over another's first use.
        let mut d = client("d", "s3");
        d.expiry_ms = NOW;
        let mut e = client("e", "s3");
        e.expiry_ms = -86_400_000;
        let (users, _) = planned(vec![inbound("vless", vec![d, e])], &[]);
        assert_eq!(users[0].input.expires_ms, Some(NOW));
        assert_eq!(users[0].input.on_hold_days, None);
        // No date anywhere: never.
        let (users, _) = planned(vec![inbound("vless", vec![client("f", "s4")])], &[]);
        assert_eq!(users[0].input.expires_ms, None);
        assert_eq!(users[0].input.traffic_limit, None);
        assert_eq!(users[0].created_ms, NOW);
    }

    #[test]
    fn a_switched_off_inbound_is_listed_not_made() {
        let mut off = inbound("vless", vec![client("a", "s1")]);
        off.enable = false;
        let mut on = inbound("trojan", vec![client("t", "s2")]);
        on.enable = true;
        let source = Source {
            layout: "2.x".into(),
            inbounds: vec![off, on],
            ..Source::default()
        };
        let mut report = Report::new(XUI, "2.x", true);
        describe_inbounds(&source, &mut report);
        let made: Vec<bool> = report.inbounds.iter().map(|i| i.xray.is_some()).collect();
        assert_eq!(made, [false, true]);
        assert!(
            report.inbounds[0]
                .note
                .starts_with("switched off in 3x-ui (not made here); "),
            "{}",
            report.inbounds[0].note
        );
    }

    #[test]
    fn what_cannot_be_carried_is_named() {
        let mut second = client("a2", "s1");
        second.id = UUID_B.into();
        let mut renew = client("r", "s2");
        renew.reset_days = 30;
        let mut bad_id = client("b", "s3");
        bad_id.id = "nope".into();
        let (users, reasons) = planned(
            vec![
                inbound("vless", vec![client("a", "s1"), second, renew, bad_id]),
                inbound("vmess", vec![client("v", "s5")]),
                inbound("shadowsocks", vec![client("ss", "s6")]),
                inbound("vless", vec![client("no spaces", "s7"), client("x", "a/b")]),
            ],
            &[],
        );
        let names: Vec<&str> = users.iter().map(|u| u.input.username.as_str()).collect();
        assert_eq!(names, ["a", "r", "b", "v", "ss", "x"]);
        assert_eq!(users[0].credentials.vless_uuid, UUID_A);
        assert!(is_uuid(&users[2].credentials.vless_uuid));
        assert_eq!(users[5].source_key, "email:x", "{reasons:#?}");
        let expected = [
            "client x: its subscription id \"a/b\" is not one a link can carry: its old link does not work here",
            "user a: its clients a2 share its subscription: one user here, their usage and limits added up",
            "user a: client a2: a second VLESS id; the user keeps the first, so configs with this one stop working",
            "user r: client r: renewing every 30 days when it expires is not carried: it expires here as the source set it",
            "user b: client b: its VLESS id is not a UUID: a new one was made",
            "user v: client v: vmess is not served here: its credential was left out",
            "user ss: client ss: Shadowsocks keys are made here per user (Shadowsocks 2022): its  password is not carried",
            "user no spaces: its email is not a name this panel takes: email: may contain only letters, digits and _ . @ -",
        ];
        assert_eq!(reasons, expected);
    }

    #[test]
    fn subscription_ids_are_told_from_anything_else() {
        assert!(is_sub_id("k3j2h4g5f6d7s8a9"));
        assert!(is_sub_id("My_Sub-1"));
        assert!(!is_sub_id(""));
        assert!(!is_sub_id("a/b"));
        assert!(!is_sub_id("email:alice"));
        assert!(!is_sub_id(&"a".repeat(65)));
        assert_eq!(sub_key("abc"), "sub:abc");
    }
}
