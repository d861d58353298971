//! In a real headless Chromium: the inbound form's rules. Block BitTorrent, blocked
//! and direct destinations, and a box per tunnel the selected server relays (none
//! for another server); a bad destination's error shows next to its box naming the
//! entry; saved as lists, shown again by the edit form.

use crate::live;
use crate::ui_common::{InboundForm, cancel_dialog, click, edit_inbound, type_into, unlabelled};

use switchyard_panel::model::{InboundRules, TunnelDestinations};
use switchyard_testkit::browser::DEFAULT_WAIT;

const BLOCK: &str = "dialog[open] textarea[name=\"rules.block\"]";
const DIRECT: &str = "dialog[open] textarea[name=\"rules.direct\"]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbounds_rules_through_the_form_in_a_real_browser() {
    let form = InboundForm::open().await;
    let b = &form.b;
    let store = form.panel.state.store().clone();
    let server = form.server;
    // A tunnel from this server: the form opened anew offers a box for it.
    cancel_dialog(b).await;
    let other = live::server(&form.panel, form.cluster, "de-2").await;
    let input = serde_json::from_value(serde_json::json!({
        "name": "eu", "relay_server_id": server, "origin_server_ids": [other],
        "profiles": [{"port": switchyard_testkit::free_port().unwrap(), "security": "tls"}],
    }))
    .unwrap();
    let tunnel = form
        .panel
        .state
        .service()
        .create_tunnel(input, "127.0.0.1:443", live::now())
        .await
        .unwrap();
    click(b, "[data-new-inbound]").await;
    let into = format!("dialog[open] textarea[name=\"rules.tunnel.{}\"]", tunnel.id);
    b.wait_for(&into, DEFAULT_WAIT).await.unwrap();
    assert!(b.find(&into).await.unwrap().is_displayed().await.unwrap());
    assert_eq!(
        unlabelled(b).await,
        Vec::<String>::new(),
        "the inbound form with rules"
    );

    // A bad entry: the API's error next to its box, naming it.
    type_into(b, "dialog[open] input[name=name]", "Frankfurt").await;
    click(b, "dialog[open] input[name=\"rules.block_bittorrent\"]").await;
    type_into(b, BLOCK, "ads.example\n10.0.0.0/33").await;
    click(b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(
        "dialog[open] [data-field=\"rules.block\"] .error",
        "rules.block[1]: \"10.0.0.0/33\" is not an IP address or network",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    assert!(store.inbounds(Some(server), None).await.unwrap().is_empty());

    let text = b.find(BLOCK).await.unwrap();
    text.clear().await.unwrap();
    text.send_keys("ads.example, 203.0.113.0/24").await.unwrap();
    type_into(b, DIRECT, "bank.example\n\n").await;
    type_into(b, &into, "video.example").await;
    let saved = form.save("Frankfurt").await;
    let want = InboundRules {
        block_bittorrent: true,
        block: vec!["ads.example".into(), "203.0.113.0/24".into()],
        direct: vec!["bank.example".into()],
        tunnel: vec![TunnelDestinations {
            tunnel_id: tunnel.id,
            destinations: vec!["video.example".into()],
        }],
    };
    assert_eq!(saved[0].rules, want);

    // The edit form shows them again, one per line.
    edit_inbound(b, saved[0].id).await;
    b.wait_for(BLOCK, DEFAULT_WAIT).await.unwrap();
    let values = b
        .execute(
            "return [arguments[0], arguments[1], arguments[2]] \
             .map((s) => document.querySelector(s).value) \
             .concat([document.querySelector('dialog[open] input[name=\"rules.block_bittorrent\"]').checked]);",
            vec![
                serde_json::json!(BLOCK),
                serde_json::json!(DIRECT),
                serde_json::json!(into),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        values,
        serde_json::json!([
            "ads.example\n203.0.113.0/24",
            "bank.example",
            "video.example",
            true
        ])
    );
}
