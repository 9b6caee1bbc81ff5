//! Running the recman binary (and other programs) as the cluster user, with output shown on
//! failure.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use crate::host::*;

static REGISTERED: OnceLock<PathBuf> = OnceLock::new();

/// Names the recman binary cargo built for the test (`env!("CARGO_BIN_EXE_recman")`, which
/// only a test of the binary's own package can read). Without it the binary in the test
/// executable's target directory is used, the same file under `cargo test`.
pub fn use_recman_binary(path: impl Into<PathBuf>) {
    let _ = REGISTERED.set(path.into());
}

fn built_recman() -> PathBuf {
    if let Some(p) = REGISTERED.get() {
        return p.clone();
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test>-<hash> next to target/<profile>/recman
    exe.parent()
        .and_then(Path::parent)
        .map(|d| d.join("recman"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no recman binary in the target directory of {}; build it (cargo build -p recman-cli) or call recman_testkit::use_recman_binary first",
                exe.display()
            )
        })
}

/// The quoted `archive_command` value that pushes WAL into the object-store repository `url`
/// (S3, Azure) with its config file and catalog cache.
pub fn object_store_archive_command(url: &str, config: &Path, cache: &Path) -> String {
    format!(
        "'{} --config {} --repo {url} --repo-cache {} archive-push %p'",
        recman_bin().display(),
        config.display(),
        cache.display()
    )
}

/// The recman binary as the cluster user can execute it.
///
/// Cargo's binary lives in the checkout's target dir; when a directory above
/// it is closed to postgres (a checkout under /root, say), a copy under /tmp
/// is used, keyed by size and mtime so test binaries share it.
pub fn recman_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let built = built_recman();
        if cluster_user().is_none() || cluster_user_can("-x", &built) {
            return built;
        }
        let meta = fs::metadata(&built)
            .unwrap_or_else(|e| panic!("recman binary {}: {e}", built.display()));
        let dir = Path::new("/tmp/recman-test-bin").join(format!(
            "{}-{}-{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        ));
        let copy = dir.join("recman");
        if !copy.is_file() {
            fs::create_dir_all(&dir).expect("create /tmp/recman-test-bin");
            for d in [dir.parent().unwrap(), dir.as_path()] {
                fs::set_permissions(d, fs::Permissions::from_mode(0o755)).expect("chmod bin dir");
            }
            // Copy then rename so concurrent test binaries never see half a file.
            let partial = dir.join(format!("recman.partial.{}", std::process::id()));
            fs::copy(&built, &partial).expect("copy recman binary");
            fs::set_permissions(&partial, fs::Permissions::from_mode(0o755))
                .expect("chmod recman copy");
            fs::rename(&partial, &copy).expect("rename recman copy");
        }
        assert!(
            cluster_user_can("-x", &copy),
            "postgres cannot execute {} (nor {})",
            copy.display(),
            built.display()
        );
        copy
    })
}

/// A `recman` command as the cluster user, env scrubbed of `PG*`/`RECMAN_*`,
/// cwd `/`. Add `.env(..)` for variables a test wants to pass.
pub fn recman_cmd<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(recman_bin());
    cmd.args(args);
    as_cluster_user(&mut cmd);
    cmd
}

pub(crate) fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

pub(crate) fn run_output(cmd: &mut Command) -> Output {
    eprintln!("$ {}", describe(cmd));
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", describe(cmd)))
}

pub(crate) fn show_output(out: &Output) -> String {
    format!(
        "exit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs recman with `args`; the command line is echoed to the (captured)
/// test output.
pub fn recman<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_output(&mut recman_cmd(args))
}

/// Like [`recman`] with extra environment variables.
pub fn recman_env<I, S>(args: I, env: &[(&str, &str)]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = recman_cmd(args);
    cmd.envs(env.iter().copied());
    run_output(&mut cmd)
}

/// Runs recman, panics with its output unless it succeeds; returns stdout.
pub fn recman_ok<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = recman_cmd(args);
    let out = run_output(&mut cmd);
    assert!(
        out.status.success(),
        "recman failed: {}\n{}",
        describe(&cmd),
        show_output(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs recman, panics with its output if it succeeds; returns stderr.
pub fn recman_err<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = recman_cmd(args);
    let out = run_output(&mut cmd);
    assert!(
        !out.status.success(),
        "recman unexpectedly succeeded: {}\n{}",
        describe(&cmd),
        show_output(&out)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a PostgreSQL program (or anything) as the cluster user, panicking
/// with its output unless it succeeds; returns stdout.
pub fn run_as_cluster_user_ok(cmd: &mut Command) -> String {
    as_cluster_user(cmd);
    let out = run_output(cmd);
    assert!(
        out.status.success(),
        "command failed: {}\n{}",
        describe(cmd),
        show_output(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
