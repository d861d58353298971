use super::*;
use proptest::prelude::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn nets(list: &[&str]) -> Vec<Cidr> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

#[test]
fn networks_read_with_their_prefix_or_as_one_address() {
    let n: Cidr = "173.245.48.0/20".parse().unwrap();
    assert_eq!((n.addr(), n.prefix()), (ip("173.245.48.0"), 20));
    assert_eq!(n.to_string(), "173.245.48.0/20");
    assert!(n.contains(ip("173.245.63.255")));
    assert!(!n.contains(ip("173.245.64.0")));
    assert!(!n.contains(ip("::1")));
    let one: Cidr = " 127.0.0.1 ".parse().unwrap();
    assert_eq!(one.to_string(), "127.0.0.1/32");
    let v6: Cidr = "2400:cb00::/32".parse().unwrap();
    assert!(v6.contains(ip("2400:cb00:1::7")));
    assert!(!v6.contains(ip("2400:cb01::7")));
    assert_eq!("::1".parse::<Cidr>().unwrap().to_string(), "::1/128");
    // Low bits are ignored, as nginx does; a mapped address is its IPv4 one.
    assert_eq!(
        "10.1.2.3/8".parse::<Cidr>().unwrap().to_string(),
        "10.0.0.0/8"
    );
    let mapped: Cidr = "::ffff:10.0.0.0/104".parse().unwrap();
    assert_eq!(mapped.to_string(), "10.0.0.0/8");
    assert_eq!(
        "::ffff:127.0.0.1".parse::<Cidr>().unwrap().to_string(),
        "127.0.0.1/32"
    );
    assert!(n.contains(ip("::ffff:173.245.48.1")));
    assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains(ip("8.8.8.8")));
}

#[test]
fn a_bad_network_names_what_is_wrong() {
    assert_eq!(
        "cloudflare".parse::<Cidr>().unwrap_err(),
        CidrError::Address("cloudflare".into())
    );
    assert_eq!(
        "10.0.0.0/33".parse::<Cidr>().unwrap_err(),
        CidrError::Prefix {
            prefix: "33".into(),
            max: 32
        }
    );
    assert_eq!(
        "::/129".parse::<Cidr>().unwrap_err().to_string(),
        "prefix length \"129\" is not 0-128"
    );
    assert!("10.0.0.0/".parse::<Cidr>().is_err());
    assert!("10.0.0.0/+8".parse::<Cidr>().is_err());
    assert!("".parse::<Cidr>().is_err());
}

#[test]
fn items_read_leniently() {
    let cases: &[(&str, Option<&str>)] = &[
        ("198.51.100.7", Some("198.51.100.7")),
        ("  198.51.100.7\t", Some("198.51.100.7")),
        ("198.51.100.7:5000", Some("198.51.100.7")),
        ("2001:db8::1", Some("2001:db8::1")),
        ("[2001:db8::1]", Some("2001:db8::1")),
        ("[2001:db8::1]:443", Some("2001:db8::1")),
        ("\"[2001:db8::1]:443\"", Some("2001:db8::1")),
        ("::ffff:198.51.100.7", Some("198.51.100.7")),
        ("unknown", None),
        ("example.com", None),
        ("", None),
        ("198.51.100", None),
        ("[198.51.100.7]", None),
        ("1.2.3.4:99999", None),
    ];
    for (item, want) in cases {
        assert_eq!(parse_item(item.as_bytes()), want.map(ip), "{item:?}");
    }
    assert_eq!(parse_item(&[0xff, b'1']), None);
}

