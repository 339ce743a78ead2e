//! The skill library: SKILL.md files, their roots and stamps, and every guard on a write.
//! May use the shell's port and utilities (`host`, `config`, `errors`, `time`); nothing from the engines.

pub mod acknowledge;
pub mod approval;
pub mod archive;
pub mod catalog;
pub mod check;
pub mod cleanup;
pub mod coalesce;
pub mod curator;
pub mod dedupe;
pub mod evidence;
pub mod frontmatter;
pub mod guards;
pub mod history;
pub mod ledger;
pub mod lint;
pub mod list_index;
pub mod listing;
pub mod scan;
pub mod skill_manage;
pub mod skillfile;
pub mod store;
pub mod tool_args;
pub mod tool_spec;
