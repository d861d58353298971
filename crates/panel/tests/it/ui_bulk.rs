//! The users page at scale in a real headless Chromium: pages of 100 with the total
//! the filter names, a status filter, and a change to the selected users, counted
//! first, then applied; a plan made on its page fills the new user form.

use crate::live;
use crate::ui_common::{click, log_in, pick, text, type_into, unlabelled};

use serde_json::Value;
use switchyard_panel::store::{UserInput, UserQuery};
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_made_on_its_page_fills_the_new_user_form() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let eu = store.create_cluster("eu", live::now()).await.unwrap().id;
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    click(&b, "nav a[href=\"#/plans\"]").await;
    click(&b, "[data-new-plan]").await;
    type_into(&b, "dialog[open] input[name=name]", "Monthly").await;
    type_into(&b, "dialog[open] input[name=traffic_limit]", "50").await;
    pick(&b, "reset_strategy", "month_from_start").await;
    type_into(&b, "dialog[open] input[name=expiry_days]", "30").await;
    type_into(&b, "dialog[open] input[name=device_limit]", "2").await;
    click(
        &b,
        &format!("dialog[open] input[name=plan_clusters][value=\"{eu}\"]"),
    )
    .await;
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the plan form");
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_for("tr[data-plan=Monthly]", DEFAULT_WAIT)
        .await
        .unwrap();

    click(&b, "nav a[href=\"#/users\"]").await;
    click(&b, "[data-new-user]").await;
    b.wait_for("dialog[open] select[name=plan]", DEFAULT_WAIT)
        .await
        .unwrap();
    let plan = store.plans().await.unwrap()[0].id;
    pick(&b, "plan", &plan.to_string()).await;
    type_into(&b, "dialog[open] input[name=username]", "alice").await;
    let before = live::now();
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_for("table.users .username", DEFAULT_WAIT)
        .await
        .unwrap();
    let alice = store
        .user_page(&UserQuery::default(), None, live::now())
        .await
        .unwrap()
        .0
        .remove(0);
    assert_eq!(alice.traffic_limit, Some(50 << 30));
    assert_eq!(alice.device_limit, Some(2));
    assert_eq!(alice.clusters, Some(vec![eu]));
    // The form's expiry is to the minute, 30 days on.
    let expires = alice.expires_ms.unwrap();
    let want = before + 30 * 86_400_000;
    assert!(
        (want - 120_000..=want + 60_000).contains(&expires),
        "{expires} vs {want}"
    );
    drop(b);
    drop(panel);
}
