//! # The subscription page a browser gets
//!
//! When a person opens a subscription URL in a browser (`Accept: text/html`), the
//! handler answers with [`render`]: one self-contained HTML5 document showing the
//! profile's status, traffic used against its limit (with a bar), the expiry as a
//! UTC date with "in N days", a QR code and a copy button for the subscription
//! URL, and the same for every share link, in order.
//!
//! ## What it guarantees
//!
//! - **Everything the page needs is in it.** Styles and the copy script are
//!   inline, QR codes are inline SVG; no CDN, font, image or script by URL. A
//!   `Content-Security-Policy` (`default-src 'none'`, the script allowed by its
//!   hash) makes a browser refuse anything else: the handler sends it as a header
//!   ([`policy`], with `frame-ancestors 'none'`), and the page repeats it in a meta
//!   element for a copy saved to disk.
//! - **Every supplied string is HTML-escaped** (`& < > " '`), in text and in
//!   attributes alike, so names may hold `<script>`, quotes or emoji. Share links
//!   appear once each, as text; copy buttons name the element to copy by id.
//! - **`support_url` becomes a link only when it is `http://` or `https://`**;
//!   anything else (`javascript:`, `tg://`, a handle) is shown as text.
//! - The page asks not to be indexed and not to send a `Referer`, since its URL
//!   carries the subscription's secret.
//!
//! Pure: "now" comes in as [`Page::now_ms`]; no I/O. Helpers [`format_bytes`]
//! (binary units) and [`days_left`] are public for the handler's other uses.

use std::fmt::{self, Write as _};
use std::sync::LazyLock;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use crate::model::UserStatus;
use crate::subscription::refusal::Refusal;

mod text;
pub use text::{Lang, solar_hijri};

/// A share link shown on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLink<'a> {
    /// What the person sees above it, e.g. the inbound's name.
    pub name: &'a str,
    /// The share link itself (`vless://…`).
    pub link: &'a str,
}

/// Everything the page shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page<'a> {
    /// The profile title: the page's `<title>` and heading.
    pub title: &'a str,
    /// The user's name.
    pub username: &'a str,
    /// The user's status.
    pub status: UserStatus,
    /// Why the subscription has no servers, when it has none for a reason.
    pub status_reason: Option<&'a Refusal>,
    /// The absolute URL of this subscription.
    pub subscription_url: &'a str,
    /// Share links, in the order shown.
    pub links: &'a [PageLink<'a>],
    /// Traffic used, bytes.
    pub used_bytes: u64,
    /// Traffic limit, bytes; `None` is unlimited.
    pub limit_bytes: Option<u64>,
    /// When the profile expires, Unix ms; `None` is never.
    pub expires_ms: Option<i64>,
    /// Now, Unix ms, for "in N days".
    pub now_ms: i64,
    /// Where to get help; a link only when `http(s)`.
    pub support_url: Option<&'a str>,
    /// A notice from the operator, shown at the top; line breaks kept.
    pub announce: Option<&'a str>,
    /// The language the page is written in.
    pub lang: Lang,
}

/// Modules of light margin around a QR code, as the QR standard asks.
const QUIET_ZONE: usize = 4;