#[test]
fn the_rule_with_exact_values() {
    let cdn = nets(&["173.245.48.0/20", "127.0.0.1/32", "2400:cb00::/32"]);
    let edge = ip("173.245.48.9");
    // A trusted peer: the rightmost untrusted address.
    assert_eq!(client_ip(edge, &cdn, &["198.51.100.7"]), ip("198.51.100.7"));
    // What the client forged on the left is not reached.
    assert_eq!(
        client_ip(edge, &cdn, &["203.0.113.1, 198.51.100.7"]),
        ip("198.51.100.7")
    );
    // Trusted hops on the right are skipped: a chain of proxies.
    assert_eq!(
        client_ip(edge, &cdn, &["198.51.100.7, 173.245.48.1, 127.0.0.1"]),
        ip("198.51.100.7")
    );
    // Several header lines are one list, in order.
    assert_eq!(
        client_ip(edge, &cdn, &["203.0.113.1", "198.51.100.7, 127.0.0.1"]),
        ip("198.51.100.7")
    );
    assert_eq!(
        client_ip(edge, &cdn, &["198.51.100.7", "203.0.113.1"]),
        ip("203.0.113.1")
    );
    // Garbage and empty items are skipped; ports and brackets tolerated.
    assert_eq!(
        client_ip(edge, &cdn, &["198.51.100.7:1234 , garbage,, unknown"]),
        ip("198.51.100.7")
    );
    assert_eq!(
        client_ip(ip("2400:cb00::5"), &cdn, &["[2001:db8::7]:443"]),
        ip("2001:db8::7")
    );
    // Nothing valid and untrusted, or no header: the peer.
    assert_eq!(client_ip(edge, &cdn, &["127.0.0.1, garbage"]), edge);
    assert_eq!(client_ip::<&str>(edge, &cdn, &[]), edge);
    assert_eq!(client_ip(edge, &cdn, &[""]), edge);
    // A peer that is not trusted: the header ignored.
    let user = ip("203.0.113.50");
    assert_eq!(client_ip(user, &cdn, &["198.51.100.7"]), user);
    assert_eq!(client_ip(user, &[], &["198.51.100.7"]), user);
    // A mapped peer is its IPv4 address for the check.
    assert_eq!(
        client_ip(ip("::ffff:127.0.0.1"), &cdn, &["198.51.100.7"]),
        ip("198.51.100.7")
    );
}

#[test]
fn the_rule_is_bounded() {
    let cdn = nets(&["127.0.0.1"]);
    let peer = ip("127.0.0.1");
    // The 64th item from the right is looked at, the 65th is not.
    let within = format!("198.51.100.7{}", ", 127.0.0.1".repeat(63));
    assert_eq!(client_ip(peer, &cdn, &[&within]), ip("198.51.100.7"));
    let past = format!("198.51.100.7{}", ", 127.0.0.1".repeat(64));
    assert_eq!(client_ip(peer, &cdn, &[&past]), peer);
    // The bound spans header lines.
    let lines: Vec<String> = std::iter::once("198.51.100.7".to_owned())
        .chain(std::iter::repeat_n("127.0.0.1".to_owned(), 64))
        .collect();
    assert_eq!(client_ip(peer, &cdn, &lines), peer);
    // A line over 4 KiB is ignored whole; the others are read.
    let long = format!("198.51.100.7,{}", " ".repeat(MAX_VALUE_LEN));
    assert_eq!(client_ip(peer, &cdn, &[&long]), peer);
    assert_eq!(
        client_ip(peer, &cdn, &["203.0.113.1", &long]),
        ip("203.0.113.1")
    );
}

proptest! {
    #[test]
    fn the_rule_never_panics_and_answers_the_peer_or_a_listed_address(
        peer in any::<[u8; 4]>(),
        trust_all in any::<bool>(),
        values in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..6),
        text in "[0-9a-f:\\[\\]., \"]{0,200}",
    ) {
        let peer = IpAddr::from(peer);
        let trusted = if trust_all { nets(&["0.0.0.0/0"]) } else { nets(&["10.0.0.0/8", "::1"]) };
        let _ = client_ip(peer, &trusted, &values);
        let got = client_ip(peer, &trusted, &[text.as_bytes()]);
        prop_assert!(got == peer || text.split(',').any(|i| parse_item(i.as_bytes()) == Some(got)));
        if !trusted.iter().any(|n| n.contains(peer)) {
            prop_assert_eq!(got, peer);
        }
    }

    #[test]
    fn networks_never_panic(text in "\\PC{0,60}") {
        if let Ok(net) = text.parse::<Cidr>() {
            prop_assert!(net.contains(net.addr()));
            prop_assert_eq!(net.to_string().parse::<Cidr>(), Ok(net));
        }
    }
}
