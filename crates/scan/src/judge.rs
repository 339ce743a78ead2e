//! Judgements on a candidate value, with context: is it a reference to a secret kept elsewhere
//! (`${VAR}`, `$(cmd)`, `{{ secrets.X }}`, `os.environ[…]`), a documented placeholder (`<your-key>`,
//! `xxxx`, `…EXAMPLE`, a counting sequence), a mask (`****`), a path to a key file, a type word in
//! a schema, or a value random enough to be a credential. Shapes and markers, not exact strings:
//! a new example value written the usual way is recognised without a list update.
//! Every function is bounded by its input, which the probes bound in turn.

use super::words::WordSet;
use std::sync::OnceLock;

/// Words that mark a value as documentation. Matched case-insensitively inside the value.
const MARKERS: &[&[u8]] = &[
    b"example",
    b"sample",
    b"dummy",
    b"fake",
    b"xxxx",
    b"placeholder",
    b"your",
    b"redacted",
    b"changeme",
    b"change_me",
    b"replace",
    b"insert",
    b"here",
    b"demo",
    b"secret",
    b"token",
    b"password",
    b"passwd",
];

/// Marker words for values of password fields and URL credentials: a password that names
/// itself (`password`, `pass123`, `secret`) is how documentation writes one.
const PASSWORD_MARKERS: &[&[u8]] = &[b"pass", b"pwd", b"secret", b"token", b"mypass", b"s3cr3t", b"p@ss", b"p4ss"];

/// Words a schema or a CLI help text puts where a value would go.
const TYPE_WORDS: &[&str] = &[
    "string",
    "str",
    "text",
    "required",
    "optional",
    "boolean",
    "bool",
    "true",
    "false",
    "null",
    "none",
    "nil",
    "undefined",
    "prompt",
    "hidden",
    "masked",
    "secret",
    "env",
    "stdin",
    "keyring",
    "disabled",
    "enabled",
    "empty",
    "default",
    "value",
    "unset",
    "omitted",
    "sensitive",
    "encrypted",
    "hashed",
    "bcrypt",
    "argon2",
    "random",
];

/// One index per word list, built once.
fn words(list: &[&'static [u8]], cell: &'static OnceLock<WordSet>) -> &'static WordSet {
    cell.get_or_init(|| WordSet::new(list))
}

/// Words that show a value is looked up, not written: `secrets.X`, `os.environ`, …
const REFERENCE_WORDS: &[&[u8]] = &[b"${", b"{{", b"$(", b"secrets.", b"environ", b"process.env", b"getenv"];

/// A value that points at a secret kept elsewhere.
pub fn is_reference(v: &[u8]) -> bool {
    static REFERENCES: OnceLock<WordSet> = OnceLock::new();
    let Some(&first) = v.first() else { return true };
    matches!(first, b'<' | b'{' | b'@' | b'[' | b'(')
        || (first == b'$' && shell_reference(&v[1..]))
        || (first == b'%' && matches!(v.get(1), Some(b'(' | b'{' | b's' | b'd')) || v.ends_with(b"%"))
        || v.starts_with(b"env:")
        || v.starts_with(b"ENV[")
        || v.starts_with(b"vault:")
        || v.starts_with(b"op://")
        || v.starts_with(b"arn:")
        || {
            let references = words(REFERENCE_WORDS, &REFERENCES);
            references.any_in(v, references.all())
        }
        || is_dotted_name(v)
}

/// After a `$`: `{…}`, `(…)`, or a variable name that is the whole value or is followed by a
/// path (`$HOME/.ssh/key`). `$u(1i3…` (a Django secret key) is not one.
fn shell_reference(rest: &[u8]) -> bool {
    match rest.first() {
        Some(b'{' | b'(') => true,
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
            let name = rest.iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
            matches!(rest.get(name), None | Some(b'/' | b'.' | b':' | b'}' | b'"' | b'\''))
        }
        _ => false,
    }
}

/// `config.db.password`, `self.token`, `settings.API_KEY`: a name, not a value. Each part is a
/// word with at most trailing digits (`db1`, `v2`); `siQ2EAA_c.s1I4E` is a value.
fn is_dotted_name(v: &[u8]) -> bool {
    let wordlike = |part: &[u8]| {
        let letters = part.iter().take_while(|b| b.is_ascii_alphabetic() || **b == b'_').count();
        letters > 0 && part[letters..].iter().all(u8::is_ascii_digit)
    };
    v.contains(&b'.') && v.split(|&b| b == b'.').all(wordlike)
}

/// A documented placeholder: marker words, ellipses, angle-bracket slots, long runs of one
/// character (`xxxxxxxx`, `00000000`) and counting sequences (`123456`, `abcdef`).
pub fn is_placeholder(v: &[u8]) -> bool {
    // Markers first: a table load per byte, and documented values (`…EXAMPLE`) stop there.
    marked(v, false) || placeholder_shape(v)
}

