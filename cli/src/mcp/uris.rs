//! How the server names skills and their files as MCP resources: `skill://<name>/SKILL.md` and
//! `skill://<name>/<path>` (SEP-2640: the segment before `SKILL.md` is the skill's name), plus
//! the well-known `skill://index.json`. A name is unique after shadowing, so it is the whole
//! address; paths are percent-encoded segment by segment.

pub const SCHEME: &str = "skill://";
pub const INDEX: &str = "skill://index.json";
pub const SKILL_MD: &str = "SKILL.md";

pub fn skill(name: &str) -> String {
    format!("{SCHEME}{name}/{SKILL_MD}")
}

pub fn file(name: &str, path: &str) -> String {
    let encoded: Vec<String> = path.split('/').map(encode).collect();
    format!("{SCHEME}{name}/{}", encoded.join("/"))
}

/// `(name, path)` of a skill file URI, or `None` for anything this server did not hand out
/// (a query, a fragment, an empty or dot segment, bad escapes).
pub fn parse(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.contains(['?', '#']) {
        return None;
    }
    let (name, path) = rest.split_once('/')?;
    let segments: Option<Vec<String>> = path.split('/').map(decode).collect();
    let segments = segments?;
    if name.is_empty() || segments.iter().any(|s| s.is_empty() || s == "." || s == ".." || s.contains('/')) {
        return None;
    }
    Some((decode(name)?, segments.join("/")))
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The MIME type clients expect for a file, by extension; `None` when unknown.
pub fn mime_type(path: &str) -> Option<&'static str> {
    let extension = path.rsplit('/').next()?.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "sh" => "application/x-sh",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// Whether a file of this type is sent as text (when it is also UTF-8 without NUL bytes).
pub fn textual(mime: Option<&str>) -> bool {
    mime.is_some_and(|m| {
        m.starts_with("text/")
            || matches!(
                m,
                "application/json" | "application/xml" | "application/yaml" | "application/toml" | "application/x-sh"
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip_and_foreign_ones_are_refused() {
        assert_eq!(skill("pdf-tools"), "skill://pdf-tools/SKILL.md");
        let uri = file("pdf-tools", "references/a b#1?.md");
        assert_eq!(uri, "skill://pdf-tools/references/a%20b%231%3F.md");
        assert_eq!(parse(&uri), Some(("pdf-tools".into(), "references/a b#1?.md".into())));
        assert_eq!(parse("skill://pdf-tools/SKILL.md"), Some(("pdf-tools".into(), "SKILL.md".into())));
        for bad in [
            "file:///etc/passwd",
            "skill://pdf-tools",
            "skill://pdf-tools/",
            "skill://pdf-tools/../other/SKILL.md",
            "skill://pdf-tools/a%2Fb",
            "skill://pdf-tools/SKILL.md?x=1",
            "skill://pdf-tools/SKILL.md#top",
            "skill://pdf-tools/%zz",
            "skill:///SKILL.md",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
