use crate::{ConfigError, NodeConfig};

/// A node with one VLESS inbound on `transport` (TOML inline table) and `extra` lines.
fn config(transport: &str, extra: &str) -> Result<NodeConfig, ConfigError> {
    NodeConfig::from_toml(&format!(
        "[node]\nstate_dir = \"/tmp/x\"\n\n[[inbounds]]\ntag = \"in\"\nprotocol = \"vless\"\nport = 443\ntransport = {transport}\n{extra}\n"
    ))
}

fn refused(transport: &str, extra: &str) -> String {
    config(transport, extra).unwrap_err().to_string()
}

const WS: &str = "{ type = \"ws\", path = \"/ws\" }";

#[test]
fn trusted_proxies_are_read_on_header_transports() {
    let list = "trusted_proxies = [\"173.245.48.0/20\", \"127.0.0.1\", \"2400:cb00::/32\"]";
    for transport in [
        WS,
        "{ type = \"httpupgrade\", path = \"/up\" }",
        "{ type = \"grpc\", service_name = \"gun\" }",
        "{ type = \"xhttp\", path = \"/x\" }",
    ] {
        let c = config(transport, list).unwrap_or_else(|e| panic!("{transport}: {e}"));
        let nets: Vec<String> = c.inbounds[0]
            .trusted_networks()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(nets, ["173.245.48.0/20", "127.0.0.1/32", "2400:cb00::/32"]);
    }
    // Absent: empty, and not written back.
    let c = config(WS, "").unwrap();
    assert!(c.inbounds[0].trusted_proxies.is_empty());
    let json = serde_json::to_string(&c.inbounds[0]).unwrap();
    assert!(!json.contains("trusted_proxies"), "{json}");
}

#[test]
fn a_bad_entry_is_named() {
    assert_eq!(
        refused(WS, "trusted_proxies = [\"10.0.0.0/8\", \"cloudflare\"]"),
        "inbounds[0].trusted_proxies[1]: \"cloudflare\" is not an IP address (write a network as \"192.0.2.0/24\" or \"2001:db8::/32\")"
    );
    assert_eq!(
        refused(WS, "trusted_proxies = [\"10.0.0.0/33\"]"),
        "inbounds[0].trusted_proxies[0]: prefix length \"33\" is not 0-32"
    );
    let many: Vec<String> = (0..257)
        .map(|n| format!("\"10.0.{}.{}\"", n / 256, n % 256))
        .collect();
    assert_eq!(
        refused(WS, &format!("trusted_proxies = [{}]", many.join(", "))),
        "inbounds[0].trusted_proxies: at most 256 networks"
    );
    let ok: Vec<String> = many[..256].to_vec();
    config(WS, &format!("trusted_proxies = [{}]", ok.join(", "))).unwrap();
}

#[test]
fn transports_without_headers_refuse_them() {
    let problem = "inbounds[0].trusted_proxies: is for ws, httpupgrade, xhttp and grpc inbounds (their requests carry X-Forwarded-For)";
    assert_eq!(
        refused("{ type = \"tcp\" }", "trusted_proxies = [\"127.0.0.1\"]"),
        problem
    );
    let hysteria2 = NodeConfig::from_toml(
        "[node]\nstate_dir = \"/tmp/x\"\n\n[[inbounds]]\ntag = \"in\"\nprotocol = \"hysteria2\"\nport = 443\ntrusted_proxies = [\"127.0.0.1\"]\nsecurity = { type = \"tls\", cert = \"c.pem\", key = \"k.pem\" }\n",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(hysteria2, problem);
}
