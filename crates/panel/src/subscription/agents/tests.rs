use super::*;

/// The row of the built-in table a User-Agent lands on, and its format.
fn lands(ua: &str) -> (&'static str, Format) {
    let (rule, format) = matching_rule(ua, &[]).unwrap_or_else(|| panic!("{ua:?}: no row"));
    (rule.app.as_str(), format)
}

/// One test per built-in row, each with a real User-Agent string (where the
/// app's source or a panel's code shows one; see the comment on the case), and
/// the list of them for the coverage test.
macro_rules! rows {
    ($($name:ident: $ua:expr => $app:expr, $format:ident;)*) => {
        $(
            #[test]
            fn $name() {
                assert_eq!(lands($ua), ($app, Format::$format), "{:?}", $ua);
            }
        )*
        const SAMPLES: &[(&str, &str)] = &[$(($ua, $app)),*];
    };
}

rows! {
    // hiddify-app lib/core/model/app_info_entity.dart; names ClashMeta and sing-box too.
    hiddify: "HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box" => "Hiddify", SingBox;
    // FlClash lib/common/package.dart; says clash-verge too.
    flclash: "FlClash/v0.8.90 clash-verge Platform/android" => "FlClash / FlClashX", Clash;
    clash_verge_rev: "clash-verge/v2.4.3" => "Clash Verge / Clash Verge Rev", Clash;
    // ClashMetaForAndroid core/src/main/golang/native/config/fetch.go
    clash_meta_for_android: "ClashMetaForAndroid/2.11.17" => "Clash Meta for Android", Clash;
    clashx_meta: "ClashX Meta/v1.4.1 (com.metacubex.ClashX.meta; build:1.4.1; macOS 14.5.0) Alamofire/5.9.1"
        => "ClashX Meta", Clash;
    mihomo_party: "mihomo.party/v1.5.13 (clash.meta)" => "Mihomo Party", Clash;
    mihomo: "mihomo/1.18.9" => "mihomo", Clash;
    // mihomo's own default for proxy providers.
    clash_meta: "clash.meta" => "clash.meta", Clash;
    clash_for_windows: "ClashforWindows/0.20.39" => "Clash for Windows", Clash;
    stash: "Stash/3.1.1" => "Stash", Clash;
    clash_generic: "ClashForAndroid/2.5.12" => "Clash (any other)", Clash;
    // sing-box-for-android utils/HTTPClient.kt, sing-box-for-apple Library/Network/HTTPClient.swift
    sfa: "SFA (sing-box 1.13.14; language ru_RU)" => "sing-box for Android (SFA)", SingBox;
    sfi: "SFI (sing-box 1.13.14; language ru_RU)" => "sing-box for iOS (SFI)", SingBox;
    sfm: "SFM (sing-box 1.13.14; language ru_RU)" => "sing-box for macOS (SFM)", SingBox;
    sft: "SFT (sing-box 1.13.14; language ru_RU)" => "sing-box for tvOS (SFT)", SingBox;
    // Karing's HTTP client is not public; name/version is the form panels match.
    karing: "Karing/1.1.2.606 android" => "Karing", SingBox;
    sing_box: "sing-box/1.13.2" => "sing-box", SingBox;
    // happ.su dev docs.
    happ: "Happ/3.13.0" => "Happ", Xray;
    // Closed source; Marzban and Remnawave match the prefix "Streisand".
    streisand: "Streisand/1.6.43" => "Streisand", Xray;
    // v2rayNG app/src/main/java/com/v2ray/ang/util/HttpUtil.kt
    v2rayng: "v2rayNG/1.10.24" => "v2rayNG", Xray;
    // v2rayN ServiceLib/Services/DownloadService.cs
    v2rayn: "v2rayN/7.16.3" => "v2rayN", Xray;
    // Closed source; Remnawave matches the prefix "INCY/".
    incy: "INCY/1.2.0" => "INCY", Xray;
    // Closed source; Remnawave matches the prefix "V2Box".
    v2box: "V2Box/9.2.0" => "V2Box", Xray;
    // crates/client/src/subscription.rs
    switchyard: "switchyard-client/0.1.0" => "Switchyard client", SingBox;
}

