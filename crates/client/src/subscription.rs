//! Fetching a subscription: one HTTP/1.1 `GET` (TLS verified against the web roots
//! for `https://`), its body read as a sing-box client config (what the panel answers
//! this client's User-Agent), a Clash (mihomo) config or share links (plain or
//! base64), each server an [`Entry`]. Bounded: [`FETCH_TIMEOUT`] for the whole
//! fetch, [`MAX_BODY`] bytes of body.

use std::sync::Arc;
use std::time::Duration;

use switchyard_proto::entry::Entry;
use switchyard_proto::share::parse_subscription;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// The largest subscription body read.
pub const MAX_BODY: usize = 4 << 20;

/// A fetched subscription.
#[derive(Debug, Clone)]
pub struct Subscription {
    /// The servers, in order.
    pub entries: Vec<Entry>,
    /// `profile-update-interval` (hours), when the server says.
    pub update_interval_hours: Option<u32>,
}

/// Why a subscription could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// The URL is not `http://` or `https://host[:port]/path`.
    #[error("subscription URL {url:?}: {problem}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong.
        problem: UrlError,
    },
    /// The fetch failed.
    #[error("fetching {url}: {reason}")]
    Fetch {
        /// The URL.
        url: String,
        /// Why.
        reason: FetchError,
    },
    /// The body is not a subscription.
    #[error("{url}: the body is not a subscription: {reason}")]
    Body {
        /// The URL.
        url: String,
        /// Why.
        reason: BodyError,
    },
}

/// What is wrong with a subscription URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// It starts with neither `http://` nor `https://`.
    #[error("must start with http:// or https://")]
    Scheme,
    /// An IPv6 host's `[` is not closed.
    #[error("unclosed [ in the host")]
    UnclosedBracket,
    /// The port is not a number from 0 to 65535.
    #[error("bad port")]
    Port,
    /// The host is empty.
    #[error("no host")]
    NoHost,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The whole fetch took longer than [`FETCH_TIMEOUT`].
    #[error("no answer within {FETCH_TIMEOUT:?}")]
    Timeout,
    /// The server could not be reached.
    #[error("connecting: {0}")]
    Connect(#[source] std::io::Error),
    /// rustls refused the client's TLS settings.
    #[error(transparent)]
    TlsSettings(#[from] rustls::Error),
    /// The host is not a name TLS can check a certificate against.
    #[error("{host:?} is not a TLS server name")]
    ServerName {
        /// The host.
        host: String,
    },
    /// The TLS handshake failed (a certificate the web's roots do not vouch for...).
    #[error("TLS: {0}")]
    Tls(#[source] std::io::Error),
    /// Sending the request or reading the answer failed.
    #[error(transparent)]
    Io(std::io::Error),
    /// The answer is not a whole `200`.
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

/// Why an HTTP answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The head is not HTTP/1.1.
    #[error(transparent)]
    Malformed(#[from] httparse::Error),
    /// The head ends before its blank line.
    #[error("the answer's head is cut short")]
    CutShort,
    /// Another status than `200`.
    #[error("HTTP {code} {reason}")]
    Status {
        /// The status code.
        code: u16,
        /// The reason phrase.
        reason: String,
    },
    /// A chunked body (not read yet).
    #[error("chunked answers are not read yet")]
    Chunked,
    /// The body is not as long as its `Content-Length`.
    #[error("{got} of {expected} bytes of body")]
    Length {
        /// Bytes received.
        got: usize,
        /// `Content-Length`.
        expected: usize,
    },
    /// The body is longer than [`MAX_BODY`].
    #[error("a body over {MAX_BODY} bytes")]
    TooLarge,
}

/// Why a body is not a subscription.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body is not UTF-8 text.
    #[error("not UTF-8")]
    NotUtf8,
    /// It starts like JSON but is not JSON.
    #[error("not JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A JSON body that is not a sing-box config with servers.
    #[error(transparent)]
    SingBox(#[from] switchyard_proto::singbox::ReadError),
    /// A Clash config that can't be read.
    #[error(transparent)]
    Clash(#[from] switchyard_proto::clash::ReadError),
    /// Neither: share links (plain or base64) that can't be read.
    #[error(transparent)]
    Links(#[from] switchyard_proto::share::LinkError),
}

struct Target {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

fn target(url: &str) -> Result<Target, UrlError> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(UrlError::Scheme);
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let default = if tls { 443 } else { 80 };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or(UrlError::UnclosedBracket)?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| UrlError::Port)?,
            None => default,
        };
        (h.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p.parse().map_err(|_| UrlError::Port)?),
            None => (authority.to_owned(), default),
        }
    };
    if host.is_empty() {
        return Err(UrlError::NoHost);
    }
    Ok(Target {
        tls,
        host,
        port,
        path: path.to_owned(),
    })
}

/// Checks that `url` is a subscription URL this client can fetch (`http://` or
/// `https://host[:port]/path`), without fetching it.
pub fn check_url(url: &str) -> Result<(), SubscriptionError> {
    target(url)
        .map(drop)
        .map_err(|problem| SubscriptionError::Url {
            url: url.to_owned(),
            problem,
        })
}

/// Fetches and reads the subscription at `url`.
pub async fn fetch(url: &str) -> Result<Subscription, SubscriptionError> {
    let t = target(url).map_err(|problem| SubscriptionError::Url {
        url: url.to_owned(),
        problem,
    })?;
    let fail = |reason: FetchError| SubscriptionError::Fetch {
        url: url.to_owned(),
        reason,
    };
    let (head, body) = tokio::time::timeout(FETCH_TIMEOUT, get(&t))
        .await
        .map_err(|_| fail(FetchError::Timeout))?
        .map_err(fail)?;
    let text = String::from_utf8(body).map_err(|_| SubscriptionError::Body {
        url: url.to_owned(),
        reason: BodyError::NotUtf8,
    })?;
    let entries = parse_body(&text).map_err(|reason| SubscriptionError::Body {
        url: url.to_owned(),
        reason,
    })?;
    let update_interval_hours = head
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("profile-update-interval"))
        .and_then(|(_, v)| v.trim().parse().ok());
    Ok(Subscription {
        entries,
        update_interval_hours,
    })
}

