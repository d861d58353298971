//! The web UI in a real headless Chromium, against a real panel on 127.0.0.1 with
//! seeded data: log in (with the first-run hint), make a route with the wizard, drag
//! an inbound into it (its pipe appears, the user's next subscription lists it), drop
//! it on "Not attached" (the warning, the subscription), do the same from the
//! keyboard, reorder routes with the arrows and the drag handle (the subscription's
//! order follows), create a tunnel and see its state badge, see an API error next to
//! the field it names, a user's subscription with its QR code; values that look like
//! HTML show as text; no console error; usable at phone width. A second test seeds
//! 20 servers, 60 inbounds and 15 routes. Screenshots go to
//! `target/ui-screenshots/` (the ones in `docs/img/` are copies).

use crate::live;
use crate::ui_common::{click, log_in, shots, type_into, unlabelled};

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_panel::Panel;
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

const XSS: &str = "<img src=x onerror=window.__xss=1>";

/// The entries of the user's sing-box subscription, in order (their tags).
async fn entries(http: std::net::SocketAddr, sub: &str) -> Vec<String> {
    let (status, config) =
        live::http(http, "GET", &format!("{sub}?format=sing-box"), "", None).await;
    assert_eq!(status, 200, "{config}");
    config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| ["vless", "trojan", "shadowsocks"].contains(&o["type"].as_str().unwrap_or("")))
        .map(|o| o["tag"].as_str().unwrap().to_owned())
        .collect()
}

