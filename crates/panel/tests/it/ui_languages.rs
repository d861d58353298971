//! The UI in Russian and Persian, in a real headless Chromium against a real panel:
//! the browser's language picks it (Persian laid out right to left), every page of
//! the UI is walked at phone width and no message on it is left in English (every
//! text and every placeholder, label and title is checked against the messages the
//! scripts write), numbers come in the language's digits, nothing is wider than
//! the screen, and the switch changes the language and keeps it. The subscription's
//! browser page follows the browser's language too. Screenshots go to the docs.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_panel::store::UserInput;
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

use crate::live;
use crate::ui_common::{password, shots, text, type_into};

/// Every page of the UI the owner can open (the cluster's added once known).
const PAGES: [&str; 10] = [
    "#/",
    "#/clusters",
    "#/users",
    "#/tunnels",
    "#/plans",
    "#/templates",
    "#/admins",
    "#/webhooks",
    "#/audit",
    "#/account",
];

/// The messages of the UI whose translation in `code` differs from the English:
/// none of them may be on a page shown in `code`.
fn english_left(code: &str) -> Vec<String> {
    let path = format!("{}/ui/js/i18n/{code}.js", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let body = text.split_once("export default").unwrap().1.trim();
    let catalog: serde_json::Map<String, Value> =
        serde_json::from_str(body.strip_suffix(';').unwrap()).unwrap();
    catalog
        .into_iter()
        .filter(|(k, v)| v.as_str() != Some(k.as_str()))
        // Only messages with a word in them (not a lone placeholder or sign).
        .filter(|(k, _)| k.chars().filter(char::is_ascii_alphabetic).count() >= 2)
        .filter(|(k, _)| !k.contains('{'))
        .map(|(k, _)| k)
        .collect()
}

/// The texts, placeholders, labels and titles on the page that are English
/// messages (data the test made is not a message: `data`).
async fn english_on_page(b: &Browser, english: &[String], data: &[&str]) -> Vec<String> {
    let found = b
        .execute(
            "const english = new Set(arguments[0]); const data = new Set(arguments[1]);
             const seen = new Set();
             const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
             while (walker.nextNode()) {
               const n = walker.currentNode;
               if (n.parentElement && n.parentElement.closest('code, script, style')) continue;
               const s = n.textContent.trim();
               if (english.has(s) && !data.has(s)) seen.add(s);
             }
             for (const el of document.querySelectorAll('[placeholder], [aria-label], [title]')) {
               for (const a of ['placeholder', 'aria-label', 'title']) {
                 const s = (el.getAttribute(a) || '').trim();
                 if (english.has(s)) seen.add(`${a}=${s}`);
               }
             }
             return [...seen];",
            vec![json!(english), json!(data)],
        )
        .await
        .unwrap();
    serde_json::from_value(found).unwrap()
}

async fn wider_than_the_screen(b: &Browser) -> bool {
    let v = b
        .execute(
            "return document.documentElement.scrollWidth > window.innerWidth;",
            vec![],
        )
        .await
        .unwrap();
    v == Value::Bool(true)
}

/// Opens `hash` and waits for its page to be drawn with its data.
async fn open(b: &Browser, hash: &str) {
    b.execute(
        "document.querySelector('#main').replaceChildren(); \
         if (location.hash === arguments[0]) window.dispatchEvent(new HashChangeEvent('hashchange')); \
         else location.hash = arguments[0];",
        vec![json!(hash)],
    )
    .await
    .unwrap();
    b.wait_for("#main h1", DEFAULT_WAIT).await.unwrap();
    // The page's second requests (lists, live data) land.
    tokio::time::sleep(Duration::from_millis(400)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_in_persian_and_russian() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let eu = store
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    live::server(&panel, eu, "de-1").await;
    let now = live::now();
    let mut token = String::new();
    for (name, limit, expires) in [
        ("alice", Some(50u64 << 30), Some(now + 2 * 86_400_000)),
        ("bob", None, None),
    ] {
        let input = UserInput {
            traffic_limit: limit,
            expires_ms: expires,
            ..UserInput::new(name)
        };
        let user = service.create_user(&input, now).await.unwrap();
        if name == "alice" {
            token = user.subscription_path.clone();
        }
    }
    // The names the fixture made, shown as they are.
    let data = ["admin", "alice", "bob", "Europe", "de-1"];
    let mut pages: Vec<String> = PAGES.iter().map(|p| (*p).to_owned()).collect();
    pages.insert(2, format!("#/clusters/{eu}"));

    for (code, tag, dir_attr, login, users) in [
        ("fa", "fa-IR", "rtl", "ورود", "کاربران"),
        ("ru", "ru-RU", "ltr", "Войти", "Пользователи"),
    ] {
        let b = Browser::start_in(tag).await.unwrap();
        b.set_window_size(390, 844).await.unwrap();
        b.goto(&format!("http://{http}/")).await.unwrap();
        b.wait_for("form.login", DEFAULT_WAIT).await.unwrap();
        let html = b
            .execute(
                "return [document.documentElement.lang, document.documentElement.dir];",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(html, json!([code, dir_attr]), "the browser's language");
        assert_eq!(text(&b, "form.login button[type=submit]").await, login);
        type_into(&b, "form.login input[name=username]", "admin").await;
        type_into(&b, "form.login input[name=password]", &password(dir.path())).await;
        b.press("Enter").await.unwrap();
        b.wait_for("[data-dashboard]", DEFAULT_WAIT).await.unwrap();
        assert_eq!(text(&b, "nav a[href='#/users']").await, users);

        let english = english_left(code);
        assert!(english.len() > 400, "{code}: {} messages", english.len());
        for page in &pages {
            open(&b, page).await;
            let left = english_on_page(&b, &english, &data).await;
            assert_eq!(left, Vec::<String>::new(), "{code} {page}: English left");
            assert!(
                !wider_than_the_screen(&b).await,
                "{code} {page}: wider than a phone"
            );
            let shot = match page.as_str() {
                "#/" => Some("dashboard"),
                "#/users" => Some("users"),
                p if p.starts_with("#/clusters/") => Some("cluster"),
                _ => None,
            };
            if let Some(name) = shot {
                b.screenshot(shots().join(format!("{name}-{code}-phone.png")))
                    .await
                    .unwrap();
            }
        }
        // Every form the pages open, as it first shows.
        let cluster = format!("#/clusters/{eu}");
        for (page, button) in [
            ("#/users", "[data-new-user]"),
            ("#/users", "[data-import]"),
            ("#/users", "[data-bulk]"),
            (cluster.as_str(), "[data-new-inbound]"),
            (cluster.as_str(), "[data-new-route]"),
            (cluster.as_str(), "[data-routing]"),
            ("#/tunnels", "[data-new-tunnel]"),
            ("#/plans", "[data-new-plan]"),
            ("#/admins", "[data-new-admin]"),
            ("#/webhooks", "[data-new-webhook]"),
        ] {
            open(&b, page).await;
            crate::ui_common::click(&b, button).await;
            b.wait_for("dialog[open]", DEFAULT_WAIT).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            let left = english_on_page(&b, &english, &data).await;
            assert_eq!(
                left,
                Vec::<String>::new(),
                "{code} {page} {button}: English left"
            );
            if button == "[data-new-inbound]" {
                b.screenshot(shots().join(format!("inbound-form-{code}-phone.png")))
                    .await
                    .unwrap();
            }
            b.execute(
                "document.querySelector('dialog[open]').dispatchEvent(new Event('cancel'));",
                vec![],
            )
            .await
            .unwrap();
        }

        // Numbers in the language's digits: two users, in Persian "۲".
        open(&b, "#/").await;
        let count = text(&b, "#d-users").await;
        let two = if code == "fa" { "۲" } else { "2" };
        assert!(count.ends_with(two), "{code}: {count}");

        // The subscription's page, in the browser's language.
        b.goto(&format!("http://{http}{token}")).await.unwrap();
        b.wait_for("main header h1", DEFAULT_WAIT).await.unwrap();
        let page = b
            .execute(
                "return [document.documentElement.lang, document.documentElement.dir, \
                 document.querySelector('.status').textContent];",
                vec![],
            )
            .await
            .unwrap();
        let active = if code == "fa" {
            "فعال"
        } else {
            "Активна"
        };
        assert_eq!(page, json!([code, dir_attr, active]));
        assert!(
            !wider_than_the_screen(&b).await,
            "{code}: the subscription page"
        );
        b.screenshot(shots().join(format!("subscription-{code}-phone.png")))
            .await
            .unwrap();
        drop(b);
    }

    // The switch: Persian chosen in an English browser, kept after a reload, then
    // back to English.
    let b = Browser::start().await.unwrap();
    b.goto(&format!("http://{http}/")).await.unwrap();
    b.wait_for("form.login", DEFAULT_WAIT).await.unwrap();
    assert_eq!(text(&b, "form.login button[type=submit]").await, "Log in");
    // The check above finds English where there is some.
    let english = english_on_page(&b, &english_left("fa"), &[]).await;
    assert!(english.contains(&"Log in".to_owned()), "{english:?}");
    let choose = |code: &'static str| {
        let b = &b;
        async move {
            b.execute(
                "const s = document.querySelector('select[data-lang]'); s.value = arguments[0]; \
                 s.dispatchEvent(new Event('change'));",
                vec![json!(code)],
            )
            .await
            .unwrap();
            // The page loads again in the chosen language.
            tokio::time::sleep(Duration::from_millis(300)).await;
            b.wait_for("form.login", DEFAULT_WAIT).await.unwrap();
        }
    };
    choose("fa").await;
    assert_eq!(text(&b, "form.login button[type=submit]").await, "ورود");
    b.goto(&format!("http://{http}/")).await.unwrap();
    b.wait_for("form.login", DEFAULT_WAIT).await.unwrap();
    assert_eq!(text(&b, "form.login button[type=submit]").await, "ورود");
    let dir_now = b
        .execute("return document.documentElement.dir;", vec![])
        .await
        .unwrap();
    assert_eq!(dir_now, json!("rtl"));
    choose("en").await;
    assert_eq!(text(&b, "form.login button[type=submit]").await, "Log in");

    // The subscription page's Solar Hijri dates are the browser's own (ICU's
    // Persian calendar): every fifth day from 1950 to 2100, leap years and all.
    let days: Vec<i64> = (0..11_000)
        .map(|i| -631_152_000_000 + i * 5 * 86_400_000)
        .collect();
    let browser = b
        .execute(
            "const f = new Intl.DateTimeFormat('en-u-ca-persian-nu-latn', \
               {year: 'numeric', month: 'numeric', day: 'numeric', timeZone: 'UTC'});
             return arguments[0].map((ms) => {
               const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
               return [Number(p.year), Number(p.month), Number(p.day)];
             });",
            vec![json!(days)],
        )
        .await
        .unwrap();
    let browser: Vec<(i32, u8, u8)> = serde_json::from_value(browser).unwrap();
    for (ms, theirs) in days.iter().zip(&browser) {
        let t = time::OffsetDateTime::from_unix_timestamp(ms / 1000).unwrap();
        let ours = switchyard_panel::subscription::page::solar_hijri(
            t.year(),
            u8::from(t.month()),
            t.day(),
        );
        assert_eq!(ours, Some(*theirs), "{t}");
    }
    drop(b);
    drop(panel);
}
