//! Repository-relative paths: the only form a trajectory's file names may take.
//!
//! Every path that comes from outside (imports, `--trajectory` and `sessions import`
//! files, stored sessions, suggester answers) is parsed into a [`RelPath`] where it
//! enters, so replay can join it onto a scratch root and stay inside it. Parsing is
//! purely lexical (no file system): `.` and empty segments go, `a/../b` collapses to
//! `b`; absolute paths, a `..` that climbs above the root, NUL bytes, backslashes and
//! drive prefixes (`C:`) are refused. Symlinks are the writer's business
//! (`replay::worktree` checks every component on disk). [`Trajectory::normalize_paths`]
//! checks and rewrites every path of a trajectory, naming the place of the first bad one.

use std::fmt;

use super::{EventBody, Trajectory};

/// A normalized path relative to a root that cannot leave it: `/`-separated, no
/// empty, `.` or `..` segment, no leading `/`, no NUL, no backslash, not empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelPath(String);

/// Why a string is not a [`RelPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Nothing left once `.` and empty segments are gone.
    #[error("path {0:?} names no file")]
    Empty(String),
    /// A NUL byte, which no file name can hold.
    #[error("path {0:?} contains a NUL byte")]
    Nul(String),
    /// Starts with `/`.
    #[error("path {0:?} is absolute; only paths relative to the workspace are allowed")]
    Absolute(String),
    /// A `..` climbs above the root.
    #[error("path {0:?} leaves the workspace through `..`")]
    Escapes(String),
    /// A backslash or a drive prefix: a Windows form whose meaning is ambiguous here.
    #[error("path {0:?} has a backslash or a drive prefix; use `/`-separated relative paths")]
    Windows(String),
    /// Two paths of one trajectory that normalize to the same file.
    #[error("paths {path:?} and {other:?} name the same file")]
    Duplicate {
        /// The later path.
        path: String,
        /// The path seen first.
        other: String,
    },
}

impl RelPath {
    /// Parses and normalizes `raw`; an error names the path and what is wrong.
    pub fn parse(raw: &str) -> Result<RelPath, PathError> {
        let bad = |make: fn(String) -> PathError| Err(make(raw.to_owned()));
        if raw.contains('\0') {
            return bad(PathError::Nul);
        }
        if raw.starts_with('/') {
            return bad(PathError::Absolute);
        }
        let bytes = raw.as_bytes();
        if raw.contains('\\')
            || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
        {
            return bad(PathError::Windows);
        }
        let mut parts: Vec<&str> = Vec::new();
        for segment in raw.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return bad(PathError::Escapes);
                    }
                }
                _ => parts.push(segment),
            }
        }
        if parts.is_empty() {
            return bad(PathError::Empty);
        }
        Ok(RelPath(parts.join("/")))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `/`-separated segments, none empty, `.` or `..`.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A trajectory path that is not a [`RelPath`], with where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {error}")]
pub struct TrajectoryPathError {
    /// Where in the trajectory (`files[2].path`, `events[7].file`, `edits[0].file`…).
    pub place: String,
    /// What is wrong with the path.
    pub error: PathError,
}

impl Trajectory {
    /// Rewrites every file path of the trajectory to its normalized [`RelPath`] form;
    /// the first path that is not one is an error naming its place. Two files that
    /// normalize to the same path are an error too (they would overwrite each other).
    /// Locations that are never written (reads, signals, suggestions, gold context) are
    /// normalized when they are `RelPath`s and kept as they are otherwise: a recorded
    /// go-to-definition into a library outside the workspace is a fact, not a file.
    pub fn normalize_paths(&mut self) -> Result<(), TrajectoryPathError> {
        fn soft(path: &mut String) {
            if let Ok(rel) = RelPath::parse(path) {
                *path = rel.0;
            }
        }
        fn fix(
            place: impl FnOnce() -> String,
            path: &mut String,
        ) -> Result<(), TrajectoryPathError> {
            match RelPath::parse(path) {
                Ok(rel) => {
                    if rel.as_str() != path {
                        *path = rel.0;
                    }
                    Ok(())
                }
                Err(error) => Err(TrajectoryPathError {
                    place: place(),
                    error,
                }),
            }
        }
        let mut seen = std::collections::HashMap::new();
        for (i, file) in self.files.iter_mut().enumerate() {
            let raw = file.path.clone();
            fix(|| format!("files[{i}].path"), &mut file.path)?;
            if let Some(old) = file.old_path.as_mut() {
                fix(|| format!("files[{i}].old_path"), old)?;
            }
            if let Some(first) = seen.insert(file.path.clone(), raw.clone()) {
                return Err(TrajectoryPathError {
                    place: format!("files[{i}].path"),
                    error: PathError::Duplicate {
                        path: raw,
                        other: first,
                    },
                });
            }
        }
        for (i, event) in self.events.iter_mut().enumerate() {
            let place = || format!("events[{i}].file");
            match &mut event.body {
                EventBody::Open { file, .. }
                | EventBody::Save { file }
                | EventBody::Close { file } => fix(place, file)?,
                EventBody::Change(change) => fix(place, &mut change.file)?,
                EventBody::Suggestion { file, .. } => soft(file),
                EventBody::Read(read) => soft(&mut read.file),
                EventBody::Signal(signal) => {
                    if let Some(file) = signal.file.as_mut() {
                        soft(file);
                    }
                }
            }
        }
        for (i, edit) in self.edits.iter_mut().enumerate() {
            fix(|| format!("edits[{i}].file"), &mut edit.file)?;
        }
        for region in &mut self.gold.context {
            soft(&mut region.file);
        }
        Ok(())
    }

