//! Subscriptions through the router (no socket): a write shows in the very next
//! subscription, although the topology behind them is cached.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use base64::Engine;
use http_body_util::BodyExt;
use switchyard_panel::PanelConfig;
use switchyard_panel::api::{self, AppState, JoinEncoder};
use switchyard_panel::metrics::Metrics;
use switchyard_panel::model::{InboundSecurity, InboundTransport, Protocol, TlsCertificate};
use switchyard_panel::store::{Changes, InboundInput, ServerInput, SqlStore, Store, UserInput};
use tower::ServiceExt;

fn vless(server_id: i64, name: &str, port: u16) -> InboundInput {
    InboundInput {
        server_id,
        name: name.into(),
        protocol: Protocol::Vless,
        port,
        transport: InboundTransport::Tcp,
        security: InboundSecurity::Tls {
            certificate: TlsCertificate::SelfSigned,
        },
        host: None,
        sni: Some("localhost".into()),
        coefficient: 1.0,
        method: None,
        flow: None,
        hysteria2: None,
        trusted_proxies: Vec::new(),
        rules: Default::default(),
    }
}

/// The share links of `path`'s subscription.
async fn links(router: &axum::Router, path: &str) -> Vec<String> {
    let response = router
        .clone()
        .oneshot(
            Request::get(format!("{path}?format=links"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = base64::engine::general_purpose::STANDARD
        .decode(body.trim_ascii())
        .unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn writes_show_in_the_next_subscription() {
    let dir = tempfile::tempdir().unwrap();
    let changes = Changes::default();
    let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), changes.clone())
        .await
        .unwrap();
    let shared: Arc<dyn Store> = Arc::new(store);
    let join: JoinEncoder = Arc::new(|s: &str| s.to_owned());
    let state = AppState::new(
        shared.clone(),
        &changes,
        PanelConfig::default(),
        join,
        Arc::new(Metrics::default()),
    );
    let router = api::router(state.clone());
    let service = state.service();
    let now = state.now();

    let user = service
        .create_user(&UserInput::new("alice"), now)
        .await
        .unwrap();
    assert!(links(&router, &user.subscription_path).await.is_empty());

    let cluster = shared.create_cluster("c", now).await.unwrap();
    let server = service
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "s".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: false,
            },
            now,
        )
        .await
        .unwrap();
    let first = service
        .create_inbound(&vless(server.id, "First", 8443), now)
        .await
        .unwrap();
    let l = links(&router, &user.subscription_path).await;
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].ends_with("#First") && l[0].contains(":8443"), "{l:?}");

    // Deleted, then replaced: each shows at once, not after the cache's age.
    shared.delete_inbound(first.id).await.unwrap();
    assert!(links(&router, &user.subscription_path).await.is_empty());
    service
        .create_inbound(&vless(server.id, "Second", 9443), now)
        .await
        .unwrap();
    let l = links(&router, &user.subscription_path).await;
    assert_eq!(l.len(), 1, "{l:?}");
    // The entry is the default route, named after the inbound it was made for.
    assert!(l[0].ends_with("#First") && l[0].contains(":9443"), "{l:?}");

    // A user limited to no cluster sees none of it; an unknown token is a 404.
    let mut limited = UserInput {
        username: "bob".into(),
        enabled: true,
        note: String::new(),
        traffic_limit: None,
        reset_strategy: Default::default(),
        expires_ms: None,
        on_hold_days: None,
        device_limit: None,
        address_limit: None,
        clusters: Some(Vec::new()),
    };
    let bob = service.create_user(&limited, now).await.unwrap();
    assert!(links(&router, &bob.subscription_path).await.is_empty());
    limited.clusters = Some(vec![cluster.id]);
    service.update_user(bob.id, &limited, now).await.unwrap();
    assert_eq!(links(&router, &bob.subscription_path).await.len(), 1);
    let missing = router
        .clone()
        .oneshot(Request::get("/sub/nope").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}