const STYLE: &str = "\
:root{color-scheme:light dark;--bg:#f4f5f7;--card:#fff;--fg:#1b1d21;--muted:#5f6570;--line:#dde0e5;--accent:#2f6fde}
@media (prefers-color-scheme:dark){:root{--bg:#111317;--card:#1b1e24;--fg:#e8eaed;--muted:#9aa1ab;--line:#2c313a;--accent:#6c9cf0}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}
main{max-width:44rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.1rem;margin:0 0 .5rem}h3{font-size:1rem;margin:0 0 .5rem;overflow-wrap:anywhere}
.card{background:var(--card);border:1px solid var(--line);border-radius:.75rem;padding:1rem;margin:1rem 0}
.muted{color:var(--muted)}
.status{font-weight:600}.status-active{color:#1f9d55}.status-expired,.status-limited,.status-disabled{color:#d64545}
.announce{white-space:pre-line;border-left:4px solid var(--accent)}
.bar{height:.6rem;background:var(--line);border-radius:.3rem;overflow:hidden;margin:.25rem 0 .75rem}
.bar>div{height:100%;background:var(--accent)}
.qr{display:block;width:100%;max-width:16rem;height:auto;margin:.5rem auto;border-radius:.25rem}
code{display:block;font:.85rem/1.4 ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere;word-break:break-all;background:var(--bg);padding:.5rem;border-radius:.4rem;user-select:all}
button{margin-top:.5rem;width:100%;padding:.6rem;font:inherit;font-weight:600;color:#fff;background:var(--accent);border:0;border-radius:.5rem;cursor:pointer}
@media (min-width:40rem){button{width:auto;padding:.5rem 1.25rem}}
a{color:var(--accent)}
.langs{display:flex;gap:.75rem;justify-content:flex-end;font-size:.9rem}
code,.qr{direction:ltr}
";

/// Copies the text of the element a button names in `data-copy`; the Clipboard
/// API where the page is a secure context, a hidden textarea elsewhere.
const SCRIPT: &str = "\
document.addEventListener('click',function(e){\
var b=e.target.closest('button[data-copy]');if(!b)return;\
var t=document.getElementById(b.getAttribute('data-copy')).textContent;\
function done(){b.textContent=b.getAttribute('data-done');setTimeout(function(){b.textContent=b.getAttribute('data-label')},1500)}\
function fallback(){var a=document.createElement('textarea');a.value=t;a.setAttribute('readonly','');\
a.style.position='fixed';a.style.opacity='0';document.body.appendChild(a);a.select();\
try{document.execCommand('copy');done()}catch(_){}document.body.removeChild(a)}\
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t).then(done,fallback)}else{fallback()}\
});";

/// The policy: nothing from anywhere, inline styles, and this script only.
static CSP: LazyLock<String> = LazyLock::new(|| {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT));
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{hash}'; \
         base-uri 'none'; form-action 'none'"
    )
});

/// The `Content-Security-Policy` header the page is served with: the meta element's
/// policy plus `frame-ancestors 'none'` (which only a header can carry), so no other
/// site may frame the page.
pub fn policy() -> &'static str {
    static HEADER: LazyLock<String> = LazyLock::new(|| format!("{}; frame-ancestors 'none'", *CSP));
    &HEADER
}

/// Renders the page: a complete HTML5 document.
pub fn render(page: &Page<'_>) -> String {
    let mut out = String::with_capacity(8192 + page.links.len() * 12_000);
    // Writing to a String cannot fail.
    let _ = write_page(&mut out, page);
    out
}

