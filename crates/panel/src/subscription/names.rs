//! What an entry is called in the user's app: its route's sign, the flag first.
//!
//! The route wizard asks for a name ("what users see in their app") and a flag; an
//! entry stands for a route whichever inbound the balancer chose, so it carries the
//! route's name, never the inbound's. [`label`] puts the flag before the name
//! (`🇩🇪 Frankfurt`), a two-letter country code turned into its flag; [`make_unique`]
//! adds ` 2`, ` 3`, ... to a name already taken in the same subscription, so every
//! app (whose share links and Xray remarks are not made unique by the format) shows
//! each entry under its own name.

use std::collections::HashSet;

use switchyard_proto::entry::Entry;

/// The name an app shows for a route named `name` with `flag`: `"{flag} {name}"`,
/// or the name alone without a flag or when it already starts with the flag. A flag
/// of two ASCII letters is a country code and becomes its emoji (`de` → 🇩🇪).
pub fn label(name: &str, flag: Option<&str>) -> String {
    let name = name.trim();
    let Some(flag) = flag.map(str::trim).filter(|f| !f.is_empty()) else {
        return name.to_owned();
    };
    let flag = country_flag(flag).unwrap_or_else(|| flag.to_owned());
    if name.starts_with(&flag) {
        name.to_owned()
    } else {
        format!("{flag} {name}")
    }
}

/// The flag emoji of a two-letter country code (regional indicator symbols).
fn country_flag(code: &str) -> Option<String> {
    let bytes = code.as_bytes();
    if bytes.len() != 2 || !bytes.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    bytes
        .iter()
        .map(|b| char::from_u32(0x1F1E6 + u32::from(b.to_ascii_uppercase() - b'A')))
        .collect()
}

/// Makes every entry's name unique within `entries`, in order: a name already taken
/// gets ` 2`, ` 3`, ... (the first keeps it).
pub fn make_unique(entries: &mut [Entry]) {
    let mut taken: HashSet<String> = HashSet::with_capacity(entries.len());
    for entry in entries {
        if taken.insert(entry.name.clone()) {
            continue;
        }
        let mut n = 2u64;
        let name = loop {
            let candidate = format!("{} {n}", entry.name);
            if !taken.contains(&candidate) {
                break candidate;
            }
            n = n.saturating_add(1);
        };
        taken.insert(name.clone());
        entry.name = name;
    }
}

#[cfg(test)]
mod tests {
    use switchyard_proto::entry::{EntryProtocol, EntryTransport};

    use super::*;

    #[test]
    fn the_flag_goes_first_once() {
        assert_eq!(label("Frankfurt", Some("🇩🇪")), "🇩🇪 Frankfurt");
        assert_eq!(label("Frankfurt", Some("de")), "🇩🇪 Frankfurt");
        assert_eq!(label("Frankfurt", Some("DE")), "🇩🇪 Frankfurt");
        assert_eq!(label("🇩🇪 Frankfurt", Some("🇩🇪")), "🇩🇪 Frankfurt");
        assert_eq!(label("🇩🇪 Frankfurt", Some("DE")), "🇩🇪 Frankfurt");
        assert_eq!(label("Frankfurt", None), "Frankfurt");
        assert_eq!(label("Frankfurt", Some("  ")), "Frankfurt");
        assert_eq!(label("Streaming", Some("🎬")), "🎬 Streaming");
        assert_eq!(label("Europe", Some("EUR")), "EUR Europe");
    }

    #[test]
    fn taken_names_get_a_number() {
        let entry = |name: &str| Entry {
            name: name.into(),
            server: "h".into(),
            port: 1,
            protocol: EntryProtocol::Trojan {
                password: "p".into(),
            },
            transport: EntryTransport::Tcp,
            tls: None,
            route: None,
        };
        let mut entries: Vec<Entry> = ["A", "B", "A", "A 2", "A"].into_iter().map(entry).collect();
        make_unique(&mut entries);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "A 2", "A 2 2", "A 3"]);
    }
}
