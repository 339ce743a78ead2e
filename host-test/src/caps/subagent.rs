//! The subagent capability: a `SubagentProvider` trait the harness implements, and a
//! scripted provider for replays and tests. Completions go back through `events.activation-end`.

use std::collections::VecDeque;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub parent_session: String,
    pub provider: String,
    pub delivery: String,
    pub prompt: String,
    pub tools: Vec<String>,
    pub timeout_ms: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Completed,
    Failed,
    Aborted,
    TimedOut,
}

/// A finished activation, to be delivered to the plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub id: String,
    pub status: Status,
    pub text: String,
}

/// Tool calls a started child makes, for hosts that run children through the plugin's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildWork {
    pub id: String,
    pub parent_session: String,
    /// (tool name, arguments JSON), in order.
    pub calls: Vec<(String, String)>,
    /// The tools the child may use now (after `restrict-tools`).
    pub allowed: Vec<String>,
}

pub trait SubagentProvider: Send {
    fn start(&mut self, spec: &Spec) -> Result<String, String>;
    fn restrict_tools(&mut self, id: &str, tools: &[String]) -> Result<(), String>;
    fn abort(&mut self, id: &str);
    /// Activations that finished by `now_ms`, oldest first; each is returned once.
    fn take_finished(&mut self, now_ms: u64) -> Vec<Outcome>;
    /// Started children whose tool calls the host should now perform (each returned once).
    fn take_work(&mut self) -> Vec<ChildWork> {
        Vec::new()
    }
    /// Lets a provider that shares its clock with the host know the time.
    fn set_now(&mut self, _now_ms: u64) {}
}

/// A provider shared with the code that scripts it (tests, the replay driver).
impl<T: SubagentProvider> SubagentProvider for std::sync::Arc<std::sync::Mutex<T>> {
    fn start(&mut self, spec: &Spec) -> Result<String, String> {
        self.lock().map_err(|_| "provider lock poisoned".to_string())?.start(spec)
    }
    fn restrict_tools(&mut self, id: &str, tools: &[String]) -> Result<(), String> {
        self.lock().map_err(|_| "provider lock poisoned".to_string())?.restrict_tools(id, tools)
    }
    fn abort(&mut self, id: &str) {
        if let Ok(mut p) = self.lock() {
            p.abort(id)
        }
    }
    fn take_finished(&mut self, now_ms: u64) -> Vec<Outcome> {
        self.lock().map(|mut p| p.take_finished(now_ms)).unwrap_or_default()
    }
    fn take_work(&mut self) -> Vec<ChildWork> {
        self.lock().map(|mut p| p.take_work()).unwrap_or_default()
    }
    fn set_now(&mut self, now_ms: u64) {
        if let Ok(mut p) = self.lock() {
            p.set_now(now_ms)
        }
    }
}

/// What a scripted activation does: its tool calls, its final text and how long it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    /// (tool name, arguments JSON), performed by the host through the plugin's tools.
    pub calls: Vec<(String, String)>,
    pub text: String,
    pub delay_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activation {
    pub id: String,
    pub spec: Spec,
    pub script: Script,
    pub started_ms: u64,
    pub tools: Vec<String>,
    pub aborted: bool,
    pub delivered: bool,
    pub worked: bool,
}

/// Picks a script from what a child was asked (tests answer reviewers by their prompt).
pub type Responder = Box<dyn FnMut(&Spec) -> Option<Script> + Send>;

/// Answers activations from a responder, else a queue of scripts (else "no skill update").
#[derive(Default)]
pub struct ScriptedProvider {
    /// Consulted first; `None` falls through to the queue.
    pub responder: Option<Responder>,
    pub queue: VecDeque<Script>,
    pub activations: Vec<Activation>,
    /// Refuse every start with this reason (fault injection).
    pub refuse: Option<String>,
    /// The provider's notion of now, set by the host before each call.
    pub now_ms: u64,
}

impl ScriptedProvider {
    pub fn push(&mut self, script: Script) {
        self.queue.push_back(script);
    }
}

