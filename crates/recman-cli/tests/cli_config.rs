//! Global settings: flags win over RECMAN_* environment variables, which win over the
//! --config file.

mod common;

use common::*;

#[test]
fn flag_beats_environment_beats_config_file() {
    let (_t, dir) = new_scratch_dir();
    let (from_file, from_env, from_flag) = (dir.join("file"), dir.join("env"), dir.join("flag"));
    let cfg = dir.join("recman.toml");
    std::fs::write(&cfg, format!("repo = {:?}\n", path_str(&from_file))).unwrap();
    chown_to_cluster_user(&cfg);

    recman_ok(["--config", path_str(&cfg), "create", "catalog"]);
    assert!(from_file.join("recman.repo").exists());

    let out = recman_env(
        ["--config", path_str(&cfg), "create", "catalog"],
        &[("RECMAN_REPO", path_str(&from_env))],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(from_env.join("recman.repo").exists());

    let out = recman_env(
        [
            "--config",
            path_str(&cfg),
            "--repo",
            path_str(&from_flag),
            "create",
            "catalog",
        ],
        &[("RECMAN_REPO", path_str(&from_env))],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(from_flag.join("recman.repo").exists());

    // RECMAN_CONFIG names the file too; an unknown key is refused with the allowed ones.
    std::fs::write(&cfg, "repository = \"/x\"\n").unwrap();
    let out = recman_env(["list", "backup"], &[("RECMAN_CONFIG", path_str(&cfg))]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("allowed keys"),
        "{err}"
    );
}
