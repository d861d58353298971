use super::*;
use crate::model::UserStatus;
use crate::subscription::refusal::Refusal;

const GIB: u64 = 1 << 30;
const DAY: i64 = 86_400_000;
/// 2026-12-01 12:00 UTC.
const NOW: i64 = 1_796_126_400_000;
/// 2026-12-31 23:59 UTC.
const NEW_YEAR_EVE: i64 = 1_798_761_540_000;

const SUB: &str = "https://sub.example.com/s/4f9c2a7e?x=1&y=2";
const REALITY: &str = "vless://3b2f1c9e-7a1d-4a57-9c0e-2f5d8e6b4a11@203.0.113.7:443?encryption=none\
&flow=xtls-rprx-vision&security=reality&sni=www.example.com&fp=chrome\
&pbk=Qm9ndXNQdWJsaWNLZXlGb3JUZXN0aW5nT25seTEyMzQ1Ng&sid=6ba85179e30d4fc2&type=tcp\
#%F0%9F%87%A9%F0%9F%87%AA%20Frankfurt";
const SS: &str = "ss://MjAyMi1ibGFrZTMtYWVzLTI1Ni1nY206c2VjcmV0@198.51.100.2:8388#'quote\"d'";

fn links() -> Vec<PageLink<'static>> {
    vec![
        PageLink {
            name: "<script>alert(1)</script> 🇩🇪 \"Frankfurt\"",
            link: REALITY,
        },
        PageLink {
            name: "it's <b>fast</b> & cheap",
            link: SS,
        },
        PageLink {
            name: "plain",
            link: "trojan://pw@example.org:443?sni=example.org#plain",
        },
    ]
}

