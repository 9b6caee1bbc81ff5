//! How CONFIGURE and SHOW ALL are printed; the checks and the precedence are the command
//! model's (`recman_command::settings`), the config file's layer is `config::file_layer`.

use recman_command::configure::{ConfigChange, ShowFormat, ShownSettings};

/// One change CONFIGURE stored (nothing with --quiet).
pub fn say_configured(quiet: bool, c: ConfigChange) {
    if quiet {
        return;
    }
    match c {
        ConfigChange::Cleared { name, default } => {
            println!("old configuration: {name} cleared; now {default}  # default")
        }
        ConfigChange::Set {
            name,
            old: Some(o),
            value,
        } => println!("old configuration: {name} {o}\nnew configuration: {name} {value}"),
        ConfigChange::Set {
            name,
            old: None,
            value,
        } => println!("new configuration: {name} {value}"),
        ConfigChange::DeviceCleared { device } => {
            println!("device type {device} configuration cleared")
        }
        ConfigChange::DeviceSet {
            device,
            what,
            value,
            describe,
        } => match describe {
            Some(d) => println!("new configuration: device-type {device} {what} {value}  # {d}"),
            None => println!("new configuration: device-type {device} {what} {value}"),
        },
        ConfigChange::DefaultDevice { value } => {
            println!("new configuration: default-device-type {value}")
        }
        ConfigChange::Stored => println!("new configuration stored in the catalog"),
    }
}

/// SHOW ALL: the command's answer, printed even with --quiet.
pub fn show(s: &ShownSettings) {
    match s.format {
        ShowFormat::Rman => super::show_rman::show_all_rman(s),
        ShowFormat::Json => match serde_json::to_string_pretty(&s.settings) {
            Ok(t) => println!("{t}"),
            Err(e) => eprintln!("recman: cannot print the settings as JSON: {e}"),
        },
        ShowFormat::Text => {
            println!(
                "recman configuration parameters for repository {} are:",
                s.repository
            );
            for s in &s.settings {
                println!("configure {} {};  # {}", s.name, s.value, s.source);
            }
            // Device types are free-form keys ("device-type.sbt.parms"), shown as they are set.
            for (k, v) in &s.catalog_rows {
                if let Some(rest) = k.strip_prefix("device-type.")
                    && let Some((device, what)) = rest.split_once('.')
                {
                    println!("configure device-type {device} {what} {v};  # catalog");
                } else if k == "default-device-type" {
                    println!("configure default-device-type {v};  # catalog");
                }
            }
        }
    }
}
