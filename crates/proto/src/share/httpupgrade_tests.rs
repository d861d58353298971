//! HTTPUpgrade share links: `type=httpupgrade` with `path` and `host`, as v2rayN,
//! v2rayNG and Xray's share-link convention write them.

use super::*;
use crate::entry::EntryTls;
use crate::testing::entries::{self as e, UUID};

fn up(path: &str, host: Option<&str>) -> EntryTransport {
    EntryTransport::HttpUpgrade {
        path: path.into(),
        host: host.map(str::to_owned),
    }
}

fn tls() -> Option<EntryTls> {
    Some(EntryTls {
        server_name: Some("sni.example.com".into()),
        ..EntryTls::default()
    })
}

#[test]
fn httpupgrade_links_exactly_and_back() {
    let cases = [
        (
            e::entry("up", e::vless(), up("/up", Some("cdn.example.com")), tls()),
            format!(
                "vless://{UUID}@node.example.com:443?type=httpupgrade&path=%2Fup\
                 &host=cdn.example.com&security=tls&sni=sni.example.com&encryption=none#up"
            ),
        ),
        (
            e::entry("up", e::vless(), up("/a b", None), None),
            format!(
                "vless://{UUID}@node.example.com:443?type=httpupgrade&path=%2Fa%20b\
                 &security=none&encryption=none#up"
            ),
        ),
        (
            e::entry("t", e::trojan(), up("/t", None), tls()),
            "trojan://pw@node.example.com:443?type=httpupgrade&path=%2Ft&security=tls\
             &sni=sni.example.com#t"
                .to_owned(),
        ),
    ];
    for (entry, link) in cases {
        assert_eq!(to_link(&entry), link);
        assert_eq!(parse_link(&link), Ok(entry));
    }
}

#[test]
fn httpupgrade_links_written_by_other_apps() {
    // v2rayN's order (host before path), no path meaning `/`, an empty host none.
    let read = |link: &str| parse_link(link).map(|e| e.transport);
    assert_eq!(
        read(&format!(
            "vless://{UUID}@h:443?encryption=none&security=tls&sni=s&type=httpupgrade\
             &host=cdn.example.com&path=%2Fup%3Fed%3D2048#x"
        )),
        Ok(up("/up?ed=2048", Some("cdn.example.com")))
    );
    assert_eq!(
        read(&format!("vless://{UUID}@h:80?type=httpupgrade&host=")),
        Ok(up("/", None))
    );
    assert_eq!(
        read(&format!("vless://{UUID}@h:80?type=kcp")),
        Err(LinkError::UnsupportedTransport("kcp".into()))
    );
    assert_eq!(
        LinkError::UnsupportedTransport("kcp".into()).to_string(),
        "unsupported transport type=\"kcp\": only tcp, ws, httpupgrade, grpc and xhttp are read"
    );
}

#[test]
fn httpupgrade_subscriptions_round_trip() {
    let entries = vec![
        e::entry("a", e::vless(), e::httpupgrade(), tls()),
        e::entry("b", e::trojan(), up("/b", None), tls()),
    ];
    assert_eq!(
        parse_subscription(&subscription_base64(&entries)),
        Ok(entries)
    );
}
