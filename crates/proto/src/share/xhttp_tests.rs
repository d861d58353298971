//! XHTTP share links: `type=xhttp` with `path`, `host`, `mode` and, when anything
//! differs from Xray's defaults, `extra` (Xray's `xhttpSettings.extra` as JSON), the
//! form v2rayN and v2rayNG write and read.

use super::*;
use crate::entry::EntryTls;
use crate::entry::xhttp::XhttpExtra;
use crate::testing::entries::{self as e, UUID};
use crate::xhttp::{Mode, Range};

fn xhttp(path: &str, host: Option<&str>, mode: Mode, extra: Option<XhttpExtra>) -> EntryTransport {
    EntryTransport::Xhttp {
        path: path.into(),
        host: host.map(str::to_owned),
        mode,
        extra,
    }
}

fn tls() -> Option<EntryTls> {
    Some(EntryTls {
        server_name: Some("sni.example.com".into()),
        ..EntryTls::default()
    })
}

fn extra() -> XhttpExtra {
    XhttpExtra {
        x_padding_bytes: Some(Range { from: 200, to: 400 }),
        sc_max_each_post_bytes: Some(Range::fixed(500_000)),
        max_concurrency: Some(Range { from: 4, to: 8 }),
        ..XhttpExtra::default()
    }
}

#[test]
fn xhttp_links_exactly_and_back() {
    let cases = [
        (
            e::entry("x", e::vless(), e::xhttp(), tls()),
            format!(
                "vless://{UUID}@node.example.com:443?type=xhttp&path=%2Fxh&mode=auto\
                 &security=tls&sni=sni.example.com&encryption=none#x"
            ),
        ),
        (
            e::entry(
                "p",
                e::trojan(),
                xhttp(
                    "/up",
                    Some("cdn.example.com"),
                    Mode::PacketUp,
                    Some(extra()),
                ),
                tls(),
            ),
            "trojan://pw@node.example.com:443?type=xhttp&path=%2Fup&host=cdn.example.com\
             &mode=packet-up&extra=%7B%22scMaxEachPostBytes%22%3A%22500000%22%2C\
             %22xPaddingBytes%22%3A%22200-400%22%2C%22xmux%22%3A%7B%22maxConcurrency%22\
             %3A%224-8%22%7D%7D&security=tls&sni=sni.example.com#p"
                .to_owned(),
        ),
    ];
    for (entry, link) in cases {
        assert_eq!(to_link(&entry), link);
        assert_eq!(parse_link(&link), Ok(entry));
    }
}

#[test]
fn xhttp_links_written_by_other_apps() {
    let read = |query: &str| parse_link(&format!("vless://{UUID}@h:443?{query}#x"));
    let transport = |query: &str| read(query).map(|e| e.transport);
    // No mode is auto, no path `/`, an empty host none.
    assert_eq!(
        transport("type=xhttp&host=&security=tls"),
        Ok(xhttp("/", None, Mode::Auto, None))
    );
    for mode in Mode::ALL {
        assert_eq!(
            transport(&format!("type=xhttp&path=%2Fa&mode={mode}")),
            Ok(xhttp("/a", None, mode, None))
        );
    }
    // Ranges as numbers or strings; keys of Xray's this client has no use for are
    // ignored; an extra of defaults only is none.
    let json = r#"{"xPaddingBytes":"200-400","scMaxEachPostBytes":500000,"noGRPCHeader":false,"xmux":{"maxConcurrency":"4-8"}}"#;
    assert_eq!(
        transport(&format!(
            "type=xhttp&path=%2Fa&extra={}",
            percent::encode(json)
        )),
        Ok(xhttp("/a", None, Mode::Auto, Some(extra())))
    );
    assert_eq!(
        transport("type=xhttp&extra=%7B%7D"),
        Ok(xhttp("/", None, Mode::Auto, None))
    );
    // An unknown mode or an extra that does not read is refused, by name.
    assert_eq!(
        read("type=xhttp&mode=stream"),
        Err(LinkError::UnsupportedXhttpMode("stream".into()))
    );
    assert_eq!(
        LinkError::UnsupportedXhttpMode("stream".into()).to_string(),
        "unsupported XHTTP mode=\"stream\": only auto, packet-up, stream-up and stream-one are read"
    );
    for bad in [
        "[1]",
        "nojson",
        r#"{"xPaddingBytes":"9-1"}"#,
        r#"{"xmux":3}"#,
    ] {
        assert_eq!(
            read(&format!("type=xhttp&extra={}", percent::encode(bad))),
            Err(LinkError::BadXhttpExtra(excerpt(bad)))
        );
    }
    assert_eq!(
        LinkError::BadXhttpExtra("[1]".into()).to_string(),
        "the XHTTP extra=\"[1]\" is not a JSON object of XHTTP settings"
    );
}

#[test]
fn xhttp_subscriptions_round_trip() {
    let entries = vec![
        e::entry("a", e::vless(), e::xhttp(), tls()),
        e::entry(
            "b",
            e::trojan(),
            xhttp(
                "/b",
                Some("cdn.example.com"),
                Mode::StreamOne,
                Some(extra()),
            ),
            tls(),
        ),
    ];
    assert_eq!(
        parse_subscription(&subscription_base64(&entries)),
        Ok(entries)
    );
}
