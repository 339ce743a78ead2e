// Decision lines the host writes itself, in the canonical shape host-test/src/lines.rs uses,
// so both hosts print the same bytes.
function isJson(text) {
  try { JSON.parse(text); return true; } catch { return false; }
}

export function toolLine(session, agent, tool, ok, result) {
  const raw = isJson(result) ? result : JSON.stringify(result);
  return `{"kind":"tool","session":${JSON.stringify(session)},"agent":${JSON.stringify(agent)},"tool":${JSON.stringify(tool)},"ok":${ok},"result":${raw}}`;
}

export function commandLine(session, text, ok, output) {
  return `{"kind":"command","session":${JSON.stringify(session)},"text":${JSON.stringify(text)},"ok":${ok},"output":${JSON.stringify(output)}}`;
}

/** `review-loop.begin` refused the request: `{"kind":"review-loop","session":…,"refused":RAW}`. */
export function reviewLoopRefusedLine(session, refusal) {
  const raw = isJson(refusal) ? refusal : JSON.stringify(refusal);
  return `{"kind":"review-loop","session":${JSON.stringify(session)},"refused":${raw}}`;
}

// Characters a terminal obeys or that hide text from a person, as host-test/src/text.rs judges
// them: control characters but tab and newline, and crates/scan/src/hidden.rs's marks (zero-width,
// bidi, separators, soft hyphen, tag characters; the last as their UTF-16 surrogate pairs).
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]|\udb40[\udc00-\udc7f]/g;

/**
 * A JSON line as the Rust CLI prints it (`visible_json`): each hidden character written as a JSON
 * escape (`\u202e`), so a parser reads the same value while a terminal obeys nothing.
 * JSON.stringify escapes only C0 controls; DEL, C1 controls and bidi marks pass through it raw.
 */
export function visibleJson(json) {
  return json.replace(HIDDEN, (c) => Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''));
}
