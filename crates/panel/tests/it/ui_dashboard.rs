//! The dashboard, the UI's first page, in a real headless Chromium against a real
//! panel: the users' status bar and counts, online now, who expires soon, the servers
//! and clusters; at phone width nothing is wider than the screen.

use crate::live;
use crate::ui_common::{password, shots, text, type_into, unlabelled};

use serde_json::Value;
use switchyard_panel::store::UserInput;
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_is_the_first_page() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let eu = store
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    live::server(&panel, eu, "de-1").await;
    let now = live::now();
    for (name, enabled, expires) in [
        ("alice", true, None),
        ("bob", false, None),
        ("carol", true, Some(now - 86_400_000)),
        ("dave", true, Some(now + 2 * 86_400_000)),
    ] {
        let input = UserInput {
            enabled,
            expires_ms: expires,
            ..UserInput::new(name)
        };
        service.create_user(&input, now).await.unwrap();
    }
    let b = Browser::start().await.unwrap();
    b.goto(&format!("http://{http}/")).await.unwrap();
    type_into(&b, "form.login input[name=username]", "admin").await;
    type_into(&b, "form.login input[name=password]", &password(dir.path())).await;
    b.press("Enter").await.unwrap();
    assert_eq!(text(&b, "#d-users").await, "Users: 4");
    assert_eq!(text(&b, "[data-status=active]").await, "Active: 2");
    assert_eq!(text(&b, "[data-status=expired]").await, "Expired: 1");
    assert_eq!(text(&b, "[data-status=disabled]").await, "Disabled: 1");
    assert_eq!(text(&b, "[data-online]").await, "Online now: 0");
    assert_eq!(
        text(&b, "[data-expiring]").await,
        "Expiring within 3 days: 1\ndave"
    );
    assert_eq!(
        text(&b, "[data-servers=pending]").await,
        "Servers pending: 1"
    );
    let bar = b
        .execute(
            "return document.querySelector('.status-bar').getAttribute('aria-label');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        bar,
        Value::from("Users by status: Active 2, On hold 0, Limited 0, Expired 1, Disabled 1")
    );
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the dashboard");
    b.screenshot(shots().join("dashboard.png")).await.unwrap();
    // At phone width: one column, no horizontal scroll.
    b.set_window_size(390, 844).await.unwrap();
    let wide = b
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(wide, Value::Bool(true));
    b.screenshot(shots().join("dashboard-phone.png"))
        .await
        .unwrap();
    // Its cluster link opens the cluster.
    b.set_window_size(1280, 900).await.unwrap();
    crate::ui_common::click(&b, "[data-dashboard] a[data-cluster]").await;
    b.wait_for(".topology", DEFAULT_WAIT).await.unwrap();
    drop(b);
    drop(panel);
}
