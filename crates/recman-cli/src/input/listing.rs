//! The listing of numeric options the range test walks.

/// For the test that feeds every numeric option out-of-range values: one JSON line per numeric
/// option of every subcommand (hidden ones too), with its help text, which must state the
/// range, and what the subcommand requires besides (so that a valid value reaches the
/// command itself). Printed when RECMAN_LIST_NUMERIC_OPTIONS is set.
pub fn list_numeric_options(cmd: &clap::Command, path: &mut Vec<String>) {
    use clap::builder::ValueParser;
    let numeric = [
        ValueParser::from(clap::value_parser!(u8)).type_id(),
        ValueParser::from(clap::value_parser!(u16)).type_id(),
        ValueParser::from(clap::value_parser!(u32)).type_id(),
        ValueParser::from(clap::value_parser!(u64)).type_id(),
        ValueParser::from(clap::value_parser!(usize)).type_id(),
        ValueParser::from(clap::value_parser!(i64)).type_id(),
        ValueParser::from(clap::value_parser!(f64)).type_id(),
    ];
    let required: Vec<serde_json::Value> = cmd
        .get_arguments()
        .filter(|a| a.is_required_set() && !a.is_global_set())
        .map(|a| {
            let fill = a
                .get_possible_values()
                .first()
                .map(|v| v.get_name().to_string())
                .unwrap_or_else(|| "1".to_string());
            serde_json::json!({"long": a.get_long(), "id": a.get_id().as_str(), "fill": fill})
        })
        .collect();
    for a in cmd.get_arguments() {
        let Some(long) = a.get_long() else { continue };
        let takes_value = a.get_action().takes_values();
        let is_size = a
            .get_value_names()
            .is_some_and(|v| v.iter().any(|n| n.as_str() == "SIZE"));
        let is_number = numeric.contains(&a.get_value_parser().type_id());
        if !takes_value || !(is_size || is_number) || a.is_global_set() && !path.is_empty() {
            continue;
        }
        let line = serde_json::json!({
            "path": path,
            "option": format!("--{long}"),
            "id": a.get_id().as_str(),
            "kind": if is_size { "size" } else { "number" },
            "help": a.get_help().map(|h| h.to_string()).unwrap_or_default(),
            "required": required,
        });
        println!("{line}");
    }
    for sub in cmd.get_subcommands() {
        path.push(sub.get_name().to_string());
        list_numeric_options(sub, path);
        path.pop();
    }
}
