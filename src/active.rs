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
use crate::schedule::session_holdings::Holdings;
use crate::schedule::session_journal;
use crate::schedule::sessions::{self, Stored};

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
    /// Sessions held in memory between events (a host offering `session-owner`).
    pub(crate) holdings: Holdings,
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

/// One session's state brought in for one event or call. From the state root under the session's
/// lock (held meanwhile by the scheduler, whose gate call renews it), or from this process's
/// memory when it holds the session (`session_journal`; the scheduler then holds the journal);
/// `Active::leave` writes back what changed and lets go. Without a state root the session lives
/// in this process's memory and the scope is empty.
pub(crate) struct SessionScope {
    session: String,
    loaded: Option<Stored>,
    held: bool,
}

impl Active {
    /// Brings `session`'s state into this value. `lease`: a host offering `session-owner` keeps
    /// the session in memory from now on (the agent's own events; a review's end or a timer only
    /// reads it as any process would). Busy past the lock's wait: `conflict`.
    pub(crate) fn enter(
        &mut self,
        host: &impl Host,
        session: &str,
        lease: bool,
    ) -> Result<SessionScope, crate::errors::ToolError> {
        let mut scope = SessionScope { session: session.to_string(), loaded: None, held: false };
        if !sessions::persisted(host) {
            return Ok(scope);
        }
        if let Some(held) = self.holdings.get_mut(session) {
            // A batch's journal stays busy between events: there is nothing to claim.
            if held.batch || held.claim(host) {
                let (state, busy) = (held.current().clone(), held.busy_path());
                self.review.session_lock = Some(crate::state_file::Lock::journal(host, busy));
                self.put_session(state);
                scope.held = true;
                return Ok(scope);
            }
            self.holdings.lose(host, session);
        }
        let lock = crate::state_file::lock(host, &sessions::lock_name(session))?;
        let stored = match sessions::load_for_update(host, session) {
            Ok(stored) => stored,
            Err(err) => {
                lock.release_keeping_folder(host);
                return Err(err);
            }
        };
        if lease
            && self.holdings.may_hold(session)
            && let Some(held) = session_journal::lease(host, session, &stored, self.holdings.batch)
        {
            lock.release_keeping_folder(host);
            self.review.session_lock = Some(crate::state_file::Lock::journal(host, held.busy_path()));
            self.put_session(stored);
            self.holdings.insert(host, session, held);
            scope.held = true;
            return Ok(scope);
        }
        self.review.session_lock = Some(lock);
        self.put_session(stored.clone());
        scope.loaded = Some(stored);
        Ok(scope)
    }

    /// Puts a session's parts into the maps the engines work on (moved, not copied: this runs at
    /// every event).
    fn put_session(&mut self, stored: Stored) {
        let session = stored.session;
        self.reads.put_session(&session, stored.reads);
        self.evidence.put(&session, stored.evidence);
        self.review.sessions.insert(session, stored.review);
    }

    /// The session's state as this value holds it now, taken out of it (this process keeps
    /// nothing of the session in these maps between events).
    fn take_session(&mut self, session: &str, like: &Stored) -> Stored {
        Stored {
            v: like.v,
            session: session.to_string(),
            review: self.review.sessions.remove(session).unwrap_or_default(),
            reads: self.reads.take_session(session),
            evidence: self.evidence.take(session),
            updated_ms: like.updated_ms,
            generation: like.generation,
        }
    }

    /// Saves the session's state when it changed, keeps the in-flight markers in step, and
    /// lets go: a held session's change is one record appended to its journal; any other is
    /// written as its next generation and its lock released. The lock is renewed first: one lost
    /// meanwhile (this process stalled past its stale age, and another broke it) may be another
    /// process's now, and the session's state theirs to write. Then nothing is saved (logged):
    /// this event's changes are lost, never written over theirs.
    pub(crate) fn leave(&mut self, host: &impl Host, scope: SessionScope) {
        let session = scope.session;
        if scope.held {
            self.review.session_lock = None;
            let Some(held) = self.holdings.get_mut(&session) else { return };
            let current = held.current();
            let like = Stored {
                generation: current.generation,
                updated_ms: current.updated_ms,
                v: current.v,
                ..Stored::default()
            };
            let now = self.take_session(&session, &like);
            let Some(held) = self.holdings.get_mut(&session) else { return };
            let kept = if held.batch { held.keep(host, now) } else { held.commit(host, now) };
            if !kept {
                self.holdings.lose(host, &session);
            }
            self.holdings.after_event(host);
            return;
        }
        // Every event counts towards a batch's next flush, held or not: a batch whose held
        // sessions went quiet while the others ran still renews their journals and answers asks.
        self.holdings.after_event(host);
        let (Some(mut lock), Some(loaded)) = (self.review.session_lock.take(), scope.loaded) else { return };
        let stored = self.take_session(&session, &loaded);
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
        if !sessions::persisted(host) {
            return f(self);
        }
        // A session this process holds, or may: its reads are in memory, and new ones one record.
        if (self.holdings.holds(session) || self.holdings.may_hold(session))
            && let Ok(scope) = self.enter(host, session, true)
        {
            if scope.held {
                let out = f(self);
                self.leave(host, scope);
                return out;
            }
            self.leave(host, scope);
        }
        let loaded = sessions::load(host, session).reads;
        self.reads.put_session(session, loaded.clone());
        let out = f(self);
        let now = self.reads.take_session(session);
        if now != loaded {
            let merged = crate::state_file::with_lock(host, &sessions::lock_name(session), |_| {
                // Taken from a holder first: a generation written past its journal would orphan it.
                let before = sessions::load_for_update(host, session)?;
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
impl Active {
    /// The state after an init with the default config and no services; `owner`: as a host that
    /// offers `session-owner` (it holds its sessions in memory).
    pub(crate) fn for_tests(owner: bool) -> Active {
        Active {
            config: Config::default(),
            services: Vec::new(),
            reads: Default::default(),
            cache: Default::default(),
            ledger: None,
            review: Default::default(),
            curator: Default::default(),
            review_ready: false,
            shadow: Default::default(),
            review_loops: Default::default(),
            review_loop_ready: false,
            evidence: Default::default(),
            holdings: Holdings::new(owner, false),
        }
    }
}

#[cfg(test)]
#[path = "active_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "held_batch_tests.rs"]
mod held_batch_tests;
#[cfg(test)]
#[path = "held_tests.rs"]
mod held_tests;
