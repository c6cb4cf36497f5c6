//! The operating system's side of running code nobody reviewed (suggester processes,
//! `lsp:` servers with their proxy, `complete`, the tests of `tasks run`, `tasks cut`'s
//! `cmd:` retriever): the sandbox profile
//! ([`sandbox`], bubblewrap), its seccomp filters ([`seccomp`]), the environment
//! allow-list ([`env`]), the limits of a process tree ([`limits`]) and the cgroup
//! that enforces them ([`cgroup`]), and starting, watching and ending such a tree
//! ([`jail`]). Each caller names what to run and where; this module decides how it
//! is confined, so every untrusted process gets the same profile. Its `unsafe` calls
//! (fork-time hooks, kill, prctl) each carry their `// SAFETY:`.

pub mod cgroup;
pub mod env;
pub mod jail;
pub mod limits;
pub mod sandbox;
pub mod seccomp;
