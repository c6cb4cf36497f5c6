//! `nextedit doctor` in hermetic homes: exact output lines and exit codes.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use common::nextedit_bin;

/// A fresh HOME and a PATH holding only `nextedit` (a symlink to the built binary) and
/// whatever programs the test adds.
struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::os::unix::fs::symlink(nextedit_bin(), bin.join("nextedit")).unwrap();
        Env {
            _tmp: tmp,
            root,
            bin,
        }
    }

    /// Adds an executable shell script to the PATH directory.
    fn program(&self, name: &str, script: &str) {
        let path = self.bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Runs `nextedit doctor ARGS`; returns (exit code, stdout with the temp root as `<T>`).
    fn doctor(&self, args: &[&str]) -> (i32, String) {
        let out = Command::new(self.bin.join("nextedit"))
            .arg("doctor")
            .args(args)
            .env_clear()
            .env("PATH", &self.bin)
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("home/.config"))
            .env("XDG_DATA_HOME", self.root.join("home/.local/share"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
        let exe = nextedit_bin().canonicalize().unwrap();
        let stdout = String::from_utf8(out.stdout)
            .unwrap()
            .replace(&exe.display().to_string(), "<EXE>")
            .replace(&self.root.display().to_string(), "<T>")
            .replace(env!("CARGO_PKG_VERSION"), "<VERSION>");
        (out.status.code().unwrap(), stdout)
    }
}

#[test]
fn healthy_setup_passes() {
    let env = Env::new();
    env.program("pyright-langserver", "exit 0");
    let (code, out) = env.doctor(&[]);
    assert_eq!(
        out,
        "\
ok    nextedit <VERSION> (<EXE>)
ok    on PATH: <T>/bin/nextedit
ok    database <T>/home/.local/share/nextedit/nextedit.db (default): not created yet; the first session creates it (mode 0600)
ok    server pyright-langserver (Python): <T>/bin/pyright-langserver
info  server gopls (Go) not on PATH (needed only for Go)
info  server jdtls (Java) not on PATH (needed only for Java)
info  Neovim: nvim not on PATH
info  VS Code: code / code-server not on PATH
doctor: 0 errors, 0 warnings
"
    );
    assert_eq!(code, 0);
}

#[test]
fn shared_database_and_missing_server_fail() {
    let env = Env::new();
    let db = env.root.join("study.db");
    drop(nextedit::store::Database::open(&db).unwrap());
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    env.program("code", "exit 0");
    let ext = env
        .root
        .join("home/.vscode/extensions/nextedit.nextedit-9.9.9");
    std::fs::create_dir_all(&ext).unwrap();
    let db_arg = db.display().to_string();
    let (code, out) = env.doctor(&[
        "--db", &db_arg, "--server", "gopls", "--only", "database", "--only", "servers", "--only",
        "editors",
    ]);
    assert_eq!(
        out,
        "\
error database <T>/study.db (--db) is readable by others (mode 0644): chmod 600 <T>/study.db
ok    database is writable (0 sessions)
error server gopls not found on PATH (editors could not start it)
info  Neovim: nvim not on PATH
ok    VS Code: code (<T>/bin/code)
ok    VS Code extension: <T>/home/.vscode/extensions/nextedit.nextedit-9.9.9
doctor: 2 errors, 0 warnings
"
    );
    assert_eq!(code, 1);
}

#[test]
fn missing_extension_and_nextedit_off_path_warn() {
    let env = Env::new();
    env.program("code-server", "exit 0");
    // Editors start `nextedit` by name: run the binary from elsewhere with a PATH lacking it.
    std::fs::remove_file(env.bin.join("nextedit")).unwrap();
    let out = Command::new(nextedit_bin())
        .args(["doctor", "--only", "binary", "--only", "editors"])
        .env_clear()
        .env("PATH", &env.bin)
        .env("HOME", env.root.join("home"))
        .output()
        .unwrap();
    let exe = nextedit_bin().canonicalize().unwrap();
    let stdout = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&exe.display().to_string(), "<EXE>")
        .replace(&exe.parent().unwrap().display().to_string(), "<EXE_DIR>")
        .replace(&env.root.display().to_string(), "<T>")
        .replace(env!("CARGO_PKG_VERSION"), "<VERSION>");
    assert_eq!(
        stdout,
        "\
ok    nextedit <VERSION> (<EXE>)
warn  nextedit is not on PATH: editors start it by name; add <EXE_DIR> to PATH, or set the plugin's `bin` / VS Code's `nextedit.path`
info  Neovim: nvim not on PATH
ok    VS Code: code-server (<T>/bin/code-server)
warn  VS Code extension not installed: code --install-extension nextedit.vsix (README: Use with VS Code)
doctor: 0 errors, 2 warnings
"
    );
    assert_eq!(out.status.code(), Some(0));
}

/// With the real Neovim of `.venv-nvim` (skipped without it): doctor asks Neovim, with the
/// user's config, where the plugin is.
#[test]
fn finds_the_neovim_plugin_through_real_neovim() {
    if !common::available(
        "finds_the_neovim_plugin_through_real_neovim",
        &[common::Server::Nvim],
    ) {
        return;
    }
    let nvim = common::nvim();
    let env = Env::new();
    std::os::unix::fs::symlink(&nvim, env.bin.join("nvim")).unwrap();
    let config = env.root.join("home/.config/nvim");
    let (_, before) = env.doctor(&["--only", "editors"]);
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("init.lua"),
        format!(
            "vim.opt.rtp:append('{}/editors/nvim')\n",
            env!("CARGO_MANIFEST_DIR")
        ),
    )
    .unwrap();
    let (code, after) = env.doctor(&["--only", "editors"]);
    let version = before.lines().next().unwrap().to_string();
    assert!(
        version.starts_with("ok    Neovim: NVIM v0.") && version.ends_with("(<T>/bin/nvim)"),
        "{version}"
    );
    assert_eq!(
        before,
        format!(
            "{version}\nwarn  Neovim plugin not on the runtimepath: add editors/nvim (README: Use with Neovim)\ninfo  VS Code: code / code-server not on PATH\ndoctor: 0 errors, 1 warning\n"
        )
    );
    assert_eq!(
        after,
        format!(
            "{version}\nok    Neovim plugin: {}/editors/nvim\ninfo  VS Code: code / code-server not on PATH\ndoctor: 0 errors, 0 warnings\n",
            env!("CARGO_MANIFEST_DIR")
        )
    );
    assert_eq!(code, 0);
}
