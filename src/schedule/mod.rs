//! When a background review runs: the per-session scheduler, the digest it sends and the gate it asks.
//! May use the shell (`api`, `host`, `config`, `time`) and read the library's store; never writes skills.
//! `audit` keeps what each background review and curator pass did, for `/skills reviews`.

pub mod audit;
pub mod digest;
pub mod gate;
pub mod scheduler;
