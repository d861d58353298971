//! Users brought from Marzban 0.8.4, whose database is made by Marzban itself: its
//! own Alembic migrations, its own `crud` functions (users with every field set:
//! limits, reset strategies, expiry past and future, on hold, disabled, limited, a
//! reset logged, a revoked link, proxies we serve and one we do not) and its own
//! subscription tokens (`import/marzban.py`, run with Marzban's venv; Marzban's
//! Xray is not needed to make a database, so `XRAY_EXECUTABLE_PATH` is `/bin/true`).
//!
//! Then `switchyard_panel::import::marzban` into a panel with one real node (a VLESS
//! inbound): a dry run keeps nothing; the import matches Marzban row for row; each
//! user's **old** link on our panel serves their subscription in the format the
//! path or the app asks for, which the real sing-box, mihomo and Xray run, carrying
//! a download through our node with the user's old VLESS UUID; a revoked or forged
//! link is a 404, and so is one revoked here. A second import after changes in Marzban updates, adds and
//! disables exactly what changed, keeping what our node counted meanwhile.

use crate::import_common::{
    SIZE, admins, admins_carried, all_users, by_name, download, node_down, rows_match,
    singbox_carries, xray_carries,
};
use crate::live;

use std::net::SocketAddr;
use std::path::Path;

use serde_json::{Value, json};
use switchyard_panel::import;
use switchyard_panel::model::{ResetStrategy, UserStatus};
use switchyard_testkit::{HttpTarget, free_port};

const GIB: u64 = 1 << 30;

/// Runs `args` with Marzban's venv on the database in `dir`; its standard output.
fn marzban(dir: &Path, program: &str, args: &[&str]) -> String {
    switchyard_testkit::marzban::run(dir, program, args)
}

