//! Small sets of words looked for anywhere inside a short value, ignoring ASCII case: the
//! judges' marker and reference lists. Per byte of the value one table load says which words
//! start with that byte; only those are compared. The values are a probe's bounded window, often
//! a few bytes long, where building an automaton's search cost more than the search itself.
//!
//! Owns: the first-byte index and the comparison. Every occurrence counts, overlapping ones
//! too: `password` holds both `pass` and `password`, and a caller asking for only one of them
//! finds it.

pub struct WordSet {
    /// Bit `k` of `first[b]`: word `k` starts with byte `b` (in either case).
    first: [u64; 256],
    words: Vec<Vec<u8>>,
}

impl WordSet {
    /// At most 64 words, none empty: the lists are built in, so breaking that is a bug the unit
    /// tests catch.
    pub fn new(words: &[&[u8]]) -> WordSet {
        assert!(words.len() <= 64 && words.iter().all(|w| !w.is_empty()), "a word set holds 1 to 64 words");
        let mut first = [0u64; 256];
        for (k, w) in words.iter().enumerate() {
            first[usize::from(w[0].to_ascii_lowercase())] |= 1 << k;
            first[usize::from(w[0].to_ascii_uppercase())] |= 1 << k;
        }
        WordSet { first, words: words.iter().map(|w| w.to_ascii_lowercase()).collect() }
    }

    /// The mask of every word in the set.
    pub fn all(&self) -> u64 {
        u64::MAX >> (64 - self.words.len())
    }

    /// Whether a word whose bit is set in `accept` occurs in `v`, ignoring ASCII case.
    pub fn any_in(&self, v: &[u8], accept: u64) -> bool {
        for (i, &b) in v.iter().enumerate() {
            let mut starting = self.first[usize::from(b)] & accept;
            while starting != 0 {
                let word = &self.words[starting.trailing_zeros() as usize];
                starting &= starting - 1;
                if v.len() - i >= word.len() && v[i..i + word.len()].eq_ignore_ascii_case(word) {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::WordSet;

    /// Every occurrence, by comparing at every position: what `any_in` must agree with.
    fn naive(words: &[&[u8]], v: &[u8], accept: u64) -> bool {
        words
            .iter()
            .enumerate()
            .any(|(k, w)| accept & (1 << k) != 0 && v.windows(w.len()).any(|x| x.eq_ignore_ascii_case(w)))
    }

    #[test]
    fn a_word_is_found_anywhere_in_any_case_and_overlaps_count() {
        let words: [&[u8]; 4] = [b"pass", b"password", b"${", b"x"];
        let set = WordSet::new(&words);
        assert_eq!(set.all(), 0b1111);
        // `pass` ends first inside `password`; asking for `password` alone still finds it.
        assert!(set.any_in(b"my-PassWord", 0b10));
        assert!(!set.any_in(b"my-pass", 0b10));
        assert!(set.any_in(b"a${B}", 0b100));
        assert!(!set.any_in(b"", set.all()));
        assert!(!set.any_in(b"pas", 0b1), "a word cut off by the value's end is not in it");
        let texts: [&[u8]; 8] =
            [b"", b"p", b"PASSWORD", b"passpasswordX", b"$", b"${", b"xx", b"pa\xffss\x00word passw"];
        for v in texts {
            for accept in 0..16 {
                assert_eq!(set.any_in(v, accept), naive(&words, v, accept), "{v:?} {accept:b}");
            }
        }
    }

    #[test]
    fn a_marker_hidden_behind_a_shorter_one_still_marks_the_value() {
        // `pass` (a password marker) starts where `password` (a documentation marker) does:
        // asked about documentation markers only, `password` must still count.
        assert!(super::super::judge::is_placeholder(b"password"));
        assert!(super::super::judge::is_placeholder(b"xPASSWORDy"));
        assert!(!super::super::judge::is_placeholder(b"Zq8fLm2pW9"));
    }
}
