//! Issue 41, acceptance 3: tamper evidence without encryption. A plain repository created
//! with a MAC key authenticates every manifest and archived WAL file with an HMAC-SHA-256
//! under a key kept outside it. A manifest edited by someone who also recomputed its CRC-32C
//! (exactly as docs/format.md says) is refused by validate, restore and the catalog rebuild,
//! naming the manifest; so is one whose MAC was cut off; an archived WAL object rewritten as a
//! valid piece without its MAC, or with another one's, is refused by archive-get; a wrong or
//! missing key is refused as such; the untouched repository restores equal to the source.

mod common;
mod flows;

use common::*;
use flows::start_and_compare;
use std::path::{Path, PathBuf};

const KEY: &str = "5f0c3a9e1b7d2468ace013579bdf2468ace013579bdf2468ace013579bdf2468";
const OTHER_KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A key file the cluster user (who runs recman here, and the restored cluster's
/// restore_command) can read.
fn key_file(dir: &Path, name: &str, key: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("{key}\n")).unwrap();
    chown_to_cluster_user(&p);
    p
}

struct Mac {
    repo: PathBuf,
    cluster: Cluster,
    key: PathBuf,
}

impl Mac {
    fn args(&self, key: Option<&Path>, args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--repo".into(),
            path_str(&self.repo).into(),
            "--pgdata".into(),
            path_str(&self.cluster.pgdata).into(),
            "--target".into(),
            self.cluster.conninfo(),
        ];
        if let Some(k) = key {
            v.extend(["--mac-key-file".into(), path_str(k).into()]);
        }
        v.extend(args.iter().map(|s| s.to_string()));
        v
    }
    fn ok(&self, args: &[&str]) -> String {
        recman_ok(self.args(Some(&self.key), args))
    }
    fn err(&self, args: &[&str]) -> String {
        recman_err(self.args(Some(&self.key), args))
    }
}

/// The manifest with its checksum member recomputed over `covered` (every byte before it), as
/// a forger who read docs/format.md would write it.
fn with_crc(covered: &str) -> String {
    format!(
        "{covered},\"checksum\":\"crc32c:{:08x}\"}}",
        recman_format::crc32c(covered.as_bytes())
    )
}

/// The header and the one file's content of an archived WAL piece.
fn read_piece(bytes: &[u8]) -> (recman_format::PieceHeader, Vec<u8>) {
    let mut r = recman_format::PieceReader::open(bytes).unwrap();
    let header = r.header().clone();
    let mut content = Vec::new();
    while let Some(rec) = r.next().unwrap() {
        if let recman_format::Record::Chunk {
            file_offset, data, ..
        } = rec
        {
            assert_eq!(file_offset, content.len() as u64);
            content.extend_from_slice(&data);
        }
    }
    (header, content)
}

/// A valid piece (every CRC right) holding `content` as file 0, as a forger would write it.
fn write_piece(header: &recman_format::PieceHeader, content: &[u8]) -> Vec<u8> {
    let mut w = recman_format::PieceWriter::new(Vec::new(), header).unwrap();
    for (i, part) in content.chunks(1 << 20).enumerate() {
        w.write_chunk(0, (i << 20) as u64, part).unwrap();
    }
    w.end_file(0, content.len() as u64, recman_format::crc32c(content))
        .unwrap();
    w.finish().unwrap().0
}

