//! A headless Chromium for the panel's web UI tests, driven through chromedriver.
//!
//! [`Browser::start`] runs chromedriver on a free port of 127.0.0.1, waits until it
//! listens and opens a WebDriver session (through the `fantoccini` client, plain HTTP)
//! with Debian's Chromium, headless, in a fresh profile, capturing the page's console.
//! Dropping it ends the session (Chromium quits), then kills chromedriver's whole
//! process group, so no Chromium process outlives the value; the profile and
//! chromedriver's log are in a temporary directory removed last, and that log's tail
//! is printed when a test panics.
//!
//! [`chromedriver`] and [`chromium`] find the programs: [`CHROMEDRIVER_ENV`] /
//! [`CHROMIUM_ENV`] when set (`cargo xtask test` sets them), else `/usr/bin/<name>`,
//! else `<name>` on `PATH`. Missing ones are an error saying to run `cargo xtask
//! peers`, which installs Debian's `chromium` and `chromium-driver`; a test never
//! skips because of it.
//!
//! The methods are the few a UI test needs ([`Browser::goto`], [`Browser::find`],
//! [`Browser::wait_for`], [`Element::click`], [`Browser::drag`], [`Browser::press`],
//! [`Browser::console_errors`], ...), each failing with the selector or the page it
//! was about; [`Browser::client`] gives the full WebDriver client for anything else.
//! [`Browser::drag`] is made of W3C pointer actions, so the UI's drag and drop must
//! listen to pointer events (`pointerdown`, `pointermove`, `pointerup`):
//! chromedriver does not synthesize HTML5 drag-and-drop events.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use fantoccini::actions::{
    InputSource as _, KeyAction, KeyActions, MOUSE_BUTTON_LEFT, MOUSE_BUTTON_RIGHT, MouseActions,
    PointerAction,
};
use fantoccini::key::Key;
use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tokio::time::{Instant, sleep, timeout};

use crate::peer::Process;
use crate::{free_port, local};

/// The variable holding the absolute path of chromedriver.
pub const CHROMEDRIVER_ENV: &str = "SWITCHYARD_CHROMEDRIVER";

/// The variable holding the absolute path of the Chromium binary.
pub const CHROMIUM_ENV: &str = "SWITCHYARD_CHROMIUM";

/// Chromium's command line: headless, no sandbox (the tests run as root, where the
/// sandbox refuses to start), software rendering, shared memory in `/tmp` (a
/// container's `/dev/shm` is often tiny), and a fixed window so screenshots and
/// layouts are the same on every machine. `--user-data-dir` is added per session.
pub const CHROMIUM_ARGS: [&str; 5] = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--window-size=1280,800",
];

/// A timeout for [`Browser::wait_for`] and [`Browser::wait_until_text`] that suits most
/// tests: a page of ours reacts within milliseconds; the bound only matters when
/// something is wrong, and 10 s leaves room for a loaded CI machine.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// How long [`Browser::start`] waits for Chromium to open the session: it takes a
/// second or two; 30 s leaves room for a cold disk cache on a loaded machine.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the waits look at the page again.
const POLL: Duration = Duration::from_millis(50);

/// The pointer moves of a [`Browser::drag`] between the press and the release, and
/// how long each takes: enough `pointermove` events for a UI that starts a drag past
/// a threshold and tracks the pointer, in a fraction of a second.
const DRAG_STEPS: u32 = 10;
const DRAG_STEP: Duration = Duration::from_millis(20);

/// The chromedriver binary: [`CHROMEDRIVER_ENV`] when set, else
/// `/usr/bin/chromedriver`, else `chromedriver` on `PATH`. Fails, saying to run
/// `cargo xtask peers`, when none is there.
pub fn chromedriver() -> Result<PathBuf> {
    locate("chromedriver", CHROMEDRIVER_ENV)
}

/// The Chromium binary: [`CHROMIUM_ENV`] when set, else `/usr/bin/chromium`, else
/// `chromium` on `PATH`. Fails, saying to run `cargo xtask peers`, when none is there.
pub fn chromium() -> Result<PathBuf> {
    locate("chromium", CHROMIUM_ENV)
}

fn locate(name: &str, env: &str) -> Result<PathBuf> {
    let mut candidates = vec![Path::new("/usr/bin").join(name)];
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|dir| dir.join(name)));
    }
    locate_in(
        name,
        env,
        std::env::var_os(env).map(PathBuf::from),
        &candidates,
    )
}

