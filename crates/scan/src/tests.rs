//! Tests for the credential scanner: one sample per rule (built at run time from random-looking
//! parts, so this file holds no scannable literal), the documented values and references that
//! must pass, and the shapes that used to cost quadratic time (checked for their findings; their
//! speed is in `host-test/benches/scan.rs`).

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// `n` characters of a fixed but irregular mix of letters and digits.
pub fn mixed(n: usize) -> String {
    "aB3dE5fG7hJ9kLmN2pQ4rS6tU8vW0xYzq8Zr7kT2Lp9xW3v".chars().cycle().take(n).collect()
}

pub fn hex(n: usize) -> String {
    "3f9a0c7e51b2d84f6a1e9c03b7d52f8e4a6c1d9b0e7f3a25".chars().cycle().take(n).collect()
}

pub fn b64(s: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(3) {
        let n = chunk.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            out.push(if i <= chunk.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

pub fn b64url(s: &str) -> String {
    b64(s).trim_end_matches('=').replace('+', "-").replace('/', "_")
}

/// (rule, a text holding one credential of that kind)
pub fn samples() -> Vec<(&'static str, String)> {
    let pem_body = format!("{}\n{}\n", mixed(64), mixed(64));
    let private_pem = format!("-----BEGIN RSA {}-----\n{pem_body}-----END RSA PRIVATE KEY-----\n", "PRIVATE KEY");
    vec![
        ("aws-access-key-id", format!("aws_id = {}{}", "AKIA", "Z7QX3M2K9LPT4WNB")),
        ("github-pat", format!("token {}{}", "ghp_", mixed(36))),
        ("github-fine-grained-pat", format!("{}{}", "github_pat_", mixed(82))),
        ("github-oauth-token", format!("{}{}", "gho_", mixed(36))),
        ("github-app-token", format!("{}{}", "ghs_", mixed(36))),
        ("github-refresh-token", format!("{}{}", "ghr_", mixed(76))),
        ("gitlab-pat", format!("{}{}", "glpat-", mixed(20))),
        ("gitlab-token", format!("runner: {}{}", "glrt-", mixed(20))),
        ("slack-token", format!("{}{}", "xoxb-", "2934-5829301746-aB3dE5fG7hJ9")),
        ("slack-app-token", format!("{}{}-{}", "xapp-1-A0K3M9P2Q-", "5829301746", mixed(64))),
        ("slack-webhook", format!("https://{}/services/T0000AAAA/B0000BBBB/{}", "hooks.slack.com", mixed(24))),
        ("stripe-key", format!("{}{}", "sk_live_", mixed(24))),
        ("stripe-webhook-secret", format!("STRIPE_WEBHOOK = {}{}", "whsec_", mixed(32))),
        ("openai-key", format!("{}{}", "sk-proj-", mixed(48))),
        ("anthropic-key", format!("{}{}", "sk-ant-api03-", mixed(90))),
        ("google-api-key", format!("{}{}", "AIza", mixed(35))),
        ("npm-token", format!("{}{}", "npm_", mixed(36))),
        ("npmrc-auth", format!("//registry.npmjs.org/:_auth={}", b64("deploy:Zr7kq2Lp9xW3"))),
        ("pypi-token", format!("{}{}", "pypi-AgEIcHlwaS5vcmc", mixed(60))),
        ("huggingface-token", format!("{}{}", "hf_", mixed(34))),
        ("twilio-api-key", format!("{}{}", "SK", hex(32))),
        ("sendgrid-api-key", format!("{}{}.{}", "SG.", mixed(22), mixed(43))),
        ("azure-ad-client-secret", format!("secret {}{}", "abc8Q~", mixed(32))),
        (
            "azure-storage-key",
            format!(
                "DefaultEndpointsProtocol=https;AccountName=acct;{}{}==;EndpointSuffix=core.windows.net",
                "AccountKey=",
                mixed(86)
            ),
        ),
        (
            "azure-sas-token",
            format!(
                "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&se=2027-01-01&{}{}%3D",
                "sig=",
                mixed(43)
            ),
        ),
        ("digitalocean-token", format!("{}{}", "dop_v1_", hex(64))),
        ("vault-token", format!("{}{}", "hvs.", mixed(30))),
        (
            "age-secret-key",
            format!(
                "{}{}",
                "AGE-SECRET-KEY-1",
                "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQ8ZR7KT2LP9XW3V5DE6FG7HJ9K".chars().take(58).collect::<String>()
            ),
        ),
        ("private-key", private_pem.clone()),
        ("base64-private-key", format!("  tls.key: {}", b64(&private_pem))),
        ("putty-private-key", format!("{}{}\nEncryption: none\n", "PuTTY-User-Key-File-3", ": ssh-ed25519")),
        (
            "jwt",
            format!(
                "{}.{}.{}",
                b64url(r#"{"alg":"HS256","typ":"JWT"}"#),
                b64url(r#"{"sub":"u-8f3k2","name":"Ada","iat":1764547200}"#),
                mixed(43)
            ),
        ),
        ("password-in-url", format!("postgres://admin:{}@db.internal:5432/app", "Zr7-kq2Lp9")),
        ("generic-secret", format!("API_KEY = \"{}\"", "q8Zr7kq2Lp9xW3vT")),
        ("password-field", format!("DB_PASSWORD={}", "QwErTyUiOpAsDf")),
        ("docker-config-auth", format!("      \"auth\": \"{}\"", b64("robot:Zr7kq2Lp9xW3"))),
        ("mailgun-api-key", format!("MAILGUN_API_KEY={}-{}-{}", hex(32), hex(8), hex(8))),
        ("sentry-auth-token", format!("{}{}", "sntryu_", hex(64))),
        ("shopify-token", format!("{}{}", "shpat_", hex(32))),
        ("discord-bot-token", format!("DISCORD_BOT_TOKEN=MT{}.{}.{}", mixed(22), "GhT5kq", mixed(38))),
        ("netrc-password", format!("machine api.heroku.com login ops@corp.io password {}", "Zr7kq2Lp9xW3")),
        ("pgpass-password", format!("db.prod.internal:5432:app:appuser:{}", "Zr7kq2Lp9xW3")),
        ("mysql-cli-password", format!("mysql -h db.prod.internal -u app -p{} appdb", "Zr7kq2Lp9xW3")),
        ("authorization-header", format!("curl -H \"Authorization: Bearer {}\" https://api.corp.io", mixed(40))),
        ("telegram-bot-token", format!("{}{}{}", "582930174", ":AA", mixed(33))),
        ("linear-api-key", format!("{}{}", "lin_api_", mixed(40))),
        ("databricks-token", format!("{}{}", "dapi", hex(32))),
        ("doppler-token", format!("{}{}", "dp.pt.", mixed(43))),
        ("postman-api-key", format!("{}{}-{}", "PMAK-", hex(24), hex(34))),
        ("grafana-token", format!("{}{}_{}", "glsa_", mixed(32), hex(8))),
        ("groq-api-key", format!("{}{}", "gsk_", mixed(52))),
        ("perplexity-api-key", format!("{}{}", "pplx-", mixed(48))),
        ("square-token", format!("{}{}", "sq0atp-", mixed(22))),
        ("rubygems-token", format!("{}{}", "rubygems_", hex(48))),
        ("planetscale-token", format!("{}{}", "pscale_tkn_", mixed(43))),
        ("pulumi-token", format!("{}{}", "pul-", hex(40))),
        ("notion-token", format!("{}{}{}", "ntn_", "58293017462", mixed(35))),
        ("heroku-api-key", format!("{}{}", "HRKU-AA", mixed(58))),
    ]
}

#[test]
fn every_rule_has_a_sample_that_is_found_named_and_redacted() {
    let covered: std::collections::HashSet<&str> = samples().iter().map(|(r, _)| *r).collect();
    for rule in RuleId::ALL {
        assert!(covered.contains(rule.id()), "{} has no sample", rule.id());
    }
    for (rule, text) in samples() {
        let text = format!("# Setup\n\nsome prose\n{text}\nmore prose\n");
        let findings = scan_secrets(&text);
        assert!(findings.iter().any(|f| f.rule == rule && f.line == 4), "{rule} not found in {text:?}: {findings:?}");
        assert!(findings.iter().all(|f| f.rule == rule), "{rule}: other rules fired too: {findings:?}");
        for f in &findings {
            assert!(f.message.contains("redacted"), "{f:?}");
            let line = text.lines().nth(3).unwrap_or_default();
            let tail: String = line.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
            assert!(!f.message.contains(&tail), "{rule}: {f:?} echoes the secret");
        }
        let redacted = redact_secrets(&text).expect("a credential is redacted");
        assert!(redacted.contains(&format!("[redacted: {rule}]")), "{rule}: {redacted}");
    }
}

#[test]
fn documented_values_references_and_prose_pass() {
    let jwt_io = format!(
        "{}.{}.{}",
        b64url(r#"{"alg":"HS256","typ":"JWT"}"#),
        b64url(r#"{"sub":"1234567890","name":"John Doe","iat":1516239022}"#),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    );
    let clean = [
        "export API_KEY=${OPENAI_API_KEY}".to_string(),
        "api_key = \"<your-key>\"".into(),
        "token: {{ secrets.GITHUB_TOKEN }}".into(),
        "password = changeme".into(),
        "PASSWORD=$DB_PASSWORD".into(),
        "TOKEN=$(vault read -field=token secret/ci)".into(),
        "api_key = os.environ[\"API_KEY\"]".into(),
        "const token = process.env.GITHUB_TOKEN;".into(),
        "Set the token in your environment, then run the script.".into(),
        "secret_name = my_service.default_secret".into(),
        "postgres://user:password@localhost/db".into(),
        "postgres://postgres:postgres@localhost:5432/dev".into(),
        "amqp://guest:guest@localhost:5672/".into(),
        "mongodb+srv://<username>:<password>@cluster0.mongodb.net/".into(),
        "mongodb://user:password@host:27017".into(),
        "postgres://user:${PASS}@localhost/db".into(),
        "auth_token: xxxxxxxxxxxxxxxx".into(),
        "The key_rotation_interval = 30 days".into(),
        "ghp_ is the prefix of classic GitHub tokens".into(),
        "sk-... is what an OpenAI key looks like".into(),
        format!("id = {}", "a".repeat(40)),
        format!("aws_access_key_id = {}{}", "AKIA", "IOSFODNN7EXAMPLE"),
        format!("aws_secret_access_key = {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        format!("Authorization: Bearer {jwt_io}"),
        format!("{}{}", "sk_live_", "x".repeat(24)),
        format!("{}{}", "AIza", "X".repeat(35)),
        "SECRET_NAME=app\nDB_HOST=db1".into(),
        "        valueFrom:\n          secretKeyRef:\n            name: db-secret\n            key: password".into(),
        "private_key_path: ~/.ssh/id_ed25519".into(),
        "GOOGLE_APPLICATION_CREDENTIALS=/secrets/sa-key.json".into(),
        "ssh -i ~/.ssh/deploy_key.pem admin@host".into(),
        "--key-file ./certs/server.key".into(),
        "password: ********".into(),
        "max_tokens: 4096".into(),
        "token_count = 1234".into(),
        "api_key_header: X-API-Key".into(),
        "password_min_length: 12".into(),
        "mysql -u root -p appdb".into(),
        "mysql -uroot -proot".into(),
        "machine learning models need a password policy".into(),
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----".into(),
        format!("certificate-authority-data: {}", b64(&format!("-----BEGIN CERTIFICATE-----\n{}\n", mixed(64)))),
        "*:*:*:postgres:postgres".into(),
        "Use the SKILL.md when the task asks for it.".into(),
    ];
    for text in &clean {
        assert!(scan_secrets(text).is_empty(), "{text:?}: {:?}", scan_secrets(text));
    }
}

#[test]
fn a_value_never_runs_across_a_line_break() {
    let text = format!("SECRET_NAME=app\nDB_HOST=db1\nAPI_TOKEN=\n{}\n", mixed(32));
    assert!(scan_secrets(&text).is_empty(), "{:?}", scan_secrets(&text));
}

#[test]
fn letters_only_and_starred_passwords_in_password_fields_are_found() {
    for text in
        ["password: \"QwErTyUiOpAsDf\"", "DB_PASS=Tr0ub4d*r&3", "\"adminPassword\": \"correcthorsebatterystaple\""]
    {
        let rules: Vec<&str> = scan_secrets(text).iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["password-field"], "{text}");
    }
}

#[test]
fn a_token_in_a_key_field_is_named_by_its_token_rule_once() {
    let text = format!("GITHUB_TOKEN={}{}\n", "ghp_", mixed(36));
    let rules: Vec<&str> = scan_secrets(&text).iter().map(|f| f.rule).collect();
    assert_eq!(rules, ["github-pat"]);
}

#[test]
fn redaction_replaces_the_value_and_keeps_the_rest() {
    let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
    let text = format!("the reviewer saw `aws_access_key_id = {key}` in config.py\nsecond line stays\n");
    let clean = redact_secrets(&text).expect("a key is redacted");
    assert!(!clean.contains(&key), "{clean}");
    assert!(clean.contains("[redacted: aws-access-key-id]") && clean.ends_with("second line stays\n"), "{clean}");
    assert_eq!(redact_secrets("nothing secret here, `${API_KEY}` from env"), None);
}

#[test]
fn a_file_of_keys_reports_the_first_findings_up_to_the_cap() {
    let line = format!("{}{} {}{}\n", "AKIA", "Z7QX3M2K9LPT4WNB", "ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234");
    let findings = scan_secrets(&line.repeat(20_000));
    assert_eq!(findings.len(), MAX_SECRET_FINDINGS);
    assert_eq!(findings[0].line, 1);
    assert!(findings.iter().all(|f| f.line <= MAX_SECRET_FINDINGS));
}

#[test]
fn adversarial_runs_still_find_the_key_after_them() {
    // Each shape once made a scanner re-read from every match; the key after it is still found
    // (and the run itself holds nothing).
    let key = format!("{}{}", "ghp_", mixed(36));
    for unit in [
        "token = ${API_KEY_NAME} # from env\n",
        "password: \"",
        "key=",
        "secretsecretsecret",
        "postgres://user:pass@",
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "eyJhbGciOiJIUzI1NiJ9",
        "sk-ant-sk-ant-",
        "machine m login l ",
        ":5432::5432:",
        "mysql -u root ",
        "Authorization: Bearer ",
    ] {
        let run = unit.repeat(50_000 / unit.len());
        assert!(scan_secrets(&run).is_empty(), "{unit:?} run: {:?}", scan_secrets(&run)[..1].to_vec());
        let text = format!("{run}\nthen {key}\n");
        let rules: Vec<&str> = scan_secrets(&text).iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["github-pat"], "after a run of {unit:?}");
    }
}

#[test]
fn a_run_of_a_shapes_anchors_does_not_hide_that_shapes_credential_after_it() {
    // Probes that skip what an earlier call of theirs read (`pgpass`, `sig=`, keys) must still
    // read the next real entry whole, however the run before it ended.
    let sample = |rule: &str| samples().into_iter().find(|(r, _)| *r == rule).map(|(_, s)| s).unwrap_or_default();
    let sas = format!("https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sp=r&sig={}", mixed(44));
    for (unit, entry, rule) in [
        (":5432::5432:", sample("pgpass-password"), "pgpass-password"),
        (":5432:", sample("pgpass-password"), "pgpass-password"),
        ("&sig=", sas.clone(), "azure-sas-token"),
        ("?sv=1&sig=", sas, "azure-sas-token"),
        ("machine m login l ", sample("netrc-password"), "netrc-password"),
        ("postgres://user:pass@", sample("password-in-url"), "password-in-url"),
        ("secret", sample("generic-secret"), "generic-secret"),
        ("password: \"", sample("password-field"), "password-field"),
    ] {
        let run = unit.repeat(20_000 / unit.len());
        for gap in ["\n", " ", "\n\n"] {
            let rules: Vec<&str> = scan_secrets(&format!("{run}{gap}{entry}\n")).iter().map(|f| f.rule).collect();
            assert!(rules.contains(&rule), "{rule} after a run of {unit:?} and {gap:?}: {rules:?}");
        }
    }
}

#[test]
fn judgements_by_shape() {
    assert!(judge::shannon_entropy(b"q8Zr7kq2Lp9xW3vT") > 3.5);
    assert!(judge::shannon_entropy(b"aaaaaaaaaaaa") < 0.1);
    assert_eq!(judge::longest_sequence(b"x1234567y"), 7);
    assert!(judge::is_placeholder(b"abYYYYYYc") && !judge::is_placeholder(b"abYYYYYc9"));
    assert!(judge::is_path(b"~/.ssh/id_rsa") && judge::is_path(b"sa-key.json") && !judge::is_path(b"Zr7kq2Lp9"));
    assert!(judge::is_reference(b"${TOKEN}") && judge::is_reference(b"config.db.password"));
    assert_eq!(judge::base64_decode(b"dXNlcjpwYXNz").as_deref(), Some(&b"user:pass"[..]));
}

#[test]
fn assignments_written_the_ways_code_and_docs_write_them() {
    let v = "Zr7kq2Lp9xW3vT5m";
    let rules = |text: &str| scan_secrets(text).iter().map(|f| f.rule).collect::<Vec<_>>();
    for text in [
        format!("password                = \"{v}\""),
        format!("os.environ[\"API_KEY\"] = \"{v}\""),
        format!("define('DB_PASSWORD', '{v}');"),
        format!("#define WIFI_PASSWORD \"{v}\""),
        format!("ENV API_TOKEN \"{v}\""),
        format!("- DB_PASSWORD: `{v}`"),
        format!("\"{{\\\"api_key\\\": \\\"{v}\\\"}}\""),
        format!("DB_PASSWORD_PROD={v}"),
        format!("OPENAI_API_KEY_2={v}"),
        format!("PassWord={v}"),
    ] {
        assert_eq!(rules(&text).len(), 1, "{text}: {:?}", scan_secrets(&text));
    }
    let jwt = format!(
        "{}.{}.{}",
        b64url(r#"{"alg":"HS256","typ":"JWT"}"#),
        b64url(r#"{"role":"service_role","iss":"supabase","iat":1764547200}"#),
        mixed(43)
    );
    assert_eq!(rules(&format!("SUPABASE_SERVICE_ROLE_KEY={jwt}")), ["jwt"]);
    let pem = format!("-----BEGIN RSA {}-----\n{}\n{}\n{}\n", "PRIVATE KEY", mixed(64), mixed(64), mixed(64));
    assert_eq!(rules(&format!("PRIVATE_KEY={}", b64(&pem))), ["base64-private-key"]);
}

#[test]
fn defaults_labels_hashes_and_prose_in_credential_places_pass() {
    for text in [
        "POSTGRES_PASSWORD=postgres",
        "password: admin123",
        "password: hunter2",
        "API_KEY=abc123def456",
        "--token abc123xyz789",
        "SECRET_KEY=mysecretkey123",
        "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        "\"password\": \"Contraseña\"",
        "\"password\": \"Wachtwoord\"",
        "password: \"$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG\"",
        "gcc app.c $(mysql_config --cflags --libs) -pthread",
        "Your key starts with `-----BEGIN OPENSSH PRIVATE KEY-----`.\n\nuses: actions/checkout@b4ffde65f46336ab88eb53be808477a3936bae11",
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
    ] {
        assert!(scan_secrets(text).is_empty(), "{text:?}: {:?}", scan_secrets(text));
    }
}

#[test]
fn redaction_never_splits_a_character_or_drops_text() {
    let text = "mysql -p\"Zr7kq2Lp9xé and the rest stays\n";
    let out = redact_secrets(text).unwrap_or_else(|| text.to_string());
    assert!(out.ends_with("and the rest stays\n"), "{out}");
}

#[test]
fn more_adversarial_runs_find_nothing_and_then_the_key() {
    let key = format!("{}{}", "ghp_", mixed(36));
    let overlap = format!("token=Ab3dE5gH {}{}\n", "AKIA", "Z3K7Q2M9X4B8V6N1");
    for unit in ["&sig=", "/sntrys_eyJ", "=pscale_pw_", "=LS0tLS1CRUdJTi", "=eyJhbGciOiJIUzI1NiJ9"] {
        let run = unit.repeat(50_000 / unit.len());
        let text = format!("{run}\nthen {key}\n");
        let rules: Vec<&str> = scan_secrets(&text).iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["github-pat"], "after a run of {unit:?}");
    }
    // Thousands of hits of both kinds: redaction resolves their overlaps in one sweep.
    let text = format!("{}then {key}\n", overlap.repeat(2_000));
    let redacted = redact_secrets(&text).expect("keys are redacted");
    assert!(!redacted.contains(&key) && !redacted.contains("AKIAZ3K7"), "{}", &redacted[..200]);
}
