//! The human `/skills` command: subcommand parsing, aligned tables for people and `--json`
//! for programs. Each subcommand group has a file; each hands off to the module that owns the concept.
//! This file only declares them and dispatches a line; what they share (usage text, `--json` or
//! text, tables) sits below them in `reply.rs`, and no child imports this file.
//! May use the shell's `Active` state, the library and the engines' read sides; nothing depends on it but dispatch.

mod approval;
mod history;
mod operator;
mod reply;
mod review;
mod skills;

pub use reply::{USAGE, one_line, table};

use crate::active::Active;
use crate::api::CallContext;
use crate::host::Host;
use crate::library::storage::store::skill_lock;
use crate::state_file;
use crate::visible::visible;
use reply::{answer, usage_error};
use serde_json::json;

/// The longest `/skills` line read; every subcommand takes a few words.
pub const MAX_LINE_BYTES: usize = 64 << 10;

struct Args<'a> {
    words: Vec<&'a str>,
    json: bool,
}

fn parse(args: &str) -> Args<'_> {
    let mut words: Vec<&str> = args.split_whitespace().collect();
    let json = words.contains(&"--json");
    words.retain(|w| *w != "--json");
    Args { words, json }
}

/// Runs a `/skills` line. Text for a person has hidden characters made visible (staged content,
/// reasons and file names come from agents and repositories); `--json` answers stay exact.
pub(crate) fn run(host: &impl Host, active: &mut Active, ctx: &CallContext, args: &str) -> Result<String, String> {
    if args.len() > MAX_LINE_BYTES {
        return Err(format!(
            "too-large: the /skills line is {} bytes; the limit is {MAX_LINE_BYTES}; no subcommand takes that much",
            args.len()
        ));
    }
    let json = parse(args).json;
    let result = dispatch(host, active, ctx, args);
    if json {
        return result;
    }
    result.map(|text| visible(&text)).map_err(|text| visible(&text))
}

fn dispatch(host: &impl Host, active: &mut Active, ctx: &CallContext, args: &str) -> Result<String, String> {
    let a = parse(args);
    operator::check(ctx, &a.words)?;
    let rest = &a.words[a.words.len().min(1)..];
    match a.words.first().copied() {
        None | Some("help") => answer(a.json, json!({"usage": USAGE}), || USAGE.to_string()),
        Some("review") => review::review(host, active, ctx, rest, a.json),
        Some("loops") => review::loops(host, rest, a.json),
        Some("reviews") => review::reviews(host, rest, a.json),
        Some("approval") => approval::switch(host, rest, a.json),
        Some("pending") => approval::pending(host, rest, a.json),
        Some("diff") => match rest {
            [version] if version.contains('@') => history::diff(host, ctx, version, a.json),
            [id] => approval::diff(host, id, a.json),
            [from, to] if from.contains('@') && to.contains('@') => history::diff_between(host, ctx, from, to, a.json),
            _ => Err(usage_error("expected `/skills diff ID`, `diff NAME@VERSION` or `diff NAME@A NAME@B`")),
        },
        Some("log") => history::log(host, ctx, one_arg(rest, "log NAME")?, a.json),
        Some("revert") => history::revert(host, active, ctx, rest, a.json),
        Some("approve") => {
            let (id, accepted) = approval::approve_args(rest)?;
            approval::approve(host, active, ctx, id, &accepted, a.json)
        }
        Some("reject") => approval::reject(host, one_arg(rest, "reject ID")?, a.json),
        Some("list") => skills::list(host, active, ctx, rest, a.json),
        // Each is checked before the lock is taken (and again under it): a refusal leaves no
        // trace, not a lock file, not even the state folder.
        Some("pin") => {
            let name = one_arg(rest, "pin NAME")?;
            skills::owned_skill(host, ctx, name)?;
            locked(host, name, |_| skills::pin(host, active, ctx, name, true, a.json))
        }
        Some("unpin") => {
            let name = one_arg(rest, "unpin NAME")?;
            skills::owned_skill(host, ctx, name)?;
            locked(host, name, |_| skills::pin(host, active, ctx, name, false, a.json))
        }
        Some("archive") => {
            let name = one_arg(rest, "archive NAME")?;
            skills::archivable(host, ctx, name)?;
            locked(host, name, |lock| skills::archive(host, active, ctx, name, lock, a.json))
        }
        Some("restore") => {
            let name = one_arg(rest, "restore NAME")?;
            crate::library::curation::curator::restorable(host, name)?;
            locked(host, name, |lock| skills::restore(host, active, name, lock, a.json))
        }
        Some("curator") => skills::curator(host, active, rest, a.json),
        Some("show") => match one_arg(rest, "show NAME")? {
            at if at.contains('@') => history::show_before(host, ctx, at, a.json),
            name => skills::show(host, ctx, name, a.json),
        },
        Some(other) => Err(usage_error(&format!("unknown subcommand `{other}`"))),
    }
}

/// Runs a change to skill `name` under the lock every writer of it takes (long work renews it).
fn locked<H: Host>(
    host: &H,
    name: &str,
    f: impl FnOnce(&mut state_file::Lock) -> Result<String, String>,
) -> Result<String, String> {
    let mut lock =
        state_file::lock(host, &skill_lock(name)).map_err(|e| format!("{} ({}): {}", e.message, e.code, e.hint))?;
    let result = f(&mut lock);
    lock.release(host);
    result
}

fn one_arg<'a>(rest: &[&'a str], shape: &str) -> Result<&'a str, String> {
    match rest {
        [one] => Ok(one),
        _ => Err(usage_error(&format!("expected `/skills {shape}`"))),
    }
}
