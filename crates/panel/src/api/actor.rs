//! Who made a request, once authentication knows: put in the request by the audit
//! layer ([`super::audit`]), filled by [`super::auth::Authed`] and the login.

use std::sync::{Arc, Mutex};

use crate::model::Admin;

/// Who made the request, once authentication knows (shared with the layer).
#[derive(Clone, Debug, Default)]
pub struct Actor(Arc<Mutex<Option<Admin>>>);

impl Actor {
    /// Notes who is acting.
    pub fn set(&self, admin: &Admin) {
        if let Ok(mut a) = self.0.lock() {
            *a = Some(admin.clone());
        }
    }

    /// Who, if anyone.
    pub fn get(&self) -> Option<Admin> {
        self.0.lock().ok().and_then(|a| a.clone())
    }
}
