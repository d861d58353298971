//! An admin as a source panel has them (Marzban and its forks), and the role they
//! get here: apart from the readers and from the carrying, so both can name it.

use crate::model::Role;

/// An admin of the source.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SourceAdmin {
    /// Login name.
    pub name: String,
    /// All-powerful there (Marzban's sudo, PasarGuard's owner or administrator role).
    pub sudo: bool,
    /// The password's hash there (bcrypt), if any.
    pub password_hash: Option<String>,
}

impl std::fmt::Debug for SourceAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceAdmin")
            .field("name", &self.name)
            .field("sudo", &self.sudo)
            .finish_non_exhaustive()
    }
}

/// The role a source's admin gets here.
pub fn role_of(admin: &SourceAdmin) -> Role {
    if admin.sudo {
        Role::Admin
    } else {
        Role::Reseller
    }
}
