use super::*;

async fn relay(input: &[u8], body: Body) -> (io::Result<()>, Vec<u8>, Vec<u8>) {
    let mut reader = Buffered {
        inner: input,
        buf: Vec::new(),
    };
    let mut out = Vec::new();
    let result = reader.copy_body(&mut out, body).await;
    (result, out, reader.buf)
}

#[tokio::test]
async fn a_chunked_body_passes_as_it_is_up_to_its_trailers() {
    let body = b"5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n";
    let input = [&body[..], b"GET http://next/ HTTP/1.1\r\n"].concat();
    let (r, out, rest) = relay(&input, Body::Chunked).await;
    r.unwrap();
    assert_eq!(out, body);
    assert_eq!(rest, b"GET http://next/ HTTP/1.1\r\n");
    let (r, out, _) = relay(b"3\r\nabc\r\n0\r\n\r\n", Body::Chunked).await;
    r.unwrap();
    assert_eq!(out, b"3\r\nabc\r\n0\r\n\r\n");
}

#[tokio::test]
async fn malformed_chunked_bodies_are_errors() {
    for bad in [
        &b"zz\r\nhello\r\n0\r\n\r\n"[..],
        b"2\r\nabc\r\n0\r\n\r\n",
        b"5\r\nhel",
        b"0\r\n",
    ] {
        let (r, _, _) = relay(bad, Body::Chunked).await;
        assert!(r.is_err(), "{:?}", String::from_utf8_lossy(bad));
    }
    let long = [&b"1"[..], &[b' '; MAX_LINE + 10][..], b"\r\n"].concat();
    let (r, _, _) = relay(&long, Body::Chunked).await;
    assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidData);
    let trailers = [
        &b"0\r\n"[..],
        &b"X: 1\r\n".repeat(MAX_TRAILERS + 1),
        b"\r\n",
    ]
    .concat();
    let (r, _, _) = relay(&trailers, Body::Chunked).await;
    assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidData);
}

#[tokio::test]
async fn lengths_stop_where_the_body_ends_and_the_close_takes_the_rest() {
    let (r, out, rest) = relay(b"abcdef", Body::Length(3)).await;
    r.unwrap();
    assert_eq!(
        (out.as_slice(), rest.as_slice()),
        (&b"abc"[..], &b"def"[..])
    );
    let (r, _, _) = relay(b"ab", Body::Length(3)).await;
    assert_eq!(r.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    let (r, out, rest) = relay(b"all of it", Body::UntilClose).await;
    r.unwrap();
    assert_eq!((out.as_slice(), rest.len()), (&b"all of it"[..], 0));
    let (r, out, rest) = relay(b"next", Body::None).await;
    r.unwrap();
    assert!(out.is_empty() && rest.is_empty());
}
