//! [`PlanStore`] over sqlx, for both backends (see [`super::plans`]).

use async_trait::async_trait;
use sqlx::Row;
use sqlx::any::AnyRow;

use super::plans::PlanStore;
use super::rows::{self, to_i64, to_u64};
use super::sql::conflict;
use super::{SqlStore, StoreError};
use crate::model::{Id, Plan, PlanInput, ResetStrategy};

const PLAN: &str = "id, name, traffic_limit, reset_strategy, expiry_days, on_hold, \
    device_limit, address_limit, clusters, created_ms";

fn small(v: Option<i64>) -> Option<u32> {
    v.map(|d| u32::try_from(d).unwrap_or(u32::MAX))
}

fn plan(r: &AnyRow) -> Result<Plan, sqlx::Error> {
    let clusters: Option<String> = r.try_get("clusters")?;
    let strategy: String = r.try_get("reset_strategy")?;
    Ok(Plan::new(
        r.try_get("id")?,
        PlanInput {
            name: r.try_get("name")?,
            traffic_limit: r.try_get::<Option<i64>, _>("traffic_limit")?.map(to_u64),
            reset_strategy: ResetStrategy::parse(&strategy).unwrap_or_default(),
            expiry_days: small(r.try_get("expiry_days")?),
            on_hold: r.try_get::<i64, _>("on_hold")? != 0,
            device_limit: small(r.try_get("device_limit")?),
            address_limit: small(r.try_get("address_limit")?),
            // Written by this panel as a JSON list; anything else is every cluster.
            clusters: clusters.and_then(|c| serde_json::from_str(&c).ok()),
        },
        r.try_get("created_ms")?,
    ))
}

fn clusters_text(input: &PlanInput) -> Option<String> {
    input
        .clusters
        .as_ref()
        .and_then(|c| serde_json::to_string(c).ok())
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Binds a plan's eight fields, `$1` to `$8`, in the columns' order.
fn fields<'q>(q: Query<'q>, input: &'q PlanInput) -> Query<'q> {
    q.bind(&input.name)
        .bind(input.traffic_limit.map(to_i64))
        .bind(input.reset_strategy.as_str())
        .bind(input.expiry_days.map(i64::from))
        .bind(i64::from(input.on_hold))
        .bind(input.device_limit.map(i64::from))
        .bind(input.address_limit.map(i64::from))
        .bind(clusters_text(input))
}

#[async_trait]
impl PlanStore for SqlStore {
    async fn plans(&self) -> Result<Vec<Plan>, StoreError> {
        let rows = sqlx::query(&format!("SELECT {PLAN} FROM plans ORDER BY name, id"))
            .fetch_all(&self.read)
            .await?;
        Ok(rows.iter().map(plan).collect::<Result<_, _>>()?)
    }

    async fn plan(&self, id: Id) -> Result<Plan, StoreError> {
        let row = sqlx::query(&format!("SELECT {PLAN} FROM plans WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        self.one("plan", row, plan).await
    }

    async fn create_plan(&self, input: &PlanInput, now_ms: i64) -> Result<Plan, StoreError> {
        let mut tx = self.begin().await?;
        let q = sqlx::query(
            "INSERT INTO plans (name, traffic_limit, reset_strategy, expiry_days, on_hold, \
             device_limit, address_limit, clusters, created_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        );
        let row = fields(q, input)
            .bind(now_ms)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| conflict(e, "name", "a plan with this name exists"))?;
        let id = rows::id(&row)?;
        self.commit(tx).await?;
        self.plan(id).await
    }

    async fn update_plan(&self, id: Id, input: &PlanInput) -> Result<Plan, StoreError> {
        let mut tx = self.begin().await?;
        let q = sqlx::query(
            "UPDATE plans SET name = $1, traffic_limit = $2, reset_strategy = $3, \
             expiry_days = $4, on_hold = $5, device_limit = $6, address_limit = $7, \
             clusters = $8 WHERE id = $9",
        );
        let done = fields(q, input)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "name", "a plan with this name exists"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("plan"));
        }
        self.commit(tx).await?;
        self.plan(id).await
    }

    async fn delete_plan(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("DELETE FROM plans WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("plan"));
        }
        self.commit(tx).await
    }
}
