//! The statements the engine sends that an agent also runs (an agent runs only statements it
//! knows): one list below both their senders and the agent, so neither imports the other.

/// The statement register sends to see the session works.
pub(crate) const PING_SQL: &str = "select 1";

/// The cluster's current timeline and whether it is a standby (one statement).
pub(crate) const CURRENT_TIMELINE_SQL: &str = "SELECT CASE WHEN pg_is_in_recovery() THEN (SELECT timeline_id FROM pg_control_checkpoint())::text \
     ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END, pg_is_in_recovery()";

/// The statements a standby channel sends (also through a standby's agent:
/// [`crate::source::agent_pg`]).
pub(crate) const IN_RECOVERY_SQL: &str = "select pg_is_in_recovery()";
pub(crate) const REPLAY_LSN_SQL: &str = "select pg_last_wal_replay_lsn()";
pub(crate) const CHECKPOINT_SQL: &str = "checkpoint";
pub(crate) const REDO_LSN_SQL: &str = "select redo_lsn from pg_control_checkpoint()";