#[test]
fn forged_manifests_are_refused_and_the_true_one_restores() {
    let (_repo_dir, repo) = new_repo();
    let (_keys_dir, keys) = new_scratch_dir();
    let key = key_file(&keys, "mac.key", KEY);
    let other = key_file(&keys, "other.key", OTHER_KEY);
    let out = recman_ok([
        "--repo",
        path_str(&repo),
        "--mac-key-file",
        path_str(&key),
        "create",
        "catalog",
    ]);
    assert!(out.contains("authenticated under MAC key"), "{out}");
    // The marker says MACs are required and names the key by its id, never the key.
    let marker = std::fs::read_to_string(repo.join("recman.repo")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&marker).unwrap();
    assert_eq!(m["mac"]["algorithm"], "hmac-sha256", "{marker}");
    assert_eq!(m["mac"]["key_id"].as_str().unwrap().len(), 16, "{marker}");
    assert!(!marker.contains(KEY), "the marker holds the key: {marker}");

    // archive-push stores each segment with its MAC: the server's archive_command has the key.
    let cluster = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!(
                "archive_command = '\"{}\" --repo \"{}\" --mac-key-file \"{}\" archive-push %p'",
                recman_bin().display(),
                repo.display(),
                key.display()
            ),
        ],
        ..Default::default()
    });
    let s = Mac { repo, cluster, key };
    let c = &s.cluster;
    s.ok(&["register", "database", "--name", "main"]);
    c.psql("create table t as select g, md5(g::text) as h from generate_series(1, 20000) g");
    s.ok(&["backup", "database"]);
    let list: Vec<serde_json::Value> =
        serde_json::from_str(&s.ok(&["list", "backup", "--json"])).unwrap();
    let id = list.last().unwrap()["id"].as_str().unwrap().to_string();
    let rel = format!("main/backup/{id}/manifest.json");
    let path = s.repo.join(&rel);
    let good = std::fs::read_to_string(&path).unwrap();
    assert!(good.contains(",\"mac\":\"hmac-sha256:"), "{good}");
    s.ok(&["validate", "backup", &id]);

    // A forger moves the checkpoint the restored cluster starts from, and recomputes the
    // CRC-32C: the checksum passes (a reader without the key accepts the manifest), the MAC
    // does not.
    let (covered, _) = good.rsplit_once(",\"checksum\"").unwrap();
    assert!(covered.contains("CHECKPOINT LOCATION: "), "{covered}");
    let forged = with_crc(&covered.replacen("CHECKPOINT LOCATION: ", "CHECKPOINT LOCATION: 1", 1));
    let parsed: recman_format::manifest::BackupManifest =
        recman_format::seal::read_sealed(forged.as_bytes()).expect("the forged CRC-32C is right");
    assert!(parsed.backup_label.contains("CHECKPOINT LOCATION: 1"));
    std::fs::write(&path, &forged).unwrap();

    let names_it = |err: &str, why: &str| {
        assert!(
            err.contains(path_str(&path)) && err.contains(&id) && err.contains(why),
            "the error does not name manifest {} of backup {id} and {why:?}:\n{err}",
            path.display()
        );
        assert!(err.contains("hint") && err.contains("tampered"), "{err}");
    };
    let err = s.err(&["validate", "backup", &id]);
    names_it(&err, "MAC does not verify");
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let err = s.err(&["restore", "database", "--to", path_str(&to)]);
    names_it(&err, "MAC does not verify");
    assert_eq!(
        std::fs::read_dir(&to).map(|d| d.count()).unwrap_or(0),
        0,
        "a restore from a forged manifest wrote into {}",
        to.display()
    );
    // The catalog rebuild does not take the forged backup in.
    let err = s.err(&["catalog", "start-with"]);
    assert!(
        err.contains(&rel) && err.contains("MAC does not verify"),
        "{err}"
    );

    // The MAC cut off and the CRC-32C recomputed: the marker says MACs are required.
    let (bare, _) = covered.rsplit_once(",\"mac\"").unwrap();
    std::fs::write(&path, with_crc(bare)).unwrap();
    let err = s.err(&["validate", "backup", &id]);
    names_it(&err, "carries no MAC");

    // The true manifest back: a wrong key and no key are refused as such, before any manifest.
    std::fs::write(&path, &good).unwrap();
    // The wrong key from a key command, as a vault would print it.
    let cat_other = format!("cat {}", other.display());
    let err = recman_err(s.args(
        None,
        &["--mac-key-command", &cat_other, "validate", "backup", &id],
    ));
    assert!(
        err.contains("is not the key of repository")
            && err.contains(m["mac"]["key_id"].as_str().unwrap())
            && err.contains("hint: wrong key file"),
        "{err}"
    );
    let err = recman_err(s.args(None, &["restore", "database", "--to", path_str(&to)]));
    assert!(
        err.contains("requires a MAC key") && err.contains("--mac-key-file"),
        "{err}"
    );
    assert!(!err.contains(KEY) && !err.contains(OTHER_KEY), "{err}");

    // Archived WAL: an object rewritten by a forger as a valid piece with the same content but
    // its MAC cut off, or with the MAC of another segment, is not delivered.
    let first = c.switch_wal_and_wait_archived();
    c.psql("insert into t select g, md5(g::text) from generate_series(20001, 20100) g");
    let second = c.switch_wal_and_wait_archived();
    assert_ne!(first, second);
    let wal_rel = |seg: &str| format!("main/wal/{}/{seg}.rmw", &seg[..16]);
    let wal_obj = s.repo.join(wal_rel(&first));
    let true_wal = std::fs::read(&wal_obj).unwrap();
    let (header, content) = read_piece(&true_wal);
    assert!(
        header
            .mac
            .as_deref()
            .is_some_and(|m| m.starts_with("hmac-sha256:")),
        "{header:?}"
    );
    let (other, _) = read_piece(&std::fs::read(s.repo.join(wal_rel(&second))).unwrap());
    let got = dir.join("got");
    let get = |key: Option<&Path>| {
        recman(s.args(
            key,
            &["archive-get", &first, path_str(&got), "--prefetch", "0"],
        ))
    };
    for (mac, why) in [
        (None, "carries no MAC"),
        (other.mac.clone(), "MAC does not verify"),
    ] {
        let forged = write_piece(
            &recman_format::PieceHeader {
                mac,
                ..header.clone()
            },
            &content,
        );
        std::fs::write(&wal_obj, forged).unwrap();
        let out = get(Some(&s.key));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(&wal_rel(&first)) && err.contains(why),
            "archive-get of a forged {first}: {err}"
        );
        assert!(!got.exists(), "a forged segment was delivered");
    }
    std::fs::write(&wal_obj, &true_wal).unwrap();
    let out = get(None);
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("requires a MAC key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(get(Some(&s.key)).status.success());
    assert_eq!(std::fs::read(&got).unwrap(), content);

    // With the right key it validates and restores equal to the source; the restored
    // cluster's restore_command fetches (and checks) WAL with the key file passed on.
    s.ok(&["validate", "backup", &id]);
    let expected = c.all_table_checksums();
    c.switch_wal_and_wait_archived();
    let (_k, dir) = new_scratch_dir();
    let to = dir.join("restored");
    s.ok(&["restore", "database", "--to", path_str(&to)]);
    start_and_compare(&to, &expected).stop();

    // A catalog rebuilt from the repository leaves out a forged WAL object, naming it.
    let stripped = write_piece(
        &recman_format::PieceHeader {
            mac: None,
            ..header.clone()
        },
        &content,
    );
    std::fs::write(&wal_obj, stripped).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(s.repo.join(format!("catalog.db{suffix}")));
    }
    let err = s.err(&["catalog", "start-with"]);
    assert!(
        err.contains(&format!("could not catalog {}", wal_rel(&first)))
            && err.contains("carries no MAC"),
        "{err}"
    );
}

