//! The page's words in English, Russian and Persian, and its numbers, sizes and
//! dates as each language writes them: Persian with its own digits and the Solar
//! Hijri calendar (the one Iran uses), right to left; Russian with a decimal comma
//! and day.month.year. The language is the `?lang=` of the URL, else the first the
//! browser's `Accept-Language` names that the page has, else English.

use crate::model::UserStatus;
use crate::subscription::refusal::Refusal;

/// A language of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Lang {
    /// English.
    #[default]
    En,
    /// Russian.
    Ru,
    /// Persian (Farsi), right to left.
    Fa,
}

/// The most `Accept-Language` entries read; a real browser sends a handful.
const MAX_RANGES: usize = 32;

impl Lang {
    /// Every language, in the switch's order.
    pub const ALL: [Self; 3] = [Self::En, Self::Ru, Self::Fa];

    /// The language's code, as in `lang="…"` and `?lang=`.
    pub fn code(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Ru => "ru",
            Self::Fa => "fa",
        }
    }

    /// The language's name in itself.
    pub fn name(self) -> &'static str {
        match self {
            Self::En => "English",
            Self::Ru => "Русский",
            Self::Fa => "فارسی",
        }
    }

    /// `ltr` or `rtl`.
    pub fn dir(self) -> &'static str {
        match self {
            Self::Fa => "rtl",
            _ => "ltr",
        }
    }

    /// A language tag's language: `ru`, `RU-ru`, `fa-IR` → Russian, Persian;
    /// `None` for any other.
    pub fn from_tag(tag: &str) -> Option<Self> {
        let primary = tag.trim().split(['-', '_']).next()?;
        Self::ALL
            .into_iter()
            .find(|l| primary.eq_ignore_ascii_case(l.code()))
    }

    /// The page's language: `?lang=` when it names one, else the
    /// `Accept-Language` range of the highest weight (the first of equals) that
    /// names one, else English. A weight of 0 means "not this one".
    pub fn negotiate(query: Option<&str>, accept_language: Option<&str>) -> Self {
        if let Some(lang) = query.and_then(Self::from_tag) {
            return lang;
        }
        let Some(header) = accept_language else {
            return Self::En;
        };
        let mut best: Option<(u16, Self)> = None;
        for range in header.split(',').take(MAX_RANGES) {
            let mut parts = range.split(';');
            let tag = parts.next().unwrap_or("");
            let weight = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(Some(1000), weight)
                .unwrap_or(0);
            if weight == 0 {
                continue;
            }
            if let Some(lang) = Self::from_tag(tag)
                && best.is_none_or(|(w, _)| weight > w)
            {
                best = Some((weight, lang));
            }
        }
        best.map_or(Self::En, |(_, l)| l)
    }
}

