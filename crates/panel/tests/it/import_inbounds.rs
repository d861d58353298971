//! The source's inbounds made here (`make_inbounds`, the command's `--server`): a
//! Marzban 0.8.4 whose Xray config has a VLESS REALITY inbound (its own private key
//! and short id; the public key Marzban gives its clients is the one Marzban derives
//! with the real Xray), a VLESS WebSocket one and a VMess one, made by Marzban's own
//! migrations and code, with alice on XTLS Vision as Marzban's own modify sets it.
//! A dry run says what would be made and makes nothing; the import makes the REALITY
//! inbound with the same port, target, names, short id, Vision and key pair, maps the
//! WebSocket one to the inbound of the same name already here, and says why VMess is
//! not made. Then the real Xray, with alice's **old** REALITY config (Marzban's
//! public key and short id, her old UUID, Vision), carries a download through our
//! node. A second import makes nothing twice.

use crate::import_common::{all_users, by_name, node_down, xray_carries};
use crate::live;
use crate::real_clients::target_site;

use std::path::Path;

use serde_json::{Value, json};
use switchyard_panel::import;
use switchyard_panel::model::{Flow, InboundSecurity};
use switchyard_testkit::{HttpTarget, free_port};

/// Runs Marzban's own script phase `phase` on the database in `dir`.
fn marzban_script(dir: &Path, phase: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/marzban.py");
    let out = switchyard_testkit::marzban::run(dir, "python", &[script.to_str().unwrap(), phase]);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

const SHORT_ID: &str = "6ba85179e30d4fc2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marzbans_reality_inbound_is_made_here_and_its_old_clients_connect() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("marzban");
    std::fs::create_dir_all(&source_dir).unwrap();
    let (site, _) = target_site().await;
    let keys = switchyard_config::reality::generate().unwrap();
    let (reality_port, ws_port) = (free_port().unwrap(), free_port().unwrap());
    std::fs::write(
        source_dir.join("xray_config.json"),
        json!({
            "inbounds": [
                {"tag": "VLESS TCP REALITY", "listen": "0.0.0.0", "port": reality_port,
                 "protocol": "vless", "settings": {"clients": [], "decryption": "none"},
                 "streamSettings": {"network": "tcp", "security": "reality", "realitySettings": {
                     "show": false, "dest": site.to_string(), "xver": 0,
                     "serverNames": ["target.test"], "privateKey": keys.private_key,
                     "shortIds": [SHORT_ID]}}},
                {"tag": "VLESS WS", "listen": "0.0.0.0", "port": ws_port, "protocol": "vless",
                 "settings": {"clients": [], "decryption": "none"},
                 "streamSettings": {"network": "ws", "wsSettings": {"path": "/old-ws"}}},
                {"tag": "VMess TCP", "listen": "0.0.0.0", "port": free_port().unwrap(),
                 "protocol": "vmess", "settings": {"clients": []}}
            ],
            "outbounds": [{"protocol": "freedom", "tag": "DIRECT"}]
        })
        .to_string(),
    )
    .unwrap();
    switchyard_testkit::marzban::run(&source_dir, "alembic", &["upgrade", "head"]);
    marzban_script(&source_dir, "make");
    let marzban = marzban_script(&source_dir, "vision");
    let said = &marzban["tokens"]["reality"]["VLESS TCP REALITY"];
    // Marzban (through the real Xray) derives the public key ours does.
    assert_eq!(said["pbk"], keys.public_key.as_str(), "{marzban}");
    assert_eq!(said["sids"], json!([SHORT_ID]));
    assert_eq!(
        marzban["users"]["alice"]["proxies"]["vless"]["flow"],
        "xtls-rprx-vision"
    );
    let db = source_dir.join("db.sqlite3");
    let xray_config = source_dir.join("xray_config.json");

    let (panel, _http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "fra").await;
    // An inbound here already has the WebSocket one's name: it is mapped, not made.
    let here = live::vless(server, "VLESS WS", free_port().unwrap(), false);
    let ws_here = service.create_inbound(&here, live::now()).await.unwrap().id;

    // Marzban's users imported (or, with `dry`, not), then its inbounds made on "fra".
    let import_and_make = |dry: bool| {
        let (store, service, db, xray_config) = (&store, &service, &db, &xray_config);
        async move {
            let flags = (dry, false);
            let mut report =
                import::marzban(store.as_ref(), db, Some(xray_config), flags, live::now())
                    .await
                    .unwrap();
            import::make_inbounds(service, &mut report, "fra", live::now())
                .await
                .unwrap();
            report
        }
    };
    // A wrong server name is refused before anything is read.
    let e = import::server_named(store.as_ref(), "nowhere")
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no server named \"nowhere\" here: add it first, or name one of yours"
    );

    // A dry run says what would be made, and makes nothing.
    let dry = import_and_make(true).await;
    let notes: Vec<(&str, &str, Option<i64>)> = dry
        .inbounds
        .iter()
        .map(|i| (i.tag.as_str(), i.note.as_str(), i.here))
        .collect();
    let mapped = format!(
        "mapped to inbound {ws_here} here (the same name), port {}",
        here.port
    );
    assert_eq!(
        notes,
        [
            (
                "VLESS TCP REALITY",
                "would be made here on server fra",
                None
            ),
            ("VLESS WS", mapped.as_str(), Some(ws_here)),
            (
                "VMess TCP",
                "not made here: vmess inbounds are not made here: its users get this panel's \
                 other inbounds",
                None
            ),
        ]
    );
    assert_eq!(store.inbounds(None, None).await.unwrap().len(), 1);
    assert!(all_users(&panel).await.is_empty());
    // The report as JSON never holds the private key.
    let text = serde_json::to_string(&dry).unwrap();
    assert!(!text.contains(&keys.private_key), "{text}");
    assert!(!format!("{dry:?}").contains(&keys.private_key));

    // The import makes the REALITY inbound whole.
    let report = import_and_make(false).await;
    let made_id = report.inbounds[0]
        .here
        .expect("the REALITY inbound was made");
    assert_eq!(
        report.inbounds[0].note,
        format!("made here as inbound {made_id} on server fra")
    );
    assert!(
        report
            .not_carried
            .iter()
            .any(|n| n.what == "inbound \"VMess TCP\"" && n.reason.starts_with("vmess inbounds")),
        "{:#?}",
        report.not_carried
    );
    let made = store.inbound(made_id).await.unwrap();
    assert_eq!(
        (made.name.as_str(), made.port, made.server_id),
        ("VLESS TCP REALITY", reality_port, server)
    );
    assert_eq!(made.flow, Some(Flow::Vision));
    assert_eq!(
        made.reality_public_key.as_deref(),
        Some(keys.public_key.as_str())
    );
    let InboundSecurity::Reality {
        dest,
        server_names,
        short_ids,
        ..
    } = &made.security
    else {
        panic!("{made:?}")
    };
    assert_eq!(
        (dest.as_str(), server_names.as_slice(), short_ids.as_slice()),
        (
            site.to_string().as_str(),
            ["target.test".to_owned()].as_slice(),
            [SHORT_ID.to_owned()].as_slice()
        )
    );

    // alice's old REALITY config, as Marzban gave it, through our node.
    let mut nodes = live::join_all(&panel, dir.path(), &[server]).await;
    let node = nodes.remove(0);
    let alice = by_name(&all_users(&panel).await, "alice").clone();
    let uuid = marzban["users"]["alice"]["proxies"]["vless"]["id"]
        .as_str()
        .unwrap();
    let socks = free_port().unwrap();
    let old = json!({
        "log": {"loglevel": "warning"},
        "inbounds": [{"listen": "127.0.0.1", "port": socks, "protocol": "socks", "settings": {"udp": false}}],
        "outbounds": [{"protocol": "vless", "settings": {"vnext": [{
            "address": "127.0.0.1", "port": reality_port,
            "users": [{"id": uuid, "encryption": "none", "flow": "xtls-rprx-vision"}]
        }]}, "streamSettings": {"network": "tcp", "security": "reality", "realitySettings": {
            "serverName": "target.test", "fingerprint": "chrome",
            "publicKey": said["pbk"], "shortId": SHORT_ID}}}]
    });
    let target = HttpTarget::start().await.unwrap();
    xray_carries(old, socks, &target, node_down(&node, alice.id)).await;

    // A second import makes nothing twice: both are mapped now.
    let again = import_and_make(false).await;
    let here: Vec<Option<i64>> = again.inbounds.iter().map(|i| i.here).collect();
    assert_eq!(here, [Some(made_id), Some(ws_here), None]);
    assert_eq!(store.inbounds(None, None).await.unwrap().len(), 2);
}
