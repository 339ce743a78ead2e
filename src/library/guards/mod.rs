//! Guards on content: what a check reports (`finding`), destructive-idiom and advisory lint
//! (`lint`), the credential scanner (`scan`), operator acknowledgements of its findings
//! (`acknowledge`), the offline `check` of skill folders, and the read-before-write registry
//! (`reads`). They judge; they never write.
//!
//! May use `storage` and `dedupe`; nothing above.

pub mod acknowledge;
pub mod check;
pub mod finding;
pub mod lint;
pub mod reads;
pub mod scan;
