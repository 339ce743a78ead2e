//! The prefilter against aho-corasick's own search: on every kind of text, the anchors found
//! through candidates are exactly those `find_iter` yields (so the component, which uses the
//! prefilter, finds what native builds find), and ordinary prose is mostly skipped. Run
//! natively on the prefilter's lane-by-lane form and, compiled to wasm32, on SIMD128.

use super::*;
use crate::tests::samples;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn by_find_iter(b: &[u8]) -> Vec<(usize, usize)> {
    let anchors = scanner().anchors.as_ref().expect("built in tests");
    let found = |len: usize| -> Vec<(usize, usize)> {
        anchors.for_text(len).find_iter(b).map(|m| (m.start(), m.pattern().as_usize())).collect()
    };
    // The NFA (short texts) and the DFA (long ones) find the same anchors.
    let nfa = found(0);
    assert_eq!(nfa, found(usize::MAX), "{:?}", String::from_utf8_lossy(b));
    nfa
}

fn by_prefilter(b: &[u8]) -> Vec<(usize, usize)> {
    let s = scanner();
    let mut found = Vec::new();
    filtered_anchors(s.teddy.as_ref().expect("built in tests"), b, |at, pattern| {
        found.push((at, pattern));
        ControlFlow::Continue(())
    });
    found
}

fn assert_same(text: &[u8], what: &str) {
    assert_eq!(
        by_prefilter(text),
        by_find_iter(text),
        "{what}: {:?}",
        String::from_utf8_lossy(&text[..text.len().min(80)])
    );
}

/// Every anchor pattern, as the scanner builds them.
fn patterns() -> Vec<Vec<u8>> {
    anchor_table().0.into_iter().map(String::into_bytes).collect()
}

/// A fixed pseudo-random sequence (no dependency, same on every target).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[test]
fn every_anchor_at_every_offset_and_at_the_very_end_is_found() {
    for p in patterns() {
        for offset in 0..40 {
            let mut text = vec![b' '; offset];
            text.extend_from_slice(&p);
            assert_same(&text, "anchor at the end");
            text.extend_from_slice(b" and more text after it");
            assert_same(&text, "anchor mid-text");
        }
        assert_same(&p, "anchor alone");
    }
    for n in 0..40 {
        assert_same(&vec![b'k'; n], "short texts");
    }
}

#[test]
fn the_same_anchors_as_find_iter_on_samples_shapes_and_random_text() {
    for (rule, text) in samples() {
        assert_same(text.as_bytes(), rule);
    }
    for unit in [
        "token = ${API_KEY_NAME} # from env\n",
        "password: \"",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
        "key=",
        "postgres://user:pass@",
        "secret",
        "sk-ant-",
        ":5432:",
        "machine m login l ",
        "Authorization: Bearer ",
        "&sig=",
        "/sntrys_eyJ",
        "passphrasePASSPHRASEPassphrase",
        "ünïcödé key—tökën ",
    ] {
        assert_same(unit.repeat(4000 / unit.len()).as_bytes(), unit);
    }
    // Random text over the anchors' own bytes: overlapping, nested and broken anchors.
    let patterns = patterns();
    let mut rng = Lcg(7);
    for round in 0..300 {
        let mut text = Vec::new();
        while text.len() < 2000 {
            match rng.next(4) {
                0 => text.extend_from_slice(&patterns[rng.next(patterns.len())]),
                1 => {
                    let p = &patterns[rng.next(patterns.len())];
                    text.extend_from_slice(&p[..rng.next(p.len()) + 1]);
                }
                2 => text.push(b" _-.:/=~\n"[rng.next(9)]),
                _ => text.push(b"aAkKpPsStTeEyYgGhHxXQ0~5"[rng.next(24)]),
            }
        }
        assert_same(&text, &format!("random round {round}"));
    }
}

