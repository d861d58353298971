//! [`AdminStore`] over sqlx, for both backends (see [`super::admins`]).

use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use super::admins::{AdminFields, AdminStore, AdminView, Owner};
use super::rows::{self, to_i64, to_u64};
use super::sql::{Backend, conflict};
use super::users::{UserInput, UserQuery};
use super::{SqlStore, StoreError};
use crate::model::{Admin, Credentials, FieldError, Id, Quota, QuotaUse, Role, User};

/// An admin's columns, for [`admin`].
pub(super) const ADMIN: &str = "a.id, a.username, a.created_ms, a.role";

/// An admin from the columns of [`ADMIN`] (first in the row).
pub(super) fn admin(r: &AnyRow) -> Result<Admin, sqlx::Error> {
    Ok(Admin {
        id: r.try_get(0)?,
        username: r.try_get(1)?,
        created_ms: r.try_get(2)?,
        role: Role::from_stored(&r.try_get::<String, _>(3)?),
    })
}

fn bound(v: Option<i64>) -> Option<u64> {
    v.map(to_u64)
}

impl SqlStore {
    async fn admin_quota(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: Id,
    ) -> Result<Quota, StoreError> {
        let row = sqlx::query(
            "SELECT max_users, max_traffic, max_expiry_days, some_clusters FROM admins \
             WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(StoreError::NotFound("admin"))?;
        let clusters = if row.try_get::<i64, _>(3)? != 0 {
            let rows = sqlx::query(
                "SELECT cluster_id FROM admin_clusters WHERE admin_id = $1 ORDER BY cluster_id",
            )
            .bind(id)
            .fetch_all(&mut **tx)
            .await?;
            Some(
                rows.iter()
                    .map(|r| r.try_get::<i64, _>(0))
                    .collect::<Result<_, _>>()?,
            )
        } else {
            None
        };
        Ok(Quota {
            max_users: bound(row.try_get(0)?),
            max_traffic: bound(row.try_get(1)?),
            max_expiry_days: row
                .try_get::<Option<i64>, _>(2)?
                .map(|d| u32::try_from(d).unwrap_or(u32::MAX)),
            clusters,
        })
    }

    async fn write_quota(
        tx: &mut Transaction<'static, Any>,
        id: Id,
        quota: &Quota,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE admins SET max_users = $1, max_traffic = $2, max_expiry_days = $3, \
             some_clusters = $4 WHERE id = $5",
        )
        .bind(quota.max_users.map(to_i64))
        .bind(quota.max_traffic.map(to_i64))
        .bind(quota.max_expiry_days.map(i64::from))
        .bind(i64::from(quota.clusters.is_some()))
        .bind(id)
        .execute(&mut **tx)
        .await?;
        sqlx::query("DELETE FROM admin_clusters WHERE admin_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        for c in quota.clusters.iter().flatten() {
            sqlx::query(
                "INSERT INTO admin_clusters (admin_id, cluster_id) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(id)
            .bind(*c)
            .execute(&mut **tx)
            .await
            .map_err(|e| conflict(e, "quota.clusters", "no such cluster"))?;
        }
        Ok(())
    }

    /// What an admin's users other than `except` take of a quota: counted in Rust,
    /// with saturation (a sum in SQL overflows or turns NUMERIC).
    async fn quota_use(
        tx: &mut Transaction<'static, Any>,
        admin_id: Id,
        except: Id,
    ) -> Result<QuotaUse, StoreError> {
        let rows = sqlx::query("SELECT traffic_limit FROM users WHERE admin_id = $1 AND id <> $2")
            .bind(admin_id)
            .bind(except)
            .fetch_all(&mut **tx)
            .await?;
        let mut used = QuotaUse::default();
        for r in &rows {
            used.users = used.users.saturating_add(1);
            let limit = r.try_get::<Option<i64>, _>(0)?.map_or(0, to_u64);
            used.traffic = used.traffic.saturating_add(limit);
        }
        Ok(used)
    }

    /// Locks an admin's row for the transaction (PostgreSQL: `FOR UPDATE`; SQLite has
    /// one writer), so two quota checks for one reseller run one after the other.
    async fn lock_admin(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: Id,
    ) -> Result<(), StoreError> {
        let lock = match self.backend() {
            Backend::Postgres => " FOR UPDATE",
            Backend::Sqlite => "",
        };
        sqlx::query(&format!("SELECT id FROM admins WHERE id = $1{lock}"))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?
            .ok_or(StoreError::NotFound("admin"))?;
        Ok(())
    }

    /// Refuses a write that would leave no owner (`except` no longer one).
    async fn keep_an_owner(
        tx: &mut Transaction<'static, Any>,
        except: Id,
        field: &str,
    ) -> Result<(), StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM admins WHERE role = 'owner' AND id <> $1")
            .bind(except)
            .fetch_one(&mut **tx)
            .await?;
        if row.try_get::<i64, _>(0)? == 0 {
            return Err(StoreError::Refused(FieldError::new(
                field,
                "this is the last owner: make another admin an owner first",
            )));
        }
        Ok(())
    }

    async fn view(
        &self,
        tx: &mut Transaction<'static, Any>,
        a: Admin,
    ) -> Result<AdminView, StoreError> {
        let quota = self.admin_quota(tx, a.id).await?;
        let used = Self::quota_use(tx, a.id, -1).await?;
        Ok(AdminView {
            admin: a,
            quota,
            used,
        })
    }
}

