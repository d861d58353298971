//! # Auto's simulator
//!
//! Replays a scenario in virtual time against Switchyard's Auto engine
//! (`switchyard-auto`) or a model of a peer's policy (sing-box `urltest`, mihomo
//! `fallback`), for `switchyard auto simulate` and `switchyard auto compare` and for the
//! benchmarks (`docs/auto.md, "Simulator scenarios and output"`). It is a crate of its own so that what ships
//! to apps, the engine and its C ABI (`switchyard-auto-ffi`), never links it.
//!
//! A [`Scenario`] is a timeline of servers answering, refusing or going silent, of the
//! network dropping, of user traffic and user actions. [`Scenario::validate`] checks it
//! (every error names its field) and resolves it into a [`Plan`] holding a precomputed
//! [`World`]; [`run`] replays the plan against any [`Policy`] in virtual time and
//! returns a [`Report`]: the JSON lines of the output format and the [`Summary`].
//! [`make_policy`] builds the policies the CLI compares by name; [`policies`] holds the
//! peers' models.
//!
//! Like the engine, the simulator does no I/O and reads no clock: the run is a pure
//! function of the plan and the policy, so its output is byte-identical across runs.

#![warn(missing_docs)]

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

use switchyard_auto::{AutoConfig, Engine, Policy};

/// The policies the simulator can run, by the names the CLI takes.
pub const POLICIES: [&str; 3] = ["auto", "urltest", "fallback"];

/// Makes the policy called `name` for `plan`: `auto` is the engine ([`Engine`]) with
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
