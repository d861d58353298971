//! The source's admins carried here (Marzban and its forks): a sudo admin becomes an
//! `admin`, any other a `reseller` (what Marzban lets them do: their own users),
//! each keeping their password (the source's bcrypt hash, replaced by argon2id at
//! their first login here), and each imported user goes to their reseller.
//!
//! An admin whose name an admin here has is that admin: kept as is (role and
//! password), so a second import changes no one's rights. Run after the users are
//! written; on a dry run nothing is made and the report says what would be.

use super::ImportError;
use super::report::Report;
use super::source_admin::{SourceAdmin, role_of};
use crate::model::admin::is_bcrypt;
use crate::model::{Quota, Role};
use crate::service::check_admin;
use crate::store::{AdminFields, Store};

/// What is stored for an admin whose password did not come (no login until the
/// owner sets one): not a hash of anything.
const NO_PASSWORD: &str = "!imported: set a password";

/// Makes the source's `admins` here and gives the users of `source` (by their
/// `(key, admin name)` in `owners`) to the resellers among them.
pub(super) async fn carry(
    store: &dyn Store,
    source: &str,
    admins: &[SourceAdmin],
    owners: &[(&str, Option<&str>)],
    (dry_run, now_ms): (bool, i64),
    report: &mut Report,
) -> Result<(), ImportError> {
    let mut resellers = Vec::new();
    for a in admins {
        let role = role_of(a);
        let seen = report.admins.iter_mut().find(|s| s.name == a.name);
        if let Err(e) = check_admin(&a.name, role, &Quota::default()) {
            report.not_carried(
                format!("admin {}", a.name),
                format!("its name is not one this panel takes: {e}"),
            );
            continue;
        }
        if let Some((here, _)) = store.admin_by_username(&a.name).await? {
            if let Some(s) = seen {
                s.here = Some(here.role);
            }
            if here.role == Role::Reseller {
                resellers.push((a.name.as_str(), here.id));
            }
            continue;
        }
        if let Some(s) = seen {
            s.here = Some(role);
        }
        let hash = match &a.password_hash {
            Some(h) if is_bcrypt(h) => h.as_str(),
            _ => {
                report.not_carried(
                    format!("admin {}", a.name),
                    "its password is not a bcrypt hash of cost 4 to 14: it logs in once the \
                     owner sets a password (PUT /api/v1/admins/{id}/password)"
                        .into(),
                );
                NO_PASSWORD
            }
        };
        if dry_run {
            continue;
        }
        let quota = Quota::default();
        let fields = AdminFields {
            username: &a.name,
            role,
            quota: &quota,
        };
        let made = store.add_admin(&fields, hash, now_ms).await?;
        if role == Role::Reseller {
            resellers.push((a.name.as_str(), made.id));
        }
    }
    if dry_run {
        return Ok(());
    }
    for (key, owner) in owners {
        let Some(link) = store.imported_link(source, key).await? else {
            continue;
        };
        let reseller = owner.and_then(|o| resellers.iter().find(|(n, _)| *n == o).map(|r| r.1));
        store.set_user_admin(link.user_id, reseller).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sudo_is_an_admin_and_the_others_resellers() {
        let mut a = SourceAdmin {
            name: "ann".into(),
            sudo: true,
            password_hash: Some("$2b$12$secret".into()),
        };
        assert_eq!(role_of(&a), Role::Admin);
        a.sudo = false;
        assert_eq!(role_of(&a), Role::Reseller);
        assert!(!format!("{a:?}").contains("secret"));
        assert!(!is_bcrypt(NO_PASSWORD));
    }
}
