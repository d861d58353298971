//! The browser harness drives a real headless Chromium through chromedriver against
//! a page served from 127.0.0.1: clicks, typing, a pointer-events drag, a key that
//! submits a form, waits, a screenshot and the console's errors.
//!
//! This needs Debian's chromium and chromium-driver: `cargo xtask peers` installs
//! them (`cargo xtask test` does that first); without them it fails saying so. It is
//! one test so that it starts one Chromium.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use switchyard_testkit::browser::DEFAULT_WAIT;
use switchyard_testkit::{Browser, LOCALHOST};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// A button counting its clicks, a form whose submit shows the input's value, a box
/// dragged with pointer events (it follows the pointer, as a UI's would) onto a
/// zone that records the drop, an element shown late, and a console error.
const PAGE: &str = r#"<!doctype html>
<html><head><title>testkit browser</title><link rel="icon" href="data:,">
<style>
  body { margin: 0; font: 16px sans-serif; }
  #box { position: absolute; left: 40px; top: 200px; width: 80px; height: 80px;
         background: #36c; touch-action: none; }
  #zone { position: absolute; left: 600px; top: 180px; width: 200px; height: 150px;
          border: 2px dashed #999; }
  #late { display: none; }
</style></head>
<body>
<button id="count">Click me</button> <span id="clicks">0</span>
<form id="form"><input id="name" value="placeholder"></form>
<p id="submitted"></p>
<div id="box"></div><div id="zone">drop here</div><p id="dropped"></p>
<p id="late">here now</p>
<script>
  console.error('boom');
  const $ = (id) => document.getElementById(id);
  let clicks = 0;
  $('count').addEventListener('click', () => { $('clicks').textContent = String(++clicks); });
  $('form').addEventListener('submit', (e) => {
    e.preventDefault();
    $('submitted').textContent = 'submitted: ' + $('name').value;
  });
  const box = $('box'), zone = $('zone');
  let grab = null, moves = 0;
  box.addEventListener('pointerdown', (e) => {
    grab = { x: e.clientX - box.offsetLeft, y: e.clientY - box.offsetTop };
    moves = 0;
    box.setPointerCapture(e.pointerId);
  });
  box.addEventListener('pointermove', (e) => {
    if (!grab) return;
    moves++;
    box.style.left = (e.clientX - grab.x) + 'px';
    box.style.top = (e.clientY - grab.y) + 'px';
  });
  box.addEventListener('pointerup', (e) => {
    if (!grab) return;
    grab = null;
    const r = zone.getBoundingClientRect();
    const inside = e.clientX >= r.left && e.clientX <= r.right
      && e.clientY >= r.top && e.clientY <= r.bottom;
    $('dropped').textContent = inside ? 'dropped after ' + moves + ' moves' : 'missed';
  });
  setTimeout(() => { $('late').style.display = 'block'; }, 300);
</script>
</body></html>"#;

/// Serves [`PAGE`] for every request on 127.0.0.1; its URL.
async fn serve_page() -> Result<String> {
    let listener = TcpListener::bind((LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                // One request per connection: read up to the end of its head.
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    Ok(format!("http://{addr}/"))
}

#[tokio::test]
async fn the_browser_clicks_types_drags_presses_keys_and_reads_the_console() -> Result<()> {
    let url = serve_page().await?;
    let browser = Browser::start().await?;
    browser.goto(&url).await?;

    // find, click, text
    let button = browser.find("#count").await?;
    assert_eq!(button.text().await?, "Click me");
    button.click().await?;
    button.click().await?;
    browser
        .wait_until_text("#clicks", "2", DEFAULT_WAIT)
        .await?;
    assert_eq!(button.attr("id").await?.as_deref(), Some("count"));

    // clear, send_keys, press Enter submits the form
    let name = browser.find("#name").await?;
    name.clear().await?;
    name.send_keys("alice").await?;
    browser.press("Enter").await?;
    let submitted = browser
        .wait_until_text("#submitted", "submitted: alice", DEFAULT_WAIT)
        .await?;
    assert_eq!(submitted.text().await?, "submitted: alice");

    // drag with pointer events: the box follows the pointer onto the zone
    let (from, to) = (browser.find("#box").await?, browser.find("#zone").await?);
    browser.drag(&from, &to).await?;
    let dropped = browser
        .wait_until_text("#dropped", "dropped after", DEFAULT_WAIT)
        .await?
        .text()
        .await?;
    let moves: u32 = dropped
        .trim_start_matches("dropped after ")
        .trim_end_matches(" moves")
        .parse()?;
    assert!(moves >= 5, "the drag made only {moves} pointermove events");

    // waits: one for an element shown late, one that times out and says where
    browser.wait_for("#late", DEFAULT_WAIT).await?;
    let err = format!(
        "{:#}",
        browser
            .wait_for("#never", Duration::from_millis(200))
            .await
            .unwrap_err()
    );
    assert!(err.contains("`#never`") && err.contains(&url), "{err}");
    assert!(browser.find_all(".none").await?.is_empty());

    // execute, set_window_size
    browser.set_window_size(800, 600).await?;
    let width = browser
        .execute("return window.innerWidth + arguments[0];", vec![json!(1)])
        .await?;
    assert_eq!(width, json!(801));

    // screenshot
    let dir = tempfile::tempdir()?;
    let png = dir.path().join("shots/page.png");
    browser.screenshot(&png).await?;
    let bytes = std::fs::read(&png)?;
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");

    // the console's errors, emptied by reading
    let errors = browser.console_errors().await?;
    assert!(errors.iter().any(|e| e.contains("boom")), "{errors:?}");
    assert!(browser.console_errors().await?.is_empty());
    Ok(())
}
