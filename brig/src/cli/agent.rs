//! `brig agent`: manage profiles. (Being written.)

use crate::environment::Environment;

#[derive(Debug, clap::Subcommand)]
pub enum AgentCommand {
    /// List the agents.
    Ls,
}

pub fn run(_command: AgentCommand, _env: &Environment, _json: bool) -> Result<crate::exit::Code, crate::Error> {
    Ok(crate::exit::Code::Success)
}