fn locate_in(
    name: &str,
    env: &str,
    from_env: Option<PathBuf>,
    candidates: &[PathBuf],
) -> Result<PathBuf> {
    if let Some(path) = from_env {
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            "{name} not found at {} (from {env}): run `cargo xtask peers`, which installs \
             Debian's chromium and chromium-driver, or unset {env}",
            path.display()
        );
    }
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    bail!(
        "{name} not found ({env} is unset; looked at /usr/bin/{name} and on PATH): run \
         `cargo xtask peers`, which installs Debian's chromium and chromium-driver (or \
         `cargo xtask test`, which does it first)"
    )
}

/// A headless Chromium session; see the [module docs](self).
pub struct Browser {
    client: Client,
    /// The WebDriver session's id, for ending it on drop.
    session: String,
    port: u16,
    // Declared last: Chromium dies with it, then the profile and log go.
    _driver: Driver,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session in a fresh profile, in
    /// US English (whatever the machine's locale), so pages that follow the
    /// browser's language are the same everywhere.
    pub async fn start() -> Result<Self> {
        Self::start_in("en-US").await
    }

    /// [`Browser::start`] with the browser's language `lang` (a BCP 47 tag such as
    /// `fa-IR`): `navigator.languages` and the `Accept-Language` it sends.
    pub async fn start_in(lang: &str) -> Result<Self> {
        let driver_path = chromedriver()?;
        let chromium_path = chromium()?;
        let dir = tempfile::Builder::new()
            .prefix("switchyard-browser-")
            .tempdir()
            .context("creating a temporary directory for Chromium's profile")?;
        let profile = dir.path().join("profile");
        let port = free_port()?;
        let mut command = Command::new(&driver_path);
        // chromedriver listens on the loopback addresses and lets only local clients
        // in by default; its own process group lets the drop kill Chromium with it.
        command.arg(format!("--port={port}")).process_group(0);
        let driver =
            Driver(Process::spawn("chromedriver", command, dir, &[(local(port), true)]).await?);

        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push(format!("--lang={lang}"));
        args.push(format!("--accept-lang={lang}"));
        let mut capabilities = Capabilities::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": chromium_path, "args": args,
                "prefs": { "intl": { "accept_languages": lang } } }),
        );
        capabilities.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
        let mut builder = ClientBuilder::new(HttpConnector::new());
        builder.capabilities(capabilities);
        let url = format!("http://{}", local(port));
        let client = match timeout(SESSION_TIMEOUT, builder.connect(&url)).await {
            Ok(Ok(client)) => client,
            Ok(Err(err)) => bail!(
                "chromedriver at {url} could not start {}: {err}; its log ends with:\n{}",
                chromium_path.display(),
                driver.0.log_tail()
            ),
            Err(_) => bail!(
                "chromedriver at {url} did not open a session with {} within \
                 {SESSION_TIMEOUT:?}; its log ends with:\n{}",
                chromium_path.display(),
                driver.0.log_tail()
            ),
        };
        let session = client
            .session_id()
            .await?
            .context("chromedriver opened a session without an id")?;
        Ok(Self {
            client,
            session,
            port,
            _driver: driver,
        })
    }

    /// The WebDriver client, for what the methods here do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Loads `url` and waits for its `load` event.
    pub async fn goto(&self, url: &str) -> Result<()> {
        self.client
            .goto(url)
            .await
            .with_context(|| format!("loading {url}"))
    }

    /// The page's current URL.
    pub async fn current_url(&self) -> Result<String> {
        Ok(self
            .client
            .current_url()
            .await
            .context("reading the page's URL")?
            .to_string())
    }

    /// The first element matching the CSS selector `css`, displayed or not.
    pub async fn find(&self, css: &str) -> Result<Element> {
        match self.client.find(Locator::Css(css)).await {
            Ok(inner) => Ok(Element::new(inner, css)),
            Err(err) => bail!(
                "no element matches `{css}` on {}: {err}",
                self.url_or_err().await
            ),
        }
    }

    /// Every element matching the CSS selector `css`, in document order (none is not
    /// an error).
    pub async fn find_all(&self, css: &str) -> Result<Vec<Element>> {
        let found = self
            .client
            .find_all(Locator::Css(css))
            .await
            .with_context(|| format!("finding `{css}`"))?;
        Ok(found.into_iter().map(|e| Element::new(e, css)).collect())
    }

    /// The first element matching `css` that is displayed, once there is one; fails
    /// after `wait`, naming the selector and the page.
    pub async fn wait_for(&self, css: &str, wait: Duration) -> Result<Element> {
        let deadline = Instant::now() + wait;
        loop {
            for element in self.find_all(css).await? {
                // An element replaced since find_all is "stale": just look again.
                if element.inner.is_displayed().await.unwrap_or(false) {
                    return Ok(element);
                }
            }
            if Instant::now() >= deadline {
                bail!(
                    "no displayed element matches `{css}` after {wait:?} on {}",
                    self.url_or_err().await
                );
            }
            sleep(POLL).await;
        }
    }

    /// The first element matching `css` whose text contains `substring`, once there
    /// is one; fails after `wait` with the texts last seen and the page.
    pub async fn wait_until_text(
        &self,
        css: &str,
        substring: &str,
        wait: Duration,
    ) -> Result<Element> {
        let deadline = Instant::now() + wait;
        loop {
            let mut seen = Vec::new();
            for element in self.find_all(css).await? {
                let Ok(text) = element.inner.text().await else {
                    continue; // replaced meanwhile
                };
                if text.contains(substring) {
                    return Ok(element);
                }
                seen.push(text);
            }
            if Instant::now() >= deadline {
                bail!(
                    "no element matching `{css}` has text containing {substring:?} after \
                     {wait:?} on {} (texts seen: {seen:?})",
                    self.url_or_err().await
                );
            }
            sleep(POLL).await;
        }
    }

    /// Runs `js` as the body of a function in the page, `args` as its `arguments`
    /// ([`Element::as_arg`] passes an element), and returns what it returns.
    pub async fn execute(&self, js: &str, args: Vec<Value>) -> Result<Value> {
        self.client
            .execute(js, args)
            .await
            .with_context(|| format!("running script {js:?}"))
    }

    /// Writes a PNG of the viewport to `path` (its directory is created).
    pub async fn screenshot(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let png = self
            .client
            .screenshot()
            .await
            .context("taking a screenshot")?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))
    }

    /// Resizes the window to `width` × `height` CSS pixels.
    pub async fn set_window_size(&self, width: u32, height: u32) -> Result<()> {
        self.client
            .set_window_size(width, height)
            .await
            .with_context(|| format!("resizing the window to {width}x{height}"))
    }

    /// Drags `from` onto `to` with the mouse: presses at the centre of `from`, moves
    /// in [`DRAG_STEPS`] steps to the centre of `to` and releases there. `from` is
    /// scrolled into view first; both centres must then be inside the viewport.
    pub async fn drag(&self, from: &Element, to: &Element) -> Result<()> {
        let centres = self
            .execute(
                "const [from, to] = arguments;
                 from.scrollIntoView({ block: 'nearest', inline: 'nearest' });
                 const centre = (e) => {
                   const r = e.getBoundingClientRect();
                   return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
                 };
                 return [centre(from), centre(to)];",
                vec![from.as_arg()?, to.as_arg()?],
            )
            .await?;
        let point = |i: usize| -> Result<(f64, f64)> {
            let p = &centres[i];
            Ok((
                p[0].as_f64().context("a centre's x")?,
                p[1].as_f64().context("a centre's y")?,
            ))
        };
        let ((fx, fy), (tx, ty)) = (point(0)?, point(1)?);
        // Viewport coordinates, not offsets from an element: a UI that moves the
        // dragged element under the pointer would move an element origin along.
        let mut mouse = MouseActions::new("drag".to_owned())
            .then(PointerAction::MoveTo {
                duration: None,
                x: fx,
                y: fy,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            });
        for step in 1..=DRAG_STEPS {
            let f = f64::from(step) / f64::from(DRAG_STEPS);
            mouse = mouse.then(PointerAction::MoveTo {
                duration: Some(DRAG_STEP),
                x: (fx + (tx - fx) * f).round(),
                y: (fy + (ty - fy) * f).round(),
            });
        }
        mouse = mouse.then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
        self.client.perform_actions(mouse).await.with_context(|| {
            format!(
                "dragging `{}` ({fx},{fy}) onto `{}` ({tx},{ty})",
                from.selector, to.selector
            )
        })
    }

    /// The centre of `el` in viewport coordinates, scrolled into view first.
    async fn centre(&self, el: &Element) -> Result<(f64, f64)> {
        let c = self
            .execute(
                "const e = arguments[0];
                 e.scrollIntoView({ block: 'nearest', inline: 'nearest' });
                 const r = e.getBoundingClientRect();
                 return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];",
                vec![el.as_arg()?],
            )
            .await?;
        Ok((
            c[0].as_f64().context("the centre's x")?,
            c[1].as_f64().context("the centre's y")?,
        ))
    }

    /// Clicks `el` with the right mouse button (what opens a context menu).
    pub async fn right_click(&self, el: &Element) -> Result<()> {
        let (x, y) = self.centre(el).await?;
        let mouse = MouseActions::new("right-click".to_owned())
            .then(PointerAction::MoveTo {
                duration: None,
                x,
                y,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_RIGHT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_RIGHT,
            });
        self.client
            .perform_actions(mouse)
            .await
            .with_context(|| format!("right-clicking `{}`", el.selector))
    }

    /// Presses `el` with the left button, holds it for `hold` without moving, and
    /// lets go: a long press.
    pub async fn long_press(&self, el: &Element, hold: Duration) -> Result<()> {
        let (x, y) = self.centre(el).await?;
        let mouse = MouseActions::new("long-press".to_owned())
            .then(PointerAction::MoveTo {
                duration: None,
                x,
                y,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Pause { duration: hold })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        self.client
            .perform_actions(mouse)
            .await
            .with_context(|| format!("long-pressing `{}`", el.selector))
    }

    /// Presses and releases `key` on the focused element: a `KeyboardEvent.key` name
    /// (`Enter`, `Tab`, `Escape`, `Backspace`, `Delete`, `ArrowDown`, `ArrowUp`,
    /// `ArrowLeft`, `ArrowRight`, `Home`, `End`, `PageUp`, `PageDown`, `Space`) or a
    /// single character.
    pub async fn press(&self, key: &str) -> Result<()> {
        let value = key_value(key)?;
        let keys = KeyActions::new("keyboard".to_owned())
            .then(KeyAction::Down { value })
            .then(KeyAction::Up { value });
        self.client
            .perform_actions(keys)
            .await
            .with_context(|| format!("pressing {key}"))
    }

    /// The browser console's messages of level `SEVERE` (`console.error`, uncaught
    /// exceptions, failed loads such as a 404) logged since the last call: reading
    /// the log empties it.
    pub async fn console_errors(&self) -> Result<Vec<String>> {
        let log = self
            .client
            .issue_cmd(BrowserLog)
            .await
            .context("reading the browser console's log")?;
        let entries = log.as_array().context("the browser log is not a list")?;
        Ok(entries
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            .filter_map(|e| e["message"].as_str().map(str::to_owned))
            .collect())
    }

    /// The page's URL for an error message, or why it is unknown.
    async fn url_or_err(&self) -> String {
        self.current_url()
            .await
            .unwrap_or_else(|err| format!("(unknown page: {err:#})"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ending the session lets Chromium quit and clean its profile; the client's
        // own "end the session" on drop needs a runtime that may be gone by then.
        // The driver's drop kills whatever is left.
        delete_session(self.port, &self.session);
    }
}

/// chromedriver, in a process group of its own that Chromium joins.
struct Driver(Process);

impl Drop for Driver {
    /// Kills the whole group: Chromium's processes left after the session ended (its
    /// zygotes), or all of them when it did not (a failed start, a hung driver). The
    /// group's id is chromedriver's pid, not yet reaped (that is [`Process`]'s drop,
    /// next), so it cannot name another group.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// `DELETE /session/{id}` to chromedriver, blocking (a drop cannot await); errors
/// are ignored, since the process group is killed next anyway.
fn delete_session(port: u16, session: &str) {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&local(port), SESSION_TIMEOUT) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(SESSION_TIMEOUT));
    let request = format!(
        "DELETE /session/{session} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n",
        local(port)
    );
    if stream.write_all(request.as_bytes()).is_ok() {
        // chromedriver answers once Chromium has quit; the answer's first bytes are
        // enough (it keeps the connection open whatever `Connection` says).
        let _ = stream.read(&mut [0u8; 256]);
    }
}

/// The WebDriver key value for a `KeyboardEvent.key` name or a single character.
fn key_value(key: &str) -> Result<char> {
    let named = match key {
        // Return, not Enter: WebDriver's Enter is the numeric keypad's.
        "Enter" => Key::Return,
        "Tab" => Key::Tab,
        "Escape" => Key::Escape,
        "Backspace" => Key::Backspace,
        "Delete" => Key::Delete,
        "ArrowDown" => Key::Down,
        "ArrowUp" => Key::Up,
        "ArrowLeft" => Key::Left,
        "ArrowRight" => Key::Right,
        "Home" => Key::Home,
        "End" => Key::End,
        "PageUp" => Key::PageUp,
        "PageDown" => Key::PageDown,
        "Space" => Key::Space,
        _ => {
            let mut chars = key.chars();
            return match (chars.next(), chars.next()) {
                (Some(c), None) => Ok(c),
                _ => bail!(
                    "unknown key {key:?}: use a KeyboardEvent.key name such as Enter, Tab, \
                     Escape or ArrowDown, or a single character"
                ),
            };
        }
    };
    Ok(named.into())
}

/// chromedriver's log of the page's console: `POST /session/{id}/se/log` with
/// `{"type": "browser"}` (the W3C-mode path of the old JSON Wire `log` command;
/// chromedriver 148 serves it), answering with `[{level, message, source,
/// timestamp}]` and emptying the log.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.to_owned()))
    }
}

