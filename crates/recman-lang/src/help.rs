//! HELP text for every statement, kept as data so that the prompt, `recman run 'HELP x;'` and
//! the tests read one source.

/// One statement's help: its keyword, its syntax summary and what recman does with it.
pub struct Topic {
    pub keyword: &'static str,
    pub syntax: &'static str,
    pub meaning: &'static str,
}

pub const TOPICS: &[Topic] = &[
    Topic {
        keyword: "ALLOCATE",
        syntax: "ALLOCATE CHANNEL name DEVICE TYPE DISK|SBT|S3 [CONNECT 'conninfo'] [PARMS '...'] [MAXOPENFILES n] [MAXPIECESIZE size] [RATE size] [FORMAT 'fmt'];",
        meaning: "Inside RUN: adds a channel for the block's BACKUP and RESTORE. The number of channels becomes --channels and their device type the BACKUP's --device-type (all channels of a block share one); MAXOPENFILES, RATE, MAXPIECESIZE and FORMAT apply where the engine has them. A channel uses its device type's configuration: PARMS may only repeat what CONFIGURE CHANNEL ... PARMS stored. ALLOCATE CHANNEL FOR MAINTENANCE is accepted and needs nothing.",
    },
    Topic {
        keyword: "BACKUP",
        syntax: "BACKUP [DEVICE TYPE DISK|SBT|S3] [AS [COMPRESSED] BACKUPSET] [INCREMENTAL LEVEL 0|1] [VALIDATE] DATABASE [TAG 't'] [FILESPERSET n] [SECTION SIZE s] [PLUS ARCHIVELOG]; BACKUP [DEVICE TYPE d] BACKUPSET ALL|'id or tag'|FROM TAG 't'; BACKUP [DEVICE TYPE d] RECOVERY AREA;",
        meaning: "An online backup of the whole cluster (recman backup database), written to the DEVICE TYPE, else the RUN block's channels' device type, else the configured default. BACKUP VALIDATE DATABASE reads and checks every page without writing (recman validate database). BACKUP BACKUPSET copies backups, BACKUP RECOVERY AREA every backup and the archived WAL, to a second device type (recman backup backupset / recovery-area); without DEVICE TYPE or channels they go to CONFIGURE DEFAULT DEVICE TYPE.",
    },
    Topic {
        keyword: "CATALOG",
        syntax: "CATALOG START WITH 'prefix' [NOPROMPT]; CATALOG ARCHIVELOG 'file' [, 'file']...;",
        meaning: "Records backup pieces found under a path in the catalog. CATALOG ARCHIVELOG puts WAL files (from pg_wal) into the repository as archive-push does, with its checks.",
    },
    Topic {
        keyword: "CONFIGURE",
        syntax: "CONFIGURE RETENTION POLICY ... | DEFAULT DEVICE TYPE TO DISK|SBT|S3 | DEVICE TYPE d PARALLELISM n | CHANNEL DEVICE TYPE d PARMS '...' [MAXOPENFILES n] | BACKUP OPTIMIZATION ... | COMPRESSION ALGORITHM '...' | ARCHIVELOG DELETION POLICY ... | MAXSETSIZE ... | RPO TARGET TO '4h' | RPO TARGET CLEAR | RTO TARGET TO '30m' | DRILL INTERVAL TO '7d' | SLOT RETENTION LIMIT TO '1G' | REPOSITORY MIN FREE TO '10G' | REPOSITORY LOCK LIMIT TO '24h' | CERTIFICATE EXPIRY WARNING TO '30d' | BACKUP WINDOW TO '6h' (each also CLEAR);",
        meaning: "Persistent settings stored in the catalog; SHOW ALL prints them. PARMS names the device of a device type: 'vtape:/dir[,drives=N,...]' (the virtual tape library), 'plugin:PROGRAM ARGS' (a media-manager plugin), 's3://bucket/prefix' or '/dir'; RMAN's 'BLKSIZE=n, ENV=(NAME=VALUE, ...)' are stored too, other PARMS keys are refused. CONTROLFILE AUTOBACKUP and SNAPSHOT CONTROLFILE of Oracle have no PostgreSQL counterpart and are refused; ENCRYPTION FOR DATABASE is refused with the way recman encrypts (a whole repository, create catalog --encrypt), and ENCRYPTION ALGORITHM accepts only 'AES256' (AES-256-GCM).",
    },
    Topic {
        keyword: "CONNECT",
        syntax: "CONNECT TARGET ['conninfo' | /]; CONNECT CATALOG '/path/to/repository';",
        meaning: "TARGET sets the libpq connection of later statements (/ keeps the default: --target, PG* variables or the local socket). CATALOG names the repository directory, which holds the catalog.",
    },
    Topic {
        keyword: "CREATE",
        syntax: "CREATE CATALOG; CREATE RESTORE POINT name;",
        meaning: "CATALOG creates the repository and its catalog at --repo (recman create catalog). RESTORE POINT runs pg_create_restore_point on the target and records the name with its LSN in the catalog, for RESTORE ... UNTIL RESTORE POINT name (recman create restore-point NAME).",
    },
    Topic {
        keyword: "CROSSCHECK",
        syntax: "CROSSCHECK BACKUP | BACKUPSET n | ARCHIVELOG ALL;",
        meaning: "Checks that the pieces the catalog lists are still in the repository and marks missing ones EXPIRED.",
    },
    Topic {
        keyword: "DELETE",
        syntax: "DELETE [FORCE] [NOPROMPT] OBSOLETE [REDUNDANCY n | RECOVERY WINDOW OF n DAYS] | EXPIRED BACKUP | BACKUPSET n | ARCHIVELOG ...;",
        meaning: "Removes backups (and the WAL only they need) from the repository and the catalog.",
    },
    Topic {
        keyword: "EXIT",
        syntax: "EXIT;",
        meaning: "Leaves the RECMAN> prompt (QUIT and end of input do too).",
    },
    Topic {
        keyword: "HELP",
        syntax: "HELP [statement];",
        meaning: "Lists the statements, or shows one.",
    },
    Topic {
        keyword: "LIST",
        syntax: "LIST BACKUP [SUMMARY] | LIST BACKUPSET n | LIST ARCHIVELOG ALL | LIST INCARNATION | LIST FAILURE [ALL | n, ...] [DETAIL];",
        meaning: "Prints what the catalog knows, as recman list does. LIST FAILURE runs the checks first (recman failure list); ADVISE FAILURE [ALL | n, ...] writes the automatic repairs as a script and REPAIR FAILURE [PREVIEW] runs it (docs/failures.md).",
    },
    Topic {
        keyword: "RECOVER",
        syntax: "RECOVER DATABASE [UNTIL TIME 'date' | UNTIL SCN lsn]; RECOVER COPY OF DATABASE WITH TAG 't'; RECOVER DATAFILE 'base/5/16384' BLOCK n [TO m],...; RECOVER CORRUPTION LIST; RECOVER TABLE s.t [OF PLUGGABLE DATABASE db] UNTIL TIME 'date' [AUXILIARY DESTINATION 'dir'] [REMAP TABLE s.t:new] [DUMP FILE 'f' NOTABLEIMPORT];",
        meaning: "PostgreSQL recovers when it starts on a restored directory, so RECOVER DATABASE belongs in the RUN block of a RESTORE DATABASE: the two become one restore whose recovery target is RECOVER's UNTIL (or SET UNTIL). RECOVER COPY OF DATABASE rolls an image copy forward. RECOVER … BLOCK and RECOVER CORRUPTION LIST repair damaged pages of the stopped cluster from a backup and the WAL since. RECOVER TABLE brings one table back to a past time through an auxiliary instance (recman recover table).",
    },
    Topic {
        keyword: "REGISTER",
        syntax: "REGISTER DATABASE;",
        meaning: "Records the target cluster in the catalog (recman register database).",
    },
    Topic {
        keyword: "RELEASE",
        syntax: "RELEASE CHANNEL [name];",
        meaning: "Inside RUN: drops a channel allocated earlier in the block (all channels without a name).",
    },
    Topic {
        keyword: "REPORT",
        syntax: "REPORT OBSOLETE | REPORT NEED BACKUP ... | REPORT SCHEMA | REPORT UNRECOVERABLE | REPORT SLO | REPORT COSTS;",
        meaning: "Answers retention questions from the catalog. REPORT SLO sets each database's measured RPO, last drill's RTO and predicted restore time beside the targets (recman report slo). REPORT COSTS shows the object-store requests (PUT, GET, HEAD, LIST, DELETE) and bytes of each backup and each day of archiving (recman report costs).",
    },
    Topic {
        keyword: "RESTORE",
        syntax: "RESTORE DATABASE [TO '/new/dir'] [FROM TAG 't'] [UNTIL TIME 'date' | UNTIL SCN lsn] [PREVIEW | VALIDATE];",
        meaning: "Restores the cluster into a new directory given by TO or by SET NEWNAME FOR DATABASE in the same RUN block, and writes the recovery settings (recman restore database). RESTORE DATABASE PREVIEW prints the restore's plan (backups, pieces and their copies, WAL segments and their sources, gaps, bytes, estimated duration) and RESTORE DATABASE VALIDATE reads and checks everything that plan names; neither writes anything nor needs a directory (recman restore database --preview / --validate). recman never restores over the running cluster.",
    },
    Topic {
        keyword: "RUN",
        syntax: "RUN { statement; ... }",
        meaning: "Parses the whole block first, then runs its statements in order; the first failure stops the block and names the statement. Channels and SET values last until the closing brace.",
    },
    Topic {
        keyword: "SET",
        syntax: "SET UNTIL TIME 'date' | SCN lsn; SET NEWNAME FOR DATABASE TO '/dir'; SET MAXCORRUPT FOR DATAFILE n,... TO n; SET COMPRESSION ALGORITHM 'x';",
        meaning: "Inside RUN: UNTIL is the recovery target of the block's RESTORE/RECOVER; NEWNAME FOR DATABASE is where RESTORE DATABASE writes; MAXCORRUPT is the corrupt blocks a BACKUP tolerates per file.",
    },
    Topic {
        keyword: "SHOW",
        syntax: "SHOW ALL; SHOW RETENTION POLICY; ...",
        meaning: "Prints the configuration as CONFIGURE statements.",
    },
    Topic {
        keyword: "SQL",
        syntax: "SQL 'statement';",
        meaning: "Runs one SQL statement on the target. Oracle's ALTER SYSTEM ARCHIVE LOG CURRENT and ALTER SYSTEM SWITCH LOGFILE run as pg_switch_wal().",
    },
    Topic {
        keyword: "VALIDATE",
        syntax: "VALIDATE DATABASE; VALIDATE BACKUPSET n;",
        meaning: "DATABASE checks every page of the data directory; BACKUPSET checks every piece of a backup (by id); nothing is written.",
    },
    Topic {
        keyword: "STARTUP",
        syntax: "STARTUP / SHUTDOWN / ALTER DATABASE ...",
        meaning: "Oracle instance commands: refused. Use pg_ctl start/stop; PostgreSQL has no MOUNT state, and a restored cluster opens (promotes) by itself when recovery ends.",
    },
];

/// The help text for `topic` (any case), or the list of statements when None or unknown.
pub fn help(topic: Option<&str>) -> String {
    if let Some(t) = topic {
        let t = t.to_ascii_uppercase();
        let t = match t.as_str() {
            "SHUTDOWN" | "ALTER" => "STARTUP",
            "QUIT" => "EXIT",
            other => other,
        };
        if let Some(top) = TOPICS.iter().find(|x| x.keyword == t) {
            return format!("{}\n\n{}\n", top.syntax, top.meaning);
        }
    }
    let mut s = String::from("Statements (end each with ';'; HELP statement shows one):\n");
    for t in TOPICS {
        s.push_str(&format!(
            "  {:<11} {}\n",
            t.keyword,
            first_sentence(t.meaning)
        ));
    }
    s
}

fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(i) => &s[..=i],
        None => s,
    }
}
