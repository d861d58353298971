//! Admins and a reseller's limited view in a real headless Chromium against a real
//! panel on 127.0.0.1: the owner adds a reseller with a quota on the Admins page;
//! the reseller, logged in, sees their users and their account alone, makes a user
//! in their cluster, and is told next to the field when the quota is full.

use crate::live;
use crate::ui_common::{
    cancel_dialog, click, log_in, password, pick, shots, type_into, unlabelled,
};

use serde_json::Value;
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

const PASSWORD: &str = "ann's long password";

/// The texts of the elements `css` names.
async fn texts(b: &Browser, css: &str) -> Vec<String> {
    let v = b
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent.trim());",
            vec![Value::from(css)],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

/// Waits until the audit table has `n` rows.
async fn wait_rows(b: &Browser, n: usize) {
    let deadline = std::time::Instant::now() + DEFAULT_WAIT;
    while b.find_all("[data-audit] tbody tr").await.unwrap().len() != n {
        assert!(std::time::Instant::now() < deadline, "{n} audit rows");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Sets the page's select `name` to `value` and tells its form.
async fn pick_in(b: &Browser, name: &str, value: &str) {
    b.execute(
        "const s = document.querySelector(`main select[name=\"${arguments[0]}\"]`); \
         s.value = arguments[1]; s.dispatchEvent(new Event('change', { bubbles: true }));",
        vec![Value::from(name), Value::from(value)],
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_adds_a_reseller_who_sees_only_their_users() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let eu = store.create_cluster("eu", live::now()).await.unwrap().id;
    store.create_cluster("us", live::now()).await.unwrap();
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;

    // The owner's Admins page: a reseller with one user, in eu alone.
    click(&b, "nav a[href=\"#/admins\"]").await;
    click(&b, "[data-new-admin]").await;
    type_into(&b, "dialog[open] input[name=username]", "ann").await;
    type_into(&b, "dialog[open] input[name=password]", PASSWORD).await;
    pick(&b, "role", "reseller").await;
    type_into(&b, "dialog[open] input[name=\"quota.max_users\"]", "1").await;
    click(
        &b,
        &format!("dialog[open] input[name=\"quota.clusters\"][value=\"{eu}\"]"),
    )
    .await;
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the admin form");
    b.screenshot(&shots().join("admins-new-reseller.png"))
        .await
        .unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_for("tr[data-admin=ann] td[data-role=reseller]", DEFAULT_WAIT)
        .await
        .unwrap();
    let row = texts(&b, "tr[data-admin=ann] td").await;
    assert_eq!(row[1], "0 of 1", "{row:?}");
    let ann = store.admin_by_username("ann").await.unwrap().unwrap().0;
    let quota = store.quota(ann.id).await.unwrap();
    assert_eq!((quota.max_users, quota.clusters), (Some(1), Some(vec![eu])));

    // The reseller: their users and account alone.
    click(&b, "nav button.link").await;
    type_into(&b, "form.login input[name=username]", "ann").await;
    type_into(&b, "form.login input[name=password]", PASSWORD).await;
    b.press("Enter").await.unwrap();
    b.wait_for("[data-new-user]", DEFAULT_WAIT).await.unwrap();
    let nav = texts(&b, "nav#nav a:not(.brand), nav#nav .who").await;
    assert_eq!(nav, ["Users", "Account", "ann · reseller"]);
    assert!(b.find_all("[data-import]").await.unwrap().is_empty());
    click(&b, "[data-new-user]").await;
    type_into(&b, "dialog[open] input[name=username]", "u1").await;
    // Only eu is offered: the quota names it.
    click(&b, "dialog[open] input[name=all_clusters]").await;
    let offered = texts(&b, "dialog[open] [data-field=clusters] div label").await;
    assert_eq!(offered, ["eu"]);
    click(&b, "dialog[open] input[name=clusters]").await;
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_for("table.users .username", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(texts(&b, "table.users .username").await, ["u1"]);
    assert_eq!(
        texts(&b, "[data-quota]").await,
        ["Your quota: 1 of 1 users."]
    );
    // A second user is over the quota: said next to the name.
    click(&b, "[data-new-user]").await;
    type_into(&b, "dialog[open] input[name=username]", "u2").await;
    click(&b, "dialog[open] input[name=all_clusters]").await;
    click(&b, "dialog[open] input[name=clusters]").await;
    click(&b, "dialog[open] button[type=submit]").await;
    let error = b
        .wait_for(
            "dialog[open] [data-field=username].invalid .error",
            DEFAULT_WAIT,
        )
        .await
        .unwrap();
    assert_eq!(
        error.text().await.unwrap(),
        "your quota allows 1 user: none is left to make"
    );
    b.screenshot(&shots().join("reseller-users.png"))
        .await
        .unwrap();
    // The owner reads what ann did in the audit log, and filters by her.
    cancel_dialog(&b).await;
    click(&b, "nav button.link").await;
    type_into(&b, "form.login input[name=username]", "admin").await;
    type_into(&b, "form.login input[name=password]", &password(dir.path())).await;
    b.press("Enter").await.unwrap();
    click(&b, "nav a[href=\"#/audit\"]").await;
    b.wait_for("[data-audit] tbody tr", DEFAULT_WAIT)
        .await
        .unwrap();
    let mut newest = Vec::new();
    for n in 1..=4 {
        let row = texts(&b, &format!("[data-audit] tbody tr:nth-child({n}) td")).await;
        newest.push(row[1..].join(" "));
    }
    // Her refused second user is not there: only changes made are.
    assert_eq!(
        newest,
        [
            "admin log in session admin",
            "ann log out session ann",
            "ann create user u1",
            "ann log in session ann"
        ]
    );
    pick_in(&b, "admin_id", &ann.id.to_string()).await;
    wait_rows(&b, 3).await;
    let admins: Vec<String> = texts(&b, "[data-audit] tbody tr td:nth-child(2)").await;
    assert_eq!(
        admins,
        ["ann", "ann", "ann"],
        "her logout, u1 and her login"
    );
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the audit page");
    let owned = store
        .owned_users(ann.id, &Default::default(), live::now())
        .await
        .unwrap();
    assert_eq!(owned.1, 1);
    assert_eq!(owned.0[0].clusters, Some(vec![eu]));
    drop(b);
    drop(panel);
}
