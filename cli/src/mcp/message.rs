//! What the wire does with one message of the client's: read as rmcp reads it (its own
//! types), and passed on only when rmcp reads it whole; a request rmcp would refuse is answered
//! here with its id (-32700, -32600, -32602; -32601 for a method the revision it names removed),
//! a batch request by request, and a cancellation is told apart so the wire can keep it from rmcp.
//!
//! Two lifecycles meet here. A client on 2025-11-25 or older opens with `initialize`; one on
//! 2026-07-28 never does: it sends `server/discover` and requests that each carry their revision
//! and capabilities in `_meta` (SEP-2567). Until one of the two is chosen, rmcp answers requests
//! one by one (discover, a `_meta` refusal, an unknown version) and ends the session on any
//! notification or response: those are dropped here until then.
//!
//! Owns: the check of a message (`check`), the reading of a whole line into one (`read`), and the
//! JSON-RPC error lines the wire answers with.

use super::line::id_in;
use rmcp::model::{
    CancelledNotificationMethod, ClientJsonRpcMessage, ClientNotification, ClientRequest, ConstString, GetMeta,
    JsonRpcMessage, JsonRpcNotification, ProtocolVersion, RequestId,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// The methods rmcp reads into a type of their own. One whose params do not fit that type
/// reaches rmcp as a custom request, answered "method not found"; an `initialize` so read is not
/// the handshake, and rmcp took the good one after it for a second request out of turn.
const TYPED: &[&str] = {
    use rmcp::model::*;
    &[
        PingRequestMethod::VALUE,
        InitializeResultMethod::VALUE,
        DiscoverRequestMethod::VALUE,
        CompleteRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
        GetPromptRequestMethod::VALUE,
        ListPromptsRequestMethod::VALUE,
        ListResourcesRequestMethod::VALUE,
        ListResourceTemplatesRequestMethod::VALUE,
        ReadResourceRequestMethod::VALUE,
        SubscriptionsListenRequestMethod::VALUE,
        SubscribeRequestMethod::VALUE,
        UnsubscribeRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        GetTaskMethod::VALUE,
        UpdateTaskMethod::VALUE,
        CancelTaskMethod::VALUE,
        ListSkillsRequestMethod::VALUE,
        GetSkillRequestMethod::VALUE,
        ReadResourceDirectoryRequestMethod::VALUE,
    ]
};

/// Whether a lifecycle was chosen: a well-formed `initialize` was passed on, or a request that
/// opens a 2026-07-28 session (`opens_inline`). Before, rmcp ends the session on any
/// notification or response.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Handshake {
    Before,
    Done,
}

/// The revisions the server speaks (`Server::supported_protocol_versions`): every one rmcp
/// knows, so `initialize` on 2024-11-05 to 2025-11-25 works as before and 2026-07-28 beside it.
pub const SUPPORTED: &[ProtocolVersion] = ProtocolVersion::KNOWN_VERSIONS;

/// Methods 2026-07-28 removed (its changelog; SEP-2575): a request naming that revision (or a
/// later one) in `_meta` gets -32601 for them, before its params are judged.
const REMOVED_IN_2026: &[&str] =
    &["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// The revision a request's `_meta` names, as sent (`io.modelcontextprotocol/protocolVersion`).
fn named_revision(fields: &serde_json::Map<String, Value>) -> Option<&str> {
    fields.get("params")?.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()
}

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Whether rmcp, before any lifecycle, takes `request` as the first of a 2026-07-28 session
/// (service/server.rs `serve_server_with_ct_inner`): not ping, discover or initialize; its
/// `_meta` whole; its revision one the server speaks.
fn opens_inline(request: &ClientRequest) -> bool {
    let meta = request.get_meta();
    !matches!(
        request,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) | ClientRequest::InitializeRequest(_)
    ) && meta.missing_required_keys(&ProtocolVersion::V_2026_07_28).is_empty()
        && meta.protocol_version().is_some_and(|v| SUPPORTED.contains(&v))
}

