//! Who may run which `/skills` subcommand: a person (origin `user`, depth 0) runs all of them; an
//! agent's child (a reviewer, origin `subagent` or depth > 0) only those that change nothing.
//! Hosts bind identity (the CLI inside a reviewer calls as that reviewer), the plugin decides here.

use crate::api::CallContext;

/// Subcommands that read and change nothing, as their words arrive (`--json` removed). Listed
/// rather than the reverse, so a new subcommand is an operator's until it is added here.
fn reads_only(words: &[&str]) -> bool {
    match words {
        [] | ["help" | "list" | "show" | "pending" | "diff" | "log" | "reviews" | "loops", ..] => true,
        ["review", "status"] => true,
        // `curator` alone prints the last report; `--dry-run` moves nothing.
        ["curator"] | ["curator", "--dry-run"] | ["curator", "run", "--dry-run"] | ["curator", "--dry-run", "run"] => {
            true
        }
        _ => false,
    }
}

/// Refuses a subcommand that changes the library or its switches when the caller is not the
/// operator: an approval, a revert or an archive run from inside a reviewer would let the
/// reviewer approve its own staged writes.
pub(super) fn check(ctx: &CallContext, words: &[&str]) -> Result<(), String> {
    if ctx.is_top_level() || reads_only(words) {
        return Ok(());
    }
    let what = words.first().copied().unwrap_or("");
    Err(format!(
        "operator-only: `/skills {what}` changes the library or its switches, and this call comes from `{}` \
         (a reviewer or another agent's child, not the operator); nothing was changed. Run it yourself, \
         outside the reviewer, e.g. `self-evolve skills {what} …` in your own terminal",
        ctx.agent
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Origin;
    use crate::fake::FakeHost;
    use crate::host::{Host, Root, WriteMode};
    use crate::plugin::Plugin;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn ctx(origin: Origin, depth: u32) -> CallContext {
        CallContext { session: "s1".into(), agent: "act-1".into(), origin, depth, cwd: String::new() }
    }

    const SKILL: &str = "---\nname: deploy\ndescription: Ships the app. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n  version: \"1\"\n---\n1. build\n";

    /// The filesystem without the listing's index (a cache a read may fill) and the session's
    /// state and its lock (`review status` enters the session to read its counters).
    fn library(plugin: &Plugin<FakeHost>) -> Vec<(Root, String, crate::fake::Node)> {
        let mut all = Vec::new();
        for (root, entries) in plugin.host().snapshot() {
            for (path, node) in entries {
                if !["index", "sessions", "locks"].iter().any(|cache| path.starts_with(cache)) {
                    all.push((root.clone(), path, node));
                }
            }
        }
        all
    }

    fn plugin() -> Plugin<FakeHost> {
        let host = FakeHost::new(1_767_225_600_000);
        host.write(&Root::UserSkills, "deploy/SKILL.md", SKILL.as_bytes(), WriteMode::CreateNew).unwrap();
        host.advance(crate::library::storage::list_cache::RACY_MS);
        let mut plugin = Plugin::new(host);
        plugin.init(r#"{"writeApproval":true}"#, &["tools".into(), "commands".into()]).unwrap();
        plugin
    }

    /// Every subcommand that changes something is refused to a reviewer with the same message
    /// and leaves the filesystem as it was (reads may fill the listing's index and the session's state); the operator's own call still works.
    #[test]
    fn a_reviewer_cannot_run_an_operator_subcommand_and_changes_nothing() {
        let mut plugin = plugin();
        let staged = plugin.call_tool(
            &ctx(Origin::User, 0),
            "skill_manage",
            r#"{"action":"create","name":"lint-first","description":"Lint before tests. Use when checking.","body":"Run the linter.\n"}"#,
        );
        assert!(staged.is_ok(), "{staged:?}");
        let before = library(&plugin);
        for line in [
            "approve latest",
            "reject latest",
            "revert deploy",
            "pin deploy",
            "unpin deploy",
            "archive deploy",
            "restore deploy",
            "approval off",
            "approval on",
            "review on",
            "review off",
            "review now",
            "curator run",
            "approve latest --json",
            "frobnicate",
        ] {
            for reviewer in [ctx(Origin::Subagent, 1), ctx(Origin::Subagent, 0), ctx(Origin::User, 1)] {
                let err = plugin.run_command(&reviewer, line).expect_err(line);
                assert!(err.starts_with("operator-only: "), "{line}: {err}");
                assert!(err.contains("`act-1`") && err.contains("nothing was changed"), "{line}: {err}");
                assert_eq!(library(&plugin), before, "{line}: the filesystem changed");
            }
        }
        for line in ["", "help", "list", "show deploy", "pending", "log deploy", "reviews", "loops", "review status"] {
            let answer = plugin.run_command(&ctx(Origin::Subagent, 1), line);
            assert!(answer.is_ok(), "{line}: {answer:?}");
            assert_eq!(library(&plugin), before, "{line} changed the filesystem");
        }
        for line in ["curator", "curator --dry-run", "curator run --dry-run"] {
            let answer = plugin.run_command(&ctx(Origin::Subagent, 1), line);
            assert!(!answer.as_ref().is_err_and(|e| e.starts_with("operator-only")), "{line}: {answer:?}");
            assert_eq!(library(&plugin), before, "{line} changed the filesystem");
        }
        assert_eq!(library(&plugin), before, "reads changed the filesystem");
        let approved = plugin.run_command(&ctx(Origin::User, 0), "approve latest");
        assert!(approved.is_ok(), "the operator's approval: {approved:?}");
    }
}
