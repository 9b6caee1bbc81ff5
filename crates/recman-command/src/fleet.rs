//! The fleet's services and the restore written through an agent (docs/fleet.md): the
//! repository host's archive service, a database host's agent (the data directory's reads
//! and the restore's writes), the client calls to both, and the engine's restore
//! destination over an agent. The front end keeps its options and prints; what each call
//! does is here.

mod agent;
mod client;
mod listen;
mod repo_host;
mod through;

pub use agent::{RestoreAgent, WithRestore, agent_service};
pub use client::{get_wal, push_wal, restore_through_agent};
pub use listen::{serve_agent, serve_page, serve_repo_host};
pub use repo_host::Opener;
pub use through::db_agent;