impl SubagentProvider for ScriptedProvider {
    fn start(&mut self, spec: &Spec) -> Result<String, String> {
        if let Some(reason) = &self.refuse {
            return Err(reason.clone());
        }
        let id = format!("act-{}", self.activations.len() + 1);
        let answered = self.responder.as_mut().and_then(|respond| respond(spec));
        let script = answered.or_else(|| self.queue.pop_front()).unwrap_or(Script {
            calls: Vec::new(),
            text: "no skill update".into(),
            delay_ms: 0,
        });
        self.activations.push(Activation {
            id: id.clone(),
            spec: spec.clone(),
            script,
            started_ms: self.now_ms,
            tools: spec.tools.clone(),
            aborted: false,
            delivered: false,
            worked: false,
        });
        Ok(id)
    }

    fn restrict_tools(&mut self, id: &str, tools: &[String]) -> Result<(), String> {
        let activation =
            self.activations.iter_mut().find(|a| a.id == id).ok_or_else(|| format!("no activation `{id}`"))?;
        activation.tools = tools.to_vec();
        Ok(())
    }

    fn abort(&mut self, id: &str) {
        if let Some(activation) = self.activations.iter_mut().find(|a| a.id == id && !a.delivered) {
            activation.aborted = true;
        }
    }

    fn take_work(&mut self) -> Vec<ChildWork> {
        let mut out = Vec::new();
        for a in self.activations.iter_mut().filter(|a| !a.worked && !a.aborted) {
            a.worked = true;
            out.push(ChildWork {
                id: a.id.clone(),
                parent_session: a.spec.parent_session.clone(),
                calls: a.script.calls.clone(),
                allowed: a.tools.clone(),
            });
        }
        out
    }

    fn set_now(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
    }

    fn take_finished(&mut self, now_ms: u64) -> Vec<Outcome> {
        let mut out = Vec::new();
        for a in self.activations.iter_mut().filter(|a| !a.delivered) {
            if a.aborted {
                a.delivered = true;
                out.push(Outcome { id: a.id.clone(), status: Status::Aborted, text: String::new() });
            } else if now_ms >= a.started_ms.saturating_add(a.script.delay_ms) {
                a.delivered = true;
                out.push(Outcome { id: a.id.clone(), status: Status::Completed, text: a.script.text.clone() });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            parent_session: "s1".into(),
            provider: "fork".into(),
            delivery: "caller".into(),
            prompt: "review".into(),
            tools: vec!["skill".into(), "skill_manage".into(), "bash".into()],
            timeout_ms: 1000,
        }
    }

    #[test]
    fn scripts_are_taken_in_order_and_default_to_no_update() {
        let mut p = ScriptedProvider::default();
        p.push(Script { text: "patched".into(), ..Default::default() });
        let a = p.start(&spec()).unwrap();
        let b = p.start(&spec()).unwrap();
        let done = p.take_finished(0);
        assert_eq!(done[0], Outcome { id: a, status: Status::Completed, text: "patched".into() });
        assert_eq!(done[1], Outcome { id: b, status: Status::Completed, text: "no skill update".into() });
        assert!(p.take_finished(10).is_empty(), "each outcome is delivered once");
    }

    #[test]
    fn delayed_activations_finish_later_or_are_aborted() {
        let mut p = ScriptedProvider { now_ms: 100, ..Default::default() };
        p.push(Script { text: "late".into(), delay_ms: 50, ..Default::default() });
        p.push(Script { text: "never".into(), delay_ms: 1_000, ..Default::default() });
        let a = p.start(&spec()).unwrap();
        let b = p.start(&spec()).unwrap();
        assert!(p.take_finished(149).is_empty());
        assert_eq!(p.take_finished(150)[0].id, a);
        p.abort(&b);
        assert_eq!(p.take_finished(151)[0].status, Status::Aborted);
    }

    #[test]
    fn refusal_and_restriction() {
        let mut p = ScriptedProvider::default();
        let id = p.start(&spec()).unwrap();
        p.restrict_tools(&id, &["skill".into()]).unwrap();
        assert_eq!(p.activations[0].tools, vec!["skill".to_string()]);
        assert!(p.restrict_tools("nope", &[]).is_err());
        p.refuse = Some("busy".into());
        assert_eq!(p.start(&spec()), Err("busy".into()));
    }
}
