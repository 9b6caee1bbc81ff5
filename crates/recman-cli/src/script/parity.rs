//! The parity of the two front ends: every subcommand and option of clap's command tree has a
//! statement that lowers to the same typed command, or is in the written list of what stays
//! CLI-only (with the reason). Statements only the language has are listed with theirs.

use super::block::Block;
use super::session::Session;
use crate::cli::{Cli, Global};
use clap::CommandFactory;
use recman_command as m;
use recman_lang::{Statement, parse_script};

/// (CLI arguments after `recman`, the statement that lowers to the same command).
pub(crate) const PAIRS: &[(&str, &str)] = &[
    ("create catalog", "CREATE CATALOG;"),
    ("register database --name main", "REGISTER DATABASE;"),
    ("backup database", "BACKUP DATABASE;"),
    (
        "backup database --tag T1 --filesperset 4",
        "BACKUP DATABASE TAG 'T1' FILESPERSET 4;",
    ),
    (
        "backup database --compress lz4",
        "BACKUP AS COMPRESSED BACKUPSET DATABASE;",
    ),
    ("backup database --force", "BACKUP DATABASE FORCE;"),
    (
        "backup database --format /a/ora_%U --copies 2 --copy-format /b/ora_%U",
        "BACKUP COPIES 2 DATABASE FORMAT '/a/ora_%U', '/b/ora_%U';",
    ),
    (
        "configure backup-copies 2",
        "CONFIGURE DATAFILE BACKUP COPIES FOR DEVICE TYPE DISK TO 2;",
    ),
    (
        "configure backup-copies clear",
        "CONFIGURE DATAFILE BACKUP COPIES FOR DEVICE TYPE DISK CLEAR;",
    ),
    (
        "backup database --maxsetsize 1073741824",
        "BACKUP DATABASE MAXSETSIZE 1G;",
    ),
    (
        "backup database --check-logical",
        "BACKUP CHECK LOGICAL DATABASE;",
    ),
    (
        "validate database --check-logical",
        "VALIDATE CHECK LOGICAL DATABASE;",
    ),
    (
        "validate database --check-logical",
        "BACKUP VALIDATE CHECK LOGICAL DATABASE;",
    ),
    (
        "change backup ARCHIVAL --keep-forever",
        "CHANGE BACKUP TAG 'ARCHIVAL' KEEP FOREVER;",
    ),
    (
        "change backup ARCHIVAL --keep-until 2099-12-31",
        "CHANGE BACKUP TAG 'ARCHIVAL' KEEP UNTIL TIME '2099-12-31';",
    ),
    (
        "change backup ARCHIVAL --nokeep",
        "CHANGE BACKUP TAG 'ARCHIVAL' NOKEEP;",
    ),
    (
        "change backup ARCHIVAL --unavailable",
        "CHANGE BACKUP TAG 'ARCHIVAL' UNAVAILABLE;",
    ),
    (
        "change backup ARCHIVAL --available",
        "CHANGE BACKUP TAG 'ARCHIVAL' AVAILABLE;",
    ),
    (
        "backup database --keep-forever",
        "BACKUP DATABASE KEEP FOREVER;",
    ),
    (
        "backup database --keep-until 2027-01-01",
        "BACKUP DATABASE KEEP UNTIL TIME '2027-01-01';",
    ),
    (
        "backup database --plus-archivelog",
        "BACKUP DATABASE PLUS ARCHIVELOG;",
    ),
    (
        "backup database --section-size 1073741824",
        "BACKUP DATABASE SECTION SIZE 1G;",
    ),
    (
        "backup database --incremental-level 1 --cumulative",
        "BACKUP INCREMENTAL LEVEL 1 CUMULATIVE DATABASE;",
    ),
    (
        "backup database --as-copy --tag C",
        "BACKUP AS COPY DATABASE TAG 'C';",
    ),
    (
        "backup database --incremental-level 1 --for-recover-of-copy --tag C",
        "BACKUP INCREMENTAL LEVEL 1 FOR RECOVER OF COPY WITH TAG 'C' DATABASE;",
    ),
    (
        "backup database --device-type sbt",
        "BACKUP DEVICE TYPE SBT DATABASE;",
    ),
    (
        "backup database --format /srv/b/ora_%U.rbf",
        "BACKUP DATABASE FORMAT '/srv/b/ora_%U.rbf';",
    ),
    (
        "backup database --duration 0:00:20 --partial --minimize-load",
        "BACKUP DURATION 0:00:20 PARTIAL MINIMIZE LOAD DATABASE;",
    ),
    (
        "backup database --duration 1:30:00 --minimize-time",
        "BACKUP DURATION 1:30 MINIMIZE TIME DATABASE;",
    ),
    (
        "backup database --not-backed-up-since 2026-11-25T10:00:00",
        "BACKUP DATABASE NOT BACKED UP SINCE TIME '2026-11-25T10:00:00';",
    ),
    ("backup archivelog all", "BACKUP ARCHIVELOG ALL;"),
    (
        "backup archivelog all --not-backed-up 2 --delete-input --tag W --filesperset 8",
        "BACKUP ARCHIVELOG ALL NOT BACKED UP 2 TIMES DELETE ALL INPUT TAG 'W' FILESPERSET 8;",
    ),
    (
        "backup archivelog all --compress lz4 --format /srv/b/arc_%U.rbf",
        "BACKUP AS COMPRESSED BACKUPSET ARCHIVELOG ALL FORMAT '/srv/b/arc_%U.rbf';",
    ),
    (
        "backup backupset all --device-type sbt",
        "BACKUP DEVICE TYPE SBT BACKUPSET ALL;",
    ),
    (
        "backup recovery-area --device-type sbt",
        "BACKUP DEVICE TYPE SBT RECOVERY AREA;",
    ),
    (
        "backup controlfile --format /srv/b/ctl_%U.rbf",
        "BACKUP CURRENT CONTROLFILE FORMAT '/srv/b/ctl_%U.rbf';",
    ),
    (
        "restore controlfile --from /srv/b/ctl.rbf",
        "RESTORE CONTROLFILE FROM '/srv/b/ctl.rbf';",
    ),
    ("restore database --to /r", "RESTORE DATABASE TO '/r';"),
    (
        "restore database --to /r --from-tag T1",
        "RESTORE DATABASE TO '/r' FROM TAG 'T1';",
    ),
    (
        "restore database --to /r --until-lsn 0/16B3740",
        "RESTORE DATABASE TO '/r' UNTIL SCN '0/16B3740';",
    ),
    (
        "restore database --to /r --until-restore-point before_load",
        "RESTORE DATABASE TO '/r' UNTIL RESTORE POINT before_load;",
    ),
    (
        "create restore-point before_load",
        "CREATE RESTORE POINT before_load;",
    ),
    ("restore database --preview", "RESTORE DATABASE PREVIEW;"),
    (
        "recover table public.t --database app --until-lsn 0/16B3740 --remap-table t_old --dump /tmp/t.sql --auxiliary-dir /tmp/aux",
        "RECOVER TABLE public.t OF PLUGGABLE DATABASE app UNTIL SCN '0/16B3740' AUXILIARY DESTINATION '/tmp/aux' REMAP TABLE public.t:t_old DUMP FILE '/tmp/t.sql' NOTABLEIMPORT;",
    ),
    ("restore database --validate", "RESTORE DATABASE VALIDATE;"),
    ("validate database", "VALIDATE DATABASE;"),
    ("validate backup 3", "VALIDATE BACKUPSET 3;"),
    (
        "recover copy --tag C",
        "RECOVER COPY OF DATABASE WITH TAG 'C';",
    ),
    (
        "recover block base/5/16384:3 base/5/16384:7 base/5/16384:8",
        "RECOVER DATAFILE 'base/5/16384' BLOCK 3, 7 TO 8;",
    ),
    ("recover corruption-list", "RECOVER CORRUPTION LIST;"),
    ("list backup", "LIST BACKUP;"),
    ("list backup --summary", "LIST BACKUP SUMMARY;"),
    ("list archivelog", "LIST ARCHIVELOG ALL;"),
    ("list incarnation", "LIST INCARNATION;"),
    ("list copy", "LIST COPY;"),
    ("show all --rman", "SHOW ALL;"),
    (
        "configure retention-policy redundancy 2",
        "CONFIGURE RETENTION POLICY TO REDUNDANCY 2;",
    ),
    (
        "configure channels 2",
        "CONFIGURE DEVICE TYPE DISK PARALLELISM 2;",
    ),
    (
        "configure compression zstd",
        "CONFIGURE COMPRESSION ALGORITHM 'MEDIUM';",
    ),
    (
        "configure maxopenfiles 4",
        "CONFIGURE CHANNEL DEVICE TYPE DISK MAXOPENFILES 4;",
    ),
    (
        "configure maxpiecesize 1073741824",
        "CONFIGURE CHANNEL DEVICE TYPE DISK MAXPIECESIZE 1G;",
    ),
    (
        "configure backup-optimization on",
        "CONFIGURE BACKUP OPTIMIZATION ON;",
    ),
    (
        "configure archivelog-deletion-policy backed-up 1 times",
        "CONFIGURE ARCHIVELOG DELETION POLICY TO BACKED UP 1 TIMES TO DEVICE TYPE DISK;",
    ),
    (
        "configure archivelog-deletion-policy applied-on-all-standby backed-up 2 times",
        "CONFIGURE ARCHIVELOG DELETION POLICY TO APPLIED ON ALL STANDBY BACKED UP 2 TIMES TO DEVICE TYPE DISK;",
    ),
    (
        "configure device-type sbt parallelism 2",
        "CONFIGURE DEVICE TYPE SBT PARALLELISM 2;",
    ),
    (
        "configure default-device-type sbt",
        "CONFIGURE DEFAULT DEVICE TYPE TO SBT;",
    ),
    ("report schema", "REPORT SCHEMA;"),
    ("report unrecoverable", "REPORT UNRECOVERABLE;"),
    ("report obsolete", "REPORT OBSOLETE;"),
    (
        "report obsolete --redundancy 2",
        "REPORT OBSOLETE REDUNDANCY 2;",
    ),
    (
        "report obsolete --recovery-window 7",
        "REPORT OBSOLETE RECOVERY WINDOW OF 7 DAYS;",
    ),
    ("report need-backup", "REPORT NEED BACKUP;"),
    (
        "report need-backup --redundancy 2",
        "REPORT NEED BACKUP REDUNDANCY 2;",
    ),
    ("report need-backup --days 3", "REPORT NEED BACKUP DAYS 3;"),
    ("delete obsolete --noprompt", "DELETE NOPROMPT OBSOLETE;"),
    (
        "delete obsolete --redundancy 2",
        "DELETE OBSOLETE REDUNDANCY 2;",
    ),
    (
        "delete obsolete --recovery-window 7",
        "DELETE OBSOLETE RECOVERY WINDOW OF 7 DAYS;",
    ),
    (
        "delete expired --noprompt",
        "DELETE NOPROMPT EXPIRED BACKUP;",
    ),
    ("delete backup 3 --noprompt", "DELETE NOPROMPT BACKUPSET 3;"),
    (
        "delete archivelog all --backed-up 1 --noprompt",
        "DELETE NOPROMPT ARCHIVELOG ALL BACKED UP 1 TIMES TO DISK;",
    ),
    ("crosscheck backup", "CROSSCHECK BACKUP;"),
    ("crosscheck archivelog all", "CROSSCHECK ARCHIVELOG ALL;"),
    ("catalog start-with /repo", "CATALOG START WITH '/repo';"),
    ("drill", "DRILL;"),
    (
        "drill --until-time 2026-11-25T10:00:00 --check-sql x --keep --dir /d --from-tag T1",
        "DRILL UNTIL TIME '2026-11-25T10:00:00' CHECK SQL 'x' KEEP AUXILIARY DESTINATION '/d' FROM TAG 'T1';",
    ),
    (
        "drill --until-lsn 0/3000000",
        "DRILL UNTIL LSN '0/3000000';",
    ),
    ("duplicate database --to /d", "DUPLICATE DATABASE TO '/d';"),
    (
        "duplicate database --to /d --for-standby --primary-conninfo host=p --slot s1 --port 5433",
        "DUPLICATE TARGET DATABASE TO '/d' FOR STANDBY PRIMARY CONNINFO 'host=p' SLOT 's1' PORT 5433;",
    ),
    ("configure rpo-target 4h", "CONFIGURE RPO TARGET TO '4h';"),
    ("configure rpo-target clear", "CONFIGURE RPO TARGET CLEAR;"),
    ("configure rto-target 30m", "CONFIGURE RTO TARGET TO '30m';"),
    ("configure rto-target clear", "CONFIGURE RTO TARGET CLEAR;"),
    (
        "configure drill-interval 7d",
        "CONFIGURE DRILL INTERVAL TO 7d;",
    ),
    (
        "configure slot-retention-limit 2G",
        "CONFIGURE SLOT RETENTION LIMIT TO '2G';",
    ),
    (
        "configure repository-min-free 10G",
        "CONFIGURE REPOSITORY MIN FREE TO '10G';",
    ),
    (
        "configure repository-lock-limit 12h",
        "CONFIGURE REPOSITORY LOCK LIMIT TO '12h';",
    ),
    (
        "configure certificate-expiry-warning 14d",
        "CONFIGURE CERTIFICATE EXPIRY WARNING TO '14d';",
    ),
    (
        "configure backup-window 6h",
        "CONFIGURE BACKUP WINDOW TO '6h';",
    ),
    (
        "configure backup-window clear",
        "CONFIGURE BACKUP WINDOW CLEAR;",
    ),
    ("report slo", "REPORT SLO;"),
    ("report costs", "REPORT COSTS;"),
    ("failure list", "LIST FAILURE;"),
    ("failure list --all", "LIST FAILURE ALL;"),
    ("failure list 3 --detail", "LIST FAILURE 3 DETAIL;"),
    ("failure advise", "ADVISE FAILURE;"),
    ("failure advise 3 4", "ADVISE FAILURE 3, 4;"),
    ("failure repair", "REPAIR FAILURE;"),
    ("failure repair --preview", "REPAIR FAILURE PREVIEW;"),
    (
        "duplicate database --to /d --until-time 2026-11-25T10:00:00",
        "DUPLICATE DATABASE TO '/d' UNTIL TIME '2026-11-25T10:00:00';",
    ),
];

