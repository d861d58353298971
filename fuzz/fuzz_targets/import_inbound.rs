//! A source panel's inbound, as its Xray config (a file or a database an operator
//! brings) holds it: turned into this panel's inbound or a reason, with no panic; a
//! plan listens on a real port, keeps the tag as its name, carries REALITY's private
//! key exactly when it is REALITY, and gives Vision only to VLESS over TCP with TLS
//! or REALITY.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_panel::import::{XrayInbound, plan_inbound};
use switchyard_panel::model::{InboundSecurity, InboundTransport, Protocol};

fuzz_target!(|data: &[u8]| {
    let Some((hint, json)) = data.split_first() else {
        return;
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    let tag = value.get("tag").and_then(|t| t.as_str()).unwrap_or("").to_owned();
    let Ok(p) = plan_inbound(&XrayInbound(value), 7, hint & 1 == 1) else {
        return;
    };
    assert!(p.input.port > 0);
    assert_eq!(p.input.name, tag);
    assert_eq!(p.input.server_id, 7);
    let reality = matches!(p.input.security, InboundSecurity::Reality { .. });
    assert_eq!(reality, p.reality_private_key.is_some());
    if p.input.flow.is_some() {
        assert_eq!(p.input.protocol, Protocol::Vless);
        assert_eq!(p.input.transport, InboundTransport::Tcp);
        assert!(p.input.security.encrypts());
    }
});
