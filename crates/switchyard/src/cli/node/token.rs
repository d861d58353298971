//! `switchyard node token --config FILE` (or `--state-dir DIR`): prints the control
//! API's bearer token.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use switchyard_node::config::default_state_dir_of;
use switchyard_node::state;

/// Print the bearer token of the node's control API.
#[derive(Debug, Args)]
pub(crate) struct TokenArgs {
    /// The node's config file (TOML): the token is kept in its `node.state_dir`.
    #[arg(long, short, required_unless_present = "state_dir")]
    config: Option<PathBuf>,
    /// The state directory of a node run without a config file (enrolled with a panel).
    #[arg(long, conflicts_with = "config")]
    state_dir: Option<PathBuf>,
}

impl TokenArgs {
    /// Prints the token, making it first when the node has never started (so an
    /// operator can hand it to the panel before the first start).
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let (dir, of) = match (self.config, self.state_dir) {
            (Some(config), _) => (default_state_dir_of(&config), config),
            (None, Some(dir)) => (dir.clone(), dir),
            (None, None) => anyhow::bail!("--config FILE or --state-dir DIR is required"),
        };
        let token = state::load_or_create_token(&dir)
            .with_context(|| format!("the control token of {}", of.display()))?;
        println!("{}", token.expose());
        Ok(())
    }
}
