//! Incremental forever: `configure incremental-forever synthetic-full-every N days` makes a
//! `backup database` that names no level a level 1 (read through change tracking), and, when
//! the newest level 0 (a synthetic full counts, dated by the chain tip it merged) is N days
//! old or more, builds a synthetic full from the chain right after it, in the repository,
//! without reading the database. Restores then walk at most N days of level 1s, and
//! retention can let the old chain go.

use crate::context::Context;
use crate::error::EngineError;
use recman_catalog::BackupStatus;

/// The catalog key of the setting.
pub const KEY: &str = "incremental_forever";

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    /// Days between synthetic fulls.
    pub synthetic_every_days: f64,
}

/// Parses the setting's value: `off`, or `synthetic-full-every N days` (N > 0, fractions
/// allowed); the error says what is wrong.
pub fn parse(v: &str) -> Result<Option<Policy>, String> {
    let w: Vec<String> = v.split_whitespace().map(str::to_lowercase).collect();
    let w: Vec<&str> = w.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["off"] => Ok(None),
        ["synthetic-full-every", n, "day" | "days"] => match n.parse::<f64>() {
            Ok(d) if d > 0.0 && d <= 3650.0 => Ok(Some(Policy {
                synthetic_every_days: d,
            })),
            _ => Err(format!("{n:?} is not a number of days from 0 to 3650")),
        },
        _ => Err(format!(
            "{v:?} is neither `off` nor `synthetic-full-every N days`"
        )),
    }
}

impl Policy {
    /// The stored form.
    pub fn to_setting(self) -> String {
        format!("synthetic-full-every {} days", self.synthetic_every_days)
    }
}

/// The configured policy of the repository, if any.
pub fn policy(ctx: &Context) -> Result<Option<Policy>, EngineError> {
    match ctx.repo.catalog().config(KEY)? {
        None => Ok(None),
        Some(v) => parse(&v).map_err(|why| {
            EngineError::Invalid(format!(
                "setting incremental-forever: {why}; hint: `recman configure incremental-forever clear`"
            ))
        }),
    }
}

/// Whether a synthetic full is due: the newest available level 0 or full started `days` or
/// more ago (a synthetic full carries its chain tip's start).
pub fn synthetic_due(ctx: &Context, p: Policy) -> Result<bool, EngineError> {
    let newest = ctx
        .repo
        .catalog()
        .backups(ctx.db.id)?
        .into_iter()
        .filter(|b| {
            b.status == BackupStatus::Available
                && (b.backup_type == "LEVEL0" || b.backup_type == "FULL")
        })
        .map(|b| b.start_time)
        .max();
    let Some(start) = newest else {
        return Ok(false);
    };
    let age_days = (crate::util::now_micros() - start) as f64 / 86_400e6;
    Ok(age_days >= p.synthetic_every_days)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_setting() {
        assert_eq!(parse("off"), Ok(None));
        assert_eq!(
            parse("Synthetic-Full-Every 7 days"),
            Ok(Some(Policy {
                synthetic_every_days: 7.0
            }))
        );
        assert_eq!(
            parse("synthetic-full-every 0.5 day")
                .unwrap()
                .unwrap()
                .to_setting(),
            "synthetic-full-every 0.5 days"
        );
        assert!(parse("synthetic-full-every 0 days").is_err());
        assert!(parse("weekly").is_err());
    }
}