/// Marzban's own script: `make` or `change`; what Marzban says afterwards.
fn marzban_script(dir: &Path, phase: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/marzban.py");
    let out = marzban(dir, "python", &[script.to_str().unwrap(), phase]);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// Marzban's Xray config in `dir`, then Marzban's own schema (its migrations).
fn marzban_schema(dir: &Path) {
    std::fs::write(
        dir.join("xray_config.json"),
        json!({
            "inbounds": [
                {"tag": "VLESS TCP", "listen": "127.0.0.1", "port": 21001, "protocol": "vless",
                 "settings": {"clients": [], "decryption": "none"}, "streamSettings": {"network": "tcp"}},
                {"tag": "Shadowsocks TCP", "listen": "127.0.0.1", "port": 21002, "protocol": "shadowsocks",
                 "settings": {"clients": [], "network": "tcp,udp"}}
            ],
            "outbounds": [{"protocol": "freedom", "tag": "DIRECT"}]
        })
        .to_string(),
    )
    .unwrap();
    marzban(dir, "alembic", &["upgrade", "head"]);
}

/// A Marzban database made by Marzban, and what it says of its users.
fn marzban_source(dir: &Path) -> Value {
    marzban_schema(dir);
    marzban_script(dir, "make")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marzbans_users_arrive_whole_and_their_old_links_run_in_real_clients() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("marzban");
    std::fs::create_dir_all(&source_dir).unwrap();
    let source = marzban_source(&source_dir);
    let db = source_dir.join("db.sqlite3");

    // Marzban's XRAY_SUBSCRIPTION_PATH was `p/sub` on another of the operator's
    // domains: that path is answered too.
    let (panel, http) = live::panel_with(dir.path(), |c| {
        c.subscription.old_paths = vec!["p/sub".into()];
    })
    .await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let input = live::vless(server, "Amsterdam", free_port().unwrap(), false);
    service.create_inbound(&input, live::now()).await.unwrap();
    let mut nodes = live::join_all(&panel, dir.path(), &[server]).await;
    let node = nodes.remove(0);

    // A dry run says what would happen and keeps nothing.
    let dry = import::marzban(
        store.as_ref(),
        &db,
        Some(&source_dir.join("xray_config.json")),
        (true, false),
        live::now(),
    )
    .await
    .unwrap();
    assert!(dry.dry_run);
    assert_eq!(dry.schema, "2b231de97dc3");
    assert_eq!(
        dry.added,
        ["alice", "bob", "carol", "dave", "erin", "frank"]
    );
    assert!(all_users(&panel).await.is_empty());
    assert_eq!(store.import_secret(import::MARZBAN).await.unwrap(), None);
    let served: Vec<(&str, bool)> = dry
        .inbounds
        .iter()
        .map(|i| (i.tag.as_str(), i.served))
        .collect();
    assert_eq!(served, [("VLESS TCP", true), ("Shadowsocks TCP", false)]);

    let report = import::marzban(store.as_ref(), &db, None, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(
        report.added,
        ["alice", "bob", "carol", "dave", "erin", "frank"]
    );
    assert_eq!(admins(&report), [("owner", true, 4), ("seller", false, 2)]);
    admins_carried(store.as_ref(), &report, ("owner-pw-1", "seller-pw-1")).await;
    let reasons: Vec<String> = report
        .not_carried
        .iter()
        .map(|n| format!("{}: {}", n.what, n.reason))
        .collect();
    assert!(
        reasons.contains(&"user frank: Shadowsocks chacha20-ietf-poly1305 is not served here (only Shadowsocks 2022): a 2022 key was made".to_owned()),
        "{reasons:#?}"
    );

    // Row for row, as Marzban says.
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 6);
    let m = &source["users"];
    rows_match(&users, m, true);
    let alice = by_name(&users, "alice");
    assert_eq!(alice.lifetime_bytes, 10 * GIB + 12_345);
    assert_eq!(alice.reset_strategy, ResetStrategy::MonthFromStart);
    assert_eq!(by_name(&users, "dave").reset_strategy, ResetStrategy::Week);
    assert_eq!(by_name(&users, "carol").on_hold_days, Some(3));
    let creds = live::credentials(&panel, alice).await;
    assert_eq!(
        creds.vless_uuid,
        m["alice"]["proxies"]["vless"]["id"].as_str().unwrap()
    );
    assert_eq!(
        creds.trojan_password,
        m["alice"]["proxies"]["trojan"]["password"]
            .as_str()
            .unwrap()
    );

    // Old links: the revoked one and a forged one are refused as Marzban refused them.
    let token = |name: &str| source["tokens"][name].as_str().unwrap().to_owned();
    for bad in [
        token("alice_revoked"),
        switchyard_panel::import::marzban_token::issue("alice", 1_900_000_000, "not the secret"),
    ] {
        let (status, _, _) = live::get_raw(http, &format!("/sub/{bad}"), "").await;
        assert!(status.contains("404"), "{bad}: {status}");
    }
    // Bob is disabled: his link answers with no servers and says why.
    let (status, headers, _) =
        live::get_raw(http, &format!("/sub/{}?format=sing-box", token("bob")), "").await;
    assert!(status.contains("200"), "{status}");
    assert!(headers.to_lowercase().contains("disabled"), "{headers}");

    let target = HttpTarget::start().await.unwrap();
    let user_id = alice.id;
    let down = node_down(&node, user_id);

    // sing-box, as an app asks: Marzban's path for it.
    let (status, _, body) =
        live::get_raw(http, &format!("/sub/{}/sing-box", token("alice")), "").await;
    assert!(status.contains("200"), "{status}: {body}");
    assert!(body.contains(creds.vless_uuid.as_str()), "{body}");
    singbox_carries(&body, &target, down).await;

    // mihomo, by its User-Agent on the bare link.
    let (status, _, yaml) = live::get_raw(
        http,
        &format!("/sub/{}", token("alice")),
        "User-Agent: mihomo/1.19.2\r\n",
    )
    .await;
    assert!(status.contains("200"), "{status}");
    assert!(yaml.contains(creds.vless_uuid.as_str()), "{yaml}");
    let yaml = live::through_the_node(&yaml).replace(
        "\"https://www.gstatic.com/generate_204\"",
        &format!("\"http://{}/bytes/0\"", target.addr()),
    );
    let port = free_port().unwrap();
    let yaml = yaml
        .replace("\"mixed-port\": 7890", &format!("\"mixed-port\": {port}"))
        .replace("\"log-level\": \"warning\"", "\"log-level\": \"info\"");
    let client = switchyard_testkit::Mihomo::start(&yaml, SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap_or_else(|e| panic!("mihomo runs alice's old link: {e:#}"));
    let before = down();
    download(&target, client.proxy_addr(), || client.log_tail()).await;
    live::wait_until("the node counts alice's download", 10, || async {
        down() - before >= SIZE
    })
    .await;
    drop(client);

    // Xray, as v2rayN asks Marzban for JSON.
    let (status, _, body) =
        live::get_raw(http, &format!("/sub/{}/v2ray-json", token("alice")), "").await;
    assert!(status.contains("200"), "{status}");
    let configs: Vec<Value> = serde_json::from_str(&body).unwrap();
    let mut config = configs[0].clone();
    live::xray_through_the_node(&mut config);
    let socks = free_port().unwrap();
    config["inbounds"][0]["port"] = json!(socks);
    config["inbounds"][1]["port"] = json!(free_port().unwrap());
    xray_carries(config, socks, &target, down).await;

    // Our node's counts reach the panel before the second import.
    live::wait_until("the panel has alice's traffic", 20, || {
        let store = store.clone();
        async move {
            let u = store.user(user_id, live::now()).await.unwrap();
            u.used_up + u.used_down >= 7 * GIB + 12_345 + 3 * SIZE
        }
    })
    .await;
    let ours = {
        let u = store.user(user_id, live::now()).await.unwrap();
        u.used_up + u.used_down - (7 * GIB + 12_345)
    };

    // A second import after changes in Marzban: exactly those.
    let changed = marzban_script(&source_dir, "change");
    let report = import::marzban(store.as_ref(), &db, None, (false, true), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, ["grace"]);
    assert_eq!(report.updated, ["alice", "bob", "carol", "dave", "erin"]);
    assert_eq!(report.disabled, ["frank"]);
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 7, "nobody twice");
    let alice = by_name(&users, "alice");
    assert_eq!(alice.traffic_limit, Some(80 * GIB));
    assert_eq!(alice.note, "upgraded");
    // Marzban's 1,000 more bytes, and what our node counted stays.
    assert_eq!(
        alice.used_up + alice.used_down,
        7 * GIB + 12_345 + 1000 + ours
    );
    assert_eq!(by_name(&users, "frank").status, UserStatus::Disabled);
    let grace_link = changed["tokens"]["grace"].as_str().unwrap();
    let (status, _, _) = live::get_raw(http, &format!("/sub/{grace_link}?format=links"), "").await;
    assert!(status.contains("200"), "{status}");
    for path in [
        format!("/p/sub/{grace_link}"),
        format!("/p/sub/{grace_link}/v2ray"),
    ] {
        let (status, _, body) = live::get_raw(http, &path, "").await;
        assert!(status.contains("200"), "{path}: {status} {body}");
    }
    for path in [
        format!("/p/sub/{grace_link}/outline"),
        format!("/q/sub/{grace_link}"),
    ] {
        assert!(
            live::get_raw(http, &path, "").await.0.contains("404"),
            "{path}"
        );
    }

    // Revoking alice's link here ends her Marzban link too, and an import does not
    // bring it back.
    let link = format!("/sub/{}?format=links", token("alice"));
    assert!(live::get_raw(http, &link, "").await.0.contains("200"));
    service
        .revoke_subscription(user_id, live::now())
        .await
        .unwrap();
    assert!(live::get_raw(http, &link, "").await.0.contains("404"));
    import::marzban(store.as_ref(), &db, None, (false, true), live::now())
        .await
        .unwrap();
    assert!(live::get_raw(http, &link, "").await.0.contains("404"));

    node.shutdown().await;
    panel.shutdown().await;
}

#[tokio::test]
async fn an_unknown_schema_is_refused_by_name_and_a_file_that_is_not_marzban_too() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, _) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let db = dir.path().join("other.sqlite3");
    let url = format!("sqlite://{}?mode=rwc", db.display());
    let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    sqlx::query("CREATE TABLE t (x INTEGER)")
        .execute(&mut c)
        .await
        .unwrap();
    let e = import::marzban(store.as_ref(), &db, None, (true, false), live::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("no alembic_version table: not a Marzban database"),
        "{e}"
    );
    sqlx::query("CREATE TABLE alembic_version (version_num TEXT)")
        .execute(&mut c)
        .await
        .unwrap();
    sqlx::query("INSERT INTO alembic_version VALUES ('abcdef123456')")
        .execute(&mut c)
        .await
        .unwrap();
    let e = import::marzban(store.as_ref(), &db, None, (true, false), live::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "Marzban schema abcdef123456 is not one this import knows (known: 2b231de97dc3 (0.8.x))"
        ),
        "{e}"
    );
    let e = import::marzban(
        store.as_ref(),
        &dir.path().join("missing.db"),
        None,
        (true, false),
        live::now(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("missing.db"), "{e}");
    panel.shutdown().await;
}

