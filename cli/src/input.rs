//! Reading the line files an operator hands the CLI (replays, gate logs) with bounded memory: a
//! line longer than the bound ends the read with an error naming the line, so `/dev/zero` or an
//! endless pipe cannot grow the process without limit. Lines are bytes; callers decide about UTF-8.

use std::io::{BufRead, ErrorKind};

/// The longest line the CLI reads (a replay's config line is the largest legitimate one).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Reads the next line into `buf` (without its newline). `Ok(false)` at the end of input; an
/// `InvalidData` error when the line passes `max` bytes.
pub fn next_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<bool> {
    buf.clear();
    let mut any = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(any);
        }
        any = true;
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (available.len(), false),
        };
        if buf.len() + take > max {
            return Err(std::io::Error::new(
                ErrorKind::InvalidData,
                format!("a line longer than {max} bytes (is this the right file?)"),
            ));
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Result<Vec<Vec<u8>>, String> {
        let mut reader = std::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while next_line(&mut reader, &mut buf, max).map_err(|e| e.to_string())? {
            out.push(buf.clone());
        }
        Ok(out)
    }

    #[test]
    fn lines_split_on_newlines_with_crlf_and_a_last_line_without_one() {
        assert_eq!(all(b"a\r\nbc\n\nd", 10).unwrap(), vec![b"a".to_vec(), b"bc".to_vec(), vec![], b"d".to_vec()]);
        assert_eq!(all(b"", 10).unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(all(b"\xff\xfe\n", 10).unwrap(), vec![b"\xff\xfe".to_vec()]);
    }

    #[test]
    fn a_line_past_the_bound_is_an_error_not_a_growing_buffer() {
        assert!(all(b"0123456789ab\n", 10).unwrap_err().contains("longer than 10 bytes"));
        // An endless source without newlines ends at the bound.
        let mut zero = std::io::BufReader::new(std::io::repeat(0));
        let mut buf = Vec::new();
        assert!(next_line(&mut zero, &mut buf, 1 << 16).is_err());
        assert!(buf.len() <= 1 << 16);
    }
}
