//! Join tokens and replacing a node: a server has one valid token at a time (a new
//! one or an enrollment revokes the others), a server whose node has joined takes no
//! token and keeps its pin, and only "replace the node" forgets the pin, cuts the old
//! node off (also when the replacement is written by another instance) and lets a new
//! one join. In the store on SQLite and PostgreSQL, and end to end with real nodes over
//! the real channel and the panel's HTTP API.

use crate::live;

use std::time::Duration;

use switchyard_channel::{JoinError, JoinToken};
use switchyard_panel::store::{
    Changes, JoinRefusal, ServerInput, ServerStore, SqlStore, StoreError,
};

const NOW: i64 = 1_796_121_000_000;

/// The rules, on `store`, whose database is also at `url`.
async fn rules(store: SqlStore, url: &str) {
    let cluster = store.create_cluster("c", NOW).await.unwrap();
    let input = ServerInput {
        cluster_id: cluster.id,
        name: "s".into(),
        address: "s.example".into(),
        allow_private_destinations: false,
    };
    let server = store.create_server(&input, NOW).await.unwrap().id;
    let later = NOW + 60_000;

    // A newer token revokes the older one.
    store
        .create_join_token(server, "a", later, NOW)
        .await
        .unwrap();
    store
        .create_join_token(server, "b", later, NOW)
        .await
        .unwrap();
    assert_eq!(
        store.consume_join_token("a", NOW).await.unwrap(),
        Err(JoinRefusal::Revoked)
    );
    assert_eq!(
        store.consume_join_token("b", NOW).await.unwrap(),
        Ok(server)
    );
    // A token made between a node taking its token and its pin being stored is
    // refused once the pin is there; a second pin never replaces the first.
    store
        .create_join_token(server, "c", later, NOW)
        .await
        .unwrap();
    store.pin_server(server, "pin-1", "a", "1").await.unwrap();
    assert_eq!(
        store.consume_join_token("c", NOW).await.unwrap(),
        Err(JoinRefusal::Enrolled)
    );
    assert!(matches!(
        store.pin_server(server, "pin-2", "b", "1").await,
        Err(StoreError::Conflict(f)) if f.field == "id"
    ));
    assert_eq!(
        store.server_pin(server).await.unwrap().as_deref(),
        Some("pin-1")
    );
    // A server whose node has joined takes no new token.
    assert!(matches!(
        store.create_join_token(server, "d", later, NOW).await,
        Err(StoreError::Conflict(f)) if f.field == "id"
    ));
    assert_eq!(
        store.consume_join_token("d", NOW).await.unwrap(),
        Err(JoinRefusal::Unknown)
    );

    // Replacing the node forgets the pin and revokes what is left.
    store.replace_node(server, "e", later, NOW).await.unwrap();
    assert_eq!(store.server_pin(server).await.unwrap(), None);
    assert_eq!(store.server_by_fingerprint("pin-1").await.unwrap(), None);
    assert!(!store.server(server).await.unwrap().joined);
    assert_eq!(
        store.consume_join_token("c", NOW).await.unwrap(),
        Err(JoinRefusal::Revoked)
    );
    store.replace_node(server, "f", later, NOW).await.unwrap();
    assert_eq!(
        store.consume_join_token("e", NOW).await.unwrap(),
        Err(JoinRefusal::Revoked)
    );
    assert_eq!(
        store.consume_join_token("f", NOW).await.unwrap(),
        Ok(server)
    );
    store.pin_server(server, "pin-2", "b", "1").await.unwrap();
    assert_eq!(
        store.server_by_fingerprint("pin-2").await.unwrap(),
        Some(server)
    );
    assert!(matches!(
        store.replace_node(server + 100, "g", later, NOW).await,
        Err(StoreError::NotFound(_))
    ));

    // Tokens left over from before these rules (several unused for one server): the
    // enrollment with one revokes the others.
    let other = store
        .create_server(
            &ServerInput {
                name: "t".into(),
                ..input
            },
            NOW,
        )
        .await
        .unwrap()
        .id;
    store
        .create_join_token(other, "x", later, NOW)
        .await
        .unwrap();
    legacy_join_token(url, other, "y", later, NOW).await;
    assert_eq!(store.consume_join_token("y", NOW).await.unwrap(), Ok(other));
    assert_eq!(
        store.consume_join_token("x", NOW).await.unwrap(),
        Err(JoinRefusal::Revoked)
    );
}

