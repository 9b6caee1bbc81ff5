//! REPORT COSTS: a row per backup and per day of archiving, with the requests of each kind and
//! the bytes each way, the numbers a store's price list multiplies.

use recman_command::costs::CostRow;
use recman_command::model::CostScope;

pub fn print(rows: &[CostRow], as_json: bool) {
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(rows).unwrap_or_else(|e| format!("\"{e}\""))
        );
        return;
    }
    if rows.is_empty() {
        println!(
            "no repository requests recorded (a disk or tape repository makes none; an object store's are recorded by backups and archiving)"
        );
        return;
    }
    println!(
        "{:<10} {:<8} {:<24} {:>7} {:>7} {:>7} {:>7} {:>7} {:>12} {:>12}",
        "database",
        "work",
        "backup or day",
        "PUT",
        "GET",
        "HEAD",
        "LIST",
        "DELETE",
        "sent",
        "received"
    );
    for r in rows {
        let work = match r.scope {
            CostScope::Backup => "backup",
            CostScope::Archive => "archive",
        };
        let q = &r.requests;
        println!(
            "{:<10} {:<8} {:<24} {:>7} {:>7} {:>7} {:>7} {:>7} {:>12} {:>12}",
            r.database,
            work,
            r.key,
            q.put,
            q.get,
            q.head,
            q.list,
            q.delete,
            crate::display::size(r.bytes_sent),
            crate::display::size(r.bytes_received)
        );
    }
}