fn page<'a>(links: &'a [PageLink<'a>]) -> Page<'a> {
    Page {
        title: "Corp <VPN> \"main\"",
        username: "alice<script>",
        status: UserStatus::Active,
        status_reason: None,
        subscription_url: SUB,
        links,
        used_bytes: 1_288_490_188,
        limit_bytes: Some(50 * GIB),
        expires_ms: Some(NEW_YEAR_EVE),
        now_ms: NOW,
        support_url: None,
        announce: None,
        lang: Lang::En,
    }
}

/// What an HTML parser makes of escaped text.
fn escaped(s: &str) -> String {
    Esc(s).to_string()
}

#[test]
fn a_complete_document() {
    let links = links();
    let html = render(&page(&links));
    assert!(
        html.starts_with("<!DOCTYPE html>\n<html lang=\"en\" dir=\"ltr\">"),
        "{html}"
    );
    assert!(html.ends_with("</body>\n</html>\n"));
    assert_eq!(html.matches("<title>").count(), 1);
    assert!(
        html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );
    assert!(html.contains("<meta name=\"referrer\" content=\"no-referrer\">"));
    assert!(html.contains("<title>Corp &lt;VPN&gt; &quot;main&quot;</title>"));
}

#[test]
fn supplied_strings_are_escaped_in_text_and_attributes() {
    let links = links();
    let mut p = page(&links);
    p.announce = Some("Maintenance <tonight>\nsecond line & more");
    let html = render(&p);
    // Our own script is the only one; no tag from a name survives.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(!html.contains("<b>") && !html.contains("<i>") && !html.contains("<tonight>"));
    assert!(html.contains(
        "<h3 dir=\"auto\">&lt;script&gt;alert(1)&lt;/script&gt; 🇩🇪 &quot;Frankfurt&quot;</h3>"
    ));
    assert!(html.contains("<h3 dir=\"auto\">it&#39;s &lt;b&gt;fast&lt;/b&gt; &amp; cheap</h3>"));
    assert!(html.contains("alice&lt;script&gt; · "));
    assert!(html.contains("Maintenance &lt;tonight&gt;\nsecond line &amp; more"));
    // Attribute context: the quote in the name cannot close aria-label.
    assert!(html.contains(
        "aria-label=\"QR code: &lt;script&gt;alert(1)&lt;/script&gt; 🇩🇪 &quot;Frankfurt&quot;\""
    ));
    assert!(html.contains("aria-label=\"QR code: it&#39;s &lt;b&gt;fast&lt;/b&gt; &amp; cheap\""));
    // No raw quote anywhere inside any aria-label value.
    for (at, _) in html.match_indices("aria-label=\"") {
        let value = &html[at + 12..];
        let value = &value[..value.find('"').unwrap()];
        assert!(!value.contains(['<', '>', '\'']), "{value}");
    }
}

#[test]
fn every_link_appears_once_as_text_with_a_copy_button() {
    let links = links();
    let html = render(&page(&links));
    for (i, link) in links.iter().enumerate() {
        assert_eq!(
            html.matches(&escaped(link.link)).count(),
            1,
            "{}",
            link.link
        );
        assert!(html.contains(&format!(
            "<code id=\"link-{i}\">{}</code>\n<button type=\"button\" data-copy=\"link-{i}\" data-label=\"Copy\" data-done=\"Copied\">Copy</button>",
            escaped(link.link)
        )));
    }
    assert_eq!(html.matches(&escaped(SUB)).count(), 1);
    assert!(html.contains(&format!("<code id=\"sub\">{}</code>", escaped(SUB))));
    assert_eq!(html.matches("data-copy=\"").count(), links.len() + 1);
    // The links keep their order.
    let at = |s: &str| html.find(&escaped(s)).unwrap();
    assert!(at(SUB) < at(REALITY) && at(REALITY) < at(SS));
}

/// Reads one of our SVGs back into modules; checks the path's shape as it goes.
fn svg_matrix(svg: &str) -> QrMatrix {
    let size: usize = svg
        .split_once("viewBox=\"0 0 ")
        .and_then(|(_, rest)| rest.split_once(' '))
        .map(|(n, _)| n.parse().unwrap())
        .unwrap();
    let width = size - 2 * QUIET_ZONE;
    let d = svg
        .split_once(" d=\"")
        .unwrap()
        .1
        .split_once('"')
        .unwrap()
        .0;
    let mut dark = vec![false; width * width];
    for run in d.split_terminator('z') {
        let (xy, rest) = run.strip_prefix('M').unwrap().split_once('h').unwrap();
        let (x, y) = xy.split_once(' ').unwrap();
        let (x, y): (usize, usize) = (x.parse().unwrap(), y.parse().unwrap());
        let (len, tail) = rest.split_once('v').unwrap();
        let len: usize = len.parse().unwrap();
        assert_eq!(tail, format!("1h-{len}"));
        for dx in 0..len {
            dark[(y - QUIET_ZONE) * width + x - QUIET_ZONE + dx] = true;
        }
    }
    QrMatrix { width, dark }
}

fn svgs(html: &str) -> Vec<&str> {
    html.match_indices("<svg ")
        .map(|(at, _)| {
            let end = html[at..].find("</svg>").unwrap();
            &html[at..at + end]
        })
        .collect()
}

fn decode(matrix: &QrMatrix) -> String {
    let grid = rqrr::SimpleGrid::from_func(matrix.width, |x, y| matrix.dark[y * matrix.width + x]);
    rqrr::Grid::new(grid).decode().expect("a QR code").1
}

#[test]
fn one_qr_per_link_and_one_for_the_subscription_each_decoding_to_its_text() {
    let links = links();
    let html = render(&page(&links));
    let svgs = svgs(&html);
    assert_eq!(svgs.len(), links.len() + 1);
    let expected: Vec<&str> = std::iter::once(SUB)
        .chain(links.iter().map(|l| l.link))
        .collect();
    for (svg, text) in svgs.iter().zip(expected) {
        let matrix = svg_matrix(svg);
        assert_eq!(
            Some(&matrix),
            qr_matrix(text).as_ref(),
            "the SVG draws the matrix"
        );
        assert_eq!(decode(&matrix), text);
    }
}

#[test]
fn a_link_too_long_for_a_qr_code_gets_a_note() {
    let long = format!("vless://x@h:1?p={}", "a".repeat(3000));
    assert_eq!(qr_matrix(&long), None);
    let links = [PageLink {
        name: "long",
        link: &long,
    }];
    let html = render(&page(&links));
    assert_eq!(svgs(&html).len(), 1);
    assert!(html.contains("Too long for a QR code"));
    assert_eq!(html.matches(&long).count(), 1);
}

#[test]
fn nothing_is_loaded_from_anywhere() {
    let links = links();
    let html = render(&page(&links));
    for banned in [
        "src=", "url(", "@import", "<link", "<img", "<iframe", "xmlns",
    ] {
        assert!(!html.contains(banned), "{banned}");
    }
    // The only links are to this page in the other languages.
    let hrefs: Vec<&str> = html.split("href=\"").skip(1).collect();
    assert_eq!(hrefs.len(), 2);
    assert!(hrefs.iter().all(|h| h.starts_with("?lang=")), "{hrefs:?}");
    // The policy allows exactly the script on the page.
    let script = html
        .split_once("<script>")
        .unwrap()
        .1
        .split_once("</script>")
        .unwrap()
        .0;
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script));
    assert!(html.contains(&format!("script-src &#39;sha256-{hash}&#39;")));
    assert!(html.contains("default-src &#39;none&#39;"));
}

