//! What the import tests share: the imported users by name, and a download through
//! a client that is still starting.

use std::net::SocketAddr;
use std::time::Duration;

use switchyard_panel::model::User;
use switchyard_panel::store::UserQuery;
use switchyard_testkit::HttpTarget;

use crate::live;

/// The bytes each download through an imported user's client carries.
pub(crate) const SIZE: u64 = 200_000;

pub(crate) fn by_name<'a>(users: &'a [User], name: &str) -> &'a User {
    users
        .iter()
        .find(|u| u.username == name)
        .unwrap_or_else(|| panic!("{name} was imported"))
}

pub(crate) async fn all_users(panel: &switchyard_panel::Panel) -> Vec<User> {
    panel
        .state
        .store()
        .users(&UserQuery::default(), live::now())
        .await
        .unwrap()
}

/// Downloads SIZE bytes from `target` through `proxy`, retrying while the client
/// starts, at most 15 s.
pub(crate) async fn download(target: &HttpTarget, proxy: SocketAddr, log: impl Fn() -> String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        match target.download_via_socks(proxy, SIZE).await {
            Ok(()) => return,
            Err(e) if std::time::Instant::now() > deadline => panic!("{e:#}\n{}", log()),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}

/// Runs the sing-box config `body` (a subscription the panel served) against
/// `target` and waits until the node's count `down` grew by a download's bytes.
pub(crate) async fn singbox_carries(body: &str, target: &HttpTarget, down: impl Fn() -> u64) {
    use serde_json::{Value, json};
    let mut config: Value = serde_json::from_str(body).unwrap();
    for o in config["outbounds"].as_array_mut().unwrap() {
        if o["type"] == "urltest" {
            o["url"] = json!(format!("http://{}/bytes/0", target.addr()));
        }
    }
    config["inbounds"][0]["listen_port"] = json!(switchyard_testkit::free_port().unwrap());
    // Private addresses go direct: the test's target is one.
    config["route"]["rules"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["ip_is_private"] != json!(true));
    let client = switchyard_testkit::SingBox::start(config)
        .await
        .unwrap_or_else(|e| panic!("sing-box runs the old link: {e:#}"));
    let before = down();
    download(target, client.proxy_addr().unwrap(), || client.log_tail()).await;
    live::wait_until("the node counts the download", 10, || async {
        down() - before >= SIZE
    })
    .await;
}

/// Runs the real Xray with `config` (a SOCKS inbound on `socks`) and waits until the
/// node's count `down` grew by a download's bytes through it.
pub(crate) async fn xray_carries(
    config: serde_json::Value,
    socks: u16,
    target: &HttpTarget,
    down: impl Fn() -> u64,
) {
    let client = switchyard_testkit::Xray::start(config)
        .await
        .unwrap_or_else(|e| panic!("xray runs the old config: {e:#}"));
    let before = down();
    download(target, SocketAddr::from(([127, 0, 0, 1], socks)), || {
        client.log_tail()
    })
    .await;
    live::wait_until("the node counts the download", 10, || async {
        down() - before >= SIZE
    })
    .await;
}

/// Xray with nothing but an old `vless://` link's credentials (`uuid` on 127.0.0.1:
/// `port`, plain TCP) carries a download through the node.
pub(crate) async fn old_vless_carries(
    port: u16,
    uuid: &str,
    target: &HttpTarget,
    down: impl Fn() -> u64,
) {
    let socks = switchyard_testkit::free_port().unwrap();
    let config = serde_json::json!({
        "log": {"loglevel": "warning"},
        "inbounds": [{"listen": "127.0.0.1", "port": socks, "protocol": "socks", "settings": {"udp": false}}],
        "outbounds": [{"protocol": "vless", "settings": {"vnext": [{
            "address": "127.0.0.1", "port": port,
            "users": [{"id": uuid, "encryption": "none"}]
        }]}, "streamSettings": {"network": "tcp", "security": "none"}}]
    });
    xray_carries(config, socks, target, down).await;
}

/// What `node` counted downloaded for the panel's user `user_id`.
pub(crate) fn node_down(
    node: &switchyard_node::channel::EnrolledNode,
    user_id: i64,
) -> impl Fn() -> u64 + Copy + '_ {
    move || {
        node.node()
            .shared()
            .accounting
            .users()
            .get(&format!("u{user_id}"))
            .map_or(0, |c| c.down)
    }
}

