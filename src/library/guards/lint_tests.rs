//! Tests for lint: destructive idioms and advice (the credential scanner's are in scan/tests.rs).

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

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
fn every_rule_names_the_command_words_it_starts_with() {
    // A rule whose words the prefilter does not look for would never be given a line.
    for (id, _, _, starts) in DESTRUCTIVE_RULES {
        assert!(!starts.is_empty() && starts.iter().all(|w| COMMAND_WORDS.contains(w)), "{id}: {starts:?}");
    }
}

#[test]
fn advice_covers_length_and_when_to_use() {
    let rules = |d: &str, b: &str| advise(d, b).iter().map(|f| f.rule).collect::<Vec<_>>();
    assert_eq!(rules("Deploys the app.", "Run make deploy.\n"), ["when-to-use"]);
    assert!(rules("Deploys the app. Use when shipping.", "Run make deploy.\n").is_empty());
    assert_eq!(rules("Use when shipping.", &"line\n".repeat(501)), ["body-length"]);
    assert_eq!(rules("Use when shipping.", "  \n"), ["body-empty"]);
}

/// A fixed pseudo-random sequence (no dependency, same on every target).
fn lcg(seed: &mut u64, n: usize) -> usize {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 33) % n as u64) as usize
}

#[test]
fn one_pass_over_command_lines_finds_what_each_rule_finds_over_the_text() {
    // The component's form (`by_command_lines`) against the rules run one by one: the same
    // findings in the same order, on idioms, near misses and random mixes of their pieces.
    let pieces = [
        "rm -rf /",
        "rm -fr ~",
        "rm  -r -f $HOME",
        "rm -rf ./build",
        "form -rf /",
        "git push --force",
        "git push -f",
        "git push origin main",
        "git reset --hard",
        "digit reset --hard",
        "DROP TABLE users",
        "Drop Schema x",
        "dRoP database y",
        "TRUNCATE table t",
        "droplet",
        "curl -fsSL https://x.sh | sh",
        "wget -qO- u | sudo bash",
        "curl u | tee f",
        "chmod -R 777 .",
        "chmod 0777 f",
        "mkfs.ext4 /dev/sda1",
        "mkfs -t ext4",
        "dd if=x of=/dev/sdb",
        "add of=/dev/x",
        "dd",
        "rm",
        "git",
        "curl",
        "\n",
        "\n",
        "\n",
        " ",
        " ",
        "; ",
        "\t",
        "|",
        "sh",
        "x",
        "_rm -rf /",
        "ünïcödé ",
        "\r\n",
    ];
    let mut seed = 11;
    for round in 0..400 {
        let mut text = String::new();
        while text.len() < 600 {
            text.push_str(pieces[lcg(&mut seed, pieces.len())]);
        }
        assert_eq!(by_command_lines(&text), by_rule(&text), "round {round}: {text:?}");
    }
    let text = "rm -rf /\ngit push --force origin main\nDROP TABLE users;\n".repeat(50);
    assert_eq!(by_command_lines(&text).len(), 150);
    assert_eq!(by_command_lines(&text), by_rule(&text));
    // SQL words in any case: the component once missed `Drop table`.
    for text in ["Drop table users;", "x\n  tRuNcAtE TABLE t;\n", "DrOp DATABASE d", "dropped table t; truncated table"]
    {
        assert_eq!(by_command_lines(text), by_rule(text), "{text:?}");
    }
    assert_eq!(by_command_lines("Drop table users;\nx\n  tRuNcAtE TABLE t;").len(), 2);
    for text in ["", "rm -rf /", "dd if=/dev/zero of=/dev/sda", "x\nrm -rf ~", "\n\n\nchmod 777 f"] {
        assert_eq!(by_command_lines(text), by_rule(text), "{text:?}");
    }
}
