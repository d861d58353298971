//! The maintained lists from Debian's real packages (`tor-geoipdb`,
//! `webext-ublock-origin-firefox`, downloaded by `cargo xtask peers` into
//! `SWITCHYARD_RULE_DEBS`): refreshed into a panel's data directory, each country's
//! set holds its networks (a well-known resolver of the country falls inside, one of
//! another does not), the ads set EasyList's and EasyPrivacy's domains; `SOURCES` names each package's
//! version and sha256; the panel serves them merged with the built-in lists and the
//! operator's file, at once.

use std::net::IpAddr;
use std::path::PathBuf;

use axum::http::StatusCode;
use switchyard_config::route::Cidr;
use switchyard_panel::config::PanelConfig;
use switchyard_panel::rule_refresh::{self, MAINTAINED};
use switchyard_panel::subscription::rule_sets::load;

use crate::common::Harness;

fn debs() -> Vec<PathBuf> {
    let dir = std::env::var_os("SWITCHYARD_RULE_DEBS")
        .map(PathBuf::from)
        .expect(
            "SWITCHYARD_RULE_DEBS is not set: run `cargo xtask peers` (it downloads Debian's \
         tor-geoipdb and webext-ublock-origin-firefox) and export what it prints",
        );
    let debs = rule_refresh::debs_in(&dir).unwrap();
    assert_eq!(debs.len(), 2, "{}: {debs:?}", dir.display());
    debs
}

fn covers(cidrs: &[String], ip: &str) -> bool {
    let ip: IpAddr = ip.parse().unwrap();
    cidrs
        .iter()
        .any(|c| Cidr::parse(c).is_some_and(|c| c.contains(ip)))
}

#[tokio::test]
async fn debians_packages_become_the_countries_networks_and_the_ad_list() {
    let h = Harness::with(PanelConfig::default()).await;
    let sets = h.state.config().data_dir.join("rule-sets");
    std::fs::create_dir_all(&sets).unwrap();
    std::fs::write(sets.join("country-ru.txt"), "bank.example\n").unwrap();
    let done = rule_refresh::refresh(&sets, &debs()).unwrap();
    let counts: std::collections::HashMap<&str, usize> =
        done.lists.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    for (set, at_least) in [
        ("country-ru", 5_000),
        ("country-ir", 500),
        ("country-cn", 5_000),
        ("ads", 10_000),
    ] {
        assert!(counts[set] >= at_least, "{set}: {:?}", done.lists);
    }
    let sources = std::fs::read_to_string(sets.join(MAINTAINED).join("SOURCES")).unwrap();
    assert_eq!(sources, done.sources);
    for package in rule_refresh::PACKAGES {
        let line = sources
            .lines()
            .find(|l| l.starts_with(&format!("{package} ")))
            .unwrap_or_else(|| panic!("{package} in {sources}"));
        assert_eq!(line.split(' ').nth(2).map(str::len), Some(64), "{line}");
    }

    let ru = load(&sets, "country-ru").unwrap();
    assert!(
        covers(&ru.cidrs, "77.88.8.8"),
        "Yandex's resolver is in Russia"
    );
    assert!(
        covers(&ru.cidrs, "2a02:6b8::feed:0ff"),
        "Yandex's IPv6 resolver too"
    );
    assert!(!covers(&ru.cidrs, "8.8.8.8"), "Google's is not");
    // Built in, and the operator's own, beside the maintained list.
    for d in ["ru", "bank.example"] {
        assert!(ru.domains.iter().any(|x| x == d), "{d}");
    }
    let cn = load(&sets, "country-cn").unwrap();
    assert!(covers(&cn.cidrs, "223.5.5.5"), "AliDNS is in China");
    assert!(!covers(&cn.cidrs, "77.88.8.8"));
    let ads = load(&sets, "ads").unwrap();
    // EasyList's and EasyPrivacy's whole-domain rules.
    for d in ["popads.net", "propellerads.com", "mc.yandex.ru"] {
        assert!(ads.domains.iter().any(|x| x == d), "{d}");
    }

    // The panel serves them at once.
    let r = h.get("/rules/clash/ads-domain.txt").send().await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().lines().any(|l| l == "+.popads.net"));
    let r = h.get("/rules/clash/country-ru-ip.txt").send().await;
    assert_eq!(r.text().lines().count(), ru.cidrs.len());

    // A package that is not a .deb: refused naming dpkg-deb, the lists kept.
    let bad = h.state.config().data_dir.join("bad.deb");
    std::fs::write(&bad, "not a package").unwrap();
    let e = rule_refresh::refresh(&sets, &[bad]).unwrap_err();
    assert!(e.to_string().starts_with("dpkg-deb"), "{e}");
    assert_eq!(load(&sets, "country-ru").unwrap(), ru);
}
