//! A line of the client's, as the wire reads it: bounded (past the bound, only its start and
//! end are kept), and the id of one that cannot be read whole (not JSON, cut short past the
//! bound, nested too deep), found by a walk over its bytes so that its answer carries it.
//!
//! Owns: the line reading and the id recovery; `wire` reads with it, `message` answers with it.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// What of an over-long line is kept to find its id in: this much of its start, and as much of
/// its end (where the MCP TypeScript SDK writes the id, after the params).
const PREFIX: usize = 64 << 10;

/// A line of the client's, or what is left of one past the bound: its first and last `PREFIX`
/// bytes (the two overlap on a line shorter than twice that).
pub(super) enum Line {
    Whole(Vec<u8>),
    TooLong { head: Vec<u8>, tail: Vec<u8> },
}

/// The next line, without its newline; at most `max` bytes are kept (past that, the first and
/// last `PREFIX` bytes, and the rest of the line is skipped). `None` at the end of the input.
pub(super) async fn next_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>, max: usize) -> Option<Line> {
    let mut line = Vec::new();
    let mut tail = Vec::new();
    let mut too_long = false;
    let done = |line: Vec<u8>, mut tail: Vec<u8>, too_long: bool| {
        if !too_long {
            return Line::Whole(line);
        }
        tail.drain(..tail.len().saturating_sub(PREFIX));
        Line::TooLong { head: line, tail }
    };
    loop {
        let chunk = input.fill_buf().await.ok()?;
        if chunk.is_empty() {
            return (!line.is_empty() || too_long).then(|| done(line, tail, too_long));
        }
        let (take, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !too_long && line.len() + take > max {
            too_long = true;
            tail.extend_from_slice(&line[line.len().saturating_sub(PREFIX)..]);
            line.truncate(PREFIX);
        }
        let room = if too_long { PREFIX.saturating_sub(line.len()) } else { take };
        line.extend_from_slice(&chunk[..take.min(room)]);
        if too_long {
            // The last `PREFIX` bytes, in at most twice that: memory stays bounded.
            tail.extend_from_slice(&chunk[take.saturating_sub(PREFIX)..take]);
            if tail.len() > 2 * PREFIX {
                tail.drain(..tail.len() - PREFIX);
            }
        }
        input.consume(take + usize::from(ends));
        if ends {
            return Some(done(line, tail, too_long));
        }
    }
}

/// The top-level `"id"` of a line that does not parse (broken, cut short or too deep): a number
/// or a string at depth one, read by a walk that skips strings and counts brackets.
pub(super) fn id_in(bytes: &[u8]) -> Option<Value> {
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(bytes, i)?;
                if depth == 1 && &bytes[i..end] == b"\"id\"" {
                    // A key is followed by its colon; an `"id"` that is a value is not.
                    if let Some(at) = after_colon(bytes, end) {
                        return scalar_at(bytes, at);
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The id of a line past the bound, of which `head` is the start and `tail` the end: the
/// top-level `"id"` found from the start (`id_in`), else from the end (`id_at_end`: the MCP
/// TypeScript SDK writes the id after the params). Null when the two disagree (a key given
/// twice), or when the id is in neither (in the middle of the line: the rest is not kept).
pub(super) fn id_of_too_long(head: &[u8], tail: &[u8]) -> Option<Value> {
    match (id_in(head), id_at_end(tail)) {
        (Some(first), Some(last)) if first != last => None,
        (first, last) => first.or(last),
    }
}

/// Where the value after `"key"` (ending at `end`) starts: past blanks, a colon and blanks.
fn after_colon(bytes: &[u8], end: usize) -> Option<usize> {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let colon = end + bytes.get(end..)?.iter().take_while(|b| blank(b)).count();
    (bytes.get(colon) == Some(&b':')).then(|| colon + 1 + bytes[colon + 1..].iter().take_while(|b| blank(b)).count())
}

/// The top-level `"id"` of the end of a line (its start cut off) that closes an object: a walk
/// back from the closing `}` that skips strings and counts brackets, taking only a key at depth
/// one. None when the walk cannot tell (the line does not end with `}`, a string's escapes run
/// into the cut) or reaches the cut or the object's start without finding one.
fn id_at_end(bytes: &[u8]) -> Option<Value> {
    let last = bytes.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if bytes[last] != b'}' {
        return None;
    }
    let mut depth = 1usize;
    let mut i = last;
    while i > 0 {
        i -= 1;
        match bytes[i] {
            b'}' | b']' => depth += 1,
            b'{' | b'[' => {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
            }
            b'"' => {
                // Outside a string, a quote closes one (an escaped one here is no JSON).
                if escaped(bytes, i)? {
                    return None;
                }
                let open = string_start(bytes, i)?;
                if depth == 1
                    && &bytes[open..=i] == b"\"id\""
                    && let Some(at) = after_colon(bytes, i + 1)
                {
                    return scalar_at(bytes, at);
                }
                i = open;
            }
            _ => {}
        }
    }
    None
}

/// Whether the quote at `at` is escaped (an odd run of backslashes before it); None when the
/// run reaches the start of `bytes`, so its length is unknown.
fn escaped(bytes: &[u8], at: usize) -> Option<bool> {
    let run = bytes[..at].iter().rev().take_while(|&&b| b == b'\\').count();
    (run < at).then_some(run % 2 == 1)
}

/// Where the string whose closing quote is at `close` opens (its opening quote); None when it
/// opens before the start of `bytes`, or cannot be told.
fn string_start(bytes: &[u8], close: usize) -> Option<usize> {
    let mut j = close;
    while j > 0 {
        j -= 1;
        if bytes[j] == b'"' && !escaped(bytes, j)? {
            return Some(j);
        }
    }
    None
}

/// Where the string opening at `at` ends (past its closing quote).
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// A JSON number or string starting at `at` (an id is one or the other).
fn scalar_at(bytes: &[u8], at: usize) -> Option<Value> {
    let end = match bytes.get(at)? {
        b'"' => string_end(bytes, at)?,
        b'-' | b'0'..=b'9' => {
            at + bytes[at..].iter().take_while(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')).count()
        }
        _ => return None,
    };
    let value: Value = serde_json::from_slice(bytes.get(at..end)?).ok()?;
    (value.is_number() || value.is_string()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_top_level_id_of_a_broken_line() {
        assert_eq!(id_in(br#"{"jsonrpc":"2.0","id":2,"method":"x","params":{"#), Some(json!(2)));
        assert_eq!(id_in(br#"{"params":{"id":5,"s":"\"id\":7"},"id":"a\"b"}"#), Some(json!("a\"b")));
        assert_eq!(id_in(br#"{"method":"x","params":{"id":5}}"#), None, "an id inside params is not the request's");
        assert_eq!(id_in(b"{\"id\": -3, \xff}"), Some(json!(-3)));
        assert_eq!(id_in(br#"{"id":null}"#), None);
        assert_eq!(id_in(b"not json at all"), None);
    }

    #[test]
    fn the_top_level_id_at_the_end_of_a_cut_line() {
        // The MCP TypeScript SDK's order: the id after the params.
        assert_eq!(id_at_end(br#"aaaa"},"jsonrpc":"2.0","id":42}"#), Some(json!(42)));
        assert_eq!(id_at_end(b"aa\"}, \"id\" : \"x\\\"y\" }\r\n"), Some(json!("x\"y")));
        assert_eq!(id_at_end(br#"a"},"id":1.5}"#), Some(json!(1.5)));
        // Not the request's: in a string, in an object within, a value, or past a cut string.
        assert_eq!(id_at_end(br#"a","s":"\"id\":7"}}"#), None);
        assert_eq!(id_at_end(br#"a","more":{"id":7}}"#), None);
        assert_eq!(id_at_end(br#"a","more":{"id":7},"method":"id"}"#), None);
        assert_eq!(id_at_end(br#"id":7,"s":"a"}"#), None, "the key is cut: the walk cannot tell");
        assert_eq!(id_at_end(br#"\"id\":7}"#), None, "escapes running into the cut");
        assert_eq!(id_at_end(br#"{"id":7}"#), Some(json!(7)), "a whole object is read from its end too");
        assert_eq!(id_at_end(br#"{"a":7}"#), None);
        assert_eq!(id_at_end(br#"a"},"id":7]"#), None);
        assert_eq!(id_at_end(br#"a"},"id":null}"#), None);
        // The string holding `"id":7` is walked past; the id is the top-level one before it.
        assert_eq!(id_at_end(br#"a"},"id":3,"s":"\"id\":7\\"}"#), Some(json!(3)));
        // `id_in` no longer stops at an `"id"` that is a value.
        assert_eq!(id_in(br#"{"method":"id","id":4,"params":{"#), Some(json!(4)));
    }

    #[test]
    fn a_line_past_the_bound_keeps_its_start_and_end() {
        let run = |input: Vec<u8>, max: usize| {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(async {
                let mut reader = BufReader::with_capacity(1 << 16, &input[..]);
                let mut lines = Vec::new();
                while let Some(line) = next_line(&mut reader, max).await {
                    lines.push(line);
                }
                lines
            })
        };
        let big = "a".repeat(5 * PREFIX + 7);
        let first = format!(r#"{{"method":"m","params":{{"s":"{big}"}},"jsonrpc":"2.0","id":42}}"#);
        let middle = format!(r#"{{"method":"m","params":{{"s":"{big}"}},"id":5,"p":{{"s":"{big}"}}}}"#);
        let lines = run(format!("{first}\n{middle}\n{{}}").into_bytes(), 2 * PREFIX);
        let [Line::TooLong { head, tail }, Line::TooLong { head: head2, tail: tail2 }, Line::Whole(last)] = &lines[..]
        else {
            panic!("two lines past the bound, then a whole one")
        };
        assert_eq!((head.len(), tail.len()), (PREFIX, PREFIX));
        assert_eq!(&head[..], &first.as_bytes()[..PREFIX]);
        assert_eq!(&tail[..], &first.as_bytes()[first.len() - PREFIX..]);
        assert_eq!(id_of_too_long(head, tail), Some(json!(42)));
        assert_eq!(id_of_too_long(head2, tail2), None, "an id in the middle of the line is not kept");
        assert_eq!(last, b"{}");
        // Ends at the end of the input, no newline.
        let lines = run(first.clone().into_bytes(), 2 * PREFIX);
        assert!(matches!(&lines[..], [Line::TooLong { head, tail }] if id_of_too_long(head, tail) == Some(json!(42))));
        // A key given twice, differently: null.
        assert_eq!(id_of_too_long(br#"{"id":1,"params":{"#, br#""},"id":2}"#), None);
        assert_eq!(id_of_too_long(br#"{"id":1,"params":{"#, br#""},"id":1}"#), Some(json!(1)));
    }
}
