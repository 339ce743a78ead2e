//! Team libraries over git: `self-evolve sync` (`sync`) fetches, replays local commits onto the
//! remote branch (`merge`; a file git cannot merge is staged for approval through the plugin by
//! `stage`), scans every outgoing file with the plugin's scanner and pushes.
//! The top service: uses `live/` (the plugin, to stage), `git/`, `check/` and the home.

mod merge;
mod stage;
pub mod sync;
