//! What the browser tests of the web UI share: clicking and typing once an element is
//! on screen, the controls without a label, the first-run password, where screenshots go.

use std::path::PathBuf;

use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

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

/// Types `text` into the element `css` names, once it is on screen.
pub(crate) async fn type_into(b: &Browser, css: &str, text: &str) {
    b.wait_for(css, DEFAULT_WAIT)
        .await
        .unwrap()
        .send_keys(text)
        .await
        .unwrap_or_else(|e| panic!("{css}: {e:#}"));
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
pub(crate) fn password(dir: &std::path::Path) -> String {
    let file =
        std::fs::read_to_string(dir.join("panel").join(switchyard_panel::run::PASSWORD_FILE))
            .unwrap();
    file.lines()
        .find_map(|l| l.strip_prefix("password: "))
        .unwrap()
        .trim()
        .to_owned()
}
