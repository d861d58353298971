//! Which role may call which route: one table, checked for every authenticated
//! request before its handler runs ([`super::auth::Authed`]). Pure: the route is the
//! router's pattern (`/api/v1/users/{id}`), never the raw path, so an id cannot
//! smuggle a way past it.
//!
//! - Every role manages its own login: the session, its password, its sessions and
//!   its API tokens ([`SELF_SERVICE`]).
//! - The admins, imports (which make admins) and webhooks (panel settings) are the
//!   owner's alone ([`owner_only`]).
//! - An admin may do everything else; a read-only admin may read it.
//! - A reseller may list clusters (to put users in them) and plans, make users from a
//!   plan, and work on users, their own alone ([`Access::OwnUsers`]): the caller
//!   checks which user an id under `/api/v1/users/` names.

use axum::http::Method;

use crate::model::Role;

/// What a role may do on a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Go ahead.
    Allowed,
    /// Only on the caller's own users: a listing is theirs, an id must be one of
    /// theirs (else "not found", as if there were no such user).
    OwnUsers,
    /// Forbidden, with why.
    Denied(&'static str),
}

/// The routes every role may call on its own behalf.
pub const SELF_SERVICE: [&str; 7] = [
    "/api/v1/session",
    "/api/v1/setup",
    "/api/v1/account/password",
    "/api/v1/sessions",
    "/api/v1/sessions/{id}",
    "/api/v1/tokens",
    "/api/v1/tokens/{id}",
];

/// The routes only an owner may call.
pub const OWNER_ONLY: [&str; 4] = [
    "/api/v1/admins",
    "/api/v1/admins/{id}",
    "/api/v1/admins/{id}/password",
    "/api/v1/imports/{source}",
];

/// Whether only an owner may call the route `pattern`: [`OWNER_ONLY`] and the
/// webhooks.
pub fn owner_only(pattern: &str) -> bool {
    OWNER_ONLY.contains(&pattern) || pattern.starts_with("/api/v1/webhooks")
}

/// The users' routes, the reseller's whole world (with the cluster list).
const USERS: &str = "/api/v1/users";

fn reads(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
}

/// What `role` may do with `method` on the route `pattern` (absent: a route the
/// router did not match, which only an owner's request reaches a handler of).
pub fn access(role: Role, method: &Method, pattern: Option<&str>) -> Access {
    let Some(pattern) = pattern else {
        return match role {
            Role::Owner => Access::Allowed,
            _ => Access::Denied("this route is not open to your role"),
        };
    };
    if SELF_SERVICE.contains(&pattern) {
        return Access::Allowed;
    }
    if owner_only(pattern) {
        return match role {
            Role::Owner => Access::Allowed,
            _ => Access::Denied("only an owner manages admins, imports and webhooks"),
        };
    }
    match role {
        Role::Owner | Role::Admin => Access::Allowed,
        Role::ReadOnly if reads(method) => Access::Allowed,
        Role::ReadOnly => Access::Denied("a read-only admin may only read (GET, HEAD)"),
        Role::Reseller => {
            let users = pattern == USERS
                || pattern
                    .strip_prefix(USERS)
                    .is_some_and(|rest| rest.starts_with("/{id}"))
                || (pattern == "/api/v1/plans/{id}/users" && *method == Method::POST);
            if users {
                Access::OwnUsers
            } else if matches!(pattern, "/api/v1/clusters" | "/api/v1/plans") && reads(method) {
                Access::Allowed
            } else {
                Access::Denied("a reseller works on their own users alone")
            }
        }
    }
}

/// The OpenAPI document says who may call each operation, from this table: each
/// authenticated operation gets `x-roles` (`owner`, `admin`, `read_only`, and
/// `reseller` or `reseller (own users)`) and a line in its description.
pub struct Roles;

impl utoipa::Modify for Roles {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::extensions::ExtensionsBuilder;
        for (path, item) in &mut openapi.paths.paths {
            if !path.starts_with("/api/v1/") {
                continue;
            }
            let operations = [
                (Method::GET, &mut item.get),
                (Method::PUT, &mut item.put),
                (Method::POST, &mut item.post),
                (Method::DELETE, &mut item.delete),
            ];
            for (method, op) in operations {
                let Some(op) = op else { continue };
                // Public operations (`security(())`) have no role to check.
                if op.security.as_ref().is_some_and(|s| {
                    s.iter()
                        .all(|r| *r == utoipa::openapi::security::SecurityRequirement::default())
                }) {
                    continue;
                }
                let roles = roles_of(&method, path);
                let line = format!("Roles: {}.", roles.join(", "));
                op.description = Some(match op.description.take() {
                    Some(d) if !d.is_empty() => format!("{d}\n\n{line}"),
                    _ => line,
                });
                let ext = ExtensionsBuilder::new().add("x-roles", roles).build();
                match &mut op.extensions {
                    Some(e) => e.merge(ext),
                    None => op.extensions = Some(ext),
                }
            }
        }
    }
}