#[test]
fn a_stop_ends_the_walk_where_find_iter_would_have_stopped() {
    let text = "key=1 token=2 pass=3 secret=4 AKIA ghp_ sk-ant- ".repeat(20);
    let all = by_find_iter(text.as_bytes());
    let s = scanner();
    for stop_after in [1, 2, 7, all.len()] {
        let mut seen = Vec::new();
        filtered_anchors(s.teddy.as_ref().expect("built in tests"), text.as_bytes(), |at, pattern| {
            seen.push((at, pattern));
            if seen.len() == stop_after { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        assert_eq!(seen, all[..stop_after]);
    }
}

#[test]
fn a_caller_that_skips_ahead_sees_every_match_after_where_it_resumed() {
    // The lint resumes at a line's end, a probe past what it read: the walk must go on from
    // there, in the same block, a later block of the chunk or a later chunk, and miss nothing.
    let s = scanner();
    let teddy = s.teddy.as_ref().expect("built in tests");
    let patterns = patterns();
    let mut rng = Lcg(11);
    for round in 0..200 {
        let mut text = Vec::new();
        while text.len() < 3000 {
            match rng.next(3) {
                0 => text.extend_from_slice(&patterns[rng.next(patterns.len())]),
                1 => text.push(b" _-.:/=~\n"[rng.next(9)]),
                _ => text.push(b"aAkKpPsStTeEyYgGhHxXQ0~5"[rng.next(24)]),
            }
        }
        // How far each match sends the caller on: fixed per position, from 1 to 300 bytes.
        let jump = |pos: usize| 1 + ((pos as u64 * 2_654_435_761 + round as u64) % 300) as usize;
        let mut expected = Vec::new();
        let mut pos = 0;
        while pos < text.len() {
            match teddy.longest_at(&text, pos) {
                Some(_) => {
                    expected.push(pos);
                    pos += jump(pos);
                }
                None => pos += 1,
            }
        }
        let mut seen = Vec::new();
        teddy.candidates(&text, |pos| match teddy.longest_at(&text, pos) {
            Some(_) => {
                seen.push(pos);
                ControlFlow::Continue(pos + jump(pos))
            }
            None => ControlFlow::Continue(pos + 1),
        });
        assert_eq!(seen, expected, "round {round}");
    }
}

#[test]
fn ordinary_prose_is_mostly_skipped() {
    let prose = "## Deploying\n\nRun the test suite with `cargo test` before pushing. Then build the \
                 release with ./release.sh staging, check the logs for warnings, and open a pull \
                 request that describes what changed and why. Reviewers look at the diff, the \
                 benchmarks and the notes in the changelog before they merge it.\n"
        .repeat(200);
    assert!(by_find_iter(prose.as_bytes()).is_empty(), "the prose holds no anchor");
    let s = scanner();
    let mut candidates = 0;
    s.teddy.as_ref().expect("built in tests").candidates(prose.as_bytes(), |pos| {
        candidates += 1;
        ControlFlow::Continue(pos + 1)
    });
    let share = candidates as f64 / prose.len() as f64;
    assert!(share < 0.02, "{candidates} candidates in {} bytes ({:.2}%)", prose.len(), share * 100.0);
}

#[test]
fn the_exact_match_at_a_position_is_the_longest_pattern_there() {
    // One-byte patterns, patterns past eight bytes, shared prefixes and a text that cuts
    // patterns off at its end: what the scanner's anchors (two bytes and up) do not exercise.
    let set: Vec<&[u8]> = vec![
        b"p",
        b"pa",
        b"pass",
        b"passphrase",
        b"passphrase-file",
        b"password",
        b"pwd",
        b"-----BEGIN",
        b"-----BEGIN X",
        b"x",
        b"key",
        b"keys",
        b"sk-ant-api03-",
        b"sk-",
    ];
    let teddy = Teddy::new(&set);
    let naive = |hay: &[u8], pos: usize| {
        set.iter()
            .enumerate()
            .filter(|(_, p)| hay[pos..].starts_with(p))
            .max_by_key(|(i, p)| (p.len(), std::cmp::Reverse(*i)))
            .map(|(i, p)| (i, pos + p.len()))
    };
    let mut rng = Lcg(11);
    for round in 0..400 {
        let mut text = Vec::new();
        while text.len() < 40 + rng.next(40) {
            match rng.next(3) {
                0 => text.extend_from_slice(set[rng.next(set.len())]),
                1 => {
                    let p = set[rng.next(set.len())];
                    text.extend_from_slice(&p[..rng.next(p.len()) + 1]);
                }
                _ => text.push(b"pasrwdkeyx- BEGIN"[rng.next(17)]),
            }
        }
        for pos in 0..=text.len() {
            let want = if pos < text.len() { naive(&text, pos) } else { None };
            assert_eq!(
                teddy.longest_at(&text, pos),
                want,
                "round {round} at {pos}: {:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }
}
