//! The users page at scale in a real headless Chromium: pages of 100 with the total
//! the filter names, a status filter, and a change to the selected users, counted
//! first, then applied.

use crate::live;
use crate::ui_common::{click, log_in, pick, unlabelled};

use serde_json::Value;
use switchyard_panel::store::{UserInput, UserQuery};
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

async fn text(b: &Browser, css: &str) -> String {
    b.wait_for(css, DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Waits until `css`'s text is `want`.
async fn wait_text(b: &Browser, css: &str, want: &str) {
    let deadline = std::time::Instant::now() + DEFAULT_WAIT;
    loop {
        let v = b
            .execute(
                "const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;",
                vec![Value::from(css)],
            )
            .await
            .unwrap();
        if v.as_str() == Some(want) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{css}: {v} is not {want}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Picks a status in the page's filter, as a person's pick would.
async fn filter_status(b: &Browser, status: &str) {
    b.execute(
        "const s = document.querySelector('main select[name=status]'); s.value = arguments[0]; \
         s.dispatchEvent(new Event('change', { bubbles: true }));",
        vec![Value::from(status)],
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_come_in_pages_filtered_and_many_change_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    store.create_cluster("eu", live::now()).await.unwrap();
    for i in 1..=150 {
        let input = UserInput {
            enabled: i > 3,
            ..UserInput::new(format!("u{i:03}"))
        };
        service.create_user(&input, live::now()).await.unwrap();
    }
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    click(&b, "nav a[href=\"#/users\"]").await;
    wait_text(&b, "[data-pager] span", "1–100 of 150").await;
    click(&b, "[data-pager] button:last-child").await;
    wait_text(&b, "[data-pager] span", "101–150 of 150").await;
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the users page");

    // Disabled ones only: three, on one page.
    filter_status(&b, "disabled").await;
    wait_text(&b, "main .page-head .muted", "3 in all").await;
    // Two more, selected, switched off at once.
    filter_status(&b, "").await;
    wait_text(&b, "main .page-head .muted", "150 in all").await;
    for name in ["u004", "u005"] {
        let id = store
            .user_page(
                &UserQuery {
                    search: Some(name.into()),
                    ..UserQuery::default()
                },
                None,
                live::now(),
            )
            .await
            .unwrap()
            .0[0]
            .id;
        click(&b, &format!("tr[data-user=\"{id}\"] input[name=select]")).await;
    }
    click(&b, "[data-bulk]").await;
    b.wait_for("dialog[open] select[name=action]", DEFAULT_WAIT)
        .await
        .unwrap();
    pick(&b, "action", "disable").await;
    click(&b, "[data-bulk-go]").await;
    wait_text(&b, "[data-bulk-count]", "This changes 2 users.").await;
    assert_eq!(text(&b, "[data-bulk-go]").await, "Apply to 2 users");
    click(&b, "[data-bulk-go]").await;
    filter_status(&b, "disabled").await;
    wait_text(&b, "main .page-head .muted", "5 in all").await;
    drop(b);
    drop(panel);
}