#[test]
fn every_builtin_row_is_reached_by_a_sample() {
    for rule in builtin() {
        assert!(
            SAMPLES.iter().any(|(_, app)| *app == rule.app),
            "row {:?} has no sample",
            rule.app
        );
    }
    assert_eq!(SAMPLES.len(), builtin().len());
    assert_eq!(
        TABLE_VERSION, 4,
        "a changed table bumps TABLE_VERSION and the docs"
    );
}

#[test]
fn builtin_rules_pass_their_own_check() {
    assert_eq!(check_rules(builtin()), Ok(()));
}

#[test]
fn flclashx_spellings_are_clash() {
    // Remnawave matches both `FlClashX/` and `FlClash X/`.
    for ua in [
        "FlClashX/v0.3.2 Platform/android",
        "FlClash X/v0.3.2 Platform/windows",
    ] {
        assert_eq!(lands(ua), ("FlClash / FlClashX", Format::Clash), "{ua}");
    }
}

#[test]
fn anything_else_gets_links() {
    for ua in [
        "",
        "curl/8.4.0",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
        "Shadowrocket/2070 CFNetwork/1498.700.2 Darwin/23.6.0",
        "v2rayN",
    ] {
        assert_eq!(matching_rule(ua, &[]), None, "{ua:?}");
        assert_eq!(format_for(ua, &[]), Format::Links, "{ua:?}");
    }
}

#[test]
fn happ_threshold_1_63_1() {
    assert_eq!(format_for("Happ/1.63.1", &[]), Format::Xray);
    assert_eq!(format_for("Happ/1.63.1/ios", &[]), Format::Xray);
    assert_eq!(format_for("Happ/1.63.0", &[]), Format::Links);
    // 1.63 is 1.63.0.
    assert_eq!(format_for("Happ/1.63", &[]), Format::Links);
    assert_eq!(format_for("Happ/1.100.0", &[]), Format::Xray);
    assert_eq!(format_for("Happ/", &[]), Format::Links);
}

#[test]
fn v2rayn_threshold_6_40() {
    assert_eq!(format_for("v2rayN/6.40", &[]), Format::Xray);
    assert_eq!(format_for("v2rayN/6.39", &[]), Format::Links);
    // Numeric, not decimal: 6.4 is below 6.40.
    assert_eq!(format_for("v2rayN/6.4", &[]), Format::Links);
    assert_eq!(format_for("v2rayN/6.40.0", &[]), Format::Xray);
    assert_eq!(format_for("v2rayN/10.0", &[]), Format::Xray);
    assert_eq!(format_for("v2rayN/", &[]), Format::Links);
}

#[test]
fn v2rayng_threshold_1_8_29() {
    assert_eq!(format_for("v2rayNG/1.8.29", &[]), Format::Xray);
    assert_eq!(format_for("v2rayNG/1.8.28", &[]), Format::Links);
    assert_eq!(format_for("v2rayNG/1.9", &[]), Format::Xray);
    assert_eq!(format_for("v2rayNG/1.8", &[]), Format::Links);
    assert_eq!(format_for("v2rayNG/ (android)", &[]), Format::Links);
}

#[test]
fn matching_ignores_ascii_case_and_leading_space() {
    assert_eq!(format_for("CLASH-VERGE/V2.0", &[]), Format::Clash);
    assert_eq!(format_for("hiddifynext/2.0", &[]), Format::SingBox);
    assert_eq!(format_for("HAPP/2.0.0", &[]), Format::Xray);
    assert_eq!(format_for("  V2RAYNG/1.9.0", &[]), Format::Xray);
    assert_eq!(format_for("sfi (SING-BOX 1.10.1)", &[]), Format::SingBox);
}

#[test]
fn non_ascii_user_agents_do_not_panic() {
    assert_eq!(format_for("приложение/1.0 ✓", &[]), Format::Links);
    assert_eq!(format_for("Happ/é", &[]), Format::Links);
    let rule = AgentRule {
        app: "emoji".into(),
        prefix: None,
        contains: Some("✓app".into()),
        format: Format::Xray,
        since: Some("2".into()),
        older: None,
        lacks: Vec::new(),
        runs: Vec::new(),
        vpn: false,
    };
    assert_eq!(
        format_for("x ✓APP/3", std::slice::from_ref(&rule)),
        Format::Xray
    );
    assert_eq!(
        format_for("x ✓APP/1", std::slice::from_ref(&rule)),
        Format::Links
    );
}

