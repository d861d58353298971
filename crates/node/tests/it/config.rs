//! Every config error names its field; good configs read from TOML and JSON alike.

use switchyard_node::NodeConfig;

fn err(toml: &str) -> String {
    NodeConfig::from_toml(toml).unwrap_err().to_string()
}

const INBOUND: &str = "[[inbounds]]\ntag = \"a\"\nprotocol = \"vless\"\nport = 443\n";

#[test]
fn an_empty_file_is_a_node_with_nothing_to_serve() {
    let c = NodeConfig::from_toml("").unwrap();
    assert!(c.inbounds.is_empty());
    assert_eq!(c.control.listen.to_string(), "127.0.0.1:9090");
    assert!(!c.node.allow_private_destinations);
}

#[test]
fn unknown_fields_and_bad_types_are_refused() {
    assert!(err("verison = 1").contains("verison"));
    assert!(err("[[inbounds]]\ntag = \"a\"\nprotocol = \"vmess\"\nport = 1").contains("vmess"));
    assert!(err("[[inbounds]]\ntag = \"a\"\nprotocol = \"vless\"\nport = 70000").contains("70000"));
}

#[test]
fn each_problem_names_its_field() {
    let cases = [
        ("[control]\nlisten = \"0.0.0.0:9090\"", "control.listen:"),
        (
            "[node]\nhandshake_timeout_s = 0",
            "node.handshake_timeout_s:",
        ),
        (
            "[[inbounds]]\ntag = \"bad tag\"\nprotocol = \"vless\"\nport = 1",
            "inbounds[0].tag:",
        ),
        (
            "[[inbounds]]\ntag = \"a\"\nprotocol = \"vless\"\nport = 0",
            "inbounds[0].port:",
        ),
        (
            &format!("{INBOUND}{}", INBOUND.replace("\"a\"", "\"b\"")),
            "inbounds[1].port:",
        ),
        (&format!("{INBOUND}{INBOUND}"), "inbounds[1].tag:"),
        (
            "[[inbounds]]\ntag = \"a\"\nprotocol = \"vless\"\nport = 1\ntransport = { type = \"ws\", path = \"x\" }",
            "inbounds[0].transport.path:",
        ),
        (
            "[[inbounds]]\ntag = \"a\"\nprotocol = \"shadowsocks\"\nport = 1",
            "inbounds[0].method:",
        ),
        (
            "[[inbounds]]\ntag = \"a\"\nprotocol = \"shadowsocks\"\nport = 1\nmethod = \"2022-blake3-aes-256-gcm\"\npassword = \"c3dpdGNoeWFyZC1zZXJ2ZXI=\"",
            "inbounds[0].password:",
        ),
        (
            "[[inbounds]]\ntag = \"a\"\nprotocol = \"socks\"\nport = 1\nfallback = \"127.0.0.1:80\"",
            "inbounds[0].fallback:",
        ),
        ("[[users]]\nname = \"\"", "users[0].name:"),
        (
            "[[users]]\nname = \"a\"\n[[users]]\nname = \"a\"",
            "users[1].name:",
        ),
        (
            "[[users]]\nname = \"a\"\nvless = \"nope\"",
            "users[0].vless:",
        ),
        (
            "[[users]]\nname = \"a\"\naddress_limit = 0",
            "users[0].address_limit:",
        ),
        (
            "[[users]]\nname = \"a\"\ntrojan = \"x\"\n[[users]]\nname = \"b\"\ntrojan = \"x\"",
            "users[1].trojan:",
        ),
        ("[route]\nfinal = \"nowhere\"", "route.final:"),
        (
            "[[tunnels]]\nname = \"t\"\nprofiles = []\n[tunnels.relay]\norigins = []",
            "tunnels[0].profiles:",
        ),
        (
            "[[tunnels]]\nname = \"t\"\n[[tunnels.profiles]]\nport = 1\n[tunnels.relay]\norigins = []",
            "tunnels[0].relay.cert:",
        ),
        (
            "[[tunnels]]\nname = \"t\"\nmode = \"direct\"\n[[tunnels.profiles]]\nport = 1\n[tunnels.relay]\norigins = []",
            "tunnels[0].relay.pin:",
        ),
        (
            "[[tunnels]]\nname = \"t\"\n[[tunnels.profiles]]\nport = 1\n[tunnels.origin]\nname = \"o\"\ncredential = \"00\"",
            "tunnels[0].origin.credential:",
        ),
        (
            "[[outbounds]]\ntag = \"direct\"\ntype = \"block\"",
            "outbounds[0].tag:",
        ),
    ];
    for (text, field) in cases {
        let e = err(text);
        assert!(e.starts_with(field), "{field}: got {e:?} for\n{text}");
    }
}

#[test]
fn json_and_toml_describe_the_same_config() {
    let toml = format!(
        "version = 3\n{INBOUND}transport = {{ type = \"ws\", path = \"/x\" }}\n[[users]]\nname = \"a\"\ntrojan = \"pw\"\n"
    );
    let a = NodeConfig::from_toml(&toml).unwrap();
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(NodeConfig::from_json(&json).unwrap(), a);
    assert!(
        !format!("{a:?}").contains("pw"),
        "secrets are redacted in Debug"
    );
}

#[test]
fn the_example_config_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/node/node.toml");
    let c = NodeConfig::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(c.inbounds.len(), 4);
}

#[test]
fn errors_name_the_place_and_never_echo_a_secret() {
    let e = err("[[users]]\nname = \"a\"\ntrojan = \"hunter2secret\nx = 1");
    assert_eq!(
        e,
        "config does not parse: line 3, column 24: invalid basic string, expected `\"`"
    );
    let e = err(
        "[[inbounds]]\ntag = \"a\"\nprotocol = \"shadowsocks\"\nport = 1\nmethod = \"2022-blake3-aes-128-gcm\"\npassword = \"hunter2-secret\"",
    );
    assert_eq!(
        e,
        "inbounds[0].password: not base64 (a bad character at offset 7)"
    );
}
