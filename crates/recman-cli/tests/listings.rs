//! Issue 5: configuration in the catalog (CONFIGURE / SHOW ALL, backup defaults from it) and
//! every listing: the RMAN-like tables, and a schema check of each listing's JSON against the
//! keys and types documented in docs/commands.md (acceptance 6).

mod common;
mod flows;

use common::*;
use flows::*;
use serde_json::Value;

/// Documented JSON type of a key: s string, n number, b bool, a array, o object, plus "?" for
/// nullable.
fn check_schema(what: &str, v: &Value, spec: &[(&str, &str)]) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object: {v}"));
    for (key, ty) in spec {
        let val = obj
            .get(*key)
            .unwrap_or_else(|| panic!("{what}: documented key {key} missing in {v}"));
        let nullable = ty.ends_with('?');
        let ok = match (ty.trim_end_matches('?'), val) {
            (_, Value::Null) => nullable,
            ("s", Value::String(_))
            | ("b", Value::Bool(_))
            | ("a", Value::Array(_))
            | ("o", Value::Object(_)) => true,
            ("n", Value::Number(_)) => true,
            _ => false,
        };
        assert!(ok, "{what}: key {key} should be {ty}, is {val}");
    }
    for key in obj.keys() {
        assert!(
            spec.iter().any(|(k, _)| k == key),
            "{what}: key {key} is not documented"
        );
    }
}

const BACKUP: &[(&str, &str)] = &[
    ("id", "s"),
    ("database", "s"),
    ("tag", "s"),
    ("type", "s"),
    ("parent", "s?"),
    ("status", "s"),
    ("start_lsn", "s"),
    ("stop_lsn", "s?"),
    ("timeline", "n"),
    ("start_wal", "s"),
    ("stop_wal", "s?"),
    ("start_time", "s"),
    ("stop_time", "s?"),
    ("duration_seconds", "n?"),
    ("database_bytes", "n"),
    ("written_bytes", "n"),
    ("read_bytes", "n?"),
    ("tracked_bytes", "n?"),
    ("files", "n"),
    ("channels", "n"),
    ("compression", "s"),
    ("filesperset", "n"),
    ("maxopenfiles", "n"),
    ("error", "s?"),
    ("origin", "s?"),
    ("lock", "o?"),
    ("pieces", "a"),
];
const PIECE: &[(&str, &str)] = &[
    ("set_no", "n"),
    ("piece_no", "n"),
    ("channel", "n"),
    ("path", "s"),
    ("size", "n"),
    ("crc32c", "n"),
    ("status", "s"),
    ("copies", "a"),
];
const ARCHIVELOG: &[(&str, &str)] = &[
    ("name", "s"),
    ("kind", "s"),
    ("timeline", "n"),
    ("path", "s"),
    ("size", "n"),
    ("stored_size", "n"),
    ("crc32c", "n"),
    ("archived_at", "s"),
    ("status", "s"),
    ("backed_up", "n"),
];
const INCARNATION: &[(&str, &str)] = &[
    ("database", "s"),
    ("system_identifier", "s"),
    ("timeline", "n"),
    ("parent_timeline", "n?"),
    ("switch_lsn", "s?"),
    ("reason", "s?"),
    ("status", "s"),
];
const SETTING: &[(&str, &str)] = &[("name", "s"), ("value", "s"), ("source", "s")];
const OBSOLETE: &[(&str, &str)] = &[
    ("policy", "s"),
    ("backups", "a"),
    ("archivelogs", "a"),
    ("kept_backups", "a"),
];

fn json(setup: &Setup, args: &[&str]) -> Value {
    let out = setup.ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}):\n{out}"))
}

fn setting<'a>(all: &'a Value, name: &str) -> &'a Value {
    all.as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("show all lacks {name}: {all}"))
}

