//! Admins, their roles and a reseller's quota. Pure: the quota is checked against
//! numbers the store counted, time passed in.
//!
//! - **owner**: everything.
//! - **admin**: everything but the admins themselves (their list, roles, quotas,
//!   passwords) and imports (which make admins).
//! - **reseller**: only the users they made, within their quota; the clusters their
//!   quota names (all when it names none), to put users in.
//! - **read_only**: reads what an admin may read, writes nothing.
//!
//! Every role manages its own password, sessions and API tokens.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{FieldError, Id};

/// The highest bcrypt cost taken (Marzban's passlib writes 12): an imported file is
/// hostile, and a hash of cost 31 would hold a login's thread for days.
pub const MAX_BCRYPT_COST: u32 = 14;

/// Whether a stored hash is another panel's bcrypt (`$2a$`, `$2b$`, `$2y$`: Marzban
/// and its forks) of a cost up to [`MAX_BCRYPT_COST`], kept by an import so its
/// admins log in with their passwords; the first login replaces it with argon2id.
pub fn is_bcrypt(hash: &str) -> bool {
    let Some(rest) = ["$2a$", "$2b$", "$2y$"]
        .iter()
        .find_map(|p| hash.strip_prefix(p))
    else {
        return false;
    };
    rest.get(..2)
        .filter(|_| rest.as_bytes().get(2) == Some(&b'$'))
        .and_then(|c| c.parse::<u32>().ok())
        .is_some_and(|c| (4..=MAX_BCRYPT_COST).contains(&c))
}

/// What an admin may do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Everything.
    #[default]
    Owner,
    /// Everything but admins and imports.
    Admin,
    /// Only the users they made, within a quota.
    Reseller,
    /// Reads, never writes.
    ReadOnly,
}

impl Role {
    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Admin => "admin",
            Self::Reseller => "reseller",
            Self::ReadOnly => "read_only",
        }
    }

    /// The role stored as `text`; an unknown text is read-only (the safe side).
    pub fn from_stored(text: &str) -> Self {
        match text {
            "owner" => Self::Owner,
            "admin" => Self::Admin,
            "reseller" => Self::Reseller,
            _ => Self::ReadOnly,
        }
    }
}

/// An operator who may log in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Admin {
    /// Id.
    pub id: Id,
    /// Login name.
    pub username: String,
    /// Unix ms.
    pub created_ms: i64,
    /// What they may do.
    #[serde(default)]
    pub role: Role,
}

/// What a reseller may hand out; each bound unset is no bound. Ignored for the
/// other roles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// At most this many users of theirs.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub max_users: Option<u64>,
    /// Their users' traffic limits (bytes per period) add up to at most this; each
    /// of their users must then have a limit.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub max_traffic: Option<u64>,
    /// Their users expire at most this many days ahead (from the change), or are on
    /// hold for at most this many days; each must then expire.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 36500)]
    pub max_expiry_days: Option<u32>,
    /// Their users are in these clusters only (each must then name its clusters);
    /// all clusters when unset.
    #[serde(default)]
    pub clusters: Option<Vec<Id>>,
}

/// What a reseller's other users already take of the quota (the user being changed
/// left out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct QuotaUse {
    /// How many users.
    pub users: u64,
    /// Their traffic limits added up (bytes).
    pub traffic: u64,
}

/// What a user asks of the quota: the fields of a user it bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ask<'a> {
    /// Bytes per period; unset is unlimited.
    pub traffic_limit: Option<u64>,
    /// Unix ms; unset is never.
    pub expires_ms: Option<i64>,
    /// On hold for this many days.
    pub on_hold_days: Option<u32>,
    /// The user's clusters; unset is all.
    pub clusters: Option<&'a [Id]>,
}

const DAY_MS: i64 = 86_400_000;

