//! `switchyard client status` for people: the running client's answer (JSON, see
//! `switchyard_client::auto`) as a few lines and one table per subscription, in
//! queue order.

use std::fmt::Write as _;

use serde_json::Value;

/// The status answer as text.
pub(crate) fn render(a: &Value) -> String {
    let mut out = String::new();
    let text = |v: &Value| v.as_str().unwrap_or("none").to_owned();
    let _ = writeln!(out, "current server: {}", text(&a["current"]));
    let _ = writeln!(out, "return server:  {}", text(&a["return_to"]));
    let _ = writeln!(out, "network:        {}", text(&a["network"]));
    match &a["back_off"] {
        Value::Object(b) => {
            let _ = writeln!(
                out,
                "back-off:       the network looks gone ({} attempt(s) in a row); next attempt in {} s",
                b.get("attempts").and_then(Value::as_u64).unwrap_or(0),
                b.get("retry_in_ms").and_then(Value::as_u64).unwrap_or(0) / 1000
            );
        }
        _ => {
            let _ = writeln!(out, "back-off:       none");
        }
    }
    match &a["last_check"] {
        Value::Object(c) => {
            let answered: Vec<String> = c
                .get("answered")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| format!("{} {} ms", text(&r["server"]), r["ms"]))
                .collect();
            let silent: Vec<String> = c
                .get("silent")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(text)
                .collect();
            let _ = writeln!(
                out,
                "last check:     #{} ({}): {}; answered: {}; silent: {}",
                c.get("id").and_then(Value::as_u64).unwrap_or(0),
                c.get("trigger").map(text).unwrap_or_default(),
                c.get("outcome").map(text).unwrap_or_default(),
                if answered.is_empty() {
                    "none".into()
                } else {
                    answered.join(", ")
                },
                if silent.is_empty() {
                    "none".into()
                } else {
                    silent.join(", ")
                },
            );
        }
        _ => {
            let _ = writeln!(out, "last check:     none yet");
        }
    }
    for sub in a["subscriptions"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "\nsubscription {}: {}{}",
            sub["number"],
            text(&sub["name"]),
            if sub["auto"] == true {
                " (Auto is on)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            out,
            "  {:<3} {:<28} {:>7} {:>8} {:>8} {:>8}  notes",
            "#", "server", "score", "typical", "jumps", "failures"
        );
        for (i, s) in sub["servers"].as_array().into_iter().flatten().enumerate() {
            let ms = |v: &Value| {
                v.as_u64()
                    .map_or_else(|| "-".to_owned(), |n| format!("{n} ms"))
            };
            let mut notes = Vec::new();
            for (key, word) in [
                ("current", "current"),
                ("return_to", "return"),
                ("marked", "marked"),
            ] {
                if s[key] == true {
                    notes.push(word.to_owned());
                }
            }
            if let Some(mbps) = s["speed_mbps"].as_f64() {
                notes.push(format!("{mbps:.1} Mbit/s"));
            }
            if s["standing"] != "scored" {
                notes.push(text(&s["standing"]).replace('_', " "));
            }
            let _ = writeln!(
                out,
                "  {:<3} {:<28} {:>7} {:>8} {:>8} {:>8}  {}",
                i + 1,
                text(&s["name"]),
                s["score"]
                    .as_u64()
                    .map_or_else(|| "-".to_owned(), |n| n.to_string()),
                ms(&s["typical_ms"]),
                ms(&s["jumps_ms"]),
                s["failures"]
                    .as_u64()
                    .map_or_else(|| "-".to_owned(), |n| n.to_string()),
                notes.join(", ")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_queue_the_parts_the_back_off_and_the_last_check() {
        let a = serde_json::json!({
            "ok": true,
            "current": "Finland",
            "return_to": null,
            "network": "up",
            "back_off": {"attempts": 2, "since_ms": 1, "retry_in_ms": 29_500},
            "last_check": {"id": 7, "trigger": "stall", "outcome": "network_lost",
                "answered": [], "silent": ["Finland", "Germany"], "held": false},
            "subscriptions": [{"number": 1, "name": "http://p/sub/x", "auto": true, "servers": [
                {"name": "Finland", "score": 63, "standing": "scored", "typical_ms": 61,
                 "jumps_ms": 2, "failures": 0, "current": true, "marked": false, "return_to": false},
                {"name": "Germany", "score": null, "standing": "unchecked", "typical_ms": null,
                 "jumps_ms": null, "failures": null, "current": false, "marked": true, "return_to": false}
            ]}],
            "log": []
        });
        let text = render(&a);
        assert!(text.contains("current server: Finland\n"), "{text}");
        assert!(text.contains("return server:  none\n"), "{text}");
        assert!(
            text.contains("(2 attempt(s) in a row); next attempt in 29 s"),
            "{text}"
        );
        assert!(
            text.contains(
                "last check:     #7 (stall): network_lost; answered: none; silent: Finland, Germany"
            ),
            "{text}"
        );
        assert!(
            text.contains("subscription 1: http://p/sub/x (Auto is on)"),
            "{text}"
        );
        let finland = text.lines().find(|l| l.contains("Finland  ")).unwrap();
        assert!(
            finland.contains("63")
                && finland.contains("61 ms")
                && finland.contains("2 ms")
                && finland.ends_with("current"),
            "{finland}"
        );
        let germany = text.lines().find(|l| l.contains("Germany  ")).unwrap();
        assert!(germany.ends_with("marked, unchecked"), "{germany}");
    }
}