/// A placeholder in a password's place (see `PASSWORD_MARKERS`) or a mask such as `********`.
pub fn is_password_placeholder(v: &[u8]) -> bool {
    is_masked(v) || marked(v, true) || placeholder_shape(v)
}

/// Marker words in `v`: documentation markers, and with `password` also the password ones.
/// One index holds both lists, so a value is read once.
fn marked(v: &[u8], password: bool) -> bool {
    static ALL: OnceLock<WordSet> = OnceLock::new();
    static LIST: OnceLock<Vec<&'static [u8]>> = OnceLock::new();
    let list = LIST.get_or_init(|| MARKERS.iter().chain(PASSWORD_MARKERS).copied().collect());
    let all = words(list, &ALL);
    let documentation = (1u64 << MARKERS.len()) - 1;
    all.any_in(v, if password { all.all() } else { documentation })
}

/// One pass for the shapes of a placeholder: a run of six of one character (`xxxxxx`), a
/// counting sequence of six (`123456`, `abcdef`), an ellipsis, an angle-bracket slot.
fn placeholder_shape(v: &[u8]) -> bool {
    let (mut run, mut up, mut down) = (1, 1, 1);
    // Characters inside counting runs of three or more (`abc123def456`, `abc123xyz789`): a
    // generated value has almost none (a 3-run starts at a position with odds of 1 in 256 for
    // hex, 1 in 3,844 for base62).
    let mut counted = 0;
    for i in 0..v.len() {
        let c = v[i];
        if c == b'<' {
            return true;
        }
        if i == 0 {
            continue;
        }
        let (a, b) = (v[i - 1].to_ascii_lowercase(), c.to_ascii_lowercase());
        let alnum = a.is_ascii_alphanumeric() && b.is_ascii_alphanumeric();
        run = if v[i - 1] == c { run + 1 } else { 1 };
        up = if alnum && b == a.wrapping_add(1) { up + 1 } else { 1 };
        down = if alnum && a == b.wrapping_add(1) { down + 1 } else { 1 };
        if run >= 6 || up >= 6 || down >= 6 || (c == b'.' && run >= 3) {
            return true;
        }
        let counting = up.max(down);
        counted += match counting {
            3 => 3,
            n if n > 3 => 1,
            _ => 0,
        };
    }
    v.len() >= 6 && counted * 5 >= v.len() * 2
}

/// `********`, `•••`, `***1234`: a value shown masked.
pub fn is_masked(v: &[u8]) -> bool {
    v.windows(3).any(|w| w == b"***" || w == b"###" || w == "•".as_bytes())
}

/// A path to a file holding the key, not the key.
pub fn is_path(v: &[u8]) -> bool {
    let starts = |p: &[u8]| v.starts_with(p);
    if starts(b"/") || starts(b"~/") || starts(b"./") || starts(b"../") || starts(b"file:") {
        return true;
    }
    if v.len() > 2 && v[1] == b':' && (v[2] == b'\\' || v[2] == b'/') {
        return true;
    }
    let has_sep = v.contains(&b'/') || v.contains(&b'\\');
    let key_file = [".pem", ".key", ".json", ".p12", ".pfx", ".crt", ".ppk", ".jks", ".txt", ".env", ".gpg", ".asc"]
        .iter()
        .any(|ext| v.len() > ext.len() && v[v.len() - ext.len()..].eq_ignore_ascii_case(ext.as_bytes()));
    key_file && (has_sep || v.iter().filter(|&&b| b == b'.').count() == 1)
}

pub fn is_type_word(v: &[u8]) -> bool {
    TYPE_WORDS.iter().any(|w| v.eq_ignore_ascii_case(w.as_bytes()))
}

/// The longest run of consecutive characters counting up or down (`12345`, `abcde`, `FEDCB`).
pub fn longest_sequence(v: &[u8]) -> usize {
    let (mut best, mut up, mut down) = (usize::from(!v.is_empty()), 1, 1);
    for w in v.windows(2) {
        let (a, b) = (w[0].to_ascii_lowercase(), w[1].to_ascii_lowercase());
        let alnum = a.is_ascii_alphanumeric() && b.is_ascii_alphanumeric();
        up = if alnum && b == a.wrapping_add(1) { up + 1 } else { 1 };
        down = if alnum && a == b.wrapping_add(1) { down + 1 } else { 1 };
        best = best.max(up).max(down);
    }
    best
}

