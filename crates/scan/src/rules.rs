//! The rule table: every credential family the scanner names, and for the families with a fixed
//! token format, the anchors (literal prefixes, matched case-sensitively) and the pattern that
//! must match from the anchor. Patterns follow the issuers' documented formats and gitleaks'
//! public rule set; every repetition is bounded so a candidate costs at most a fixed window.

macro_rules! rules {
    ($($variant:ident => $id:literal, $what:literal;)*) => {
        /// A named credential family.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId { $($variant),* }

        impl RuleId {
            pub const ALL: &'static [RuleId] = &[$(RuleId::$variant),*];

            pub fn id(self) -> &'static str {
                match self { $(RuleId::$variant => $id),* }
            }

            pub fn what(self) -> &'static str {
                match self { $(RuleId::$variant => $what),* }
            }
        }
    };
}

rules! {
    AwsAccessKeyId => "aws-access-key-id", "AWS access key id";
    GithubPat => "github-pat", "GitHub personal access token";
    GithubFineGrainedPat => "github-fine-grained-pat", "GitHub fine-grained token";
    GithubOauthToken => "github-oauth-token", "GitHub OAuth token";
    GithubAppToken => "github-app-token", "GitHub app token";
    GithubRefreshToken => "github-refresh-token", "GitHub refresh token";
    GitlabPat => "gitlab-pat", "GitLab personal access token";
    GitlabToken => "gitlab-token", "GitLab deploy, runner, trigger or CI token";
    SlackToken => "slack-token", "Slack token";
    SlackAppToken => "slack-app-token", "Slack app-level token";
    SlackWebhook => "slack-webhook", "Slack webhook URL";
    StripeKey => "stripe-key", "Stripe secret key";
    StripeWebhookSecret => "stripe-webhook-secret", "Stripe webhook signing secret";
    OpenaiKey => "openai-key", "OpenAI API key";
    AnthropicKey => "anthropic-key", "Anthropic API key";
    GoogleApiKey => "google-api-key", "Google API key";
    NpmToken => "npm-token", "npm access token";
    NpmrcAuth => "npmrc-auth", "npm registry credential (_auth, _authToken, _password)";
    PypiToken => "pypi-token", "PyPI upload token";
    HuggingfaceToken => "huggingface-token", "Hugging Face token";
    TwilioApiKey => "twilio-api-key", "Twilio API key";
    SendgridApiKey => "sendgrid-api-key", "SendGrid API key";
    AzureAdClientSecret => "azure-ad-client-secret", "Azure AD client secret";
    AzureStorageKey => "azure-storage-key", "Azure storage account key in a connection string";
    AzureSasToken => "azure-sas-token", "Azure shared access signature";
    DigitaloceanToken => "digitalocean-token", "DigitalOcean token";
    VaultToken => "vault-token", "HashiCorp Vault token";
    AgeSecretKey => "age-secret-key", "age secret key";
    PrivateKey => "private-key", "PEM private key block";
    Base64PrivateKey => "base64-private-key", "base64-encoded PEM private key (Kubernetes Secret, kubeconfig)";
    PuttyPrivateKey => "putty-private-key", "PuTTY private key file";
    Jwt => "jwt", "JSON Web Token";
    PasswordInUrl => "password-in-url", "password in a URL";
    GenericSecret => "generic-secret", "secret-looking value assigned to a key, token or secret";
    PasswordField => "password-field", "password written in a password field";
    DockerConfigAuth => "docker-config-auth", "registry credential in a docker config.json";
    MailgunApiKey => "mailgun-api-key", "Mailgun API key";
    SentryAuthToken => "sentry-auth-token", "Sentry auth token";
    ShopifyToken => "shopify-token", "Shopify access token or shared secret";
    DiscordBotToken => "discord-bot-token", "Discord bot token";
    NetrcPassword => "netrc-password", "password in a .netrc entry";
    PgpassPassword => "pgpass-password", "password in a .pgpass line";
    MysqlCliPassword => "mysql-cli-password", "password on a mysql command line";
    AuthorizationHeader => "authorization-header", "credential in an Authorization header";
    TelegramBotToken => "telegram-bot-token", "Telegram bot token";
    LinearApiKey => "linear-api-key", "Linear API key";
    DatabricksToken => "databricks-token", "Databricks token";
    DopplerToken => "doppler-token", "Doppler token";
    PostmanApiKey => "postman-api-key", "Postman API key";
    GrafanaToken => "grafana-token", "Grafana token";
    GroqApiKey => "groq-api-key", "Groq API key";
    PerplexityApiKey => "perplexity-api-key", "Perplexity API key";
    SquareToken => "square-token", "Square access token";
    RubygemsToken => "rubygems-token", "RubyGems API key";
    PlanetscaleToken => "planetscale-token", "PlanetScale token or password";
    PulumiToken => "pulumi-token", "Pulumi access token";
    NotionToken => "notion-token", "Notion integration token";
    HerokuApiKey => "heroku-api-key", "Heroku API key";
}

