//! Users made from plans: the plan's defaults, the name and note given, and for a
//! reseller their quota as for any user of theirs.

use super::{Service, ServiceError};
use crate::model::{Id, PlanInput, User};
use crate::store::UserInput;

const DAY_MS: i64 = 86_400_000;

/// The user `username` (with `note`) made from `plan` at `now_ms`: its limit and
/// reset, an expiry `expiry_days` from now (or, on hold, after the first
/// connection), its device and address limits and clusters.
pub fn user_from_plan(plan: &PlanInput, username: &str, note: &str, now_ms: i64) -> UserInput {
    let days = plan.expiry_days.map(i64::from);
    UserInput {
        note: note.to_owned(),
        traffic_limit: plan.traffic_limit,
        reset_strategy: plan.reset_strategy,
        expires_ms: days
            .filter(|_| !plan.on_hold)
            .map(|d| now_ms.saturating_add(d.saturating_mul(DAY_MS))),
        on_hold_days: plan.expiry_days.filter(|_| plan.on_hold),
        device_limit: plan.device_limit,
        address_limit: plan.address_limit,
        clusters: plan.clusters.clone(),
        ..UserInput::new(username)
    }
}

impl Service {
    /// A new user made from plan `plan` (a reseller's, within their quota, when
    /// `reseller` is given).
    pub async fn create_user_from_plan(
        &self,
        plan: Id,
        (username, note): (&str, &str),
        reseller: Option<Id>,
        now_ms: i64,
    ) -> Result<User, ServiceError> {
        let plan = self.store.plan(plan).await?;
        let input = user_from_plan(&plan.input(), username, note, now_ms);
        match reseller {
            Some(r) => self.create_owned_user(r, &input, now_ms).await,
            None => self.create_user(&input, now_ms).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ResetStrategy;

    const NOW: i64 = 1_796_083_200_000;

    fn monthly() -> PlanInput {
        PlanInput {
            name: "Monthly 100 GiB".into(),
            traffic_limit: Some(100 << 30),
            reset_strategy: ResetStrategy::MonthFromStart,
            expiry_days: Some(30),
            device_limit: Some(3),
            clusters: Some(vec![2]),
            ..PlanInput::default()
        }
    }

    #[test]
    fn a_user_is_made_from_the_plan() {
        let u = user_from_plan(&monthly(), "alice", "paid", NOW);
        assert_eq!(u.username, "alice");
        assert_eq!(u.note, "paid");
        assert_eq!(u.traffic_limit, Some(100 << 30));
        assert_eq!(u.reset_strategy, ResetStrategy::MonthFromStart);
        assert_eq!(u.expires_ms, Some(NOW + 30 * DAY_MS));
        assert_eq!(u.on_hold_days, None);
        assert_eq!((u.device_limit, u.address_limit), (Some(3), None));
        assert_eq!(u.clusters, Some(vec![2]));
        assert!(u.enabled);
    }

    #[test]
    fn an_on_hold_plan_starts_the_clock_at_the_first_connection() {
        let plan = PlanInput {
            on_hold: true,
            ..monthly()
        };
        let u = user_from_plan(&plan, "bob", "", NOW);
        assert_eq!((u.expires_ms, u.on_hold_days), (None, Some(30)));
    }
}
