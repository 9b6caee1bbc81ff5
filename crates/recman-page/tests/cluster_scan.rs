//! Optional check against a whole stopped cluster with data checksums:
//! `RECMAN_TEST_PGDATA=/path/to/data cargo test -p recman-page --release -- --ignored`
//! Every page of every relation file must verify.

use recman_page::*;
use std::path::Path;

fn walk(root: &Path, rel: &str, out: &mut Vec<String>) {
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let p = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let is_dir = e.path().is_dir();
        if exclusion(&p, is_dir).is_some() {
            continue;
        }
        if is_dir {
            walk(root, &p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
#[ignore]
fn whole_cluster_verifies() {
    // Run only on request (--ignored), so a missing cluster is an error, not a pass.
    let root = std::env::var("RECMAN_TEST_PGDATA").expect(
        "RECMAN_TEST_PGDATA names no cluster to scan; hint: set it to a stopped cluster's data \
         directory",
    );
    let root = Path::new(&root);
    let mut files = Vec::new();
    walk(root, "", &mut files);
    let (mut pages, mut rels) = (0u64, 0u64);
    let t = std::time::Instant::now();
    for f in &files {
        let Some(rf) = classify(f) else { continue };
        rels += 1;
        let data = std::fs::read(root.join(f)).unwrap();
        assert_eq!(data.len() % BLCKSZ, 0, "{f}");
        let faults = verify_pages(&data, rf.first_block(), true);
        assert!(faults.is_empty(), "{f}: {faults:?}");
        pages += (data.len() / BLCKSZ) as u64;
    }
    eprintln!(
        "{rels} relation files, {pages} pages verified in {:?}",
        t.elapsed()
    );
    assert!(pages > 0);
}
