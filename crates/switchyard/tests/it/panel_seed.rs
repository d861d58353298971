//! `switchyard panel seed`: users with their tokens, and with `--with-inbound`,
//! `--routes` and `--pool` the cluster the benchmark loads, read back from the
//! database it wrote.

use std::process::Command;

use switchyard_panel::model::Protocol;
use switchyard_panel::store::{
    Changes, InboundStore, RouteStore, ServerStore, SqlStore, UserStore,
};

#[tokio::test]
async fn seed_writes_users_tokens_and_routes_of_every_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let tokens = dir.path().join("tokens.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["panel", "seed", "--users", "3", "--tokens"])
        .arg(&tokens)
        .args([
            "--with-inbound",
            "18443",
            "--routes",
            "4",
            "--pool",
            "2",
            "--data",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("added 4 routes of 2 inbounds over 2 servers"),
        "{stdout}"
    );

    let store = SqlStore::open_sqlite(&data.join("panel.db"), Changes::default())
        .await
        .unwrap();
    let lines: Vec<String> = std::fs::read_to_string(&tokens)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 3);
    for t in &lines {
        assert!(store.user_by_token(t, 0).await.unwrap().is_some(), "{t}");
    }
    let cluster = store.clusters().await.unwrap()[0].clone();
    assert_eq!(cluster.name, "seed");
    assert_eq!(store.servers(Some(cluster.id)).await.unwrap().len(), 3);
    // The default route with the seed inbound, then the 4 seeded routes of 2.
    let routes = store.routes(cluster.id).await.unwrap();
    let sizes: Vec<usize> = routes.iter().map(|r| r.inbound_ids.len()).collect();
    assert_eq!(sizes, [1, 2, 2, 2, 2]);
    let inbounds = store.inbounds(None, Some(cluster.id)).await.unwrap();
    let protocol_of = |route: usize| {
        let id = routes[route].inbound_ids[0];
        inbounds.iter().find(|i| i.id == id).unwrap().protocol
    };
    assert_eq!(
        (1..=4).map(protocol_of).collect::<Vec<_>>(),
        [
            Protocol::Vless,
            Protocol::Trojan,
            Protocol::Shadowsocks,
            Protocol::Vless
        ]
    );
}
