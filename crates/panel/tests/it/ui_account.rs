//! The Account page in a real headless Chromium against a real panel on 127.0.0.1:
//! every control labelled; the sessions list marks this one and revokes another (which
//! is then logged out); a read-only token with an expiry is made and only reads; a
//! wrong current password is shown next to its field, the right one changes the
//! password. No console error but the refusals the test asks for.

use crate::live;
use crate::ui_common::{click, password, shots, unlabelled};

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

/// Waits until `js` (an expression) is true on the page.
async fn wait_js(b: &Browser, js: &str, what: &str) {
    let deadline = std::time::Instant::now() + DEFAULT_WAIT;
    loop {
        if b.execute(&format!("return Boolean({js});"), vec![])
            .await
            .unwrap()
            == Value::Bool(true)
        {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {js}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn type_into(b: &Browser, css: &str, text: &str) {
    let el = b.wait_for(css, DEFAULT_WAIT).await.unwrap();
    el.clear().await.unwrap();
    el.send_keys(text).await.unwrap_or_else(|e| panic!("{e:#}"));
}

/// Logs in through the API (a second browser, as far as the panel knows); the status.
async fn api_login(http: std::net::SocketAddr, password: &str) -> u16 {
    live::http(
        http,
        "POST",
        "/api/v1/session",
        "",
        Some(&json!({"username": "admin", "password": password})),
    )
    .await
    .0
}

async fn session_rows(b: &Browser) -> usize {
    b.find_all("[data-sessions] tbody tr").await.unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_account_page_changes_the_password_and_manages_sessions_and_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let first = password(dir.path());
    let b = Browser::start().await.unwrap();
    b.goto(&format!("http://{http}/")).await.unwrap();
    type_into(&b, "form.login input[name=username]", "admin").await;
    type_into(&b, "form.login input[name=password]", &first).await;
    b.press("Enter").await.unwrap();
    click(&b, "nav a[href=\"#/account\"]").await;
    b.wait_for("[data-sessions] tr[data-current]", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the account page"
    );
    assert_eq!(session_rows(&b).await, 1);

    // Another session (a script logging in); revoke it from here.
    assert_eq!(api_login(http, &first).await, 200);
    let other = live::api_token(http, &dir.path().join("panel")).await;
    b.goto(&format!("http://{http}/#/clusters")).await.unwrap();
    click(&b, "nav a[href=\"#/account\"]").await;
    wait_js(
        &b,
        "document.querySelectorAll('[data-sessions] tbody tr').length === 3",
        "three sessions",
    )
    .await;
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "with Revoke buttons"
    );
    click(&b, "[data-sessions] tr:not([data-current]) [data-revoke]").await;
    wait_js(
        &b,
        "document.querySelectorAll('[data-sessions] tbody tr').length === 2",
        "one revoked",
    )
    .await;
    assert_eq!(
        panel
            .state
            .store()
            .admin_sessions(1, None, live::now())
            .await
            .unwrap()
            .len(),
        2
    );

    // A read-only token that expires in 30 days.
    type_into(&b, "form.token-form input[name=name]", "grafana").await;
    b.execute(
        "const f = document.querySelector('form.token-form');
         f.querySelector('select[name=scope]').value = 'read';
         f.querySelector('select[name=expires_ms]').value = '30';",
        vec![],
    )
    .await
    .unwrap();
    click(&b, "form.token-form button[type=submit]").await;
    b.wait_for("[data-secret] input[name=secret]", DEFAULT_WAIT)
        .await
        .unwrap();
    let secret = b
        .execute(
            "return document.querySelector('[data-secret] input[name=secret]').value;",
            vec![],
        )
        .await
        .unwrap();
    let secret = secret.as_str().unwrap().to_owned();
    assert!(secret.starts_with("sy_"), "{secret}");
    wait_js(
        &b,
        "[...document.querySelectorAll('[data-tokens] tr[data-token]')].some((r) => \
         r.querySelector('th').textContent === 'grafana' && r.querySelector('[data-scope=read]'))",
        "the token listed as read-only",
    )
    .await;
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "with the secret"
    );
    b.screenshot(shots().join("account.png")).await.unwrap();
    let bearer = format!("Bearer {secret}");
    let (status, _) = live::http(http, "GET", "/api/v1/users", &bearer, None).await;
    assert_eq!(status, 200);
    let (status, p) = live::http(
        http,
        "POST",
        "/api/v1/clusters",
        &bearer,
        Some(&json!({"name": "nope"})),
    )
    .await;
    assert_eq!(status, 403, "{p}");
    let admin = panel
        .state
        .store()
        .admin_by_username("admin")
        .await
        .unwrap()
        .unwrap()
        .0;
    let tokens = panel.state.store().api_tokens(admin.id).await.unwrap();
    let grafana = tokens.iter().find(|t| t.name == "grafana").unwrap();
    let days = (grafana.expires_ms.unwrap() - live::now()) / 86_400_000;
    assert!((29..=30).contains(&days), "{grafana:?}");

    // The password: a wrong current one is shown by its field.
    const NEW: &str = "a new and longer pass phrase";
    type_into(
        &b,
        "[data-password-form] input[name=current_password]",
        "not it",
    )
    .await;
    type_into(&b, "[data-password-form] input[name=new_password]", NEW).await;
    type_into(&b, "[data-password-form] input[name=repeat_password]", NEW).await;
    click(&b, "[data-password-form] button[type=submit]").await;
    let error = b
        .wait_until_text(
            "[data-field=current_password] .error",
            "is not your current password",
            DEFAULT_WAIT,
        )
        .await;
    assert!(error.is_ok(), "{error:?}");
    type_into(
        &b,
        "[data-password-form] input[name=current_password]",
        &first,
    )
    .await;
    click(&b, "[data-password-form] button[type=submit]").await;
    b.wait_until_text(".toast", "Password changed", DEFAULT_WAIT)
        .await
        .unwrap();
    // This browser stays in; the other session ended; the new password logs in.
    wait_js(
        &b,
        "document.querySelectorAll('[data-sessions] tbody tr').length === 1",
        "only this session",
    )
    .await;
    assert_eq!(api_login(http, &first).await, 401);
    assert_eq!(api_login(http, NEW).await, 200);
    let (status, _) = live::http(http, "GET", "/api/v1/users", &other, None).await;
    assert_eq!(status, 200, "tokens outlive a password change");

    let errors: Vec<String> = b
        .console_errors()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| !e.contains("status of 422"))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    panel.shutdown().await;
}