fn rule(app: &str, prefix: Option<&str>, contains: Option<&str>, format: Format) -> AgentRule {
    AgentRule {
        app: app.into(),
        prefix: prefix.map(Into::into),
        contains: contains.map(Into::into),
        format,
        since: None,
        older: None,
        lacks: Vec::new(),
        runs: Vec::new(),
        vpn: false,
    }
}

#[test]
fn operator_rules_win_over_builtin_ones() {
    let extra = [
        rule("ours", Some("v2rayN/"), None, Format::SingBox),
        rule("theirs", None, Some("HIDDIFY"), Format::Clash),
    ];
    assert_eq!(format_for("v2rayN/7.16.3", &extra), Format::SingBox);
    let (hit, format) = matching_rule("HiddifyNext/2.5.7 (android)", &extra).unwrap();
    assert_eq!((hit.app.as_str(), format), ("theirs", Format::Clash));
    // Not matched by them: the built-in table still answers.
    assert_eq!(format_for("clash-verge/v2.4.3", &extra), Format::Clash);
    // In their order, too.
    let both = [
        rule("first", None, Some("foo"), Format::Xray),
        rule("second", Some("foo"), None, Format::Clash),
    ];
    assert_eq!(format_for("foo/1", &both), Format::Xray);
}

#[test]
fn operator_rule_with_a_threshold_and_older() {
    let mut r = rule("MyApp", Some("myapp/"), None, Format::Xray);
    r.since = Some("2.1".into());
    r.older = Some(Format::Clash);
    let extra = [r];
    assert_eq!(format_for("MyApp/2.1", &extra), Format::Xray);
    assert_eq!(format_for("MyApp/2.0.9", &extra), Format::Clash);
    assert_eq!(format_for("MyApp/ (no version)", &extra), Format::Clash);
    // Unvalidated rules: a `since` that does not parse is never met.
    let mut bad = rule("bad", Some("bad/"), None, Format::Xray);
    bad.since = Some("new".into());
    assert_eq!(format_for("bad/99", &[bad]), Format::Links);
}

#[test]
fn check_rules_names_the_rule_and_the_field() {
    let good = rule("ok", Some("ok/"), None, Format::Xray);
    let cases: Vec<(AgentRule, &str)> = vec![
        (rule(" ", Some("x"), None, Format::Xray), "app"),
        (rule("a", None, None, Format::Xray), "prefix"),
        (rule("a", Some("x"), Some("y"), Format::Xray), "contains"),
        (rule("a", Some(""), None, Format::Xray), "prefix"),
        (rule("a", None, Some("  "), Format::Xray), "contains"),
        (
            rule(
                "a",
                None,
                Some(&"x".repeat(MAX_PATTERN_LEN + 1)),
                Format::Xray,
            ),
            "contains",
        ),
        (
            AgentRule {
                since: Some("6.4x".into()),
                ..good.clone()
            },
            "since",
        ),
        (
            AgentRule {
                since: Some("".into()),
                ..good.clone()
            },
            "since",
        ),
        (
            AgentRule {
                since: Some("1..2".into()),
                ..good.clone()
            },
            "since",
        ),
        (
            AgentRule {
                since: Some("v6".into()),
                ..good.clone()
            },
            "since",
        ),
        (
            AgentRule {
                older: Some(Format::Links),
                ..good.clone()
            },
            "older",
        ),
    ];
    for (bad, field) in cases {
        let rules = [good.clone(), good.clone(), bad.clone()];
        let err = check_rules(&rules).expect_err(&format!("{bad:?} passed"));
        assert_eq!(
            err.field,
            format!("subscription.agents[2].{field}"),
            "{bad:?}: {err}"
        );
        assert!(!err.message.is_empty());
    }
    let with_since = AgentRule {
        since: Some("6.40".into()),
        older: Some(Format::Clash),
        ..good.clone()
    };
    assert_eq!(check_rules(&[good, with_since]), Ok(()));
}

#[derive(Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Config {
    subscription: Section,
}

#[derive(Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Section {
    agents: Vec<AgentRule>,
}

