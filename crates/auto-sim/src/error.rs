//! Errors of the simulator: a scenario that can't be run, a policy that can't be made.

use thiserror::Error;

/// Why a scenario can't be run. Every variant but [`Json`](Self::Json) names the field
/// path (`world[2]`, `actions[3].update.subscription`) holding the problem.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The text is not JSON of the scenario's shape; serde's message, with line and
    /// column.
    #[error("{0}")]
    Json(String),
    /// A server name that no subscription (nor any update) holds.
    #[error("{field}: unknown server {name:?}")]
    UnknownServer {
        /// Where.
        field: String,
        /// The name given.
        name: String,
    },
    /// A subscription name that is not in `subscriptions`.
    #[error("{field}: unknown subscription {name:?}")]
    UnknownSubscription {
        /// Where.
        field: String,
        /// The name given.
        name: String,
    },
    /// A name that must be unique is used twice.
    #[error("{field}: {what} name {name:?} is used twice")]
    Duplicate {
        /// Where the second use is.
        field: String,
        /// `server` or `subscription`.
        what: &'static str,
        /// The repeated name.
        name: String,
    },
    /// An update lists a server that belongs to another subscription.
    #[error(
        "{field}: server {name:?} belongs to subscription {owner:?}; server names are unique across the scenario"
    )]
    ForeignServer {
        /// Where.
        field: String,
        /// The server.
        name: String,
        /// The subscription holding it.
        owner: String,
    },
    /// An interval that is empty or reversed.
    #[error("{field}: from ({from}) must be before to ({to})")]
    EmptyInterval {
        /// The interval's path.
        field: String,
        /// Its start, seconds.
        from: f64,
        /// Its end, seconds.
        to: f64,
    },
    /// A number that is not finite (NaN or infinite).
    #[error("{field}: {value} is not a finite number")]
    NotFinite {
        /// Where.
        field: String,
        /// The value.
        value: f64,
    },
    /// A number outside its allowed range.
    #[error("{field}: {value} is out of range: {expected}")]
    OutOfRange {
        /// Where.
        field: String,
        /// The value.
        value: f64,
        /// What is allowed, in words.
        expected: &'static str,
    },
    /// A keyword that is not one of the allowed ones.
    #[error("{field}: unknown {what} {value:?}: expected {expected}")]
    UnknownKeyword {
        /// Where.
        field: String,
        /// What kind of keyword (`platform`, `method`, ...).
        what: &'static str,
        /// The text given.
        value: String,
        /// The allowed keywords, in words.
        expected: &'static str,
    },
    /// Any other problem with a field, described in words.
    #[error("{field}: {problem}")]
    Invalid {
        /// Where.
        field: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

impl ScenarioError {
    /// The field path the error names (`None` for malformed JSON).
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Json(_) => None,
            Self::UnknownServer { field, .. }
            | Self::UnknownSubscription { field, .. }
            | Self::Duplicate { field, .. }
            | Self::ForeignServer { field, .. }
            | Self::EmptyInterval { field, .. }
            | Self::NotFinite { field, .. }
            | Self::OutOfRange { field, .. }
            | Self::UnknownKeyword { field, .. }
            | Self::Invalid { field, .. } => Some(field),
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Why [`make_policy`](super::make_policy) could not make a policy.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// No policy has this name.
    #[error("unknown policy {name:?}: expected auto, urltest or fallback")]
    Unknown {
        /// The name given.
        name: String,
    },
}
