use super::*;

const BASE: &str = "/xh/";
const SID: &str = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";

#[test]
fn paths_are_normalized_as_xray_does() {
    assert_eq!(normalize_path(""), "/");
    assert_eq!(normalize_path("/"), "/");
    assert_eq!(normalize_path("xh"), "/xh/");
    assert_eq!(normalize_path("/xh"), "/xh/");
    assert_eq!(normalize_path("/xh/"), "/xh/");
    assert_eq!(normalize_path("/xh?ed=2048"), "/xh/");
    assert_eq!(path_query("/xh?ed=2048"), Some("ed=2048"));
    assert_eq!(path_query("/xh?"), None);
    assert_eq!(path_query("/xh"), None);
}

#[test]
fn requests_are_classified() {
    let get = format!("{BASE}{SID}?x_padding=000");
    assert_eq!(
        classify(BASE, "GET", &get),
        Ok(Request::Download { session: SID })
    );
    let up = format!("{BASE}{SID}");
    assert_eq!(
        classify(BASE, "POST", &up),
        Ok(Request::StreamUp { session: SID })
    );
    let packet = format!("{BASE}{SID}/17?x_padding=0");
    assert_eq!(
        classify(BASE, "POST", &packet),
        Ok(Request::Packet {
            session: SID,
            seq: 17
        })
    );
    assert_eq!(classify(BASE, "POST", "/xh/"), Ok(Request::StreamOne));
    assert_eq!(
        classify(BASE, "POST", "/xh/?x_padding=00"),
        Ok(Request::StreamOne)
    );
    let max = format!("{BASE}{SID}/18446744073709551615");
    assert_eq!(
        classify(BASE, "POST", &max),
        Ok(Request::Packet {
            session: SID,
            seq: u64::MAX
        })
    );
}

#[test]
fn strangers_are_refused_by_reason() {
    assert_eq!(classify(BASE, "GET", "/other/x"), Err(XhttpError::Path));
    assert_eq!(classify(BASE, "GET", "/xh"), Err(XhttpError::Path));
    assert_eq!(
        classify(BASE, "GET", "/xh/"),
        Err(XhttpError::Method("GET".into()))
    );
    assert_eq!(
        classify(BASE, "PUT", &format!("{BASE}{SID}")),
        Err(XhttpError::Method("PUT".into()))
    );
    assert_eq!(
        classify(BASE, "GET", &format!("{BASE}{SID}/3")),
        Err(XhttpError::Method("GET".into()))
    );
    assert_eq!(classify(BASE, "GET", "/xh/a b"), Err(XhttpError::Session));
    assert_eq!(classify(BASE, "GET", "/xh/a%2f"), Err(XhttpError::Session));
    let long = format!("{BASE}{}", "a".repeat(MAX_SESSION_LEN + 1));
    assert_eq!(classify(BASE, "GET", &long), Err(XhttpError::Session));
    let just = format!("{BASE}{}", "a".repeat(MAX_SESSION_LEN));
    assert!(classify(BASE, "GET", &just).is_ok());
    for seq in ["-1", "1.0", "x", "18446744073709551616", "+1"] {
        assert_eq!(
            classify(BASE, "POST", &format!("{BASE}{SID}/{seq}")),
            Err(XhttpError::Seq),
            "{seq}"
        );
    }
    assert_eq!(
        classify(BASE, "POST", &format!("{BASE}{SID}/1/2")),
        Err(XhttpError::Segments)
    );
    assert_eq!(
        classify(BASE, "POST", &format!("{BASE}{SID}/")),
        Err(XhttpError::Segments)
    );
}

#[test]
fn each_mode_takes_its_requests() {
    let d = Request::Download { session: SID };
    let u = Request::StreamUp { session: SID };
    let p = Request::Packet {
        session: SID,
        seq: 0,
    };
    let o = Request::StreamOne;
    let table = [
        (Mode::Auto, [true, true, true, true]),
        (Mode::PacketUp, [true, false, true, false]),
        (Mode::StreamUp, [true, true, false, false]),
        (Mode::StreamOne, [false, false, false, true]),
    ];
    for (mode, want) in table {
        let got = [d, u, p, o].map(|r| mode.accepts(&r));
        assert_eq!(got, want, "{mode}");
    }
}

#[test]
fn modes_read_and_write_their_names() {
    for m in Mode::ALL {
        assert_eq!(Mode::parse(m.name()), Some(m));
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(json, format!("\"{}\"", m.name()));
    }
    assert_eq!(Mode::parse(""), Some(Mode::Auto));
    assert_eq!(Mode::parse("stream"), None);
}

#[test]
fn ranges_read_both_forms() {
    assert_eq!(
        Range::parse("100-1000"),
        Ok(Range {
            from: 100,
            to: 1000
        })
    );
    assert_eq!(Range::parse(" 5 - 7 "), Ok(Range { from: 5, to: 7 }));
    assert_eq!(Range::parse("30"), Ok(Range::fixed(30)));
    assert_eq!(
        Range::parse("9-3"),
        Err(RangeError::Reversed { from: 9, to: 3 })
    );
    for bad in ["", "-", "1-", "-1", "a", "1-2-3", "4294967296", "+1"] {
        assert!(
            matches!(Range::parse(bad), Err(RangeError::Syntax(_))),
            "{bad}"
        );
    }
    let r: Range = serde_json::from_str("\"100-1000\"").unwrap();
    assert_eq!(r, DEFAULT_PADDING);
    let r: Range = serde_json::from_str("1000000").unwrap();
    assert_eq!(r, DEFAULT_MAX_EACH_POST);
    assert!(serde_json::from_str::<Range>("\"2-1\"").is_err());
    assert_eq!(
        serde_json::to_string(&DEFAULT_PADDING).unwrap(),
        "\"100-1000\""
    );
    assert_eq!(serde_json::to_string(&Range::fixed(30)).unwrap(), "\"30\"");
}

#[test]
fn ranges_pick_inside_themselves() {
    let r = Range {
        from: 100,
        to: 1000,
    };
    assert_eq!(r.pick(0), 100);
    assert_eq!(r.pick(900), 1000);
    assert_eq!(r.pick(901), 100);
    assert_eq!(Range::fixed(7).pick(u32::MAX), 7);
    let all = Range {
        from: 0,
        to: u32::MAX,
    };
    assert_eq!(all.pick(u32::MAX), u32::MAX);
    assert!(r.contains(100) && r.contains(1000) && !r.contains(99) && !r.contains(1001));
}

#[test]
fn padding_is_measured_and_checked() {
    assert_eq!(padding_len("/xh/s"), 0);
    assert_eq!(padding_len("/xh/s?x_padding=0000"), 4);
    assert_eq!(padding_len("/xh/s?ed=1&x_padding=00&z=1"), 2);
    assert_eq!(padding_len("/xh/s?x_padding"), 0);
    assert_eq!(
        check_padding("/xh/s?x_padding=00", DEFAULT_PADDING),
        Err(XhttpError::Padding {
            len: 2,
            range: DEFAULT_PADDING
        })
    );
    let param = padding_param(100);
    assert_eq!(param.len(), "x_padding=".len() + 100);
    assert!(check_padding(&format!("/xh/s?{param}"), DEFAULT_PADDING).is_ok());
    assert_eq!(padding_param(0), "");
    assert!(check_padding("/xh/s", Range::fixed(0)).is_ok());
}
