use super::*;

fn russia() -> Routing {
    Routing {
        preset: Preset::Russia,
        block_ads: true,
        custom: vec![CustomRule {
            action: Action::Direct,
            domain_suffix: vec!["corp.example".into()],
            ip_cidr: vec!["10.8.0.0/16".into(), "2001:db8::/32".into()],
            country: vec!["cn".into()],
            ..CustomRule::default()
        }],
        rule_sets_url: "https://panel.example/rules/".into(),
    }
}

#[test]
fn global_with_nothing_custom_changes_nothing() {
    let r = Routing {
        custom: vec![CustomRule::default()],
        ..Routing::default()
    };
    assert!(r.is_global());
    assert!(r.rule_sets().is_empty());
    assert!(r.singbox_rules("Switchyard", "direct").is_empty());
    assert!(r.clash_rules("Switchyard").is_empty());
    assert!(r.xray_rules("proxy", "direct", "block").is_empty());
    assert!(!russia().is_global());
}

#[test]
fn the_sets_come_in_rule_order_once_each() {
    assert_eq!(
        russia().rule_sets(),
        ["country-cn", "ads", "blocked-ru", "country-ru"]
    );
}

#[test]
fn sing_box_gets_remote_sets_route_rules_and_local_dns_for_direct_names() {
    let r = russia();
    assert_eq!(
        r.singbox_rule_sets()[1],
        json!({
            "type": "remote", "tag": "ads", "format": "source",
            "url": "https://panel.example/rules/sing-box/ads.json", "update_interval": "1d",
        })
    );
    assert_eq!(
        r.singbox_rules("Switchyard", "direct"),
        [
            json!({
                "domain_suffix": ["corp.example"], "ip_cidr": ["10.8.0.0/16", "2001:db8::/32"],
                "rule_set": ["country-cn"], "action": "route", "outbound": "direct",
            }),
            json!({ "rule_set": ["ads"], "action": "reject" }),
            json!({ "rule_set": ["blocked-ru"], "action": "route", "outbound": "Switchyard" }),
            json!({ "rule_set": ["country-ru"], "action": "route", "outbound": "direct" }),
        ]
    );
    assert_eq!(
        r.singbox_dns_rules("local"),
        [json!({ "rule_set": ["country-cn", "country-ru"], "action": "route", "server": "local" })]
    );
}

#[test]
fn clash_gets_a_domain_and_an_ip_provider_per_set_and_rules_in_order() {
    let r = russia();
    let providers = r.clash_providers();
    assert_eq!(providers.len(), 8);
    assert_eq!(
        providers["blocked-ru-ip"],
        json!({
            "type": "http", "behavior": "ipcidr", "format": "text",
            "url": "https://panel.example/rules/clash/blocked-ru-ip.txt", "interval": 86400,
        })
    );
    assert_eq!(providers["ads-domain"]["behavior"], "domain");
    assert_eq!(
        r.clash_rules("Switchyard"),
        [
            "DOMAIN-SUFFIX,corp.example,DIRECT",
            "IP-CIDR,10.8.0.0/16,DIRECT,no-resolve",
            "IP-CIDR6,2001:db8::/32,DIRECT,no-resolve",
            "RULE-SET,country-cn-domain,DIRECT",
            "RULE-SET,country-cn-ip,DIRECT",
            "RULE-SET,ads-domain,REJECT",
            "RULE-SET,ads-ip,REJECT",
            "RULE-SET,blocked-ru-domain,Switchyard",
            "RULE-SET,blocked-ru-ip,Switchyard",
            "RULE-SET,country-ru-domain,DIRECT",
            "RULE-SET,country-ru-ip,DIRECT",
        ]
    );
}

