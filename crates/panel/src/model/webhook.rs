//! Webhooks: where the operator's events go, which events, and how a delivery is
//! signed and retried. Pure: the signature and the back-off are functions of their
//! inputs; the outbox and the sending are in [`crate::webhooks`].

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use utoipa::ToSchema;

use super::{FieldError, Id, UserStatus};

/// The events a hook may pick.
pub const EVENTS: [&str; 14] = [
    "user.created",
    "user.changed",
    "user.deleted",
    "users.bulk",
    "user.limited",
    "user.expired",
    "user.usage_high",
    "user.expiring",
    "user.hold_started",
    "server.online",
    "server.unavailable",
    "tunnel.changed",
    "node.upgraded",
    "webhook.test",
];

/// When the observer tells of usage and expiry: the panel's `[webhooks]` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    /// `user.usage_high` once a user has used this share of their limit, in percent
    /// (1 to 99; default 80).
    pub usage_percent: u8,
    /// `user.expiring` once a user's expiry is this many days away or fewer (1 to
    /// 365; default 3).
    pub expiring_days: u16,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            usage_percent: 80,
            expiring_days: 3,
        }
    }
}

impl Thresholds {
    /// Checks the bounds, naming the setting.
    pub fn check(&self) -> Result<(), FieldError> {
        if !(1..=99).contains(&self.usage_percent) {
            return Err(FieldError::new("webhooks.usage_percent", "must be 1 to 99"));
        }
        if !(1..=365).contains(&self.expiring_days) {
            return Err(FieldError::new(
                "webhooks.expiring_days",
                "must be 1 to 365",
            ));
        }
        Ok(())
    }
}

/// A tunnel's state as the observer names it: `connected` (the relay has links
/// up), `no_connections` (the relay answers, no origin is connected) or
/// `unreachable` (the panel cannot reach the relay).
pub fn tunnel_state(links: u64, unreachable: bool) -> &'static str {
    if links > 0 {
        "connected"
    } else if unreachable {
        "unreachable"
    } else {
        "no_connections"
    }
}

/// Whether a tunnel's state from `seen` to `now` is told (`tunnel.changed`): any
/// change after the first look.
pub fn tunnel_changed(seen: Option<&str>, now: &str) -> bool {
    seen.is_some_and(|s| s != now)
}

/// Whether a server's node version from `seen` to `now` is an upgrade to tell
/// (`node.upgraded`): a different version reported after the first look. A node
/// that reports none (disconnected) changes nothing.
pub fn node_upgraded(seen: Option<&str>, now: Option<&str>) -> bool {
    matches!((seen, now), (Some(a), Some(b)) if a != b)
}

/// The event a server's state change from `seen` to `now` makes (`None` on a first
/// look, no change, or a change to pending).
pub fn server_event(seen: Option<&str>, now: &str) -> Option<&'static str> {
    match (seen?, now) {
        (a, b) if a == b => None,
        (_, "online") => Some("server.online"),
        (_, "unavailable") => Some("server.unavailable"),
        _ => None,
    }
}

/// A notice already sent for the user's current state: usage past the threshold.
pub const SENT_USAGE: u32 = 1;
/// A notice already sent: the expiry is within the threshold's days.
pub const SENT_EXPIRING: u32 = 2;
const DAY_MS: i64 = 86_400_000;

/// What the observer last recorded of a user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The status then.
    pub status: UserStatus,
    /// The notices sent ([`SENT_USAGE`], [`SENT_EXPIRING`]).
    pub flags: u32,
}

/// A user as the observer finds them now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The status now.
    pub status: UserStatus,
    /// Bytes used this period.
    pub used: u64,
    /// The limit, if any.
    pub limit: Option<u64>,
    /// The expiry in force (Unix ms), if any.
    pub expiry: Option<i64>,
}

