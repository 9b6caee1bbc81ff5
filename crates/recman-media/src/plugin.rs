//! placeholder, written next.
