//! The operating system's side of running code nobody reviewed (suggester processes,
//! `lsp:` servers with their proxy, `complete`, the tests of `tasks run`, `tasks cut`'s
//! `cmd:` retriever): the sandbox profile
//! ([`sandbox`], bubblewrap), its seccomp filters ([`seccomp`]), the environment
//! allow-list ([`mod@env`]), the limits of a process tree ([`limits`]) and the cgroup
//! that enforces them ([`cgroup`]), and starting, watching and ending such a tree
//! ([`jail`]), and whether that profile starts here at all ([`probe`]). Each caller names what to run and where; this module decides how it
//! is confined, so every untrusted process gets the same profile. Process control for
//! every child nextedit starts, sandboxed or not, is [`process`] (the crate's one
//! module allowed `unsafe`: the hook between fork and exec); the file system calls std
//! lacks are [`files`].

pub mod cgroup;
pub mod env;
pub mod files;
pub mod jail;
pub mod limits;
pub mod probe;
#[allow(unsafe_code)]
pub mod process;
pub mod sandbox;
pub mod seccomp;
