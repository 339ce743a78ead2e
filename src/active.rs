//! What the plugin holds after a successful `init`: the effective config, the services the host
//! offers, and the per-process state of the library and the engines. Dispatch (`plugin.rs`) and
//! the `/skills` command (`command/`) both work on it; it depends on neither.

use crate::config::Config;
use crate::host::Host;
use crate::library::curator;
use crate::library::guards::ReadRegistry;
use crate::library::ledger::Ledger;
use crate::library::store::ListCache;
use crate::schedule::scheduler::Scheduler;

/// Everything that exists only after a successful `init`.
pub(crate) struct Active {
    pub(crate) config: Config,
    pub(crate) services: Vec<String>,
    pub(crate) reads: ReadRegistry,
    pub(crate) cache: ListCache,
    /// Loaded on first use.
    pub(crate) ledger: Option<Ledger>,
    pub(crate) review: Scheduler,
    pub(crate) curator: curator::Schedule,
    /// The host offers agents and subagents, so reviews can run.
    pub(crate) review_ready: bool,
    pub(crate) shadow: crate::shadow::state::Shadow,
    pub(crate) review_loops: crate::review_loop::Loops,
    /// The host offers subagents and a state root, so review loops can run.
    pub(crate) review_loop_ready: bool,
    /// Which skills this and the last turn of each session loaded (what followed is evidence).
    pub(crate) evidence: crate::library::evidence::Sessions,
}

impl Active {
    pub(crate) fn ledger(&mut self, host: &impl Host) -> &mut Ledger {
        self.ledger.get_or_insert_with(|| Ledger::load(host))
    }

    /// What a `skill_manage` call needs of this state, for `agent` (an `actor`: agent, reviewer
    /// or operator) of `session`, whose working folder is `cwd`; write approval as the operator's
    /// runtime switch (approval.json) or the config says.
    pub(crate) fn tool_context<'a>(
        &'a mut self,
        host: &impl Host,
        session: &'a str,
        agent: &'a str,
        actor: &'a str,
        cwd: &'a str,
    ) -> crate::library::skill_manage::Context<'a> {
        let approval = crate::library::approval::approval_override(host).unwrap_or(self.config.write_approval);
        crate::library::skill_manage::Context {
            config: &self.config,
            session,
            agent,
            actor,
            cwd,
            reads: &mut self.reads,
            cache: &mut self.cache,
            ledger: self.ledger.get_or_insert_with(|| Ledger::load(host)),
            approval,
        }
    }

    /// Records in the ledger; a failure is logged (counts are evidence, never a reason to fail
    /// the event that produced them).
    pub(crate) fn record(&mut self, host: &impl Host, records: &[crate::library::ledger::Record]) {
        if records.is_empty() {
            return;
        }
        if let Err(err) = self.ledger(host).record(host, records) {
            host.log(crate::host::Level::Warn, &format!("could not record in the ledger: {err}"));
        }
    }
}
