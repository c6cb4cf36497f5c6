//! The engines: git history into trajectories and edit orders, the replay of a
//! trajectory through a suggester, the suggesters themselves, the fate of recorded
//! offers, completion tasks cut and scored. They use `core` and `base`, never the store.

pub mod history;
pub mod judge;
pub mod live;
pub mod lsp_client;
pub mod replay;
pub mod suggest;
pub mod task;
