use super::*;

#[test]
fn routing_settings_name_the_bad_entry() {
    let parse = |toml_text: &str| -> RoutingSettings { toml::from_str(toml_text).unwrap() };
    let ok = parse(
        "preset = \"russia\"\nblock_ads = true\n[[custom]]\naction = \"direct\"\ndomain_suffix = [\"bank.example\"]\nip_cidr = [\"10.0.0.0/8\"]\ncountry = [\"cn\"]\n",
    );
    assert_eq!(ok.validate("subscription.routing"), Ok(()));
    let r = ok.routing("https://panel.example/");
    assert_eq!(r.rule_sets_url, "https://panel.example/rules");
    assert_eq!(r.preset, Preset::Russia);
    assert_eq!(
        r.custom[0].action,
        switchyard_proto::routing::Action::Direct
    );
    for (text, field) in [
        (
            "[[custom]]\nip_cidr = [\"10.0.0.0/8\", \"10.0.0.0/40\"]",
            "subscription.routing.custom[0].ip_cidr[1]",
        ),
        (
            "[[custom]]\ncountry = [\"de\"]",
            "subscription.routing.custom[0].country[0]",
        ),
        (
            "[[custom]]\ndomain = [\"bad domain\"]",
            "subscription.routing.custom[0].domain[0]",
        ),
        (
            "[[custom]]\ndomain_suffix = [\"192.0.2.1\"]",
            "subscription.routing.custom[0].domain_suffix[0]",
        ),
        (
            "[[custom]]\ndomain_keyword = [\"a b\"]",
            "subscription.routing.custom[0].domain_keyword[0]",
        ),
    ] {
        assert_eq!(
            parse(text)
                .validate("subscription.routing")
                .unwrap_err()
                .field,
            field,
            "{text}"
        );
    }
    assert!(toml::from_str::<RoutingSettings>("preset = \"mars\"").is_err());
}

#[test]
fn the_users_own_wins_then_the_first_cluster_with_its_own_then_the_default() {
    let of = |preset| RoutingSettings {
        preset,
        ..RoutingSettings::default()
    };
    let (default, user, c2, c3) = (
        of(RoutingPreset::Global),
        of(RoutingPreset::China),
        of(RoutingPreset::Russia),
        of(RoutingPreset::Iran),
    );
    let clusters = || [(1, None), (2, Some(&c2)), (3, Some(&c3))];
    assert_eq!(effective(Some(&user), clusters(), &default), &user);
    assert_eq!(effective(None, clusters(), &default), &c2);
    assert_eq!(effective(None, [(1, None)], &default), &default);
    assert_eq!(effective(None, [], &default), &default);
}
