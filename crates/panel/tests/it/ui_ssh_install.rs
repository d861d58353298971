//! In a real headless Chromium: a server's **Install over SSH…** dialog. Its fields
//! are labelled, the private key's only shown when chosen; **Connect** sends the
//! address and login alone, and the steps appear live: `connecting` running while a
//! listener on 127.0.0.1 says nothing, then, against a port where nothing listens,
//! `connecting` failed with why, in the dialog and in the API. The password typed is
//! in no answer. (The host key's confirmation and the install itself run against a
//! real OpenSSH server in `switchyard`'s `install_ssh_vps::`.)

use crate::live;
use crate::ui_common::{click, log_in, pick, type_into, unlabelled};

use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

const SECRET: &str = "s3cret-typed-in-the-browser";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ssh_install_dialog_shows_its_steps_live_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let cluster = store
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    let server = live::server(&panel, cluster, "de-1").await;
    // A listener that takes connections and says nothing: SSH's handshake waits.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_at = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    // A port where nothing listens.
    let closed = switchyard_testkit::free_port().unwrap();

    let token = live::api_token(http, &dir.path().join("panel")).await;
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    b.goto(&format!("http://{http}/#/clusters/{cluster}"))
        .await
        .unwrap();
    click(&b, &format!("[data-ssh-install=\"{server}\"]")).await;
    b.wait_for("dialog[open] [data-ssh-form]", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the SSH dialog");
    let key = "dialog[open] textarea[name=private_key]";
    let password = "dialog[open] input[name=password]";
    assert!(!b.find(key).await.unwrap().is_displayed().await.unwrap());
    assert!(
        b.find(password)
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap()
    );
    pick(&b, "auth", "key").await;
    assert!(b.find(key).await.unwrap().is_displayed().await.unwrap());
    assert!(
        !b.find(password)
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap()
    );
    pick(&b, "auth", "password").await;
    type_into(&b, password, SECRET).await;

    // Connect to the silent listener: `connecting` shows running.
    let address = b.find("dialog[open] input[name=address]").await.unwrap();
    address.clear().await.unwrap();
    address.send_keys(&silent_at.to_string()).await.unwrap();
    click(&b, "dialog[open] [data-ssh-connect]").await;
    b.wait_for(
        "dialog[open] [data-step=connecting][data-state=running]",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    let job = live::http(
        http,
        "GET",
        &format!("/api/v1/servers/{server}/ssh-install"),
        &token,
        None,
    )
    .await;
    assert_eq!(job.1["state"], "running", "{}", job.1);
    assert!(!job.1.to_string().contains(SECRET), "{}", job.1);
    held.abort();
    // The silent listener gone, its connection drops: the step fails, and is shown.
    b.wait_for(
        "dialog[open] [data-step=connecting][data-state=failed]",
        std::time::Duration::from_secs(60),
    )
    .await
    .unwrap();
    let said = b
        .wait_for("dialog[open] [data-ssh-error]", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!said.is_empty());

    // Again, to a port where nothing listens: failed at once, saying why.
    let address = b.find("dialog[open] input[name=address]").await.unwrap();
    address.clear().await.unwrap();
    address
        .send_keys(&format!("127.0.0.1:{closed}"))
        .await
        .unwrap();
    click(&b, "dialog[open] [data-ssh-connect]").await;
    b.wait_until_text(
        "dialog[open] [data-ssh-error]",
        &closed.to_string(),
        std::time::Duration::from_secs(30),
    )
    .await
    .unwrap();
    let (_, job) = live::http(
        http,
        "GET",
        &format!("/api/v1/servers/{server}/ssh-install"),
        &token,
        None,
    )
    .await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["steps"][0]["name"], "connecting", "{job}");
    assert_eq!(job["steps"][0]["state"], "failed", "{job}");
    assert!(!job.to_string().contains(SECRET), "{job}");
}
