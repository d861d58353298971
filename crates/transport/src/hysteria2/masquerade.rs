//! The masquerade as a reverse proxy: every HTTP/3 request of someone who does not
//! authenticate is passed to a real web site over HTTP/1.1 (TLS for `https://`), and
//! its answer comes back over HTTP/3, so a prober sees that site, as the official
//! server's `masquerade.type: proxy` shows it.
//!
//! The answer streams: its head goes out as the site sends it, then its body chunk by
//! chunk as it comes, so the node holds at most a chunk of it and a prober sees a
//! large page or asset arrive as from the site itself.
//!
//! Bounded like everything a stranger can start: a request body of at most
//! [`MAX_REQUEST_BODY`] (`413` past it), [`DEADLINE`] for the whole exchange (an
//! answer still streaming then is cut); a site that cannot be reached gets the prober
//! `502 Bad Gateway`, what a reverse proxy answers. Hop-by-hop headers are dropped
//! both ways and `Host` is the site's.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use tokio_rustls::TlsConnector;

/// The longest request body passed on.
pub const MAX_REQUEST_BODY: usize = 1 << 20;
/// How long one request may take, end to end.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A TLS client config that trusts the web's roots (Mozilla's, as `webpki-roots`
/// carries them), on ring: what an `https://` masquerade site is checked against.
pub fn web_roots() -> Result<Arc<ClientConfig>, rustls::Error> {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(Arc::new(
        ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}

/// Why a masquerade site is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SiteError {
    /// Not a URL.
    #[error("not a URL: {0}")]
    Url(String),
    /// A scheme other than `http` and `https`.
    #[error("the scheme must be http or https")]
    Scheme,
    /// No host, or user information in the URL.
    #[error("the URL needs a host and no user information")]
    Host,
}

/// A site the masquerade proxies to.
#[derive(Clone)]
pub struct ProxySite {
    host: String,
    port: u16,
    /// The `Host` header sent.
    authority: HeaderValue,
    /// TLS to the site (`https://`), checked against these roots.
    tls: Option<Arc<ClientConfig>>,
}

impl std::fmt::Debug for ProxySite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxySite")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl PartialEq for ProxySite {
    fn eq(&self, other: &Self) -> bool {
        self.host == other.host
            && self.port == other.port
            && self.tls.is_some() == other.tls.is_some()
    }
}

impl Eq for ProxySite {}

impl ProxySite {
    /// The site at `url` (`http://host[:port]` or `https://host[:port]`; a path is
    /// ignored: each request keeps its own). `https` is checked against `roots`
    /// (the web's, usually).
    pub fn new(url: &str, roots: Arc<ClientConfig>) -> Result<Self, SiteError> {
        let uri: Uri = url
            .parse()
            .map_err(|_| SiteError::Url(url.chars().take(64).collect()))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(SiteError::Scheme),
        };
        let authority = uri.authority().ok_or(SiteError::Host)?;
        if authority.as_str().contains('@') || authority.host().is_empty() {
            return Err(SiteError::Host);
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(Self {
            host,
            port,
            authority: HeaderValue::from_str(authority.as_str()).map_err(|_| SiteError::Host)?,
            tls: https.then_some(roots),
        })
    }

    /// Passes `request` (with `body`) to the site: the answer's head, and its body to
    /// stream ([`Answer::next`]); or `502` when the site fails (`504` when it does
    /// not answer), all within [`DEADLINE`].
    pub async fn answer(&self, request: Request<()>, body: Bytes) -> Answer {
        let deadline = Instant::now() + DEADLINE;
        match timeout_at(deadline, self.forward(request, body, deadline)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                tracing::debug!(site = %self.host, "masquerade: {e}");
                Answer::status(StatusCode::BAD_GATEWAY)
            }
            Err(_) => Answer::status(StatusCode::GATEWAY_TIMEOUT),
        }
    }

    async fn forward(
        &self,
        request: Request<()>,
        body: Bytes,
        deadline: Instant,
    ) -> Result<Answer, Box<dyn std::error::Error + Send + Sync>> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port)).await?;
        let _ = tcp.set_nodelay(true);
        let (parts, ()) = request.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let mut out = Request::builder().method(parts.method).uri(path);
        if let Some(headers) = out.headers_mut() {
            copy_end_to_end(&parts.headers, headers);
            headers.insert(header::HOST, self.authority.clone());
        }
        let out = out.body(Full::new(body))?;
        let answer = match &self.tls {
            None => send(tcp, out, deadline).await?,
            Some(config) => {
                let name = ServerName::try_from(self.host.clone())?;
                let tls = TlsConnector::from(config.clone())
                    .connect(name, tcp)
                    .await?;
                send(tls, out, deadline).await?
            }
        };
        Ok(answer)
    }
}

/// The site's answer: its head, and its body as it streams.
pub struct Answer {
    /// The status and the end-to-end headers (no `Content-Length`: the body's length
    /// is what arrives by the deadline).
    pub head: Response<()>,
    body: Option<Streaming>,
}

/// A body on its way from the site, and the task driving its connection.
struct Streaming {
    incoming: Incoming,
    driver: tokio::task::JoinHandle<()>,
    deadline: Instant,
}

impl Drop for Streaming {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("status", &self.head.status())
            .field("streaming", &self.body.is_some())
            .finish()
    }
}

impl Answer {
    /// An answer with `code` and no body.
    pub fn status(code: StatusCode) -> Self {
        let mut head = Response::new(());
        *head.status_mut() = code;
        Self { head, body: None }
    }

    /// The body's next chunk, as the site sends it; `None` at its end, when it
    /// fails, or at [`DEADLINE`] (the rest is cut).
    pub async fn next(&mut self) -> Option<Bytes> {
        let streaming = self.body.as_mut()?;
        loop {
            let frame = match timeout_at(streaming.deadline, streaming.incoming.frame()).await {
                Ok(Some(Ok(frame))) => frame,
                _ => {
                    self.body = None;
                    return None;
                }
            };
            // Trailers are not passed on.
            if let Ok(data) = frame.into_data()
                && !data.is_empty()
            {
                return Some(data);
            }
        }
    }
}

/// One HTTP/1.1 exchange on `io`: the answer's head, its body left to stream.
async fn send<T>(
    io: T,
    request: Request<Full<Bytes>>,
    deadline: Instant,
) -> Result<Answer, Box<dyn std::error::Error + Send + Sync>>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    let driver = tokio::spawn(async move {
        let _ = timeout_at(deadline, conn).await;
    });
    let response = match sender.send_request(request).await {
        Ok(r) => r,
        Err(e) => {
            driver.abort();
            return Err(e.into());
        }
    };
    let (parts, incoming) = response.into_parts();
    let mut head = Response::builder().status(parts.status);
    if let Some(headers) = head.headers_mut() {
        copy_end_to_end(&parts.headers, headers);
        headers.remove(header::CONTENT_LENGTH);
    }
    let body = Streaming {
        incoming,
        driver,
        deadline,
    };
    Ok(Answer {
        head: head.body(())?,
        body: Some(body),
    })
}

/// The headers of `from` that are not hop-by-hop (nor `Host`), into `to`.
fn copy_end_to_end(from: &HeaderMap, to: &mut HeaderMap) {
    const HOP: [&str; 8] = [
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ];
    for (name, value) in from {
        if HOP.contains(&name.as_str()) || *name == header::HOST {
            continue;
        }
        to.append(HeaderName::clone(name), value.clone());
    }
}
