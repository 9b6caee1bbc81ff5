//! `backup database`'s window: RMAN's DURATION and NOT BACKED UP SINCE TIME.

use clap::Args;

#[derive(Args, Debug, Default)]
pub struct WindowArgs {
    /// Finish within this window, H:MM[:SS] (RMAN's DURATION). Without --partial the backup
    /// fails at the window's end; see --minimize-load.
    #[arg(long, value_name = "H:MM[:SS]")]
    pub duration: Option<String>,
    /// With --duration: keep the files finished when the window ends as a PARTIAL backup,
    /// which a later `backup database --not-backed-up-since TIME` completes.
    #[arg(long, requires = "duration")]
    pub partial: bool,
    /// With --duration: run at full speed (the default; RMAN's MINIMIZE TIME).
    #[arg(long, requires = "duration", conflicts_with = "minimize_load")]
    pub minimize_time: bool,
    /// With --duration: spread the reads evenly over the window (RMAN's MINIMIZE LOAD): a
    /// rate shared by the channels, recomputed each second as bytes left over time left.
    #[arg(long, requires = "duration")]
    pub minimize_load: bool,
    /// Files in a backup started at or after TIME go as their changed pages only, every other
    /// file whole (RMAN's NOT BACKED UP SINCE TIME); completes a PARTIAL backup.
    #[arg(long, value_name = "TIME")]
    pub not_backed_up_since: Option<String>,
    /// `auto`: adapt read sizes, queue depth per input device and the zstd level between
    /// backup sets from the live waits and CPU use, recording each change with its reason
    /// (`report io` shows them); `off`. Default: `configure tuning`, else off.
    #[arg(long, value_name = "auto|off", value_parser = ["auto", "off"])]
    pub tune: Option<String>,
}
