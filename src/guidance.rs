//! The system-prompt section that teaches the model to use `skill_manage` well.
//! Static text: short enough to place anywhere in a system prompt.

pub fn section() -> String {
    "## Skills you can improve (skill_manage)\n\
     Skills are SKILL.md files that record how to do recurring work. Use `skill_manage` to keep them right:\n\
     - Read before you write: `view` a skill (or load it) before you `patch` or `edit` it.\n\
     - Patch before you create: fix or extend an existing skill; create a new one only for a new class of task.\n\
     - One class-level lesson per skill: a correction or standing preference, a procedure that worked after trial \
     and error, or a fix to a skill that proved wrong. Not a diary of this session.\n\
     - Never write secrets (keys, tokens, passwords) or facts true only on this machine (paths, hostnames, ids).\n\
     - A refusal explains why and what to do instead; follow its hint rather than retrying the same call."
        .to_string()
}
