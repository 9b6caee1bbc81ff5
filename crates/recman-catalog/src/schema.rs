//! The catalog's schema as numbered migrations.
//!
//! Migration N (1-based) brings a catalog from schema N-1 to N. Migrations are append-only:
//! a released one is never edited, a change is a new one. All pending migrations run in one
//! IMMEDIATE transaction, so two processes opening an old catalog at once cannot both migrate,
//! and a crash mid-way leaves the old schema intact.
//!
//! Every table is defined once for both engines ([`crate::tables`]) and its `CREATE TABLE` is
//! generated from that definition here and in [`crate::pgschema`]; the conformance suite checks
//! both catalogs end up with its columns. Indexes, views and `ALTER TABLE`s are written here.
//!
//! The schema keeps everything needed to cross-check it against the repository's manifests
//! (piece paths and checksums, WAL paths and checksums), so the catalog can be rebuilt from them.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    concat!(
        r#"
    "#,
        crate::tables::table!(config, crate::tables::create_table!(sqlite,)),
        r#"

    "#,
        crate::tables::table!(database, crate::tables::create_table!(sqlite,)),
        r#"
    CREATE INDEX database_sysid ON database (system_identifier);

    "#,
        crate::tables::table!(backup, crate::tables::create_table!(sqlite,)),
        r#"
    CREATE INDEX backup_db_start ON backup (db_id, start_time);
    CREATE INDEX backup_db_tag ON backup (db_id, tag);
    CREATE INDEX backup_status ON backup (db_id, status);

    "#,
        crate::tables::table!(piece, crate::tables::create_table!(sqlite,)),
        r#"

    "#,
        crate::tables::table!(corrupt_block, crate::tables::create_table!(sqlite,)),
        r#"
    CREATE INDEX corrupt_block_backup ON corrupt_block (backup_id, path, block);

    "#,
        crate::tables::table!(wal, crate::tables::create_table!(sqlite,)),
        r#"
    "#,
    ),
    // 2: I/O statistics of every backup, restore and validate (V$BACKUP_ASYNC_IO and
    // V$BACKUP_SYNC_IO as SQL views).
    concat!(
        "\n    ",
        crate::tables::table!(io_stat, crate::tables::create_table!(sqlite,)),
        r#"
    CREATE INDEX io_stat_job ON io_stat (job_id);
    CREATE INDEX io_stat_backup ON io_stat (backup_id);
    -- Times are unix microseconds; waits in microseconds, as the columns' names say in RMAN's
    -- views (which use centiseconds).
    CREATE VIEW v_backup_async_io AS
        SELECT job_id, job_type, backup_id, type, io_mode, channel, set_no, piece_no, filename,
               open_time, close_time, close_time - open_time AS elapsed_time,
               io_count, ready, short_waits, short_wait_time, long_waits, long_wait_time,
               bytes, buffer_size, buffer_count,
               CASE WHEN close_time > open_time
                    THEN bytes * 1000000 / (close_time - open_time) END AS effective_bytes_per_second
        FROM io_stat WHERE io_mode <> 'sync';
    CREATE VIEW v_backup_sync_io AS
        SELECT job_id, job_type, backup_id, type, io_mode, channel, set_no, piece_no, filename,
               open_time, close_time, close_time - open_time AS elapsed_time,
               io_count, bytes, buffer_size, buffer_count,
               CASE WHEN close_time > open_time
                    THEN bytes * 1000000 / (close_time - open_time) END AS effective_bytes_per_second,
               CASE WHEN io_time > 0 THEN bytes * 1000000 / io_time END AS discrete_bytes_per_second
        FROM io_stat WHERE io_mode = 'sync';
    "#
    ),
    // 3: crosscheck status of pieces and archived WAL; deletions in progress, so that a
    // command killed between removing media and records can be finished by the next one;
    // which backup sets hold which archived WAL (BACKUP ARCHIVELOG).
    concat!(
        r#"
    ALTER TABLE piece ADD COLUMN status TEXT NOT NULL DEFAULT 'AVAILABLE'
        CHECK (status IN ('AVAILABLE', 'EXPIRED'));
    ALTER TABLE wal ADD COLUMN status TEXT NOT NULL DEFAULT 'AVAILABLE'
        CHECK (status IN ('AVAILABLE', 'EXPIRED'));

    "#,
        crate::tables::table!(pending_delete, crate::tables::create_table!(sqlite,)),
        r#"

    "#,
        crate::tables::table!(backup_wal, crate::tables::create_table!(sqlite,)),
        r#"
    CREATE INDEX backup_wal_name ON backup_wal (db_id, name);
    "#,
    ),
    // 4: copies of repository objects on other devices (second tier, backups to sbt).
    concat!(
        r#"
    "#,
        crate::tables::table!(object_copy, crate::tables::create_table!(sqlite,)),
        r#"
    "#,
    ),
    // 5: what the tuning method needs to name a bottleneck (time slept by RATE, CPU time of
    // the channel threads, the kind of output device) and the measurements of `calibrate`.
    concat!(
        r#"
    ALTER TABLE io_stat ADD COLUMN throttle_time INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE io_stat ADD COLUMN cpu_time INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE io_stat ADD COLUMN cpu_wait_time INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE io_stat ADD COLUMN device TEXT;
    "#,
        crate::tables::table!(calibration, crate::tables::create_table!(sqlite,)),
        r#"
    "#,
    ),
    // 6: per-second samples per channel and the settings changed while a job ran.
    concat!(
        crate::tables::table!(io_sample, crate::tables::create_table!(sqlite,)),
        "\n    ",
        crate::tables::table!(tuning_event, crate::tables::create_table!(sqlite,)),
        "\n",
    ),
    // 7: what each backup read from the cluster, and how much through change tracking.
    r#"
    CREATE TABLE backup_read (
        backup_id     TEXT NOT NULL PRIMARY KEY REFERENCES backup (id) ON DELETE CASCADE,
        read_bytes    INTEGER NOT NULL,
        tracked_bytes INTEGER NOT NULL,
        tracked_files INTEGER NOT NULL
    );
    "#,
    // 8: the blocks the last `validate database` found corrupt, and the blocks `recover block`
    // repaired.
    concat!(
        crate::tables::table!(block_corruption, crate::tables::create_table!(sqlite,)),
        "\n    ",
        crate::tables::table!(block_repair, crate::tables::create_table!(sqlite,)),
        "\n",
    ),
    // 9: restore drills (`recman drill`): outcome, measured RTO, checks.
    concat!(
        crate::tables::table!(drill, crate::tables::create_table!(sqlite,)),
        "\n",
    ),
    // 10: where each cluster's database-host agent listens (`register database --agent`).
    concat!(
        crate::tables::table!(db_agent, crate::tables::create_table!(sqlite,)),
        "\n",
    ), // 11: how each file was read, directly or through the page cache (INPUT rows).
    "ALTER TABLE io_stat ADD COLUMN read_mode TEXT;\n",
    // --- issue 44 (catalog import) begins ---
    // 12: backups of other tools read in place (pgBackRest, pg_basebackup) and the WAL
    // archives they came with (`catalog import`); see crate::foreign.
    r#"
    CREATE TABLE foreign_backup (
        backup_id   TEXT NOT NULL PRIMARY KEY REFERENCES backup (id) ON DELETE CASCADE,
        tool        TEXT NOT NULL,
        location    TEXT NOT NULL,
        stanza      TEXT NOT NULL,
        label       TEXT NOT NULL,
        origin_type TEXT NOT NULL
    );
    CREATE TABLE foreign_archive (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        db_id      INTEGER NOT NULL REFERENCES database (id),
        tool       TEXT NOT NULL,
        location   TEXT NOT NULL,
        config     TEXT NOT NULL,
        stanza     TEXT NOT NULL,
        archive_id TEXT NOT NULL,
        UNIQUE (db_id, tool, location, stanza, archive_id)
    );
    CREATE TABLE foreign_wal (
        archive     INTEGER NOT NULL REFERENCES foreign_archive (id) ON DELETE CASCADE,
        db_id       INTEGER NOT NULL,
        name        TEXT NOT NULL,
        path        TEXT NOT NULL,
        stored_size INTEGER NOT NULL,
        archived_at INTEGER NOT NULL,
        checksum    TEXT,
        PRIMARY KEY (archive, name)
    );
    CREATE INDEX foreign_wal_name ON foreign_wal (db_id, name);
    "#,
    // --- issue 44 ends ---
    // --- issue 42 (wal receiver) begins ---
    // 13: where `recman receive` has got to for each database (the RPO it gives).
    concat!(
        crate::tables::table!(wal_receive, crate::tables::create_table!(sqlite,)),
        "\n",
    ),
    // --- issue 42 ends ---
    // --- issue 43 (failures) begins ---
    // 14: what the checks found (`recman check`, LIST FAILURE): one row per failure, OPEN
    // until a later check no longer finds it; the same kind and object found again after
    // that is a new row, so an id names one episode.
    r#"
    CREATE TABLE failure (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        db_id      INTEGER NOT NULL REFERENCES database (id),
        kind       TEXT NOT NULL,
        object     TEXT NOT NULL,
        priority   TEXT NOT NULL CHECK (priority IN ('CRITICAL', 'HIGH', 'LOW')),
        status     TEXT NOT NULL CHECK (status IN ('OPEN', 'CLOSED')),
        message    TEXT NOT NULL,
        first_seen INTEGER NOT NULL,
        last_seen  INTEGER NOT NULL,
        closed_at  INTEGER
    );
    CREATE UNIQUE INDEX failure_open ON failure (db_id, kind, object) WHERE status = 'OPEN';
    "#,
    // --- issue 43 ends ---
    // --- issue 41 (repository costs) begins ---
    // 15: requests and bytes the repository's store was sent, per backup and per day of
    // archiving, so that a policy can be priced (`report costs`).
    concat!(
        crate::tables::table!(repo_cost, crate::tables::create_table!(sqlite,)),
        "\n",
    ),
    // --- issue 41 ends ---
];

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Outcome of a failed migration, before the caller adds the catalog's path.
pub(crate) enum MigrateError {
    Sql(&'static str, rusqlite::Error),
    TooNew(u32),
}

impl From<(&'static str, rusqlite::Error)> for MigrateError {
    fn from((ctx, e): (&'static str, rusqlite::Error)) -> Self {
        MigrateError::Sql(ctx, e)
    }
}

/// Reads the applied version; 0 for a catalog without the version table.
pub(crate) fn current_version(conn: &Connection) -> rusqlite::Result<u32> {
    let has_table: Option<i64> = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if has_table.is_none() {
        return Ok(0);
    }
    conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_version",
        [],
        |r| r.get(0),
    )
}

/// Brings the catalog to [`SCHEMA_VERSION`], or refuses a newer one untouched.
pub(crate) fn migrate(conn: &mut Connection, now_micros: i64) -> Result<(), MigrateError> {
    migrate_to(conn, MIGRATIONS, now_micros)
}

fn migrate_to(conn: &mut Connection, migrations: &[&str], now: i64) -> Result<(), MigrateError> {
    let latest = migrations.len() as u32;
    // Cheap check without a write lock: the common case is an up-to-date catalog, and a
    // read-only open must not need to write.
    let found = current_version(conn).map_err(|e| ("reading the schema version", e))?;
    if found > latest {
        return Err(MigrateError::TooNew(found));
    }
    if found == latest {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| ("starting the schema migration", e))?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_version (
             version    INTEGER PRIMARY KEY,
             applied_at INTEGER NOT NULL
         )",
    )
    .map_err(|e| ("creating the schema_version table", e))?;
    // Read again under the write lock: another process may have migrated meanwhile.
    let found = current_version(&tx).map_err(|e| ("reading the schema version", e))?;
    if found > latest {
        return Err(MigrateError::TooNew(found));
    }
    for (i, sql) in migrations.iter().enumerate().skip(found as usize) {
        tx.execute_batch(sql)
            .map_err(|e| ("applying a schema migration", e))?;
        tx.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
            (i as i64 + 1, now),
        )
        .map_err(|e| ("recording the schema version", e))?;
    }
    tx.commit()
        .map_err(|e| ("committing the schema migration", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_step_by_step_and_refuses_newer() {
        let mut conn = Connection::open_in_memory().unwrap();
        let v1 = &MIGRATIONS[..1];
        migrate_to(&mut conn, v1, 1).ok().unwrap();
        assert_eq!(current_version(&conn).unwrap(), 1);

        let v2 = [MIGRATIONS[0], "CREATE TABLE extra (x INTEGER);"];
        migrate_to(&mut conn, &v2, 2).ok().unwrap();
        assert_eq!(current_version(&conn).unwrap(), 2);
        conn.execute("INSERT INTO extra (x) VALUES (1)", [])
            .unwrap();

        // A build that only knows schema 1 must refuse the catalog, not touch it.
        match migrate_to(&mut conn, v1, 3) {
            Err(MigrateError::TooNew(2)) => {}
            _ => panic!("expected a refusal of schema 2"),
        }
        assert_eq!(current_version(&conn).unwrap(), 2);
    }

    #[test]
    fn failed_migration_leaves_old_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, &MIGRATIONS[..1], 1).ok().unwrap();
        let bad = [MIGRATIONS[0], "CREATE TABLE ok2 (x); THIS IS NOT SQL;"];
        assert!(migrate_to(&mut conn, &bad, 2).is_err());
        assert_eq!(current_version(&conn).unwrap(), 1);
        let ok2: Option<i64> = conn
            .query_row("SELECT 1 FROM sqlite_master WHERE name = 'ok2'", [], |r| {
                r.get(0)
            })
            .optional()
            .unwrap();
        assert_eq!(ok2, None);
    }
}
