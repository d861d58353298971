//! The subscription page's choice of language from an anonymous request's `?lang=`
//! and `Accept-Language` on arbitrary text, and the page it writes with arbitrary
//! dates and sizes (the Solar Hijri calendar included): no panic, the same input always the same answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_panel::model::UserStatus;
use switchyard_panel::subscription::page::{Lang, Page, render, solar_hijri};

fuzz_target!(|data: &[u8]| {
    let mut number = [0u8; 8];
    let n = data.len().min(8);
    number[..n].copy_from_slice(&data[..n]);
    let ms = i64::from_le_bytes(number);
    let Ok(text) = std::str::from_utf8(&data[n..]) else {
        return;
    };
    let (query, header) = text.split_once('\n').unwrap_or(("", text));
    let query = (!query.is_empty()).then_some(query);
    let lang = Lang::negotiate(query, Some(header));
    assert_eq!(lang, Lang::negotiate(query, Some(header)));
    let (y, m, d) = (ms as i32, (ms >> 32) as u8 % 13, (ms >> 40) as u8 % 32);
    if let Some((jy, jm, jd)) = solar_hijri(y, m.max(1), d.max(1)) {
        assert!((1..=12).contains(&jm) && (1..=31).contains(&jd), "{jy}/{jm}/{jd}");
    }
    // The whole page in that language, with the number as the expiry and the usage.
    let page = Page {
        title: "t",
        username: "u",
        status: UserStatus::Active,
        status_reason: None,
        subscription_url: "https://sub.example/s/x",
        links: &[],
        used_bytes: ms.unsigned_abs(),
        limit_bytes: Some(ms.unsigned_abs() / 2 + 1),
        expires_ms: Some(ms),
        now_ms: ms.wrapping_neg(),
        support_url: None,
        announce: None,
        lang,
    };
    let html = render(&page);
    assert!(html.contains(&format!("<html lang=\"{}\"", lang.code())));
});
