//! The read registry: which agent has read which skill. A mutation is allowed only after
//! the same agent loaded the skill (`skill` tool) or viewed it through `skill_manage`.

use std::collections::{BTreeSet, HashMap};

#[derive(Default)]
pub struct ReadRegistry {
    reads: HashMap<(String, String), BTreeSet<String>>,
}

impl ReadRegistry {
    pub fn mark(&mut self, session: &str, agent: &str, skill: &str) {
        self.reads.entry((session.to_string(), agent.to_string())).or_default().insert(skill.to_string());
    }

    pub fn has_read(&self, session: &str, agent: &str, skill: &str) -> bool {
        self.reads.get(&(session.to_string(), agent.to_string())).is_some_and(|s| s.contains(skill))
    }

    /// Takes one session's reads out, by agent (to persist them); the session starts empty here.
    pub fn take_session(&mut self, session: &str) -> std::collections::BTreeMap<String, BTreeSet<String>> {
        let agents: Vec<(String, String)> = self.reads.keys().filter(|(s, _)| s == session).cloned().collect();
        agents.into_iter().filter_map(|key| self.reads.remove(&key).map(|skills| (key.1, skills))).collect()
    }

    /// Puts a session's reads back (as loaded from its state file), replacing what was here.
    pub fn put_session(&mut self, session: &str, reads: std::collections::BTreeMap<String, BTreeSet<String>>) {
        self.reads.retain(|(s, _), _| s != session);
        for (agent, skills) in reads {
            self.reads.insert((session.to_string(), agent), skills);
        }
    }

    /// Skills this agent has read, for error details.
    pub fn read_by(&self, session: &str, agent: &str) -> Vec<String> {
        self.reads
            .get(&(session.to_string(), agent.to_string()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn reads_are_per_agent_and_session() {
        let mut r = ReadRegistry::default();
        r.mark("s1", "main", "pdf");
        assert!(r.has_read("s1", "main", "pdf"));
        assert!(!r.has_read("s1", "reviewer", "pdf"));
        assert!(!r.has_read("s2", "main", "pdf"));
        assert_eq!(r.read_by("s1", "main"), vec!["pdf".to_string()]);
    }
}