#[test]
fn support_url_is_a_link_only_when_http() {
    let links = links();
    let mut p = page(&links);
    p.support_url = Some(" https://t.me/corp_support?a=1&b=\"2\" ");
    let html = render(&p);
    assert_eq!(html.matches("href=\"http").count(), 1);
    assert!(html.contains(
        "<a href=\"https://t.me/corp_support?a=1&amp;b=&quot;2&quot;\" rel=\"noopener noreferrer\">"
    ));
    p.support_url = Some("HTTP://help.example.org");
    assert_eq!(render(&p).matches("href=\"HTTP").count(), 1);
    for not_http in [
        "javascript:alert(1)",
        "tg://resolve?domain=corp",
        "@corp_support",
        "http:/x",
    ] {
        p.support_url = Some(not_http);
        let html = render(&p);
        assert!(!html.contains("href=\"http"), "{not_http}");
        assert!(html.contains(&format!("<p>Support: {}</p>", escaped(not_http))));
    }
}

#[test]
fn usage_with_a_limit_without_one_and_past_it() {
    let links = links();
    let mut p = page(&links);
    let html = render(&p);
    assert!(html.contains("<p>1.2 GiB of 50 GiB (2%)</p>"), "{html}");
    assert!(html.contains("aria-valuenow=\"2\"><div style=\"width:2%\"></div>"));
    p.limit_bytes = None;
    let html = render(&p);
    assert!(html.contains("<p>1.2 GiB of unlimited</p>"));
    assert!(!html.contains("progressbar"));
    p.limit_bytes = Some(GIB);
    assert!(render(&p).contains("<p>1.2 GiB of 1 GiB (100%)</p>"));
    assert_eq!(used_percent(5, 0), 100);
    assert_eq!(used_percent(0, 0), 100);
    assert_eq!(used_percent(u64::MAX, u64::MAX), 100);
    assert_eq!(used_percent(999, 1000), 99);
}

#[test]
fn expiry_as_a_utc_date_and_days() {
    let links = links();
    let mut p = page(&links);
    // 30.5 days left: a started day counts.
    assert!(render(&p).contains("<p>2026-12-31 23:59 UTC (in 31 days)</p>"));
    p.now_ms = NEW_YEAR_EVE - DAY;
    assert!(render(&p).contains("<p>2026-12-31 23:59 UTC (in 1 day)</p>"));
    p.now_ms = NEW_YEAR_EVE;
    assert!(render(&p).contains("<p>Expired on 2026-12-31 23:59 UTC</p>"));
    p.expires_ms = None;
    assert!(render(&p).contains("<h2>Expires</h2>\n<p>Never</p>"));
    assert_eq!(Lang::En.date(0).unwrap(), "1970-01-01 00:00 UTC");
    assert_eq!(Lang::En.date(-1).unwrap(), "1969-12-31 23:59 UTC");
    assert_eq!(Lang::En.date(i64::MAX), None);
    p.expires_ms = Some(i64::MAX);
    assert!(render(&p).contains("<p>an unknown date (in "));
}

