//! [`RoutingStore`] in SQL: a nullable JSON column on `clusters` and on `users`.

use async_trait::async_trait;
use sqlx::Row;

use super::sql::SqlStore;
use super::{RoutingStore, StoreError};
use crate::model::Id;
use crate::model::routing::RoutingSettings;

/// The routing a stored column holds (`None`: NULL). A value that is not routing
/// settings (a database edited by hand) is an error naming the table.
pub(super) fn decode(
    table: &'static str,
    text: Option<String>,
) -> Result<Option<RoutingSettings>, sqlx::Error> {
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| sqlx::Error::ColumnDecode {
            index: format!("{table}.routing"),
            source: Box::new(e),
        })
    })
    .transpose()
}

impl SqlStore {
    async fn routing_of(
        &self,
        table: &'static str,
        what: &'static str,
        id: Id,
    ) -> Result<Option<RoutingSettings>, StoreError> {
        let row = sqlx::query(&format!("SELECT routing FROM {table} WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?
            .ok_or(StoreError::NotFound(what))?;
        Ok(decode(table, row.try_get("routing")?)?)
    }

    async fn set_routing_of(
        &self,
        table: &'static str,
        what: &'static str,
        id: Id,
        routing: Option<&RoutingSettings>,
    ) -> Result<(), StoreError> {
        let text = routing.map(|r| serde_json::to_string(r).unwrap_or_default());
        let mut tx = self.begin().await?;
        let done = sqlx::query(&format!("UPDATE {table} SET routing = $1 WHERE id = $2"))
            .bind(text)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(what));
        }
        self.commit(tx).await
    }
}

#[async_trait]
impl RoutingStore for SqlStore {
    async fn cluster_routing(&self, cluster: Id) -> Result<Option<RoutingSettings>, StoreError> {
        self.routing_of("clusters", "cluster", cluster).await
    }

    async fn set_cluster_routing(
        &self,
        cluster: Id,
        routing: Option<&RoutingSettings>,
    ) -> Result<(), StoreError> {
        self.set_routing_of("clusters", "cluster", cluster, routing)
            .await
    }

    async fn user_routing(&self, user: Id) -> Result<Option<RoutingSettings>, StoreError> {
        self.routing_of("users", "user", user).await
    }

    async fn set_user_routing(
        &self,
        user: Id,
        routing: Option<&RoutingSettings>,
    ) -> Result<(), StoreError> {
        self.set_routing_of("users", "user", user, routing).await
    }
}