/// What the wire does with one message of the client's.
#[derive(Debug, PartialEq)]
pub(super) enum Check {
    /// Answers it with this line (an error, or a batch's array of errors).
    Answer(Value),
    /// Nothing: a notification or response rmcp cannot take (or must not, before the handshake).
    Drop,
    /// Passes it on: a notification or response.
    Pass,
    /// Passes on a request, which rmcp answers with `id`.
    Request { id: RequestId, echo: Value, opens: bool, cancellable: bool, lasting: bool },
    /// The client cancels request `id`.
    Cancel(RequestId),
}

/// A JSON-RPC error line for request `id` (null when it could not be read).
pub(super) fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The id of an answer to a message whose `id` member is `id`: as sent when it is a string or
/// a number, else null (JSON-RPC 2.0).
pub(super) fn echo(id: Option<&Value>) -> Value {
    id.filter(|id| id.is_string() || id.is_number()).cloned().unwrap_or(Value::Null)
}

const BATCH: &str =
    "batches are not served (MCP 2025-06-18 removed JSON-RPC batching): send each message on a line of its own";

/// A batch refused: an error for each request in it (and each element that is no message), in
/// one array as JSON-RPC answers a batch; notifications and responses in it are not answered.
fn refuse_batch(items: &[Value]) -> Check {
    if items.is_empty() {
        return Check::Answer(error(Value::Null, -32600, "an empty batch holds no request"));
    }
    let answers: Vec<Value> = items
        .iter()
        .filter_map(|item| {
            let Some(fields) = item.as_object() else { return Some(error(Value::Null, -32600, BATCH)) };
            let method = fields.contains_key("method");
            let response = fields.contains_key("result") || fields.contains_key("error");
            let notification = method && !fields.contains_key("id");
            (!notification && (method || !response)).then(|| error(echo(fields.get("id")), -32600, BATCH))
        })
        .collect();
    if answers.is_empty() { Check::Drop } else { Check::Answer(Value::Array(answers)) }
}

/// What `message` is to rmcp, and so what the wire does with it.
pub(super) fn check(message: &Value, handshake: Handshake) -> Check {
    let fields = match message {
        Value::Object(fields) => fields,
        Value::Array(items) => return refuse_batch(items),
        _ => return Check::Answer(error(Value::Null, -32600, "a JSON-RPC message is an object")),
    };
    let has = |key: &str| fields.contains_key(key);
    let id = fields.get("id");
    let parsed = || ClientJsonRpcMessage::deserialize(message);
    if !has("method") {
        if has("result") || has("error") {
            // A response: never answered; passed on when rmcp can read it (and it ends no session).
            let pass = handshake == Handshake::Done && parsed().is_ok();
            return if pass { Check::Pass } else { Check::Drop };
        }
        return Check::Answer(error(echo(id), -32600, "a request has a `method`"));
    }
    let envelope = if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        Some("`jsonrpc` must be \"2.0\"")
    } else if !fields["method"].is_string() {
        Some("`method` must be a string")
    } else if has("result") || has("error") {
        Some("a request holds no `result` or `error`")
    } else if fields.get("params").is_some_and(|p| !(p.is_object() || p.is_array() || p.is_null())) {
        Some("`params` must be an object")
    } else {
        None
    };
    let Some(id) = id else {
        // A notification: never answered, unless it is no JSON-RPC message at all.
        if let Some(why) = envelope {
            return Check::Answer(error(Value::Null, -32600, why));
        }
        return match parsed() {
            Ok(_) if handshake == Handshake::Before => Check::Drop,
            Ok(JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ClientNotification::CancelledNotification(cancelled),
                ..
            })) => cancelled.params.request_id.map_or(Check::Drop, Check::Cancel),
            // rmcp is never told of a cancellation, not even one it reads as a custom notification.
            _ if fields["method"] == CancelledNotificationMethod::VALUE => Check::Drop,
            Ok(_) => Check::Pass,
            Err(_) => Check::Drop,
        };
    };
    if !(id.is_string() || id.is_number()) {
        return Check::Answer(error(Value::Null, -32600, "a request's id is a string or a number"));
    }
    let Ok(key) = RequestId::deserialize(id) else {
        let why = "the id is a string, or an integer of at most 2^63 - 1 (2^53 when written as a float)";
        return Check::Answer(error(id.clone(), -32600, why));
    };
    if let Some(why) = envelope {
        return Check::Answer(error(id.clone(), -32600, why));
    }
    if fields.get("params").is_some_and(Value::is_array) {
        return Check::Answer(error(id.clone(), -32602, "`params` must be an object: MCP has no positional params"));
    }
    // The method is known before its params are judged: one the named revision removed is
    // -32601 whatever its params hold.
    let method = fields["method"].as_str().unwrap_or_default();
    if let Some(revision) = named_revision(fields)
        && revision >= ProtocolVersion::NO_INITIALIZE.as_str()
        && REMOVED_IN_2026.contains(&method)
    {
        let why = format!("`{method}` is not a method of MCP {revision} (2026-07-28 removed it)");
        return Check::Answer(error(id.clone(), -32601, &why));
    }
    let request = match parsed() {
        Ok(JsonRpcMessage::Request(request)) => request.request,
        _ => return Check::Answer(error(id.clone(), -32602, "the params are not what the method takes")),
    };
    if let ClientRequest::CustomRequest(custom) = &request
        && TYPED.contains(&custom.method.as_str())
    {
        let why = format!("the params are not what `{}` takes", custom.method);
        return Check::Answer(error(id.clone(), -32602, &why));
    }
    let initialize = matches!(request, ClientRequest::InitializeRequest(_));
    // Before a lifecycle, every request goes to rmcp, which answers it (a 2026-07-28 request
    // missing its `_meta` gets -32602, never -32002: the revision forbids it) and waits on.
    let opens = initialize || (handshake == Handshake::Before && opens_inline(&request));
    let lasting = matches!(request, ClientRequest::SubscriptionsListenRequest(_));
    Check::Request { id: key, echo: id.clone(), opens, cancellable: !initialize, lasting }
}

