//! The checks of what stands in the way of the next backup or the next connection: a command
//! holding the repository lock past its limit, a certificate of the fleet near its end, and a
//! full backup predicted to overrun the backup window.

use super::finding::{CheckInputs, Checked, Finding, stamp};
use super::kind::Kind;
use recman_catalog::{BackupRecord, BackupStatus};
use recman_engine::Context;
use std::path::Path;

/// A span of microseconds as people read it.
fn span(micros: i64) -> String {
    crate::check::span(micros as f64 / 1e6)
}

/// Unix microseconds of an RFC 3339 time (the lock file's `since`).
fn micros_of(rfc3339: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .ok()
        .map(|t| t.timestamp_micros())
}

/// A command that has held the repository lock longer than the limit. Read from the kernel's
/// lock table, so the check itself never takes the lock from a backup about to start.
pub(crate) fn lock_held(ctx: &Context, i: &CheckInputs, out: &mut Checked) {
    let holder = match ctx.repo.lock_holder() {
        Ok(h) => h,
        Err(e) => {
            out.skipped.push(format!(
                "the repository lock was not checked: {e}; hint: /proc/locks and the repository's lock file must be readable"
            ));
            return;
        }
    };
    out.ran.push(Kind::RepositoryLock);
    let Some(h) = holder else { return };
    let Some(since) = h.since.as_deref().and_then(micros_of) else {
        return;
    };
    let held = i.now - since;
    if held <= i.lock_limit {
        return;
    }
    out.findings.push(Finding::new(
        Kind::RepositoryLock,
        "lock",
        format!(
            "the repository lock is held by {h} ({} so far), longer than the limit of {}: every backup and delete of the repository is refused until it ends",
            span(held),
            span(i.lock_limit)
        ),
    ));
}

/// One certificate's subject and end, unix microseconds.
struct Ends {
    subject: String,
    not_after: i64,
}

/// Every certificate in the PEM file at `path`.
fn certificates(path: &Path) -> Result<Vec<Ends>, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for pem in x509_parser::pem::Pem::iter_from_buffer(&data) {
        let pem = pem.map_err(|e| format!("not PEM: {e}"))?;
        if pem.label != "CERTIFICATE" {
            continue;
        }
        let cert = pem
            .parse_x509()
            .map_err(|e| format!("not an X.509 certificate: {e}"))?;
        out.push(Ends {
            subject: cert.subject().to_string(),
            not_after: cert.validity().not_after.timestamp() * 1_000_000,
        });
    }
    if out.is_empty() {
        return Err("it holds no certificate".into());
    }
    Ok(out)
}

/// The fleet's certificate and CA (when configured) ending within the warning, or ended.
pub(crate) fn certificate_ends(i: &CheckInputs, out: &mut Checked) {
    if i.certificates.is_empty() {
        return;
    }
    out.ran.push(Kind::CertificateExpiry);
    for path in &i.certificates {
        let certs = match certificates(path) {
            Ok(c) => c,
            Err(e) => {
                out.skipped.push(format!(
                    "certificate file {} was not checked: {e}; hint: --tls-cert and --tls-ca name PEM files",
                    path.display()
                ));
                continue;
            }
        };
        let Some(first) = certs.iter().min_by_key(|c| c.not_after) else {
            continue;
        };
        let left = first.not_after - i.now;
        if left > i.certificate_warning {
            continue;
        }
        let when = if left <= 0 {
            format!("ended at {} ({} ago)", stamp(first.not_after), span(-left))
        } else {
            format!("ends at {} (in {})", stamp(first.not_after), span(left))
        };
        out.findings.push(Finding::new(
            Kind::CertificateExpiry,
            path.display().to_string(),
            format!(
                "certificate {} in {} {when}, within the warning of {}: from then on the fleet's hosts refuse each other's connections",
                first.subject,
                path.display(),
                span(i.certificate_warning)
            ),
        ));
    }
}

/// The cluster's size now, when the server answers.
fn cluster_bytes(ctx: &Context) -> Option<u64> {
    let t = recman_pg::resolve_conninfo(ctx.conninfo.as_deref()).ok()?;
    let mut s = recman_pg::Session::connect(&t).ok()?;
    let rows = s
        .simple_query("select sum(pg_database_size(oid))::bigint::text from pg_database")
        .ok()?;
    rows.into_iter().next()?.into_iter().next()??.parse().ok()
}

/// The next full backup predicted to take longer than the backup window: the newest full
/// backup's duration, scaled by how much the cluster grew since (when the server answers).
pub(crate) fn overrun(ctx: &Context, backups: &[BackupRecord], i: &CheckInputs, out: &mut Checked) {
    let Some(window) = i.backup_window else {
        return;
    };
    out.ran.push(Kind::BackupOverrun);
    let newest = backups
        .iter()
        .filter(|b| {
            b.status == BackupStatus::Available
                && matches!(b.backup_type.as_str(), "FULL" | "LEVEL0")
        })
        .filter_map(|b| Some((b, b.stop_time? - b.start_time)))
        .max_by_key(|(b, _)| b.stop_time);
    let Some((b, took)) = newest else { return };
    let (predicted, basis) = match cluster_bytes(ctx) {
        Some(now) if b.db_bytes > 0 && now > b.db_bytes => (
            (took as f64 * now as f64 / b.db_bytes as f64) as i64,
            format!(
                "full backup {} took {}, and the cluster grew from {} to {} bytes since",
                b.id,
                span(took),
                b.db_bytes,
                now
            ),
        ),
        _ => (took, format!("full backup {} took {}", b.id, span(took))),
    };
    if predicted <= window {
        return;
    }
    out.findings.push(Finding::new(
        Kind::BackupOverrun,
        "backup-window",
        format!(
            "a full backup of database {} is predicted to take {} ({basis}), longer than the backup window of {}",
            ctx.db.name,
            span(predicted),
            span(window)
        ),
    ));
}