/// A `q` value in thousandths (`0.8` → 800); `None` when it is not one.
fn weight(q: &str) -> Option<u16> {
    let (whole, frac) = q.split_once('.').unwrap_or((q, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{frac:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// The page's fixed words in one language.
pub(super) struct Words {
    pub traffic: &'static str,
    pub expires: &'static str,
    pub never: &'static str,
    pub subscription: &'static str,
    pub add_hint: &'static str,
    pub links: &'static str,
    pub no_links: &'static str,
    pub copy: &'static str,
    pub copied: &'static str,
    pub too_long: &'static str,
    pub qr: &'static str,
    pub the_url: &'static str,
    pub support: &'static str,
    pub language: &'static str,
    pub unknown_date: &'static str,
}

const EN: Words = Words {
    traffic: "Traffic",
    expires: "Expires",
    never: "Never",
    subscription: "Subscription",
    add_hint: "Add this URL to your app, or scan the code.",
    links: "Links",
    no_links: "No links yet.",
    copy: "Copy",
    copied: "Copied",
    too_long: "Too long for a QR code: copy it instead.",
    qr: "QR code",
    the_url: "the subscription URL",
    support: "Support",
    language: "Language",
    unknown_date: "an unknown date",
};

const RU: Words = Words {
    traffic: "Трафик",
    expires: "Действует до",
    never: "Бессрочно",
    subscription: "Подписка",
    add_hint: "Добавьте эту ссылку в приложение или отсканируйте код.",
    links: "Ссылки",
    no_links: "Ссылок пока нет.",
    copy: "Копировать",
    copied: "Скопировано",
    too_long: "Слишком длинно для QR-кода: скопируйте текст.",
    qr: "QR-код",
    the_url: "ссылка подписки",
    support: "Поддержка",
    language: "Язык",
    unknown_date: "неизвестная дата",
};

const FA: Words = Words {
    traffic: "ترافیک",
    expires: "انقضا",
    never: "بدون انقضا",
    subscription: "اشتراک",
    add_hint: "این نشانی را به برنامه‌تان اضافه کنید یا کد را اسکن کنید.",
    links: "لینک‌ها",
    no_links: "هنوز لینکی نیست.",
    copy: "کپی",
    copied: "کپی شد",
    too_long: "برای کد QR بیش از حد طولانی است: آن را کپی کنید.",
    qr: "کد QR",
    the_url: "نشانی اشتراک",
    support: "پشتیبانی",
    language: "زبان",
    unknown_date: "تاریخ نامعلوم",
};

impl Lang {
    /// The fixed words.
    pub(super) fn words(self) -> &'static Words {
        match self {
            Self::En => &EN,
            Self::Ru => &RU,
            Self::Fa => &FA,
        }
    }

    /// A user's status as a person reads it.
    pub fn status(self, status: UserStatus) -> &'static str {
        use UserStatus::*;
        match (self, status) {
            (Self::En, s) => s.label(),
            (Self::Ru, Active) => "Активна",
            (Self::Ru, Limited) => "Трафик исчерпан",
            (Self::Ru, Expired) => "Истекла",
            (Self::Ru, Disabled) => "Отключена",
            (Self::Ru, OnHold) => "Ожидает первого подключения",
            (Self::Fa, Active) => "فعال",
            (Self::Fa, Limited) => "ترافیک تمام شده",
            (Self::Fa, Expired) => "منقضی‌شده",
            (Self::Fa, Disabled) => "غیرفعال",
            (Self::Fa, OnHold) => "در انتظار اولین اتصال",
        }
    }

    /// Why the subscription has no servers, as the page says it.
    pub fn reason(self, refusal: &Refusal) -> &'static str {
        use UserStatus::*;
        match (self, refusal) {
            (Self::En, r) => r.title(),
            (Self::Ru, Refusal::Status(Disabled)) => "подписка отключена",
            (Self::Ru, Refusal::Status(Limited)) => "лимит трафика исчерпан",
            (Self::Ru, Refusal::Status(Expired)) => "срок действия истёк",
            (Self::Ru, Refusal::Status(_)) => "недоступна",
            (Self::Ru, Refusal::Devices(_)) => "достигнут лимит устройств",
            (Self::Ru, Refusal::NoHwid) => "устройство не определено",
            (Self::Fa, Refusal::Status(Disabled)) => "اشتراک غیرفعال است",
            (Self::Fa, Refusal::Status(Limited)) => "ترافیک تمام شده",
            (Self::Fa, Refusal::Status(Expired)) => "اشتراک منقضی شده",
            (Self::Fa, Refusal::Status(_)) => "در دسترس نیست",
            (Self::Fa, Refusal::Devices(_)) => "به سقف دستگاه‌ها رسیده‌اید",
            (Self::Fa, Refusal::NoHwid) => "دستگاه شناسایی نشد",
        }
    }

    /// "1.2 GiB of 50 GiB (2%)".
    pub(super) fn used_of(self, used: u64, limit: u64, percent: u64) -> String {
        let (used, limit) = (self.bytes(used), self.bytes(limit));
        let percent = self.digits(&percent.to_string());
        match self {
            Self::En => format!("{used} of {limit} ({percent}%)"),
            Self::Ru => format!("{used} из {limit} ({percent}\u{a0}%)"),
            Self::Fa => format!("{used} از {limit} ({percent}٪)"),
        }
    }

    /// "1.2 GiB of unlimited".
    pub(super) fn used_unlimited(self, used: u64) -> String {
        let used = self.bytes(used);
        match self {
            Self::En => format!("{used} of unlimited"),
            Self::Ru => format!("{used} из безлимита"),
            Self::Fa => format!("{used} از نامحدود"),
        }
    }

    /// "2026-12-31 23:59 UTC (in 30 days)", "Expired on …".
    pub(super) fn expiry(self, date: &str, days_left: Option<u64>) -> String {
        let Some(n) = days_left else {
            return match self {
                Self::En => format!("Expired on {date}"),
                Self::Ru => format!("Истекла {date}"),
                Self::Fa => format!("در {date} منقضی شد"),
            };
        };
        let count = self.digits(&n.to_string());
        match self {
            Self::En if n == 1 => format!("{date} (in 1 day)"),
            Self::En => format!("{date} (in {n} days)"),
            Self::Ru => format!("{date} (через {count} {})", russian_days(n)),
            Self::Fa => format!("{date} ({count} روز دیگر)"),
        }
    }

    /// ASCII digits and the decimal point as the language writes them.
    pub(super) fn digits(self, ascii: &str) -> String {
        match self {
            Self::En => ascii.to_owned(),
            Self::Ru => ascii.replace('.', ","),
            Self::Fa => ascii
                .chars()
                .map(|c| match c {
                    '0'..='9' => char::from_u32(0x06F0 + (c as u32 - '0' as u32)).unwrap_or(c),
                    '.' => '٫',
                    _ => c,
                })
                .collect(),
        }
    }

    /// A size in binary units: "1.5 GiB", "1,5 ГиБ", "۱٫۵ گیگابایت".
    pub(super) fn bytes(self, n: u64) -> String {
        let text = super::format_bytes(n);
        let (number, unit) = text.split_once(' ').unwrap_or((&text, ""));
        let unit = match self {
            Self::En => unit,
            Self::Ru => match unit {
                "B" => "Б",
                "KiB" => "КиБ",
                "MiB" => "МиБ",
                "GiB" => "ГиБ",
                "TiB" => "ТиБ",
                "PiB" => "ПиБ",
                _ => "ЭиБ",
            },
            Self::Fa => match unit {
                "B" => "بایت",
                "KiB" => "کیلوبایت",
                "MiB" => "مگابایت",
                "GiB" => "گیگابایت",
                "TiB" => "ترابایت",
                "PiB" => "پتابایت",
                _ => "اگزابایت",
            },
        };
        // A space that does not break between the number and its unit, where the
        // unit is a word of its own.
        let space = if self == Self::En { ' ' } else { '\u{a0}' };
        format!("{}{space}{unit}", self.digits(number))
    }

    /// Unix ms as a UTC date and time: `2026-12-31 23:59 UTC`, `31.12.2026 23:59 UTC`,
    /// `۱۴۰۵/۱۰/۱۰ ۲۳:۵۹ UTC` (Solar Hijri); `None` outside the years 1 to 9999
    /// (and, in Persian, outside the years the calendar below knows).
    pub(super) fn date(self, ms: i64) -> Option<String> {
        let t = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)).ok()?;
        let (y, m, d) = (t.year(), u8::from(t.month()), t.day());
        if y < 1 {
            return None;
        }
        let clock = format!("{:02}:{:02}", t.hour(), t.minute());
        Some(match self {
            Self::En => format!("{y:04}-{m:02}-{d:02} {clock} UTC"),
            Self::Ru => format!("{d:02}.{m:02}.{y:04} {clock} UTC"),
            Self::Fa => {
                let (jy, jm, jd) = solar_hijri(y, m, d)?;
                self.digits(&format!("{jy}/{jm:02}/{jd:02} {clock}")) + " UTC"
            }
        })
    }
}