/// An element of the page, found by a CSS selector that its errors name.
#[derive(Debug, Clone)]
pub struct Element {
    inner: fantoccini::elements::Element,
    selector: String,
}

impl Element {
    fn new(inner: fantoccini::elements::Element, selector: &str) -> Self {
        Self {
            inner,
            selector: selector.to_owned(),
        }
    }

    /// The WebDriver element, for what the methods here do not cover.
    pub fn inner(&self) -> &fantoccini::elements::Element {
        &self.inner
    }

    /// The element as an argument of [`Browser::execute`] (a DOM element in the
    /// script's `arguments`).
    pub fn as_arg(&self) -> Result<Value> {
        serde_json::to_value(&self.inner)
            .with_context(|| format!("passing `{}` to a script", self.selector))
    }

    /// Clicks its centre (scrolled into view first), as a user would.
    pub async fn click(&self) -> Result<()> {
        self.inner
            .click()
            .await
            .with_context(|| format!("clicking `{}`", self.selector))
    }

    /// Its rendered text (what a user sees, so none when hidden).
    pub async fn text(&self) -> Result<String> {
        self.inner
            .text()
            .await
            .with_context(|| format!("reading the text of `{}`", self.selector))
    }

    /// The attribute `name`, `None` when it has none.
    pub async fn attr(&self, name: &str) -> Result<Option<String>> {
        self.inner
            .attr(name)
            .await
            .with_context(|| format!("reading attribute {name} of `{}`", self.selector))
    }

