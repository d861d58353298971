//! In a real headless Chromium: the Templates page. A sing-box template with a syntax
//! error is refused with its line and column next to the box; a valid one is saved;
//! emptied, the panel's own config is back.

use crate::live;
use crate::ui_common::{click, log_in, type_into, unlabelled};

use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

const BOX: &str = "form[data-template=\"sing-box\"] textarea";
const SAVE: &str = "form[data-template=\"sing-box\"] button[type=submit]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_through_the_page_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    // The panel opens on a cluster's topology once logged in.
    store.create_cluster("Europe", live::now()).await.unwrap();
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    click(&b, "nav a[href=\"#/templates\"]").await;
    b.wait_for(BOX, DEFAULT_WAIT).await.unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the templates page"
    );

    type_into(&b, BOX, "{\n  \"log\": {\"level\": \"info\",}\n}").await;
    click(&b, SAVE).await;
    b.wait_until_text(
        "form[data-template=\"sing-box\"] [data-field=template] .error",
        "line 2, column 27: trailing comma",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    assert_eq!(store.setting("template:sing-box").await.unwrap(), None);

    let text = b.find(BOX).await.unwrap();
    text.clear().await.unwrap();
    text.send_keys("{\"log\": {\"level\": \"info\"}}")
        .await
        .unwrap();
    click(&b, SAVE).await;
    live::wait_until("the template is saved", 10, || async {
        store.setting("template:sing-box").await.unwrap().as_deref()
            == Some("{\"log\": {\"level\": \"info\"}}")
    })
    .await;

    b.find(BOX).await.unwrap().clear().await.unwrap();
    click(&b, SAVE).await;
    live::wait_until("the template is cleared", 10, || async {
        store.setting("template:sing-box").await.unwrap().as_deref() == Some("")
    })
    .await;
    panel.shutdown().await;
}