/// What stays CLI-only, as `path` or `path --option`, and why.
pub(crate) const CLI_ONLY: &[(&str, &str)] = &[
    (
        "drill --channels",
        "a DRILL statement restores with one stream",
    ),
    (
        "duplicate database --channels",
        "a DUPLICATE statement restores with one stream",
    ),
    ("list drill", "RMAN has no LIST of restore tests"),
    (
        "report need-backup --drill-days",
        "RMAN's REPORT NEED BACKUP has no drill rule",
    ),
    (
        "metrics",
        "its output is for a monitoring system's scraper, not for a session; RMAN has no such statement",
    ),
    (
        "completions",
        "it prints a shell's completion script for the command line itself",
    ),
    ("man", "it prints the command line's manual page"),
    (
        "server",
        "it runs the database-host agent as a long-lived service, not a statement of a session",
    ),
    (
        "register database --agent",
        "the fleet is set up from the command line; REGISTER DATABASE registers the local cluster",
    ),
    (
        "archive-push",
        "PostgreSQL's archive_command runs it, not a user",
    ),
    (
        "archive-get",
        "PostgreSQL's restore_command runs it, not a user",
    ),
    (
        "archive-prefetch",
        "archive-get starts it in the background",
    ),
    (
        "archive-push-ahead",
        "archive-push starts it in the background",
    ),
    (
        "receive",
        "it runs the WAL receiver as a long-lived service, not a statement of a session",
    ),
    (
        "report repositories",
        "the repository list is the command line's (--also-repo), not a session's; a language form may come later (issue 41)",
    ),
    (
        "report rpo",
        "RMAN has no REPORT of redo transport lag; a language form may come later (issue 42)",
    ),
    ("run", "it runs the language"),
    (
        "check",
        "a scheduler's check with an exit status; LIST FAILURE runs the same checks in a session",
    ),
    (
        "report slo --json",
        "machine output for programs, not scripts",
    ),
    (
        "report costs --json",
        "machine output for programs, not scripts",
    ),
    (
        "failure list --json",
        "machine output for programs, not scripts",
    ),
    (
        "failure advise --json",
        "machine output for programs, not scripts",
    ),
    (
        "failure advise --script",
        "RMAN's ADVISE FAILURE has no clause for the script's place; a session writes it into the repository",
    ),
    (
        "failure repair --script",
        "RMAN's REPAIR FAILURE has no clause for the script's place; a session writes it into the repository",
    ),
    (
        "recover table --channels",
        "ALLOCATE CHANNEL in a RUN block gives it (not lowered for RECOVER TABLE yet)",
    ),
    (
        "recover table --until-time",
        "UNTIL TIME takes RMAN's date forms, resolved when run",
    ),
    (
        "recover table --until-xid",
        "RMAN has no transaction-id target",
    ),
    (
        "create catalog --encrypt",
        "RMAN's CREATE CATALOG has no encryption clause; a language form may come later (issue 16)",
    ),
    (
        "create catalog --immutable",
        "an S3 Object Lock setting RMAN has no word for; made once, from the command line (issue 41)",
    ),
    (
        "create catalog --lock-mode",
        "goes with --immutable, which the language does not have (issue 41)",
    ),
    (
        "create catalog --lock-days",
        "goes with --immutable, which the language does not have (issue 41)",
    ),
    (
        "key show",
        "the repository's master key is managed from the command line (docs/security.md)",
    ),
    (
        "key rotate",
        "the repository's master key is managed from the command line (docs/security.md)",
    ),
    (
        "backup database --archive-timeout",
        "an operational limit; the default suits scripts",
    ),
    (
        "backup database --maxcorrupt",
        "SET MAXCORRUPT FOR DATAFILE in a RUN block gives it",
    ),
    (
        "backup database --channels",
        "ALLOCATE CHANNEL in a RUN block gives it",
    ),
    (
        "backup database --maxopenfiles",
        "ALLOCATE CHANNEL … MAXOPENFILES gives it",
    ),
    (
        "backup database --maxpiecesize",
        "ALLOCATE CHANNEL … MAXPIECESIZE gives it",
    ),
    (
        "backup database --standby",
        "ALLOCATE CHANNEL … CONNECT to a standby gives it",
    ),
    (
        "backup database --standby-agent",
        "ALLOCATE CHANNEL … CONNECT 'https://HOST:PORT' (the standby's agent) gives it",
    ),
    ("backup database --rate", "ALLOCATE CHANNEL … RATE gives it"),
    (
        "backup database --tune",
        "recman's own auto tuning; RMAN has no statement for it",
    ),
    (
        "configure incremental-forever",
        "RMAN has no CONFIGURE for an incremental-forever schedule; recman's own",
    ),
    (
        "configure tuning",
        "RMAN has no CONFIGURE for auto tuning; recman's own",
    ),
    (
        "configure imported-retention",
        "RMAN has no backups of other tools to count; recman's own (catalog import)",
    ),
    (
        "calibrate",
        "recman's own measurement of devices and CPU (seed 000's first step)",
    ),
    (
        "list calibration",
        "lists what `calibrate` stored; recman's own",
    ),
    (
        "advise",
        "recman's own walk through the seeds' tuning steps",
    ),
    (
        "restore database --channels",
        "ALLOCATE CHANNEL in a RUN block gives it",
    ),
    (
        "restore database --until-time",
        "UNTIL TIME takes RMAN's date forms, resolved when run",
    ),
    (
        "restore database --until-xid",
        "RMAN has no transaction-id target",
    ),
    (
        "restore database --allow-wal-gap",
        "a deliberate override kept off scripts",
    ),
    (
        "restore database --force",
        "clears an interrupted restore's directory by hand",
    ),
    (
        "catalog import",
        "the language imports with CATALOG START WITH on the other tool's location",
    ),
    (
        "catalog import --stanza",
        "CATALOG START WITH names the stanza's directory, which holds its name",
    ),
    (
        "catalog import --copy",
        "RMAN's CATALOG reads its own backup pieces and has no conversion; a one-off migration step on the command line",
    ),
    (
        "catalog import --pgbackrest-config",
        "CATALOG START WITH reads the repository itself; a passphrase comes from the config file on the command line only",
    ),
    (
        "restore database --write-mode",
        "an I/O override of the measured default; RMAN's RESTORE has no such clause",
    ),
    (
        "restore database --tablespace-map",
        "RMAN's SET NEWNAME per file has no cluster form",
    ),
    (
        "restore database --archive-mode",
        "a PostgreSQL setting of the restored cluster",
    ),
    (
        "restore database --from-copy",
        "RESTORE … FROM DATAFILECOPY has no tag to name",
    ),
    (
        "restore database --switch-to-copy",
        "SWITCH is refused (Oracle's datafile switch)",
    ),
    (
        "restore database --include-db",
        "RMAN restores whole databases or skips tablespaces; a PostgreSQL cluster's databases have no RMAN counterpart",
    ),
    (
        "restore database --timeline",
        "RMAN's incarnations are reset, not chosen per restore",
    ),
    (
        "restore database --json",
        "machine output for programs, not scripts",
    ),
    (
        "list backup --json",
        "machine output for programs, not scripts",
    ),
    ("list backup --by-file", "LIST BACKUP BY FILE"),
    (
        "list archivelog --json",
        "machine output for programs, not scripts",
    ),
    (
        "list incarnation --json",
        "machine output for programs, not scripts",
    ),
    (
        "list copy --json",
        "machine output for programs, not scripts",
    ),
    (
        "show all --json",
        "machine output for programs, not scripts",
    ),
    (
        "validate database --maxopenfiles",
        "ALLOCATE CHANNEL … MAXOPENFILES gives it",
    ),
    (
        "validate backup --channels",
        "ALLOCATE CHANNEL in a RUN block gives it",
    ),
    (
        "validate database --channels",
        "ALLOCATE CHANNEL in a RUN block gives it",
    ),
    (
        "recover block --auxiliary-dir",
        "RMAN's block recovery has no auxiliary destination; the default sits beside PGDATA",
    ),
    (
        "recover corruption-list --auxiliary-dir",
        "RMAN's block recovery has no auxiliary destination; the default sits beside PGDATA",
    ),
    (
        "recover copy --until-time",
        "UNTIL TIME takes RMAN's date forms, resolved when run",
    ),
    (
        "backup synthetic-full",
        "RMAN has no synthetic full; recman's own",
    ),
    (
        "configure filesperset",
        "RMAN has no CONFIGURE for FILESPERSET",
    ),
    (
        "configure section-size",
        "RMAN has no CONFIGURE for SECTION SIZE",
    ),
    ("report io", "recman's own I/O report (V$BACKUP_ASYNC_IO)"),
    (
        "report fleet",
        "a page for a browser, not a report of a session; RMAN has none",
    ),
    (
        "report schema --json",
        "machine output for programs, not scripts",
    ),
    (
        "report unrecoverable --json",
        "machine output for programs, not scripts",
    ),
    (
        "report obsolete --json",
        "machine output for programs, not scripts",
    ),
    (
        "crosscheck backup --verify",
        "RMAN's CROSSCHECK only looks; VALIDATE reads",
    ),
    (
        "crosscheck archivelog --verify",
        "RMAN's CROSSCHECK only looks; VALIDATE reads",
    ),
    (
        "validate database --rate",
        "ALLOCATE CHANNEL … RATE gives it",
    ),
];