fn write_page(out: &mut String, page: &Page<'_>) -> fmt::Result {
    let lang = page.lang;
    let words = lang.words();
    let title = Esc(page.title);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"{code}\" dir=\"{dir}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex, nofollow\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n",
        code = lang.code(),
        dir = lang.dir(),
        csp = Esc(&CSP),
    )?;

    write!(
        out,
        "<nav class=\"langs\" aria-label=\"{}\">",
        words.language
    )?;
    for other in Lang::ALL {
        if other == lang {
            write!(
                out,
                "<span lang=\"{}\" aria-current=\"true\">{}</span>",
                other.code(),
                other.name()
            )?;
        } else {
            write!(
                out,
                "<a href=\"?lang={code}\" lang=\"{code}\" hreflang=\"{code}\">{}</a>",
                other.name(),
                code = other.code()
            )?;
        }
    }
    out.push_str("</nav>\n");

    write!(
        out,
        "<header>\n<h1>{title}</h1>\n<p>{user} · <span class=\"status status-{class}\">{status}</span>",
        user = Esc(page.username),
        class = status_class(page.status.label()),
        status = lang.status(page.status),
    )?;
    if let Some(reason) = page.status_reason {
        write!(
            out,
            " <span class=\"muted\">({})</span>",
            lang.reason(reason)
        )?;
    }
    out.push_str("</p>\n</header>\n");

    if let Some(announce) = page.announce {
        writeln!(
            out,
            "<section class=\"card announce\" dir=\"auto\">{}</section>",
            Esc(announce)
        )?;
    }

    write!(
        out,
        "<section class=\"card\">\n<h2>{}</h2>\n",
        words.traffic
    )?;
    match page.limit_bytes {
        Some(limit) => {
            let percent = used_percent(page.used_bytes, limit);
            write!(
                out,
                "<p>{}</p>\n<div class=\"bar\" role=\"progressbar\" \
                 aria-valuemin=\"0\" aria-valuemax=\"100\" aria-valuenow=\"{percent}\">\
                 <div style=\"width:{percent}%\"></div></div>\n",
                lang.used_of(page.used_bytes, limit, percent),
            )?;
        }
        None => writeln!(out, "<p>{}</p>", lang.used_unlimited(page.used_bytes))?,
    }
    write!(
        out,
        "<h2>{}</h2>\n<p>{}</p>\n</section>\n",
        words.expires,
        expiry_text(lang, page.expires_ms, page.now_ms)
    )?;

    write!(
        out,
        "<section class=\"card\">\n<h2>{}</h2>\n<p class=\"muted\">{}</p>\n",
        words.subscription, words.add_hint
    )?;
    write_qr(out, page.subscription_url, words.the_url, lang)?;
    write_copyable(out, "sub", page.subscription_url, lang)?;
    out.push_str("</section>\n");

    write!(out, "<section>\n<h2>{}</h2>\n", words.links)?;
    if page.links.is_empty() {
        writeln!(out, "<p class=\"muted\">{}</p>", words.no_links)?;
    }
    for (i, link) in page.links.iter().enumerate() {
        write!(
            out,
            "<article class=\"card\">\n<h3 dir=\"auto\">{}</h3>\n",
            Esc(link.name)
        )?;
        write_qr(out, link.link, link.name, lang)?;
        write_copyable(out, &format!("link-{i}"), link.link, lang)?;
        out.push_str("</article>\n");
    }
    out.push_str("</section>\n");

    if let Some(support) = page.support_url.map(str::trim) {
        if is_http(support) {
            writeln!(
                out,
                "<p><a href=\"{url}\" rel=\"noopener noreferrer\">{label}: {url}</a></p>",
                url = Esc(support),
                label = words.support,
            )?;
        } else {
            writeln!(out, "<p>{}: {}</p>", words.support, Esc(support))?;
        }
    }

    write!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

/// The text in a `<code>` with this id, and a button that copies it.
fn write_copyable(out: &mut String, id: &str, text: &str, lang: Lang) -> fmt::Result {
    let words = lang.words();
    write!(
        out,
        "<code id=\"{id}\">{text}</code>\n<button type=\"button\" data-copy=\"{id}\" \
         data-label=\"{copy}\" data-done=\"{copied}\">{copy}</button>\n",
        text = Esc(text),
        copy = words.copy,
        copied = words.copied,
    )
}

/// An inline SVG QR code of `text`, or a note when it is too long for one.
fn write_qr(out: &mut String, text: &str, label: &str, lang: Lang) -> fmt::Result {
    let words = lang.words();
    let Some(matrix) = qr_matrix(text) else {
        return writeln!(out, "<p class=\"muted\">{}</p>", words.too_long);
    };
    let size = matrix.width + 2 * QUIET_ZONE;
    write!(
        out,
        "<svg class=\"qr\" viewBox=\"0 0 {size} {size}\" role=\"img\" aria-label=\"{qr}: {label}\" \
         shape-rendering=\"crispEdges\"><rect width=\"{size}\" height=\"{size}\" fill=\"#fff\"/><path fill=\"#000\" d=\"",
        qr = words.qr,
        label = Esc(label),
    )?;
    // One sub-path per horizontal run of dark modules.
    for y in 0..matrix.width {
        let row = &matrix.dark[y * matrix.width..(y + 1) * matrix.width];
        let mut x = 0;
        while x < matrix.width {
            if !row[x] {
                x += 1;
                continue;
            }
            let run = row[x..].iter().take_while(|&&d| d).count();
            write!(
                out,
                "M{} {}h{run}v1h-{run}z",
                x + QUIET_ZONE,
                y + QUIET_ZONE
            )?;
            x += run;
        }
    }
    out.push_str("\"/></svg>\n");
    Ok(())
}

