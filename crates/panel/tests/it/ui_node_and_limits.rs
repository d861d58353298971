//! In a real headless Chromium: the user form's address limit (labelled, saved, shown
//! under the user's name, refused values named next to the field), and a joined
//! server's **Replace node…** (asked first, then a new join command; the panel forgot
//! the old node's pin).

use crate::live;
use crate::ui_common::{click, log_in, type_into};

use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

/// The text of the label of the control `css` names.
async fn label(b: &Browser, css: &str) -> String {
    let v = b
        .execute(
            &format!(
                "const e = document.querySelector({}); return e && e.labels && e.labels.length ? e.labels[0].textContent : '';",
                serde_json::to_string(css).unwrap()
            ),
            vec![],
        )
        .await
        .unwrap();
    v.as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_limit_field_and_replacing_a_node_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let cluster = store
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    let server = live::server(&panel, cluster, "de-1").await;
    // The server's node joined (its pin stored, as an enrollment does).
    store
        .pin_server(server, "cert:00", "de-1", "0.1.0")
        .await
        .unwrap();
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;

    // The user form: a labelled field; 0 is refused next to it; 2 is saved and shown.
    b.goto(&format!("http://{http}/#/users")).await.unwrap();
    click(&b, "[data-new-user]").await;
    type_into(&b, "dialog[open] input[name=username]", "bob").await;
    let field = "dialog[open] input[name=address_limit]";
    assert_eq!(label(&b, field).await, "Addresses at once");
    type_into(&b, field, "0").await;
    // The browser's own check would stop 0 (min 1): the API's answer is what is shown.
    b.execute(
        "document.querySelector('dialog[open] input[name=address_limit]').removeAttribute('min');",
        vec![],
    )
    .await
    .unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    let said = b
        .wait_until_text(
            "dialog[open] [data-field=address_limit] .error",
            "1 to 1000",
            DEFAULT_WAIT,
        )
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(said.contains("must be 1 to 1000"), "{said}");
    let input = b.find(field).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys("2").await.unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(
        "tr[data-user] [data-user-limits]",
        "2 addresses at once per server",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    let users = store.users(&Default::default(), live::now()).await.unwrap();
    assert_eq!(users[0].address_limit, Some(2));
    // Editing shows the value.
    click(&b, "tr[data-user] .row-actions button:nth-child(2)").await;
    let shown = b
        .wait_for(field, DEFAULT_WAIT)
        .await
        .unwrap()
        .attr("value")
        .await
        .unwrap();
    assert_eq!(shown.as_deref(), Some("2"));
    b.press("Escape").await.unwrap();

    // Replace node: asked first, then the join command for the node that takes its
    // place; the panel forgot the old node's pin.
    b.goto(&format!("http://{http}/#/clusters/{cluster}"))
        .await
        .unwrap();
    click(&b, &format!("[data-replace-node=\"{server}\"]")).await;
    let asked = b
        .wait_until_text("dialog[open] p", "cut off", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(asked.contains("cannot connect again"), "{asked}");
    assert!(
        store.server_pin(server).await.unwrap().is_some(),
        "nothing happens before the confirmation"
    );
    click(&b, "dialog[open] [data-confirm]").await;
    let command = b
        .wait_for("[data-join-command]", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        command.starts_with("switchyard node join syj2."),
        "{command}"
    );
    let install = b
        .wait_for("[data-install-command]", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        install.starts_with("curl -fsSL 'http://127.0.0.1:")
            && install.ends_with(&format!(
                "/install.sh' | sh -s -- {}",
                command.strip_prefix("switchyard node join ").unwrap()
            )),
        "{install}"
    );
    b.wait_until_text(".join-out", "takes de-1's place", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(store.server_pin(server).await.unwrap(), None);
    // The one error is the refused 0, answered 422 on purpose above.
    let errors: Vec<String> = b
        .console_errors()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| !e.contains("/api/v1/users - Failed to load resource: the server responded with a status of 422"))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    panel.shutdown().await;
}