/// The JSON of a whole line (`None` for a blank one), or the error that answers it.
pub(super) fn read(line: &[u8]) -> Result<Option<Value>, Value> {
    let bytes = line.strip_suffix(b"\r").unwrap_or(line);
    // A byte order mark is read past, as rmcp does (RFC 8259 lets a parser ignore it).
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match std::str::from_utf8(bytes).map(serde_json::from_str) {
        Ok(Ok(value)) => Ok(Some(value)),
        Ok(Err(_)) => {
            let why = "the request is not JSON (or nests deeper than 128 levels)";
            Err(error(echo(id_in(bytes).as_ref()), -32700, why))
        }
        Err(_) => Err(error(echo(id_in(bytes).as_ref()), -32700, "the request is not UTF-8")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(line: &str, handshake: Handshake) -> Check {
        check(&serde_json::from_str(line).unwrap(), handshake)
    }

    fn refused(line: &str) -> (Value, i64) {
        refused_in(line, Handshake::Done)
    }

    fn refused_in(line: &str, handshake: Handshake) -> (Value, i64) {
        match checked(line, handshake) {
            Check::Answer(answer) => (answer["id"].clone(), answer["error"]["code"].as_i64().unwrap()),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn what_rmcp_would_refuse_is_answered_here_with_the_id() {
        for (line, code) in [
            (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, -32600),
            (r#"{"id":3,"method":"ping"}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":7}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":"ping","error":{}}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"}"#, -32600),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":5}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"capabilities":{}}}"#, -32602),
        ] {
            assert_eq!(refused(line), (json!(3), code), "{line}");
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":false,"method":"ping","params":"x"}"#,
            r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
            r#"{"foo":"boo"}"#,
            r#"7"#,
        ] {
            assert_eq!(refused(line), (Value::Null, -32600), "{line}");
        }
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#), (json!(1.5), -32600));
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#).1, -32600);
        assert_eq!(refused(r#"{"jsonrpc":"2.0","id":9007199254740992.0,"method":"ping"}"#).1, -32600);
    }

    #[test]
    fn ids_are_compared_as_rmcp_compares_them() {
        let key =
            |id: &str| match checked(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#), Handshake::Done) {
                Check::Request { id, .. } => id,
                other => panic!("{id}: {other:?}"),
            };
        assert_eq!(key("7"), key("7.0"));
        assert_eq!(key("7"), key("7e0"));
        assert_eq!(key("0"), key("-0"));
        assert_eq!(key("-5"), key("-5.0"));
        assert_ne!(key("9"), key(r#""9""#));
        assert_ne!(key(r#""a""#), key(r#""a ""#));
        assert_eq!(key("9223372036854775807"), RequestId::Number(i64::MAX));
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn before_a_lifecycle_requests_reach_rmcp_and_notifications_do_not() {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",
            "capabilities":{},"clientInfo":{"name":"c","version":"0"}}}"#;
        assert!(matches!(checked(init, Handshake::Before), Check::Request { opens: true, cancellable: false, .. }));
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        assert!(matches!(checked(ping, Handshake::Before), Check::Request { opens: false, .. }));
        // Without `_meta`, rmcp answers -32602 and waits on: passed, opening nothing (never -32002).
        let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
        assert!(matches!(checked(list, Handshake::Before), Check::Request { opens: false, cancellable: true, .. }));
        assert!(matches!(checked(list, Handshake::Done), Check::Request { opens: false, cancellable: true, .. }));
        for other in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ] {
            assert_eq!(checked(other, Handshake::Before), Check::Drop, "{other}");
        }
    }

    #[test]
    fn a_whole_2026_request_opens_a_session_and_discover_does_not() {
        let opens = |line: String| match checked(&line, Handshake::Before) {
            Check::Request { opens, .. } => opens,
            other => panic!("{line}: {other:?}"),
        };
        assert!(opens(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#)));
        assert!(!opens(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#)));
        let unknown = META.replace("2026-07-28", "v999.0.0");
        assert!(!opens(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{unknown}}}}}"#)));
        let partial = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        assert!(!opens(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{partial}}}"#)));
        let listen = format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{{{META},"notifications":{{"resourcesListChanged":true}}}}}}"#
        );
        assert!(matches!(checked(&listen, Handshake::Done), Check::Request { lasting: true, .. }), "{listen}");
    }

    #[test]
    fn a_method_2026_removed_is_unknown_before_its_params_are_judged() {
        for method in REMOVED_IN_2026 {
            for handshake in [Handshake::Before, Handshake::Done] {
                let line = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{{META}}}}}"#);
                assert_eq!(refused_in(&line, handshake), (json!(5), -32601), "{line}");
            }
        }
        // Named with an older revision (or none), they are what they were.
        let ping = r#"{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#;
        assert!(matches!(checked(ping, Handshake::Done), Check::Request { .. }));
        let level = r#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{}}"#;
        assert_eq!(refused(level), (json!(7), -32602));
    }

    #[test]
    fn notifications_and_responses_are_never_answered() {
        let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}"#;
        assert_eq!(checked(cancel, Handshake::Done), Check::Cancel(RequestId::String("x".into())));
        for (line, expected) in [
            (r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","method":"notifications/anything","params":{"a":1}}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}"#, Check::Drop),
            (r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#, Check::Drop),
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"#, Check::Pass),
            (r#"{"jsonrpc":"2.0","id":[],"result":{}}"#, Check::Drop),
            (r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#, Check::Drop),
        ] {
            assert_eq!(checked(line, Handshake::Done), expected, "{line}");
        }
    }

    #[test]
    fn a_batch_is_refused_request_by_request() {
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},
            {"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":{},"method":"ping"},3]"#;
        let Check::Answer(Value::Array(answers)) = checked(batch, Handshake::Before) else { panic!() };
        let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
        assert_eq!(ids, [&json!(1), &Value::Null, &Value::Null]);
        assert!(answers.iter().all(|a| a["error"]["code"] == -32600));
        let notes = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
        assert_eq!(checked(notes, Handshake::Done), Check::Drop);
        assert!(matches!(checked("[]", Handshake::Done), Check::Answer(a) if a["id"].is_null()));
    }
}
