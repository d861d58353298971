//! The response headers client apps read from a subscription, as text. Pure: the
//! handler turns them into a `HeaderMap`.
//!
//! | header | value | read by |
//! |---|---|---|
//! | `subscription-userinfo` | `upload=U; download=D; total=T; expire=E` (bytes; Unix seconds; `0` = unlimited / never) | Clash family, sing-box apps, Hiddify, Happ, Streisand, v2rayN... |
//! | `profile-update-interval` | hours, an integer | Clash family, Hiddify, Happ |
//! | `profile-title` | the title, or `base64:` + its base64 when not ASCII | Clash family, Hiddify, Happ, Streisand |
//! | `content-disposition` | `attachment; filename="NAME"` (quoted: Hiddify's parser needs the quotes) | Clash family (profile name) |
//! | `support-url`, `profile-web-page-url` | URLs | Hiddify, Happ, Clash Verge |
//! | `announce` | text, `base64:` form when not ASCII | Happ, Hiddify |

use base64::Engine;

/// What goes into the headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionHeaders<'a> {
    /// The profile's title.
    pub title: &'a str,
    /// Bytes the user sent this period.
    pub upload: u64,
    /// Bytes the user received this period.
    pub download: u64,
    /// The limit, bytes; none is unlimited.
    pub total: Option<u64>,
    /// The expiry, Unix ms; none is never.
    pub expire_ms: Option<i64>,
    /// Hours between fetches.
    pub update_interval_h: u32,
    /// The download's file name (ASCII).
    pub file_name: &'a str,
    /// Where users get help.
    pub support_url: Option<&'a str>,
    /// The subscription's page for people.
    pub web_page_url: Option<&'a str>,
    /// A notice to show in the app.
    pub announce: Option<&'a str>,
}

/// `text` as header text: itself when printable ASCII, else `base64:` + its base64
/// (the form Clash Verge, Hiddify and Happ decode), so emoji and any language pass.
pub fn encoded(text: &str) -> String {
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        text.to_owned()
    } else {
        format!(
            "base64:{}",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }
}

/// `upload=…; download=…; total=…; expire=…` with `0` for unlimited and never (an
/// expiry before 1970 is `0` too: apps take `0` as "never", and a user that old is
/// refused by the nodes anyway).
pub fn userinfo(upload: u64, download: u64, total: Option<u64>, expire_ms: Option<i64>) -> String {
    let expire = expire_ms.map_or(0, |ms| ms.max(0) / 1000);
    format!(
        "upload={upload}; download={download}; total={}; expire={expire}",
        total.unwrap_or(0)
    )
}

/// `attachment; filename="NAME"`; characters that cannot stand in a quoted ASCII
/// file name become `_`.
pub fn disposition(file_name: &str) -> String {
    let clean: String = file_name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("attachment; filename=\"{clean}\"")
}

impl SubscriptionHeaders<'_> {
    /// The headers as `(name, value)` pairs, in a fixed order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            (
                "subscription-userinfo",
                userinfo(self.upload, self.download, self.total, self.expire_ms),
            ),
            (
                "profile-update-interval",
                self.update_interval_h.to_string(),
            ),
            ("profile-title", encoded(self.title)),
            ("content-disposition", disposition(self.file_name)),
        ];
        if let Some(u) = self.support_url {
            out.push(("support-url", encoded(u)));
        }
        if let Some(u) = self.web_page_url {
            out.push(("profile-web-page-url", encoded(u)));
        }
        if let Some(a) = self.announce {
            out.push(("announce", encoded(a)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_stays_and_anything_else_is_base64() {
        assert_eq!(encoded("Switchyard VPN"), "Switchyard VPN");
        // "🇺🇸 VPN" in UTF-8, base64.
        assert_eq!(encoded("🇺🇸 VPN"), "base64:8J+HuvCfh7ggVlBO");
        // A control character is not header text either.
        assert_eq!(encoded("a\nb"), "base64:YQpi");
    }

    #[test]
    fn userinfo_has_zero_for_unlimited_and_never() {
        assert_eq!(
            userinfo(1, 2, None, None),
            "upload=1; download=2; total=0; expire=0"
        );
        assert_eq!(
            userinfo(0, 5_000, Some(10_737_418_240), Some(1_767_225_600_999)),
            "upload=0; download=5000; total=10737418240; expire=1767225600"
        );
        assert_eq!(
            userinfo(0, 0, None, Some(-5)),
            "upload=0; download=0; total=0; expire=0"
        );
    }

    #[test]
    fn the_file_name_is_quoted_and_ascii() {
        assert_eq!(
            disposition("switchyard.yaml"),
            "attachment; filename=\"switchyard.yaml\""
        );
        assert_eq!(
            disposition("my \"vpn\"/ü.txt"),
            "attachment; filename=\"my _vpn_/_.txt\""
        );
    }

    #[test]
    fn optional_headers_only_when_set() {
        let mut h = SubscriptionHeaders {
            title: "Switchyard",
            upload: 0,
            download: 0,
            total: None,
            expire_ms: None,
            update_interval_h: 12,
            file_name: "switchyard.txt",
            support_url: None,
            web_page_url: None,
            announce: None,
        };
        let names: Vec<&str> = h.pairs().iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "subscription-userinfo",
                "profile-update-interval",
                "profile-title",
                "content-disposition"
            ]
        );
        h.support_url = Some("https://t.me/help");
        h.web_page_url = Some("https://vpn.example.com/sub/x");
        h.announce = Some("Новый сервер");
        let pairs = h.pairs();
        assert_eq!(pairs[4], ("support-url", "https://t.me/help".to_owned()));
        assert_eq!(
            pairs[5],
            (
                "profile-web-page-url",
                "https://vpn.example.com/sub/x".to_owned()
            )
        );
        assert_eq!(pairs[6].0, "announce");
        assert!(pairs[6].1.starts_with("base64:"));
        assert_eq!(pairs[1].1, "12");
    }
}
