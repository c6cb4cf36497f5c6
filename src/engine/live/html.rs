//! The live-session figures as HTML: the "Live sessions" section (a table per group
//! and a hand-written SVG bar of each group's outcomes and kept rates), alone as one
//! self-contained page for `nextedit live --html`. Like `run::html`: no script, no
//! URL, a Content-Security-Policy that forbids every fetch, every text escaped.

use std::fmt::Write;

use super::figures::{LiveFigures, SessionLive};
use crate::base::html::{PAGE_END, escape, page_start};

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
    h.push_str("<table class=\"live\">\n<tr><th class=\"l\">group</th><th>sessions</th><th>offers</th><th>accepted</th><th>partial</th><th>dismissed</th><th>superseded</th><th>acceptance</th><th>mean rank</th><th>p50 ms</th><th>p95 ms</th><th>chars accepted</th><th>chars typed</th><th>kept 30 s</th><th>kept 5 min</th><th>kept end</th><th>Zed's kept rate</th><th>reversals</th><th>right, not taken</th></tr>\n");
    for f in groups {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
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
            share(f.zed_kept_rate),
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

/// One self-contained page with the live-session figures (`run::html`'s page and style).
pub fn page(groups: &[LiveFigures], sessions: &[SessionLive]) -> String {
    let mut h = page_start("nextedit live");
    h.push_str(&section(groups, sessions));
    h.push_str(PAGE_END);
    h
}
