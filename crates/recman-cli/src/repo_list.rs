//! Several repositories for the same databases: `--repo` and each `--also-repo`, in that
//! order (docs/repositories.md). Each is a whole repository with its own catalog and its own
//! retention. This file is the list itself: its order, the first repository that opens (a
//! command that reads falls back along the list) and what a restore_command passes on. What
//! each repository is owed is `repo_ledger.rs`; archive-push into each is
//! `archive_cmds/everywhere.rs`; the commands over the whole list are `repo_list_cmds.rs`.

use crate::cli::Global;
use anyhow::{Result, anyhow};
use recman_command::model::Repository;
use std::path::Path;

/// This command's options aimed at each repository of the list, in order. `--repo-cache`
/// belongs to `--repo`; every other repository uses its own default cache.
pub fn each(g: &Global) -> Vec<Global> {
    let mut out = vec![Global {
        also_repo: Vec::new(),
        ..g.clone()
    }];
    out.extend(g.also_repo.iter().map(|r| Global {
        repo: Some(r.clone()),
        repo_cache: None,
        also_repo: Vec::new(),
        ..g.clone()
    }));
    out
}

/// The repository's name as given, for messages and the ledger.
pub fn spec(g: &Global) -> String {
    g.repo
        .as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// Opens the first repository of the list that opens. One skipped is said on stderr with
/// why, so that a fallback is never silent.
pub fn open_first(
    g: &Global,
    open: impl Fn(&Global) -> Result<Repository>,
) -> Result<(Repository, Global)> {
    let mut failed = Vec::new();
    for gi in each(g) {
        match open(&gi) {
            Ok(repo) => {
                if !failed.is_empty() && !g.quiet {
                    eprintln!(
                        "recman: warning: using repository {}, the next in the list: {}",
                        repo.location(),
                        failed.join("; ")
                    );
                }
                return Ok((repo, gi));
            }
            Err(e) => failed.push(format!("repository {} cannot be opened ({e:#})", spec(&gi))),
        }
    }
    Err(anyhow!(
        "no repository of the list can be opened: {}; hint: check each --repo and --also-repo, and the network to them",
        failed.join("; ")
    ))
}

/// The options a restored cluster's restore_command passes on: the repositories after the
/// one this command opened. Those before it could not be opened when the restore ran; asking
/// them again at every WAL file would only turn each answer into an error.
pub fn passed_on(g: &Global, opened: &Repository) -> Vec<String> {
    let specs: Vec<String> = each(g).iter().map(spec).collect();
    let at = specs.iter().position(|s| is_location(s, opened));
    specs
        .into_iter()
        .enumerate()
        .filter(|(i, _)| at.is_none_or(|a| *i > a))
        .flat_map(|(_, s)| ["--also-repo".to_string(), s])
        .collect()
}

fn is_location(spec: &str, repo: &Repository) -> bool {
    if spec == repo.location() {
        return true;
    }
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    !repo.is_remote() && canon(Path::new(spec)) == canon(repo.root())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_keeps_its_order_and_the_cache_belongs_to_the_first() {
        let g = Global {
            repo: Some("/r1".into()),
            repo_cache: Some("/c1".into()),
            also_repo: vec!["s3://b/p".into(), "gs://c/p".into()],
            ..Default::default()
        };
        let all = each(&g);
        let specs: Vec<String> = all.iter().map(spec).collect();
        assert_eq!(specs, ["/r1", "s3://b/p", "gs://c/p"]);
        assert_eq!(all[0].repo_cache.as_deref(), Some(Path::new("/c1")));
        assert!(all[1].repo_cache.is_none() && all[2].repo_cache.is_none());
        assert!(all.iter().all(|gi| gi.also_repo.is_empty()));
    }
}
