//! Plans: the defaults a new user is made from (a traffic limit and its reset, how
//! long until expiry and whether that clock starts at the first connection, device
//! and address limits, clusters). Pure; the service makes a user from one
//! ([`crate::service::user_from_plan`]).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{FieldError, Id, ResetStrategy, check_name};

/// A plan as stored: its id, when it was made, and its settings (the fields of
/// [`PlanInput`], written out: a flattened input would bring its refusal of other
/// fields into this schema).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Plan {
    /// Id.
    pub id: Id,
    /// Unique name.
    pub name: String,
    /// Bytes per period; unset is unlimited.
    pub traffic_limit: Option<u64>,
    /// When the counter starts over.
    pub reset_strategy: ResetStrategy,
    /// Days until expiry (from being made, or from the first connection).
    pub expiry_days: Option<u32>,
    /// The expiry clock starts at the first connection.
    pub on_hold: bool,
    /// At most this many devices.
    pub device_limit: Option<u32>,
    /// At most this many addresses at once, on each server.
    pub address_limit: Option<u32>,
    /// The clusters; every cluster when unset.
    pub clusters: Option<Vec<Id>>,
    /// Unix ms.
    pub created_ms: i64,
}

impl Plan {
    /// The plan `id` made at `created_ms` with `input`.
    pub fn new(id: Id, input: PlanInput, created_ms: i64) -> Self {
        Self {
            id,
            name: input.name,
            traffic_limit: input.traffic_limit,
            reset_strategy: input.reset_strategy,
            expiry_days: input.expiry_days,
            on_hold: input.on_hold,
            device_limit: input.device_limit,
            address_limit: input.address_limit,
            clusters: input.clusters,
            created_ms,
        }
    }

    /// Its settings.
    pub fn input(&self) -> PlanInput {
        PlanInput {
            name: self.name.clone(),
            traffic_limit: self.traffic_limit,
            reset_strategy: self.reset_strategy,
            expiry_days: self.expiry_days,
            on_hold: self.on_hold,
            device_limit: self.device_limit,
            address_limit: self.address_limit,
            clusters: self.clusters.clone(),
        }
    }
}

/// A new or changed plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanInput {
    /// Unique name (`Monthly 100 GB`).
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// Bytes per period; unset is unlimited.
    #[serde(default)]
    pub traffic_limit: Option<u64>,
    /// When the counter starts over.
    #[serde(default)]
    pub reset_strategy: ResetStrategy,
    /// The user expires this many days after being made (or, `on_hold`, after the
    /// first connection); unset is never.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 36500)]
    pub expiry_days: Option<u32>,
    /// The expiry clock starts at the first connection.
    #[serde(default)]
    pub on_hold: bool,
    /// At most this many devices; unset is no limit.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub device_limit: Option<u32>,
    /// At most this many addresses at once, on each server; unset is no limit.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub address_limit: Option<u32>,
    /// The clusters whose routes the user gets; every cluster when unset.
    #[serde(default)]
    pub clusters: Option<Vec<Id>>,
}

impl PlanInput {
    /// Checks the plan, naming the field.
    pub fn check(&self) -> Result<(), FieldError> {
        check_name("name", &self.name)?;
        if self.traffic_limit.is_some_and(|l| l > i64::MAX as u64) {
            return Err(FieldError::new("traffic_limit", "is too large"));
        }
        if self.expiry_days.is_some_and(|d| !(1..=36_500).contains(&d)) {
            return Err(FieldError::new("expiry_days", "must be 1 to 36500"));
        }
        if self.on_hold && self.expiry_days.is_none() {
            return Err(FieldError::new(
                "on_hold",
                "a hold needs the days until expiry (expiry_days)",
            ));
        }
        if self.device_limit.is_some_and(|d| !(1..=1000).contains(&d)) {
            return Err(FieldError::new("device_limit", "must be 1 to 1000"));
        }
        if self.address_limit.is_some_and(|a| !(1..=1000).contains(&a)) {
            return Err(FieldError::new("address_limit", "must be 1 to 1000"));
        }
        if self.clusters.as_ref().is_some_and(|c| c.len() > 1000) {
            return Err(FieldError::new("clusters", "at most 1000 clusters"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monthly() -> PlanInput {
        PlanInput {
            name: "Monthly".into(),
            expiry_days: Some(30),
            ..PlanInput::default()
        }
    }

    #[test]
    fn bad_plans_name_the_field() {
        let bad = |p: PlanInput| p.check().unwrap_err().field;
        assert_eq!(
            bad(PlanInput {
                name: String::new(),
                ..monthly()
            }),
            "name"
        );
        assert_eq!(
            bad(PlanInput {
                expiry_days: Some(0),
                ..monthly()
            }),
            "expiry_days"
        );
        assert_eq!(
            bad(PlanInput {
                on_hold: true,
                expiry_days: None,
                ..monthly()
            }),
            "on_hold"
        );
        assert_eq!(
            bad(PlanInput {
                device_limit: Some(0),
                ..monthly()
            }),
            "device_limit"
        );
        assert_eq!(monthly().check(), Ok(()));
    }
}
