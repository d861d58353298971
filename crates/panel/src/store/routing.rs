//! A cluster's and a user's own split tunnelling (`crate::model::routing`): the part
//! of the [`Store`](super::Store) behind `/api/v1/clusters/{id}/routing` and
//! `/api/v1/users/{id}/routing`. `None` means none of its own (the user inherits the
//! cluster's, the cluster the panel's default). Every write is announced, so
//! subscriptions serve the new routing at once.

use async_trait::async_trait;

use super::StoreError;
use crate::model::Id;
use crate::model::routing::RoutingSettings;

/// Own routing of clusters and users.
#[async_trait]
pub trait RoutingStore: Send + Sync {
    /// The cluster's own routing.
    async fn cluster_routing(&self, cluster: Id) -> Result<Option<RoutingSettings>, StoreError>;

    /// Sets (or, with `None`, clears) the cluster's own routing.
    async fn set_cluster_routing(
        &self,
        cluster: Id,
        routing: Option<&RoutingSettings>,
    ) -> Result<(), StoreError>;

    /// The user's own routing.
    async fn user_routing(&self, user: Id) -> Result<Option<RoutingSettings>, StoreError>;

    /// Sets (or, with `None`, clears) the user's own routing.
    async fn set_user_routing(
        &self,
        user: Id,
        routing: Option<&RoutingSettings>,
    ) -> Result<(), StoreError>;
}
