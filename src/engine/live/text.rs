//! The table `nextedit live` prints, formatted from typed figures into any writer (the
//! only place it is built).

use std::io::Write;

use super::figures::LiveFigures;

fn share(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{:.1} %", v * 100.0))
}

fn ms(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.0} ms"))
}

/// Each group's figures, one block per group.
pub fn print_figures(out: &mut impl Write, groups: &[LiveFigures]) -> std::io::Result<()> {
    for (i, f) in groups.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let ranks: Vec<String> = f.ranks.iter().map(|(r, n)| format!("{r}:{n}")).collect();
        writeln!(
            out,
            "{} ({} session{})",
            f.group,
            f.sessions,
            if f.sessions == 1 { "" } else { "s" }
        )?;
        writeln!(
            out,
            "  offers               {} ({} items)",
            f.offers, f.items
        )?;
        writeln!(
            out,
            "  outcomes             {} accepted, {} partial, {} dismissed, {} superseded",
            f.accepted, f.partial, f.dismissed, f.superseded
        )?;
        writeln!(out, "  acceptance rate      {}", share(f.acceptance_rate))?;
        writeln!(
            out,
            "  rank taken           mean {}, {}",
            f.rank_mean.map_or("-".into(), |m| format!("{m:.2}")),
            if ranks.is_empty() {
                "-".to_string()
            } else {
                ranks.join(" ")
            }
        )?;
        writeln!(
            out,
            "  latency              p50 {}, p95 {}",
            ms(f.latency_p50_ms),
            ms(f.latency_p95_ms)
        )?;
        writeln!(
            out,
            "  characters           {} accepted, {} typed",
            f.chars_accepted, f.chars_typed
        )?;
        writeln!(
            out,
            "  kept                 {} after 30 s, {} after 5 min, {} at the end",
            share(f.kept_30s),
            share(f.kept_5min),
            share(f.kept_end)
        )?;
        writeln!(out, "  Zed's kept rate      {}", share(f.zed_kept_rate))?;
        writeln!(
            out,
            "  reversals            {} ({} edits inside taken text)",
            f.reversals, f.edits_inside
        )?;
        writeln!(out, "  right but not taken  {}", f.right_but_not_taken)?;
    }
    Ok(())
}
