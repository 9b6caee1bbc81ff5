//! The tuner's steps (which change to try for a bound) and its decisions (keep or revert a
//! change from the rate of the first set read with it).

use super::{
    DevState, Direction, MAX_DEPTH, MAX_FILES, MAX_NOISE, MAX_REQUEST, MAX_REST_SETS, MIN_NOISE,
    REST_SETS, Rest, Settings, Trial, TuneEvents, Want,
};
use recman_format::Compression;

/// What limited a set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bound {
    Input { cpu_to_spare: bool },
    Output,
    Cpu,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Direction::DeeperReads => "deeper and larger reads",
            Direction::MoreFiles => "more files at once",
            Direction::HeavierCompression => "heavier compression",
            Direction::LighterCompression => "lighter compression",
        }
    }
}

/// The change to try after a set that was `bound`, one direction at a time so that the next
/// set's rate tells which change did what; none when every useful direction is at its end or
/// resting.
pub(super) fn next_step(
    d: &DevState,
    bound: Bound,
    files_used: u32,
) -> Option<(Direction, Want, Settings, &'static str)> {
    let cur = d.cur;
    let heavier = step_level(cur.compression, true);
    let lighter = step_level(cur.compression, false);
    match bound {
        Bound::Input { cpu_to_spare } => {
            let files = cur.files.unwrap_or(files_used).max(files_used);
            let at_top = cur.depth >= MAX_DEPTH && cur.size >= MAX_REQUEST;
            if !at_top && !d.resting(Direction::DeeperReads) {
                let next = Settings {
                    depth: (cur.depth * 2).min(MAX_DEPTH),
                    size: (cur.size * 2).min(MAX_REQUEST),
                    ..cur
                };
                return Some((
                    Direction::DeeperReads,
                    Want::Faster,
                    next,
                    "input bound; more and larger reads in flight",
                ));
            }
            if at_top && files < MAX_FILES && !d.resting(Direction::MoreFiles) {
                let next = Settings {
                    files: Some((files + 2).min(MAX_FILES)),
                    ..cur
                };
                return Some((
                    Direction::MoreFiles,
                    Want::Faster,
                    next,
                    "input bound with requests at their deepest and largest; more files read at once",
                ));
            }
            // Up to zstd's default level only: past it each level costs much more CPU for
            // little, and a channel pushed into being CPU bound loses the time it was waiting.
            let light = match cur.compression {
                Compression::Zstd { level } => level < Compression::ZSTD_DEFAULT_LEVEL,
                Compression::None | Compression::Lz4 => true,
            };
            (cpu_to_spare && light && !d.resting(Direction::HeavierCompression)).then_some((
                Direction::HeavierCompression,
                Want::NoSlower,
                Settings {
                    compression: heavier,
                    ..cur
                },
                "input bound with cpu to spare; heavier compression writes less at no cost in time",
            ))
        }
        Bound::Output => (heavier != cur.compression && !d.resting(Direction::HeavierCompression))
            .then_some((
                Direction::HeavierCompression,
                Want::Faster,
                Settings {
                    compression: heavier,
                    ..cur
                },
                "output bound; heavier compression writes less",
            )),
        Bound::Cpu => (lighter != cur.compression && !d.resting(Direction::LighterCompression))
            .then_some((
                Direction::LighterCompression,
                Want::Faster,
                Settings {
                    compression: lighter,
                    ..cur
                },
                "cpu bound; lighter compression",
            )),
    }
}

/// Records each setting that differs between `before` and `after` as a change, and returns
/// them for the decision that follows.
pub(super) fn record_changes(
    live: &dyn TuneEvents,
    ch: Option<u32>,
    before: &Settings,
    after: &Settings,
    files_used: u32,
    reason: &str,
) -> Vec<(&'static str, String, String)> {
    let files = |s: &Settings| s.files.unwrap_or(files_used).max(files_used).to_string();
    let pairs = [
        (
            "queue_depth",
            before.depth.to_string(),
            after.depth.to_string(),
        ),
        (
            "input_buffer_size",
            before.size.to_string(),
            after.size.to_string(),
        ),
        ("files_in_flight", files(before), files(after)),
        (
            "compress_level",
            before.compression.to_string(),
            after.compression.to_string(),
        ),
    ];
    let changed: Vec<_> = pairs.into_iter().filter(|(_, o, n)| o != n).collect();
    for (s, o, n) in &changed {
        live.event(ch, s, Some(o.clone()), n.clone(), reason.to_string());
    }
    changed
}

/// Keeps or reverts the change under `trial` from the `rate` of the first set read with it;
/// returns whether the tuner may go on to the next step from this set (not after a revert: the
/// settings it measured are gone).
pub(super) fn decide(
    live: &dyn TuneEvents,
    ch: Option<u32>,
    d: &mut DevState,
    trial: Trial,
    rate: f64,
    figures: &str,
) -> bool {
    let margin = d.noise.clamp(MIN_NOISE, MAX_NOISE);
    let change = rate / trial.base_rate.max(1.0) - 1.0;
    let kept = match trial.want {
        Want::Faster => change > margin,
        Want::NoSlower => change >= -margin,
    };
    let tried = trial
        .changes
        .iter()
        .map(|(s, o, n)| format!("{s} {o} -> {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let compared = format!(
        "{:.1} MB/s with it against {:.1} MB/s before ({:+.0}%, noise {:.0}%)",
        rate / 1e6,
        trial.base_rate / 1e6,
        change * 100.0,
        margin * 100.0
    );
    if kept {
        d.rests.remove(&trial.direction);
        let why = match trial.want {
            Want::Faster => "faster",
            Want::NoSlower => "no slower",
        };
        live.event(
            ch,
            "decision",
            Some(tried),
            "kept".into(),
            format!("{compared}: {why}; {figures}"),
        );
        return true;
    }
    let rest = d.rests.entry(trial.direction).or_insert(Rest {
        left: 0,
        next: REST_SETS,
    });
    rest.left = rest.next;
    rest.next = (rest.next * 2).min(MAX_REST_SETS);
    let not = match trial.want {
        Want::Faster => "not faster",
        Want::NoSlower => "slower",
    };
    let reason = format!(
        "{compared}: {not}; back to the settings before, {} not tried for {} sets",
        trial.direction.name(),
        rest.left
    );
    live.event(
        ch,
        "decision",
        Some(tried),
        "reverted".into(),
        format!("{reason}; {figures}"),
    );
    for (s, o, n) in trial.changes {
        live.event(ch, s, Some(n), o, format!("reverted: {reason}"));
    }
    d.cur = trial.before;
    d.generation += 1;
    false
}

/// Moves compression one step along the ladder none < lz4 < zstd:1 < zstd:3 < … < zstd:19
/// (two zstd levels a step): from none or lz4 a step up is one rung (an output-bound backup
/// without compression gains most from the cheapest one); down the same way, so a CPU-bound
/// zstd:1 backup falls back to lz4 and then to none.
fn step_level(c: Compression, up: bool) -> Compression {
    match (c, up) {
        (Compression::None, true) => Compression::Lz4,
        (Compression::Lz4, true) => Compression::Zstd { level: 1 },
        (Compression::Lz4, false) => Compression::None,
        (Compression::Zstd { level: 1 }, false) => Compression::Lz4,
        (Compression::Zstd { level }, up) => Compression::Zstd {
            level: (level + if up { 2 } else { -2 }).clamp(1, 19),
        },
        (Compression::None, false) => Compression::None,
    }
}
