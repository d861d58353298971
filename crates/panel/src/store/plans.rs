//! Plans: the part of the [`Store`](super::Store) behind `/api/v1/plans`; its SQL is
//! in `sql_plans`.

use async_trait::async_trait;

use super::StoreError;
use crate::model::{Id, Plan, PlanInput};

/// Plans.
#[async_trait]
pub trait PlanStore: Send + Sync {
    /// Every plan, by name.
    async fn plans(&self) -> Result<Vec<Plan>, StoreError>;
    /// One plan.
    async fn plan(&self, id: Id) -> Result<Plan, StoreError>;
    /// A new plan.
    async fn create_plan(&self, input: &PlanInput, now_ms: i64) -> Result<Plan, StoreError>;
    /// Changes a plan (users made from it keep what they got).
    async fn update_plan(&self, id: Id, input: &PlanInput) -> Result<Plan, StoreError>;
    /// Deletes a plan (users made from it stay as they are).
    async fn delete_plan(&self, id: Id) -> Result<(), StoreError>;
}
