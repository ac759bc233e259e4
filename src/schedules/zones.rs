//! Time-zone offsets from the runtime's own `Intl` data, so the Worker carries
//! no tz database of its own (the pure scheduler asks through [`ZoneRules`]).

use std::cell::RefCell;
use std::collections::HashMap;

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::schedules::civil::{LocalDateTime, MS_PER_MINUTE};
use crate::schedules::zone::ZoneRules;

#[wasm_bindgen]
extern "C" {
    /// `Intl.DateTimeFormat`: formats an instant in a zone.
    #[wasm_bindgen(js_namespace = Intl, js_name = DateTimeFormat)]
    type ZoneFormat;

    #[wasm_bindgen(constructor, js_namespace = Intl, js_class = "DateTimeFormat", catch)]
    fn new(locale: &str, options: &JsValue) -> Result<ZoneFormat, JsValue>;

    #[wasm_bindgen(method, js_class = "DateTimeFormat", js_name = formatToParts)]
    fn format_to_parts(this: &ZoneFormat, instant_ms: f64) -> js_sys::Array;
}

thread_local! {
    /// Formatters are costly to build: one per zone per isolate.
    static FORMATS: RefCell<HashMap<String, Option<ZoneFormat>>> = RefCell::new(HashMap::new());
}

/// The runtime's zones.
pub struct IntlZones;

impl ZoneRules for IntlZones {
    fn offset_minutes(&self, zone: &str, utc_ms: i64) -> Option<i32> {
        FORMATS.with(|formats| {
            let mut formats = formats.borrow_mut();
            let format = formats.entry(zone.to_string()).or_insert_with(|| formatter(zone)).as_ref()?;
            let local_ms = local_as_utc_ms(&format.format_to_parts(utc_ms as f64))?;
            let utc_minute = utc_ms.div_euclid(60_000) * 60_000;
            Some(((local_ms - utc_minute) / 60_000) as i32)
        })
    }
}

/// A formatter for `zone`, or None when the runtime does not know it.
fn formatter(zone: &str) -> Option<ZoneFormat> {
    let options = js_sys::Object::new();
    for (key, value) in [
        ("timeZone", zone),
        ("hourCycle", "h23"),
        ("year", "numeric"),
        ("month", "numeric"),
        ("day", "numeric"),
        ("hour", "numeric"),
        ("minute", "numeric"),
    ] {
        js_sys::Reflect::set(&options, &key.into(), &value.into()).ok()?;
    }
    ZoneFormat::new("en-US", &options).ok()
}

/// The formatted parts read back as the local wall-clock time, counted as if UTC.
fn local_as_utc_ms(parts: &js_sys::Array) -> Option<i64> {
    let mut fields = [0i64; 5]; // year, month, day, hour, minute
    for part in parts.iter() {
        let kind = js_sys::Reflect::get(&part, &"type".into()).ok()?.as_string()?;
        let value = js_sys::Reflect::get(&part, &"value".into()).ok()?;
        let slot = ["year", "month", "day", "hour", "minute"].iter().position(|name| *name == kind);
        if let Some(slot) = slot {
            fields[slot] = value.dyn_into::<js_sys::JsString>().ok()?.as_string()?.parse().ok()?;
        }
    }
    let [year, month, day, hour, minute] = fields;
    let narrow = |value: i64| u8::try_from(value).ok();
    let year = i32::try_from(year).ok()?;
    let local = LocalDateTime::new(year, narrow(month)?, narrow(day)?, narrow(hour)?, narrow(minute)?)?;
    Some(local.to_minutes_since_epoch() * MS_PER_MINUTE)
}
