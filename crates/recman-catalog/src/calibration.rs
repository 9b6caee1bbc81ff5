//! Measurements taken by `recman calibrate`, kept with their date: what the tuning method
//! reads before it advises (seed 000's "determine the rate of disks and backup media").

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

/// One calibration run; `body` is the engine's JSON document of the measurements.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CalibrationRecord {
    pub id: i64,
    /// Unix microseconds.
    pub taken_at: i64,
    pub pgdata: String,
    pub body: String,
}

impl Catalog {
    pub fn add_calibration(
        &self,
        taken_at: i64,
        pgdata: &str,
        body: &str,
    ) -> Result<(), CatalogError> {
        let ctx = "recording a calibration";
        self.write_tx(ctx, || {
            self.exec(
                ctx,
                "INSERT INTO calibration (taken_at, pgdata, body) VALUES (?1, ?2, ?3)",
                vals![taken_at, pgdata, body],
            )
            .map(|_| ())
        })
    }

    /// Every calibration, oldest first.
    pub fn calibrations(&self) -> Result<Vec<CalibrationRecord>, CatalogError> {
        self.query(
            "reading calibrations",
            "SELECT id, taken_at, pgdata, body FROM calibration ORDER BY id",
            vals![],
            |r| {
                Ok(CalibrationRecord {
                    id: r.get_i64(0)?,
                    taken_at: r.get_i64(1)?,
                    pgdata: r.get_text(2)?,
                    body: r.get_text(3)?,
                })
            },
        )
    }
}
