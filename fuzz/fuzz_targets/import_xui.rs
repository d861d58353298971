//! A 3x-ui inbound's settings, as a file an operator brings holds them: the clients
//! are read and mapped to users with no panic and no overflow, each user's usage and
//! limit at least any one of its clients'.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_panel::import::xui::{Source, SourceClient, SourceInbound, Traffic, read_clients};
use switchyard_panel::import::{Report, XUI, plan_xui};

/// The key the import gives a client's user: its subscription id when it is one.
fn key(c: &SourceClient) -> String {
    let id = &c.sub_id;
    let sub = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if sub {
        format!("sub:{id}")
    } else {
        format!("email:{}", c.email)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((protocol, settings)) = data.split_first() else {
        return;
    };
    let Ok(settings) = serde_json::from_slice::<serde_json::Value>(settings) else {
        return;
    };
    let Ok(clients) = read_clients(&settings) else {
        return;
    };
    let protocol = ["vless", "trojan", "vmess", "shadowsocks"][usize::from(*protocol % 4)];
    let traffic = clients
        .iter()
        .map(|c| {
            let used = c.total.wrapping_mul(3);
            (
                c.email.clone(),
                Traffic {
                    used,
                    all_time: used / 2,
                    enable: true,
                },
            )
        })
        .collect();
    let source = Source {
        layout: "2.x".into(),
        inbounds: vec![SourceInbound {
            protocol: protocol.into(),
            clients: clients.clone(),
            ..SourceInbound::default()
        }],
        traffic,
        sub_paths: Vec::new(),
        admins: Vec::new(),
    };
    let mut report = Report::new(XUI, "2.x", true);
    let users = plan_xui(&source, &mut report, 1_800_000_000_000);
    assert!(users.len() <= clients.len());
    for u in &users {
        assert!(u.lifetime >= u.used);
        let mine = clients.iter().filter(|c| u.source_key == key(c));
        for c in mine {
            if let Some(limit) = u.input.traffic_limit {
                assert!(limit >= c.total, "{limit} < {}", c.total);
            }
            assert!(u.used >= source.traffic[&c.email].used);
        }
    }
});