impl Quota {
    /// Checks the bounds themselves.
    pub fn check(&self) -> Result<(), FieldError> {
        if self
            .max_expiry_days
            .is_some_and(|d| !(1..=36_500).contains(&d))
        {
            return Err(FieldError::new(
                "quota.max_expiry_days",
                "must be 1 to 36500 days",
            ));
        }
        if self.clusters.as_ref().is_some_and(|c| c.len() > 1000) {
            return Err(FieldError::new("quota.clusters", "at most 1000 clusters"));
        }
        Ok(())
    }

    /// Whether `input` (a new user when `creating`) fits the quota next to `used`
    /// (the reseller's other users) at `now_ms`; the error names the user's field.
    pub fn admits(
        &self,
        used: QuotaUse,
        input: &Ask<'_>,
        creating: bool,
        now_ms: i64,
    ) -> Result<(), FieldError> {
        if let Some(max) = self.max_users
            && creating
            && used.users >= max
        {
            return Err(FieldError::new(
                "username",
                format!(
                    "your quota allows {max} user{}: none is left to make",
                    if max == 1 { "" } else { "s" }
                ),
            ));
        }
        if let Some(max) = self.max_traffic {
            let Some(limit) = input.traffic_limit else {
                return Err(FieldError::new(
                    "traffic_limit",
                    format!(
                        "your quota hands out {max} bytes in all: each of your users needs a limit"
                    ),
                ));
            };
            let total = used.traffic.checked_add(limit);
            if total.is_none_or(|t| t > max) {
                let left = max.saturating_sub(used.traffic);
                return Err(FieldError::new(
                    "traffic_limit",
                    format!("your quota has {left} of {max} bytes left to hand out"),
                ));
            }
        }
        if let Some(days) = self.max_expiry_days {
            let latest = now_ms.saturating_add(i64::from(days).saturating_mul(DAY_MS));
            match (input.expires_ms, input.on_hold_days) {
                (_, Some(hold)) if hold > days => {
                    return Err(FieldError::new(
                        "on_hold_days",
                        format!("your quota allows at most {days} days"),
                    ));
                }
                (_, Some(_)) => {}
                (Some(at), None) if at > latest => {
                    return Err(FieldError::new(
                        "expires_ms",
                        format!("your quota allows at most {days} days ahead"),
                    ));
                }
                (Some(_), None) => {}
                (None, None) => {
                    return Err(FieldError::new(
                        "expires_ms",
                        format!(
                            "your quota allows at most {days} days: each of your users must expire"
                        ),
                    ));
                }
            }
        }
        if let Some(allowed) = &self.clusters {
            match input.clusters {
                None => {
                    return Err(FieldError::new(
                        "clusters",
                        "your quota names the clusters you may use: choose among them",
                    ));
                }
                Some(chosen) => {
                    if let Some(c) = chosen.iter().find(|c| !allowed.contains(c)) {
                        return Err(FieldError::new(
                            "clusters",
                            format!("cluster {c} is not one your quota allows"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn limited(limit: u64) -> Ask<'static> {
        Ask {
            traffic_limit: Some(limit),
            ..Ask::default()
        }
    }

    #[test]
    fn an_empty_quota_admits_anything() {
        let q = Quota::default();
        let used = QuotaUse {
            users: u64::MAX,
            traffic: u64::MAX,
        };
        assert_eq!(q.admits(used, &Ask::default(), true, NOW), Ok(()));
    }

    #[test]
    fn the_user_count_bounds_new_users_only() {
        let q = Quota {
            max_users: Some(2),
            ..Quota::default()
        };
        let used = |users| QuotaUse { users, traffic: 0 };
        let u = Ask::default();
        assert_eq!(q.admits(used(1), &u, true, NOW), Ok(()));
        let e = q.admits(used(2), &u, true, NOW).unwrap_err();
        assert_eq!(e.field, "username");
        assert_eq!(e.message, "your quota allows 2 users: none is left to make");
        // A change to one of the two is not a third.
        assert_eq!(q.admits(used(2), &u, false, NOW), Ok(()));
    }

    #[test]
    fn traffic_adds_up_to_the_quota_exactly() {
        let q = Quota {
            max_traffic: Some(100),
            ..Quota::default()
        };
        let used = QuotaUse {
            users: 3,
            traffic: 60,
        };
        assert_eq!(q.admits(used, &limited(40), true, NOW), Ok(()));
        let e = q.admits(used, &limited(41), true, NOW).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            (
                "traffic_limit",
                "your quota has 40 of 100 bytes left to hand out"
            )
        );
        let e = q.admits(used, &Ask::default(), true, NOW).unwrap_err();
        assert_eq!(e.field, "traffic_limit");
        // No overflow past u64.
        let full = QuotaUse {
            users: 0,
            traffic: u64::MAX,
        };
        assert!(q.admits(full, &limited(u64::MAX), true, NOW).is_err());
    }

    #[test]
    fn expiry_is_bounded_to_the_day() {
        let q = Quota {
            max_expiry_days: Some(30),
            ..Quota::default()
        };
        let at = |ms| Ask {
            expires_ms: Some(ms),
            ..Ask::default()
        };
        let used = QuotaUse::default();
        assert_eq!(q.admits(used, &at(NOW + 30 * DAY_MS), true, NOW), Ok(()));
        let e = q
            .admits(used, &at(NOW + 30 * DAY_MS + 1), true, NOW)
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("expires_ms", "your quota allows at most 30 days ahead")
        );
        assert_eq!(
            q.admits(used, &Ask::default(), true, NOW)
                .unwrap_err()
                .field,
            "expires_ms"
        );
        let hold = |days| Ask {
            on_hold_days: Some(days),
            ..Ask::default()
        };
        assert_eq!(q.admits(used, &hold(30), true, NOW), Ok(()));
        assert_eq!(
            q.admits(used, &hold(31), true, NOW).unwrap_err().field,
            "on_hold_days"
        );
    }

    #[test]
    fn clusters_must_be_named_and_allowed() {
        let q = Quota {
            clusters: Some(vec![1, 2]),
            ..Quota::default()
        };
        let within = |c: &'static [Id]| Ask {
            clusters: Some(c),
            ..Ask::default()
        };
        let used = QuotaUse::default();
        assert_eq!(q.admits(used, &within(&[2]), true, NOW), Ok(()));
        let e = q.admits(used, &within(&[1, 3]), true, NOW).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("clusters", "cluster 3 is not one your quota allows")
        );
        assert_eq!(
            q.admits(used, &Ask::default(), true, NOW)
                .unwrap_err()
                .field,
            "clusters"
        );
    }

    #[test]
    fn only_bcrypt_of_a_bounded_cost_is_taken() {
        let h = |cost: &str| {
            format!("$2b${cost}$Apg36plNeAv2IINRnqOR1ubu7DY3Ds5SNrGrzK2.rbUdFq1FKpgUG")
        };
        assert!(is_bcrypt(&h("04")));
        assert!(is_bcrypt(&h("12")));
        assert!(is_bcrypt(&h("14")));
        assert!(!is_bcrypt(&h("15")));
        assert!(!is_bcrypt(&h("31")));
        assert!(!is_bcrypt(&h("x1")));
        assert!(!is_bcrypt("$2b$"));
        assert!(!is_bcrypt("$argon2id$v=19$m=19456,t=2,p=1$salt$hash"));
    }

    #[test]
    fn roles_are_stored_by_name_and_unknown_is_read_only() {
        for r in [Role::Owner, Role::Admin, Role::Reseller, Role::ReadOnly] {
            assert_eq!(Role::from_stored(r.as_str()), r);
        }
        assert_eq!(Role::from_stored("root"), Role::ReadOnly);
    }

    #[test]
    fn bad_bounds_name_their_field() {
        let q = Quota {
            max_expiry_days: Some(0),
            ..Quota::default()
        };
        assert_eq!(q.check().unwrap_err().field, "quota.max_expiry_days");
    }
}