/// "день", "дня", "дней" for `n`.
fn russian_days(n: u64) -> &'static str {
    match (n % 10, n % 100) {
        (1, r) if r != 11 => "день",
        (2..=4, r) if !(12..=14).contains(&r) => "дня",
        _ => "дней",
    }
}

/// The Solar Hijri date of a Gregorian one, by the 2820-year-free arithmetic of
/// the 33-year cycles with the known breaks in the cycle (the method Iranian
/// software uses; exact for the years 1 to 3177 of the calendar, that is Gregorian
/// 622 to 3798). `None` outside them.
pub fn solar_hijri(gy: i32, gm: u8, gd: u8) -> Option<(i32, u8, u8)> {
    // Outside these the arithmetic below would overflow (a fuzz target found it).
    if !(622..=3797).contains(&gy) || !(1..=12).contains(&gm) || !(1..=31).contains(&gd) {
        return None;
    }
    let day = gregorian_day(gy, i32::from(gm), i32::from(gd));
    let mut jy = gy - 621;
    let (leap, march) = year_start(jy)?;
    let first = gregorian_day(gy, 3, march);
    let mut k = day - first;
    if k < 0 {
        jy -= 1;
        k += 179 + i32::from(leap == 1);
    } else if k <= 185 {
        return Some((jy, (1 + k / 31) as u8, (k % 31 + 1) as u8));
    } else {
        k -= 186;
    }
    Some((jy, (7 + k / 30) as u8, (k % 30 + 1) as u8))
}

