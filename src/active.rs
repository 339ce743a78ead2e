//! What the plugin holds after a successful `init`: the effective config, the services the host
//! offers, and the per-process state of the library and the engines. Dispatch (`plugin.rs`) and
//! the `/skills` command (`command/`) both work on it; it depends on neither.

use crate::config::Config;
use crate::host::Host;
use crate::library::curation::curator;
use crate::library::curation::ledger::Ledger;
use crate::library::guards::reads::ReadRegistry;
use crate::library::storage::list_cache::ListCache;
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
    pub(crate) evidence: crate::library::curation::evidence::Sessions,
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
        let approval = crate::library::staging::approval::approval_override(host).unwrap_or(self.config.write_approval);
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
    pub(crate) fn record(&mut self, host: &impl Host, records: &[crate::library::curation::ledger::Record]) {
        if records.is_empty() {
            return;
        }
        if let Err(err) = self.ledger(host).record(host, records) {
            host.log(crate::host::Level::Warn, &format!("could not record in the ledger: {err}"));
        }
    }
}

/// One session's state brought in from the state root for one event or call, under the
/// session's lock (held meanwhile by the scheduler, whose gate call renews it); `Active::leave`
/// writes back what changed and releases the lock. Without a state root the session lives in
/// this process's memory and the scope is empty.
pub(crate) struct SessionScope {
    session: String,
    loaded: Option<crate::schedule::sessions::Stored>,
}

impl Active {
    /// Loads `session`'s state into this value. Busy past the lock's wait: `conflict`.
    pub(crate) fn enter(&mut self, host: &impl Host, session: &str) -> Result<SessionScope, crate::errors::ToolError> {
        use crate::schedule::sessions;
        let mut scope = SessionScope { session: session.to_string(), loaded: None };
        if !sessions::persisted(host) {
            return Ok(scope);
        }
        self.review.session_lock = Some(crate::state_file::lock(host, &sessions::lock_name(session))?);
        let stored = sessions::load(host, session);
        self.review.sessions.insert(session.to_string(), stored.review.clone());
        self.reads.put_session(session, stored.reads.clone());
        self.evidence.put(session, stored.evidence.clone());
        scope.loaded = Some(stored);
        Ok(scope)
    }

    /// Saves the session's state when it changed, keeps the in-flight markers in step, and
    /// releases the lock; this process keeps nothing of the session. The lock is renewed first:
    /// one lost meanwhile (this process stalled past its stale age, and another broke it) may be
    /// another process's now, and the session's state theirs to write. Then nothing is saved
    /// (logged): this event's changes are lost, never written over theirs.
    pub(crate) fn leave(&mut self, host: &impl Host, scope: SessionScope) {
        use crate::schedule::sessions;
        let (Some(mut lock), Some(loaded)) = (self.review.session_lock.take(), scope.loaded) else { return };
        let session = scope.session;
        let stored = sessions::Stored {
            v: loaded.v,
            session: session.clone(),
            review: self.review.sessions.remove(&session).unwrap_or_default(),
            reads: self.reads.take_session(&session),
            evidence: self.evidence.take(&session),
            updated_ms: loaded.updated_ms,
            generation: loaded.generation,
        };
        if lock.refresh(host) {
            sessions::save_changed(host, &loaded, &stored);
        } else {
            host.log(
                crate::host::Level::Warn,
                &format!(
                    "session `{}`: its lock was lost to another process during this event; this event's \
                     changes to the session's state were not saved",
                    crate::visible::visible(&session)
                ),
            );
        }
        lock.release_keeping_folder(host);
    }
}

impl Active {
    /// Runs `f` with `session`'s read registry loaded from its state file. Reads only grow, so
    /// nothing is locked to load them: new reads are merged into the file afterwards, under the
    /// session's lock (a refused or read-only call writes nothing at all).
    pub(crate) fn with_reads<T>(&mut self, host: &impl Host, session: &str, f: impl FnOnce(&mut Active) -> T) -> T {
        use crate::schedule::sessions;
        if !sessions::persisted(host) {
            return f(self);
        }
        let loaded = sessions::load(host, session).reads;
        self.reads.put_session(session, loaded.clone());
        let out = f(self);
        let now = self.reads.take_session(session);
        if now != loaded {
            let merged = crate::state_file::with_lock(host, &sessions::lock_name(session), |_| {
                let before = sessions::load(host, session);
                let mut stored = before.clone();
                for (agent, skills) in now {
                    stored.reads.entry(agent).or_default().extend(skills);
                }
                sessions::save_changed(host, &before, &stored);
                Ok(())
            });
            if let Err(err) = merged {
                host.log(crate::host::Level::Warn, &format!("reads of this call not recorded: {}", err.message));
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "active_tests.rs"]
mod tests;
