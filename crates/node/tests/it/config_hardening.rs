//! Config validation that keeps hostile or mistaken settings out: WebSocket paths with
//! queries, and the ChaCha method's user cap.

use base64::Engine as _;
use switchyard_node::NodeConfig;
use switchyard_node::config::MAX_CHACHA_USERS;

fn ws(path: &str) -> Result<NodeConfig, String> {
    NodeConfig::from_toml(&format!(
        "[[inbounds]]\ntag = \"ws\"\nprotocol = \"vless\"\nport = 8443\ntransport = {{ type = \"ws\", path = \"{path}\" }}\n"
    ))
    .map_err(|e| e.to_string())
}

/// A share link's `?ed=2048` is accepted (and ignored when matching); any other query
/// is refused by name rather than accepted and then never matched.
#[test]
fn websocket_paths_with_a_query_are_normalised_or_refused() {
    assert!(ws("/ws").is_ok());
    assert!(ws("/ws?ed=2048").is_ok());
    for bad in ["/ws?x=1", "/ws?ed=", "/ws?ed=2048&x=1", "/ws?"] {
        let err = ws(bad).unwrap_err();
        assert!(
            err.contains("inbounds[0].transport.path") && err.contains("?ed=N"),
            "{bad}: {err}"
        );
    }
}

/// Past the cap, a ChaCha inbound is refused with a pointer to the AES methods.
#[test]
fn a_chacha_inbound_serves_at_most_the_capped_number_of_users() {
    let key = "YWxpY2Utc3MtdXNlci1rZXktZm9yLTI1Ni1tZXRob2Q=";
    let config = |users: usize| {
        let mut text = format!(
            "[[inbounds]]\ntag = \"ss\"\nprotocol = \"shadowsocks\"\nport = 8388\nmethod = \"2022-blake3-chacha20-poly1305\"\npassword = \"{key}\"\n"
        );
        for i in 0..users {
            // A distinct 32-byte key per user.
            let own =
                base64::engine::general_purpose::STANDARD.encode(format!("user-key-{i:0>23}"));
            text.push_str(&format!(
                "[[users]]\nname = \"u{i}\"\nshadowsocks = \"{own}\"\n"
            ));
        }
        NodeConfig::from_toml(&text).map_err(|e| e.to_string())
    };
    config(MAX_CHACHA_USERS).unwrap();
    let err = config(MAX_CHACHA_USERS + 1).unwrap_err();
    assert!(
        err.contains("inbounds[0].method") && err.contains("aes"),
        "{err}"
    );
}

/// A config holding the placeholder that reads show for secrets is refused wherever it
/// comes from (a file, a reload), naming the field.
#[test]
fn a_config_with_a_redacted_secret_is_refused_from_a_file_too() {
    let err = NodeConfig::from_toml("[[users]]\nname = \"alice\"\nvless = \"<redacted>\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("users[0].vless") && err.contains("<redacted>"),
        "{err}"
    );
}
