use super::*;

#[test]
fn retry_after_reads_seconds_and_http_dates() {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    // Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date.
    let date = UNIX_EPOCH + Duration::from_secs(784_111_777);
    let now = date - Duration::from_secs(30);
    assert_eq!(retry_after(" 7 ", now), Some(Duration::from_secs(7)));
    assert_eq!(retry_after("1.5", now), Some(Duration::from_millis(1500)));
    assert_eq!(
        retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        retry_after(
            "Sun, 06 Nov 1994 08:49:37 GMT",
            date + Duration::from_secs(5)
        ),
        Some(Duration::ZERO)
    );
    for refused in ["-1", "soon", "", "NaN", "inf"] {
        assert_eq!(retry_after(refused, SystemTime::now()), None, "{refused}");
    }
}

/// Bytes consumed, whether the body ended, payload bytes.
type Decoded = Result<(usize, bool, u64), FramingError>;

/// Feeds `pieces` to a decoder and returns (bytes consumed, done, payload) or the error.
fn decode(framing: BodyFraming, pieces: &[&[u8]]) -> Decoded {
    let mut decoder = BodyDecoder::new(framing);
    let mut consumed = 0;
    for piece in pieces {
        let step = decoder.step(piece);
        consumed += step.consumed;
        if let Some(error) = step.error {
            return Err(error);
        }
        if step.done {
            return Ok((consumed, true, decoder.payload()));
        }
        assert_eq!(
            step.consumed,
            piece.len(),
            "a body that goes on takes every byte"
        );
    }
    Ok((consumed, false, decoder.payload()))
}

const CHUNKED: &[u8] =
    b"5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-trailer: 1\r\nother: 2\r\n\r\nNEXT";

#[test]
fn a_chunked_body_ends_at_the_same_byte_whatever_the_read_boundaries() {
    let body_len = CHUNKED.len() - "NEXT".len();
    assert_eq!(
        decode(BodyFraming::Chunked, &[CHUNKED]),
        Ok((body_len, true, 31))
    );
    for cut in 0..=CHUNKED.len() {
        for second in cut..=CHUNKED.len() {
            let pieces = [&CHUNKED[..cut], &CHUNKED[cut..second], &CHUNKED[second..]];
            assert_eq!(
                decode(BodyFraming::Chunked, &pieces),
                Ok((body_len, true, 31)),
                "cuts at {cut} and {second}"
            );
        }
    }
    // Byte by byte.
    let bytes: Vec<&[u8]> = CHUNKED.iter().map(std::slice::from_ref).collect();
    assert_eq!(
        decode(BodyFraming::Chunked, &bytes),
        Ok((body_len, true, 31))
    );
}

#[test]
fn body_framings_table() {
    use BodyFraming::*;
    let cases: &[(BodyFraming, &[u8], Decoded)] = &[
        (Empty, b"HTTP/1.1 200 OK", Ok((0, true, 0))),
        (Length(0), b"next", Ok((0, true, 0))),
        (Length(5), b"helloNEXT", Ok((5, true, 5))),
        (Length(10), b"hello", Ok((5, false, 5))),
        (UntilClose, b"anything at all", Ok((15, false, 15))),
        (Chunked, b"0\r\n\r\nNEXT", Ok((5, true, 0))),
        (Chunked, b"3\r\nabc\r\n0\r\n\r\n", Ok((13, true, 3))),
        (
            Chunked,
            b"3 ; name=value\r\nabc\r\n0\r\n\r\n",
            Ok((26, true, 3)),
        ),
        (Chunked, b"zz\r\nabc\r\n", Err(FramingError::ChunkSize)),
        (Chunked, b"\r\nabc\r\n", Err(FramingError::ChunkSize)),
        (Chunked, b";x\r\n", Err(FramingError::ChunkSize)),
        (Chunked, b"-1\r\n", Err(FramingError::ChunkSize)),
        (Chunked, b"3\nabc\r\n", Err(FramingError::ChunkSize)),
        // 17 hex digits do not fit in 64 bits.
        (
            Chunked,
            b"10000000000000000\r\n",
            Err(FramingError::ChunkSize),
        ),
        (Chunked, b"3\r\nabcX\r\n", Err(FramingError::ChunkEnd)),
        (Chunked, b"3\r\nabc\rX", Err(FramingError::ChunkEnd)),
    ];
    for (framing, input, expected) in cases {
        assert_eq!(
            &decode(*framing, &[input]),
            expected,
            "{framing:?} {:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn the_largest_chunk_size_is_accepted_and_counted_without_overflow() {
    let mut decoder = BodyDecoder::new(BodyFraming::Chunked);
    let step = decoder.step(b"ffffffffffffffff\r\nabc");
    let expected = Step {
        consumed: 21,
        done: false,
        error: None,
    };
    assert_eq!(step, expected);
    assert_eq!(decoder.payload(), 3);
}

#[test]
fn lines_and_trailers_are_bounded() {
    let long_size = [b"1".as_slice(), &[b' '; MAX_LINE]].concat();
    assert_eq!(
        decode(BodyFraming::Chunked, &[&long_size]),
        Err(FramingError::LineTooLong)
    );
    let ext = [b"1;".as_slice(), &[b'x'; MAX_LINE]].concat();
    assert_eq!(
        decode(BodyFraming::Chunked, &[&ext[..10], &ext[10..]]),
        Err(FramingError::LineTooLong)
    );
    let trailers = [b"0\r\n".as_slice(), &b"t: v\r\n".repeat(MAX_HEAD / 6 + 1)].concat();
    assert_eq!(
        decode(BodyFraming::Chunked, &[&trailers]),
        Err(FramingError::TrailersTooLong)
    );
}

#[test]
fn response_heads_table() {
    type Expected = Option<(u16, BodyFraming, bool)>;
    let cases: &[(&[u8], bool, Expected)] = &[
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
            false,
            Some((200, BodyFraming::Length(5), true)),
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
            true,
            Some((200, BodyFraming::Empty, true)),
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\ncontent-length: 5\r\n\r\n",
            false,
            Some((200, BodyFraming::Chunked, true)),
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            false,
            Some((200, BodyFraming::UntilClose, true)),
        ),
        (
            b"HTTP/1.0 200 OK\r\n\r\n",
            false,
            Some((200, BodyFraming::UntilClose, false)),
        ),
        (
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\ncontent-length: 0\r\n\r\n",
            false,
            Some((200, BodyFraming::Length(0), true)),
        ),
        (
            b"HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 1\r\n\r\n",
            false,
            Some((200, BodyFraming::Length(1), false)),
        ),
        (
            b"HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n",
            false,
            Some((204, BodyFraming::Empty, true)),
        ),
        (
            b"HTTP/1.1 304 Not Modified\r\n\r\n",
            false,
            Some((304, BodyFraming::Empty, true)),
        ),
        (
            b"HTTP/1.1 100 Continue\r\n\r\n",
            false,
            Some((100, BodyFraming::Empty, true)),
        ),
        (
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
            false,
            Some((101, BodyFraming::Empty, false)),
        ),
        (b"HTTP/1.1 200 OK\r\ncontent-", false, None),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\n",
            false,
            Some((200, BodyFraming::Length(3), true)),
        ),
    ];
    for (input, answers_head, expected) in cases {
        let head = parse_response_head(input).unwrap();
        let got = head.map(|h| (h.status, h.body(*answers_head), h.keep_alive));
        assert_eq!(&got, expected, "{}", String::from_utf8_lossy(input));
        if let Some(head) = head {
            assert_eq!(head.len, input.len());
        }
    }
    let head = parse_response_head(b"HTTP/1.1 103 Early Hints\r\n\r\n")
        .unwrap()
        .unwrap();
    assert!(head.is_interim() && !head.switches_protocol());
}

