//! Property test of retention over random histories (issue 5, acceptance 1): backups, WAL
//! archiving, clock jumps, failures, expiries and deletions interleaved at random. After each
//! DELETE OBSOLETE, every point the policy covers that was recoverable before still is, and
//! nothing the policy does not need is left.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use recman_catalog::BackupStatus;
use recman_engine::retention::{BackupFacts, MICROS_PER_DAY, RetentionPolicy, obsolete};
use std::collections::BTreeSet;

const HOUR: i64 = 3_600_000_000;

#[derive(Clone, Debug)]
struct Backup {
    id: String,
    start_pos: u64,
    stop_time: i64,
    status: BackupStatus,
}

#[derive(Clone, Debug, Default)]
struct World {
    now: i64,
    next_pos: u64,
    /// (time archived, position), in order.
    archived: Vec<(i64, u64)>,
    wal: BTreeSet<u64>,
    backups: Vec<Backup>,
}

fn seg_name(pos: u64) -> String {
    // Timeline 1..3 by position, to show that timelines do not change the ordering.
    format!("{:08X}{:016X}", 1 + pos / 40, pos)
}

impl World {
    fn archive(&mut self, rng: &mut StdRng) {
        self.now += rng.gen_range(1..3 * HOUR);
        self.wal.insert(self.next_pos);
        self.archived.push((self.now, self.next_pos));
        self.next_pos += 1;
    }

    fn facts(&self) -> (Vec<BackupFacts>, Vec<String>) {
        let b = self
            .backups
            .iter()
            .map(|b| BackupFacts {
                id: b.id.clone(),
                status: b.status,
                full: true,
                parent: None,
                start_pos: b.start_pos,
                stop_time: Some(b.stop_time),
                wal_range: None,
            })
            .collect();
        let mut w: Vec<String> = self.wal.iter().map(|p| seg_name(*p)).collect();
        w.push("00000002.history".into());
        (b, w)
    }

    /// Recovery to time `t`: an AVAILABLE backup consistent by `t` and every segment from its
    /// start up to the last one archived by `t` (plus the one after, where `t` falls).
    fn recoverable(&self, t: i64) -> bool {
        let last = self
            .archived
            .iter()
            .filter(|(at, _)| *at <= t)
            .map(|(_, p)| *p)
            .max();
        self.backups.iter().any(|b| {
            b.status == BackupStatus::Available
                && b.stop_time <= t
                && (b.start_pos..=last.unwrap_or(0).max(b.start_pos))
                    .filter(|p| *p < self.next_pos)
                    .all(|p| self.wal.contains(&p))
        })
    }

    fn delete_obsolete(&mut self, policy: RetentionPolicy) -> (Vec<String>, Vec<String>) {
        let (b, w) = self.facts();
        let o = obsolete(&b, &w, policy, self.now);
        self.backups.retain(|b| !o.backups.contains(&b.id));
        let gone: BTreeSet<u64> = o
            .wal
            .iter()
            .map(|n| u64::from_str_radix(&n[8..], 16).unwrap())
            .collect();
        assert!(
            !o.wal.iter().any(|n| n.ends_with(".history")),
            "history files are always kept"
        );
        self.wal.retain(|p| !gone.contains(p));
        (o.backups, o.wal)
    }
}