#[test]
fn days_left_counts_started_days() {
    assert_eq!(days_left(NOW, NOW), None);
    assert_eq!(days_left(NOW - 1, NOW), None);
    assert_eq!(days_left(NOW + 1, NOW), Some(1));
    assert_eq!(days_left(NOW + DAY, NOW), Some(1));
    assert_eq!(days_left(NOW + DAY + 1, NOW), Some(2));
    assert_eq!(days_left(NOW + 30 * DAY, NOW), Some(30));
    assert_eq!(days_left(i64::MAX, i64::MIN), Some(213_503_982_335));
    assert_eq!(days_left(i64::MIN, i64::MAX), None);
}

#[test]
fn bytes_in_binary_units() {
    for (bytes, text) in [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (1075, "1 KiB"),
        (1076, "1.1 KiB"),
        ((1 << 20) - 1, "1 MiB"),
        (1 << 20, "1 MiB"),
        (1_288_490_188, "1.2 GiB"),
        (50 * GIB, "50 GiB"),
        (1023 * GIB, "1023 GiB"),
        (1 << 40, "1 TiB"),
        (u64::MAX, "16 EiB"),
    ] {
        assert_eq!(format_bytes(bytes), text, "{bytes}");
    }
}

#[test]
fn status_class_and_no_links() {
    assert_eq!(status_class("Active"), "active");
    assert_eq!(status_class("On \"hold\" <x>"), "onholdx");
    let html = render(&page(&[]));
    assert!(html.contains("<span class=\"status status-active\">Active</span>"));
    assert!(html.contains("No links yet."));
    assert_eq!(svgs(&html).len(), 1);
}

#[test]
fn russian_and_persian_pages() {
    let links = links();
    let mut p = page(&links);
    p.lang = Lang::Ru;
    p.status = UserStatus::Limited;
    p.status_reason = Some(&Refusal::Status(UserStatus::Limited));
    p.support_url = Some("https://t.me/help");
    let html = render(&p);
    assert!(html.contains("<html lang=\"ru\" dir=\"ltr\">"));
    assert!(html.contains("<span class=\"status status-limited\">Трафик исчерпан</span> <span class=\"muted\">(лимит трафика исчерпан)</span>"));
    assert!(html.contains("<p>1,2\u{a0}ГиБ из 50\u{a0}ГиБ (2\u{a0}%)</p>"));
    assert!(html.contains("<p>31.12.2026 23:59 UTC (через 31 день)</p>"));
    assert!(
        html.contains("data-label=\"Копировать\" data-done=\"Скопировано\">Копировать</button>")
    );
    assert!(html.contains(">Поддержка: https://t.me/help</a>"));
    // The switch links to the other languages, and marks this one.
    assert!(html.contains("<a href=\"?lang=fa\" lang=\"fa\" hreflang=\"fa\">فارسی</a>"));
    assert!(html.contains("<span lang=\"ru\" aria-current=\"true\">Русский</span>"));
    assert!(!html.contains(">Traffic<") && !html.contains(">Copy<"));

    p.lang = Lang::Fa;
    p.status = UserStatus::Active;
    p.status_reason = None;
    let html = render(&p);
    assert!(html.contains("<html lang=\"fa\" dir=\"rtl\">"));
    assert!(html.contains("<span class=\"status status-active\">فعال</span>"));
    assert!(html.contains("<p>۱٫۲\u{a0}گیگابایت از ۵۰\u{a0}گیگابایت (۲٪)</p>"));
    assert!(html.contains("<p>۱۴۰۵/۱۰/۱۰ ۲۳:۵۹ UTC (۳۱ روز دیگر)</p>"));
    // Links and the URL are as they are: no Persian digit in them.
    assert!(html.contains(&format!("<code id=\"sub\">{}</code>", escaped(SUB))));
    assert!(html.contains(&format!("<code id=\"link-0\">{}</code>", escaped(REALITY))));
}