/// A standalone SVG image of the QR code of `text` (for `<img>` and downloads), or
/// `None` when it does not fit in one.
pub(crate) fn qr_svg(text: &str, label: &str) -> Option<String> {
    qr_matrix(text)?;
    let mut out = String::new();
    write_qr(&mut out, text, label, Lang::En).ok()?;
    Some(out.replacen("<svg ", "<svg xmlns=\"http://www.w3.org/2000/svg\" ", 1))
}

/// A QR code's modules, row by row, `true` for dark; no quiet zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QrMatrix {
    /// Modules on a side.
    pub(crate) width: usize,
    /// `width * width` modules, row-major.
    pub(crate) dark: Vec<bool>,
}

/// The QR code of `text` at error correction level M, or `None` when it does
/// not fit in one (version 40 holds 2,331 bytes at M).
pub(crate) fn qr_matrix(text: &str) -> Option<QrMatrix> {
    let code = qrcode::QrCode::new(text.as_bytes()).ok()?;
    let width = code.width();
    let dark = code
        .to_colors()
        .into_iter()
        .map(|c| c == qrcode::Color::Dark)
        .collect();
    Some(QrMatrix { width, dark })
}

/// `bytes` in binary units, to one decimal, a trailing `.0` dropped:
/// `0 B`, `1023 B`, `1 KiB`, `1.5 KiB`, `50 GiB`. Rounds half up, and moves to
/// the next unit rather than print `1024 KiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut unit = 1;
    loop {
        let div = 1u128 << (10 * unit);
        let tenths = (u128::from(bytes) * 10 + div / 2) / div;
        if tenths < 10_240 || unit == UNITS.len() - 1 {
            let (whole, frac) = (tenths / 10, tenths % 10);
            return if frac == 0 {
                format!("{whole} {}", UNITS[unit])
            } else {
                format!("{whole}.{frac} {}", UNITS[unit])
            };
        }
        unit += 1;
    }
}

/// Whole days left until `expires_ms`, counting a started day as one (1 ms
/// left is 1 day, 24 h + 1 ms is 2); `None` once `now_ms` has reached it.
pub fn days_left(expires_ms: i64, now_ms: i64) -> Option<u64> {
    const DAY_MS: i128 = 86_400_000;
    let left = i128::from(expires_ms) - i128::from(now_ms);
    if left <= 0 {
        return None;
    }
    u64::try_from((left + DAY_MS - 1) / DAY_MS).ok()
}

/// "2026-12-31 23:59 UTC (in 30 days)", "Expired on …", or "Never", in `lang`.
fn expiry_text(lang: Lang, expires_ms: Option<i64>, now_ms: i64) -> String {
    let Some(expires_ms) = expires_ms else {
        return lang.words().never.to_owned();
    };
    let date = lang
        .date(expires_ms)
        .unwrap_or_else(|| lang.words().unknown_date.to_owned());
    lang.expiry(&date, days_left(expires_ms, now_ms))
}

/// Used as a whole percentage of `limit`, capped at 100; a zero limit is full.
fn used_percent(used: u64, limit: u64) -> u64 {
    if limit == 0 {
        return 100;
    }
    let percent = u128::from(used) * 100 / u128::from(limit);
    percent.min(100) as u64
}

/// A CSS class from the status text: its ASCII letters and digits, lower-cased.
fn status_class(status: &str) -> String {
    status
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether `url` (already trimmed) is `http://` or `https://`, any case.
fn is_http(url: &str) -> bool {
    let starts = |scheme: &str| {
        url.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    };
    starts("http://") || starts("https://")
}

/// HTML-escapes for text and double- or single-quoted attributes alike.
struct Esc<'a>(&'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..at])?;
            f.write_str(match rest.as_bytes()[at] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[at + 1..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests;