/// The servers of a subscription body: a sing-box client config (JSON, what the panel
/// gives this client: it carries pinned certificates), a Clash (mihomo) config (YAML
/// with a `proxies` list, what panels give Clash apps: it carries pins as SHA-256),
/// or share links, plain or base64. A Clash proxy with no entry form (another type or
/// transport, ECH...) is left out with a warning, as servers the client cannot
/// use are. REALITY servers are read in every format, and left out by
/// [`Outbound::new`](crate::Outbound::new) (this client cannot speak REALITY).
pub fn parse_body(text: &str) -> Result<Vec<Entry>, BodyError> {
    if text.trim_start().starts_with('{') {
        let config: serde_json::Value = serde_json::from_str(text).map_err(BodyError::Json)?;
        return Ok(switchyard_proto::singbox::entries(&config)?);
    }
    if is_clash(text) {
        let read = switchyard_proto::clash::read(text)?;
        for skipped in &read.skipped {
            tracing::warn!(server = %skipped.name, "left out: {skipped}");
        }
        return Ok(read.entries);
    }
    Ok(parse_subscription(text)?)
}

/// Whether a body that is not JSON is a Clash config: a line that opens its
/// top-level `proxies` key (plain or quoted, as this panel writes it). Share links
/// and base64 never start a line so.
fn is_clash(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines().any(|line| {
        ["proxies:", "\"proxies\":", "'proxies':"]
            .iter()
            .any(|key| line.starts_with(key))
    })
}

/// An answer's headers, in order.
pub type Head = Vec<(String, String)>;

