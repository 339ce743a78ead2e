//! The skill library: SKILL.md files, their roots and stamps, and every guard on a write.
//! May use the shell's port and utilities (`host`, `config`, `errors`, `time`, `digest`,
//! `state_file`); nothing from the engines.
//!
//! Folders by concern, each on its own floor; a folder uses only the floors below it:
//! - `skill_manage/`: the `skill_manage` tool, the write path on top (uses every floor below);
//! - `curation/`: the curator's daily pass, the use ledger and the evidence behind it;
//! - `staging/`: staged writes waiting for an operator, their approval, merging and archives;
//! - `history/`: the version history kept around every landed write;
//! - `guards/`: content checks (lint, credential scanner, acknowledgements, `check`) and the
//!   read-before-write registry;
//! - `storage/`: SKILL.md files, where they live, how they are listed, read and written;
//! - `dedupe/`: the similarity index (pure, at the ground: listing, `check` and staging use it).

pub mod curation;
pub mod dedupe;
pub mod guards;
pub mod history;
pub mod skill_manage;
pub mod staging;
pub mod storage;
