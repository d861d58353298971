//! An XHTTP entry's `extra`: the settings beyond path, host and mode that a client
//! needs when they are not Xray's defaults (padding, the upload limits, XMUX). Xray
//! reads them as a JSON object with its own names (`xPaddingBytes`,
//! `scMaxEachPostBytes`, `scMinPostsIntervalMs`, `xmux.maxConcurrency`, ...), in
//! `xhttpSettings.extra` and in a share link's `extra=` parameter alike.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::xhttp::{
    DEFAULT_MAX_EACH_POST, DEFAULT_MIN_POSTS_INTERVAL_MS, DEFAULT_PADDING, Range, Settings, Xmux,
};

/// The settings of an XHTTP entry that are not Xray's defaults; `None` in a field is
/// the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XhttpExtra {
    /// The padding's length in every request (`xPaddingBytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_padding_bytes: Option<Range>,
    /// The largest packet-up POST body (`scMaxEachPostBytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sc_max_each_post_bytes: Option<Range>,
    /// The least time between two packet-up POSTs (`scMinPostsIntervalMs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sc_min_posts_interval_ms: Option<Range>,
    /// XMUX: `maxConcurrency` (streams at once on one connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<Range>,
    /// XMUX: `maxConnections` (connections at most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<Range>,
    /// XMUX: `cMaxReuseTimes` (streams a connection carries in its life).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_max_reuse_times: Option<Range>,
    /// XMUX: `cMaxLifetimeMs` (how long a connection takes new streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_max_lifetime_ms: Option<Range>,
}

/// The Xray names of the ranges at the top of `extra`.
const TOP: [&str; 3] = [
    "xPaddingBytes",
    "scMaxEachPostBytes",
    "scMinPostsIntervalMs",
];
/// The Xray names of the ranges in `extra.xmux`.
const XMUX: [&str; 4] = [
    "maxConcurrency",
    "maxConnections",
    "cMaxReuseTimes",
    "cMaxLifetimeMs",
];

impl XhttpExtra {
    /// What a client with `settings` must be told beyond path, host and mode;
    /// `None` when all of it is Xray's defaults.
    pub fn from_settings(settings: &Settings) -> Option<Self> {
        let differs = |value: Range, default: Range| (value != default).then_some(value);
        let extra = Self {
            x_padding_bytes: differs(settings.x_padding_bytes, DEFAULT_PADDING),
            sc_max_each_post_bytes: differs(settings.sc_max_each_post_bytes, DEFAULT_MAX_EACH_POST),
            sc_min_posts_interval_ms: differs(
                settings.sc_min_posts_interval_ms,
                DEFAULT_MIN_POSTS_INTERVAL_MS,
            ),
            max_concurrency: settings.xmux.max_concurrency,
            max_connections: settings.xmux.max_connections,
            c_max_reuse_times: settings.xmux.c_max_reuse_times,
            c_max_lifetime_ms: settings.xmux.c_max_lifetime_ms,
        };
        (extra != Self::default()).then_some(extra)
    }

    /// Puts these settings into `settings` (a client's), the defaults where unset.
    pub fn apply(&self, settings: &mut Settings) {
        settings.x_padding_bytes = self.x_padding_bytes.unwrap_or(DEFAULT_PADDING);
        settings.sc_max_each_post_bytes =
            self.sc_max_each_post_bytes.unwrap_or(DEFAULT_MAX_EACH_POST);
        settings.sc_min_posts_interval_ms = self
            .sc_min_posts_interval_ms
            .unwrap_or(DEFAULT_MIN_POSTS_INTERVAL_MS);
        settings.xmux = Xmux {
            max_concurrency: self.max_concurrency,
            max_connections: self.max_connections,
            c_max_reuse_times: self.c_max_reuse_times,
            c_max_lifetime_ms: self.c_max_lifetime_ms,
        };
    }

    fn top(&self) -> [Option<Range>; 3] {
        [
            self.x_padding_bytes,
            self.sc_max_each_post_bytes,
            self.sc_min_posts_interval_ms,
        ]
    }

    fn xmux(&self) -> [Option<Range>; 4] {
        [
            self.max_concurrency,
            self.max_connections,
            self.c_max_reuse_times,
            self.c_max_lifetime_ms,
        ]
    }

    /// The JSON object Xray reads as `extra`, ranges as `"from-to"` strings.
    pub fn to_xray(&self) -> Value {
        let mut out = Map::new();
        for (name, value) in TOP.iter().zip(self.top()) {
            if let Some(range) = value {
                out.insert((*name).to_owned(), json!(range.to_string()));
            }
        }
        let mut xmux = Map::new();
        for (name, value) in XMUX.iter().zip(self.xmux()) {
            if let Some(range) = value {
                xmux.insert((*name).to_owned(), json!(range.to_string()));
            }
        }
        if !xmux.is_empty() {
            out.insert("xmux".to_owned(), Value::Object(xmux));
        }
        Value::Object(out)
    }

    /// Reads Xray's `extra` object: the ranges named here (a number or a
    /// `"from-to"` string each); other keys of Xray's are ignored, as they change
    /// nothing this client does. `None` for something that is not an object or a
    /// range that does not read.
    pub fn from_xray(value: &Value) -> Option<Self> {
        let object = value.as_object()?;
        let range = |v: Option<&Value>| -> Option<Option<Range>> {
            match v {
                None | Some(Value::Null) => Some(None),
                Some(v) => serde_json::from_value::<Range>(v.clone()).ok().map(Some),
            }
        };
        let xmux = match object.get("xmux") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return None,
        };
        Some(Self {
            x_padding_bytes: range(object.get(TOP[0]))?,
            sc_max_each_post_bytes: range(object.get(TOP[1]))?,
            sc_min_posts_interval_ms: range(object.get(TOP[2]))?,
            max_concurrency: range(xmux.get(XMUX[0]))?,
            max_connections: range(xmux.get(XMUX[1]))?,
            c_max_reuse_times: range(xmux.get(XMUX[2]))?,
            c_max_lifetime_ms: range(xmux.get(XMUX[3]))?,
        })
    }
}