/// The events a user's change since `seen` makes, and the flags to record. A user
/// seen for the first time makes none (a panel's first look, or a new user, sends
/// no flood): only what changes afterwards is told.
pub fn observe(
    seen: Option<Seen>,
    found: Found,
    now_ms: i64,
    at: &Thresholds,
) -> (Vec<&'static str>, u32) {
    let past_usage = found.limit.is_some_and(|l| {
        l > 0
            && u128::from(found.used) * 100 >= u128::from(l) * u128::from(at.usage_percent)
            && found.used < l
    });
    let expiring_ms = i64::from(at.expiring_days) * DAY_MS;
    let expiring = found.status != UserStatus::Disabled
        && found
            .expiry
            .is_some_and(|e| e > now_ms && e.saturating_sub(now_ms) <= expiring_ms);
    let flags =
        (if past_usage { SENT_USAGE } else { 0 }) | (if expiring { SENT_EXPIRING } else { 0 });
    let Some(seen) = seen else {
        return (Vec::new(), flags);
    };
    let mut events = Vec::new();
    if seen.status != found.status {
        match (seen.status, found.status) {
            (_, UserStatus::Limited) => events.push("user.limited"),
            (_, UserStatus::Expired) => events.push("user.expired"),
            (UserStatus::OnHold, UserStatus::Active) => events.push("user.hold_started"),
            _ => {}
        }
    }
    if past_usage && seen.flags & SENT_USAGE == 0 {
        events.push("user.usage_high");
    }
    if expiring && seen.flags & SENT_EXPIRING == 0 {
        events.push("user.expiring");
    }
    (events, flags)
}

/// A delivery's body: the event, when (Unix ms), who made it (an admin's name, or
/// `panel` for what the panel saw) and what it is about.
pub fn body(event: &str, by: &str, data: &impl Serialize, now_ms: i64) -> String {
    serde_json::json!({"event": event, "at_ms": now_ms, "by": by, "data": data}).to_string()
}

/// Attempts before a delivery is given up.
pub const MAX_ATTEMPTS: u32 = 12;

/// A hook as shown (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    /// Id.
    pub id: Id,
    /// Where deliveries are POSTed.
    pub url: String,
    /// The events it gets.
    pub events: Vec<String>,
    /// Delivering.
    pub enabled: bool,
    /// May deliver to a loopback or private address.
    pub allow_private: bool,
    /// Unix ms.
    pub created_ms: i64,
}

/// A new or changed hook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookInput {
    /// Where deliveries are POSTed (`https://…`; `http://` too).
    #[schema(max_length = 2000)]
    pub url: String,
    /// The events it gets (see the docs for the list).
    pub events: Vec<String>,
    /// Delivering (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// May deliver to a loopback or private address (default false: an address the
    /// URL resolves to that is not global is refused at each delivery).
    #[serde(default)]
    pub allow_private: bool,
}

fn yes() -> bool {
    true
}

impl WebhookInput {
    /// Checks the hook, naming the field.
    pub fn check(&self) -> Result<(), FieldError> {
        let url = http::Uri::try_from(self.url.as_str())
            .map_err(|_| FieldError::new("url", "is not a URL"))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(FieldError::new("url", "must be an http:// or https:// URL"));
        }
        if self.url.len() > 2000 {
            return Err(FieldError::new("url", "must be at most 2000 characters"));
        }
        if self.events.is_empty() {
            return Err(FieldError::new("events", "pick at least one event"));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(e) = self.events.iter().find(|e| !seen.insert(e.as_str())) {
            return Err(FieldError::new("events", format!("{e:?} is named twice")));
        }
        if let Some(e) = self.events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
            return Err(FieldError::new(
                "events",
                format!("{e:?} is not an event (known: {})", EVENTS.join(", ")),
            ));
        }
        Ok(())
    }
}

/// The signature of a delivery: `sha256=` and the hex HMAC-SHA256, keyed by the
/// hook's secret, of the timestamp (Unix seconds), a dot and the body.
pub fn sign(secret: &str, timestamp_s: i64, body: &str) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(timestamp_s.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!(
        "sha256={}",
        switchyard_config::hex::encode(&mac.finalize().into_bytes())
    )
}

