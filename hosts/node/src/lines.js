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