async fn get(t: &Target) -> Result<(Head, Vec<u8>), FetchError> {
    let tcp = TcpStream::connect((t.host.as_str(), t.port))
        .await
        .map_err(FetchError::Connect)?;
    if t.tls {
        let roots =
            rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let config =
            rustls::ClientConfig::builder_with_provider(switchyard_tunnel::link::pin::provider())
                .with_safe_default_protocol_versions()?
                .with_root_certificates(roots)
                .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(t.host.clone()).map_err(|_| {
            FetchError::ServerName {
                host: t.host.clone(),
            }
        })?;
        let s = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(FetchError::Tls)?;
        exchange(s, t).await
    } else {
        exchange(tcp, t).await
    }
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    t: &Target,
) -> Result<(Head, Vec<u8>), FetchError> {
    let host = if t.host.contains(':') {
        format!("[{}]", t.host)
    } else {
        t.host.clone()
    };
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: switchyard-client/{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        t.path,
        env!("CARGO_PKG_VERSION")
    );
    s.write_all(request.as_bytes())
        .await
        .map_err(FetchError::Io)?;
    let mut raw = Vec::new();
    let mut limited = (&mut s).take((MAX_BODY + 64 * 1024) as u64);
    // A TLS peer that closes without close_notify still gave us the whole body when
    // its length says so; the length is checked below.
    if let Err(e) = limited.read_to_end(&mut raw).await
        && raw.is_empty()
    {
        return Err(FetchError::Io(e));
    }
    let (head, body) = parse_response(&raw)?;
    Ok((head, body.to_vec()))
}

/// Reads a whole HTTP/1.1 answer (through `httparse`): a `200` with its headers and a
/// body that is exactly its `Content-Length` (when given) and at most [`MAX_BODY`].
pub fn parse_response(raw: &[u8]) -> Result<(Head, &[u8]), AnswerError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let used = match response.parse(raw)? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Err(AnswerError::CutShort),
    };
    let code = response.code.unwrap_or(0);
    if code != 200 {
        return Err(AnswerError::Status {
            code,
            reason: response.reason.unwrap_or_default().to_owned(),
        });
    }
    let head: Head = response
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let body = &raw[used..];
    if head
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        return Err(AnswerError::Chunked);
    }
    if let Some(len) = head
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        && len != body.len()
    {
        return Err(AnswerError::Length {
            got: body.len(),
            expected: len,
        });
    }
    if body.len() > MAX_BODY {
        return Err(AnswerError::TooLarge);
    }
    Ok((head, body))
}

#[cfg(test)]
mod tests {
    use switchyard_proto::entry::{EntryProtocol, EntryTls, EntryTransport};
    use switchyard_proto::{clash, share, singbox};

    use super::*;
    use crate::Outbound;

    /// A server of each protocol, TLS pinned by a certificate for the Trojan one.
    fn served() -> Vec<Entry> {
        let entry = |name: &str, protocol, transport, tls| Entry {
            name: name.into(),
            server: "node.example.com".into(),
            port: 443,
            protocol,
            transport,
            tls,
            route: None,
        };
        vec![
            entry(
                "🇯🇵 Tokyo",
                EntryProtocol::Vless {
                    uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
                    flow: None,
                },
                EntryTransport::Tcp,
                None,
            ),
            entry(
                "Trojan WS",
                EntryProtocol::Trojan {
                    password: "pw".into(),
                },
                EntryTransport::Ws {
                    path: "/t?ed=2048".into(),
                    host: Some("cdn.example.com".into()),
                },
                Some(EntryTls {
                    server_name: Some("node.example.com".into()),
                    certificate_pem: Some(
                        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into(),
                    ),
                    ..EntryTls::default()
                }),
            ),
            entry(
                "SS",
                EntryProtocol::Shadowsocks {
                    method: "2022-blake3-aes-128-gcm".into(),
                    password: "c2VydmVy:dXNlcg==".into(),
                },
                EntryTransport::Tcp,
                None,
            ),
        ]
    }