/// The years the cycle changes, from the astronomical calculation.
const BREAKS: [i32; 20] = [
    -61, 9, 38, 199, 426, 686, 756, 818, 1111, 1181, 1210, 1635, 2060, 2097, 2192, 2262, 2324,
    2394, 2456, 3178,
];

/// For Solar Hijri year `jy`: how many years since its last leap year (0 when it
/// is one) and the day of March its year starts on (Gregorian year `jy + 621`).
fn year_start(jy: i32) -> Option<(i32, i32)> {
    if jy < BREAKS[0] || jy >= BREAKS[BREAKS.len() - 1] || jy < 1 {
        return None;
    }
    let gy = jy + 621;
    let mut leap_j = -14;
    let mut jp = BREAKS[0];
    let mut jump = 0;
    for &jm in &BREAKS[1..] {
        jump = jm - jp;
        if jy < jm {
            break;
        }
        leap_j += jump / 33 * 8 + (jump % 33) / 4;
        jp = jm;
    }
    let mut n = jy - jp;
    leap_j += n / 33 * 8 + (n % 33 + 3) / 4;
    if jump % 33 == 4 && jump - n == 4 {
        leap_j += 1;
    }
    let leap_g = gy / 4 - (gy / 100 + 1) * 3 / 4 - 150;
    let march = 20 + leap_j - leap_g;
    if jump - n < 6 {
        n = n - jump + (jump + 4) / 33 * 33;
    }
    let mut leap = ((n + 1) % 33 - 1) % 4;
    if leap == -1 {
        leap = 4;
    }
    Some((leap, march))
}