#[test]
fn xray_gets_the_apps_geo_codes_and_the_custom_rules_inline() {
    assert_eq!(
        russia().xray_rules("proxy", "direct", "block"),
        [
            json!({ "type": "field", "domain": ["domain:corp.example", "geosite:cn"], "outboundTag": "direct" }),
            json!({ "type": "field", "ip": ["10.8.0.0/16", "2001:db8::/32", "geoip:cn"], "outboundTag": "direct" }),
            json!({ "type": "field", "domain": ["geosite:category-ads-all"], "outboundTag": "block" }),
            json!({ "type": "field", "domain": [
                "geosite:youtube", "geosite:instagram", "geosite:facebook", "geosite:twitter",
                "geosite:discord", "geosite:linkedin", "geosite:openai", "geosite:telegram",
                "geosite:whatsapp",
            ], "outboundTag": "proxy" }),
            json!({ "type": "field", "ip": ["geoip:telegram"], "outboundTag": "proxy" }),
            json!({ "type": "field", "domain": ["geosite:category-ru"], "outboundTag": "direct" }),
            json!({ "type": "field", "ip": ["geoip:ru"], "outboundTag": "direct" }),
        ]
    );
}

#[test]
fn a_block_rule_refuses_and_exact_and_keyword_domains_keep_their_kind() {
    let r = Routing {
        custom: vec![CustomRule {
            action: Action::Block,
            domain: vec!["x.example".into()],
            domain_keyword: vec!["tracker".into()],
            ..CustomRule::default()
        }],
        ..Routing::default()
    };
    assert_eq!(
        r.singbox_rules("G", "direct"),
        [json!({ "domain": ["x.example"], "domain_keyword": ["tracker"], "action": "reject" })]
    );
    assert_eq!(
        r.clash_rules("G"),
        ["DOMAIN,x.example,REJECT", "DOMAIN-KEYWORD,tracker,REJECT"]
    );
    assert_eq!(
        r.xray_rules("proxy", "direct", "block"),
        [
            json!({ "type": "field", "domain": ["full:x.example", "keyword:tracker"], "outboundTag": "block" })
        ]
    );
    assert!(r.singbox_dns_rules("local").is_empty());
}

#[test]
fn happs_profile_lists_each_action_and_points_at_the_panels_geo_files() {
    let remote = crate::vpn::RemoteDns::parse("https://1.1.1.1/dns-query").unwrap();
    let p = russia().happ_profile("Switchyard", &remote, 1_796_083_200);
    assert_eq!(p["Name"], "Switchyard");
    assert_eq!(p["GlobalProxy"], "true");
    assert_eq!(p["RouteOrder"], "block-proxy-direct");
    assert_eq!(p["RemoteDNSType"], "DoH");
    assert_eq!(p["RemoteDNSDomain"], "https://1.1.1.1:443/dns-query");
    assert_eq!(p["RemoteDNSIP"], "1.1.1.1");
    assert_eq!(p["DomesticDNSIP"], "77.88.8.8");
    assert_eq!(p["Geoipurl"], "https://panel.example/rules/xray/geoip.dat");
    assert_eq!(
        p["Geositeurl"],
        "https://panel.example/rules/xray/geosite.dat"
    );
    assert_eq!(p["LastUpdated"], "1796083200");
    assert_eq!(
        p["DirectSites"],
        json!(["domain:corp.example", "geosite:cn", "geosite:category-ru"])
    );
    let mut direct_ip: Vec<&str> = crate::xray::PRIVATE_CIDRS.to_vec();
    direct_ip.extend(["10.8.0.0/16", "2001:db8::/32", "geoip:cn", "geoip:ru"]);
    assert_eq!(p["DirectIp"], json!(direct_ip));
    assert_eq!(p["ProxySites"].as_array().unwrap().len(), 9);
    assert_eq!(p["ProxyIp"], json!(["geoip:telegram"]));
    assert_eq!(p["BlockSites"], json!(["geosite:category-ads-all"]));
    assert_eq!(p["BlockIp"], json!([]));
    let link = russia().happ_link("Switchyard", &remote, 1);
    let b64 = link.strip_prefix("happ://routing/onadd/").unwrap();
    let back: Value =
        serde_json::from_slice(&crate::base64::decode_lenient(b64.as_bytes()).unwrap()).unwrap();
    assert_eq!(back, russia().happ_profile("Switchyard", &remote, 1));
}