    /// Removes the files that are not [`RelPath`]s (a recorded session's files outside
    /// its workspace) when nothing edits them, with their open/save/close events; returns
    /// their paths. Replay cannot write them under its root, and without edits they
    /// only gave a suggester a copy of a file outside the project.
    pub fn drop_unedited_outside_files(&mut self) -> Vec<String> {
        let edited: std::collections::HashSet<&str> = self
            .edits
            .iter()
            .map(|e| e.file.as_str())
            .chain(self.events.iter().filter_map(|e| match &e.body {
                EventBody::Change(c) => Some(c.file.as_str()),
                _ => None,
            }))
            .collect();
        let dropped: Vec<String> = self
            .files
            .iter()
            .filter(|f| RelPath::parse(&f.path).is_err() && !edited.contains(f.path.as_str()))
            .map(|f| f.path.clone())
            .collect();
        if dropped.is_empty() {
            return dropped;
        }
        self.files.retain(|f| !dropped.contains(&f.path));
        self.events.retain(|e| match &e.body {
            EventBody::Open { file, .. } | EventBody::Save { file } | EventBody::Close { file } => {
                !dropped.contains(file)
            }
            _ => true,
        });
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::{FileEntry, SessionInfo, SessionKind};

    fn ok(raw: &str) -> String {
        RelPath::parse(raw).unwrap().as_str().to_owned()
    }

    #[test]
    fn normalizes_dots_and_empty_segments() {
        assert_eq!(ok("a.py"), "a.py");
        assert_eq!(ok("./src//a.py"), "src/a.py");
        assert_eq!(ok("src/../b/./c.py"), "b/c.py");
        assert_eq!(ok("dir/"), "dir");
        assert_eq!(ok("untitled:Untitled-1"), "untitled:Untitled-1");
        assert_eq!(ok("..a/b.."), "..a/b..");
    }

    #[test]
    fn refuses_what_could_leave_the_root() {
        let err = |raw: &str| RelPath::parse(raw).unwrap_err();
        assert_eq!(
            err("/tmp/v/important.txt"),
            PathError::Absolute("/tmp/v/important.txt".into())
        );
        assert_eq!(err("../x"), PathError::Escapes("../x".into()));
        assert_eq!(err("a/../../x"), PathError::Escapes("a/../../x".into()));
        assert_eq!(err(""), PathError::Empty("".into()));
        assert_eq!(err("./."), PathError::Empty("./.".into()));
        assert_eq!(err("a\0b"), PathError::Nul("a\0b".into()));
        assert_eq!(err("C:/x"), PathError::Windows("C:/x".into()));
        assert_eq!(
            err("a\\..\\..\\x"),
            PathError::Windows("a\\..\\..\\x".into())
        );
        assert_eq!(
            err("/tmp/v/important.txt").to_string(),
            "path \"/tmp/v/important.txt\" is absolute; only paths relative to the workspace are allowed"
        );
    }

    #[test]
    fn trajectory_paths_are_normalized_or_refused_with_their_place() {
        let mut t = Trajectory::new(SessionInfo::new("t", SessionKind::Commit));
        t.files.push(FileEntry::new("./a.py", Some(String::new())));
        t.edits.push(crate::core::trajectory::Edit::lines(
            "e0",
            "x/../a.py",
            0,
            "",
            "x\n",
        ));
        t.normalize_paths().unwrap();
        assert_eq!(t.files[0].path, "a.py");
        assert_eq!(t.edits[0].file, "a.py");

        t.files.push(FileEntry::new("b/../a.py", None));
        let err = t.normalize_paths().unwrap_err();
        assert_eq!(
            err.to_string(),
            "files[1].path: paths \"b/../a.py\" and \"a.py\" name the same file"
        );
        t.files.pop();
        t.edits[0].file = "/etc/passwd".into();
        let err = t.normalize_paths().unwrap_err();
        assert_eq!(err.place, "edits[0].file");
    }

    #[test]
    fn unedited_files_outside_the_workspace_are_dropped_reads_kept() {
        use crate::core::trajectory::{Event, LineRange, Read, ReadRole};
        let mut t = Trajectory::new(SessionInfo::new("t", SessionKind::Recorded));
        t.files.push(FileEntry::new("a.py", Some("x\n".into())));
        t.files
            .push(FileEntry::new("/usr/lib/python3/os.py", Some("y\n".into())));
        let body = |b| Event {
            seq: 0,
            t_ms: 0.0,
            body: b,
        };
        t.events.push(body(EventBody::Open {
            file: "/usr/lib/python3/os.py".into(),
            version: 1,
            text: None,
        }));
        t.events.push(body(EventBody::Read(Read {
            file: "/usr/lib/python3/os.py".into(),
            lines: LineRange::new(0, 1),
            via: "textDocument/hover".into(),
            role: ReadRole::Target,
        })));
        assert_eq!(t.drop_unedited_outside_files(), ["/usr/lib/python3/os.py"]);
        assert_eq!(t.files.len(), 1);
        assert_eq!(t.events.len(), 1);
        t.normalize_paths().unwrap();
        let EventBody::Read(read) = &t.events[0].body else {
            panic!()
        };
        assert_eq!(read.file, "/usr/lib/python3/os.py");
    }
}
