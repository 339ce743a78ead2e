//! Decision lines the host itself writes (a tool call it forwarded, a command it ran), in one
//! canonical shape built by concatenation, so any host (this one, hosts/node) produces the
//! same bytes: `{"kind":"tool","session":…,"agent":…,"tool":…,"ok":…,"result":RAW}` where RAW
//! is the plugin's JSON answer verbatim (or a JSON string when it is not JSON).

fn string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

/// The plugin's answer as JSON text: verbatim when it parses, else quoted.
fn raw(text: &str) -> String {
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() { text.to_string() } else { string(text) }
}

pub fn tool(session: &str, agent: &str, tool: &str, ok: bool, result: &str) -> String {
    format!(
        r#"{{"kind":"tool","session":{},"agent":{},"tool":{},"ok":{ok},"result":{}}}"#,
        string(session),
        string(agent),
        string(tool),
        raw(result)
    )
}

pub fn command(session: &str, text: &str, ok: bool, output: &str) -> String {
    format!(
        r#"{{"kind":"command","session":{},"text":{},"ok":{ok},"output":{}}}"#,
        string(session),
        string(text),
        string(output)
    )
}

/// `review-loop.begin` refused the request: `{"kind":"review-loop","session":…,"refused":RAW}`.
pub fn review_loop_refused(session: &str, refusal: &str) -> String {
    format!(r#"{{"kind":"review-loop","session":{},"refused":{}}}"#, string(session), raw(refusal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_canonical_json() {
        let line = tool("s1", "act-1", "skill_manage", true, r#"{"status":"written","path":"a/SKILL.md"}"#);
        assert_eq!(
            line,
            r#"{"kind":"tool","session":"s1","agent":"act-1","tool":"skill_manage","ok":true,"result":{"status":"written","path":"a/SKILL.md"}}"#
        );
        let quoted = tool("s1", "main", "skill", true, "loaded pdf");
        assert!(quoted.ends_with(r#""result":"loaded pdf"}"#));
        let cmd = command("s1", "/skills list", false, "line\n\"two\"");
        assert_eq!(
            cmd,
            r#"{"kind":"command","session":"s1","text":"/skills list","ok":false,"output":"line\n\"two\""}"#
        );
        for l in [line, quoted, cmd] {
            serde_json::from_str::<serde_json::Value>(&l).unwrap();
        }
    }
}
