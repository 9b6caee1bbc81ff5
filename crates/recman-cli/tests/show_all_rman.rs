//! Issue 15/23: SHOW ALL in the language prints CONFIGURE statements the language accepts
//! back: run into a new repository, they give it the same settings.

mod common;

use common::*;

fn settings(repo: &std::path::Path) -> Vec<(String, String)> {
    let out = recman_ok(["--repo", path_str(repo), "show", "all", "--json"]);
    let v: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    v.iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn show_all_round_trips_through_the_language() {
    let (_a, a) = new_repo();
    let (_b, b) = new_repo();
    let (_s, scratch) = new_scratch_dir();
    for r in [&a, &b] {
        recman_ok(["--repo", path_str(r), "create", "catalog"]);
    }
    let lib = scratch.join("vtape");
    let setup = format!(
        "CONFIGURE RETENTION POLICY TO RECOVERY WINDOW OF 7 DAYS;\n\
         CONFIGURE DEVICE TYPE DISK PARALLELISM 3;\n\
         CONFIGURE CHANNEL DEVICE TYPE DISK MAXOPENFILES 4;\n\
         CONFIGURE BACKUP OPTIMIZATION ON;\n\
         CONFIGURE COMPRESSION ALGORITHM 'HIGH';\n\
         CONFIGURE ARCHIVELOG DELETION POLICY TO BACKED UP 2 TIMES TO DEVICE TYPE DISK;\n\
         CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'vtape:{}';\n\
         CONFIGURE DEVICE TYPE SBT PARALLELISM 2;\n\
         CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'BLKSIZE=1048576, ENV=(NB_ORA_CLASS=x)';\n\
         CONFIGURE DEFAULT DEVICE TYPE TO SBT;\n",
        path_str(&lib)
    );
    recman_ok(["--repo", path_str(&a), "run", &setup]);
    let shown = recman_ok(["--repo", path_str(&a), "run", "SHOW ALL;"]);
    assert!(
        shown.contains("CONFIGURE DEVICE TYPE DISK PARALLELISM 3;"),
        "{shown}"
    );
    recman_ok(["--repo", path_str(&b), "run", &shown]);
    assert_eq!(settings(&a), settings(&b));
    let again = recman_ok(["--repo", path_str(&b), "run", "SHOW ALL;"]);
    let body = |t: &str| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(body(&shown), body(&again));
}
