//! gRPC in Clash configs: mihomo's `network: grpc` with
//! `grpc-opts.grpc-service-name`, written and read back; what mihomo cannot carry
//! (multi mode, an authority) is left out and reads back as none; other writers'
//! configs read with mihomo's defaults.

use super::*;
use crate::clash::{ClashOptions, client_config, proxy};
use crate::testing::entries::{UUID, entry, grpc, tls, trojan, vless};

fn grpc_of(name: &str, authority: Option<&str>, multi: bool) -> EntryTransport {
    EntryTransport::Grpc {
        service_name: name.into(),
        authority: authority.map(str::to_owned),
        multi,
    }
}

/// TLS without a pinned certificate (a pin reads back as its SHA-256).
fn unpinned() -> Option<EntryTls> {
    tls().map(|t| EntryTls {
        certificate_pem: None,
        ..t
    })
}

#[test]
fn grpc_proxies_are_written_as_mihomo_reads_them() {
    let out = proxy(&entry("g", vless(), grpc(), unpinned()), "g");
    assert_eq!(out["network"], "grpc");
    assert_eq!(
        out["grpc-opts"],
        serde_json::json!({ "grpc-service-name": "tun" })
    );
    assert!(out.get("ws-opts").is_none(), "{out}");
    // Multi mode and an authority have no mihomo form: plain gun, which nodes serve too.
    let multi = entry(
        "m",
        trojan(),
        grpc_of("m", Some("a.example"), true),
        unpinned(),
    );
    assert_eq!(
        proxy(&multi, "m")["grpc-opts"],
        serde_json::json!({ "grpc-service-name": "m" })
    );

    // A pin on VLESS over gRPC stays a pin, never `skip-cert-verify` (mihomo 1.19.2
    // leaves the pin out there and refuses the certificate: better than connecting
    // unverified); it reads back as the pin.
    let pinned = entry("p", vless(), grpc(), tls());
    let out = proxy(&pinned, "p");
    assert!(out.get("skip-cert-verify").is_none(), "{out}");
    assert!(out["fingerprint"].is_string(), "{out}");
    let out = proxy(&entry("p", trojan(), grpc(), tls()), "p");
    assert!(out.get("skip-cert-verify").is_none(), "{out}");
    assert!(out["fingerprint"].is_string(), "{out}");
    let yaml = client_config(std::slice::from_ref(&pinned), &ClashOptions::default());
    let back = crate::clash::entries(&yaml).unwrap();
    let back_tls = back[0].tls.as_ref().unwrap();
    assert!(!back_tls.insecure);
    assert_eq!(back_tls.certificate_sha256, tls().unwrap().pin_sha256());

    let entries = vec![
        entry("g", vless(), grpc(), unpinned()),
        entry("t", trojan(), grpc_of("a.b_c-d", None, false), unpinned()),
        entry("plain", vless(), grpc_of("p", None, false), None),
    ];
    let yaml = client_config(&entries, &ClashOptions::default());
    assert!(
        yaml.contains("    \"grpc-opts\":\n      \"grpc-service-name\": \"a.b_c-d\"\n"),
        "{yaml}"
    );
    assert_eq!(crate::clash::entries(&yaml), Ok(entries));
    let yaml = client_config(std::slice::from_ref(&multi), &ClashOptions::default());
    assert_eq!(
        crate::clash::entries(&yaml).unwrap()[0].transport,
        grpc_of("m", None, false)
    );
}

#[test]
fn grpc_proxies_other_writers_make() {
    let yaml = format!(
        r#"proxies:
  - {{name: named, type: vless, server: h, port: 443, uuid: {UUID}, network: grpc, tls: true,
     servername: s, grpc-opts: {{grpc-service-name: svc, grpc-user-agent: x, ping-interval: 10}}}}
  - {{name: default, type: trojan, server: h, port: 443, password: pw, network: grpc}}
  - {{name: empty, type: vless, server: h, port: 443, uuid: {UUID}, network: grpc,
     grpc-opts: {{grpc-service-name: ""}}}}
  - {{name: number, type: vless, server: h, port: 443, uuid: {UUID}, network: grpc,
     grpc-opts: {{grpc-service-name: 42}}}}
  - {{name: h2, type: vless, server: h, port: 443, uuid: {UUID}, network: h2}}
"#
    );
    let read_back = read(&yaml).unwrap();
    let transports: Vec<(&str, &EntryTransport)> = read_back
        .entries
        .iter()
        .map(|e| (e.name.as_str(), &e.transport))
        .collect();
    // No name or an empty one is mihomo's default service, `GunService`.
    assert_eq!(
        transports,
        [
            ("named", &grpc_of("svc", None, false)),
            ("default", &grpc_of("GunService", None, false)),
            ("empty", &grpc_of("GunService", None, false)),
            ("number", &grpc_of("42", None, false)),
        ]
    );
    assert_eq!(
        read_back.entries[0].tls,
        Some(EntryTls {
            server_name: Some("s".into()),
            ..EntryTls::default()
        })
    );
    let skipped: Vec<String> = read_back.skipped.iter().map(Skipped::to_string).collect();
    assert_eq!(
        skipped,
        [r#"proxies[4] ("h2"): network "h2" is not read (only tcp, ws and grpc)"#]
    );
    for (opts, field, problem) in [
        ("grpc-opts: [svc]", "grpc-opts", "must be a mapping"),
        (
            "grpc-opts: {grpc-service-name: [svc]}",
            "grpc-opts.grpc-service-name",
            "must be a string",
        ),
    ] {
        let bad = format!(
            "proxies: [{{name: x, type: vless, server: h, port: 1, uuid: u, network: grpc, {opts}}}]"
        );
        assert_eq!(
            entries(&bad).unwrap_err().to_string(),
            format!(r#"proxies[0] ("x"): `{field}` {problem}"#)
        );
    }
}
