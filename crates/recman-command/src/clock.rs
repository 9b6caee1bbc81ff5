//! The wall clock as the catalog stores times: microseconds since the Unix epoch.

/// Now, in unix microseconds (0 on a clock set before 1970).
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}