    /// `entry` with its pinned certificate as the SHA-256 a Clash config carries.
    fn pinned_by_hash(entry: &Entry) -> Entry {
        let mut e = entry.clone();
        if let Some(tls) = &mut e.tls {
            tls.certificate_sha256 = tls.pin_sha256();
            tls.certificate_pem = None;
        }
        e
    }

    #[test]
    fn a_clash_body_reads_as_the_same_servers_as_the_sing_box_one() {
        let entries = served();
        let yaml = clash::client_config(&entries, &clash::ClashOptions::default());
        let json = singbox::client_config(&entries, &singbox::SingBoxOptions::default());
        let from_clash = parse_body(&yaml).unwrap();
        let from_sing_box = parse_body(&json.to_string()).unwrap();
        assert_eq!(from_sing_box, entries);
        let expected: Vec<Entry> = entries.iter().map(pinned_by_hash).collect();
        assert_eq!(from_clash, expected);
        // The VLESS and the Trojan one (pinned by the hash) are servers the client
        // can use.
        for entry in &from_clash[..2] {
            if let Err(e) = Outbound::new(entry.clone()) {
                panic!("{e}");
            }
        }
        // With a byte-order mark, and with the key plain (as other panels write it).
        assert_eq!(parse_body(&format!("\u{feff}{yaml}")).unwrap(), expected);
        let plain = yaml.replace("\"proxies\":", "proxies:");
        assert_eq!(parse_body(&plain).unwrap(), expected);
    }

