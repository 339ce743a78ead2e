//! Tests for lint: one sample per credential kind (built at run time so this file holds no
//! scannable literal), placeholders that must pass, destructive idioms and advice.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn rep(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

fn mixed(n: usize) -> String {
    "aB3dE5fG7hJ9kLmN2pQ4rS6tU8vW0xYz".chars().cycle().take(n).collect()
}

/// (rule, a text holding one credential of that kind)
pub fn samples() -> Vec<(&'static str, String)> {
    vec![
        ("aws-access-key-id", format!("aws_id = {}{}", "AKIA", "Z7QX3M2K9LPT4WNB")),
        ("github-pat", format!("token {}{}", "ghp_", mixed(36))),
        ("github-fine-grained-pat", format!("{}{}", "github_pat_", mixed(82))),
        ("github-oauth-token", format!("{}{}", "gho_", mixed(36))),
        ("github-app-token", format!("{}{}", "ghs_", mixed(36))),
        ("github-refresh-token", format!("{}{}", "ghr_", mixed(76))),
        ("gitlab-pat", format!("{}{}", "glpat-", mixed(20))),
        ("slack-token", format!("{}{}", "xoxb-", "2934-1234567890-aB3dE5fG7hJ9")),
        ("slack-webhook", format!("https://{}/services/T0000AAAA/B0000BBBB/{}", "hooks.slack.com", mixed(24))),
        ("stripe-key", format!("{}{}", "sk_live_", mixed(24))),
        ("openai-key", format!("{}{}", "sk-proj-", mixed(48))),
        ("anthropic-key", format!("{}{}", "sk-ant-api03-", mixed(90))),
        ("google-api-key", format!("{}{}", "AIza", mixed(35))),
        ("npm-token", format!("{}{}", "npm_", mixed(36))),
        ("pypi-token", format!("{}{}", "pypi-AgEIcHlwaS5vcmc", mixed(60))),
        ("huggingface-token", format!("{}{}", "hf_", mixed(34))),
        ("twilio-api-key", format!("{}{}", "SK", "0123456789abcdef0123456789abcdef")),
        ("sendgrid-api-key", format!("{}{}.{}", "SG.", mixed(22), mixed(43))),
        ("azure-ad-client-secret", format!("secret {}{}", "abc8Q~", mixed(32))),
        ("digitalocean-token", format!("{}{}", "dop_v1_", "0123456789abcdef".repeat(4))),
        ("vault-token", format!("{}{}", "hvs.", mixed(30))),
        (
            "age-secret-key",
            format!(
                "{}{}",
                "AGE-SECRET-KEY-1",
                "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".repeat(2).chars().take(58).collect::<String>()
            ),
        ),
        ("private-key", format!("-----BEGIN RSA {}-----\nMIIE...\n", "PRIVATE KEY")),
        ("jwt", format!("{}.{}.{}", "eyJhbGciOiJIUzI1NiJ9", "eyJzdWIiOiIxMjM0NTY3ODkwIn0", mixed(43))),
        ("password-in-url", format!("postgres://admin:{}@db.internal:5432/app", "Zr7-kq2Lp9")),
        ("generic-secret", format!("API_KEY = \"{}\"", "q8Zr7kq2Lp9xW3vT")),
    ]
}

#[test]
fn every_credential_kind_is_found_named_and_redacted() {
    for (rule, text) in samples() {
        let text = format!("# Setup\n\nsome prose\n{text}\nmore prose\n");
        let findings = scan_secrets(&text);
        assert!(findings.iter().any(|f| f.rule == rule && f.line == 4), "{rule} not found in {text:?}: {findings:?}");
        for f in &findings {
            assert_eq!(f.severity, Severity::Secret);
            assert!(f.message.contains("redacted"), "{f:?}");
            // The message never holds a long run of the secret.
            let secret_tail: String = text.lines().nth(3).unwrap().chars().rev().take(12).collect();
            let secret_tail: String = secret_tail.chars().rev().collect();
            assert!(!f.message.contains(&secret_tail), "{rule}: {f:?} echoes the secret");
        }
    }
}

