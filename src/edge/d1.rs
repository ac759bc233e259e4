//! Small helpers for binding values to D1 statements and reading what a
//! write changed.

use wasm_bindgen::JsValue;
use worker::D1Result;

/// A whole number as D1 binds it (a JS number; D1 has no integer type to bind).
pub fn number(value: i64) -> JsValue {
    JsValue::from_f64(value as f64)
}

/// Text, or SQL NULL.
pub fn text_or_null(value: Option<&str>) -> JsValue {
    value.map_or(JsValue::NULL, JsValue::from)
}

/// Rows a write changed (0 when D1 did not say).
pub fn changes(result: &D1Result) -> usize {
    result.meta().ok().flatten().and_then(|meta| meta.changes).unwrap_or(0)
}