/// A MAC key given for a repository whose marker does not require MACs: the marker may have
/// been replaced to strip them, so nothing that reads a manifest goes on.
#[test]
fn a_key_for_a_repository_without_macs_is_refused() {
    let (_repo_dir, repo) = new_repo();
    let (_keys_dir, keys) = new_scratch_dir();
    let key = key_file(&keys, "mac.key", KEY);
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    let marker = std::fs::read_to_string(repo.join("recman.repo")).unwrap();
    assert!(!marker.contains("\"mac\""), "{marker}");
    // The key given by the config file, as on a host where it is always given.
    let config = keys.join("recman.toml");
    std::fs::write(&config, format!("mac_key_file = \"{}\"\n", key.display())).unwrap();
    chown_to_cluster_user(&config);
    let err = recman_err([
        "--repo",
        path_str(&repo),
        "--config",
        path_str(&config),
        "catalog",
        "start-with",
    ]);
    assert!(
        err.contains("does not require manifest MACs") && err.contains("stripped"),
        "{err}"
    );
    // A key that is not 64 hex digits is refused at create, naming the rule.
    let (_r2, repo2) = new_repo();
    let short = key_file(&keys, "short.key", "not a key");
    let err = recman_err([
        "--repo",
        path_str(&repo2),
        "--mac-key-file",
        path_str(&short),
        "create",
        "catalog",
    ]);
    assert!(err.contains("not 64 hex digits"), "{err}");
}
