//! Completion tasks as a service (`nextedit tasks run|report`, tasks cut from a stored
//! session): a suggester asked for each task's answer, the answers executed and scored
//! (`engine::task`), everything stored, and the reports built from the store.

pub mod history;
pub mod html;
pub mod json;
pub mod report;
pub mod runner;
pub mod text;
