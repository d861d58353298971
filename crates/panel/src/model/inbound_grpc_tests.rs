//! A gRPC inbound's checks: the service name by its field, VLESS or Trojan only,
//! plain, TLS or REALITY, no Vision flow; the API's JSON form.

use super::*;

fn grpc(name: &str, multi_mode: bool) -> InboundTransport {
    InboundTransport::Grpc {
        service_name: name.into(),
        multi_mode,
    }
}

#[test]
fn grpc_errors_name_the_field() {
    let none = InboundSecurity::None;
    let tls = InboundSecurity::Tls {
        certificate: TlsCertificate::SelfSigned,
    };
    let check = |protocol, transport: &InboundTransport, security: &InboundSecurity| {
        check_inbound(protocol, 443, transport, security, None, 1.0).map_err(|e| e.field)
    };
    for name in ["tun", "a.b_c-d", "GunService", &"x".repeat(128)] {
        assert_eq!(check(Protocol::Vless, &grpc(name, false), &tls), Ok(()));
        assert_eq!(check(Protocol::Trojan, &grpc(name, true), &none), Ok(()));
    }
    for name in ["", "a/b", "a b", "tün", "/tun", "a?b", &"x".repeat(129)] {
        let e =
            check_inbound(Protocol::Vless, 443, &grpc(name, false), &tls, None, 1.0).unwrap_err();
        assert_eq!(e.field, "transport.service_name", "{name:?}");
        assert_eq!(e.message, "must be 1 to 128 letters, digits, _, . and -");
    }
    // Shadowsocks runs over TCP only.
    let ss = check_inbound(
        Protocol::Shadowsocks,
        443,
        &grpc("tun", false),
        &none,
        Some("2022-blake3-aes-128-gcm"),
        1.0,
    );
    assert_eq!(ss.map_err(|e| e.field), Err("transport".to_owned()));
    // gRPC runs over REALITY (HTTP/2 inside its TLS); Vision is for VLESS over TCP.
    let reality = InboundSecurity::Reality {
        dest: "www.example.com:443".into(),
        server_names: vec!["www.example.com".into()],
        short_ids: vec![],
        max_time_diff_ms: REALITY_MAX_TIME_DIFF_MS,
        fingerprint: REALITY_FINGERPRINT.into(),
    };
    let flow = |security: &InboundSecurity, flow| {
        check_reality_and_flow(Protocol::Vless, &grpc("tun", false), security, flow, None)
            .map_err(|e| e.field)
    };
    assert_eq!(flow(&tls, None), Ok(()));
    assert_eq!(flow(&reality, None), Ok(()));
    assert_eq!(flow(&tls, Some(Flow::Vision)), Err("flow".to_owned()));
}

#[test]
fn grpc_in_the_api_json() {
    let read = |json: &str| serde_json::from_str::<InboundTransport>(json).map_err(|_| ());
    assert_eq!(
        read(r#"{"type": "grpc", "service_name": "tun"}"#),
        Ok(grpc("tun", false))
    );
    assert_eq!(
        read(r#"{"type": "grpc", "service_name": "tun", "multi_mode": true}"#),
        Ok(grpc("tun", true))
    );
    // The service name is required; unknown fields are refused.
    assert_eq!(read(r#"{"type": "grpc"}"#), Err(()));
    assert_eq!(
        read(r#"{"type": "grpc", "service_name": "tun", "path": "/tun"}"#),
        Err(())
    );
    assert_eq!(
        serde_json::to_value(grpc("tun", false)).ok(),
        Some(serde_json::json!({"type": "grpc", "service_name": "tun", "multi_mode": false}))
    );
}

#[test]
fn service_names() {
    assert!(is_grpc_service_name("Switchyard.Tunnel_v1-2"));
    assert!(!is_grpc_service_name("svc/Tun"));
    assert!(!is_grpc_service_name(""));
}
