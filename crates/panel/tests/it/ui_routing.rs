//! In a real headless Chromium: a cluster's and a user's own routing. The cluster's
//! "Routing…" dialog inherits at first (its settings hidden); switched on, a preset,
//! ad blocking and custom rules one per line are saved as the API's routing; a line
//! that is not `ACTION KIND VALUE` is refused naming it, and so is a bad network (the
//! API's error next to the box); the user's dialog sets their own and clears it.

use crate::live;
use crate::ui_common::{cancel_dialog, click, log_in, pick, type_into, unlabelled};

use switchyard_panel::model::routing::{
    RoutingAction, RoutingPreset, RoutingRule, RoutingSettings,
};
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

const CUSTOM: &str = "dialog[open] textarea[name=\"routing.custom\"]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_routing_through_the_dialogs_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let cluster = store
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    let alice = panel
        .state
        .service()
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    b.goto(&format!("http://{http}/#/clusters/{cluster}"))
        .await
        .unwrap();
    click(&b, "[data-routing]").await;
    b.wait_for("dialog[open] input[name=own]", DEFAULT_WAIT)
        .await
        .unwrap();
    assert!(!b.find(CUSTOM).await.unwrap().is_displayed().await.unwrap());
    click(&b, "dialog[open] input[name=own]").await;
    assert!(b.find(CUSTOM).await.unwrap().is_displayed().await.unwrap());
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the routing dialog"
    );
    pick(&b, "routing.preset", "russia").await;
    click(&b, "dialog[open] input[name=\"routing.block_ads\"]").await;

    // A line that is not ACTION KIND VALUE: refused in the page, naming it.
    type_into(&b, CUSTOM, "direct suffix bank.example\nsend everything").await;
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(
        ".form-error, [data-field=\"routing.custom\"] .error",
        "line 2",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    // A bad network: the API's error, next to the box.
    let text = b.find(CUSTOM).await.unwrap();
    text.clear().await.unwrap();
    text.send_keys("direct suffix bank.example\nproxy cidr 10.0.0.0/33")
        .await
        .unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(
        "dialog[open] [data-field=\"routing.custom\"] .error",
        "routing.custom[1].ip_cidr[0]",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    assert_eq!(store.cluster_routing(cluster).await.unwrap(), None);

    let text = b.find(CUSTOM).await.unwrap();
    text.clear().await.unwrap();
    text.send_keys("direct suffix bank.example\nblock keyword tracker")
        .await
        .unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    let want = RoutingSettings {
        preset: RoutingPreset::Russia,
        block_ads: true,
        custom: vec![
            RoutingRule {
                action: RoutingAction::Direct,
                domain_suffix: vec!["bank.example".into()],
                ..RoutingRule::default()
            },
            RoutingRule {
                action: RoutingAction::Block,
                domain_keyword: vec!["tracker".into()],
                ..RoutingRule::default()
            },
        ],
    };
    live::wait_until("the cluster's routing is saved", 10, || async {
        store.cluster_routing(cluster).await.unwrap().as_ref() == Some(&want)
    })
    .await;

    // The dialog shows it again, one destination per line.
    click(&b, "[data-routing]").await;
    b.wait_for(CUSTOM, DEFAULT_WAIT).await.unwrap();
    let shown = b
        .execute(
            "return document.querySelector(arguments[0]).value;",
            vec![serde_json::json!(CUSTOM)],
        )
        .await
        .unwrap();
    assert_eq!(shown, "direct suffix bank.example\nblock keyword tracker");
    cancel_dialog(&b).await;

    // A user's own: set, then cleared.
    b.goto(&format!("http://{http}/#/users")).await.unwrap();
    click(&b, &format!("[data-routing=\"{}\"]", alice.id)).await;
    b.wait_for("dialog[open] input[name=own]", DEFAULT_WAIT)
        .await
        .unwrap();
    click(&b, "dialog[open] input[name=own]").await;
    pick(&b, "routing.preset", "china").await;
    click(&b, "dialog[open] button[type=submit]").await;
    live::wait_until("the user's routing is saved", 10, || async {
        store
            .user_routing(alice.id)
            .await
            .unwrap()
            .is_some_and(|r| r.preset == RoutingPreset::China)
    })
    .await;
    click(&b, &format!("[data-routing=\"{}\"]", alice.id)).await;
    b.wait_for("dialog[open] input[name=own]:checked", DEFAULT_WAIT)
        .await
        .unwrap();
    click(&b, "dialog[open] input[name=own]").await;
    click(&b, "dialog[open] button[type=submit]").await;
    live::wait_until("the user's routing is cleared", 10, || async {
        store.user_routing(alice.id).await.unwrap().is_none()
    })
    .await;
    panel.shutdown().await;
}
