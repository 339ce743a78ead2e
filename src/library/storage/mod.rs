//! Storage, the library's ground floor: the SKILL.md format (`frontmatter`, `skillfile`), where
//! skills live and how one is read and written (`store`), the names and removal of what a dead
//! operation leaves (`debris`, `cleanup`), listing the roots (`listing` over `list_cache`,
//! persisted by `list_index`; `duplicates` over it) and the catalog served to the host (`catalog`,
//! its entries in `served`).
//!
//! May use `dedupe` and the crate's port and utilities; no other folder of the library.

pub mod catalog;
pub mod cleanup;
pub mod debris;
pub mod duplicates;
pub mod frontmatter;
pub mod list_cache;
pub mod list_index;
pub mod listing;
pub mod served;
pub mod skillfile;
pub mod store;
