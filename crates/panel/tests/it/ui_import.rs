//! In a real headless Chromium: the users page's **Import…** dialog, every control
//! labelled; a 3x-ui database chosen with the file input, a dry run's report shown
//! with nothing kept, then the import, after which the users are listed; a file of
//! the wrong panel is refused with the reason in the dialog; the import makes the
//! source's inbounds on the server chosen. Remnawave is read by
//! its database's URL, typed into the field that takes the file's place (as Marzban
//! and PasarGuard on a database server are: the field asks for a URL of the
//! database's form).

use crate::import_remnawave::{anna_db, cluster};
use crate::import_xui::make_source;
use crate::live;
use crate::ui_common::{click, log_in, pick, unlabelled};

use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn importing_from_3x_ui_through_the_dialog_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("x-ui.db");
    make_source(&source, 21_001).await;
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let europe = store.create_cluster("Europe", live::now()).await.unwrap();
    live::server(&panel, europe.id, "fra").await;
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    b.goto(&format!("http://{http}/#/users")).await.unwrap();
    click(&b, "[data-import]").await;
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the import dialog"
    );

    // The wrong panel for the file: the reason, and nothing kept.
    b.wait_for("dialog[open] input[name=file]", DEFAULT_WAIT)
        .await
        .unwrap()
        .send_keys(source.to_str().unwrap())
        .await
        .unwrap();
    click(&b, "dialog[open] [data-dry-run]").await;
    b.wait_until_text(
        "dialog[open] .form-error",
        "the file: no alembic_version table: not a Marzban database",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();

    // The right one: a dry run's report, nothing kept.
    pick(&b, "source", "3x-ui").await;
    click(&b, "dialog[open] [data-dry-run]").await;
    b.wait_until_text(
        "dialog[open] [data-report-summary]",
        "3x-ui (schema 2.x), dry run: nothing kept: 6 users read.",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    let report = b
        .find("dialog[open] .import-report")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        report.contains("6 would be added: alice, bob, carol, dave, erin, frank"),
        "{report}"
    );
    assert!(
        report.contains("user frank: client frank: vmess is not served here"),
        "{report}"
    );
    assert!(
        store
            .users(&Default::default(), live::now())
            .await
            .unwrap()
            .is_empty()
    );

    // The import, making its inbounds on "fra", then the list has them.
    pick(&b, "server", "fra").await;
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(
        "dialog[open] [data-report-summary]",
        "3x-ui (schema 2.x): 6 users read.",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    assert_eq!(
        store
            .users(&Default::default(), live::now())
            .await
            .unwrap()
            .len(),
        6
    );
    let made = store.inbounds(None, None).await.unwrap();
    assert_eq!(made.len(), 1, "{made:?}");
    let report = b
        .find("dialog[open] .import-report")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        report.contains(&format!(
            "inbound-21001: vless over tcp (none), port 21001: made here as inbound {} on server fra",
            made[0].id
        )),
        "{report}"
    );
    // Marzban on MySQL: a URL of MySQL's form is asked for, and its absence said.
    pick(&b, "source", "marzban-mysql").await;
    let field = b
        .find("dialog[open] input[name=database_url]")
        .await
        .unwrap();
    assert!(field.is_displayed().await.unwrap());
    assert_eq!(
        field.attr("placeholder").await.unwrap().as_deref(),
        Some("mysql://USER:PASSWORD@HOST:3306/marzban")
    );
    pick(&b, "source", "pasarguard-server").await;
    assert_eq!(
        field.attr("placeholder").await.unwrap().as_deref(),
        Some("postgres://USER:PASSWORD@HOST:5432/pasarguard")
    );
    click(&b, "dialog[open] [data-dry-run]").await;
    b.wait_until_text(
        "dialog[open] .form-error",
        "Give the source panel's database URL.",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();

    // Remnawave: its database's URL instead of a file.
    let pg = cluster().await;
    let (url, _c) = anna_db(&pg, 21_003).await;
    pick(&b, "source", "remnawave").await;
    assert_eq!(
        field.attr("placeholder").await.unwrap().as_deref(),
        Some("postgres://USER:PASSWORD@HOST:5432/DB")
    );
    b.find("dialog[open] input[name=database_url]")
        .await
        .unwrap()
        .send_keys(&url)
        .await
        .unwrap();
    click(&b, "dialog[open] [data-dry-run]").await;
    b.wait_until_text(
        "dialog[open] [data-report-summary]",
        "remnawave (schema 20260815170000_add_shared_lists (Remnawave 3.0–3.3)), dry run: nothing kept: 1 users read.",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    click(
        &b,
        "dialog[open] .actions button:not([data-dry-run]):not([type=submit])",
    )
    .await;
    b.wait_until_text("tr[data-user] .username", "alice", DEFAULT_WAIT)
        .await
        .unwrap();
    let errors: Vec<String> = b
        .console_errors()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| !e.contains("/api/v1/imports/marzban") || !e.contains("422"))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    panel.shutdown().await;
}