#[tokio::test]
async fn a_marzban_row_that_does_not_fit_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("marzban");
    std::fs::create_dir_all(&source_dir).unwrap();
    // Marzban's own schema; the rows are a hostile file's.
    marzban_schema(&source_dir);
    let db = source_dir.join("db.sqlite3");
    let url = format!("sqlite://{}", db.display());
    let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO users (id, username, status, used_traffic, created_at, \
         data_limit_reset_strategy) VALUES (7, 'mallory', 'active', -5, '2026-01-02 03:04:05', \
         'no_reset')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO proxies (id, user_id, type, settings) VALUES (9, 7, 'VLESS', '{oops')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let (panel, _) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let run = || import::marzban(store.as_ref(), &db, None, (false, false), live::now());
    let e = run().await.unwrap_err().to_string();
    assert_eq!(e, "users row 7, used_traffic: -5 is negative");
    sqlx::query("UPDATE users SET used_traffic = 0, created_at = 'yesterday'")
        .execute(&mut c)
        .await
        .unwrap();
    let e = run().await.unwrap_err().to_string();
    assert_eq!(e, "users row 7, created_at: \"yesterday\" is not a date");
    sqlx::query("UPDATE users SET created_at = '2026-01-02 03:04:05'")
        .execute(&mut c)
        .await
        .unwrap();
    let e = run().await.unwrap_err().to_string();
    assert!(e.starts_with("proxies row 9, settings: "), "{e}");
    sqlx::query("UPDATE proxies SET settings = ?")
        .bind(format!("\"{}\"", "x".repeat(20_000)))
        .execute(&mut c)
        .await
        .unwrap();
    let e = run().await.unwrap_err().to_string();
    assert_eq!(e, "proxies row 9, settings: longer than 16384 bytes");
    assert!(all_users(&panel).await.is_empty());
    panel.shutdown().await;
}