/// When to try again after `attempts` failed attempts (ms after the last), or
/// `None`: given up. 10 s, 30 s, 1 min, 5 min, 15 min, 30 min, then hourly, up to
/// [`MAX_ATTEMPTS`] in all (about six hours).
pub fn backoff_ms(attempts: u32) -> Option<i64> {
    const STEPS: [i64; 6] = [10, 30, 60, 300, 900, 1800];
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let i = usize::try_from(attempts.saturating_sub(1)).unwrap_or(usize::MAX);
    Some(STEPS.get(i).copied().unwrap_or(3600) * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_hmac_of_the_timestamp_and_body() {
        // HMAC-SHA256("key", "1700000000.{}") computed independently (Python's hmac).
        assert_eq!(
            sign("key", 1_700_000_000, "{}"),
            "sha256=9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae"
        );
        let s = sign("key", 1_700_000_000, "{}");
        assert!(s.starts_with("sha256=") && s.len() == 7 + 64);
        assert_ne!(s, sign("key", 1_700_000_001, "{}"));
        assert_ne!(s, sign("other", 1_700_000_000, "{}"));
    }

    #[test]
    fn back_off_grows_then_gives_up() {
        let steps: Vec<Option<i64>> = (1..=13).map(backoff_ms).collect();
        assert_eq!(
            steps,
            [
                Some(10_000),
                Some(30_000),
                Some(60_000),
                Some(300_000),
                Some(900_000),
                Some(1_800_000),
                Some(3_600_000),
                Some(3_600_000),
                Some(3_600_000),
                Some(3_600_000),
                Some(3_600_000),
                None,
                None
            ]
        );
    }

    const NOW: i64 = 1_796_083_200_000;
    const AT: Thresholds = Thresholds {
        usage_percent: 80,
        expiring_days: 3,
    };

    fn found(status: UserStatus, used: u64, limit: Option<u64>, expiry: Option<i64>) -> Found {
        Found {
            status,
            used,
            limit,
            expiry,
        }
    }

    #[test]
    fn a_first_look_tells_nothing_and_records_the_notices() {
        let f = found(UserStatus::Active, 85, Some(100), Some(NOW + 86_400_000));
        assert_eq!(
            observe(None, f, NOW, &AT),
            (vec![], SENT_USAGE | SENT_EXPIRING)
        );
    }

    #[test]
    fn each_change_is_told_once() {
        let active = Seen {
            status: UserStatus::Active,
            flags: 0,
        };
        // 79 % is not 80 %; 80 % is, once.
        assert_eq!(
            observe(
                Some(active),
                found(UserStatus::Active, 79, Some(100), None),
                NOW,
                &AT
            ),
            (vec![], 0)
        );
        assert_eq!(
            observe(
                Some(active),
                found(UserStatus::Active, 80, Some(100), None),
                NOW,
                &AT
            ),
            (vec!["user.usage_high"], SENT_USAGE)
        );
        let told = Seen {
            status: UserStatus::Active,
            flags: SENT_USAGE,
        };
        assert_eq!(
            observe(
                Some(told),
                found(UserStatus::Active, 90, Some(100), None),
                NOW,
                &AT
            ),
            (vec![], SENT_USAGE)
        );
        // All of it: limited (and no more "past 80 %").
        assert_eq!(
            observe(
                Some(told),
                found(UserStatus::Limited, 100, Some(100), None),
                NOW,
                &AT
            ),
            (vec!["user.limited"], 0)
        );
        // Expiry: within three days, to the millisecond; then expired.
        let three_days = NOW + 3 * 86_400_000;
        assert_eq!(
            observe(
                Some(active),
                found(UserStatus::Active, 0, None, Some(three_days + 1)),
                NOW,
                &AT
            ),
            (vec![], 0)
        );
        assert_eq!(
            observe(
                Some(active),
                found(UserStatus::Active, 0, None, Some(three_days)),
                NOW,
                &AT
            ),
            (vec!["user.expiring"], SENT_EXPIRING)
        );
        assert_eq!(
            observe(
                Some(active),
                found(UserStatus::Expired, 0, None, Some(NOW)),
                NOW,
                &AT
            ),
            (vec!["user.expired"], 0)
        );
        // The hold's clock starts at the first connection.
        let held = Seen {
            status: UserStatus::OnHold,
            flags: 0,
        };
        assert_eq!(
            observe(
                Some(held),
                found(UserStatus::Active, 1, None, None),
                NOW,
                &AT
            ),
            (vec!["user.hold_started"], 0)
        );
        // A disabled user is told nothing about expiry.
        assert_eq!(
            observe(
                Some(active),
                found(UserStatus::Disabled, 0, None, Some(three_days)),
                NOW,
                &AT
            ),
            (vec![], 0)
        );
    }

    #[test]
    fn the_thresholds_are_the_operators() {
        let active = Seen {
            status: UserStatus::Active,
            flags: 0,
        };
        let at = Thresholds {
            usage_percent: 95,
            expiring_days: 7,
        };
        assert_eq!(Thresholds::default(), AT);
        let f = |used, expiry| found(UserStatus::Active, used, Some(1000), expiry);
        assert_eq!(observe(Some(active), f(949, None), NOW, &at), (vec![], 0));
        assert_eq!(
            observe(Some(active), f(950, None), NOW, &at),
            (vec!["user.usage_high"], SENT_USAGE)
        );
        let week = NOW + 7 * 86_400_000;
        assert_eq!(
            observe(Some(active), f(0, Some(week + 1)), NOW, &at),
            (vec![], 0)
        );
        assert_eq!(
            observe(Some(active), f(0, Some(week)), NOW, &at),
            (vec!["user.expiring"], SENT_EXPIRING)
        );
        for (usage_percent, expiring_days, field) in [
            (0, 3, Some("webhooks.usage_percent")),
            (100, 3, Some("webhooks.usage_percent")),
            (99, 0, Some("webhooks.expiring_days")),
            (1, 366, Some("webhooks.expiring_days")),
            (1, 365, None),
        ] {
            let t = Thresholds {
                usage_percent,
                expiring_days,
            };
            assert_eq!(t.check().err().map(|e| e.field), field.map(str::to_owned));
        }
    }

    #[test]
    fn tunnels_and_upgrades_are_told_after_the_first_look() {
        assert_eq!(tunnel_state(2, false), "connected");
        assert_eq!(tunnel_state(2, true), "connected");
        assert_eq!(tunnel_state(0, false), "no_connections");
        assert_eq!(tunnel_state(0, true), "unreachable");
        assert!(!tunnel_changed(None, "connected"));
        assert!(!tunnel_changed(Some("connected"), "connected"));
        assert!(tunnel_changed(Some("connected"), "unreachable"));
        assert!(!node_upgraded(None, Some("0.9.0")));
        assert!(!node_upgraded(Some("0.9.0"), None));
        assert!(!node_upgraded(Some("0.9.0"), Some("0.9.0")));
        assert!(node_upgraded(Some("0.9.0"), Some("0.10.0")));
    }

    #[test]
    fn a_server_is_told_when_it_comes_and_goes() {
        assert_eq!(server_event(None, "online"), None);
        assert_eq!(
            server_event(Some("pending"), "online"),
            Some("server.online")
        );
        assert_eq!(
            server_event(Some("online"), "unavailable"),
            Some("server.unavailable")
        );
        assert_eq!(
            server_event(Some("unavailable"), "online"),
            Some("server.online")
        );
        assert_eq!(server_event(Some("online"), "online"), None);
        assert_eq!(server_event(Some("online"), "pending"), None);
    }

    #[test]
    fn hooks_are_checked_by_field() {
        let ok = WebhookInput {
            url: "https://billing.example/hook".into(),
            events: vec!["user.created".into()],
            enabled: true,
            allow_private: false,
        };
        assert_eq!(ok.check(), Ok(()));
        let bad = |w: WebhookInput| w.check().unwrap_err().field;
        assert_eq!(
            bad(WebhookInput {
                url: "ftp://x/".into(),
                ..ok.clone()
            }),
            "url"
        );
        assert_eq!(
            bad(WebhookInput {
                url: "not a url".into(),
                ..ok.clone()
            }),
            "url"
        );
        assert_eq!(
            bad(WebhookInput {
                events: vec![],
                ..ok.clone()
            }),
            "events"
        );
        let twice = WebhookInput {
            events: vec!["user.created".into(), "user.created".into()],
            ..ok.clone()
        };
        assert_eq!(
            twice.check().unwrap_err().message,
            "\"user.created\" is named twice"
        );
        assert_eq!(
            bad(WebhookInput {
                events: vec!["user.eaten".into()],
                ..ok.clone()
            }),
            "events"
        );
    }
}
