//! What one `skill_manage` call needs besides the host: the policy, who calls, and the plugin's
//! in-memory state the call reads and updates.

use crate::config::Config;
use crate::library::curation::ledger::Ledger;
use crate::library::guards::reads::ReadRegistry;
use crate::library::storage::list_cache::ListCache;

/// What the tool needs besides the host: policy and the plugin's in-memory state.
pub struct Context<'a> {
    pub config: &'a Config,
    pub session: &'a str,
    pub agent: &'a str,
    /// Who the agent is for the version history: `agent`, `reviewer` (a subagent) or `operator`.
    pub actor: &'a str,
    /// The session's working folder (a project skill's history is keyed by it).
    pub cwd: &'a str,
    pub reads: &'a mut ReadRegistry,
    pub cache: &'a mut ListCache,
    pub ledger: &'a mut Ledger,
    /// `writeApproval` after the runtime override (approval.json).
    pub approval: bool,
}
