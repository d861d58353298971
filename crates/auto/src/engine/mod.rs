//! The Auto engine (being written; this placeholder connects to the first server).

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::config::AutoConfig;
use crate::error::InputError;
use crate::event::{ConnectReason, Event, Output};
use crate::history::History;
use crate::policy::Policy;
use crate::server::{ServerId, Subscription};
use crate::time::Timestamp;

/// What Auto remembers across restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Measurement history per server identity.
    pub history: HashMap<ServerId, History>,
}

/// The Auto engine.
#[derive(Debug)]
pub struct Engine {
    #[allow(dead_code)]
    config: AutoConfig,
    subs: Vec<Subscription>,
    out: VecDeque<Output>,
}

impl Engine {
    /// A new engine.
    pub fn new(config: AutoConfig) -> Self {
        Self {
            config,
            subs: Vec::new(),
            out: VecDeque::new(),
        }
    }
}

impl Policy for Engine {
    fn name(&self) -> &'static str {
        "auto"
    }
    fn handle_event(&mut self, _now: Timestamp, event: Event) -> Result<(), InputError> {
        match event {
            Event::Subscriptions(s) => self.subs = s,
            Event::AutoOn { subscription } => {
                let sub = self
                    .subs
                    .iter()
                    .find(|s| s.name == subscription)
                    .ok_or(InputError::UnknownSubscription { name: subscription })?;
                if let Some(first) = sub.servers.first() {
                    self.out.push_back(Output::Connect {
                        server: first.id.clone(),
                        reason: ConnectReason::AutoOn,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }
    fn handle_timeout(&mut self, _now: Timestamp) {}
    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }
}