#[async_trait]
impl AdminStore for SqlStore {
    async fn admins(&self) -> Result<Vec<AdminView>, StoreError> {
        let mut tx = self.read.begin().await?;
        let rows = sqlx::query(&format!("SELECT {ADMIN} FROM admins a ORDER BY a.id"))
            .fetch_all(&mut *tx)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(self.view(&mut tx, admin(r)?).await?);
        }
        tx.rollback().await?;
        Ok(out)
    }

    async fn admin_view(&self, id: Id) -> Result<AdminView, StoreError> {
        let mut tx = self.read.begin().await?;
        let row = sqlx::query(&format!("SELECT {ADMIN} FROM admins a WHERE a.id = $1"))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("admin"))?;
        let view = self.view(&mut tx, admin(&row)?).await?;
        tx.rollback().await?;
        Ok(view)
    }

    async fn add_admin(
        &self,
        fields: &AdminFields<'_>,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<Admin, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "INSERT INTO admins (username, password_hash, created_ms, role) \
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(fields.username)
        .bind(password_hash)
        .bind(now_ms)
        .bind(fields.role.as_str())
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict(e, "username", "an admin with this name exists"))?;
        let id = rows::id(&row)?;
        Self::write_quota(&mut tx, id, fields.quota).await?;
        self.commit(tx).await?;
        Ok(Admin {
            id,
            username: fields.username.into(),
            created_ms: now_ms,
            role: fields.role,
        })
    }

    async fn set_admin(&self, id: Id, fields: &AdminFields<'_>) -> Result<Admin, StoreError> {
        let mut tx = self.begin().await?;
        self.lock_admin(&mut tx, id).await?;
        if fields.role != Role::Owner {
            Self::keep_an_owner(&mut tx, id, "role").await?;
        }
        sqlx::query("UPDATE admins SET username = $1, role = $2 WHERE id = $3")
            .bind(fields.username)
            .bind(fields.role.as_str())
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "username", "an admin with this name exists"))?;
        Self::write_quota(&mut tx, id, fields.quota).await?;
        let row = sqlx::query(&format!("SELECT {ADMIN} FROM admins a WHERE a.id = $1"))
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        let a = admin(&row)?;
        self.commit(tx).await?;
        Ok(a)
    }

    async fn reset_admin_password(&self, id: Id, password_hash: &str) -> Result<(), StoreError> {
        super::AccountStore::set_admin_password(self, id, password_hash, None)
            .await
            .map(|_| ())
    }

    async fn delete_admin(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        self.lock_admin(&mut tx, id).await?;
        Self::keep_an_owner(&mut tx, id, "id").await?;
        sqlx::query("DELETE FROM admins WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        self.commit(tx).await
    }

    async fn quota(&self, admin_id: Id) -> Result<Quota, StoreError> {
        let mut tx = self.read.begin().await?;
        let q = self.admin_quota(&mut tx, admin_id).await?;
        tx.rollback().await?;
        Ok(q)
    }

    async fn user_admin(&self, user_id: Id) -> Result<Option<Id>, StoreError> {
        let row = sqlx::query("SELECT admin_id FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(&self.read)
            .await?
            .ok_or(StoreError::NotFound("user"))?;
        Ok(row.try_get(0)?)
    }

    async fn set_user_admin(&self, user_id: Id, admin_id: Option<Id>) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("UPDATE users SET admin_id = $1 WHERE id = $2")
            .bind(admin_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "admin_id", "no such admin"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        self.commit(tx).await
    }

    async fn owned_users(
        &self,
        admin_id: Id,
        query: &UserQuery,
        now_ms: i64,
    ) -> Result<(Vec<User>, u64), StoreError> {
        self.list_users(query, Some(admin_id), now_ms).await
    }

    async fn create_owned_user(
        &self,
        input: &UserInput,
        credentials: &Credentials,
        token: &str,
        owner: Owner<'_>,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        self.lock_admin(&mut tx, owner.admin_id).await?;
        let used = Self::quota_use(&mut tx, owner.admin_id, -1).await?;
        owner
            .quota
            .admits(used, &input.ask(), true, now_ms)
            .map_err(StoreError::OverQuota)?;
        let id =
            Self::insert_user(&mut tx, input, credentials, token, (now_ms, now_ms), (0, 0)).await?;
        sqlx::query("UPDATE users SET admin_id = $1 WHERE id = $2")
            .bind(owner.admin_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        Self::set_clusters(&mut tx, id, &input.clusters).await?;
        self.commit(tx).await?;
        super::UserStore::user(self, id, now_ms).await
    }

    async fn update_owned_user(
        &self,
        id: Id,
        input: &UserInput,
        owner: Owner<'_>,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        self.lock_admin(&mut tx, owner.admin_id).await?;
        let used = Self::quota_use(&mut tx, owner.admin_id, id).await?;
        owner
            .quota
            .admits(used, &input.ask(), false, now_ms)
            .map_err(StoreError::OverQuota)?;
        Self::update_in(&mut tx, id, input, Some(owner.admin_id)).await?;
        self.commit(tx).await?;
        super::UserStore::user(self, id, now_ms).await
    }
}
