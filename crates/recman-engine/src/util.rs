use chrono::{DateTime, Utc};

pub fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

pub fn rfc3339(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_default()
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Relative path of a backup's directory inside the repository.
pub fn backup_dir(db: &str, backup_id: &str) -> String {
    format!("{db}/backup/{backup_id}")
}

/// Where an archived WAL file lives: grouped by the first 16 characters (timeline and log)
/// so that no directory grows past a few hundred entries.
pub fn wal_path(db: &str, name: &str) -> String {
    let group = if name.len() >= 16 && name.chars().take(16).all(|c| c.is_ascii_hexdigit()) {
        &name[..16]
    } else {
        "misc"
    };
    format!("{db}/wal/{group}/{name}.rmw")
}

/// An I/O error on repository object `rel`, kept as a media error so its class and hint stay.
pub(crate) fn media_io(
    repo: &recman_catalog::Repository,
    rel: &str,
    op: &str,
    e: std::io::Error,
) -> crate::EngineError {
    recman_media::MediaError::io(repo.location(), rel, op, e).into()
}
