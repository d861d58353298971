//! Errors from reading a config name the field's path, whatever stage finds them:
//! the TOML and JSON readers (a value of the wrong type or out of range, an unknown
//! field) as well as the validation.

use switchyard_node::NodeConfig;

/// A config with one inbound whose `listen` and `port` lines are given; `listen` is on
/// line 13, column 10.
fn with_inbound(listen: &str, port: &str) -> String {
    format!(
        "version = 1\n\
         \n\
         [node]\n\
         handshake_timeout_s = 10\n\
         \n\
         [control]\n\
         listen = \"127.0.0.1:9090\"\n\
         \n\
         [[inbounds]]\n\
         tag = \"main\"\n\
         protocol = \"vless\"\n\
         # where it listens\n\
         listen = {listen}\n\
         port = {port}\n"
    )
}

fn err(text: &str) -> String {
    NodeConfig::from_toml(text).unwrap_err().to_string()
}

#[test]
fn reader_errors_name_the_field_and_the_place() {
    assert_eq!(
        err(&with_inbound("\"localhost\"", "443")),
        "inbounds[0].listen: invalid IP address syntax (line 13, column 10)"
    );
    assert_eq!(
        err(&with_inbound("\"127.0.0.1\"", "70000")),
        "inbounds[0].port: invalid value: integer `70000`, expected u16 (line 14, column 8)"
    );
    assert_eq!(
        err(&(with_inbound("\"127.0.0.1\"", "443") + "colour = \"blue\"\n")),
        "inbounds[0].colour: unknown field `colour`, expected one of `tag`, `name`, `protocol`, \
         `listen`, `port`, `transport`, `security`, `fallback`, `flow`, `method`, `password`, \
         `hysteria2`, `trusted_proxies` (line 15, column 1)"
    );
    assert_eq!(
        err(&(with_inbound("\"127.0.0.1\"", "443") + "transport = { type = \"ws\", path = 7 }\n")),
        "inbounds[0].transport: invalid type: integer `7`, expected a string (line 15, column 13)"
    );
    // Deeper than a table chosen by its `type` (a transport, a security), the reader
    // sees no further than the table.
    assert_eq!(
        err("[[users]]\nname = \"a\"\n[[users]]\nname = \"b\"\naddress_limit = -1\n"),
        "users[1].address_limit: invalid value: integer `-1`, expected u32 (line 5, column 17)"
    );
    assert_eq!(
        err("[node]\nhandshake_timeout_s = \"ten\"\n"),
        "node.handshake_timeout_s: invalid type: a string, expected u64 (line 2, column 23)"
    );
}

#[test]
fn a_refused_string_is_never_repeated() {
    let e = err(
        "[[users]]\nname = \"a\"\nvless = 12\n[[inbounds]]\ntag = \"x\"\nprotocol = \"vless\"\nport = \"hunter2-secret\"\n",
    );
    assert!(
        e.starts_with("inbounds[0].port: invalid type: a string"),
        "{e}"
    );
    assert!(!e.contains("hunter2"), "{e}");
}

#[test]
fn syntax_errors_give_the_place_alone() {
    assert_eq!(
        err("[[users]]\nname = \"a\"\ntrojan = \"hunter2secret\nx = 1"),
        "config does not parse: line 3, column 24: invalid basic string, expected `\"`"
    );
}

#[test]
fn json_errors_name_the_field_too() {
    let e = NodeConfig::from_json(
        r#"{"inbounds": [{"tag": "a", "protocol": "vless", "port": 70000}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "inbounds[0].port: invalid value: integer `70000`, expected u16"
    );
    let e = NodeConfig::from_json(r#"{"node": {"allow_private_destinations": "yes"}}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "node.allow_private_destinations: invalid type: a string, expected a boolean"
    );
    let e = NodeConfig::from_json("{} x").unwrap_err().to_string();
    assert_eq!(
        e,
        "config does not parse: line 1, column 4: trailing characters"
    );
}

/// A config pushed to the control API (as the panel does) is refused naming the field.
#[tokio::test]
async fn the_control_api_names_the_field_of_a_pushed_config() {
    use crate::common::{control::call, start};
    let f = start("protocol = \"vless\"").await;
    let mut config = serde_json::to_value(f.node.config().await).unwrap();
    config["inbounds"][0]["port"] = serde_json::json!(70000);
    let (code, body) = call(&f, "PUT", "/v1/config", Some(config)).await;
    assert_eq!(code, axum::http::StatusCode::BAD_REQUEST);
    assert!(
        body.contains("inbounds[0].port: invalid value: integer `70000`, expected u16"),
        "{body}"
    );
}
