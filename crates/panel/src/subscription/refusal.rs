//! Why a fetch gets no servers: the user may not connect (disabled, over the limit,
//! expired), or their device is one too many, or they have a device limit and their
//! app sends no `x-hwid` (unless the operator serves those). Such a fetch still gets a
//! valid subscription, with no servers and a title and announcement that say why, so
//! the app shows the reason instead of an error.

use crate::model::{FieldError, User, UserStatus};
use crate::service::ServiceError;
use crate::store::{DeviceOutcome, DeviceSeen, Store};

/// Why a user gets no servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The user may not connect.
    Status(UserStatus),
    /// The device is past the user's limit of this many.
    Devices(u32),
    /// The user has a device limit and the app does not identify the device.
    NoHwid,
}

impl Refusal {
    /// Appended to the title.
    pub fn title(&self) -> &'static str {
        match self {
            Self::Status(UserStatus::Disabled) => "disabled",
            Self::Status(UserStatus::Limited) => "traffic limit reached",
            Self::Status(UserStatus::Expired) => "expired",
            Self::Status(_) => "unavailable",
            Self::Devices(_) => "device limit reached",
            Self::NoHwid => "device not identified",
        }
    }

    /// The `announce` apps show.
    pub fn announce(&self) -> String {
        match self {
            Self::Status(UserStatus::Disabled) => "Your subscription is disabled.".into(),
            Self::Status(UserStatus::Limited) => {
                "You have used all the traffic of this period.".into()
            }
            Self::Status(UserStatus::Expired) => "Your subscription has expired.".into(),
            Self::Status(_) => "Your subscription is unavailable.".into(),
            Self::Devices(n) => format!(
                "This subscription is already used on {n} device(s), its limit; \
                 ask for a device to be removed."
            ),
            Self::NoHwid => "This app does not identify the device; use an app that sends x-hwid \
                 (Happ, v2RayTun, FlClashX...)."
                .into(),
        }
    }
}

/// Whether this fetch may have servers: the user's status, then their device limit.
/// `device` is the device the request names (none without `x-hwid`; an error for a
/// bad device header, which counts only once the status lets the user in); it is
/// registered at `now_ms`. `refuse_without_hwid`: a user with a device limit whose app
/// names no device is refused.
pub async fn refusal(
    store: &dyn Store,
    user: &User,
    device: Result<Option<DeviceSeen>, FieldError>,
    refuse_without_hwid: bool,
    now_ms: i64,
) -> Result<Option<Refusal>, ServiceError> {
    if matches!(
        user.status,
        UserStatus::Disabled | UserStatus::Limited | UserStatus::Expired
    ) {
        return Ok(Some(Refusal::Status(user.status)));
    }
    let Some(seen) = device? else {
        let refuse = user.device_limit.is_some() && refuse_without_hwid;
        return Ok(refuse.then_some(Refusal::NoHwid));
    };
    let outcome = store
        .register_device(user.id, &seen, user.device_limit, now_ms)
        .await?;
    Ok(match (outcome, user.device_limit) {
        (DeviceOutcome::OverLimit, Some(n)) => Some(Refusal::Devices(n)),
        _ => None,
    })
}
