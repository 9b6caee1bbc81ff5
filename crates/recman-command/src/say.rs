//! [`Say`]: how a command hands over its results while it works.

/// Where a command hands each result, `T` being the type its family reports (a listing, a
/// change CONFIGURE stored, a failure check's findings).
///
/// The contract: `say` is called at once for each result, in the order the work happens, and
/// the receiver takes it before the command goes on; the front end may show it right away (a
/// DELETE lists what goes before it asks to confirm, and a result said before an error is
/// still shown). `say` cannot fail and does not stop the command. The front end's `Printer`
/// is the receiver `execute` passes: it takes every family's results as `Outcome`s.
pub trait Say<T> {
    fn say(&mut self, what: T);
}