#[test]
fn rules_round_trip_through_toml() {
    let text = r#"
        [[subscription.agents]]
        app = "MyApp"
        prefix = "myapp/"
        format = "xray"
        since = "2.1"
        older = "links"

        [[subscription.agents]]
        app = "Corporate Hiddify build"
        contains = "corp-hiddify"
        format = "sing-box"
    "#;
    let config: Config = toml::from_str(text).unwrap();
    let agents = &config.subscription.agents;
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0].prefix.as_deref(), Some("myapp/"));
    assert_eq!(agents[0].older, Some(Format::Links));
    assert_eq!(agents[1].format, Format::SingBox);
    assert_eq!(agents[1].since, None);
    assert_eq!(check_rules(agents), Ok(()));
    let written = toml::to_string(&config).unwrap();
    // Absent options stay absent.
    assert_eq!(written.matches("since").count(), 1, "{written}");
    assert_eq!(toml::from_str::<Config>(&written).unwrap(), config);
}

#[test]
fn unknown_rule_fields_and_formats_are_refused() {
    let typo = "[[subscription.agents]]\napp = \"a\"\nprefx = \"a\"\nformat = \"xray\"\n";
    assert!(toml::from_str::<Config>(typo).is_err());
    let format = "[[subscription.agents]]\napp = \"a\"\nprefix = \"a\"\nformat = \"json\"\n";
    assert!(toml::from_str::<Config>(format).is_err());
}

#[test]
fn format_names_and_aliases() {
    for format in Format::ALL {
        assert_eq!(Format::parse(format.name()), Some(format));
        assert_eq!(format.to_string(), format.name());
        let json = serde_json::to_string(&format).unwrap();
        assert_eq!(json, format!("\"{}\"", format.name()));
        assert_eq!(serde_json::from_str::<Format>(&json).unwrap(), format);
    }
    for (alias, format) in [
        ("singbox", Format::SingBox),
        ("SING_BOX", Format::SingBox),
        ("sb", Format::SingBox),
        ("mihomo", Format::Clash),
        ("clash-meta", Format::Clash),
        ("clash.meta", Format::Clash),
        ("ClashMeta", Format::Clash),
        ("meta", Format::Clash),
        ("yaml", Format::Clash),
        ("v2ray-json", Format::Xray),
        ("xray-json", Format::Xray),
        (" base64 ", Format::Links),
        ("v2ray", Format::Links),
        ("plain", Format::Links),
        ("uri", Format::Links),
    ] {
        assert_eq!(Format::parse(alias), Some(format), "{alias:?}");
    }
    for refused in ["json", "", "outline", "sing box"] {
        assert_eq!(Format::parse(refused), None, "{refused:?}");
    }
}

#[test]
fn versions_compare_numerically() {
    assert_eq!(version_in("/v1.8.29 (android)"), Some(vec![1, 8, 29]));
    assert_eq!(version_in("/6.40."), Some(vec![6, 40]));
    assert_eq!(version_in("/1..2"), Some(vec![1]));
    assert_eq!(version_in(" (android)"), None);
    assert_eq!(
        compare_versions(&[1, 8, 29], &[1, 8, 29, 0]),
        Ordering::Equal
    );
    assert_eq!(compare_versions(&[6, 4], &[6, 40]), Ordering::Less);
    assert_eq!(compare_versions(&[2], &[1, 99]), Ordering::Greater);
    assert_eq!(parse_version("6.40"), Some(vec![6, 40]));
    assert_eq!(parse_version("6.40.x"), None);
}

proptest::proptest! {
    /// Any User-Agent a client sends (it comes from the network) picks a format without
    /// panicking, whatever its bytes, length or digits: huge version numbers included.
    #[test]
    fn any_user_agent_gets_a_format(ua in ".{0,300}", digits in "[0-9]{1,40}(\\.[0-9]{1,40}){0,6}") {
        let _ = format_for(&ua, &[]);
        for prefix in ["Happ/", "v2rayNG/", "v2rayN/", "myapp/"] {
            let rules = [AgentRule {
                app: "MyApp".into(),
                prefix: Some("myapp/".into()),
                contains: None,
                format: Format::Xray,
                since: Some(digits.clone()),
                older: None,
                lacks: Vec::new(),
                runs: Vec::new(),
                vpn: false,
            }];
            let _ = format_for(&format!("{prefix}{digits}{ua}"), &rules);
        }
        let _ = Format::parse(&ua);
    }
}
