use super::*;
use serde_json::json;

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let e = parse_json("{\n  \"log\": {\n    \"level\": \"warn\",\n  }\n}").unwrap_err();
    assert_eq!(
        e,
        TemplateError::Syntax("line 4, column 3: trailing comma".into())
    );
    let TemplateError::Syntax(m) = parse_yaml("rules:\n  - MATCH,x\n dns: [\n").unwrap_err() else {
        panic!("a syntax error");
    };
    assert!(m.contains("line 3"), "{m}");
    assert_eq!(parse_json("[1, 2]"), Err(TemplateError::NotAMapping));
    assert_eq!(parse_yaml("- a\n- b\n"), Err(TemplateError::NotAMapping));
    let big = format!("{{\"x\": \"{}\"}}", "a".repeat(MAX_TEMPLATE));
    assert_eq!(parse_json(&big), Err(TemplateError::TooBig));
}

#[test]
fn yaml_reads_as_json_values() {
    let v = parse_yaml("mixed-port: 7890\nallow-lan: false\nratio: 0.5\nrules:\n  - MATCH,G\n")
        .unwrap();
    assert_eq!(
        v,
        json!({"mixed-port": 7890, "allow-lan": false, "ratio": 0.5, "rules": ["MATCH,G"]})
    );
}

#[test]
fn the_panel_keeps_its_servers_and_groups_and_the_template_the_rest() {
    let ours = json!({
        "log": {"level": "warn"}, "outbounds": [{"tag": "G"}, {"tag": "e1"}],
        "route": {"final": "G", "rules": []},
    });
    let template = json!({
        "log": {"level": "debug"}, "outbounds": [{"tag": "theirs"}],
        "experimental": {"cache_file": {"enabled": true}},
    });
    assert_eq!(
        singbox(&template, &ours, "G"),
        json!({
            "log": {"level": "debug"}, "outbounds": [{"tag": "G"}, {"tag": "e1"}],
            "experimental": {"cache_file": {"enabled": true}}, "route": {"final": "G"},
        })
    );
    let with_route = json!({"route": {"final": "direct", "rules": [{"action": "sniff"}]}});
    assert_eq!(singbox(&with_route, &ours, "G")["route"]["final"], "direct");

    let ours =
        json!({"proxies": [{"name": "a"}], "proxy-groups": [{"name": "G"}], "rules": ["MATCH,G"]});
    let template = json!({"mode": "rule", "proxies": [], "dns": {"enable": true}});
    assert_eq!(
        clash(&template, &ours, "G"),
        json!({
            "mode": "rule", "proxies": [{"name": "a"}], "proxy-groups": [{"name": "G"}],
            "dns": {"enable": true}, "rules": ["MATCH,G"],
        })
    );
    let rules = json!({"rules": ["DOMAIN-SUFFIX,ru,DIRECT", "MATCH,G"]});
    assert_eq!(clash(&rules, &ours, "G")["rules"], rules["rules"]);

    let ours = json!({"remarks": "Amsterdam", "outbounds": [{"tag": "proxy", "protocol": "vless"}, {"tag": "direct"}]});
    let template = json!({
        "remarks": "x", "outbounds": [{"tag": "direct", "protocol": "freedom"}, {"tag": "proxy"}],
        "routing": {"rules": []},
    });
    assert_eq!(
        xray(&template, &ours),
        json!({
            "remarks": "Amsterdam",
            "outbounds": [{"tag": "proxy", "protocol": "vless"}, {"tag": "direct", "protocol": "freedom"}],
            "routing": {"rules": []},
        })
    );
}
