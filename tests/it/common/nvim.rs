//! A headless Neovim driven over its RPC socket (`nvim --server … --remote-send`), typing
//! keys as a user would, with the recording it makes through the real proxy: shared by
//! the Neovim tests (`editor_nvim`, `offers_record`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{TIMEOUT, nextedit_bin, pyright, quiet};

/// A running headless Neovim driven over its socket.
pub struct Nvim {
    bin: PathBuf,
    socket: PathBuf,
    child: Child,
    /// Neovim's visible lines after each step: (first, last + 1), 0-based, half-open.
    pub views: std::cell::RefCell<Vec<(i64, i64)>>,
}

impl Nvim {
    pub fn remote(&self, flag: &str, arg: &str) -> String {
        // An evaluation can be asked again: on a loaded machine the remote client now
        // and then fails to get its answer (seen once in a parallel run); keys are
        // sent once, never twice.
        let attempts = if flag == "--remote-expr" { 3 } else { 1 };
        let mut last = None;
        for _ in 0..attempts {
            let out = Command::new(&self.bin)
                .arg("--server")
                .arg(&self.socket)
                .arg(flag)
                .arg(arg)
                .stdin(Stdio::null())
                .output()
                .expect("run nvim --server");
            if out.status.success() {
                return String::from_utf8(out.stdout).unwrap();
            }
            last = Some(out);
            std::thread::sleep(Duration::from_millis(200));
        }
        let out = last.expect("one attempt");
        panic!(
            "nvim {flag} {arg}: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Types keys (`<Esc>`, `<C-e>` notation) as a user would.
    pub fn keys(&self, keys: &str) {
        self.remote("--remote-send", keys);
    }

    /// Types `:qa` and waits for Neovim to exit (the remote call itself may lose the race
    /// with the exit, so its own status is not checked).
    pub fn quit(&mut self, command: &str) -> std::process::ExitStatus {
        let _ = Command::new(&self.bin)
            .arg("--server")
            .arg(&self.socket)
            .arg("--remote-send")
            .arg(command)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        self.child.wait().unwrap()
    }

    /// Quits with `command` (`:qa<CR>`), checks Neovim exited cleanly and waits until
    /// the recording in `db` says its one session ended.
    pub fn quit_and_wait_for_the_session(&mut self, command: &str, db: &Path) {
        let status = self.quit(command);
        assert!(status.success(), "nvim exited with {status}");
        wait_until("the session to end", || {
            db_count(
                db,
                "SELECT count(*) FROM sessions WHERE status != 'running'",
            ) == 1
        });
    }

    /// Evaluates a Vim expression.
    pub fn eval(&self, expr: &str) -> String {
        self.remote("--remote-expr", expr)
    }

    /// Evaluates a Lua expression (through `luaeval`), as JSON.
    pub fn lua(&self, expr: &str) -> Value {
        let text = self.eval(&format!(
            "json_encode(luaeval('{}'))",
            expr.replace('\'', "''")
        ));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{expr} gave {text:?}: {e}"))
    }

    /// Waits until the Lua expression is true and no signal is waiting for its debounce.
    pub fn wait_for(&self, what: &str, lua_condition: &str) {
        let condition = format!("({lua_condition}) and require('nextedit').pending() == 0");
        wait_until(what, || self.lua(&condition) == json!(true));
        let (_, _, top, bottom) = self.view();
        let mut views = self.views.borrow_mut();
        if views.last() != Some(&(top - 1, bottom)) {
            views.push((top - 1, bottom));
        }
    }

    /// Neovim's own view: cursor (0-based line, byte col), top and bottom visible lines (1-based).
    pub fn view(&self) -> (i64, i64, i64, i64) {
        let v = self.lua(
            "{vim.fn.line('.') - 1, vim.fn.col('.') - 1, vim.fn.line('w0'), vim.fn.line('w$')}",
        );
        let n = |i: usize| v[i].as_i64().unwrap();
        (n(0), n(1), n(2), n(3))
    }
}

impl Drop for Nvim {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Polls `done` until it holds; fails after a generous limit (a hang, not a timing assertion).
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn db_count(db: &Path, sql: &str) -> i64 {
    if !db.exists() {
        return 0;
    }
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap_or(0)
}

/// Starts headless Neovim on `ws/main.py` (holding `text`, in a folder with a
/// `pyproject.toml`) with `init` after a fixed screen size and no swap/shada files, a fresh
/// HOME, `nextedit` and pyright on PATH and `NEXTEDIT_DB` in `dir`. Returns the editor, the
/// file and the database path.
pub fn start(nvim: PathBuf, dir: &Path, init: &str, text: &str) -> (Nvim, PathBuf, PathBuf) {
    let home = dir.join("home");
    let workspace = dir.join("ws");
    std::fs::create_dir_all(home.join("config/nvim")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    let main = workspace.join("main.py");
    std::fs::write(&main, text).unwrap();
    std::fs::write(workspace.join("pyproject.toml"), "").unwrap();
    let db = dir.join("rec.db");
    let init = format!(
        "vim.o.lines = 24\nvim.o.columns = 80\nvim.o.swapfile = false\nvim.o.shadafile = 'NONE'\n{init}"
    );
    std::fs::write(home.join("config/nvim/init.lua"), init).unwrap();
    let path = format!(
        "{}:{}:{}",
        nextedit_bin().parent().unwrap().display(),
        pyright().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let socket = dir.join("nvim.sock");
    let mut command = Command::new(&nvim);
    command
        .arg("--headless")
        .arg("--listen")
        .arg(&socket)
        .arg("main.py")
        .current_dir(&workspace)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("NEXTEDIT_DB", &db)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    quiet(&mut command);
    let child = command.spawn().expect("start nvim");
    wait_until("nvim's socket", || socket.exists());
    let nvim = Nvim {
        bin: nvim,
        socket,
        child,
        views: Default::default(),
    };
    (nvim, main, db)
}