async fn wait_entries(http: std::net::SocketAddr, sub: &str, want: &[&str], what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = entries(http, sub).await;
        if now == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: the subscription lists {now:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

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
        if std::time::Instant::now() > deadline {
            let counts = b
                .execute(
                    "return ['.inbound-chip', '.route-box[data-route]', 'svg .member', 'svg .pipe']
                       .map((s) => s + ': ' + document.querySelectorAll(s).length).join(', ');",
                    vec![],
                )
                .await
                .unwrap();
            panic!("{what}: {js} (the page has {counts})");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A heartbeat that found `server` online with this load, as the panel stores it.
async fn heartbeat(panel: &Panel, server: i64, users_online: u64, throughput: (u64, u64)) {
    let now = live::now();
    let mut health = switchyard_panel::model::Health::new(now, Default::default());
    health.observe(now, switchyard_panel::model::Observation::Answered);
    panel
        .state
        .store()
        .report_server(
            server,
            &switchyard_panel::store::ServerReport {
                health,
                config_version: None,
                users_online,
                throughput,
                capacity: None,
                node_version: None,
                binary_sha256: None,
            },
            now,
        )
        .await
        .unwrap();
}

async fn seed_cluster(panel: &Panel, name: &str) -> i64 {
    panel
        .state
        .store()
        .create_cluster(name, live::now())
        .await
        .unwrap()
        .id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_s_everyday_flow_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let cluster = seed_cluster(&panel, "Europe").await;
    let de = live::server(&panel, cluster, "de-1").await;
    let fi = live::server(&panel, cluster, "fi-1").await;
    let now = live::now();
    let frankfurt = service
        .create_inbound(&live::vless(de, "Frankfurt", 8443, true), now)
        .await
        .unwrap();
    let helsinki = service
        .create_inbound(&live::vless(fi, "Helsinki", 8443, true), now)
        .await
        .unwrap();
    service
        .create_inbound(&live::vless(fi, XSS, 9443, true), now)
        .await
        .unwrap();
    let mut alice = live::user("alice");
    alice.note = XSS.into();
    let alice = service.create_user(&alice, now).await.unwrap();
    let sub = alice.subscription_path.clone();
    wait_entries(http, &sub, &["Frankfurt"], "seeded").await;
    // de-1 answered a heartbeat: one point of history for its charts.
    heartbeat(&panel, de, 3, (125_000, 250_000)).await;

    let b = Browser::start().await.unwrap();
    b.goto(&format!("http://{http}/")).await.unwrap();
    let hint = b
        .wait_for("[data-first-run]", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        hint.contains(switchyard_panel::run::PASSWORD_FILE),
        "{hint}"
    );
    b.screenshot(shots().join("login.png")).await.unwrap();
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the login page");
    log_in(&b, http, dir.path()).await;
    // The seeded state: the default route holds Frankfurt; two inbounds are loose.
    let warning = b.wait_for("[data-warning]", DEFAULT_WAIT).await.unwrap();
    assert_eq!(
        warning.text().await.unwrap(),
        "⚠ 2 inbound(s) are not in any route — clients can't see them yet"
    );
    // Values that look like HTML are text.
    let chips = b.find_all("[data-inbound] .chip-name").await.unwrap();
    let mut names = Vec::new();
    for c in &chips {
        names.push(c.text().await.unwrap());
    }
    assert!(names.contains(&XSS.to_owned()), "{names:?}");
    assert_eq!(
        b.execute(
            "return [window.__xss === undefined, document.querySelector('img[src=\"x\"]') === null];",
            vec![]
        )
        .await
        .unwrap(),
        json!([true, true])
    );

    // The wizard: an empty route, dashed, with no pipe.
    click(&b, "[data-new-route]").await;
    b.wait_for("dialog[open] input[name=name]", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the route wizard"
    );
    type_into(&b, "dialog[open] input[name=name]", "Nordics").await;
    type_into(&b, "dialog[open] input[name=flag]", "FI").await;
    click(&b, "dialog[open] input[value=round_robin]").await;
    click(&b, "dialog[open] button[type=submit]").await;
    let nordics = b
        .wait_until_text(
            ".route-box[data-route] .route-name",
            "Nordics",
            DEFAULT_WAIT,
        )
        .await
        .unwrap();
    drop(nordics);
    let routes = panel.state.store().routes(cluster).await.unwrap();
    let (default_id, nordics_id) = (routes[0].id, routes[1].id);
    assert_eq!(routes[1].name, "Nordics");
    let route_box = format!(".route-box[data-route=\"{nordics_id}\"]");
    let pipe = |id: i64| format!("document.querySelector('svg .pipe[data-pipe=\"{id}\"]')");
    wait_js(
        &b,
        &format!("document.querySelector('{route_box}.empty')"),
        "dashed",
    )
    .await;
    wait_js(&b, &format!("{} === null", pipe(nordics_id)), "no pipe").await;
    wait_js(
        &b,
        &format!("{} !== null", pipe(default_id)),
        "default's pipe",
    )
    .await;

    // A server's history, as charts.
    click(&b, &format!("[data-history=\"{de}\"]")).await;
    let caption = b
        .wait_for("dialog[open] figure.chart figcaption", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(caption.contains("at most 3.0 Mbit/s"), "{caption}");
    assert_eq!(
        b.find_all("dialog[open] figure.chart rect.bar")
            .await
            .unwrap()
            .len(),
        2,
        "one bar in each chart"
    );
    b.screenshot(shots().join("server-history.png"))
        .await
        .unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the history dialog"
    );
    b.press("Escape").await.unwrap();

    // The diagram at the top of the window, below the sticky header, so that a drag's
    // both ends are on screen.
    b.execute(
        "window.scrollTo(0, document.querySelector('.topology').getBoundingClientRect().top + window.scrollY - 120);",
        vec![],
    )
    .await
    .unwrap();

    // Drag Helsinki into it: the pipe appears, the subscription lists it.
    let chip = format!(".inbound-chip[data-inbound=\"{}\"]", helsinki.id);
    let from = b.find(&chip).await.unwrap();
    let to = b.find(&route_box).await.unwrap();
    b.drag(&from, &to).await.unwrap();
    wait_js(
        &b,
        &format!("{} !== null", pipe(nordics_id)),
        "Nordics' pipe after the drag",
    )
    .await;
    wait_js(
        &b,
        &format!("!document.querySelector('{route_box}.empty')"),
        "no longer dashed",
    )
    .await;
    wait_entries(http, &sub, &["Frankfurt", "🇫🇮 Nordics"], "after the drag").await;
    b.screenshot(shots().join("cluster.png")).await.unwrap();

    // Drop it on "Not attached": the warning counts it, the subscription drops it.
    let from = b.find(&chip).await.unwrap();
    let to = b.find("[data-drop-route=none]").await.unwrap();
    b.drag(&from, &to).await.unwrap();
    b.wait_until_text(
        "[data-warning]",
        "2 inbound(s) are not in any route",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    wait_js(
        &b,
        &format!("{} === null", pipe(nordics_id)),
        "the pipe goes",
    )
    .await;
    wait_entries(http, &sub, &["Frankfurt"], "after detaching").await;

    // The same from the keyboard: the chip's menu, arrows, Enter.
    b.execute(
        &format!("document.querySelector('{chip}').focus();"),
        vec![],
    )
    .await
    .unwrap();
    b.press("Enter").await.unwrap();
    b.wait_for(".menu [role=menuitem]", DEFAULT_WAIT)
        .await
        .unwrap();
    let focused = b
        .execute("return document.activeElement.dataset.moveTo;", vec![])
        .await
        .unwrap();
    assert_eq!(
        focused,
        json!(default_id.to_string()),
        "the first route is focused"
    );
    b.press("ArrowDown").await.unwrap();
    b.press("Enter").await.unwrap();
    wait_js(
        &b,
        &format!("{} !== null", pipe(nordics_id)),
        "moved by keyboard",
    )
    .await;
    wait_entries(
        http,
        &sub,
        &["Frankfurt", "🇫🇮 Nordics"],
        "after the keyboard move",
    )
    .await;

    // Reorder: the arrow, then the drag handle back; the subscription follows.
    click(&b, &format!("{route_box} [aria-label=\"Move Nordics up\"]")).await;
    wait_entries(http, &sub, &["🇫🇮 Nordics", "Frankfurt"], "Nordics moved up").await;
    wait_js(
        &b,
        &format!(
            "document.querySelector('.route-box[data-route]').dataset.route === '{nordics_id}'"
        ),
        "Nordics drawn first",
    )
    .await;
    let handle = b
        .find(&format!(".route-box[data-route=\"{default_id}\"] .handle"))
        .await
        .unwrap();
    let onto = b.find(&route_box).await.unwrap();
    b.drag(&handle, &onto).await.unwrap();
    wait_entries(
        http,
        &sub,
        &["Frankfurt", "🇫🇮 Nordics"],
        "Default dragged back up",
    )
    .await;
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the cluster page"
    );

    // Live: a heartbeat from fi-1 turns its badge Online without a reload.
    heartbeat(&panel, fi, 1, (0, 0)).await;
    b.wait_until_text(
        &format!("[data-server-row=\"{fi}\"] .badge"),
        "Online",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();

    // A new inbound through the form: it shows up, not attached, counted in the warning.
    click(&b, "[data-new-inbound]").await;
    b.wait_for("dialog[open] select[name=server_id]", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the inbound form"
    );
    type_into(&b, "dialog[open] input[name=name]", "Oslo").await;
    let port = b.find("dialog[open] input[name=port]").await.unwrap();
    port.clear().await.unwrap();
    port.send_keys("10443").await.unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(".inbound-chip .chip-name", "Oslo", DEFAULT_WAIT)
        .await
        .unwrap();
    b.wait_until_text(
        "[data-warning]",
        "2 inbound(s) are not in any route",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();

    // A REALITY inbound through the form: its fields in place of the SNI, the flow,
    // and once saved the public key the panel made (the private one is never shown).
    click(&b, "[data-new-inbound]").await;
    b.wait_for("dialog[open] select[name=security]", DEFAULT_WAIT)
        .await
        .unwrap();
    b.execute(
        "const s = document.querySelector('dialog[open] select[name=security]'); \
         s.value = 'reality'; s.dispatchEvent(new Event('change'));",
        vec![],
    )
    .await
    .unwrap();
    for (css, shown) in [
        ("dialog[open] input[name='security.dest']", true),
        ("dialog[open] input[name='security.server_names']", true),
        ("dialog[open] select[name=flow]", true),
        ("dialog[open] input[name=sni]", false),
    ] {
        let displayed = b.find(css).await.unwrap().is_displayed().await.unwrap();
        assert_eq!(displayed, shown, "{css}");
    }
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the REALITY inbound form"
    );
    type_into(&b, "dialog[open] input[name=name]", "Oslo R").await;
    let port = b.find("dialog[open] input[name=port]").await.unwrap();
    port.clear().await.unwrap();
    port.send_keys("10444").await.unwrap();
    type_into(
        &b,
        "dialog[open] input[name='security.dest']",
        "www.example.com:443",
    )
    .await;
    type_into(
        &b,
        "dialog[open] input[name='security.server_names']",
        "target.test",
    )
    .await;
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_for("dialog[open] input[name=reality_public_key]", DEFAULT_WAIT)
        .await
        .unwrap();
    let key = b
        .execute(
            "return document.querySelector('dialog[open] input[name=reality_public_key]').value;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(key.as_str().map(str::len), Some(43), "{key}");
    click(&b, "dialog[open] button.primary").await;
    b.wait_until_text(".inbound-chip .chip-name", "Oslo R", DEFAULT_WAIT)
        .await
        .unwrap();

    // A tunnel: created in the form, its state badge (no node runs: unreachable),
    // and an API error shown next to the field it names.
    b.goto(&format!("http://{http}/#/tunnels")).await.unwrap();
    click(&b, "[data-new-tunnel]").await;
    type_into(&b, "dialog[open] input[name=name]", "exit").await;
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the tunnel form"
    );
    // The first profile starts on REALITY, its target and server name shown (blank:
    // the panel's default target and its host).
    let security_of = "const s = document.querySelector(`dialog[open] select[name=\"profiles[${arguments[0]}].security\"]`);
        const d = document.querySelector(`dialog[open] input[name=\"profiles[${arguments[0]}].reality_dest\"]`);
        return [s.value, [...s.options].map((o) => o.textContent), d.closest('.field').hidden];";
    assert_eq!(
        b.execute(security_of, vec![json!(0)]).await.unwrap(),
        json!(["reality", ["REALITY", "TLS (pinned certificate)"], false]),
        "a new tunnel's first profile is REALITY"
    );
    click(
        &b,
        &format!("dialog[open] input[name=origin][value=\"{fi}\"]"),
    )
    .await;
    let port = b
        .find("dialog[open] input[name=\"profiles[0].port\"]")
        .await
        .unwrap();
    port.clear().await.unwrap();
    port.send_keys(&frankfurt.port.to_string()).await.unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    let error = b
        .wait_for(
            "dialog[open] [data-field=\"profiles[0].port\"] .error",
            DEFAULT_WAIT,
        )
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(error.contains(&frankfurt.port.to_string()), "{error}");
    port.clear().await.unwrap();
    port.send_keys("7443").await.unwrap();

    // Profiles: three added and the middle one of the four removed; the rows are
    // renumbered, so the API's error about `profiles[1]` lands under the row that is
    // second now (the one that was third).
    for _ in 0..3 {
        click(&b, "dialog[open] [data-add-profile]").await;
    }
    assert_eq!(
        b.execute(security_of, vec![json!(1)]).await.unwrap(),
        json!(["tls", ["REALITY", "TLS (pinned certificate)"], true]),
        "an added profile is TLS, without REALITY's fields"
    );
    let set_port = async |i: usize, value: u16| {
        let el = b
            .find(&format!("dialog[open] input[name=\"profiles[{i}].port\"]"))
            .await
            .unwrap();
        el.clear().await.unwrap();
        el.send_keys(&value.to_string()).await.unwrap();
    };
    set_port(1, 7444).await;
    set_port(2, frankfurt.port).await;
    set_port(3, 7446).await;
    click(
        &b,
        "dialog[open] fieldset[data-field=\"profiles[1]\"] button.danger-text",
    )
    .await;
    let rows = json!({
        "legends": ["Profile 1", "Profile 2", "Profile 3"],
        "names": ["profiles[0].port", "profiles[1].port", "profiles[2].port"],
        "boxes": ["profiles[0]", "profiles[1]", "profiles[2]"],
        "ports": ["7443", frankfurt.port.to_string(), "7446"],
    });
    let read_rows = "const rows = [...document.querySelectorAll('dialog[open] fieldset.profile')];
        return {legends: rows.map((r) => r.querySelector('legend').textContent),
                names: rows.map((r) => r.querySelector('input[type=number]').name),
                boxes: rows.map((r) => r.dataset.field),
                ports: rows.map((r) => r.querySelector('input[type=number]').value)};";
    assert_eq!(
        b.execute(read_rows, vec![]).await.unwrap(),
        rows,
        "renumbered"
    );
    click(&b, "dialog[open] button[type=submit]").await;
    let error = b
        .wait_for(
            "dialog[open] fieldset[data-field=\"profiles[1]\"] [data-field=\"profiles[1].port\"] .error",
            DEFAULT_WAIT,
        )
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        error.contains(&frankfurt.port.to_string()),
        "the error is under the second row: {error}"
    );
    // Up to 8 profiles (the API's limit): then the button is off, and every row
    // still has a name of its own.
    for _ in 0..5 {
        click(&b, "dialog[open] [data-add-profile]").await;
    }
    assert_eq!(
        b.execute(
            "const names = [...document.querySelectorAll('dialog[open] fieldset.profile input')].map((e) => e.name);
             return [document.querySelectorAll('dialog[open] fieldset.profile').length,
                     new Set(names).size === names.length,
                     document.querySelector('dialog[open] [data-add-profile]').disabled,
                     document.querySelector('dialog[open] fieldset.profile:last-of-type legend').textContent];",
            vec![]
        )
        .await
        .unwrap(),
        json!([8, true, true, "Profile 8"])
    );
    for _ in 0..7 {
        click(
            &b,
            "dialog[open] fieldset[data-field=\"profiles[1]\"] button.danger-text",
        )
        .await;
    }
    assert_eq!(
        b.execute(
            "return [document.querySelectorAll('dialog[open] fieldset.profile').length,
                     document.querySelector('dialog[open] [data-add-profile]').disabled];",
            vec![]
        )
        .await
        .unwrap(),
        json!([1, false])
    );
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text("[data-tunnel-state]", "Relay unreachable", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(
        b.find(".tunnel-name").await.unwrap().text().await.unwrap(),
        "exit"
    );
    // The tunnel page shows the REALITY public key the panel made (43 characters of
    // base64url), and the profile as REALITY in front of the default target.
    let key = b
        .find("[data-reality-public-key]")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(key.len(), 43, "{key}");
    let facts = b.find("dl.facts").await.unwrap().text().await.unwrap();
    assert!(
        facts.contains("7443 REALITY (target www.microsoft.com:443"),
        "{facts}"
    );
    b.screenshot(shots().join("tunnel.png")).await.unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the tunnel page"
    );
    // The dialogs of the tunnel page: Duplicate, and a confirmation (Reset's).
    click(&b, "[data-duplicate]").await;
    b.wait_for("dialog[open] select[name=relay_server_id]", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the duplicate dialog"
    );
    b.press("Escape").await.unwrap();
    click(&b, "[data-reset]").await;
    b.wait_for("dialog[open] [data-confirm]", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "a confirmation dialog"
    );
    b.press("Escape").await.unwrap();
    // Rotate credentials: asked first, saying links stay up; then the page says the
    // previous credentials are still accepted (no node runs the new ones here).
    click(&b, "[data-rotate]").await;
    let said = b
        .wait_for("dialog[open] p", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        said.contains("Links stay up") && said.contains("accepts the previous and the new"),
        "{said}"
    );
    click(&b, "dialog[open] [data-confirm]").await;
    b.wait_for("[data-rotating]", DEFAULT_WAIT).await.unwrap();
    b.wait_until_text("dl.facts", "rotated 1 time(s)", DEFAULT_WAIT)
        .await
        .unwrap();
    b.goto(&format!("http://{http}/#/tunnels")).await.unwrap();
    b.wait_until_text("[data-tunnel-state]", "Relay unreachable", DEFAULT_WAIT)
        .await
        .unwrap();

    // Users: the note shows as text; the subscription with its QR code.
    b.goto(&format!("http://{http}/#/users")).await.unwrap();
    let row = format!("[data-user=\"{}\"]", alice.id);
    let text = b
        .wait_for(&row, DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains(XSS), "{text}");
    // A new user through the form, with a limit: the usage bar says it.
    click(&b, "[data-new-user]").await;
    type_into(&b, "dialog[open] input[name=username]", "bob").await;
    type_into(&b, "dialog[open] input[name=traffic_limit]", "50").await;
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the user form");
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text("tr[data-user]", "0 B of 50 GiB (0 %)", DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(unlabelled(&b).await, Vec::<String>::new(), "the users page");
    b.screenshot(shots().join("users.png")).await.unwrap();
    click(&b, &format!("{row} button")).await;
    let url = b
        .wait_for("[data-subscription-url]", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(url, format!("{}{sub}", panel.state.config().public_base()));
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the subscription dialog"
    );
    wait_js(
        &b,
        "document.querySelector('dialog[open] img.qr').naturalWidth > 0",
        "the QR code loads",
    )
    .await;
    b.screenshot(shots().join("subscription.png"))
        .await
        .unwrap();
    // Revoke: asked first; the dialog shows the new link, and the old one is dead.
    click(&b, "dialog[open] .danger").await;
    let said = b
        .wait_until_text("dialog[open] p", "stops working", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        said.contains("The current link stops working at once"),
        "{said}"
    );
    click(&b, "dialog[open] [data-confirm]").await;
    wait_js(
        &b,
        &format!(
            "document.querySelector('[data-subscription-url]').textContent !== {}",
            serde_json::to_string(&url).unwrap()
        ),
        "the new link shows",
    )
    .await;
    let (status, _) = live::http(http, "GET", &sub, "", None).await;
    assert_eq!(status, 404, "the old link is dead");
    b.press("Escape").await.unwrap();

    // Phone width: one column, nothing wider than the screen.
    b.set_window_size(390, 844).await.unwrap();
    b.goto(&format!("http://{http}/#/clusters/{cluster}"))
        .await
        .unwrap();
    b.wait_for(".topology", DEFAULT_WAIT).await.unwrap();
    wait_js(
        &b,
        "document.documentElement.scrollWidth <= window.innerWidth",
        "no horizontal scroll at phone width",
    )
    .await;
    b.screenshot(shots().join("cluster-phone.png"))
        .await
        .unwrap();
    for (page, ready) in [
        ("users", "tr[data-user]"),
        ("tunnels", "[data-tunnel-state]"),
    ] {
        b.goto(&format!("http://{http}/#/{page}")).await.unwrap();
        b.wait_for(ready, DEFAULT_WAIT).await.unwrap();
        wait_js(
            &b,
            "document.documentElement.scrollWidth <= window.innerWidth",
            &format!("the {page} page: no horizontal scroll at phone width"),
        )
        .await;
    }

    // Nothing went wrong in the console but the error the test asked for (the 409).
    let errors: Vec<String> = b
        .console_errors()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| !e.contains("status of 409"))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    assert_eq!(
        b.execute("return window.__xss === undefined;", vec![])
            .await
            .unwrap(),
        json!(true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_servers_sixty_inbounds_and_fifteen_routes_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let cluster = seed_cluster(&panel, "Worldwide").await;
    let mut inbounds = Vec::new();
    for s in 0..20 {
        let server = live::server(&panel, cluster, &format!("node-{s:02}")).await;
        for i in 0..3 {
            let inbound = service
                .create_inbound(
                    &live::vless(server, &format!("City {s:02}-{i}"), 8000 + i, true),
                    live::now(),
                )
                .await
                .unwrap();
            inbounds.push(inbound.id);
        }
    }
    let default = store.routes(cluster).await.unwrap()[0].id;
    for r in 0..15usize {
        let pool: Vec<i64> = inbounds.iter().copied().skip(r * 4).take(4).collect();
        let input = switchyard_panel::store::RouteInput {
            name: format!("Route {r:02}"),
            flag: None,
            algorithm: Default::default(),
            inbound_ids: Some(if r == 14 { Vec::new() } else { pool }),
        };
        if r == 0 {
            store.update_route(default, &input).await.unwrap();
        } else {
            store
                .create_route(cluster, &input, live::now())
                .await
                .unwrap();
        }
    }
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    wait_js(
        &b,
        "document.querySelectorAll('.inbound-chip').length === 60 \
         && document.querySelectorAll('.route-box[data-route]').length === 15 \
         && document.querySelectorAll('svg .member').length === 56 \
         && document.querySelectorAll('svg .pipe').length === 14",
        "60 inbounds (56 in routes), 15 routes (14 with a pipe)",
    )
    .await;
    // No two route boxes overlap, nor two server cards, and nothing is wider than
    // the window.
    let overlaps = b
        .execute(
            "const boxes = (sel) => [...document.querySelectorAll(sel)].map((e) => e.getBoundingClientRect());
             const clash = (list) => list.some((a, i) => list.some((b, j) => i < j &&
               a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom));
             return [clash(boxes('.route-box')), clash(boxes('.server-card')),
                     document.documentElement.scrollWidth <= window.innerWidth];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(overlaps, json!([false, false, true]));
    b.set_window_size(1280, 1500).await.unwrap();
    b.execute(
        "window.scrollTo(0, document.querySelector('.topology').getBoundingClientRect().top + window.scrollY - 60);",
        vec![],
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.screenshot(shots().join("topology-20-60-15.png"))
        .await
        .unwrap();
    assert_eq!(b.console_errors().await.unwrap(), Vec::<String>::new());
}

/// A tunnel between two real nodes, seen in the browser: the badge and the live status
/// follow the nodes; Reset asks first and says traffic stops; Duplicate opens the copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tunnel_in_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let cluster = seed_cluster(&panel, "Europe").await;
    let relay = live::server(&panel, cluster, "relay").await;
    let origin = live::server(&panel, cluster, "origin").await;
    let spare = live::server(&panel, cluster, "spare").await;
    let nodes = live::join_all(&panel, dir.path(), &[relay, origin]).await;
    let auth = live::api_token(http, &dir.path().join("panel")).await;
    let port = switchyard_testkit::free_port().unwrap();
    let (status, tunnel) = live::http(
        http,
        "POST",
        "/api/v1/tunnels",
        &auth,
        Some(&json!({
            "name": "exit", "relay_server_id": relay, "origin_server_ids": [origin],
            "links": 2, "profiles": [{"port": port}],
        })),
    )
    .await;
    assert_eq!(status, 201, "{tunnel}");
    let id = tunnel["id"].as_i64().unwrap();
    // Five minutes of traffic a minute ago, as the relay's heartbeats would record
    // them: the usage chart draws them.
    let store = panel.state.store().clone();
    for m in 1..=5i64 {
        switchyard_panel::store::TunnelStore::record_tunnel_usage(
            &*store,
            id,
            (m as u64) << 20,
            live::now() - m * 60_000,
        )
        .await
        .unwrap();
    }

    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    b.goto(&format!("http://{http}/#/tunnels/{id}"))
        .await
        .unwrap();
    b.wait_until_text("[data-tunnel-state]", "Connections: 2", DEFAULT_WAIT)
        .await
        .unwrap();
    let table = b
        .wait_until_text("table.tunnel-status tbody", "profile 0: 2", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        table.contains(&format!("127.0.0.1:{port}: 2/2 links")),
        "the dialing side's wanted and connected links: {table}"
    );
    let caption = b
        .wait_for("figure.chart figcaption", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(caption.contains("15 MiB in all"), "{caption}");
    assert_eq!(
        b.find_all("figure.chart rect.bar").await.unwrap().len(),
        5,
        "one bar per minute with traffic"
    );
    b.screenshot(shots().join("tunnel-live.png")).await.unwrap();

    // Reset: the confirmation says what happens; then every node rebuilds.
    click(&b, "[data-reset]").await;
    let said = b
        .wait_for("dialog[open] p", DEFAULT_WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        said.contains("Traffic through this tunnel stops until it reconnects"),
        "{said}"
    );
    click(&b, "dialog[open] [data-confirm]").await;
    b.wait_until_text(".toast", "Every node rebuilt its half", DEFAULT_WAIT)
        .await
        .unwrap();
    b.wait_until_text("[data-tunnel-state]", "Connections: 2", DEFAULT_WAIT)
        .await
        .unwrap();

    // Duplicate for the spare server: the copy's page, its own pin.
    click(&b, "[data-duplicate]").await;
    let name = b
        .wait_for("dialog[open] input[name=name]", DEFAULT_WAIT)
        .await
        .unwrap();
    name.clear().await.unwrap();
    name.send_keys("exit-spare").await.unwrap();
    b.execute(
        &format!(
            "const s = document.querySelector('dialog[open] select[name=relay_server_id]'); s.value = '{spare}';"
        ),
        vec![],
    )
    .await
    .unwrap();
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(".tunnel-name", "exit-spare", DEFAULT_WAIT)
        .await
        .unwrap();
    // The spare server runs no node: the copy's relay is unreachable.
    b.wait_until_text("[data-tunnel-state]", "Relay unreachable", DEFAULT_WAIT)
        .await
        .unwrap();
    let (_, list) = live::http(http, "GET", "/api/v1/tunnels", &auth, None).await;
    let pins: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["certificate_pin"])
        .collect();
    assert_eq!(pins.len(), 2);
    assert_ne!(pins[0], pins[1], "the copy has its own certificate");
    assert_eq!(b.console_errors().await.unwrap(), Vec::<String>::new());
    drop(b);
    for n in nodes {
        n.shutdown().await;
    }
}
