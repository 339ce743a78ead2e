//! D1: the probe-class library, the source of truth for what a reviewer checks, and the
//! checklist block rendered into reviewer prompts.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeClass {
    pub id: &'static str,
    pub name: &'static str,
    pub trigger: &'static str,
    pub probe: &'static str,
}

pub const PROBE_CLASSES_V1: &[ProbeClass] = &[
    ProbeClass {
        id: "failed-tool-call",
        name: "Failed tool calls",
        trigger: "a tool call in the turn returned an error or a non-zero exit",
        probe: "Name the failed call and check whether the assistant's next step accounted for the failure instead of proceeding as if it succeeded.",
    },
    ProbeClass {
        id: "redacted-arguments",
        name: "Redacted arguments",
        trigger: "a tool call's arguments were redacted or truncated in the trajectory",
        probe: "Say what the call could have done with the hidden arguments and whether its result is consistent with the claim built on it.",
    },
    ProbeClass {
        id: "stale-read",
        name: "Stale reads",
        trigger: "a file or resource was read, then changed, and the older content was relied on",
        probe: "Point at the read and the later change, and check whether a conclusion depends on content that no longer holds.",
    },
    ProbeClass {
        id: "misleading-success",
        name: "Misleading success",
        trigger: "a tool reported success while its output shows errors, skipped work or empty results",
        probe: "Quote the contradicting part of the output and check whether the assistant reported success anyway.",
    },
    ProbeClass {
        id: "repeated-failure",
        name: "Repeated failure",
        trigger: "the same call or approach failed more than once in a row",
        probe: "Count the attempts and check whether anything changed between them; flag a loop that repeats without new information.",
    },
    ProbeClass {
        id: "long-output",
        name: "Long output",
        trigger: "a tool returned output long enough to be truncated or skimmed",
        probe: "Check whether the part the assistant relied on was actually in view, and whether an error sat in the part it did not read.",
    },
];

pub fn find(id: &str) -> Option<&'static ProbeClass> {
    PROBE_CLASSES_V1.iter().find(|p| p.id == id)
}

/// The reusable prompt block. When a probe cannot be observed, the reviewer reports an
/// evidence gap; when it reports, it anchors the report with refs.
pub fn render_checklist() -> String {
    let mut out = String::from(
        "## Probe checklist\nFor each probe whose trigger you can observe, apply it. If you cannot observe it, report an evidence gap rather than guessing. Anchor every report with the refs of the trajectory entries it rests on.\n",
    );
    for p in PROBE_CLASSES_V1 {
        out.push_str(&format!("- [{}] {}: when {}. {}\n", p.id, p.name, p.trigger, p.probe));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn six_classes_with_stable_unique_ids_render_into_the_checklist() {
        assert_eq!(PROBE_CLASSES_V1.len(), 6);
        let ids: std::collections::BTreeSet<&str> = PROBE_CLASSES_V1.iter().map(|p| p.id).collect();
        assert_eq!(ids.len(), 6);
        let block = render_checklist();
        for p in PROBE_CLASSES_V1 {
            assert!(block.contains(&format!("[{}] {}", p.id, p.name)));
            assert!(!p.trigger.is_empty() && !p.probe.is_empty());
        }
        assert_eq!(find("long-output").map(|p| p.name), Some("Long output"));
        assert!(find("predicate").is_none());
    }
}
