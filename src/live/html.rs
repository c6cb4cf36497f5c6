//! The live-session figures as HTML: the "Live sessions" section (a table per group
//! and a hand-written SVG bar of each group's outcomes and kept rates), alone as one
//! self-contained page for `nextedit live --html`. Like `run::html`: no script, no
//! URL, a Content-Security-Policy that forbids every fetch, every text escaped.

use std::fmt::Write;

use super::figures::{LiveFigures, SessionLive};
use crate::run::html::escape;

const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:.25em .6em;border-bottom:1px solid #e5e5e5;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.muted{color:#777}
.o_accepted{fill:#2b8a3e;background:#2b8a3e}.o_partial{fill:#74b816;background:#74b816}
.o_dismissed{fill:#c92a2a;background:#c92a2a}.o_superseded{fill:#868e96;background:#868e96}
.key{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 1em}
";

fn share(value: Option<f64>) -> String {
    value.map_or("–".into(), |v| format!("{:.1} %", v * 100.0))
}

fn ms(value: Option<f64>) -> String {
    value.map_or("–".into(), |v| format!("{v:.0}"))
}

/// The "Live sessions" section: the figures table and the outcome bars.
pub fn section(groups: &[LiveFigures], sessions: &[SessionLive]) -> String {
    let mut h = String::new();
    let names: Vec<&str> = sessions.iter().map(|s| s.session.as_str()).collect();
    let _ = writeln!(
        h,
        "<h2 id=\"live\">Live sessions</h2>\n<p>Sessions {}: what became of the offers the language server made (docs/live.md).</p>",
        escape(&names.join(", "))
    );
    h.push_str("<table class=\"live\">\n<tr><th class=\"l\">group</th><th>sessions</th><th>offers</th><th>accepted</th><th>partial</th><th>dismissed</th><th>superseded</th><th>acceptance</th><th>mean rank</th><th>p50 ms</th><th>p95 ms</th><th>chars accepted</th><th>chars typed</th><th>kept 30 s</th><th>kept 5 min</th><th>kept end</th><th>reversals</th><th>right, not taken</th></tr>\n");
    for f in groups {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&f.group),
            f.sessions,
            f.offers,
            f.accepted,
            f.partial,
            f.dismissed,
            f.superseded,
            share(f.acceptance_rate),
            f.rank_mean.map_or("–".into(), |m| format!("{m:.2}")),
            ms(f.latency_p50_ms),
            ms(f.latency_p95_ms),
            f.chars_accepted,
            f.chars_typed,
            share(f.kept_30s),
            share(f.kept_5min),
            share(f.kept_end),
            f.reversals,
            f.right_but_not_taken
        );
    }
    h.push_str("</table>\n<p>");
    const OUTCOMES: [&str; 4] = ["accepted", "partial", "dismissed", "superseded"];
    for name in OUTCOMES {
        let _ = write!(h, "<span class=\"key o_{name}\"></span>{name}");
    }
    h.push_str("</p>\n");
    let (width, row, label) = (600.0, 28.0, 120.0);
    let _ = writeln!(
        h,
        "<svg class=\"chart live\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"outcomes per group\">",
        width + label + 10.0,
        row * groups.len() as f64 + 4.0
    );
    for (i, f) in groups.iter().enumerate() {
        let y = i as f64 * row + 2.0;
        let _ = writeln!(
            h,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>",
            y + 17.0,
            escape(&f.group)
        );
        let mut x = label;
        for (name, n) in OUTCOMES
            .iter()
            .zip([f.accepted, f.partial, f.dismissed, f.superseded])
        {
            if f.offers == 0 || n == 0 {
                continue;
            }
            let w = n as f64 / f.offers as f64 * width;
            let _ = writeln!(
                h,
                "<rect class=\"o_{name}\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"><title>{}: {n} {name}</title></rect>",
                row - 6.0,
                escape(&f.group)
            );
            x += w;
        }
    }
    h.push_str("</svg>\n");
    h
}

/// One self-contained page with the live-session figures.
pub fn page(groups: &[LiveFigures], sessions: &[SessionLive]) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n");
    let _ = writeln!(
        h,
        "<title>nextedit live</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>nextedit live</h1>"
    );
    h.push_str(&section(groups, sessions));
    h.push_str("</body>\n</html>\n");
    h
}
