use indicatif::{ProgressBar, ProgressStyle};
use recman_command::model::Progress;
use std::io::IsTerminal;
use std::sync::Mutex;

use crate::cli::ProgressMode;

/// A progress bar on a terminal, plain lines with --verbose, silence otherwise; with
/// `--progress json`, JSON events instead of the bar.
pub struct Bar {
    bar: Mutex<Option<ProgressBar>>,
    json: Option<crate::progress_json::JsonEvents>,
    enabled: bool,
    verbose: bool,
    quiet: bool,
}

impl Bar {
    /// Events are asked for explicitly, so `--quiet` does not silence them.
    pub fn with_mode(quiet: bool, verbose: bool, mode: ProgressMode) -> Bar {
        Bar {
            bar: Mutex::new(None),
            json: (mode == ProgressMode::Json).then(crate::progress_json::JsonEvents::new),
            enabled: mode == ProgressMode::Auto && !quiet && std::io::stderr().is_terminal(),
            verbose: verbose && !quiet,
            quiet,
        }
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        if let Some(j) = &self.json {
            j.start(what, total);
        }
        if !self.enabled {
            return;
        }
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template(
                "{msg:>8} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        b.set_message(what.to_string());
        *self.bar.lock().expect("progress lock") = Some(b);
    }
    fn advance(&self, bytes: u64) {
        if let Some(j) = &self.json {
            j.advance(bytes);
        }
        if let Some(b) = self.bar.lock().expect("progress lock").as_ref() {
            b.inc(bytes);
        }
    }
    fn message(&self, line: &str) {
        if let Some(j) = &self.json {
            if self.verbose {
                j.note("message", line);
            }
            return;
        }
        if self.verbose {
            match self.bar.lock().expect("progress lock").as_ref() {
                Some(b) => b.println(line),
                None => eprintln!("{line}"),
            }
        }
    }
    fn notice(&self, line: &str) {
        if self.quiet {
            return;
        }
        if let Some(j) = &self.json {
            return j.note("notice", line);
        }
        match self.bar.lock().expect("progress lock").as_ref() {
            Some(b) => b.println(line),
            None => eprintln!("recman: {line}"),
        }
    }
    fn finish(&self) {
        if let Some(j) = &self.json {
            j.finish();
        }
        if let Some(b) = self.bar.lock().expect("progress lock").take() {
            b.finish_and_clear();
        }
    }
}
