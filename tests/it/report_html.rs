//! `nextedit report --html`: the page of real replay runs, as a snapshot of a fixed
//! trajectory (oracle, and a suggester that reports reads: coverage curves), and opened
//! in real headless Chromium for runs over a real git repository (oracle, noop,
//! propagate): screenshots decoded and checked non-blank, the DOM checked for the run
//! table, the charts and the drill-down; and the README's screenshots (docs/report-*.png)
//! all shown, present and real pictures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{Server, available};
use crate::derive_support::TestRepo;

fn nextedit(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nextedit {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The run id `replay --json` printed first.
fn replay(db: &Path, args: &[&str]) -> i64 {
    let mut all = vec!["replay", "--jsonl", "--db", db.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = nextedit(&all);
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    first["run"].as_i64().unwrap()
}

fn write_report(db: &Path, runs: &[i64], html: &Path) -> String {
    let mut args = vec!["report".to_string()];
    args.extend(runs.iter().map(i64::to_string));
    args.extend(["--db".into(), db.display().to_string()]);
    args.extend(["--html".into(), html.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = nextedit(&args);
    assert_eq!(out.stdout, b"");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("nextedit: wrote {}\n", html.display())
    );
    std::fs::read_to_string(html).unwrap()
}

const HOSTILE: &str = "</pre><script>alert(1)</script>";

/// m.py and n.py (whose code is hostile HTML) with three edits; fixed order e1
/// (initial), e0 (step 1), e2 (step 2).
fn fixed_trajectory() -> Value {
    let base = "def helper(x):\n    return x + 1\n\n\ndef f():\n    return 0\n\n\ndef g():\n    return 0\n";
    let fin = "def helper(x):\n    return x + 1\n\n\ndef f():\n    a = 1\n    return helper(a)\n\n\ndef g():\n    return helper(2)\n";
    let n_base = format!("X = '{HOSTILE}'\n");
    let edit = |id: &str, file: &str, b: (usize, usize), a: (usize, usize), bt: &str, at: &str| {
        json!({"id": id, "file": file, "kind": "replace",
               "before_lines": {"start": b.0, "end": b.1}, "after_lines": {"start": a.0, "end": a.1},
               "before_text": bt, "after_text": at})
    };
    json!({
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": "demo", "kind": "commit"},
        "files": [{"path": "m.py", "base_text": base, "final_text": fin},
                  {"path": "n.py", "base_text": n_base, "final_text": "X = '<b>2</b>'\n"}],
        "events": [],
        "edits": [
            edit("e0", "m.py", (5, 6), (5, 7), "    return 0\n", "    a = 1\n    return helper(a)\n"),
            edit("e1", "m.py", (9, 10), (10, 11), "    return 0\n", "    return helper(2)\n"),
            edit("e2", "n.py", (0, 1), (0, 1), &n_base, "X = '<b>2</b>'\n"),
        ],
        "order": {"natural": ["e1", "e0", "e2"]},
    })
}

#[test]
fn the_page_of_a_fixed_run_keeps_its_structure() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, fixed_trajectory().to_string()).unwrap();
    let plan = json!({
        "1": {"suggest": [{"file": "m.py", "start_line": 0, "end_line": 2}, {"file": "m.py", "start_line": 5, "end_line": 6}]},
        "2": {"suggest": [{"file": "m.py", "start_line": 4, "end_line": 7}, {"file": "n.py", "start_line": 0}]},
    });
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/reader.py");
    let reader = format!(
        "cmd:READER_PLAN='{}' python3 '{}'",
        plan_path.display(),
        script.display()
    );
    let db = dir.path().join("runs.db");
    let t = path.to_str().unwrap();
    let oracle = replay(&db, &["--suggester", "builtin:oracle", "--trajectory", t]);
    let read = replay(
        &db,
        &[
            "--suggester",
            &reader,
            "--sandbox",
            "off",
            "--trajectory",
            t,
        ],
    );
    let page = write_report(&db, &[oracle, read], &dir.path().join("r.html"));
    assert!(!page.contains("<script"));
    // Latencies are the one thing that changes from run to run.
    let latency = regex::Regex::new(r#"<td class="latency">[^<]*</td>"#).unwrap();
    let page = latency.replace_all(&page, r#"<td class="latency">[ms]</td>"#);
    let page = page.replace(&plan_path.display().to_string(), "[plan]");
    let page = page.replace(&script.display().to_string(), "[reader.py]");
    let page = page.replace(&dir.path().display().to_string(), "[dir]");
    insta::assert_snapshot!(page);
}

/// A repository of three commits after the base, each with several edits: a rename
/// across two files, a one-line change repeated in two functions (what
/// builtin:propagate repeats), and code that is HTML.
fn repository() -> TestRepo {
    let mut repo = crate::derive_support::rename_repo();
    repo.write(
        "pkg/prices.py",
        "def subtotal(items):\n    return sum(items) * 2\n\n\ndef describe(items):\n    return subtotal(items) * 2\n",
    );
    repo.commit("double");
    repo.write(
        "page.py",
        format!("HTML = '{HOSTILE}'\n\n\n\nTITLE = 'a'\n"),
    );
    repo.write(
        "app.py",
        "from pkg.prices import subtotal\n\nprint(subtotal([1, 2, 3]))\n",
    );
    repo.commit("page");
    repo.write(
        "page.py",
        format!("HTML = '<p>{HOSTILE}</p>'\n\n\n\nTITLE = '<b>a</b>'\n"),
    );
    repo.commit("wrap");
    repo
}

/// Headless Chromium with the flags that keep it off the network.
pub(crate) fn chromium(profile: &Path) -> Command {
    let mut c = Command::new(Server::Chromium.path());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Luminance of RGB pixels.
fn luminance(pixels: &[[u8; 3]]) -> Vec<f64> {
    (pixels.iter())
        .map(|[r, g, b]| 0.2126 * *r as f64 + 0.7152 * *g as f64 + 0.0722 * *b as f64)
        .collect()
}

fn variance(values: &[f64]) -> f64 {
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64
}

pub(crate) fn screenshot(profile: &Path, url: &str, out: &Path, size: &str) {
    let status = chromium(profile)
        .arg(format!("--screenshot={}", out.display()))
        .arg(format!("--window-size={size}"))
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "chromium --screenshot {url}: {status}");
}

#[test]
fn the_page_of_real_runs_renders_in_headless_chromium() {
    if !available(
        "the_page_of_real_runs_renders_in_headless_chromium",
        &[Server::Chromium],
    ) {
        return;
    }
    let repo = repository();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let r = repo.path().to_str().unwrap();
    let runs: Vec<i64> = ["builtin:oracle", "builtin:noop", "builtin:propagate"]
        .iter()
        .map(|s| {
            replay(
                &db,
                &["--suggester", s, "--repo", r, "--range", "HEAD~3..HEAD"],
            )
        })
        .collect();
    let html = dir.path().join("report.html");
    let page = write_report(&db, &runs, &html);
    assert!(!page.contains("<script"));
    let url = format!("file://{}", html.display());

    let profile = tempfile::tempdir().unwrap();
    let dom = chromium(profile.path())
        .args(["--dump-dom", &url])
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(dom.status.success());
    let dom = String::from_utf8(dom.stdout).unwrap();
    let count = |needle: &str| dom.matches(needle).count();
    // The three runs' rows, one flow chart, a P/R chart per trajectory of each run
    // (3 commits × 3 runs), the drill-down of each, and the hostile code as text.
    assert_eq!(count("<tr class=\"run\""), 3, "{dom}");
    assert_eq!(count("<svg class=\"chart flow\""), 1);
    assert_eq!(count("<svg class=\"chart pr\""), 9);
    assert_eq!(count("<details class=\"trajectory\""), 9);
    assert!(count("<details class=\"step\"") >= 9);
    assert!(dom.contains("builtin:propagate</td>"));
    assert!(dom.contains("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(count("<script"), 0);

    let top = dir.path().join("top.png");
    screenshot(profile.path(), &url, &top, "1400,900");
    let (w, h, rgb) = decode(&top);
    assert_eq!((w, h), (1400, 900));
    let pixels = luminance(&rgb);
    let dark = pixels.iter().filter(|&&l| l < 128.0).count();
    assert!(variance(&pixels) > 100.0, "variance {}", variance(&pixels));
    assert!(dark > 2000, "{dark} dark pixels");

    // The drill-down, every <details> opened (a copy of the page: it has no script to
    // click with): the diffs' added and removed lines show in their colours.
    let opened = dir.path().join("opened.html");
    std::fs::write(&opened, page.replace("<details ", "<details open ")).unwrap();
    let steps = dir.path().join("steps.png");
    let opened_url = format!("file://{}", opened.display());
    screenshot(profile.path(), &opened_url, &steps, "1400,4000");
    let (_, _, rgb) = decode(&steps);
    let added = rgb.iter().filter(|p| **p == [0xe6, 0xff, 0xec]).count();
    let removed = rgb.iter().filter(|p| **p == [0xff, 0xeb, 0xe9]).count();
    assert!(
        added > 5000 && removed > 5000,
        "{added} added, {removed} removed pixels"
    );
    if let Some(keep) = std::env::var_os("NEXTEDIT_REPORT_SCREENSHOTS") {
        std::fs::copy(&top, PathBuf::from(&keep).join("report-top.png")).unwrap();
        std::fs::copy(&steps, PathBuf::from(&keep).join("report-steps.png")).unwrap();
    }
}

/// A PNG's size and its pixels as RGB.
pub(crate) fn decode(png_path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let mut decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let pixels = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}

/// The local `.png` pictures a Markdown text shows (`![alt](path.png)`), in order.
fn pictures(markdown: &str) -> Vec<String> {
    markdown
        .split("![")
        .skip(1)
        .filter_map(|rest| {
            let target = rest.split_once("](")?.1.split_once(')')?.0;
            (target.ends_with(".png") && !target.contains("://")).then(|| target.to_string())
        })
        .collect()
}

#[test]
fn the_readme_shows_every_report_screenshot_and_each_is_a_real_picture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let shown = pictures(&readme);
    // Every screenshot in docs/ is shown by the README, and nothing else is claimed.
    let mut on_disk: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("report-") && name.ends_with(".png"))
        .map(|name| format!("docs/{name}"))
        .collect();
    on_disk.sort();
    let mut sorted = shown.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk, "README.md's pictures vs docs/report-*.png");
    // Pictures the docs show exist too (paths relative to docs/).
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            for picture in pictures(&std::fs::read_to_string(&path).unwrap()) {
                assert!(
                    root.join("docs").join(&picture).is_file(),
                    "{} shows {picture}, which does not exist",
                    path.display()
                );
            }
        }
    }
    // Each is a screenshot as `the_page_of_real_runs_renders_in_headless_chromium`
    // takes them (1400 pixels wide, NEXTEDIT_REPORT_SCREENSHOTS=DIR keeps its
    // pictures): a page, not a blank or broken file.
    for picture in &shown {
        let (w, h, rgb) = decode(&root.join(picture));
        assert_eq!(w, 1400, "{picture}");
        assert!(h >= 900, "{picture}: {h} pixels high");
        let pixels = luminance(&rgb);
        assert!(variance(&pixels) > 100.0, "{picture} is blank");
        let dark = pixels.iter().filter(|&&l| l < 128.0).count();
        assert!(dark > 2000, "{picture}: {dark} dark pixels (no text)");
    }
}