impl RuleId {
    /// Rules whose value is a header naming a block (a PEM key's BEGIN line, a PuTTY file's first
    /// line): every key of a kind shares it, so such a finding is fingerprinted on its whole block,
    /// and accepting one test key in a skill never accepts another key of the same kind.
    pub fn named_by_its_header(self) -> bool {
        matches!(self, RuleId::PrivateKey | RuleId::PuttyPrivateKey)
    }

    /// Rules that judge a value by the place it sits in (a key name, a URL, a header). When a
    /// token rule names the same bytes, the token rule's finding is the one reported.
    pub fn contextual(self) -> bool {
        matches!(
            self,
            RuleId::GenericSecret
                | RuleId::PasswordField
                | RuleId::PasswordInUrl
                | RuleId::AuthorizationHeader
                | RuleId::NpmrcAuth
                | RuleId::DockerConfigAuth
                | RuleId::NetrcPassword
                | RuleId::PgpassPassword
                | RuleId::MysqlCliPassword
        )
    }
}

/// A token with a fixed format, found from its literal anchor.
pub struct TokenRule {
    pub rule: RuleId,
    pub anchors: &'static [&'static str],
    /// How many bytes before the anchor the token starts (`abc8Q~…`); 0 for prefixes.
    pub back: usize,
    /// Matched from the token's start (implicitly anchored there).
    pub pattern: &'static str,
    /// Bytes of fixed prefix; the rest must look generated (`random_tail_ok`).
    pub prefix: usize,
}

const fn t(rule: RuleId, anchors: &'static [&'static str], pattern: &'static str, prefix: usize) -> TokenRule {
    TokenRule { rule, anchors, back: 0, pattern, prefix }
}

