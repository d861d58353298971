//! What an entry may need of the app that runs it beyond its format: the
//! [`Feature`]s some apps lack ([`super::support`] decides who lacks what).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Something an entry needs that not every app can run.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// The Hysteria 2 protocol (`hysteria2`).
    Hysteria2,
    /// The XHTTP transport (`xhttp`).
    Xhttp,
}

impl Feature {
    /// Every feature, in declaration order.
    pub const ALL: [Self; 2] = [Self::Hysteria2, Self::Xhttp];

    /// The name config and serde use (`hysteria2`, `xhttp`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Hysteria2 => "hysteria2",
            Self::Xhttp => "xhttp",
        }
    }

    /// The product's name for it, as a subscription's note says it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Hysteria2 => "Hysteria 2",
            Self::Xhttp => "XHTTP",
        }
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
