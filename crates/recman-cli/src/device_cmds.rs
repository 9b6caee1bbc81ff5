//! Device types' catalog settings: the keys that hold a device's block size and environment
//! (RMAN's PARMS), and the checks of their values.

use anyhow::Result;

/// The catalog setting holding a device type's block size (RMAN's PARMS 'BLKSIZE=n').
pub fn blksize_key(device: &str) -> String {
    format!("device-type.{device}.blksize")
}

/// The catalog setting holding a device type's environment (RMAN's PARMS 'ENV=(K=V, ...)').
pub fn env_key(device: &str) -> String {
    format!("device-type.{device}.env")
}

/// A device block size (see `recman_command::configure::parse_blksize`).
pub fn parse_blksize(text: &str) -> Result<u64> {
    Ok(recman_command::configure::parse_blksize(text)?)
}

/// A device environment `K=V,K2=V2`, checked and normalized.
pub fn parse_env(text: &str) -> Result<String> {
    Ok(recman_command::configure::parse_env(text)?)
}
