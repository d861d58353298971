//! The import's store on SQLite and PostgreSQL: users added in one transaction with
//! the source's credentials, usage and times; a dry run keeps nothing; a second
//! import updates (usage grows by the source's growth, ours kept), adds, leaves a
//! name of ours alone and disables the missing; links are found by the source's key;
//! a revocation here outlives the source's.

use switchyard_panel::model::{Credentials, ResetStrategy};
use switchyard_panel::service::new_credentials;
use switchyard_panel::store::{
    Changes, ImportMode, ImportedUser, ServerInput, SqlStore, Store, TrafficBatch, UserInput,
    UserQuery,
};

const NOW: i64 = 1_796_400_000_000;

fn user(name: &str, used: u64) -> ImportedUser {
    ImportedUser {
        source_key: name.into(),
        input: UserInput {
            traffic_limit: Some(1000),
            reset_strategy: ResetStrategy::Week,
            note: format!("{name}'s note"),
            ..UserInput::new(name)
        },
        credentials: Credentials {
            vless_uuid: "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11".into(),
            trojan_password: format!("{name}-trojan"),
            ..new_credentials()
        },
        token: format!("token-of-{name}-0123456789"),
        used,
        lifetime: used + 5,
        created_ms: NOW - 86_400_000,
        sub_revoked_ms: None,
        link: None,
        devices: Vec::new(),
        carries: Default::default(),
    }
}

const WRITE: ImportMode = ImportMode {
    disable_missing: true,
    dry_run: false,
};

async fn story(store: &dyn Store) {
    let dry = ImportMode {
        dry_run: true,
        ..WRITE
    };
    let w = store
        .import_users("marzban", "s3cret", &[user("alice", 100)], dry, NOW)
        .await
        .unwrap();
    assert_eq!(w.added, ["alice"]);
    assert_eq!(store.user_count().await.unwrap(), 0);
    assert_eq!(store.import_secret("marzban").await.unwrap(), None);

    // A user of ours named bob is never taken over.
    let ours = store
        .create_user(
            &UserInput::new("bob"),
            &new_credentials(),
            "ours-bob-token-0123",
            NOW,
        )
        .await
        .unwrap();
    let w = store
        .import_users(
            "marzban",
            "s3cret",
            &[user("alice", 100), user("bob", 1)],
            WRITE,
            NOW,
        )
        .await
        .unwrap();
    assert_eq!(w.added, ["alice"]);
    assert_eq!(w.conflicts.len(), 1);
    assert_eq!(
        w.conflicts[0].1,
        "a user named \"bob\" exists here and did not come from marzban"
    );
    assert_eq!(
        store.import_secret("marzban").await.unwrap().as_deref(),
        Some("s3cret")
    );
    let link = store
        .imported_link("marzban", "alice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link.token, "token-of-alice-0123456789");
    assert_eq!(link.source_created_ms, NOW - 86_400_000);
    assert_eq!(link.sub_revoked_ms, None);
    assert_eq!(store.imported_link("marzban", "bob").await.unwrap(), None);
    assert_eq!(store.imported_link("3x-ui", "alice").await.unwrap(), None);
    let alice = store.user(link.user_id, NOW).await.unwrap();
    assert_eq!(
        (alice.used_up, alice.used_down, alice.lifetime_bytes),
        (0, 100, 105)
    );
    assert_eq!(alice.created_ms, NOW - 86_400_000);
    assert_eq!(alice.note, "alice's note");
    let (_, creds) = store
        .user_by_token("token-of-alice-0123456789", NOW)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(creds.trojan_password, "alice-trojan");

    // Our node counts 40 bytes; the source counted 30 more; a revocation here.
    let cluster = store.create_cluster("c", NOW).await.unwrap();
    let server = store
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "s".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: false,
            },
            NOW,
        )
        .await
        .unwrap();
    let batch = TrafficBatch {
        cursor: 1,
        users: vec![(alice.id, 10, 30)],
    };
    assert!(
        store
            .record_traffic(server.id, &batch, &[], NOW)
            .await
            .unwrap()
    );
    store
        .set_subscription_token(alice.id, "new-token-of-alice-0123", NOW + 1000)
        .await
        .unwrap();
    // Limits the operator set here, which Marzban does not have.
    let mut limits = UserInput {
        device_limit: Some(3),
        address_limit: Some(2),
        ..UserInput::new("alice")
    };
    limits.traffic_limit = Some(1000);
    store.update_user(alice.id, &limits, NOW).await.unwrap();
    let mut again = user("alice", 130);
    again.input.traffic_limit = Some(2000);
    again.credentials.trojan_password = "alice-new-trojan".into();
    again.sub_revoked_ms = Some(NOW - 1000);
    let w = store
        .import_users(
            "marzban",
            "s3cret",
            &[again, user("carol", 0)],
            WRITE,
            NOW + 2000,
        )
        .await
        .unwrap();
    assert_eq!(w.updated, ["alice"]);
    assert_eq!(w.added, ["carol"]);
    assert!(w.disabled.is_empty(), "bob never came from marzban");
    let alice = store.user(alice.id, NOW).await.unwrap();
    assert_eq!(alice.used_up + alice.used_down, 100 + 40 + 30);
    assert_eq!(alice.lifetime_bytes, 105 + 40 + 30);
    assert_eq!(alice.traffic_limit, Some(2000));
    assert_eq!(
        (alice.device_limit, alice.address_limit),
        (Some(3), Some(2)),
        "a limit the source does not have stays"
    );
    let link = store
        .imported_link("marzban", "alice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link.token, "new-token-of-alice-0123");
    assert_eq!(
        link.sub_revoked_ms,
        Some(NOW + 1000),
        "ours outlives the source's"
    );

    // Carol is gone from the source: disabled, not deleted; a source counter that went
    // down (a reset there) starts ours over from it.
    let mut last = user("alice", 20);
    last.carries.device_limit = true;
    let w = store
        .import_users("marzban", "s3cret", &[last], WRITE, NOW + 3000)
        .await
        .unwrap();
    assert_eq!(w.disabled, ["carol"]);
    let users = store.users(&UserQuery::default(), NOW).await.unwrap();
    assert_eq!(users.len(), 3);
    let carol = users.iter().find(|u| u.username == "carol").unwrap();
    assert!(!carol.enabled);
    assert!(users.iter().any(|u| u.id == ours.id && u.enabled));
    let alice = store.user(alice.id, NOW).await.unwrap();
    assert_eq!(alice.used_up + alice.used_down, 40 + 20);
    assert_eq!(
        (alice.device_limit, alice.address_limit),
        (None, Some(2)),
        "a limit the source has is the source's"
    );
    assert_eq!(
        store.import_sources().await.unwrap(),
        [("marzban".to_owned(), "s3cret".to_owned())]
    );
}