/// Row for row, the imported `users` are the Marzban-family `source` users (by name,
/// as the fixture's script prints them): usage, lifetime usage, limit, expiry (to the
/// millisecond when `exact_expiry`, else to Marzban's second), note and status.
pub(crate) fn rows_match(users: &[User], source: &serde_json::Value, exact_expiry: bool) {
    for u in users {
        let s = &source[&u.username];
        let name = &u.username;
        assert_eq!(
            u.used_up + u.used_down,
            s["used_traffic"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            u.lifetime_bytes,
            s["lifetime_used_traffic"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(u.traffic_limit, s["data_limit"].as_u64(), "{name}");
        let expire = s["expire"].as_i64();
        if exact_expiry {
            assert_eq!(u.expires_ms, expire.map(|e| e * 1000), "{name}");
        } else {
            assert_eq!(u.expires_ms.map(|ms| ms.div_euclid(1000)), expire, "{name}");
        }
        assert_eq!(u.note, s["note"].as_str().unwrap_or(""), "{name}");
        assert_eq!(
            status_name(u.status),
            s["status"].as_str().unwrap(),
            "{name}"
        );
    }
}

/// Row for row, the imported `users` are Marzneshin's `source` users (by name, as
/// its fixture's script prints them), with the credentials its nodes derive from
/// each key.
pub(crate) async fn marzneshin_rows_match(
    panel: &switchyard_panel::Panel,
    users: &[User],
    source: &serde_json::Value,
) {
    use switchyard_panel::model::UserStatus;
    for u in users {
        let s = &source[&u.username];
        let name = &u.username;
        assert_eq!(
            u.used_up + u.used_down,
            s["used_traffic"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            u.lifetime_bytes,
            s["lifetime_used_traffic"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(u.traffic_limit, s["data_limit"].as_u64(), "{name}");
        let expiry =
            (s["expire_strategy"] == "fixed_date").then(|| s["expire_date"].as_i64().unwrap());
        assert_eq!(u.expires_ms.map(|ms| ms.div_euclid(1000)), expiry, "{name}");
        assert_eq!(u.note, s["note"].as_str().unwrap_or(""), "{name}");
        assert_eq!(
            u.status == UserStatus::Disabled,
            !s["enabled"].as_bool().unwrap(),
            "{name}"
        );
        // Marzneshin's "active" is ours, or the user is limited or expired here too.
        if s["is_active"] == true {
            assert!(
                matches!(u.status, UserStatus::Active | UserStatus::OnHold),
                "{name}"
            );
        } else if s["enabled"] == true {
            assert!(
                matches!(u.status, UserStatus::Limited | UserStatus::Expired),
                "{name}"
            );
        }
        let creds = live::credentials(panel, u).await;
        assert_eq!(
            creds.vless_uuid,
            s["vless_uuid"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            creds.trojan_password,
            s["trojan_password"].as_str().unwrap(),
            "{name}"
        );
    }
}

/// A status as Marzban and its forks name it.
pub(crate) fn status_name(s: switchyard_panel::model::UserStatus) -> &'static str {
    use switchyard_panel::model::UserStatus;
    match s {
        UserStatus::Active => "active",
        UserStatus::Disabled => "disabled",
        UserStatus::Limited => "limited",
        UserStatus::Expired => "expired",
        UserStatus::OnHold => "on_hold",
    }
}

/// The source's admins an import's report lists: name, sudo, how many users.
pub(crate) fn admins(report: &switchyard_panel::import::Report) -> Vec<(&str, bool, usize)> {
    report
        .admins
        .iter()
        .map(|a| (a.name.as_str(), a.sudo, a.users))
        .collect()
}

/// The source's admins carried, as Marzban and its forks make them: the sudo `owner`
/// an admin here and `seller` a reseller, each logging in with their password there
/// (`passwords`, checked against the hash the source's own code wrote), and the
/// seller owning exactly bob and carol.
pub(crate) async fn admins_carried(
    store: &dyn switchyard_panel::store::Store,
    report: &switchyard_panel::import::Report,
    passwords: (&str, &str),
) {
    use switchyard_panel::model::Role;
    use switchyard_panel::store::UserQuery;
    let here: Vec<(&str, Option<Role>)> = report
        .admins
        .iter()
        .map(|a| (a.name.as_str(), a.here))
        .collect();
    assert_eq!(
        here,
        [
            ("owner", Some(Role::Admin)),
            ("seller", Some(Role::Reseller))
        ]
    );
    for (name, role, password) in [
        ("owner", Role::Admin, passwords.0),
        ("seller", Role::Reseller, passwords.1),
    ] {
        let (admin, hash) = store.admin_by_username(name).await.unwrap().unwrap();
        assert_eq!(admin.role, role, "{name}");
        assert!(
            switchyard_panel::api::auth::verify_password(password, &hash),
            "{name} logs in with the password the source had"
        );
        assert!(!switchyard_panel::api::auth::verify_password(
            "wrong", &hash
        ));
    }
    let seller = store.admin_by_username("seller").await.unwrap().unwrap().0;
    let (owned, total) = store
        .owned_users(seller.id, &UserQuery::default(), 0)
        .await
        .unwrap();
    let mut names: Vec<&str> = owned.iter().map(|u| u.username.as_str()).collect();
    names.sort_unstable();
    assert_eq!((names, total), (vec!["bob", "carol"], 2));
}
