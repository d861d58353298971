//! `switchyard node token --config FILE`: prints the control API's bearer token.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use switchyard_node::NodeConfig;
use switchyard_node::state;

/// Print the bearer token of the node's control API.
#[derive(Debug, Args)]
pub(crate) struct TokenArgs {
    /// The node's config file (TOML): the token is kept in its `node.state_dir`.
    #[arg(long, short)]
    config: PathBuf,
}

impl TokenArgs {
    /// Prints the token, making it first when the node has never started (so an
    /// operator can hand it to the panel before the first start).
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let dir = NodeConfig::default_state_dir_of(&self.config);
        let token = state::load_or_create_token(&dir)
            .with_context(|| format!("the control token of {}", self.config.display()))?;
        println!("{}", token.expose());
        Ok(())
    }
}
