//! The wire side without a socket: heads as browsers and attackers send them, and the bytes of
//! an answer.

use super::*;

#[test]
fn a_browser_s_head_is_read_and_what_no_browser_sends_is_refused() {
    let head =
        parse_head(b"GET /api/read?args=list HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nCookie: a=1\r\nCookie: b=2").unwrap();
    assert_eq!((head.method.as_str(), head.target.as_str()), ("GET", "/api/read?args=list"));
    assert_eq!(head.one("host"), Some("127.0.0.1:8765"));
    assert_eq!(head.one("cookie"), None, "sent twice: no single value");
    assert_eq!(head.all("cookie"), ["a=1", "b=2"]);
    for bad in [
        &b"GET /"[..],
        b"GET / HTTP/2",
        b"GET http://evil/ HTTP/1.1",
        b"GET  / HTTP/1.1",
        b"GET / HTTP/1.1\r\nHost 127.0.0.1",
        b"GET / HTTP/1.1\r\nHost: a\r\n folded",
        b"GET / HTTP/1.1\r\nBad Name: a",
        b"GET / HTTP/1.1\r\nHost: a\x01b",
        b"GET / HTTP/1.1\r\nHost: \xff",
    ] {
        assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn lengths_that_lie_are_refused_or_counted_as_too_large() {
    let request = |head: &[u8]| request_of(&parse_head(head).unwrap());
    let huge = request(b"POST /api/act HTTP/1.1\r\nContent-Length: 18446744073709551615").ok().unwrap();
    assert!(huge.body_length.is_some_and(|n| n > http::MAX_BODY));
    let two = request(b"POST /api/act HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6");
    assert_eq!(two.err().map(|r| r.status), Some(400));
    let chunked = request(b"POST /api/act HTTP/1.1\r\nTransfer-Encoding: chunked");
    assert_eq!(chunked.err().map(|r| r.status), Some(501));
    let words = request(b"POST /api/act HTTP/1.1\r\nContent-Length: -1");
    assert_eq!(words.err().map(|r| r.status), Some(400));
}

#[test]
fn every_answer_closes_and_carries_the_security_headers() {
    let bytes = response_bytes(&Reply::text(421, "no"));
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.starts_with("HTTP/1.1 421 Misdirected Request\r\n"), "{text}");
    for header in [
        "Connection: close",
        "Content-Length: 3",
        "Content-Security-Policy: default-src 'none'",
        "X-Frame-Options: DENY",
    ] {
        assert!(text.contains(header), "{header}: {text}");
    }
    assert!(text.ends_with("\r\n\r\nno\n"), "{text}");
}
