//! The shared catalog's schema in PostgreSQL: the same numbered migrations as
//! [`crate::schema`], version for version, in PostgreSQL's types (BIGINT for INTEGER, identity
//! columns for AUTOINCREMENT keys, BYTEA for BLOB, text in the "C" collation so that ORDER BY
//! sorts bytewise like SQLite's BINARY, whatever the server's locale). Each runs in a repository's own schema (see
//! [`crate::pg`]). Append-only, like SQLite's: a released migration is never edited. Every table
//! is defined once for both engines ([`crate::tables`]) and generated here in this dialect.

pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    concat!(
        r#"
    "#,
        crate::tables::table!(config, crate::tables::create_table!(pg,)),
        r#"

    "#,
        crate::tables::table!(database, crate::tables::create_table!(pg,)),
        r#"
    CREATE INDEX database_sysid ON database (system_identifier);

    "#,
        crate::tables::table!(backup, crate::tables::create_table!(pg,)),
        r#"
    CREATE INDEX backup_db_start ON backup (db_id, start_time);
    CREATE INDEX backup_db_tag ON backup (db_id, tag);
    CREATE INDEX backup_status ON backup (db_id, status);

    "#,
        crate::tables::table!(piece, crate::tables::create_table!(pg,)),
        r#"

    "#,
        crate::tables::table!(corrupt_block, crate::tables::create_table!(pg,)),
        r#"
    CREATE INDEX corrupt_block_backup ON corrupt_block (backup_id, path, block);

    "#,
        crate::tables::table!(wal, crate::tables::create_table!(pg,)),
        r#"
    "#,
    ),
    // 2: I/O statistics of every backup, restore and validate (V$BACKUP_ASYNC_IO and
    // V$BACKUP_SYNC_IO as SQL views). Rates are computed in NUMERIC: BIGINT would overflow.
    concat!(
        "\n    ",
        crate::tables::table!(io_stat, crate::tables::create_table!(pg,)),
        r#"
    CREATE INDEX io_stat_job ON io_stat (job_id);
    CREATE INDEX io_stat_backup ON io_stat (backup_id);
    CREATE VIEW v_backup_async_io AS
        SELECT job_id, job_type, backup_id, type, io_mode, channel, set_no, piece_no, filename,
               open_time, close_time, close_time - open_time AS elapsed_time,
               io_count, ready, short_waits, short_wait_time, long_waits, long_wait_time,
               bytes, buffer_size, buffer_count,
               CASE WHEN close_time > open_time
                    THEN (bytes::numeric * 1000000 / (close_time - open_time))::bigint
               END AS effective_bytes_per_second
        FROM io_stat WHERE io_mode <> 'sync';
    CREATE VIEW v_backup_sync_io AS
        SELECT job_id, job_type, backup_id, type, io_mode, channel, set_no, piece_no, filename,
               open_time, close_time, close_time - open_time AS elapsed_time,
               io_count, bytes, buffer_size, buffer_count,
               CASE WHEN close_time > open_time
                    THEN (bytes::numeric * 1000000 / (close_time - open_time))::bigint
               END AS effective_bytes_per_second,
               CASE WHEN io_time > 0 THEN (bytes::numeric * 1000000 / io_time)::bigint
               END AS discrete_bytes_per_second
        FROM io_stat WHERE io_mode = 'sync';
    "#
    ),
    // 3: crosscheck status of pieces and archived WAL; deletions in progress; which backup
    // sets hold which archived WAL.
    concat!(
        r#"
    ALTER TABLE piece ADD COLUMN status TEXT COLLATE "C" NOT NULL DEFAULT 'AVAILABLE'
        CHECK (status IN ('AVAILABLE', 'EXPIRED'));
    ALTER TABLE wal ADD COLUMN status TEXT COLLATE "C" NOT NULL DEFAULT 'AVAILABLE'
        CHECK (status IN ('AVAILABLE', 'EXPIRED'));

    "#,
        crate::tables::table!(pending_delete, crate::tables::create_table!(pg,)),
        r#"

    "#,
        crate::tables::table!(backup_wal, crate::tables::create_table!(pg,)),
        r#"
    CREATE INDEX backup_wal_name ON backup_wal (db_id, name);
    "#,
    ),
    // 4: copies of repository objects on other devices (second tier, backups to sbt).
    concat!(
        r#"
    "#,
        crate::tables::table!(object_copy, crate::tables::create_table!(pg,)),
        r#"
    "#,
    ),
    // 5: RATE sleep, channel CPU time and output device kind; `calibrate` measurements.
    concat!(
        r#"
    ALTER TABLE io_stat ADD COLUMN throttle_time BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE io_stat ADD COLUMN cpu_time BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE io_stat ADD COLUMN cpu_wait_time BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE io_stat ADD COLUMN device TEXT COLLATE "C";
    "#,
        crate::tables::table!(calibration, crate::tables::create_table!(pg,)),
        r#"
    "#,
    ),
    // 6: per-second samples per channel and the settings changed while a job ran.
    concat!(
        crate::tables::table!(io_sample, crate::tables::create_table!(pg,)),
        "\n    ",
        crate::tables::table!(tuning_event, crate::tables::create_table!(pg,)),
        "\n",
    ),
    // 7: what each backup read from the cluster, and how much through change tracking.
    r#"
    CREATE TABLE backup_read (
        backup_id     TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES backup (id) ON DELETE CASCADE,
        read_bytes    BIGINT NOT NULL,
        tracked_bytes BIGINT NOT NULL,
        tracked_files BIGINT NOT NULL
    );
    "#,
    // 8: the blocks the last `validate database` found corrupt, and the blocks `recover block`
    // repaired.
    concat!(
        crate::tables::table!(block_corruption, crate::tables::create_table!(pg,)),
        "\n    ",
        crate::tables::table!(block_repair, crate::tables::create_table!(pg,)),
        "\n",
    ),
    // 9: restore drills (`recman drill`): outcome, measured RTO, checks.
    concat!(
        crate::tables::table!(drill, crate::tables::create_table!(pg,)),
        "\n",
    ),
    // 10: where each cluster's database-host agent listens (`register database --agent`).
    concat!(
        crate::tables::table!(db_agent, crate::tables::create_table!(pg,)),
        "\n",
    ), // 11: how each file was read, directly or through the page cache (INPUT rows).
    "ALTER TABLE io_stat ADD COLUMN read_mode TEXT COLLATE \"C\";\n",
    // --- issue 44 (catalog import) begins ---
    // 12: backups of other tools read in place and their WAL archives (crate::foreign).
    r#"
    CREATE TABLE foreign_backup (
        backup_id   TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES backup (id) ON DELETE CASCADE,
        tool        TEXT COLLATE "C" NOT NULL,
        location    TEXT COLLATE "C" NOT NULL,
        stanza      TEXT COLLATE "C" NOT NULL,
        label       TEXT COLLATE "C" NOT NULL,
        origin_type TEXT COLLATE "C" NOT NULL
    );
    CREATE TABLE foreign_archive (
        id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        db_id      BIGINT NOT NULL REFERENCES database (id),
        tool       TEXT COLLATE "C" NOT NULL,
        location   TEXT COLLATE "C" NOT NULL,
        config     TEXT COLLATE "C" NOT NULL,
        stanza     TEXT COLLATE "C" NOT NULL,
        archive_id TEXT COLLATE "C" NOT NULL,
        UNIQUE (db_id, tool, location, stanza, archive_id)
    );
    CREATE TABLE foreign_wal (
        archive     BIGINT NOT NULL REFERENCES foreign_archive (id) ON DELETE CASCADE,
        db_id       BIGINT NOT NULL,
        name        TEXT COLLATE "C" NOT NULL,
        path        TEXT COLLATE "C" NOT NULL,
        stored_size BIGINT NOT NULL,
        archived_at BIGINT NOT NULL,
        checksum    TEXT COLLATE "C",
        PRIMARY KEY (archive, name)
    );
    CREATE INDEX foreign_wal_name ON foreign_wal (db_id, name);
    "#,
    // --- issue 44 ends ---
    // --- issue 42 (wal receiver) begins ---
    // 13: where `recman receive` has got to for each database (the RPO it gives).
    concat!(
        crate::tables::table!(wal_receive, crate::tables::create_table!(pg,)),
        "\n",
    ),
    // --- issue 42 ends ---
    // --- issue 43 (failures) begins ---
    // 14: what the checks found (`recman check`, LIST FAILURE): one row per failure, OPEN
    // until a later check no longer finds it; the same kind and object found again after
    // that is a new row, so an id names one episode.
    r#"
    CREATE TABLE failure (
        id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        db_id      BIGINT NOT NULL REFERENCES database (id),
        kind       TEXT COLLATE "C" NOT NULL,
        object     TEXT COLLATE "C" NOT NULL,
        priority   TEXT COLLATE "C" NOT NULL CHECK (priority IN ('CRITICAL', 'HIGH', 'LOW')),
        status     TEXT COLLATE "C" NOT NULL CHECK (status IN ('OPEN', 'CLOSED')),
        message    TEXT COLLATE "C" NOT NULL,
        first_seen BIGINT NOT NULL,
        last_seen  BIGINT NOT NULL,
        closed_at  BIGINT
    );
    CREATE UNIQUE INDEX failure_open ON failure (db_id, kind, object) WHERE status = 'OPEN';
    "#,
    // --- issue 43 ends ---
    // --- issue 41 (repository costs) begins ---
    // 15: requests and bytes the repository's store was sent, per backup and per day of
    // archiving, so that a policy can be priced (`report costs`).
    concat!(
        crate::tables::table!(repo_cost, crate::tables::create_table!(pg,)),
        "\n",
    ),
    // --- issue 41 ends ---
];

#[cfg(test)]
mod tests {
    #[test]
    fn same_versions_as_sqlite() {
        assert_eq!(
            super::MIGRATIONS.len() as u32,
            crate::schema::SCHEMA_VERSION
        );
    }
}