/// Options every data-moving command shares (the I/O engine's); CLI-only: RMAN tunes them with
/// hidden parameters, not statements.
const IO_OPTIONS: &[&str] = &[
    "--io",
    "--io-mode",
    "--io-slaves",
    "--input-buffers",
    "--input-buffer-size",
    "--blksize",
    "--output-buffers",
    "--buffered-reads",
    "--direct-reads",
];

/// Every leaf subcommand with its own (not global) long options. Global options are settings
/// of the run, which a session inherits from the command line: `recman --agent local run` (or
/// `--agent URL`) decides where a RESTORE DATABASE statement writes exactly as it does for
/// `recman restore database`, since both reach the same `Env::restore_through`.
fn leaves(c: &clap::Command, path: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    let subs: Vec<&clap::Command> = c
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .collect();
    if subs.is_empty() {
        let opts = c
            .get_arguments()
            .filter(|a| !a.is_global_set())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .filter(|l| l != "--help")
            .collect();
        out.push((path.join(" "), opts));
        return;
    }
    for s in subs {
        path.push(s.get_name().to_string());
        leaves(s, path, out);
        path.pop();
    }
}

/// The commands a statement lowers to, without running anything; Err when it is refused.
pub(crate) fn lower_checked(text: &str) -> anyhow::Result<Vec<m::Command>> {
    let script = parse_script(text).map_err(|e| anyhow::anyhow!("{text}: {e}"))?;
    let g = Global::default();
    let s = Session {
        g: g.clone(),
        // Lowering runs no command.
        execute: |_, c| anyhow::bail!("lowering ran {:?}", c.path()),
    };
    let b = Block::top_level();
    let st = &script.statements[0].statement;
    match st {
        Statement::Backup(bk) => super::lower::backup(&b, bk, &g),
        Statement::Restore(r) => super::restore::restore(&b, &g, r, None).map(|c| vec![c]),
        Statement::Validate(v) => super::lower::validate(&b, &g, v),
        Statement::Recover(r) => super::restore::recover_alone(r).map(|c| c.into_iter().collect()),
        Statement::CreateCatalog => Ok(vec![m::Command::CreateCatalog {
            encrypt: false,
            immutable: None,
        }]),
        Statement::CreateRestorePoint(name) => {
            Ok(vec![m::Command::CreateRestorePoint { name: name.clone() }])
        }
        Statement::Foreign { verb, words } if verb == "CHANGE" => {
            let plain: Vec<String> = words
                .iter()
                .map(|w| match w {
                    recman_lang::ast::Word::Bare(b) | recman_lang::ast::Word::Quoted(b) => {
                        b.clone()
                    }
                })
                .collect();
            match super::change::lower(&plain)? {
                Some(c) => Ok(vec![c]),
                None => anyhow::bail!("{}", super::refuse::foreign(verb, &plain)),
            }
        }
        Statement::Foreign { verb, words } if verb == "ADVISE" || verb == "REPAIR" => {
            let plain: Vec<String> = words
                .iter()
                .map(|w| match w {
                    recman_lang::ast::Word::Bare(b) | recman_lang::ast::Word::Quoted(b) => {
                        b.clone()
                    }
                })
                .collect();
            match super::failure::lower(verb, &plain)? {
                Some(c) => Ok(vec![c]),
                None => anyhow::bail!("{}", super::refuse::foreign(verb, &plain)),
            }
        }
        Statement::Foreign { verb, words } if verb == "DRILL" => {
            super::drill::drill(words).map(|c| vec![c])
        }
        Statement::Foreign { verb, words } if verb == "DUPLICATE" => {
            match super::drill::duplicate(words)? {
                Some(c) => Ok(vec![c]),
                None => anyhow::bail!("{}", super::refuse::foreign(verb, &[])),
            }
        }
        Statement::RegisterDatabase => Ok(vec![m::Command::RegisterDatabase {
            agent: None,
            name: "main".into(),
        }]),
        // Statements that only change the session or the block, or are refused: run on an
        // empty block, which executes no command for them.
        Statement::Foreign { .. }
        | Statement::Connect { .. }
        | Statement::Allocate(_)
        | Statement::Set(_)
        | Statement::Release(_) => {
            let mut s = s;
            let mut b = b;
            b.run_statement(&mut s, st).map(|_| Vec::new())
        }
        other => super::maint::lower(&s, other),
    }
}

