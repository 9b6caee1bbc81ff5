//! `recman metrics`: the repository's state in Prometheus text exposition format (0.0.4), for
//! a node_exporter textfile collector or a wrapper that serves it. Every series is a gauge
//! the command model read from the catalog (recman_command::metrics); nothing connects to
//! PostgreSQL. Series and sample alert rules: docs/monitoring.md.

use std::collections::BTreeMap;
use std::fmt::Write;

/// Series of one metric family, written with its HELP and TYPE lines.
struct Family {
    help: &'static str,
    samples: Vec<(String, f64)>,
}

#[derive(Default)]
struct Exposition {
    families: BTreeMap<&'static str, Family>,
}

impl Exposition {
    fn add(&mut self, name: &'static str, help: &'static str, labels: &[(&str, &str)], v: f64) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let labels = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", labels.join(","))
        };
        self.families
            .entry(name)
            .or_insert_with(|| Family {
                help,
                samples: Vec::new(),
            })
            .samples
            .push((labels, v));
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (name, f) in &self.families {
            let _ = writeln!(out, "# HELP {name} {}", f.help);
            // Prometheus names counters by their _total suffix.
            let kind = if name.ends_with("_total") {
                "counter"
            } else {
                "gauge"
            };
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, v) in &f.samples {
                let _ = writeln!(out, "{name}{labels} {}", number(*v));
            }
        }
        out
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

/// Writes the command model's gauges in the text format.
pub fn print(gauges: Vec<recman_command::metrics::Gauge>) {
    print!("{}", text(&gauges));
}

/// The gauges in the text format.
pub fn text(gauges: &[recman_command::metrics::Gauge]) -> String {
    let mut e = Exposition::default();
    for g in gauges {
        let labels: Vec<(&str, &str)> = g.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        e.add(g.name, g.help, &labels, g.value);
    }
    e.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_numbers_plain() {
        let mut e = Exposition::default();
        e.add("m", "help", &[("a", "x\"y\\z")], 2.0);
        e.add("m", "help", &[("a", "b")], 0.25);
        let t = e.render();
        assert!(t.contains("m{a=\"x\\\"y\\\\z\"} 2\n"), "{t}");
        assert!(t.contains("m{a=\"b\"} 0.250\n"), "{t}");
        assert_eq!(t.matches("# TYPE m gauge").count(), 1, "{t}");
    }
}
