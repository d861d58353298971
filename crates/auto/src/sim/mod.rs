//! The virtual-time simulator (`spec/auto-simulation.md`).
//!
//! A [`Scenario`] is a timeline of servers answering, refusing or going silent, of the
//! network dropping, of user traffic and user actions. [`Scenario::validate`] checks it
//! (every error names its field) and resolves it into a [`Plan`] holding a precomputed
//! [`World`]; [`run`] replays the plan against any [`Policy`] in virtual time and
//! returns a [`Report`]: the JSON lines of the output format and the [`Summary`].
//! [`make_policy`] builds the policies the CLI compares by name.
//!
//! Like the rest of the crate, the simulator does no I/O and reads no clock: the run is
//! a pure function of the plan and the policy, so its output is byte-identical across
//! runs.

mod error;
mod fields;
mod plan;
pub mod policies;
mod report;
mod runner;
mod scenario;
mod validate;
mod world;

pub use error::{PolicyError, ScenarioError};
pub use plan::{Action, ActionKind, MAX_PROBE_TIMEOUT_S, MAX_UNTIL_S, Plan};
pub use report::{Line, LineKind, Report, Summary, format_secs};
pub use runner::run;
pub use scenario::{
    ActionSpec, HistorySpec, IntervalSpec, Scenario, ServerSpec, SubscriptionSpec, UpdateSpec,
    WorldSpec,
};
pub use world::{NetworkState, ServerState, World, WorldEntry, WorldTarget};

use crate::config::AutoConfig;
use crate::engine::Engine;
use crate::policy::Policy;

/// The policies the simulator can run, by the names the CLI takes.
pub const POLICIES: [&str; 3] = ["auto", "urltest", "fallback"];

/// Makes the policy called `name` for `plan`: `auto` is this crate's [`Engine`] with
/// the scenario's platform and probe timeout; `urltest` and `fallback` are the models
/// in [`policies`].
pub fn make_policy(name: &str, plan: &Plan) -> Result<Box<dyn Policy>, PolicyError> {
    match name {
        "auto" => Ok(Box::new(Engine::new(AutoConfig {
            platform: plan.platform,
            probe_timeout: plan.probe_timeout,
            ..AutoConfig::default()
        }))),
        "urltest" => Ok(Box::new(policies::UrlTest::new())),
        "fallback" => Ok(Box::new(policies::Fallback::new())),
        _ => Err(PolicyError::Unknown { name: name.into() }),
    }
}
