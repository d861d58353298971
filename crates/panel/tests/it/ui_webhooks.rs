//! The Webhooks page in a real headless Chromium against a real panel (its delivery
//! worker running) and a real receiver on 127.0.0.1: a hook made on the page shows
//! its secret once; its test event and a user made in the UI arrive, signed with it;
//! the deliveries table says so.

use crate::live;
use crate::ui_common::{click, log_in, type_into, unlabelled};
use crate::webhooks::receiver;

use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

/// Waits until the receiver has `n` requests.
async fn wait_got(rx: &crate::webhooks::Receiver, n: usize) {
    let deadline = std::time::Instant::now() + DEFAULT_WAIT;
    while rx.got.lock().unwrap().len() < n {
        assert!(std::time::Instant::now() < deadline, "{n} deliveries");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_made_on_the_page_gets_signed_events() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    panel
        .state
        .store()
        .create_cluster("eu", live::now())
        .await
        .unwrap();
    let (rx, addr) = receiver().await;
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    click(&b, "nav a[href=\"#/webhooks\"]").await;
    click(&b, "[data-new-webhook]").await;
    type_into(
        &b,
        "dialog[open] input[name=url]",
        &format!("http://{addr}/hook"),
    )
    .await;
    click(&b, "dialog[open] input[name=allow_private]").await;
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the webhook form"
    );
    click(&b, "dialog[open] button[type=submit]").await;
    let secret = b
        .wait_for("dialog[open] [data-webhook-secret]", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(secret.len(), 43, "32 random bytes, base64url");
    *rx.secret.lock().unwrap() = secret;
    click(&b, "dialog[open] .actions button.primary").await;
    click(&b, "[data-test-webhook]").await;
    wait_got(&rx, 1).await;
    // A user made in the UI arrives as user.created.
    click(&b, "nav a[href=\"#/users\"]").await;
    click(&b, "[data-new-user]").await;
    type_into(&b, "dialog[open] input[name=username]", "alice").await;
    click(&b, "dialog[open] button[type=submit]").await;
    wait_got(&rx, 2).await;
    let got = rx.got.lock().unwrap().clone();
    let events: Vec<&str> = got.iter().map(|g| g.event.as_str()).collect();
    assert_eq!(events, ["webhook.test", "user.created"]);
    assert!(got.iter().all(|g| g.signed && g.answered == 200));
    assert_eq!(got[1].body["data"]["username"], "alice");
    // The deliveries table says they were delivered.
    click(&b, "nav a[href=\"#/webhooks\"]").await;
    click(&b, "tr[data-webhook] button").await;
    b.wait_for("[data-deliveries] td[data-state=delivered]", DEFAULT_WAIT)
        .await
        .unwrap();
    let states = b
        .find_all("[data-deliveries] td[data-state=delivered]")
        .await
        .unwrap()
        .len();
    assert_eq!(states, 2);
    drop(b);
    drop(panel);
}
