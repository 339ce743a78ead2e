//! Defines which `/skills` words the console passes to the plugin: the read subcommands a GET may
//! run (`/api/read`), the actions a POST may run (`/api/act`), the shape of their words, and the
//! paging of a long answer. Pure functions: whether the plugin then allows an action is the
//! plugin's rule, not the console's; these only keep a request to the words a page sends.

use serde::Deserialize;

/// Words in one request, at most.
pub const MAX_WORDS: usize = 64;
/// Bytes in one word, at most.
pub const MAX_WORD_BYTES: usize = 256;
/// Rows in one page: by default, and at most.
pub const PER_DEFAULT: usize = 100;
pub const PER_MAX: usize = 200;
/// The arrays a paged answer is cut along (the first one the answer has).
pub const PAGED: [&str; 4] = ["skills", "pending", "reviews", "versions"];
/// The actions a POST may run; each goes to the plugin as `self-evolve skills` sends it.
pub const ACTIONS: [&str; 7] = ["approve", "reject", "revert", "pin", "unpin", "archive", "restore"];

/// `application/x-www-form-urlencoded` decoding of one query value: `+` is a space, `%XX` a byte.
pub fn decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(byte.ok_or_else(|| "a `%` in the query is not followed by two hex digits".to_string())?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "the query is not UTF-8 once decoded".to_string())
}

/// Query parameter `name`, decoded; the first one when it is repeated.
pub fn param(query: &str, name: &str) -> Result<Option<String>, String> {
    match query.split('&').find_map(|pair| pair.split_once('=').filter(|(k, _)| *k == name)) {
        Some((_, value)) => decode(value).map(Some),
        None => Ok(None),
    }
}

/// Which page of how many rows: `page` (0-based, default 0) and `per` (default 100, at most 200).
pub fn paging(query: &str) -> Result<(usize, usize), String> {
    let number = |name: &str, default: usize| -> Result<usize, String> {
        match param(query, name)? {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("`{name}` must be a whole number, not `{v}`")),
        }
    };
    let (page, per) = (number("page", 0)?, number("per", PER_DEFAULT)?);
    if per == 0 || per > PER_MAX {
        return Err(format!("`per` must be from 1 to {PER_MAX}, not {per}"));
    }
    Ok((page, per))
}

/// The bounds every word meets: a count, a length, no space or control character (the plugin
/// splits its line on whitespace, so a word holding one would become two).
fn bounded(words: &[String]) -> Result<(), String> {
    if words.len() > MAX_WORDS {
        return Err(format!("{} words; at most {MAX_WORDS} are taken", words.len()));
    }
    for word in words {
        if word.len() > MAX_WORD_BYTES {
            return Err(format!("a word of {} bytes; at most {MAX_WORD_BYTES} are taken", word.len()));
        }
        if word.is_empty() || word.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("a word is empty or holds a space or a control character".to_string());
        }
    }
    Ok(())
}

/// A plain argument: a name, an id, `NAME@V`, a number; never an option.
fn plain(word: &str) -> bool {
    !word.starts_with('-')
}

/// The words of `/api/read?args=…`: the read subcommands the page shows, and nothing else (an
/// action through a GET would need no CSRF token). `--json` is the console's to add.
pub fn read_words(args: &str) -> Result<Vec<String>, String> {
    let words: Vec<String> = args.split_whitespace().filter(|w| *w != "--json").map(str::to_string).collect();
    bounded(&words)?;
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    let list_options = |rest: &[&str]| -> bool {
        let mut rest = rest;
        while let [flag, value, more @ ..] = rest {
            let known =
                (*flag == "--scope" && matches!(*value, "user" | "project")) || (*flag == "--status" && plain(value));
            if !known {
                return false;
            }
            rest = more;
        }
        rest.is_empty()
    };
    let allowed = match w.as_slice() {
        ["list", rest @ ..] => list_options(rest),
        ["show" | "log", name] => plain(name),
        ["pending"] | ["curator"] | ["curator", "run", "--dry-run"] | ["reviews"] | ["loops"] => true,
        ["review", "status"] => true,
        ["diff", id] => plain(id),
        ["diff", from, to] => from.contains('@') && to.contains('@') && plain(from) && plain(to),
        ["reviews", id] => plain(id),
        _ => false,
    };
    if !allowed {
        return Err(format!(
            "`{}` is not a read the console serves: list [--scope user|project] [--status S], show NAME, pending, \
             diff ID, diff NAME@V, diff NAME@A NAME@B, log NAME, curator, curator run --dry-run, reviews [ID], \
             loops, review status",
            self_evolve_host::text::visible(&words.join(" "))
        ));
    }
    Ok(words)
}

/// The body of `POST /api/act`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Act {
    pub args: Vec<String>,
}

/// The words of an action: a verb of `ACTIONS`, then plain words and `--accept-finding` (the
/// only option an action takes from the page; text answers, so no `--json`).
pub fn act_words(body: &[u8]) -> Result<Vec<String>, String> {
    let act: Act = serde_json::from_slice(body)
        .map_err(|e| format!("the body must be {{\"args\": [\"approve\", \"ID\", …]}}: {e}"))?;
    bounded(&act.args)?;
    match act.args.first() {
        Some(verb) if ACTIONS.contains(&verb.as_str()) => {}
        _ => return Err(format!("the first word must be one of {}", ACTIONS.join(", "))),
    }
    if let Some(option) = act.args.iter().find(|w| !plain(w) && *w != "--accept-finding") {
        return Err(format!(
            "`{}` is not taken here; the only option an action takes is --accept-finding RULE",
            self_evolve_host::text::visible(option)
        ));
    }
    Ok(act.args)
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