    #[test]
    fn clash_proxies_without_an_entry_form_are_left_out_and_malformed_ones_refused() {
        let body = "mixed-port: 7890\nproxies:\n- name: VMess\n  type: vmess\n  server: h\n  port: 443\n- name: T\n  type: trojan\n  server: h\n  port: 443\n  password: pw\n  sni: h\n  client-fingerprint: chrome\nrules:\n- MATCH,DIRECT\n";
        let entries = parse_body(body).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].name, "T");
        assert_eq!(
            parse_body("proxies:\n  - {name: x, type: vless, server: h, port: 443}\n")
                .unwrap_err()
                .to_string(),
            "proxies[0] (\"x\"): `uuid` is missing"
        );
        assert_eq!(
            parse_body("proxies: 3\n").unwrap_err().to_string(),
            "a Clash config is a mapping with a `proxies` list; this has none"
        );
        // Share links and base64 of them go the way they went.
        let links = share::links(&served());
        assert_eq!(
            parse_body(&links).map_err(|e| e.to_string()),
            share::parse_subscription(&links).map_err(|e| e.to_string())
        );
        let base64 = share::subscription_base64(&served());
        assert_eq!(parse_body(&base64).unwrap().len(), 3);
    }

    /// A REALITY server is read in every format (so the subscription is not refused
    /// for it) and then left out by name, the other servers kept.
    #[test]
    fn reality_servers_are_read_then_left_out_and_the_rest_kept() {
        let mut entries = served();
        entries.insert(
            1,
            Entry {
                name: "REALITY".into(),
                server: "node.example.com".into(),
                port: 443,
                protocol: EntryProtocol::Vless {
                    uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
                    flow: None,
                },
                transport: EntryTransport::Tcp,
                tls: Some(EntryTls {
                    server_name: Some("www.example.com".into()),
                    fingerprint: Some("chrome".into()),
                    reality: Some(switchyard_proto::EntryReality {
                        public_key: "PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0".into(),
                        short_id: "6ba85179e30d4fc2".into(),
                    }),
                    ..EntryTls::default()
                }),
                route: None,
            },
        );
        let bodies = [
            share::subscription_base64(&entries),
            clash::client_config(&entries, &clash::ClashOptions::default()),
            singbox::client_config(&entries, &singbox::SingBoxOptions::default()).to_string(),
        ];
        for body in bodies {
            let read = parse_body(&body).unwrap();
            assert_eq!(read.len(), 4, "{body}");
            assert_eq!(read[1].tls, entries[1].tls);
            let reality = Outbound::new(read[1].clone()).unwrap_err().to_string();
            assert!(
                reality.contains("REALITY is not supported by this client"),
                "{reality}"
            );
            // (The SS entry's made-up key is refused for its own reason.)
            let usable: Vec<String> = read
                .into_iter()
                .filter_map(|e| Outbound::new(e).ok())
                .map(|o| o.entry().name.clone())
                .collect();
            assert_eq!(usable, ["🇯🇵 Tokyo", "Trojan WS"]);
        }
    }

    #[test]
    fn answers_are_taken_only_whole_and_200() {
        let ok =
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nprofile-update-interval: 12\r\n\r\nhello";
        let (head, body) = parse_response(ok).unwrap();
        assert_eq!(body, b"hello");
        assert_eq!(head[1], ("profile-update-interval".into(), "12".into()));
        assert_eq!(
            parse_response(b"HTTP/1.1 404 Not Found\r\n\r\n")
                .unwrap_err()
                .to_string(),
            "HTTP 404 Not Found"
        );
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello")
                .unwrap_err()
                .to_string(),
            "5 of 9 bytes of body"
        );
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-")
                .unwrap_err()
                .to_string(),
            "the answer's head is cut short"
        );
        assert!(parse_response(b"\x16\x03\x01 binary").is_err());
    }

    #[test]
    fn urls_are_read_or_refused_with_the_reason() {
        let t = target("https://panel.example.com/sub/abc").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.path.as_str()),
            (true, "panel.example.com", 443, "/sub/abc")
        );
        let t = target("http://[::1]:2053/sub/x?format=links").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.path.as_str()),
            (false, "::1", 2053, "/sub/x?format=links")
        );
        let t = target("http://127.0.0.1:8080").unwrap();
        assert_eq!((t.port, t.path.as_str()), (8080, "/"));
        assert_eq!(
            target("ftp://x/").err().unwrap().to_string(),
            "must start with http:// or https://"
        );
        assert_eq!(target("http://:80/").err(), Some(UrlError::NoHost));
        assert_eq!(target("http://:80/").err().unwrap().to_string(), "no host");
        assert_eq!(target("http://h:99999/").err(), Some(UrlError::Port));
        assert_eq!(
            target("http://h:99999/").err().unwrap().to_string(),
            "bad port"
        );
    }

    /// HTTPUpgrade servers are read in every format the panel writes (share links,
    /// Clash's `ws` with `v2ray-http-upgrade`, sing-box's `httpupgrade` transport)
    /// and the client uses them.
    #[test]
    fn httpupgrade_servers_are_read_in_every_format_and_used() {
        let entries = vec![Entry {
            name: "VLESS Up".into(),
            server: "node.example.com".into(),
            port: 443,
            protocol: EntryProtocol::Vless {
                uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
                flow: None,
            },
            transport: EntryTransport::HttpUpgrade {
                path: "/up".into(),
                host: Some("cdn.example.com".into()),
            },
            tls: Some(EntryTls {
                server_name: Some("node.example.com".into()),
                ..EntryTls::default()
            }),
            route: None,
        }];
        let bodies = [
            share::subscription_base64(&entries),
            clash::client_config(&entries, &clash::ClashOptions::default()),
            singbox::client_config(&entries, &singbox::SingBoxOptions::default()).to_string(),
        ];
        for body in bodies {
            let read = parse_body(&body).unwrap();
            assert_eq!(read.len(), 1, "{body}");
            assert_eq!(read[0].transport, entries[0].transport, "{body}");
            let outbound = Outbound::new(read[0].clone()).unwrap();
            assert_eq!(outbound.entry().name, "VLESS Up");
        }
    }
}
