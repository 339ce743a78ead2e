//! D5: reviewer independence. Provider prefixes and model markers map to vendor families;
//! the relationship between the author's and the reviewer's routes is `independent`,
//! `same_vendor`, `unverified` or `unavailable`. An unknown route never implies independence.

/// (marker, family): a route matches when its provider prefix or model name contains the marker.
const FAMILIES: &[(&str, &str)] = &[
    ("anthropic", "anthropic"),
    ("claude", "anthropic"),
    ("openai", "openai"),
    ("gpt-", "openai"),
    ("o1-", "openai"),
    ("o3-", "openai"),
    ("o4-", "openai"),
    ("google", "google"),
    ("gemini", "google"),
    ("vertex", "google"),
    ("mistral", "mistral"),
    ("codestral", "mistral"),
    ("meta-llama", "meta"),
    ("llama", "meta"),
    ("deepseek", "deepseek"),
    ("qwen", "alibaba"),
    ("grok", "xai"),
    ("xai", "xai"),
    ("cohere", "cohere"),
    ("command-r", "cohere"),
];

/// The vendor family of a route like `anthropic/claude-sonnet-4` or `openrouter/openai/gpt-4o`.
/// Aggregators (openrouter, bedrock, …) are skipped in favour of the model's own marker.
pub fn family(route: &str) -> Option<&'static str> {
    let lower = route.trim().to_ascii_lowercase();
    if lower.is_empty() {
        return None;
    }
    // The model part decides when the prefix is an aggregator.
    let segments: Vec<&str> = lower.split(['/', ':']).collect();
    for segment in segments.iter().rev() {
        if let Some((_, f)) = FAMILIES
            .iter()
            .find(|(m, _)| segment.starts_with(m) || segment.contains(&format!("{m}-")) || *segment == *m)
        {
            return Some(f);
        }
    }
    FAMILIES.iter().find(|(m, _)| lower.contains(m)).map(|(_, f)| *f)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relationship {
    Independent,
    SameVendor,
    Unverified,
    Unavailable,
}

impl Relationship {
    pub fn as_str(self) -> &'static str {
        match self {
            Relationship::Independent => "independent",
            Relationship::SameVendor => "same_vendor",
            Relationship::Unverified => "unverified",
            Relationship::Unavailable => "unavailable",
        }
    }
}

/// `None` for a route means the host did not say which model ran.
pub fn relationship(author: Option<&str>, reviewer: Option<&str>) -> Relationship {
    let (Some(author), Some(reviewer)) = (author, reviewer) else { return Relationship::Unavailable };
    match (family(author), family(reviewer)) {
        (Some(a), Some(r)) if a == r => Relationship::SameVendor,
        (Some(_), Some(_)) => Relationship::Independent,
        _ => Relationship::Unverified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn vendor_table() {
        let cases = [
            ("anthropic/claude-sonnet-4", Some("anthropic")),
            ("claude-3-5-haiku", Some("anthropic")),
            ("openai/gpt-4o", Some("openai")),
            ("openrouter/openai/gpt-4.1", Some("openai")),
            ("o3-mini", Some("openai")),
            ("google/gemini-2.5-pro", Some("google")),
            ("bedrock/meta-llama/llama-3-70b", Some("meta")),
            ("mistral/codestral-latest", Some("mistral")),
            ("deepseek-chat", Some("deepseek")),
            ("qwen2.5-coder", Some("alibaba")),
            ("xai/grok-2", Some("xai")),
            ("local/my-finetune", None),
            ("", None),
        ];
        for (route, expected) in cases {
            assert_eq!(family(route), expected, "{route}");
        }
    }

    #[test]
    fn relationships_never_assume_independence_for_unknown_routes() {
        assert_eq!(relationship(Some("anthropic/claude-opus"), Some("openai/gpt-4o")), Relationship::Independent);
        assert_eq!(relationship(Some("anthropic/claude-opus"), Some("claude-3-haiku")), Relationship::SameVendor);
        assert_eq!(relationship(Some("anthropic/claude-opus"), Some("local/mystery")), Relationship::Unverified);
        assert_eq!(relationship(Some("local/a"), Some("local/b")), Relationship::Unverified);
        assert_eq!(relationship(None, Some("openai/gpt-4o")), Relationship::Unavailable);
        assert_eq!(Relationship::SameVendor.as_str(), "same_vendor");
    }
}