fn check_history(seed: u64, policy: RetentionPolicy) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut w = World {
        now: 1_700_000_000_000_000,
        ..World::default()
    };
    let steps = rng.gen_range(20..120);
    for step in 0..steps {
        match rng.gen_range(0..100) {
            0..=44 => w.archive(&mut rng),
            45..=64 => {
                let start_pos = w.next_pos;
                w.archive(&mut rng);
                let failed = rng.gen_bool(0.1);
                w.backups.push(Backup {
                    id: format!("B{step:04}"),
                    start_pos,
                    stop_time: w.now,
                    status: if failed {
                        BackupStatus::Failed
                    } else {
                        BackupStatus::Available
                    },
                });
            }
            65..=79 => w.now += rng.gen_range(0..2 * MICROS_PER_DAY),
            80..=84 => {
                if !w.backups.is_empty() {
                    let i = rng.gen_range(0..w.backups.len());
                    if w.backups[i].status == BackupStatus::Available {
                        w.backups[i].status = BackupStatus::Expired;
                    }
                }
            }
            _ => {
                let before = w.clone();
                w.delete_obsolete(policy);
                check_after(seed, &before, &w, policy, &mut rng);
            }
        }
    }
    let before = w.clone();
    w.delete_obsolete(policy);
    check_after(seed, &before, &w, policy, &mut rng);
}

fn check_after(
    seed: u64,
    before: &World,
    after: &World,
    policy: RetentionPolicy,
    rng: &mut StdRng,
) {
    let ctx = || format!("seed {seed}, policy {policy}");
    let avail = |w: &World| -> Vec<Backup> {
        let mut v: Vec<Backup> = w
            .backups
            .iter()
            .filter(|b| b.status == BackupStatus::Available)
            .cloned()
            .collect();
        v.sort_by_key(|b| std::cmp::Reverse(b.stop_time));
        v
    };
    // Points the policy covers.
    let from = match policy {
        RetentionPolicy::RecoveryWindow { micros } => after.now - micros,
        RetentionPolicy::Redundancy(r) => match avail(before).get(r as usize - 1) {
            Some(b) => b.stop_time,
            None => avail(before).last().map_or(after.now, |b| b.stop_time),
        },
        RetentionPolicy::None => after.now,
    };
    let mut points: Vec<i64> = (0..20).map(|_| rng.gen_range(from..=after.now)).collect();
    points.extend([from, after.now]);
    points.extend(
        before
            .backups
            .iter()
            .map(|b| b.stop_time)
            .filter(|t| *t >= from),
    );
    for t in points {
        if before.recoverable(t) {
            assert!(
                after.recoverable(t),
                "{}: point {t} lost its recoverability",
                ctx()
            );
        }
    }
    // Nothing left that the policy does not need.
    let kept = avail(after);
    match policy {
        RetentionPolicy::Redundancy(r) => {
            let had = avail(before).len();
            assert_eq!(
                kept.len(),
                had.min(r as usize),
                "{}: redundancy count",
                ctx()
            );
        }
        RetentionPolicy::RecoveryWindow { micros } => {
            let older = kept
                .iter()
                .filter(|b| b.stop_time <= after.now - micros)
                .count();
            assert!(
                older <= 1,
                "{}: {older} backups kept before the window",
                ctx()
            );
        }
        RetentionPolicy::None => {}
    }
    assert!(
        !after
            .backups
            .iter()
            .any(|b| b.status == BackupStatus::Failed)
            || kept.is_empty(),
        "{}: failed backups left",
        ctx()
    );
    let no_window_base = match policy {
        RetentionPolicy::RecoveryWindow { micros } => {
            !kept.iter().any(|b| b.stop_time <= after.now - micros)
        }
        _ => false,
    };
    if let Some(floor) = kept
        .iter()
        .map(|b| b.start_pos)
        .min()
        .filter(|_| !no_window_base)
    {
        assert!(
            after.wal.iter().all(|p| *p >= floor),
            "{}: wal before the oldest kept backup left",
            ctx()
        );
    }
    // A second pass finds nothing more.
    let (b, w) = after.facts();
    let again = obsolete(&b, &w, policy, after.now);
    assert!(
        again.backups.is_empty() && again.wal.is_empty(),
        "{}: second pass found more: {again:?}",
        ctx()
    );
}

#[test]
fn redundancy_keeps_every_covered_point_and_nothing_else() {
    for seed in 0..400 {
        let r = 1 + (seed % 3) as u32;
        check_history(seed, RetentionPolicy::Redundancy(r));
    }
}

