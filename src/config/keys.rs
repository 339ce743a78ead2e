//! Defines the table of every key the plugin understands: its dotted path, type, bounds,
//! default and doc. Parsing, the effective-config report and the README reference all read it.

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Choice(&'static [&'static str]),
    /// A non-empty identifier-like string (endpoint names): 1–64 of `a-z A-Z 0-9 - _ .`.
    Name,
    /// Free text of at most this many characters, no control characters (may be empty).
    Text(usize),
    /// A path the host appends to a named endpoint's base URL: `/`-rooted, no `..`, `#`, `@`.
    HttpPath,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'static str),
}

pub struct KeySpec {
    /// Dotted path, e.g. `review.turnInterval`.
    pub path: &'static str,
    pub kind: Kind,
    pub default: DefaultValue,
    pub doc: &'static str,
}

/// Every key the plugin understands. Defaults follow seeds 000 and 002.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        path: "writeApproval",
        kind: Kind::Bool,
        default: DefaultValue::Bool(false),
        doc: "Stage every skill write under pending/ for an operator to approve instead of writing it.",
    },
    KeySpec {
        path: "pendingTtlDays",
        kind: Kind::Int { min: 1, max: 365 },
        default: DefaultValue::Int(14),
        doc: "Staged writes older than this are pruned at init.",
    },
    KeySpec {
        path: "historyVersions",
        kind: Kind::Int { min: 0, max: 1000 },
        default: DefaultValue::Int(20),
        doc: "Earlier versions kept per skill in history/ (0 records no new ones).",
    },
    KeySpec {
        path: "team.library",
        kind: Kind::Text(100),
        default: DefaultValue::Str(""),
        doc: "This machine's name in a team library: stamped on the skills it creates (`metadata.library`). Hosts with a `git` block fill it in.",
    },
    KeySpec {
        path: "team.othersSkills",
        kind: Kind::Choice(&["patch", "stage"]),
        default: DefaultValue::Str("patch"),
        doc: "Changes to a skill another library created: land directly, or are staged for this machine's operator.",
    },
    KeySpec {
        path: "duplicateThreshold",
        kind: Kind::Float { min: 0.1, max: 1.0 },
        default: DefaultValue::Float(0.6),
        doc: "Similarity (0–1) of name and description above which `create` is refused as a duplicate.",
    },
    KeySpec {
        path: "limits.skillBytes",
        kind: Kind::Int { min: 1024, max: 1_048_576 },
        default: DefaultValue::Int(262_144),
        doc: "Largest SKILL.md the plugin writes.",
    },
    KeySpec {
        path: "limits.fileBytes",
        kind: Kind::Int { min: 1024, max: 16_777_216 },
        default: DefaultValue::Int(1_048_576),
        doc: "Largest supporting file (references/, templates/, scripts/, assets/) the plugin writes.",
    },
    KeySpec {
        path: "review.enabled",
        kind: Kind::Bool,
        default: DefaultValue::Bool(true),
        doc: "Run background reviews; `/skills review on|off` overrides it at run time (review.json).",
    },
    KeySpec {
        path: "review.turnInterval",
        kind: Kind::Int { min: 1, max: 10_000 },
        default: DefaultValue::Int(10),
        doc: "A review is due after this many completed top-level turns…",
    },
    KeySpec {
        path: "review.toolCallThreshold",
        kind: Kind::Int { min: 1, max: 100_000 },
        default: DefaultValue::Int(15),
        doc: "…or after this many tool calls since the last review.",
    },
    KeySpec {
        path: "review.cooldownMinutes",
        kind: Kind::Int { min: 0, max: 10_080 },
        default: DefaultValue::Int(20),
        doc: "Least time between two reviews of a session.",
    },
    KeySpec {
        path: "review.maxPerSession",
        kind: Kind::Int { min: 0, max: 1_000 },
        default: DefaultValue::Int(8),
        doc: "Review budget per session (0: never review).",
    },
    KeySpec {
        path: "review.timeoutMinutes",
        kind: Kind::Int { min: 1, max: 240 },
        default: DefaultValue::Int(5),
        doc: "A review child still running after this long is aborted.",
    },
    KeySpec {
        path: "review.gate",
        kind: Kind::Choice(&["counters", "jev", "openai"]),
        default: DefaultValue::Str("counters"),
        doc: "`counters`: the counters alone decide. `jev`: ask the host's gate endpoint whether a due review is worth it. `openai`: ask an OpenAI-compatible chat model the same question.",
    },
    KeySpec {
        path: "review.jev.endpoint",
        kind: Kind::Name,
        default: DefaultValue::Str("gate"),
        doc: "Name of the host HTTP endpoint the jev gate calls (the host owns its URL and credential).",
    },
    KeySpec {
        path: "review.jev.cooldownMinutes",
        kind: Kind::Int { min: 0, max: 1_440 },
        default: DefaultValue::Int(5),
        doc: "At most one gate call per session in this window.",
    },
    KeySpec {
        path: "review.jev.timeoutMs",
        kind: Kind::Int { min: 100, max: 60_000 },
        default: DefaultValue::Int(2_000),
        doc: "Deadline of one gate attempt.",
    },
    KeySpec {
        path: "review.jev.confidentNo",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(0.75),
        doc: "A `no` at or above this confidence skips the review; 1 keeps the gate observing only.",
    },
    KeySpec {
        path: "review.openai.endpoint",
        kind: Kind::Name,
        default: DefaultValue::Str("llm"),
        doc: "Name of the host HTTP endpoint the openai gate calls (the host owns its URL and API key).",
    },
    KeySpec {
        path: "review.openai.model",
        kind: Kind::Text(200),
        default: DefaultValue::Str("gpt-4o-mini"),
        doc: "The chat model asked (the request's `model`; must not be empty).",
    },
    KeySpec {
        path: "review.openai.path",
        kind: Kind::HttpPath,
        default: DefaultValue::Str("/chat/completions"),
        doc: "Path posted to, appended by the host to the endpoint's base URL.",
    },
    KeySpec {
        path: "review.openai.cooldownMinutes",
        kind: Kind::Int { min: 0, max: 1_440 },
        default: DefaultValue::Int(5),
        doc: "At most one gate call per session in this window.",
    },
    KeySpec {
        path: "review.openai.timeoutMs",
        kind: Kind::Int { min: 100, max: 60_000 },
        default: DefaultValue::Int(2_000),
        doc: "Deadline of one gate attempt.",
    },
    KeySpec {
        path: "review.openai.confidentNo",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(0.75),
        doc: "A `no` at or above this confidence skips the review; 1 keeps the gate observing only.",
    },
    KeySpec {
        path: "review.openai.maxTokens",
        kind: Kind::Int { min: 16, max: 4_096 },
        default: DefaultValue::Int(100),
        doc: "The completion's `max_tokens`: the answer is one small JSON object.",
    },
    KeySpec {
        path: "reviewLoop.provider",
        kind: Kind::Name,
        default: DefaultValue::Str("fresh"),
        doc: "Subagent provider for review-loop lens reviewers and falsifiers: a fresh context, never a fork of the authoring session.",
    },
    KeySpec {
        path: "reviewLoop.reviewerTimeoutMinutes",
        kind: Kind::Int { min: 1, max: 120 },
        default: DefaultValue::Int(10),
        doc: "Deadline the host gives each review-loop lens reviewer.",
    },
    KeySpec {
        path: "reviewLoop.falsifierTimeoutMinutes",
        kind: Kind::Int { min: 1, max: 60 },
        default: DefaultValue::Int(2),
        doc: "Deadline the host gives each review-loop falsifier.",
    },
    KeySpec {
        path: "shadow.softLimitChars",
        kind: Kind::Int { min: 0, max: 1_000_000_000 },
        default: DefaultValue::Int(0),
        doc: "Reviewer characters per root after which later work goes to shadow.frugalModel (0: off).",
    },
    KeySpec {
        path: "shadow.hardLimitChars",
        kind: Kind::Int { min: 0, max: 1_000_000_000 },
        default: DefaultValue::Int(0),
        doc: "Reviewer characters per root after which no new review work is admitted (0: off).",
    },
    KeySpec {
        path: "shadow.frugalModel",
        kind: Kind::Text(200),
        default: DefaultValue::Str(""),
        doc: "The model later work is routed to past the soft limit (required with a soft limit).",
    },
    KeySpec {
        path: "shadow.staleReportDecay",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(0.0),
        doc: "A repeated envelope multiplies later activation probability by 1 - decay (0: off).",
    },
    KeySpec {
        path: "shadow.cooldownMinutes",
        kind: Kind::Int { min: 0, max: 1_440 },
        default: DefaultValue::Int(10),
        doc: "Cooldown a stagnation detection installs when it does not escalate.",
    },
    KeySpec {
        path: "shadow.escalation",
        kind: Kind::Bool,
        default: DefaultValue::Bool(false),
        doc: "On stagnation, reserve the next higher reasoning effort once instead of cooling down.",
    },
    KeySpec {
        path: "shadow.reasoningEffortLadder",
        kind: Kind::Text(200),
        default: DefaultValue::Str("low medium high"),
        doc: "Reasoning efforts from lowest to highest, space-separated.",
    },
    KeySpec {
        path: "shadow.minNoveltyShare",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(0.34),
        doc: "Below this share of novel envelopes in the window, reviews count as stagnating.",
    },
    KeySpec {
        path: "shadow.valueLoopWindowTurns",
        kind: Kind::Int { min: 1, max: 100 },
        default: DefaultValue::Int(3),
        doc: "Completed root turns an accepted challenge is watched for adoption.",
    },
    KeySpec {
        path: "curator.enabled",
        kind: Kind::Bool,
        default: DefaultValue::Bool(true),
        doc: "Run the mechanical stale/archive lifecycle over user-scope skills this plugin authored.",
    },
    KeySpec {
        path: "curator.staleDays",
        kind: Kind::Int { min: 1, max: 3_650 },
        default: DefaultValue::Int(30),
        doc: "An active skill unused this long becomes stale.",
    },
    KeySpec {
        path: "curator.archiveDays",
        kind: Kind::Int { min: 1, max: 3_650 },
        default: DefaultValue::Int(90),
        doc: "A stale skill unused this long is archived (must exceed staleDays).",
    },
    KeySpec {
        path: "curator.graceDays",
        kind: Kind::Int { min: 0, max: 3_650 },
        default: DefaultValue::Int(14),
        doc: "A skill never used since creation is left alone this long after it was created.",
    },
    KeySpec {
        path: "curator.delaySeconds",
        kind: Kind::Int { min: 0, max: 86_400 },
        default: DefaultValue::Int(30),
        doc: "First curator pass this long after init (on tick).",
    },
    KeySpec {
        path: "curator.intervalHours",
        kind: Kind::Int { min: 1, max: 8_760 },
        default: DefaultValue::Int(24),
        doc: "Time between curator passes.",
    },
];