    /// Whether it is displayed (rendered and not hidden by CSS).
    pub async fn is_displayed(&self) -> Result<bool> {
        self.inner
            .is_displayed()
            .await
            .with_context(|| format!("checking whether `{}` is displayed", self.selector))
    }

    /// Types `text` into it (focusing it first).
    pub async fn send_keys(&self, text: &str) -> Result<()> {
        self.inner
            .send_keys(text)
            .await
            .with_context(|| format!("typing into `{}`", self.selector))
    }

    /// Empties an input or textarea.
    pub async fn clear(&self) -> Result<()> {
        self.inner
            .clear()
            .await
            .with_context(|| format!("clearing `{}`", self.selector))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_says_to_run_xtask_peers() {
        let nowhere = PathBuf::from("/nonexistent/chromedriver");
        let err = locate_in("chromedriver", CHROMEDRIVER_ENV, Some(nowhere.clone()), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("chromedriver not found at /nonexistent/chromedriver")
                && err.contains("cargo xtask peers")
                && err.contains(CHROMEDRIVER_ENV),
            "{err}"
        );
        let err = locate_in("chromedriver", CHROMEDRIVER_ENV, None, &[nowhere])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cargo xtask peers") && err.contains("/usr/bin/chromedriver"),
            "{err}"
        );
    }

    #[test]
    fn keys_are_named_as_the_dom_names_them() {
        assert_eq!(key_value("Enter").unwrap(), '\u{e006}');
        assert_eq!(key_value("ArrowDown").unwrap(), '\u{e015}');
        assert_eq!(key_value("a").unwrap(), 'a');
        assert!(
            key_value("Enterr")
                .unwrap_err()
                .to_string()
                .contains("Enterr")
        );
    }
}
