//! The prediction held to the database's own backups. calibrate measures each device and the
//! CPU for seconds, alone; a backup meets them together for minutes, on a device whose rate may
//! have moved since (a VM's disk behind a host cache moved by a factor of 1.5 to 2 within
//! minutes here). So advise asks its model what recent full backups should have taken, with
//! each one's own channels and codec, and scales its prediction by the median of measured over
//! modelled: a model that was 20 % optimistic for the last nights' backups is 20 % optimistic
//! tonight. How far off the model is depends on the settings (more channels than cores, say:
//! a scale-100 grid's four-channel backups took 1.3 times the model's time, its two-channel
//! ones 1.1), so backups with the advised channels and codec count alone where there are any.
//! Only backups taken since the calibration count: it describes the devices as they were then,
//! and a backup from before it met other devices (or the same ones in another state: in a
//! scale-100 grid on this VM's free disk, one setting's backups ran at 1.23 s and, minutes
//! later, 1.97 s, and a factor learned across that drift made the prediction 0.59 of the
//! measured time where the model alone gave 0.86). The choice of settings does not change;
//! only the predicted time and rate do.

use super::{Advice, Calibration, ReadLimit, Step, fit, limits, read_limit};
use crate::tuning::overhead::{PastRun, median};

/// The newest backups with the advised channels and codec that count, where there are any.
const SAME: usize = 5;
/// Otherwise the newest backups with any settings that count.
const ANY: usize = 9;

/// Outside this range the model and the backups disagree too much for a factor to mean
/// anything but a stale calibration; the factor is held to it and the step says so.
const BOUNDS: (f64, f64) = (0.5, 2.0);

impl Advice {
    /// Scales the data phase's prediction (with its piece commits) by how the model fared on
    /// `runs` under calibration `c` (the one this advice came from), with a step saying so.
    /// Runs from before the calibration, to another kind of medium than the advised output's,
    /// or with a codec the calibration did not measure, are left out; without any left, the
    /// prediction stays the model's and the step says that.
    pub fn with_history(mut self, c: &Calibration, runs: &[PastRun]) -> Advice {
        let medium = c.outputs.first().map(|o| o.kind.as_str());
        let read = read_limit(c);
        let usable: Vec<(&PastRun, f64)> = runs
            .iter()
            .filter(|r| r.started >= c.taken_at)
            .filter(|r| r.device.is_none() || r.device.as_deref() == medium)
            .filter_map(|r| Some((r, r.data_seconds / modelled_seconds(c, &read, r)?)))
            .filter(|(_, x)| x.is_finite() && *x > 0.0)
            .collect();
        let as_advised = |r: &PastRun| {
            r.compression == self.settings.compress
                && r.channel_bytes.len() == self.settings.channels as usize
        };
        let same: Vec<f64> = usable
            .iter()
            .filter(|(r, _)| as_advised(r))
            .take(SAME)
            .map(|x| x.1)
            .collect();
        let (ratios, which) = if same.is_empty() {
            let any = usable.iter().take(ANY).map(|x| x.1).collect();
            (
                any,
                "with their own channels and compression (none ran as advised)".to_string(),
            )
        } else {
            (
                same,
                format!(
                    "with {} channel(s) and {} (as advised)",
                    self.settings.channels, self.settings.compress
                ),
            )
        };
        let n = ratios.len();
        let (lo, hi) = ratios
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        let Some(m) = median(ratios) else {
            self.steps.push(Step {
                step: "history".into(),
                choice: "none".into(),
                because: "no full backup with statistics since the calibration: the prediction is the calibration's alone".into(),
            });
            return self;
        };
        let k = m.clamp(BOUNDS.0, BOUNDS.1);
        self.steps.push(Step {
            step: "history".into(),
            choice: format!("x{k:.2}"),
            because: format!(
                "the {n} newest full backup(s) since the calibration {which} took {m:.2} times what this calibration gives for them (median; from {lo:.2} to {hi:.2}): the prediction is scaled by it{}",
                if k != m {
                    format!(", held to {:.1}-{:.1}; hint: the devices changed since the calibration, run `recman calibrate` again", BOUNDS.0, BOUNDS.1)
                } else {
                    String::new()
                }
            ),
        });
        let data = self.predicted_seconds - self.fixed_seconds;
        self.predicted_seconds = data * k + self.fixed_seconds;
        self.pieces_seconds *= k;
        let rate = self.predicted_bytes_per_second as f64 / k;
        self.predicted_bytes_per_second = rate as u64;
        self.history_factor = k;
        self.history_runs = n as u32;
        let (b, ch) = (self.bottleneck, self.settings.channels);
        self.window = self
            .window
            .take()
            .map(|w| fit(c, w.window_seconds, read.read, rate, b, ch));
        self
    }
}

/// What the model gives for `run`'s data phase, with `read` the calibration's read limit
/// ([`read_limit`]): its bytes at its channels' rate, or its
/// largest channel's bytes at one channel's rate where that channel ran on alone (a dominant
/// file without sections), plus its pieces' commits on the output.
pub(super) fn modelled_seconds(c: &Calibration, read: &ReadLimit, run: &PastRun) -> Option<f64> {
    let codec = c
        .cpu
        .codecs
        .iter()
        .find(|k| k.compression == run.compression)?;
    let channels = run.channel_bytes.len() as u32;
    let total: u64 = run.channel_bytes.iter().sum();
    let largest = run.channel_bytes.iter().copied().max()?;
    if total == 0 {
        return None;
    }
    let all = limits(c, read.read, read.direct_reads, codec, channels)
        .min()
        .1;
    let one = limits(c, read.read, read.direct_reads, codec, 1).min().1;
    let data = (total as f64 / all.max(1.0)).max(largest as f64 / one.max(1.0));
    let commit = c.outputs.first().map_or(0.0, |o| o.commit_seconds);
    Some(data + run.pieces.div_ceil(channels.max(1) as u64) as f64 * commit)
}