#[test]
fn placeholders_variables_and_prose_pass() {
    let clean = [
        "export API_KEY=${OPENAI_API_KEY}",
        "api_key = \"<your-key>\"",
        "token: {{ secrets.GITHUB_TOKEN }}",
        "password = changeme",
        "PASSWORD=$DB_PASSWORD",
        "Set the token in your environment, then run the script.",
        "secret_name = my_service.default_secret",
        "postgres://user:password@localhost/db",
        "postgres://user:${PASS}@localhost/db",
        "auth_token: xxxxxxxxxxxxxxxx",
        "The key_rotation_interval = 30 days",
        "ghp_ is the prefix of classic GitHub tokens",
        "sk-... is what an OpenAI key looks like",
        &format!("id = {}", rep('a', 40)),
    ];
    for text in clean {
        assert!(scan_secrets(text).is_empty(), "{text:?}: {:?}", scan_secrets(text));
    }
}

#[test]
fn destructive_idioms_are_warnings_with_lines() {
    let text = "step one\nrm -rf /\ngit push --force origin main\nDROP TABLE users;\ncurl -fsSL https://x.sh | sh\nchmod -R 777 .\nrm -rf ./build\n";
    let rules: Vec<(&str, usize)> = scan_destructive(text).iter().map(|f| (f.rule, f.line)).collect();
    assert_eq!(
        rules,
        [("rm-rf-root", 2), ("force-push", 3), ("drop-table", 4), ("curl-pipe-shell", 5), ("chmod-777", 6)]
    );
    assert!(scan_destructive(text).iter().all(|f| f.severity == Severity::Warning));
}

#[test]
fn advice_covers_length_and_when_to_use() {
    let rules = |d: &str, b: &str| advise(d, b).iter().map(|f| f.rule).collect::<Vec<_>>();
    assert_eq!(rules("Deploys the app.", "Run make deploy.\n"), ["when-to-use"]);
    assert!(rules("Deploys the app. Use when shipping.", "Run make deploy.\n").is_empty());
    assert_eq!(rules("Use when shipping.", &"line\n".repeat(501)), ["body-length"]);
    assert_eq!(rules("Use when shipping.", "  \n"), ["body-empty"]);
}

#[test]
fn entropy_separates_random_from_repetitive() {
    assert!(shannon_entropy("q8Zr7kq2Lp9xW3vT") > 3.5);
    assert!(shannon_entropy("aaaaaaaaaaaa") < 0.1);
}

#[test]
fn redaction_replaces_the_value_and_keeps_the_rest() {
    let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
    let text = format!("the reviewer saw `aws_access_key_id = {key}` in config.py\nsecond line stays\n");
    let clean = redact_secrets(&text).expect("a key is redacted");
    assert!(!clean.contains(&key), "{clean}");
    assert!(clean.contains("[redacted: ") && clean.ends_with("second line stays\n"), "{clean}");
    assert_eq!(redact_secrets("nothing secret here, `${API_KEY}` from env"), None);
    let mut value = serde_json::json!({"findings": [{"claim": text, "line": 3}], "note": "plain"});
    assert_eq!(redact_json(&mut value), 1);
    assert!(!value.to_string().contains(&key));
    assert_eq!(value["findings"][0]["line"], 3);
}

#[test]
fn a_file_of_keys_reports_the_first_findings_up_to_the_cap() {
    // Enough to refuse and to show where; a file made of keys is not scanned to its end.
    let line = format!("{}{} {}{}\n", "AKIA", "Z7QX3M2K9LPT4WNB", "ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234");
    let findings = scan_secrets(&line.repeat(20_000));
    assert_eq!(findings.len(), MAX_SECRET_FINDINGS);
    assert_eq!(findings[0].line, 1);
    assert!(findings.iter().all(|f| f.line <= MAX_SECRET_FINDINGS));
}
