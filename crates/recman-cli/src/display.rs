//! How sizes and times read in every printed line: binary units and local time for people,
//! RFC 3339 UTC for JSON. Kept apart from the printers so that each of them, and the
//! listings they call, share one spelling without importing each other.

pub fn size(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

pub fn time(micros: Option<i64>) -> String {
    micros
        .and_then(chrono::DateTime::from_timestamp_micros)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_default()
}

pub fn rfc3339(micros: Option<i64>) -> serde_json::Value {
    micros
        .and_then(chrono::DateTime::from_timestamp_micros)
        .map(|t| serde_json::Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)))
        .unwrap_or(serde_json::Value::Null)
}

/// RFC 3339 UTC with microseconds, as every JSON listing prints times.
pub fn rfc3339_str(micros: i64) -> String {
    match rfc3339(Some(micros)) {
        serde_json::Value::String(s) => s,
        _ => String::new(),
    }
}
