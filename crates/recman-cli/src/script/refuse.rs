//! Messages for what recman refuses: statements of Oracle's instance, with what PostgreSQL has
//! instead, and statements the engine cannot do yet.

/// "X is not supported yet by recman; hint: …".
pub(crate) fn unsupported(what: &str, hint: &str) -> String {
    format!("{what} is not supported yet by recman; hint: {hint}")
}

pub(crate) const AUXILIARY: &str = "auxiliary channels and connections serve Oracle's DUPLICATE; hint: recman clones a cluster with RESTORE DATABASE TO '/new/dir' (the clone keeps the system identifier)";

pub(crate) const SEND: &str = "SEND passes commands to an Oracle media manager; recman's devices take their settings from the catalog; hint: CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'vtape:/dir' (or 'plugin:PROGRAM ARGS')";

/// The refusal of a foreign statement (`verb` plus its first words), naming PostgreSQL's way.
pub(crate) fn foreign(verb: &str, words: &[String]) -> String {
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    match verb {
        "STARTUP" => "STARTUP: PostgreSQL has no NOMOUNT or MOUNT state and recman does not start servers; hint: pg_ctl -D DATADIR start (a restored cluster recovers and opens by itself)".into(),
        "SHUTDOWN" => "SHUTDOWN: recman does not stop servers; hint: pg_ctl -D DATADIR stop -m smart|fast|immediate (NORMAL, IMMEDIATE, ABORT)".into(),
        "ALTER" if w(0) == "DATABASE" && w(1) == "OPEN" => "ALTER DATABASE OPEN: a restored PostgreSQL cluster opens by itself when recovery reaches its target: recman writes recovery_target_action = 'promote', which starts a new timeline as RESETLOGS does; hint: start it with pg_ctl -D DIR start".into(),
        "ALTER" if w(0) == "DATABASE" => "ALTER DATABASE (MOUNT, archivelog mode, datafile states) has no PostgreSQL counterpart; hint: archiving is set with archive_mode and archive_command in postgresql.conf; run SQL on the target with SQL '…'".into(),
        "ALTER" => format!("ALTER {} is Oracle SQL typed at the prompt; hint: run PostgreSQL SQL on the target with SQL '…'", w(0)),
        "SWITCH" => "SWITCH … TO COPY: recman has no image copies to switch to; a restored directory is started in place; hint: RESTORE DATABASE TO '/new/dir', then pg_ctl -D /new/dir start".into(),
        "DUPLICATE" => "DUPLICATE: recman duplicates a whole cluster into a new directory (the copy keeps the system identifier; PostgreSQL cannot give it a new one); hint: DUPLICATE DATABASE TO '/new/dir' [FOR STANDBY PRIMARY CONNINFO 'host=… user=…' [SLOT 'name']] [PORT n]".into(),
        "BLOCKRECOVER" => "BLOCKRECOVER: recman spells block media recovery as RMAN 11g and later do; hint: RECOVER DATAFILE 'base/5/16384' BLOCK 3; or RECOVER CORRUPTION LIST; with the cluster stopped".into(),
        "FLASHBACK" => "FLASHBACK: PostgreSQL keeps no flashback logs; hint: point-in-time restore with RUN { SET UNTIL TIME '…'; RESTORE DATABASE TO '/new/dir'; RECOVER DATABASE; }".into(),
        "CHANGE" => unsupported("CHANGE (backup availability and KEEP attributes)", "DELETE BACKUPSET n removes a backup; CROSSCHECK marks missing ones EXPIRED"),
        "RESYNC" => "RESYNC CATALOG: recman's catalog is written by every command, there is nothing to resynchronize; hint: CATALOG START WITH '/repo' rebuilds it from the repository".into(),
        "UNREGISTER" => "UNREGISTER DATABASE: recman has no command that removes a database's record from the catalog; hint: a repository that holds only this cluster is removed as a whole (its directory, or its bucket prefix); in a repository shared with other clusters, LIST BACKUP names its backups and DELETE NOPROMPT BACKUPSET n; removes each, and its record stays, holding nothing".into(),
        "SEND" => SEND.into(),
        _ => format!("{verb} is an Oracle RMAN statement with no counterpart in recman for PostgreSQL; hint: HELP lists the statements recman runs"),
    }
}
