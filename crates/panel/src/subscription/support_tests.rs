use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};

use super::*;
use crate::subscription::agents::check_rules;

fn entry(name: &str, protocol: EntryProtocol) -> Entry {
    Entry {
        name: name.into(),
        server: "node.example.com".into(),
        port: 443,
        protocol,
        transport: EntryTransport::Tcp,
        tls: Some(EntryTls::default()),
        route: None,
    }
}

fn hy2(name: &str) -> Entry {
    entry(
        name,
        EntryProtocol::Hysteria2 {
            password: "p".into(),
            obfs_password: None,
            ports: None,
            up_mbps: None,
            down_mbps: None,
            hop_interval: None,
        },
    )
}

fn trojan(name: &str) -> Entry {
    entry(
        name,
        EntryProtocol::Trojan {
            password: "p".into(),
        },
    )
}

#[test]
fn each_format_lacks_what_its_apps_cannot_run() {
    let table = [
        (Format::Xray, vec![Feature::Hysteria2]),
        (Format::SingBox, vec![Feature::Xhttp]),
        (Format::Clash, vec![Feature::Xhttp]),
        (Format::Links, vec![]),
    ];
    for (format, lacks) in table {
        let got: Vec<Feature> = Feature::ALL
            .into_iter()
            .filter(|f| Lacks::of_format(format).contains(*f))
            .collect();
        assert_eq!(got, lacks, "{format}");
    }
}

#[test]
fn xray_apps_lose_hysteria2_and_say_so() {
    let entries = vec![trojan("a"), hy2("b"), trojan("c")];
    let lacks = Lacks::for_request(Format::Xray, "v2rayN/7.16.3", &[]);
    let (kept, left) = keep_runnable(entries.clone(), &lacks);
    assert_eq!(kept, vec![entries[0].clone(), entries[2].clone()]);
    assert_eq!(left.total(), 1);
    assert_eq!(
        left.note().as_deref(),
        Some("1 server left out: this app cannot run Hysteria 2")
    );
    assert_eq!(
        left.announce(Some("Welcome".into())).as_deref(),
        Some("Welcome\n1 server left out: this app cannot run Hysteria 2")
    );
    // Everything else keeps it.
    for (format, ua) in [
        (Format::SingBox, "SFA (sing-box 1.13.14; language ru_RU)"),
        (Format::Clash, "clash-verge/v2.4.3"),
        (Format::Links, ""),
    ] {
        let (kept, left) = keep_runnable(entries.clone(), &Lacks::for_request(format, ua, &[]));
        assert_eq!(kept, entries, "{format}");
        assert_eq!(left.note(), None);
        assert_eq!(left.announce(Some("a".into())).as_deref(), Some("a"));
    }
}

#[test]
fn notes_count_servers_and_name_every_feature() {
    let mut left = LeftOut::default();
    left.add(Feature::Xhttp);
    left.add(Feature::Hysteria2);
    left.add(Feature::Hysteria2);
    assert_eq!(
        left.note().as_deref(),
        Some("3 servers left out: this app cannot run Hysteria 2 or XHTTP")
    );
    assert_eq!(LeftOut::default().announce(None), None);
}

#[test]
fn the_clash_for_windows_row_lacks_hysteria2() {
    let lacks = Lacks::for_request(Format::Clash, "ClashforWindows/0.20.39", &[]);
    assert!(lacks.contains(Feature::Hysteria2));
    let (kept, left) = keep_runnable(vec![hy2("h")], &lacks);
    assert!(kept.is_empty());
    assert_eq!(left.total(), 1);
    // Other Clash apps run mihomo, which has Hysteria 2.
    let mihomo = Lacks::for_request(Format::Clash, "mihomo/1.19.2", &[]);
    assert!(!mihomo.contains(Feature::Hysteria2));
}

#[test]
fn operator_rows_add_and_take_away() {
    let rules: Vec<AgentRule> =
        toml::from_str::<std::collections::HashMap<String, Vec<AgentRule>>>(
            r#"
        agents = [
            { app = "Old SFA", prefix = "oldsfa/", format = "sing-box", lacks = ["hysteria2"] },
            { app = "New Happ", prefix = "happ/", format = "xray", runs = ["hysteria2"] },
        ]
        "#,
        )
        .unwrap()
        .remove("agents")
        .unwrap();
    assert_eq!(check_rules(&rules), Ok(()));
    let old = Lacks::for_request(Format::SingBox, "oldsfa/1", &rules);
    assert!(old.contains(Feature::Hysteria2) && old.contains(Feature::Xhttp));
    let happ = Lacks::for_request(Format::Xray, "Happ/3.13.0", &rules);
    assert!(!happ.contains(Feature::Hysteria2));
    // A `?format=` other than the row's keeps the format's defaults.
    let asked = Lacks::for_request(Format::SingBox, "Happ/3.13.0", &rules);
    assert_eq!(asked, Lacks::of_format(Format::SingBox));
}

#[test]
fn operator_rows_are_checked_by_field() {
    let both: Vec<AgentRule> = toml::from_str::<std::collections::HashMap<String, Vec<AgentRule>>>(
        r#"agents = [{ app = "x", prefix = "x/", format = "xray", lacks = ["xhttp"], runs = ["xhttp"] }]"#,
    )
    .unwrap()
    .remove("agents")
    .unwrap();
    let err = check_rules(&both).unwrap_err();
    assert_eq!(err.field, "subscription.agents[0].runs");
    assert!(err.message.contains("xhttp"), "{}", err.message);
    // An unknown feature is refused by name.
    let unknown = toml::from_str::<std::collections::HashMap<String, Vec<AgentRule>>>(
        r#"agents = [{ app = "x", prefix = "x/", format = "xray", lacks = ["quic"] }]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(unknown.contains("quic"), "{unknown}");
}
