//! The skeleton every HTML page of nextedit shares (run reports, task reports, live
//! sessions): escaping, one style, a Content-Security-Policy that forbids scripts and
//! every fetch, and plain-text tables. The pages themselves are built by their services.

use std::fmt::Write as _;

/// Text made safe for HTML and SVG content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The style every page shares.
const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:.25em .6em;border-bottom:1px solid #e5e5e5;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.ci{color:#666;font-size:.85em}
.warn{color:#a61e1e}.muted{color:#777}.charts{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0}figcaption{font-size:.85em;max-width:300px;overflow-wrap:anywhere}
details{margin:.2em 0}summary{cursor:pointer}
pre.diff{background:#f8f8f8;border:1px solid #e5e5e5;padding:.3em;margin:.3em 0;overflow-x:auto;font-size:12px}
pre.diff span{display:block;white-space:pre}.add{background:#e6ffec}.del{background:#ffebe9}
.flow_keeping{fill:#2b8a3e;background:#2b8a3e}.flow_jumping{fill:#1971c2;background:#1971c2}
.flow_reverting{fill:#e8590c;background:#e8590c}.flow_breaking{fill:#c92a2a;background:#c92a2a}
.o_accepted{fill:#2b8a3e;background:#2b8a3e}.o_partial{fill:#74b816;background:#74b816}
.o_dismissed{fill:#c92a2a;background:#c92a2a}.o_superseded{fill:#868e96;background:#868e96}
.key{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 1em}
";

/// The start of a page up to its `<h1>`: the Content-Security-Policy that forbids
/// scripts and every fetch, the shared style, and `title` (escaped) as its title and
/// heading. Pages built on it (`run::html`, `tasks::html`, `live::html`) end with [`PAGE_END`].
pub fn page_start(title: &str) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n");
    let title = escape(title);
    let _ = writeln!(h, "<title>{title}</title>");
    let _ = writeln!(h, "<style>\n{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(h, "<h1>{title}</h1>");
    h
}

/// The end of a page begun by [`page_start`].
pub const PAGE_END: &str = "</body>\n</html>\n";

/// A table of plain-text cells (each escaped): `header` names the columns, the first
/// `labels` columns are left-aligned (row labels), the others right-aligned (figures).
pub fn text_table(
    h: &mut String,
    class: &str,
    labels: usize,
    header: &[&str],
    rows: &[Vec<String>],
) {
    let _ = write!(h, "<table class=\"{}\">\n<tr>", escape(class));
    for (i, name) in header.iter().enumerate() {
        let align = if i < labels { " class=\"l\"" } else { "" };
        let _ = write!(h, "<th{align}>{}</th>", escape(name));
    }
    h.push_str("</tr>\n");
    for row in rows {
        h.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let align = if i < labels { " class=\"l\"" } else { "" };
            let _ = write!(h, "<td{align}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}