fn lower(text: &str) -> Vec<m::Command> {
    lower_checked(text).unwrap_or_else(|e| panic!("{text}: {e:#}"))
}

fn cli(args: &str) -> m::Command {
    use clap::Parser;
    let argv = std::iter::once("recman").chain(args.split_whitespace());
    let c = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("recman {args}: {e}"));
    c.command.expect("a subcommand").into()
}

#[test]
fn each_pair_lowers_to_the_same_command() {
    for (args, text) in PAIRS {
        assert_eq!(lower(text), vec![cli(args)], "recman {args} vs {text}");
    }
}

#[test]
fn every_subcommand_and_option_has_a_language_form_or_a_reason() {
    let mut all = Vec::new();
    leaves(&Cli::command(), &mut Vec::new(), &mut all);
    let mut missing = Vec::new();
    for (path, opts) in &all {
        if CLI_ONLY.iter().any(|(k, _)| k == path) {
            continue;
        }
        let examples: Vec<&str> = PAIRS
            .iter()
            .map(|(a, _)| *a)
            .filter(|a| a.starts_with(path.as_str()))
            .collect();
        if examples.is_empty() {
            missing.push(path.clone());
        }
        for o in opts {
            let key = format!("{path} {o}");
            let covered = examples
                .iter()
                .any(|a| a.split_whitespace().any(|w| w == o))
                || CLI_ONLY.iter().any(|(k, _)| *k == key)
                || IO_OPTIONS.contains(&o.as_str());
            if !covered {
                missing.push(key);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no language form and no reason in script/parity.rs for: {missing:#?}"
    );
}
