//! gRPC share links: `type=grpc` with `serviceName`, `authority` and
//! `mode=gun|multi`, as Xray's share-link convention, v2rayN and v2rayNG write them.

use super::*;
use crate::entry::EntryTls;
use crate::testing::entries::{self as e, UUID};

fn grpc(service_name: &str, authority: Option<&str>, multi: bool) -> EntryTransport {
    EntryTransport::Grpc {
        service_name: service_name.into(),
        authority: authority.map(str::to_owned),
        multi,
    }
}

fn tls() -> Option<EntryTls> {
    Some(EntryTls {
        server_name: Some("sni.example.com".into()),
        ..EntryTls::default()
    })
}

#[test]
fn grpc_links_exactly_and_back() {
    let cases = [
        (
            e::entry("g", e::vless(), e::grpc(), tls()),
            format!(
                "vless://{UUID}@node.example.com:443?type=grpc&serviceName=tun&mode=gun\
                 &security=tls&sni=sni.example.com&encryption=none#g"
            ),
        ),
        (
            e::entry(
                "m",
                e::vless(),
                grpc("a.b_c-d", Some("cdn.example.com"), true),
                tls(),
            ),
            format!(
                "vless://{UUID}@node.example.com:443?type=grpc&serviceName=a.b_c-d\
                 &authority=cdn.example.com&mode=multi&security=tls&sni=sni.example.com\
                 &encryption=none#m"
            ),
        ),
        (
            e::entry("t", e::trojan(), grpc("t", None, false), None),
            "trojan://pw@node.example.com:443?type=grpc&serviceName=t&mode=gun\
             &security=none#t"
                .to_owned(),
        ),
        // Xray's custom-path form (a service name starting with `/`) travels escaped.
        (
            e::entry("p", e::trojan(), grpc("/my/Tun", None, false), tls()),
            "trojan://pw@node.example.com:443?type=grpc&serviceName=%2Fmy%2FTun&mode=gun\
             &security=tls&sni=sni.example.com#p"
                .to_owned(),
        ),
    ];
    for (entry, link) in cases {
        assert_eq!(to_link(&entry), link);
        assert_eq!(parse_link(&link), Ok(entry));
    }
}

#[test]
fn grpc_links_written_by_other_apps() {
    let read = |query: &str| parse_link(&format!("vless://{UUID}@h:443?{query}#x"));
    let transport = |query: &str| read(query).map(|e| e.transport);
    // v2rayN's order; no mode is gun, an empty authority none.
    assert_eq!(
        transport("encryption=none&security=tls&sni=s&type=grpc&authority=&serviceName=svc"),
        Ok(grpc("svc", None, false))
    );
    assert_eq!(
        transport("type=grpc&mode=multi&serviceName=svc&authority=a.example"),
        Ok(grpc("svc", Some("a.example"), true))
    );
    // No serviceName is the empty one, as Xray and sing-box take it.
    assert_eq!(transport("type=grpc&mode="), Ok(grpc("", None, false)));
    // An unknown mode is refused, by name: reading it as gun would dial another path.
    for mode in ["guna", "GUN", "raw"] {
        let e = read(&format!("type=grpc&serviceName=svc&mode={mode}")).unwrap_err();
        assert_eq!(e, LinkError::UnsupportedGrpcMode(mode.into()));
    }
    assert_eq!(
        LinkError::UnsupportedGrpcMode("guna".into()).to_string(),
        "unsupported gRPC mode=\"guna\": only gun and multi are read"
    );
    let long = "m".repeat(100);
    assert_eq!(
        read(&format!("type=grpc&mode={long}")),
        Err(LinkError::UnsupportedGrpcMode("m".repeat(32)))
    );
    assert_eq!(
        LinkError::UnsupportedTransport("h2".into()).to_string(),
        "unsupported transport type=\"h2\": only tcp, ws, httpupgrade, grpc and xhttp are read"
    );
}

#[test]
fn grpc_subscriptions_round_trip() {
    let entries = vec![
        e::entry("a", e::vless(), e::grpc(), tls()),
        e::entry(
            "b",
            e::trojan(),
            grpc("b", Some("cdn.example.com"), true),
            tls(),
        ),
    ];
    assert_eq!(
        parse_subscription(&subscription_base64(&entries)),
        Ok(entries)
    );
}