/// Who may call `method` on `pattern`, as the document names them.
pub fn roles_of(method: &Method, pattern: &str) -> Vec<&'static str> {
    [
        (Role::Owner, "owner"),
        (Role::Admin, "admin"),
        (Role::ReadOnly, "read_only"),
        (Role::Reseller, "reseller"),
    ]
    .into_iter()
    .filter_map(|(role, name)| match access(role, method, Some(pattern)) {
        Access::Allowed => Some(name),
        Access::OwnUsers => Some("reseller (own users)"),
        Access::Denied(_) => None,
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Role; 4] = [Role::Owner, Role::Admin, Role::Reseller, Role::ReadOnly];

    #[test]
    fn the_document_names_the_roles_from_the_table() {
        assert_eq!(
            roles_of(&Method::GET, "/api/v1/users/{id}"),
            ["owner", "admin", "read_only", "reseller (own users)"]
        );
        assert_eq!(
            roles_of(&Method::PUT, "/api/v1/servers/{id}"),
            ["owner", "admin"]
        );
        assert_eq!(
            roles_of(&Method::GET, "/api/v1/clusters"),
            ["owner", "admin", "read_only", "reseller"]
        );
        assert_eq!(roles_of(&Method::POST, "/api/v1/webhooks"), ["owner"]);
    }

    #[test]
    fn everyone_manages_their_own_login() {
        for role in ALL {
            for p in SELF_SERVICE {
                for m in [Method::GET, Method::POST, Method::PUT, Method::DELETE] {
                    assert_eq!(
                        access(role, &m, Some(p)),
                        Access::Allowed,
                        "{role:?} {m} {p}"
                    );
                }
            }
        }
    }

    #[test]
    fn admins_and_imports_are_the_owners() {
        for p in OWNER_ONLY {
            assert_eq!(access(Role::Owner, &Method::POST, Some(p)), Access::Allowed);
            for role in [Role::Admin, Role::Reseller, Role::ReadOnly] {
                assert_eq!(
                    access(role, &Method::GET, Some(p)),
                    Access::Denied("only an owner manages admins, imports and webhooks"),
                    "{role:?} {p}"
                );
            }
        }
    }

    #[test]
    fn read_only_reads_and_admin_writes() {
        let p = Some("/api/v1/servers/{id}");
        assert_eq!(access(Role::ReadOnly, &Method::GET, p), Access::Allowed);
        assert_eq!(access(Role::ReadOnly, &Method::HEAD, p), Access::Allowed);
        assert!(matches!(
            access(Role::ReadOnly, &Method::PUT, p),
            Access::Denied(_)
        ));
        assert_eq!(access(Role::Admin, &Method::DELETE, p), Access::Allowed);
    }

    #[test]
    fn a_reseller_has_users_and_the_cluster_list() {
        for p in [
            "/api/v1/users",
            "/api/v1/users/{id}",
            "/api/v1/users/{id}/devices/{device}",
            "/api/v1/users/{id}/routing",
        ] {
            assert_eq!(
                access(Role::Reseller, &Method::POST, Some(p)),
                Access::OwnUsers,
                "{p}"
            );
        }
        assert_eq!(
            access(Role::Reseller, &Method::GET, Some("/api/v1/clusters")),
            Access::Allowed
        );
        assert_eq!(
            access(Role::Reseller, &Method::GET, Some("/api/v1/plans")),
            Access::Allowed
        );
        assert_eq!(
            access(
                Role::Reseller,
                &Method::POST,
                Some("/api/v1/plans/{id}/users")
            ),
            Access::OwnUsers
        );
        assert!(matches!(
            access(Role::Reseller, &Method::POST, Some("/api/v1/plans")),
            Access::Denied(_)
        ));
        for (m, p) in [
            (Method::POST, "/api/v1/clusters"),
            (Method::GET, "/api/v1/clusters/{id}"),
            (Method::GET, "/api/v1/servers"),
            (Method::GET, "/api/v1/usersx"),
            (Method::GET, "/api/v1/inbounds"),
        ] {
            assert!(
                matches!(access(Role::Reseller, &m, Some(p)), Access::Denied(_)),
                "{m} {p}"
            );
        }
        assert!(matches!(
            access(Role::Reseller, &Method::GET, None),
            Access::Denied(_)
        ));
    }
}
