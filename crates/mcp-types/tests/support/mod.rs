//! Random model instances for the property tests.
pub mod random;
pub mod sample;
