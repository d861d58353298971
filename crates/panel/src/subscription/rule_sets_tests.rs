use super::*;

#[test]
fn the_panel_serves_each_countrys_two_sets_and_ads() {
    assert_eq!(
        names(),
        [
            "ads",
            "country-ru",
            "blocked-ru",
            "country-ir",
            "blocked-ir",
            "country-cn",
            "blocked-cn"
        ]
    );
    for n in names() {
        assert!(built_in(&n).is_some(), "{n}");
    }
    assert_eq!(built_in("country-de"), None);
    assert_eq!(built_in("blocked-xx"), None);
    assert_eq!(built_in("../etc/passwd"), None);
}

#[test]
fn built_in_sets_hold_the_countrys_domains_and_the_blocked_services() {
    assert_eq!(
        built_in("country-ru").unwrap().domains,
        ["ru", "su", "xn--p1ai"]
    );
    let blocked = built_in("blocked-ru").unwrap();
    for d in [
        "youtube.com",
        "googlevideo.com",
        "instagram.com",
        "t.me",
        "chatgpt.com",
    ] {
        assert!(blocked.domains.iter().any(|x| x == d), "{d}");
    }
    assert!(blocked.cidrs.iter().any(|c| c == "149.154.160.0/20"));
    // China blocks Google; Russia does not.
    assert!(
        built_in("blocked-cn")
            .unwrap()
            .domains
            .iter()
            .any(|d| d == "google.com")
    );
    assert!(!blocked.domains.iter().any(|d| d == "google.com"));
}

#[test]
fn an_operators_file_adds_to_a_set_and_bad_lines_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("country-ru.txt"),
        "# local banks\nBank.Example\n+.shop.example # a comment\n\n10.77.0.0/16\n198.51.100.7\nnot a domain!\n10.0.0.0/99\nbank.example\n",
    )
    .unwrap();
    let set = load(dir.path(), "country-ru").unwrap();
    assert_eq!(
        set.domains,
        ["bank.example", "ru", "shop.example", "su", "xn--p1ai"]
    );
    assert_eq!(set.cidrs, ["10.77.0.0/16", "198.51.100.7/32"]);
    // No file: the built-in set; an unknown name: none, file or not.
    assert_eq!(load(dir.path(), "ads"), Some(RuleSet::default()));
    std::fs::write(dir.path().join("country-de.txt"), "de\n").unwrap();
    assert_eq!(load(dir.path(), "country-de"), None);
}

#[test]
fn each_app_gets_its_own_format() {
    let set = RuleSet {
        domains: vec!["bank.example".into()],
        cidrs: vec!["10.77.0.0/16".into(), "2001:db8::/32".into()],
    };
    assert_eq!(
        set.singbox(),
        r#"{"rules":[{"domain_suffix":["bank.example"]},{"ip_cidr":["10.77.0.0/16","2001:db8::/32"]}],"version":2}"#
    );
    assert_eq!(set.clash_domains(), "+.bank.example\n");
    assert_eq!(set.clash_cidrs(), "10.77.0.0/16\n2001:db8::/32\n");
    assert_eq!(RuleSet::default().singbox(), r#"{"rules":[],"version":2}"#);
}