#[test]
fn recovery_window_keeps_every_point_in_the_window_and_nothing_else() {
    for seed in 0..400 {
        let days = [0.5, 1.0, 3.0, 7.0][(seed % 4) as usize];
        let policy = RetentionPolicy::RecoveryWindow {
            micros: (days * MICROS_PER_DAY as f64) as i64,
        };
        check_history(1000 + seed, policy);
    }
}

#[test]
fn policy_none_removes_nothing() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut w = World::default();
    for _ in 0..10 {
        w.archive(&mut rng);
    }
    w.backups.push(Backup {
        id: "B1".into(),
        start_pos: 3,
        stop_time: w.now,
        status: BackupStatus::Failed,
    });
    let (b, wal) = w.facts();
    let o = obsolete(&b, &wal, RetentionPolicy::None, w.now);
    assert!(o.backups.is_empty() && o.wal.is_empty());
}

#[test]
fn incremental_chain_is_kept_with_its_base() {
    let mk = |id: &str, full: bool, parent: Option<&str>, t: i64| BackupFacts {
        id: id.into(),
        status: BackupStatus::Available,
        full,
        parent: parent.map(Into::into),
        start_pos: t as u64,
        stop_time: Some(t),
        wal_range: None,
    };
    let b = vec![
        mk("F1", true, None, 1),
        mk("I1", false, Some("F1"), 2),
        mk("F2", true, None, 3),
        mk("I2", false, Some("F2"), 4),
        mk("I3", false, Some("I2"), 5),
    ];
    let o = obsolete(&b, &[], RetentionPolicy::Redundancy(1), 10);
    assert_eq!(o.backups, vec!["F1".to_string(), "I1".to_string()]);
    assert_eq!(o.kept, vec!["F2", "I2", "I3"]);
}

#[test]
fn policy_text_round_trips() {
    for s in [
        "none",
        "redundancy 3",
        "recovery-window 7",
        "recovery-window 0.25",
    ] {
        let p: RetentionPolicy = s.parse().unwrap();
        assert_eq!(p.to_string(), s);
    }
    for bad in ["redundancy 0", "recovery-window -1", "window 3", ""] {
        assert!(bad.parse::<RetentionPolicy>().is_err(), "{bad}");
    }
}

#[test]
fn archivelog_backups_are_kept_while_they_hold_needed_wal() {
    let mk = |id: &str, full: bool, start: u64, t: i64, range: Option<(u64, u64)>| BackupFacts {
        id: id.into(),
        status: BackupStatus::Available,
        full,
        parent: None,
        start_pos: start,
        stop_time: Some(t),
        wal_range: range,
    };
    let b = vec![
        mk("F1", true, 2, 10, None),
        mk("A1", false, 1, 15, Some((1, 4))),
        mk("F2", true, 6, 20, None),
        mk("A2", false, 5, 25, Some((5, 8))),
        mk("A3", false, 3, 26, Some((3, 6))),
    ];
    let wal: Vec<String> = (1..10).map(seg_name).collect();
    // Redundancy 1 keeps F2, which needs WAL from position 6: A1 (up to 4) goes, A2 and A3
    // (which reaches 6) stay. An archivelog backup never counts as a redundancy unit.
    let o = obsolete(&b, &wal, RetentionPolicy::Redundancy(1), 100);
    assert_eq!(o.backups, vec!["F1".to_string(), "A1".to_string()]);
    assert_eq!(o.kept, vec!["F2", "A2", "A3"]);
    // Redundancy 2 keeps F1 and everything from position 2: all WAL backups stay.
    let o = obsolete(&b, &wal, RetentionPolicy::Redundancy(2), 100);
    assert!(o.backups.is_empty(), "{o:?}");
    // Without any full backup, all WAL and its backups are kept.
    let o = obsolete(&b[1..2], &wal, RetentionPolicy::Redundancy(1), 100);
    assert!(o.backups.is_empty() && o.wal.is_empty(), "{o:?}");
}