#[tokio::test]
async fn the_import_store_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), Changes::default())
        .await
        .unwrap();
    story(&store).await;
}

#[tokio::test]
async fn the_import_store_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("imports").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    story(&store).await;
    drop(pg);
}

#[test]
fn old_subscription_paths_are_checked_by_name() {
    use switchyard_panel::config::PanelConfig;
    let check = |paths: &[&str]| {
        let mut c = PanelConfig::default();
        c.subscription.old_paths = paths.iter().map(|p| (*p).to_owned()).collect();
        c.validate().map_err(|e| e.to_string())
    };
    // Remnawave's `api/sub` is free beside the API's own paths.
    assert!(check(&["p/sub", "my-sub_2.x", "api/sub"]).is_ok());
    for (paths, field) in [
        (&["/sub"][..], "subscription.old_paths[0]"),
        (&["ok", "a//b"][..], "subscription.old_paths[1]"),
        (&["a/../b"][..], "subscription.old_paths[0]"),
        (&["x?y"][..], "subscription.old_paths[0]"),
        (&["sub/x"][..], "subscription.old_paths[0]"),
        (&["api"][..], "subscription.old_paths[0]"),
        (&["api/v1"][..], "subscription.old_paths[0]"),
        (&["api/openapi.json"][..], "subscription.old_paths[0]"),
        (&[""][..], "subscription.old_paths[0]"),
    ] {
        let e = check(paths).unwrap_err();
        assert!(e.contains(field), "{paths:?}: {e}");
    }
    let nine = ["a"; 9];
    assert!(check(&nine).unwrap_err().contains("subscription.old_paths"));
}