#[test]
fn bad_response_heads_are_errors() {
    let cases: &[(&[u8], FramingError)] = &[
        (
            &[0x16, 0x03, 0x03, 0x00, 0x7a],
            FramingError::Head(httparse::Error::Version),
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 18446744073709551616\r\n\r\n",
            FramingError::ContentLength("18446744073709551616".into()),
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: +5\r\n\r\n",
            FramingError::ContentLength("+5".into()),
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n",
            FramingError::ConflictingLength,
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(parse_response_head(input).as_ref(), Err(expected));
    }
    let endless = [
        b"HTTP/1.1 200 OK\r\n".as_slice(),
        &b"x-long: y\r\n".repeat(MAX_HEAD / 10),
    ]
    .concat();
    assert!(parse_response_head(&endless).is_err());
    let endless_line = [b"HTTP/1.1 200 OK\r\nx: ".as_slice(), &[b'y'; MAX_HEAD]].concat();
    assert_eq!(
        parse_response_head(&endless_line),
        Err(FramingError::HeadTooLong)
    );
}

#[test]
fn request_heads_table() {
    type Expected = Result<Option<(bool, BodyFraming)>, FramingError>;
    let cases: &[(&[u8], Expected)] = &[
        (
            b"GET / HTTP/1.1\r\nhost: x\r\n\r\n",
            Ok(Some((false, BodyFraming::Empty))),
        ),
        (
            b"HEAD / HTTP/1.1\r\n\r\n",
            Ok(Some((true, BodyFraming::Empty))),
        ),
        (
            b"POST / HTTP/1.1\r\ncontent-length: 4\r\n\r\n",
            Ok(Some((false, BodyFraming::Length(4)))),
        ),
        (
            b"PUT / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
            Ok(Some((false, BodyFraming::Chunked))),
        ),
        (
            b"PUT / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n",
            Err(FramingError::RequestCoding("gzip".into())),
        ),
        (
            b"POST / HTTP/1.1\r\ncontent-length: 99999999999999999999\r\n\r\n",
            Err(FramingError::ContentLength("99999999999999999999".into())),
        ),
        (b"GET / HTTP/1.1\r\nhost", Ok(None)),
    ];
    for (input, expected) in cases {
        let got = parse_request_head(input).map(|h| h.map(|h| (h.is_head, h.body)));
        assert_eq!(&got, expected, "{}", String::from_utf8_lossy(input));
    }
}

#[test]
fn a_step_reports_what_was_framed_before_an_error() {
    let mut decoder = BodyDecoder::new(BodyFraming::Chunked);
    let step = decoder.step(b"5\r\nhello\r\nzz\r\n");
    assert_eq!(step.consumed, 10);
    assert_eq!(step.error, Some(FramingError::ChunkSize));
}
