//! What a front end's progress display may ask of a running command besides the calls of the
//! engine's `Progress` trait (named in [`crate::model`]).

/// The channel (1, 2, ...) whose worker calls the progress display on this thread, 0 for work
/// outside the channels: lets a display split bytes by channel.
pub fn current_channel() -> u32 {
    recman_engine::current_channel()
}
