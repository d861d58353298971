//! What the browser tests of the web UI share: clicking, typing and picking once an
//! element is on screen, the controls without a label, the first-run password, logging
//! in, the new inbound form open on a cluster's page, where screenshots go.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use switchyard_panel::Panel;
use switchyard_panel::model::Inbound;
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;
use tempfile::TempDir;

use crate::live;

/// Where the browser tests put their screenshots (under the workspace's target dir).
pub(crate) fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Clicks the element `css` names, once it is on screen.
pub(crate) async fn click(b: &Browser, css: &str) {
    b.wait_for(css, DEFAULT_WAIT)
        .await
        .unwrap()
        .click()
        .await
        .unwrap_or_else(|e| panic!("{css}: {e:#}"));
}

/// The text of the element `css` names, once it is on screen.
pub(crate) async fn text(b: &Browser, css: &str) -> String {
    b.wait_for(css, DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Types `text` into the element `css` names, once it is on screen.
pub(crate) async fn type_into(b: &Browser, css: &str, text: &str) {
    b.wait_for(css, DEFAULT_WAIT)
        .await
        .unwrap()
        .send_keys(text)
        .await
        .unwrap_or_else(|e| panic!("{css}: {e:#}"));
}

/// Sets the open dialog's select `name` to `value` and tells the form, as a person's
/// pick would.
pub(crate) async fn pick(b: &Browser, name: &str, value: &str) {
    b.execute(
        "const s = document.querySelector(`dialog[open] select[name=\"${arguments[0]}\"]`); \
         s.value = arguments[1]; s.dispatchEvent(new Event('change'));",
        vec![serde_json::json!(name), serde_json::json!(value)],
    )
    .await
    .unwrap();
}

/// Controls on the page without an accessible name (a label, `aria-label`, or text
/// for a button), described for the failure message.
pub(crate) async fn unlabelled(b: &Browser) -> Vec<String> {
    let v = b
        .execute(
            "return [...document.querySelectorAll('input, select, textarea, button')]
               .filter((e) => e.offsetParent !== null || e.closest('dialog[open]'))
               .filter((e) => e.tagName === 'BUTTON'
                 ? !(e.textContent.trim() || e.getAttribute('aria-label'))
                 : !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
               .map((e) => e.outerHTML.slice(0, 120));",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

/// The password the panel generated on its first start.
pub(crate) fn password(dir: &Path) -> String {
    let file =
        std::fs::read_to_string(dir.join("panel").join(switchyard_panel::run::PASSWORD_FILE))
            .unwrap();
    file.lines()
        .find_map(|l| l.strip_prefix("password: "))
        .unwrap()
        .trim()
        .to_owned()
}

/// Logs in as the admin with the first-run password of the panel whose data is under
/// `dir`, waits for the dashboard the panel opens on, and opens its first cluster's
/// topology from there.
pub(crate) async fn log_in(b: &Browser, http: SocketAddr, dir: &Path) {
    b.goto(&format!("http://{http}/")).await.unwrap();
    type_into(b, "form.login input[name=username]", "admin").await;
    type_into(b, "form.login input[name=password]", &password(dir)).await;
    b.press("Enter").await.unwrap();
    click(b, "[data-dashboard] a[data-cluster]").await;
    b.wait_for(".topology", DEFAULT_WAIT).await.unwrap();
}

/// A panel with a cluster "Europe" of one server "de-1", and Chromium logged in as the
/// admin with the cluster's new inbound form open (VLESS over TCP at first).
pub(crate) struct InboundForm {
    /// The browser, its dialog open.
    pub(crate) b: Browser,
    /// The panel.
    pub(crate) panel: Panel,
    /// The cluster "Europe".
    pub(crate) cluster: i64,
    /// The server "de-1", the form's first choice.
    pub(crate) server: i64,
    /// The panel's data; dropped last, after the panel has stopped.
    _dir: TempDir,
}

impl InboundForm {
    /// Starts the panel and the browser, logs in and opens the form, once its protocol
    /// select (shown for every protocol) is on screen.
    pub(crate) async fn open() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (panel, http) = live::panel(dir.path()).await;
        let cluster = panel
            .state
            .store()
            .create_cluster("Europe", live::now())
            .await
            .unwrap()
            .id;
        let server = live::server(&panel, cluster, "de-1").await;
        let b = Browser::start().await.unwrap();
        log_in(&b, http, dir.path()).await;
        b.goto(&format!("http://{http}/#/clusters/{cluster}"))
            .await
            .unwrap();
        click(&b, "[data-new-inbound]").await;
        b.wait_for("dialog[open] select[name=protocol]", DEFAULT_WAIT)
            .await
            .unwrap();
        Self {
            b,
            panel,
            cluster,
            server,
            _dir: dir,
        }
    }

    /// Submits the form, waits for the chip of the inbound `name`, and returns the
    /// inbounds the store then holds for the server.
    pub(crate) async fn save(&self, name: &str) -> Vec<Inbound> {
        click(&self.b, "dialog[open] button[type=submit]").await;
        self.b
            .wait_until_text(".inbound-chip .chip-name", name, DEFAULT_WAIT)
            .await
            .unwrap();
        self.panel
            .state
            .store()
            .inbounds(Some(self.server), None)
            .await
            .unwrap()
    }
}

/// Opens the edit form of the inbound `id` from its chip's menu.
pub(crate) async fn edit_inbound(b: &Browser, id: i64) {
    click(b, &format!(".inbound-chip[data-inbound=\"{id}\"]")).await;
    b.wait_for(".menu [role=menuitem]", DEFAULT_WAIT)
        .await
        .unwrap();
    b.execute(
        "[...document.querySelectorAll('.menu [role=menuitem]')] \
         .find((e) => e.textContent.startsWith('Edit inbound')).click();",
        vec![],
    )
    .await
    .unwrap();
}

/// Closes the open dialog with its Cancel button.
pub(crate) async fn cancel_dialog(b: &Browser) {
    b.execute(
        "[...document.querySelectorAll('dialog[open] button')] \
         .find((e) => e.textContent === 'Cancel').click();",
        vec![],
    )
    .await
    .unwrap();
}