#[test]
fn configure_show_and_every_listing() {
    let setup = Setup::new();
    let all = json(&setup, &["show", "all", "--json"]);
    for s in all.as_array().unwrap() {
        check_schema("show all", s, SETTING);
        assert_eq!(s["source"], "default", "{s}");
    }
    assert_eq!(setting(&all, "retention-policy")["value"], "redundancy 1");

    setup.ok(&["configure", "channels", "2"]);
    setup.ok(&["configure", "compression", "lz4"]);
    setup.ok(&["configure", "retention-policy", "recovery-window", "7"]);
    setup.ok(&["configure", "maxopenfiles", "4"]);
    setup.ok(&["configure", "section-size", "64M"]);
    let err = setup.err(&["configure", "channels", "zero"]);
    assert!(err.contains("channels") && err.contains("hint"), "{err}");
    let err = setup.err(&["configure", "retention-policy", "redundancy", "0"]);
    assert!(err.contains("hint"), "{err}");
    let all = json(&setup, &["show", "all", "--json"]);
    assert_eq!(setting(&all, "channels")["value"], "2");
    assert_eq!(setting(&all, "channels")["source"], "catalog");
    assert_eq!(
        setting(&all, "retention-policy")["value"],
        "recovery-window 7"
    );
    let text = setup.ok(&["show", "all"]);
    assert!(
        text.contains("configure channels 2;  # catalog")
            && text.contains("configure filesperset 64;  # default"),
        "{text}"
    );

    // The backup takes its defaults from the catalog; a flag beats the catalog.
    setup.backup(&["--filesperset", "32", "--channels", "1"]);
    let b = &setup.backups()[0];
    assert_eq!(b["channels"], 1);
    assert_eq!(b["maxopenfiles"], 4);
    assert_eq!(b["compression"], "lz4");
    assert_eq!(b["filesperset"], 32);
    // 64M sections: the largest relation file of a fresh cluster is smaller, so the setting
    // shows in show all rather than in the pieces.
    assert_eq!(setting(&all, "section-size")["value"], "67108864");
    setup.ok(&["configure", "section-size", "clear"]);
    setup.ok(&["configure", "channels", "clear"]);
    setup.ok(&["configure", "compression", "clear"]);
    let all = json(&setup, &["show", "all", "--json"]);
    assert_eq!(setting(&all, "channels")["source"], "default");

    // A config file beats the catalog.
    let (_t, dir) = new_scratch_dir();
    let cfg = dir.join("recman.toml");
    std::fs::write(&cfg, "channels = 3\n").unwrap();
    chown_to_cluster_user(&cfg);
    let mut a = setup.args(&["show", "all", "--json"]);
    a.extend(["--config".to_string(), path_str(&cfg).to_string()]);
    let all: Value = serde_json::from_str(&recman_ok(a)).unwrap();
    assert_eq!(setting(&all, "channels")["value"], "3");
    assert_eq!(setting(&all, "channels")["source"], "config file");

    // Every setting the catalog takes, the file takes by its name with `_`, checked alike;
    // the ones that decide for the whole repository stay the catalog's.
    let with_file = |text: &str| {
        std::fs::write(&cfg, text).unwrap();
        let mut a = setup.args(&["show", "all", "--json"]);
        a.extend(["--config".to_string(), path_str(&cfg).to_string()]);
        recman(a)
    };
    let out = with_file("rpo_target = \"4h\"\nbackup_window = \"6H\"\n");
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(setting(&all, "rpo-target")["source"], "config file");
    assert_eq!(setting(&all, "backup-window")["value"], "6h");
    let out = with_file("backup_window = \"soon\"\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("key `backup_window`") && err.contains("hint:"),
        "{err}"
    );
    let out = with_file("incremental_forever = \"off\"\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("unknown key `incremental_forever`"),
        "{err}"
    );

    setup.cluster.psql("select pg_switch_wal()");
    setup.cluster.switch_wal_and_wait_archived();

    // JSON schemas.
    let backups = setup.backups();
    assert_eq!(backups.len(), 1);
    for b in &backups {
        check_schema("list backup", b, BACKUP);
        for p in b["pieces"].as_array().unwrap() {
            check_schema("list backup piece", p, PIECE);
        }
    }
    let wal = json(&setup, &["list", "archivelog", "all", "--json"]);
    assert!(!wal.as_array().unwrap().is_empty());
    for w in wal.as_array().unwrap() {
        check_schema("list archivelog", w, ARCHIVELOG);
        assert_eq!(w["status"], "AVAILABLE");
    }
    let inc = json(&setup, &["list", "incarnation", "--json"]);
    assert_eq!(inc.as_array().unwrap().len(), 1);
    for i in inc.as_array().unwrap() {
        check_schema("list incarnation", i, INCARNATION);
        assert_eq!(i["status"], "CURRENT");
    }
    assert_eq!(
        json(&setup, &["list", "copy", "--json"]),
        Value::Array(vec![])
    );
    let obs = json(&setup, &["report", "obsolete", "--json"]);
    check_schema("report obsolete", &obs, OBSOLETE);

    // Tables.
    let id = backups[0]["id"].as_str().unwrap();
    let detailed = setup.ok(&["list", "backup"]);
    assert!(
        detailed.contains("List of Backup Sets") && detailed.contains("Piece Name:"),
        "{detailed}"
    );
    let summary = setup.ok(&["list", "backup", "--summary"]);
    assert!(
        summary.contains("List of Backups") && summary.contains(id),
        "{summary}"
    );
    let by_file = setup.ok(&["list", "backup", "--by-file"]);
    assert!(
        by_file.contains("List of Datafile Backups") && by_file.contains("global/pg_control"),
        "{by_file}"
    );
    let arch = setup.ok(&["list", "archivelog", "all"]);
    assert!(arch.contains("List of Archived Log Copies"), "{arch}");
    let inc = setup.ok(&["list", "incarnation"]);
    assert!(inc.contains("CURRENT"), "{inc}");
    let copies = setup.ok(&["list", "copy"]);
    assert!(
        copies.contains("no image copies") && copies.contains("backup database --as-copy"),
        "{copies}"
    );
}

/// Issue 43: `list copy --help` describes the image copies recman makes.
#[test]
fn list_copy_help_names_the_commands_that_make_copies() {
    let help = recman_ok(["list", "copy", "--help"]);
    assert!(
        help.contains("--as-copy")
            && help.contains("--for-recover-of-copy")
            && !help.contains("none yet"),
        "{help}"
    );
}

/// Issue 43: a command's `--help` lists its own options first, then the global ones under
/// their own heading, instead of one list mixing them.
#[test]
fn a_commands_help_lists_its_own_options_before_the_global_ones() {
    let help = recman_ok(["receive", "--help"]);
    let global = help
        .find("Global options:")
        .unwrap_or_else(|| panic!("no Global options heading:\n{help}"));
    let own = |o: &str| help.find(o).unwrap_or_else(|| panic!("no {o}:\n{help}"));
    for o in ["--mode", "--slot", "--create-slot", "--flush-interval"] {
        assert!(
            own(o) < global,
            "{o} is not among receive's own options:\n{help}"
        );
    }
    for o in ["--repo <REPO>", "--catalog", "--key-file", "--tls-cert"] {
        assert!(own(o) > global, "{o} is not under Global options:\n{help}");
    }
}