/// Writes a token the way a panel before these rules did: without revoking others.
async fn legacy_join_token(url: &str, server: i64, hash: &str, expires_ms: i64, now_ms: i64) {
    use sqlx::Connection;
    let mut db = sqlx::AnyConnection::connect(url).await.unwrap();
    sqlx::query(
        "INSERT INTO join_tokens (secret_hash, server_id, expires_ms, created_ms) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(hash)
    .bind(server)
    .bind(expires_ms)
    .bind(now_ms)
    .execute(&mut db)
    .await
    .unwrap();
    db.close().await.unwrap();
}

#[tokio::test]
async fn one_valid_token_per_server_and_pins_are_only_forgotten_by_a_replacement_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("panel.db");
    let store = SqlStore::open_sqlite(&db, Changes::default())
        .await
        .unwrap();
    rules(store, &format!("sqlite://{}", db.display())).await;
}

#[tokio::test]
async fn one_valid_token_per_server_and_pins_are_only_forgotten_by_a_replacement_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("join_tokens").unwrap();
    rules(
        SqlStore::open(&url, Changes::default()).await.unwrap(),
        &url,
    )
    .await;
}

fn refused<T: std::fmt::Debug>(r: Result<T, JoinError>, want: JoinRefusal, what: &str) {
    match r {
        Err(JoinError::Refused { detail }) => assert_eq!(detail, want.to_string(), "{what}"),
        other => panic!("{what}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_tokens_are_refused_and_replacing_a_node_cuts_the_old_one_off() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let auth = live::api_token(http, &dir.path().join("panel")).await;
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let join_path = format!("/api/v1/servers/{server}/join");
    let issue = async |path: &str| {
        let (status, body) = live::http(http, "POST", path, &auth, None).await;
        assert_eq!(status, 201, "{path}: {body}");
        body["token"].as_str().unwrap().to_owned()
    };

    // Two join commands: the older stops working at once.
    let first = issue(&join_path).await;
    let second = issue(&join_path).await;
    let token = |t: &str| JoinToken::parse(t).unwrap();
    refused(
        switchyard_channel::join(&token(&first), &dir.path().join("x"), "x").await,
        JoinRefusal::Revoked,
        "a token older than the server's newest",
    );
    let a = live::join(&dir.path().join("a"), &second).await;
    live::wait_until("node a holds its channel", 20, || async {
        panel.nodes.held() == vec![server]
    })
    .await;
    let pin = store.server_pin(server).await.unwrap().unwrap();

    // The server's node has joined: no new join command, and neither token issued
    // before the enrollment re-pins the server.
    let (status, body) = live::http(http, "POST", &join_path, &auth, None).await;
    assert_eq!(status, 409, "{body}");
    refused(
        switchyard_channel::join(&token(&first), &dir.path().join("y"), "y").await,
        JoinRefusal::Revoked,
        "a token issued before the enrollment",
    );
    match switchyard_channel::join(&token(&second), &dir.path().join("z"), "z").await {
        Err(JoinError::Refused { detail }) => {
            assert_eq!(detail, "the join token was already used")
        }
        other => panic!("the used token: {other:?}"),
    }
    assert_eq!(
        store.server_pin(server).await.unwrap().as_deref(),
        Some(pin.as_str())
    );
    assert_eq!(
        panel.nodes.held(),
        vec![server],
        "node a is still the server's"
    );

    // Replacing: node a is cut off at once and stays out; the new token enrolls b.
    let third = issue(&format!("/api/v1/servers/{server}/replace")).await;
    assert!(!store.server(server).await.unwrap().joined);
    live::wait_until("node a is cut off", 10, || async {
        panel.nodes.held().is_empty() && a.status().borrow().connected_since_ms.is_none()
    })
    .await;
    let b = live::join(&dir.path().join("b"), &third).await;
    live::wait_until("node b holds the channel", 20, || async {
        panel.nodes.held() == vec![server] && b.status().borrow().connected_since_ms.is_some()
    })
    .await;
    let new_pin = store.server_pin(server).await.unwrap().unwrap();
    assert_ne!(new_pin, pin);
    // Node a keeps dialing (its back-off is short here) and is refused every time.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        a.status().borrow().connected_since_ms.is_none(),
        "{:?}",
        a.status().borrow()
    );
    assert_eq!(panel.nodes.held(), vec![server]);
    // A replacement written by another panel instance (only the database changes
    // here): the instance holding node b's channel closes it by itself.
    store
        .replace_node(
            server,
            "another instance's token",
            live::now() + 60_000,
            live::now(),
        )
        .await
        .unwrap();
    live::wait_until("node b is cut off by the holder", 10, || async {
        panel.nodes.held().is_empty() && b.status().borrow().connected_since_ms.is_none()
    })
    .await;
    a.shutdown().await;
    b.shutdown().await;
    panel.shutdown().await;
}
