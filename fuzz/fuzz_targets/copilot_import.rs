//! Fuzzes the Copilot NES importer: any text either fails with an error or gives a
//! trajectory whose every file path is already a normalized `RelPath` (nothing an
//! import produces can make replay write outside its root); never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nextedit::import::copilot::import_recording;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(imported) = import_recording(text, "fuzz") else { return };
    let mut trajectory = imported.trajectory;
    let before = trajectory.clone();
    trajectory
        .normalize_paths()
        .expect("imported paths are relative and inside the root");
    assert_eq!(trajectory, before, "imported paths are already normalized");
});
