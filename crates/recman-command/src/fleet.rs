//! The fleet's services and the restore written through an agent (docs/fleet.md): the
//! repository host's archive service, a database host's agent (the data directory's reads
//! and the restore's writes), and the engine's restore destination over an agent. The front
//! end listens, prints and keeps its options; what each call does is here.

mod agent;
mod repo_host;
mod through;

pub use agent::{RestoreAgent, WithRestore, agent_service};
pub use repo_host::{Opener, RepoHost, transport_allow};
pub use through::{db_agent, through_agent};
