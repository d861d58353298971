//! Hysteria 2 share links: `hysteria2://PASSWORD@HOST:PORT/?sni=&insecure=1&obfs=
//! salamander&obfs-password=&mport=&pinSHA256=`, the official Hysteria 2 URI scheme
//! as v2rayN and NekoBox read it.

use super::*;
use crate::entry::EntryTls;
use crate::testing::entries as e;

fn hy2(obfs: Option<&str>, ports: Option<&str>) -> EntryProtocol {
    EntryProtocol::Hysteria2 {
        password: "p w/@".into(),
        obfs_password: obfs.map(str::to_owned),
        ports: ports.map(str::to_owned),
        up_mbps: None,
        down_mbps: None,
        hop_interval: None,
    }
}

fn tls(insecure: bool, pin: Option<[u8; 32]>) -> Option<EntryTls> {
    Some(EntryTls {
        server_name: Some("sni.example.com".into()),
        insecure,
        certificate_sha256: pin,
        ..EntryTls::default()
    })
}

#[test]
fn hysteria2_links_exactly_and_back() {
    let pin = [0xab; 32];
    let cases = [
        (
            e::entry("h", hy2(None, None), EntryTransport::Tcp, tls(false, None)),
            "hysteria2://p%20w%2F%40@node.example.com:443/?sni=sni.example.com#h".to_owned(),
        ),
        (
            e::entry(
                "o",
                hy2(Some("salt"), Some("20000-20010")),
                EntryTransport::Tcp,
                tls(true, Some(pin)),
            ),
            format!(
                "hysteria2://p%20w%2F%40@node.example.com:443/?sni=sni.example.com&insecure=1\
                 &obfs=salamander&obfs-password=salt&mport=20000-20010&pinSHA256={}#o",
                "ab".repeat(32)
            ),
        ),
    ];
    for (entry, link) in cases {
        assert_eq!(to_link(&entry), link);
        assert_eq!(parse_link(&link), Ok(entry));
    }
    let mut routed = e::entry("r", hy2(None, None), EntryTransport::Tcp, tls(false, None));
    routed.route = Some("7".into());
    assert!(to_link(&routed).ends_with("&route=7#r"));
    assert_eq!(parse_link(&to_link(&routed)), Ok(routed));
}

#[test]
fn hysteria2_links_lose_what_the_form_has_no_field_for() {
    // Bandwidths and the hop interval are the client's; a PEM travels as its hash.
    let mut entry = e::entry(
        "b",
        hy2(None, Some("20000-20010")),
        EntryTransport::Tcp,
        e::tls(),
    );
    if let EntryProtocol::Hysteria2 {
        up_mbps,
        down_mbps,
        hop_interval,
        ..
    } = &mut entry.protocol
    {
        *up_mbps = Some(10);
        *down_mbps = Some(50);
        *hop_interval = Some(15);
    }
    let link = to_link(&entry);
    let mut no_interval = entry.clone();
    if let EntryProtocol::Hysteria2 { hop_interval, .. } = &mut no_interval.protocol {
        *hop_interval = None;
    }
    assert_eq!(link, to_link(&no_interval));
    assert!(link.contains("mport=20000-20010"), "{link}");
    let back = parse_link(&link).unwrap();
    assert_eq!(back.protocol, hy2(None, Some("20000-20010")));
    let tls = back.tls.unwrap();
    assert_eq!(tls.certificate_sha256, entry.tls.unwrap().pin_sha256());
    assert!(tls.certificate_pem.is_none());
}

#[test]
fn hysteria2_links_written_by_other_apps() {
    // The official short scheme, the multi-port form, a pin with colons.
    let pin = vec!["AB"; 32].join(":");
    let entry = parse_link(&format!(
        "hy2://user:pass@h:20000-20005/?pinSHA256={pin}&insecure=0#x"
    ))
    .unwrap();
    assert_eq!(entry.port, 20000);
    assert_eq!(
        entry.protocol,
        EntryProtocol::Hysteria2 {
            password: "user:pass".into(),
            obfs_password: None,
            ports: Some("20000-20005".into()),
            up_mbps: None,
            down_mbps: None,
            hop_interval: None,
        }
    );
    let tls = entry.tls.unwrap();
    assert_eq!(tls.certificate_sha256, Some([0xab; 32]));
    assert!(!tls.insecure);
    assert_eq!(tls.server_name, None);
    // No `/` before the query, as some writers put it.
    assert!(parse_link("hysteria2://pw@[2001:db8::1]:443?obfs=salamander&obfs-password=o").is_ok());
}

#[test]
fn hysteria2_links_refused() {
    for (link, error) in [
        (
            "hysteria2://pw@h:443/?obfs=gecko&obfs-password=o",
            LinkError::UnsupportedObfs("gecko".into()),
        ),
        (
            "hysteria2://pw@h:443/?obfs=salamander",
            LinkError::UnsupportedObfs("salamander".into()),
        ),
        (
            "hysteria2://pw@h:443/?mport=5-1",
            LinkError::BadHopPorts("5-1".into()),
        ),
        (
            "hysteria2://pw@h:443,5000-6000/",
            LinkError::BadHopPorts("443,5000-6000".into()),
        ),
        ("hysteria2://pw@h:443/?pinSHA256=ab", LinkError::BadPin),
        (
            "hysteria2://@h:443/",
            LinkError::MissingCredentials("hysteria2"),
        ),
    ] {
        assert_eq!(parse_link(link), Err(error), "{link}");
    }
}
