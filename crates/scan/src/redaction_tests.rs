//! Redaction of whole values: for every rule, a realistic credential in prose is redacted with
//! nothing of its value left (no 8 characters of it in a row) and the prose around it kept;
//! multi-line credentials (PEM keys, PuTTY files, base64 PEM, keys inside JSON strings and YAML
//! blocks) lose their body and END line, not just their first line. Fingerprints stay on the
//! bytes they were taken from before redaction covered whole values. Values come from a seeded
//! generator at run time, so this file holds no scannable literal.

use super::*;
use crate::tests::{b64, b64url, samples};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS: &str = "0123456789";
const HEX: &str = "0123456789abcdef";
const BASE62: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const BECH32: &str = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// A seeded xorshift: random-looking values, the same on every run and target.
struct Random(u64);

impl Random {
    fn new(seed: u64) -> Random {
        Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `n` characters of `alphabet`.
    fn of(&mut self, alphabet: &str, n: usize) -> String {
        let a = alphabet.as_bytes();
        (0..n).map(|_| char::from(a[(self.next() % a.len() as u64) as usize])).collect()
    }
}

/// One credential in its usual setting: the text holding it, and the parts of it that must not
/// survive redaction (the value after any fixed public prefix; every line of a multi-line one).
struct Sample {
    text: String,
    secret: Vec<String>,
}

fn sample(text: String, secret: &[&str]) -> Sample {
    Sample { text, secret: secret.iter().map(|s| s.to_string()).collect() }
}

/// A PEM block's base64 body as lines of 64, the last one shorter (padded), opening as a DER
/// structure of that kind opens.
fn pem_body(r: &mut Random, opening: &str, lines: usize) -> Vec<String> {
    let mut body: Vec<String> = (0..lines).map(|_| r.of(BASE64, 64)).collect();
    body[0] = format!("{opening}{}", &body[0][opening.len()..]);
    body.push(format!("{}==", r.of(BASE64, 38)));
    body
}

/// `-----BEGIN {label}-----`, the body, `-----END {label}-----`, joined by `eol`.
fn pem(label: &str, body: &[String], eol: &str) -> String {
    format!("-----BEGIN {label}-----{eol}{}{eol}-----END {label}-----", body.join(eol))
}

fn rsa_body(r: &mut Random) -> Vec<String> {
    pem_body(r, "MIIEowIBAAKCAQEA", 24)
}

/// A PuTTY key file (v2 or v3, encrypted or not) with `eol` line ends, and its secret lines.
fn putty(r: &mut Random, version: u8, encrypted: bool, eol: &str) -> (String, Vec<String>) {
    let public: Vec<String> = std::iter::once(format!("AAAAB3NzaC1yc2EAAAADAQABAAABAQ{}", r.of(BASE64, 34)))
        .chain((0..5).map(|_| r.of(BASE64, 64)))
        .collect();
    let mut private: Vec<String> = (0..14).map(|_| r.of(BASE64, 64)).collect();
    private.push(format!("{}=", r.of(BASE64, 23)));
    let mac = r.of(HEX, if version == 3 { 64 } else { 40 });
    let mut lines = vec![
        format!("{}{version}: ssh-rsa", "PuTTY-User-Key-File-"),
        format!("Encryption: {}", if encrypted { "aes256-cbc" } else { "none" }),
        "Comment: rsa-key-20240115".to_string(),
        format!("Public-Lines: {}", public.len()),
    ];
    lines.extend(public.iter().cloned());
    if version == 3 && encrypted {
        lines.extend([
            "Key-Derivation: Argon2id".to_string(),
            "Argon2-Memory: 8192".into(),
            "Argon2-Passes: 21".into(),
            "Argon2-Parallelism: 1".into(),
            format!("Argon2-Salt: {}", r.of(HEX, 32)),
        ]);
    }
    lines.push(format!("Private-Lines: {}", private.len()));
    lines.extend(private.iter().cloned());
    lines.push(format!("Private-MAC: {mac}"));
    let mut secret = public;
    secret.extend(private);
    secret.push(mac);
    (lines.join(eol), secret)
}

/// A realistic credential of `rule`: a new rule without one does not compile.
fn realistic(rule: RuleId, r: &mut Random) -> Sample {
    let b62 = |r: &mut Random, n| r.of(BASE62, n);
    match rule {
        RuleId::AwsAccessKeyId => {
            let v = format!("{}{}", r.of(UPPER, 8), r.of("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 8));
            sample(format!("aws_access_key_id = {}{v}", "AKIA"), &[&v])
        }
        RuleId::GithubPat => {
            let v = b62(r, 36);
            sample(format!("export GH_TOKEN={}{v}", "ghp_"), &[&v])
        }
        RuleId::GithubFineGrainedPat => {
            let v = format!("{}_{}", b62(r, 22), b62(r, 59));
            sample(format!("gh auth login --with-token <<< {}{v}", "github_pat_"), &[&v])
        }
        RuleId::GithubOauthToken => {
            let v = b62(r, 36);
            sample(format!("    oauth_token: {}{v}", "gho_"), &[&v])
        }
        RuleId::GithubAppToken => {
            let v = b62(r, 36);
            sample(format!("git clone https://x-access-token:{}{v}@github.com/org/repo.git", "ghs_"), &[&v])
        }
        RuleId::GithubRefreshToken => {
            let v = b62(r, 76);
            sample(format!("refresh: {}{v}", "ghr_"), &[&v])
        }
        RuleId::GitlabPat => {
            let v = format!("{}.01{}", r.of(BASE64URL, 27), r.of("0123456789abcdefghijklmnopqrstuvwxyz", 7));
            sample(format!("PRIVATE-TOKEN: {}{v}", "glpat-"), &[&v])
        }
        RuleId::GitlabToken => {
            let v = b62(r, 20);
            sample(format!("gitlab-runner register --token {}{v}", "glrt-"), &[&v])
        }
        RuleId::SlackToken => {
            let v = format!("{}-{}-{}", r.of(DIGITS, 10), r.of(DIGITS, 13), b62(r, 24));
            sample(format!("SLACK_BOT={}{v}", "xoxb-"), &[&v])
        }
        RuleId::SlackAppToken => {
            let v = format!("1-A{}-{}-{}", r.of(UPPER, 10), r.of(DIGITS, 13), r.of(HEX, 64));
            sample(format!("socket mode: {}{v}", "xapp-"), &[&v])
        }
        RuleId::SlackWebhook => {
            let v = format!("T{}/B{}/{}", r.of(UPPER, 8), r.of(UPPER, 10), b62(r, 24));
            sample(format!("curl -X POST https://{}/services/{v}", "hooks.slack.com"), &[&v])
        }
        RuleId::StripeKey => {
            let v = format!("51{}", b62(r, 97));
            sample(format!("stripe.api_key = '{}{v}'", "sk_live_"), &[&v])
        }
        RuleId::StripeWebhookSecret => {
            let v = b62(r, 32);
            sample(format!("endpoint_secret = \"{}{v}\"", "whsec_"), &[&v])
        }
        RuleId::OpenaiKey => {
            let v = r.of(BASE64URL, 156);
            sample(format!("OPENAI_API_KEY={}{v}", "sk-proj-"), &[&v])
        }
        RuleId::AnthropicKey => {
            let v = format!("{}AA", r.of(BASE64URL, 93));
            sample(format!("ANTHROPIC_API_KEY={}{v}", "sk-ant-api03-"), &[&v])
        }
        RuleId::GoogleApiKey => {
            let v = r.of(BASE64URL, 35);
            sample(format!("<script src=\"https://maps.googleapis.com/maps/api/js?key={}{v}\">", "AIza"), &[&v])
        }
        RuleId::NpmToken => {
            let v = b62(r, 36);
            sample(format!("//registry.npmjs.org/:_authToken={}{v}", "npm_"), &[&v])
        }
        RuleId::NpmrcAuth => {
            let v = b64(&format!("ci-bot:{}", b62(r, 16)));
            sample(format!("_auth={v}\nalways-auth=true"), &[&v])
        }
        RuleId::PypiToken => {
            let v = r.of(BASE64URL, 160);
            sample(format!("[pypi]\n  username = __token__\n  password = {}{v}", "pypi-AgEIcHlwaS5vcmc"), &[&v])
        }
        RuleId::HuggingfaceToken => {
            let v = b62(r, 34);
            sample(format!("huggingface-cli login --token {}{v}", "hf_"), &[&v])
        }
        RuleId::TwilioApiKey => {
            let v = r.of(HEX, 32);
            sample(format!("TWILIO_API_KEY_SID={}{v}", "SK"), &[&v])
        }
        RuleId::SendgridApiKey => {
            let v = format!("{}.{}", r.of(BASE64URL, 22), r.of(BASE64URL, 43));
            sample(format!("SENDGRID_API_KEY='{}{v}'", "SG."), &[&v])
        }
        RuleId::AzureAdClientSecret => {
            let v = format!(
                "{}{}Q~{}",
                b62(r, 3),
                r.of(DIGITS, 1),
                r.of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", 34)
            );
            sample(format!("AZURE_CLIENT_SECRET={v}"), &[&v])
        }
        RuleId::AzureStorageKey => {
            let v = r.of(BASE64, 86);
            sample(
                format!(
                    "DefaultEndpointsProtocol=https;AccountName=prodstore;{}{v}==;EndpointSuffix=core.windows.net",
                    "AccountKey="
                ),
                &[&v],
            )
        }
        RuleId::AzureSasToken => {
            let v = format!("{}%3D", r.of(BASE64, 43));
            sample(
                format!(
                    "https://prodstore.blob.core.windows.net/backups/db.bak?sv=2022-11-02&sp=r&se=2027-01-01T00:00:00Z&{}{v}",
                    "sig="
                ),
                &[&v],
            )
        }
        RuleId::DigitaloceanToken => {
            let v = r.of(HEX, 64);
            sample(format!("doctl auth init -t {}{v}", "dop_v1_"), &[&v])
        }
        RuleId::VaultToken => {
            let v = format!("CAESI{}", r.of(BASE64URL, 90));
            sample(format!("VAULT_TOKEN={}{v}", "hvs."), &[&v])
        }
        RuleId::AgeSecretKey => {
            let v = r.of(BECH32, 58);
            sample(format!("# created: 2024-01-15\n{}{v}", "AGE-SECRET-KEY-1"), &[&v])
        }
        RuleId::PrivateKey => {
            let body = rsa_body(r);
            Sample { text: format!("deploy key:\n{}\n", pem("RSA PRIVATE KEY", &body, "\n")), secret: body }
        }
        RuleId::Base64PrivateKey => {
            let v = b64(&format!("{}\n", pem("RSA PRIVATE KEY", &rsa_body(r), "\n")));
            sample(format!("users:\n- name: admin\n  user:\n    client-key-data: {v}"), &[&v])
        }
        RuleId::PuttyPrivateKey => {
            let (text, secret) = putty(r, 3, false, "\n");
            Sample { text, secret }
        }
        RuleId::Jwt => {
            let sig = r.of(BASE64URL, 342);
            let v = format!(
                "{}.{}",
                b64url(&format!(r#"{{"sub":"svc-{}","role":"admin","iat":1764547200}}"#, r.of(HEX, 8))),
                sig
            );
            sample(format!("Authorization: Bearer {}.{v}", b64url(r#"{"alg":"RS256","typ":"JWT"}"#)), &[&v])
        }
        RuleId::PasswordInUrl => {
            let v = b62(r, 20);
            sample(format!("DATABASE_URL=postgres://app:{v}@db.prod.internal:5432/app"), &[&v])
        }
        RuleId::GenericSecret => {
            let v = b62(r, 32);
            sample(format!("API_KEY = \"{v}\""), &[&v])
        }
        RuleId::PasswordField => {
            let v = b62(r, 16);
            sample(format!("DB_PASSWORD={v}"), &[&v])
        }
        RuleId::DockerConfigAuth => {
            let v = b64(&format!("robot$ci:{}", b62(r, 32)));
            sample(format!("{{\"auths\": {{\"registry.corp.io\": {{\"auth\": \"{v}\"}}}}}}"), &[&v])
        }
        RuleId::MailgunApiKey => {
            let v = r.of(HEX, 32);
            sample(format!("mailgun: {}{v}", "key-"), &[&v])
        }
        RuleId::SentryAuthToken => {
            let v = r.of(HEX, 64);
            sample(format!("SENTRY_AUTH_TOKEN={}{v}", "sntryu_"), &[&v])
        }
        RuleId::ShopifyToken => {
            let v = r.of(HEX, 32);
            sample(format!("X-Shopify-Access-Token: {}{v}", "shpat_"), &[&v])
        }
        RuleId::DiscordBotToken => {
            let v = format!("MT{}.{}.{}", r.of(BASE64URL, 22), r.of(BASE64URL, 6), r.of(BASE64URL, 38));
            sample(format!("DISCORD_BOT_TOKEN={v}"), &[&v])
        }
        RuleId::NetrcPassword => {
            let v = b62(r, 32);
            sample(format!("machine api.heroku.com\n  login ops@corp.io\n  password {v}"), &[&v])
        }
        RuleId::PgpassPassword => {
            let v = b62(r, 20);
            sample(format!("db.prod.internal:5432:app:appuser:{v}"), &[&v])
        }
        RuleId::MysqlCliPassword => {
            let v = b62(r, 16);
            sample(format!("mysql -h db.prod.internal -u app -p'{v}' appdb"), &[&v])
        }
        RuleId::AuthorizationHeader => {
            let v = b62(r, 40);
            sample(format!("curl -H \"Authorization: Bearer {v}\" https://api.corp.io/v1/me"), &[&v])
        }
        RuleId::TelegramBotToken => {
            let v = r.of(BASE64URL, 33);
            sample(format!("{}:AA{v}", r.of(DIGITS, 9)), &[&v])
        }
        RuleId::LinearApiKey => {
            let v = b62(r, 40);
            sample(format!("LINEAR_API_KEY={}{v}", "lin_api_"), &[&v])
        }
        RuleId::DatabricksToken => {
            let v = format!("{}-2", r.of(HEX, 32));
            sample(format!("databricks configure --token {}{v}", "dapi"), &[&v])
        }
        RuleId::DopplerToken => {
            let v = b62(r, 43);
            sample(format!("DOPPLER_TOKEN={}{v}", "dp.pt."), &[&v])
        }
        RuleId::PostmanApiKey => {
            let v = format!("{}-{}", r.of(HEX, 24), r.of(HEX, 34));
            sample(format!("X-Api-Key: {}{v}", "PMAK-"), &[&v])
        }
        RuleId::GrafanaToken => {
            let v = format!("{}_{}", b62(r, 32), r.of(HEX, 8));
            sample(format!("GRAFANA_SA_TOKEN={}{v}", "glsa_"), &[&v])
        }
        RuleId::GroqApiKey => {
            let v = b62(r, 52);
            sample(format!("GROQ_API_KEY={}{v}", "gsk_"), &[&v])
        }
        RuleId::PerplexityApiKey => {
            let v = b62(r, 48);
            sample(format!("PPLX_API_KEY={}{v}", "pplx-"), &[&v])
        }
        RuleId::SquareToken => {
            let v = r.of(BASE64URL, 60);
            sample(format!("SQUARE_ACCESS_TOKEN={}{v}", "EAAA"), &[&v])
        }
        RuleId::RubygemsToken => {
            let v = r.of(HEX, 48);
            sample(format!(":rubygems_api_key: {}{v}", "rubygems_"), &[&v])
        }
        RuleId::PlanetscaleToken => {
            let v = b62(r, 43);
            sample(format!("PLANETSCALE_PASSWORD={}{v}", "pscale_pw_"), &[&v])
        }
        RuleId::PulumiToken => {
            let v = r.of(HEX, 40);
            sample(format!("PULUMI_ACCESS_TOKEN={}{v}", "pul-"), &[&v])
        }
        RuleId::NotionToken => {
            let v = format!("{}{}", r.of(DIGITS, 11), b62(r, 35));
            sample(format!("NOTION_TOKEN={}{v}", "ntn_"), &[&v])
        }
        RuleId::HerokuApiKey => {
            let v = r.of(BASE64URL, 58);
            sample(format!("HEROKU_API_KEY={}{v}", "HRKU-AA"), &[&v])
        }
    }
}

const BEFORE: &str = "Before you deploy, read the notes below.";
const AFTER: &str = "After that, rotate it every 90 days and tell the team.";

/// Redacts `text` and checks that no 8 characters in a row of any secret part survive, and that
/// every `kept` text does.
fn redacts_whole(what: &str, text: &str, secret: &[String], kept: &[&str]) -> String {
    let out = redact_secrets(text).unwrap_or_else(|| panic!("{what}: nothing redacted in {text:?}"));
    for part in secret {
        let chars: Vec<char> = part.chars().collect();
        for w in chars.windows(8.min(chars.len())) {
            let w: String = w.iter().collect();
            assert!(!out.contains(&w), "{what}: {w:?} of the secret survived redaction:\n{out}");
        }
    }
    for k in kept {
        assert!(out.contains(k), "{what}: {k:?} was lost:\n{out}");
    }
    out
}

#[test]
fn every_rule_redacts_its_whole_value_and_keeps_the_prose() {
    let mut r = Random::new(7);
    for &rule in RuleId::ALL {
        let s = realistic(rule, &mut r);
        let text = format!("# Deploy\n\n{BEFORE}\n{}\n{AFTER}\n", s.text);
        assert!(
            scan_secrets(&text).iter().any(|f| f.rule == rule.id()),
            "{}: the realistic sample is not found: {:?}\n{text}",
            rule.id(),
            scan_secrets(&text)
        );
        let out = redacts_whole(rule.id(), &text, &s.secret, &[BEFORE, AFTER, "# Deploy\n"]);
        assert!(out.contains(&format!("[redacted: {}]", rule.id())), "{}: {out}", rule.id());
    }
}

/// (what, text, secret parts, texts that survive): PEM keys as they are pasted, stored and
/// escaped.
fn pem_variants() -> Vec<(&'static str, String, Vec<String>, Vec<&'static str>)> {
    let mut r = Random::new(11);
    let rsa = rsa_body(&mut r);
    let pkcs8 = pem_body(&mut r, "MIIEvgIBADANBgkqhkiG9w0BAQEFAASC", 24);
    let ec = pem_body(&mut r, "MHcCAQEEI", 2);
    let mut openssh: Vec<String> = (0..6).map(|_| r.of(BASE64, 70)).collect();
    openssh.push(r.of(BASE64, 20));
    let encrypted = rsa_body(&mut r);
    let iv = r.of("0123456789ABCDEF", 32);
    let pgp: Vec<String> = (0..10).map(|_| r.of(BASE64, 64)).collect();
    let checksum = format!("={}", r.of(BASE64, 4));
    let later = "The key above was rotated on Monday.";
    let lf = pem("RSA PRIVATE KEY", &rsa, "\n");
    let json = |eol: &str, end: bool| {
        let key = if end {
            format!("{}{eol}", pem("PRIVATE KEY", &pkcs8, eol))
        } else {
            format!("-----BEGIN PRIVATE KEY-----{eol}{}{eol}", pkcs8.join(eol))
        };
        format!(
            "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"acme-prod\",\n  \"private_key\": \"{key}\",\n  \"client_email\": \"deployer@acme-prod.iam.gserviceaccount.com\"\n}}\n"
        )
    };
    let json_kept =
        vec!["\"type\": \"service_account\"", "\"client_email\": \"deployer@acme-prod.iam.gserviceaccount.com\""];
    let yaml = |end: bool| {
        let indented: String = openssh.iter().map(|l| format!("    {l}\n")).collect();
        let tail = if end { "    -----END OPENSSH PRIVATE KEY-----\n" } else { "" };
        format!(
            "ssh:\n  deploy_key: |\n    -----BEGIN OPENSSH PRIVATE KEY-----\n{indented}{tail}  known_hosts: github.com ssh-ed25519 AAAAC3Nza\n"
        )
    };
    vec![
        ("PEM with its END line", format!("{lf}\n{later}\n"), rsa.clone(), vec![later]),
        (
            "PEM without an END line, then a blank line",
            format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n\n{later}\n", rsa.join("\n")),
            rsa.clone(),
            vec![later],
        ),
        (
            "PEM without an END line, then prose",
            format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n{later}\n", rsa.join("\n")),
            rsa.clone(),
            vec![later],
        ),
        (
            "PEM with CRLF line ends",
            format!("{}\r\n{later}\r\n", pem("RSA PRIVATE KEY", &rsa, "\r\n")),
            rsa.clone(),
            vec![later],
        ),
        (
            "PEM with CR line ends",
            format!("{}\r{later}\r", pem("RSA PRIVATE KEY", &rsa, "\r")),
            rsa.clone(),
            vec![later],
        ),
        (
            "PEM with text after its END marker",
            format!("{lf} <- the paste ends here\n"),
            rsa.clone(),
            vec!["<- the paste ends here"],
        ),
        ("PEM in a Markdown code block", format!("```\n{lf}\n```\n{later}\n"), rsa.clone(), vec!["```\n", later]),
        ("GCP service-account JSON (\\n escapes)", json("\\n", true), pkcs8.clone(), json_kept.clone()),
        ("JSON string cut before the END line", json("\\n", false), pkcs8.clone(), json_kept.clone()),
        ("JSON in a JSON string (\\\\n escapes)", json("\\\\n", true), pkcs8.clone(), json_kept.clone()),
        ("JSON with \\r\\n escapes", json("\\r\\n", true), pkcs8.clone(), json_kept.clone()),
        ("YAML block scalar", yaml(true), openssh.clone(), vec!["  known_hosts: github.com"]),
        ("YAML block scalar without an END line", yaml(false), openssh.clone(), vec!["  known_hosts: github.com"]),
        (
            "encrypted PEM with Proc-Type and DEK-Info",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{iv}\n\n{}\n-----END RSA PRIVATE KEY-----\n{later}\n",
                encrypted.join("\n")
            ),
            encrypted.iter().cloned().chain([iv.clone()]).collect(),
            vec![later],
        ),
        (
            "PGP private key block",
            format!(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{}\n{checksum}\n-----END PGP PRIVATE KEY BLOCK-----\n{later}\n",
                pgp.join("\n")
            ),
            pgp.clone(),
            vec![later],
        ),
        (
            "two keys back to back",
            format!("{lf}\n{}\n{later}\n", pem("EC PRIVATE KEY", &ec, "\n")),
            rsa.iter().chain(&ec).cloned().collect(),
            vec![later],
        ),
        (
            "two keys with prose between",
            format!("{}\n{later}\n{lf}\nAnd that is all.\n", pem("EC PRIVATE KEY", &ec, "\n")),
            rsa.iter().chain(&ec).cloned().collect(),
            vec![later, "And that is all."],
        ),
    ]
}

#[test]
fn a_pem_key_is_redacted_with_its_body_and_end_line() {
    for (what, text, secret, kept) in pem_variants() {
        let text = format!("{BEFORE}\n{text}{AFTER}\n");
        let kept: Vec<&str> = kept.into_iter().chain([BEFORE, AFTER]).collect();
        let out = redacts_whole(what, &text, &secret, &kept);
        assert!(!out.contains("-----END"), "{what}: the END line survived:\n{out}");
        assert!(out.contains("[redacted: private-key]"), "{what}: {out}");
    }
}

#[test]
fn a_base64_pem_key_is_redacted_whole_wrapped_or_quoted() {
    let mut r = Random::new(13);
    let key = b64(&format!("{}\n", pem("RSA PRIVATE KEY", &rsa_body(&mut r), "\n")));
    let wrapped = |width: usize, eol: &str, indent: &str| {
        let lines: Vec<String> =
            key.as_bytes().chunks(width).map(|c| format!("{indent}{}", String::from_utf8_lossy(c))).collect();
        lines.join(eol)
    };
    let lines: Vec<String> = key.as_bytes().chunks(76).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    let kept = "type: kubernetes.io/tls";
    for (what, text) in [
        ("one line (kubeconfig)", format!("    client-key-data: {key}\n{kept}\n")),
        ("quoted, one line", format!("{{\"tls.key\": \"{key}\", \"type\": \"kubernetes.io/tls\"}}\n")),
        ("wrapped at 76 in a YAML block", format!("data:\n  tls.key: |\n{}\n{kept}\n", wrapped(76, "\n", "    "))),
        ("wrapped at 64 (openssl base64)", format!("{}\n\n{kept}\n", wrapped(64, "\n", ""))),
        ("wrapped at 76 with CRLF", format!("{}\r\n{kept}\r\n", wrapped(76, "\r\n", ""))),
        (
            "wrapped at 76 in a JSON string",
            format!("{{\"tls.key\": \"{}\", \"type\": \"kubernetes.io/tls\"}}\n", wrapped(76, "\\n", "")),
        ),
    ] {
        let text = format!("{BEFORE}\n{text}{AFTER}\n");
        let secret: Vec<String> = if what.contains("64") {
            key.as_bytes().chunks(64).map(|c| String::from_utf8_lossy(c).into_owned()).collect()
        } else {
            lines.clone()
        };
        let out = redacts_whole(what, &text, &secret, &[BEFORE, AFTER, "kubernetes.io/tls"]);
        assert!(out.contains("[redacted: base64-private-key]"), "{what}: {out}");
    }
}

#[test]
fn a_putty_key_file_is_redacted_whole() {
    let later = "Load it into Pageant, then connect.";
    for (what, version, encrypted, eol) in [
        ("PuTTY v2", 2, false, "\n"),
        ("PuTTY v2, encrypted", 2, true, "\n"),
        ("PuTTY v3", 3, false, "\n"),
        ("PuTTY v3, Argon2 encrypted", 3, true, "\n"),
        ("PuTTY v3 with CRLF line ends", 3, true, "\r\n"),
    ] {
        let (file, secret) = putty(&mut Random::new(u64::from(version) * 17), version, encrypted, eol);
        let text = format!("{BEFORE}{eol}{file}{eol}{later}{eol}{AFTER}{eol}");
        let out = redacts_whole(what, &text, &secret, &[BEFORE, AFTER, later]);
        assert!(!out.contains("Private-MAC"), "{what}: the file's last line survived:\n{out}");
        assert!(out.contains("[redacted: putty-private-key]"), "{what}: {out}");
    }
}

#[test]
fn values_that_run_on_past_their_first_stop_are_redacted_whole() {
    let mut r = Random::new(19);
    let (a, b) = (r.of(BASE62, 10), r.of(BASE62, 10));
    let jwt_sig = format!("{}+{}/{}==", r.of(BASE62, 30), r.of(BASE62, 20), r.of(BASE62, 10));
    let jwt = format!(
        "{}.{}.{jwt_sig}",
        b64url(r#"{"alg":"HS256","typ":"JWT"}"#),
        b64url(&format!(r#"{{"sub":"svc-{}","iat":1764547200}}"#, r.of(HEX, 8)))
    );
    for (what, text, rule, kept) in [
        (
            "an @ in a URL password",
            format!("postgres://app:{a}@{b}@db.prod.internal:5432/app"),
            "password-in-url",
            "db.prod.internal:5432/app",
        ),
        (
            "a URL-encoded bearer token",
            format!("Authorization: Bearer {a}{a}%2F{b}\n"),
            "authorization-header",
            "Authorization: Bearer",
        ),
        ("a JWT signed in standard base64", format!("token: {jwt} (expires soon)"), "jwt", "(expires soon)"),
        (
            "an escaped quote in a JSON password",
            format!("{{\"password\": \"{a}\\\"{b}\", \"user\": \"app\"}}"),
            "password-field",
            "\"user\": \"app\"",
        ),
        (
            "a quoted .netrc password with a space",
            format!("machine api.corp.io login ops password \"{a} {b}\"\n"),
            "netrc-password",
            "machine api.corp.io",
        ),
        (
            "a quoted mysql password with a space",
            format!("mysql -u app -p\"{a} {b}\" appdb\n"),
            "mysql-cli-password",
            "appdb",
        ),
        (
            "a .pgpass password with a space",
            format!("db.prod.internal:5432:app:appuser:{a} {b}\n"),
            "pgpass-password",
            "db.prod.internal:5432",
        ),
        (
            "a .pgpass password with an escaped colon",
            format!("db.prod.internal:5432:app:appuser:{a}\\:{b}\n"),
            "pgpass-password",
            "db.prod.internal:5432",
        ),
    ] {
        let text = format!("{BEFORE}\n{text}\n{AFTER}\n");
        let secret = if rule == "jwt" { vec![jwt_sig.clone()] } else { vec![a.clone(), b.clone()] };
        let out = redacts_whole(what, &text, &secret, &[BEFORE, AFTER, kept]);
        assert!(out.contains(&format!("[redacted: {rule}]")), "{what}: {out}");
    }
}

#[test]
fn fingerprints_are_taken_from_the_same_bytes_as_before() {
    // Recorded before redaction covered whole values: operators keep these in
    // `accepted-findings`, so the bytes a finding is fingerprinted on must not move (but for the
    // two rules named by a shared header, now fingerprinted on their whole block).
    const RECORDED: &[(&str, &str)] = &[
        ("aws-access-key-id", "aws-access-key-id@5eed68be0b4d"),
        ("github-pat", "github-pat@6c20c85d3519"),
        ("github-fine-grained-pat", "github-fine-grained-pat@a33b0d768931"),
        ("github-oauth-token", "github-oauth-token@692daaa52d52"),
        ("github-app-token", "github-app-token@ad5305bd2186"),
        ("github-refresh-token", "github-refresh-token@3ced2733fc7d"),
        ("gitlab-pat", "gitlab-pat@e2e67abefb15"),
        ("gitlab-token", "gitlab-token@e3b8173e8262"),
        ("slack-token", "slack-token@5ebceeea9b36"),
        ("slack-app-token", "slack-app-token@aecb006d05c3"),
        ("slack-webhook", "slack-webhook@a354433b8c04"),
        ("stripe-key", "stripe-key@c0d5c9efd07c"),
        ("stripe-webhook-secret", "stripe-webhook-secret@a411abe5f380"),
        ("openai-key", "openai-key@bf5964efcd3c"),
        ("anthropic-key", "anthropic-key@64c3f0d10868"),
        ("google-api-key", "google-api-key@60ff8ad7f739"),
        ("npm-token", "npm-token@f6ffa1799d50"),
        ("npmrc-auth", "npmrc-auth@09144d33bc08"),
        ("pypi-token", "pypi-token@90df74ea7b5a"),
        ("huggingface-token", "huggingface-token@28a4c24c4048"),
        ("twilio-api-key", "twilio-api-key@3a79e4338698"),
        ("sendgrid-api-key", "sendgrid-api-key@09b6645fc582"),
        ("azure-ad-client-secret", "azure-ad-client-secret@681043235cc1"),
        ("azure-storage-key", "azure-storage-key@96f442ca20e2"),
        ("azure-sas-token", "azure-sas-token@19fd907d4ec6"),
        ("digitalocean-token", "digitalocean-token@b36de348a08f"),
        ("vault-token", "vault-token@40caa2e12095"),
        ("age-secret-key", "age-secret-key@5e376ed9879a"),
        ("private-key", "private-key@1181d493ca13"),
        ("base64-private-key", "base64-private-key@44f23dbaed2b"),
        ("putty-private-key", "putty-private-key@a161ed1f099e"),
        ("jwt", "jwt@f57e2f2c4e9b"),
        ("password-in-url", "password-in-url@e46ef066db34"),
        ("generic-secret", "generic-secret@2c37f518f5bd"),
        ("password-field", "password-field@46616b382438"),
        ("docker-config-auth", "docker-config-auth@f6eccbde8713"),
        ("mailgun-api-key", "mailgun-api-key@7c245e0a6edb"),
        ("sentry-auth-token", "sentry-auth-token@11d086845143"),
        ("shopify-token", "shopify-token@ae30b339b5ff"),
        ("discord-bot-token", "discord-bot-token@e5b6810e1c2e"),
        ("netrc-password", "netrc-password@fea997727ccb"),
        ("pgpass-password", "pgpass-password@fea997727ccb"),
        ("mysql-cli-password", "mysql-cli-password@fea997727ccb"),
        ("authorization-header", "authorization-header@2ce9ff69ff0f"),
        ("telegram-bot-token", "telegram-bot-token@998bcc4ee954"),
        ("linear-api-key", "linear-api-key@4edb48b8e299"),
        ("databricks-token", "databricks-token@9373b37d0d74"),
        ("doppler-token", "doppler-token@7c893417689b"),
        ("postman-api-key", "postman-api-key@173f9823b727"),
        ("grafana-token", "grafana-token@20afbbe2cdcc"),
        ("groq-api-key", "groq-api-key@167be2fab4d0"),
        ("perplexity-api-key", "perplexity-api-key@c114b1c4b3de"),
        ("square-token", "square-token@e4d2580c2e82"),
        ("rubygems-token", "rubygems-token@5f153dac8053"),
        ("planetscale-token", "planetscale-token@f2a17e33bd99"),
        ("pulumi-token", "pulumi-token@bc4f7522028e"),
        ("notion-token", "notion-token@b2bc668a886f"),
        ("heroku-api-key", "heroku-api-key@5aa1e86997ee"),
    ];
    let samples = samples();
    assert_eq!(RECORDED.len(), samples.len(), "a recorded fingerprint per sample");
    for (rule, fingerprint) in RECORDED {
        let (_, text) = samples.iter().find(|(r, _)| r == rule).expect("a sample per recorded rule");
        let findings = scan_secrets(&format!("# Setup\n\nsome prose\n{text}\nmore prose\n"));
        assert_eq!(findings.first().map(|f| f.fingerprint.as_str()), Some(*fingerprint), "{rule}");
    }
    // A PEM key and a PuTTY file are fingerprinted on their whole block (before, on the header
    // every key of the kind shares): accepting one test key accepts no other.
    let mut r = Random::new(23);
    let body = rsa_body(&mut r);
    let key = pem("RSA PRIVATE KEY", &body, "\n");
    let findings = scan_secrets(&key);
    assert_eq!(findings.len(), 1, "{findings:?}");
    let end = key.find("-----END").and_then(|at| key[at..].find("KEY-----").map(|e| at + e + 8)).unwrap();
    assert_eq!(findings[0].fingerprint, fingerprint(RuleId::PrivateKey, &key.as_bytes()[..end]));
    let other = pem("RSA PRIVATE KEY", &rsa_body(&mut r), "\n");
    assert_ne!(scan_secrets(&other)[0].fingerprint, findings[0].fingerprint, "two RSA keys, one fingerprint");
    let (file, _) = putty(&mut r, 3, true, "\n");
    let (another, _) = putty(&mut r, 3, true, "\n");
    let findings = scan_secrets(&file);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_ne!(scan_secrets(&another)[0].fingerprint, findings[0].fingerprint, "two PuTTY files, one fingerprint");
    assert_ne!(
        findings[0].fingerprint,
        fingerprint(RuleId::PuttyPrivateKey, format!("{}3: ssh-rsa", "PuTTY-User-Key-File-").as_bytes())
    );
}

#[test]
fn runs_of_what_the_whole_value_walks_read_still_find_the_key_after_them() {
    // Each walk reads on past its anchor (a PEM body, wrapped base64, a URL's authority, an
    // escaped quote); a run of the shapes it reads finds nothing and leaves the key after it.
    let mut r = Random::new(29);
    let key = format!("{}{}", "ghp_", r.of(BASE62, 36));
    let wrapped = format!("{}{}\n", "LS0tLS1CRUdJTi", "QUJD".repeat(15) + "QU");
    for unit in [
        "-----BEGIN RSA PRIVATE KEY-----\nVersion: 1\n",
        "-----BEGIN RSA PRIVATE KEY-----\nQUJD\n",
        "-----BEGIN RSA PRIVATE KEY-----\\n\\\\n\\r",
        "-----BEGIN RSA PRIVATE KEY-----\n\n\n    \n",
        &wrapped,
        "a://u:p@@@@@@@@@",
        "\"password\": \"ab\\\"",
        "PuTTY-User-Key-File-",
    ] {
        let run = unit.repeat(50_000 / unit.len());
        let text = format!("{run}\nthen {key}\n");
        let rules: Vec<&str> = scan_secrets(&text).iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["github-pat"], "after a run of {unit:?}");
        let out = redact_secrets(&text).unwrap_or_default();
        assert!(out.starts_with(&run) && !out.contains(&key), "a run of {unit:?} was redacted, or the key was not");
    }
}

/// `text` with every line prefixed by `prefix` (a unified diff's `-`, `+` or ` ` lines, a
/// Markdown or shell quote).
fn prefixed(prefix: &str, text: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

#[test]
fn every_rule_is_found_and_redacted_with_a_prefix_on_every_line() {
    let mut failed = Vec::new();
    for prefix in ["-", "+", " ", "> ", "# ", "// ", " * ", "-  "] {
        let mut r = Random::new(7);
        for &rule in RuleId::ALL {
            let s = realistic(rule, &mut r);
            let what = format!("{} after {prefix:?}", rule.id());
            let text = format!(
                "--- a/SKILL.md\n+++ b/SKILL.md\n@@ -1,9 +1,1 @@\n {BEFORE}\n{} {AFTER}\n",
                prefixed(prefix, &s.text)
            );
            if !scan_secrets(&text).iter().any(|f| f.rule == rule.id()) {
                failed.push(format!("{what}: not found"));
                continue;
            }
            let caught = std::panic::catch_unwind(|| redacts_whole(&what, &text, &s.secret, &[BEFORE, AFTER]));
            match caught {
                Ok(out) if out.contains(&format!("[redacted: {}]", rule.id())) => {}
                _ => failed.push(format!("{what}: not redacted whole")),
            }
        }
    }
    assert!(failed.is_empty(), "{} failed:\n{}", failed.len(), failed.join("\n"));
}

#[test]
fn a_token_opening_a_diff_line_is_found_and_one_inside_a_word_is_not() {
    let mut r = Random::new(13);
    let gh = format!("{}{}", "ghp_", r.of(BASE62, 36));
    for text in [format!("-{gh}\n"), format!("+{gh}\n"), format!("context\n-{gh}\n+ {gh}\n")] {
        redacts_whole("diff line", &text, &[gh[4..].to_string()], &[]);
        assert!(scan_secrets(&text).iter().any(|f| f.rule == "github-pat"), "{text}");
    }
    for text in [format!("foo-{gh}\n"), format!("x+{gh}\n"), format!("--{gh}\n")] {
        assert!(!scan_secrets(&text).iter().any(|f| f.rule == "github-pat"), "{text}");
    }
}

#[test]
fn a_pem_key_changed_in_a_diff_is_redacted_through_its_end_line() {
    let mut r = Random::new(17);
    let (old, new) = (rsa_body(&mut r), rsa_body(&mut r));
    let minus: String = old.iter().map(|l| format!("-{l}\n")).collect();
    let plus: String = new.iter().map(|l| format!("+{l}\n")).collect();
    let label = "RSA PRIVATE KEY";
    let text = format!(
        "@@ -1,27 +1,27 @@\n {BEFORE}\n -----BEGIN {label}-----\n{minus}{plus} -----END {label}-----\n {AFTER}\n"
    );
    let secret: Vec<String> = old.iter().chain(&new).cloned().collect();
    let out = redacts_whole("changed key", &text, &secret, &[BEFORE, AFTER]);
    assert!(!out.contains("-----END"), "{out}");
    // Removed whole: the BEGIN and END lines are `-` lines too.
    let removed = prefixed("-", &pem(label, &old, "\n"));
    let out = redacts_whole("removed key", &format!("{removed} {AFTER}\n"), &old, &[AFTER]);
    assert!(!out.contains("END"), "{out}");
}
