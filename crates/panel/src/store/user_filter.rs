//! Which users a listing or a bulk change is about, as SQL: by name, by status (the
//! status is computed, never stored: its rules, [`crate::model::Standing::status`],
//! are written out here as a predicate, and a test holds the two together), by
//! cluster, by owner; and the listing's order.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::model::{Id, UserStatus};

/// How a listing is ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UserSort {
    /// By id: the order they were made in (the default).
    #[default]
    Id,
    /// By name.
    Username,
    /// By expiry (never last).
    Expires,
    /// By usage of the current period.
    Usage,
    /// By when last seen online (never last).
    Online,
}

/// A value bound to a predicate's parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Arg {
    /// A number.
    Int(i64),
    /// A text.
    Text(String),
}

/// SQL text and what its `$N` parameters are, from `$1` on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Where {
    /// ` AND …` conditions over `users` (empty: every user).
    pub text: String,
    /// The values, in order.
    pub args: Vec<Arg>,
}

impl Where {
    fn arg(&mut self, a: Arg) -> String {
        self.args.push(a);
        format!("${}", self.args.len())
    }

    /// Binds the values to `q`, in order.
    pub(super) fn bind<'q>(
        &self,
        mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        for a in &self.args {
            q = match a {
                Arg::Int(i) => q.bind(*i),
                Arg::Text(t) => q.bind(t.clone()),
            };
        }
        q
    }
}

/// Which users.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserFilter<'a> {
    /// Name contains.
    pub search: Option<&'a str>,
    /// Status now.
    pub status: Option<UserStatus>,
    /// Sees this cluster's routes (in it, or in every cluster).
    pub cluster: Option<Id>,
    /// Owned by this admin.
    pub admin_id: Option<Id>,
    /// Only these ids.
    pub ids: Option<&'a [Id]>,
}

/// The predicate of a status at the time bound as `now`.
pub(super) fn status_sql(status: UserStatus, now: &str) -> String {
    let held = "(on_hold_days IS NOT NULL AND first_connected_ms IS NULL)";
    // No sum that could overflow: used_up >= limit - used_down.
    let limited = "(traffic_limit IS NOT NULL AND used_up >= traffic_limit - used_down)";
    let expiry = "(CASE WHEN on_hold_days IS NOT NULL AND first_connected_ms IS NOT NULL \
                  THEN first_connected_ms + on_hold_days * 86400000 ELSE expires_ms END)";
    let expired = format!("({expiry} IS NOT NULL AND {now} >= {expiry})");
    match status {
        UserStatus::Disabled => "enabled = 0".into(),
        UserStatus::OnHold => format!("enabled <> 0 AND {held} AND NOT {limited}"),
        UserStatus::Limited => format!("enabled <> 0 AND {limited} AND ({held} OR NOT {expired})"),
        UserStatus::Expired => format!("enabled <> 0 AND NOT {held} AND {expired}"),
        UserStatus::Active => {
            format!("enabled <> 0 AND NOT {held} AND NOT {expired} AND NOT {limited}")
        }
    }
}

/// `filter` as conditions at `now_ms`.
pub(super) fn predicate(filter: &UserFilter<'_>, now_ms: i64) -> Where {
    let mut w = Where::default();
    if let Some(s) = filter.search.filter(|s| !s.is_empty()) {
        let pattern = format!(
            "%{}%",
            s.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let p = w.arg(Arg::Text(pattern));
        w.text += &format!(" AND username LIKE {p} ESCAPE '\\'");
    }
    if let Some(status) = filter.status {
        let now = w.arg(Arg::Int(now_ms));
        w.text += &format!(" AND ({})", status_sql(status, &now));
    }
    if let Some(c) = filter.cluster {
        let p = w.arg(Arg::Int(c));
        w.text += &format!(
            " AND (all_clusters <> 0 OR id IN \
             (SELECT user_id FROM user_clusters WHERE cluster_id = {p}))"
        );
    }
    if let Some(a) = filter.admin_id {
        let p = w.arg(Arg::Int(a));
        w.text += &format!(" AND admin_id = {p}");
    }
    if let Some(ids) = filter.ids {
        if ids.is_empty() {
            w.text += " AND 1 = 0";
        } else {
            let list: Vec<String> = ids.iter().map(|i| w.arg(Arg::Int(*i))).collect();
            w.text += &format!(" AND id IN ({})", list.join(", "));
        }
    }
    w
}

/// The `ORDER BY` of a listing (the id last, so pages are stable).
pub(super) fn order(sort: UserSort, desc: bool) -> String {
    let dir = if desc { "DESC" } else { "ASC" };
    match sort {
        UserSort::Id => format!("id {dir}"),
        UserSort::Username => format!("username {dir}, id"),
        // Never (NULL) after any date, either way.
        UserSort::Expires => format!("expires_ms IS NULL, expires_ms {dir}, id"),
        // In floating point: two counters near the top of BIGINT would overflow.
        UserSort::Usage => {
            format!(
                "CAST(used_up AS DOUBLE PRECISION) + CAST(used_down AS DOUBLE PRECISION) {dir}, id"
            )
        }
        UserSort::Online => format!("online_ms IS NULL, online_ms {dir}, id"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_numbered_in_the_order_bound() {
        let ids = [3, 4];
        let w = predicate(
            &UserFilter {
                search: Some("a_b"),
                status: Some(UserStatus::Disabled),
                cluster: Some(7),
                admin_id: Some(9),
                ids: Some(&ids),
            },
            1000,
        );
        assert_eq!(
            w.args,
            [
                Arg::Text("%a\\_b%".into()),
                Arg::Int(1000),
                Arg::Int(7),
                Arg::Int(9),
                Arg::Int(3),
                Arg::Int(4)
            ]
        );
        assert!(w.text.contains("username LIKE $1"));
        assert!(w.text.contains("cluster_id = $3"));
        assert!(w.text.contains("admin_id = $4"));
        assert!(w.text.ends_with("id IN ($5, $6)"));
        assert_eq!(
            predicate(
                &UserFilter {
                    ids: Some(&[]),
                    ..UserFilter::default()
                },
                0
            )
            .text,
            " AND 1 = 0"
        );
    }
}