pub fn shannon_entropy(v: &[u8]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in v {
        counts[b as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Random enough to be machine-made: letters mixed with digits (or both cases over 20
/// characters), not a plain identifier, and spread over many symbols.
pub fn looks_random(v: &[u8]) -> bool {
    if v.len() < 8 {
        return false;
    }
    let digit = v.iter().any(u8::is_ascii_digit);
    let lower = v.iter().any(u8::is_ascii_lowercase);
    let upper = v.iter().any(u8::is_ascii_uppercase);
    let identifier = v.iter().all(|b| b.is_ascii_lowercase() || matches!(b, b'_' | b'.' | b'-'));
    let mixed = (digit && (lower || upper)) || (v.len() >= 20 && lower && upper);
    mixed && !identifier && shannon_entropy(v) >= 3.0
}

/// How many different bytes `v` holds.
fn distinct(v: &[u8]) -> usize {
    let mut seen = [0u64; 4];
    for &b in v {
        seen[usize::from(b >> 6)] |= 1 << (b & 63);
    }
    seen.iter().map(|w| w.count_ones() as usize).sum()
}

/// The random part of a token with a known prefix is not a placeholder and has the spread a
/// generated value has (a random 16 characters from 32 symbols hold about 13 different ones;
/// `XXXX…`, `abab…` hold one or two).
pub fn random_tail_ok(tail: &[u8]) -> bool {
    tail.is_empty() || (distinct(tail) >= (tail.len() / 3).min(10) && !is_placeholder(tail))
}

/// A password value written as a literal: not a reference, placeholder, mask, path, type word,
/// number-like, and at least `min` long. Letters-only and `*`-holding passwords count.
pub fn literal_password(v: &[u8], min: usize) -> bool {
    v.len() >= min
        && v.len() <= 256
        && !is_reference(v)
        && !is_password_placeholder(v)
        && !is_path(v)
        && !is_type_word(v)
        && !is_default_password(v)
        && !is_password_hash(v)
        && !v.iter().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b':'))
        && v.iter().all(|b| !b.is_ascii_control())
        && (!v.iter().all(u8::is_ascii_alphabetic) || letters_password(v))
        && !(v.iter().any(|b| !b.is_ascii()) && v.iter().all(|b| !b.is_ascii() || b.is_ascii_alphabetic()))
}

/// A letters-only password counts when it does not read as a word or a label: case mixed beyond
/// an initial capital (`QwErTyUiOp`), or a long run of words (`correcthorsebatterystaple`).
/// `Wachtwoord`, `hunter`, `Contraseña` (a UI label) do not.
fn letters_password(v: &[u8]) -> bool {
    let mixed =
        v.get(1..).unwrap_or_default().iter().any(u8::is_ascii_uppercase) && v.iter().any(u8::is_ascii_lowercase);
    mixed || v.len() >= 12
}

/// The documented defaults of common services and tutorials (`postgres`, `admin123`,
/// `hunter2`, `guest`): how examples are written, not what a deployment keeps secret.
fn is_default_password(v: &[u8]) -> bool {
    const DEFAULTS: &[&str] = &[
        "postgres",
        "admin",
        "root",
        "guest",
        "mysql",
        "redis",
        "user",
        "dev",
        "test",
        "rabbitmq",
        "mongo",
        "minioadmin",
        "oracle",
        "hunter",
        "letmein",
        "welcome",
        "qwerty",
        "changeit",
        "airflow",
        "keycloak",
        "grafana",
        "elastic",
        "superuser",
        "administrator",
        "default",
        "pass",
        "demo",
    ];
    let word =
        v.iter().rposition(|b| !b.is_ascii_digit() && !matches!(b, b'!' | b'_' | b'-')).map_or(&v[..0], |i| &v[..=i]);
    DEFAULTS.iter().any(|d| word.eq_ignore_ascii_case(d.as_bytes()))
}

/// A stored password hash (`$2b$12$…`, `$argon2id$…`, `$6$…`): not the password.
fn is_password_hash(v: &[u8]) -> bool {
    ["$2a$", "$2b$", "$2y$", "$argon2", "$6$", "$5$", "$1$", "$pbkdf2", "$scrypt", "$y$", "{SSHA}", "{SHA}"]
        .iter()
        .any(|p| v.starts_with(p.as_bytes()))
}

/// Standard or URL-safe base64 without padding requirements; `None` when it is not base64.
/// The caller bounds the input.
pub fn base64_decode(v: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(v.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &b in v {
        let d = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// `user:password` decoded from base64 (HTTP Basic, docker `auth`, npm `_auth`), when the
/// password is a literal.
pub fn basic_credentials(v: &[u8]) -> bool {
    let Some(decoded) = base64_decode(v) else { return false };
    let Some(colon) = decoded.iter().position(|&b| b == b':') else { return false };
    let (user, pass) = (&decoded[..colon], &decoded[colon + 1..]);
    // A password with a space is a documented example (`Aladdin:open sesame`), not a secret.
    let printable = decoded.iter().all(|b| (0x21..0x7f).contains(b));
    printable && !user.is_empty() && user != pass && literal_password(pass, 4)
}
