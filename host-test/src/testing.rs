//! Test fakes.