/// A day number of the proleptic Gregorian calendar (the Julian day number).
fn gregorian_day(gy: i32, gm: i32, gd: i32) -> i32 {
    let d = (gy + (gm - 8) / 6 + 100_100) * 1461 / 4 + (153 * ((gm + 9) % 12) + 2) / 5 + gd
        - 34_840_408;
    d - (gy + 100_100 + (gm - 8) / 6) / 100 * 3 / 4 + 752
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nowruz_and_known_dates() {
        // 1 Farvardin, the first day of spring, of each year.
        assert_eq!(solar_hijri(2024, 3, 20), Some((1403, 1, 1)));
        assert_eq!(solar_hijri(2025, 3, 21), Some((1404, 1, 1)));
        assert_eq!(solar_hijri(2026, 3, 21), Some((1405, 1, 1)));
        assert_eq!(solar_hijri(2026, 3, 20), Some((1404, 12, 29)));
        // Leap 1403: its Esfand has 30 days.
        assert_eq!(solar_hijri(2025, 3, 20), Some((1403, 12, 30)));
        assert_eq!(solar_hijri(2026, 12, 31), Some((1405, 10, 10)));
        assert_eq!(solar_hijri(2026, 9, 22), Some((1405, 6, 31)));
        assert_eq!(solar_hijri(2026, 9, 23), Some((1405, 7, 1)));
        assert_eq!(solar_hijri(1979, 2, 11), Some((1357, 11, 22)));
        assert_eq!(solar_hijri(-5, 1, 1), None);
        assert_eq!(solar_hijri(i32::MAX, 1, 1), None);
        assert_eq!(solar_hijri(2026, 13, 1), None);
        assert_eq!(solar_hijri(2026, 1, 0), None);
    }

    #[test]
    fn the_language_from_the_query_then_the_browser() {
        assert_eq!(Lang::negotiate(Some("fa"), Some("ru")), Lang::Fa);
        assert_eq!(
            Lang::negotiate(Some("de"), Some("ru-RU,ru;q=0.9")),
            Lang::Ru
        );
        assert_eq!(
            Lang::negotiate(None, Some("de-DE,fa;q=0.5,ru;q=0.7")),
            Lang::Ru
        );
        assert_eq!(Lang::negotiate(None, Some("ru;q=0,fa;q=0.1")), Lang::Fa);
        assert_eq!(Lang::negotiate(None, Some("FA-ir")), Lang::Fa);
        assert_eq!(Lang::negotiate(None, Some("en-US,ru;q=0.9")), Lang::En);
        assert_eq!(Lang::negotiate(None, Some("de;q=2,ru;q=x")), Lang::En);
        assert_eq!(Lang::negotiate(None, Some("ru;q=1.0")), Lang::Ru);
        assert_eq!(Lang::negotiate(None, None), Lang::En);
        // Only the first 32 ranges are read.
        let long = format!("{}ru", "de,".repeat(40));
        assert_eq!(Lang::negotiate(None, Some(&long)), Lang::En);
    }

    #[test]
    fn numbers_sizes_and_dates_in_each_language() {
        const GIB: u64 = 1 << 30;
        assert_eq!(Lang::En.bytes(GIB * 3 / 2), "1.5 GiB");
        assert_eq!(Lang::Ru.bytes(GIB * 3 / 2), "1,5\u{a0}ГиБ");
        assert_eq!(Lang::Fa.bytes(GIB * 3 / 2), "۱٫۵\u{a0}گیگابایت");
        assert_eq!(Lang::Fa.bytes(512), "۵۱۲\u{a0}بایت");
        // 2026-12-31 23:59 UTC.
        let eve = 1_798_761_540_000;
        assert_eq!(Lang::En.date(eve).unwrap(), "2026-12-31 23:59 UTC");
        assert_eq!(Lang::Ru.date(eve).unwrap(), "31.12.2026 23:59 UTC");
        assert_eq!(Lang::Fa.date(eve).unwrap(), "۱۴۰۵/۱۰/۱۰ ۲۳:۵۹ UTC");
        assert_eq!(Lang::Ru.expiry("d", Some(1)), "d (через 1 день)");
        assert_eq!(Lang::Ru.expiry("d", Some(3)), "d (через 3 дня)");
        assert_eq!(Lang::Ru.expiry("d", Some(11)), "d (через 11 дней)");
        assert_eq!(Lang::Ru.expiry("d", Some(21)), "d (через 21 день)");
        assert_eq!(Lang::Fa.expiry("d", Some(30)), "d (۳۰ روز دیگر)");
        assert_eq!(
            Lang::Ru.used_of(GIB, 50 * GIB, 2),
            "1\u{a0}ГиБ из 50\u{a0}ГиБ (2\u{a0}%)"
        );
    }
}
