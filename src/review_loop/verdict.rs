//! The commit-pinned markdown verdict (seed 003, "Leave a trail on the PR") and its posting
//! through the host's `review-trail` endpoint: look the branch's PR up, then add a comment or
//! edit the last one when it already carries the marker. A review that is not independent never
//! writes the `review-clean` token: it opens with the SELF-REVIEW banner instead; nor does one
//! that is incomplete (a lens or the execution check never delivered).

use super::findings::Finding;
use super::lenses::Mode;
use super::request::Independence;
use crate::host::{Host, HttpRequest, Level};
use serde_json::{Value, json};

pub const MARKER: &str = "<!-- review-loop-verdict -->";
pub const TRAIL_ENDPOINT: &str = "review-trail";
const TRAIL_TIMEOUT_MS: u32 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    Clean,
    Exhausted,
    Stalled,
}

pub struct Verdict<'a> {
    pub terminal: Terminal,
    pub mode: Mode,
    pub branch: &'a str,
    /// The commit the review ran against (local HEAD), when the host knows it.
    pub commit: Option<&'a str>,
    pub uncommitted: bool,
    pub iterations: u32,
    pub lenses: &'a [String],
    pub independence: &'a Independence,
    pub ack: Option<&'a str>,
    /// Load-bearing findings sent to be fixed in earlier iterations.
    pub fixed: &'a [Finding],
    /// Unresolved actionable findings, then the speculative ones.
    pub unresolved: &'a [Finding],
    pub speculative: &'a [Finding],
    /// What degraded the review (failed lenses, the ceiling): said on the verdict, never hidden.
    pub degraded: &'a [String],
    /// A lens or the execution check did not deliver: the token is withheld.
    pub incomplete: bool,
}

impl Verdict<'_> {
    /// The verdict line's text. Only an independent clean run says `review-clean`.
    pub fn line(&self) -> String {
        match self.terminal {
            Terminal::Clean if !self.independence.is_independent() => "self-review — no blocking findings".into(),
            Terminal::Clean if self.incomplete => "no blocking findings — incomplete review (see Degraded)".into(),
            Terminal::Clean => "review-clean".into(),
            Terminal::Exhausted => {
                format!("review-exhausted — {} unresolved actionable finding(s)", self.unresolved.len())
            }
            Terminal::Stalled => "review-stalled — no progress, not clean".into(),
        }
    }

    /// The markdown, pinned to `pinned` (the PR head when posting, else the reviewed commit).
    pub fn markdown(&self, pinned: Option<&str>) -> String {
        let short = |c: &str| c.chars().take(12).collect::<String>();
        let pin = pinned.or(self.commit).map(short).unwrap_or_else(|| "uncommitted".into());
        let mut out = format!("{MARKER}\n");
        if !self.independence.is_independent() {
            out.push_str(&self.banner());
        }
        let method = match self.mode {
            Mode::Code => format!(
                "automated multi-agent review-loop — lens subagents ({}) in independent contexts + an \
                 execution-grounded lint/test/build check. Findings falsified against the diff; not a human review.",
                self.lenses.join(", ")
            ),
            mode => format!(
                "automated multi-agent review-loop — lens subagents ({}) in independent contexts. Findings \
                 falsified against the {}; not a human review.",
                self.lenses.join(", "),
                mode.artifact_noun()
            ),
        };
        let reviewed_on = self.commit.map(short).unwrap_or_else(|| "uncommitted work".into());
        out.push_str(&format!(
            "## 🔬 review-loop verdict — pinned to `{pin}`\n\n**Reviewed:** `{}` on `{reviewed_on}` · **mode:** {} · \
             **iterations:** {} · **method:** {method}\n\n**Verdict:** {}\n\n**Independence:** {}\n",
            self.branch,
            self.mode.as_str(),
            self.iterations,
            self.line(),
            self.independence_text()
        ));
        if !self.degraded.is_empty() {
            out.push_str(&format!("\n**Degraded:** {}\n", self.degraded.join("; ")));
        }
        if self.uncommitted {
            out.push_str(&format!(
                "\n_The reviewed {} is uncommitted work: this verdict covers the reviewed state, not `{pin}`._\n",
                self.mode.artifact_noun()
            ));
        } else if let (Some(head), Some(local)) = (pinned, self.commit)
            && head != local
        {
            out.push_str(&format!(
                "\n_Local HEAD `{}` differs from the PR head `{}`: this verdict covers the reviewed state, not \
                     necessarily the PR head._\n",
                short(local),
                short(head)
            ));
        }
        out.push_str("\n### Fixed in-loop\n");
        if self.fixed.is_empty() {
            out.push_str("- none\n");
        }
        for f in self.fixed {
            let fix = f.fix.as_deref().unwrap_or("fixed");
            out.push_str(&format!("- **[load-bearing]** `{}` — {} → {fix}\n", f.location(), f.claim));
        }
        out.push_str("\n### Surfaced, not fixed\n");
        if self.unresolved.is_empty() && self.speculative.is_empty() {
            out.push_str("- none\n");
        }
        for f in self.unresolved.iter().chain(self.speculative) {
            let tag = if f.load_bearing { ", load-bearing" } else { "" };
            out.push_str(&format!("- `{}` — {} ({}{tag})\n", f.location(), f.claim, f.severity.as_str()));
        }
        out.push_str("\n_Re-run after new commits to refresh._\n");
        out
    }

    fn independence_text(&self) -> String {
        match self.independence {
            Independence::Independent => "independent".into(),
            Independence::SelfAuthored(_) => "self-authored (SELF-REVIEW, not independent)".into(),
            Independence::Unverified(why) => format!("unverified — {why}"),
        }
    }

    fn banner(&self) -> String {
        let (reason, files) = match self.independence {
            Independence::SelfAuthored(files) => (self.ack.unwrap_or("authoring session").to_string(), files.clone()),
            Independence::Unverified(why) => {
                (self.ack.map_or_else(|| format!("independence unverified: {why}"), str::to_string), Vec::new())
            }
            Independence::Independent => (String::new(), Vec::new()),
        };
        format!(
            "> ⚠️ **SELF-REVIEW — NOT INDEPENDENT.** This review ran in the session that wrote the code, so it\n\
             > carries the same blind spots that produced any defect in it. Discount it accordingly.\n\
             > Reason given: {reason}. Files this session edited in this diff: {} ({}).\n\
             > A fresh session must still review this before it lands.\n\n",
            files.len(),
            if files.is_empty() { "none measured".to_string() } else { files.join(", ") }
        )
    }
}

