//! Fuzzes `RelPath::parse`: whatever the input, an accepted path is normalized (no
//! empty, `.` or `..` segment, no leading `/`, no NUL or backslash), parsing it again
//! gives it back unchanged, and joined onto a root it stays under that root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nextedit::trajectory::RelPath;
use std::path::{Component, Path};

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    let Ok(rel) = RelPath::parse(raw) else { return };
    let s = rel.as_str();
    assert!(!s.is_empty() && !s.starts_with('/'));
    assert!(!s.contains('\0') && !s.contains('\\'));
    assert!(s.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != ".."));
    assert_eq!(RelPath::parse(s).as_ref(), Ok(&rel));
    let joined = Path::new("/root").join(s);
    assert!(joined.starts_with("/root"));
    assert!(
        Path::new(s)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
    );
});
