//! Admins with roles and quotas, and the users a reseller owns: each user write of a
//! reseller's is checked against their quota in the store's transaction.

use super::{Service, ServiceError, new_credentials, new_subscription_token, validate_user};
use crate::model::{Admin, FieldError, Id, Quota, Role, User, check_name};
use crate::store::{AdminFields, Owner, UserInput};

/// Checks an admin's login name and quota.
pub fn check_admin(username: &str, role: Role, quota: &Quota) -> Result<(), FieldError> {
    check_name("username", username)?;
    if username.chars().any(char::is_whitespace) {
        return Err(FieldError::new("username", "must not contain spaces"));
    }
    if role != Role::Reseller && *quota != Quota::default() {
        return Err(FieldError::new("quota", "only a reseller has a quota"));
    }
    quota.check()
}

impl Service {
    /// A new user of reseller `admin_id`'s, within their quota.
    pub async fn create_owned_user(
        &self,
        admin_id: Id,
        input: &UserInput,
        now_ms: i64,
    ) -> Result<User, ServiceError> {
        validate_user(input)?;
        let quota = self.store.quota(admin_id).await?;
        let owner = Owner {
            admin_id,
            quota: &quota,
        };
        Ok(self
            .store
            .create_owned_user(
                input,
                &new_credentials(),
                &new_subscription_token(),
                owner,
                now_ms,
            )
            .await?)
    }

    /// Changes a user of reseller `admin_id`'s, within their quota.
    pub async fn update_owned_user(
        &self,
        admin_id: Id,
        id: Id,
        input: &UserInput,
        now_ms: i64,
    ) -> Result<User, ServiceError> {
        validate_user(input)?;
        let quota = self.store.quota(admin_id).await?;
        let owner = Owner {
            admin_id,
            quota: &quota,
        };
        Ok(self
            .store
            .update_owned_user(id, input, owner, now_ms)
            .await?)
    }

    /// A new admin (the password already hashed).
    pub async fn create_admin(
        &self,
        fields: &AdminFields<'_>,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<Admin, ServiceError> {
        check_admin(fields.username, fields.role, fields.quota)?;
        Ok(self.store.add_admin(fields, password_hash, now_ms).await?)
    }

    /// Changes an admin's name, role and quota.
    pub async fn update_admin(
        &self,
        id: Id,
        fields: &AdminFields<'_>,
    ) -> Result<Admin, ServiceError> {
        check_admin(fields.username, fields.role, fields.quota)?;
        Ok(self.store.set_admin(id, fields).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_is_a_resellers_alone() {
        let q = Quota {
            max_users: Some(5),
            ..Quota::default()
        };
        assert_eq!(check_admin("ann", Role::Reseller, &q), Ok(()));
        assert_eq!(
            check_admin("ann", Role::Admin, &q).unwrap_err().field,
            "quota"
        );
        assert_eq!(check_admin("ann", Role::Admin, &Quota::default()), Ok(()));
        assert_eq!(
            check_admin("an n", Role::Admin, &Quota::default())
                .unwrap_err()
                .field,
            "username"
        );
        assert_eq!(
            check_admin("", Role::Admin, &Quota::default())
                .unwrap_err()
                .field,
            "username"
        );
    }
}