/// Posts the verdict on the branch's open PR through `review-trail`. Returns what happened, for
/// the decision line; never fails the run (the verdict is also in the decision and the archive).
///
/// Protocol: `POST /pr` `{"branch"}` → 200 `{"number", "state", "headRefOid", "lastCommentMarked"}`
/// (404: no PR); then `POST /comment` `{"number", "body", "editLast"}` → 2xx.
pub fn post(host: &impl Host, verdict: &Verdict<'_>) -> Value {
    if !host.has_endpoint(TRAIL_ENDPOINT) {
        return json!({"skipped": format!("no `{TRAIL_ENDPOINT}` endpoint")});
    }
    let request = |path: &str, body: Value| HttpRequest {
        endpoint: TRAIL_ENDPOINT.into(),
        path: path.into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        timeout_ms: TRAIL_TIMEOUT_MS,
    };
    let pr = match host.http_post(&request("/pr", json!({"branch": verdict.branch}))) {
        Ok(r) if r.status == 404 => return json!({"skipped": "no open PR for the branch"}),
        Ok(r) if (200..300).contains(&r.status) => match serde_json::from_slice::<Value>(&r.body) {
            Ok(v) => v,
            Err(_) => return trail_error(host, "the PR lookup answered with malformed JSON"),
        },
        Ok(r) => return trail_error(host, &format!("the PR lookup answered HTTP {}", r.status)),
        Err(err) => return trail_error(host, &format!("the PR lookup failed: {err}")),
    };
    let Some(number) = pr["number"].as_u64() else { return json!({"skipped": "no open PR for the branch"}) };
    if pr["state"].as_str().is_some_and(|s| !s.eq_ignore_ascii_case("open")) {
        return json!({"skipped": format!("PR #{number} is not open")});
    }
    let head = pr["headRefOid"].as_str().filter(|h| !h.is_empty());
    let edit_last = pr["lastCommentMarked"].as_bool().unwrap_or(false);
    let body = verdict.markdown(head);
    // Findings quote the artifact: a credential in the diff must not ride the verdict onto a PR.
    // Quoted credentials were redacted where the artifact and the replies came in; their marks
    // still keep the verdict off the PR, as the credentials themselves would.
    let secrets = crate::library::guards::scan::scan_secrets(&body);
    let marked = redaction_marks(&body);
    if !secrets.is_empty() || !marked.is_empty() {
        let mut rules: Vec<&str> = secrets.iter().map(|f| f.rule).chain(marked.iter().copied()).collect();
        rules.sort_unstable();
        rules.dedup();
        let count = secrets.len() + marked.len();
        let message = format!("the verdict quotes {count} credential(s) ({}): not posted", rules.join(", "));
        host.log(Level::Warn, &format!("review-loop trail: {message}"));
        return json!({"withheld": message, "pr": number});
    }
    let sent = json!({"number": number, "body": body, "editLast": edit_last});
    match host.http_post(&request("/comment", sent)) {
        Ok(r) if (200..300).contains(&r.status) => {
            json!({"posted": true, "pr": number, "edited": edit_last, "pinned": head})
        }
        Ok(r) => trail_error(host, &format!("posting the verdict answered HTTP {}", r.status)),
        Err(err) => trail_error(host, &format!("posting the verdict failed: {err}")),
    }
}

/// The rules named by the scanner's redaction marks (`[redacted: RULE]`) in `text`.
fn redaction_marks(text: &str) -> Vec<&str> {
    text.match_indices("[redacted: ")
        .filter_map(|(at, mark)| {
            let rest = &text[at + mark.len()..];
            let rule = &rest[..rest.find(']')?];
            (!rule.is_empty() && rule.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
                .then_some(rule)
        })
        .collect()
}

/// A failure of the trail, logged and returned: the host's transport words redacted first.
fn trail_error(host: &impl Host, message: &str) -> Value {
    let message = crate::library::guards::scan::redact_secrets(message).unwrap_or_else(|| message.to_string());
    host.log(Level::Warn, &format!("review-loop trail: {message}"));
    json!({"error": message})
}
