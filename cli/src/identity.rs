//! Who a CLI call is: the operator, or, inside a live reviewer (`SELF_EVOLVE_ACTIVATION`, set by
//! the `command` provider on the child it starts), that reviewer one level down. The plugin
//! decides what each may do; this only says who is asking.

use self_evolve_host::plugin::{CallContext, Origin};

/// The reviewer this process runs inside, if any.
pub fn activation() -> Option<String> {
    std::env::var("SELF_EVOLVE_ACTIVATION").ok().filter(|a| !a.is_empty())
}

/// The refusal of a call inside reviewer `activation` that names another agent (`--agent`, an
/// event line's `agent`): inside a reviewer every call is the reviewer's.
pub fn not_the_reviewer(activation: &str, agent: &str) -> String {
    format!(
        "this runs inside reviewer {activation} (SELF_EVOLVE_ACTIVATION), so it calls as that reviewer, not as `{}`",
        self_evolve_host::text::visible(agent)
    )
}

/// The context of an operator's `/skills` line: the person at the terminal, or, inside a
/// reviewer, the reviewer as a subagent (which the plugin refuses every subcommand that changes
/// something, so a reviewer cannot approve its own staged writes).
pub fn command_context(session: &str) -> CallContext {
    match activation() {
        Some(activation) => CallContext {
            session: session.to_string(),
            agent: activation,
            origin: Origin::Subagent,
            depth: 1,
            cwd: String::new(),
        },
        None => self_evolve_host::user_context(session),
    }
}