pub const TOKEN_RULES: &[TokenRule] = &[
    t(RuleId::AwsAccessKeyId, &["AKIA", "ASIA", "ABIA", "ACCA"], r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}", 4),
    t(RuleId::GithubPat, &["ghp_"], r"ghp_[0-9A-Za-z]{36}", 4),
    t(RuleId::GithubFineGrainedPat, &["github_pat_"], r"github_pat_[0-9A-Za-z_]{60,255}", 11),
    t(RuleId::GithubOauthToken, &["gho_"], r"gho_[0-9A-Za-z]{36}", 4),
    t(RuleId::GithubAppToken, &["ghu_", "ghs_"], r"gh[us]_[0-9A-Za-z]{36}", 4),
    t(RuleId::GithubRefreshToken, &["ghr_"], r"ghr_[0-9A-Za-z]{36,255}", 4),
    t(RuleId::GitlabPat, &["glpat-"], r"glpat-[0-9A-Za-z_-]{20,300}(?:\.[0-9a-z]{9})?", 6),
    t(
        RuleId::GitlabToken,
        &["glptt-", "gldt-", "glrt-", "glcbt-", "glft-", "glsoat-", "gloas-", "glagent-", "glimt-", "glffct-"],
        r"gl(?:ptt|dt|rt|cbt|ft|soat|oas|agent|imt|ffct)-[0-9A-Za-z_-]{20,300}",
        5,
    ),
    t(
        RuleId::SlackToken,
        &["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-"],
        r"xox[abposre]-[0-9A-Za-z-]{10,255}",
        5,
    ),
    t(RuleId::SlackAppToken, &["xapp-"], r"xapp-[0-9]-[A-Za-z0-9]{6,}-[0-9]{6,}-[A-Za-z0-9]{20,128}", 5),
    t(
        RuleId::SlackWebhook,
        &["hooks.slack.com/"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,255}",
        16,
    ),
    t(
        RuleId::StripeKey,
        &["sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_"],
        r"[rs]k_(?:live|test|prod)_[0-9A-Za-z]{20,255}",
        8,
    ),
    t(RuleId::StripeWebhookSecret, &["whsec_"], r"whsec_[A-Za-z0-9+/=]{24,128}", 6),
    t(
        RuleId::OpenaiKey,
        &["sk-"],
        r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,300}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})",
        3,
    ),
    t(RuleId::AnthropicKey, &["sk-ant-"], r"sk-ant-[a-z]{2,10}[0-9]{0,4}-[A-Za-z0-9_-]{32,255}", 7),
    t(RuleId::GoogleApiKey, &["AIza"], r"AIza[0-9A-Za-z_-]{35}", 4),
    t(RuleId::NpmToken, &["npm_"], r"npm_[A-Za-z0-9]{36}", 4),
    t(RuleId::PypiToken, &["pypi-AgEIcHlwaS5vcmc"], r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1000}", 20),
    t(RuleId::HuggingfaceToken, &["hf_"], r"hf_[A-Za-z0-9]{30,64}", 3),
    t(RuleId::TwilioApiKey, &["SK"], r"SK[0-9a-fA-F]{32}", 2),
    t(RuleId::SendgridApiKey, &["SG."], r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", 3),
    TokenRule {
        rule: RuleId::AzureAdClientSecret,
        anchors: &["Q~"],
        back: 4,
        pattern: r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
        prefix: 0,
    },
    t(RuleId::AzureStorageKey, &["AccountKey="], r"AccountKey=[A-Za-z0-9+/]{86}==", 11),
    t(RuleId::DigitaloceanToken, &["dop_v1_", "doo_v1_", "dor_v1_"], r"do[opr]_v1_[a-f0-9]{64}", 7),
    t(RuleId::VaultToken, &["hvs.", "hvb."], r"hv[sb]\.[A-Za-z0-9_-]{24,255}", 4),
    t(RuleId::AgeSecretKey, &["AGE-SECRET-KEY-1"], r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", 16),
    t(RuleId::PuttyPrivateKey, &["PuTTY-User-Key-File-"], r"PuTTY-User-Key-File-[23]: ?[A-Za-z0-9-]+", 0),
    t(RuleId::MailgunApiKey, &["key-"], r"key-[0-9a-f]{32}", 4),
    t(RuleId::SentryAuthToken, &["sntryu_", "sntrys_"], r"sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{40,600}", 7),
    t(RuleId::ShopifyToken, &["shpat_", "shpca_", "shppa_", "shpss_"], r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", 6),
    TokenRule {
        rule: RuleId::TelegramBotToken,
        anchors: &[":AA"],
        back: 10,
        pattern: r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}",
        prefix: 0,
    },
    t(RuleId::LinearApiKey, &["lin_api_"], r"lin_api_[A-Za-z0-9]{40}", 8),
    t(RuleId::DatabricksToken, &["dapi"], r"dapi[a-f0-9]{32}(?:-[0-9])?", 4),
    t(
        RuleId::DopplerToken,
        &["dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim."],
        r"dp\.(?:pt|st|ct|sa|scim)\.[A-Za-z0-9]{40,50}",
        6,
    ),
    t(RuleId::PostmanApiKey, &["PMAK-"], r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", 5),
    t(
        RuleId::GrafanaToken,
        &["glsa_", "glc_"],
        r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3}",
        4,
    ),
    t(RuleId::GroqApiKey, &["gsk_"], r"gsk_[A-Za-z0-9]{52}", 4),
    t(RuleId::PerplexityApiKey, &["pplx-"], r"pplx-[A-Za-z0-9]{48}", 5),
    t(
        RuleId::SquareToken,
        &["sq0atp-", "sq0csp-", "EAAA"],
        r"(?:sq0atp-|sq0csp-)[A-Za-z0-9_-]{22,60}|EAAA[A-Za-z0-9_-]{60}",
        4,
    ),
    t(RuleId::RubygemsToken, &["rubygems_"], r"rubygems_[a-f0-9]{48}", 9),
    t(
        RuleId::PlanetscaleToken,
        &["pscale_tkn_", "pscale_oauth_", "pscale_pw_"],
        r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}",
        10,
    ),
    t(RuleId::PulumiToken, &["pul-"], r"pul-[a-f0-9]{40}", 4),
    t(RuleId::NotionToken, &["ntn_"], r"ntn_[0-9]{11}[A-Za-z0-9]{35}", 4),
    t(RuleId::HerokuApiKey, &["HRKU-AA"], r"HRKU-AA[0-9A-Za-z_-]{58}", 7),
];

/// The longest token any rule matches: the window a token candidate may read.
pub const MAX_TOKEN: usize = 1100;

/// Words that make a key name a credential's (matched in three spellings: lower, UPPER and
/// Capitalised, which covers snake, SCREAMING and camel case). Kept short: every anchor costs a
/// probe at each match. `creds` and `pw` are not anchors (so `DB_CREDS=` and `DB_PW=` pass): a
/// first measurement suggested they cost the component's anchor prefilter, but it was within the
/// machine's run-to-run spread; measure again before adding them.
pub const KEYWORDS: &[&str] = &["pass", "pwd", "secret", "token", "key", "auth", "credential", "passphrase"];
