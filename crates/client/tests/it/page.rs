//! The client's local page in a real browser (headless Chromium): the servers of the
//! subscription in queue order with the current one, marks by right-click and by a
//! long press, the refusal of the last unmarked server shown next to the table,
//! "Done" moving Auto off a marked current server, a server's name shown as text
//! (never HTML), and the page's guards (a foreign `Host`, a `POST` without its
//! header). The servers are closed ports: nothing here needs them to answer.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_client::auto::{AutoSettings, Inputs, Status, SubscriptionServers};
use switchyard_client::probe::ProbeUrl;
use switchyard_client::{Outbound, Proxy};
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTransport};
use switchyard_testkit::browser::Browser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const XSS: &str = "<img src=x onerror=alert(1)>";

fn entry(name: &str, port: u16) -> Entry {
    Entry {
        name: name.into(),
        server: "127.0.0.1".into(),
        port,
        protocol: EntryProtocol::Vless {
            uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
            flow: None,
        },
        transport: EntryTransport::Tcp,
        tls: None,
        route: None,
    }
}

/// One raw HTTP/1.1 request to the page; the status code and the body.
async fn raw(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    let code = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_queue_and_marks_servers_by_right_click_and_long_press() {
    let servers: Vec<Arc<Outbound>> = [entry("Alpha", 9), entry("Beta", 7), entry(XSS, 5)]
        .into_iter()
        .map(|e| Arc::new(Outbound::new(e).unwrap()))
        .collect();
    let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let status = Arc::new(Mutex::new(Status::default()));
    let (calls, control) = tokio::sync::mpsc::unbounded_channel();
    let settings = AutoSettings::new(
        switchyard_auto::AutoConfig::default(),
        ProbeUrl::parse("http://127.0.0.1:9/").unwrap(),
    );
    tokio::spawn(switchyard_client::auto::run(
        proxy,
        vec![SubscriptionServers {
            name: "http://panel.test/sub/x".into(),
            url: None,
            update_interval: None,
            servers,
        }],
        settings,
        Inputs {
            failed: tokio::sync::mpsc::unbounded_channel().1,
            control,
            network: None,
        },
        status.clone(),
    ));
    let addr = switchyard_client::page::serve("127.0.0.1:0".parse().unwrap(), calls.clone())
        .await
        .unwrap();
    assert!(
        switchyard_client::page::serve("10.0.0.1:0".parse().unwrap(), calls)
            .await
            .is_err(),
        "the page serves loopback only"
    );

    // The guards, before any browser.
    let (code, body) = raw(
        addr,
        "POST /api/done HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = raw(
        addr,
        "GET /api/status HTTP/1.1\r\nHost: rebound.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = raw(
        addr,
        "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("content-security-policy: default-src 'none'"),
        "{body}"
    );

    let b = Browser::start().await.unwrap();
    b.goto(&format!("http://{addr}/")).await.unwrap();
    let wait = Duration::from_secs(10);
    b.wait_until_text("#summary", "Connected through Alpha", wait)
        .await
        .unwrap();
    let row = |name: &str| format!("tr.server[data-name=\"{name}\"]");
    let alpha = b.wait_for(&row("Alpha"), wait).await.unwrap();
    assert!(alpha.text().await.unwrap().contains("current"));
    // The third server's name is text: no image element, the name shown as typed.
    let names: Vec<String> = {
        let mut v = Vec::new();
        for cell in b.find_all("td.name").await.unwrap() {
            v.push(cell.text().await.unwrap());
        }
        v
    };
    assert_eq!(names, ["Alpha", "Beta", XSS]);
    assert!(b.find_all("img").await.unwrap().is_empty());

    // Right-click marks the current server; "Done" moves Auto to the best of the rest.
    b.right_click(&alpha).await.unwrap();
    b.wait_until_text(&row("Alpha"), "marked", wait)
        .await
        .unwrap();
    b.find("#done").await.unwrap().click().await.unwrap();
    b.wait_until_text("#summary", "Connected through Beta", wait)
        .await
        .unwrap();
    assert_eq!(status.lock().unwrap().current.as_deref(), Some("Beta"));

    // A long press marks the third; the last unmarked one is refused, and the page
    // says why.
    let third = b
        .find(&format!(
            "tr.server[data-name=\"{}\"]",
            XSS.replace('"', "\\\"")
        ))
        .await
        .unwrap();
    b.long_press(&third, Duration::from_millis(800))
        .await
        .unwrap();
    b.wait_until_text(
        &format!("tr.server[data-name=\"{}\"]", XSS.replace('"', "\\\"")),
        "marked",
        wait,
    )
    .await
    .unwrap();
    let beta = b.find(&row("Beta")).await.unwrap();
    b.right_click(&beta).await.unwrap();
    b.wait_until_text("#error", "is the last unmarked server", wait)
        .await
        .unwrap();
    assert!(
        !b.find(&row("Beta"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
            .contains("marked")
    );

    // The keyboard does it too: the row's button unmarks Alpha.
    let button = b
        .find(&format!("{} button.mark", row("Alpha")))
        .await
        .unwrap();
    assert_eq!(button.text().await.unwrap(), "Unmark");
    button.click().await.unwrap();
    b.wait_until_text(&format!("{} button.mark", row("Alpha")), "Mark", wait)
        .await
        .unwrap();
    // The one refusal (422 from /api/mark) is the only thing the console reports.
    let errors = b.console_errors().await.unwrap();
    assert!(
        errors.len() == 1 && errors[0].contains("/api/mark") && errors[0].contains("422"),
        "{errors:?}"
    );

    let shots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    b.screenshot(shots.join("client-page.png")).await.unwrap();
}
